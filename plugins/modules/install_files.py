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
  - The whole set is checked before anything changes - every entry is valid, every owner and group exists, no directory would
    have to be removed or replaced, the directory of every new file or link is there or an earlier entry makes it; a problem
    is one failure that names the path and changes nothing.
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
        description: Absolute path on the node.
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
notes:
  - Owners and groups are names; a link's own owner is not managed.
  - In check mode an owner or group that does not exist yet is not an error - on a fresh node it is often made by a package
    that the same run would install.
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
need_content:
  description: Internal - the files whose content the node needs (the action plugin sends them in a second call).
  returned: when a file must be written and its content was not sent
  type: list
  elements: str
'''

import base64
import binascii
import grp
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as file_set

DIFF_LIMIT = 65536


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def read_current(module, path):
    """What is at ``path`` now, in the form _file_set.plan_entry takes (None when nothing is there)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return {'type': 'link', 'target': os.readlink(path)}
    kind = 'directory' if stat.S_ISDIR(info.st_mode) else 'file' if stat.S_ISREG(info.st_mode) else 'other'
    return {'type': kind, 'mode': stat.S_IMODE(info.st_mode),
            'checksum': module.sha1(path) if kind == 'file' else None,
            'owner': _name(pwd.getpwuid, info.st_uid), 'group': _name(grp.getgrgid, info.st_gid)}


def check_names(entries):
    """Every owner and group named exists; ValueError naming the first that does not."""
    for entry in entries:
        for key, lookup in (('owner', pwd.getpwnam), ('group', grp.getgrnam)):
            if key in entry:
                try:
                    lookup(entry[key])
                except KeyError:
                    raise ValueError('%s: %s %s does not exist on this node' % (entry['dest'], key, entry[key]))


def check_parents(entries, plans):
    """Every parent of a new file or link is a directory now or is made by an earlier entry; ValueError otherwise.

    A directory's missing parents are made with it (as ``mkdir -p``, mode 0755).
    """
    made = set()
    for entry, (current, steps) in zip(entries, plans):
        if entry['state'] in ('file', 'link') and ('create', entry['state']) in steps:
            parent = os.path.dirname(entry['dest'])
            if parent not in made and not os.path.isdir(parent):
                raise ValueError('%s: its directory %s does not exist; add it as a directory entry before this one'
                                 % (entry['dest'], parent))
        if entry['state'] == 'directory':
            path = entry['dest']
            while path not in ('/', ''):
                made.add(path)
                path = os.path.dirname(path)


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
                with open(entry['dest'], 'rb') as handle:
                    old = _text_or_none(handle.read(DIFF_LIMIT + 1))
            new = _text_or_none(content)
            if (old is not None or not current or current['type'] != 'file') and new is not None:
                result.append({'before_header': header, 'after_header': header, 'before': old or '', 'after': new})
            else:
                result.append({'before_header': header, 'after_header': header,
                               'before': 'binary or large content', 'after': 'binary or large content (changed)\n'})
    return result


def write_file(dest, content, entry):
    """Write ``content`` to a temporary file beside ``dest``, set its mode and owner, rename it over ``dest``."""
    handle, temp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(dest), dir=os.path.dirname(dest))
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, entry['mode'])
        uid = pwd.getpwnam(entry['owner']).pw_uid if 'owner' in entry else -1
        gid = grp.getgrnam(entry['group']).gr_gid if 'group' in entry else -1
        if uid != -1 or gid != -1:
            os.chown(temp, uid, gid)
        os.rename(temp, dest)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def apply(entry, steps, content):
    dest = entry['dest']
    for step, value in steps:
        if step == 'remove':
            os.unlink(dest)
        elif step == 'create' and value == 'directory':
            parent = os.path.dirname(dest)
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o755)
            if not (os.path.isdir(dest) and not os.path.islink(dest)):  # (an earlier entry may have made it as a parent)
                os.mkdir(dest, entry['mode'])
            os.chmod(dest, entry['mode'])
        elif step == 'create' and value == 'link':
            os.symlink(entry['target'], dest)
        elif step in ('create', 'content'):
            write_file(dest, content, entry)
            return   # the mode and owner were set on the new file
        elif step == 'mode':
            os.chmod(dest, value)
        elif step == 'owner':
            os.chown(dest, pwd.getpwnam(value).pw_uid, -1)
        elif step == 'group':
            os.chown(dest, -1, grp.getgrnam(value).gr_gid)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True),
            owner=dict(type='str'),
            group=dict(type='str'),
            contents=dict(type='dict', no_log=True),
            want_diff=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    defaults = dict((key, module.params[key]) for key in ('owner', 'group') if module.params[key])
    raw = [dict(defaults, **entry) if isinstance(entry, dict) and entry.get('state', 'file') in ('file', 'directory')
           else entry for entry in module.params['files']]
    contents = module.params['contents'] or {}
    try:
        entries = file_set.validate_entries(raw)
        if not module.check_mode:
            # in check mode an owner may be a user that a package of this run would create
            check_names(entries)
        currents = [read_current(module, entry['dest']) for entry in entries]
        plans = [(current, file_set.plan_entry(entry, current)) for entry, current in zip(entries, currents)]
        check_parents(entries, plans)
    except (ValueError, OSError) as exc:
        module.fail_json(msg='install_files: %s; nothing was changed' % to_native(exc))
    wanted = [entry['dest'] for entry, (current, steps) in zip(entries, plans)
              if file_set.needs_content(steps) and entry['dest'] not in contents]
    if wanted and (not module.check_mode or module.params['want_diff']):
        module.exit_json(changed=False, need_content=wanted, files=[])
    datas = {}
    for dest, value in contents.items():
        try:
            datas[dest] = base64.b64decode(to_bytes(value), validate=True)
        except (TypeError, ValueError, binascii.Error):
            module.fail_json(msg='install_files: contents[%s] is not base64 text (the action plugin sends the files it reads '
                                 'that way); nothing was changed' % dest)
    report, diffs = [], []
    for entry, (current, steps) in zip(entries, plans):
        report.append({'dest': entry['dest'], 'changed': bool(steps), 'changes': file_set.describe(steps)})
        if steps and module.params['want_diff']:
            diffs.extend(diff_of(entry, current, steps, datas.get(entry['dest'])))
        if steps and not module.check_mode:
            try:
                apply(entry, steps, datas.get(entry['dest']))
            except OSError as exc:
                module.fail_json(msg='install_files: %s: %s (%s); the entries before it were applied' % (
                    entry['dest'], to_native(exc.strerror or exc), file_set.describe(steps)), files=report)
    result = dict(changed=any(item['changed'] for item in report), files=report)
    if module.params['want_diff']:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
