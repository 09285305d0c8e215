# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers and fixtures (re-exported by conftest.py) to run the shipped Slurm hooks (roles/slurm/files/hooks) for real.

GPU hooks run against the NVML simulator: ``nvml_sim/bin`` (the nvidia-smi
STAND-IN and ``nvmlsim``) leads PATH and ``NVMLSIM_STATE`` points at a node
created in the test's tmp directory.  Slurm and CUDA commands the hooks or
the runner call (``scontrol``, ``squeue``, ``nvidia-cuda-mps-control``,
``enroot``) are STAND-IN shell scripts written into the test's ``bin``
directory that record their argv (and stdin) in ``calls.log``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import pathlib
import shutil
import subprocess

import pytest

from ansible_collections.gpucluster.bringup.tests.unit.nodelib import install_library

ROOT = pathlib.Path(__file__).resolve().parents[3]
HOOKS = ROOT / 'roles' / 'slurm' / 'files' / 'hooks'
FILES = ROOT / 'roles' / 'slurm' / 'files'
SIM_BIN = ROOT / 'nvml_sim' / 'bin'


class Env:
    """A temporary node: simulator state, STAND-IN commands, and helpers to run hooks."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.bin = tmp_path / 'bin'
        self.bin.mkdir()
        self.log = tmp_path / 'calls.log'
        self.env = {
            'PATH': '%s:%s:/usr/bin:/bin' % (self.bin, SIM_BIN),
            'NVMLSIM_STATE': str(tmp_path / 'nvmlsim' / 'state.json'),
            'NVMLSIM_ROOT': str(tmp_path / 'nvmlsim' / 'root'),
            'CALLS_LOG': str(self.log),
            'SLURM_JOB_ID': '7',
            'SLURM_JOB_UID': str(os.getuid()),
            'SLURMD_NODENAME': 'gpu-01',
        }
        self.procs = []

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
    lib = node.tmp / 'lib'
    lib.mkdir()
    for name in ('hook-runner', 'hook_runner.py'):
        shutil.copy(str(FILES / name), str(lib / name))
    install_library(lib / 'lib', ['slurm/_slurm_hooks.py'])
    for link in ('prolog', 'epilog'):
        os.symlink('hook-runner', str(lib / link))
    for phase in ('prolog', 'epilog'):
        (node.tmp / ('%s.d' % phase)).mkdir()
    conf = {'prolog_dir': str(node.tmp / 'prolog.d'), 'epilog_dir': str(node.tmp / 'epilog.d'), 'default_timeout': 30,
            'drain_on_failure': True, 'uuid_map': str(node.tmp / 'gres-uuid.map'), 'task_prolog_uuids': 'mig',
            'syslog_ident': 'test-hooks'}
    (lib / 'hooks.json').write_text(json.dumps(conf))
    node.stand_in('scontrol', 'exit 0')
    node.lib = lib
    return node


def install(node, phase, name):
    shutil.copy(str(HOOKS / name), str(node.tmp / ('%s.d' % phase) / name))


def run_runner(node, phase, env=None):
    environ = dict(node.env)
    environ['GPUCLUSTER_HOOKS_STDERR'] = '1'
    environ.update(env or {})
    result = subprocess.run([str(node.lib / phase)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                            env=environ, check=False, timeout=120)
    return result.returncode, result.stderr
