#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: install_files
short_description: Keep a set of files, directories and links on a node in one module call
version_added: 0.2.0
description:
  - Makes each path of O(files) what its entry says - a file with the given content and mode, a directory, a symbolic link
    or nothing - in the order given, so a directory entry comes before the files in it.
  - The files' contents are read (O(files[].src)) or taken (O(files[].content)) on the controller by the action plugin, which
    sends only their SHA-1 at first; a node whose files are all in place answers in that one call, and only the files that
    must be written travel, in a second call. This is what makes a second run of a role cheap - one module call instead of
    one per file (C(ansible.builtin.copy) in a loop costs two or three per file).
  - The whole set is checked before anything changes - every entry and option is valid, every owner and group exists, no
    directory would have to be removed or replaced, no path is under C(/proc) or C(/sys), the directory of every new file or
    link is there or an earlier entry makes it (no file in the middle of a path), and every directory written in is writable
    by this process on a writable file system; a problem is one failure that names the entry (V(files[2] (/etc/x\))), the
    option, its value and what is valid, and changes nothing.
  - A failure that no check can foresee (a full disk, a directory removed meanwhile) stops at that entry and reports what was
    applied (RV(applied), RV(failed_path), RV(error), C(changed) true when something was written); no temporary file is left,
    and a second run completes the set.
  - A new directory's missing parents are made with it (mode 0755, as C(mkdir -p)).
  - A file is written to a temporary file beside it and renamed over the old one, so a reader never sees half of it.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: File contents are shown except for entries with O(files[].secret); mode, owner and link changes are shown as
      before and after.
