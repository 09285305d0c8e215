# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmdbd in the foreground for its schema conversion (the process side of ``slurmdbd_convert``).

Reads the merged output line by line until slurmdbd says it started, it
exits, or the timeout passes; then stops it (SIGTERM, SIGKILL after 60 s).
:func:`check_params` judges the module's options before anything runs.
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import selectors
import signal
import stat
import subprocess
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import PSEUDO_ROOTS, InputError, require_int, show
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import dbd_line_state

# the longest conversion waited for: a day (SchedMD: hours on a large database; the module runs under async)
MAX_TIMEOUT = 86400
MAX_OUTPUT_LINES = 100000
PROGRAM = 'the absolute path of the slurmdbd program (an executable regular file)'
USER = 'the name of an existing user (the SlurmUser of slurmdbd.conf)'


def _may_execute(info, entry):
    """Whether the user of the passwd ``entry`` may execute a file of ``os.stat`` result ``info``."""
    if entry.pw_uid == 0:
        return bool(info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if info.st_uid == entry.pw_uid:
        return bool(info.st_mode & stat.S_IXUSR)
    try:
        groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    except (OSError, AttributeError):
        groups = [entry.pw_gid]
    if info.st_gid in groups:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def check_params(params, euid=None):
    """The module's options, before anything runs; returns them converted, raises ``InputError`` on the first bad one.

    ``executable`` an absolute path, not under /proc or /sys, of an existing regular file that ``user`` may execute;
    ``user`` an existing user this process can switch to (root may switch to any); ``timeout`` 1..86400 seconds;
    ``output_lines`` 0..100000.
    """
    euid = os.geteuid() if euid is None else euid
    timeout = require_int('timeout', params.get('timeout'), minimum=1, maximum=MAX_TIMEOUT, unit='seconds')
    output_lines = require_int('output_lines', params.get('output_lines'), minimum=0, maximum=MAX_OUTPUT_LINES)
    user = params.get('user')
    if not isinstance(user, str) or not user.strip() or user != user.strip() or user.startswith('-') or '\x00' in user:
        raise InputError('user is %s, expected %s' % (show(user), USER))
    try:
        entry = pwd.getpwnam(user)
    except (KeyError, ValueError):
        raise InputError('user is %s, which does not exist on this host; expected %s' % (show(user), USER))
    if euid != 0 and entry.pw_uid != euid:
        raise InputError('user is %s, but this module runs as uid %d and cannot switch to that user; expected this user, '
                         'or run the task with become' % (show(user), euid))
    path = params.get('executable')
    if not isinstance(path, str) or '\x00' in path or not os.path.isabs(path):
        raise InputError('executable is %s, expected %s' % (show(path), PROGRAM))
    full = os.path.normpath(path)
    for root in PSEUDO_ROOTS:
        if full == root or full.startswith(root + '/'):
            raise InputError('executable is %s, which is under %s, a kernel file system; expected %s' % (show(path), root, PROGRAM))
    try:
        info = os.stat(full)
    except OSError as exc:
        if not os.path.lexists(full):
            raise InputError('executable is %s, which does not exist: install slurmdbd, or name it here; expected %s' % (show(path), PROGRAM))
        raise InputError('executable is %s, which cannot be read (%s); expected %s' % (show(path), exc.strerror or exc, PROGRAM))
    if stat.S_ISDIR(info.st_mode):
        raise InputError('executable is %s, which is a directory; expected %s' % (show(path), PROGRAM))
    if not stat.S_ISREG(info.st_mode):
        raise InputError('executable is %s, which is not a regular file; expected %s' % (show(path), PROGRAM))
    if not _may_execute(info, entry):
        raise InputError('executable is %s, which is not executable: user %s may not execute it; expected %s'
                         % (show(path), show(user), PROGRAM))
    return dict(params, executable=full, user=user, timeout=timeout, output_lines=output_lines)


def _demote(user):
    entry = pwd.getpwnam(user)

    def run():
        os.setgid(entry.pw_gid)
        os.initgroups(user, entry.pw_gid)
        os.setuid(entry.pw_uid)
    return run


def _stop(proc, wait=60):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_foreground(executable, user, timeout):
    """Run slurmdbd -D -v; return (lines, returncode or None when stopped by us, timed_out, seconds).

    Raises ``OSError`` when the program cannot be started (not a program the kernel runs, the user switch failed)."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen([executable, '-D', '-v'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=_demote(user), cwd='/', close_fds=True)
    except subprocess.SubprocessError as exc:  # the switch to the user failed in the child
        raise OSError('cannot start %s as %s: %s' % (executable, user, exc))
    lines, buffer, timed_out, ready = [], b'', False, False
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    try:
        while True:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                timed_out = True
                break
            if not selector.select(timeout=min(left, 5)):
                if proc.poll() is not None:
                    break
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            while b'\n' in buffer:
                raw, buffer = buffer.split(b'\n', 1)
                line = raw.decode('utf-8', 'replace').rstrip()
                lines.append(line)
                if dbd_line_state(line) == 'ready':
                    ready = True
            if ready:
                break
    finally:
        selector.close()
        if buffer:
            lines.append(buffer.decode('utf-8', 'replace').rstrip())
        seconds = time.monotonic() - start
        code = proc.poll()
        _stop(proc)
    return lines, (None if ready or timed_out else (code if code is not None else proc.returncode)), timed_out, seconds
