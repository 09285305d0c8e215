# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gpu_baseline compared whole (issue 43): every refusal of check_params, every failure text, both sides of the
DMA-BUF limits, the readers' defaults and their answers when a file cannot be read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError

VERSION_TEXT = 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build\nGCC version:  gcc 12\n'
IB = 'the InfiniBand sysfs tree such as /sys/class/infiniband (absent where the node has no InfiniBand)'
MODULES = 'the directory of the loaded kernel modules such as /sys/module (a directory per module)'
DRIVER = "the NVIDIA driver's version file such as /proc/driver/nvidia/version"
UNIT = ('a systemd unit name such as "dcgm" or "dcgm.service" (letters, digits, ":", "_", ".", "\\", "@" and "-", '
        'not starting with "-" or "@", at most 256 characters)')


@pytest.fixture
def tree(tmp_path):
    (tmp_path / 'ib' / 'mlx5_0' / 'ports').mkdir(parents=True)
    (tmp_path / 'modules' / 'nvidia').mkdir(parents=True)
    (tmp_path / 'version').write_text(VERSION_TEXT)
    return str(tmp_path)


def params(tree, **extra):
    out = {'checks': ['driver'], 'ib_sysfs_root': tree + '/ib', 'module_root': tree + '/modules', 'driver_proc': tree + '/version'}
    out.update(extra)
    return out


def refusal(call, *args):
    with pytest.raises(InputError) as caught:
        call(*args)
    return str(caught.value)


def test_check_params_returns_the_same_params_and_takes_every_default(tree):
    given = params(tree, stopped_services=None, driver_min=None, node_name=None)
    assert gb.check_params(given) is given
    assert gb.check_params(params(tree, driver_min='550.54.14', stopped_services=['dcgm', 'x.service'], node_name='n' * 255))['node_name'] == 'n' * 255


@pytest.mark.parametrize('extra, message', [
    ({'checks': []}, 'checks is [], expected one or more of driver, persistence, fabric-manager, gpudirect, reset-blockers'),
    ({'checks': None}, 'checks is None, expected one or more of driver, persistence, fabric-manager, gpudirect, reset-blockers'),
    ({'driver_min': 'r570'}, "driver_min is 'r570', expected a driver version such as \"550.54.14\" (or no value: the oldest driver the "
                             "GPU models support)"),
    ({'stopped_services': ['dcgm', 'a b']}, "stopped_services[1] is 'a b', expected " + UNIT),
    ({'node_name': 'n' * 256}, "node_name is %s, expected a node name (no spaces, at most 255 characters; no value: the short host name)"
     % ("'" + 'n' * 116 + '...')),
    ({'node_name': 'gpu 01'}, "node_name is 'gpu 01', expected a node name (no spaces, at most 255 characters; no value: the short host name)"),
])
def test_check_params_refusals_whole(tree, extra, message):
    assert refusal(gb.check_params, params(tree, **extra)) == message


def test_check_params_checks_the_trees_in_order(tree):
    bad = tree + '/nothere'
    assert refusal(gb.check_params, params(tree, ib_sysfs_root='rel', module_root=bad)) == \
        "ib_sysfs_root is 'rel', expected an absolute path: " + IB
    assert refusal(gb.check_params, params(tree, module_root=bad, driver_proc='rel')) == \
        "module_root is '%s', which does not exist; expected %s" % (bad, MODULES)
    assert refusal(gb.check_params, params(tree, driver_proc='rel')) == "driver_proc is 'rel', expected an absolute path: " + DRIVER


def test_tree_paths_come_back_as_given(tree):
    given = tree + '//ib/'
    assert gb.check_ib_root('ib', given) == given
    assert gb.check_ib_root('ib', tree + '/noib/') == tree + '/noib/'
    assert gb.check_module_root('m', tree + '//modules') == tree + '//modules'
    assert gb.check_driver_proc('d', tree + '//version') == tree + '//version'
    assert gb.check_driver_proc('d', tree + '/noversion') == tree + '/noversion'
    assert gb.check_ib_root('ib', tree + '/modules/nvidia') == tree + '/modules/nvidia'


@pytest.mark.parametrize('path, message', [
    (None, 'ib is None, expected an absolute path: ' + IB),
    (5, 'ib is 5, expected an absolute path: ' + IB),
    ('/x\x00y', "ib is '/x\\x00y', expected an absolute path: " + IB),
    ('/proc', "ib is '/proc', which is under /proc; expected " + IB),
    ('/proc/../proc/x', "ib is '/proc/../proc/x', which is under /proc; expected " + IB),
])
def test_ib_root_refusals_whole(path, message):
    assert refusal(gb.check_ib_root, 'ib', path) == message


