# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_baseline refuses bad input with one message, before NVML is opened or a command runs.

Each case runs the module in-process (modrun) against a test directory holding a valid InfiniBand
sysfs tree, a kernel module tree and a driver version file (the defaults of every case) beside
decoys (a directory that is no InfiniBand tree, a cpuinfo-like file, a binary file, a FIFO), and
asserts: the module failed, the message names the option, the bad value and what is valid, NVML
was never opened, no command ran, and nothing under the test directory changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import gpu_baseline
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, snapshot

VERSION_TEXT = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@U16)  Thu Mar 27 2025\n'
                'GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n')
CHECKS = 'one or more of driver, persistence, fabric-manager, gpudirect, reset-blockers'
UNIT = 'a systemd unit name such as "dcgm" or "dcgm.service"'
VERSION = 'a driver version such as "550.54.14"'
IB = 'the InfiniBand sysfs tree such as /sys/class/infiniband'
MODULES = 'the directory of the loaded kernel modules such as /sys/module'
DRIVER = "the NVIDIA driver's version file such as /proc/driver/nvidia/version"

# (id, arguments ({tmp} is the test directory), fragments of the message ({tmp} too))
CASES = [
    # checks
    ('checks-empty', {'checks': []}, ['checks is [], expected', CHECKS]),
    ('checks-unknown', {'checks': ['gpu-burn']}, ['checks', 'gpu-burn', 'driver, persistence, fabric-manager, gpudirect, reset-blockers']),
    # driver_min
    ('driver-min-empty', {'driver_min': ''}, ["driver_min is ''", VERSION]),
    ('driver-min-blank', {'driver_min': '   '}, ["driver_min is '   '", VERSION]),
    ('driver-min-word', {'driver_min': 'r570'}, ["driver_min is 'r570'", VERSION]),
    ('driver-min-trailing-dot', {'driver_min': '550.54.'}, ["driver_min is '550.54.'", VERSION]),
    ('driver-min-negative', {'driver_min': '-550'}, ["driver_min is '-550'", VERSION]),
    # gpudirect
    ('gpudirect-unknown', {'gpudirect': 'always'}, ['gpudirect', 'always', 'auto, required']),
    # stopped_services
    ('service-empty', {'stopped_services': ['']}, ["stopped_services[0] is ''", UNIT]),
    ('service-blank', {'stopped_services': ['dcgm', '  ']}, ["stopped_services[1] is '  '", UNIT]),
    ('service-space', {'stopped_services': ['dcgm exporter']}, ["stopped_services[0] is 'dcgm exporter'", UNIT]),
    ('service-option', {'stopped_services': ['-Hroot@host']}, ["stopped_services[0] is '-Hroot@host'", UNIT, 'not starting with "-"']),
    ('service-only-suffix', {'stopped_services': ['.service']}, ["stopped_services[0] is '.service'", UNIT]),
    ('service-slash', {'stopped_services': ['../dcgm']}, ["stopped_services[0] is '../dcgm'", UNIT]),
    # node_name
    ('node-name-empty', {'node_name': ''}, ["node_name is ''", 'a node name']),
    ('node-name-blank', {'node_name': '   '}, ["node_name is '   '", 'a node name']),
    ('node-name-space', {'node_name': 'gpu 01'}, ["node_name is 'gpu 01'", 'a node name']),
    # ib_sysfs_root
    ('ib-relative', {'ib_sysfs_root': 'sys/class/infiniband'}, ["ib_sysfs_root is 'sys/class/infiniband'", 'an absolute path', IB]),
    ('ib-empty', {'ib_sysfs_root': ''}, ["ib_sysfs_root is ''", 'an absolute path']),
    ('ib-not-ib-dir', {'ib_sysfs_root': '{tmp}/notib'},
     ["ib_sysfs_root is '{tmp}/notib'", "'README', 'x' are not InfiniBand devices (a directory with ports/)", IB]),
    ('ib-file', {'ib_sysfs_root': '{tmp}/afile'}, ["ib_sysfs_root is '{tmp}/afile'", 'not a directory', IB]),
    ('ib-proc', {'ib_sysfs_root': '/proc'}, ["ib_sysfs_root is '/proc'", 'under /proc', IB]),
    ('ib-proc-missing', {'ib_sysfs_root': '/proc/nothere/infiniband'}, ["ib_sysfs_root is '/proc/nothere/infiniband'", 'under /proc']),
    ('ib-nul', {'ib_sysfs_root': '{tmp}/ib\x00x'}, ['ib_sysfs_root is', 'an absolute path', IB]),
    # module_root
    ('modules-missing', {'module_root': '{tmp}/nomodules'}, ["module_root is '{tmp}/nomodules'", 'does not exist', MODULES]),
    ('modules-file', {'module_root': '{tmp}/afile'}, ["module_root is '{tmp}/afile'", 'not a directory', MODULES]),
    ('modules-files-inside', {'module_root': '{tmp}/notib'}, ["module_root is '{tmp}/notib'", "'README' are not module directories", MODULES]),
    ('modules-proc', {'module_root': '/proc'}, ["module_root is '/proc'", 'under /proc', MODULES]),
    ('modules-relative', {'module_root': 'sys/module'}, ["module_root is 'sys/module'", 'an absolute path']),
    # driver_proc
    ('driver-proc-dir', {'driver_proc': '/proc'}, ["driver_proc is '/proc'", 'a directory', DRIVER]),
    ('driver-proc-cpuinfo', {'driver_proc': '/proc/cpuinfo'}, ["driver_proc is '/proc/cpuinfo'", 'NVRM version:', DRIVER]),
    ('driver-proc-other-text', {'driver_proc': '{tmp}/cpuinfo'}, ["driver_proc is '{tmp}/cpuinfo'", 'NVRM version:', DRIVER]),
    ('driver-proc-binary', {'driver_proc': '{tmp}/binary'}, ["driver_proc is '{tmp}/binary'", 'NVRM version:']),
    ('driver-proc-empty-file', {'driver_proc': '{tmp}/empty'}, ["driver_proc is '{tmp}/empty'", 'NVRM version:']),
    ('driver-proc-fifo', {'driver_proc': '{tmp}/fifo'}, ["driver_proc is '{tmp}/fifo'", 'not a regular file', DRIVER]),
    ('driver-proc-device', {'driver_proc': '/dev/null'}, ["driver_proc is '/dev/null'", 'not a regular file', DRIVER]),
    ('driver-proc-relative', {'driver_proc': 'version'}, ["driver_proc is 'version'", 'an absolute path']),
    ('driver-proc-tmp-dir', {'driver_proc': '{tmp}'}, ["driver_proc is '{tmp}'", 'a directory']),
]


