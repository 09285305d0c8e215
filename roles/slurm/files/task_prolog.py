# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm TaskProlog installed by gpucluster.bringup.slurm.

Runs as the job's user before each task and prints "export NAME=value" lines
that slurmstepd applies to the task.  It turns the allocated GRES indices
(SLURM_STEP_GPUS, else SLURM_JOB_GPUS) into device UUIDs from the map that
gpucluster.bringup.slurm_gres_facts wrote, and exports them as
CUDA_VISIBLE_DEVICES, so that a job on MIG instances sees exactly its own
instances.  For a job with the mps GRES it also exports where the job user's
MPS control daemon listens (CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY)
and the job's share of the GPU's memory (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT),
from the record the prolog hook 30-all-mps-start wrote.  Never fails the
task: on any problem it leaves the variables alone.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
# the collection's module_utils, installed by the role under lib/ (the node_library filter)
sys.path.insert(0, os.path.join(HERE, 'lib'))

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as logic  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_mps as mps  # noqa: E402  pylint: disable=wrong-import-position


def mps_lines(conf):
    """The MPS variables of this job, from its record; nothing for a job without one."""
    job = os.environ.get('SLURM_JOB_ID') or os.environ.get('SLURM_JOBID') or ''
    if not job.isdigit():
        return []
    try:
        with open(mps.job_record_path(conf.get('mps_dir') or mps.MPS_DIR, job)) as handle:
            text = handle.read()
    except OSError:
        return []  # not an MPS job
    try:
        return mps.task_prolog_lines(mps.parse_job_record(text), os.getuid())
    except ValueError as exc:
        return ['print gpucluster task-prolog: MPS variables not set (job record: %s)' % exc]


def main():
    try:
        with open(os.path.join(HERE, 'hooks.json')) as handle:
            conf = json.load(handle)
    except (OSError, ValueError) as exc:
        sys.stdout.write('print gpucluster task-prolog: nothing exported (%s)\n' % exc)
        return 0
    for line in mps_lines(conf):
        sys.stdout.write(line + '\n')
    try:
        mode = conf.get('task_prolog_uuids', 'mig')
        if mode == 'off':
            return 0
        with open(conf['uuid_map']) as handle:
            text = handle.read()
        for line in logic.task_prolog_lines(os.environ, text, mode):
            sys.stdout.write(line + '\n')
    except (OSError, ValueError, KeyError) as exc:
        sys.stdout.write('print gpucluster task-prolog: CUDA_VISIBLE_DEVICES left as Slurm set it (%s)\n' % exc)
    return 0


if __name__ == '__main__':
    sys.exit(main())
