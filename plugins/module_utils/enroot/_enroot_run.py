# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run a long command (``enroot import``) so that it can be stopped cleanly.

``AnsibleModule.run_command`` has no time limit and leaves the command running when the
module itself is told to stop.  An image import can take many minutes and spawns curl,
tar and mksquashfs; when it times out or the module receives SIGTERM, SIGINT or SIGHUP
(Ansible's task timeout, a Ctrl-C on the controller, a dropped SSH connection), the whole
process group must go, so that the caller can remove the partial output.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import subprocess
import time

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(Exception):
    """The module received one of STOP_SIGNALS while the command ran; the command was stopped.

    ``stderr``: what the command printed there before it was stopped (set by :func:`run_stoppable`)."""

    def __init__(self, signum):
        super(Interrupted, self).__init__('interrupted by signal %d' % signum)
        self.signum = signum
        self.stderr = ''


class TimedOut(Exception):
    """The command ran longer than its time limit and was stopped (``stderr`` as for :class:`Interrupted`)."""

    def __init__(self, timeout):
        super(TimedOut, self).__init__('timed out after %s seconds' % timeout)
        self.timeout = timeout
        self.stderr = ''


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def _processes():
    """``(pid, ppid, pgrp, session)`` of every live (not zombie) process, from /proc (session None where the line is
    cut short after the group); None without /proc."""
    try:
        entries = os.listdir('/proc')
    except OSError:
        return None
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        # after "pid (comm) ": state ppid pgrp session ...
        fields = stat[stat.rfind(')') + 2:].split()
        if len(fields) > 2 and fields[0] not in ('Z', 'X'):
            found.append((int(entry), int(fields[1]), int(fields[2]), int(fields[3]) if len(fields) > 3 else None))
    return found


def group_members(pgid):
    """PIDs of the live (not zombie) processes of process group ``pgid``, from /proc; None without /proc."""
    found = _processes()
    return None if found is None else [pid for pid, _parent, group, _session in found if group == pgid]


def inner_groups(sid):
    """The process groups of session ``sid`` other than its leader's (``sid`` itself): GNU parallel, which enroot
    runs, starts each job in a group of its own.  [] without /proc."""
    return sorted(set(group for _pid, _parent, group, session in _processes() or [] if session == sid and group != sid))


def _live_groups(groups, sid):
    """Those of ``groups`` that still have a live process, every one of session ``sid`` (one read of /proc): a job's
    group may have ended and its number been taken by a group of another session, which must get no signal."""
    sessions = {}
    for _pid, _parent, group, session in _processes() or []:
        if group in groups:
            sessions.setdefault(group, set()).add(session)
    return sorted(group for group, found in sessions.items() if found == set([sid]))


def _parents_of_groups(pgid, groups):
    """The processes of group ``pgid`` that started a process of one of ``groups`` (GNU parallel, of its jobs)."""
    found = _processes() or []
    leaders = set(pid for pid, _parent, group, _session in found if group == pgid)
    return sorted(set(parent for _pid, parent, group, _session in found if group in groups and parent in leaders))


def _group_alive(pgid):
    members = group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _wait_group(proc, pgid, grace):
    """Wait up to ``grace`` seconds until no process of the group is left (reaping ``proc``); True when none is."""
    deadline = time.time() + grace
    while True:
        proc.poll()
        if not _group_alive(pgid):
            return True
        if time.time() >= deadline:
            return False
        time.sleep(0.05)


def _kill_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except OSError:
        return False
    return True


def _stop_inner_groups(pgid, grace):
    """Stop the jobs GNU parallel runs in groups of their own before parallel itself.  On SIGTERM parallel sends its
    jobs TERM and KILLs them 375 ms later, which cuts short the EXIT trap in which each enroot download removes its
    partial layer from the cache (on a busy node that takes longer); and a job that dies while parallel runs is
    started again (enroot runs it with ``--retries 2``).  So the leader's group is held (SIGSTOP), each job group gets
    SIGTERM and ``grace`` seconds to finish its cleanup (then SIGKILL), the held parent of the jobs (parallel) is
    KILLed (it has nothing left to stop and must not start a job again), and the rest of the leader's group goes on
    with its SIGTERM, sent once: a second one would cut short enroot's own EXIT trap, which removes its work
    directory.  True when this sent the leader's group its SIGTERM."""
    if not inner_groups(pgid) or not _kill_group(pgid, signal.SIGSTOP):
        return False
    try:
        inner = inner_groups(pgid)  # again, now that parallel is held: a job it started meanwhile is one of them
        parents = _parents_of_groups(pgid, inner)
        for group in _live_groups(inner, pgid):
            _kill_group(group, signal.SIGTERM)
        deadline = time.time() + grace
        while _live_groups(inner, pgid) and time.time() < deadline:
            time.sleep(0.05)
        for group in _live_groups(inner, pgid):
            _kill_group(group, signal.SIGKILL)
        for parent in parents:
            try:
                os.kill(parent, signal.SIGKILL)
            except OSError:
                pass
    finally:
        # a stopped process keeps a SIGTERM pending until it is continued: the TERM comes first, then the CONT
        _kill_group(pgid, signal.SIGTERM)
        _kill_group(pgid, signal.SIGCONT)
    return True


def stop_group(proc, grace=5):
    """SIGTERM, then SIGKILL, the process group led by ``proc``, until no process of it is left; reap ``proc``.

    Waiting for the leader alone is not enough: a child of it (enroot's subshells, mksquashfs) may still be
    writing the partial output after the leader has exited, and would outlive its removal.  Groups of the leader's
    session (GNU parallel's jobs) are stopped first (``_stop_inner_groups``).
    """
    pgid = proc.pid
    termed = _stop_inner_groups(pgid, grace)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        already_sent = termed and signum == signal.SIGTERM
        if not already_sent and not _kill_group(pgid, signum):
            break
        if _wait_group(proc, pgid, grace):
            break
    if proc.poll() is None:
        proc.wait()


def run_stoppable(argv, env, timeout=None):
    """Run ``argv`` in a new process group; return ``(rc, stdout, stderr)``.

    Raises :class:`TimedOut` after ``timeout`` seconds (``None`` or 0: no limit) and
    :class:`Interrupted` when a stop signal arrives; in both cases the process group has
    been stopped before the exception propagates.  Signal handlers are restored on return.
    """
    previous = {}
    proc = None
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, _raise_interrupted)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True, universal_newlines=True)
        try:
            out, err = proc.communicate(timeout=timeout or None)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            exc = TimedOut(timeout)
            exc.stderr = _rest_of_stderr(proc)
            raise exc
        return proc.returncode, out, err
    except Interrupted as exc:
        if proc is not None:
            stop_group(proc)
            exc.stderr = _rest_of_stderr(proc)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _rest_of_stderr(proc):
    """What a stopped command wrote to stderr (its group is gone, so the pipes end); '' when it cannot be read."""
    try:
        _out, err = proc.communicate(timeout=5)
    except Exception:  # pylint: disable=broad-except  # a diagnostic only: the stop itself succeeded
        return ''
    return err or ''
