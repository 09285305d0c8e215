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


def test_drain_reasons_are_cut_to_the_limit():
    records = [{'stage': 'node', 'node': 'gpu-01', 'check': 'gres_conf', 'status': 'fail', 'reason': 'x' * 500}]
    reason = vc.drain_reasons(records, ['gpu-01'], limit=60)['gpu-01']
    assert len(reason) <= 60 and reason.startswith('validate: node/gres_conf: xxx'), reason
    assert len(vc.drain_reasons(records, ['gpu-01'])['gpu-01']) > 60  # the default limit is Slurm's, far above


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


# === edge cases (formerly test_validation_checks_edges.py): Edges of _validation_checks: whole records and job lists, default arguments, boundaries and exact
# messages.

# What slurm_name says a valid Slurm name is (every message about a bad node/partition name ends with it).
NAME_TEXT = ('letters, digits, "_", "-" and "." (no spaces, commas or "="), starting with a letter or digit, '
             'at most 64 characters')
GRES = '/etc/slurm/gres.conf'
LONG = 'x' * 400


def rec(stage, node, check, status, reason, **extra):
    item = {'stage': stage, 'node': node, 'check': check, 'status': status, 'reason': reason}
    item.update(extra)
    return item


def by_check(records):
    return dict((r['check'], r) for r in records)


# ---------------------------------------------------------------- _clip (how every quoted output is shortened)

@pytest.mark.parametrize('text, limit, expected', [
    (None, 300, ''),
    ('', 300, ''),
    ('  a \n\t b  ', 300, 'a b'),
    ('x' * 300, 300, 'x' * 300),
    ('x' * 301, 300, 'x' * 297 + '...'),
    ('abcdefghij', 8, 'abcde...'),
])
def test_clip(text, limit, expected):
    assert vc._clip(text, limit) == expected


# ---------------------------------------------------------------- scontrol

@pytest.mark.parametrize('text, expected', [
    (None, {}),
    ('', {}),
    ('No nodes in the system\n', {}),
    ('NodeName=gpu-01 Arch=x86_64 State=IDLE*+DRAIN+DRAIN ThreadsPerCore=1 Reason=disk swap [root@2026-11-21T06:12:01]\n',
     {'gpu-01': {'name': 'gpu-01', 'state': 'IDLE', 'flags': ['DRAIN'], 'reason': 'disk swap', 'reason_user': 'root',
                 'reason_time': '2026-11-21T06:12:01'}}),
    ('NodeName=gpu-02 Arch=x86_64 State=MIXED~ Partitions=batch\n',
     {'gpu-02': {'name': 'gpu-02', 'state': 'MIXED', 'flags': [], 'reason': '', 'reason_user': '', 'reason_time': ''}}),
    ('NodeName=gpu-03 State=DOWN$+NOT_RESPONDING Reason=maintenance\n',
     {'gpu-03': {'name': 'gpu-03', 'state': 'DOWN', 'flags': ['NOT_RESPONDING'], 'reason': 'maintenance', 'reason_user': '',
                 'reason_time': ''}}),
])
def test_parse_scontrol_nodes_whole_entries(text, expected):
    nodes = vc.parse_scontrol_nodes(text)
    assert sorted(nodes) == sorted(expected)
    for name, node in expected.items():
        assert dict((key, nodes[name][key]) for key in node) == node


def test_parse_scontrol_nodes_names_the_line_without_state():
    line = 'NodeName=gpu-09 Comment=' + 'c' * 250
    with pytest.raises(ValueError) as err:
        vc.parse_scontrol_nodes(line)
    assert str(err.value) == "scontrol line for gpu-09 has no State=: '%s...' (line 1)" % line[:197]


NODES = vc.parse_scontrol_nodes(
    'NodeName=gpu-01 State=IDLE\n'
    'NodeName=gpu-02 State=IDLE+DRAIN Reason=disk swap\n'
    'NodeName=gpu-03 State=MIXED+COMPLETING\n'
    'NodeName=gpu-04 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-11-21T06:12:01]\n')


@pytest.mark.parametrize('name, nodes, expected', [
    ('gpu-01', NODES, rec('slurm', 'gpu-01', 'node_state', 'pass', 'node is IDLE')),
    ('gpu-03', NODES, rec('slurm', 'gpu-03', 'node_state', 'pass', 'node is MIXED+COMPLETING')),
    ('gpu-02', NODES, rec('slurm', 'gpu-02', 'node_state', 'fail', 'node is IDLE+DRAIN (reason: "disk swap")', held='admin')),
    ('gpu-04', NODES, rec('slurm', 'gpu-04', 'node_state', 'fail', 'node is DOWN+NOT_RESPONDING (reason: "Not responding" set by slurm)')),
    ('gpu-07', NODES, rec('slurm', 'gpu-07', 'node_state', 'fail',
                          'Slurm does not know a node called gpu-07 (scontrol show node lists: gpu-01, gpu-02, gpu-03, gpu-04)')),
    ('gpu-07', {}, rec('slurm', 'gpu-07', 'node_state', 'fail', 'Slurm does not know a node called gpu-07 (scontrol show node lists: none)')),
])
def test_node_state_record_whole(name, nodes, expected):
    assert vc.node_state_record('slurm', name, nodes) == expected


# ---------------------------------------------------------------- gres.conf

@pytest.mark.parametrize('text, expected', [
    (None, []),
    ('', []),
    ('# only a comment\n\n   \n', []),
    ('  Name=gpu   Type=h100\tFile=/dev/nvidia0  # first # second\n', ['Name=gpu Type=h100 File=/dev/nvidia0']),
])
def test_gres_conf_lines(text, expected):
    assert vc.gres_conf_lines(text) == expected


H100 = ['Name=gpu Type=h100 File=/dev/nvidia0', 'Name=gpu Type=h100 File=/dev/nvidia1']
A100 = ['Name=gpu Type=a100 File=/dev/nvidia0', 'Name=gpu Type=a100 File=/dev/nvidia1', 'Name=gpu Type=a100 File=/dev/nvidia3']
MIG = 'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22'
DIFFERS = GRES + ' differs from what slurm_gres_facts computes now: '


