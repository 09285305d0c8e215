# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The program gpucluster-healthcheck against the project's NVML simulator.

Each test makes a simulated node (``nvmlsim create``) in a temporary
``NVMLSIM_STATE``/``NVMLSIM_ROOT`` -- its device files live under that root --
and runs the program's ``main()`` with the simulator's ``pynvml``.  Breaking
the node is done the way it happens: a device file removed, an NVML call
failing (``nvmlsim inject``), a MIG instance missing.

``scontrol`` is a STAND-IN written by the test (it is not Slurm): it keeps one
node's State and Reason in a JSON file, prints ``scontrol -o show node`` in
the format of Slurm 22.05.8 and logs each ``update``.  The real scontrol is
exercised in molecule/accounting.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os
import sys

import pytest

import pynvml

from ansible_collections.gpucluster.bringup.tests.unit.simnode import run_nvmlsim, use_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
PROGRAM = os.path.join(ROOT, 'roles', 'slurm_healthcheck', 'files', 'gpucluster_healthcheck.py')

_loader = importlib.machinery.SourceFileLoader('gpucluster_healthcheck', PROGRAM)
_spec = importlib.util.spec_from_loader('gpucluster_healthcheck', _loader)
program = importlib.util.module_from_spec(_spec)
_loader.exec_module(program)

SCONTROL_STANDIN = r'''#!%s
"""STAND-IN for scontrol (not Slurm): one node's State/Reason in $SCONTROL_STANDIN_STATE."""
import json, os, sys
path = os.environ['SCONTROL_STANDIN_STATE']
with open(path) as handle:
    node = json.load(handle)
args = sys.argv[1:]
with open(path + '.log', 'a') as log:
    log.write(json.dumps(args) + '\n')
if args[:3] == ['-o', 'show', 'node']:
    if args[3] != node['name']:
        print('Node %%s not found' %% args[3])
        sys.exit(1)
    state = '+'.join([node['state']] + node['flags'])
    line = ('NodeName=%%s Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 Gres=gpu:h100:8 NodeAddr=%%s '
            'State=%%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Partitions=batch CfgTRES=cpu=2 AllocTRES= CapWatts=n/a '
            'CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s' %% (node['name'], node['name'], state))
    if node['reason']:
        line += ' Reason=%%s [%%s@2026-11-21T06:10:36]' %% (node['reason'], node['by'])
    print(line)
elif args[0] == 'update':
    settings = dict(a.split('=', 1) for a in args[1:])
    if 'comment' in settings:  # the closed loop's comment-mode hits (issue 48)
        node['comment'] = settings['comment']
    if settings.get('state') == 'drain':
        node['flags'] = sorted(set(node['flags']) | set(['DRAIN']))
        node['reason'], node['by'] = settings['reason'], 'root'
    elif settings.get('state') == 'resume':
        node['flags'] = [f for f in node['flags'] if f != 'DRAIN']
        node['reason'] = ''
    with open(path, 'w') as handle:
        json.dump(node, handle)
''' % sys.executable


SYSTEMCTL_STANDIN = r'''#!%s
"""STAND-IN for systemctl (not systemd): `is-active nvidia-fabricmanager` answers from the simulator's fabric manager."""
import json, os, sys
if sys.argv[1:] != ['is-active', 'nvidia-fabricmanager']:
    print('systemctl STAND-IN: only is-active nvidia-fabricmanager', file=sys.stderr)
    sys.exit(4)
with open(os.environ['NVMLSIM_STATE']) as handle:
    state = json.load(handle).get('fabric_manager', 'running')
# the service runs while the fabric is being set up ("starting") and once it is ("running")
print('active' if state in ('running', 'starting') else 'inactive')
sys.exit(0 if state in ('running', 'starting') else 3)
''' % sys.executable
FABRIC_MANAGER_STANDIN = os.path.join(ROOT, 'nvml_sim', 'bin', 'nv-fabricmanager')


