# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CUDA MPS for Slurm jobs with the ``mps`` GRES (pure functions).

The slurm role's prolog hook ``30-all-mps-start``, epilog hook
``30-all-mps-stop`` (both run ``mps_hook.py``) and the TaskProlog ask this
module what to do; they do the I/O.  Standard library only: the file is
installed on the compute nodes (the ``node_library`` filter).

One MPS control daemon per (job user, GPU), run as that user:

* an MPS server only serves clients of its own user, and a control daemon
  that sees a client of another user stops its server for it once the
  running clients end (NVIDIA's MPS documentation, "multi-user"); one daemon
  per user keeps two users' jobs on one GPU from waiting on each other.
  Each user's server then time-slices the GPU with the other's, as two
  processes without MPS do (the GPU's compute mode must stay DEFAULT);
* the daemon's pipe directory ``<mps_dir>/<uid>-<gpus>/pipe`` belongs to
  the user (0700), so no other user's process can reach that daemon;
* the prolog writes one record per job (``<mps_dir>/jobs/<job id>``,
  root's); the epilog removes the job's record and stops the daemon when no
  other record names it (the last job using it ended); a prolog that finds
  the daemon's socket dead starts it again (a crashed daemon).

Slurm sets ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (the job's share of the
GPU's ``mps`` count, in percent) and ``CUDA_VISIBLE_DEVICES`` in the
prolog's and the job's environment; the TaskProlog adds
``CUDA_MPS_PIPE_DIRECTORY``, ``CUDA_MPS_LOG_DIRECTORY`` and
``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` (the same share of the GPU's memory).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

MPS_DIR = '/run/gpucluster-mps'
JOBS = 'jobs'
# the values become paths: each pattern ends with \Z ("$" would let a last newline through)
_NUMBER = re.compile(r'[0-9]+\Z')
# CUDA_VISIBLE_DEVICES as Slurm sets it for a job's GPUs: indices, or device UUIDs
_DEVICES = re.compile(r'(?:[0-9]+|(?:GPU|MIG)-[A-Za-z0-9-]+)(?:,(?:[0-9]+|(?:GPU|MIG)-[A-Za-z0-9-]+))*\Z')
_PERCENTAGE = re.compile(r'[0-9]+(?:\.[0-9]+)?\Z')


def mps_job(env):
    """What an MPS job's prolog or TaskProlog works with, from Slurm's environment.

    ``None`` for a job without the ``mps`` GRES (no
    ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` or no ``CUDA_VISIBLE_DEVICES``), else
    ``{'job', 'uid', 'devices', 'percentage', 'key'}``.  Raises ``ValueError``
    naming the variable whose value cannot be right (they become paths).
    """
    percentage = env.get('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE') or ''
    devices = env.get('CUDA_VISIBLE_DEVICES') or ''
    if not percentage or not devices:
        return None
    job = env.get('SLURM_JOB_ID') or env.get('SLURM_JOBID') or ''
    uid = env.get('SLURM_JOB_UID') or ''
    for name, value, pattern, valid in (
            ('SLURM_JOB_ID', job, _NUMBER, 'a job id'),
            ('SLURM_JOB_UID', uid, _NUMBER, 'a numeric uid'),
            ('CUDA_VISIBLE_DEVICES', devices, _DEVICES, 'GPU indices or UUIDs separated by commas'),
            ('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', percentage, _PERCENTAGE, 'a percentage')):
        if not pattern.match(value):
            raise ValueError('%s=%s is not %s' % (name, value, valid))
    if not 0 < float(percentage) <= 100:
        raise ValueError('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s is not a percentage between 0 and 100' % percentage)
    return {'job': job, 'uid': int(uid), 'devices': devices, 'percentage': percentage,
            'key': '%s-%s' % (uid, devices.replace(',', '+'))}


def daemon_paths(mps_dir, key):
    """Directories of the control daemon named ``key`` (``<uid>-<gpus>``)."""
    root = '%s/%s' % (mps_dir.rstrip('/'), key)
    return {'root': root, 'pipe': root + '/pipe', 'log': root + '/log'}


def job_record_path(mps_dir, job):
    return '%s/%s/%s' % (mps_dir.rstrip('/'), JOBS, job)


def pinned_limit_mib(memory_mib, percentage):
    """The job's share of the GPU's memory (MiB, rounded down); ``None`` when the memory is not known."""
    if not memory_mib or memory_mib <= 0:
        return None
    return max(1, int(memory_mib * float(percentage) // 100))


def job_record(job, mps_dir, memory_mib=None):
    """The record the prolog writes for one job (JSON text)."""
    paths = daemon_paths(mps_dir, job['key'])
    return json.dumps({'job': job['job'], 'uid': job['uid'], 'devices': job['devices'], 'key': job['key'],
                       'pipe': paths['pipe'], 'log': paths['log'],
                       'pinned_mib': pinned_limit_mib(memory_mib, job['percentage'])}, sort_keys=True) + '\n'


def parse_job_record(text):
    """A job record back; ``ValueError`` when it is not one the prolog wrote."""
    try:
        record = json.loads(text)
    except ValueError:
        raise ValueError('not JSON')
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ('job', 'key', 'pipe', 'log')) \
            or not isinstance(record.get('uid'), int):
        raise ValueError('not an MPS job record (job, uid, key, pipe, log)')
    return record


def other_users_of(key, records, job):
    """Job ids, other than ``job``, whose records (``{job id: record text}``) name the daemon ``key``."""
    users = []
    for other, text in sorted(records.items()):
        if other == job:
            continue
        try:
            record = parse_job_record(text)
        except ValueError:
            continue
        if record['key'] == key:
            users.append(other)
    return users


def task_prolog_lines(record, uid):
    """TaskProlog lines that point the job's CUDA processes at their MPS daemon.

    ``[]`` when the record belongs to another user (it never should: the
    record is the job's own).
    """
    if record.get('uid') != uid:
        return []
    lines = ['export CUDA_MPS_PIPE_DIRECTORY=%s' % record['pipe'], 'export CUDA_MPS_LOG_DIRECTORY=%s' % record['log']]
    if record.get('pinned_mib'):
        # the job's CUDA numbers its GPUs from 0 (CUDA_VISIBLE_DEVICES renumbers them)
        count = len(str(record.get('devices') or '0').split(','))
        lines.append('export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s'
                     % ','.join('%d=%dM' % (index, record['pinned_mib']) for index in range(count)))
    return lines
