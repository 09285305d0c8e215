# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""install_files' look at the node (I/O): what is at each path now, whether every change can be made, the diffs.

``plan(entries, check_mode, defaults)`` reads the node and judges the whole set before the first change
(``InputError``, nothing changed); ``decode_contents``, ``diff_of``, ``restarts_of`` and ``failure_message``
serve the module's run.  The steps themselves are _file_set's; the module applies them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import grp
import hashlib
import os
import pwd
import stat

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as file_set
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show

DIFF_LIMIT = 65536


def _native(value):
    """Text of an error or its strerror (as Ansible's to_native gives it)."""
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    return value if isinstance(value, str) else str(value)


def _bytes(value):
    """The bytes of the text the action sent (as Ansible's to_bytes with surrogate_or_strict gives them)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode('utf-8', 'surrogateescape')


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def _but(place, option, value, reason, expected):
    """A message about a value that is well formed but does not fit the node: ``<option> is <value>, but <reason>; expected <...>``."""
    return InputError('%s: %s is %s, but %s; expected %s' % (place, option, show(value), reason, expected))


def sha1_of(path):
    digest = hashlib.sha1()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 16), b''):
            digest.update(block)
    return digest.hexdigest()


def read_current(path):
    """What is at ``path`` now, in the form _file_set.plan_entry takes (None when nothing is there)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):   # (a file in the middle of the path: check_places names it)
        return None
    if stat.S_ISLNK(info.st_mode):
        return {'type': 'link', 'target': os.readlink(path)}
    kind = 'directory' if stat.S_ISDIR(info.st_mode) else 'file' if stat.S_ISREG(info.st_mode) else 'other'
    return {'type': kind, 'mode': stat.S_IMODE(info.st_mode),
            'checksum': sha1_of(path) if kind == 'file' else None,
            'owner': _name(pwd.getpwuid, info.st_uid), 'group': _name(grp.getgrgid, info.st_gid)}


def check_names(defaults, entries):
    """Every owner and group named exists on this node; InputError naming the first that does not."""
    lookups = (('owner', pwd.getpwnam, 'a user'), ('group', grp.getgrnam, 'a group'))
    for key, lookup, what in lookups:
        if key in defaults:
            try:
                lookup(defaults[key])
            except KeyError:
                raise InputError('%s is %s, expected %s that exists on this node' % (key, show(defaults[key]), what))
    for index, entry in enumerate(entries):
        for key, lookup, what in lookups:
            if key in entry:
                try:
                    lookup(entry[key])
                except KeyError:
                    raise InputError('%s: %s is %s, expected %s that exists on this node' % (
                        file_set.where(index, entry['dest']), key, show(entry[key]), what))


