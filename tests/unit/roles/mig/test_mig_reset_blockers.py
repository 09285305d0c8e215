# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The default MIG reset blockers name the DGX and DCGM services, and the role's stop task picks them when they run.

DGX A100 user guide, Multi-Instance GPU (https://docs.nvidia.com/dgx/dgxa100-user-guide/using-mig.html): "Stop the NVSM
and DCGM services: sudo systemctl stop nvsm dcgm" before enabling MIG. DCGM's nv-hostengine reference
(https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/nv-hostengine.html): production
installations run the host engine under nvidia-dcgm.service.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _load(*path):
    with open(os.path.join(ROOT, 'roles', 'mig', *path)) as handle:
        return yaml.safe_load(handle)


def _stop_task():
    for block in _load('tasks', 'change.yml'):
        for task in block.get('block', [block]):
            if task.get('name') == 'Stop the services that hold the GPUs':
                return task
    raise AssertionError('no stop task in roles/mig/tasks/change.yml')


def test_defaults_name_dcgm_host_engine_and_nvsm():
    blockers = _load('defaults', 'main.yml')['mig_reset_blockers']
    assert {'nvidia-dcgm', 'dcgm', 'nvsm', 'nvidia-persistenced', 'dcgm-exporter'} <= set(blockers)
    spec = _load('meta', 'argument_specs.yml')['argument_specs']['main']['options']['mig_reset_blockers']
    assert spec['default'] == blockers


@pytest.mark.parametrize('running, expected', [
    (['nvsm.service', 'nvidia-dcgm.service', 'ssh.service'], ['nvidia-dcgm.service', 'nvsm.service']),
    (['dcgm.service', 'nvidia-persistenced.service'], ['nvidia-persistenced.service', 'dcgm.service']),
    (['ssh.service', 'nvsm-core.service'], []),  # only the units named, exactly
    ([], []),
])
def test_the_stop_task_stops_the_running_default_blockers(running, expected):
    from ansible.template import Templar
    from ansible.parsing.dataloader import DataLoader
    task = _stop_task()
    assert task['loop'] == '{{ __mig_blockers }}'
    variables = {'mig_reset_blockers': _load('defaults', 'main.yml')['mig_reset_blockers'],
                 'ansible_facts': {'services': dict((name, {'state': 'running'}) for name in running)}}
    try:
        from ansible.template import trust_as_template
    except ImportError:  # ansible-core < 2.19: every string is a template
        def trust_as_template(text):
            return text
    variables.update((name, trust_as_template(text)) for name, text in task['vars'].items())
    templar = Templar(loader=DataLoader(), variables=variables)
    assert list(templar.template(trust_as_template(task['vars']['__mig_blockers']))) == expected
