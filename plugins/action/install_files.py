# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of gpucluster.bringup.install_files: read the contents here, send their SHA-1 first, the bytes only if asked.

The node answers a set whose files are all in place in one module call.  A
node that must write files answers with the paths it needs (``need_content``)
and changes nothing; they go in a second call, which applies the whole set.
The whole set is checked here (``_file_set.validate_entries``) before a
content is read or the node is contacted, and again on the node with what is
there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as file_set
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show

MODULE = 'gpucluster.bringup.install_files'


class ActionModule(ActionBase):
    """Read the local contents, then one or two calls of the module."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('files', 'owner', 'group', 'pending_dir'))

    def _read(self, index, entry):
        """``entry`` (already checked) with ``src``/``content`` replaced by ``checksum``, and the bytes."""
        entry = dict(entry)
        place = file_set.where(index, entry.get('dest'))
        if 'src' in entry:
            src = entry.pop('src')
            try:
                path = self._find_needle('files', src)
                with open(path, 'rb') as handle:
                    data = handle.read()
            except (AnsibleError, OSError) as exc:
                raise InputError('%s: src is %s, but it cannot be read on the controller: %s; expected a readable file on the controller '
                                 '(looked up in the role\'s files/ first)' % (place, show(src), to_native(exc)))
        else:
            data = to_bytes(entry.pop('content'), errors='surrogate_or_strict')
        entry['checksum'] = hashlib.sha1(data).hexdigest()
        return entry, data

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = self._task.args
        files = args.get('files')
        entries, datas = [], {}
        try:
            for key in ('owner', 'group'):
                if args.get(key) is not None:
                    file_set.check_name(None, key, args[key])
            # the whole set first (dest, state, keys, modes, names, src or content), then the contents are read
            file_set.validate_entries(files, checksums=False, sources=True)
            for index, entry in enumerate(files):
                if entry.get('state', 'file') == 'file':
                    entry, data = self._read(index, entry)
                    datas[entry['dest'].rstrip('/')] = data
                entries.append(entry)
            file_set.validate_entries(entries)
        except (ValueError, UnicodeError) as exc:
            return dict(result, failed=True, msg='install_files: %s; nothing was changed' % to_native(exc))
        module_args = dict(files=entries, want_diff=bool(self._task.diff))
        for key in ('owner', 'group', 'pending_dir'):
            if args.get(key) is not None:
                module_args[key] = args[key]
        answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if answer.get('need_content') and not answer.get('failed'):
            module_args['contents'] = dict((dest, to_native(base64.b64encode(datas[dest])))
                                           for dest in answer['need_content'])
            answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        answer.pop('need_content', None)
        answer.pop('invocation', None)
        result.update(answer)
        return result
