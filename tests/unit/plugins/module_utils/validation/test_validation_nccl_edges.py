# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NCCL stage's whole job plan, its defaults and boundaries, and runs whose output is partial or not nccl-tests output (_validation_nccl)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'fixtures', 'nccl')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def single_node_lines():
    return fixture('v2.13-era_h100_single_node.txt').splitlines(True)


def part(first, last):
    """Lines ``first``..``last`` (0-based, inclusive) of the recorded single-node run: 0 the '# nThread' head,
    3-10 the '# Rank' lines, 12-14 the column header, 15-20 the result rows, 21-22 the footer."""
    return ''.join(single_node_lines()[first:last + 1])


def statuses(records):
    return dict((r['check'], r['status']) for r in records)


# ------------------------------------------------------------------ evaluate_run


@pytest.mark.parametrize('stdout, expected', [
    # any one part of nccl-tests output is gated (its 'complete' check says what is missing), not called "no results"
    (part(0, 0), {'complete': 'fail', 'single_run': 'pass', 'wrong': 'skip'}),         # only the '# nThread' head
    (part(3, 10), {'complete': 'fail', 'single_run': 'skip', 'wrong': 'skip'}),        # only the '# Rank' lines
    (part(15, 20), {'complete': 'fail', 'single_run': 'skip', 'wrong': 'pass'}),       # only result rows
])
def test_evaluate_run_gates_any_part_of_the_output(stdout, expected):
    records, dummy = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': stdout}, ['gpu-01'], {})
    got = statuses(records)
    assert dict((check, got[check]) for check in expected) == expected
    assert 'all_reduce' not in got


def test_evaluate_run_of_rows_only_has_their_series():
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': part(15, 20)}, ['gpu-01'], {})
    assert [point[0] for point in series[0]['points']] == [2 ** k for k in range(27, 33)]


def test_evaluate_run_without_result_rows_has_no_series():
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': part(21, 22)}, ['gpu-01'], {})
    assert statuses(records)['out_of_bounds'] == 'pass'
    assert series == []


@pytest.mark.parametrize('result, reason', [
    # the column header alone holds no result: the run printed nothing to gate
    ({'rc': 0, 'stdout': part(12, 14)},
     'all_reduce_perf printed no results (rc 0): # out-of-place in-place # size count type redop root time algbw busbw #wrong time algbw busbw '
     '#wrong # (B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s)'),
    ({'rc': 0, 'stdout': ''}, 'all_reduce_perf printed no results (rc 0): no output'),
    ({'rc': 2, 'stdout': '   ', 'stderr': None}, 'all_reduce_perf printed no results (rc 2): no output'),
    # only the last 240 characters of what it printed
    ({'rc': 1, 'stdout': '', 'stderr': 'a' * 100 + 'b' * 240}, 'all_reduce_perf printed no results (rc 1): ' + 'b' * 240),
    ({'rc': 1, 'stdout': 'hello world\n', 'stderr': 'srun: error'},
     "all_reduce_perf output is not nccl-tests output (line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' "
     "header found; first line: 'hello world'); rc 1: srun: error hello world"),
    ({'rc': 1, 'stdout': 'hello world\n', 'stderr': 'e' * 300},
     "all_reduce_perf output is not nccl-tests output (line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' "
     "header found; first line: 'hello world'); rc 1: " + 'e' * 228 + ' hello world'),
    ({'rc': 0, 'stdout': '', 'json': '{'},
     "all_reduce_perf's -J JSON report cannot be read and it printed no text report (nccl-tests JSON is not valid JSON at line 1 column 2: "
     "Expecting property name enclosed in double quotes (the file ends early: the run was probably killed while writing it)); rc 0: no output"),
])
def test_evaluate_run_without_nccl_tests_results(result, reason):
    records, series = vn.evaluate_run('gpu-01', result, ['gpu-01'], {})
    assert records == [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'all_reduce', 'status': 'fail', 'reason': reason, 'hosts': ['gpu-01']}]
    assert series == []