class NoNvml(object):
    """Stands for the NVML bindings: any use is recorded and fails the test."""

    def __init__(self):
        self.used = []

    def __getattr__(self, name):
        self.used.append(name)
        raise AssertionError('gpu_baseline used NVML (%s) on bad input' % name)


@pytest.fixture
def host(tmp_path, monkeypatch):
    tmp = tmp_path / 'host'
    port = tmp / 'ib' / 'mlx5_0' / 'ports' / '1'
    port.mkdir(parents=True)
    (port / 'link_layer').write_text('InfiniBand\n')
    (port / 'state').write_text('4: ACTIVE\n')
    (tmp / 'modules' / 'nvidia').mkdir(parents=True)
    (tmp / 'modules' / 'nvidia_peermem').mkdir()
    (tmp / 'version').write_text(VERSION_TEXT)
    (tmp / 'notib' / 'x').mkdir(parents=True)
    (tmp / 'notib' / 'README').write_text('not a sysfs tree\n')
    (tmp / 'afile').write_text('a file\n')
    (tmp / 'cpuinfo').write_text('processor\t: 0\nvendor_id\t: GenuineIntel\n')
    (tmp / 'binary').write_bytes(b'\x7fELF\x02\x01\x01\xff\xfe\x00\x00' * 20)
    (tmp / 'empty').write_text('')
    os.mkfifo(str(tmp / 'fifo'))
    calls = forbid_commands(monkeypatch)
    nvml = NoNvml()
    monkeypatch.setattr(gpu_baseline, 'BINDINGS', (nvml, None))
    return {'tmp': str(tmp), 'calls': calls, 'nvml': nvml}


def _fill(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', tmp)
    if isinstance(value, list):
        return [_fill(item, tmp) for item in value]
    return value


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check'])
@pytest.mark.parametrize('options, fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error(host, options, fragments, check_mode):
    tmp = host['tmp']
    args = {'ib_sysfs_root': tmp + '/ib', 'module_root': tmp + '/modules', 'driver_proc': tmp + '/version', 'node_name': 'gpu-01',
            'checks': ['driver', 'persistence', 'fabric-manager', 'gpudirect', 'reset-blockers']}
    args.update(dict((key, _fill(value, tmp)) for key, value in options.items()))
    before = snapshot(tmp)
    outcome = bad_input(gpu_baseline.main, args, *[_fill(f, tmp) for f in fragments], check_mode=check_mode)
    assert 'observed' not in outcome.result and 'failures' not in outcome.result, outcome.result
    assert host['nvml'].used == [] and host['calls'] == []
    assert snapshot(tmp) == before


def test_the_valid_tree_of_the_cases_passes_validation(host):
    """The cases' defaults are valid: with them the module goes on to NVML (and the stand-in stops it there)."""
    tmp = host['tmp']
    args = {'ib_sysfs_root': tmp + '/ib', 'module_root': tmp + '/modules', 'driver_proc': tmp + '/version', 'node_name': 'gpu-01',
            'stopped_services': ['dcgm', 'nvidia-persistenced.service', 'getty@tty1'], 'driver_min': '550.54.14'}
    with pytest.raises(AssertionError, match='used NVML'):
        bad_input(gpu_baseline.main, args)
    # an absent InfiniBand tree is a node without InfiniBand, an empty one too; a missing version file is a node state
    for extra in ({'ib_sysfs_root': tmp + '/noib'}, {'ib_sysfs_root': tmp + '/modules/nvidia'}, {'driver_proc': tmp + '/noversion'}):
        host['nvml'].used[:] = []
        with pytest.raises(AssertionError, match='used NVML'):
            bad_input(gpu_baseline.main, dict(args, **extra))


def test_there_are_enough_cases():
    assert len(CASES) >= 25
    assert len(set(c[0] for c in CASES)) == len(CASES)