def _kind_now(path):
    """'directory' (a link to one counts: files go into it), 'file', 'link' (to nothing), 'other', or None (nothing there)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return 'link' if os.path.islink(path) else None
    return 'directory' if stat.S_ISDIR(mode) else 'file' if stat.S_ISREG(mode) else 'other'


def _read_only(path):
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, 'ST_RDONLY', 1))
    except (OSError, AttributeError):
        return False


def _writable(path):
    return os.access(path, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids)


def _container(place, dest, future, make, check_mode=False):
    """The directory the entry's path is created in: ``(path, made_by)``, ``made_by`` the index of the earlier entry that
    makes it (None: it is there now).  A directory entry (``make``) may be under missing directories (made with it); so
    may any entry in check mode (an earlier task of the run, a package or another role, would make its directory)."""
    parent = os.path.dirname(dest)
    path = parent
    while True:
        kind, by = future[path] if path in future else (_kind_now(path), None)
        if kind is None and path != '/':
            path = os.path.dirname(path)
            continue
        if kind not in ('directory', None):
            made = ' (files[%d] makes it one)' % by if by is not None else ''
            raise _but(place, 'dest', dest, '%s is a %s%s, not a directory' % (path, kind, made),
                       'a path whose parents are directories')
        if path != parent and not (make or check_mode):
            raise _but(place, 'dest', dest, 'its directory %s does not exist' % parent,
                       'its directory to exist or an earlier entry to make it (add it as a directory entry before this one)')
        return path, by


def _check_owner_change(place, entry, steps, info, euid):
    """Without root, a mode change needs the path's owner; an owner change is root's; a group change needs a group of ours."""
    if euid == 0:
        return
    for step, value in steps:
        if step == 'mode' and info is not None and info.st_uid != euid:
            raise _but(place, 'mode', '%04o' % value, 'the path is owned by uid %d and this process runs as uid %d' % (info.st_uid, euid),
                       'to run as root or as the owner (become: true)')
        if step == 'owner':
            try:
                uid = pwd.getpwnam(value).pw_uid
            except KeyError:
                continue   # (check mode: a user that a package of this run may make)
            if uid != euid:
                raise _but(place, 'owner', value, 'only root may give a path to another user and this process runs as uid %d' % euid,
                           'to run as root (become: true)')
        if step == 'group':
            try:
                gid = grp.getgrnam(value).gr_gid
            except KeyError:
                continue
            if gid not in os.getgroups() and gid != os.getegid():
                raise _but(place, 'group', value, 'this process (uid %d) is not in that group' % euid, 'to run as root (become: true)')


def check_places(entries, plans, check_mode=False):
    """Every change the set makes can be made, judged before the first one: InputError naming the first that cannot.

    The node is looked at as the earlier entries leave it: a directory entry makes its missing parents; a path that an
    earlier entry makes a file or a link, or removes, holds nothing.  A path created or removed needs its directory
    writable by this process and on a writable file system; a changed mode, owner or group needs a writable file system and
    the right to make the change.  In check mode a missing directory of a new file or link is not an error: on a fresh
    node an earlier task of the same run (a package it installs) would make it.
    """
    future = {}
    euid = os.geteuid()
    for index, (entry, (current, steps)) in enumerate(zip(entries, plans)):
        dest = entry['dest']
        place = file_set.where(index, dest)
        if steps:
            try:
                places = any(step in ('create', 'content', 'remove') for step, dummy in steps)
                if places:
                    container, by = _container(place, dest, future, make=entry['state'] == 'directory', check_mode=check_mode)
                    if by is None:
                        if not _writable(container):
                            raise _but(place, 'dest', dest, 'this process may not create or remove entries in %s' % container,
                                       'a path in a directory this process may write (become: true?)')
                        if _read_only(container):
                            raise _but(place, 'dest', dest, '%s is on a read-only file system' % container, 'a path on a writable file system')
                    if entry['state'] == 'directory':
                        path = os.path.dirname(dest)
                        while path != container:
                            future[path] = ('directory', index)
                            path = os.path.dirname(path)
                    info = None
                else:
                    if _read_only(dest):
                        raise _but(place, 'dest', dest, 'it is on a read-only file system', 'a path on a writable file system')
                    info = os.stat(dest)
                _check_owner_change(place, entry, steps, info, euid)
            except OSError as exc:
                raise _but(place, 'dest', dest, 'it cannot be checked: %s' % _native(exc.strerror or exc),
                           'a path this process can look at')
        if entry['state'] == 'absent':
            future[dest] = (None, index)
        elif entry['state'] != 'link' or steps:
            future[dest] = (entry['state'], index)


def decode_contents(contents, entries):
    """The bytes of each file the action sent, checked against its entry's checksum; InputError on the first that does not fit."""
    files = dict((entry['dest'], (index, entry)) for index, entry in enumerate(entries) if entry['state'] == 'file')
    datas = {}
    for dest, value in contents.items():
        if dest not in files:
            raise InputError('contents has %s, expected only the dest of a file entry of files' % show(dest))
        index, entry = files[dest]
        try:
            data = base64.b64decode(_bytes(value), validate=True)
        except (TypeError, ValueError, binascii.Error):
            raise InputError('contents[%s] is %s, expected base64 text (the action plugin sends the files it reads that way)'
                             % (dest, show(value, 60)))
        if hashlib.sha1(data).hexdigest() != entry['checksum']:
            raise InputError('contents[%s] has SHA-1 %s, expected the content of %s (checksum %s)' % (
                dest, hashlib.sha1(data).hexdigest(), file_set.where(index, dest), entry['checksum']))
        datas[dest] = data
    return datas


