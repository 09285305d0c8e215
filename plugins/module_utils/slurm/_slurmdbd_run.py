# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmdbd in the foreground for its schema conversion (the process side of ``slurmdbd_convert``).

Reads the merged output line by line until slurmdbd says it started, it
exits, or the timeout passes; then stops it (SIGTERM, SIGKILL after 60 s).
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import selectors
import signal
import subprocess
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import dbd_line_state


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
    """Run slurmdbd -D -v; return (lines, returncode or None when stopped by us, timed_out, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen([executable, '-D', '-v'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, preexec_fn=_demote(user), cwd='/', close_fds=True)
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
