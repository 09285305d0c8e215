# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_gres_facts refuses bad options and bad mig-minors tables with one clear message.

Each case runs the module on the seed 003 node of the NVML simulator (GPUs 2
and 3 in MIG mode, so the mig-minors table is read), asserts that it failed
with a message naming the option or file, the bad value and what is valid,
that no Python traceback escaped, and that nothing under the test directory
(the simulated root, the simulator state, the table) changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import slurm_gres_facts
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.test_slurm_gres_facts import Node

COUNT = 'must be a whole number from 1 to 4294967295'
ABSOLUTE = 'must be an absolute path (starting with "/")'


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


def _write(path, data):
    with open(path, 'wb') as handle:
        handle.write(data)


def _replace_table(node, text):
    _write(node.mig_minors, text.encode('ascii'))


def _table_lines(node):
    with open(node.mig_minors) as handle:
        return handle.read().splitlines()


# (id, options, table change: function(node) or None, fragments; "{table}" stands for the table's path)
CASES = [
    ('mps_count zero', {'mps_count': 0}, None, ['mps_count 0 ' + COUNT, 'Count= of each Name=mps line']),
    ('mps_count negative', {'sharing': 'mps', 'mig_device_files': 'ci_only', 'mps_count': -5}, None, ['mps_count -5 ' + COUNT]),
    ('mps_count too large', {'mps_count': 4294967296}, None, ['mps_count 4294967296 ' + COUNT]),
    ('mps_count not a number', {'mps_count': 'many'}, None, ['mps_count', 'many', 'int']),
    ('mps_count a boolean', {'mps_count': True}, None, ['mps_count True ' + COUNT]),
    ('shard_count zero', {'sharing': 'shard', 'shard_count': 0}, None, ['shard_count 0 ' + COUNT, 'Count= of each Name=shard line']),
    ('shard_count negative without sharing', {'shard_count': -1}, None, ['shard_count -1 ' + COUNT]),
    ('shard without shard_count', {'sharing': 'shard'}, None, ['sharing is shard but all of the following are missing: shard_count']),
    ('unknown sharing', {'sharing': 'shards'}, None, ['sharing', 'shards', 'none, mps, shard']),
    ('unknown mig_device_files', {'mig_device_files': 'all'}, None, ['mig_device_files', 'all', 'multiple, ci_only']),
    ('unknown autodetect', {'autodetect': 'yes'}, None, ['autodetect', 'off, nvml']),
    ('cores not a boolean', {'cores': 'maybe'}, None, ['cores', 'maybe', 'bool']),
    ('unknown option', {'shards': 4}, None, ['shards', 'Unsupported parameters']),
    ('type_map a list', {'type_map': ['A100']}, None, ['type_map', 'dict']),
    ('type_map bad type', {'type_map': {'A100': 'a100 80g'}}, None,
     ['type_map value \'a100 80g\' for "A100" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-"']),
    ('type_map number type', {'type_map': {'A100': 100}}, None, ['type_map value 100 for "A100" is not a valid Slurm GRES type']),
    ('type_map keys differing in case', {'type_map': {'RTX 6000': 'a', 'rtx 6000': 'b'}}, None,
     ['type_map keys "RTX 6000" and "rtx 6000" differ only in case (matching ignores case); keep one']),
    ('relative mig_minors_path', {'mig_minors_path': 'mig-minors'}, None, ["mig_minors_path 'mig-minors' " + ABSOLUTE]),
    ('relative slurm_plugin_dirs entry', {'slurm_plugin_dirs': ['lib/slurm'], 'autodetect': 'nvml'}, None,
     ["slurm_plugin_dirs entry 'lib/slurm' " + ABSOLUTE]),
    ('no plugin dirs for nvml', {'slurm_plugin_dirs': [], 'autodetect': 'nvml'}, None,
     ['autodetect nvml needs slurm_plugin_dirs, the directories to look for gpu_nvml.so in; the list is empty']),
    ('device_root missing', {'device_root': '/nonexistent/gres-root'}, None,
     ['device_root /nonexistent/gres-root is not a directory; it is where /dev and /sys are read']),
    ('mig-minors missing', {'mig_minors_path': '{tmp}/nowhere/mig-minors'}, None,
     ['cannot read the MIG capability table {tmp}/nowhere/mig-minors: No such file or directory']),
    ('mig-minors a directory', {'mig_minors_path': '{tmp}'}, None, ['cannot read the MIG capability table {tmp}: Is a directory']),
    ('mig-minors empty', {}, lambda node: _replace_table(node, '\n'),
     ['the MIG capability table {table} is empty, but a GPU is in MIG mode', 'check mig_minors_path']),
    ('mig-minors binary', {}, lambda node: _write(node.mig_minors, b'config 1\n\xff\xfe\x00\x01'),
     ['the MIG capability table {table} is not text (byte 9 is 0xff)', 'check mig_minors_path']),
    ('mig-minors line without a minor', {}, lambda node: _replace_table(node, 'config 1\nmonitor\n'),
     ['{table} line 2: "monitor" is not "<name> <minor>" (expected lines like "gpu2/gi7/ci0/access 337")']),
    ('mig-minors minor not a number', {}, lambda node: _replace_table(node, 'config 1\ngpu2/gi7/access 0x150\n'),
     ['{table} line 2: minor "0x150" of "gpu2/gi7/access" is not a non-negative integer']),
    ('mig-minors unknown name', {}, lambda node: _replace_table(node, 'gpu2/gx7/access 336\n'),
     ['{table} line 1: name "gpu2/gx7/access" is not "config", "monitor", "gpu<N>/gi<M>/access" or "gpu<N>/gi<M>/ci<K>/access"']),
    ('mig-minors same minor twice', {}, lambda node: _replace_table(node, 'gpu2/gi7/access 336\ngpu2/gi7/ci0/access 336\n'),
     ['{table} line 2: minor 336 of "gpu2/gi7/ci0/access" is also the minor of "gpu2/gi7/access" (line 1)']),
    ('mig-minors name twice', {}, lambda node: _replace_table(node, 'gpu2/gi7/access 336\ngpu2/gi7/access 337\n'),
     ['{table} line 2: "gpu2/gi7/access" is listed twice (first on line 1)']),
    ('mig-minors minor too large', {}, lambda node: _replace_table(node, 'gpu2/gi7/access 2000000\n'),
     ['{table} line 1: minor 2000000 of "gpu2/gi7/access" is above 1048575']),
    ('mig-minors lacks a compute instance', {},
     lambda node: _replace_table(node, '\n'.join(line for line in _table_lines(node) if not line.startswith('gpu2/gi9/ci0/')) + '\n'),
     ['MIG instance gpu2/gi9/ci0 has no compute-instance minor in {table}: no line "gpu2/gi9/ci0/access <minor>"']),
]


def _snapshot(top):
    files = {}
    for directory, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                files[path] = None
                continue
            with open(path, 'rb') as handle:
                files[path] = handle.read()
    return files


@pytest.mark.parametrize('options, change, fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error(node, options, change, fragments):
    node.create('seed-003')
    if change is not None:
        change(node)
    tmp = str(node.tmp)
    args = {'device_root': node.root, 'mig_minors_path': node.mig_minors, 'cores': False}
    args.update(dict((k, v.replace('{tmp}', tmp) if isinstance(v, str) else v) for k, v in options.items()))
    before = _snapshot(tmp)
    outcome = bad_input(slurm_gres_facts.main, args,
                        *[f.replace('{table}', node.mig_minors).replace('{tmp}', tmp) for f in fragments])
    assert 'ansible_facts' not in outcome.result
    assert _snapshot(tmp) == before


def test_there_are_enough_cases():
    assert len(CASES) >= 15
    assert len(set(c[0] for c in CASES)) == len(CASES)
