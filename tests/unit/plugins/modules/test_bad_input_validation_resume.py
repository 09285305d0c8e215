# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_resume: every bad input fails before any command (scontrol, srun) runs, naming the option, the value and what is valid.

``run_command`` fails the test when called: no node is resumed, no reservation created, nothing is even queried.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import validation_resume
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands

GOOD = {'records': [{'stage': 'node', 'node': 'n1', 'check': 'munge', 'status': 'pass', 'reason': 'ok'}], 'hook_log': ''}


def checks(**entry):
    return {'n1': dict(GOOD, **entry)}


CASES = [
    ({'checks': None}, ["argument 'checks' is of type NoneType", 'convert to dict']),
    ({'names': None}, ["argument 'names' is of type NoneType", 'convert to list']),
    ({'checks': {'n1': 'notadict'}}, ["checks['n1'] is 'notadict'", 'expected the registered result of gpucluster.bringup.node_check']),
    ({'checks': {'n1': ['records']}}, ["checks['n1'] is ['records']", 'a dict with records and hook_log']),
    ({'checks': {'n1': None}}, ["checks['n1'] is None", 'the registered result']),
    ({'checks': {'n1': 5}}, ["checks['n1'] is 5", 'the registered result']),
    ({'checks': checks(records='all passed')}, ["checks['n1'].records is 'all passed'", 'expected a list']),
    ({'checks': checks(records=['x'])}, ["checks['n1'].records[0] is 'x'", 'expected a dict']),
    ({'checks': checks(records=[{'check': 'munge'}])}, ["checks['n1'].records[0].status is None", 'one of pass, fail, skip']),
    ({'checks': checks(records=[{'check': 'munge', 'status': 'broken'}])}, ["checks['n1'].records[0].status is 'broken'", 'one of pass, fail, skip']),
    ({'checks': checks(records=[{'status': 'fail'}])}, ["checks['n1'].records[0].check is None", 'a non-empty string']),
    ({'checks': checks(records=[{'check': 'munge', 'status': 'fail', 'reason': 5}])}, ["checks['n1'].records[0].reason is 5", 'a string']),
    ({'checks': checks(hook_log=5)}, ["checks['n1'].hook_log is 5", 'a string']),
    ({'checks': checks(hook_log=['line'])}, ["checks['n1'].hook_log is ['line']", 'a string']),
    ({'checks': {'gpu 01': GOOD}}, ["checks key is 'gpu 01'", 'a Slurm node name']),
    ({'probe_timeout': -1}, ['probe_timeout is -1', 'a whole number of seconds between 1 and 86400']),
    ({'probe_timeout': 0}, ['probe_timeout is 0', 'between 1 and 86400']),
    ({'probe_timeout': 100000}, ['probe_timeout is 100000', 'between 1 and 86400']),
    ({'probe_timeout': 'soon'}, ['probe_timeout', 'soon']),
    ({'reservation': 'gpu resume'}, ["reservation is 'gpu resume'", 'a Slurm reservation name', 'no spaces, commas or "="', 'or empty']),
    ({'reservation': 'a,b'}, ["reservation is 'a,b'", 'a Slurm reservation name']),
    ({'reservation': 'Flags=MAINT'}, ["reservation is 'Flags=MAINT'", 'a Slurm reservation name']),
    ({'reservation': '-x'}, ["reservation is '-x'", 'starting with a letter or digit']),
    ({'reservation': 'r' * 65}, ['reservation is', 'at most 64 characters']),
    ({'names': ['gpu 01']}, ["names[0] is 'gpu 01'", 'a Slurm node name']),
    ({'names': ['gpu-01', '']}, ["names[1] is ''", 'a Slurm node name']),
    ({'action': 'drain'}, ['action', 'drain', 'query, wait, resume']),
    ({'probe': 'sometimes'}, ['probe', 'sometimes']),
    # issue 50: the health check's prefix, the started slurmds' report, the wait
    ({'prefix': 'gpu hc'}, ["prefix is 'gpu hc'", 'a word such as "gpuhc"']),
    ({'prefix': ''}, ["prefix is ''", 'a word such as "gpuhc"']),
    ({'prefix': '-x'}, ["prefix is '-x'", 'letters, digits']),
    ({'started': {'gpu 01': 'slurmd started'}}, ["started key is 'gpu 01'", 'a Slurm node name']),
    ({'started': {'gpu-01': ['slurmd started']}}, ["started['gpu-01'] is ['slurmd started']", 'a non-empty string']),
    ({'started': {'gpu-01': ''}}, ["started['gpu-01'] is ''", 'a non-empty string']),
    ({'started': 'gpu-01'}, ["argument 'started' is of type str", 'convert to dict']),
    ({'wait_timeout': 0}, ['wait_timeout is 0', 'between 1 and 3600']),
    ({'wait_timeout': 3601}, ['wait_timeout is 3601', 'between 1 and 3600']),
    # issue 48 item 6: how the probes reach Slurm
    ({'dispatch': 'steps'}, ['dispatch', 'steps', 'auto, per_node, allocation']),
    ({'dispatch_min_nodes': 0}, ['dispatch_min_nodes is 0', 'at least 1']),
    ({'allocation_wait': 0}, ['allocation_wait is 0', 'between 1 and 3600']),
    ({'allocation_wait': 7200}, ['allocation_wait is 7200', 'between 1 and 3600']),
]


@pytest.fixture
def no_commands(monkeypatch):
    return forbid_commands(monkeypatch)


@pytest.mark.parametrize('action', ['query', 'wait', 'resume'])
@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(no_commands, args, fragments, action):
    args = dict({'action': action}, **args)
    outcome = bad_input(validation_resume.main, args, *fragments)
    assert 'resumed' not in outcome.result
    assert no_commands == []
