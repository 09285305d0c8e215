# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _validation_isolate: the pairwise runs name the slow node, link or leaf - and only that."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_isolate as iso
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import pair_rounds

HEALTHY = 380.0


def nodes(count):
    return ['gpu-%02d' % i for i in range(1, count + 1)]


def measure(names, slow_nodes=None, slow_links=None, slow_uplinks=None, leaf_of=None, threshold=None, failed=()):
    """Pairs as the validation runs them (ring neighbours in rounds) with the busbw a fabric with these faults gives:
    a slow node or link scales its pairs; a slow leaf uplink scales the pairs that leave the leaf."""
    pairs = {}
    for round_ in pair_rounds(names):
        for a, b in round_:
            factor = 1.0
            for node, f in (slow_nodes or {}).items():
                if node in (a, b):
                    factor = min(factor, f)
            for (x, y), f in (slow_links or {}).items():
                if set((x, y)) == set((a, b)):
                    factor = min(factor, f)
            for leaf, f in (slow_uplinks or {}).items():
                if (leaf_of.get(a) == leaf) != (leaf_of.get(b) == leaf):
                    factor = min(factor, f)
            pairs[(a, b)] = {'value': None if (a, b) in failed else round(HEALTHY * factor, 1), 'threshold': threshold,
                             'failed': (a, b) in failed}
    return pairs


LEAVES_8 = dict([(n, 'L1') for n in nodes(8)[:4]] + [(n, 'L2') for n in nodes(8)[4:]])
LEAVES_9 = dict([(n, 'L1') for n in nodes(9)[:3]] + [(n, 'L2') for n in nodes(9)[3:6]] + [(n, 'L3') for n in nodes(9)[6:]])


@pytest.mark.parametrize('count, kwargs, leaf_of, expected', [
    # healthy: nothing named
    (4, {}, None, []),
    (16, {}, None, []),
    # one slow node, whatever the size: that node and only it
    (3, {'slow_nodes': {'gpu-02': 0.6}}, None, [('node', 'gpu-02')]),
    (4, {'slow_nodes': {'gpu-03': 0.6}}, None, [('node', 'gpu-03')]),
    (8, {'slow_nodes': {'gpu-08': 0.5}}, None, [('node', 'gpu-08')]),
    (33, {'slow_nodes': {'gpu-17': 0.61}}, None, [('node', 'gpu-17')]),
    # two slow nodes apart, and two side by side
    (8, {'slow_nodes': {'gpu-02': 0.6, 'gpu-06': 0.6}}, None, [('node', 'gpu-02'), ('node', 'gpu-06')]),
    (8, {'slow_nodes': {'gpu-02': 0.6, 'gpu-03': 0.6}}, None, [('node', 'gpu-02'), ('node', 'gpu-03')]),
    # a slow link: the two ends are each fast with their other neighbour
    (6, {'slow_links': {('gpu-03', 'gpu-04'): 0.5}}, None, [('link', 'gpu-03+gpu-04')]),
    # a slow leaf uplink: the leaf, not its nodes (and not the other leaves' nodes at its border)
    (9, {'slow_uplinks': {'L2': 0.5}}, LEAVES_9, [('leaf', 'L2')]),
    # with two leaves the pairs cannot tell which leaf's uplinks: the path between them
    (8, {'slow_uplinks': {'L2': 0.5}}, LEAVES_8, [('leaves', 'L1+L2')]),
    # a slow node inside a leaf: the node, with its leaf said
    (8, {'slow_nodes': {'gpu-06': 0.6}}, LEAVES_8, [('node', 'gpu-06')]),
    # a pair whose run gave no result counts as slow
    (4, {'failed': [('gpu-01', 'gpu-02')]}, None, [('link', 'gpu-01+gpu-02')]),
    # two nodes: one pair, which cannot be split
    (2, {'slow_nodes': {'gpu-02': 0.5}, 'threshold': 300.0}, None, [('pair', 'gpu-01+gpu-02')]),
    # ... and without a gate, one pair has nothing to be compared with
    (2, {'slow_nodes': {'gpu-02': 0.5}}, None, []),
])
def test_isolate_names_exactly_the_slow_part(count, kwargs, leaf_of, expected):
    pairs = measure(nodes(count), leaf_of=leaf_of, **kwargs)
    findings = iso.isolate(pairs, leaf_of)
    assert [(f['kind'], f['name']) for f in findings] == expected, [f['text'] for f in findings]


def test_the_texts_say_how_slow_and_with_whom():
    findings = iso.isolate(measure(nodes(8), slow_nodes={'gpu-06': 0.61}, leaf_of=LEAVES_8), LEAVES_8)
    assert findings[0]['text'] == 'gpu-06 (leaf L2): 61 % of expected in pairs with 2 other nodes (gpu-05, gpu-07)'
    findings = iso.isolate(measure(nodes(9), slow_uplinks={'L2': 0.5}, leaf_of=LEAVES_9), LEAVES_9)
    assert findings[0]['text'] == ('leaf L2 (gpu-04, gpu-05, gpu-06): 50 % of expected in every pair leaving it (2); '
                                   'inside it 100 %: its uplinks, not its nodes')


def test_a_gate_threshold_is_the_bar_where_the_gate_has_one():
    # every pair at 300 GB/s against a 360 GB/s gate: all slow, all nodes named - the fabric is slow everywhere
    pairs = measure(nodes(4), slow_nodes={}, threshold=360.0)
    for entry in pairs.values():
        entry['value'] = 300.0
    assert [f['name'] for f in iso.isolate(pairs)] == nodes(4)
    # without a threshold the best pair is the bar: the same figures are a healthy fabric
    for entry in pairs.values():
        entry['threshold'] = None
    assert iso.isolate(pairs) == []


