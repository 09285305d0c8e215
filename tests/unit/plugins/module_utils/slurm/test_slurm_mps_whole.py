# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_mps compared whole (issue 43): the job record's text, the paths, the percentage on both sides of its limits,
the record's refusals word for word, the TaskProlog lines of a record without devices."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_mps as mps

JOB = {'SLURM_JOB_ID': '42', 'SLURM_JOB_UID': '1001', 'CUDA_VISIBLE_DEVICES': '3', 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '25'}


def test_the_default_places():
    assert (mps.MPS_DIR, mps.JOBS) == ('/run/gpucluster-mps', 'jobs')
    assert mps.job_record_path('/run/gpucluster-mps/', '42') == '/run/gpucluster-mps/jobs/42'
    assert mps.daemon_paths('/m//', '1-3') == {'root': '/m/1-3', 'pipe': '/m/1-3/pipe', 'log': '/m/1-3/log'}
    # only the slashes at the end go
    assert mps.daemon_paths('/run/mpsX/', '1-3') == {'root': '/run/mpsX/1-3', 'pipe': '/run/mpsX/1-3/pipe', 'log': '/run/mpsX/1-3/log'}
    assert mps.job_record_path('/run/mpsX', '7') == '/run/mpsX/jobs/7'


@pytest.mark.parametrize('percentage, ok', [('100', True), ('100.0', True), ('100.01', False), ('0.01', True), ('0.0', False)])
def test_the_percentage_on_both_sides_of_its_limits(percentage, ok):
    env = dict(JOB, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=percentage)
    if ok:
        assert mps.mps_job(env)['percentage'] == percentage
    else:
        with pytest.raises(ValueError) as err:
            mps.mps_job(env)
        assert str(err.value) == 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%s is not a percentage between 0 and 100' % percentage


@pytest.mark.parametrize('change, message', [
    ({'SLURM_JOB_ID': ''}, 'SLURM_JOB_ID= is not a job id'),
    ({'SLURM_JOB_ID': '', 'SLURM_JOBID': ''}, 'SLURM_JOB_ID= is not a job id'),
    # a last newline is refused too (it would go into the paths; "$" alone let it through)
    ({'SLURM_JOB_ID': '42\n'}, 'SLURM_JOB_ID=42\n is not a job id'),
    ({'SLURM_JOB_UID': '1001\n'}, 'SLURM_JOB_UID=1001\n is not a numeric uid'),
    ({'CUDA_VISIBLE_DEVICES': '3\n'}, 'CUDA_VISIBLE_DEVICES=3\n is not GPU indices or UUIDs separated by commas'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '25\n'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n is not a percentage'),
    ({'CUDA_VISIBLE_DEVICES': '0,'}, 'CUDA_VISIBLE_DEVICES=0, is not GPU indices or UUIDs separated by commas'),
    ({'CUDA_VISIBLE_DEVICES': 'NVL-1'}, 'CUDA_VISIBLE_DEVICES=NVL-1 is not GPU indices or UUIDs separated by commas'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '.5'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=.5 is not a percentage'),
    ({'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '5.'}, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=5. is not a percentage'),
])
def test_mps_job_refusals_whole(change, message):
    with pytest.raises(ValueError) as err:
        mps.mps_job(dict(JOB, **change))
    assert str(err.value) == message


def test_several_uuids_make_one_key():
    devices = 'MIG-aa-1,GPU-bb-2,7'
    assert mps.mps_job(dict(JOB, CUDA_VISIBLE_DEVICES=devices)) == {
        'job': '42', 'uid': 1001, 'devices': devices, 'percentage': '25', 'key': '1001-MIG-aa-1+GPU-bb-2+7'}


def test_the_job_record_text_whole():
    job = mps.mps_job(JOB)
    assert mps.job_record(job, '/m') == (
        '{"devices": "3", "job": "42", "key": "1001-3", "log": "/m/1001-3/log", "pinned_mib": null, "pipe": "/m/1001-3/pipe", '
        '"uid": 1001}\n')
    assert json.loads(mps.job_record(job, '/m', 1000))['pinned_mib'] == 250


@pytest.mark.parametrize('memory, percentage, expected', [(-5, '50', None), (1, '100', 1), (399, '25', 99), (400, '25', 100)])
def test_pinned_limit_edges(memory, percentage, expected):
    assert mps.pinned_limit_mib(memory, percentage) == expected


@pytest.mark.parametrize('text, message', [
    ('{', 'not JSON'),
    ('[]', 'not an MPS job record (job, uid, key, pipe, log)'),
    (json.dumps({'job': 1, 'uid': 0, 'key': 'k', 'pipe': 'p', 'log': 'l'}), 'not an MPS job record (job, uid, key, pipe, log)'),
    (json.dumps({'job': '1', 'uid': 0, 'key': 'k', 'pipe': 'p', 'log': None}), 'not an MPS job record (job, uid, key, pipe, log)'),
    (json.dumps({'job': '1', 'key': 'k', 'pipe': 'p', 'log': 'l'}), 'not an MPS job record (job, uid, key, pipe, log)'),
])
def test_parse_job_record_refusals_whole(text, message):
    with pytest.raises(ValueError) as err:
        mps.parse_job_record(text)
    assert str(err.value) == message


def test_other_users_in_order_past_a_broken_record():
    def record(key):
        return json.dumps({'job': 'j', 'uid': 1, 'key': key, 'pipe': 'p', 'log': 'l'})
    records = {'9': record('1-3'), '0': 'broken', '5': record('1-3'), '7': record('1-4'), '1': record('1-3')}
    assert mps.other_users_of('1-3', records, '5') == ['1', '9']


@pytest.mark.parametrize('record, lines', [
    ({'uid': 7, 'pipe': '/p', 'log': '/l', 'pinned_mib': 64},
     ['export CUDA_MPS_PIPE_DIRECTORY=/p', 'export CUDA_MPS_LOG_DIRECTORY=/l', 'export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=64M']),
    ({'uid': 7, 'pipe': '/p', 'log': '/l', 'pinned_mib': 64, 'devices': '4,5,6'},
     ['export CUDA_MPS_PIPE_DIRECTORY=/p', 'export CUDA_MPS_LOG_DIRECTORY=/l',
      'export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=64M,1=64M,2=64M']),
    ({'uid': 7, 'pipe': '/p', 'log': '/l', 'pinned_mib': 0}, ['export CUDA_MPS_PIPE_DIRECTORY=/p', 'export CUDA_MPS_LOG_DIRECTORY=/l']),
    ({'pipe': '/p', 'log': '/l'}, []),
])
def test_task_prolog_lines_whole(record, lines):
    assert mps.task_prolog_lines(record, 7) == lines