def test_under_proc_names_only_proc_and_whole_components():
    assert gb._under_proc('/proc') == '/proc'
    assert gb._under_proc('/proc/driver') == '/proc'
    assert gb._under_proc('/sys/class/infiniband') is None
    assert gb._under_proc('/sys') is None
    assert gb._under_proc('/processes') is None


def test_tree_entries_listed_five_at_most(tree, tmp_path):
    many = tmp_path / 'many'
    many.mkdir()
    for name in 'abcdef':
        (many / name).write_text('')
    assert refusal(gb.check_module_root, 'm', str(many)) == \
        "m is '%s', whose entries 'a', 'b', 'c', 'd', 'e', ... are not module directories; expected %s" % (many, MODULES)
    (many / 'f').unlink()
    assert refusal(gb.check_module_root, 'm', str(many)) == \
        "m is '%s', whose entries 'a', 'b', 'c', 'd', 'e' are not module directories; expected %s" % (many, MODULES)
    for name in 'bcde':
        (many / name).unlink()
    (many / ('x' * 50)).write_text('')
    assert refusal(gb.check_ib_root, 'ib', str(many)) == \
        "ib is '%s', whose entries 'a', '%s... are not InfiniBand devices (a directory with ports/); expected %s" % (many, 'x' * 36, IB)
    (tmp_path / 'afile').write_text('')
    assert refusal(gb.check_ib_root, 'ib', str(tmp_path / 'afile')) == \
        "ib is '%s', which is not a directory; expected %s" % (tmp_path / 'afile', IB)


def test_an_unlistable_tree_says_why(tree, monkeypatch):
    def denied(path):
        raise OSError(errno.EACCES, 'Permission denied')
    monkeypatch.setattr(gb.os, 'listdir', denied)
    assert refusal(gb.check_module_root, 'm', tree + '/modules') == \
        "m is '%s', which cannot be read (Permission denied); expected %s" % (tree + '/modules', MODULES)

    def bare(path):
        raise OSError('no strerror')
    monkeypatch.setattr(gb.os, 'listdir', bare)
    assert refusal(gb.check_module_root, 'm', tree + '/modules') == \
        "m is '%s', which cannot be read (no strerror); expected %s" % (tree + '/modules', MODULES)
    assert gb.loaded_modules(tree + '/modules') == []


def test_loaded_modules_only_nvidia_sorted(tmp_path):
    for name in ('nvidia_uvm', 'ext4', 'nvidia', 'xnvidia', 'nvidia_drm'):
        (tmp_path / name).mkdir()
    assert gb.loaded_modules(str(tmp_path)) == ['nvidia', 'nvidia_drm', 'nvidia_uvm']
    assert gb.loaded_modules(str(tmp_path / 'none')) == []


@pytest.mark.parametrize('text, first', [
    ('', "''"),
    ('processor\t: 0\nNVRM: x\n', "'processor\\t: 0'"),
    ('y' * 70 + '\n', "'%s..." % ('y' * 56)),
    (' NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n', "' NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14'"),
    (' NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.140\n', "' NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54...."),
])
def test_driver_proc_other_text_whole(tmp_path, text, first):
    path = tmp_path / 'v'
    path.write_text(text)
    assert refusal(gb.check_driver_proc, 'driver_proc', str(path)) == \
        ('driver_proc is %r, whose first line is %s; expected %s, whose text has a line such as "NVRM version: NVIDIA UNIX x86_64 Kernel '
         'Module  550.54.14  ..."' % (str(path), first, DRIVER))


def test_driver_proc_head_on_a_later_line_passes(tmp_path):
    (tmp_path / 'v').write_text('header\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n')
    assert gb.check_driver_proc('d', str(tmp_path / 'v')) == str(tmp_path / 'v')


def test_driver_proc_refusals_whole(tmp_path):
    os.mkfifo(str(tmp_path / 'fifo'))
    assert refusal(gb.check_driver_proc, 'd', str(tmp_path)) == "d is %r, which is a directory; expected %s" % (str(tmp_path), DRIVER)
    assert refusal(gb.check_driver_proc, 'd', str(tmp_path / 'fifo')) == \
        "d is %r, which is not a regular file; expected %s" % (str(tmp_path / 'fifo'), DRIVER)
    assert refusal(gb.check_driver_proc, 'd', 'v') == "d is 'v', expected an absolute path: " + DRIVER


