# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_mps: which MPS daemon a job uses, its records, what the TaskProlog exports."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_mps as mps

JOB = {'SLURM_JOB_ID': '42', 'SLURM_JOB_UID': '1001', 'CUDA_VISIBLE_DEVICES': '3', 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '25'}


@pytest.mark.parametrize('change, expected', [
    ({}, {'job': '42', 'uid': 1001, 'devices': '3', 'percentage': '25', 'key': '1001-3'}),
    ({'CUDA_VISIBLE_DEVICES': '0,1'}, {'job': '42', 'uid': 1001, 'devices': '0,1', 'percentage': '25', 'key': '1001-0+1'}),
    ({'SLURM_JOB_ID': None, 'SLURM_JOBID': '43'}, {'job': '43', 'uid': 1001, 'devices': '3', 'percentage': '25', 'key': '1001-3'}),
    ({'CUDA_VISIBLE_DEVICES': 'GPU-5e1f0c2a-0000-4000-8000-000000000000'},
     {'job': '42', 'uid': 1001, 'devices': 'GPU-5e1f0c2a-0000-4000-8000-000000000000', 'percentage': '25',
      'key': '1001-GPU-5e1f0c2a-0000-4000-8000-000000000000'}),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': None}, None),  # a gpu or shard job
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': ''}, None),
    ({'CUDA_VISIBLE_DEVICES': None}, None),
])
def test_mps_job(change, expected):
    env = dict(JOB, **change)
    assert mps.mps_job(dict((k, v) for k, v in env.items() if v is not None)) == expected


@pytest.mark.parametrize('change, message', [
    ({'SLURM_JOB_UID': '../../x'}, 'SLURM_JOB_UID=../../x is not a numeric uid'),
    ({'SLURM_JOB_UID': ''}, 'SLURM_JOB_UID= is not a numeric uid'),
    ({'SLURM_JOB_ID': '42/..'}, 'SLURM_JOB_ID=42/.. is not a job id'),
    ({'CUDA_VISIBLE_DEVICES': '3/../x'}, 'CUDA_VISIBLE_DEVICES=3/../x is not GPU indices or UUIDs separated by commas'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': 'all'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=all is not a percentage'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '0'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=0 is not a percentage between 0 and 100'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '150'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=150 is not a percentage between 0 and 100'),
])
def test_mps_job_refuses_values_that_would_become_bad_paths(change, message):
    with pytest.raises(ValueError) as err:
        mps.mps_job(dict(JOB, **change))
    assert str(err.value) == message


@pytest.mark.parametrize('memory, percentage, expected', [
    (40960, '50', 20480), (81559, '25', 20389), (81559, '33.3', 27159), (40960, '100', 40960),
    (None, '50', None), (0, '50', None), (10, '1', 1),
])
def test_pinned_limit_is_the_jobs_share_of_the_gpus_memory(memory, percentage, expected):
    assert mps.pinned_limit_mib(memory, percentage) == expected


def test_record_round_trip_and_task_prolog_lines():
    job = mps.mps_job(JOB)
    record = mps.parse_job_record(mps.job_record(job, '/run/gpucluster-mps/', memory_mib=40960))
    assert record == {'job': '42', 'uid': 1001, 'devices': '3', 'key': '1001-3', 'pipe': '/run/gpucluster-mps/1001-3/pipe',
                      'log': '/run/gpucluster-mps/1001-3/log', 'pinned_mib': 10240}
    assert mps.task_prolog_lines(record, 1001) == [
        'export CUDA_MPS_PIPE_DIRECTORY=/run/gpucluster-mps/1001-3/pipe',
        'export CUDA_MPS_LOG_DIRECTORY=/run/gpucluster-mps/1001-3/log',
        'export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M']
    assert mps.task_prolog_lines(record, 1002) == []  # never another user's daemon
    two = mps.parse_job_record(mps.job_record(mps.mps_job(dict(JOB, CUDA_VISIBLE_DEVICES='0,1')), '/m'))
    assert two['pinned_mib'] is None
    assert mps.task_prolog_lines(two, 1001) == [
        'export CUDA_MPS_PIPE_DIRECTORY=/m/1001-0+1/pipe', 'export CUDA_MPS_LOG_DIRECTORY=/m/1001-0+1/log']
    two['pinned_mib'] = 100
    assert mps.task_prolog_lines(two, 1001)[-1] == 'export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=100M,1=100M'


@pytest.mark.parametrize('text', ['', 'x', '[]', json.dumps({'job': '1', 'uid': '0', 'key': 'k', 'pipe': 'p', 'log': 'l'}),
                                  json.dumps({'job': '1', 'uid': 0, 'key': 'k', 'pipe': 'p'})])
def test_parse_job_record_refuses_what_the_prolog_did_not_write(text):
    with pytest.raises(ValueError):
        mps.parse_job_record(text)


def test_other_users_of_a_daemon():
    def record(job, key):
        return json.dumps({'job': job, 'uid': 1, 'key': key, 'pipe': 'p', 'log': 'l'})
    records = {'1': record('1', '1-3'), '2': record('2', '1-3'), '3': record('3', '1-5'), '4': 'broken'}
    assert mps.other_users_of('1-3', records, '1') == ['2']
    assert mps.other_users_of('1-3', records, '2') == ['1']
    assert mps.other_users_of('1-5', records, '3') == []
    assert mps.other_users_of('1-9', {}, '9') == []
