# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nvidia_mig against the NVML simulator: the module runs unchanged on a
simulated node (``$NVMLSIM_STATE``), and the tests read the node's state back
through the simulator to check what really changed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from nvmlsim import cli

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml, _mig_plan
from ansible_collections.gpucluster.bringup.plugins.modules import nvidia_mig
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module
from ansible_collections.gpucluster.bringup.tests.unit.simnode import calls, node, sim, state  # noqa: F401  pylint: disable=unused-import


def ok(args, **kwargs):
    outcome = run_module(nvidia_mig.main, args, **kwargs)
    assert not outcome.failed, outcome.result['msg']
    return outcome.result


def fail(args, **kwargs):
    outcome = run_module(nvidia_mig.main, args, **kwargs)
    assert outcome.failed, outcome.result
    return outcome.result


def layout(index):
    """Sorted (profile, start, CI profiles) of a GPU, read from the simulator's state."""
    gpu = [g for g in state()['gpus'] if g['index'] == index][0]
    annotated = cli.annotated({'gpus': [gpu], **{k: v for k, v in state().items() if k != 'gpus'}})['gpus'][0]
    return sorted((gi['profile'], gi['start'], tuple(sorted(ci['profile'] for ci in gi['compute_instances'])))
                  for gi in annotated['gpu_instances'])


def gi_ids(index):
    return before_ids(state(), index)


BALANCED = [{'profile': '3g.40gb'}, {'profile': '2g.20gb'}, {'profile': '1g.10gb', 'count': 2}]
ALL_1G = [{'profile': '1g.10gb', 'count': 7}]


def test_apply_then_reapply_is_idempotent(node, calls):
    node('h100-80gb-x8')
    result = ok({'gpus': [{'gpu': 'all', 'instances': BALANCED}]})
    assert result['changed'] is True
    for index in range(8):
        assert layout(index) == [('1g.10gb', 0, ('1g.10gb',)), ('1g.10gb', 1, ('1g.10gb',)), ('2g.20gb', 2, ('2g.20gb',)),
                                 ('3g.40gb', 4, ('3g.40gb',))]
    assert calls.count('nvmlDeviceSetMigMode') == 8
    assert calls.count('nvmlDeviceCreateGpuInstanceWithPlacement') == 32
    assert len(result['gpus']) == 8 and all(not g['reset_required'] for g in result['gpus'])
    first = result['gpus'][0]
    assert first['mig_mode'] == {'current': True, 'pending': True}
    assert [(i['profile'], i['placement']) for i in first['instances']] == [
        ('1g.10gb', {'start': 0, 'size': 1}), ('1g.10gb', {'start': 1, 'size': 1}), ('2g.20gb', {'start': 2, 'size': 2}),
        ('3g.40gb', {'start': 4, 'size': 4})]
    assert all(ci['uuid'].startswith('MIG-') for i in first['instances'] for ci in i['compute_instances'])
    del calls[:]
    again = ok({'gpus': [{'gpu': 'all', 'instances': BALANCED}]})
    assert again['changed'] is False and again['actions'] == [] and calls == []
    assert again['gpus'] == result['gpus']


def test_change_one_gpu_touches_only_its_differing_instances(node, calls):
    node('a100-40gb-x8')
    balanced = [{'profile': '3g.20gb'}, {'profile': '2g.10gb'}, {'profile': '1g.5gb', 'count': 2}]
    ok({'gpus': [{'gpu': 'all', 'instances': balanced}]})
    before = dict((i, gi_ids(i)) for i in range(8))
    del calls[:]
    changed = [{'profile': '3g.20gb'}, {'profile': '2g.10gb'}, {'profile': '1g.10gb'}]
    result = ok({'gpus': [{'gpu': '5', 'instances': changed}] + [{'gpu': str(i), 'instances': balanced} for i in range(8) if i != 5]},
                diff=True)
    assert result['changed'] is True
    assert sorted(calls) == sorted(['nvmlComputeInstanceDestroy'] * 2 + ['nvmlGpuInstanceDestroy'] * 2
                                   + ['nvmlDeviceCreateGpuInstanceWithPlacement', 'nvmlGpuInstanceCreateComputeInstanceWithPlacement'])
    for index in range(8):
        if index != 5:
            assert gi_ids(index) == before[index]
    after = gi_ids(5)
    for start in (2, 4):  # 2g.10gb at 2 and 3g.20gb at 4 kept with their ids and MIG UUIDs
        assert after[start] == before[5][start]
    assert layout(5) == [('1g.10gb', 0, ('1g.10gb',)), ('2g.10gb', 2, ('2g.10gb',)), ('3g.20gb', 4, ('3g.20gb',))]
    assert result['diff']['before']['GPU 5'] == 'MIG enabled: 1g.5gb@0:1, 1g.5gb@1:1, 2g.10gb@2:2, 3g.20gb@4:4'
    assert result['diff']['after']['GPU 5'] == 'MIG enabled: 1g.10gb@0:2, 2g.10gb@2:2, 3g.20gb@4:4'
    assert result['diff']['before']['GPU 0'] == result['diff']['after']['GPU 0']
    assert result['actions'] == ['GPU 5: destroy GPU instance 7 (1g.5gb at 0:1)', 'GPU 5: destroy GPU instance 8 (1g.5gb at 1:1)',
                                 'GPU 5: create GPU instance 1g.10gb at 0:2 with compute instances 1g.10gb']