class Node(object):
    """A simulated GPU node plus a stand-in Slurm view of it."""

    def __init__(self, tmp_path, monkeypatch):
        self.tmp = tmp_path
        self.state, self.root = use_node(tmp_path, monkeypatch)
        self.minors = str(tmp_path / 'mig-minors')
        self.slurm = str(tmp_path / 'slurm-node.json')
        self.config_path = str(tmp_path / 'healthcheck.json')
        self.state_file = str(tmp_path / 'hc-state.json')
        self.events_file = str(tmp_path / 'events.jsonl')
        # where the simulator writes the driver's kernel log lines and the InfiniBand tree
        self.kern_log = os.path.join(self.root, 'var', 'log', 'kern.log')
        self.ib_root = os.path.join(self.root, 'var', 'lib', 'nvmlsim', 'sys', 'class', 'infiniband')
        self.module_root = os.path.join(self.root, 'var', 'lib', 'nvmlsim', 'sys', 'module')
        self.driver_proc = os.path.join(self.root, 'var', 'lib', 'nvmlsim', 'proc-driver-nvidia-version')
        self.systemctl = str(tmp_path / 'systemctl-standin')
        with open(self.systemctl, 'w') as handle:
            handle.write(SYSTEMCTL_STANDIN)
        os.chmod(self.systemctl, 0o755)
        monkeypatch.setenv('SCONTROL_STANDIN_STATE', self.slurm)
        self.scontrol = str(tmp_path / 'scontrol-standin')
        with open(self.scontrol, 'w') as handle:
            handle.write(SCONTROL_STANDIN)
        os.chmod(self.scontrol, 0o755)
        self.set_slurm('IDLE')

    def sim(self, *args):
        return run_nvmlsim(*args, NVMLSIM_STATE=self.state, NVMLSIM_ROOT=self.root)

    def create(self, preset, **config):
        self.sim('create', '--preset', preset, '--mig-minors', self.minors)
        return self.configure(**config)

    def configure(self, **config):
        # munge_key_path '': the munge key has its own tests below (test_munge_key_*)
        settings = {'node_name': 'gpu-01', 'dev_root': self.root, 'mig_minors_path': self.minors, 'scontrol': self.scontrol,
                    'status_file': str(self.tmp / 'status.json'), 'munge_key_path': '', 'state_file': self.state_file,
                    'events_file': self.events_file, 'xid_source': self.kern_log, 'ib_sysfs_root': self.ib_root,
                    'module_root': self.module_root, 'driver_proc': self.driver_proc, 'systemctl': self.systemctl,
                    'fabric_manager_bin': FABRIC_MANAGER_STANDIN}
        settings.update(config)
        with open(self.config_path, 'w') as handle:
            json.dump(settings, handle)
        return self

    def set_slurm(self, state, flags=(), reason='', by='root'):
        with open(self.slurm, 'w') as handle:
            json.dump({'name': 'gpu-01', 'state': state, 'flags': list(flags), 'reason': reason, 'by': by}, handle)

    def slurm_node(self):
        with open(self.slurm) as handle:
            return json.load(handle)

    def updates(self):
        if not os.path.exists(self.slurm + '.log'):
            return []
        with open(self.slurm + '.log') as handle:
            return [json.loads(l) for l in handle if json.loads(l)[0] == 'update']

    def run(self, capsys, *args):
        rc = program.main(['--config', self.config_path] + list(args), pynvml=pynvml)
        captured = capsys.readouterr()
        return rc, captured.out, captured.err


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


H100 = {'gpu_count': 8, 'gpu_models': ['H100'], 'mig_layout': {}}
MISSING_3 = 'gpuhc:periodic:device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing'


def test_healthy_h100_node_is_left_alone(node, capsys):
    node.create('h100-80gb-x8', **H100)
    rc, out, _err = node.run(capsys)
    assert rc == 0, out
    assert out.strip() == 'gpucluster-healthcheck: healthy'
    assert node.updates() == []
    with open(str(node.tmp / 'status.json')) as handle:
        status = json.load(handle)
    assert status.pop('seconds') < 30
    assert status == {'action': 'none', 'failures': [], 'gpus': 8, 'message': 'healthy', 'tier': 'periodic', 'skipped': [],
                      'warnings': []}