def test_pair_measurements_from_the_report_records():
    records = [
        {'stage': 'nccl', 'node': 'gpu-01+gpu-02', 'check': 'busbw', 'status': 'fail', 'value': 180.0, 'threshold': 300.8,
         'hosts': ['gpu-01', 'gpu-02']},
        {'stage': 'nccl', 'node': 'gpu-01+gpu-02', 'check': 'wrong', 'status': 'pass', 'hosts': ['gpu-01', 'gpu-02']},
        {'stage': 'nccl', 'node': 'gpu-02+gpu-03', 'check': 'all_reduce', 'status': 'fail', 'reason': 'timed out', 'hosts': ['gpu-02', 'gpu-03']},
        {'stage': 'nccl', 'node': 'fabric', 'check': 'busbw', 'status': 'fail', 'value': 1.0, 'hosts': ['gpu-01', 'gpu-02', 'gpu-03']},
        {'stage': 'nccl', 'node': 'gpu-01', 'check': 'busbw', 'status': 'pass', 'value': 380.0, 'hosts': ['gpu-01']},
    ]
    assert iso.pair_measurements(records) == {
        ('gpu-01', 'gpu-02'): {'value': 180.0, 'threshold': 300.8, 'failed': False},
        ('gpu-02', 'gpu-03'): {'value': None, 'threshold': None, 'failed': True},
    }


def test_isolation_records():
    pairs = measure(nodes(6), slow_nodes={'gpu-04': 0.5})
    records = iso.isolation_records(iso.isolate(pairs), pairs)
    assert [(r['node'], r['check'], r['status'], r['value']) for r in records] == [('gpu-04', 'isolation', 'fail', 50)]
    pairs = measure(nodes(9), slow_uplinks={'L2': 0.5}, leaf_of=LEAVES_9)
    records = iso.isolation_records(iso.isolate(pairs, LEAVES_9), pairs)
    assert [(r['node'], r['hosts']) for r in records] == [('leaf:L2', ['gpu-04', 'gpu-05', 'gpu-06'])]
    healthy = measure(nodes(4))
    assert iso.isolation_records([], healthy)[0]['status'] == 'pass'
    assert iso.isolation_records([], {}) == []


def test_bad_fraction():
    with pytest.raises(ValueError, match='fraction is 0, expected a share above 0 and at most 1'):
        iso.isolate({}, fraction=0)


# --- through the validation_jobs judgement: pair jobs planned, their results judged, the isolation records added ---

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_jobs import judge_jobs, planned_jobs  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import plan_jobs  # noqa: E402


def _plan(count, **extra):
    members = [{'name': n, 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'} for n in nodes(count)]
    plan = {'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': members,
            'fabric': True, 'fabric_min_busbw_gbps': 300.0, 'pairs_only': True, 'mpi': 'pmix'}
    plan.update(extra)
    return plan


def test_the_follow_up_plans_only_the_pair_rounds():
    jobs = plan_jobs(_plan(5))
    assert [j['name'] for j in jobs] == ['gpu-01+gpu-02', 'gpu-03+gpu-04', 'gpu-02+gpu-03', 'gpu-04+gpu-05', 'gpu-05+gpu-01']
    assert sorted(set(j['round'] for j in jobs)) == [2, 3, 4]
    # two nodes: the one pair (the fabric run was that pair; the follow-up tells it from the single-node runs)
    assert [j['name'] for j in plan_jobs(_plan(2))] == ['gpu-01+gpu-02']
    with pytest.raises(ValueError, match='leaf_of must map node names to leaf switch names'):
        plan_jobs(_plan(3, leaf_of={'gpu-01': 5}))


def test_judge_jobs_names_the_slow_node_from_the_pair_runs(tmp_path):
    """The pair jobs' outputs are the all_reduce_perf STAND-IN's, run as srun would run rank 0 of each pair, with
    gpu-04 made slow (its ``node`` slowness rule): the judgement names gpu-04 and nothing else."""
    import os
    import subprocess
    import sys
    root = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..')
    standin = os.path.join(root, 'tests', 'standins', 'all_reduce_perf-standin')
    params = {'jobs': [], 'nccl': _plan(6), 'slurm': None, 'mpi': None, 'stage': 'nccl', 'mpi_required_paths': []}
    jobs = planned_jobs(params)
    results = {}
    for job in jobs:
        args = job['argv'][job['argv'].index(params['nccl']['binary']) + 1:]
        env = dict(os.environ, SLURM_JOB_NODELIST=','.join(job['hosts']), SLURM_NNODES='2', SLURM_NTASKS='16', SLURM_PROCID='0',
                   ALL_REDUCE_PERF_STANDIN_SLOW='node gpu-04 0.5', ALL_REDUCE_PERF_STANDIN_SLOW_FILE=str(tmp_path / 'none'))
        proc = subprocess.run([sys.executable, standin] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=False, timeout=60)
        results[job['name']] = {'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr, 'timed_out': False, 'timeout': 600}
    records, _series, _warnings = judge_jobs(jobs, results, params)
    isolation = [r for r in records if r['check'] == 'isolation']
    assert [(r['node'], r['status']) for r in isolation] == [('gpu-04', 'fail')], [r['reason'] for r in isolation]
    assert isolation[0]['reason'].startswith('gpu-04: ') and 'in pairs with 2 other nodes (gpu-03, gpu-05)' in isolation[0]['reason']
    # under the finding, the commands that rerun its evidence: the slow pairs of gpu-04, one a line
    assert [line.split(' --gres=')[0] for line in isolation[0]['command'].split('\n')] == [
        'srun --nodes=2 --nodelist=gpu-03,gpu-04', 'srun --nodes=2 --nodelist=gpu-04,gpu-05']
