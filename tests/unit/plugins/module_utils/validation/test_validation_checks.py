# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for the validation playbook's node, Slurm and MPI decisions (_validation_checks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc

# The shape of Slurm 22.05's `scontrol -o show node` lines (fields as src/api/node_info.c prints them).
LINE = ('NodeName={name} Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.31 AvailableFeatures=(null) '
        'ActiveFeatures=(null) Gres=gpu:h100:8 NodeAddr={name} NodeHostName={name} Version=22.05.8 '
        'OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)  RealMemory=1000 AllocMem=0 FreeMem=2000 '
        'Sockets=2 Boards=1 State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batch '
        'BootTime=2026-11-21T05:00:00 SlurmdStartTime=2026-11-21T06:00:00 LastBusyTime=2026-11-21T06:10:00 '
        'CfgTRES=cpu=2,mem=1000M,billing=2,gres/gpu=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 '
        'ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s{reason}')


def line(name='gpu-01', state='IDLE', reason=''):
    return LINE.format(name=name, state=state, reason=reason)


@pytest.mark.parametrize('text, name, state, flags, reason, user', [
    (line(), 'gpu-01', 'IDLE', [], '', ''),
    (line(state='IDLE+DRAIN', reason=' Reason=prolog hook 95-all-rootless failed (exit 1) [root@2026-11-21T06:12:01]'),
     'gpu-01', 'IDLE', ['DRAIN'], 'prolog hook 95-all-rootless failed (exit 1)', 'root'),
    (line(state='DOWN+NOT_RESPONDING', reason=' Reason=Not responding [slurm@2026-11-21T06:12:01]'),
     'gpu-01', 'DOWN', ['NOT_RESPONDING'], 'Not responding', 'slurm'),
    (line(state='IDLE+DRAIN+INVALID_REG', reason=' Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2026-11-21T06:12:01]'),
     'gpu-01', 'IDLE', ['DRAIN', 'INVALID_REG'], 'gres/gpu count reported lower than configured (7 < 8)', 'slurm'),
    (line(state='MIXED+DRAIN', reason=' Reason=Prolog error [root@2026-11-21T06:12:01] Comment=x'),
     'gpu-01', 'MIXED', ['DRAIN'], 'Prolog error', 'root'),
    (line(state='IDLE+DRAIN', reason=' Reason=disk replacement'), 'gpu-01', 'IDLE', ['DRAIN'], 'disk replacement', ''),
])
def test_parse_scontrol_nodes(text, name, state, flags, reason, user):
    node = vc.parse_scontrol_nodes('\n' + text + '\n')[name]
    assert (node['state'], node['flags'], node['reason'], node['reason_user']) == (state, flags, reason, user)


def test_parse_scontrol_nodes_several_and_bad():
    nodes = vc.parse_scontrol_nodes(line('gpu-01') + '\n' + line('gpu-02', 'ALLOCATED') + '\n')
    assert sorted(nodes) == ['gpu-01', 'gpu-02'] and nodes['gpu-02']['state'] == 'ALLOCATED'
    with pytest.raises(ValueError, match=r'scontrol line for gpu-09 has no State=: .* \(line 2\)$'):
        vc.parse_scontrol_nodes('\nNodeName=gpu-09 Arch=x86_64\n')


@pytest.mark.parametrize('state, reason, status, text', [
    ('IDLE', '', 'pass', 'node is IDLE'),
    ('ALLOCATED', '', 'pass', 'node is ALLOCATED'),
    ('IDLE+DRAIN', ' Reason=validate: node/gres_conf: x [root@2026-11-21T06:12:01]', 'fail',
     'node is IDLE+DRAIN (reason: "validate: node/gres_conf: x" set by root)'),
    ('DOWN', '', 'fail', 'node is DOWN (no reason given)'),
    ('IDLE+NOT_RESPONDING', '', 'fail', 'node is IDLE+NOT_RESPONDING (no reason given)'),
    ('IDLE+COMPLETING', '', 'pass', 'node is IDLE+COMPLETING'),
])
def test_node_state_record(state, reason, status, text):
    rec = vc.node_state_record('node', 'gpu-01', vc.parse_scontrol_nodes(line(state=state, reason=reason)))
    assert (rec['status'], rec['reason']) == (status, text)


@pytest.mark.parametrize('state, reason, held', [
    ('IDLE+DRAIN', ' Reason=disk replacement [root@2026-11-21T06:12:01]', 'admin'),
    ('DOWN', ' Reason=admin: DIMM replacement, keep down [root@2026-11-21T06:12:01]', 'admin'),
    ('IDLE+DRAIN', ' Reason=validate: node/gres_conf: x [root@2026-11-21T06:12:01]', None),
    ('IDLE+DRAIN', ' Reason=gpuhc:periodic:xid: Xid 79 on GPU 0 [root@2026-11-21T06:12:01]', None),
    ('IDLE+DRAIN', ' Reason=Kill task failed [slurm@2026-11-21T06:12:01]', None),
    # the closed loop's drain is its state: never drained over either
    ('IDLE+DRAIN', ' Reason=gpuloop:reboot:xid-79: GPU 3 had Xid 79 [root@2026-11-21T06:12:01]', 'loop'),
    ('DOWN+NOT_RESPONDING', ' Reason=Not responding [slurm@2026-11-21T06:12:01]', None),
    ('DOWN', '', None),
    ('IDLE', '', None),
])
def test_node_state_record_marks_a_state_an_admin_set(state, reason, held):
    rec = vc.node_state_record('node', 'gpu-01', vc.parse_scontrol_nodes(line(state=state, reason=reason)))
    assert rec.get('held') == held, rec


