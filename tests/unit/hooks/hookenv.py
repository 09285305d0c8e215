# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers and fixtures (re-exported by conftest.py) to run the shipped Slurm hooks (roles/slurm/files/hooks) for real.

GPU hooks run against the NVML simulator: ``nvml_sim/bin`` (the nvidia-smi
STAND-IN and ``nvmlsim``) leads PATH and ``NVMLSIM_STATE`` points at a node
created in the test's tmp directory.  The Slurm commands the hooks or the
runner call (``scontrol``, ``squeue``) are STAND-IN shell scripts written into
the test's ``bin`` directory that record their argv (and stdin) in
``calls.log``; ``enroot`` is the real one behind a recorder that logs there too
(test_runner_with_real_hooks.real_enroot).  The MPS hooks run NVIDIA's real
``nvidia-cuda-mps-control`` (Debian's nvidia-cuda-mps, which needs no GPU to
start, answer and quit): ``scripts/test.sh`` fetches it and names its
directory in ``GPUCLUSTER_MPS_CONTROL_BIN``; it leads PATH after ``bin``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile

import pytest

from ansible_collections.gpucluster.bringup.tests.unit.nodelib import install_library

ROOT = pathlib.Path(__file__).resolve().parents[3]
HOOKS = ROOT / 'roles' / 'slurm' / 'files' / 'hooks'
FILES = ROOT / 'roles' / 'slurm' / 'files'
SIM_BIN = ROOT / 'nvml_sim' / 'bin'


def mps_control_bin():
    """The directory of the real nvidia-cuda-mps-control (scripts/test.sh deps fetches it); fails the test without it."""
    directory = os.environ.get('GPUCLUSTER_MPS_CONTROL_BIN') or str(ROOT / '.build' / 'nvidia-cuda-mps' / 'bin')
    if not os.access(os.path.join(directory, 'nvidia-cuda-mps-control'), os.X_OK):
        pytest.fail('NVIDIA\'s nvidia-cuda-mps-control is not in %s: run `bash scripts/test.sh deps` (it fetches Debian\'s '
                    'nvidia-cuda-mps) or point GPUCLUSTER_MPS_CONTROL_BIN at a directory that has it' % directory)
    return directory


class Env:
    """A temporary node: simulator state, STAND-IN commands, and helpers to run hooks."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        self.log = tmp_path / 'calls.log'
        self.env = {
            'PATH': '%s:%s:%s:/usr/bin:/bin' % (self.bin, mps_control_bin(), SIM_BIN),
            'NVMLSIM_STATE': str(tmp_path / 'nvmlsim' / 'state.json'),
            'NVMLSIM_ROOT': str(tmp_path / 'nvmlsim' / 'root'),
            'CALLS_LOG': str(self.log),
            'SLURM_JOB_ID': '7',
            'SLURM_JOB_UID': str(os.getuid()),
            'SLURMD_NODENAME': 'gpu-01',
        }
        self.procs = []
        self.cleanups = []
        self.mps_dir = None

    def nvmlsim(self, *argv):
        result = subprocess.run([str(SIM_BIN / 'nvmlsim')] + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, env=self.env, check=False, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def create(self, preset='h100-80gb-x8'):
        self.nvmlsim('create', '--preset', preset)

    def stand_in(self, name, body):
        """Write a STAND-IN command: logs ``name argv`` (and stdin when it has some) to calls.log, then runs ``body``."""
        path = self.bin / name
        path.write_text('#!/bin/sh\n# STAND-IN for %s, written by the test.\nprintf "%%s" "%s" >> "$CALLS_LOG"\n'
                        'for arg in "$@"; do printf " %%s" "$arg" >> "$CALLS_LOG"; done\necho >> "$CALLS_LOG"\n%s\n'
                        % (name, name, body))
        path.chmod(0o755)

    def calls(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def run_hook(self, name, env=None, timeout=60):
        environ = dict(self.env)
        environ.update(env or {})
        for key, value in list(environ.items()):
            if value is None:
                del environ[key]
        result = subprocess.run([str(HOOKS / name)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                env=environ, cwd=str(self.tmp), check=False, timeout=timeout)
        return result.returncode, result.stdout

    def spawn(self, argv, ready=False):
        """Start a real process (killed at teardown if it is still there)."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE if ready else subprocess.DEVNULL, universal_newlines=True)
        self.procs.append(proc)
        if ready:
            assert proc.stdout.readline().strip() == 'ready'
        return proc

    def on_gpu(self, proc, gpu, *extra):
        self.nvmlsim('process', 'add', '--gpu', str(gpu), '--pid', str(proc.pid), '--name', 'python3', '--used-mib', '512', *extra)

    def close(self):
        for cleanup in self.cleanups:
            cleanup()
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture
def node(tmp_path):
    env = Env(tmp_path)
    yield env
    env.close()


