# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_baseline against the project's NVML simulator: its kernel-module tree, driver version file and fabric manager
STAND-IN (nvml_sim/bin/nv-fabricmanager). systemctl is a STAND-IN written by the test (the development machine runs no
systemd): it answers `is-active nvidia-fabricmanager` from the simulator's fabric manager state. The processes holding
the GPUs are read from a /proc tree the test lays out (real symlinks and cgroup files)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.modules import gpu_baseline
from ansible_collections.gpucluster.bringup.tests.unit.simnode import run_nvmlsim, use_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

SYSTEMCTL = '''#!%s
"""STAND-IN for systemctl (not systemd): is-active nvidia-fabricmanager from the simulator's state."""
import json, os, sys
if sys.argv[1:] != ['is-active', 'nvidia-fabricmanager']:
    sys.exit(4)
with open(os.environ['NVMLSIM_STATE']) as handle:
    state = json.load(handle).get('fabric_manager', 'running')
# the service runs while the fabric is being set up ("starting") and once it is ("running")
print('active' if state in ('running', 'starting') else 'inactive')
sys.exit(0 if state in ('running', 'starting') else 3)
''' % sys.executable


@pytest.fixture
def node(tmp_path, monkeypatch):
    state, root = use_node(tmp_path, monkeypatch)
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'systemctl').write_text(SYSTEMCTL)
    (bin_dir / 'systemctl').chmod(0o755)
    os.symlink(os.path.join(ROOT, 'nvml_sim', 'bin', 'nv-fabricmanager'), str(bin_dir / 'nv-fabricmanager'))
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    return {'root': root, 'tmp': tmp_path, 'sim': run_nvmlsim}


def run(capsys, node, **args):
    sim_lib = os.path.join(node['root'], 'var', 'lib', 'nvmlsim')
    args.setdefault('ib_sysfs_root', os.path.join(sim_lib, 'sys', 'class', 'infiniband'))
    args.setdefault('module_root', os.path.join(sim_lib, 'sys', 'module'))
    args.setdefault('driver_proc', os.path.join(sim_lib, 'proc-driver-nvidia-version'))
    args.setdefault('node_name', 'gpu-01')
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            gpu_baseline.main()
    return json.loads(capsys.readouterr().out)


def test_a_healthy_hgx_node_passes(node, capsys):
    node['sim']('create', '--preset', 'h100-80gb-x8')
    result = run(capsys, node)
    assert not result.get('failed'), result
    observed = result['observed']
    assert (observed['nvswitch_links'], observed['fabric_manager_state'], observed['fabric_manager_version']) == (144, 'active', '570.133.20')
    assert observed['ib_ports'] == 8 and 'nvidia_peermem' in observed['modules']


@pytest.mark.parametrize('fault, check, fragment', [
    (['fabric-manager', '--state', 'stopped'], 'fabric-manager', 'nvidia-fabricmanager is inactive on this NVSwitch system'),
    (['fabric-manager', '--version', '550.54.15'], 'fabric-manager',
     'nvidia-fabricmanager is version 550.54.15, the driver 570.133.20: they must be the same release'),
    # without nvidia_peermem, the proprietary kernel modules have no DMA-BUF
    ([['module', '--unload', 'nvidia_peermem'], ['driver', '--version', '570.133.20', '--kernel-module', 'proprietary']], 'gpudirect',
     'no GPUDirect RDMA for the 8 InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not possible (the proprietary'),
    (['persistence', '--gpu', '2', '--mode', 'off'], 'persistence', 'GPU 2 (00000000:52:00.0) persistence mode is off'),
    (['driver', '--version', '515.65.01'], 'driver', 'NVIDIA driver 515.65.01 is older than 525.60.13'),
])
def test_each_fault_fails_naming_the_node_and_the_fix(node, capsys, fault, check, fragment):
    node['sim']('create', '--preset', 'h100-80gb-x8')
    for command in fault if isinstance(fault[0], list) else [fault]:
        node['sim'](*command)
    result = run(capsys, node)
    assert result['failed'] is True
    assert [f['check'] for f in result['failures']] == [check], result['failures']
    assert fragment in result['msg'] and result['msg'].startswith('gpu-01'), result['msg']