def test_a_missing_device_file_drains_naming_the_gpu_and_resume_needs_asking(node, capsys):
    node.create('h100-80gb-x8', **H100)
    os.remove(os.path.join(node.root, 'dev', 'nvidia3'))
    rc, out, _err = node.run(capsys)
    assert rc == 1
    assert 'FAIL device-files: GPU 3 (00000000:61:00.0) /dev/nvidia3 missing' in out
    assert node.updates() == [['update', 'nodename=gpu-01', 'state=drain', 'reason=' + MISSING_3]]
    assert node.slurm_node()['reason'] == MISSING_3
    # failing again: already drained for it, nothing more
    rc, out, _err = node.run(capsys)
    assert rc == 1 and len(node.updates()) == 1
    assert 'is already drained for it' in out
    # restored (the simulator recreates the device files, as the driver does at boot)
    node.sim('boot')
    rc, out, _err = node.run(capsys)
    assert rc == 0 and len(node.updates()) == 1
    assert 'gpu-01 stays drained' in out
    rc, out, _err = node.run(capsys, '--resume')
    assert rc == 0
    assert node.updates()[-1] == ['update', 'nodename=gpu-01', 'state=resume']
    assert 'DRAIN' not in node.slurm_node()['flags']


def test_auto_resume_resumes_its_own_drain_after_two_passes(node, capsys):
    node.create('h100-80gb-x8', auto_resume=True, **H100)
    node.set_slurm('IDLE', ['DRAIN'], MISSING_3)
    rc, out, _err = node.run(capsys)
    assert rc == 0 and node.updates() == []
    assert '(1 of 2 passing runs in a row)' in out
    rc, out, _err = node.run(capsys)
    assert rc == 0
    assert node.updates() == [['update', 'nodename=gpu-01', 'state=resume']]
    with open(node.events_file) as handle:
        events = [json.loads(line) for line in handle]
    assert [(e['action'], e['reason'], e['tier']) for e in events] == [('resume', MISSING_3, 'periodic')]


def test_a_failure_between_passes_starts_the_count_again(node, capsys):
    node.create('h100-80gb-x8', resume_after_passes=2, **H100)
    node.set_slurm('IDLE', ['DRAIN'], MISSING_3)
    assert node.run(capsys)[0] == 0
    os.remove(os.path.join(node.root, 'dev', 'nvidia3'))
    assert node.run(capsys)[0] == 1
    node.sim('boot')
    rc, out, _err = node.run(capsys)
    assert (rc, node.updates()) == (0, [])
    assert '(1 of 2 passing runs in a row)' in out
    assert node.run(capsys)[0] == 0
    assert node.updates() == [['update', 'nodename=gpu-01', 'state=resume']]


def test_an_admin_drain_is_never_touched(node, capsys):
    node.create('h100-80gb-x8', auto_resume=True, **H100)
    node.set_slurm('IDLE', ['DRAIN'], 'replacing PSU, ticket 4711', by='alice')
    rc, out, _err = node.run(capsys, '--resume')
    assert rc == 0
    assert 'drained by someone else ("replacing PSU, ticket 4711"), not resumed' in out
    os.remove(os.path.join(node.root, 'dev', 'nvidia0'))
    rc, out, _err = node.run(capsys)
    assert rc == 1
    assert 'left as it is' in out
    assert node.updates() == []
    assert node.slurm_node()['reason'] == 'replacing PSU, ticket 4711'


def test_a_lost_gpu_is_named(node, capsys):
    node.create('h100-80gb-x8', **H100)
    node.sim('inject', '--call', 'nvmlDeviceGetHandleByIndex', '--error', 'NVML_ERROR_GPU_IS_LOST', '--after', '5', '--count', '0')
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    assert out.splitlines()[0].startswith('FAIL gpu-error: GPU 5: nvmlDeviceGetHandleByIndex failed: ')
    assert out.splitlines()[-1] == 'gpucluster-healthcheck: failing (dry run)'
    assert node.updates() == []


@pytest.mark.parametrize('flag, fragment', [
    ('--remap-pending', 'FAIL gpu-error: GPU 2 (00000000:52:00.0) has memory row remapping pending a GPU reset'),
    ('--remap-failure', 'FAIL gpu-error: GPU 2 (00000000:52:00.0) has a failed memory row remapping'),
])
def test_a_row_remapping_through_the_simulated_nvml_is_named(node, capsys, flag, fragment):
    """H100 remaps rows (no page retirement): the program reads nvmlDeviceGetRemappedRows through the simulator."""
    node.create('h100-80gb-x8', **H100)
    node.sim('ecc', '--gpu', '2', flag, 'yes')
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    assert fragment in out, out
    assert 'retired' not in out