@pytest.fixture
def runner(node):
    """The hook runner laid out as the role installs it, with the real hooks in prolog.d / epilog.d."""
    # (a directory any user can reach: the TaskProlog runs as the job's user)
    lib = pathlib.Path(tempfile.mkdtemp(prefix='gchooks-'))
    os.chmod(str(lib), 0o755)
    node.cleanups.append(lambda: shutil.rmtree(str(lib), ignore_errors=True))
    for name in ('hook-runner', 'hook_runner.py', 'mps_hook.py', 'task_prolog.py'):
        shutil.copy(str(FILES / name), str(lib / name))
    install_library(lib / 'lib', ['slurm/_slurm_hooks.py', 'slurm/_slurm_mps.py', 'slurm/_slurm_cli.py'])
    for link in ('prolog', 'epilog', 'task-prolog'):
        os.symlink('hook-runner', str(lib / link))
    for phase in ('prolog', 'epilog'):
        (node.tmp / ('%s.d' % phase)).mkdir()
    conf = {'prolog_dir': str(node.tmp / 'prolog.d'), 'epilog_dir': str(node.tmp / 'epilog.d'), 'default_timeout': 30,
            'drain_on_failure': True, 'uuid_map': str(lib / 'gres-uuid.map'), 'task_prolog_uuids': 'mig',
            'syslog_ident': 'test-hooks', 'mps_dir': mps_dir(node)}
    (lib / 'hooks.json').write_text(json.dumps(conf))
    node.stand_in('scontrol', 'exit 0')
    node.lib = lib
    return node


def mps_dir(node):
    """A short directory for the MPS daemons (a socket path has at most 107 bytes), that any user can traverse."""
    if getattr(node, 'mps_dir', None) is None:
        node.mps_dir = tempfile.mkdtemp(prefix='gcmps-')
        os.chmod(node.mps_dir, 0o755)
        node.cleanups.append(lambda: quit_daemons(node.mps_dir))
    return node.mps_dir


def mps_daemons(directory):
    """``{pipe directory: pid}`` of the control daemons whose pipe directory is under ``directory``.

    (Driver 535's daemon writes no pid file; 550's writes nvidia-cuda-mps-control.pid.)
    """
    found = {}
    for pid in [name for name in os.listdir('/proc') if name.isdigit()]:
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                argv = handle.read().split(b'\0')
            if not argv[0].endswith(b'nvidia-cuda-mps-control') or b'-d' not in argv:
                continue
            with open('/proc/%s/environ' % pid, 'rb') as handle:
                env = dict(item.partition(b'=')[::2] for item in handle.read().split(b'\0') if item)
            with open('/proc/%s/stat' % pid) as handle:
                if handle.read().split(') ')[1][0] == 'Z':
                    continue
        except OSError:
            continue
        pipe = env.get(b'CUDA_MPS_PIPE_DIRECTORY', b'').decode()
        if pipe.startswith(directory.rstrip('/') + '/'):
            found[pipe] = int(pid)
    return found


def quit_daemons(directory):
    """Stops every control daemon a test left and removes the directory."""
    for pid in mps_daemons(directory).values():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(directory, ignore_errors=True)


def install(node, phase, name):
    shutil.copy(str(HOOKS / name), str(node.tmp / ('%s.d' % phase) / name))


def run_runner(node, phase, env=None):
    environ = dict(node.env)
    environ['GPUCLUSTER_HOOKS_STDERR'] = '1'
    environ.update(env or {})
    result = subprocess.run([str(node.lib / phase)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                            env=environ, check=False, timeout=120)
    return result.returncode, result.stderr
