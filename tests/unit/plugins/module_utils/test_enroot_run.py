# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/module_utils/_enroot_run.py: real processes, real signals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
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