def test_driver_proc_unreadable_is_a_node_state(tmp_path, monkeypatch):
    (tmp_path / 'v').write_text(VERSION_TEXT)

    def refuse(*args, **kwargs):
        raise OSError(errno.EACCES, 'Permission denied')
    monkeypatch.setattr(gb, 'open', refuse, raising=False)
    assert gb.read_driver_proc(str(tmp_path / 'v')) == (None, 'cannot read the driver version file %s: Permission denied' % (tmp_path / 'v'))
    assert gb.check_driver_proc('d', str(tmp_path / 'v')) == str(tmp_path / 'v')

    def bare(*args, **kwargs):
        raise OSError('bare')
    monkeypatch.setattr(gb, 'open', bare, raising=False)
    assert gb.read_driver_proc(str(tmp_path / 'v')) == (None, 'cannot read the driver version file %s: bare' % (tmp_path / 'v'))


def test_read_driver_proc_stat_errors(tmp_path):
    (tmp_path / 'f').write_text('x')
    under_file = str(tmp_path / 'f' / 'version')
    assert gb.read_driver_proc(under_file) == (None, 'cannot read the driver version file %s: Not a directory' % under_file)
    assert gb.read_driver_proc('/x\x00y') == (None, 'cannot read the driver version file /x\x00y: embedded null byte')


def test_read_driver_proc_reads_64_kib_and_replaces_bad_bytes(tmp_path):
    (tmp_path / 'big').write_bytes(b'a' * (gb.DRIVER_PROC_MAX + 10))
    text, problem = gb.read_driver_proc(str(tmp_path / 'big'))
    assert (len(text), problem) == (65536, None)
    (tmp_path / 'bad').write_bytes(b'NVRM\xff\n')
    assert gb.read_driver_proc(str(tmp_path / 'bad')) == ('NVRM\ufffd\n', None)


def test_kernel_key_and_is_job_and_unit_of():
    assert gb.kernel_key('10.20.3-x') == (10, 20)
    assert gb.kernel_key(None) is None
    assert gb.kernel_key('v6.1') is None
    assert gb.kernel_key(6) is None
    assert gb.is_job('1:cpu:/slurm/uid_1/job_7\n0::/\n') is True
    assert gb.is_job('0::/slurm/job_7x\n') is False
    assert gb.is_job(None) is False
    assert gb.is_job('0::/system.slice/slurmstepd.scope\n') is True
    assert gb.unit_of('12:pids:/system.slice/a.service\n0::/system.slice/b.service/sub\n') == 'b.service'
    assert gb.unit_of('0::/system.slice/a.service/x/b.scope\n') == 'b.scope'
    assert gb.unit_of(None) is None


class Runner(object):
    def __init__(self, answers):
        self.answers = list(answers)
        self.argv = []

    def __call__(self, argv):
        self.argv.append(argv)
        return self.answers.pop(0)


def test_ask_fabric_manager_defaults_and_answers():
    run = Runner([(0, 'active\n'), (0, 'Fabric Manager version is : 570.133.20\n')])
    assert gb.ask_fabric_manager(run) == {'fabric_manager_state': 'active', 'fabric_manager_version': 'Fabric Manager version is : 570.133.20\n'}
    assert run.argv == [['systemctl', 'is-active', 'nvidia-fabricmanager'], ['nv-fabricmanager', '--version']]
    run = Runner([(3, '  inactive  \nextra\n')])
    assert gb.ask_fabric_manager(run, '/bin/sc', '/bin/fm') == {'fabric_manager_state': 'inactive', 'fabric_manager_version': None}
    assert run.argv == [['/bin/sc', 'is-active', 'nvidia-fabricmanager']]
    run = Runner([(0, 'active'), (None, 'No such file')])
    assert gb.ask_fabric_manager(run, 'sc', '/bin/fm') == {'fabric_manager_error': '/bin/fm --version: No such file'}
    run = Runner([(None, '')])
    assert gb.ask_fabric_manager(run, 'sc') == {'fabric_manager_error': 'sc is-active nvidia-fabricmanager: '}
    run = Runner([(1, 'Failed to connect\n  to bus ' + 'z' * 200)])
    assert gb.ask_fabric_manager(run) == {'fabric_manager_error': 'systemctl is-active nvidia-fabricmanager: '
                                          + ('Failed to connect to bus ' + 'z' * 200)[:160]}


FM = 'nvidia-fabricmanager'


