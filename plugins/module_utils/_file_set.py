# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A set of files, directories and links a role keeps on a node, checked and applied in one module call.

The ``install_files`` action (controller side) validates the entries with
``validate_entries``, reads or renders each file's content and sends the
SHA-1 of every file; the module (node side) reads what is there
(``lstat``, SHA-1, link target) and asks ``plan_entry`` what to change.  A
no-op run is one module call for the whole set, however many files it holds.

An entry (a dict):

- ``dest``: absolute path;
- ``state``: ``file`` (the default), ``directory``, ``link`` or ``absent``;
- ``file``: ``checksum`` (SHA-1 of the wanted content), ``mode``, and
  ``owner``/``group`` (names; omitted: not managed); ``secret: true`` keeps
  its content out of diffs;
- ``directory``: ``mode``, ``owner``, ``group``;
- ``link``: ``target`` (written as given, relative or absolute);
  ``owner``/``group`` of the link itself are not managed.

The current state of a path, as the module reads it (``None`` when absent):
``{'type': 'file' | 'directory' | 'link' | 'other', 'checksum': str or None,
'mode': int (permission bits), 'owner': name, 'group': name, 'target': str}``.

Pure functions, standard library only.  Bad entries raise ``ValueError``
naming the entry and the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

STATES = ('file', 'directory', 'link', 'absent')
_MODE = re.compile(r'^0?[0-7]{3,4}$')
_SHA1 = re.compile(r'^[0-9a-f]{40}$')
_KEYS = {
    'file': ('dest', 'state', 'checksum', 'mode', 'owner', 'group', 'secret'),
    'directory': ('dest', 'state', 'mode', 'owner', 'group'),
    'link': ('dest', 'state', 'target'),
    'absent': ('dest', 'state'),
}


def parse_mode(value, where):
    """``'0644'`` or ``'644'`` -> 0o644; anything else is an error naming ``where``."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError('%s: mode %r is a number; write it as a quoted octal string such as "0644"' % (where, value))
    if not isinstance(value, str) or not _MODE.match(value):
        raise ValueError('%s: mode %r is not an octal mode; valid: a quoted string such as "0644" or "0755"' % (where, value))
    return int(value, 8)


def _where(index, entry):
    dest = entry.get('dest') if isinstance(entry, dict) else None
    return 'entry %d (%s)' % (index + 1, dest) if dest else 'entry %d' % (index + 1)


def validate_entries(entries, checksums=True):
    """The entries, each completed (``state`` set, ``mode`` parsed to an int); ValueError on the first bad one.

    With ``checksums`` false (the action, before it has read the contents) a
    file entry needs no ``checksum`` yet.  Two entries for one path are an
    error: the set must say one thing about each path.
    """
    if not isinstance(entries, list) or not entries:
        raise ValueError('files must be a non-empty list of entries, each with at least "dest"')
    seen = {}
    result = []
    for index, entry in enumerate(entries):
        where = _where(index, entry)
        if not isinstance(entry, dict):
            raise ValueError('%s: %r is not a dict with "dest" and "state"' % (where, entry))
        dest = entry.get('dest')
        if not isinstance(dest, str) or not dest.startswith('/') or dest.rstrip('/') == '':
            raise ValueError('%s: dest %r is not an absolute path below /' % (where, dest))
        dest = dest.rstrip('/')
        if '/../' in dest + '/' or '/./' in dest + '/' or '//' in dest:
            raise ValueError('%s: dest %r is not a normalised path (no "..", "." or "//")' % (where, dest))
        state = entry.get('state', 'file')
        if state not in STATES:
            raise ValueError('%s: state %r is not valid; valid: %s' % (where, state, ', '.join(STATES)))
        allowed = _KEYS[state]
        extra = sorted(key for key in entry if key not in allowed)
        if extra:
            raise ValueError('%s: %s not valid with state %s; valid keys: %s' % (
                where, ', '.join(extra) + (' is' if len(extra) == 1 else ' are'), state, ', '.join(allowed)))
        if dest in seen:
            raise ValueError('%s: %s is already entry %d; name each path once' % (where, dest, seen[dest] + 1))
        seen[dest] = index
        done = dict(entry, dest=dest, state=state)
        if state in ('file', 'directory'):
            if 'mode' not in entry:
                raise ValueError('%s: a %s needs a mode (a quoted octal string such as "0644")' % (where, state))
            done['mode'] = parse_mode(entry['mode'], where)
            for key in ('owner', 'group'):
                if key in entry and (not isinstance(entry[key], str) or not entry[key]):
                    raise ValueError('%s: %s %r is not a user or group name' % (where, key, entry[key]))
        if state == 'file' and checksums:
            checksum = entry.get('checksum')
            if not isinstance(checksum, str) or not _SHA1.match(checksum):
                raise ValueError('%s: checksum %r is not a SHA-1 in hex (40 characters 0-9a-f)' % (where, checksum))
        if state == 'link':
            target = entry.get('target')
            if not isinstance(target, str) or not target:
                raise ValueError('%s: a link needs a target (the path the link points to)' % where)
        result.append(done)
    return result


def plan_entry(wanted, current):
    """What must change to make ``current`` (the path as it is, or None) into ``wanted``.

    Returns a list of steps, empty when nothing changes:

    - ``('remove', kind)``: remove what is there (``kind`` its type) first;
    - ``('create', state)``: create the file (with its content), directory or link;
    - ``('content', None)``: replace the file's content;
    - ``('mode', new)``, ``('owner', new)``, ``('group', new)``: set an attribute.

    A directory where a file, link or ``absent`` is wanted is an error (it is
    never removed with what it holds), and so is anything other than a
    directory where a directory is wanted.
    """
    state = wanted['state']
    dest = wanted['dest']
    if state == 'absent':
        if current is None:
            return []
        if current['type'] == 'directory':
            raise ValueError('%s is a directory; it is not removed (state absent removes files and links only)' % dest)
        return [('remove', current['type'])]
    steps = []
    if current is not None and current['type'] != state:
        if current['type'] == 'directory':
            raise ValueError('%s is a directory, wanted a %s; move it away first, it is not removed' % (dest, state))
        if state == 'directory':
            raise ValueError('%s is a %s, wanted a directory; remove it first, it is not replaced' % (dest, current['type']))
        steps.append(('remove', current['type']))
        current = None
    if current is None:
        steps.append(('create', state))
        if state == 'link':
            return steps
        current = {}
    elif state == 'link':
        return [] if current.get('target') == wanted['target'] else [('remove', 'link'), ('create', 'link')]
    elif state == 'file' and current.get('checksum') != wanted['checksum']:
        steps.append(('content', None))
    if current.get('mode') != wanted['mode']:
        steps.append(('mode', wanted['mode']))
    for key in ('owner', 'group'):
        if key in wanted and current.get(key) != wanted[key]:
            steps.append((key, wanted[key]))
    return steps


def needs_content(steps):
    """True when the steps write the file's content (a new file, or a changed one)."""
    return ('create', 'file') in steps or ('content', None) in steps


def describe(steps):
    """The steps as a short phrase for the result, e.g. ``"content, mode 0644"``."""
    words = []
    for step, value in steps:
        if step in ('mode',):
            words.append('mode %04o' % value)
        elif step in ('owner', 'group'):
            words.append('%s %s' % (step, value))
        elif step == 'remove':
            words.append('remove the %s there' % value)
        elif step == 'create':
            words.append('create %s' % value)
        else:
            words.append(step)
    return ', '.join(words)
