# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_mig_nvml driven directly against the NVML simulator: the NVML client's readings and error messages, the Applier's
journal and rollback, the manager's failure results, gpu_result and device_holders."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

import pynvml

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml
from ansible_collections.gpucluster.bringup.tests.unit.simnode import node, sim, state  # noqa: F401  pylint: disable=unused-import

# The names are looked up through the module at call time (the classes may be re-created).
# pylint: disable=redefined-outer-name


def nvml(preset, auto_reset=True, create=None):
    create(preset, auto_reset=auto_reset)
    pynvml.nvmlInit()
    return _mig_nvml.Nvml(pynvml)


def layout(client, index):
    return [(gi['start'], gi['size'], gi['profile_id'], [(ci['profile'], ci['start']) for ci in gi['compute_instances']])
            for gi in client.read_gpu(index)['instances']]


def plan(destroy_cis=(), destroy_gis=(), create_gis=(), create_cis=()):
    return {'destroy_cis': list(destroy_cis), 'destroy_gis': list(destroy_gis), 'create_gis': list(create_gis), 'create_cis': list(create_cis)}


def with_profile(gi, name='1g.10gb'):
    return dict(gi, profile=name)


# ------------------------------------------------------------ gpu_result

BASE = {'index': 3, 'uuid': 'GPU-x', 'name': 'NVIDIA A100', 'mig_capable': True, 'mig_current': True, 'mig_pending': True,
        'profiles': [{'id': 19, 'name': '1g.10gb'}], 'processes': [{'pid': 5, 'name': 'p', 'gi_id': None, 'ci_id': None}], 'minor': None,
        'instances': [
            {'gi_id': 9, 'profile_id': 14, 'start': 4, 'size': 2, 'compute_instances': []},
            {'gi_id': 7, 'profile_id': 19, 'start': 0, 'size': 1,
             'compute_instances': [{'ci_id': 0, 'profile': '1g.10gb', 'profile_id': 0, 'start': 0, 'size': 1, 'uuid': 'MIG-a'}]}]}
INSTANCES = [
    {'profile': '1g.10gb', 'gi_id': 7, 'placement': {'start': 0, 'size': 1},
     'compute_instances': [{'ci_id': 0, 'profile': '1g.10gb', 'uuid': 'MIG-a', 'placement': {'start': 0, 'size': 1}}]},
    {'profile': '14', 'gi_id': 9, 'placement': {'start': 4, 'size': 2}, 'compute_instances': []}]


@pytest.mark.parametrize('changes, expected', [
    ({}, {'index': 3, 'uuid': 'GPU-x', 'model': 'NVIDIA A100', 'mig_mode': {'current': True, 'pending': True}, 'reset_required': False,
          'blocking_processes': [], 'instances': INSTANCES}),
    ({'mig_pending': False}, {'index': 3, 'uuid': 'GPU-x', 'model': 'NVIDIA A100', 'mig_mode': {'current': True, 'pending': False},
                              'reset_required': True, 'blocking_processes': [{'pid': 5, 'name': 'p'}], 'instances': INSTANCES}),
    ({'mig_capable': False, 'mig_current': False, 'mig_pending': True, 'profiles': None, 'instances': [BASE['instances'][0]]},
     {'index': 3, 'uuid': 'GPU-x', 'model': 'NVIDIA A100', 'mig_mode': None, 'reset_required': False, 'blocking_processes': [],
      'instances': [INSTANCES[1]]}),
])
def test_gpu_result(changes, expected):
    gpu = dict(BASE, **changes)
    assert _mig_nvml.gpu_result(gpu) == expected


def test_gpu_result_adds_device_holders_once(tmp_path, monkeypatch):
    proc = tmp_path / 'proc'
    for pid, comm in ((5, 'p'), (6, 'dcgm')):
        (proc / str(pid) / 'fd').mkdir(parents=True)
        (proc / str(pid) / 'comm').write_text(comm + '\n')
        os.symlink(str(tmp_path / 'dev' / 'nvidia4'), str(proc / str(pid) / 'fd' / '3'))
    monkeypatch.setattr(_mig_nvml, 'PROC_DIR', str(proc))
    monkeypatch.setattr(_mig_nvml, 'DEV_DIR', str(tmp_path / 'dev'))
    result = _mig_nvml.gpu_result(dict(BASE, mig_pending=False, minor=4))
    assert result['blocking_processes'] == [{'pid': 5, 'name': 'p'}, {'pid': 6, 'name': 'dcgm'}]


# ------------------------------------------------------------ device_holders


