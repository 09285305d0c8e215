# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node_library filter: module_utils files (and what they import) as install_files entries for a node program."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils._node_library import entries

MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'module_utils')


def node_library(names, lib_dir):
    """``['mig/_mig_nvml.py'] | node_library('/usr/local/lib/gpucluster-mig')`` -> install_files entries."""
    if not isinstance(names, (list, tuple)) or not names:
        raise AnsibleFilterError('node_library: %r is not a non-empty list of module_utils files' % (names,))
    if not isinstance(lib_dir, str) or not lib_dir.startswith('/'):
        raise AnsibleFilterError('node_library: the library directory %r is not an absolute path' % (lib_dir,))
    try:
        return entries(lib_dir, MODULE_UTILS, list(names))
    except ValueError as exc:
        raise AnsibleFilterError('node_library: %s' % exc)


class FilterModule(object):
    """The node library of a node program."""

    def filters(self):
        return {'node_library': node_library}
