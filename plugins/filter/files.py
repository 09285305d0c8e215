# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that turn lists of paths or names into gpucluster.bringup.install_files entries."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def file_entries(paths, **attributes):
    """``['/a', '/b'] | file_entries(state='directory', mode='0755')`` -> one entry per path with those keys."""
    if not isinstance(paths, (list, tuple)) or not all(isinstance(path, str) for path in paths):
        raise AnsibleFilterError('file_entries: %r is not a list of paths' % (paths,))
    if 'dest' in attributes:
        raise AnsibleFilterError('file_entries: dest comes from the list; give only the other keys (state, mode, ...)')
    return [dict(attributes, dest=path) for path in paths]


def link_entries(names, target_dir, link_dir, state='link'):
    """Names -> ``{dest: link_dir/name, state: link, target: target_dir/name}`` (or ``state: absent``)."""
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) and name and '/' not in name for name in names):
        raise AnsibleFilterError('link_entries: %r is not a list of file names' % (names,))
    if state not in ('link', 'absent'):
        raise AnsibleFilterError('link_entries: state %r is not valid; valid: link, absent' % (state,))
    entries = []
    for name in names:
        entry = {'dest': '%s/%s' % (link_dir.rstrip('/'), name), 'state': state}
        if state == 'link':
            entry['target'] = '%s/%s' % (target_dir.rstrip('/'), name)
        entries.append(entry)
    return entries


class FilterModule(object):
    """install_files entries from lists."""

    def filters(self):
        return {'file_entries': file_entries, 'link_entries': link_entries}