def test_seed_003_7x1g_to_3g_plus_4x1g(node, calls):
    node('seed-003')
    assert layout(2) == [('1g.10gb', s, ('1g.10gb',)) for s in range(7)]
    result = ok({'gpus': [{'gpu': '2', 'instances': [{'profile': '3g.40gb'}, {'profile': '1g.10gb', 'count': 4}]}]})
    assert result['changed'] is True
    assert calls.count('nvmlGpuInstanceDestroy') == 3 and calls.count('nvmlDeviceCreateGpuInstanceWithPlacement') == 1
    assert layout(2) == [('1g.10gb', s, ('1g.10gb',)) for s in range(4)] + [('3g.40gb', 4, ('3g.40gb',))]
    assert layout(3) == [('1g.10gb', s, ('1g.10gb',)) for s in range(7)]


def test_check_mode_plans_without_mutation(node, calls):
    node('seed-003')
    before = state()
    result = ok({'gpus': [{'gpu': '2', 'instances': BALANCED}, {'gpu': '0', 'instances': ALL_1G}]}, check_mode=True, diff=True)
    assert result['changed'] is True and calls == []
    assert state()['gpus'] == before['gpus']
    assert result['actions'] == [
        'GPU 0: enable MIG mode',
        'GPU 0: create the instances once MIG mode is on (profile table unreadable while MIG is off)',
        'GPU 2: destroy GPU instance 7 (1g.10gb at 0:1)', 'GPU 2: destroy GPU instance 8 (1g.10gb at 1:1)',
        'GPU 2: destroy GPU instance 11 (1g.10gb at 4:1)', 'GPU 2: destroy GPU instance 12 (1g.10gb at 5:1)',
        'GPU 2: destroy GPU instance 13 (1g.10gb at 6:1)',
        'GPU 2: create GPU instance 2g.20gb at 0:2 with compute instances 2g.20gb',
        'GPU 2: create GPU instance 3g.40gb at 4:4 with compute instances 3g.40gb']
    assert result['diff']['after']['GPU 2'] == 'MIG enabled: 2g.20gb@0:2, 1g.10gb@2:1, 1g.10gb@3:1, 3g.40gb@4:4'
    assert result['diff']['after']['GPU 0'] == 'MIG enabled: no instances'


def test_running_process_refused_and_state_unchanged(node, calls):
    node('seed-003')
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', '13', '--ci', '0')
    before = state()
    result = fail({'gpus': [{'gpu': '2', 'instances': [{'profile': '7g.80gb'}]}]})
    assert result['msg'] == ('GPU 2 (%s, NVIDIA A100 80GB PCIe): refusing to destroy GPU instance 13 (1g.10gb at 6:1) used by pid 4242 '
                             '(python3); set force to destroy it anyway' % before['gpus'][2]['uuid'])
    assert calls == [] and state()['gpus'] == before['gpus']
    # A layout that keeps the busy instance goes through.
    result = ok({'gpus': [{'gpu': '2', 'instances': [{'profile': '4g.40gb'}, {'profile': '1g.10gb', 'count': 3}]}]})
    assert layout(2) == [('1g.10gb', 4, ('1g.10gb',)), ('1g.10gb', 5, ('1g.10gb',)), ('1g.10gb', 6, ('1g.10gb',)), ('4g.40gb', 0, ('4g.40gb',))]
    assert gi_ids(2)[6] == before_ids(before, 2)[6]


def before_ids(snapshot, index):
    gpu = [g for g in snapshot['gpus'] if g['index'] == index][0]
    return dict((gi['start'], (gi['id'], [ci['uuid'] for ci in gi['compute_instances']])) for gi in gpu['gpu_instances'])


