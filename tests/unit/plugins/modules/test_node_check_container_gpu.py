# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_check on a GPU node with enroot: is libnvidia-container's nvidia-container-cli there for enroot's NVIDIA hook?

The node is the project's NVML simulator; enroot is NVIDIA's real enroot 4.1.2 (tests/unit/realenroot.py). The
``nvidia-container-cli`` here is a STAND-IN: an empty executable file, since the check looks only for the command in
PATH (as enroot's 98-nvidia.sh does with ``command -v``) and never runs it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.modules import node_check
from ansible_collections.gpucluster.bringup.tests.unit import realenroot
from ansible_collections.gpucluster.bringup.tests.unit.simnode import run_nvmlsim, use_node


def run_module(capsys, **args):
    args = dict({'services': [], 'munge_roundtrip': False, 'munge_key_check': False, 'slurm_state': False, 'node_name': 'gpu-01',
                 'checks': ['nvml', 'enroot']}, **args)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            node_check.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def gpu_node(tmp_path, monkeypatch):
    """A simulated H100 node whose PATH holds the real enroot and tmp_path/bin (where a test may put the CLI stand-in)."""
    use_node(tmp_path, monkeypatch)
    run_nvmlsim('create', '--preset', 'h100-80gb-x8', '--mig-minors', str(tmp_path / 'mig-minors'))
    real = realenroot.env({'PATH': '/usr/bin:/bin'})
    (tmp_path / 'bin').mkdir()
    monkeypatch.setenv('PATH', str(tmp_path / 'bin') + ':' + real['PATH'])
    for key, value in (('ENROOT_LIBRARY_PATH', real['ENROOT_LIBRARY_PATH']), ('ENROOT_RUNTIME_PATH', str(tmp_path / 'run')),
                       ('ENROOT_CACHE_PATH', str(tmp_path / 'cache')), ('ENROOT_DATA_PATH', str(tmp_path / 'data'))):
        monkeypatch.setenv(key, value)
    conf = tmp_path / 'enroot.conf'
    conf.write_text('ENROOT_ALLOW_HTTP no\n')
    return tmp_path


def cli_standin(node):
    path = node / 'bin' / 'nvidia-container-cli'
    path.write_text('')
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize('container_gpu', [True, False])
def test_cli_present(gpu_node, capsys, container_gpu):
    cli = cli_standin(gpu_node)
    result = run_module(capsys, enroot=True, container_gpu=container_gpu, enroot_conf_path=str(gpu_node / 'enroot.conf'))
    record = [r for r in result['records'] if r['check'] == 'enroot'][0]
    assert record['status'] == 'pass'
    assert record['reason'] == 'enroot 4.1.2 installed, %s present, %s for its NVIDIA hook (GPU containers)' % (gpu_node / 'enroot.conf', cli)


def test_cli_absent_and_required_fails(gpu_node, capsys):
    result = run_module(capsys, enroot=True, container_gpu=True, enroot_conf_path=str(gpu_node / 'enroot.conf'))
    record = [r for r in result['records'] if r['check'] == 'enroot'][0]
    assert record['status'] == 'fail' and result['failed_checks'] == ['enroot']
    assert "but nvidia-container-cli (libnvidia-container's tools) is not in PATH" in record['reason']
    assert record['reason'].endswith('install libnvidia-container-tools (or set validate_node.container_gpu to false where no GPU container runs)')


def test_cli_absent_not_required_passes_naming_it(gpu_node, capsys):
    result = run_module(capsys, enroot=True, enroot_conf_path=str(gpu_node / 'enroot.conf'))  # container_gpu defaults to false
    record = [r for r in result['records'] if r['check'] == 'enroot'][0]
    assert record['status'] == 'pass' and result['passed'] is True
    assert record['reason'].endswith('so GPU containers cannot start (not required: validate_node.container_gpu is false)')


def test_not_a_gpu_node_does_not_look(gpu_node, capsys):
    result = run_module(capsys, nvml=False, enroot=True, container_gpu=True, enroot_conf_path=str(gpu_node / 'enroot.conf'))
    record = [r for r in result['records'] if r['check'] == 'enroot'][0]
    assert record == {'stage': 'node', 'node': 'gpu-01', 'check': 'enroot', 'status': 'pass',
                      'reason': 'enroot 4.1.2 installed, %s present' % (gpu_node / 'enroot.conf')}
