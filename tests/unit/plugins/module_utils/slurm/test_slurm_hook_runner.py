# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hook runner of roles/slurm, run for real on hooks in a temporary directory.

The runner is installed next to ``_slurm_hooks.py`` and started through the
sh wrapper by the names ``prolog`` / ``epilog``; the test lays it out the
same way, runs real hook scripts and reads the log lines it prints with
GPUCLUSTER_HOOKS_STDERR set (they go to syslog as well).
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

ROOT = pathlib.Path(__file__).resolve().parents[5]
FILES = ROOT / 'roles' / 'slurm' / 'files'


@pytest.fixture
def layout(tmp_path):
    lib = tmp_path / 'lib'
    lib.mkdir()
    for name in ('hook-runner', 'hook_runner.py', 'task_prolog.py'):
        shutil.copy(str(FILES / name), str(lib / name))
    install_library(lib / 'lib', ['slurm/_slurm_hooks.py', 'slurm/_slurm_mps.py', 'slurm/_slurm_cli.py'])
    for link in ('prolog', 'epilog', 'task-prolog'):
        os.symlink('hook-runner', str(lib / link))
    for phase in ('prolog', 'epilog'):
        (tmp_path / ('%s.d' % phase)).mkdir()
    conf = {'prolog_dir': str(tmp_path / 'prolog.d'), 'epilog_dir': str(tmp_path / 'epilog.d'), 'default_timeout': 5,
            'drain_on_failure': False, 'uuid_map': str(tmp_path / 'uuid.map'), 'task_prolog_uuids': 'mig', 'syslog_ident': 'test'}
    (lib / 'hooks.json').write_text(json.dumps(conf))
    return tmp_path


def hook(layout, phase, name, body, mode=0o755):
    path = layout / ('%s.d' % phase) / name
    path.write_text('#!/bin/sh\n' + body + '\n')
    path.chmod(mode)