def test_force_lets_the_driver_refuse_and_rolls_back(node):
    node('seed-003')
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', '13', '--ci', '0')
    before = layout(2)
    result = fail({'gpus': [{'gpu': '2', 'instances': [{'profile': '7g.80gb'}]}], 'force': True})
    assert result['msg'].startswith('GPU 2 (%s, NVIDIA A100 80GB PCIe): destroying compute instance 0 of GPU instance 13 failed: '
                                    % state()['gpus'][2]['uuid'])
    assert result['msg'].endswith('; rolled back to the layout before the call: MIG enabled: '
                                  '1g.10gb@0:1, 1g.10gb@1:1, 1g.10gb@2:1, 1g.10gb@3:1, 1g.10gb@4:1, 1g.10gb@5:1, 1g.10gb@6:1')
    assert layout(2) == before


def test_injected_error_rolls_back_to_prior_layout(node):
    node('seed-003')
    before = layout(2)
    # The 3g.40gb goes to 4:4 after three 1g are destroyed; its CI creation fails.
    sim('inject', '--call', 'nvmlGpuInstanceCreateComputeInstanceWithPlacement', '--error', 'NVML_ERROR_INSUFFICIENT_RESOURCES')
    result = fail({'gpus': [{'gpu': '2', 'instances': [{'profile': '3g.40gb'}, {'profile': '1g.10gb', 'count': 4}]}]})
    uuid = state()['gpus'][2]['uuid']
    assert result['msg'] == ('GPU 2 (%s, NVIDIA A100 80GB PCIe): creating compute instance 3g.40gb in GPU instance 2 failed: '
                             'Insufficient Resources; rolled back to the layout before the call: MIG enabled: 1g.10gb@0:1, 1g.10gb@1:1, '
                             '1g.10gb@2:1, 1g.10gb@3:1, 1g.10gb@4:1, 1g.10gb@5:1, 1g.10gb@6:1' % uuid)
    assert result['changed'] is False
    assert layout(2) == before


def test_rollback_failure_reports_what_exists(node):
    node('seed-003')
    # First creation fails, and the first re-creation during the rollback fails too.
    sim('inject', '--call', 'nvmlGpuInstanceCreateComputeInstanceWithPlacement', '--error', 'NVML_ERROR_UNKNOWN', '--count', '0')
    result = fail({'gpus': [{'gpu': '2', 'instances': [{'profile': '7g.80gb'}]}]})
    uuid = state()['gpus'][2]['uuid']
    assert result['msg'] == ('GPU 2 (%s, NVIDIA A100 80GB PCIe): creating compute instance 7g.80gb in GPU instance 0 failed: Unknown Error; '
                             'rolling back failed too (creating compute instance 1g.10gb in GPU instance 13 failed: Unknown Error); '
                             'the GPU now has MIG enabled: 1g.10gb@6:1[no compute instance]' % uuid)
    assert result['changed'] is True
    assert result['gpus'][0]['instances'] == [{'profile': '1g.10gb', 'gi_id': 13, 'placement': {'start': 6, 'size': 1}, 'compute_instances': []}]


def test_mode_change_pending_reports_reset_required(node, calls):
    node('a100-80gb-pcie-x4', auto_reset=False)
    sim('process', 'add', '--gpu', '1', '--pid', '77', '--name', 'nvidia-persistenced')
    result = fail({'gpus': [{'gpu': '1', 'instances': ALL_1G}]})
    assert result['msg'] == ('GPU 1 (%s, NVIDIA A100 80GB PCIe): refusing to enable MIG mode while processes use the GPU: pid 77 (nvidia-persistenced); '
                             'stop them or set force' % state()['gpus'][1]['uuid'])
    assert calls == []
    result = ok({'gpus': [{'gpu': '1', 'instances': ALL_1G}, {'gpu': '0', 'instances': ALL_1G}], 'force': True})
    assert result['changed'] is True
    gpus = dict((g['index'], g) for g in result['gpus'])
    assert gpus[1]['reset_required'] is True and gpus[1]['mig_mode'] == {'current': False, 'pending': True}
    assert gpus[1]['blocking_processes'] == [{'pid': 77, 'name': 'nvidia-persistenced'}]
    assert gpus[0]['reset_required'] is True and gpus[0]['blocking_processes'] == []
    assert calls == ['nvmlDeviceSetMigMode', 'nvmlDeviceSetMigMode']
    # After the reset (the role's job) the same call creates the instances.
    sim('reset', '--gpu', '0')
    del calls[:]
    result = ok({'gpus': [{'gpu': '0', 'instances': ALL_1G}]})
    assert result['changed'] is True and calls.count('nvmlDeviceCreateGpuInstanceWithPlacement') == 7
    assert layout(0) == [('1g.10gb', s, ('1g.10gb',)) for s in range(7)]