def test_drain_reasons_leave_an_admins_node_alone():
    """A node an admin drained keeps the admin's reason: no validate: drain over it, whatever else failed there."""
    held = vc.node_state_record('node', 'gpu-02', vc.parse_scontrol_nodes(line('gpu-02', state='IDLE+DRAIN', reason=' Reason=disk swap')))
    records = RECORDS + [held, {'stage': 'node', 'node': 'gpu-02', 'check': 'gres_conf', 'status': 'fail', 'reason': 'differs'}]
    assert held['held'] == 'admin'
    assert vc.drain_reasons(records, ['gpu-01', 'gpu-02', 'gpu-03']) == {'gpu-01': "validate: node/gres_conf: gres.conf 'x' differs"}


def test_drain_reasons_leave_a_closed_loop_node_alone():
    drained = line('gpu-02', state='IDLE+DRAIN', reason=' Reason=gpuloop:service:xid-79: 3 reboots in 86400s')
    held = vc.node_state_record('node', 'gpu-02', vc.parse_scontrol_nodes(drained))
    records = RECORDS + [held, {'stage': 'node', 'node': 'gpu-02', 'check': 'gres_conf', 'status': 'fail', 'reason': 'differs'}]
    assert held['held'] == 'loop'
    assert vc.drain_reasons(records, ['gpu-01', 'gpu-02', 'gpu-03']) == {'gpu-01': "validate: node/gres_conf: gres.conf 'x' differs"}


def test_node_state_unknown_node():
    rec = vc.node_state_record('node', 'gpu-07', vc.parse_scontrol_nodes(line('gpu-01')))
    assert rec['status'] == 'fail'
    assert rec['reason'] == 'Slurm does not know a node called gpu-07 (scontrol show node lists: gpu-01)'


EXPECTED = ['Name=gpu Type=h100 File=/dev/nvidia0 Cores=0', 'Name=gpu Type=h100 File=/dev/nvidia1 Cores=0']
HEADER = '# Managed by gpucluster.bringup.slurm from slurm_gres_facts; local changes are overwritten.\n'


@pytest.mark.parametrize('text, status, reason', [
    (HEADER + '\n'.join(EXPECTED) + '\n', 'pass', '/etc/slurm/gres.conf equals what slurm_gres_facts computes (2 line(s))'),
    ('Name=gpu  Type=h100   File=/dev/nvidia0 Cores=0\nName=gpu Type=h100 File=/dev/nvidia1 Cores=0  # x\n', 'pass',
     '/etc/slurm/gres.conf equals what slurm_gres_facts computes (2 line(s))'),
    (HEADER + EXPECTED[0] + '\n', 'fail',
     '/etc/slurm/gres.conf differs from what slurm_gres_facts computes now: gpu:h100: 1 in /etc/slurm/gres.conf, 2 computed from NVML; '
     'missing line "Name=gpu Type=h100 File=/dev/nvidia1 Cores=0"'),
    ('Name=gpu Type=h100 File=/dev/nvidia[0-2]\n', 'fail',
     '/etc/slurm/gres.conf differs from what slurm_gres_facts computes now: gpu:h100: 3 in /etc/slurm/gres.conf, 2 computed from NVML; '
     'missing line "Name=gpu Type=h100 File=/dev/nvidia0 Cores=0" (+1 more); unexpected line "Name=gpu Type=h100 File=/dev/nvidia[0-2]"'),
    ('\n'.join(reversed(EXPECTED)), 'fail', '/etc/slurm/gres.conf differs from what slurm_gres_facts computes now: same lines in a different order'),
    (None, 'fail', '/etc/slurm/gres.conf is missing or unreadable; slurm_gres_facts computes 2 line(s)'),
])
def test_gres_conf_record(text, status, reason):
    rec = vc.gres_conf_record('node', 'gpu-01', '/etc/slurm/gres.conf', text, EXPECTED)
    assert (rec['status'], rec['reason']) == (status, reason)


GOOD = {
    'nvml_error': None,
    'gpus': [{'index': i, 'name': 'NVIDIA H100 80GB HBM3'} for i in range(8)],
    'mig': {'actions': [], 'reset_required': []},
    'gres_conf': {'path': '/etc/slurm/gres.conf', 'text': '\n'.join(EXPECTED), 'expected': EXPECTED},
    'munge': {'rc': 0, 'output': 'STATUS:          Success (0)\nENCODE_HOST: gpu-01\n'},
    'services': {'munge': 'active', 'slurmd': 'active'},
    'scontrol': line(),
    'enroot': {'rc': 0, 'output': '3.5.0', 'conf_present': True, 'conf_path': '/etc/enroot/enroot.conf'},
    'pyxis': {'rc': 0, 'output': 'Usage: srun ...\n      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n'},
}
EXPECT = {'gpu_count': 8, 'gpu_models': ['H100'], 'enroot': True, 'pyxis': True}


def statuses(records):
    return dict((r['check'], r['status']) for r in records)


