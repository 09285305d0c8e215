# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one node type (``gpucluster_node_type``) as the checks read it; the rules are in module_utils/catalogue/_node_type.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type


def node_type_expectations(value, host=None, extra=None):
    """``{gpu_count, gpu_models}`` a node of the type ``value`` must have (both None when no type is declared)."""
    try:
        return _node_type.expectations(value, host, extra if isinstance(extra, list) else ())
    except _node_type.NodeTypeError as exc:
        raise AnsibleFilterError(str(exc))


def node_type_gres_problem(entries, value, host=None):
    """The problem of a GPU node whose GRES entries (``slurm_gres_facts``) are not the declared GPU count, or ''."""
    try:
        return _node_type.gres_count_problem(value, entries if isinstance(entries, list) else [], host)
    except _node_type.NodeTypeError as exc:
        raise AnsibleFilterError(str(exc))


def node_type_nvlink_domain(detected, value):
    """The node's NVLink domain for the block topology: NVML's (``detected``) with the node type's declared name."""
    return _node_type.block_domain(value, detected)


class FilterModule(object):
    """gpucluster.bringup filters of the node type."""

    def filters(self):
        return {'node_type_expectations': node_type_expectations, 'node_type_gres_problem': node_type_gres_problem,
                'node_type_nvlink_domain': node_type_nvlink_domain}
