# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/module_utils/enroot/_enroot_run.py: real processes, real signals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run
from ansible_collections.gpucluster.bringup.tests.unit.nodelib import alive


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
    assert not alive(_read_pid(pidfile))


def test_timeout_keeps_what_the_command_wrote_to_stderr():
    # what enroot printed before it was stopped is the user's only clue (a registry that hangs after "Fetching image")
    argv = ['sh', '-c', 'echo "[INFO] Fetching image manifest list" >&2; exec sleep 30']
    with pytest.raises(_enroot_run.TimedOut) as err:
        _enroot_run.run_stoppable(argv, dict(os.environ), timeout=1)
    assert err.value.stderr == '[INFO] Fetching image manifest list\n'


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
    assert not alive(_read_pid(pidfile))
    assert signal.getsignal(signum) == before


@pytest.mark.skipif(shutil.which('parallel') is None, reason='GNU parallel (what enroot runs; scripts/test.sh deps installs it) is missing')
def test_a_job_of_gnu_parallel_finishes_its_cleanup(tmp_path):
    # enroot downloads each layer in a job of GNU parallel, in a process group of its own, whose EXIT trap removes the
    # partial layer; parallel, when told to stop, KILLs its jobs 375 ms after their TERM. A cleanup slower than that
    # (a busy node) must still finish: the job is stopped before parallel is.
    partial = tmp_path / 'partial'
    job = 'trap "sleep 1; rm -f %s" EXIT; touch %s; sleep 30' % (partial, partial)
    proc = subprocess.Popen(['parallel', '--plain', '-q', '-j1', '--retries', '2', 'bash', '-c', job, ':::', '1'],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 30
    while not (partial.exists() and _enroot_run.inner_groups(proc.pid)) and time.time() < deadline:
        time.sleep(0.05)
    assert partial.exists() and _enroot_run.inner_groups(proc.pid), 'the job never started'
    _enroot_run.stop_group(proc)
    assert not partial.exists(), 'the job was killed before its cleanup'
    assert proc.returncode is not None and _enroot_run.inner_groups(proc.pid) == [] and _enroot_run.group_members(proc.pid) == []


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


_KILLPG = os.killpg  # the real one, for clean-up where a test gives the module a stand-in


def _live(pid):
    """True while ``pid`` runs (not a zombie, not gone); never fails on a process that goes away meanwhile."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(')') + 2:].split()[0] not in ('Z', 'X')


def _stop_and_reap(proc):
    try:
        _KILLPG(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


# A child that survives SIGTERM and SIGHUP and notes in the file argv[1] each signal it gets; it prints its pid.
_NOTING_CHILD = '\n'.join([
    'import os, signal, sys, time',
    'def note(signum, frame):',
    '    with open(sys.argv[1], "a") as out:',
    '        out.write("%d\\n" % signum)',
    'signal.signal(signal.SIGTERM, note)',
    'signal.signal(signal.SIGHUP, note)',
    'print(os.getpid(), flush=True)',
    'time.sleep(60)',
])


def _noting_group(notes):
    """A group led by sh (which exits on SIGTERM) with a child that survives SIGTERM; returns (proc, child pid)."""
    proc = subprocess.Popen(['sh', '-c', '"$0" -c "$1" "$2" & wait', sys.executable, _NOTING_CHILD, notes],
                            stdout=subprocess.PIPE, start_new_session=True, universal_newlines=True)
    return proc, int(proc.stdout.readline())


def _notes(path):
    with open(path) as handle:
        return handle.read().split()


@pytest.mark.parametrize('stats, members', [
    # /proc/<pid>/stat of each entry of /proc: "pid (command) state ppid pgrp session ..."; the group is 42
    ({'10': '10 (sleep) S 1 42 42 0', '11': '11 (sh) R 10 42 42 0', '12': '12 (other) S 1 7 7 0'}, [10, 11]),
    # exited (zombie) and dead processes are not members any more
    ({'10': '10 (sleep) S 1 42 42 0', '13': '13 (done) Z 10 42 42 0', '14': '14 (gone) X 10 42 42 0'}, [10]),
    # a command name may hold ") " and what looks like fields: the fields follow the last ")"
    ({'15': '15 (a) Z 1 42 b) S 1 42 42 0', '16': '16 (c) S 1 42 d) S 1 7 7 0'}, [15]),
    # the process group counts, not the session
    ({'17': '17 (x) S 1 42 99 0', '18': '18 (y) S 1 99 42 0'}, [17]),
    # a line too short to hold the process group is skipped; three fields are enough
    ({'19': '19 (x) S 1', '20': '20 (y) S 1 42'}, [20]),
    # entries that are not processes, and a process that went away between listing and reading
    ({'self': '1 (init) S 0 42 42 0', '22': None, '21': '21 (x) S 1 42 42 0'}, [21]),
])
def test_group_members_reads_proc(monkeypatch, stats, members):
    listdir = os.listdir

    def fake_listdir(path='.'):
        return list(stats) if path == '/proc' else listdir(path)

    def fake_open(path):
        entry = path.split('/')[2]
        if stats.get(entry) is None or path != '/proc/%s/stat' % entry:
            raise OSError(2, 'No such file or directory', path)
        return io.StringIO(stats[entry])

    monkeypatch.setattr(_enroot_run.os, 'listdir', fake_listdir)
    monkeypatch.setattr(_enroot_run, 'open', fake_open, raising=False)
    assert _enroot_run.group_members(42) == members


@pytest.mark.parametrize('stats, groups', [
    # the groups of session 42 other than the leader's own (42): GNU parallel's jobs
    ({'10': '10 (enroot) S 1 42 42 0', '11': '11 (parallel) S 10 42 42 0', '12': '12 (bash) S 11 12 42 0',
      '13': '13 (curl) S 12 12 42 0', '14': '14 (bash) S 11 14 42 0', '15': '15 (other) S 1 15 15 0'}, [12, 14]),
    # a job that has exited (zombie) is not waited for; another session's groups are not ours
    ({'12': '12 (bash) Z 11 12 42 0', '16': '16 (x) S 1 16 43 0', '17': '17 (y) S 1 43 43 0'}, []),
    # a line cut short after the group has no session
    ({'18': '18 (x) S 1 18'}, []),
])
def test_inner_groups_reads_proc(monkeypatch, stats, groups):
    listdir = os.listdir
    monkeypatch.setattr(_enroot_run.os, 'listdir', lambda path='.': list(stats) if path == '/proc' else listdir(path))
    monkeypatch.setattr(_enroot_run, 'open', lambda path: io.StringIO(stats[path.split('/')[2]]), raising=False)
    assert _enroot_run.inner_groups(42) == groups


def test_group_members_of_a_real_group():
    """A process group that is not a session, led by a process whose name holds ") ": its pid is listed."""
    code = 'import os, time; os.setpgid(0, 0); open("/proc/self/comm", "w").write("x) y 1 2"); print("ready", flush=True); time.sleep(60)'
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        assert _enroot_run.group_members(proc.pid) == [proc.pid]
    finally:
        _stop_and_reap(proc)


def test_a_zombie_of_the_group_is_not_waited_for():
    """A process of the group that has exited but is not reaped yet (its parent has not waited) writes nothing:
    stop_group returns as soon as the leader has gone."""
    leader = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); print("ready", flush=True); time.sleep(60)'],
                              stdout=subprocess.PIPE, universal_newlines=True)
    exited = None
    try:
        assert leader.stdout.readline().strip() == 'ready'
        # this test is its parent and does not wait for it until the end
        exited = subprocess.Popen([sys.executable, '-c', 'import os, sys; os.setpgid(0, int(sys.argv[1]))', str(leader.pid)])
        deadline = time.time() + 10
        while _live(exited.pid) and time.time() < deadline:
            time.sleep(0.02)
        with open('/proc/%d/stat' % exited.pid) as handle:
            stat = handle.read()
        assert stat[stat.rfind(')') + 2:].split()[0:3:2] == ['Z', str(leader.pid)]  # a zombie of the group
        assert _enroot_run.group_members(leader.pid) == [leader.pid]
        started = time.time()
        _enroot_run.stop_group(leader, grace=2)
        assert time.time() - started < 1.5
        assert leader.returncode == -signal.SIGTERM
    finally:
        _stop_and_reap(leader)
        if exited is not None:
            assert exited.wait() == 0


# A group leader (not a session leader) that leaves its group for its parent's, at once or on SIGTERM, then
# exits with 7 a second later.
_LEAVING_LEADER = '\n'.join([
    'import os, signal, sys, time',
    'os.setpgid(0, 0)',
    'def leave(signum=None, frame=None):',
    '    os.setpgid(0, os.getpgid(os.getppid()))',
    'if sys.argv[1] == "now":',
    '    leave()',
    'else:',
    '    signal.signal(signal.SIGTERM, leave)',
    'print("ready", flush=True)',
    'time.sleep(1)',
    'sys.exit(7)',
])


@pytest.mark.parametrize('when', ['now', 'on SIGTERM'])
def test_stop_group_reaps_a_leader_that_left_its_group(when):
    """The group is gone (at once, or after SIGTERM) while its former leader still runs: stop_group still waits
    for the leader and reaps it."""
    proc = subprocess.Popen([sys.executable, '-c', _LEAVING_LEADER, when], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        _enroot_run.stop_group(proc)
        assert proc.returncode == 7
    finally:
        proc.kill()
        proc.wait()


def test_stop_group_gives_the_group_five_seconds_after_sigterm(tmp_path):
    notes = str(tmp_path / 'signals')
    proc, child = _noting_group(notes)
    try:
        started = time.time()
        _enroot_run.stop_group(proc)
        elapsed = time.time() - started
        assert 5 <= elapsed < 5.9, elapsed
        assert not _live(child)
        assert _notes(notes) == [str(int(signal.SIGTERM))]
    finally:
        _stop_and_reap(proc)


def test_stop_group_returns_soon_after_the_group_has_gone():
    """It polls the group: a command that takes 0.2 s to exit on SIGTERM is waited for about that long."""
    code = ('import signal, sys, time; signal.signal(signal.SIGTERM, lambda signum, frame: (time.sleep(0.2), sys.exit(3))); '
            'print("ready", flush=True); time.sleep(60)')
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, start_new_session=True, universal_newlines=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        started = time.time()
        _enroot_run.stop_group(proc, grace=5)
        assert time.time() - started < 1.0
        assert proc.returncode == 3
    finally:
        _stop_and_reap(proc)


@pytest.fixture
def no_proc(monkeypatch):
    """A system without /proc: the group is probed with killpg(pgid, 0)."""
    listdir = os.listdir

    def fake_listdir(path='.'):
        if path == '/proc':
            raise OSError(2, 'No such file or directory', path)
        return listdir(path)

    monkeypatch.setattr(_enroot_run.os, 'listdir', fake_listdir)
    assert _enroot_run.group_members(os.getpgid(0)) is None


@pytest.mark.parametrize('probe', ['allowed', 'refused'])
def test_without_proc_stop_group_waits_for_the_group(tmp_path, monkeypatch, no_proc, probe):
    """Without /proc, a group whose child survives SIGTERM is waited for, then killed; probing it sends no signal.
    A probe refused (EPERM: processes of another user) counts as alive."""
    if probe == 'refused':
        def killpg(pgid, signum):
            if signum == 0:
                raise PermissionError(1, 'Operation not permitted')
            _KILLPG(pgid, signum)
        monkeypatch.setattr(_enroot_run.os, 'killpg', killpg)
    notes = str(tmp_path / 'signals')
    proc, child = _noting_group(notes)
    try:
        started = time.time()
        _enroot_run.stop_group(proc, grace=0.5)
        assert time.time() - started >= 0.5
        assert proc.returncode == -signal.SIGTERM
        assert not _live(child)
        assert _notes(notes) == [str(int(signal.SIGTERM))]
    finally:
        _stop_and_reap(proc)


def test_without_proc_a_group_that_has_gone_is_not_waited_for(no_proc):
    proc = subprocess.Popen(['sleep', '60'], start_new_session=True)
    try:
        started = time.time()
        _enroot_run.stop_group(proc, grace=5)
        assert time.time() - started < 4
        assert proc.returncode == -signal.SIGTERM
    finally:
        _stop_and_reap(proc)


def test_the_command_does_not_read_the_module_stdin():
    """The module's own stdin (where Ansible may pass its arguments) is not the command's: it reads nothing."""
    read_end, write_end = os.pipe()
    os.write(write_end, b'module input\n')
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        result = _enroot_run.run_stoppable(['sh', '-c', 'cat; echo end'], dict(os.environ), timeout=10)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert result == (0, 'end\n', '')


class _SignalledEnv(dict):
    """An environment whose reading by Popen, before the command starts, brings the module a SIGTERM."""

    def items(self):
        os.kill(os.getpid(), signal.SIGTERM)
        return super(_SignalledEnv, self).items()


class _TestHandlerCalled(Exception):
    pass


def _test_handler(signum, frame):
    raise _TestHandlerCalled(signum)


def test_stop_signal_before_the_command_started():
    # the handler in place before the call is one of the test's own: a SIGTERM never ends the test run
    previous = signal.signal(signal.SIGTERM, _test_handler)
    try:
        with pytest.raises(_enroot_run.Interrupted) as err:
            _enroot_run.run_stoppable(['sleep', '60'], _SignalledEnv(os.environ), timeout=30)
        assert err.value.signum == signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) == _test_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_timed_out_keeps_its_time_limit():
    err = _enroot_run.TimedOut(2.5)
    assert (err.timeout, str(err)) == (2.5, 'timed out after 2.5 seconds')


def test_a_group_is_signalled_only_while_it_is_of_the_session_named():
    """A job's group number, read seconds before, may have been taken by a group of another session: such a group is
    no group of the import's to signal; one of the session named is; a group with no process left is none."""
    proc = subprocess.Popen(['sleep', '30'], start_new_session=True)  # group and session: its own pid
    try:
        assert _enroot_run._live_groups([proc.pid], proc.pid + 1) == []
        assert _enroot_run._live_groups([proc.pid, proc.pid + 1], proc.pid) == [proc.pid]
        proc.kill()
        proc.wait()
        assert _enroot_run._live_groups([proc.pid], proc.pid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