def test_nvml_down_is_one_failure(node, capsys):
    node.create('h100-80gb-x8', **H100)
    node.sim('inject', '--call', 'nvmlInit', '--error', 'NVML_ERROR_DRIVER_NOT_LOADED', '--count', '0')
    rc, out, _err = node.run(capsys)
    assert rc == 1
    reason = node.updates()[0][-1]
    assert reason.startswith('reason=gpuhc:periodic:nvml: NVML does not answer: nvmlInit failed: ')


def test_wrong_model_and_count(node, capsys):
    node.create('a100-40gb-x8', gpu_count=4, gpu_models=['H100'], mig_layout=None, check_device_files=False)
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    lines = [l for l in out.splitlines() if l.startswith('FAIL')]
    assert lines[0] == 'FAIL gpu-count: NVML sees 8 GPUs, expected 4'
    assert lines[1].startswith('FAIL gpu-model: GPU 0 (00000000:07:00.0) is a NVIDIA A100-SXM4-40GB, expected H100')
    assert len(lines) == 9


SEED_003_MIG = {'2': ['1g.10gb'] * 7, '3': ['1g.10gb'] * 7}


def test_mig_layout_and_capability_devices(node, capsys):
    node.create('seed-003', gpu_count=4, gpu_models=['A100'], mig_layout=SEED_003_MIG)
    rc, out, _err = node.run(capsys, '--dry-run')
    assert (rc, out.strip()) == (0, 'gpucluster-healthcheck: healthy (dry run)')
    os.remove(os.path.join(node.root, 'dev', 'nvidia-caps', 'nvidia-cap337'))
    rc, out, _err = node.run(capsys)
    assert rc == 1
    assert node.updates() == [['update', 'nodename=gpu-01', 'state=drain',
                               'reason=gpuhc:periodic:device-files: GPU 2 (00000000:CA:00.0) /dev/nvidia-caps/nvidia-cap337 missing']]


def test_mig_layout_differs(node, capsys):
    node.create('seed-003', mig_layout={'2': ['1g.10gb'] * 7, '3': ['3g.40gb', '3g.40gb']})
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    assert 'FAIL mig: GPU 3 (00000000:E3:00.0) has MIG instances 1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb, ' \
           'expected 3g.40gb,3g.40gb' in out


def test_observe_prints_the_node(node, capsys):
    node.create('seed-003')
    rc = program.main(['--observe'], pynvml=pynvml)
    observed = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [g['name'] for g in observed['gpus']] == ['NVIDIA A100 80GB PCIe'] * 4
    assert [len(g['mig_devices']) for g in observed['gpus']] == [0, 0, 7, 7]
    assert observed['gpus'][2]['mig_devices'][0] == {'profile': '1g.10gb', 'gi': 7, 'ci': 0}


def test_bad_configuration(node, capsys):
    node.create('h100-80gb-x8', gpus=8)
    rc, _out, err = node.run(capsys)
    assert rc == 2
    assert err.strip().startswith('gpucluster-healthcheck: cannot use the configuration %s: unknown health check setting(s) gpus; '
                                  % node.config_path)


def test_scontrol_failure_is_reported(node, capsys):
    node.create('h100-80gb-x8', node_name='gpu-99', **H100)
    rc, _out, err = node.run(capsys)
    assert rc == 2
    assert err.strip() == 'gpucluster-healthcheck: %s -o show node gpu-99 failed (rc=1): Node gpu-99 not found' % node.scontrol


def test_baseline_is_met_by_the_node_it_was_taken_on(node, capsys):
    node.create('seed-003')
    assert program.main(['--baseline', '--ib-sysfs-root', node.ib_root], pynvml=pynvml) == 0
    recorded = json.loads(capsys.readouterr().out)
    assert recorded == {'gpu_count': 4, 'gpu_models': ['NVIDIA A100 80GB PCIe'], 'mig_layout': SEED_003_MIG, 'nvlinks_active': {},
                        'ib_ports': 0, 'ib_rate_gbps': None}
    node.configure(**recorded)
    assert node.run(capsys, '--dry-run')[0] == 0


def test_baseline_of_a_broken_node_is_refused(node, capsys):
    node.create('h100-80gb-x8')
    node.sim('inject', '--call', 'nvmlDeviceGetName', '--error', 'NVML_ERROR_GPU_IS_LOST', '--after', '2', '--count', '0')
    assert program.main(['--baseline'], pynvml=pynvml) == 2
    assert capsys.readouterr().err.startswith('gpucluster-healthcheck: cannot record the GPUs of this node: GPU 2: nvmlDeviceGetName failed: ')


