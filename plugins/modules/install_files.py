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

import errno
import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as file_set
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io
from ansible_collections.gpucluster.bringup.plugins.module_utils._atomic_write import write_atomic
from ansible_collections.gpucluster.bringup.plugins.module_utils._install_files_io import (
    decode_contents,
    diff_of,
    failure_message,
    plan,
    restarts_of,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils._pending_restart import check_dir


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
                msg, error = failure_message(index, entry, steps, done, applied, exc)
                module.fail_json(msg=msg, changed=bool(applied or done), applied=applied, failed_path=entry['dest'], error=error,
                                 files=report)
            applied.append(entry['dest'])
    result = dict(changed=any(item['changed'] for item in report), files=report, restarts=restarts)
    if module.params['want_diff']:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
