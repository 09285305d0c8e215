# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_jobs asks all_reduce_perf for its -J JSON report (issue 47): the planned argv runs the all_reduce_perf stand-in
(recorded output; it writes the report as nccl-tests' util.cu does) under the plan's sh -c script, through a local launcher
standing for srun; the report comes back after the text and the figures are read from it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import JSON_BEGIN, JSON_SCRIPT

from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.test_validation_jobs import STANDIN, run_module


@pytest.fixture
def launcher(tmp_path, monkeypatch):
    """A local srun: drops its options, runs the program here (a TMPDIR of the test's own for the report's directory)."""
    path = tmp_path / 'local-srun'
    path.write_text('#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\nexec "$@"\n')
    path.chmod(0o755)
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    return str(path)


def plan(launcher, **more):
    nccl = {'binary': STANDIN, 'srun': launcher, 'nodes': [{'name': 'gpu-01', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3', 'topology': 'h100-nvlink-8'}],
            'fabric': False}
    nccl.update(more)
    return nccl


@pytest.mark.parametrize('fixture_name,versions', [
    ('rendered_v2.13-era_a100_single_node.txt', {}),
    ('v2.18.3_h200_two_nodes.txt', {'nccl': '2.30.4+cuda13.2', 'nccl_tests': '2.18.3'}),
])
def test_standin_run_with_the_json_report_judged_as_the_text(capsys, launcher, tmp_path, monkeypatch, fixture_name, versions):
    monkeypatch.setenv('ALL_REDUCE_PERF_STANDIN_OUTPUT', fixture_name)
    by_json = run_module(capsys, stage='nccl', nccl=plan(launcher, tests_version='2.19.6'))
    by_text = run_module(capsys, stage='nccl', nccl=plan(launcher, tests_version='2.19.6', json=False))
    assert by_json.get('failed') is not True, by_json
    result = by_json['results']['gpu-01']
    # the report came back, was taken out of stdout, and is not returned (its env is the job's environment)
    assert result['json_reports'] == 1 and 'json' not in result
    assert JSON_BEGIN not in result['stdout'] and '"results":' not in result['stdout']
    assert 'json_reports' not in by_text['results']['gpu-01'] and JSON_BEGIN not in by_text['results']['gpu-01']['stdout']
    assert [(r['check'], r['status']) for r in by_json['records']] == [(r['check'], r['status']) for r in by_text['records']]
    assert by_json['series'][0]['points'] == by_text['series'][0]['points']
    assert by_json['records'][0].get('versions', {}) == versions
    # the report's directory is gone
    assert not [name for name in os.listdir(str(tmp_path)) if name.startswith('gpucluster-nccl.')]


def test_an_unknown_version_is_read_as_text(capsys, launcher, monkeypatch):
    monkeypatch.setenv('ALL_REDUCE_PERF_STANDIN_OUTPUT', 'v2.13-era_h100_single_node.txt')
    result = run_module(capsys, stage='nccl', nccl=plan(launcher))
    assert result.get('failed') is not True, result
    assert 'json_reports' not in result['results']['gpu-01']
    assert not result['results']['gpu-01']['stdout'].startswith('# Writing JSON output')


def test_a_run_killed_while_it_printed_its_report_fails_with_what_is_wrong(capsys, tmp_path, monkeypatch):
    # a launcher standing for a node where the report is cut (the run killed while printing it): the text is complete
    monkeypatch.setenv('ALL_REDUCE_PERF_STANDIN_OUTPUT', 'v2.13-era_h100_single_node.txt')
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    cut = tmp_path / 'cutting-srun'
    cut.write_text('#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do shift; done\n"$@" | head -c -200\n')
    cut.chmod(0o755)
    result = run_module(capsys, stage='nccl', nccl=plan(str(cut), json=True))
    recs = dict((r['check'], r) for r in result['records'])
    assert recs['test_errors']['status'] == 'fail'
    assert recs['test_errors']['reason'].startswith('the binary reported an error: the -J JSON report cannot be read: nccl-tests JSON is not valid '
                                                    'JSON at line 1 column ')
    assert recs['test_errors']['reason'].endswith('(the file ends early: the run was probably killed while writing it)')
    # the command that reruns it is the planned one, with its sh -c script
    assert recs['test_errors']['node'] == 'gpu-01' and ' sh -c ' in recs['test_errors']['command']
    assert "-J \"$d/nccl.json\"" in recs['test_errors']['command'] and 'mktemp -d' in JSON_SCRIPT
