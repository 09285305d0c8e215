# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_gres_facts against the project's NVML simulator (no mocks).

Each test builds a simulated node with ``nvmlsim create`` (a subprocess of
the simulator's own CLI) in a temporary ``NVMLSIM_STATE``/``NVMLSIM_ROOT``,
writes the CPU topology of that node under ``<root>/sys``, and runs the
module's ``main()`` with ``device_root`` pointing at the simulated root.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

import pynvml
from ansible_collections.gpucluster.bringup.plugins.modules import slurm_gres_facts
from ansible_collections.gpucluster.bringup.tests.unit.simnode import run_nvmlsim, use_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
SEED_003_CI_CAPS = [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]

SEED_003_LINES = [
    'Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15',
    'Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-15',
] + [
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia%d,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d Cores=16-31'
    % (2 if ci < 400 else 3, ci - 1, ci) for ci in SEED_003_CI_CAPS
]


class Node:
    """A simulated node in a temporary directory."""

    def __init__(self, tmp_path, monkeypatch):
        self.tmp = tmp_path
        self.state, self.root = use_node(tmp_path, monkeypatch)
        self.mig_minors = str(tmp_path / 'mig-minors')

    def sim(self, *args):
        return run_nvmlsim(*args, NVMLSIM_STATE=self.state, NVMLSIM_ROOT=self.root)

    def create(self, preset, *extra):
        self.sim('create', '--preset', preset, '--mig-minors', self.mig_minors, *extra)
        return self

    def cpu_topology(self, sockets, cores, threads):
        """sysfs topology numbered like Linux does: first threads of all cores, then the siblings."""
        per_thread = sockets * cores
        for cpu in range(per_thread * threads):
            directory = os.path.join(self.root, 'sys/devices/system/cpu/cpu%d/topology' % cpu)
            os.makedirs(directory)
            with open(os.path.join(directory, 'physical_package_id'), 'w') as handle:
                handle.write('%d\n' % ((cpu % per_thread) // cores))
            with open(os.path.join(directory, 'core_id'), 'w') as handle:
                handle.write('%d\n' % (cpu % cores))
        return self


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


def run_module(capsys, node, check_mode=False, **args):
    args.setdefault('device_root', node.root)
    args.setdefault('mig_minors_path', node.mig_minors)
    if check_mode:
        args['_ansible_check_mode'] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            slurm_gres_facts.main()
    return json.loads(capsys.readouterr().out)


def test_seed_003(node, capsys):
    node.create('seed-003').cpu_topology(2, 16, 2)
    result = run_module(capsys, node)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    facts = result['ansible_facts']['slurm_gres']
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14'
    assert facts['gres_types'] == 'gpu'
    assert facts['gres_conf_lines'] == SEED_003_LINES
    mig = [e for e in facts['entries'] if e['type'] == '1g.10gb']
    assert len(mig) == 14
    assert [e['mig']['ci_minor'] for e in mig] == SEED_003_CI_CAPS
    assert [e['mig']['gi_id'] for e in mig] == [7, 8, 9, 10, 11, 12, 13, 7, 8, 9, 11, 12, 13, 14]
    assert all(e['unique_id'].startswith('MIG-') for e in mig)
    whole = [e for e in facts['entries'] if e['type'] == 'a100']
    assert [(e['index'], e['files'], e['cores']) for e in whole] == [(0, ['/dev/nvidia0'], '0-15'), (1, ['/dev/nvidia1'], '0-15')]
    assert [e['index'] for e in mig] == list(range(2, 16))
    state = json.loads(node.sim('show', '--json'))
    assert facts['uuid_map']['0'] == state['gpus'][0]['uuid']
    assert facts['uuid_map']['2'] == mig[0]['unique_id']
    assert len(set(facts['uuid_map'].values())) == 16
    assert facts['uuid_map_content'].count('\n2 1g.10gb MIG-') == 1
    assert facts['nvml_plugin'] is None


def test_check_mode_gives_the_same_facts(node, capsys):
    node.create('seed-003').cpu_topology(2, 16, 2)
    normal = run_module(capsys, node)
    checked = run_module(capsys, node, check_mode=True)
    assert checked['ansible_facts'] == normal['ansible_facts']
    assert checked['changed'] is False


def test_check_mode_without_pynvml_is_skipped_with_the_reason(node, capsys, monkeypatch):
    """A dry run of a fresh node (issue 44): no facts, a skip that names the missing bindings and the stage that installs them;
    in a real run the same node fails as before."""
    node.create('seed-003')
    monkeypatch.setattr(slurm_gres_facts, 'pynvml', None)
    monkeypatch.setattr(slurm_gres_facts, 'PYNVML_IMPORT_ERROR', 'the Python NVML bindings cannot be imported by /usr/bin/python3')
    checked = run_module(capsys, node, check_mode=True)
    assert checked.get('skipped') is True and not checked.get('failed') and checked['changed'] is False, checked
    assert 'ansible_facts' not in checked
    assert checked['msg'] == ('check mode: the GPUs were not read: the Python NVML bindings cannot be imported by /usr/bin/python3. '
                              'In a real run the nvml stage (role gpucluster.bringup.nvml) installs them before this task')
    failed = run_module(capsys, node)
    assert failed['failed'] is True and failed['msg'].startswith('Failed to import the required Python library (nvidia-ml-py)'), failed


def test_seed_003_ci_only(node, capsys):
    node.create('seed-003')
    facts = run_module(capsys, node, mig_device_files='ci_only', cores=False)['ansible_facts']['slurm_gres']
    assert facts['gres_conf_lines'] == [
        'Name=gpu Type=a100 File=/dev/nvidia0',
        'Name=gpu Type=a100 File=/dev/nvidia1',
        'Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[337,346,355,364,373,382,391,472,481,490,508,517,526,535]',
    ]
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14'


def test_sharing_mps_on_seed_003(node, capsys):
    node.create('seed-003').cpu_topology(2, 16, 2)
    facts = run_module(capsys, node, mig_device_files='ci_only', sharing='mps')['ansible_facts']['slurm_gres']
    assert facts['gres_conf_lines'][-2:] == ['Name=mps Count=100 File=/dev/nvidia0', 'Name=mps Count=100 File=/dev/nvidia1']
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14,mps:200'
    assert facts['gres_types'] == 'gpu,mps'


def test_h100_node_without_mig(node, capsys):
    node.create('h100-80gb-x8').cpu_topology(2, 56, 2)
    facts = run_module(capsys, node, sharing='shard', shard_count=4)['ansible_facts']['slurm_gres']
    assert facts['node_gres'] == 'gpu:h100:8,shard:32'
    assert facts['gres_conf_lines'][0] == 'Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-55'
    assert facts['gres_conf_lines'][7] == 'Name=gpu Type=h100 File=/dev/nvidia7 Cores=56-111'
    assert facts['gres_conf_lines'][8:] == ['Name=shard Count=4 File=/dev/nvidia%d' % i for i in range(8)]


DOMAIN = '6d1e3f2a-9b1c-4c2e-8f00-1a2b3c4d5e6f'


@pytest.mark.parametrize('preset, setup, option, expected', [
    # an NVSwitch board whose fabric manager registered it in a multi-node NVLink domain
    ('h100-80gb-x8', ['fabric-domain', '--cluster-uuid', DOMAIN, '--clique', '7'], True, {'cluster_uuid': DOMAIN, 'clique_id': 7}),
    # the same, not asked for: not read
    ('h100-80gb-x8', ['fabric-domain', '--cluster-uuid', DOMAIN, '--clique', '7'], False, None),
    # a single-node HGX board: zeros, no domain
    ('h100-80gb-x8', None, True, None),
    # before Hopper: no fabric info at all
    ('a100-40gb-x8', None, True, None),
])
def test_nvlink_domain(node, capsys, preset, setup, option, expected):
    node.create(preset)
    if setup:
        node.sim(*setup)
    facts = run_module(capsys, node, cores=False, nvlink_domain=option)['ansible_facts']['slurm_gres']
    assert facts['nvlink_domain'] == expected


def test_nvlink_domain_is_none_while_the_fabric_manager_is_stopped(node, capsys):
    node.create('h100-80gb-x8').sim('fabric-domain', '--cluster-uuid', DOMAIN, '--clique', '7')
    node.sim('fabric-manager', '--state', 'stopped')
    facts = run_module(capsys, node, cores=False, nvlink_domain=True)['ansible_facts']['slurm_gres']
    assert facts['nvlink_domain'] is None
    node.sim('fabric-manager', '--state', 'running')
    facts = run_module(capsys, node, cores=False, nvlink_domain=True)['ansible_facts']['slurm_gres']
    assert facts['nvlink_domain'] == {'cluster_uuid': DOMAIN, 'clique_id': 7}


def test_type_map(node, capsys):
    node.create('seed-003')
    facts = run_module(capsys, node, cores=False, type_map={'A100 80GB PCIe': 'a100-80g'})['ansible_facts']['slurm_gres']
    assert facts['node_gres'] == 'gpu:a100-80g:2,gpu:1g.10gb:14'


def test_autodetect_nvml(node, capsys, tmp_path):
    node.create('seed-003')
    plugins = tmp_path / 'slurm'
    plugins.mkdir()
    (plugins / 'gpu_nvml.so').write_bytes(b'')
    facts = run_module(capsys, node, cores=False, autodetect='nvml',
                       slurm_plugin_dirs=[str(tmp_path / 'none'), str(plugins)])['ansible_facts']['slurm_gres']
    assert facts['gres_conf_lines'] == ['AutoDetect=nvml']
    assert facts['nvml_plugin'] == str(plugins / 'gpu_nvml.so')
    assert facts['uuid_map'] == {}


def run_module_process(node, **args):
    """Run the module file in its own Python (module warnings are only returned outside a controller process)."""
    args.setdefault('device_root', node.root)
    args.setdefault('mig_minors_path', node.mig_minors)
    args_file = node.tmp / 'args.json'
    args_file.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': args}))
    env = dict(os.environ, NVMLSIM_STATE=node.state, NVMLSIM_ROOT=node.root,
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, '.build', 'collections'), os.environ['GPUCLUSTER_TEST_PYNVML_DIR']]))
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', 'slurm_gres_facts.py'), str(args_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    return result.returncode, json.loads(result.stdout)


