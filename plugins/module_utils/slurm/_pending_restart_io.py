# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node's side of pending restarts (``_pending_restart``): the marker files, the boot id, the clocks, process start times.

In slurm/ with the daemons it restarts (slurmd, slurmctld, slurmdbd, munged) and ``_slurm_upgrade.process_start``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils import _pending_restart as pending
from ansible_collections.gpucluster.bringup.plugins.module_utils._atomic_write import write_atomic
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import process_start


def boot_id():
    try:
        with open('/proc/sys/kernel/random/boot_id') as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ''


def boot_clock():
    """Seconds since boot, suspend included (the clock of /proc/PID/stat's start time)."""
    clock = getattr(time, 'CLOCK_BOOTTIME', None)
    if clock is not None:
        return time.clock_gettime(clock)
    with open('/proc/uptime') as handle:
        return float(handle.read().split()[0])


def process_started(pid):
    """When process ``pid`` started (seconds since boot, the clock of boot_clock), or None when it is gone or cannot be read."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return process_start(handle.read(), 0, os.sysconf('SC_CLK_TCK'))
    except (IOError, OSError, ValueError, IndexError):
        return None


def path_of(directory, daemon):
    return os.path.join(directory, '%s.json' % daemon)


def read_marker(directory, daemon, current_boot_id):
    """The daemon's marker, or None when there is none (an unreadable one counts as a restart to do)."""
    path = path_of(directory, daemon)
    try:
        with open(path, 'rb') as handle:
            raw = handle.read(1 << 20)
        mtime = os.stat(path).st_mtime
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    # the file's age on the boot clock, for a marker whose own time cannot be read
    since = boot_clock() - max(0.0, time.time() - mtime)
    return pending.parse_marker(daemon, raw.decode('utf-8', 'replace'), since, current_boot_id)


def write_markers(directory, restarts):
    """Merge each of ``restarts`` (checked ``{daemon, action, reason}``) into its daemon's marker, each written whole and synced."""
    if not restarts:
        return []
    current = boot_id()
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    written = []
    for item in restarts:
        daemon = item['daemon']
        old = read_marker(directory, daemon, current)
        reasons = [item['reason']] if item.get('reason') else []
        marker = pending.merge(old, daemon, item['action'], reasons, current, boot_clock(), time.time())
        write_atomic(path_of(directory, daemon), pending.marker_text(marker).encode('utf-8'), 0o644)
        written.append(daemon)
    _sync_dir(directory)
    return written


def remove_marker(directory, daemon):
    try:
        os.unlink(path_of(directory, daemon))
    except (IOError, OSError) as exc:
        if exc.errno != errno.ENOENT:
            raise
        return False
    _sync_dir(directory)
    return True


def _sync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
