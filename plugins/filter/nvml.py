# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The nvml role's check before it installs nvidia-ml-py's package; the rules are in module_utils/preflight/_roles.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight._roles import bindings_package_problem


def nvml_bindings_problem(node):
    """One node's problem installing the bindings' package (apt's dry run), or ''."""
    try:
        return bindings_package_problem(node)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('nvml_bindings_problem: %r is not {host, package, apt}: %s' % (node, exc))


class FilterModule(object):
    """gpucluster.bringup filters of the nvml role."""

    def filters(self):
        return {'nvml_bindings_problem': nvml_bindings_problem}
