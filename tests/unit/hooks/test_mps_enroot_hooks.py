# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""30-all-mps-start/stop with a STAND-IN nvidia-cuda-mps-control; 50-all-enroot-dirs and 95-lastuserjob-enroot-cleanup."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import socket
import stat
import uuid

import pytest

# ------------------------------------------------------------------ MPS

# The STAND-IN records its argv and what it read on stdin ("stdin: quit").
MPS_STAND_IN = 'if [ "$1" != "-d" ]; then printf "stdin: %s\\n" "$(cat)" >> "$CALLS_LOG"; fi\nexit ${MPS_RC:-0}'


@pytest.fixture
def mps(node):
    """A unique CUDA_VISIBLE_DEVICES (a GPU UUID) so the hooks' /tmp/nvidia-mps_<devices> dirs are the test's own."""
    devices = 'GPU-%s' % uuid.uuid4()
    node.stand_in('nvidia-cuda-mps-control', MPS_STAND_IN)
    node.mps_env = {'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': '50', 'CUDA_VISIBLE_DEVICES': devices}
    node.pipe_dir = '/tmp/nvidia-mps_%s' % devices
    node.log_dir = '/tmp/nvidia-log_%s' % devices
    yield node
    for path in (node.pipe_dir, node.log_dir):
        shutil.rmtree(path, ignore_errors=True)


