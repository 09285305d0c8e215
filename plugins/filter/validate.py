# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validate role's stage settings: a stage's dict merged over its defaults (plugins/module_utils/validation/_settings.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._settings import deep_tier_settings, stage_settings


def validate_settings(given, variable, **context):
    """The settings of the stage of ``variable``: ``given`` merged over the stage's defaults (``_settings.stage_settings``).

    ``context``: what a derived default needs (for ``validate_nccl_build``: ``mpi_packages``, ``cwd``).
    """
    try:
        return stage_settings(variable, given, **context)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def validate_deep_tier(deep, nccl, dcgm_level):
    """The node program's deep tier settings from the merged validate_deep_settings and validate_nccl_settings
    (``_settings.deep_tier_settings``)."""
    try:
        return deep_tier_settings(deep, nccl, int(dcgm_level))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('validate_deep_tier: %s' % exc)


class FilterModule(object):
    """The validate role's settings."""

    def filters(self):
        return {'validate_settings': validate_settings, 'validate_deep_tier': validate_deep_tier}
