# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The boot program of the mig role (roles/mig/files/gpucluster_mig_boot.py) and the
role's layout catalogue, against the project's NVML simulator.

Each test makes a simulated node (``nvmlsim create``) in a temporary
``NVMLSIM_STATE``/``NVMLSIM_ROOT``; ``nvmlsim reboot`` is what a reboot does to
MIG (instances gone, MIG mode kept).  The state is read back through the
simulator to check what really changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._mig_layouts import LAYOUTS
from ansible_collections.gpucluster.bringup.tests.unit.nodelib import install_library
from ansible_collections.gpucluster.bringup.tests.unit.simnode import annotated, calls, node, sim, state  # noqa: F401  pylint: disable=unused-import

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PROGRAM = os.path.join(ROOT, 'roles', 'mig', 'files', 'gpucluster_mig_boot.py')

_loader = importlib.machinery.SourceFileLoader('gpucluster_mig_boot', PROGRAM)
_spec = importlib.util.spec_from_loader('gpucluster_mig_boot', _loader)
boot = importlib.util.module_from_spec(_spec)
_loader.exec_module(boot)


def write_layout(tmp_path, name, gpus=None):
    path = tmp_path / 'mig-layout.json'
    path.write_text(json.dumps({'layout': name, 'gpus': LAYOUTS[name] if gpus is None else gpus}))
    return str(path)


def layouts():
    """{gpu index: sorted [(profile, start)]} from the simulator's state."""
    return dict((gpu['index'], sorted((gi['profile'], gi['start']) for gi in gpu['gpu_instances'])) for gpu in annotated()['gpus'])


def uuids():
    return sorted(ci['uuid'] for gpu in state()['gpus'] for gi in gpu['gpu_instances'] for ci in gi['compute_instances'])


BALANCED_H100 = [('1g.10gb', 0), ('1g.10gb', 1), ('2g.20gb', 2), ('3g.40gb', 4)]


def test_boot_recreates_the_layout_after_a_reboot_and_then_changes_nothing(node, calls, tmp_path, capsys):
    node('h100-80gb-x8')
    path = write_layout(tmp_path, 'all-balanced')
    assert boot.main(['--layout-file', path]) == 0
    assert layouts() == dict((i, BALANCED_H100) for i in range(8))
    before = uuids()
    sim('reboot')
    assert layouts() == dict((i, []) for i in range(8))
    capsys.readouterr()
    del calls[:]
    assert boot.main(['--layout-file', path]) == 0
    out = capsys.readouterr().out
    assert 'gpucluster-mig-boot: layout all-balanced applied (32 action(s)) on 8 GPU(s)' in out
    assert 'gpucluster-mig-boot: GPU 0: create GPU instance 3g.40gb at 4:4 with compute instances 3g.40gb' in out
    assert layouts() == dict((i, BALANCED_H100) for i in range(8))
    assert uuids() == before  # same placements, same GI ids, same MIG UUIDs as before the reboot
    assert 'nvmlDeviceSetMigMode' not in calls  # MIG mode survived the reboot
    del calls[:]
    assert boot.main(['--layout-file', path]) == 0
    assert calls == []
    assert 'layout all-balanced already in place on 8 GPU(s)' in capsys.readouterr().out


def test_check_mode_plans_and_changes_nothing(node, calls, tmp_path, capsys):
    node('a100-40gb-x8')
    path = write_layout(tmp_path, 'all-1g')
    assert boot.main(['--layout-file', path, '--check']) == 0
    out = capsys.readouterr().out
    assert calls == []
    assert 'GPU 3: enable MIG mode' in out
    assert 'layout all-1g would take 16 action(s) on 8 GPU(s)' in out
    assert layouts() == dict((i, []) for i in range(8))


def test_a_process_on_an_instance_is_never_destroyed(node, calls, tmp_path, capsys):
    node('h100-80gb-x8')
    assert boot.main(['--layout-file', write_layout(tmp_path, 'all-balanced')]) == 0
    sim('process', 'add', '--gpu', '2', '--pid', '4242', '--name', 'python3', '--gi', '2', '--ci', '0')
    before = layouts()
    capsys.readouterr()
    del calls[:]
    assert boot.main(['--layout-file', write_layout(tmp_path, 'all-7g')]) == 1
    err = capsys.readouterr().err
    assert err.startswith('gpucluster-mig-boot: error: GPU 2 (GPU-')
    assert 'refusing to destroy GPU instance 2 (3g.40gb at 4:4) used by pid 4242 (python3); set force to destroy it anyway' in err
    assert calls == [] and layouts() == before


