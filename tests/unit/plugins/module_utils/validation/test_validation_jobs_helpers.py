# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""_validation_jobs' helpers of the allocation dispatch, compared whole: retries, allocation records, steps run again."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj


def result(rc=1, stdout='', stderr='', timed_out=False, **more):
    return dict({'rc': rc, 'stdout': stdout, 'stderr': stderr, 'timed_out': timed_out}, **more)


def test_the_constants():
    assert vj.ATTEMPTS == 3
    assert vj.PLANNERS == (('slurm', vj.slurm_jobs), ('mpi', vj.mpi_jobs), ('nccl', vj.plan_jobs))


@pytest.mark.parametrize('attempt, expected', [(1, True), (2, True), (3, False), (4, False)])
def test_retry_allocation_up_to_the_last_attempt(attempt, expected):
    assert vj.retry_allocation(result(), attempt) is expected
    assert vj.retry_allocation(result(stderr='srun: error: Connection refused'), attempt) is expected


@pytest.mark.parametrize('res, expected', [
    # nothing but whitespace printed: a silent start
    (result(stdout='  \n', stderr=' \n'), True),
    ({'rc': 1}, True),
    ({'rc': 1, 'stdout': None, 'stderr': None}, True),
    # srun's allocation errors, any case
    (result(stderr='srun: error: connection RESET by peer'), True),
    (result(stderr='Job allocate response msg send failure'), True),
    (result(stderr='Zero Bytes were transmitted or received'), True),
    (result(stderr='srun: error: Connection timed out'), True),
    # an allocation error with no exit status, or exit 0: it is not retried
    (result(rc=None, stderr='srun: error: Connection refused'), False),
    (result(rc=0, stderr='srun: error: Connection refused'), False),
    (result(rc=2, stderr='srun: error: Connection refused'), True),
    # timed out, even silent
    (result(rc=None, timed_out=True, stderr=''), False),
])
def test_retry_allocation_cases(res, expected):
    assert vj.retry_allocation(res, 1) is expected


def test_allocation_groups_in_order_of_first_appearance_without_skips():
    a = {'name': 'A'}
    b = {'name': 'B'}
    jobs = [{'name': 'j1', 'kind': 'srun', 'allocation': b}, {'name': 'j2', 'kind': 'srun'},
            {'name': 'j3', 'kind': 'skip', 'allocation': a}, {'name': 'j4', 'kind': 'nccl', 'allocation': a},
            {'name': 'j5', 'kind': 'gres', 'allocation': b}, {'name': 'j6', 'kind': 'srun', 'allocation': None}]
    assert vj.allocation_groups(jobs) == [(b, [jobs[0], jobs[4]]), (a, [jobs[3]])]
    assert vj.allocation_groups([]) == []


@pytest.mark.parametrize('res, job_id', [
    ({'stderr': 'salloc: Granted job allocation 7', 'stdout': None}, '7'),
    ({'stderr': None, 'stdout': 'salloc: Granted job allocation 815\n'}, '815'),
    ({}, None),
    ({'stderr': 'salloc: Granted job allocation', 'stdout': '99'}, None),
    # stderr and stdout are read as separate lines: a number at the start of stdout is not part of the id
    ({'stderr': 'salloc: Granted job allocation 4', 'stdout': '2 ranks'}, '4'),
])
def test_granted_job(res, job_id):
    assert vj.granted_job(res) == job_id


@pytest.mark.parametrize('res, why', [
    ({'timed_out': True, 'timeout': 30, 'stderr': 'salloc: waiting'}, 'salloc timed out after 30 s'),
    # the last line, of stderr then stdout, stripped
    ({'stderr': 'salloc: one\n  salloc: two  \n\n', 'stdout': None, 'rc': 1}, 'salloc: two'),
    ({'stderr': 'salloc: one\n', 'stdout': ' last \n', 'rc': 1}, 'last'),
    ({'rc': 3}, 'salloc exited 3 with no message'),
    ({'rc': 3, 'stderr': ' \n', 'stdout': '\n'}, 'salloc exited 3 with no message'),
])
def test_refusal(res, why):
    assert vj.refusal(res) == why


