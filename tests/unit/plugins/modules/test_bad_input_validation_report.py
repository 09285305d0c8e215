# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_report: every bad input fails before anything is written, naming the option, the value and what is valid.

The test directory is listed (recursively) before and after: nothing is created, no report file appears.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import validation_report
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input

REC = {'stage': 'node', 'node': 'gpu-01', 'check': 'munge', 'status': 'pass', 'reason': 'ok'}


def rec(**extra):
    return dict(REC, **extra)


CASES = [
    ({'dest': '{tmp}/afile/report'}, ["dest is '{tmp}/afile/report'", 'but {tmp}/afile is a file, not a directory', 'parents are directories']),
    ({'dest': '{tmp}/afile/a/b'}, ['but {tmp}/afile is a file, not a directory']),
    ({'dest': '{tmp}/afile'}, ["dest is '{tmp}/afile', which exists and is not a directory", 'expected a directory']),
    ({'dest': '/proc/validation-report'}, ["dest is '/proc/validation-report'", 'under /proc, a kernel file system']),
    ({'dest': '/proc/1/report'}, ['under /proc']),
    ({'dest': '/sys/validation'}, ["dest is '/sys/validation'", 'under /sys']),
    ({'dest': '{tmp}/blocked'}, ['{tmp}/blocked/report.json there is not a regular file', 'report files are regular files']),
    ({'dest': '{tmp}/out', 'threshold_gbps': -1.0}, ['threshold_gbps is -1.0', 'a number above 0']),
    ({'dest': '{tmp}/out', 'threshold_gbps': 0}, ['threshold_gbps is 0', 'above 0']),
    ({'dest': '{tmp}/out', 'expected_nodes': ['']}, ["expected_nodes[0] is ''", 'a node name']),
    ({'dest': '{tmp}/out', 'expected_nodes': ['gpu 01']}, ["expected_nodes[0] is 'gpu 01'", 'no spaces']),
    ({'dest': '{tmp}/out', 'drain_nodes': ['gpu-01', '']}, ["drain_nodes[1] is ''", 'a node name']),
    ({'dest': '{tmp}/out', 'require': ['node', 'ncl']},
     ['value of require must be one or more of: node, slurm, mpi, nccl, container, deep', 'no match for: ncl']),
    ({'dest': '{tmp}/out', 'records': [{'stage': 'node'}]}, ['cannot build the validation report', 'result 0: node is None', 'a non-empty string']),
    ({'dest': '{tmp}/out', 'records': [rec(status='maybe')]}, ["result 0: status 'maybe' is not one of pass, fail, skip"]),
    ({'dest': '{tmp}/out', 'records': [rec(value=float('inf'))]}, ['result 0: value is inf', 'a finite number']),
    ({'dest': '{tmp}/out', 'records': [rec(hosts=[])]}, ['result 0: hosts is []', 'a non-empty list of host names']),
    ({'dest': '{tmp}/out', 'records': [rec(reason=5)]}, ['result 0: reason is 5', 'expected a string']),
    ({'dest': '{tmp}/out', 'records': ['x']}, ['records', 'dict']),
    ({'dest': '{tmp}/out', 'series': [{'label': 'a', 'points': [[0, 1]]}]}, ["series 'a': point [0, 1] needs a size above 0"]),
    ({'dest': '{tmp}/out', 'series': [{'label': 'a', 'points': [[8]]}]}, ["series 'a': point [8] is not a [size_bytes, busbw_gbps] pair"]),
    ({'dest': '{tmp}/out', 'series': [{'label': 'a', 'points': []}]}, ["series 'a' has no points"]),
    ({'dest': '{tmp}/out', 'series': [{'points': [[8, 1]]}]}, ['series 0 is', "expected {{'label': str"]),
    ({'dest': '{tmp}/out', 'series': [{'label': 'a', 'points': [[8, 1]], 'gate': [[8]]}]}, ["series 'a': gate point [8] is not a [size_bytes, gbps] pair"]),
    ({'dest': '{tmp}/out', 'started': 'this morning'}, ["started is 'this morning'", 'a time such as 2025-01-31T08:00:00Z']),
    ({'dest': '{tmp}/out', 'versions': [{'slurm': '22.05.8'}]}, ['versions[0] lacks the key(s) node']),
    ({'dest': '{tmp}/out', 'versions': [{'node': 'gpu-01', 'gpus': 8}]}, ['versions[0] has unknown key(s) gpus', 'valid keys: node, slurm']),
    ({'dest': '{tmp}/out', 'records': [rec(command=['srun'])]}, ["result 0: command is ['srun'], expected the command line as a string"]),
    ({'dest': '{tmp}/out', 'records': [rec(versions={'nccl': ['2.21']})]}, ["result 0: versions: nccl is ['2.21'], expected a version string"]),
]


def listing(root):
    return sorted(os.path.relpath(os.path.join(top, name), root) for top, dirs, files in os.walk(root) for name in dirs + files)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / 'afile').write_text('not a directory')
    (tmp_path / 'blocked' / 'report.json').mkdir(parents=True)
    return tmp_path


@pytest.mark.parametrize('check_mode', [False, True], ids=['apply', 'check'])
@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(tree, args, fragments, check_mode):
    args = dict({'records': [REC]}, **args)
    args['dest'] = args['dest'].format(tmp=tree)
    before = listing(str(tree))
    bad_input(validation_report.main, args, *[f.format(tmp=tree) for f in fragments], check_mode=check_mode)
    assert listing(str(tree)) == before