def test_missing_pynvml_is_not_a_node_failure(node, capsys, monkeypatch):
    node.create('h100-80gb-x8', **H100)
    monkeypatch.setattr(program, '_import_pynvml', lambda: (None, 'the Python NVML bindings are missing (No module named pynvml); '
                                                                  'install nvidia-ml-py'))
    assert program.main(['--config', node.config_path]) == 2
    assert capsys.readouterr().err.strip() == ('gpucluster-healthcheck: the Python NVML bindings are missing (No module named pynvml); '
                                               'install nvidia-ml-py')
    assert node.updates() == []


def test_a_node_without_gpus_needs_no_nvml_bindings(node, capsys, monkeypatch):
    node.configure(gpu_count=0, gpu_models=[], mig_layout={})
    monkeypatch.setattr(program, '_import_pynvml', lambda: (None, 'the Python NVML bindings are missing (No module named pynvml); '
                                                                  'install nvidia-ml-py'))
    assert program.main(['--config', node.config_path]) == 0
    assert capsys.readouterr().out.strip() == 'gpucluster-healthcheck: healthy'
    assert node.updates() == []
    # and it never resumes an admin's drain
    node.set_slurm('IDLE', flags=['DRAIN'], reason='rack 4 maintenance', by='admin')
    assert program.main(['--config', node.config_path, '--resume']) == 0
    assert node.updates() == [] and node.slurm_node()['reason'] == 'rack 4 maintenance'


# ------------------------------------------------------------------ munge key (real files; the munge user is the test's own user)

ME = __import__('pwd').getpwuid(os.getuid()).pw_name


def munge_key(tmp, key_mode, dir_mode=0o700):
    folder = tmp / 'munge'
    folder.mkdir()
    key = folder / 'munge.key'
    key.write_bytes(b'k' * 128)
    os.chmod(str(key), key_mode)
    os.chmod(str(folder), dir_mode)
    return str(key)


@pytest.mark.parametrize('key_mode, dir_mode, fails', [
    (0o400, 0o700, []),
    (0o600, 0o700, []),
    (0o644, 0o700, ['munge-key: munge key {key} has mode 0644, expected 0400 or 0600']),
    (0o640, 0o700, ['munge-key: munge key {key} has mode 0640, expected 0400 or 0600']),
    (0o604, 0o700, ['munge-key: munge key {key} has mode 0604, expected 0400 or 0600']),
    (0o600, 0o755, ['munge-key: munge key directory {dir} has mode 0755, expected 0700']),
    (0o666, 0o777, ['munge-key: munge key {key} has mode 0666, expected 0400 or 0600', 'munge-key: munge key directory {dir} has mode 0777']),
])
def test_munge_key_permissions_drain_the_node(node, capsys, key_mode, dir_mode, fails):
    key = munge_key(node.tmp, key_mode, dir_mode)
    node.create('h100-80gb-x8', munge_key_path=key, munge_user=ME, **H100)
    rc, out, _err = node.run(capsys)
    got = [line[len('FAIL '):] for line in out.splitlines() if line.startswith('FAIL ')]
    assert len(got) == len(fails), out
    for line, fragment in zip(got, fails):
        assert fragment.format(key=key, dir=os.path.dirname(key)) in line
    if fails:
        assert rc == 1
        assert node.updates()[0][:3] == ['update', 'nodename=gpu-01', 'state=drain']
        assert node.slurm_node()['reason'].startswith('gpuhc:periodic:munge-key: munge key ')
    else:
        assert rc == 0 and node.updates() == []


def test_munge_key_owned_by_another_user_drains(node, capsys):
    key = munge_key(node.tmp, 0o400)
    os.chown(key, 4242, -1)  # the tests run as root on the development machine and in CI
    node.create('h100-80gb-x8', munge_key_path=key, munge_user=ME, **H100)
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    assert 'FAIL munge-key: munge key %s is owned by uid 4242, expected %s (uid %d)' % (key, ME, os.getuid()) in out
    assert node.updates() == []


def test_munge_key_is_checked_on_a_node_without_gpus_and_without_nvml(node, capsys, monkeypatch):
    key = munge_key(node.tmp, 0o644)
    node.configure(gpu_count=0, gpu_models=[], mig_layout={}, munge_key_path=key, munge_user=ME)
    monkeypatch.setattr(program, '_import_pynvml', lambda: (None, 'the Python NVML bindings are missing'))
    rc = program.main(['--config', node.config_path, '--dry-run'])
    out = capsys.readouterr().out
    assert rc == 1
    assert 'FAIL munge-key: munge key %s has mode 0644, expected 0400 or 0600' % key in out


