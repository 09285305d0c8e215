# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the validate role builds nccl-tests: once per node type (plugins/module_utils/validation/_nccl_build.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl_build import build_plan


def nccl_build_plan(nodes):
    """``{builders, types, type_of}``: the node that builds nccl-tests for each node type (``_nccl_build.build_plan``)."""
    try:
        return build_plan(nodes)
    except ValueError as exc:
        raise AnsibleFilterError('nccl_build_plan: %s' % exc)


class FilterModule(object):
    """nccl-tests builds."""

    def filters(self):
        return {'nccl_build_plan': nccl_build_plan}
