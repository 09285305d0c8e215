# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of pending restarts (plugins/module_utils/_pending_restart.py): what a change marks, what the validation reports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils._pending_restart import conf_restarts
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import record


def slurm_conf_restarts(actions, controller, compute):
    """What a host's slurm.conf change marks to restart or reconfigure (the entry's ``restarts`` of install_files)."""
    if not isinstance(actions, dict):
        raise AnsibleFilterError('slurm_conf_restarts: %r is not the dict of slurm_change_actions' % (actions,))
    return conf_restarts(actions, bool(controller), bool(compute))


def pending_records(pending, node, stage='node'):
    """The validation's records of slurm_daemons' ``pending``: one failed ``pending_restart`` per daemon, or one that passed."""
    if not isinstance(pending, dict):
        raise AnsibleFilterError('pending_records: %r is not the pending dict of slurm_daemons' % (pending,))
    if not pending:
        return [record(stage, node, 'pending_restart', 'pass', 'every daemon runs the configuration on disk (no change waits for a restart)')]
    return [record(stage, node, 'pending_restart', 'fail', pending[daemon].get('message') or '%s has a change still to take' % daemon)
            for daemon in sorted(pending)]


class FilterModule(object):
    """Pending restarts."""

    def filters(self):
        return {'slurm_conf_restarts': slurm_conf_restarts, 'pending_records': pending_records}