def test_evaluate_run_of_a_json_report_without_stdout():
    result = {'rc': 0, 'stdout': '', 'json': fixture('v2.18.3_h200_two_nodes.json')}
    records, series = vn.evaluate_run('fabric', result, ['a', 'b'], {})
    assert statuses(records) == {'complete': 'pass', 'single_run': 'pass', 'test_errors': 'pass', 'wrong': 'pass', 'out_of_bounds': 'pass',
                                 'busbw': 'skip', 'transport': 'skip'}
    assert [r['reason'] for r in records if r['check'] == 'single_run'] == ['one run of 16 rank(s)']
    assert series[0]['label'] == 'fabric' and series[0]['points'][-1] == [17179869184, 485.59] and len(series[0]['points']) == 25


@pytest.mark.parametrize('rc, exit_record', [
    (3, [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'exit', 'status': 'fail', 'reason': 'all_reduce_perf exited with rc 3', 'hosts': ['gpu-01'],
          'curve': vn.run_curve({})}]),
    (0, []),
    (None, []),
])
def test_evaluate_run_exit_code_of_a_clean_run(rc, exit_record):
    records, dummy = vn.evaluate_run('gpu-01', {'rc': rc, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-01'], {})
    assert [r for r in records if r['status'] == 'fail'] == exit_record


# ------------------------------------------------------------------ expect_for, srun_argv


@pytest.mark.parametrize('kwargs, expect', [
    ({}, {'topology': None, 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 1, 'expect_transport': None}),
    ({'large_size_bytes': 2 ** 30, 'topology': 'ib-ndr-400', 'nics': 8},
     {'topology': 'ib-ndr-400', 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 8, 'expect_transport': None, 'large_size_bytes': 2 ** 30}),
])
def test_expect_for(kwargs, expect):
    assert vn.expect_for(**kwargs) == expect


@pytest.mark.parametrize('gpus, message', [
    (True, 'gpus_per_node is True, expected a whole number of at least 1'),
    (8.0, 'gpus_per_node is 8.0, expected a whole number of at least 1'),
    ('8', "gpus_per_node is '8', expected a whole number of at least 1"),
    (-1, 'gpus_per_node is -1, expected a whole number of at least 1'),
])
def test_srun_argv_gpus_per_node_errors(gpus, message):
    with pytest.raises(ValueError) as err:
        vn.srun_argv('arp', ['a'], gpus, False, None, {})
    assert str(err.value) == message


def test_srun_argv_one_gpu():
    assert vn.srun_argv('arp', ['a'], 1, False, None, {}, args=[], exclusive=False) == [
        'srun', '--nodes=1', '--nodelist=a', '--gres=gpu:1', '--time=10', '--export=ALL', '--label', '--ntasks-per-node=1', 'arp', '-g', '1']


# ------------------------------------------------------------------ plan_jobs


def argv_text(job):
    return ' '.join(job['argv']) if 'argv' in job else None


def test_plan_jobs_whole_plan():
    """Every plan option set; node z has no GPU, c lacks the binary, d cannot take jobs; a, b, e share the GRES type h100."""
    # (a, b and e: one GPU model, so one fabric group)
    nodes = [{'name': 'a', 'gpus': '2', 'model': 'm', 'gres_type': 'h100'}, {'name': 'z', 'gpus': 0},
             {'name': 'b', 'gpus': 4, 'model': 'm', 'gres_type': 'h100'}, {'name': 'c', 'gpus': 4, 'present': 'no'},
             {'name': 'd', 'gpus': 2, 'usable': False}, {'name': 'e', 'gpus': 2, 'model': 'm', 'gres_type': 'h100'}]
    plan = {'binary': 'arp', 'nodes': nodes, 'fabric': True, 'pairwise': True, 'args': ['-b', '1M'], 'srun': '/usr/bin/srun', 'timeout': 900,
            'time_limit': '5', 'env': {'NCCL_DEBUG': 'WARN'}, 'srun_extra': ['--container-image=x'], 'mpi': 'pmix', 'thresholds': {'t1': 50.0},
            'node_topology': 't1', 'fabric_topology': 't2', 'fabric_nics': 2, 'fabric_min_busbw_gbps': 40, 'expect_transport': 'ib'}
    plan['thresholds']['t2'] = 60.0
    jobs = vn.plan_jobs(plan)
    node_expect = {'topology': 't1', 'min_busbw_gbps': None, 'thresholds': {'t1': 50.0, 't2': 60.0}, 'nics': 1, 'expect_transport': None}
    multi_expect = {'topology': 't2', 'min_busbw_gbps': 40, 'thresholds': {'t1': 50.0, 't2': 60.0}, 'nics': 2, 'expect_transport': 'ib'}
    # each multi-node run's expectation carries its node count; the two-node (pair) runs are given NCCL_ALGO=Ring
    fabric_expect, pair_expect = dict(multi_expect, nodes=3), dict(multi_expect, nodes=2)
    head = '/usr/bin/srun --nodes=%d --nodelist=%s --gres=gpu:h100:%d --exclusive --time=5 --export=ALL,%sNCCL_DEBUG=WARN --label'
    node_run = head + ' --ntasks-per-node=1 --container-image=x arp -b 1M -g %d'
    multi_run = head + ' --ntasks-per-node=2 --mpi=pmix --container-image=x arp -b 1M -g 1'
    assert [(j['name'], j['kind'], j.get('round'), j.get('hosts'), j.get('timeout'), j.get('expect'), argv_text(j)) for j in jobs] == [
        ('d', 'skip', None, ['d'], None, None, None),
        ('c', 'skip', None, ['c'], None, None, None),
        ('a', 'nccl', 0, ['a'], 900, node_expect, node_run % (1, 'a', 2, '', 2)),
        ('z', 'skip', None, ['z'], None, None, None),
        ('b', 'nccl', 0, ['b'], 900, node_expect, node_run % (1, 'b', 4, '', 4)),
        ('e', 'nccl', 0, ['e'], 900, node_expect, node_run % (1, 'e', 2, '', 2)),
        ('fabric', 'nccl', 1, ['a', 'b', 'e'], 900, fabric_expect, multi_run % (3, 'a,b,e', 2, '')),
        ('a+b', 'nccl', 2, ['a', 'b'], 900, pair_expect, multi_run % (2, 'a,b', 2, 'NCCL_ALGO=Ring,')),
        ('b+e', 'nccl', 3, ['b', 'e'], 900, pair_expect, multi_run % (2, 'b,e', 2, 'NCCL_ALGO=Ring,')),
        ('e+a', 'nccl', 4, ['e', 'a'], 900, pair_expect, multi_run % (2, 'e,a', 2, 'NCCL_ALGO=Ring,')),
    ]
    skips = [j for j in jobs if j['kind'] == 'skip']
    assert skips == [
        {'name': 'd', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['d'], 'reason': 'not run: d cannot take jobs (see its node_state check)'},
        {'name': 'c', 'kind': 'skip', 'status': 'fail', 'check': 'all_reduce', 'hosts': ['c'], 'reason': 'arp not found on c (other nodes have it)'},
        {'name': 'z', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['z'], 'reason': 'no GPU GRES on z'},
    ]


def test_plan_jobs_defaults():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'a', 'gpus': '8'}, {'name': 'b', 'gpus': 8}], 'fabric': True})
    expect = {'topology': None, 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 1, 'expect_transport': None}
    assert [(j['name'], j['round'], j['timeout'], j['expect'], argv_text(j)) for j in jobs] == [
        ('a', 0, 600, expect, 'srun --nodes=1 --nodelist=a --gres=gpu:8 --exclusive --time=10 --export=ALL --label --ntasks-per-node=1 '
                              'arp -b 8 -e 8G -f 2 -g 8'),
        ('b', 0, 600, expect, 'srun --nodes=1 --nodelist=b --gres=gpu:8 --exclusive --time=10 --export=ALL --label --ntasks-per-node=1 '
                              'arp -b 8 -e 8G -f 2 -g 8'),
        # a fabric run over two nodes: NCCL_ALGO=Ring (the plan's env has none) and its node count
        ('fabric', 1, 600, dict(expect, nodes=2), 'srun --nodes=2 --nodelist=a,b --gres=gpu:8 --exclusive --time=10 --export=ALL,NCCL_ALGO=Ring '
                                                  '--label --ntasks-per-node=8 arp -b 8 -e 8G -f 2 -g 1'),
    ]


