# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the closed loop's deep runs reach Slurm (issue 48 item 6), pure planning.

The loop program (``gpucluster-node-loop``) runs the deep tier on the nodes back from their reboot, in its maintenance
reservation.  One job per node makes slurmctld allocate one job per node, one at a time (docs/scale.md: at 1,024
nodes its allocations took 0.3-2.3 s each); the validation's NCCL stage therefore runs its per-node runs as steps of
one allocation per node type (``_validation_nccl.allocation_dispatch``).  This module does the same for the deep
runs:

* :func:`plan` groups the nodes by node type (partition and GPU count: one ``--gres=gpu:N`` per allocation) and
  gives each group of two or more nodes one allocation, ``salloc --no-shell`` in the reservation, with each node's
  deep run a step of it (``srun --jobid={jobid}``); a node alone of its type, or every node when ``dispatch`` is
  ``per_node`` (or ``auto`` below ``min_nodes`` nodes), runs as its own job, the argv ``_deep_controller.srun_argv``
  makes;
* ``--immediate``: an allocation not granted within ``wait`` seconds is asked again for the group's idle nodes
  only (:func:`narrowed`, the idle ones from ``sinfo``, :func:`idle_names`); the other nodes run as jobs of their
  own (:func:`use_own_jobs`): a node that is not free holds up only its own run;
* :func:`granted_job` reads salloc's job id, :func:`use_allocation` makes the steps of it;
* a node whose GPUs the loop resets (``reset-gpu``, health/_node_loop.py state ``reset-asked``) runs the reset as the
  first part of its deep run (:func:`with_reset`: ``nvidia-smi --gpu-reset -i <gpu>`` per GPU, the mig role's boot unit
  restarted when it is enabled, then the deep tier), and the job's output says how it went (:func:`read_reset`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import require_choice, require_int
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._node_loop import DEEP_DISPATCH as DISPATCH
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import parse_sinfo_names
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as deep_jobs
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import narrowed_argv

# auto: from this many deep runs in one pass on (1 % of 1,024 nodes failing is about 10 back at once)
DISPATCH_MIN_NODES = 4
ALLOCATION_WAIT = 60
JOB_NAME = 'gpucluster-loop-deep'
# salloc's line once the nodes are the job's
GRANTED = re.compile(r'Granted job allocation (\d+)')
# the mig role's boot unit: it re-creates the MIG layout, which a GPU reset destroys (instances do not survive it)
MIG_UNIT = 'gpucluster-mig.service'
RESET_MARK = 'GPUCLUSTER-GPU-RESET '
_RESET_LINE = re.compile(re.escape(RESET_MARK) + r'(done|failed) rc=(-?\d+) gpus=(\S*) mig=(\S+): ?(.*)$')
# The reset, run by /bin/sh on the node before the deep tier (as root: the deep tier's job): $1 the GPUs (comma
# separated, "" every GPU), $2 the MIG unit, $3 nvidia-smi, then the deep tier's argv. One line with RESET_MARK tells
# the loop what happened; the deep tier runs only after a reset that worked.
RESET_SCRIPT = '''gpus=$1 unit=$2 smi=$3 mark='@MARK@'; shift 3
say() { printf '%s%s rc=%s gpus=%s mig=%s: %s\\n' "$mark" "$1" "$2" "$3" "$4" "$(printf '%s' "$5" | tr '\\n' ' ' | cut -c1-300)"; }
if [ -z "$gpus" ]; then
  out=$("$smi" --query-gpu=index --format=csv,noheader 2>&1); rc=$?
  if [ "$rc" -ne 0 ]; then say failed "$rc" all none "$out"; exit 3; fi
  gpus=$(printf '%s' "$out" | tr -d ' ' | tr '\\n' ',' | sed 's/,*$//')
fi
for gpu in $(printf '%s' "$gpus" | tr ',' ' '); do
  out=$("$smi" --gpu-reset -i "$gpu" 2>&1); rc=$?
  if [ "$rc" -ne 0 ]; then say failed "$rc" "$gpu" none "$out"; exit 3; fi
done
mig=none
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet "$unit" 2>/dev/null; then
  out=$(systemctl restart "$unit" 2>&1); rc=$?
  if [ "$rc" -ne 0 ]; then say failed "$rc" "$gpus" "$unit" "$out"; exit 3; fi
  mig=restarted
fi
say done 0 "$gpus" "$mig" "$out"
exec "$@"'''.replace('@MARK@', RESET_MARK)


