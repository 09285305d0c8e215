# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Allocation dispatch of the per-node jobs of the resume probes and of the validation's Slurm stage (issue 48 item 6),
pure planning.

One job per node makes slurmctld allocate one job per node, one at a time (docs/scale.md: at 1,024 nodes its
allocations took 0.3-2.3 s each). The NCCL stage (``_validation_nccl.allocation_dispatch``) and the closed loop's deep
tier (``health._loop_deep``) therefore run their per-node runs as steps of one allocation per node type; this module
plans the same for

* the resume probes (``validation_resume``, :func:`probe_plan`): the probe ``srun ... true`` of each resumed node, in
  the maintenance reservation; node type: the node's partitions and GRES (what ``scontrol show node`` says);
* the Slurm stage of ``validation_jobs`` (``_validation_checks.slurm_jobs``, :func:`slurm_stage_dispatch`): per round,
  ``srun hostname`` (round 0), the ``--gres=gpu:N`` job (round 1) and the pyxis job (round 2) of each node; node type:
  its GPU count.

How a planned allocation runs (the modules, through ``slurm._slurm_cli``): ``salloc --no-shell --immediate=W --no-kill``
over the nodes of the group (``{jobid}`` in the steps' argv becomes the id it was granted; ``scancel`` releases it at the
end); the node's job becomes a step ``srun --jobid={jobid} ...`` of it (``--exclusive`` and ``--reservation`` go: they are
the allocation's). A busy node (state ALLOCATED, MIXED or COMPLETING, when the plan knows it) is not put in an
allocation: it runs its own job, as before. An allocation not granted within ``W`` seconds is asked again for the
group's idle nodes (``sinfo -t idle``); the nodes left out, or every node of an allocation not granted at all, run their
own job (``own_argv``). A node whose step fails is judged as before, on a job of its own (``rerun_own``: the modules
run ``own_argv`` again and judge that; the resume probes only where the node is not drained or down after its step,
since a job of its own would wait there). A user sees the same records and messages, from fewer jobs.

``dispatch``: ``per_node`` (one job each, as before), ``allocation``, or ``auto`` (the allocation from ``min_nodes``
per-node jobs on; below that the jobs are as before).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import require_choice, require_int, require_str

DISPATCH = ('auto', 'per_node', 'allocation')
# auto: the allocation from this many per-node jobs on (as the NCCL stage's validate_nccl_settings.dispatch_min_nodes)
DISPATCH_MIN_NODES = 64
ALLOCATION_WAIT = 60
# steps of one allocation running at once (the rest wait for a slot): every step is an srun that slurmctld creates under
# the job's lock and that stays connected until its task ends
STEP_PARALLEL = 64
# minutes an allocation may last: its steps start PROBE_PARALLEL at a time, so at 1,024 nodes in 16 rounds
ALLOCATION_TIME = 10
# a node in one of these states holds a job: an allocation with it waits, so its own job goes as before
BUSY_STATES = ('ALLOCATED', 'MIXED', 'COMPLETING')
# srun options of the job that a step does not take (they are the allocation's)
JOB_ONLY = ('--exclusive', '--reservation')


def dispatch_settings(dispatch, min_nodes, wait, names=('dispatch', 'dispatch_min_nodes', 'allocation_wait')):
    """``(dispatch, min_nodes, wait)`` checked (defaults for None/''); ``InputError`` names the option (``names``)."""
    return (require_choice(names[0], dispatch or 'auto', DISPATCH),
            require_int(names[1], DISPATCH_MIN_NODES if min_nodes in (None, '') else min_nodes, minimum=1),
            require_int(names[2], ALLOCATION_WAIT if wait in (None, '') else wait, minimum=1, maximum=3600, unit='seconds'))


def wanted(dispatch, min_nodes, count):
    """Whether ``count`` per-node jobs go as steps of allocations."""
    return dispatch == 'allocation' or (dispatch == 'auto' and count >= min_nodes)


