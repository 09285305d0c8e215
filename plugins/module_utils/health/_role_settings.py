# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm_healthcheck role's two settings dicts, merged over the programs' own defaults.

A site sets only what it changes; the defaults live once, in the programs' modules:

* :func:`healthcheck_settings`: ``slurm_healthcheck_settings`` over the health check program's
  ``slurm/_healthcheck.DEFAULTS`` (and the values the role takes from other roles, such as the
  nvml role's sysfs paths), checked by the program's own ``load_config``;
* :func:`loop_settings`: ``slurm_healthcheck_loop`` over the closed loop's ``health/_node_loop``
  defaults (``POLICY_DEFAULTS``, ``SETTINGS_DEFAULTS``) and :data:`LOOP_ROLE_DEFAULTS`, the keys only
  the role reads (where the program goes, how often the timer runs it, slurm.conf ``RebootProgram``).

Bad input raises ``ValueError`` naming the variable and key.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpucluster.bringup.plugins.module_utils.health._node_loop import POLICY_DEFAULTS, SETTINGS_DEFAULTS
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import DEFAULTS, load_config

SETTINGS = 'slurm_healthcheck_settings'
LOOP = 'slurm_healthcheck_loop'

# The keys of slurm_healthcheck_settings: the program's settings a site may set. The program's other keys are the
# role's (gpu_count, gpu_models and ib_hcas from the node type, reason_prefix, the state and events files) or the program's own (dev_root, scontrol, ...).
SETTING_KEYS = (
    'node_name', 'mig_layout', 'check_device_files', 'mig_minors_path', 'ecc_uncorrected_max',
    'auto_resume', 'resume_after_passes', 'prolog_budget', 'periodic_budget', 'disabled_checks', 'xid_source', 'xid_drain',
    'driver_min', 'nvlinks_active', 'nvlink_error_max', 'throttle_reasons', 'temperature_margin', 'ib_sysfs_root',
    'ib_ports', 'ib_rate_gbps', 'ib_counter_max', 'module_root', 'driver_proc', 'munge_key_path', 'munge_user',
)
# Settings whose null means "what the node has when the role runs" (recorded by the program's --baseline).
RECORDED = ('mig_layout', 'nvlinks_active', 'ib_ports', 'ib_rate_gbps')
_SECONDS = ('prolog_budget', 'periodic_budget')

# The keys of slurm_healthcheck_loop only the role reads.
LOOP_ROLE_DEFAULTS = {
    'program': '/usr/local/sbin/gpucluster-node-loop',
    'interval': 60,
    'reboot_program': '/usr/sbin/reboot',
}
# The keys of slurm_healthcheck_loop the loop program reads: in its policy (key -> the policy's key), and at the top of
# its configuration (the same names).
LOOP_POLICY_KEYS = {'actions': 'actions', 'reboot_max': 'reboot_max', 'reboot_window': 'reboot_window_s', 'reboot_timeout': 'reboot_timeout_s',
                    'settle_timeout': 'settle_timeout_s',
                    'promote_after': 'promote_after', 'promote_window': 'promote_window_s', 'deep': 'deep', 'deep_passes': 'deep_passes'}
LOOP_CONFIG_KEYS = ('deep_time_limit', 'deep_settings', 'metrics_file', 'webhook')


def _given(name, value, valid):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError('%s is %r; expected a mapping of settings (keys: %s)' % (name, value, ', '.join(sorted(valid))))
    unknown = sorted(str(key) for key in value if key not in valid)
    if unknown:
        raise ValueError('%s has unknown key(s) %s; valid keys: %s' % (name, ', '.join(unknown), ', '.join(sorted(valid))))
    return value


def healthcheck_settings(given, inherited=None):
    """Every key of :data:`SETTING_KEYS`: the program's default, then ``inherited``, then ``given``; checked.

    ``inherited`` holds the values the role takes from other roles' variables where they are set (the nvml role's
    sysfs paths, the munge key). The budgets are written as numbers of seconds with a fraction (``3.0``)."""
    given = _given(SETTINGS, given, SETTING_KEYS)
    merged = dict((key, copy.deepcopy(DEFAULTS[key])) for key in SETTING_KEYS)
    merged.update(_given('the inherited settings', inherited, SETTING_KEYS))
    merged.update(given)
    for key in _SECONDS:
        if isinstance(merged[key], int) and not isinstance(merged[key], bool):
            merged[key] = float(merged[key])
    try:
        load_config(dict(merged))
    except ValueError as exc:
        raise ValueError('%s: %s' % (SETTINGS, exc))
    return merged


def loop_settings(given):
    """Every key of ``slurm_healthcheck_loop``: :data:`LOOP_ROLE_DEFAULTS` and the loop program's defaults, then ``given``."""
    valid = set(LOOP_ROLE_DEFAULTS) | set(LOOP_POLICY_KEYS) | set(LOOP_CONFIG_KEYS)
    given = _given(LOOP, given, valid)
    merged = dict(LOOP_ROLE_DEFAULTS)
    merged.update((key, copy.deepcopy(POLICY_DEFAULTS[name])) for key, name in LOOP_POLICY_KEYS.items())
    merged.update((key, copy.deepcopy(SETTINGS_DEFAULTS[key])) for key in LOOP_CONFIG_KEYS)
    merged.update(given)
    return merged


def loop_config(merged, fixed, policy_fixed):
    """The loop program's configuration file: ``fixed`` (the role's keys of it), the policy with ``policy_fixed``,
    and the program's keys of ``merged`` (:func:`loop_settings`) under their names in the file."""
    config = dict(fixed)
    config.update((key, merged[key]) for key in LOOP_CONFIG_KEYS)
    config['policy'] = dict(policy_fixed)
    config['policy'].update((name, merged[key]) for key, name in LOOP_POLICY_KEYS.items())
    return config