def test_node_records_all_pass():
    records = vc.node_records('gpu-01', GOOD, EXPECT)
    assert [r['check'] for r in records] == list(vc.NODE_CHECKS)
    assert set(statuses(records).values()) == {'pass'}, records


@pytest.mark.parametrize('change, expect_change, check, reason', [
    ({'nvml_error': 'NVML_ERROR_DRIVER_NOT_LOADED: Driver Not Loaded'}, {}, 'nvml', 'NVML does not answer: NVML_ERROR_DRIVER_NOT_LOADED: Driver Not Loaded'),
    ({'gpus': GOOD['gpus'][:7]}, {}, 'gpu_count', 'NVML sees 7 GPU(s), expected 8'),
    ({}, {'gpu_models': ['A100']}, 'gpu_models',
     'GPU 0 is NVIDIA H100 80GB HBM3; GPU 1 is NVIDIA H100 80GB HBM3; GPU 2 is NVIDIA H100 80GB HBM3; GPU 3 is NVIDIA H100 80GB HBM3; '
     'GPU 4 is NVIDIA H100 80GB HBM3; GPU 5 is NVIDIA H100 80GB HBM3; GPU 6 is NVIDIA H100 80GB HBM3; GPU 7 is NVIDIA H100 80GB HBM3; expected A100'),
    ({'mig': {'actions': ['GPU 0: destroy GPU instance 9 (1g.10gb at 2:1)'], 'reset_required': []}}, {}, 'mig_layout',
     'MIG layout differs from the wanted one; nvidia_mig would: GPU 0: destroy GPU instance 9 (1g.10gb at 2:1)'),
    ({'mig': {'actions': [], 'reset_required': [3]}}, {}, 'mig_layout', 'MIG mode change pending a GPU reset on GPU(s) 3'),
    ({'mig': {'error': 'GPU 0 is a NVIDIA H100, no profile 1g.5gb'}}, {}, 'mig_layout',
     'the wanted MIG layout could not be compared: GPU 0 is a NVIDIA H100, no profile 1g.5gb'),
    ({'gres_conf': {'path': '/etc/slurm/gres.conf', 'error': 'device file /dev/nvidia3 is missing'}}, {}, 'gres_conf',
     'slurm_gres_facts could not compute the GRES to compare /etc/slurm/gres.conf with: device file /dev/nvidia3 is missing'),
    ({'munge': {'rc': 1, 'output': 'unmunge: Error: Invalid credential'}}, {}, 'munge', 'munge -n | unmunge failed (rc 1): unmunge: Error: Invalid credential'),
    ({'services': {'munge': 'failed', 'slurmd': 'active'}}, {}, 'munge', 'munge is failed'),
    ({'services': {'munge': 'active', 'slurmd': 'inactive'}}, {}, 'slurmd', 'slurmd is inactive'),
    ({'scontrol': line(state='IDLE+DRAIN', reason=' Reason=Prolog error [root@2026-11-21T06:12:01]')}, {}, 'node_state',
     'node is IDLE+DRAIN (reason: "Prolog error" set by root)'),
    ({'scontrol': '', 'scontrol_error': 'slurm_load_node error: Unable to contact slurm controller'}, {}, 'node_state',
     'scontrol show node gpu-01 failed: slurm_load_node error: Unable to contact slurm controller'),
    ({'enroot': {'rc': None, 'conf_path': '/etc/enroot/enroot.conf'}}, {}, 'enroot', 'enroot is not installed (no enroot command in PATH)'),
    ({'enroot': {'rc': 0, 'output': '3.5.0', 'conf_present': False, 'conf_path': '/etc/enroot/enroot.conf'}}, {}, 'enroot',
     'enroot 3.5.0 is installed but /etc/enroot/enroot.conf is missing'),
    ({'enroot': {'rc': 2, 'output': 'enroot: bad', 'conf_present': True, 'conf_path': '/etc/enroot/enroot.conf'}}, {}, 'enroot',
     'enroot version failed (rc 2): enroot: bad'),
    ({'pyxis': {'rc': 0, 'output': 'Usage: srun [OPTIONS(0)...]'}}, {}, 'pyxis', 'pyxis is not loaded: srun --help does not list --container-image'),
    ({'pyxis': {'rc': 1, 'output': 'srun: error: spank: spank_pyxis.so: Incompatible plugin version'}}, {}, 'pyxis',
     'pyxis is not loaded: srun --help does not list --container-image (srun said: srun: error: spank: spank_pyxis.so: Incompatible plugin version)'),
    ({'pyxis': {'rc': None}}, {}, 'pyxis', 'srun is not installed on this node, cannot tell whether pyxis loads'),
])
def test_node_records_failures(change, expect_change, check, reason):
    observed = dict(GOOD, **change)
    expect = dict(EXPECT, **expect_change)
    records = vc.node_records('gpu-01', observed, expect)
    failed = [r for r in records if r['status'] == 'fail']
    assert [r['check'] for r in failed] == [check], records
    assert failed[0]['reason'] == reason


def test_node_records_nvml_down_skips_gpu_checks():
    records = vc.node_records('gpu-01', dict(GOOD, nvml_error='boom', gpus=None), EXPECT)
    got = statuses(records)
    assert got['nvml'] == 'fail'
    assert got['gpu_count'] == got['gpu_models'] == got['mig_layout'] == 'skip'