@pytest.mark.parametrize('state, text, driver, expected', [
    ('inactive', None, '570.133.20', "%s is inactive on this NVSwitch system: the GPUs join no NVLink fabric and CUDA jobs fail; "
     "systemctl enable --now %s (the package of the driver's version, 570.133.20)" % (FM, FM)),
    (None, None, None, "%s is not installed on this NVSwitch system: the GPUs join no NVLink fabric and CUDA jobs fail; "
     "systemctl enable --now %s (the package of the driver's version, ?)" % (FM, FM)),
    ('active', None, '1.2', "cannot tell the version of %s (nv-fabricmanager --version printed '')" % FM),
    ('active', '  ' + 'q' * 100 + '  ', '1.2', "cannot tell the version of %s (nv-fabricmanager --version printed '%s')" % (FM, 'q' * 80)),
    ('active', 'Fabric Manager version is : 550.54.15', '570.133.20', '%s is version 550.54.15, the driver 570.133.20: they must be the '
     'same release; install the fabric manager package of 570.133.20' % FM),
])
def test_fabric_manager_failures_whole(state, text, driver, expected):
    assert gb.fabric_manager_failures(True, state, text, driver) == [('fabric-manager', None, expected)]


def test_fabric_manager_without_a_driver_version_is_not_compared():
    assert gb.fabric_manager_failures(True, 'active', 'Fabric Manager version is : 550.54.15', None) == []
    assert gb.fabric_manager_failures(0, 'failed', None, None) == []


OPEN = {'version': '515.43.04', 'open': True}


def gpudirect(ports, why):
    return [('gpudirect', None, 'no GPUDirect RDMA for the %d InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not possible (%s); '
             'modprobe nvidia_peermem (and list it in /etc/modules-load.d), or use the open kernel modules' % (ports, why))]


@pytest.mark.parametrize('ports, proc, kernel, required, expected', [
    (1, OPEN, '5.12.0', False, []),
    (1, {'version': '515.43.03', 'open': True}, '5.12.0', False, gpudirect(1, 'driver 515.43.03 is older than 515.43.04')),
    (1, OPEN, '5.11.99', False, gpudirect(1, 'kernel 5.11.99 is older than 5.12')),
    (1, OPEN, None, False, gpudirect(1, 'kernel None is older than 5.12')),
    (2, {'version': '510.1', 'open': True}, 'junk', False, gpudirect(2, 'driver 510.1 is older than 515.43.04; kernel junk is older than 5.12')),
    (4, {'version': '570.1', 'open': False}, '6.1', False, gpudirect(4, 'the proprietary kernel modules have no DMA-BUF')),
    (0, {'version': '570.1', 'open': False}, '6.1', True, gpudirect(0, 'the proprietary kernel modules have no DMA-BUF')),
    (0, {'version': '570.1', 'open': False}, '6.1', False, []),
    (3, {}, '6.1', False, gpudirect(3, 'the driver version file is unreadable')),
    (3, {'open': True}, '6.1', False, 'KeyError'),
])
def test_gpudirect_failures_whole(ports, proc, kernel, required, expected):
    if expected == 'KeyError':
        with pytest.raises(KeyError):
            gb.gpudirect_failures(ports, ['nvidia'], proc, kernel, required)
        return
    assert gb.gpudirect_failures(ports, ['nvidia'], proc, kernel, required) == expected
    assert gb.gpudirect_failures(ports, ['nvidia', 'nvidia_peermem'], proc, kernel, required) == []


def test_gpudirect_defaults_to_not_required():
    assert gb.gpudirect_failures(0, [], None, None) == []


def test_reset_blockers_defaults_and_fallbacks():
    holders = [{'pid': 1, 'name': None, 'unit': 'dcgm.service', 'gpu': 0},
               {'pid': 2, 'name': '', 'unit': 'x.scope', 'gpu': None},
               {'pid': 3, 'unit': 'nvidia-dcgm.service', 'job': True}]
    tail = ', which blocks the GPU reset of the MIG mode change; '
    assert gb.reset_blocker_failures(holders, []) == [
        ('reset-blockers', 0, 'process 1 (?) of dcgm.service holds a GPU' + tail
         + 'add dcgm to mig_reset_blockers (the role stops it during the change) or stop it'),
        ('reset-blockers', None, 'process 2 (?) of x.scope holds a GPU' + tail + 'stop it')]
    assert gb.reset_blocker_failures(holders, ['nvidia'], ['dcgm.service']) == [
        ('reset-blockers', None, 'process 2 (?) of x.scope holds a GPU' + tail + 'stop it')]
    assert gb.reset_blocker_failures(holders[:1], ['nvidia'], ['dcgm']) == []


def test_message_names_gpu_zero():
    assert gb.message('n1', [('driver', 0, 'old')]) == 'n1 GPU 0: driver: old'
    assert gb.message('n1', []) == ''