def control_socket(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    return sock


def test_mps_start_runs_the_daemon_for_mps_jobs(mps):
    assert mps.run_hook('30-all-mps-start', mps.mps_env) == (0, '')
    assert mps.calls() == ['nvidia-cuda-mps-control -d']
    assert os.path.isdir(mps.pipe_dir) and os.path.isdir(mps.log_dir)


@pytest.mark.parametrize('unset', ['CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', 'CUDA_VISIBLE_DEVICES'])
def test_mps_hooks_do_nothing_for_other_jobs(mps, unset):
    env = dict(mps.mps_env)
    env[unset] = None
    assert mps.run_hook('30-all-mps-start', env) == (0, '')
    assert mps.run_hook('30-all-mps-stop', env) == (0, '')
    assert mps.calls() == []
    assert not os.path.exists(mps.pipe_dir)


def test_mps_start_leaves_a_running_daemon_alone(mps):
    sock = control_socket(os.path.join(mps.pipe_dir, 'control'))
    try:
        assert mps.run_hook('30-all-mps-start', mps.mps_env) == (0, '')
    finally:
        sock.close()
    assert mps.calls() == ['nvidia-cuda-mps-control', 'stdin: get_server_list']


def test_mps_start_fails_when_the_daemon_does_not_start(mps):
    env = dict(mps.mps_env, MPS_RC='1')
    assert mps.run_hook('30-all-mps-start', env)[0] == 1
    assert mps.calls() == ['nvidia-cuda-mps-control -d']


def test_mps_stop_sends_quit(mps):
    sock = control_socket(os.path.join(mps.pipe_dir, 'control'))
    try:
        assert mps.run_hook('30-all-mps-stop', mps.mps_env) == (0, '')
    finally:
        sock.close()
    assert mps.calls() == ['nvidia-cuda-mps-control', 'stdin: quit']


def test_mps_stop_without_a_daemon_does_nothing(mps):
    assert mps.run_hook('30-all-mps-stop', mps.mps_env) == (0, '')
    assert mps.calls() == []


# ------------------------------------------------------------------ enroot directories

@pytest.fixture
def enroot(node):
    """enroot-dirs / enroot-cleanup-dirs as the role writes them, with paths under the test's tmp dir."""
    hooks_dir = node.tmp / 'lib'
    hooks_dir.mkdir()
    node.env['GPUCLUSTER_HOOKS_DIR'] = str(hooks_dir)
    node.runtime = '%s/run/enroot/user-{uid}' % node.tmp
    node.data = '%s/tmp/enroot-data/user-{uid}' % node.tmp
    node.write_lists = lambda created, cleanup: (
        (hooks_dir / 'enroot-dirs').write_text('# Managed by gpucluster.bringup.slurm (slurm_hooks_enroot_dirs)\n'
                                               + ''.join(p + '\n' for p in created)),
        (hooks_dir / 'enroot-cleanup-dirs').write_text('# Managed (slurm_hooks_enroot_cleanup_dirs)\n\n'
                                                       + ''.join(p + '\n' for p in cleanup)))
    node.write_lists([node.runtime, node.data], [node.runtime])
    node.path = lambda template, uid=os.getuid(): template.replace('{uid}', str(uid))
    return node


def test_enroot_dirs_are_created_for_the_user(enroot):
    assert enroot.run_hook('50-all-enroot-dirs') == (0, '')
    for template in (enroot.runtime, enroot.data):
        info = os.stat(enroot.path(template))
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid() and info.st_gid == os.getgid()
        assert stat.S_IMODE(os.stat(os.path.dirname(enroot.path(template))).st_mode) == 0o755


@pytest.mark.skipif(os.geteuid() != 0, reason='chown to another user needs root')
def test_enroot_dirs_belong_to_the_job_user(enroot):
    assert enroot.run_hook('50-all-enroot-dirs', {'SLURM_JOB_UID': '65534'}) == (0, '')
    info = os.stat(enroot.path(enroot.runtime, 65534))
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (65534, 0o700)


def test_enroot_cleanup_removes_the_runtime_dir_and_keeps_named_containers(enroot):
    enroot.run_hook('50-all-enroot-dirs')
    container = os.path.join(enroot.path(enroot.data), 'pyxis_train')
    os.makedirs(os.path.join(container, 'etc'))
    with open(os.path.join(enroot.path(enroot.runtime), 'state'), 'w') as handle:
        handle.write('x')
    assert enroot.run_hook('95-lastuserjob-enroot-cleanup') == (0, '')
    assert not os.path.exists(enroot.path(enroot.runtime))
    assert os.path.isdir(os.path.join(container, 'etc'))


def test_enroot_cleanup_of_both_when_both_are_listed(enroot):
    enroot.write_lists([enroot.runtime, enroot.data], [enroot.data, enroot.runtime])
    enroot.run_hook('50-all-enroot-dirs')
    assert enroot.run_hook('95-lastuserjob-enroot-cleanup') == (0, '')
    assert not os.path.exists(enroot.path(enroot.runtime)) and not os.path.exists(enroot.path(enroot.data))


def test_enroot_cleanup_only_touches_the_job_users_dirs(enroot):
    other = enroot.path(enroot.runtime, 4242)
    os.makedirs(other)
    enroot.run_hook('50-all-enroot-dirs')
    assert enroot.run_hook('95-lastuserjob-enroot-cleanup') == (0, '')
    assert os.path.isdir(other)


def test_enroot_cleanup_refuses_a_path_it_did_not_create(enroot):
    stray = '%s/scratch/user-{uid}' % enroot.tmp
    enroot.write_lists([enroot.runtime, enroot.data], [stray, enroot.runtime])
    os.makedirs(enroot.path(stray))
    enroot.run_hook('50-all-enroot-dirs')
    rc, out = enroot.run_hook('95-lastuserjob-enroot-cleanup')
    assert rc == 1
    assert out == 'refusing to remove %s: not in %s/lib/enroot-dirs (the directories 50-all-enroot-dirs creates)\n' % (stray, enroot.tmp)
    assert os.path.isdir(enroot.path(stray))
    assert not os.path.exists(enroot.path(enroot.runtime))


def test_enroot_cleanup_refuses_a_shared_path(enroot):
    shared = '%s/run/enroot' % enroot.tmp
    enroot.write_lists([enroot.runtime, shared], [shared])
    os.makedirs(shared)
    rc, out = enroot.run_hook('95-lastuserjob-enroot-cleanup')
    assert (rc, out) == (1, 'refusing to remove %s: not an absolute per-user path with {uid}\n' % shared)
    assert os.path.isdir(shared)


@pytest.mark.parametrize('template', ['{tmp}/shared', 'relative/user-{uid}'])
def test_enroot_dirs_refuses_a_shared_or_relative_path(enroot, template):
    template = template.replace('{tmp}', str(enroot.tmp))
    enroot.write_lists([template], [])
    assert enroot.run_hook('50-all-enroot-dirs') == (1, 'refusing to create %s: not an absolute per-user path with {uid}\n' % template)


@pytest.mark.parametrize('hook', ['50-all-enroot-dirs', '95-lastuserjob-enroot-cleanup'])
def test_enroot_hooks_refuse_a_non_numeric_uid(enroot, hook):
    assert enroot.run_hook(hook, {'SLURM_JOB_UID': '../../x'}) == (1, 'SLURM_JOB_UID=../../x is not a numeric uid\n')
