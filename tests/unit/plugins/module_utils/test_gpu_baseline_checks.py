# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _gpu_baseline: NVSwitch links, fabric manager, GPUDirect RDMA, GPU reset blockers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb

# /proc/driver/nvidia/version as the proprietary and the open kernel modules print it
PROPRIETARY = ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n'
               'GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n')
OPEN = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16-I3-B03-4-3)  '
        'Fri Mar 14 06:14:28 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n')


@pytest.mark.parametrize('ids, expected', [
    ([0x22A310DE] * 18, 18), ([0x1AF110DE] * 12, 12), ([0x233010DE, 0x22A310DE], 1), ([], 0), ([None], 0)])
def test_nvswitch_links(ids, expected):
    assert gb.nvswitch_links(ids) == expected


@pytest.mark.parametrize('text, expected', [
    (PROPRIETARY, {'version': '535.129.03', 'open': False}),
    (OPEN, {'version': '570.133.20', 'open': True}),
    ('', None), (None, None), ('garbage', None)])
def test_parse_driver_proc(text, expected):
    assert gb.parse_driver_proc(text) == expected


@pytest.mark.parametrize('text, expected', [
    ('Fabric Manager version is : 550.54.15\n', '550.54.15'), ('Fabric Manager version is: 570.133.20', '570.133.20'),
    ('nv-fabricmanager: command not found', None), (None, None)])
def test_parse_fm_version(text, expected):
    assert gb.parse_fm_version(text) == expected


@pytest.mark.parametrize('nvswitch, state, version, driver, expected', [
    (False, None, None, '570.133.20', []),
    (True, 'active', 'Fabric Manager version is : 570.133.20', '570.133.20', []),
    (True, 'inactive', None, '570.133.20', ['nvidia-fabricmanager is inactive on this NVSwitch system']),
    (True, 'failed', None, '570.133.20', ['nvidia-fabricmanager is failed on this NVSwitch system']),
    (True, 'active', 'Fabric Manager version is : 550.54.15', '570.133.20',
     ['nvidia-fabricmanager is version 550.54.15, the driver 570.133.20: they must be the same release']),
    (True, 'active', 'oops', '570.133.20', ["cannot tell the version of nvidia-fabricmanager (nv-fabricmanager --version printed 'oops')"]),
])
def test_fabric_manager_failures(nvswitch, state, version, driver, expected):
    found = gb.fabric_manager_failures(nvswitch, state, version, driver)
    assert len(found) == len(expected)
    for (check, gpu, detail), start in zip(found, expected):
        assert (check, gpu) == ('fabric-manager', None) and detail.startswith(start), detail


@pytest.mark.parametrize('ports, modules, proc, kernel, required, failing', [
    (0, [], None, '6.1.0-28-amd64', False, False),
    (8, ['nvidia', 'nvidia_peermem'], gb.parse_driver_proc(PROPRIETARY), '4.18.0', False, False),
    (8, ['nvidia'], gb.parse_driver_proc(OPEN), '6.1.0-28-amd64', False, False),
    (8, ['nvidia'], gb.parse_driver_proc(OPEN), '5.10.0-30-amd64', False, True),
    (8, ['nvidia'], gb.parse_driver_proc(PROPRIETARY), '6.1.0-28-amd64', False, True),
    (8, ['nvidia'], {'version': '510.47.03', 'open': True}, '6.1.0', False, True),
    (8, ['nvidia'], None, '6.1.0', False, True),
    (0, ['nvidia'], gb.parse_driver_proc(PROPRIETARY), '6.1.0', True, True),
])
def test_gpudirect_failures(ports, modules, proc, kernel, required, failing):
    assert bool(gb.gpudirect_failures(ports, modules, proc, kernel, required)) == failing


def test_gpudirect_says_why():
    found = gb.gpudirect_failures(8, ['nvidia'], gb.parse_driver_proc(PROPRIETARY), '5.10.0-30-amd64')
    assert found[0][2].startswith('no GPUDirect RDMA for the 8 InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not possible '
                                  '(the proprietary kernel modules have no DMA-BUF; kernel 5.10.0-30-amd64 is older than 5.12); modprobe')