def sibling_command(srun, command):
    """``command`` (salloc, scancel, sinfo) next to ``srun``: its directory when srun is given as a path."""
    return srun[:srun.rindex('/') + 1] + command if '/' in srun else command


def step_argv(own_argv):
    """The job ``own_argv`` (``srun ...``) as a step of the allocation ``{jobid}``: ``--exclusive`` and ``--reservation``
    (with its value when it is the next word) left out."""
    step, skip = [], False
    for arg in own_argv[1:]:
        if skip:
            skip = False
            continue
        name = arg.split('=', 1)[0]
        if name in JOB_ONLY:
            skip = name == '--reservation' and '=' not in arg
            continue
        step.append(arg)
    return [own_argv[0], '--jobid={jobid}'] + step


def is_busy(node):
    """Whether a node (``slurm._nodes``: ``state``) holds a job."""
    return (node or {}).get('state') in BUSY_STATES


def allocation(label, names, srun, wait, job_name, time_limit, options=()):
    """One allocation over ``names``: ``{name, label, nodes, argv, release, idle, timeout}`` (``label``: what the nodes
    share, such as ``gpu:8``; ``options``: more salloc options, e.g. ``--gres=gpu:8``, ``--partition=p``)."""
    hostlist = compress(list(names))
    argv = [sibling_command(srun, 'salloc'), '--no-shell', '--immediate=%d' % wait, '--no-kill', '--nodes=%d' % len(names),
            '--nodelist=%s' % hostlist, '--time=%s' % time_limit, '--job-name=%s' % job_name] + list(options)
    return {'name': '%s on %d node%s' % (label, len(names), '' if len(names) == 1 else 's'), 'label': label, 'gres': label,
            'nodes': list(names), 'argv': argv, 'release': [sibling_command(srun, 'scancel')], 'timeout': wait + 60,
            'idle': [sibling_command(srun, 'sinfo'), '-h', '-N', '-t', 'idle', '-o', '%N', '-n', hostlist]}


def make_steps(jobs, alloc):
    """The jobs become steps of ``alloc`` (argv with ``{jobid}``; ``own_argv`` kept; ``rerun_own``)."""
    for job in jobs:
        job['own_argv'] = job['argv']
        job['argv'] = step_argv(job['argv'])
        job['allocation'] = alloc
        job['rerun_own'] = True


# ---------------------------------------------------------------- resume probes

def probe_type(node):
    """A resumed node's type for its probe's allocation: its partitions and its GRES (``slurm._nodes``; without the sockets
    Slurm 24.11 shows, ``gpu:h100:8(S:0-1)``)."""
    return (','.join(node.get('partitions') or []), re.sub(r'\(S:[^)]*\)', '', node.get('gres') or ''))


def probe_plan(names, nodes, reservation, probe_argv, srun='srun', dispatch='auto', min_nodes=DISPATCH_MIN_NODES,
               wait=ALLOCATION_WAIT):
    """The probes of the resumed nodes ``names`` (in order): ``(jobs, allocations)``.

    ``nodes``: name -> node (``slurm._nodes``, as listed before resuming: ``state``, ``partitions``, ``gres``);
    ``probe_argv(name)``: the node's own probe job (``_validation_resume.probe_argv``). ``jobs``: per name ``{name,
    argv, own_argv, allocation}``, ``allocation`` None for a node probed with its own job (``per_node``, ``auto`` below
    ``min_nodes``, a busy node, a node alone of its type). ``allocations``: one per node type of two or more idle nodes,
    ``salloc`` in the ``reservation`` (none: the probes run without one), named by partition and GRES."""
    jobs = [{'name': name, 'argv': probe_argv(name), 'allocation': None} for name in names]
    for job in jobs:
        job['own_argv'] = job['argv']
    if not wanted(dispatch, min_nodes, len(jobs)):
        return jobs, []
    groups = {}  # node type -> jobs, in the order the nodes came
    for job in jobs:
        node = nodes.get(job['name']) or {}
        if is_busy(node):
            job['dispatch'] = 'own job (%s holds a job: %s)' % (job['name'], node.get('state'))
            continue
        groups.setdefault(probe_type(node), []).append(job)
    allocations = []
    for (partitions, gres), members in groups.items():
        if len(members) < 2:
            continue  # alone of its type: an allocation of one node is a job of its own anyway
        label = 'probe in %s%s' % (partitions or 'the default partition', ' (%s)' % gres if gres else '')
        options = (['--partition=%s' % partitions] if partitions else []) + (['--reservation=%s' % reservation] if reservation else [])
        alloc = allocation(label, [job['name'] for job in members], srun, wait, 'gpucluster-resume-probe', ALLOCATION_TIME, options)
        allocations.append(alloc)
        make_steps(members, alloc)
    return jobs, allocations