def _text_or_none(data):
    if data is None or len(data) > DIFF_LIMIT:
        return None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def diff_of(entry, current, steps, content):
    """The diffs of an entry that changes: its state and attributes, then its content where that changes."""
    header = entry['dest']
    before = {'path': header, 'state': current['type'] if current else 'absent'}
    after = {'path': header, 'state': entry['state']}
    for key, value in ((k, v) for k, v in steps if k in ('mode', 'owner', 'group')):
        before[key] = ('%04o' % current.get(key)) if key == 'mode' and current and current.get(key) is not None else \
            (current or {}).get(key)
        after[key] = '%04o' % value if key == 'mode' else value
    if entry['state'] == 'link':
        before['target'] = (current or {}).get('target')
        after['target'] = entry['target']
    result = [{'before_header': header, 'after_header': header, 'before': before, 'after': after}]
    if file_set.needs_content(steps):
        if entry.get('secret'):
            result.append({'before_header': header, 'after_header': header,
                           'before': 'the content is secret' if current else '',
                           'after': 'the content is secret (changed)\n'})
        else:
            old = None
            if current and current['type'] == 'file':
                try:
                    with open(entry['dest'], 'rb') as handle:
                        old = _text_or_none(handle.read(DIFF_LIMIT + 1))
                except OSError:
                    old = None
            new = _text_or_none(content)
            if (old is not None or not current or current['type'] != 'file') and new is not None:
                result.append({'before_header': header, 'after_header': header, 'before': old or '', 'after': new})
            else:
                result.append({'before_header': header, 'after_header': header,
                               'before': 'binary or large content', 'after': 'binary or large content (changed)\n'})
    return result


def plan(entries, check_mode, defaults):
    """Check the whole set against the node; ``(currents and steps)`` of each entry, or InputError (nothing changed)."""
    if not check_mode:
        # in check mode an owner may be a user that a package of this run would create
        check_names(defaults, entries)
    plans = []
    for index, entry in enumerate(entries):
        place = file_set.where(index, entry['dest'])
        try:
            current = read_current(entry['dest'])
        except OSError as exc:
            raise _but(place, 'dest', entry['dest'], 'it cannot be read: %s' % _native(exc.strerror or exc), 'a path this process can look at')
        try:
            plans.append((current, file_set.plan_entry(entry, current)))
        except ValueError as exc:
            raise InputError('%s: %s' % (place, exc))
    check_places(entries, plans, check_mode)
    return plans


def failure_message(index, entry, steps, done, applied, exc):
    """(message, error) of an entry whose steps failed part way: what failed, what of it and of the set was done."""
    dest = entry['dest']
    made = [value for step, value in done if step == 'parent']
    finished = [(step, value) for step, value in done if step != 'parent']
    failed_step = steps[len(finished)] if len(finished) < len(steps) else steps[-1]
    error = _native(exc.strerror or exc) if isinstance(exc, OSError) else _native(exc)
    parts = ['install_files: %s: %s failed: %s' % (file_set.where(index, dest), file_set.describe([failed_step]), error)]
    if made or finished:
        parts.append('of this entry, done: %s' % ', '.join(['made %s' % path for path in made] + [file_set.describe(finished)] * bool(finished)))
    parts.append('applied before it: %s' % (', '.join(applied) if applied else 'nothing'))
    parts.append('run again to complete the set' if (applied or done) else 'nothing was changed')
    return '; '.join(parts), error


def restarts_of(entries, plans):
    """The restarts the set's changes call for: each entry's, when what it holds changes, with the change as the reason."""
    restarts = []
    for entry, (current, steps) in zip(entries, plans):
        if entry.get('restarts') and file_set.changes_what_is_read(steps):
            change = '%s changed (%s)' % (entry['dest'], file_set.describe([step for step in steps if step[0] not in ('mode', 'owner', 'group')]))
            for item in entry['restarts']:
                reason = '%s: %s' % (change, item['reason']) if item.get('reason') else change
                restarts.append(dict(item, reason=reason))
    return restarts