def test_device_holders(tmp_path, monkeypatch):
    proc, dev = tmp_path / 'proc', tmp_path / 'dev'
    dev.mkdir()
    target = str(dev / 'nvidia1')
    layout_ = {
        2: None,  # no fd directory: skipped, the later ones still looked at
        3: (['/dev/null', target], 'persistenced'),
        10: ([target], None),  # no comm file
        11: ([str(dev / 'nvidia0')], 'other'),
        9: ([str(dev / 'nvidia10')], 'ten'),
    }
    proc.mkdir()
    (proc / 'self').mkdir()
    for pid, entry in layout_.items():
        (proc / str(pid)).mkdir()
        if entry is None:
            continue
        links, comm = entry
        (proc / str(pid) / 'fd').mkdir()
        for number, link in enumerate(links):
            os.symlink(link, str(proc / str(pid) / 'fd' / str(number)))
        if comm is not None:
            (proc / str(pid) / 'comm').write_text(comm + '\n')
    monkeypatch.setattr(_mig_nvml, 'PROC_DIR', str(proc))
    monkeypatch.setattr(_mig_nvml, 'DEV_DIR', str(dev))
    assert _mig_nvml.device_holders(1) == [{'pid': 3, 'name': 'persistenced'}, {'pid': 10, 'name': None}]
    assert _mig_nvml.device_holders(10) == [{'pid': 9, 'name': 'ten'}]
    assert _mig_nvml.device_holders(5) == []


# ------------------------------------------------------------ Nvml: reading


def test_read_gpu_fields(node):
    client = nvml('seed-003', create=node)
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', '13', '--ci', '0')
    sim('process', 'add', '--gpu', '0', '--pid', '77', '--name', 'x')
    gpu = client.read_gpu(2)
    uuids = dict((gi['gi_id'], gi['uuid']) for gi in (dict(gi_id=g['id'], uuid=g['compute_instances'][0]['uuid'])
                                                      for g in state()['gpus'][2]['gpu_instances']))
    assert sorted(gpu) == ['index', 'instances', 'mig_capable', 'mig_current', 'mig_pending', 'minor', 'name', 'processes', 'profiles', 'uuid']
    assert (gpu['index'], gpu['minor'], gpu['mig_capable'], gpu['mig_current'], gpu['mig_pending']) == (2, 2, True, True, True)
    assert gpu['processes'] == [{'pid': 4242, 'name': 'python3', 'gi_id': 13, 'ci_id': 0}]
    assert gpu['instances'][1] == {'gi_id': 8, 'profile_id': 19, 'start': 1, 'size': 1, 'compute_instances': [
        {'ci_id': 0, 'profile': '1g.10gb', 'profile_id': 0, 'start': 0, 'size': 1, 'uuid': uuids[8]}]}
    assert gpu['profiles'][0] == {'name': '1g.10gb', 'id': 19, 'slices': 1, 'instance_count': 7, 'memory_mb': 9728,
                                  'placements': [[s, 1] for s in range(7)],
                                  'ci_profiles': [{'name': '1g.10gb', 'id': 0, 'slices': 1, 'instance_count': 1, 'placements': [[0, 1]]}]}
    off = client.read_gpu(0)
    assert off == {'index': 0, 'uuid': state()['gpus'][0]['uuid'], 'name': 'NVIDIA A100 80GB PCIe', 'mig_capable': True, 'mig_current': False,
                   'mig_pending': False, 'profiles': None, 'instances': [], 'processes': [{'pid': 77, 'name': 'x', 'gi_id': None, 'ci_id': None}],
                   'minor': 0}


def test_read_gpu_without_mig_support(node):
    client = nvml('l40s-x4', create=node)
    gpu = client.read_gpu(1)
    assert (gpu['mig_capable'], gpu['mig_current'], gpu['mig_pending'], gpu['profiles'], gpu['minor']) == (False, False, False, None, 1)


def test_read_gpu_unreadable_details(node):
    client = nvml('seed-003', create=node)
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', '13', '--ci', '0')
    sim('inject', '--call', 'nvmlSystemGetProcessName', '--error', 'NVML_ERROR_NO_PERMISSION')
    sim('inject', '--call', 'nvmlDeviceGetMigDeviceHandleByIndex', '--error', 'NVML_ERROR_NOT_FOUND')
    sim('inject', '--call', 'nvmlDeviceGetMinorNumber', '--error', 'NVML_ERROR_NOT_SUPPORTED')
    gpu = client.read_gpu(2)
    assert gpu['processes'] == [{'pid': 4242, 'name': None, 'gi_id': 13, 'ci_id': 0}]
    assert gpu['minor'] is None
    found = [ci['uuid'] for gi in gpu['instances'] for ci in gi['compute_instances']]
    assert found.count(None) == 1 and all(uuid.startswith('MIG-') for uuid in found if uuid is not None)


# ------------------------------------------------------------ Nvml: changing


