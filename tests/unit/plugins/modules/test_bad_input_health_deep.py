# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""health_deep: every bad input fails before any command (scontrol, srun) runs, naming the option, the value and what is valid."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import health_deep
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input

CASES = [
    ({'names': None}, ["argument 'names' is of type NoneType", 'convert to list']),
    ({'names': ['gpu 01']}, ["names[0] is 'gpu 01'", 'a Slurm node name']),
    ({'include_drained': 'some'}, ['include_drained', 'some', 'ours, all, none']),
    ({'reservation': 'deep health'}, ["reservation is 'deep health'", 'a Slurm reservation name']),
    ({'reservation': ''}, ["reservation is ''", 'a Slurm reservation name']),
    ({'time_limit': 0}, ['time_limit is 0', 'minutes']),
    ({'time_limit': 100000}, ['time_limit is 100000', 'minutes']),
    ({'batch_size': -2}, ['batch_size is -2']),
    ({'resume_after_passes': 0}, ['resume_after_passes is 0']),
    ({'prefix': 'gpu hc'}, ["prefix is 'gpu hc'", "the health check's reason_prefix"]),
    ({'program': 'gpucluster-healthcheck'}, ["program is", 'expected the absolute path of gpucluster-healthcheck']),
    ({'settings': {'dcgm_levl': 2}}, ['settings: unknown deep tier setting(s) dcgm_levl', 'valid settings:', 'dcgm_level']),
    ({'settings': {'dcgm_level': 7}}, ['settings: dcgm_level is 7, expected one of 1, 2, 3, 4']),
    ({'settings': {'checks': ['gpu-burn']}}, ["checks is ['gpu-burn'], expected a list of dcgm, nccl, nvbandwidth, ib-bw"]),
    ({'settings': {'checks': []}}, ['settings.checks is [], expected at least one of dcgm, nccl, nvbandwidth, ib-bw']),
    ({'settings': {'pcie_min_fraction': 0}}, ['pcie_min_fraction is 0, expected a fraction above 0 and at most 1']),
    ({'settings': {'nccl_timeout': -5}}, ['nccl_timeout is -5, expected a number of seconds above 0']),
    ({'settings': {'dcgmi': 'dcgmi'}}, ["dcgmi is 'dcgmi', expected an absolute path"]),
    ({'settings': {'nccl_env': {'BAD NAME': 1}}}, ['nccl_env is', 'expected a mapping of environment variable names to values']),
    ({'settings': {'nvbandwidth_testcases': ['host to device']}}, ['nvbandwidth_testcases is', 'nvbandwidth testcase names']),
    ({'settings': {'nccl_topology': 'h900'}}, ["unknown topology 'h900'; valid topologies:"]),
    ({'settings': {'ib_tcp_port': 22}}, ['ib_tcp_port is 22, expected a TCP port from 1024 to 65000']),
]


@pytest.fixture
def no_commands(monkeypatch):
    calls = []

    def run_command(self, args, **kwargs):
        calls.append(args)
        raise AssertionError('health_deep ran %r on bad input' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls


@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(no_commands, args, fragments):
    outcome = bad_input(health_deep.main, args, *fragments)
    assert 'drained' not in outcome.result
    assert no_commands == []