def run(layout, program, env=None):
    environ = {'PATH': '/usr/bin:/bin', 'GPUCLUSTER_HOOKS_STDERR': '1', 'SLURM_JOB_ID': '7', 'SLURMD_NODENAME': 'gpu-01',
               'MARKER': str(layout / 'ran')}
    environ.update(env or {})
    result = subprocess.run([str(layout / 'lib' / program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, env=environ, check=False, timeout=60)
    return result.returncode, result.stdout, result.stderr


def ran(layout):
    path = layout / 'ran'
    return path.read_text().split() if path.exists() else []


def test_hooks_run_in_name_order_and_are_logged(layout):
    hook(layout, 'prolog', '20-all-b', 'echo b >> "$MARKER"')
    hook(layout, 'prolog', '10-all-a', 'echo a >> "$MARKER"; echo "phase=$GPUCLUSTER_HOOK_PHASE" >> "$MARKER"')
    rc, _out, err = run(layout, 'prolog')
    assert rc == 0, err
    assert ran(layout) == ['a', 'phase=prolog', 'b']
    assert 'prolog job=7 hook=10-all-a rc=0 duration=' in err
    assert 'prolog job=7 hook=20-all-b rc=0 duration=' in err


def test_failing_prolog_hook_stops_the_prolog_and_names_the_hook(layout):
    hook(layout, 'prolog', '10-all-a', 'echo a >> "$MARKER"')
    hook(layout, 'prolog', '50-all-broken', 'echo "something broke"; exit 3')
    hook(layout, 'prolog', '90-all-late', 'echo late >> "$MARKER"')
    rc, _out, err = run(layout, 'prolog')
    assert rc == 1
    assert ran(layout) == ['a']
    assert 'hook=50-all-broken rc=3' in err and 'status=failed' in err
    assert 'prolog hook 50-all-broken output: something broke' in err


def test_failing_epilog_hook_does_not_stop_the_others(layout):
    hook(layout, 'epilog', '10-all-broken', 'exit 1')
    hook(layout, 'epilog', '20-all-after', 'echo after >> "$MARKER"')
    rc, _out, err = run(layout, 'epilog')
    assert rc == 1
    assert ran(layout) == ['after']
    assert 'epilog job=7 hook=10-all-broken rc=1' in err


def test_drain_failure_is_logged_when_scontrol_is_missing(layout):
    conf_path = layout / 'lib' / 'hooks.json'
    conf = json.loads(conf_path.read_text())
    conf['drain_on_failure'] = True
    conf_path.write_text(json.dumps(conf))
    hook(layout, 'prolog', '10-all-broken', 'exit 1')
    rc, _out, err = run(layout, 'prolog', {'PATH': str(layout)})
    assert rc == 1
    assert 'could not drain gpu-01: ' in err
    assert 'drained gpu-01' not in err


def test_hook_timeout(layout):
    hook(layout, 'prolog', '10-all-slow', '# timeout: 1\nsleep 30')
    rc, _out, err = run(layout, 'prolog')
    assert rc == 1
    assert 'hook=10-all-slow rc=-9' in err and 'status=timed out after 1s' in err


def test_missing_tool_skips_without_failing(layout):
    hook(layout, 'prolog', '10-all-needs-tool', '# requires: surely-not-installed-tool\nexit 1')
    hook(layout, 'prolog', '20-all-bad-header', '# timeout: never\nexit 1')
    hook(layout, 'prolog', '30-all-not-executable', 'exit 1', mode=0o644)
    hook(layout, 'prolog', '40-lastuserjob-x', 'exit 1')
    hook(layout, 'prolog', '50-all-x.dpkg-old', 'exit 1')
    rc, _out, err = run(layout, 'prolog')
    assert rc == 0, err
    assert 'hook=10-all-needs-tool rc=- duration=0.000s status=skipped: requires surely-not-installed-tool, not found' in err
    assert 'hook=20-all-bad-header rc=- duration=0.000s status=skipped: bad header: "# timeout: never" must be a whole number' in err
    assert 'hook=30-all-not-executable rc=- duration=0.000s status=skipped: not executable' in err
    assert 'hook=40-lastuserjob-x rc=- duration=0.000s status=skipped: lastuserjob hooks run only in the epilog' in err
    assert '50-all-x.dpkg-old' not in err


def test_exclusive_hooks_are_skipped_when_slurm_cannot_be_asked(layout):
    hook(layout, 'prolog', '10-exclusive-x', 'exit 1')
    rc, _out, err = run(layout, 'prolog', {'PATH': str(layout)})
    assert rc == 0, err
    assert 'hook=10-exclusive-x rc=- duration=0.000s status=skipped: could not tell whether the job owns the node' in err


def test_task_prolog_exports_the_mig_uuid(layout):
    (layout / 'uuid.map').write_text('# map\n0 1g.10gb MIG-aaaa\n1 a100 GPU-bbbb\n')
    rc, out, _err = run(layout, 'task-prolog', {'SLURM_STEP_GPUS': '0'})
    assert (rc, out) == (0, 'export CUDA_VISIBLE_DEVICES=MIG-aaaa\n')
    rc, out, _err = run(layout, 'task-prolog', {'SLURM_STEP_GPUS': '1'})
    assert (rc, out) == (0, '')


def test_task_prolog_never_fails_the_task(layout):
    rc, out, _err = run(layout, 'task-prolog', {'SLURM_STEP_GPUS': '0'})
    assert rc == 0
    assert out.startswith('print gpucluster task-prolog: CUDA_VISIBLE_DEVICES left as Slurm set it (')


def test_runner_without_settings_fails_clearly(layout):
    (layout / 'lib' / 'hooks.json').unlink()
    rc, _out, err = run(layout, 'prolog')
    assert rc == 1
    assert 'hook runner cannot start: [Errno 2] No such file or directory' in err