@pytest.mark.parametrize('res, idle', [
    ({'rc': 0, 'stdout': 'gpu-02\ngpu-01\n'}, {'gpu-01', 'gpu-02'}),
    ({'rc': 0, 'stdout': ''}, set()),
    ({'rc': 1, 'stdout': 'gpu-01\n'}, set()),
    ({'rc': None, 'stdout': 'gpu-01\n'}, set()),
])
def test_idle_nodes(res, idle):
    assert vj.idle_nodes(res) == idle


def test_job_node_and_split_idle():
    assert vj.job_node({'name': 'gpu-01/gres/x'}) == 'gpu-01'
    assert vj.job_node({'name': 'gpu-01'}) == 'gpu-01'
    jobs = [{'name': 'gpu-01'}, {'name': 'gpu-02/gres'}, {'name': 'gpu-01/gres'}]
    assert vj.split_idle(jobs, {'gpu-01'}) == ([jobs[0], jobs[2]], [jobs[1]])
    assert vj.split_idle(jobs, set()) == ([], jobs)


def test_use_allocation_and_own_jobs():
    jobs = [{'name': 'a', 'argv': ['srun', '--jobid={jobid}', 'x{jobid}y'], 'own_argv': ['srun', 'own']}]
    vj.use_allocation(jobs, '12')
    assert jobs == [{'name': 'a', 'argv': ['srun', '--jobid=12', 'x12y'], 'own_argv': ['srun', 'own'], 'dispatch': 'step of job 12'}]
    vj.use_own_jobs(jobs, 'busy')
    assert jobs == [{'name': 'a', 'argv': ['srun', 'own'], 'own_argv': ['srun', 'own'],
                     'dispatch': 'own job (the allocation was not granted: busy)'}]


class Client(object):
    """A client whose salloc results come from a list; it notes each call's argv and timeout."""

    def __init__(self, *results):
        self.results = list(results)
        self.calls = []

    def job(self, argv, timeout):
        self.calls.append((argv, timeout))
        return self.results.pop(0)


BUSY = 'salloc: error: Unable to allocate resources: Socket timed out on send/recv operation'


def members():
    return [{'name': 'g1', 'argv': ['srun', '--jobid={jobid}']}, {'name': 'g2', 'argv': ['srun', '--jobid={jobid}']}]


def test_request_allocation_granted_at_once():
    client = Client(result(rc=0, stderr='salloc: Granted job allocation 42', seconds=1.5))
    granted, records, group = [], [], members()
    allocation = {'name': 'gpu:8 on 2 nodes', 'argv': ['salloc', '-N2'], 'release': ['scancel', '{jobid}']}
    assert vj.request_allocation(client, allocation, group, granted, records, sleep=pytest.fail) is None
    assert client.calls == [(['salloc', '-N2'], 120)]
    assert records == [{'name': 'gpu:8 on 2 nodes', 'nodes': 2, 'job_id': '42', 'seconds': 1.5}]
    assert granted == [(['scancel', '{jobid}'], '42')]
    assert [job['argv'] for job in group] == [['srun', '--jobid=42']] * 2
    assert [job['dispatch'] for job in group] == ['step of job 42'] * 2


def test_request_allocation_asked_again_then_refused():
    client = Client(result(stderr=BUSY, seconds=1), result(stderr=BUSY, seconds=2), result(stderr=BUSY + '\nsalloc: gave up', seconds=3))
    granted, records, slept, group = [], [], [], members()
    allocation = {'name': 'A', 'argv': ['salloc'], 'release': ['scancel'], 'timeout': 9}
    why = vj.request_allocation(client, allocation, group, granted, records, timeout=50, sleep=slept.append)
    assert why == 'salloc: gave up'
    assert client.calls == [(['salloc'], 9)] * 3 and slept == [5, 10]
    assert records == [{'name': 'A', 'nodes': 2, 'job_id': None, 'seconds': 3, 'attempts': 3, 'refused': 'salloc: gave up'}]
    assert granted == [] and [job['argv'] for job in group] == [['srun', '--jobid={jobid}']] * 2
    assert 'dispatch' not in group[0]


def test_request_allocation_given_timeout_and_two_attempts():
    client = Client(result(stderr=BUSY, seconds=1), result(rc=0, stderr='salloc: Granted job allocation 5', seconds=2))
    records, slept = [], []
    vj.request_allocation(client, {'name': 'A', 'argv': ['salloc'], 'release': ['scancel']}, members(), [], records, timeout=50,
                          sleep=slept.append)
    assert client.calls == [(['salloc'], 50)] * 2 and slept == [5]
    assert records == [{'name': 'A', 'nodes': 2, 'job_id': '5', 'seconds': 2, 'attempts': 2}]