def test_missing_munge_key_fails(node, capsys):
    node.create('h100-80gb-x8', munge_key_path=str(node.tmp / 'absent' / 'munge.key'), munge_user=ME, **H100)
    rc, out, _err = node.run(capsys, '--dry-run')
    assert rc == 1
    assert 'FAIL munge-key: munge key %s cannot be read: No such file or directory' % (node.tmp / 'absent' / 'munge.key') in out


# ------------------------------------------------------------------ fleet checks and tiers, one fault at a time

HGX = dict(H100, nvlinks_active=dict((str(i), 18) for i in range(8)), ib_ports=8, ib_rate_gbps=400)


@pytest.mark.parametrize('fault, clear, tiers, line', [
    (['xid', '--gpu', '0', '--code', '79'], ['reboot'], ('prolog', 'periodic'),
     # a lost GPU answers nothing, not even its bus id: the Xid names its PCI address
     'FAIL xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node (RMA if it recurs)'),
    (['xid', '--gpu', '3', '--code', '48'], ['reboot'], ('prolog', 'periodic'),
     'FAIL xid: GPU 3 (00000000:61:00.0) had Xid 48 since boot'),
    (['ecc', '--gpu', '2', '--remap-failure', 'yes'], ['ecc', '--gpu', '2', '--remap-failure', 'no'], ('prolog', 'periodic'),
     'FAIL gpu-error: GPU 2 (00000000:52:00.0) has a failed memory row remapping'),
    (['nvlink', '--gpu', '1', '--link', '3', '--state', 'down'], ['nvlink', '--gpu', '1', '--link', '3', '--state', 'up'], ('periodic',),
     'FAIL nvlink: GPU 1 (00000000:43:00.0) has 17 of 18 NVLinks active (down: 3)'),
    (['nvlink', '--gpu', '5', '--link', '0', '--recovery', '2'], ['nvlink', '--gpu', '5', '--link', '0', '--recovery', '0'], ('periodic',),
     'FAIL nvlink: GPU 5 (00000000:C3:00.0) NVLink 0 has 2 recovery errors (at most 0)'),
    (['ib', '--hca', 'mlx5_3', '--state', 'down'], ['ib', '--hca', 'mlx5_3', '--restore'], ('periodic',),
     'FAIL ib: InfiniBand mlx5_3 port 1 is DOWN (physical Polling), expected ACTIVE/LinkUp'),
    (['ib', '--hca', 'mlx5_5', '--rate', '200'], ['ib', '--hca', 'mlx5_5', '--restore'], ('periodic',),
     'FAIL ib: InfiniBand mlx5_5 port 1 runs at 200 Gb/sec (2X NDR), expected 400 Gb/sec'),
    (['fabric-manager', '--state', 'stopped'], ['fabric-manager', '--state', 'running'], ('periodic',),
     'FAIL fabric-manager: nvidia-fabricmanager is inactive on this NVSwitch system'),
    (['fabric-manager', '--version', '550.54.15'], ['fabric-manager', '--version', 'driver'], ('periodic',),
     'FAIL fabric-manager: nvidia-fabricmanager is version 550.54.15, the driver 570.133.20: they must be the same release'),
    # the service runs, the GPUs are still being registered
    (['fabric-manager', '--state', 'starting'], ['fabric-manager', '--state', 'running'], ('periodic',),
     'FAIL fabric: GPU 0 (00000000:1B:00.0) NVLink fabric state IN_PROGRESS'),
    ([['module', '--unload', 'nvidia_peermem'], ['driver', '--version', '570.133.20', '--kernel-module', 'proprietary']],
     [['module', '--load', 'nvidia_peermem']], ('periodic',),
     'FAIL gpudirect: no GPUDirect RDMA for the 8 InfiniBand ports: nvidia_peermem is not loaded'),
    (['persistence', '--gpu', '4', '--mode', 'off'], ['persistence', '--gpu', '4', '--mode', 'on'], ('periodic',),
     'FAIL persistence: GPU 4 (00000000:9D:00.0) persistence mode is off; run nvidia-persistenced'),
    (['driver', '--version', '515.65.01'], ['driver', '--version', '570.133.20'], ('periodic',),
     'FAIL driver: NVIDIA driver 515.65.01 is older than 525.60.13 (the oldest that supports NVIDIA H100 80GB HBM3)'),
    (['pcie', '--gpu', '6', '--width', '8'], ['pcie', '--gpu', '6', '--restore'], ('periodic',),
     'FAIL pcie: GPU 6 (00000000:D1:00.0) PCIe link is x8, the GPU and slot do x16'),
    (['clocks', '--gpu', '7', '--reasons', 'hw_slowdown'], ['clocks', '--gpu', '7', '--reasons', 'gpu_idle'], ('periodic',),
     'FAIL thermal: GPU 7 (00000000:DF:00.0) clocks are held down by hw_slowdown'),
])
def test_each_fault_fails_its_tiers_and_clears(node, capsys, fault, clear, tiers, line):
    """One fault through the simulator: the tiers that check it name it, the others do not see it; cleared, all pass."""
    node.create('h100-80gb-x8', **HGX)
    for tier in ('prolog', 'periodic'):
        assert node.run(capsys, '--dry-run', '--tier', tier)[0] == 0, tier
    for command in fault if isinstance(fault[0], list) else [fault]:
        node.sim(*command)
    for tier in ('prolog', 'periodic'):
        rc, out, _err = node.run(capsys, '--dry-run', '--tier', tier)
        fails = [l for l in out.splitlines() if l.startswith('FAIL')]
        if tier in tiers:
            assert rc == 1 and any(l.startswith(line) for l in fails), (tier, out)
        else:
            assert rc == 0 and not fails, (tier, out)
    for command in clear if isinstance(clear[0], list) else [clear]:
        node.sim(*command)
    for tier in ('prolog', 'periodic'):
        rc, out, _err = node.run(capsys, '--dry-run', '--tier', tier)
        assert rc == 0, (tier, out)


