# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the NCCL stage's per-node runs reach Slurm (_validation_nccl.allocation_dispatch): one job each, or steps of
one allocation per node type (issue #23: slurmctld allocates jobs one at a time; 1,024 at once took it minutes)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj


def nodes(count, gpus=8, gres_type='h100', start=1):
    return [{'name': 'gpu-%02d' % i, 'gpus': gpus, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': gres_type} for i in range(start, start + count)]


def plan(**extra):
    return dict({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': nodes(3)}, **extra)


@pytest.mark.parametrize('settings, count, allocated', [
    ({}, 3, False),                                            # auto: below 64 per-node runs, one job each
    ({}, 64, True),                                            # auto: from 64 on, steps of an allocation
    ({}, 63, False),
    ({'dispatch_min_nodes': 2}, 2, True),
    ({'dispatch_min_nodes': 2}, 1, False),
    ({'dispatch': 'allocation'}, 1, True),                     # asked for: even one node
    ({'dispatch': 'per_node'}, 200, False),                    # asked for: one job per node at any size
    ({'dispatch': 'auto', 'dispatch_min_nodes': '3'}, 3, True),  # (numbers as Ansible may pass them)
])
def test_dispatch_by_setting_and_size(settings, count, allocated):
    jobs = vn.plan_jobs(plan(nodes=nodes(count), **settings))
    runs = [job for job in jobs if job['kind'] == 'nccl' and job['round'] == 0]
    assert len(runs) == count
    assert [bool(job.get('allocation')) for job in runs] == [allocated] * count
    assert [('--jobid={jobid}' in job['argv']) for job in runs] == [allocated] * count


def test_one_allocation_per_node_type_and_a_step_per_node():
    mixed = nodes(2) + nodes(1, gpus=2, gres_type='a100', start=3) + nodes(1, start=4) + nodes(1, gpus=4, gres_type='', start=5)
    jobs = vn.plan_jobs(plan(nodes=mixed, dispatch='allocation', srun='/opt/slurm/bin/srun', time_limit='15', allocation_wait=30,
                             srun_extra=['--reservation', 'maint', '--container-image=nvcr.io#nvidia/pytorch:24.05-py3', '--cpu-bind=cores',
                                         '--overcommit', '-p', 'gpu', '-l']))
    runs = dict((job['name'], job) for job in jobs)
    allocations = []
    for job in jobs:
        if job['allocation'] not in allocations:
            allocations.append(job['allocation'])
    # the nodes of one GRES type and GPU count share one allocation, in the order the nodes came
    assert [a['name'] for a in allocations] == ['gpu:h100:8 on 3 nodes', 'gpu:a100:2 on 1 node', 'gpu:4 on 1 node']
    assert allocations[0]['argv'] == [
        '/opt/slurm/bin/salloc', '--no-shell', '--immediate=30', '--no-kill', '--nodes=3', '--nodelist=gpu-[01-02,04]', '--exclusive',
        '--gres=gpu:h100:8', '--time=15', '--job-name=gpucluster-validate-nccl',
        # the job's options go on the allocation; the container, binding and output options stay on the steps
        '--reservation', 'maint', '--overcommit', '-p', 'gpu']
    assert allocations[0]['release'] == ['/opt/slurm/bin/scancel'] and allocations[0]['timeout'] == 90
    assert allocations[2]['argv'][7] == '--gres=gpu:4'
    step, own = runs['gpu-04']['argv'], runs['gpu-04']['own_argv']
    # the step: srun --jobid=<the allocation's> (filled by the module), the node's own request, no --exclusive
    assert step[:2] == ['/opt/slurm/bin/srun', '--jobid={jobid}']
    assert step[2:] == [arg for arg in own[1:] if arg != '--exclusive']
    assert '--exclusive' in own and '--nodelist=gpu-04' in step and '--container-image=nvcr.io#nvidia/pytorch:24.05-py3' in step
    assert runs['gpu-03']['allocation'] is allocations[1] and '--gres=gpu:a100:2' in runs['gpu-03']['argv']


def test_the_other_runs_and_skipped_nodes_keep_their_own_jobs():
    mixed = nodes(3) + [{'name': 'gpu-09', 'gpus': 8, 'usable': False}, {'name': 'gpu-10', 'gpus': 0}]
    jobs = vn.plan_jobs(plan(nodes=mixed, dispatch='allocation', fabric=True, pairwise=True))
    by_name = dict((job['name'], job) for job in jobs)
    assert [job['name'] for job in jobs if job.get('allocation')] == ['gpu-01', 'gpu-02', 'gpu-03']
    assert by_name['fabric'].get('allocation') is None and by_name['fabric']['argv'][1] != '--jobid={jobid}'
    assert not any(job.get('allocation') for job in jobs if job.get('round', 0) >= 1 or job['kind'] == 'skip')
    # the job order is the plan's: skipped nodes first, then the per-node runs, the fabric run, the pairs
    assert [job['name'] for job in jobs][:5] == ['gpu-09', 'gpu-01', 'gpu-02', 'gpu-03', 'gpu-10']


@pytest.mark.parametrize('settings, message', [
    ({'dispatch': 'batch'}, "dispatch is 'batch', expected one of auto, per_node, allocation"),
    ({'dispatch_min_nodes': 0}, 'dispatch_min_nodes is 0, expected a whole number of at least 1'),
    ({'dispatch_min_nodes': True}, 'dispatch_min_nodes is True, expected a whole number of at least 1'),
    ({'allocation_wait': 'soon'}, "allocation_wait is 'soon', expected a whole number of seconds of at least 1"),
    ({'allocation_wait': -5}, 'allocation_wait is -5, expected a whole number of seconds of at least 1'),
    ({'salloc': ''}, "salloc is '', expected a non-empty string"),
    ({'scancel': ['scancel']}, "scancel is ['scancel'], expected a non-empty string"),
])
def test_bad_dispatch_settings_are_refused_before_any_job(settings, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs(plan(**settings))
    assert str(err.value) == message
    # also where no per-node run would follow (no nodes): the whole plan is checked
    with pytest.raises(ValueError):
        vn.plan_jobs(plan(nodes=[], **settings))


@pytest.mark.parametrize('options, kept', [
    ([], []),
    (['--reservation=maint', '--account', 'ops'], ['--reservation=maint', '--account', 'ops']),
    (['--container-image', 'nvcr.io#x', '--container-mounts=/a:/a', '--qos=high'], ['--qos=high']),
    (['-l', '-K', '-u', '--mpi=pmix', '--export=ALL', '-pgpu'], ['-pgpu']),
    (['--exact', '--overlap', '--cpu-bind', 'cores', '--constraint=ib'], ['--constraint=ib']),
])
def test_allocation_options(options, kept):
    assert vn.allocation_options(options) == kept


@pytest.mark.parametrize('srun, command, path', [
    ('srun', 'salloc', 'salloc'),
    ('/usr/bin/srun', 'salloc', '/usr/bin/salloc'),
    ('/opt/slurm/24.11/bin/srun', 'scancel', '/opt/slurm/24.11/bin/scancel'),
])
def test_sibling_command(srun, command, path):
    assert vn.sibling_command(srun, command) == path


@pytest.mark.parametrize('result, job_id, why', [
    ({'rc': 0, 'stderr': 'salloc: Granted job allocation 4711\nsalloc: Nodes gpu-[01-03] are ready for job\n', 'stdout': ''}, '4711', None),
    ({'rc': 1, 'stderr': 'salloc: Pending job allocation 12\nsalloc: job 12 queued and waiting for resources\n'
                         'salloc: error: Unable to allocate resources: Connection timed out\n', 'stdout': ''},
     None, 'salloc: error: Unable to allocate resources: Connection timed out'),
    ({'rc': 1, 'stderr': 'salloc: error: Job submit/allocate failed: Requested node configuration is not available\n', 'stdout': ''},
     None, 'salloc: error: Job submit/allocate failed: Requested node configuration is not available'),
    ({'rc': None, 'stderr': '', 'stdout': '', 'timed_out': True, 'timeout': 120}, None, 'salloc timed out after 120 s'),
    ({'rc': 127, 'stderr': '', 'stdout': ''}, None, 'salloc exited 127 with no message'),
])
def test_granted_or_refused(result, job_id, why):
    assert vj.granted_job(result) == job_id
    if why:
        assert vj.refusal(result) == why


def test_steps_filled_or_sent_back_to_their_own_jobs():
    jobs = vn.plan_jobs(plan(dispatch='allocation', nodes=nodes(2) + nodes(1, gpus=2, gres_type='a100', start=3)))
    groups = vj.allocation_groups(jobs)
    assert [(a['name'], [j['name'] for j in members]) for a, members in groups] == [
        ('gpu:h100:8 on 2 nodes', ['gpu-01', 'gpu-02']), ('gpu:a100:2 on 1 node', ['gpu-03'])]
    vj.use_allocation(groups[0][1], '88')
    vj.use_own_jobs(groups[1][1], 'salloc: error: Requested nodes are busy')
    assert jobs[0]['argv'][1] == '--jobid=88' and jobs[0]['dispatch'] == 'step of job 88'
    assert jobs[2]['argv'] == jobs[2]['own_argv'] and '--exclusive' in jobs[2]['argv']
    assert jobs[2]['dispatch'] == 'own job (the allocation was not granted: salloc: error: Requested nodes are busy)'
    # a failed step's rerun command is the node's own job (its allocation is gone by then)
    records = vj.with_run_facts([{'status': 'fail'}], jobs[0], {'stdout': ''})
    assert '--jobid' not in records[0]['command'] and '--exclusive' in records[0]['command']


def test_an_allocation_narrowed_to_its_idle_nodes():
    jobs = vn.plan_jobs(plan(dispatch='allocation', nodes=nodes(4), allocation_wait=7))
    allocation = jobs[0]['allocation']
    assert allocation['idle'] == ['sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'gpu-[01-04]']
    smaller = vn.narrowed(allocation, ['gpu-01', 'gpu-03', 'gpu-04'])
    assert smaller['name'] == 'gpu:h100:8 on 3 idle nodes'
    assert smaller['argv'] == [arg.replace('--nodes=4', '--nodes=3').replace('gpu-[01-04]', 'gpu-[01,03-04]') for arg in allocation['argv']]
    assert allocation['argv'][4:6] == ['--nodes=4', '--nodelist=gpu-[01-04]']  # (the plan's own is left as it was)
    assert vj.idle_nodes({'rc': 0, 'stdout': 'gpu-01\ngpu-03\n', 'stderr': ''}) == {'gpu-01', 'gpu-03'}
    assert vj.idle_nodes({'rc': 1, 'stdout': 'gpu-01\n', 'stderr': 'sinfo: error: ...'}) == set()
    assert vj.idle_nodes({'rc': None, 'stdout': '', 'stderr': '', 'timed_out': True}) == set()
    free, busy = vj.split_idle(jobs, {'gpu-01', 'gpu-04'})
    assert ([j['name'] for j in free], [j['name'] for j in busy]) == (['gpu-01', 'gpu-04'], ['gpu-02', 'gpu-03'])


@pytest.mark.parametrize('gres_type, gres_types, step', [
    ('a100', 3, True),   # whole GPUs asked for by type: a step of the allocation
    ('', 1, True),       # untyped GPUs, the node's only GPU GRES
    ('', 3, False),      # untyped GPUs beside MIG types: Slurm 22.05 refuses that step of an --exclusive job
])
def test_untyped_gpus_beside_other_types_stay_jobs_of_their_own(gres_type, gres_types, step):
    node = dict(nodes(1, gres_type=gres_type)[0], gres_types=gres_types)
    jobs = vn.plan_jobs(plan(dispatch='allocation', nodes=[node] + nodes(1, start=2)))
    assert [bool(job.get('allocation')) for job in jobs] == [step, True]
    assert ('--exclusive' in jobs[0]['argv']) is not step


@pytest.mark.parametrize('settings, want', [
    ({'dispatch_min_nodes': '', 'allocation_wait': ''}, ('auto', vn.DISPATCH_MIN_NODES, vn.ALLOCATION_WAIT)),
    ({'dispatch': 'allocation', 'dispatch_min_nodes': '2', 'allocation_wait': 5}, ('allocation', 2, 5)),
])
def test_dispatch_settings_blank_is_the_default(settings, want):
    assert vn.dispatch_settings(settings) == want


def test_the_commands_of_an_allocation_can_be_named():
    jobs = vn.plan_jobs(plan(dispatch='allocation', salloc='/x/salloc', scancel='/y/scancel'))
    allocation = jobs[0]['allocation']
    assert (allocation['argv'][0], allocation['release'], allocation['idle'][0]) == ('/x/salloc', ['/y/scancel'], 'sinfo')
