# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 46: Slurm 26.05 refuses ``--gres=gpu:N`` together with ``--gpus-per-node`` (CHANGELOG 26.05, sbatch/srun/salloc).

Every srun/salloc argv the collection generates (the validate role's Slurm and NCCL stages, per node and as steps of
an allocation, the deep health check) is enumerated here and checked with ``_slurm_version.gpu_request_problem`` for a
26.05 target; each must ask for GPUs one way only.  The checker itself is shown to catch the combination, so a
generator that added ``--gpus-per-node`` beside its ``--gres=gpu`` would fail here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as dh
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn

TARGET = (26, 5, 3)


def _nodes(count, gpus=8, gres_type='h100', start=1):
    return [{'name': 'gpu-%02d' % i, 'gpus': gpus, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': gres_type} for i in range(start, start + count)]


def _argvs_of(jobs):
    found = []
    for job in jobs:
        for key in ('argv', 'own_argv'):
            if isinstance(job.get(key), list):
                found.append((job.get('name'), key, job[key]))
        if isinstance(job.get('allocation'), dict) and isinstance(job['allocation'].get('argv'), list):
            found.append((job['allocation'].get('name'), 'allocation', job['allocation']['argv']))
    return found


def generated_argvs():
    """(where, argv) of every GPU-asking command line the generators build, over their variants."""
    found = []
    for per_gpu_tasks in (False, True):
        for gres_type in (None, 'h100'):
            for json in (False, True):
                argv = vn.srun_argv('/opt/nccl-tests/build/all_reduce_perf', ['gpu-01', 'gpu-02'], 8, per_gpu_tasks, 'pmix' if per_gpu_tasks else None,
                                    {'NCCL_DEBUG': 'WARN'}, gres_type=gres_type, json=json)
                found.append(('nccl srun_argv per_gpu_tasks=%s gres_type=%s json=%s' % (per_gpu_tasks, gres_type, json), argv))
    mixed = _nodes(2) + _nodes(1, gpus=2, gres_type='a100', start=3) + _nodes(1, gpus=4, gres_type='', start=4)
    for dispatch in ('per_node', 'allocation'):
        for extra in ({}, {'fabric': True, 'pairwise': True}):
            jobs = vn.plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': mixed, 'dispatch': dispatch, **extra})
            found += [('nccl plan_jobs dispatch=%s %s %s/%s' % (dispatch, sorted(extra), name, key), argv) for name, key, argv in _argvs_of(jobs)]
    slurm = vc.slurm_jobs({'nodes': [{'name': 'gpu-01', 'gpus': 8, 'usable': True}, {'name': 'cpu-01', 'gpus': 0, 'usable': True}],
                           'pyxis': True, 'container_image': 'nvcr.io#nvidia/cuda:12.4.1-base-ubuntu22.04'})
    found += [('validation slurm_jobs %s/%s' % (name, key), argv) for name, key, argv in _argvs_of(slurm)]
    for partition in (None, 'gpu'):
        candidate = {'name': 'gpu-01', 'gpus': 8, 'partition': partition}
        found.append(('deep health srun_argv partition=%s' % partition,
                      dh.srun_argv(candidate, 'gpuhc-1', '/usr/local/sbin/gpucluster-healthcheck', {}, 30)))
    return found


ARGVS = generated_argvs()


def test_the_generators_ask_for_gpus():
    """The enumeration reaches the GPU requests (not an empty or GPU-less list that would pass anything)."""
    asking = [where for where, argv in ARGVS if any(str(word).startswith('--gres=gpu') for word in argv)]
    assert len(asking) >= 20, asking
    for part in ('nccl srun_argv', 'nccl plan_jobs dispatch=per_node', 'nccl plan_jobs dispatch=allocation', 'validation slurm_jobs',
                 'deep health srun_argv'):
        assert any(where.startswith(part) for where in asking), part


@pytest.mark.parametrize('where, argv', ARGVS, ids=[where for where, _argv in ARGVS])
def test_no_generated_argv_combines_gres_gpu_and_gpus_per_node(where, argv):
    assert sv.gpu_request_problem(argv, TARGET) == ''
    assert not any(str(word).startswith(('--gpus-per-node', '--gpus=', '--gpus-per-task')) for word in argv), where


def test_the_check_catches_the_combination_in_a_generated_argv():
    where, argv = [(where, argv) for where, argv in ARGVS if where.startswith('nccl srun_argv')][0]
    combined = argv[:1] + ['--gpus-per-node=8'] + argv[1:]
    assert 'mutually exclusive since 26.05' in sv.gpu_request_problem(combined, TARGET)
    assert sv.gpu_request_problem(combined, (24, 11, 5)) == ''