def test_a_pending_mode_change_is_reported_with_its_blockers(node, tmp_path, capsys):
    node('a100-40gb-x8', auto_reset=False)
    path = write_layout(tmp_path, 'all-enabled', [{'gpu': 0, 'mig': True}])
    assert boot.main(['--layout-file', path]) == 1
    out = capsys.readouterr().out
    assert 'gpucluster-mig-boot: GPU 0: enable MIG mode' in out
    assert ('): the MIG mode change is pending until the GPU is reset; processes that block the reset: none' in out)
    sim('reset', '--gpu', '0')
    assert boot.main(['--layout-file', path]) == 0


@pytest.mark.parametrize('content, message', [
    (None, 'cannot read the layout file {path}: No such file or directory'),
    ('{not json', 'the layout file {path} is not JSON: '),
    ('[]', 'the layout file {path} must hold {{"layout": NAME, "gpus": [...]}}'),
    ('{"layout": "x", "gpus": []}', '"gpus" is []; it must be a non-empty list of GPU entries'),
    ('{"gpus": ["all"]}', "gpus[0] is 'all'; each entry is a mapping with keys gpu, model, mig, instances"),
    ('{"gpus": [{"gpus": "all"}]}', 'gpus[0] has unknown key(s) gpus; valid keys: gpu, model, mig, instances'),
    ('{"gpus": [{"instances": {"profile": "1g.10gb"}}]}', "gpus[0].instances is {{'profile': '1g.10gb'}}; it must be a list"),
    ('{"gpus": [{"instances": ["1g.10gb"]}]}',
     "gpus[0].instances[0] is '1g.10gb'; each instance is a mapping with \"profile\" (and count, placement, compute_instances)"),
    ('{"gpus": [{"instances": [{"profile": "1g.10gb", "size": 2}]}]}',
     'gpus[0].instances[0] has unknown key(s) size; valid keys: profile, count, placement, compute_instances'),
    ('{"gpus": [{"instances": [{"count": 2}]}]}', 'gpus[0].instances[0] has no "profile"'),
])
def test_bad_layout_files_exit_2_with_one_message(node, tmp_path, capsys, content, message):
    node('h100-80gb-x8')
    path = tmp_path / 'layout.json'
    if content is not None:
        path.write_text(content)
    assert boot.main(['--layout-file', str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('gpucluster-mig-boot: error: ' + message.format(path=path)), err


def test_an_invalid_layout_is_refused_before_anything_changes(node, calls, tmp_path, capsys):
    node('a100-40gb-x8')
    assert boot.main(['--layout-file', write_layout(tmp_path, 'all-1g')]) == 0
    del calls[:]
    capsys.readouterr()
    too_many = [{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 7}]}]
    assert boot.main(['--layout-file', write_layout(tmp_path, 'too-many', too_many)]) == 1
    err = capsys.readouterr().err
    assert 'too many 1g.10gb instances: 7 wanted, this GPU allows at most 4' in err
    assert calls == []


def role_library():
    """The module_utils files roles/mig/vars/main.yml hands to the node_library filter for the boot program."""
    with open(os.path.join(ROOT, 'roles', 'mig', 'vars', 'main.yml')) as handle:
        expression = yaml.safe_load(handle)['_mig_boot_library']
    match = re.match(r"^\{\{ (\[.*\]) \| gpucluster\.bringup\.node_library\(_mig_boot_lib_dir\) \}\}$", expression)
    assert match, expression
    return ast.literal_eval(match.group(1))


