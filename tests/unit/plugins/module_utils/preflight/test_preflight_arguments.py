# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_roles.argument_problems: the hosts the inventory has, listed in the message up to 120 characters."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf

NINETEEN = ['node%s' % letter for letter in 'abcdefghijklmnopqrs']
NOT_IN = "hosts[0] is 'zz', which is not a host of the inventory; expected hosts of the inventory (%s)"


@pytest.mark.parametrize('last, listed', [
    # 19 names of 5 characters, 19 commas and the last name: 119, 120 characters listed whole
    ('nodez', ','.join(NINETEEN) + ',nodez'),
    ('nodezz', ','.join(NINETEEN) + ',nodezz'),
    # 121 characters: the first 117 and '...'
    ('nodezzz', ','.join(NINETEEN) + ',nod...'),
])
def test_hosts_not_in_the_inventory_list_at_most_120_characters(last, listed):
    assert len(listed) <= 120
    assert pf.argument_problems({'hosts': ['zz', 'nodea']}, {'all': NINETEEN + [last], 'none': None}) == [NOT_IN % listed]


def test_hosts_of_every_group_are_the_inventory():
    groups = {'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02', 7], 'empty': []}
    assert pf.argument_problems({'hosts': ['gpu-02', 'gpu-03', 'ctl']}, groups) == [
        "hosts[1] is 'gpu-03', which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])"]
    assert pf.argument_problems({'hosts': ['a']}, None) == [
        "hosts[0] is 'a', which is not a host of the inventory; expected hosts, and the inventory has none"]