@pytest.mark.parametrize('call, error, action, msg', [
    (None, None, lambda c: c.destroy_ci(2, 99, 0), 'finding GPU instance 99 failed: Not Found'),
    (None, None, lambda c: c.destroy_ci(2, 7, 5), 'finding compute instance 7/5 failed: Not Found'),
    ('nvmlComputeInstanceDestroy', 'NVML_ERROR_IN_USE', lambda c: c.destroy_ci(2, 7, 0),
     'destroying compute instance 0 of GPU instance 7 failed: In use by another client'),
    (None, None, lambda c: c.destroy_gi(2, 99), 'finding GPU instance 99 failed: Not Found'),
    ('nvmlGpuInstanceDestroy', 'NVML_ERROR_UNKNOWN', lambda c: c.destroy_gi(2, 7), 'destroying GPU instance 7 failed: Unknown Error'),
    (None, None, lambda c: c.create_ci(2, 99, '1g.10gb', 0), 'finding GPU instance 99 failed: Not Found'),
    ('nvmlGpuInstanceGetComputeInstancePossiblePlacements', 'NVML_ERROR_UNKNOWN', lambda c: c.create_ci(2, 7, '1g.10gb', 0),
     'reading compute instance profiles of GPU instance 7 failed: Unknown Error'),
    (None, None, lambda c: c.create_ci(2, 7, '2g.20gb', 0), 'GPU instance 7 offers no compute instance profile 2g.20gb; it offers 1g.10gb'),
    (None, None, lambda c: c.create_ci(2, 7, '1g.10gb', None),
     'creating compute instance 1g.10gb in GPU instance 7 failed: Insufficient Resources'),
    ('nvmlComputeInstanceGetInfo', 'NVML_ERROR_UNKNOWN', lambda c: (c.destroy_ci(2, 7, 0), c.create_ci(2, 7, '1g.10gb', None)),
     'reading creating compute instance 1g.10gb in GPU instance 7 failed: Unknown Error'),
    (None, None, lambda c: c.ci_table_of(2, 99), 'finding GPU instance 99 failed: Not Found'),
    ('nvmlGpuInstanceGetComputeInstancePossiblePlacements', 'NVML_ERROR_UNKNOWN', lambda c: c.ci_table_of(2, 7),
     'reading compute instance profiles of GPU instance 7 failed: Unknown Error'),
    (None, None, lambda c: c.create_gi(2, 19, 0, 1, '1g.10gb at 0:1'), 'creating GPU instance 1g.10gb at 0:1 failed: Insufficient Resources'),
    ('nvmlGpuInstanceGetInfo', 'NVML_ERROR_UNKNOWN', lambda c: (c.destroy_ci(2, 7, 0), c.destroy_gi(2, 7), c.create_gi(2, 19, 0, 1, 'W')),
     'reading GPU instance W failed: Unknown Error'),
    ('nvmlDeviceSetMigMode', 'NVML_ERROR_NO_PERMISSION', lambda c: c.set_mode(2, False), 'disabling MIG mode failed: Insufficient Permissions'),
    ('nvmlDeviceSetMigMode', 'NVML_ERROR_NO_PERMISSION', lambda c: c.set_mode(2, True), 'enabling MIG mode failed: Insufficient Permissions'),
])
def test_nvml_change_errors(node, call, error, action, msg):
    client = nvml('seed-003', create=node)
    if call:
        sim('inject', '--call', call, '--error', error)
    with pytest.raises(_mig_nvml.ApplyError) as caught:
        action(client)
    assert str(caught.value) == msg


def test_create_ci_without_placement(node):
    client = nvml('seed-003', create=node)
    client.destroy_ci(2, 8, 0)
    assert client.create_ci(2, 8, '1g.10gb', None) == 0
    assert layout(client, 2)[1] == (1, 1, 19, [('1g.10gb', 0)])


# ------------------------------------------------------------ Applier


def test_applier_journal_and_rollback_with_remapped_ids(node):
    client = nvml('seed-003', create=node)
    gpu = client.read_gpu(2)
    before = layout(client, 2)
    gi7, gi8, gi9 = gpu['instances'][0], gpu['instances'][1], gpu['instances'][2]
    applier = _mig_nvml.Applier(client, gpu)
    sim('inject', '--call', 'nvmlGpuInstanceCreateComputeInstanceWithPlacement', '--error', 'NVML_ERROR_UNKNOWN')
    with pytest.raises(_mig_nvml.ApplyError) as caught:
        applier.apply(plan(destroy_cis=[{'gi_id': 9, 'ci_id': 0}], destroy_gis=[with_profile(gi7), with_profile(gi8)],
                           create_gis=[{'profile': '2g.20gb', 'profile_id': 14, 'start': 0, 'size': 2, 'compute_instances': [('2g.20gb', 0)]}]))
    assert str(caught.value) == 'creating compute instance 2g.20gb in GPU instance 3 failed: Unknown Error'
    assert applier.journal == [('destroyed_ci', 9, gi9['compute_instances'][0]), ('destroyed_ci', 7, gi7['compute_instances'][0]),
                               ('destroyed_gi', with_profile(gi7)), ('destroyed_ci', 8, gi8['compute_instances'][0]),
                               ('destroyed_gi', with_profile(gi8)), ('created_gi', 3)]
    applier.rollback()
    assert layout(client, 2) == before
