# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""health_deep: every bad input fails before any command (scontrol, srun) runs, naming the option, the value and what is valid.

Each case also leaves the test's directory tree as it was (every path, hidden ones too, with mode and content hash):
the module writes nothing on any refused input. ``{tmp}`` in an argument is that directory, which holds a directory
``progdir`` and a file ``noexec`` that is not executable (for ``program``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import health_deep
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, snapshot

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
    # issue 42: names and the reservation go on scontrol's and srun's command lines; a leading "-" would be an option
    ({'names': ['-Hroot@host']}, ["names[0] is '-Hroot@host'", 'a Slurm node name', 'starting with a letter or digit']),
    ({'names': ['--user']}, ["names[0] is '--user'", 'a Slurm node name']),
    ({'names': ['gpu-01', '--uid=0']}, ["names[1] is '--uid=0'", 'a Slurm node name']),
    ({'names': ['gpu-01,gpu-02']}, ["names[0] is 'gpu-01,gpu-02'", 'no spaces, commas or "="']),
    ({'names': [['gpu-01']]}, ["names[0] is \"['gpu-01']\"", 'a Slurm node name']),
    ({'reservation': '-x'}, ["reservation is '-x'", 'a Slurm reservation name', 'starting with a letter or digit']),
    ({'reservation': '--uid=0'}, ["reservation is '--uid=0'", 'a Slurm reservation name']),
    ({'reservation': 'maint,x'}, ["reservation is 'maint,x'", 'no spaces, commas or "="']),
    # program: srun's program, on the nodes; absolute, one word, and where this host has the path, an executable file
    ({'program': '{tmp}/progdir'}, ['program is', 'progdir', 'which is a directory on this host', 'the gpucluster-healthcheck program on the nodes']),
    ({'program': '{tmp}/noexec'}, ['program is', 'noexec', 'which is not executable on this host', '(mode 0755)']),
    ({'program': 'bin/gpucluster-healthcheck'}, ["program is 'bin/gpucluster-healthcheck'", 'expected the absolute path of gpucluster-healthcheck']),
    ({'program': '-x'}, ["program is '-x'", 'expected the absolute path of gpucluster-healthcheck']),
    ({'program': '/usr/local/sbin/'}, ["program is '/usr/local/sbin/'", 'not ending in "/"']),
    ({'program': '/opt/gpu healthcheck'}, ["program is '/opt/gpu healthcheck'", 'no spaces']),
    ({'program': '/proc/self/exe'}, ["program is '/proc/self/exe'", 'under /proc, a kernel file system']),
    # settings of odd types and sizes: one message naming the setting, never a traceback
    ({'settings': {'nccl_timeout': [5]}}, ['settings: nccl_timeout is [5], expected a number of seconds above 0 and at most 86400']),
    ({'settings': {'nccl_timeout': 10 ** 20}}, ['settings: nccl_timeout is 100000000000000000000', 'at most 86400']),
    ({'settings': {'dcgm_timeout': True}}, ['settings: dcgm_timeout is True, expected a number of seconds']),
    ({'settings': {'ib_duration': 1e300}}, ['settings: ib_duration is 1e+300', 'at most 86400']),
    ({'settings': {'dcgm_level': 2.5}}, ['settings: dcgm_level is 2.5, expected one of 1, 2, 3, 4']),
    ({'settings': 'dcgm_level=3'}, ["settings: dcgm_level is '3', expected one of 1, 2, 3, 4"]),
    ({'settings': [1, 2]}, ["argument 'settings' is of type list", 'cannot be converted to a dict']),
    ({'settings': {'checks': 'dcgm'}}, ["checks is 'dcgm', expected a list of dcgm, nccl, nvbandwidth, ib-bw"]),
    ({'settings': {'ib_tcp_port': '18515'}}, ["ib_tcp_port is '18515', expected a TCP port from 1024 to 65000"]),
    ({'settings': {'pcie_min_fraction': '0.5'}}, ["pcie_min_fraction is '0.5', expected a fraction above 0 and at most 1"]),
    ({'settings': {'nccl_topology': ['h100']}}, ["nccl_topology is ['h100'], expected a topology name"]),
    ({'settings': {'nccl_thresholds': {'h100-nvlink-8': {'a': [1]}}}}, ["thresholds['h100-nvlink-8'] is {'a': [1]}", 'a number of GB/s above 0']),
    ({'settings': {'nccl_gate_curves': {'x': [[None, {}]]}}}, ["gate_curves['x'][0]: size None is not valid", 'a whole number of bytes']),
    ({'settings': {'nccl_min_busbw_gbps': float('inf')}}, ['min_busbw_gbps is inf, expected a number of GB/s above 0']),
    ({'settings': {'nccl_env': {'A': {'b': 1}}}}, ["nccl_env is {'A': {'b': 1}}", 'environment variable names to values']),
    ({'settings': {'nccl_args': 'x'}}, ["nccl_args is 'x', expected a list of strings"]),
    ({'settings': {'dcgmi': '-x'}}, ["dcgmi is '-x', expected an absolute path"]),
    ({'settings': {'all_reduce_perf': '/opt/all reduce'}}, ["all_reduce_perf is '/opt/all reduce', expected an absolute path"]),
    ({'settings': {'nvbandwidth_testcases': ['-t']}}, ["nvbandwidth_testcases is ['-t']", 'nvbandwidth testcase names']),
    # include_drained, numbers: wrong types and sizes
    ({'include_drained': ['ours']}, ['value of include_drained must be one of: ours, all, none', "got: ['ours']"]),
    ({'include_drained': True}, ['value of include_drained must be one of: ours, all, none', 'got: True']),
    ({'include_drained': 1}, ['value of include_drained must be one of: ours, all, none', 'got: 1']),
    ({'batch_size': 10 ** 20}, ['batch_size is 100000000000000000000', 'between 0 and 100000']),
    ({'batch_size': 'many'}, ["argument 'batch_size' is of type str", 'cannot be converted to an int']),
    ({'batch_size': 2.5}, ["argument 'batch_size' is of type float", 'cannot be converted to an int']),
    ({'time_limit': True}, ['time_limit is True, expected a whole number of minutes between 1 and 1440']),
    ({'time_limit': [60]}, ["argument 'time_limit' is of type list", 'cannot be converted to an int']),
    ({'resume_after_passes': 10 ** 20}, ['resume_after_passes is 100000000000000000000, expected a whole number between 1 and 100']),
    ({'prefix': 'gpuhc\n'}, ["prefix is 'gpuhc\\n'", "the health check's reason_prefix"]),
    ({'prefix': '-gpuhc'}, ["prefix is '-gpuhc'", 'starting with a letter']),
]


@pytest.fixture
def no_commands(monkeypatch):
    return forbid_commands(monkeypatch)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """The test's directory (the working directory too): a directory and a file that is not executable."""
    (tmp_path / 'progdir').mkdir()
    (tmp_path / 'noexec').write_text('#!/bin/sh\nexit 0\n')
    (tmp_path / 'noexec').chmod(0o644)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fill(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', str(tmp))
    if isinstance(value, list):
        return [_fill(item, tmp) for item in value]
    if isinstance(value, dict):
        return dict((key, _fill(item, tmp)) for key, item in value.items())
    return value


@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(no_commands, world, args, fragments):
    before = snapshot(world)
    outcome = bad_input(health_deep.main, _fill(args, world), *[_fill(f, world) for f in fragments])
    assert 'drained' not in outcome.result
    assert no_commands == []
    assert snapshot(world) == before
