# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""30-all-mps-start/stop with NVIDIA's real nvidia-cuda-mps-control, through the hook runner; 50-all-enroot-dirs and 95-lastuserjob-enroot-cleanup."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import signal
import stat
import subprocess
import time

import pytest

from hookenv import install, mps_daemons, mps_dir, run_runner

from ansible_collections.gpucluster.bringup.tests.unit.nodelib import alive

# ------------------------------------------------------------------ MPS

CONTROL = 'nvidia-cuda-mps-control'


class Mps:
    """The MPS hooks installed in the runner's prolog.d / epilog.d, the real control daemon, the TaskProlog."""

    def __init__(self, runner):
        self.node = runner
        runner.create('a100-40gb-x8')
        install(runner, 'prolog', '30-all-mps-start')
        install(runner, 'epilog', '30-all-mps-stop')
        self.base = mps_dir(runner)
        (runner.lib / 'gres-uuid.map').write_text('')  # the role writes it on every GPU node; no MIG here

    def env(self, job, uid=None, gpu='3', percentage='50'):
        return {'SLURM_JOB_ID': str(job), 'SLURM_JOB_UID': str(os.getuid() if uid is None else uid),
                'CUDA_VISIBLE_DEVICES': gpu, 'CUDA_MPS_ACTIVE_THREAD_PERCENTAGE': percentage}

    def prolog(self, job, **kwargs):
        return run_runner(self.node, 'prolog', self.env(job, **kwargs))

    def epilog(self, job, uid=None):
        # Slurm's epilog environment of an mps job: the same variables
        return run_runner(self.node, 'epilog', self.env(job, uid=uid))

    def task_prolog(self, job, uid=None, gpu='3'):
        """``{name: value}`` the TaskProlog exports for the job (run as the job's user)."""
        env = dict(self.node.env, SLURM_JOB_ID=str(job), CUDA_VISIBLE_DEVICES='0', CUDA_MPS_ACTIVE_THREAD_PERCENTAGE='50')
        prefix = [] if uid in (None, os.getuid()) else ['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups']
        out = subprocess.run(prefix + [str(self.node.lib / 'task-prolog')], stdout=subprocess.PIPE, universal_newlines=True,
                             env=env, check=True, timeout=60).stdout
        exports = {}
        for line in out.splitlines():
            assert line.startswith('export '), out
            name, _sep, value = line[len('export '):].partition('=')
            exports[name] = value
        return exports

    def ask(self, exports, command, uid=None):
        """What a process of the job gets from its daemon: ``echo <command> | nvidia-cuda-mps-control``."""
        env = dict(self.node.env, **exports)
        prefix = [] if uid in (None, os.getuid()) else ['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups']
        result = subprocess.run(prefix + [CONTROL], input=command + '\n', stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, env=env, check=False, timeout=30)
        return result.returncode, result.stdout.strip()

    def daemon_dir(self, uid=None, gpu='3'):
        return os.path.join(self.base, '%d-%s' % (os.getuid() if uid is None else uid, gpu))

    def daemon_pid(self, uid=None, gpu='3'):
        return mps_daemons(self.base).get(os.path.join(self.daemon_dir(uid, gpu), 'pipe'))


@pytest.fixture
def mps(runner):
    return Mps(runner)


def test_an_mps_job_reaches_its_users_daemon_through_the_task_prolog_and_the_last_job_stops_it(mps):
    rc, err = mps.prolog(11)
    assert rc == 0, err
    assert 'prolog job=11 hook=30-all-mps-start rc=0 duration=' in err  # the runner did not wait on the daemon's output
    exports = mps.task_prolog(11)
    pipe = os.path.join(mps.daemon_dir(), 'pipe')
    # A100 40GB: 40960 MiB in the simulator, the job's 50 %
    assert exports == {'CUDA_MPS_PIPE_DIRECTORY': pipe, 'CUDA_MPS_LOG_DIRECTORY': os.path.join(mps.daemon_dir(), 'log'),
                       'CUDA_MPS_PINNED_DEVICE_MEM_LIMIT': '0=20480M'}
    assert mps.ask(exports, 'get_server_list') == (0, '')  # the real daemon answers: no server until CUDA connects
    assert mps.ask(exports, 'get_default_active_thread_percentage') == (0, '100.0')
    info = os.stat(pipe)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o700)
    pid = mps.daemon_pid()
    # a second job of the same user on the same GPU uses the same daemon
    assert mps.prolog(12)[0] == 0
    assert mps.daemon_pid() == pid and mps.task_prolog(12) == exports
    assert mps.epilog(11)[0] == 0
    assert alive(pid) and mps.ask(exports, 'get_server_list') == (0, '')  # job 12 still uses it
    rc, err = mps.epilog(12)
    assert rc == 0, err
    for _i in range(50):
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid), 'the control daemon is still running after the last job ended'
    assert not os.path.exists(mps.daemon_dir())
    assert os.listdir(os.path.join(mps.base, 'jobs')) == []