def test_disable_mig_destroys_instances_first(node):
    node('seed-003')
    result = ok({'gpus': [{'gpu': '3', 'mig': False}]})
    assert result['changed'] is True
    gpu = state()['gpus'][3]
    assert gpu['gpu_instances'] == [] and gpu['mig_current'] == 0 and gpu['mig_pending'] == 0
    assert result['actions'][0] == 'GPU 3: disable MIG mode' and len(result['actions']) == 8


def test_compute_instance_split(node):
    node('h100-80gb-x8')
    split = [{'profile': '3g.40gb', 'placement': 4, 'compute_instances': ['1c.3g.40gb', '2c.3g.40gb']}, {'profile': '4g.40gb'}]
    ok({'gpus': [{'gpu': '0', 'instances': split}]})
    assert layout(0) == [('3g.40gb', 4, ('1c.3g.40gb', '2c.3g.40gb')), ('4g.40gb', 0, ('4g.40gb',))]
    assert ok({'gpus': [{'gpu': '0', 'instances': split}]})['changed'] is False


def test_failure_messages(node):
    node('l40s-x4')
    result = fail({'gpus': [{'gpu': '0', 'instances': ALL_1G}]})
    assert result['msg'] == ('GPU 0 (%s, NVIDIA L40S) does not support MIG; set mig: false for it or select MIG GPUs with the model filter'
                             % state()['gpus'][0]['uuid'])
    result = fail({'gpus': [{'gpu': '9'}]})
    assert result['msg'] == 'gpus[0]: GPU index 9 is out of range; this node has GPU indices 0, 1, 2, 3'
    assert ok({'gpus': [{'gpu': 'all', 'mig': False}]})['changed'] is False


def test_unknown_profile_on_real_table(node, calls):
    node('seed-003')
    result = fail({'gpus': [{'gpu': 'all', 'model': 'A100', 'instances': [{'profile': '1g.5gb', 'count': 7}]}]})
    assert result['msg'] == ("GPU 0 (%s, NVIDIA A100 80GB PCIe): instances[0] profile '1g.5gb' is not a MIG profile of this GPU; "
                             "valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" % state()['gpus'][0]['uuid'])
    assert calls == []


def test_no_driver(tmp_path, monkeypatch):
    monkeypatch.setenv('NVMLSIM_STATE', str(tmp_path / 'missing.json'))
    result = fail({'gpus': [{'gpu': 'all', 'mig': False}]})
    assert result['msg'] == 'nvmlInit failed: Driver Not Loaded; is the NVIDIA driver loaded (nvidia-smi)?'


def test_missing_pynvml(monkeypatch):
    monkeypatch.setattr(nvidia_mig, 'pynvml', None)
    result = fail({'gpus': [{'gpu': 'all', 'mig': False}]})
    assert 'nvidia-ml-py' in result['msg'] and result['msg'].startswith('Failed to import the required Python library (nvidia-ml-py)')


def test_check_mode_without_pynvml_is_skipped_with_the_reason(monkeypatch, calls):
    """A dry run of a fresh node (issue 44): the nvml stage would install the bindings; the plan is skipped, saying why."""
    monkeypatch.setattr(nvidia_mig, 'pynvml', None)
    monkeypatch.setattr(nvidia_mig, 'PYNVML_IMPORT_ERROR', "the Python NVML bindings cannot be imported by /usr/bin/python3 (No module named 'pynvml')")
    result = run_module(nvidia_mig.main, {'gpus': [{'gpu': 'all', 'mig': False}]}, check_mode=True).result
    assert result.get('skipped') is True and not result.get('failed') and result['changed'] is False, result
    assert result['msg'] == ("check mode: the GPUs were not read: the Python NVML bindings cannot be imported by /usr/bin/python3 (No module "
                             "named 'pynvml'). In a real run the nvml stage (role gpucluster.bringup.nvml) installs them before this task")
    assert calls == []


def test_result_is_json(node):
    node('seed-003')
    json.dumps(ok({'gpus': [{'gpu': '3', 'instances': ALL_1G}]}))


