# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's check of Slurm's NVML plugin (slurm_gres_autodetect: nvml); the rules are in module_utils/preflight/_roles.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight._roles import nvml_plugin_problem


def slurm_nvml_plugin_problem(node):
    """One GPU node's problem with Slurm's NVML plugin (apt's dry run, or the plugin file after the install), or ''."""
    try:
        return nvml_plugin_problem(node)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """gpucluster.bringup filters of the slurm role's NVML plugin check."""

    def filters(self):
        return {'slurm_nvml_plugin_problem': slurm_nvml_plugin_problem}