def rerun_probe(job, result, problem):
    """Whether a resume probe that ran as a step is run again as the node's own job: it failed, yet the node is not
    drained or down after it (``problem``: ``_validation_checks.node_problem`` of the node after, '' for none; None when
    Slurm no longer lists it), so the failure may be its allocation's, not the node's (a prolog failing on another node
    with PrologFlags=Alloc ends the whole allocation). A node drained or down again is judged on its step, as before on
    its job (a job of its own would wait on it until its time-out)."""
    return bool(job.get('rerun_own')) and result.get('rc') != 0 and problem == ''


# ---------------------------------------------------------------- the Slurm stage of validate

# the Slurm stage's default dispatch, as the resume probes': at 1,024 emulated nodes, its steps STEP_PARALLEL at a time,
# 5 jobs against 3,940 started, slurmctld CPU 0.21x, every record passed where one job per node lost 755 of them to
# "Socket timed out" (benchmarks/README.md, job_dispatch.py)
SLURM_STAGE_DISPATCH = 'auto'
# the Slurm stage's jobs that go as steps (kind -> job name of the allocation); the job-environment job stays one job
SLURM_STEP_KINDS = {'srun': 'validate-srun', 'gres': 'validate-gres', 'container': 'validate-container'}


def slurm_stage_dispatch(jobs, nodes, plan):
    """The Slurm stage's per-node jobs (``_validation_checks.slurm_jobs``; ``nodes``: its plan's nodes) as steps of one
    allocation per round and node type (GPU count), in place; the jobs. ``plan``: ``dispatch``, ``dispatch_min_nodes``,
    ``allocation_wait`` (checked), ``srun``, ``partition``. A busy node (``busy`` true in its plan entry) keeps its own
    jobs."""
    dispatch, min_nodes, wait = dispatch_settings(plan.get('dispatch') or SLURM_STAGE_DISPATCH, plan.get('dispatch_min_nodes'),
                                                  plan.get('allocation_wait'))
    require_str('salloc', plan.get('salloc'), allow_none=True)
    counted = [job for job in jobs if job['kind'] == 'srun']
    if not wanted(dispatch, min_nodes, len(counted)):
        return jobs
    srun = plan.get('srun') or 'srun'
    gpus_of = dict((node['name'], int(node.get('gpus') or 0)) for node in nodes)
    busy = set(node['name'] for node in nodes if node.get('busy') is True)
    groups = {}  # (kind, gpus) -> jobs
    for job in jobs:
        node = job['name'].split('/')[0]
        if job['kind'] in SLURM_STEP_KINDS and node not in busy:
            groups.setdefault((job['kind'], gpus_of.get(node, 0)), []).append(job)
    options = ['--partition=%s' % plan['partition']] if plan.get('partition') else []
    for (kind, gpus), members in groups.items():
        if len(members) < 2:
            continue
        gres = ['--gres=gpu:%d' % gpus] if kind == 'gres' else []
        label = '%s %s' % (kind, 'gpu:%d' % gpus if gpus else 'no GPU')
        names = [job['name'].split('/')[0] for job in members]
        alloc = allocation(label, names, srun, wait, SLURM_STEP_KINDS[kind], ALLOCATION_TIME, options + gres)
        if plan.get('salloc'):
            alloc['argv'][0] = plan['salloc']
        make_steps(members, alloc)
    return jobs