def test_node_records_skips_what_is_not_asked():
    records = vc.node_records('ctl', {'services': {'munge': 'active'}}, {})
    got = statuses(records)
    assert got == {'nvml': 'skip', 'gpu_count': 'skip', 'gpu_models': 'skip', 'mig_layout': 'skip', 'gres_conf': 'skip', 'munge': 'pass',
                   'slurmd': 'skip', 'node_state': 'skip', 'enroot': 'skip', 'pyxis': 'skip'}


@pytest.mark.parametrize('expect, message', [
    ({'gpu_count': -1}, 'gpu_count is -1, expected a whole number of at least 0'),
    ({'gpu_count': True}, 'gpu_count is True, expected a whole number of at least 0'),
    ({'gpu_models': 'H100'}, "gpu_models is 'H100', expected a list"),
    ({'gpu_models': ['H100', '']}, "gpu_models[1] is '', expected a non-empty string"),
    ({'gpus': 8}, 'unknown node check expectation(s) gpus; valid: gpu_count, gpu_models, enroot, pyxis, container_gpu, gres_conf_path, node_name'),
])
def test_node_records_bad_expectations(expect, message):
    with pytest.raises(ValueError) as err:
        vc.node_records('gpu-01', GOOD, expect)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize('result, status, reason', [
    ({'rc': 0, 'stdout': 'gpu-01\n'}, 'pass', 'srun -w gpu-01 ran on gpu-01'),
    ({'rc': 0, 'stdout': 'gpu-02\n'}, 'fail', 'srun -w gpu-01 ran on "gpu-02"'),
    ({'rc': 1, 'stdout': '', 'stderr': 'srun: Required node not available (down, drained or reserved)\nsrun: job 5 queued and waiting'},
     'fail', 'srun -w gpu-01 failed (rc 1): srun: Required node not available (down, drained or reserved)'),
    ({'rc': None, 'timed_out': True, 'timeout': 60, 'stdout': ''}, 'fail', 'srun -w gpu-01 timed out after 60s'),
])
def test_srun_record(result, status, reason):
    rec = vc.srun_record('gpu-01', result)
    assert (rec['status'], rec['reason']) == (status, reason)


@pytest.mark.parametrize('stdout, gpus, status, reason', [
    ('CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\nSLURM_STEP_GPUS=0,1,2,3,4,5,6,7\nMISSING=\n', 8, 'pass',
     'a --gres=gpu:8 job sees 8 device(s): CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7'),
    ('CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6\nMISSING=\n', 8, 'fail', 'a --gres=gpu:8 job sees CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 (7 device(s)), expected 8'),
    ('MISSING=\n', 2, 'fail', 'a --gres=gpu:2 job sees CUDA_VISIBLE_DEVICES=<unset> (0 device(s)), expected 2'),
    (' 0: CUDA_VISIBLE_DEVICES=MIG-0e7b2c7a-3f4d-5a8e-9b6c-1d2e3f4a5b6c\n 0: SLURM_STEP_GPUS=2\n', 1, 'pass',
     'a --gres=gpu:1 job sees 1 device(s): CUDA_VISIBLE_DEVICES=MIG-0e7b2c7a-3f4d-5a8e-9b6c-1d2e3f4a5b6c'),
])
def test_gres_job_record(stdout, gpus, status, reason):
    rec = vc.gres_job_record('gpu-01', {'rc': 0, 'stdout': stdout}, gpus)
    assert (rec['status'], rec['reason']) == (status, reason)


def test_gres_job_record_failed_job_and_no_gpus():
    rec = vc.gres_job_record('gpu-01', {'rc': 1, 'stderr': 'srun: error: Unable to allocate resources: Requested node configuration is not available'}, 8)
    assert rec['reason'] == ('srun --gres=gpu:8 -w gpu-01 failed (rc 1): srun: error: Unable to allocate resources: '
                             'Requested node configuration is not available')
    assert vc.gres_job_record('ctl', {}, 0)['status'] == 'skip'


def test_container_record():
    assert vc.container_record('gpu-01', {}, None)['reason'] == 'not checked: no container image given (validate_jobs.container_image)'
    assert vc.container_record('gpu-01', {'rc': 0}, 'alpine.sqsh')['status'] == 'pass'
    rec = vc.container_record('gpu-01', {'rc': 1, 'stderr': 'pyxis: failed to import docker image'}, 'alpine')
    assert rec['reason'] == 'srun --container-image=alpine -w gpu-01 failed (rc 1): pyxis: failed to import docker image'


@pytest.mark.parametrize('text, types, chosen', [
    # Debian 12 slurm-client 22.05.8-4+deb12u3, `srun --mpi=list`, as printed
    ('MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n',
     ['pmix', 'none', 'cray_shasta', 'pmi2', 'pmix_v4'], 'pmix'),
    ('srun: MPI types are...\nsrun: cray_shasta\nsrun: none\nsrun: pmi2\nsrun: pmix\nsrun: pmix_v4\n',
     ['cray_shasta', 'none', 'pmi2', 'pmix', 'pmix_v4'], 'pmix'),
    ('MPI plugin types are...\n\tnone\n\tpmi2\n\tcray_shasta\n', ['none', 'pmi2', 'cray_shasta'], 'pmi2'),
    ('srun: MPI types are...\nsrun: none\n', ['none'], None),
    ('srun: MPI types are...\nsrun: none\nsrun: pmix_v3\nspecific pmix plugin versions available: pmix_v3\n', ['none', 'pmix_v3'], 'pmix_v3'),
])
def test_mpi_list(text, types, chosen):
    assert vc.parse_mpi_list(text) == types
    assert vc.choose_mpi_plugin(types) == chosen