@pytest.mark.parametrize('text, expected, reason', [
    # lines without Name= (AutoDetect) are not devices, and the lines after them still count
    ('AutoDetect=off\n' + H100[0] + '\n', H100,
     DIFFERS + 'gpu:h100: 1 in %s, 2 computed from NVML; missing line "%s"; unexpected line "AutoDetect=off"' % (GRES, H100[1])),
    # a hostlist with a comma inside its brackets is 3 devices
    ('Name=gpu Type=a100 File=/dev/nvidia[0-1,3]\n', A100,
     DIFFERS + 'missing line "%s" (+2 more); unexpected line "Name=gpu Type=a100 File=/dev/nvidia[0-1,3]"' % A100[0]),
    ('Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1\n', A100,
     DIFFERS + 'gpu:a100: 2 in %s, 3 computed from NVML; missing line "%s" (+2 more); '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia0,/dev/nvidia1"' % (GRES, A100[0])),
    # not a hostlist (empty brackets): one device per comma-separated item
    ('Name=gpu Type=a100 File=/dev/nvidia[],/dev/nvidia1\n', A100,
     DIFFERS + 'gpu:a100: 2 in %s, 3 computed from NVML; missing line "%s" (+2 more); '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia[],/dev/nvidia1"' % (GRES, A100[0])),
    # Count= without File= (no Type: the label is the name alone)
    ('Name=mps Count=200\n', ['Name=mps Count=100'],
     DIFFERS + 'mps: 200 in %s, 100 computed from NVML; missing line "Name=mps Count=100"; unexpected line "Name=mps Count=200"' % GRES),
    ('Name=mps Count=lots\n', ['Name=mps Count=2'],
     DIFFERS + 'mps: 1 in %s, 2 computed from NVML; missing line "Name=mps Count=2"; unexpected line "Name=mps Count=lots"' % GRES),
    ('Name=bandwidth\n', ['Name=bandwidth Count=3'],
     DIFFERS + 'bandwidth: 1 in %s, 3 computed from NVML; missing line "Name=bandwidth Count=3"; unexpected line "Name=bandwidth"' % GRES),
    # a MultipleFiles= line is one device, whatever Count= says
    ('Name=gpu Type=1g.10gb Count=3 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21\n', [MIG, MIG.replace('cap2', 'cap3')],
     DIFFERS + 'gpu:1g.10gb: 1 in %s, 2 computed from NVML; missing line "%s" (+1 more); '
               'unexpected line "Name=gpu Type=1g.10gb Count=3 MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21"' % (GRES, MIG)),
    # a type only on one side: its count on the other side is 0
    (H100[0] + '\nName=gpu Type=a100 File=/dev/nvidia1\n', H100,
     DIFFERS + 'gpu:a100: 1 in %s, 0 computed from NVML; gpu:h100: 1 in %s, 2 computed from NVML; missing line "%s"; '
               'unexpected line "Name=gpu Type=a100 File=/dev/nvidia1"' % (GRES, GRES, H100[1])),
    (H100[0] + '\n', [H100[0], MIG],
     DIFFERS + 'gpu:1g.10gb: 0 in %s, 1 computed from NVML; missing line "%s"' % (GRES, MIG)),
    # Count=0 declares no device: only the line differs
    (H100[0] + '\nName=mps Count=0\n', [H100[0]], DIFFERS + 'unexpected line "Name=mps Count=0"'),
    (H100[0] + '\n', [H100[0], 'Name=mps Count=0'], DIFFERS + 'missing line "Name=mps Count=0"'),
    # two unexpected lines: the first and how many more
    ('\n'.join(H100), ['Name=gpu Type=h100 File=/dev/nvidia[0-1]'],
     DIFFERS + 'missing line "Name=gpu Type=h100 File=/dev/nvidia[0-1]"; unexpected line "%s" (+1 more)' % H100[0]),
    ('\n'.join(A100), ['Name=gpu Type=a100 File=/dev/nvidia[0-1,3]'],
     DIFFERS + 'missing line "Name=gpu Type=a100 File=/dev/nvidia[0-1,3]"; unexpected line "%s" (+2 more)' % A100[0]),
    # a doubled "=" (a typo) is read as part of the value, not a crash
    ('Name=gpu Type==h100 File=/dev/nvidia0\n', [H100[0]],
     DIFFERS + 'gpu:=h100: 1 in %s, 0 computed from NVML; gpu:h100: 0 in %s, 1 computed from NVML; missing line "%s"; '
               'unexpected line "Name=gpu Type==h100 File=/dev/nvidia0"' % (GRES, GRES, H100[0])),
])
def test_gres_conf_record_differences(text, expected, reason):
    assert vc.gres_conf_record('recheck', 'gpu-01', GRES, text, expected) == rec('recheck', 'gpu-01', 'gres_conf', 'fail', reason)


@pytest.mark.parametrize('text, expected, status, reason', [
    ('\n'.join(H100), H100, 'pass', GRES + ' equals what slurm_gres_facts computes (2 line(s))'),
    (None, H100 + ['Name=mps Count=100'], 'fail', GRES + ' is missing or unreadable; slurm_gres_facts computes 3 line(s)'),
])
def test_gres_conf_record_whole(text, expected, status, reason):
    assert vc.gres_conf_record('recheck', 'gpu-01', GRES, text, expected) == rec('recheck', 'gpu-01', 'gres_conf', status, reason)


# ---------------------------------------------------------------- node_records

GPUS = [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3'}, {'index': 1, 'name': 'NVIDIA A100-SXM4-40GB'}]
ROUNDTRIP_WITH_HOST = {'rc': 0, 'output': 'STATUS:          Success (0)\nENCODE_HOST: gpu-01\n'}
# a _munge_key.observe result without "user": the key belongs to the default user munge
KEY = {'path': '/etc/munge/munge.key', 'uid': 103, 'key': {'mode': 0o100400, 'uid': 103}, 'dir': {'mode': 0o040700, 'uid': 103}}
ALL_GOOD = {
    'nvml_error': None,
    'gpus': GPUS,
    'mig': {'actions': [], 'reset_required': []},
    'gres_conf': {'path': GRES, 'text': '\n'.join(H100), 'expected': H100},
    'munge': ROUNDTRIP_WITH_HOST,
    'munge_key': KEY,
    'services': {'munge': 'active', 'slurmd': 'active'},
    'scontrol': 'NodeName=sn-01 Arch=x86_64 State=IDLE Partitions=batch\n',
    'enroot': {'rc': 0, 'output': '3.5.0\n', 'conf_present': True, 'conf_path': '/etc/enroot/enroot.conf'},
    'pyxis': {'rc': 0, 'output': 'Usage: srun ...\n      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n'},
}
ALL_EXPECTED = {'gpu_count': 2, 'gpu_models': ['H100', 'A100'], 'enroot': True, 'pyxis': True, 'node_name': 'sn-01'}


def test_node_records_all_pass_whole_records():
    """The Slurm node name (node_name) finds the scontrol entry; every record names the inventory host and the stage."""
    assert vc.node_records('gpu-01', ALL_GOOD, ALL_EXPECTED, stage='recheck') == [
        rec('recheck', 'gpu-01', 'nvml', 'pass', 'NVML answers: 2 GPU(s)'),
        rec('recheck', 'gpu-01', 'gpu_count', 'pass', '2 GPU(s) as expected', value=2),
        rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3 match H100 or A100'),
        rec('recheck', 'gpu-01', 'mig_layout', 'pass', 'MIG layout equals the wanted one'),
        rec('recheck', 'gpu-01', 'gres_conf', 'pass', GRES + ' equals what slurm_gres_facts computes (2 line(s))'),
        rec('recheck', 'gpu-01', 'munge', 'pass',
            'munge is active, a credential round-trips, /etc/munge/munge.key is private to munge (mode 0400, directory 0700)'),
        rec('recheck', 'gpu-01', 'slurmd', 'pass', 'slurmd is active'),
        rec('recheck', 'gpu-01', 'node_state', 'pass', 'node is IDLE'),
        rec('recheck', 'gpu-01', 'enroot', 'pass', 'enroot 3.5.0 installed, /etc/enroot/enroot.conf present'),
        rec('recheck', 'gpu-01', 'pyxis', 'pass', 'pyxis is loaded: srun --help lists --container-image'),
    ]


def test_node_records_nothing_observed_nothing_expected():
    """Stage "node" by default; settings given as None (not set) are accepted and skip their checks."""
    expect = {'gpu_count': None, 'gpu_models': None, 'enroot': False, 'pyxis': None}
    assert vc.node_records('ctl', {}, expect) == [
        rec('node', 'ctl', 'nvml', 'skip', 'not checked: NVML was not queried (not a GPU node)'),
        rec('node', 'ctl', 'gpu_count', 'skip', 'not checked: no expected GPU count'),
        rec('node', 'ctl', 'gpu_models', 'skip', 'not checked: no expected models'),
        rec('node', 'ctl', 'mig_layout', 'skip', 'not checked: no wanted MIG layout for this node'),
        rec('node', 'ctl', 'gres_conf', 'skip', 'not checked: no GRES computed for this node (not a GPU node)'),
        rec('node', 'ctl', 'munge', 'skip', 'not checked: munge was not queried'),
        rec('node', 'ctl', 'slurmd', 'skip', 'not checked: slurmd state unknown'),
        rec('node', 'ctl', 'node_state', 'skip', 'not checked: scontrol was not run'),
        rec('node', 'ctl', 'enroot', 'skip', 'not checked: enroot not expected (validate_node.enroot is false)'),
        rec('node', 'ctl', 'pyxis', 'skip', 'not checked: pyxis not expected (validate_node.pyxis is false)'),
    ]


def test_node_records_gpu_checks_wait_for_nvml():
    """Expected GPUs but NVML not queried: the GPU checks are skipped, not failed for "0 GPUs"."""
    got = by_check(vc.node_records('gpu-01', {}, {'gpu_count': 8, 'gpu_models': ['H100']}, stage='recheck'))
    assert got['gpu_count'] == rec('recheck', 'gpu-01', 'gpu_count', 'skip', 'not checked: NVML was not queried')
    assert got['gpu_models'] == rec('recheck', 'gpu-01', 'gpu_models', 'skip', 'not checked: NVML was not queried')


def test_node_records_nvml_error_skips_gpu_checks_even_with_a_gpu_list():
    observed = {'nvml_error': LONG, 'gpus': GPUS, 'mig': {'actions': ['GPU 0: enable MIG']}}
    got = vc.node_records('gpu-01', observed, {'gpu_count': 2, 'gpu_models': ['H100']}, stage='recheck')[:4]
    assert got == [
        rec('recheck', 'gpu-01', 'nvml', 'fail', 'NVML does not answer: ' + 'x' * 297 + '...'),
        rec('recheck', 'gpu-01', 'gpu_count', 'skip', 'not checked: NVML does not answer'),
        rec('recheck', 'gpu-01', 'gpu_models', 'skip', 'not checked: NVML does not answer'),
        rec('recheck', 'gpu-01', 'mig_layout', 'skip', 'not checked: NVML does not answer'),
    ]


@pytest.mark.parametrize('gpus, expect, check, expected', [
    (GPUS[:1], {'gpu_count': 2}, 'gpu_count',
     rec('recheck', 'gpu-01', 'gpu_count', 'fail', 'NVML sees 1 GPU(s), expected 2', value=1, threshold=2)),
    ([], {'gpu_count': 0}, 'gpu_count', rec('recheck', 'gpu-01', 'gpu_count', 'pass', '0 GPU(s) as expected', value=0)),
    (GPUS, {'gpu_models': ['H100', 'H200']}, 'gpu_models',
     rec('recheck', 'gpu-01', 'gpu_models', 'fail', 'GPU 1 is NVIDIA A100-SXM4-40GB; expected H100 or H200')),
    (GPUS, {'gpu_models': ['h100', 'a100-sxm4']}, 'gpu_models',
     rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3 match h100 or a100-sxm4')),
    ([], {'gpu_models': ['H100']}, 'gpu_models', rec('recheck', 'gpu-01', 'gpu_models', 'pass', 'models none match H100')),
    # a GPU that reports no name matches no model, however short the model text
    ([{'index': 0}], {'gpu_models': ['n', 'x']}, 'gpu_models', rec('recheck', 'gpu-01', 'gpu_models', 'fail', 'GPU 0 is None; expected n or x')),
])
def test_node_records_gpu_records(gpus, expect, check, expected):
    assert by_check(vc.node_records('gpu-01', {'gpus': gpus}, expect, stage='recheck'))[check] == expected


ACTIONS = ['GPU 0: destroy GPU instance 9', 'GPU 0: create 1g.10gb', 'GPU 1: create 1g.10gb', 'GPU 2: enable MIG']


@pytest.mark.parametrize('mig, status, reason', [
    ({}, 'pass', 'MIG layout equals the wanted one'),
    ({'actions': ACTIONS[:3]}, 'fail', 'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3])),
    ({'actions': ACTIONS}, 'fail', 'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3]) + ' (+1 more)'),
    ({'actions': ACTIONS + ['GPU 3: enable MIG']}, 'fail',
     'MIG layout differs from the wanted one; nvidia_mig would: ' + '; '.join(ACTIONS[:3]) + ' (+2 more)'),
    ({'actions': [], 'reset_required': [1, 3]}, 'fail', 'MIG mode change pending a GPU reset on GPU(s) 1, 3'),
    ({'error': LONG}, 'fail', 'the wanted MIG layout could not be compared: ' + 'x' * 297 + '...'),
])
def test_node_records_mig_layout(mig, status, reason):
    got = by_check(vc.node_records('gpu-01', {'gpus': GPUS, 'mig': mig}, {}, stage='recheck'))['mig_layout']
    assert got == rec('recheck', 'gpu-01', 'mig_layout', status, reason)


@pytest.mark.parametrize('observed, status, reason', [
    ({'services': {'munge': 'failed'}, 'munge': ROUNDTRIP_WITH_HOST}, 'fail', 'munge is failed'),
    ({'services': {'munge': ''}, 'munge': ROUNDTRIP_WITH_HOST}, 'fail', 'munge is not running'),
    ({'munge_key': dict(KEY, key={'mode': 0o100644, 'uid': 103})}, 'fail',
     "munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: whoever reads the key can forge "
     "any user's credentials)"),
    ({'munge': {'rc': 1, 'output': LONG}}, 'fail', 'munge -n | unmunge failed (rc 1): ' + 'x' * 297 + '...'),
    ({'munge': {'rc': 0, 'output': 'STATUS:          Expired credential (15)\n'}}, 'fail',
     'unmunge did not decode a fresh credential: STATUS: Expired credential (15)'),
    ({'munge': {'rc': 0, 'output': 'ENCODE_HOST: gpu-01\n'}}, 'pass', 'a credential round-trips'),
    ({'munge': {'rc': 0, 'output': None}}, 'pass', 'a credential round-trips'),
    ({'services': {'munge': 'active'}}, 'pass', 'munge is active'),
    ({'munge_key': dict(KEY, user='mungeuser', key={'mode': 0o100600, 'uid': 103})}, 'pass',
     '/etc/munge/munge.key is private to mungeuser (mode 0600, directory 0700)'),
])
def test_node_records_munge(observed, status, reason):
    got = by_check(vc.node_records('gpu-01', observed, {}, stage='recheck'))['munge']
    assert got == rec('recheck', 'gpu-01', 'munge', status, reason)


@pytest.mark.parametrize('services, status, reason', [
    ({'slurmd': 'inactive'}, 'fail', 'slurmd is inactive'),
    ({'slurmd': ''}, 'fail', 'slurmd is not running'),
    ({'slurmd': None}, 'fail', 'slurmd is not running'),
    ({'slurmd': 'active'}, 'pass', 'slurmd is active'),
    ({'munge': 'active'}, 'skip', 'not checked: slurmd state unknown'),
])
def test_node_records_slurmd(services, status, reason):
    got = by_check(vc.node_records('gpu-01', {'services': services}, {}, stage='recheck'))['slurmd']
    assert got == rec('recheck', 'gpu-01', 'slurmd', status, reason)


@pytest.mark.parametrize('observed, expect, status, reason, extra', [
    ({'scontrol': ''}, {}, 'fail', 'Slurm does not know a node called gpu-01 (scontrol show node lists: none)', {}),
    ({'scontrol': 'NodeName=gpu-01 State=IDLE+DRAIN Reason=x [root@now]\n'}, {}, 'fail', 'node is IDLE+DRAIN (reason: "x" set by root)',
     {'held': 'admin'}),
    ({'scontrol': '', 'scontrol_error': LONG}, {'node_name': 'sn-01'}, 'fail', 'scontrol show node sn-01 failed: ' + 'x' * 297 + '...', {}),
])
def test_node_records_node_state(observed, expect, status, reason, extra):
    got = by_check(vc.node_records('gpu-01', observed, expect, stage='recheck'))['node_state']
    assert got == rec('recheck', 'gpu-01', 'node_state', status, reason, **extra)


def test_node_records_gres_conf_not_computed():
    observed = {'gres_conf': {'path': GRES, 'error': LONG}}
    assert by_check(vc.node_records('gpu-01', observed, {}, stage='recheck'))['gres_conf'] == rec(
        'recheck', 'gpu-01', 'gres_conf', 'fail', 'slurm_gres_facts could not compute the GRES to compare %s with: %s...' % (GRES, 'x' * 297))


ENROOT_CONF = '/etc/enroot/enroot.conf'
VERSION_45 = '3.5.0 built 2026-01-01 on host build-farm-0042'   # 46 characters, clipped to 40


@pytest.mark.parametrize('enroot, wanted, status, reason', [
    (None, True, 'fail', 'enroot is not installed (no enroot command in PATH)'),
    ({'rc': None, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot is not installed (no enroot command in PATH)'),
    ({'rc': 2, 'output': None, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot version failed (rc 2): '),
    ({'rc': 2, 'output': LONG, 'conf_path': ENROOT_CONF}, True, 'fail', 'enroot version failed (rc 2): ' + 'x' * 297 + '...'),
    ({'rc': 0, 'output': VERSION_45, 'conf_present': False, 'conf_path': ENROOT_CONF}, True, 'fail',
     'enroot %s... is installed but %s is missing' % (VERSION_45[:37], ENROOT_CONF)),
    ({'rc': 0, 'output': 'v' * 40, 'conf_present': False, 'conf_path': ENROOT_CONF}, True, 'fail',
     'enroot %s is installed but %s is missing' % ('v' * 40, ENROOT_CONF)),
    ({'rc': 0, 'output': 'v' * 41, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass',
     'enroot %s... installed, %s present' % ('v' * 37, ENROOT_CONF)),
    ({'rc': 0, 'output': VERSION_45, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass',
     'enroot %s... installed, %s present' % (VERSION_45[:37], ENROOT_CONF)),
    ({'rc': 0, 'output': None, 'conf_present': True, 'conf_path': ENROOT_CONF}, True, 'pass', 'enroot  installed, %s present' % ENROOT_CONF),
    ({'rc': 1}, False, 'skip', 'not checked: enroot not expected (validate_node.enroot is false)'),
])
def test_node_records_enroot(enroot, wanted, status, reason):
    got = by_check(vc.node_records('gpu-01', {'enroot': enroot}, {'enroot': wanted}, stage='recheck'))['enroot']
    assert got == rec('recheck', 'gpu-01', 'enroot', status, reason)


@pytest.mark.parametrize('pyxis, wanted, status, reason', [
    (None, True, 'fail', 'srun is not installed on this node, cannot tell whether pyxis loads'),
    ({'rc': None}, True, 'fail', 'srun is not installed on this node, cannot tell whether pyxis loads'),
    ({'rc': 0, 'output': '  --container-image=IMAGE'}, True, 'pass', 'pyxis is loaded: srun --help lists --container-image'),
    ({'rc': 0, 'output': None}, True, 'fail', 'pyxis is not loaded: srun --help does not list --container-image'),
    ({'rc': 1, 'output': 'e' * 250}, True, 'fail',
     'pyxis is not loaded: srun --help does not list --container-image (srun said: %s...)' % ('e' * 197)),
    ({'rc': 1, 'output': 'e' * 200}, True, 'fail',
     'pyxis is not loaded: srun --help does not list --container-image (srun said: %s)' % ('e' * 200)),
    ({'rc': 0, 'output': ''}, False, 'skip', 'not checked: pyxis not expected (validate_node.pyxis is false)'),
])
def test_node_records_pyxis(pyxis, wanted, status, reason):
    got = by_check(vc.node_records('gpu-01', {'pyxis': pyxis}, {'pyxis': wanted}, stage='recheck'))['pyxis']
    assert got == rec('recheck', 'gpu-01', 'pyxis', status, reason)


def test_node_records_lists_every_unknown_expectation():
    with pytest.raises(ValueError) as err:
        vc.node_records('gpu-01', {}, {'gpus': 8, 'models': ['H100']})
    assert str(err.value) == ('unknown node check expectation(s) gpus, models; '
                              'valid: gpu_count, gpu_models, enroot, pyxis, container_gpu, gres_conf_path, node_name')


# ---------------------------------------------------------------- job records

@pytest.mark.parametrize('result, status, reason', [
    ({'rc': 0, 'stdout': 'gpu-01.cluster.example\n'}, 'pass', 'srun -w gpu-01 ran on gpu-01.cluster.example'),
    ({'rc': 0, 'stdout': 'srun: job 5 queued\n  gpu-01  \n'}, 'pass', 'srun -w gpu-01 ran on gpu-01'),
    ({'rc': 0, 'stdout': 'gpu-01 extra\n'}, 'fail', 'srun -w gpu-01 ran on "gpu-01 extra"'),
    ({'rc': 0, 'stdout': ''}, 'fail', 'srun -w gpu-01 ran on "nowhere (no output)"'),
    ({'rc': 0}, 'fail', 'srun -w gpu-01 ran on "nowhere (no output)"'),
    ({'rc': 0, 'timed_out': True, 'timeout': 30, 'stdout': 'gpu-01\n'}, 'fail', 'srun -w gpu-01 timed out after 30s'),
    ({'rc': 1}, 'fail', 'srun -w gpu-01 failed (rc 1): no output'),
    ({'rc': 1, 'stderr': '', 'stdout': 'hello\nsrun: error: Unable to allocate resources\n'}, 'fail',
     'srun -w gpu-01 failed (rc 1): srun: error: Unable to allocate resources'),
    ({'rc': 2, 'stdout': 'step 1\nstep 2\nstep 3\n'}, 'fail', 'srun -w gpu-01 failed (rc 2): step 3'),
    ({'rc': 1, 'stderr': 'ERROR: ' + 'e' * 260}, 'fail', 'srun -w gpu-01 failed (rc 1): ERROR: %s...' % ('e' * 230)),
])
def test_srun_record_whole(result, status, reason):
    assert vc.srun_record('gpu-01', result) == rec('slurm', 'gpu-01', 'srun', status, reason)


def test_srun_record_stage():
    assert vc.srun_record('gpu-01', {'rc': 0, 'stdout': 'gpu-01'}, stage='recheck') == rec('recheck', 'gpu-01', 'srun', 'pass',
                                                                                           'srun -w gpu-01 ran on gpu-01')


@pytest.mark.parametrize('result, gpus, expected', [
    ({}, 0, rec('slurm', 'gpu-01', 'gres_job', 'skip', 'not checked: no GPUs configured for gpu-01')),
    ({'rc': 0, 'timed_out': True, 'timeout': 60, 'stdout': 'CUDA_VISIBLE_DEVICES=0,1\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'srun --gres=gpu:2 -w gpu-01 timed out after 60s')),
    ({'rc': 1, 'stderr': 'srun: error: Invalid generic resource (gres) specification'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'srun --gres=gpu:2 -w gpu-01 failed (rc 1): srun: error: Invalid generic resource (gres) specification')),
    ({'rc': 0, 'stdout': 'CUDA_VISIBLE_DEVICES=0\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'fail', 'a --gres=gpu:2 job sees CUDA_VISIBLE_DEVICES=0 (1 device(s)), expected 2', value=1, threshold=2)),
    ({'rc': 0, 'stdout': 'CUDA_VISIBLE_DEVICES=0,1\n'}, 2,
     rec('slurm', 'gpu-01', 'gres_job', 'pass', 'a --gres=gpu:2 job sees 2 device(s): CUDA_VISIBLE_DEVICES=0,1', value=2)),
])
def test_gres_job_record_whole(result, gpus, expected):
    assert vc.gres_job_record('gpu-01', result, gpus) == expected


def test_gres_job_record_stage():
    assert vc.gres_job_record('gpu-01', {}, None, stage='recheck')['stage'] == 'recheck'


@pytest.mark.parametrize('result, image, expected', [
    ({}, '', rec('slurm', 'gpu-01', 'container_job', 'skip', 'not checked: no container image given (validate_jobs.container_image)')),
    ({'rc': 0}, 'alpine.sqsh', rec('slurm', 'gpu-01', 'container_job', 'pass', 'a pyxis job ran in alpine.sqsh on gpu-01')),
    ({'rc': 0, 'timed_out': True, 'timeout': 120}, 'alpine.sqsh',
     rec('slurm', 'gpu-01', 'container_job', 'fail', 'srun --container-image=alpine.sqsh -w gpu-01 timed out after 120s')),
])
def test_container_record_whole(result, image, expected):
    assert vc.container_record('gpu-01', result, image) == expected


@pytest.mark.parametrize('text, expected', [
    (None, {}),
    ('', {}),
    (' 3: SLURM_STEP_GPUS= 0,1 \nlower=1\nno equals sign\nCUDA_VISIBLE_DEVICES=GPU-1=a\n',
     {'SLURM_STEP_GPUS': '0,1', 'CUDA_VISIBLE_DEVICES': 'GPU-1=a'}),
])
def test_parse_gres_probe(text, expected):
    assert vc.parse_gres_probe(text) == expected


# ---------------------------------------------------------------- MPI

@pytest.mark.parametrize('text, types', [
    (None, []),
    ('srun: MPI plugin types are: none,pmi2, pmix\n', ['none', 'pmi2', 'pmix']),
    ('MPI plugin types are:pmix,pmi2\n', ['pmix', 'pmi2']),
    ('MPI plugin types are...\n\tnoneX\n\tpmix_v\n\tPMIX\n', []),
])
def test_parse_mpi_list_more(text, types):
    assert vc.parse_mpi_list(text) == types


def test_choose_mpi_plugin_nothing_offered():
    with pytest.raises(ValueError) as err:
        vc.choose_mpi_plugin([], 'pmix')
    assert str(err.value) == "srun offers no MPI plugin 'pmix'; it offers: none"


@pytest.mark.parametrize('text', [None, '', 'all ranks started'])
def test_mpi_hint_none(text):
    assert vc.mpi_hint(text) == ''


HELLO = 'mpi_hello rank 0 of 2 on gpu-01\nmpi_hello rank 1 of 2 on gpu-02\n'


@pytest.mark.parametrize('result, required, status, reason', [
    (None, [], 'skip', 'srun --mpi=pmix: not run'),
    (None, ['srun_pmi'], 'fail', 'srun --mpi=pmix: not run'),
    ({'skipped': True}, [], 'skip', 'srun --mpi=pmix: not run'),
    ({'rc': 0, 'timed_out': True, 'timeout': 90, 'stdout': HELLO}, ['srun_pmi'], 'fail', 'srun --mpi=pmix timed out after 90s'),
    ({'rc': 1, 'stderr': '', 'stdout': 'orte_ess_init failed\n'}, ['srun_pmi'], 'fail',
     'srun --mpi=pmix failed (rc 1): orte_ess_init failed -- the MPI library found no PMI server: srun launched it without PMI support '
     '(use srun --mpi=pmix or pmi2)'),
    ({'rc': 0, 'stdout': 'mpi_hello rank 0 of 2 on gpu-01\nmpi_hello rank 1 of 3 on gpu-02\n'}, ['srun_pmi'], 'fail',
     'srun --mpi=pmix: 2 of 2 ranks reported (world size 2,3)'),
    ({'rc': 0, 'stdout': ''}, ['srun_pmi'], 'fail', 'srun --mpi=pmix: 0 of 2 ranks reported (world size unknown)'),
])
def test_mpi_record_more(result, required, status, reason):
    assert vc.mpi_record('srun_pmi', 'srun --mpi=pmix', result, 2, ['gpu-01', 'gpu-02'], required) == rec(
        'mpi', 'srun_pmi', 'launch', status, reason, hosts=['gpu-01', 'gpu-02'])


@pytest.mark.parametrize('env, expected', [
    ('LS_COLORS=rs=0:di=01;34\n0: NCCL_DEBUG=trace\n', ['job sets NCCL_DEBUG=trace, which NCCL_DEBUG=TRACE logs every call and slows collectives']),
    ({'NCCL_NET': 'socket', 'OMPI_MCA_pml': 'ob1', 'OMPI_MCA_btl': 'self,tcp'}, [
        'job sets OMPI_MCA_pml=ob1, which keeps Open MPI off UCX (seed 002: srun + pyxis with OMPI_MCA_pml=^ucx ran all_reduce at half '
        'the mpirun bandwidth)',
        'job sets OMPI_MCA_btl=self,tcp, which limits Open MPI to TCP',
        'job sets NCCL_NET=socket, which forces NCCL onto TCP sockets']),
])
def test_slow_env_warnings_more(env, expected):
    assert vc.slow_env_warnings(env, 'job') == expected


# ---------------------------------------------------------------- drain reasons

@pytest.mark.parametrize('records, expected', [
    # a failure of a run on several hosts names no single node, even when its "node" is one of them
    ([{'stage': 'nccl', 'node': 'gpu-01', 'check': 'busbw', 'status': 'fail', 'reason': 'low', 'hosts': ['gpu-01', 'gpu-02']}], {}),
    ([{'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'x', 'hosts': ['gpu-02']}],
     {'gpu-02': 'validate: mpi/launch: x'}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'reachable', 'status': 'fail'}], {'gpu-01': 'validate: node/reachable:'}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'c', 'status': 'fail', 'reason': 'r' * 182}], {'gpu-01': 'validate: node/c: ' + 'r' * 182}),
    ([{'stage': 'node', 'node': 'gpu-01', 'check': 'c', 'status': 'fail', 'reason': 'r' * 183}],
     {'gpu-01': 'validate: node/c: ' + 'r' * 179 + '...'}),
])
def test_drain_reasons_more(records, expected):
    assert vc.drain_reasons(records, ['gpu-01', 'gpu-02']) == expected


# ---------------------------------------------------------------- job plans

def test_export():
    assert vc._export(None) == '--export=ALL'
    assert vc._export({'B': 2, 'A': 'x'}) == '--export=ALL,A=x,B=2'
    with pytest.raises(ValueError) as err:
        vc._export({'A-B': 1})
    assert str(err.value) == "environment variable name 'A-B' is not valid (letters, digits and _)"


def test_slurm_jobs_whole_plan():
    plan = {'nodes': [{'name': 'gpu-01', 'gpus': 2}, {'name': 'gpu-02', 'gpus': 0, 'usable': False}], 'srun': '/usr/bin/srun',
            'time_limit': '0:05:00', 'timeout': 90, 'pyxis': True, 'container_image': 'alpine.sqsh', 'env': {'A': '1'}, 'partition': 'p'}
    base = ['/usr/bin/srun', '--nodes=1', '--ntasks=1', '--nodelist=gpu-01', '--time=0:05:00', '--export=ALL,A=1', '--partition=p']
    skipped = 'not run: gpu-02 cannot take jobs (see its node_state check)'
    assert vc.slurm_jobs(plan) == [
        {'name': 'gpu-01', 'kind': 'srun', 'round': 0, 'timeout': 90, 'argv': base + ['--job-name=validate-srun', 'hostname']},
        {'name': 'gpu-01/gres', 'kind': 'gres', 'round': 1, 'timeout': 90, 'gpus': 2,
         'argv': base + ['--job-name=validate-gres', '--gres=gpu:2', 'sh', '-c', vc.GRES_PROBE]},
        {'name': 'gpu-01/container', 'kind': 'container', 'round': 2, 'timeout': 90, 'image': 'alpine.sqsh',
         'argv': base + ['--job-name=validate-container', '--container-image=alpine.sqsh', 'true']},
        {'name': 'gpu-02', 'kind': 'skip', 'check': 'srun', 'reason': skipped},
        {'name': 'gpu-02/gres', 'kind': 'skip', 'check': 'gres_job', 'reason': skipped},
        {'name': 'gpu-02/container', 'kind': 'skip', 'check': 'container_job', 'reason': skipped},
        {'name': 'job-environment', 'kind': 'env', 'round': 0, 'timeout': 90, 'argv': base + ['--job-name=validate-env', 'env']},
    ]


def test_slurm_jobs_defaults():
    """No srun, time limit (an empty one included), timeout or pyxis given: srun, 2 minutes, 120 s, no container job."""
    base = ['srun', '--nodes=1', '--ntasks=1', '--nodelist=n1', '--time=2', '--export=ALL']
    assert vc.slurm_jobs({'nodes': [{'name': 'n1', 'gpus': '1'}], 'time_limit': '', 'partition': ''}) == [
        {'name': 'n1', 'kind': 'srun', 'round': 0, 'timeout': 120, 'argv': base + ['--job-name=validate-srun', 'hostname']},
        {'name': 'n1/gres', 'kind': 'gres', 'round': 1, 'timeout': 120, 'gpus': 1,
         'argv': base + ['--job-name=validate-gres', '--gres=gpu:1', 'sh', '-c', vc.GRES_PROBE]},
        {'name': 'n1/container', 'kind': 'skip', 'check': 'container_job', 'reason': 'not checked: pyxis not expected (validate_node.pyxis is false)'},
        {'name': 'job-environment', 'kind': 'env', 'round': 0, 'timeout': 120, 'argv': base + ['--job-name=validate-env', 'env']},
    ]


@pytest.mark.parametrize('plan, message', [
    ({'nodes': ['gpu-01']}, "Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got ['gpu-01']"),
    ({'nodes': [{'gpus': 1}]}, "Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got [{'gpus': 1}]"),
    ({'nodes': [{'name': 'gpu 01'}]}, "nodes[0].name is 'gpu 01', expected a Slurm node name: " + NAME_TEXT),
    ({'nodes': [{'name': 'a'}, {'name': 'b', 'gpus': -1}]}, 'nodes[1].gpus is -1, expected a whole number of at least 0'),
    ({'nodes': [{'name': 'a'}, {'name': 'b', 'usable': 'maybe'}]}, "nodes[1].usable is 'maybe', expected true or false"),
    ({'nodes': [{'name': 'a'}], 'srun': 5}, 'srun is 5, expected a string'),
    ({'nodes': [{'name': 'a'}], 'container_image': ['x']}, "container_image is ['x'], expected a string"),
    ({'nodes': [{'name': 'a'}], 'pyxis': 'maybe'}, "pyxis is 'maybe', expected true or false"),
    ({'nodes': [{'name': 'a'}], 'partition': 'a,b'}, "partition is 'a,b', expected a Slurm partition name: " + NAME_TEXT + ', or empty'),
    ({'nodes': [{'name': 'a'}], 'timeout': 0}, 'timeout is 0, expected a whole number of seconds of at least 1'),
    ({'nodes': [{'name': 'a'}], 'image': 'x', 'ranks': 2},
     'unknown Slurm plan key(s) image, ranks; valid keys: nodes, srun, partition, time_limit, timeout, pyxis, container_image, env, '
     'dispatch, dispatch_min_nodes, allocation_wait, salloc'),
])
def test_slurm_jobs_bad_plans(plan, message):
    with pytest.raises(ValueError) as err:
        vc.slurm_jobs(plan)
    assert str(err.value) == message


def test_slurm_jobs_wants_a_list_of_nodes():
    """An iterator of nodes is refused, not planned as no jobs once the first check has used it up."""
    with pytest.raises(ValueError, match=r'^nodes is <list_iterator object at 0x[0-9a-fA-F]+>, expected a list of at least 1 item\(s\)$'):
        vc.slurm_jobs({'nodes': iter([{'name': 'a'}])})


MPI = '/opt/v/mpi_hello'


def test_mpi_jobs_whole_plan():
    plan = {'nodes': ['gpu-01', 'gpu-02'], 'binary': MPI, 'srun': '/usr/bin/srun', 'salloc': '/usr/bin/salloc', 'mpirun': '/opt/ompi/bin/mpirun',
            'mpirun_args': ['--mca', 'btl', '^openib'], 'partition': 'gpu', 'time_limit': '0:10:00', 'timeout': 300, 'env': {'UCX_TLS': 'rc'},
            'no_pmi_path': True, 'no_pmi_timeout': 45, 'container_image': '/srv/ompi.sqsh', 'container_mounts': '/opt/v:/opt/v:ro'}
    alloc = ['--nodes=2', '--nodelist=gpu-01,gpu-02', '--ntasks-per-node=1', '--time=0:10:00', '--partition=gpu']
    srun = ['/usr/bin/srun'] + alloc + ['--export=ALL,UCX_TLS=rc', '--job-name=validate-mpi']
    job = {'kind': 'mpi', 'timeout': 300, 'ranks': 2, 'hosts': ['gpu-01', 'gpu-02']}
    assert vc.mpi_jobs(plan) == [
        dict(job, name='srun_pmi', path='srun_pmi', label='srun --mpi={mpi}', round=0, argv=srun + ['--mpi={mpi}', MPI]),
        dict(job, name='srun_plain', path='srun_plain', label='srun --mpi=none (no PMI)', round=1, timeout=45, argv=srun + ['--mpi=none', MPI]),
        dict(job, name='mpirun', path='mpirun', label='mpirun in a salloc allocation', round=2,
             env={'UCX_TLS': 'rc', 'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'},
             argv=['/usr/bin/salloc'] + alloc + ['--job-name=validate-mpi', '/opt/ompi/bin/mpirun', '--mca', 'btl', '^openib', MPI]),
        dict(job, name='pyxis', path='pyxis', label='srun --mpi={mpi} --container-image', round=3,
             argv=srun + ['--mpi={mpi}', '--container-image=/srv/ompi.sqsh', '--container-mounts=/opt/v:/opt/v:ro', MPI]),
    ]


def test_mpi_jobs_defaults():
    """srun, salloc and mpirun by name, 2 minutes, 180 s; the no-PMI path skipped; a binary in / mounts /."""
    alloc = ['--nodes=1', '--nodelist=a', '--ntasks-per-node=1', '--time=2']
    job = {'kind': 'mpi', 'timeout': 180, 'ranks': 1, 'hosts': ['a']}
    assert vc.mpi_jobs({'nodes': ['a'], 'binary': '/mpi_hello', 'container_image': 'ompi.sqsh'}) == [
        dict(job, name='srun_pmi', path='srun_pmi', label='srun --mpi={mpi}', round=0,
             argv=['srun'] + alloc + ['--export=ALL', '--job-name=validate-mpi', '--mpi={mpi}', '/mpi_hello']),
        {'name': 'srun_plain', 'kind': 'skip', 'path': 'srun_plain', 'label': 'srun --mpi=none (no PMI)', 'hosts': ['a'], 'ranks': 1,
         'reason': 'not run: the srun path without PMI runs only when asked (validate_mpi_settings.no_pmi_path); '
                   'Open MPI then fails with orte_ess_init failed or hangs until its timeout'},
        dict(job, name='mpirun', path='mpirun', label='mpirun in a salloc allocation', round=2,
             env={'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'},
             argv=['salloc'] + alloc + ['--job-name=validate-mpi', 'mpirun', '/mpi_hello']),
        dict(job, name='pyxis', path='pyxis', label='srun --mpi={mpi} --container-image', round=3,
             argv=['srun'] + alloc + ['--export=ALL', '--job-name=validate-mpi', '--mpi={mpi}', '--container-image=ompi.sqsh',
                                      '--container-mounts=/:/', '/mpi_hello']),
    ]


def test_mpi_jobs_without_image_skips_pyxis():
    assert vc.mpi_jobs({'nodes': ['a', 'b'], 'binary': 'mpi_hello'})[3] == {
        'name': 'pyxis', 'kind': 'skip', 'path': 'pyxis', 'label': 'srun --mpi={mpi} --container-image', 'hosts': ['a', 'b'], 'ranks': 2,
        'reason': 'not run: no MPI container image given (validate_mpi_settings.container_image)'}


LABELS = {'srun_pmi': 'srun --mpi={mpi}', 'srun_plain': 'srun --mpi=none (no PMI)', 'mpirun': 'mpirun in a salloc allocation',
          'pyxis': 'srun --mpi={mpi} --container-image'}


@pytest.mark.parametrize('plan, reason, hosts, ranks', [
    ({'nodes': ['a', 'b'], 'binary': ''}, 'no MPI program: binary not given', ['a', 'b'], 2),
    ({'nodes': ['a', 'b']}, 'no MPI program: binary not given', ['a', 'b'], 2),
    ({'nodes': [], 'binary': MPI}, 'no MPI program: no node can run it', None, 1),
    ({'binary': MPI, 'skip_reason': 'no mpicc'}, 'no mpicc', None, 1),
])
def test_mpi_jobs_all_skipped(plan, reason, hosts, ranks):
    assert vc.mpi_jobs(plan) == [{'name': path, 'kind': 'skip', 'path': path, 'label': LABELS[path], 'reason': reason, 'hosts': hosts,
                                  'ranks': ranks} for path in vc.MPI_PATHS]


@pytest.mark.parametrize('change, message', [
    ({'nodes': ['a', 'b c']}, "nodes[1] is 'b c', expected a Slurm node name: " + NAME_TEXT),
    ({'srun': 5}, 'srun is 5, expected a string'),
    ({'salloc': 5}, 'salloc is 5, expected a string'),
    ({'mpirun': 5}, 'mpirun is 5, expected a string'),
    ({'binary': 5}, 'binary is 5, expected a string'),
    ({'container_image': 5}, 'container_image is 5, expected a string'),
    ({'container_mounts': 5}, 'container_mounts is 5, expected a string'),
    ({'skip_reason': 5}, 'skip_reason is 5, expected a string'),
    ({'no_pmi_path': 'maybe'}, "no_pmi_path is 'maybe', expected true or false"),
    ({'no_pmi_timeout': 0}, 'no_pmi_timeout is 0, expected a whole number of seconds of at least 1'),
    ({'mpirun_args': '--mca btl ^openib'}, "mpirun_args is '--mca btl ^openib', expected a list"),
    ({'mpirun_args': ['--mca', 5]}, 'mpirun_args[1] is 5, expected a non-empty string'),
    ({'time_limit': 'soon'}, "time_limit is 'soon', expected a Slurm time limit: minutes (1 or more), \"MM:SS\", \"HH:MM:SS\", "
                             "\"D-HH[:MM[:SS]]\" or UNLIMITED"),
    ({'env': {'1A': 'x'}}, "env key is '1A', expected an environment variable name (letters, digits and \"_\", not starting with a digit)"),
    ({'ranks': 2, 'hosts': []}, 'unknown MPI plan key(s) hosts, ranks; valid keys: nodes, binary, srun, salloc, mpirun, mpirun_args, '
                                'partition, time_limit, timeout, container_image, container_mounts, env, skip_reason, no_pmi_path, no_pmi_timeout'),
])
def test_mpi_jobs_bad_plans(change, message):
    with pytest.raises(ValueError) as err:
        vc.mpi_jobs(dict({'nodes': ['a'], 'binary': MPI}, **change))
    assert str(err.value) == message


def test_plans_take_none_for_unset_strings():
    jobs = vc.mpi_jobs({'nodes': ['a'], 'binary': MPI, 'srun': None, 'salloc': None, 'mpirun': None, 'container_image': None,
                        'container_mounts': None, 'skip_reason': None, 'mpirun_args': None, 'no_pmi_path': None})
    assert [j['kind'] for j in jobs] == ['mpi', 'skip', 'mpi', 'skip']


# ---------------------------------------------------------------- input checks

@pytest.mark.parametrize('args, message', [
    (('n', 'a b'), "n is 'a b', expected a Slurm name: " + NAME_TEXT),
    (('n', '', 'a Slurm reservation name'), "n is '', expected a Slurm reservation name: " + NAME_TEXT),
    (('n', 'a b', 'a Slurm partition name', True), "n is 'a b', expected a Slurm partition name: " + NAME_TEXT + ', or empty'),
])
def test_slurm_name_messages(args, message):
    with pytest.raises(ValueError) as err:
        vc.slurm_name(*args)
    assert str(err.value) == message


def test_slurm_name_may_be_empty():
    assert vc.slurm_name('partition', '', allow_empty=True) == ''


@pytest.mark.parametrize('env, message', [
    ('A=1', "env is 'A=1', expected a dict"),
    ({'A': None}, 'env[A] is None, expected a string or number'),
    ({'A': [1]}, 'env[A] is [1], expected a string or number'),
])
def test_check_env_messages(env, message):
    with pytest.raises(ValueError) as err:
        vc.check_env('env', env)
    assert str(err.value) == message


def test_check_env_accepts():
    assert vc.check_env('env', None) == {}
    assert vc.check_env('env', {'A': 1, 'B_2': 'x', 'C': True}) == {'A': 1, 'B_2': 'x', 'C': True}


@pytest.mark.parametrize('result', [
    {'failed': True, 'actions': 'not a list'},
    {'actions': None},
    {'actions': ['GPU 0: enable MIG']},
    {'actions': [], 'gpus': None},
])
def test_check_mig_result_accepts(result):
    assert vc.check_mig_result('mig_result', result) is result


@pytest.mark.parametrize('result, message', [
    ({'actions': 'GPU 0: enable MIG'}, "mig_result.actions is 'GPU 0: enable MIG', expected a list"),
    ({'actions': [1]}, 'mig_result.actions[0] is 1, expected a non-empty string'),
    ({'actions': [], 'gpus': ['x']}, "mig_result.gpus[0] is 'x', expected a dict"),
])
def test_check_mig_result_refuses(result, message):
    with pytest.raises(ValueError) as err:
        vc.check_mig_result('mig_result', result)
    assert str(err.value) == message


# node_check's options as its argument spec fills them
NODE_PARAMS = {'node_name': None, 'expect': {}, 'mig_result': None, 'services': ['munge', 'slurmd'], 'gres_conf_path': GRES,
               'enroot_conf_path': ENROOT_CONF, 'munge_key_check': True, 'munge_key_path': '/etc/munge/munge.key', 'munge_user': 'munge',
               'hook_log_ident': 'slurm-hooks', 'hook_log_lines': 500, 'hook_log_files': ['/var/log/syslog']}


@pytest.mark.parametrize('change', [
    {},
    {'node_name': 'gpu-01', 'expect': {'gpu_count': 8}, 'mig_result': {'actions': []}, 'services': None, 'hook_log_files': None},
    {'munge_key_check': False, 'munge_key_path': 'munge.key', 'munge_user': 'Munge'},
])
def test_check_node_input_accepts(change):
    assert vc.check_node_input(dict(NODE_PARAMS, **change)) is None


@pytest.mark.parametrize('change, message', [
    ({'node_name': 'gpu 01'}, "node_name is 'gpu 01', expected a Slurm node name: " + NAME_TEXT),
    ({'expect': {'gpu_count': -1}}, 'expect.gpu_count is -1, expected a whole number of at least 0'),
    ({'mig_result': {'actions': 'x'}}, "mig_result.actions is 'x', expected a list"),
    ({'services': ['slurmd', '-x']},
     "services[1] is '-x', expected a systemd unit name such as \"slurmd\" or \"slurmd.service\" (letters, digits, \":\", \"_\", \".\", "
     "\"\\\", \"@\" and \"-\", not starting with \"-\" or \"@\", at most 256 characters)"),
    ({'gres_conf_path': ''}, "gres_conf_path is '', expected a non-empty string"),
    ({'munge_key_path': 'munge.key'}, "munge_key_path is 'munge.key', expected an absolute path to a file such as /etc/munge/munge.key"),
    ({'munge_key_path': '/etc/munge/'}, "munge_key_path is '/etc/munge/', expected an absolute path to a file such as /etc/munge/munge.key"),
    ({'munge_user': 'Munge'}, "munge_user is 'Munge', expected a user name such as \"munge\""),
    ({'hook_log_ident': '-x'}, "hook_log_ident is '-x', expected a syslog identifier such as \"slurm-hooks\" (no spaces, not starting with \"-\")"),
    ({'hook_log_lines': 0}, 'hook_log_lines is 0, expected a whole number between 1 and 1000000'),
    ({'hook_log_files': ['']}, "hook_log_files[0] is '', expected a non-empty string"),
])
def test_check_node_input_refuses(change, message):
    with pytest.raises(ValueError) as err:
        vc.check_node_input(dict(NODE_PARAMS, **change))
    assert str(err.value) == message


def test_check_node_input_checks_the_munge_key_unless_told_not_to():
    """munge_key_check is on when the option is absent."""
    params = dict(NODE_PARAMS, munge_key_path='munge.key')
    del params['munge_key_check']
    with pytest.raises(ValueError, match='^munge_key_path is'):
        vc.check_node_input(params)


def job(**change):
    item = {'name': 'a', 'kind': 'srun', 'timeout': 60, 'round': 0, 'argv': ['srun', 'hostname']}
    item.update(change)
    return item


def test_check_jobs_normalises_numbers():
    assert vc.check_jobs([job(timeout='60', round='1', gpus='2', ranks='3')]) == [
        {'name': 'a', 'kind': 'srun', 'timeout': 60, 'round': 1, 'gpus': 2, 'ranks': 3, 'argv': ['srun', 'hostname']}]
    assert vc.check_jobs([job(kind='skip', argv=None)]) == [
        {'name': 'a', 'kind': 'skip', 'timeout': 60, 'round': 0, 'gpus': None, 'ranks': None, 'argv': None}]


@pytest.mark.parametrize('jobs, message', [
    (['a'], "jobs[0] is 'a', expected a dict"),
    ([job(), job(name='b', kind='bogus')], "jobs[1] (b).kind is 'bogus', expected one of srun, gres, container, mpi, nccl, env, skip"),
    ([job(argv='hostname')], "jobs[0] (a).argv is 'hostname', expected a list of at least 1 item(s)"),
    ([job(argv=[])], 'jobs[0] (a).argv is [], expected the command as a non-empty list (every kind but skip runs one)'),
    ([job(path='bogus')], "jobs[0] (a).path is 'bogus', expected one of srun_pmi, srun_plain, mpirun, pyxis"),
    ([job(kind='mpi')], 'jobs[0] (a) (kind mpi) needs a path: srun_pmi, srun_plain, mpirun, pyxis'),
    ([job(expect={'topology': 'h100-nvlink-8'})],
     "jobs[0] (a).expect is {'topology': 'h100-nvlink-8'}, but only kind nccl jobs take an expectation (this job is kind srun)"),
    ([job(kind='nccl', expect={'min_busbw_gbps': -1})],
     "jobs[0] (a).expect is {'min_busbw_gbps': -1}: min_busbw_gbps is -1, expected a number of GB/s above 0"),
    ([job(), job(name='b'), job(), job(name='b'), job(name='c')], 'job names must be unique, these repeat: a, b'),
])
def test_check_jobs_messages(jobs, message):
    with pytest.raises(ValueError) as err:
        vc.check_jobs(jobs)
    assert str(err.value) == message


def test_check_jobs_label():
    with pytest.raises(ValueError) as err:
        vc.check_jobs([job(round=-1)], label='plan')
    assert str(err.value) == 'plan[0] (a).round is -1, expected a whole number of at least 0'


JOBS_PARAMS = {'stage': 'slurm', 'mpi_plugin': 'auto', 'srun': 'srun', 'mpi_required_paths': ['srun_pmi']}


@pytest.mark.parametrize('change, message', [
    ({'stage': 'slurm stage'}, "stage is 'slurm stage', expected a stage name such as \"slurm\" (no spaces)"),
    ({'mpi_plugin': 'PMIx'}, "mpi_plugin is 'PMIx', expected auto or a Slurm MPI plugin type such as pmix, pmix_v4, pmi2 or none"),
    ({'srun': ''}, "srun is '', expected the srun command or its path"),
])
def test_check_jobs_input_messages(change, message):
    assert vc.check_jobs_input(JOBS_PARAMS) is None
    with pytest.raises(ValueError) as err:
        vc.check_jobs_input(dict(JOBS_PARAMS, **change))
    assert str(err.value) == message


def test_check_time_limit_message():
    with pytest.raises(ValueError) as err:
        vc.check_time_limit('validate_time_limit', '1h')
    assert str(err.value) == ("validate_time_limit is '1h', expected a Slurm time limit: minutes (1 or more), \"MM:SS\", \"HH:MM:SS\", "
                              "\"D-HH[:MM[:SS]]\" or UNLIMITED")
    with pytest.raises(ValueError) as err:
        vc.check_time_limit('validate_time_limit', 0)
    assert str(err.value) == 'validate_time_limit is 0, expected a whole number of minutes of at least 1'
