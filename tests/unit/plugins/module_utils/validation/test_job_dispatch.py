# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation/_job_dispatch: the resume probes and the Slurm stage's per-node jobs as steps of one allocation per node
type (issue 48 item 6): node types grouped, busy nodes split off, the step and salloc command lines, the threshold."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _job_dispatch as jd
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import slurm_jobs
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import probe_argv


@pytest.mark.parametrize('own, step', [
    (['srun', '--nodes=1', '--nodelist=a', 'true'], ['srun', '--jobid={jobid}', '--nodes=1', '--nodelist=a', 'true']),
    (['srun', '--exclusive', '--nodelist=a', '--reservation=r', 'true'], ['srun', '--jobid={jobid}', '--nodelist=a', 'true']),
    (['srun', '--reservation', 'r', '--nodelist=a', 'true'], ['srun', '--jobid={jobid}', '--nodelist=a', 'true']),
    (['/opt/slurm/bin/srun', '--partition=p', 'hostname'], ['/opt/slurm/bin/srun', '--jobid={jobid}', '--partition=p', 'hostname']),
])
def test_step_argv(own, step):
    assert jd.step_argv(own) == step


@pytest.mark.parametrize('dispatch, minimum, count, expected', [
    ('per_node', 1, 1000, False), ('allocation', 64, 2, True), ('auto', 64, 63, False), ('auto', 64, 64, True), ('auto', 4, 5, True),
])
def test_wanted(dispatch, minimum, count, expected):
    assert jd.wanted(dispatch, minimum, count) is expected


@pytest.mark.parametrize('args, fragments', [
    (('steps', 1, 1), ['dispatch is', 'steps', 'auto, per_node, allocation']),
    (('auto', 0, 1), ['dispatch_min_nodes is 0', 'at least 1']),
    (('auto', 1, 0), ['allocation_wait is 0', 'between 1 and 3600']),
    (('auto', 'many', 1), ['dispatch_min_nodes is', 'many']),
])
def test_dispatch_settings_refused(args, fragments):
    with pytest.raises(InputError) as err:
        jd.dispatch_settings(*args)
    assert all(f in str(err.value) for f in fragments), str(err.value)


def test_dispatch_settings_defaults():
    assert jd.dispatch_settings(None, None, '') == ('auto', jd.DISPATCH_MIN_NODES, jd.ALLOCATION_WAIT)


def node(state='IDLE', partitions=('gpu',), gres='gpu:h100:8'):
    return {'state': state, 'partitions': list(partitions), 'gres': gres}


NODES = {'a1': node(), 'a2': node(gres='gpu:h100:8(S:0-1)'), 'a3': node('MIXED'), 'a4': node(), 'b1': node(gres='gpu:a100:4'), 'b2': node(gres='gpu:a100:4'),
         'c1': node(partitions=('cpu',), gres=''), 'd1': node('ALLOCATED', gres='gpu:a100:4')}


def plan(names, dispatch='allocation', reservation='gpucluster-resume', minimum=64):
    return jd.probe_plan(names, NODES, reservation, lambda name: probe_argv(name, reservation), dispatch=dispatch, min_nodes=minimum, wait=30)