def test_a_job_on_another_gpu_gets_a_daemon_of_its_own(mps):
    assert mps.prolog(21, gpu='3')[0] == 0
    assert mps.prolog(22, gpu='5')[0] == 0
    assert mps.daemon_pid(gpu='3') != mps.daemon_pid(gpu='5')
    assert mps.task_prolog(22)['CUDA_MPS_PIPE_DIRECTORY'] == os.path.join(mps.daemon_dir(gpu='5'), 'pipe')
    assert mps.epilog(21)[0] == 0
    assert not os.path.exists(mps.daemon_dir(gpu='3')) and alive(mps.daemon_pid(gpu='5'))


def test_a_crashed_daemon_is_started_again_by_the_next_jobs_prolog(mps):
    assert mps.prolog(31)[0] == 0
    crashed = mps.daemon_pid()
    os.kill(crashed, signal.SIGKILL)
    while alive(crashed):
        time.sleep(0.05)
    exports = mps.task_prolog(31)
    assert mps.ask(exports, 'get_server_list')[0] != 0  # job 31's processes have no daemon now
    rc, err = mps.prolog(32)
    assert rc == 0, err
    assert mps.daemon_pid() != crashed and mps.ask(exports, 'get_server_list') == (0, '')


def test_jobs_without_the_mps_gres_are_left_alone(mps):
    for unset in ('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE', 'CUDA_VISIBLE_DEVICES'):
        environ = mps.env(41)
        del environ[unset]
        assert run_runner(mps.node, 'prolog', environ)[0] == 0
        assert run_runner(mps.node, 'epilog', environ)[0] == 0
    assert os.listdir(mps.base) == ['jobs'] or os.listdir(mps.base) == []
    assert mps.task_prolog(41) == {}


@pytest.mark.skipif(os.geteuid() != 0, reason='a daemon of another user needs root')
def test_a_second_users_job_on_the_same_gpu_gets_its_own_daemon_and_cannot_reach_the_first(mps):
    nobody = 65534
    assert mps.prolog(51)[0] == 0
    rc, err = mps.prolog(52, uid=nobody)
    assert rc == 0, err
    theirs = mps.task_prolog(52, uid=nobody)
    assert theirs['CUDA_MPS_PIPE_DIRECTORY'] == os.path.join(mps.daemon_dir(uid=nobody), 'pipe')
    assert mps.ask(theirs, 'get_server_list', uid=nobody) == (0, '')
    assert mps.daemon_pid(uid=nobody) != mps.daemon_pid()
    with open('/proc/%d/status' % mps.daemon_pid(uid=nobody)) as handle:
        assert re.search(r'^Uid:\s+%d\s' % nobody, handle.read(), re.M)  # the daemon runs as the job's user
    # the first user's daemon, asked by the second user: refused by its directory's mode
    mine = mps.task_prolog(51)
    rc, _out = mps.ask(mine, 'get_server_list', uid=nobody)
    assert rc != 0
    assert mps.epilog(52, uid=nobody)[0] == 0
    assert not os.path.exists(mps.daemon_dir(uid=nobody)) and alive(mps.daemon_pid())


def test_bad_values_from_the_environment_fail_the_prolog_naming_them_and_create_nothing(mps):
    rc, err = mps.prolog(61, uid='../../x')
    assert rc == 1
    assert 'prolog hook 30-all-mps-start output: MPS start: SLURM_JOB_UID=../../x is not a numeric uid' in err
    assert not glob.glob(os.path.join(mps.base, '*-*'))


def test_a_daemon_that_cannot_start_fails_the_prolog_with_its_log_and_drains_the_node(mps):
    # a socket path over the 107 bytes of sockaddr_un: the real daemon cannot listen
    deep = os.path.join(mps.base, 'x' * 100)
    os.makedirs(deep)
    os.chmod(deep, 0o755)
    conf = json.loads((mps.node.lib / 'hooks.json').read_text())
    conf['mps_dir'] = deep
    (mps.node.lib / 'hooks.json').write_text(json.dumps(conf))
    rc, err = mps.prolog(71)
    assert rc == 1
    line = [text for text in err.splitlines() if text.startswith('prolog hook 30-all-mps-start output: ')]
    assert line and re.match(r'^prolog hook 30-all-mps-start output: nvidia-cuda-mps-control -d as uid %d for GPU 3 failed '
                             r'\((exit \d+|no answer on its control socket within 10s)\); control\.log( is empty|: .+)$'
                             % os.getuid(), line[0]), err
    assert mps.node.calls()[-1].startswith('scontrol update NodeName=gpu-01 State=DRAIN Reason=prolog hook 30-all-mps-start')
    assert os.listdir(os.path.join(deep, 'jobs')) == []


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
        (hooks_dir / 'enroot-dirs').write_text('# Managed by gpucluster.bringup.slurm (slurm_hooks_settings.enroot_dirs)\n'
                                               + ''.join(p + '\n' for p in created)),
        (hooks_dir / 'enroot-cleanup-dirs').write_text('# Managed (slurm_hooks_settings.enroot_cleanup_dirs)\n\n'
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
