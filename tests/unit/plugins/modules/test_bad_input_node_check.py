# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_check: every bad input fails before anything runs, naming the option, the value and what is valid.

No command may run (``run_command`` fails the test when called) and the working directory stays as it was.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import node_check
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input

CASES = [
    ({'hook_log_lines': -5}, ['hook_log_lines is -5', 'a whole number between 1 and 1000000']),
    ({'hook_log_lines': 0}, ['hook_log_lines is 0', 'between 1 and 1000000']),
    ({'hook_log_lines': 2000000}, ['hook_log_lines is 2000000', 'between 1 and 1000000']),
    ({'hook_log_lines': 'many'}, ['hook_log_lines', "'many'"]),
    ({'expect': {'gpu_count': -1}}, ['expect.gpu_count is -1', 'a whole number of at least 0']),
    ({'expect': {'gpu_count': 'eight'}}, ['expect.gpu_count', 'eight']),
    ({'expect': {'gpu_count': True}}, ['expect.gpu_count is True', 'a whole number']),
    ({'expect': {'gpu_models': ['']}}, ["expect.gpu_models[0] is ''", 'a non-empty string']),
    ({'expect': {'gpu_models': ['H100', '  ']}}, ["expect.gpu_models[1] is '  '", 'a non-empty string']),
    ({'expect': {'gpu_models': 'H100'}}, ["expect.gpu_models is 'H100'", 'a list']),
    ({'expect': {'gpu_cnt': 8}}, ['expect has unknown key(s) gpu_cnt', 'valid keys: gpu_count, gpu_models']),
    ({'services': ['slurmd', 'bad unit']}, ["services[1] is 'bad unit'", 'a systemd unit name']),
    ({'services': ['--now']}, ["services[0] is '--now'", 'not starting with "-"']),
    ({'services': ['']}, ["services[0] is ''", 'a systemd unit name']),
    ({'services': ['munge;reboot']}, ["services[0] is 'munge;reboot'", 'a systemd unit name']),
    ({'node_name': 'gpu 01'}, ["node_name is 'gpu 01'", 'a Slurm node name', 'no spaces']),
    ({'node_name': 'gpu-01,gpu-02'}, ["node_name is 'gpu-01,gpu-02'", 'no spaces, commas or "="']),
    ({'node_name': 'NodeName=x'}, ["node_name is 'NodeName=x'", 'a Slurm node name']),
    ({'node_name': '-gpu'}, ["node_name is '-gpu'", 'starting with a letter or digit']),
    ({'hook_log_ident': 'slurm hooks'}, ["hook_log_ident is 'slurm hooks'", 'a syslog identifier']),
    ({'hook_log_ident': '-t'}, ["hook_log_ident is '-t'", 'not starting with "-"']),
    ({'hook_log_ident': ''}, ["hook_log_ident is ''", 'a syslog identifier']),
    ({'hook_log_files': ['']}, ["hook_log_files[0] is ''", 'a non-empty string']),
    ({'mig_result': ['GPU 0: create 1g.10gb']}, ["argument 'mig_result' is of type list", 'convert to dict']),
    ({'mig_result': {'actions': 'GPU 0: create 1g.10gb'}}, ["mig_result.actions is 'GPU 0: create 1g.10gb'", 'expected a list']),
    ({'mig_result': {'actions': [1]}}, ['mig_result.actions[0] is 1', 'a non-empty string']),
    ({'mig_result': {'actions': [], 'gpus': 'x'}}, ["mig_result.gpus is 'x'", 'expected a list']),
    ({'mig_result': {'actions': [], 'gpus': ['x']}}, ["mig_result.gpus[0] is 'x'", 'expected a dict']),
    ({'munge_key_path': 'munge.key'}, ['munge_key_path is', 'an absolute path to a file such as /etc/munge/munge.key']),
    ({'munge_key_path': '/etc/munge/'}, ["munge_key_path is '/etc/munge/'", 'an absolute path to a file']),
    ({'munge_user': 'Munge User'}, ["munge_user is 'Munge User'", 'a user name such as "munge"']),
    ({'munge_user': ''}, ["munge_user is ''", 'a user name']),
    ({'gres_conf_path': ''}, ['gres_conf_path is', 'a non-empty string']),
    ({'checks': ['nvml', 'bogus']}, ['checks', 'bogus']),
    ({'nvml': 'perhaps'}, ['nvml', 'perhaps']),
    ({'container_gpu': 'perhaps'}, ['container_gpu', 'perhaps']),
    ({'expect': {'container_gpu': True}}, ['expect has unknown key(s) container_gpu', 'valid keys: gpu_count, gpu_models']),
    ({'unknown_option': 1}, ['unknown_option']),
]


@pytest.fixture
def no_commands(monkeypatch, tmp_path):
    def run_command(self, args, **kwargs):
        raise AssertionError('node_check ran %r on bad input' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.chdir(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(no_commands, args, fragments):
    args = dict({'nvml': False, 'hook_log': True, 'munge_roundtrip': True, 'slurm_state': True, 'enroot': True, 'pyxis': True}, **args)
    before = sorted(os.listdir(str(no_commands)))
    outcome = bad_input(node_check.main, args, *fragments)
    assert 'records' not in outcome.result
    assert sorted(os.listdir(str(no_commands))) == before