def test_probe_plan_groups_node_types_and_splits_busy_and_lone_nodes():
    jobs, allocations = plan(sorted(NODES))
    assert [(a['name'], a['nodes']) for a in allocations] == [
        ('probe in gpu (gpu:h100:8) on 3 nodes', ['a1', 'a2', 'a4']), ('probe in gpu (gpu:a100:4) on 2 nodes', ['b1', 'b2'])]
    assert dict((j['name'], j['allocation']['name'] if j['allocation'] else None) for j in jobs) == {
        'a1': allocations[0]['name'], 'a2': allocations[0]['name'], 'a4': allocations[0]['name'], 'b1': allocations[1]['name'],
        'b2': allocations[1]['name'], 'a3': None, 'c1': None, 'd1': None}
    assert [j['name'] for j in jobs] == sorted(NODES)  # in the order given
    own = dict((j['name'], j) for j in jobs)
    assert own['a3']['dispatch'] == 'own job (a3 holds a job: MIXED)' and own['d1']['argv'] == probe_argv('d1', 'gpucluster-resume')
    assert own['c1']['argv'] == own['c1']['own_argv'] == probe_argv('c1', 'gpucluster-resume')
    assert allocations[0]['argv'] == ['salloc', '--no-shell', '--immediate=30', '--no-kill', '--nodes=3', '--nodelist=a[1-2,4]', '--time=10',
                                      '--job-name=gpucluster-resume-probe', '--partition=gpu', '--reservation=gpucluster-resume']
    assert own['a2']['argv'] == ['srun', '--jobid={jobid}', '--nodes=1', '--nodelist=a2', '--time=2', '--job-name=gpucluster-resume-probe', 'true']
    assert own['a2']['own_argv'] == probe_argv('a2', 'gpucluster-resume') and own['a2']['rerun_own'] is True
    assert allocations[1]['release'] == ['scancel'] and allocations[1]['idle'] == ['sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'b[1-2]']


@pytest.mark.parametrize('dispatch, minimum, names, allocated', [
    ('per_node', 1, ['a1', 'a2'], 0),
    ('auto', 3, ['a1', 'a2'], 0),
    ('auto', 2, ['a1', 'a2'], 1),
    ('allocation', 64, ['a1', 'b1'], 0),  # one node of each type: jobs of their own
    ('allocation', 64, ['a1', 'a3'], 0),  # the other is busy
])
def test_probe_plan_threshold_and_nothing_to_share(dispatch, minimum, names, allocated):
    jobs, allocations = plan(names, dispatch, minimum=minimum)
    assert len(allocations) == allocated
    assert all((j['allocation'] is None) == (j['argv'] == j['own_argv']) for j in jobs)


def test_probe_plan_without_a_reservation():
    jobs, allocations = plan(['a1', 'a2'], reservation='')
    assert not any(a.startswith('--reservation') for a in allocations[0]['argv'] + jobs[0]['argv'] + jobs[0]['own_argv'])


def test_probes_run_in_the_nodes_own_partitions():
    """A node outside the default partition is refused a job there: its probe (job or allocation) names its partitions."""
    nodes = {'c1': node(partitions=('cpu', 'debug'), gres=''), 'c2': node(partitions=('cpu', 'debug'), gres='')}
    jobs, allocations = jd.probe_plan(['c1', 'c2'], nodes, 'maint', lambda name: probe_argv(name, 'maint', partitions=nodes[name]['partitions']),
                                      dispatch='allocation', wait=30)
    assert '--partition=cpu,debug' in allocations[0]['argv']
    assert jobs[0]['own_argv'] == ['srun', '--nodes=1', '--nodelist=c1', '--time=2', '--job-name=gpucluster-resume-probe', '--partition=cpu,debug',
                                   '--reservation=maint', 'true']
    with pytest.raises(InputError, match="partition is 'a b'"):
        probe_argv('c1', 'maint', partitions=['a b'])


@pytest.mark.parametrize('job, rc, problem, expected', [
    ({'rerun_own': True}, 1, '', True),
    ({'rerun_own': True}, None, '', True),  # timed out
    ({'rerun_own': True}, 1, 'node is IDLE+DRAIN (reason: "Prolog error")', False),
    ({'rerun_own': True}, 1, None, False),  # Slurm no longer lists it
    ({'rerun_own': True}, 0, '', False),
    ({}, 1, '', False),  # a job of its own already
])
def test_rerun_probe(job, rc, problem, expected):
    assert jd.rerun_probe(job, {'rc': rc}, problem) is expected


def slurm_plan(**extra):
    nodes = [{'name': 'g%d' % i, 'gpus': 8, 'usable': True} for i in range(1, 4)]
    nodes += [{'name': 'h1', 'gpus': 4, 'usable': True}, {'name': 'h2', 'gpus': 4, 'usable': True}, {'name': 'c1', 'gpus': 0, 'usable': True},
              {'name': 'x1', 'gpus': 8, 'usable': False}]
    return dict({'nodes': nodes, 'pyxis': True, 'container_image': 'img', 'partition': 'batch', 'dispatch': 'allocation'}, **extra)


def allocations_of(jobs):
    found = {}
    for job in jobs:
        if job.get('allocation'):
            found.setdefault(job['allocation']['name'], (job['allocation'], []))[1].append(job['name'])
    return dict((name, (alloc['argv'], names)) for name, (alloc, names) in found.items())


def test_slurm_stage_one_allocation_per_round_and_gpu_count():
    jobs = slurm_jobs(slurm_plan())
    found = allocations_of(jobs)
    assert dict((name, names) for name, (argv, names) in found.items()) == {
        'srun gpu:8 on 3 nodes': ['g1', 'g2', 'g3'], 'srun gpu:4 on 2 nodes': ['h1', 'h2'],
        'gres gpu:8 on 3 nodes': ['g1/gres', 'g2/gres', 'g3/gres'], 'gres gpu:4 on 2 nodes': ['h1/gres', 'h2/gres'],
        'container gpu:8 on 3 nodes': ['g1/container', 'g2/container', 'g3/container'],
        'container gpu:4 on 2 nodes': ['h1/container', 'h2/container']}
    assert found['gres gpu:4 on 2 nodes'][0] == [
        'salloc', '--no-shell', '--immediate=60', '--no-kill', '--nodes=2', '--nodelist=h[1-2]', '--time=10', '--job-name=validate-gres',
        '--partition=batch', '--gres=gpu:4']
    assert '--gres=gpu:8' not in found['srun gpu:8 on 3 nodes'][0]
    by_name = dict((job['name'], job) for job in jobs)
    # the lone node without GPUs, the unusable one and the job environment keep jobs of their own
    assert not by_name['c1'].get('allocation') and not any(a.startswith('--jobid') for a in by_name['c1']['argv'])
    assert by_name['x1']['kind'] == 'skip' and by_name['job-environment'].get('allocation') is None
    step = by_name['h2/gres']
    assert step['argv'][:2] == ['srun', '--jobid={jobid}'] and step['argv'][2:] == step['own_argv'][1:] and step['rerun_own'] is True


def test_slurm_stage_below_the_threshold_and_per_node_as_before():
    before = slurm_jobs(slurm_plan(dispatch='per_node'))
    assert not any(job.get('allocation') or job.get('own_argv') for job in before)
    assert slurm_jobs(slurm_plan(dispatch=None)) == before  # the default, auto: 5 nodes < 64
    assert slurm_jobs(slurm_plan(dispatch='auto')) == before  # auto, 5 nodes < 64
    assert slurm_jobs(slurm_plan(dispatch='auto', dispatch_min_nodes=5)) != before


def test_slurm_stage_default_is_the_allocation_from_the_threshold_on():
    # at 1,024 emulated nodes, with its steps STEP_PARALLEL at a time: 5 jobs against 3,940, every record passed
    plan = slurm_plan(dispatch=None, dispatch_min_nodes=1)
    assert any(job.get('allocation') for job in slurm_jobs(plan))


def test_slurm_stage_busy_nodes_keep_their_own_jobs():
    plan = slurm_plan()
    plan['nodes'][0]['busy'] = True
    found = allocations_of(slurm_jobs(plan))
    assert found['srun gpu:8 on 2 nodes'][1] == ['g2', 'g3'] and found['gres gpu:8 on 2 nodes'][1] == ['g2/gres', 'g3/gres']


@pytest.mark.parametrize('extra, fragment', [
    (dict(dispatch='steps'), 'dispatch is'),
    (dict(dispatch_min_nodes=0), 'dispatch_min_nodes is 0'),
    (dict(allocation_wait=-5), 'allocation_wait is -5'),
])
def test_slurm_stage_bad_dispatch_refused(extra, fragment):
    with pytest.raises(ValueError) as err:
        slurm_jobs(slurm_plan(**extra))
    assert fragment in str(err.value)


@pytest.mark.parametrize('args, message', [
    (('steps', 1, 1), "dispatch is 'steps', expected one of auto, per_node, allocation"),
    (('auto', 0, 1), 'dispatch_min_nodes is 0, expected a whole number of at least 1'),
    (('auto', 1, 0), 'allocation_wait is 0, expected a whole number of seconds between 1 and 3600'),
    (('auto', 1, 3601), 'allocation_wait is 3601, expected a whole number of seconds between 1 and 3600'),
    (('x', 1, 1, ('probe_dispatch', 'm', 'w')), "probe_dispatch is 'x', expected one of auto, per_node, allocation"),
    (('auto', 0, 1, ('probe_dispatch', 'probe_min', 'w')), 'probe_min is 0, expected a whole number of at least 1'),
    (('auto', 1, 0, ('d', 'm', 'probe_wait')), 'probe_wait is 0, expected a whole number of seconds between 1 and 3600'),
])
def test_dispatch_settings_messages_name_the_option(args, message):
    with pytest.raises(InputError) as err:
        jd.dispatch_settings(*args)
    assert str(err.value) == message


def test_dispatch_settings_at_the_limits():
    assert jd.dispatch_settings('per_node', '1', 3600) == ('per_node', 1, 3600)
    assert jd.dispatch_settings('allocation', 5, 1) == ('allocation', 5, 1)


@pytest.mark.parametrize('names, srun, name, salloc, scancel, sinfo', [
    (['n1'], '/opt/slurm/bin/srun', 'gpu:8 on 1 node', '/opt/slurm/bin/salloc', '/opt/slurm/bin/scancel', '/opt/slurm/bin/sinfo'),
    (['n1', 'n2'], 'srun', 'gpu:8 on 2 nodes', 'salloc', 'scancel', 'sinfo'),
])
def test_an_allocation_in_full(names, srun, name, salloc, scancel, sinfo):
    hostlist = 'n1' if len(names) == 1 else 'n[1-2]'
    assert jd.allocation('gpu:8', names, srun, 5, 'job', 7, ['--partition=p']) == {
        'name': name, 'label': 'gpu:8', 'gres': 'gpu:8', 'nodes': names, 'timeout': 65, 'release': [scancel],
        'argv': [salloc, '--no-shell', '--immediate=5', '--no-kill', '--nodes=%d' % len(names), '--nodelist=%s' % hostlist, '--time=7',
                 '--job-name=job', '--partition=p'],
        'idle': [sinfo, '-h', '-N', '-t', 'idle', '-o', '%N', '-n', hostlist]}


def test_slurm_stage_jobs_of_nodes_the_plan_does_not_list_are_a_group_without_gpus():
    """Jobs whose node is not among the plan's nodes count as nodes without GPUs (``--gres=gpu:0``); ``salloc`` replaces the
    command, the others sit beside ``srun``."""
    jobs = [{'name': 'z1/gres', 'kind': 'gres', 'argv': ['srun', '--exclusive', 'true']}, {'name': 'z2/gres', 'kind': 'gres', 'argv': ['srun', 'true']},
            {'name': 'z3/env', 'kind': 'job-environment', 'argv': ['srun', 'env']}]
    out = jd.slurm_stage_dispatch(jobs, [], {'dispatch': 'allocation', 'salloc': '/x/salloc', 'srun': '/y/srun'})
    alloc = out[0]['allocation']
    assert out[1]['allocation'] is alloc and 'allocation' not in out[2]
    assert alloc == {'name': 'gres no GPU on 2 nodes', 'label': 'gres no GPU', 'gres': 'gres no GPU', 'nodes': ['z1', 'z2'], 'timeout': 120,
                     'argv': ['/x/salloc', '--no-shell', '--immediate=60', '--no-kill', '--nodes=2', '--nodelist=z[1-2]', '--time=10',
                              '--job-name=validate-gres', '--gres=gpu:0'],
                     'release': ['/y/scancel'], 'idle': ['/y/sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'z[1-2]']}
    assert [job['argv'] for job in out] == [['srun', '--jobid={jobid}', 'true'], ['srun', '--jobid={jobid}', 'true'], ['srun', 'env']]


def test_slurm_stage_refuses_a_salloc_that_is_not_text():
    with pytest.raises(InputError) as err:
        jd.slurm_stage_dispatch([], [], {'salloc': 5})
    assert str(err.value).startswith('salloc is 5')


def test_probe_plan_of_nodes_without_partitions_or_gres():
    nodes = {'c1': {'state': 'IDLE'}, 'c2': {'state': 'IDLE', 'partitions': [], 'gres': None}}
    jobs, allocations = jd.probe_plan(['c1', 'c2'], nodes, '', lambda name: ['srun', '--nodelist=%s' % name, 'true'], dispatch='allocation', wait=30)
    assert [(a['name'], a['argv'][-1]) for a in allocations] == [('probe in the default partition on 2 nodes', '--job-name=gpucluster-resume-probe')]
    assert [job['allocation'] is allocations[0] for job in jobs] == [True, True]


def test_slurm_stage_nodes_without_a_gpu_count_are_nodes_without_gpus():
    nodes = [{'name': 'c1'}, {'name': 'c2', 'gpus': None}]
    jobs = [{'name': name, 'kind': 'srun', 'argv': ['srun', '--nodelist=%s' % name, 'hostname']} for name in ('c1', 'c2')]
    out = jd.slurm_stage_dispatch(jobs, nodes, {'dispatch': 'allocation'})
    assert [job['allocation']['name'] for job in out] == ['srun no GPU on 2 nodes'] * 2
    assert out[0]['allocation']['argv'][-1] == '--job-name=validate-srun'
