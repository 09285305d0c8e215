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

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(Exception):
    """The module received one of STOP_SIGNALS while the command ran; the command was stopped."""

    def __init__(self, signum):
        super(Interrupted, self).__init__('interrupted by signal %d' % signum)
        self.signum = signum


class TimedOut(Exception):
    """The command ran longer than its time limit and was stopped."""

    def __init__(self, timeout):
        super(TimedOut, self).__init__('timed out after %s seconds' % timeout)
        self.timeout = timeout


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


def stop_group(proc, grace=5):
    """SIGTERM, then SIGKILL, the process group led by ``proc``; reap ``proc``."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, signum)
        except OSError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
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
            raise TimedOut(timeout)
        return proc.returncode, out, err
    except Interrupted:
        if proc is not None:
            stop_group(proc)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