def test_prolog_tier_asks_the_runner_to_drain_and_the_periodic_tier_brings_the_node_back(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    node.sim('xid', '--gpu', '0', '--code', '79')
    rc, out, _err = node.run(capsys, '--tier', 'prolog')
    assert rc == 1
    reason = out.splitlines()[-1][len('drain-reason: '):]
    assert out.splitlines()[-1].startswith('drain-reason: gpuhc:prolog:gpu-error: GPU 0: nvmlDeviceGetHandleByIndex failed: ')
    assert reason.endswith(' (+1 more)')
    assert node.updates() == []  # the prolog tier never calls scontrol: the hook runner drains
    node.set_slurm('IDLE', ['DRAIN'], reason)  # what the runner did
    rc, out, _err = node.run(capsys)
    assert rc == 1 and node.updates()[-1][-1].startswith('reason=gpuhc:periodic:gpu-error: GPU 0: ')
    node.sim('reboot')
    assert node.run(capsys)[0] == 0
    assert node.slurm_node()['flags'] == ['DRAIN']
    rc, out, _err = node.run(capsys)
    assert rc == 0 and 'DRAIN' not in node.slurm_node()['flags'], out
    with open(node.events_file) as handle:
        events = [json.loads(line) for line in handle]
    assert [(e['tier'], e['action']) for e in events] == [('prolog', 'drain requested'), ('periodic', 'drain'), ('periodic', 'resume')]
    assert events[1]['failures'][0]['check'] == 'gpu-error'


def test_an_admin_drain_stays_through_faults_and_passes(node, capsys):
    node.create('h100-80gb-x8', **HGX)
    node.set_slurm('IDLE', ['DRAIN'], 'bios update, ticket 99', by='alice')
    node.sim('ib', '--hca', 'mlx5_0', '--state', 'down')
    assert node.run(capsys)[0] == 1
    node.sim('ib', '--hca', 'mlx5_0', '--restore')
    for _run in range(3):
        assert node.run(capsys)[0] == 0
    assert node.updates() == []
    assert node.slurm_node()['reason'] == 'bios update, ticket 99'


def test_a_disabled_check_is_not_run(node, capsys):
    node.create('h100-80gb-x8', disabled_checks=['ib', 'persistence'], **HGX)
    node.sim('ib', '--hca', 'mlx5_0', '--state', 'down')
    node.sim('persistence', '--gpu', '0', '--mode', 'off')
    assert node.run(capsys, '--dry-run')[0] == 0


def test_a_tier_out_of_time_skips_what_is_left_and_says_so(node, capsys):
    node.create('h100-80gb-x8', prolog_budget=0.001, **HGX)
    node.sim('xid', '--gpu', '0', '--code', '48')
    rc, out, _err = node.run(capsys, '--tier', 'prolog')
    assert rc == 0, out
    assert 'the prolog tier ran out of its 0.001s budget; not checked: xid' in out


def test_an_unreadable_kernel_log_is_a_warning_not_a_drain(node, capsys):
    node.create('h100-80gb-x8', xid_source='/nonexistent/kern.log', **HGX)
    rc, out, _err = node.run(capsys)
    assert rc == 0 and node.updates() == []
    assert 'WARN cannot read the kernel log for Xids: cannot read /nonexistent/kern.log: ' in out


def test_baseline_of_an_hgx_node_records_its_nvlinks_and_infiniband(node, capsys):
    node.create('h100-80gb-x8')
    assert program.main(['--baseline', '--ib-sysfs-root', node.ib_root], pynvml=pynvml) == 0
    recorded = json.loads(capsys.readouterr().out)
    assert recorded['nvlinks_active'] == dict((str(i), 18) for i in range(8))
    assert (recorded['ib_ports'], recorded['ib_rate_gbps']) == (8, 400.0)


def test_fabric_state_is_read_with_nvml_h_layout_not_the_bindings(node, monkeypatch):
    """Debian's python3-pynvml 12.550.89 declares clusterUuid as 80 bytes: its c_nvmlGpuFabricInfo_t reads state 0 on
    every GPU (seen on the simulated cluster's trixie nodes). The client uses nvml.h's layout whatever the binding has."""
    import ctypes
    from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml

    class Debian12550(ctypes.Structure):
        _fields_ = [('clusterUuid', ctypes.c_char * 80), ('status', ctypes.c_int), ('cliqueId', ctypes.c_uint32),
                    ('state', ctypes.c_uint)]
    node.create('h100-80gb-x8', **H100)
    monkeypatch.setattr(pynvml, 'c_nvmlGpuFabricInfo_t', Debian12550)
    with _nvml.session(pynvml) as client:
        broken = Debian12550()
        client.call('nvmlDeviceGetGpuFabricInfo', client.handle(0), ctypes.byref(broken))
        assert broken.state == 0  # what the binding's own structure shows
        assert client.fabric(client.handle(0)) == {'state': 3, 'status': 0, 'cluster_uuid': None, 'clique_id': 0}
    node.sim('fabric-manager', '--state', 'stopped')
    with _nvml.session(pynvml) as client:
        assert client.fabric(client.handle(0)) == {'state': 1, 'status': pynvml.NVML_ERROR_NOT_READY, 'cluster_uuid': None,
                                                   'clique_id': 0}


def test_a_fabric_manager_program_that_cannot_run_is_a_warning_not_a_drain(node, capsys, monkeypatch):
    """slurmd gives HealthCheckProgram a bare environment; a tool the check cannot run is its own problem, not the node's."""
    node.create('h100-80gb-x8', fabric_manager_bin='/nonexistent/nv-fabricmanager', **HGX)
    monkeypatch.delenv('PATH', raising=False)
    rc, out, _err = node.run(capsys)
    assert rc == 0 and node.updates() == [], out
    assert 'WARN cannot ask for the fabric manager: /nonexistent/nv-fabricmanager --version: ' in out


def test_the_tools_are_found_without_a_path(node, capsys, monkeypatch):
    """nv-fabricmanager by name, with no PATH at all (as slurmd runs the program): found in the usual directories."""
    node.create('h100-80gb-x8', **HGX)
    bin_dir = os.path.join(node.root, 'usr-local-bin')
    os.makedirs(bin_dir)
    os.symlink(FABRIC_MANAGER_STANDIN, os.path.join(bin_dir, 'nv-fabricmanager'))
    monkeypatch.setattr(program, 'SAFE_PATH', bin_dir + ':/usr/bin:/bin')
    monkeypatch.delenv('PATH', raising=False)
    node.configure(fabric_manager_bin='nv-fabricmanager', **HGX)
    rc, out, _err = node.run(capsys)
    assert (rc, out.strip()) == (0, 'gpucluster-healthcheck: healthy'), out