def test_invalid_profile_on_mig_off_gpu_checked_with_the_guide_table(node, calls):
    # No GPU of the node is in MIG mode, so NVML has no profile table; the MIG User Guide's table of the model checks the request.
    node('a100-80gb-pcie-x4')
    before = state()
    result = fail({'gpus': [{'gpu': '1', 'instances': ALL_1G}, {'gpu': '0', 'instances': [{'profile': '1g.5gb'}]}]})
    assert result['msg'] == ("GPU 0 (%s, NVIDIA A100 80GB PCIe): instances[0] profile '1g.5gb' is not a MIG profile of this GPU; "
                             "valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" % before['gpus'][0]['uuid'])
    assert calls == [] and state() == before
    result = fail({'gpus': [{'gpu': '2', 'instances': [{'profile': '3g.40gb', 'count': 2}, {'profile': '1g.10gb'}]}]})
    assert result['msg'].endswith('the instances 2 x 3g.40gb, 1g.10gb cannot be placed together on this GPU (no combination of valid placements fits)')
    assert calls == [] and state() == before


def test_invalid_profile_found_after_mode_change(node, calls, monkeypatch):
    # A model the planner has no table for, with no GPU of the node in MIG mode: the table is read after the change.
    monkeypatch.setattr(_mig_plan, 'mig_profiles', lambda name: None)
    node('a100-80gb-pcie-x4')
    result = fail({'gpus': [{'gpu': '0', 'instances': [{'profile': '1g.5gb'}]}]})
    uuid = state()['gpus'][0]['uuid']
    assert result['msg'] == ("GPU 0 (%s, NVIDIA A100 80GB PCIe): instances[0] profile '1g.5gb' is not a MIG profile of this GPU; "
                             "valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb "
                             "(MIG mode was enabled on GPU 0 (%s, NVIDIA A100 80GB PCIe); no instance was created)" % (uuid, uuid))
    assert result['changed'] is True and calls == ['nvmlDeviceSetMigMode']
    assert state()['gpus'][0]['mig_current'] == 1 and state()['gpus'][0]['gpu_instances'] == []


def test_set_mode_failure(node):
    node('a100-80gb-pcie-x4')
    sim('inject', '--call', 'nvmlDeviceSetMigMode', '--error', 'NVML_ERROR_NO_PERMISSION')
    result = fail({'gpus': [{'gpu': '0'}]})
    assert result['msg'] == 'GPU 0 (%s, NVIDIA A100 80GB PCIe): enabling MIG mode failed: Insufficient Permissions' % state()['gpus'][0]['uuid']
    assert result['changed'] is False


def test_compute_instance_profile_checked_on_the_new_instance(node):
    # No 4g.40gb exists yet, so its CI table is unknown when planning; '3c.4g.40gb' passes the name check
    # and the real table (1c, 2c, 4c) refuses it after the GI exists: the GPU is rolled back.
    node('h100-80gb-x8')
    ok({'gpus': [{'gpu': '0', 'instances': [{'profile': '3g.40gb'}]}]})
    result = fail({'gpus': [{'gpu': '0', 'instances': [{'profile': '3g.40gb'}, {'profile': '4g.40gb', 'compute_instances': ['3c.4g.40gb']}]}]})
    assert result['msg'] == ('GPU 0 (%s, NVIDIA H100 80GB HBM3): GPU instance 1 offers no compute instance profile 3c.4g.40gb; '
                             'it offers 1c.4g.40gb, 2c.4g.40gb, 4g.40gb; rolled back to the layout before the call: MIG enabled: 3g.40gb@4:4'
                             % state()['gpus'][0]['uuid'])
    assert layout(0) == [('3g.40gb', 4, ('3g.40gb',))]


def test_reset_blockers_include_device_file_holders(node, tmp_path, monkeypatch):
    # nvidia-persistenced or DCGM hold /dev/nvidiaN without being NVML compute processes; this test process plays that part.
    node('a100-80gb-pcie-x4', auto_reset=False)
    dev = tmp_path / 'dev'
    dev.mkdir()
    monkeypatch.setattr(_mig_nvml, 'DEV_DIR', str(dev))
    minor = state()['gpus'][2]['minor']
    with open(str(dev / ('nvidia%d' % minor)), 'w'):
        result = ok({'gpus': [{'gpu': '2'}]})
    gpu = result['gpus'][0]
    assert gpu['reset_required'] is True
    with open('/proc/self/comm') as comm:
        me = comm.read().strip()
    assert gpu['blocking_processes'] == [{'pid': os.getpid(), 'name': me}]
    # Without the holder there is nothing to report.
    assert ok({'gpus': [{'gpu': '2'}]})['gpus'][0]['blocking_processes'] == []