def test_open_kernel_modules_give_gpudirect_without_peermem(node, capsys):
    node['sim']('create', '--preset', 'h100-80gb-x8')
    node['sim']('module', '--unload', 'nvidia_peermem')
    node['sim']('driver', '--version', '570.133.20', '--kernel-module', 'open')
    if tuple(int(x) for x in os.uname()[2].split('.')[:2] if x.isdigit()) < (5, 12):
        pytest.skip('this kernel has no DMA-BUF: the check rightly fails here')
    assert not run(capsys, node, checks=['gpudirect']).get('failed')


def test_a_pcie_node_without_nvswitch_or_infiniband_needs_neither(node, capsys):
    node['sim']('create', '--preset', 'a100-80gb-pcie-x4')
    result = run(capsys, node)
    assert not result.get('failed'), result
    assert result['observed']['nvswitch_links'] == 0 and result['observed']['ib_ports'] == 0


def fake_proc(tmp, processes):
    """A /proc tree: per process its comm, cgroup and fd links (to the device paths given)."""
    proc = tmp / 'proc'
    for pid, comm, cgroup, devices in processes:
        fd = proc / str(pid) / 'fd'
        fd.mkdir(parents=True)
        (proc / str(pid) / 'comm').write_text(comm + '\n')
        (proc / str(pid) / 'cgroup').write_text(cgroup)
        for number, device in enumerate(devices):
            os.symlink(device, str(fd / str(number + 3)))
    return str(proc)


def test_reset_blockers_name_what_the_role_cannot_stop(node, capsys, monkeypatch):
    node['sim']('create', '--preset', 'a100-40gb-x8')
    monkeypatch.setattr(gpu_baseline, 'PROC_DIR', fake_proc(node['tmp'], [
        (11, 'nvidia-persiste', '0::/system.slice/nvidia-persistenced.service\n', ['/dev/nvidiactl', '/dev/nvidia0', '/dev/nvidia1']),
        (22, 'python3', '0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0\n', ['/dev/nvidia3']),
        (33, 'dcgm-exporter', '0::/system.slice/monitoring.service\n', ['/dev/nvidia5']),
    ]))
    result = run(capsys, node, checks=['reset-blockers'], stopped_services=['nvidia-persistenced', 'dcgm'])
    assert result['failed'] is True
    assert [(f['check'], f['gpu']) for f in result['failures']] == [('reset-blockers', 5)]
    assert result['msg'] == ('gpu-01 GPU 5: reset-blockers: process 33 (dcgm-exporter) of monitoring.service holds /dev/nvidia5, which '
                             'blocks the GPU reset of the MIG mode change; add monitoring to mig_reset_blockers (the role stops it '
                             'during the change) or stop it')
    node['sim']('module', '--load', 'nvidia_drm')
    result = run(capsys, node, checks=['reset-blockers'], stopped_services=['nvidia-persistenced', 'monitoring'])
    assert [f['detail'].split(' (')[0] for f in result['failures']] == ['nvidia_drm is loaded']


def test_check_mode_without_bindings_is_skipped_not_failed(node, capsys, monkeypatch):
    node['sim']('create', '--preset', 'a100-40gb-x8')
    monkeypatch.setattr(gpu_baseline, 'BINDINGS', (None, 'the Python NVML bindings cannot be imported'))
    result = run(capsys, node, _ansible_check_mode=True)
    assert result.get('skipped') is True and not result.get('failed'), result


def test_a_bad_driver_min_is_refused_before_anything_is_read(node, capsys):
    result = run(capsys, node, driver_min='r570')
    assert result['failed'] is True and result['msg'] == ('driver_min is \'r570\', expected a driver version such as "550.54.14" (or no value: '
                                                          'the oldest driver the GPU models support)')
    assert 'observed' not in result


@pytest.mark.parametrize('name, content, problem', [
    ('absent', None, 'the driver version file {path} does not exist (is the nvidia module loaded?)'),
    ('no-version', 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  (a build without its number)\n',
     'the driver version file {path} names no driver version on its NVRM version line'),
])
def test_an_unusable_driver_version_file_is_named_with_its_path(node, capsys, name, content, problem):
    node['sim']('create', '--preset', 'h100-80gb-x8')
    node['sim']('module', '--unload', 'nvidia_peermem')
    path = str(node['tmp'] / ('version-' + name))
    if content is not None:
        with open(path, 'w') as handle:
            handle.write(content)
    result = run(capsys, node, checks=['gpudirect'], driver_proc=path)
    assert result['failed'] is True
    expected = 'nvidia_peermem is not loaded and DMA-BUF is not possible (%s' % problem.format(path=path)
    assert expected in result['msg'], result['msg']