def test_choose_mpi_plugin_wanted():
    assert vc.choose_mpi_plugin(['none', 'pmi2'], 'pmi2') == 'pmi2'
    with pytest.raises(ValueError, match=r"^srun offers no MPI plugin 'pmix'; it offers: none, pmi2$"):
        vc.choose_mpi_plugin(['none', 'pmi2'], 'pmix')


HELLO_OK = 'mpi_hello rank 0 of 2 on gpu-01\nmpi_hello rank 1 of 2 on gpu-02\n'
HELLO_SINGLETONS = 'mpi_hello rank 0 of 1 on gpu-01\nmpi_hello rank 0 of 1 on gpu-02\n'
ORTE = ('[gpu-01:01234] [[INVALID],INVALID] ORTE_ERROR_LOG: Not found in file ess_hnp_module.c at line 320\n'
        '  orte_ess_init failed\n  --> Returned value Not found (-13) instead of ORTE_SUCCESS\n')


@pytest.mark.parametrize('path, result, required, status, reason', [
    ('srun_pmi', {'rc': 0, 'stdout': HELLO_OK}, [], 'pass', 'srun --mpi=pmix: 2 ranks in one world on gpu-01, gpu-02'),
    ('srun_pmi', {'rc': 0, 'stdout': ' 0: mpi_hello rank 0 of 2 on gpu-01\n 1: mpi_hello rank 1 of 2 on gpu-02\n'}, [], 'pass',
     'srun --mpi=pmix: 2 ranks in one world on gpu-01, gpu-02'),
    ('srun_plain', {'rc': 1, 'stdout': '', 'stderr': ORTE}, [], 'skip',
     'FAILING, not required (validate_mpi_settings.required_paths): srun --mpi=pmix failed (rc 1): '
     '[gpu-01:01234] [[INVALID],INVALID] ORTE_ERROR_LOG: Not found in file ess_hnp_module.c at line 320 -- '
     'the MPI library found no PMI server: srun launched it without PMI support (use srun --mpi=pmix or pmi2)'),
    ('srun_plain', {'rc': 1, 'stdout': '', 'stderr': ORTE}, ['srun_plain'], 'fail',
     'srun --mpi=pmix failed (rc 1): [gpu-01:01234] [[INVALID],INVALID] ORTE_ERROR_LOG: Not found in file ess_hnp_module.c at line 320 -- '
     'the MPI library found no PMI server: srun launched it without PMI support (use srun --mpi=pmix or pmi2)'),
    ('srun_plain', {'rc': 0, 'stdout': HELLO_SINGLETONS}, ['srun_plain'], 'fail',
     'srun --mpi=pmix: each of the 2 tasks started as its own 1-rank world (no PMI wiring between srun and MPI)'),
    ('mpirun', {'rc': 0, 'stdout': 'mpi_hello rank 0 of 2 on gpu-01\n'}, ['mpirun'], 'fail', 'srun --mpi=pmix: 1 of 2 ranks reported (world size 2)'),
    ('mpirun', {'rc': 1, 'stderr': 'mpirun has detected an attempt to run as root.\nRunning as root is *strongly* discouraged'}, ['mpirun'], 'fail',
     'srun --mpi=pmix failed (rc 1): Running as root is *strongly* discouraged -- mpirun refuses to run as root'),
    ('pyxis', {'skipped': True, 'reason': 'no container image given'}, [], 'skip', 'srun --mpi=pmix: no container image given'),
    ('pyxis', {'skipped': True, 'reason': 'no container image given'}, ['pyxis'], 'fail', 'srun --mpi=pmix: no container image given'),
])
def test_mpi_record(path, result, required, status, reason):
    rec = vc.mpi_record(path, 'srun --mpi=pmix', result, 2, ['gpu-01', 'gpu-02'], required)
    assert (rec['status'], rec['reason']) == (status, reason)
    assert rec['hosts'] == ['gpu-01', 'gpu-02'] and rec['node'] == path


def test_mpi_record_bad_path():
    with pytest.raises(ValueError, match=r"^unknown MPI path 'srun'; valid paths: srun_pmi, srun_plain, mpirun, pyxis$"):
        vc.mpi_record('srun', 'x', {}, 2, ['a'], [])