def dispatch_settings(dispatch, min_nodes, wait):
    """``(dispatch, min_nodes, wait)`` checked; ``InputError`` names the setting (``deep_dispatch``, ...)."""
    return (require_choice('deep_dispatch', dispatch, DISPATCH),
            require_int('deep_dispatch_min_nodes', min_nodes, minimum=1),
            require_int('deep_allocation_wait', wait, minimum=1, maximum=3600, unit='seconds'))


def sibling_command(srun, command):
    """``command`` (salloc, scancel, sinfo) next to ``srun``: its directory when srun is given as a path."""
    return srun[:srun.rindex('/') + 1] + command if '/' in srun else command


def node_type(candidate):
    """What one allocation shares: the partition and the GPU count (``--gres=gpu:N`` is per node)."""
    return (candidate.get('partition') or '', int(candidate['gpus']))


def plan(candidates, reservation, program, settings, time_limit, srun='srun', dispatch='auto', min_nodes=DISPATCH_MIN_NODES,
         wait=ALLOCATION_WAIT):
    """The deep runs of ``candidates`` (``[{name, gpus, partition}]``, in order) as ``(jobs, allocations)``.

    ``jobs``: one per node, ``{name, argv, own_argv, allocation}`` in the candidates' order; ``argv`` is what runs
    (a step ``srun --jobid={jobid} ...`` of the allocation named ``allocation``, or, with ``allocation`` None, the
    node's own job); ``own_argv`` is the node's own job (``_deep_controller.srun_argv``), run when the allocation is not
    granted.  ``allocations``: ``{name, nodes, argv, release, idle, timeout}`` per group of two or more nodes of one
    type (``salloc --no-shell`` in the reservation; ``release``: ``scancel`` to which the job id is added;
    ``idle``: ``sinfo`` listing the group's idle nodes)."""
    dispatch, min_nodes, wait = dispatch_settings(dispatch, min_nodes, wait)
    jobs = []
    for candidate in candidates:
        argv = deep_jobs.srun_argv(candidate, reservation, program, settings, time_limit, srun=srun)
        jobs.append({'name': candidate['name'], 'argv': argv, 'own_argv': argv, 'allocation': None})
    if dispatch == 'per_node' or (dispatch == 'auto' and len(candidates) < min_nodes):
        return jobs, []
    groups = {}  # node type -> indexes, in the order the nodes came
    for index, candidate in enumerate(candidates):
        groups.setdefault(node_type(candidate), []).append(index)
    allocations = []
    for (partition, gpus), indexes in groups.items():
        if len(indexes) < 2:
            continue  # alone of its type: an allocation of one node is a job of its own anyway
        names = [candidates[i]['name'] for i in indexes]
        label = 'gpu:%d%s' % (gpus, ' in %s' % partition if partition else '')
        argv = [sibling_command(srun, 'salloc'), '--no-shell', '--immediate=%d' % wait, '--no-kill', '--reservation=%s' % reservation,
                '--nodes=%d' % len(names), '--nodelist=%s' % compress(names), '--exclusive', '--gres=gpu:%d' % gpus,
                '--time=%d' % time_limit, '--job-name=%s' % JOB_NAME]
        if partition:
            argv.append('--partition=%s' % partition)
        allocation = {'name': '%s on %d nodes' % (label, len(names)), 'nodes': names, 'argv': argv, 'timeout': wait + 60,
                      'release': [sibling_command(srun, 'scancel')],
                      'idle': [sibling_command(srun, 'sinfo'), '-h', '-N', '-t', 'idle', '-o', '%N', '-n', compress(names)]}
        allocations.append(allocation)
        for i in indexes:
            own = jobs[i]['own_argv']
            # a step of the allocation: the job's options stay (srun ignores --reservation, --partition for a step),
            # --exclusive goes (on a step it means something else)
            step = [arg for arg in own if arg != '--exclusive']
            jobs[i]['argv'] = step[:1] + ['--jobid={jobid}'] + step[1:]
            jobs[i]['allocation'] = allocation['name']
    return jobs, allocations