@pytest.mark.parametrize('job, res, expected', [
    ({'rerun_own': True, 'dispatch': 'step of job 3'}, {'rc': 1}, True),
    ({'rerun_own': True, 'dispatch': 'step of job 3'}, {'rc': None, 'timed_out': True}, True),
    ({'rerun_own': True, 'dispatch': 'step of job 3'}, {'rc': 0, 'timed_out': False}, False),
    ({'rerun_own': True, 'dispatch': 'step of job 3'}, {'rc': 0}, False),
    ({'rerun_own': False, 'dispatch': 'step of job 3'}, {'rc': 1}, False),
    ({'dispatch': 'step of job 3'}, {'rc': 1}, False),
    ({'rerun_own': True, 'dispatch': 'own job (busy)'}, {'rc': 1}, False),
    ({'rerun_own': True, 'dispatch': None}, {'rc': 1}, False),
    ({'rerun_own': True}, {'rc': 1}, False),
])
def test_step_failed(job, res, expected):
    assert vj.step_failed(job, res) is expected


@pytest.mark.parametrize('res, why', [
    ({'rc': 1}, 'its step of job 3 failed (rc 1)'),
    ({'rc': 1, 'stderr': None}, 'its step of job 3 failed (rc 1)'),
    ({'rc': None, 'timed_out': True, 'timeout': 60, 'stderr': ''}, 'its step of job 3 timed out after 60 s'),
    ({'rc': 2, 'stderr': 'srun: one\n  srun: error: two  \n \n'}, 'its step of job 3 failed (rc 2): srun: error: two'),
    ({'rc': 2, 'stderr': 'e' * 250}, 'its step of job 3 failed (rc 2): ' + 'e' * 200),
])
def test_step_failure(res, why):
    assert vj.step_failure({'dispatch': 'step of job 3'}, res) == why


# ---------------------------------------------------------------- judge_pairs

def pair_job(a, b, group=None, round_=2, kind='nccl'):
    return {'name': '%s+%s' % (a, b), 'kind': kind, 'round': round_, 'hosts': [a, b], 'group': group}


def pair_rec(a, b, value, status, command=None, check='busbw'):
    rec = {'stage': 'nccl', 'node': '%s+%s' % (a, b), 'check': check, 'status': status, 'reason': 'r', 'value': value, 'threshold': 100.0,
           'hosts': [a, b]}
    if command:
        rec['command'] = command
    return rec


# b is slow with both its neighbours; a+b failed twice (busbw and complete), with the same command each time
SLOW_B = [pair_rec('a', 'b', 50.0, 'fail', 'cmd ab'), pair_rec('a', 'b', None, 'fail', 'cmd ab', check='complete'),
          pair_rec('b', 'c', 40.0, 'fail', 'cmd bc'), pair_rec('a', 'c', 120.0, 'pass', 'cmd ac')]
SLOW_B_FINDING = {'stage': 'nccl', 'node': 'b', 'check': 'isolation', 'status': 'fail', 'value': 45, 'command': 'cmd ab\ncmd bc',
                  'reason': 'b: 45 % of expected in pairs with 2 other nodes (a, c)'}


@pytest.mark.parametrize('params', [{}, {'nccl': None}, {'nccl': {}}, {'nccl': {'leaf_of': None}}])
def test_judge_pairs_names_the_slow_node_with_the_commands_of_its_pairs(params):
    jobs = [pair_job('a', 'b'), pair_job('b', 'c'), pair_job('a', 'c')]
    assert vj.judge_pairs(jobs, SLOW_B, params) == [SLOW_B_FINDING]


def test_judge_pairs_without_commands_gives_none():
    jobs = [pair_job('a', 'b'), pair_job('b', 'c'), pair_job('a', 'c')]
    records = [dict((key, value) for key, value in rec.items() if key != 'command') for rec in SLOW_B]
    expected = dict(SLOW_B_FINDING)
    del expected['command']
    assert vj.judge_pairs(jobs, records, {}) == [expected]


