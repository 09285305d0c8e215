# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_loop_settings: the closed loop's configuration checked before the role writes it (issue 48)."""

from __future__ import absolute_import, division, print_function

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.node_loop import FilterModule

FILTER = FilterModule().filters()['node_loop_settings']
ACTIONS = FilterModule().filters()['node_loop_actions']


def test_node_loop_settings_passes_a_valid_configuration_through():
    settings = {'policy': {'actions': {'thermal': 'drain'}, 'reboot_max': 1}, 'webhook': ''}
    assert FILTER(settings) is settings


@pytest.mark.parametrize('settings, fragment', [
    ({'policy': {'actions': {'thermals': 'drain'}}}, "slurm_healthcheck_loop.actions has the condition 'thermals', expected one of xid-13"),
    ({'policy': {'actions': {'thermal': 'rma'}}},
     'slurm_healthcheck_loop.actions["thermal"] is \'rma\', expected one of none, comment, drain, reset-gpu, reboot, service'),
    ({'deep_time_limit': 0}, 'deep_time_limit is 0'),
    ({'policy': {'reboot_window_s': None}}, 'reboot_window_s is None'),
])
def test_node_loop_settings_names_the_bad_value(settings, fragment):
    with pytest.raises(AnsibleFilterError) as info:
        FILTER(settings)
    assert fragment in str(info.value) and str(info.value).startswith('slurm_healthcheck_loop: ')


def test_node_loop_actions_checks_the_overrides_the_nodes_get():
    assert ACTIONS({'xid-79': 'service'}) == {'xid-79': 'service'}
    with pytest.raises(AnsibleFilterError, match="slurm_healthcheck_loop.actions has the condition 'xid-999', expected one of"):
        ACTIONS({'xid-999': 'reboot'})