@pytest.mark.parametrize('env, expected', [
    ({'OMPI_MCA_pml': '^ucx', 'NCCL_SOCKET_IFNAME': 'ens'}, [
        'job sets OMPI_MCA_pml=^ucx, which keeps Open MPI off UCX (seed 002: srun + pyxis with OMPI_MCA_pml=^ucx ran all_reduce at half '
        'the mpirun bandwidth)']),
    ('0: PATH=/usr/bin\n0: NCCL_IB_DISABLE=1\n0: NCCL_NET=Socket\n', [
        'job sets NCCL_IB_DISABLE=1, which turns InfiniBand off for NCCL (sockets only)', 'job sets NCCL_NET=Socket, which forces NCCL onto TCP sockets']),
    ({'OMPI_MCA_pml': 'ucx', 'NCCL_IB_DISABLE': '0', 'NCCL_DEBUG': 'INFO'}, []),
    ({'NCCL_P2P_DISABLE': '1', 'NCCL_SHM_DISABLE': '1', 'OMPI_MCA_btl': 'tcp,self', 'NCCL_DEBUG': 'TRACE'}, [
        'job sets OMPI_MCA_btl=tcp,self, which limits Open MPI to TCP',
        'job sets NCCL_P2P_DISABLE=1, which turns NVLink/PCIe peer-to-peer off for NCCL',
        'job sets NCCL_SHM_DISABLE=1, which turns shared-memory transport off for NCCL',
        'job sets NCCL_DEBUG=TRACE, which NCCL_DEBUG=TRACE logs every call and slows collectives']),
])
def test_slow_env_warnings(env, expected):
    assert vc.slow_env_warnings(env, 'job') == expected


RECORDS = [
    {'stage': 'node', 'node': 'gpu-01', 'check': 'gres_conf', 'status': 'fail', 'reason': 'gres.conf "x" differs'},
    {'stage': 'node', 'node': 'gpu-01', 'check': 'munge', 'status': 'fail', 'reason': 'munge is failed'},
    {'stage': 'nccl', 'node': 'fabric', 'check': 'busbw', 'status': 'fail', 'reason': 'low', 'hosts': ['gpu-01', 'gpu-02']},
    {'stage': 'nccl', 'node': 'gpu-02', 'check': 'wrong', 'status': 'fail', 'reason': '#wrong > 0', 'hosts': ['gpu-02']},
    {'stage': 'node', 'node': 'ctl', 'check': 'munge', 'status': 'fail', 'reason': 'munge is failed'},
    {'stage': 'node', 'node': 'gpu-03', 'check': 'munge', 'status': 'pass', 'reason': 'ok'},
]


def test_drain_reasons():
    assert vc.drain_reasons(RECORDS, ['gpu-01', 'gpu-02', 'gpu-03']) == {
        'gpu-01': "validate: node/gres_conf: gres.conf 'x' differs",
        'gpu-02': 'validate: nccl/wrong: #wrong > 0',
    }
    long = [{'stage': 'node', 'node': 'a', 'check': 'c', 'status': 'fail', 'reason': 'x' * 400}]
    assert len(vc.drain_reasons(long, ['a'])['a']) == 200


def test_missing_node_records():
    got = vc.missing_node_records(RECORDS, ['gpu-01', 'gpu-04'])
    assert got == [{'stage': 'node', 'node': 'gpu-04', 'check': 'reachable', 'status': 'fail',
                    'reason': 'no node check results from gpu-04: the host was unreachable or its tasks failed'}]


def test_slurm_jobs():
    jobs = vc.slurm_jobs({'nodes': [{'name': 'gpu-01', 'gpus': 8, 'mig': False}, {'name': 'ctl2', 'gpus': 0}], 'pyxis': True,
                          'container_image': '/srv/alpine.sqsh', 'env': {'OMPI_MCA_pml': '^ucx'}, 'partition': 'batch'})
    assert [(j['name'], j['kind'], j.get('round')) for j in jobs] == [
        ('gpu-01', 'srun', 0), ('gpu-01/gres', 'gres', 1), ('gpu-01/container', 'container', 2), ('ctl2', 'srun', 0),
        ('ctl2/container', 'container', 2), ('job-environment', 'env', 0)]
    assert jobs[0]['argv'] == ['srun', '--nodes=1', '--ntasks=1', '--nodelist=gpu-01', '--time=2', '--export=ALL,OMPI_MCA_pml=^ucx',
                               '--partition=batch', '--job-name=validate-srun', 'hostname']
    assert jobs[1]['argv'][-4:-2] == ['--gres=gpu:8', 'sh'] and jobs[1]['argv'][-1] == vc.GRES_PROBE and jobs[1]['gpus'] == 8
    assert '--container-image=/srv/alpine.sqsh' in jobs[2]['argv']
    no_image = vc.slurm_jobs({'nodes': [{'name': 'n', 'gpus': 1, 'mig': True}], 'pyxis': True})
    assert no_image[2] == {'name': 'n/container', 'kind': 'skip', 'check': 'container_job',
                           'reason': 'not checked: no container image given (validate_jobs.container_image)'}
    assert vc.slurm_jobs({'nodes': [{'name': 'n'}]})[1]['reason'] == 'not checked: pyxis not expected (validate_node.pyxis is false)'


@pytest.mark.parametrize('plan, message', [
    ({'nodes': []}, 'Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got []'),
    ({'nodes': [{'name': 'n'}], 'image': 'x'}, 'unknown Slurm plan key(s) image; valid keys: nodes, srun, partition'),
    ({'nodes': [{'name': 'n'}], 'env': {'A-B': '1'}}, "env key is 'A-B', expected an environment variable name"),
    ('gpu-01', "the Slurm plan must be a dict with keys nodes, srun"),
])
def test_slurm_jobs_errors(plan, message):
    with pytest.raises(ValueError) as err:
        vc.slurm_jobs(plan)
    assert str(err.value).startswith(message)