def members(jobs, allocation):
    """The jobs that are steps of ``allocation``."""
    return [job for job in jobs if job['allocation'] == allocation['name']]


def granted_job(text):
    """The job id salloc says it was granted (its stderr and stdout), else None."""
    found = GRANTED.search(text or '')
    return found.group(1) if found else None


def refusal(rc, text):
    """Why an allocation was not granted, in a line: salloc's last message, else its exit status."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    return lines[-1] if lines else 'salloc exited %s with no message' % rc


def idle_names(rc, text):
    """The node names ``sinfo -h -N -t idle -o %N`` printed; empty when it failed."""
    return set(parse_sinfo_names(text)) if rc == 0 else set()


def narrowed(allocation, names):
    """``allocation`` for the nodes ``names`` of it only (``names``: in the allocation's order)."""
    return dict(allocation, argv=narrowed_argv(allocation['argv'], names), nodes=list(names),
                name='%s (%d idle)' % (allocation['name'], len(names)))


def use_allocation(jobs, job_id, name=None):
    """The jobs become steps of job ``job_id`` (and of the allocation ``name``, when it was narrowed)."""
    for job in jobs:
        job['argv'] = [arg.replace('{jobid}', str(job_id)) for arg in job['argv']]
        job['dispatch'] = 'step of job %s' % job_id
        if name:
            job['allocation'] = name


def use_own_jobs(jobs, why):
    """The allocation was not granted (``why``): each job runs as its own job."""
    for job in jobs:
        job['argv'] = job['own_argv']
        job['allocation'] = None
        job['dispatch'] = 'own job (%s)' % why


def with_reset(job, program, gpus, nvidia_smi='nvidia-smi', mig_unit=MIG_UNIT):
    """``job`` (a :func:`plan` job) with the GPU reset of ``gpus`` (``[]``: every GPU) before its deep tier, in both its
    ``argv`` and its ``own_argv``: ``program --tier deep ...`` becomes ``/bin/sh -c RESET_SCRIPT ... program --tier deep
    ...`` (the srun options before it stay). ``ValueError`` when the job does not run ``program``."""
    for key in ('argv', 'own_argv'):
        argv = job[key]
        at = [i for i in range(len(argv) - 1) if argv[i] == program and argv[i + 1] == '--tier']
        if not at:
            raise ValueError('the deep run of %s does not run %s --tier' % (job['name'], program))
        i = at[0]
        job[key] = argv[:i] + ['/bin/sh', '-c', RESET_SCRIPT, 'gpucluster-gpu-reset', ','.join(str(g) for g in gpus), mig_unit,
                               nvidia_smi] + argv[i:]
    job['reset'] = list(gpus)
    return job


def read_reset(text):
    """What the GPU reset before the deep tier said (the last ``GPUCLUSTER-GPU-RESET`` line of the job's output):
    ``{'ok', 'rc', 'gpus', 'mig', 'text'}`` (``gpus`` a list, ``mig``: ``restarted``, ``none`` or the unit that failed),
    None when there is no such line (the job never got to the reset)."""
    for line in reversed((text or '').splitlines()):
        found = _RESET_LINE.search(line.strip())
        if found:
            state, rc, gpus, mig, rest = found.groups()
            return {'ok': state == 'done', 'rc': int(rc), 'gpus': [g for g in gpus.split(',') if g], 'mig': mig,
                    'text': rest.strip()}
    return None
