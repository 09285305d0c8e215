# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm_healthcheck role's filters: its settings merged over the programs' defaults, the closed loop's configuration file
and actions, validated before the role writes anything."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._conditions import load_overrides
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._node_loop import load_settings
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _role_settings as role_settings

ACTIONS = 'slurm_healthcheck_loop.actions'


def node_loop_settings(data):
    """``{...} | node_loop_settings`` -> the same settings, checked (JSON-clean); one error naming the bad value otherwise."""
    try:
        load_settings(json.loads(json.dumps(data)), ACTIONS)
    except (InputError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('slurm_healthcheck_loop: %s' % exc)
    return data


def node_loop_actions(data):
    """``{condition: action} | node_loop_actions`` -> the same overrides, checked; one error naming the bad one otherwise."""
    try:
        load_overrides(data, ACTIONS)
    except InputError as exc:
        raise AnsibleFilterError(str(exc))
    return data


def _checked(function, *args):
    """``function(*args)``, its ValueError as the filter's error."""
    try:
        return function(*args)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def healthcheck_settings(given, inherited=None):
    """``slurm_healthcheck_settings | healthcheck_settings(inherited)`` -> every setting, the program's defaults filled in, checked."""
    return _checked(role_settings.healthcheck_settings, given, inherited)


def healthcheck_loop(given):
    """``slurm_healthcheck_loop | healthcheck_loop`` -> every key of it, the defaults filled in."""
    return _checked(role_settings.loop_settings, given)


def healthcheck_loop_config(merged, fixed, policy):
    """``merged | healthcheck_loop_config(fixed, policy)`` -> the loop program's configuration (checked by node_loop_settings)."""
    return role_settings.loop_config(merged, fixed, policy)


class FilterModule(object):
    """The closed loop's settings."""

    def filters(self):
        return {'node_loop_settings': node_loop_settings, 'node_loop_actions': node_loop_actions, 'healthcheck_settings': healthcheck_settings,
                'healthcheck_loop': healthcheck_loop, 'healthcheck_loop_config': healthcheck_loop_config}