def test_installed_like_the_role_does_it_runs_without_ansible(node, tmp_path):
    """The program as the role installs it: #! line, library copied under LIB_DIR, a Python without Ansible (-S)."""
    node('a100-40gb-x8')
    lib = tmp_path / 'lib'
    installed = install_library(lib, role_library())
    assert any(path.endswith('/module_utils/_nvml.py') for path in installed)  # found by following the imports
    program = tmp_path / 'gpucluster-mig-boot'
    with open(PROGRAM) as source:
        program.write_text('#!%s -S\n%s' % (sys.executable, source.read()))
    program.chmod(0o755)
    env = dict(os.environ, GPUCLUSTER_MIG_LIB=str(lib), PYTHONPATH=os.environ['GPUCLUSTER_TEST_PYNVML_DIR'])
    probe = subprocess.run([sys.executable, '-S', '-c', 'import ansible'], env=env, capture_output=True, text=True, check=False)
    assert probe.returncode != 0  # Ansible really is out of reach
    assert 'ansible.module_utils.basic' not in program.read_text()  # and no stand-in for it is needed
    done = subprocess.run([str(program), '--layout-file', write_layout(tmp_path, 'all-balanced')], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == 'gpucluster-mig-boot: layout all-balanced applied (48 action(s)) on 8 GPU(s)'
    assert layouts() == dict((i, [('1g.5gb', 0), ('1g.5gb', 1), ('2g.10gb', 2), ('3g.20gb', 4)]) for i in range(8))
    missing = subprocess.run([str(program), '--layout-file', write_layout(tmp_path, 'all-balanced')],
                             env=dict(env, GPUCLUSTER_MIG_LIB=str(tmp_path / 'nowhere')), capture_output=True, text=True, check=False)
    assert missing.returncode == 2
    assert missing.stderr.startswith('gpucluster-mig-boot: error: cannot load the MIG manager from %s: ' % (tmp_path / 'nowhere'))


# ----------------------------------------------------------------- the catalogue

MIG_PRESETS = ('a100-40gb-x8', 'a100-80gb-pcie-x4', 'h100-80gb-x8', 'h200-x8', 'b200-x8', 'gb300-x4')
# Per preset: the profiles of one GPU after each model-aware layout.
EXPECTED = {
    'a100-40gb-x8': {'all-balanced': ['1g.5gb', '1g.5gb', '2g.10gb', '3g.20gb'], 'all-1g': ['1g.5gb'] * 7, 'all-2g': ['2g.10gb'] * 3,
                     'all-3g': ['3g.20gb'] * 2, 'all-7g': ['7g.40gb']},
    'a100-80gb-pcie-x4': {'all-balanced': ['1g.10gb', '1g.10gb', '2g.20gb', '3g.40gb'], 'all-1g': ['1g.10gb'] * 7,
                          'all-2g': ['2g.20gb'] * 3, 'all-3g': ['3g.40gb'] * 2, 'all-7g': ['7g.80gb']},
    'h100-80gb-x8': {'all-balanced': ['1g.10gb', '1g.10gb', '2g.20gb', '3g.40gb'], 'all-1g': ['1g.10gb'] * 7, 'all-2g': ['2g.20gb'] * 3,
                     'all-3g': ['3g.40gb'] * 2, 'all-7g': ['7g.80gb']},
    'h200-x8': {'all-balanced': ['1g.18gb', '1g.18gb', '2g.35gb', '3g.71gb'], 'all-1g': ['1g.18gb'] * 7, 'all-2g': ['2g.35gb'] * 3,
                'all-3g': ['3g.71gb'] * 2, 'all-7g': ['7g.141gb']},
}
# The Blackwell presets: no layout names their profiles; the shapes find them in each GPU's table.
EXPECTED['b200-x8'] = {'all-balanced': ['1g.23gb', '1g.23gb', '2g.45gb', '3g.90gb'], 'all-1g': ['1g.23gb'] * 7, 'all-2g': ['2g.45gb'] * 3,
                       'all-3g': ['3g.90gb'] * 2, 'all-7g': ['7g.180gb']}
EXPECTED['gb300-x4'] = {'all-balanced': ['1g.35gb', '1g.35gb', '2g.70gb', '3g.139gb'], 'all-1g': ['1g.35gb'] * 7,
                        'all-2g': ['2g.70gb'] * 3, 'all-3g': ['3g.139gb'] * 2, 'all-7g': ['7g.278gb']}
for _preset, _four in (('a100-40gb-x8', '4g.20gb'), ('a100-80gb-pcie-x4', '4g.40gb'), ('h100-80gb-x8', '4g.40gb'), ('h200-x8', '4g.71gb'),
                       ('b200-x8', '4g.90gb'), ('gb300-x4', '4g.139gb')):
    EXPECTED[_preset]['all-4g'] = [_four]
GPU_COUNT = {'a100-40gb-x8': 8, 'a100-80gb-pcie-x4': 4, 'h100-80gb-x8': 8, 'h200-x8': 8, 'b200-x8': 8, 'gb300-x4': 4}


@pytest.mark.parametrize('preset', MIG_PRESETS)
@pytest.mark.parametrize('name', ['all-balanced', 'all-1g', 'all-2g', 'all-3g', 'all-4g', 'all-7g'])
def test_model_aware_layouts_cover_every_gpu_with_its_own_profiles(node, tmp_path, preset, name):
    node(preset)
    assert boot.main(['--layout-file', write_layout(tmp_path, name)]) == 0
    want = sorted(EXPECTED[preset][name])
    got = layouts()
    assert sorted(got) == list(range(GPU_COUNT[preset]))
    for index in got:
        assert sorted(profile for profile, _start in got[index]) == want


@pytest.mark.parametrize('name, preset, message', [
    ('all-1g.5gb', 'a100-40gb-x8', None),
    ('all-1g.10gb', 'h100-80gb-x8', None),
    ('all-1g.10gb', 'a100-80gb-pcie-x4', None),
    ('all-1g.18gb', 'h200-x8', None),
    ('all-2g.10gb', 'a100-40gb-x8', None),
    ('all-2g.20gb', 'h100-80gb-x8', None),
    ('all-3g.20gb', 'a100-40gb-x8', None),
    ('all-3g.40gb', 'h100-80gb-x8', None),
    ('all-7g.40gb', 'a100-40gb-x8', None),
    ('all-7g.80gb', 'a100-80gb-pcie-x4', None),
    ('all-enabled', 'h200-x8', None),
    ('all-disabled', 'h100-80gb-x8', None),
    # all-<profile>: as many as the GPU allows (4 x 1g.10gb on an A100 40GB, where mig-parted's all-1g.10gb gives 4 too)
    ('all-1g.10gb', 'a100-40gb-x8', None),
    ('all-1g.5gb', 'h100-80gb-x8', "shape '1g.5gb' is not a MIG profile of this GPU nor one of 1g, 2g, 3g, 4g, 7g, balanced; "
                                   "valid profiles: 1g.10gb, 1g.10gb+me, 1g.20gb"),
    ('all-7g.80gb', 'a100-40gb-x8', "shape '7g.80gb' is not a MIG profile of this GPU nor one of 1g, 2g, 3g, 4g, 7g, balanced; "
                                    "valid profiles: 1g.5gb"),
    ('all-enabled', 'l40s-x4', 'does not support MIG; set mig: false for it or select MIG GPUs with the model filter'),
])
def test_profile_named_layouts(node, tmp_path, capsys, name, preset, message):
    node(preset)
    path = write_layout(tmp_path, name)
    # A GPU with MIG off cannot report its profiles: turn MIG on first so that the layout is validated.
    if message and 'profile' in message:
        assert boot.main(['--layout-file', write_layout(tmp_path, 'all-enabled')]) == 0
        path = write_layout(tmp_path, name)
    status = boot.main(['--layout-file', path])
    err = capsys.readouterr().err
    if message is None:
        assert status == 0, err
    else:
        assert status == 1 and message in err, err


def test_every_catalogue_entry_uses_only_the_module_keys():
    for name, entries in LAYOUTS.items():
        assert boot.normalise(entries), name


def test_a_python_without_pynvml_is_named(node, tmp_path, capsys, monkeypatch):
    node('h100-80gb-x8')
    monkeypatch.setitem(sys.modules, 'pynvml', None)  # import pynvml raises ImportError
    assert boot.main(['--layout-file', write_layout(tmp_path, 'all-balanced')]) == 2
    assert capsys.readouterr().err == ('gpucluster-mig-boot: error: the Python NVML bindings cannot be imported by %s (import of '
                                       'pynvml halted; None in sys.modules; nor is there /usr/local/lib/gpucluster-nvml/pynvml.py); '
                                       'install nvidia-ml-py (the gpucluster.bringup.nvml role: Debian python3-pynvml, or '
                                       'nvml_bindings: pip)\n' % sys.executable)
