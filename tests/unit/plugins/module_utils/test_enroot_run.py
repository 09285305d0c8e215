# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/module_utils/_enroot_run.py: real processes, real signals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _enroot_run


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as handle:
        return handle.read().split()[2] != 'Z'


def _group_script(pidfile):
    # A child in the same process group that would outlive its parent if only the parent were killed.
    return ['sh', '-c', 'sleep 60 & echo $! > %s; wait' % pidfile]


def _read_pid(pidfile):
    deadline = time.time() + 10
    while time.time() < deadline:
        if os.path.exists(pidfile) and open(pidfile).read().strip():
            return int(open(pidfile).read())
        time.sleep(0.02)
    raise AssertionError('no pid written')


@pytest.mark.parametrize('argv, expected', [
    (['sh', '-c', 'echo out; echo err >&2; exit 3'], (3, 'out\n', 'err\n')),
    (['sh', '-c', 'printf "%s" "$GREETING"'], (0, 'hello', '')),
])
def test_run_returns_rc_and_output(argv, expected):
    env = dict(os.environ, GREETING='hello')
    assert _enroot_run.run_stoppable(argv, env, timeout=10) == expected


def test_timeout_stops_the_whole_group(tmp_path):
    pidfile = str(tmp_path / 'child.pid')
    with pytest.raises(_enroot_run.TimedOut) as err:
        _enroot_run.run_stoppable(_group_script(pidfile), dict(os.environ), timeout=1)
    assert str(err.value) == 'timed out after 1 seconds'
    assert not _alive(_read_pid(pidfile))


@pytest.mark.parametrize('signum', list(_enroot_run.STOP_SIGNALS))
def test_stop_signal_stops_the_group_and_restores_handlers(tmp_path, signum):
    pidfile = str(tmp_path / 'child.pid')
    before = signal.getsignal(signum)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
    timer.start()
    with pytest.raises(_enroot_run.Interrupted) as err:
        _enroot_run.run_stoppable(_group_script(pidfile), dict(os.environ), timeout=30)
    timer.join()
    assert err.value.signum == signum
    assert str(err.value) == 'interrupted by signal %d' % signum
    assert not _alive(_read_pid(pidfile))
    assert signal.getsignal(signum) == before


def test_stop_group_waits_for_every_process_of_the_group():
    """The leader exits on SIGTERM, its child ignores SIGTERM: stop_group must not return while the child
    lives (it could still write the partial output); after the grace period it gets SIGKILL."""
    group_members, stop_group = _enroot_run.group_members, _enroot_run.stop_group
    child = 'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print("ready", flush=True); time.sleep(60)'
    proc = subprocess.Popen(['sh', '-c', '"$0" -c \'%s\' & wait' % child, sys.executable], stdout=subprocess.PIPE,
                            start_new_session=True, universal_newlines=True)
    assert proc.stdout.readline().strip() == 'ready'
    assert len(group_members(proc.pid)) == 2  # sh and its python child
    started = time.time()
    stop_group(proc, grace=0.5)
    assert time.time() - started >= 0.5  # it waited for the child past the leader's exit
    assert group_members(proc.pid) == []  # (a zombie left for init to reap is not counted)
    for entry in os.listdir('/proc'):  # checked apart from the module's own reading
        if entry.isdigit():
            try:
                stat = open('/proc/%s/stat' % entry).read()
            except OSError:
                continue
            fields = stat[stat.rfind(')') + 2:].split()
            assert not (fields[2] == str(proc.pid) and fields[0] not in ('Z', 'X')), stat
    assert proc.returncode == -signal.SIGTERM