options:
  files:
    description: The paths to keep, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description: Absolute, normalised path on the node (no C(..), C(.) or C(//)), not under C(/proc) or C(/sys). Each path once.
        type: str
        required: true
      state:
        description: What the path must be. V(absent) removes a file or link; a directory is never removed.
        type: str
        choices: [file, directory, link, absent]
        default: file
      src:
        description:
          - For a file, a file on the controller (looked up like C(ansible.builtin.copy)'s O(ansible.builtin.copy#module:src),
            in the role's C(files/) first). Exactly one of O(files[].src) and O(files[].content).
        type: path
      content:
        description: For a file, its content. Exactly one of O(files[].src) and O(files[].content).
        type: str
      mode:
        description: Permission bits of a file or directory, a quoted octal string such as V("0644"). Required for both.
        type: str
      owner:
        description: Owner of a file or directory (a user name). Not set, the owner is not changed (a new path gets root's).
        type: str
      group:
        description: Group of a file or directory (a group name). Not set, the group is not changed.
        type: str
      target:
        description: For a link, what it points to, written as given.
        type: str
      secret:
        description: The file's content never appears in a diff or in the output.
        type: bool
        default: false
      restarts:
        description:
          - For a file, link or absent entry - the daemons that must restart or reconfigure when what the entry holds
            changes (its content, or a file or link made or removed; not its mode or owner alone).
          - Before the entry changes, a marker of each is written to O(pending_dir) (C(<daemon>.json)); it stays until the
            daemon has taken the change (M(gpucluster.bringup.slurm_daemons) with O(gpucluster.bringup.slurm_daemons#module:settle)),
            so a run stopped between the write and the restart leaves the restart to do on the node. Never in check mode.
          - A daemon name, or C({daemon, action, reason}) with C(action) V(restart) (the default) or V(reconfigure).
        type: list
        elements: raw
  owner:
    description: Owner of every file and directory entry that names none.
    type: str
  group:
    description: Group of every file and directory entry that names none.
    type: str
  contents:
    description:
      - Internal, set by the action plugin - the base64 content of the files the node asked for.
    type: dict
  want_diff:
    description: Internal, set by the action plugin - return the content before and after for a diff.
    type: bool
    default: false
  pending_dir:
    description: Where the markers of O(files[].restarts) are kept (made when missing).
    type: path
    default: /var/lib/gpucluster/pending
notes:
  - Owners and groups are names; a link's own owner is not managed.
  - In check mode an owner or group that does not exist yet is not an error - on a fresh node it is often made by a package
    that the same run would install. Nor is a missing directory of a new file or link (such as C(/etc/slurm) before the
    Slurm packages are installed), for the same reason.
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.file
'''

EXAMPLES = r'''
- name: Install the hook runner, its settings and the shipped hooks
  gpucluster.bringup.install_files:
    owner: root
    group: root
    files:
      - {dest: /etc/slurm/hooks, state: directory, mode: "0755"}
      - {dest: /etc/slurm/hooks/hook-runner, src: hook-runner, mode: "0755"}
      - {dest: /etc/slurm/hooks/prolog, state: link, target: hook-runner}
      - {dest: /etc/slurm/hooks/settings.json, content: "{{ settings | to_nice_json }}", mode: "0644"}
      - {dest: /etc/slurm/epilog.d/40-old-name, state: absent}
'''

RETURN = r'''
files:
  description: Each entry's path, whether it changed and what changed.
  returned: always
  type: list
  elements: dict
  sample: [{dest: /etc/slurm/hooks/hook-runner, changed: true, changes: "content, mode 0755"}]
applied:
  description: When an entry failed while the set was applied - the paths changed before it, in order.
  returned: failure while applying
  type: list
  elements: str
  sample: [/etc/slurm/hooks, /etc/slurm/hooks/hook-runner]
failed_path:
  description: When an entry failed while the set was applied - its path.
  returned: failure while applying
  type: str
  sample: /etc/slurm/hooks/settings.json
error:
  description: When an entry failed while the set was applied - the error of the operating system.
  returned: failure while applying
  type: str
  sample: No space left on device
restarts:
  description: The daemons marked to restart or reconfigure (in check mode, that would be) because an entry with O(files[].restarts) changed.
  returned: always
  type: list
  elements: dict
  sample: [{daemon: slurmd, action: restart, reason: "/etc/slurm/gres.conf changed (content)"}]
need_content:
  description: Internal - the files whose content the node needs (the action plugin sends them in a second call).
  returned: when a file must be written and its content was not sent
  type: list
  elements: str
'''

import base64
import binascii
import errno
import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as file_set
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io
from ansible_collections.gpucluster.bringup.plugins.module_utils._atomic_write import write_atomic
from ansible_collections.gpucluster.bringup.plugins.module_utils._pending_restart import check_dir
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show

DIFF_LIMIT = 65536


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
                raise _but(place, 'dest', dest, 'it cannot be checked: %s' % to_native(exc.strerror or exc),
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
            data = base64.b64decode(to_bytes(value, errors='surrogate_or_strict'), validate=True)
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


def _uid(name):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        raise OSError(errno.EINVAL, 'user %s no longer exists on this node' % name)


def _gid(name):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise OSError(errno.EINVAL, 'group %s no longer exists on this node' % name)


def write_file(dest, content, entry):
    """Write ``content`` to a temporary file beside ``dest``, set its mode and owner, rename it over ``dest``.

    On any failure the temporary file is removed and ``dest`` is as it was.
    """
    write_atomic(dest, content, entry['mode'], _uid(entry['owner']) if 'owner' in entry else -1,
                 _gid(entry['group']) if 'group' in entry else -1)


def apply(entry, steps, content, done):
    """Make the entry's steps, appending each to ``done`` once made (and ``('parent', path)`` for each parent made)."""
    dest = entry['dest']
    for index, (step, value) in enumerate(steps):
        if step == 'remove':
            os.unlink(dest)
        elif step == 'create' and value == 'directory':
            missing, path = [], os.path.dirname(dest)
            while not os.path.isdir(path):
                missing.insert(0, path)
                path = os.path.dirname(path)
            for path in missing:
                os.mkdir(path, 0o755)
                done.append(('parent', path))
            if not (os.path.isdir(dest) and not os.path.islink(dest)):  # (an earlier entry may have made it as a parent)
                os.mkdir(dest, entry['mode'])
            os.chmod(dest, entry['mode'])
        elif step == 'create' and value == 'link':
            os.symlink(entry['target'], dest)
        elif step in ('create', 'content'):
            write_file(dest, content, entry)
            done.extend(steps[index:])   # the mode and owner were set on the new file
            return
        elif step == 'mode':
            os.chmod(dest, value)
        elif step == 'owner':
            os.chown(dest, _uid(value), -1)
        elif step == 'group':
            os.chown(dest, -1, _gid(value))
        done.append((step, value))


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
            raise _but(place, 'dest', entry['dest'], 'it cannot be read: %s' % to_native(exc.strerror or exc), 'a path this process can look at')
        try:
            plans.append((current, file_set.plan_entry(entry, current)))
        except ValueError as exc:
            raise InputError('%s: %s' % (place, exc))
    check_places(entries, plans, check_mode)
    return plans


def _failure(index, entry, steps, done, applied, exc):
    dest = entry['dest']
    made = [value for step, value in done if step == 'parent']
    finished = [(step, value) for step, value in done if step != 'parent']
    failed_step = steps[len(finished)] if len(finished) < len(steps) else steps[-1]
    error = to_native(exc.strerror or exc) if isinstance(exc, OSError) else to_native(exc)
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True),
            owner=dict(type='str'),
            group=dict(type='str'),
            contents=dict(type='dict', no_log=True),
            want_diff=dict(type='bool', default=False),
            pending_dir=dict(type='path', default='/var/lib/gpucluster/pending'),
        ),
        supports_check_mode=True,
    )
    try:
        defaults = {}
        for key in ('owner', 'group'):
            if module.params[key] is not None:
                defaults[key] = file_set.check_name(None, key, module.params[key])
        raw = []
        for entry in module.params['files']:
            if isinstance(entry, dict) and entry.get('state', 'file') in ('file', 'directory'):
                entry = dict(list(defaults.items()) + list(entry.items()))
            raw.append(entry)
        entries = file_set.validate_entries(raw)
        check_dir(module.params['pending_dir'])
        datas = decode_contents(module.params['contents'] or {}, entries)
        plans = plan(entries, module.check_mode, defaults)
    except ValueError as exc:
        module.fail_json(msg='install_files: %s; nothing was changed' % to_native(exc))
    wanted = [entry['dest'] for entry, (current, steps) in zip(entries, plans)
              if file_set.needs_content(steps) and entry['dest'] not in datas]
    if wanted and (not module.check_mode or module.params['want_diff']):
        module.exit_json(changed=False, need_content=wanted, files=[])
    restarts = restarts_of(entries, plans)
    if restarts and not module.check_mode:
        # the markers first: a run stopped after a file is replaced still leaves its restart to do
        try:
            pending_io.write_markers(module.params['pending_dir'], restarts)
        except (OSError, IOError, ValueError) as exc:
            module.fail_json(msg='install_files: the pending-restart marker of %s could not be written in %s: %s; nothing was changed'
                             % (', '.join(sorted(set(item['daemon'] for item in restarts))), module.params['pending_dir'],
                                to_native(getattr(exc, 'strerror', None) or exc)))
    report, diffs, applied = [], [], []
    for index, (entry, (current, steps)) in enumerate(zip(entries, plans)):
        item = {'dest': entry['dest'], 'changed': bool(steps), 'changes': file_set.describe(steps)}
        report.append(item)
        if steps and module.params['want_diff']:
            diffs.extend(diff_of(entry, current, steps, datas.get(entry['dest'])))
        if steps and not module.check_mode:
            done = []
            try:
                apply(entry, steps, datas.get(entry['dest']), done)
            except (OSError, ValueError) as exc:
                item['changed'] = bool(done)
                msg, error = _failure(index, entry, steps, done, applied, exc)
                module.fail_json(msg=msg, changed=bool(applied or done), applied=applied, failed_path=entry['dest'], error=error,
                                 files=report)
            applied.append(entry['dest'])
    result = dict(changed=any(item['changed'] for item in report), files=report, restarts=restarts)
    if module.params['want_diff']:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
