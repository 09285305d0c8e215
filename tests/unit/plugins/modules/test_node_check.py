# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_check against the project's NVML simulator and real files (no mocks).

Services, munge and scontrol are turned off here (the development machine runs none of them); the
simulated cluster's molecule scenario `validate` runs them for real.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as hooks
from ansible_collections.gpucluster.bringup.plugins.modules import node_check
from ansible_collections.gpucluster.bringup.tests.unit.simnode import run_nvmlsim, use_node


@pytest.fixture
def sim(tmp_path, monkeypatch):
    """The simulator's command line on a node in tmp_path."""
    use_node(tmp_path, monkeypatch)
    return run_nvmlsim


def run_module(capsys, **args):
    args.setdefault('services', [])
    args.setdefault('munge_roundtrip', False)
    args.setdefault('munge_key_check', False)  # the key's permissions have their own tests (test_munge_key_*)
    args.setdefault('slurm_state', False)
    args.setdefault('node_name', 'gpu-01')
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            node_check.main()
    return json.loads(capsys.readouterr().out)


def by_check(result):
    return dict((r['check'], r) for r in result['records'])


def test_h100_node_passes(sim, capsys, tmp_path):
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    gres = tmp_path / 'gres.conf'
    gres.write_text('# managed\nName=gpu Type=h100 File=/dev/nvidia0\n')
    result = run_module(capsys, expect={'gpu_count': 8, 'gpu_models': ['H100']}, gres_conf_path=str(gres),
                        gres_conf_expected=['Name=gpu Type=h100 File=/dev/nvidia0'],
                        mig_result={'changed': False, 'actions': [], 'gpus': [{'index': 0, 'reset_required': False}]})
    checks = by_check(result)
    assert result['passed'] is True and result['failed_checks'] == [], result
    assert checks['nvml']['reason'] == 'NVML answers: 8 GPU(s)'
    assert checks['gpu_models']['reason'] == 'models NVIDIA H100 80GB HBM3 match H100'
    assert checks['mig_layout']['status'] == 'pass'
    assert checks['gres_conf']['status'] == 'pass'
    assert checks['node_state']['status'] == checks['enroot']['status'] == checks['pyxis']['status'] == 'skip'
    assert result['changed'] is False