def test_mpi_jobs():
    jobs = vc.mpi_jobs({'nodes': ['gpu-01', 'gpu-02'], 'binary': '/var/lib/gpucluster-validate/mpi_hello', 'mpirun_args': ['--mca', 'btl', '^openib']})
    assert [(j['name'], j['kind'], j.get('round')) for j in jobs] == [
        ('srun_pmi', 'mpi', 0), ('srun_plain', 'skip', None), ('mpirun', 'mpi', 2), ('pyxis', 'skip', None)]
    assert jobs[1]['reason'] == ('not run: the srun path without PMI runs only when asked (validate_mpi_settings.no_pmi_path); '
                                 'Open MPI then fails with orte_ess_init failed or hangs until its timeout')
    assert jobs[0]['argv'] == ['srun', '--nodes=2', '--nodelist=gpu-01,gpu-02', '--ntasks-per-node=1', '--time=2', '--export=ALL',
                               '--job-name=validate-mpi', '--mpi={mpi}', '/var/lib/gpucluster-validate/mpi_hello']
    assert jobs[2]['argv'] == ['salloc', '--nodes=2', '--nodelist=gpu-01,gpu-02', '--ntasks-per-node=1', '--time=2', '--job-name=validate-mpi',
                               'mpirun', '--mca', 'btl', '^openib', '/var/lib/gpucluster-validate/mpi_hello']
    assert jobs[2]['env'] == {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'}
    assert all(j.get('ranks') == 2 and j.get('hosts') == ['gpu-01', 'gpu-02'] for j in jobs)
    plain = vc.mpi_jobs({'nodes': ['a'], 'binary': '/v/mpi_hello', 'no_pmi_path': True, 'timeout': 180})[1]
    assert (plain['kind'], plain['round'], plain['timeout'], plain['argv'][-2:]) == ('mpi', 1, vc.NO_PMI_TIMEOUT, ['--mpi=none', '/v/mpi_hello'])
    assert vc.mpi_jobs({'nodes': ['a'], 'binary': 'b', 'no_pmi_path': True, 'timeout': 30})[1]['timeout'] == 30
    assert vc.mpi_jobs({'nodes': ['a'], 'binary': 'b', 'no_pmi_path': True, 'no_pmi_timeout': 20})[1]['timeout'] == 20
    with_image = vc.mpi_jobs({'nodes': ['a'], 'binary': '/v/mpi_hello', 'container_image': 'openmpi.sqsh'})
    assert with_image[3]['argv'][-3:] == ['--container-image=openmpi.sqsh', '--container-mounts=/v:/v', '/v/mpi_hello']
    skipped = vc.mpi_jobs({'nodes': ['a'], 'binary': '/v/mpi_hello', 'skip_reason': 'no MPI compiler (mpicc) on a'})
    assert [(j['kind'], j['reason']) for j in skipped] == [('skip', 'no MPI compiler (mpicc) on a')] * 4
    assert vc.mpi_jobs({'nodes': [], 'binary': 'x'})[0]['reason'] == 'no MPI program: no node can run it'
    with pytest.raises(ValueError, match=r'^unknown MPI plan key\(s\) ranks; valid keys: nodes, binary'):
        vc.mpi_jobs({'ranks': 2})


def test_slurm_jobs_skip_nodes_that_cannot_take_jobs():
    jobs = vc.slurm_jobs({'nodes': [{'name': 'gpu-01', 'gpus': 8, 'usable': False}, {'name': 'gpu-02', 'gpus': 8, 'usable': True}]})
    assert [(j['name'], j['kind']) for j in jobs] == [
        ('gpu-01', 'skip'), ('gpu-01/gres', 'skip'), ('gpu-01/container', 'skip'), ('gpu-02', 'srun'), ('gpu-02/gres', 'gres'),
        ('gpu-02/container', 'skip'), ('job-environment', 'env')]
    assert jobs[0]['reason'] == 'not run: gpu-01 cannot take jobs (see its node_state check)'
    assert '--nodelist=gpu-02' in jobs[-1]['argv']
    assert [j['kind'] for j in vc.slurm_jobs({'nodes': [{'name': 'a', 'usable': False}]})] == ['skip', 'skip', 'skip']


@pytest.mark.parametrize('value, expected', [
    (False, True), ('False', True), ('false', True), ('no', True), ('0', True), (0, True), ('off', True),
    (True, False), ('True', False), (None, False), (1, False), ('yes', False), ('', False),
])
def test_is_false(value, expected):
    assert vc.is_false(value) is expected


# ---------------------------------------------------------------- munge key and input checks

def munge_key(key_mode=0o400, dir_mode=0o700, key_uid=103):
    return {'path': '/etc/munge/munge.key', 'user': 'munge', 'uid': 103, 'key': {'mode': 0o100000 | key_mode, 'uid': key_uid},
            'dir': {'mode': 0o040000 | dir_mode, 'uid': 103}}


ROUNDTRIP = {'rc': 0, 'output': 'STATUS:          Success (0)\n'}


@pytest.mark.parametrize('observed, status, reason', [
    ({'munge': ROUNDTRIP, 'services': {'munge': 'active'}, 'munge_key': munge_key()}, 'pass',
     'munge is active, a credential round-trips, /etc/munge/munge.key is private to munge (mode 0400, directory 0700)'),
    ({'munge': ROUNDTRIP, 'services': {'munge': 'active'}}, 'pass', 'munge is active, a credential round-trips'),
    ({'munge_key': munge_key(key_mode=0o600)}, 'pass', '/etc/munge/munge.key is private to munge (mode 0600, directory 0700)'),
    ({'munge': ROUNDTRIP, 'services': {'munge': 'active'}, 'munge_key': munge_key(key_mode=0o644)}, 'fail',
     "munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: whoever reads the key can forge any user's credentials)"),
    ({'munge': ROUNDTRIP, 'munge_key': munge_key(dir_mode=0o755, key_uid=0)}, 'fail',
     'munge key /etc/munge/munge.key is owned by uid 0, expected munge (uid 103); munge key directory /etc/munge has mode 0755, expected 0700'),
    ({'services': {'munge': 'failed'}, 'munge_key': munge_key(key_mode=0o644)}, 'fail', 'munge is failed'),
    ({'munge': {'rc': 1, 'output': 'unmunge: Error: Invalid credential'}, 'munge_key': munge_key()}, 'fail',
     'munge -n | unmunge failed (rc 1): unmunge: Error: Invalid credential'),
    ({}, 'skip', 'not checked: munge was not queried'),
])
def test_munge_record_with_key(observed, status, reason):
    rec = dict((r['check'], r) for r in vc.node_records('gpu-01', observed, {}))['munge']
    assert (rec['status'], rec['reason']) == (status, reason)


@pytest.mark.parametrize('value', [1, 30, '30', '0:30', '01:00:00', '1-0', '1-00:00:00', '2-12:30', 'UNLIMITED', 'infinite'])
def test_time_limits_slurm_takes(value):
    assert vc.check_time_limit('time_limit', value) == value


@pytest.mark.parametrize('value', [0, '0', -1, 'soon', '1:2:3:4', '1h', True, None, 1.5])
def test_time_limits_refused(value):
    with pytest.raises(ValueError, match='time_limit is'):
        vc.check_time_limit('time_limit', value)


@pytest.mark.parametrize('result', [
    {'changed': False, 'actions': [], 'gpus': [{'index': 0, 'reset_required': False}]},
    {'changed': False, 'failed': True, 'msg': 'no profile 1g.5gb'},
    {'changed': False, 'msg': 'registered with failed_when: false'},
])
def test_mig_results_accepted(result):
    assert vc.check_mig_result('mig_result', result) is result


@pytest.mark.parametrize('name, ok', [('gpu-01', True), ('node.a_1', True), ('9gpu', True), ('gpu 01', False), ('a,b', False), ('a=b', False),
                                      ('-a', False), ('', False), ('x' * 64, True), ('x' * 65, False)])
def test_slurm_names(name, ok):
    if ok:
        assert vc.slurm_name('n', name) == name
    else:
        with pytest.raises(ValueError, match='n is'):
            vc.slurm_name('n', name)


def test_planned_jobs_of_the_role_pass_the_job_checks():
    """The plans as roles/validate passes them (numbers from templates may be strings) give jobs check_jobs accepts."""
    jobs = vc.slurm_jobs({'nodes': [{'name': 'gpu-01', 'gpus': '2', 'usable': True, 'model': 'x', 'whole_gpus': 2}], 'partition': '',
                          'time_limit': '2', 'timeout': '180', 'pyxis': 'True', 'container_image': '', 'env': {'NCCL_DEBUG': 'INFO'}})
    jobs += vc.mpi_jobs({'nodes': ['gpu-01', 'gpu-02'], 'binary': '/opt/mpi_hello', 'partition': 'batch', 'time_limit': 2, 'timeout': 180,
                         'mpirun_args': [], 'container_image': '', 'env': {}, 'no_pmi_path': False, 'skip_reason': None})
    full = []
    for job in jobs:
        item = dict(env={}, timeout=300, round=0)
        item.update(job)
        full.append(item)
    checked = vc.check_jobs(full)
    assert [job['timeout'] for job in checked if job['kind'] == 'srun'] == [180]
    assert all(isinstance(job['timeout'], int) for job in checked)


CLUSTER_GRES = """# gpu-[01-02]: NVML shows 8 GPUs
NodeName=gpu-[01-02] Name=gpu Type=h100 File=/dev/nvidia0
NodeName=gpu-03 Name=gpu Type=a100 File=/dev/nvidia0
Name=mps Count=100
"""


@pytest.mark.parametrize('node, expected', [
    ('gpu-02', ['Name=gpu Type=h100 File=/dev/nvidia0', 'Name=mps Count=100']),
    ('gpu-03', ['Name=gpu Type=a100 File=/dev/nvidia0', 'Name=mps Count=100']),
    ('gpu-09', ['Name=mps Count=100']),
    (None, ['NodeName=gpu-[01-02] Name=gpu Type=h100 File=/dev/nvidia0', 'NodeName=gpu-03 Name=gpu Type=a100 File=/dev/nvidia0',
            'Name=mps Count=100']),
])
def test_a_configless_gres_conf_is_read_as_the_nodes_slurmd_reads_it(node, expected):
    assert vc.gres_conf_lines(CLUSTER_GRES, node) == expected


def test_the_gres_conf_check_passes_on_a_configless_file():
    result = vc.gres_conf_record('node', 'gpu-03', '/run/slurm/conf/gres.conf', CLUSTER_GRES,
                                 ['Name=gpu Type=a100 File=/dev/nvidia0', 'Name=mps Count=100'])
    assert result['status'] == 'pass', result
