# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mig role, run by a real ansible-playbook on a simulated GPU node (this
machine, local connection, the NVML simulator as pynvml), without Slurm and
without the boot unit (no systemd here): the apply path, re-apply with every
NVML change made to fail, refusals, GPU resets, and each preflight message.
The Slurm part runs in molecule/default (tests/test_mig_changes.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.tests.unit.simnode import MUTATING, annotated, node, sim, state  # noqa: F401  pylint: disable=unused-import

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')

PLAY = '''
- name: mig role on a simulated node
  hosts: gpu_nodes
  gather_facts: false
  vars:
    mig_boot_unit: false
  roles:
    - role: gpucluster.bringup.mig
'''


def playbook(tmp_path, extra, groups=None):
    """ansible-playbook of the role on this machine as host gpu-01; returns (rc, output, recap of gpu-01)."""
    groups = groups or {'gpu_nodes': {}}
    inventory = {'all': {'children': dict((name, {'hosts': {'gpu-01': None}}) for name in groups)}}
    inventory['all']['hosts'] = {'gpu-01': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'vars.json').write_text(json.dumps(dict({'mig_slurm_integration': False}, **extra)))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               # the real nvidia-ml-py for the modules; nvmlsim for the role's (simulated) GPU reset command
               PYTHONPATH=os.pathsep.join([os.environ['GPUCLUSTER_TEST_PYNVML_DIR'], os.path.join(ROOT, 'nvml_sim', 'src')]),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote-tmp'))
    done = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp_path / 'hosts.json'), str(tmp_path / 'play.yml'), '-e', '@%s' % (tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    match = re.search(r'^gpu-01\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)', done.stdout, re.M)
    recap = {'changed': int(match.group(1)), 'failed': int(match.group(2))} if match else None
    return done.returncode, done.stdout, recap


def profiles():
    return dict((gpu['index'], sorted(gi['profile'] for gi in gpu['gpu_instances'])) for gpu in annotated()['gpus'])


def gpus_state():
    return [dict((k, v) for k, v in gpu.items() if k != 'processes') for gpu in state()['gpus']]


def one_line(text):
    return ' '.join(text.split())


BALANCED_A100 = ['1g.5gb', '1g.5gb', '2g.10gb', '3g.20gb']


def test_apply_then_reapply_without_any_nvml_change(node, tmp_path):
    node('a100-40gb-x8')
    rc, output, recap = playbook(tmp_path, {'mig_layout': 'all-balanced'})
    assert rc == 0, output
    assert recap == {'changed': 1, 'failed': 0}
    assert profiles() == dict((i, BALANCED_A100) for i in range(8))
    before = gpus_state()
    for call in MUTATING:
        sim('inject', '--call', call, '--error', 'NVML_ERROR_UNKNOWN', '--count', '0')
    rc, output, recap = playbook(tmp_path, {'mig_layout': 'all-balanced'})
    assert rc == 0, output
    assert recap == {'changed': 0, 'failed': 0}
    assert gpus_state() == before


def test_a_process_on_an_instance_that_would_change_refuses_the_change(node, tmp_path):
    node('a100-40gb-x8')
    assert playbook(tmp_path, {'mig_layout': 'all-balanced'})[0] == 0
    gpu = annotated()['gpus'][2]
    three_g = [gi['id'] for gi in gpu['gpu_instances'] if gi['profile'] == '3g.20gb'][0]
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', str(three_g), '--ci', '0')
    before = gpus_state()
    rc, output, recap = playbook(tmp_path, {'mig_layout': 'all-7g'})
    assert rc == 2 and recap['failed'] == 1
    assert ('refusing to destroy GPU instance %d (3g.20gb at 4:4) used by pid 4242 (python3); set force to destroy it anyway' % three_g
            ) in output
    assert gpus_state() == before


def test_a_pending_mig_mode_is_applied_with_the_reset_command(node, tmp_path):
    node('h100-80gb-x8', auto_reset=False)
    reset = [sys.executable, '-m', 'nvmlsim', 'reset', '--gpu', '{index}']
    rc, output, recap = playbook(tmp_path, {'mig_layout': 'all-balanced', 'mig_gpu_reset_command': reset})
    assert rc == 0, output
    assert output.count('changed: [gpu-01] => (item=GPU ') == 8
    assert profiles() == dict((i, ['1g.10gb', '1g.10gb', '2g.20gb', '3g.40gb']) for i in range(8))
    assert playbook(tmp_path, {'mig_layout': 'all-balanced', 'mig_gpu_reset_command': reset})[2] == {'changed': 0, 'failed': 0}


def test_a_reset_that_does_not_apply_the_mode_stops_the_run(node, tmp_path):
    node('h100-80gb-x8', auto_reset=False)
    rc, output, _recap = playbook(tmp_path, {'mig_layout': 'all-balanced', 'mig_gpu_reset_command': ['true', '{index}']})
    assert rc == 2
    assert 'gpu-01: MIG mode of GPU(s) 0, 1, 2, 3, 4, 5, 6, 7 is still pending after true {index}; reboot the node' in one_line(output)


def test_a_process_that_blocks_a_pending_reset_is_named(node, tmp_path):
    node('h100-80gb-x8', auto_reset=False)
    import pynvml  # the simulator; MIG mode of GPU 0 left pending by somebody else
    pynvml.nvmlInit()
    pynvml.nvmlDeviceSetMigMode(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.NVML_DEVICE_MIG_ENABLE)
    pynvml.nvmlShutdown()
    sim('process', 'add', '--gpu', '0', '--pid', '4343', '--name', 'dcgm-exporter')
    rc, output, _recap = playbook(tmp_path, {'mig_layout': 'all-balanced', 'mig_gpu_reset_command': ['true']})
    assert rc == 2
    assert ('gpu-01: the MIG mode change of GPU(s) 0 needs a GPU reset, which these processes block: dcgm-exporter; '
            'add their services to mig_reset_blockers or stop them') in one_line(output)


@pytest.mark.parametrize('extra, groups, message', [
    ({'mig_layout': 'all-balancd'}, None,
     "gpu-01: mig_layout is 'all-balancd', not a shipped layout or one of mig_layouts_custom; valid layouts: all-1g, all-1g.10gb, "
     'all-1g.18gb, all-1g.5gb, all-2g, all-2g.10gb, all-2g.20gb, all-3g, all-3g.20gb, all-3g.40gb, all-4g, all-7g, all-7g.40gb, all-7g.80gb, '
     'all-balanced, all-disabled, all-enabled, h100-only, site (or "" to leave MIG alone) (role gpucluster.bringup.mig)'),
    ({'mig_layout': 'site'}, None,
     "gpu-01: layout 'site' is []; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of "
     'gpucluster.bringup.nvidia_mig) (role gpucluster.bringup.mig)'),
    ({'mig_layout': 'h100-only'}, None,
     'layout "h100-only" selects none of these GPUs of gpu-01: 0 (NVIDIA A100-SXM4-40GB), 1 (NVIDIA A100-SXM4-40GB), '
     '2 (NVIDIA A100-SXM4-40GB), 3 (NVIDIA A100-SXM4-40GB), 4 (NVIDIA A100-SXM4-40GB), 5 (NVIDIA A100-SXM4-40GB), '
     '6 (NVIDIA A100-SXM4-40GB), 7 (NVIDIA A100-SXM4-40GB); its entries select the models H100; add an entry for them '
     '(mig_layouts_custom) or set mig_require_all_gpus: false to leave them alone'),
    ({'mig_layout': 'all-balanced', 'mig_slurm_integration': True}, {'gpu_nodes': {}, 'slurm_compute': {}},
     'gpu-01: mig_slurm_integration is on and gpu-01 is in slurm_compute, but inventory group slurm_controller has no host to run '
     'scontrol on; add the controller or set mig_slurm_integration: false (role gpucluster.bringup.mig)'),
])
def test_preflight_messages(node, tmp_path, extra, groups, message):
    node('a100-40gb-x8')
    before = gpus_state()
    extra = dict(extra, mig_layouts_custom={'site': [], 'h100-only': [{'model': 'H100', 'instances': []}]})
    rc, output, _recap = playbook(tmp_path, extra, groups)
    assert rc == 2
    assert message in one_line(output), output
    assert gpus_state() == before


def test_leaving_mig_alone(node, tmp_path):
    node('a100-40gb-x8')
    before = gpus_state()
    rc, output, recap = playbook(tmp_path, {'mig_layout': ''})
    assert rc == 0 and recap['changed'] == 0, output
    assert 'Plan the layout (nothing changes)' not in output
    assert gpus_state() == before
