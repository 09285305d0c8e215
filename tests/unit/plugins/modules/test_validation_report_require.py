# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_report's require (validate_require): a required stage that could not run fails the report and its message;
a bad name fails before anything is written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import validation_report
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, run_module, snapshot

RECORDS = [
    {'stage': 'node', 'node': 'gpu-01', 'check': 'nvml', 'status': 'pass', 'reason': 'ok'},
    {'stage': 'slurm', 'node': 'gpu-01', 'check': 'srun', 'status': 'pass', 'reason': 'ok'},
    {'stage': 'nccl', 'node': 'cluster', 'check': 'all_reduce', 'status': 'skip', 'hosts': ['gpu-01'],
     'reason': 'no CUDA/nccl-tests on this cluster: /opt/nccl-tests/build/all_reduce_perf not found on gpu-01'},
]


def test_nccl_absent_and_required_fails_naming_the_stage_and_the_variable(tmp_path):
    passed = run_module(validation_report.main, {'records': RECORDS, 'dest': str(tmp_path / 'a'), 'require': ['node', 'slurm']})
    assert passed.result['status'] == 'pass'
    outcome = run_module(validation_report.main, {'records': RECORDS, 'dest': str(tmp_path / 'b'), 'require': ['node', 'slurm', 'nccl'],
                                                  'drain_nodes': ['gpu-01']})
    assert not outcome.failed and outcome.result['status'] == 'fail'
    message = outcome.result['message']
    assert message.startswith('validation failed on cluster: 1 failed check(s) (nccl/required); stage nccl is required (validate_require) '
                              'but could not run: no CUDA/nccl-tests on this cluster: /opt/nccl-tests/build/all_reduce_perf not found on gpu-01')
    assert 'validate_nccl_settings.tests_path' in message and 'or remove nccl from validate_require' in message
    assert outcome.result['drain_reasons'] == {}
    report = json.loads((tmp_path / 'b' / 'report.json').read_text())
    nccl = [s for s in report['stages'] if s['name'] == 'nccl'][0]
    assert nccl['status'] == 'fail'
    assert 'stage nccl is required' in (tmp_path / 'b' / 'report.md').read_text()


@pytest.mark.parametrize('require, fragments', [
    (['ncl'], ['value of require must be one or more of: node, slurm, mpi, nccl, container, deep', 'no match for: ncl']),
    (['nccl', 'fabric'], ['value of require must be one or more of: node, slurm, mpi, nccl, container, deep', 'no match for: fabric']),
    ([''], ['value of require must be one or more of: node', 'no match for: ']),
])
def test_bad_require_writes_nothing(require, fragments, monkeypatch, tmp_path):
    calls = forbid_commands(monkeypatch)
    before = snapshot(tmp_path)
    bad_input(validation_report.main, {'records': RECORDS, 'dest': str(tmp_path / 'report'), 'require': require}, *fragments)
    assert calls == [] and snapshot(tmp_path) == before