@pytest.mark.parametrize('cgroup, unit, job', [
    ('0::/system.slice/telegraf.service\n', 'telegraf.service', False),
    ('0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n', 'slurmstepd.scope', True),
    ('12:devices:/slurm/uid_1000/job_7/step_batch\n0::/\n', None, True),
    ('0::/user.slice/user-1000.slice/session-3.scope\n', 'session-3.scope', False),
    ('', None, False)])
def test_unit_and_job_of_a_process(cgroup, unit, job):
    assert (gb.unit_of(cgroup), gb.is_job(cgroup)) == (unit, job)


HOLDERS = [
    {'pid': 101, 'name': 'nvidia-persiste', 'unit': 'nvidia-persistenced.service', 'job': False, 'gpu': 0, 'device': '/dev/nvidia0'},
    {'pid': 202, 'name': 'python3', 'unit': 'slurmstepd.scope', 'job': True, 'gpu': 1, 'device': '/dev/nvidia1'},
    {'pid': 303, 'name': 'telegraf', 'unit': 'telegraf.service', 'job': False, 'gpu': 2, 'device': '/dev/nvidia2'},
    {'pid': 404, 'name': 'Xorg', 'unit': None, 'job': False, 'gpu': 3, 'device': '/dev/nvidia3'},
]


def test_reset_blockers_leave_out_jobs_and_the_services_the_role_stops():
    found = gb.reset_blocker_failures(HOLDERS, ['nvidia'], ['nvidia-persistenced', 'dcgm'])
    assert [(c, g) for c, g, _d in found] == [('reset-blockers', 2), ('reset-blockers', 3)]
    assert found[0][2] == ('process 303 (telegraf) of telegraf.service holds /dev/nvidia2, which blocks the GPU reset of the MIG mode change; '
                           'add telegraf to mig_reset_blockers (the role stops it during the change) or stop it')
    assert found[1][2].endswith('holds /dev/nvidia3, which blocks the GPU reset of the MIG mode change; stop it')


def test_a_loaded_nvidia_drm_blocks_the_reset():
    found = gb.reset_blocker_failures([], ['nvidia', 'nvidia_drm', 'nvidia_modeset'])
    assert found == [('reset-blockers', None, 'nvidia_drm is loaded (display/KMS): it holds the GPUs and a GPU reset fails; '
                                              'modprobe -r nvidia_drm nvidia_modeset and blacklist nvidia_drm on compute nodes')]


def test_message_names_the_node_and_gpu():
    assert gb.message('gpu-01', [('persistence', 3, 'off'), ('gpudirect', None, 'no RDMA')]) == \
        'gpu-01 GPU 3: persistence: off; gpu-01: gpudirect: no RDMA'


def test_gpudirect_names_the_unreadable_version_file():
    problem = 'the driver version file /x/version does not exist (is the nvidia module loaded?)'
    found = gb.gpudirect_failures(8, ['nvidia'], None, '6.1.0', driver_proc_problem=problem)
    assert 'DMA-BUF is not possible (%s); modprobe' % problem in found[0][2]
    assert 'DMA-BUF is not possible (the driver version file is unreadable); modprobe' in gb.gpudirect_failures(8, ['nvidia'], None, '6.1.0')[0][2]


def test_read_driver_proc_never_opens_a_fifo_and_names_the_path(tmp_path):
    fifo = str(tmp_path / 'fifo')
    os.mkfifo(fifo)
    assert gb.read_driver_proc(fifo) == (None, 'the driver version file %s is not a regular file' % fifo)
    assert gb.read_driver_proc(str(tmp_path)) == (None, 'the driver version file %s is a directory' % tmp_path)
    assert gb.read_driver_proc(str(tmp_path / 'none')) == (None, 'the driver version file %s does not exist (is the nvidia module loaded?)'
                                                           % (tmp_path / 'none'))
    (tmp_path / 'v').write_bytes(PROPRIETARY.encode() + b'\xff\xfe')
    text, problem = gb.read_driver_proc(str(tmp_path / 'v'))
    assert problem is None and gb.parse_driver_proc(text) == {'version': '535.129.03', 'open': False}