def test_wrong_count_model_and_hand_edited_gres_conf(sim, capsys, tmp_path):
    sim('create', '--preset', 'a100-40gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    gres = tmp_path / 'gres.conf'
    gres.write_text('Name=gpu Type=a100 File=/dev/nvidia[0-6]\n')
    result = run_module(capsys, expect={'gpu_count': 4, 'gpu_models': ['H100']}, gres_conf_path=str(gres),
                        gres_conf_expected=['Name=gpu Type=a100 File=/dev/nvidia[0-7]'])
    checks = by_check(result)
    assert result['failed_checks'] == ['gpu_count', 'gpu_models', 'gres_conf']
    assert checks['gpu_count']['reason'] == 'NVML sees 8 GPU(s), expected 4'
    assert checks['gres_conf']['reason'] == (
        '%s differs from what slurm_gres_facts computes now: gpu:a100: 7 in %s, 8 computed from NVML; '
        'missing line "Name=gpu Type=a100 File=/dev/nvidia[0-7]"; unexpected line "Name=gpu Type=a100 File=/dev/nvidia[0-6]"' % (gres, gres))


def test_failed_mig_comparison_is_a_failed_check(sim, capsys, tmp_path):
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    result = run_module(capsys, mig_result={'changed': False, 'failed': False, 'msg': 'GPU 0 is a NVIDIA H100 80GB HBM3: no profile 1g.5gb'})
    check = by_check(result)['mig_layout']
    assert (check['status'], check['reason']) == ('fail', 'the wanted MIG layout could not be compared: GPU 0 is a NVIDIA H100 80GB HBM3: no profile 1g.5gb')


def test_nvml_fault_is_reported(sim, capsys, tmp_path):
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    sim('inject', '--call', 'nvmlInit', '--error', 'NVML_ERROR_DRIVER_NOT_LOADED', '--count', '0')
    result = run_module(capsys, expect={'gpu_count': 8})
    checks = by_check(result)
    assert checks['nvml']['status'] == 'fail'
    assert checks['nvml']['reason'].startswith('NVML does not answer: nvmlInit failed: ')
    assert checks['gpu_count']['status'] == 'skip'


def test_enroot_and_pyxis_missing(sim, capsys, tmp_path, monkeypatch):
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    monkeypatch.setenv('PATH', str(tmp_path))
    result = run_module(capsys, nvml=False, enroot=True, pyxis=True, services=['munge'])
    checks = by_check(result)
    assert checks['enroot']['reason'] == 'enroot is not installed (no enroot command in PATH)'
    assert checks['pyxis']['reason'] == 'srun is not installed on this node, cannot tell whether pyxis loads'
    assert checks['nvml']['status'] == 'skip'


def test_hook_log_from_a_syslog_file(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    log = tmp_path / 'syslog'
    log.write_text('\n'.join([
        'Nov 21 06:30:01 gpu-01 slurm-hooks[812]: ' + hooks.log_line('prolog', '12', '95-all-rootless', 1, 0.004, 'failed'),
        'Nov 21 06:30:01 gpu-01 slurm-hooks[812]: prolog hook 95-all-rootless output: singularity: command not found',
        'Nov 21 06:30:02 gpu-01 cron[1]: unrelated',
    ]) + '\n')
    result = run_module(capsys, nvml=False, hook_log=True, hook_log_files=[str(tmp_path / 'absent'), str(log)])
    assert result['hook_failure'] == {'phase': 'prolog', 'job': '12', 'hook': '95-all-rootless', 'rc': 1, 'status': 'failed', 'ok': False,
                                      'output': 'singularity: command not found'}
    assert 'cron' not in result['hook_log']


def run_nvidia_mig(capsys, gpus, check_mode):
    from ansible_collections.gpucluster.bringup.plugins.modules import nvidia_mig
    args = {'gpus': gpus}
    if check_mode:
        args['_ansible_check_mode'] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nvidia_mig.main()
    return json.loads(capsys.readouterr().out)


def test_mig_layout_against_nvidia_mig_check_mode(sim, capsys, tmp_path):
    """The MIG check with the real nvidia_mig module in check mode, as the role runs it."""
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'), '--auto-reset')
    wanted = [{'gpu': '0', 'instances': [{'profile': '1g.10gb', 'count': 2}]}]
    applied = run_nvidia_mig(capsys, wanted, check_mode=False)
    assert applied.get('failed') is not True, applied
    same = run_nvidia_mig(capsys, wanted, check_mode=True)
    check = by_check(run_module(capsys, mig_result=same))['mig_layout']
    assert (check['status'], check['reason']) == ('pass', 'MIG layout equals the wanted one')
    other = run_nvidia_mig(capsys, [{'gpu': '0', 'instances': [{'profile': '3g.40gb', 'count': 1}]}], check_mode=True)
    check = by_check(run_module(capsys, mig_result=other))['mig_layout']
    assert check['status'] == 'fail'
    assert check['reason'].startswith('MIG layout differs from the wanted one; nvidia_mig would: GPU 0: ')


ME = __import__('pwd').getpwuid(os.getuid()).pw_name


@pytest.mark.parametrize('key_mode, dir_mode, status, reason', [
    (0o400, 0o700, 'pass', '{key} is private to {me} (mode 0400, directory 0700)'),
    (0o600, 0o700, 'pass', '{key} is private to {me} (mode 0600, directory 0700)'),
    (0o644, 0o700, 'fail', 'munge key {key} has mode 0644, expected 0400 or 0600 (no group or other access'),
    (0o640, 0o700, 'fail', 'munge key {key} has mode 0640, expected 0400 or 0600'),
    (0o600, 0o755, 'fail', 'munge key directory {dir} has mode 0755, expected 0700'),
])
def test_munge_key_permissions(capsys, tmp_path, key_mode, dir_mode, status, reason):
    """chmod 644 on the key fails the munge check even though a credential still round-trips."""
    folder = tmp_path / 'munge'
    folder.mkdir()
    key = folder / 'munge.key'
    key.write_bytes(b'k' * 128)
    os.chmod(str(key), key_mode)
    os.chmod(str(folder), dir_mode)
    result = run_module(capsys, nvml=False, checks=['munge'], munge_key_check=True, munge_key_path=str(key), munge_user=ME)
    check = by_check(result)['munge']
    assert check['status'] == status
    assert reason.format(key=key, dir=folder, me=ME) in check['reason']
    assert result['passed'] is (status == 'pass')


def test_munge_key_of_another_owner_fails(capsys, tmp_path):
    folder = tmp_path / 'munge'
    folder.mkdir(mode=0o700)
    key = folder / 'munge.key'
    key.write_bytes(b'k' * 128)
    os.chmod(str(key), 0o400)
    os.chown(str(key), 4242, -1)  # the unit tests run as root
    result = run_module(capsys, nvml=False, checks=['munge'], munge_key_check=True, munge_key_path=str(key), munge_user=ME)
    assert by_check(result)['munge']['reason'] == 'munge key %s is owned by uid 4242, expected %s (uid %d)' % (key, ME, os.getuid())


def test_munge_key_is_not_read_when_the_munge_check_is_not_wanted(capsys, tmp_path):
    result = run_module(capsys, nvml=False, checks=['slurmd'], munge_key_check=True, munge_key_path=str(tmp_path / 'absent.key'))
    assert [r['check'] for r in result['records']] == ['slurmd'] and result['passed'] is True


def fake_daemon(folder, name, text, rc=0):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text('#!/bin/sh\necho "%s"\nexit %d\n' % (text, rc))
    path.chmod(0o755)


def test_versions_for_the_report(sim, capsys, tmp_path, monkeypatch):
    """The driver and CUDA versions NVML gives (the simulator's driver changed by hand) and the Slurm daemon's."""
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    sim('driver', '--version', '535.104.05', '--cuda', '12020')
    fake_daemon(tmp_path / 'bin', 'slurmd', 'slurm 22.05.8')
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path / 'bin', os.environ['PATH']))
    result = run_module(capsys)
    assert result['versions'] == {'slurm': '22.05.8', 'driver': '535.104.05', 'cuda': '12.2'}


def test_versions_not_known_are_null(sim, capsys, tmp_path, monkeypatch):
    """No NVML asked, a slurmd that fails, a slurmctld (Debian's slurm-wlm name) that answers; then NVML failing and no daemon."""
    sim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    sim('inject', '--call', 'nvmlInit', '--error', 'NVML_ERROR_DRIVER_NOT_LOADED', '--count', '0')
    fake_daemon(tmp_path / 'bin', 'slurmd', 'slurmd: error: cannot read /etc/slurm/slurm.conf', rc=1)
    fake_daemon(tmp_path / 'bin', 'slurmctld', 'slurm-wlm 23.02.7')
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path / 'bin', os.environ['PATH']))
    assert run_module(capsys, nvml=False)['versions'] == {'slurm': '23.02.7', 'driver': None, 'cuda': None}
    monkeypatch.setattr(node_check.NodeChecker, '_bin', lambda self, name: None)
    assert run_module(capsys)['versions'] == {'slurm': None, 'driver': None, 'cuda': None}


@pytest.mark.parametrize('number, text', [(12040, '12.4'), (12020, '12.2'), (11080, '11.8'), (13000, '13.0'), (None, None)])
def test_cuda_version_text(number, text):
    assert node_check.cuda_version(number) == text
