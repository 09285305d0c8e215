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
  ``owner``/``group`` of the link itself are not managed;
- ``file``, ``link``, ``absent``: ``restarts``, the daemons that must restart
  (or reconfigure) when the entry's content changes: ``[{daemon, action,
  reason}]`` (``_pending_restart``); a marker of each is written on the node
  before the entry changes.

The current state of a path, as the module reads it (``None`` when absent):
``{'type': 'file' | 'directory' | 'link' | 'other', 'checksum': str or None,
'mode': int (permission bits), 'owner': name, 'group': name, 'target': str}``.

Pure functions, standard library only.  Bad entries raise ``InputError`` (a
``ValueError``) naming the entry (``files[2] (/etc/x)``), the option, the bad
value and what is valid.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._pending_restart import check_restarts
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import PSEUDO_ROOTS, InputError, require_bool, show

STATES = ('file', 'directory', 'link', 'absent')
_MODE = re.compile(r'^0?[0-7]{3,4}$')
_SHA1 = re.compile(r'^[0-9a-f]{40}$')
# A user or group name: no whitespace, ":", "/" or control characters, not starting with "-".
_NAME = re.compile(r'^[^\s:/,\x00-\x1f\x7f-][^\s:/,\x00-\x1f\x7f]{0,255}$')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')
PATH_MAX, NAME_MAX = 4095, 255
_KEYS = {
    'file': ('dest', 'state', 'checksum', 'mode', 'owner', 'group', 'secret', 'restarts'),
    'directory': ('dest', 'state', 'mode', 'owner', 'group'),
    'link': ('dest', 'state', 'target', 'restarts'),
    'absent': ('dest', 'state', 'restarts'),
}
# What the action takes for a file before it has read the contents: src or content instead of checksum.
_SOURCE_KEYS = ('dest', 'state', 'src', 'content', 'mode', 'owner', 'group', 'secret', 'restarts')
MODE_TEXT = 'a quoted octal string of 3 or 4 digits 0-7 such as "0644" or "0755"'
NAME_TEXT = 'a %s name (no spaces, ":" or "/", not starting with "-")'


def where(index, dest=None):
    """How a message names entry ``index`` (from 0, as in ``files[0]``), with its dest where that is printable text."""
    if isinstance(dest, str) and dest and not _CONTROL.search(dest) and len(dest) <= 200:
        return 'files[%d] (%s)' % (index, dest)
    return 'files[%d]' % index


def bad(place, option, value, expected):
    """The one message of a bad value: ``files[1] (/etc/x): mode is '0999', expected ...`` (no prefix when ``place`` is None)."""
    return InputError('%s%s is %s, expected %s' % ('%s: ' % place if place else '', option, show(value), expected))


def parse_mode(value, place):
    """``'0644'`` or ``'644'`` -> 0o644; anything else is an error naming ``place``."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise bad(place, 'mode', value, '%s, not a number (YAML reads an unquoted 0644 as the number 420)' % MODE_TEXT)
    if not isinstance(value, str) or not _MODE.match(value):
        raise bad(place, 'mode', value, MODE_TEXT)
    return int(value, 8)


def check_name(place, option, value):
    """A user or group name as text (its existence is checked on the node)."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise bad(place, option, value, NAME_TEXT % ('user' if option == 'owner' else 'group'))
    return value


def under(path, root):
    return path == root or path.startswith(root.rstrip('/') + '/')


def check_dest(place, dest):
    """``dest`` normalised (no trailing "/"); InputError unless it is an absolute, normalised path of a real file system."""
    if not isinstance(dest, str) or not dest:
        raise bad(place, 'dest', dest, 'an absolute path such as "/etc/slurm/x.conf"')
    if _CONTROL.search(dest):
        raise bad(place, 'dest', dest, 'an absolute path without NUL, newline or other control characters')
    if not dest.startswith('/'):
        raise bad(place, 'dest', dest, 'an absolute path (starting with "/")')
    if dest.rstrip('/') == '':
        raise bad(place, 'dest', dest, 'an absolute path below / (not / itself)')
    dest = dest.rstrip('/')
    if '/../' in dest + '/' or '/./' in dest + '/' or '//' in dest:
        raise bad(place, 'dest', dest, 'a normalised absolute path (no "..", "." or "//")')
    for root in PSEUDO_ROOTS:
        if under(dest, root):
            raise bad(place, 'dest', dest, 'a path on a real file system, not under %s (a kernel file system that cannot hold files)' % root)
    raw = dest.encode('utf-8', 'surrogateescape')
    if len(raw) > PATH_MAX or any(len(part) > NAME_MAX for part in raw.split(b'/')):
        raise bad(place, 'dest', dest, 'a path of at most %d bytes whose names have at most %d bytes' % (PATH_MAX, NAME_MAX))
    return dest


