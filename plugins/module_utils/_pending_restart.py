# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pending restarts: a change a daemon has not applied yet, kept on the node until it has.

A role that replaces a file a daemon reads (slurm.conf, gres.conf,
slurmdbd.conf, the munge key, a systemd drop-in) says which daemon must
restart or reconfigure when the file changes (``install_files``, the entry's
``restarts``).  Before the file is replaced, the module writes a marker,
``<dir>/<daemon>.json``; the marker goes only once the daemon demonstrably
took the change: its process started after the marker was written (a
restart, Slurm's fork-and-exec reconfigure from 23.11 on, a reboot), the
daemon is not running (it reads the files when it starts), or the role says
a reconfigure of this run applied it (Slurm before 23.11 reconfigures in
place).  So a run stopped between the write and the restart (Ctrl-C, a lost
connection, a failed task) leaves the marker, the next run restarts what it
says, and the validation fails while one is left.

A marker (JSON): ``{"daemon": "slurmd", "action": "restart" | "reconfigure",
"reasons": [text, ...], "boot_id": the kernel's boot id, "since": seconds of
CLOCK_BOOTTIME when written, "written": seconds since the epoch (for
people)}``.  The process start time comes from ``/proc/PID/stat`` (clock
ticks since boot, the same clock).

Pure functions, standard library only; the files are read and written by
``slurm/_pending_restart_io``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, require_unit, show

ACTIONS = ('restart', 'reconfigure')
DEFAULT_DIR = '/var/lib/gpucluster/pending'
MAX_REASONS = 20


def check_restarts(place, value):
    """An entry's ``restarts``: a list of ``{daemon, action (restart), reason (optional)}``, checked; InputError names ``place``."""
    if not isinstance(value, list):
        raise InputError('%s: restarts is %s, expected a list of {daemon: a systemd unit such as "slurmd", action: restart or reconfigure}'
                         % (place, show(value)))
    checked = []
    for index, item in enumerate(value):
        where = '%s: restarts[%d]' % (place, index)
        if isinstance(item, str):
            item = {'daemon': item}
        if not isinstance(item, dict):
            raise InputError('%s is %s, expected a daemon name or {daemon, action, reason}' % (where, show(item)))
        unknown = sorted(set(item) - set(('daemon', 'action', 'reason')), key=str)
        if unknown:
            raise InputError('%s has the key %s, expected only daemon, action and reason' % (where, show(unknown[0])))
        daemon = require_unit('%s.daemon' % where, item.get('daemon'))
        action = item.get('action', 'restart')
        if action not in ACTIONS:
            raise InputError('%s.action is %s, expected one of %s' % (where, show(action), ', '.join(ACTIONS)))
        reason = item.get('reason', '')
        if not isinstance(reason, str) or len(reason) > 1000 or any(ord(char) < 32 for char in reason):
            raise InputError('%s.reason is %s, expected one line of text of at most 1000 characters' % (where, show(reason)))
        checked.append({'daemon': daemon, 'action': action, 'reason': reason})
    return checked


def merge(old, daemon, action, reasons, boot_id, since, written):
    """The marker after a new change of ``daemon``: a restart outweighs a reconfigure, the reasons add up, the time is the newest.

    ``old`` is the marker already there (or None): a change not applied yet
    stays to apply.  A marker of another boot is gone in effect (every daemon
    started since), so it does not carry over.
    """
    if old and old.get('boot_id') == boot_id:
        action = 'restart' if 'restart' in (old.get('action'), action) else 'reconfigure'
        reasons = [reason for reason in old.get('reasons', []) if reason not in reasons] + list(reasons)
    return {'daemon': daemon, 'action': action, 'reasons': reasons[-MAX_REASONS:], 'boot_id': boot_id, 'since': since, 'written': written}


def marker_text(marker):
    return json.dumps(marker, sort_keys=True, indent=1) + '\n'


def parse_marker(daemon, text, fallback_since, boot_id):
    """The marker read from ``text``; one that cannot be read counts as a restart to do, from ``fallback_since`` (its mtime).

    Never raises: a garbled marker must never make a pending change disappear.
    """
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if (isinstance(data, dict) and data.get('action') in ACTIONS and isinstance(data.get('since'), (int, float))
            and not isinstance(data.get('since'), bool) and isinstance(data.get('boot_id'), str)
            and isinstance(data.get('reasons'), list) and all(isinstance(reason, str) for reason in data['reasons'])):
        return dict(data, daemon=daemon)
    return {'daemon': daemon, 'action': 'restart', 'reasons': ['its marker could not be read (%s)' % show(text[:80])],
            'boot_id': boot_id, 'since': fallback_since, 'written': None}


def settled(marker, boot_id, started, reconfigured=False):
    """Why the daemon has taken the change the marker records (a text), or '' while it has not.

    ``started``: when the daemon's running process started (seconds of
    CLOCK_BOOTTIME), or None when it is not running. ``reconfigured``: a
    reconfigure of this run applied the daemon's files (only a reconfigure
    marker is settled by it).
    """
    if marker.get('boot_id') != boot_id:
        return 'the node rebooted since'
    if started is None:
        return 'not running (it reads the files when it starts)'
    if started > marker['since']:
        return 'its process started after the change'
    if reconfigured and marker.get('action') == 'reconfigure':
        return 'reconfigured'
    return ''


def describe(host, marker):
    """One line of a pending change: what, why, since when, and the command that applies it."""
    daemon = marker['daemon']
    if marker['action'] == 'reconfigure':
        fix = 'sudo scontrol reconfigure'
    else:
        fix = 'sudo systemctl restart %s' % daemon
    return '%s on %s has not applied %s (%s to do; run %s there, or the playbook that changed it)' % (
        daemon, host, '; '.join(marker.get('reasons') or ['a change']), marker['action'], fix)


def conf_restarts(actions, controller, compute):
    """The ``restarts`` of a host's slurm.conf entry, from what the change needs (``_slurm_conf.change_actions``).

    On the controller slurmctld restarts, or else reconfigures (the
    reconfigure reaches every slurmd); on a compute node slurmd restarts.
    """
    actions = actions or {}
    reason = '; '.join(str(text) for text in actions.get('reasons') or [])
    reason = reason if len(reason) <= 300 else reason[:297] + '...'
    restarts = []
    if controller and actions.get('restart_slurmctld'):
        restarts.append({'daemon': 'slurmctld', 'action': 'restart', 'reason': reason})
    elif controller and actions.get('reconfigure'):
        restarts.append({'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': reason})
    if compute and actions.get('restart_slurmd'):
        restarts.append({'daemon': 'slurmd', 'action': 'restart', 'reason': reason})
    return restarts


def check_dir(value):
    """``pending_dir``: an absolute path without control characters; InputError otherwise."""
    if (not isinstance(value, str) or not value.startswith('/') or len(value) > 1024 or any(ord(char) < 32 or ord(char) == 127 for char in value)
            or '/../' in value + '/'):
        raise InputError('pending_dir is %s, expected an absolute path without control characters or ".." such as "%s"' % (show(value), DEFAULT_DIR))
    return value
