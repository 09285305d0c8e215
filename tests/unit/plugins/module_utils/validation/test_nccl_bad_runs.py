# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad nccl-tests runs (issue 47): a cut JSON report, another test's report, a run killed mid-way, nccl-tests versions that
differ across nodes. Each is one clear failed record naming the node, the report or test and what is wrong; never a pass."""

from __future__ import absolute_import, division, print_function

import json
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import evaluate_run, version_records
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "nccl")
EXPECT = {'topology': 'h100-nvlink-8'}


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


TEXT = fixture('rendered_v2.19.6_h100_single_node.txt')
JSON = fixture('rendered_v2.19.6_h100_single_node.json')
A2A_TEXT = fixture('rendered_v2.19.6_h100_alltoall.txt')
A2A_JSON = fixture('rendered_v2.19.6_h100_alltoall.json')
# killed after the row of 1 MiB: the text stops there; the report is cut where the file was when the process died
KILLED_TEXT = TEXT[:TEXT.index('     2097152  ')]
KILLED_JSON = JSON[:JSON.index('{"size":2097152')]


def closed_at_exit(doc_text, rows):
    """The report as 2.19's jsonOutputFinalize leaves it after a failing run (a CUDA or NCCL error): every open object and
    list closed, no footer (results up to ``rows``)."""
    doc = json.loads(doc_text)
    doc['results'] = doc['results'][:rows]
    for key in ('out_of_bounds', 'average_bus_bandwidth', 'errors', 'end_time'):
        del doc[key]
    return json.dumps(doc)


FAILED_TEXT = (TEXT[:TEXT.index('     2097152  ')]
               + "gpu-h100-01: Test NCCL failure common.cu:1042 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '\n")

# (case, result of the run, failed check, reason: its start and a part of it)
CASES = [
    ('json cut, no text', {'rc': 137, 'stdout': '', 'json': JSON[:5000]}, 'all_reduce',
     "all_reduce_perf's -J JSON report cannot be read and it printed no text report (nccl-tests JSON is not valid JSON at line 1 column ",
     '(the file ends early: the run was probably killed while writing it)'),
    ('json cut, text complete', {'rc': 0, 'stdout': TEXT, 'json': JSON[:-40]}, 'test_errors',
     'the binary reported an error: the -J JSON report cannot be read: nccl-tests JSON is not valid JSON at line 1 column ',
     'the file ends early'),
    ('another test: text and json of alltoall_perf', {'rc': 0, 'stdout': A2A_TEXT, 'json': A2A_JSON}, 'all_reduce',
     "the output is of alltoall_perf, not all_reduce_perf (its -J JSON report (args alltoall_perf)): is the binary path "
     "(validate_nccl_settings.tests_path) right? Its figures are not gated", ''),
    ('another test: text of alltoall_perf', {'rc': 0, 'stdout': A2A_TEXT}, 'all_reduce',
     "the output is of alltoall_perf, not all_reduce_perf (its '# Collective test' line)", ''),
    ('another test: json of alltoall_perf alone', {'rc': 0, 'stdout': '', 'json': A2A_JSON}, 'all_reduce',
     'the output is of alltoall_perf, not all_reduce_perf (its -J JSON report (args alltoall_perf))', ''),
    ('another test: json of alltoall_perf beside the all_reduce text', {'rc': 0, 'stdout': TEXT, 'json': A2A_JSON}, 'test_errors',
     'the binary reported an error: the JSON report is of alltoall_perf but the text output of all_reduce_perf', ''),
    ('another version: a 2.18 report beside 2.19.6 text', {'rc': 0, 'stdout': TEXT, 'json': fixture('v2.18.3_h200_two_nodes.json')},
     'test_errors', "the binary reported an error: the JSON report has format version 1, but nccl-tests 2.19.6 writes version 3: it comes from "
     "another nccl-tests", ''),
    ('killed mid-way, text', {'rc': None, 'timed_out': True, 'timeout': 600, 'stdout': KILLED_TEXT}, 'complete',
     "output is incomplete: output ends after 18 result rows (last size 1048576 B) without the '# Avg bus bandwidth' footer", ''),
    ('killed mid-way, text and the cut report', {'rc': None, 'timed_out': True, 'timeout': 600, 'stdout': KILLED_TEXT, 'json': KILLED_JSON},
     'complete', "output is incomplete: output ends after 18 result rows (last size 1048576 B) without the '# Avg bus bandwidth' footer", ''),
    ('failed mid-way, 2.19 closes the report at exit', {'rc': 3, 'stdout': FAILED_TEXT, 'json': closed_at_exit(JSON, 18)}, 'complete',
     "output is incomplete: JSON report has no 'average_bus_bandwidth': the run ended before its footer (18 result rows)", ''),
    ('failed mid-way, its failure line', {'rc': 3, 'stdout': FAILED_TEXT, 'json': closed_at_exit(JSON, 18)}, 'test_errors',
     "the binary reported an error: gpu-h100-01: Test NCCL failure common.cu:1042 'unhandled cuda error", ''),
    ('killed before its report was written', {'rc': 137, 'stdout': TEXT[:TEXT.index('#  Rank  3')], 'json': ''}, 'complete',
     'output is incomplete: output ends before the results table', ''),
]


@pytest.mark.parametrize('case,result,check,start,part', CASES, ids=[c[0] for c in CASES])
def test_a_bad_run_is_one_clear_failure(case, result, check, start, part):
    records, series = evaluate_run('gpu-h100-01', result, ['gpu-h100-01'], EXPECT)
    failed = [rec for rec in records if rec['status'] == 'fail']
    assert failed, records
    named = [rec for rec in failed if rec['check'] == check]
    assert len(named) == 1, failed
    assert named[0]['node'] == 'gpu-h100-01' and named[0]['hosts'] == ['gpu-h100-01'] and named[0]['stage'] == 'nccl'
    assert named[0]['reason'].startswith(start), named[0]['reason']
    assert part in named[0]['reason']
    if check == 'all_reduce':
        assert len(records) == 1 and series == []


def test_the_complete_run_passes_so_the_cases_above_fail_for_their_fault():
    records, series = evaluate_run('gpu-h100-01', {'rc': 0, 'stdout': TEXT, 'json': JSON}, ['gpu-h100-01'], EXPECT)
    assert [rec['status'] for rec in records] == ['pass'] * 6 + ['skip']
    assert len(series[0]['points']) == 31


def run_record(node, version, nccl='2.27.3'):
    return {'stage': 'nccl', 'node': node, 'check': 'complete', 'status': 'pass', 'reason': 'ok', 'hosts': [node],
            'versions': {'nccl_tests': version, 'nccl': nccl}}


@pytest.mark.parametrize('records,expected', [
    ([run_record('gpu-01', '2.19.6'), run_record('gpu-02', '2.19.6')], []),
    ([run_record('gpu-01', '2.19.6'), run_record('gpu-02', '2.18.3'), run_record('gpu-03', '2.19.6')],
     [('nccl_tests_version', 'the NCCL runs report 2 nccl-tests versions: 2.19.6 on gpu-[01,03]; 2.18.3 on gpu-02; every node should run '
       'the same build (validate_nccl_build.enabled builds the pinned one)', ['gpu-01', 'gpu-02', 'gpu-03'])]),
    ([run_record('gpu-01', '2.19.6', '2.27.3'), run_record('gpu-02', '2.19.6', '2.21.5')],
     [('nccl_version', 'the NCCL runs report 2 NCCL versions: 2.21.5 on gpu-02; 2.27.3 on gpu-01; every node should run the same build '
       '(validate_nccl_build.enabled builds the pinned one)', ['gpu-01', 'gpu-02'])]),
    ([run_record('gpu-01', '2.19.6'), dict(run_record('gpu-02', '2.18.3'), stage='slurm')], []),
    ([{'stage': 'nccl', 'node': 'gpu-01', 'check': 'all_reduce', 'status': 'fail', 'reason': 'x'}], []),
    # a record without hosts counts for its node; a multi-node run for each of its hosts
    ([dict(run_record('gpu-01', '2.19.6'), hosts=None), dict(run_record('fabric', '2.18.3'), hosts=['gpu-02', 'gpu-03'])],
     [('nccl_tests_version', 'the NCCL runs report 2 nccl-tests versions: 2.18.3 on gpu-[02-03]; 2.19.6 on gpu-01; every node should run '
       'the same build (validate_nccl_build.enabled builds the pinned one)', ['gpu-01', 'gpu-02', 'gpu-03'])]),
])
def test_versions_that_differ_across_nodes_fail(records, expected):
    found = version_records(records)
    assert [(rec['check'], rec['reason'], rec['hosts']) for rec in found] == expected
    assert all(rec['status'] == 'fail' and rec['node'] == 'cluster' and rec['stage'] == 'nccl' for rec in found)


def test_mixed_versions_from_the_runs_outputs_through_judge_jobs():
    old = TEXT.replace('# nccl-tests version 2.19.6 nccl-headers=22703', '# nccl-tests version 2.18.3 nccl-headers=22703')
    jobs = [{'name': name, 'kind': 'nccl', 'argv': ['srun', 'all_reduce_perf'], 'hosts': [name], 'expect': EXPECT, 'round': 0}
            for name in ('gpu-01', 'gpu-02')]
    records, dummy, dummy = vj.judge_jobs(jobs, {'gpu-01': {'rc': 0, 'stdout': TEXT, 'stderr': ''},
                                                 'gpu-02': {'rc': 0, 'stdout': old, 'stderr': ''}}, {'stage': 'nccl'})
    assert [rec['status'] for rec in records if rec['check'] == 'busbw'] == ['pass', 'pass']
    assert records[-1]['check'] == 'nccl_tests_version' and records[-1]['status'] == 'fail'
    assert records[-1]['reason'].startswith('the NCCL runs report 2 nccl-tests versions: 2.18.3 on gpu-02; 2.19.6 on gpu-01;')