def _check_source(place, entry):
    """The action's form of a file: exactly one of src (a controller path) and content (text)."""
    has_src, has_content = 'src' in entry, 'content' in entry
    if has_src and has_content:
        raise InputError('%s: src and content are both set, expected exactly one of them' % place)
    if not has_src and not has_content:
        raise InputError('%s: neither src nor content is set, expected exactly one of them for a file' % place)
    if has_src and (not isinstance(entry['src'], str) or not entry['src'].strip() or _CONTROL.search(entry['src'])):
        raise bad(place, 'src', entry['src'], 'the path of a file on the controller (looked up in the role\'s files/ first)')
    if has_content and not isinstance(entry['content'], str):
        raise bad(place, 'content', entry['content'], 'text (a string; use src for a file on the controller)')


def validate_entries(entries, checksums=True, sources=False):
    """The entries, each completed (``state`` set, ``mode`` parsed to an int); InputError on the first bad one.

    With ``checksums`` false (the action, before it has read the contents) a
    file entry needs no ``checksum`` yet; with ``sources`` (the action's own
    input) a file has ``src`` or ``content`` instead.  Two entries for one
    path are an error: the set must say one thing about each path; so is an
    entry below the path of an earlier file or ``absent`` entry.
    """
    if not isinstance(entries, list) or not entries:
        raise bad(None, 'files', entries, 'a non-empty list of entries, each a dict with at least dest')
    seen = {}
    blocked = []   # (path, index) of earlier file and absent entries: nothing can be below them
    result = []
    for index, entry in enumerate(entries):
        place = where(index, entry.get('dest') if isinstance(entry, dict) else None)
        if not isinstance(entry, dict):
            raise InputError('files[%d] is %s, expected a dict with dest and state' % (index, show(entry)))
        dest = check_dest(place, entry.get('dest'))
        state = entry.get('state', 'file')
        if not isinstance(state, str) or state not in STATES:
            raise bad(place, 'state', state, 'one of %s' % ', '.join(STATES))
        allowed = _SOURCE_KEYS if sources and state == 'file' else _KEYS[state]
        extra = sorted(str(key) for key in entry if key not in allowed)
        if extra:
            raise InputError('%s: %s %s set, expected only %s with state %s' % (
                place, ', '.join(extra), 'is' if len(extra) == 1 else 'are', ', '.join(allowed), state))
        if dest in seen:
            raise bad(place, 'dest', dest, 'each path once, but files[%d] names it already' % seen[dest])
        for path, other in blocked:
            if under(dest, path):
                raise bad(place, 'dest', dest, 'a path whose parents are directories, but files[%d] makes %s %s' % (
                    other, path, 'a file' if entries[other].get('state', 'file') == 'file' else 'absent'))
        seen[dest] = index
        done = dict(entry, dest=dest, state=state)
        if state in ('file', 'directory'):
            if 'mode' not in entry:
                raise InputError('%s: mode is not set, expected %s for a %s' % (place, MODE_TEXT, state))
            done['mode'] = parse_mode(entry['mode'], place)
            for key in ('owner', 'group'):
                if key in entry:
                    check_name(place, key, entry[key])
        if state == 'file':
            if 'secret' in entry:
                try:
                    done['secret'] = require_bool('secret', entry['secret'])
                except InputError as exc:
                    raise InputError('%s: %s' % (place, exc))
            if sources:
                _check_source(place, entry)
            elif checksums:
                checksum = entry.get('checksum')
                if not isinstance(checksum, str) or not _SHA1.match(checksum):
                    raise bad(place, 'checksum', checksum, 'the SHA-1 of the content in hex (40 characters 0-9a-f)')
        if state == 'link':
            target = entry.get('target')
            if not isinstance(target, str) or not target or _CONTROL.search(target) or len(target.encode('utf-8', 'surrogateescape')) > PATH_MAX:
                raise bad(place, 'target', target, 'the path the link points to (non-empty text without control characters)')
        if 'restarts' in entry:
            done['restarts'] = check_restarts(place, entry['restarts'])
        if state in ('file', 'absent'):
            blocked.append((dest, index))
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
            raise InputError("state is 'absent', but %s is a directory; expected a file, a link or nothing there "
                             "(state absent removes files and links, never a directory)" % dest)
        return [('remove', current['type'])]
    steps = []
    if current is not None and current['type'] != state:
        if current['type'] == 'directory':
            raise InputError("state is '%s', but %s is a directory; expected a %s or nothing there "
                             "(move the directory away first, it is not removed)" % (state, dest, state))
        if state == 'directory':
            raise InputError("state is 'directory', but %s is a %s; expected a directory or nothing there "
                             "(remove the %s first, it is not replaced)" % (dest, current['type'], current['type']))
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


def changes_what_is_read(steps):
    """True when the steps change what a daemon reads at the path (content, a new or removed file or link), not only its mode or owner."""
    return any(step in ('content', 'remove') or (step == 'create' and value != 'directory') for step, value in steps)


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