def test_pending_mig_mode_warns(node):
    node.create('seed-003')
    pynvml.nvmlInit()
    try:
        pynvml.nvmlDeviceSetMigMode(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.NVML_DEVICE_MIG_ENABLE)
    finally:
        pynvml.nvmlShutdown()
    rc, result = run_module_process(node, cores=False)
    assert rc == 0, result
    # ansible-core 2.19 returns warnings as structured summaries, older releases as strings
    warnings = [w['event']['msg'] if isinstance(w, dict) else w for w in result['warnings']]
    assert warnings == [
        'GPU 0 (NVIDIA A100 80GB PCIe, /dev/nvidia0) has a MIG mode change pending (now disabled, after reset enabled); '
        'the facts describe the current mode']
    assert result['ansible_facts']['slurm_gres']['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14'


def _failure(capsys, node, **args):
    result = run_module(capsys, node, **args)
    assert result['failed'] is True, result
    return result['msg']


def test_autodetect_without_plugin(node, capsys, tmp_path):
    node.create('seed-003')
    msg = _failure(capsys, node, cores=False, autodetect='nvml', slurm_plugin_dirs=[str(tmp_path / 'a'), str(tmp_path / 'b')])
    assert msg == ('autodetect nvml needs the Slurm gpu/nvml plugin (gpu_nvml.so), which is not in any of: %s, %s; install it (Debian: '
                   'the package slurm-wlm-nvml-plugin, in the contrib component; Ubuntu: the same package, in multiverse; SchedMD\'s '
                   'slurm-smd packages: in slurm-smd when built with nvml.h present; the RHEL family: a Slurm built with NVML) or use '
                   'autodetect: off' % (tmp_path / 'a', tmp_path / 'b'))


def test_shard_needs_a_count(node, capsys):
    node.create('seed-003')
    assert _failure(capsys, node, sharing='shard') == 'sharing is shard but all of the following are missing: shard_count'


def test_unreadable_mig_minors(node, capsys):
    node.create('seed-003')
    missing = str(node.tmp / 'nowhere' / 'mig-minors')
    assert _failure(capsys, node, cores=False, mig_minors_path=missing) == (
        'cannot read the MIG capability table %s: No such file or directory' % missing)


def test_malformed_mig_minors(node, capsys):
    node.create('seed-003')
    with open(node.mig_minors) as handle:
        lines = handle.read().splitlines()
    lines[2] = 'gpu0/gi0/access three'
    with open(node.mig_minors, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    assert _failure(capsys, node, cores=False) == (
        '%s line 3: minor "three" of "gpu0/gi0/access" is not a non-negative integer' % node.mig_minors)


def test_mig_instance_without_minor(node, capsys):
    node.create('seed-003')
    with open(node.mig_minors) as handle:
        lines = [line for line in handle.read().splitlines() if not line.startswith('gpu3/gi14/ci0/')]
    with open(node.mig_minors, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    assert _failure(capsys, node, cores=False) == (
        'MIG instance gpu3/gi14/ci0 has no compute-instance minor in %s: no line "gpu3/gi14/ci0/access <minor>"' % node.mig_minors)


def test_mig_mode_without_instances(node, capsys):
    node.create('a100-80gb-pcie-x4', '--auto-reset')
    pynvml.nvmlInit()
    try:
        pynvml.nvmlDeviceSetMigMode(pynvml.nvmlDeviceGetHandleByIndex(1), pynvml.NVML_DEVICE_MIG_ENABLE)
    finally:
        pynvml.nvmlShutdown()
    assert _failure(capsys, node, cores=False) == (
        'GPU 1 (NVIDIA A100 80GB PCIe, /dev/nvidia1) is in MIG mode but has no MIG instances; create instances first or disable MIG mode')


def test_gpu_vanishes(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetUUID', '--error', 'NVML_ERROR_GPU_IS_LOST', '--after', '1')
    assert _failure(capsys, node, cores=False) == (
        'GPU at NVML index 1 vanished while it was being read: nvmlDeviceGetUUID failed with "GPU is lost" after NVML counted 4 GPUs; '
        'check nvidia-smi and the kernel log (Xid 79), then run again')


def test_gpu_handle_gone(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetHandleByIndex', '--error', 'NVML_ERROR_NOT_FOUND', '--after', '3')
    assert _failure(capsys, node, cores=False) == (
        'GPU at NVML index 3 vanished while it was being read: nvmlDeviceGetHandleByIndex failed with "Not Found" after NVML counted '
        '4 GPUs; check nvidia-smi and the kernel log (Xid 79), then run again')


def test_mig_device_vanishes(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetComputeInstanceId', '--error', 'NVML_ERROR_NOT_FOUND', '--after', '8')
    assert _failure(capsys, node, cores=False) == (
        'MIG device 1 of the GPU at NVML index 3 vanished while it was being read: nvmlDeviceGetComputeInstanceId failed with '
        '"Not Found" after NVML counted 4 GPUs; check nvidia-smi and the kernel log (Xid 79), then run again')


def test_other_nvml_failure(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetMinorNumber', '--error', 'NVML_ERROR_NO_PERMISSION')
    assert _failure(capsys, node, cores=False) == (
        'NVML nvmlDeviceGetMinorNumber failed for the GPU at NVML index 0: Insufficient Permissions')


@pytest.mark.parametrize('call, error, after, message', [
    ('nvmlDeviceGetCount', 'NVML_ERROR_UNKNOWN', '0', 'NVML nvmlDeviceGetCount failed: Unknown Error'),
    ('nvmlDeviceGetMigDeviceHandleByIndex', 'NVML_ERROR_UNKNOWN', '2',
     'NVML nvmlDeviceGetMigDeviceHandleByIndex failed for the MIG device 2 of the GPU at NVML index 2: Unknown Error'),
    ('nvmlDeviceGetMaxMigDeviceCount', 'NVML_ERROR_NO_PERMISSION', '1',
     'NVML nvmlDeviceGetMaxMigDeviceCount failed for the GPU at NVML index 3: Insufficient Permissions'),
    ('nvmlDeviceGetMigMode', 'NVML_ERROR_UNKNOWN', '0', 'NVML nvmlDeviceGetMigMode failed for the GPU at NVML index 0: Unknown Error'),
    ('nvmlDeviceGetCpuAffinity', 'NVML_ERROR_UNKNOWN', '0', 'NVML nvmlDeviceGetCpuAffinity failed for the GPU at NVML index 0: Unknown Error'),
    ('nvmlDeviceGetGpuInstanceProfileInfo', 'NVML_ERROR_UNKNOWN', '0',
     'NVML nvmlDeviceGetGpuInstanceProfileInfo failed for the GPU at NVML index 2: Unknown Error'),
])
def test_nvml_call_failures(node, capsys, call, error, after, message):
    node.create('seed-003').cpu_topology(2, 16, 2)
    node.sim('inject', '--call', call, '--error', error, '--after', after)
    assert _failure(capsys, node) == message


def test_gpu_instance_profile_not_listed(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetGpuInstanceProfileInfo', '--error', 'NVML_ERROR_NOT_SUPPORTED', '--count', '0')
    assert _failure(capsys, node, cores=False) == (
        'GPU instance 7 of the GPU at NVML index 2 has profile id 19, which is not among the GPU-instance profiles NVML lists '
        'for this GPU (none)')


def test_cpu_affinity_not_supported(node, capsys):
    node.create('seed-003')
    node.sim('inject', '--call', 'nvmlDeviceGetCpuAffinity', '--error', 'NVML_ERROR_NOT_SUPPORTED', '--count', '0')
    facts = run_module(capsys, node)['ansible_facts']['slurm_gres']
    assert facts['gres_conf_lines'][0] == 'Name=gpu Type=a100 File=/dev/nvidia0'
    assert all(e['cores'] is None for e in facts['entries'])


def test_no_driver(node, capsys):
    os.makedirs(node.root)
    assert _failure(capsys, node, cores=False) == (
        'nvmlInit failed: Driver Not Loaded; is the NVIDIA driver loaded (nvidia-smi)?')


def test_missing_device_file(node, capsys):
    node.create('seed-003')
    os.unlink(os.path.join(node.root, 'dev/nvidia-caps/nvidia-cap337'))
    assert _failure(capsys, node, cores=False) == (
        'device files named by the GRES entries do not exist: /dev/nvidia-caps/nvidia-cap337')


def test_cores_without_cpu_topology(node, capsys):
    node.create('seed-003')
    assert _failure(capsys, node) == (
        'cannot map the CPUs of GPU 0 (NVIDIA A100 80GB PCIe, /dev/nvidia0) to cores: no CPU topology was read; '
        'set cores: false to leave Cores= out')


def test_cpu_outside_topology(node, capsys):
    # A one-socket host (CPUs 0-31) under a simulated GPU said to be local to CPUs 0-15,32-47.
    node.create('seed-003').cpu_topology(1, 16, 2)
    assert _failure(capsys, node) == (
        'GPU 0 (NVIDIA A100 80GB PCIe, /dev/nvidia0) is local to CPU 32, which the CPU topology does not list '
        '(known CPUs: 0-31); set cores: false to leave Cores= out')


def test_missing_pynvml(node, tmp_path):
    """Run the module file with a Python path that has no pynvml: the nvidia-ml-py hint."""
    args = tmp_path / 'args.json'
    args.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {}}))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, '.build', 'collections'))
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', 'slurm_gres_facts.py'), str(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    output = json.loads(result.stdout)
    assert result.returncode == 1
    assert output['failed'] is True
    assert output['msg'].startswith('Failed to import the required Python library (nvidia-ml-py) on ')


def test_gpu_instance_with_two_compute_instances(node, capsys):
    """Two CIs in one GI: each entry gets its own CI capability from the driver table, the GI's is shared."""
    node.create('a100-80gb-pcie-x4', '--auto-reset')
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
        profile = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE)
        gpu_instance = pynvml.nvmlDeviceCreateGpuInstance(handle, profile.id)
        ci_profile = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gpu_instance, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, ci_profile.id)
        pynvml.nvmlGpuInstanceCreateComputeInstance(gpu_instance, ci_profile.id)
    finally:
        pynvml.nvmlShutdown()
    minors = {}
    for line in open(node.mig_minors).read().splitlines():
        name, minor = line.split()
        minors[name] = int(minor)
    facts = run_module(capsys, node, cores=False)['ansible_facts']['slurm_gres']
    mig = [e for e in facts['entries'] if e['mig']]
    assert len(mig) == 2
    gi = mig[0]['mig']['gi_id']
    assert [e['mig']['gi_id'] for e in mig] == [gi, gi]
    assert sorted(e['mig']['ci_id'] for e in mig) == [0, 1]
    for entry in mig:
        ci = entry['mig']['ci_id']
        assert entry['mig']['gi_minor'] == minors['gpu0/gi%d/access' % gi]
        assert entry['mig']['ci_minor'] == minors['gpu0/gi%d/ci%d/access' % (gi, ci)]
        assert entry['files'] == ['/dev/nvidia0', '/dev/nvidia-caps/nvidia-cap%d' % minors['gpu0/gi%d/access' % gi],
                                  '/dev/nvidia-caps/nvidia-cap%d' % minors['gpu0/gi%d/ci%d/access' % (gi, ci)]]
    assert len(set(e['mig']['ci_minor'] for e in mig)) == 2