def test_plan_jobs_a_node_with_one_gpu_is_a_gpu_node():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'a', 'gpus': 1}, {'name': 'b', 'gpus': 8}], 'fabric': True})
    assert [(j['name'], j['kind'], j['hosts']) for j in jobs] == [('a', 'nccl', ['a']), ('b', 'nccl', ['b']), ('fabric', 'nccl', ['a', 'b'])]
    assert [job['argv'][-1] for job in jobs] == ['1', '8', '1']
    assert '--ntasks-per-node=1' in jobs[2]['argv']


def test_plan_jobs_without_gpu_nodes():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'ctl', 'gpus': None}, {'name': 'login'}], 'fabric': True, 'pairwise': True})
    assert jobs == [
        {'name': 'ctl', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['ctl'], 'reason': 'no GPU GRES on ctl'},
        {'name': 'login', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['login'], 'reason': 'no GPU GRES on login'},
        {'name': 'fabric', 'kind': 'skip', 'check': 'all_reduce', 'reason': 'a fabric run needs at least 2 GPU nodes, there are 0'},
    ]


@pytest.mark.parametrize('count, pairs', [
    (2, []),                                                       # two nodes: the fabric run is their pair
    (3, [('n0+n1', 2), ('n1+n2', 3), ('n2+n0', 4)]),
])
def test_plan_jobs_pairwise_needs_three_nodes(count, pairs):
    nodes = [{'name': 'n%d' % i, 'gpus': 8} for i in range(count)]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'pairwise': True})
    assert [(j['name'], j['round']) for j in jobs if j['round'] >= 2] == pairs