def test_judge_pairs_reads_the_leaves_of_the_nccl_plan():
    jobs = [pair_job('a', 'b'), pair_job('b', 'c'), pair_job('a', 'c')]
    found = vj.judge_pairs(jobs, SLOW_B, {'nccl': {'leaf_of': {'a': 'L1', 'b': 'L2', 'c': 'L2'}}})
    assert found == [dict(SLOW_B_FINDING, reason='b (leaf L2): 45 % of expected in pairs with 2 other nodes (a, c)')]


def test_judge_pairs_takes_only_the_pair_runs_of_round_two_and_up():
    # round 1, a skipped pair, three hosts and no round: not pair runs, so no pair is judged
    jobs = [pair_job('a', 'b', round_=1), pair_job('b', 'c', kind='skip'), dict(pair_job('a', 'c'), hosts=['a', 'b', 'c']),
            {'name': 'a+c', 'kind': 'nccl', 'hosts': ['a', 'c']}]
    assert vj.judge_pairs(jobs, SLOW_B, {}) == []
    assert vj.judge_pairs([], SLOW_B, {}) == []


def test_judge_pairs_of_fast_pairs_pass_per_group():
    records = [pair_rec('a', 'b', 150.0, 'pass'), pair_rec('b', 'c', 140.0, 'pass'), pair_rec('x', 'y', 120.0, 'pass')]
    jobs = [pair_job('x', 'y', 'l40s', round_=3), pair_job('a', 'b'), pair_job('b', 'c')]
    assert vj.judge_pairs(jobs, records, {}) == [
        {'stage': 'nccl', 'node': 'pairs', 'check': 'isolation', 'status': 'pass', 'reason': 'no slow node, link or leaf: all 2 pairs reach their gate'},
        {'stage': 'nccl', 'node': 'pairs:l40s', 'check': 'isolation', 'status': 'pass',
         'reason': 'no slow node, link or leaf: all 1 pairs reach their gate (fabric group l40s)'},
    ]


def test_judge_pairs_of_a_group_keeps_a_slow_nodes_name():
    jobs = [pair_job('a', 'b', 'g'), pair_job('b', 'c', 'g'), pair_job('a', 'c', 'g')]
    assert vj.judge_pairs(jobs, SLOW_B, {}) == [SLOW_B_FINDING]


def test_judge_pairs_a_slow_link_gets_the_commands_of_its_two_nodes():
    records = [pair_rec('a', 'b', 50.0, 'fail', 'cmd ab'), pair_rec('b', 'c', 150.0, 'pass'), pair_rec('c', 'd', 150.0, 'pass', 'cmd cd'),
               pair_rec('a', 'd', 150.0, 'pass')]
    jobs = [pair_job('a', 'b'), pair_job('b', 'c'), pair_job('c', 'd'), pair_job('a', 'd')]
    assert vj.judge_pairs(jobs, records, {}) == [
        {'stage': 'nccl', 'node': 'link:a+b', 'check': 'isolation', 'status': 'fail', 'value': 50, 'hosts': ['a', 'b'], 'command': 'cmd ab',
         'reason': 'the link between a and b: 50 % of expected, while each is fast with its other neighbour'}]


# ---------------------------------------------------------------- run_versions / skipped_record / planned_jobs

@pytest.mark.parametrize('res', [{'stdout': ' \n', 'json': ' \n'}, {'stdout': None, 'json': None}, {}])
def test_run_versions_of_blank_output(res):
    assert vj.run_versions(res) == {}


def test_a_skipped_mpi_path_counts_one_rank_by_default():
    job = dict((key, None) for key in vj.JOB_KEYS)
    job.update(name='srun_pmi', kind='skip', path='srun_pmi', reason='no binary', ranks=None)
    assert vj.skipped_record(job, {'stage': 'mpi', 'mpi_required_paths': ['srun_pmi']}) == {
        'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'srun_pmi: no binary'}


@pytest.mark.parametrize('error', [ValueError('bad value'), TypeError('bad type'), AttributeError('bad attribute')])
def test_planned_jobs_names_the_plan_whatever_the_planner_raises(error, monkeypatch):
    def planner(plan):
        raise error
    monkeypatch.setattr(vj, 'PLANNERS', (('mpi', planner),))
    with pytest.raises(vj.JobsFailure) as failure:
        vj.planned_jobs({'mpi': {'binary': 'x'}})
    assert failure.value.msg == 'mpi plan: %s' % error
    assert failure.value.__cause__ is error
