# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Permissions of the munge key and its directory (standard library only).

Anyone who can read the munge key can forge credentials for every user of the cluster, so the key must be
mode 0400 or 0600 (no group or other access), owned by the munge user, in a directory of mode 0700 owned by
the munge user (what the munge packages create as ``/etc/munge``).

:func:`observe` reads the file system (``os.stat``, the user database); :func:`problems` is the pure
judgement, used by ``node_check`` (validation) and by the GPU health check program (which drains the
node).  The key's content is never read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import stat

KEY_PATH = '/etc/munge/munge.key'
USER = 'munge'
KEY_MODES = (0o400, 0o600)
DIR_MODE = 0o700


def _entry(path):
    try:
        info = os.stat(path)
    except OSError as exc:
        return {'error': exc.strerror or str(exc)}
    return {'mode': info.st_mode, 'uid': info.st_uid}


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _user_uid(name):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def key_path_of(argv):
    """The key file a munged with command line ``argv`` reads: its last ``--key-file=PATH`` or ``--key-file PATH``
    (the role gpucluster.bringup.munge gives one for a munge_key_path other than the default), else :data:`KEY_PATH`."""
    path = KEY_PATH
    args = list(argv or [])[1:]
    for index, arg in enumerate(args):
        if arg == '--':
            break
        if arg.startswith('--key-file='):
            path = arg[len('--key-file='):]
        elif arg == '--key-file' and index + 1 < len(args):
            path = args[index + 1]
    return path


def running_key_path(proc='/proc'):
    """The key file of the munged running on this host (from ``/proc/<pid>/cmdline``), or ``None`` when none runs."""
    try:
        pids = sorted((name for name in os.listdir(proc) if name.isdigit()), key=int)
    except OSError:
        return None
    for pid in pids:
        try:
            with open(os.path.join(proc, pid, 'cmdline'), 'rb') as handle:
                raw = handle.read()
        except (OSError, IOError):
            continue  # gone meanwhile, or not ours to read
        argv = [part.decode('utf-8', 'surrogateescape') for part in raw.split(b'\0') if part]
        if argv and os.path.basename(argv[0]) == 'munged':
            return key_path_of(argv)
    return None


def observe(path=KEY_PATH, user=USER):
    """What :func:`problems` judges: ``{path, user, uid, key: {mode, uid, owner} | {error}, dir: {...}}``."""
    observed = {'path': path, 'user': user, 'uid': _user_uid(user), 'key': _entry(path), 'dir': _entry(os.path.dirname(path) or '.')}
    for part in ('key', 'dir'):
        if 'uid' in observed[part]:
            observed[part]['owner'] = _user_name(observed[part]['uid'])
    return observed


def _owner(entry):
    return 'uid %d (%s)' % (entry['uid'], entry['owner']) if entry.get('owner') else 'uid %d' % entry['uid']


def problems(observed):
    """What is wrong with the munge key's permissions, as sentences naming the path, what was found and what is expected.

    ``observed``: as :func:`observe` returns; ``key``/``dir`` hold ``mode`` (``st_mode``) and ``uid``, or
    ``error``; ``uid`` is the munge user's uid (``None`` when there is no such user). Raises ``ValueError``
    for a malformed ``observed``.
    """
    if not isinstance(observed, dict) or not observed.get('path') or not isinstance(observed.get('key'), dict) \
            or not isinstance(observed.get('dir'), dict):
        raise ValueError('munge key observation %r lacks path, key or dir' % (observed,))
    path = observed['path']
    directory = os.path.dirname(path) or '.'
    user = observed.get('user') or USER
    uid = observed.get('uid')
    key, folder = observed['key'], observed['dir']
    found = []
    if uid is None:
        found.append('there is no user %s to own the munge key %s (munged runs as that user)' % (user, path))
    if 'error' in key:
        found.append('munge key %s cannot be read: %s; expected a file of mode 0400 or 0600 owned by %s' % (path, key['error'], user))
    else:
        mode = stat.S_IMODE(key['mode'])
        if not stat.S_ISREG(key['mode']):
            found.append('munge key %s is not a regular file; expected a file of mode 0400 or 0600 owned by %s' % (path, user))
        elif mode not in KEY_MODES:
            found.append('munge key %s has mode %04o, expected 0400 or 0600 (no group or other access: '
                         'whoever reads the key can forge any user\'s credentials)' % (path, mode))
        if uid is not None and key['uid'] != uid:
            found.append('munge key %s is owned by %s, expected %s (uid %d)' % (path, _owner(key), user, uid))
    if 'error' in folder:
        found.append('munge key directory %s cannot be read: %s; expected a directory of mode 0700 owned by %s' % (directory, folder['error'], user))
    else:
        mode = stat.S_IMODE(folder['mode'])
        if not stat.S_ISDIR(folder['mode']):
            found.append('munge key directory %s is not a directory' % directory)
        elif mode != DIR_MODE:
            found.append('munge key directory %s has mode %04o, expected 0700' % (directory, mode))
        if uid is not None and folder['uid'] != uid:
            found.append('munge key directory %s is owned by %s, expected %s (uid %d)' % (directory, _owner(folder), user, uid))
    return found
