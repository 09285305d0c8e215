# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that expose the accounting model of module_utils (_sacctmgr) to the playbooks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._sacctmgr import accounting_tres


def slurm_accounting_tres(node_gres, extra=()):
    """``AccountingStorageTRES`` for nodes with these ``Gres=`` values, plus ``extra`` (a list or a comma-separated string)."""
    if isinstance(node_gres, str) or not isinstance(node_gres, (list, tuple)):
        raise AnsibleFilterError('slurm_accounting_tres takes a list of Gres= values such as ["gpu:h100:8", "gpu:1g.10gb:2,gpu:a100:7"], '
                                 'got %r' % (node_gres,))
    if isinstance(extra, str):
        extra = [extra]
    try:
        return accounting_tres([g for g in node_gres if g], extra or ())
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    """gpucluster.bringup accounting filters."""

    def filters(self):
        return {'slurm_accounting_tres': slurm_accounting_tres}