def test_plan_jobs_pairs_on_mixed_untyped_nodes_go_without_exclusive():
    nodes = [{'name': 'n0', 'gpus': 7, 'gres_types': 2}, {'name': 'n1', 'gpus': 8}, {'name': 'n2', 'gpus': 8, 'gres_types': '1'}]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'pairwise': True, 'fabric': True})
    assert [(j['name'], '--exclusive' in j['argv'], [a for a in j['argv'] if a.startswith('--gres')]) for j in jobs] == [
        ('n0', True, ['--gres=gpu:7']), ('n1', True, ['--gres=gpu:8']), ('n2', True, ['--gres=gpu:8']),
        ('fabric', False, ['--gres=gpu:7']), ('n0+n1', False, ['--gres=gpu:7']), ('n1+n2', False, ['--gres=gpu:7']), ('n2+n0', False, ['--gres=gpu:7'])]


@pytest.mark.parametrize('plan, message', [
    ({'binary': 'x', 'gpus': 8, 'cores': 4}, 'unknown NCCL plan key(s) cores, gpus; valid keys: binary, nodes, env, args, timeout, time_limit, srun, '
                                             'srun_extra, node_topology, node_min_busbw_gbps, fabric, fabric_topology, fabric_nics, '
                                             'fabric_min_busbw_gbps, expect_transport, thresholds, pairwise, mpi, pairs_only, leaf_of, gate_curves, '
                                             'dispatch, dispatch_min_nodes, allocation_wait, salloc, scancel, pairs_groups, json, tests_version'),
    ({'binary': 'x', 'nodes': [{'name': 'gpu-01', 'gpus': 'eight'}]}, "node gpu-01: gpus is 'eight', expected a whole number"),
    ({'binary': 'x', 'nodes': [{'name': 'gpu-01', 'gpus': [8]}]}, 'node gpu-01: gpus is [8], expected a whole number'),
])
def test_plan_jobs_error_messages(plan, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs(plan)
    assert str(err.value) == message
