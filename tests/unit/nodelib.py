# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Install a node program's module_utils the way the roles do (the node_library filter's entries); process helpers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

from ansible_collections.gpucluster.bringup.plugins.module_utils._node_library import entries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(ROOT, 'plugins', 'module_utils')


def install_library(lib_dir, names):
    """Lay out under ``lib_dir`` what ``names | gpucluster.bringup.node_library(lib_dir)`` installs; returns the files."""
    files = []
    for entry in entries(str(lib_dir), MODULE_UTILS, names):
        if entry.get('state') == 'directory':
            os.makedirs(entry['dest'], exist_ok=True)
        else:
            shutil.copy(entry['src'], entry['dest'])
            files.append(entry['dest'])
    return files


def alive(pid):
    """The process runs (exists and is not a zombie waiting for its parent)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as handle:
        return handle.read().rsplit(') ', 1)[1][0] != 'Z'
