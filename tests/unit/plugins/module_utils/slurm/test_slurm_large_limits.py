# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_slurm_large: the limits of each argument on both sides, the warnings whole, what systemctl and sysctl print
read as they print it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_large as large
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_large import (
    dropin_lines,
    large_system_settings,
    message_hops,
    override_warnings,
    parse_key_values,
)

GUIDE = 'https://slurm.schedmd.com/big_sys.html'


def test_a_threshold_of_one_node():
    found = large_system_settings(1, '24.11.5', 'auto', 1)
    assert (found['applies'], found['reason'], found['threshold']) == (
        True, 'auto: 1 compute nodes, at least slurm_large_system_min_nodes (1)', 1)


def test_no_node_and_the_default_threshold():
    found = large_system_settings(0)
    assert (found['applies'], found['reason'], found['threshold']) == (
        False, 'auto: 0 compute nodes, fewer than slurm_large_system_min_nodes (1024)', 1024)


@pytest.mark.parametrize('version', [(24, 11), [24, 11], (24, 11, 5, 1)])
def test_a_release_as_two_numbers(version):
    assert large.tree_width_default(version) == 16


@pytest.mark.parametrize('version', [(24,), (24, True), ('24', '11'), (24, 11.0)])
def test_a_release_that_is_no_version(version):
    with pytest.raises(ValueError) as found:
        large.tree_width_default(version)
    assert str(found.value) == ("the Slurm version must be a text such as '24.11.5', a tuple such as (24, 11, 5), or empty when not "
                                'known; got %r' % (version,))


@pytest.mark.parametrize('width, nodes, hops', [(16, 1, 1), (16, 0, 0), (16, -3, 0), (0, 5, 0), (-1, 5, 0), (1, 1, 1), (2, 6, 2), (2, 7, 3)])
def test_message_hops_at_the_edges(width, nodes, hops):
    assert message_hops(width, nodes) == hops


TIMEOUT = ('slurm_conf_overrides sets %s=%s on a cluster of 2000 compute nodes: SchedMD\'s Large Cluster Administration Guide (%s) '
           'calls "SlurmdTimeout values of 120 seconds or more" reasonable for really large clusters (slurmctld pings each slurmd '
           'every half of it); the role\'s default is 300')


@pytest.mark.parametrize('value, warned', [(' 60 ', True), ('60', True), ('120', False), (' 119\n', True), ('6O', False), (True, False),
                                           (60.0, False)])
def test_slurmd_timeout_override_as_text(value, warned):
    found = override_warnings(2000, '24.11.5', {'SlurmdTimeout': value})
    assert found == ([TIMEOUT % ('SlurmdTimeout', value, GUIDE)] if warned else [])


def test_tree_width_override_on_2500_nodes_names_the_square_root():
    assert override_warnings(2500, '24.11.5', {'TreeWidth': ' 10 '}) == [
        'slurm_conf_overrides sets TreeWidth= 10  on a cluster of 2500 compute nodes: slurmctld\'s messages then need 4 hops to reach '
        'every node, where the width of SchedMD\'s Large Cluster Administration Guide (%s: the square root of the node count), 50, '
        'needs 2; remove the override or set TreeWidth to at least 50' % GUIDE]


def test_tree_width_removed_where_the_release_is_not_known():
    assert override_warnings(200000, None, {'TreeWidth': None}, 'always', 1) == [
        'slurm_conf_overrides removes TreeWidth, which leaves Slurm\'s default (at most 50) on a cluster of 200000 compute nodes: '
        'slurmctld\'s messages then need 4 hops to reach every node, where the width of SchedMD\'s Large Cluster Administration Guide '
        '(%s: the cube root of the node count), 59, needs 3; remove the override or set TreeWidth to at least 59' % GUIDE]


def test_override_warnings_default_overrides_and_mode():
    assert override_warnings(5000, '24.11.5', None) == []
    assert override_warnings(1024, '24.11.5', {'SlurmdTimeout': 60})[0].startswith('slurm_conf_overrides sets SlurmdTimeout=60 on a '
                                                                                   'cluster of 1024 compute nodes')


def test_parse_key_values_keeps_what_follows_the_first_equals_sign():
    assert parse_key_values('ExecStart={ path=/usr/sbin/slurmd ; argv[]=/usr/sbin/slurmd -D }\n  LimitNOFILE = 65536 \nno value\n') == {
        'ExecStart': '{ path=/usr/sbin/slurmd ; argv[]=/usr/sbin/slurmd -D }', 'LimitNOFILE': '65536'}
    assert parse_key_values(None) == {}


def _settings(lines):
    return [line for line in lines if not line.startswith('#')]


def test_a_soft_limit_systemctl_does_not_give_as_a_number_is_left_out():
    settings = large_system_settings(1024, '24.11.5')
    lines = dropin_lines(settings, 'slurmd', 'TasksMax=infinity\nLimitNOFILE=524288\nLimitNOFILESoft=unlimited\n')
    assert _settings(lines) == ['[Service]', 'TasksMax=infinity']
    assert '# LimitNOFILE: not read from systemctl show, left out' in lines


@pytest.mark.parametrize('shown, written', [
    ('LimitNOFILE=8192\nLimitNOFILESoft=8192\n', ['LimitNOFILE=8192']),        # exactly the guide's: written again
    ('LimitNOFILE=8193\nLimitNOFILESoft=8193\n', []),                          # more: left out
    ('LimitNOFILE=8193\nLimitNOFILESoft=8192\n', ['LimitNOFILE=8192:8193']),
    ('LimitNOFILE=8191\nLimitNOFILESoft=1024\n', ['LimitNOFILE=8192']),
    ('LimitNOFILE=infinity\nLimitNOFILESoft=1024\n', ['LimitNOFILE=8192:infinity']),
    ('LimitNOFILE=8192\n', ['LimitNOFILE=8192']),                             # no soft value printed: the hard one
])
def test_slurmd_open_files_on_both_sides_of_the_guides_value(shown, written):
    lines = dropin_lines(large_system_settings(1024, '24.11.5'), 'slurmd', 'TasksMax=infinity\n' + shown)
    assert _settings(lines) == ['[Service]', 'TasksMax=infinity'] + written


RULE_51 = "the guide's rule gives 51 for 125001 nodes (3 message hops, 3 with a width of 50); "


@pytest.mark.parametrize('version, why', [
    (None, RULE_51 + 'the default of Slurm (not read yet) is not verified here (50 up to 22.05, 16 from 24.11): set only where the rule '
                     'beats both'),
    ('22.05.8', RULE_51 + "Slurm 22.05's default is 50"),
    ('23.11.4', RULE_51 + 'the default of Slurm 23.11 is not verified here (50 up to 22.05, 16 from 24.11): set only where the rule beats '
                          'both'),
])
def test_tree_width_above_the_widest_default_starts_past_its_cube(version, why):
    entry = large_system_settings(125001, version, 'always')['settings'][0]
    assert (entry['key'], entry['value'], entry['from_nodes'], entry['why']) == ('TreeWidth', 51, 125001, why)


def test_tree_width_above_24_11s_default_starts_past_its_square():
    entry = large_system_settings(2000, '24.11.5', 'always')['settings'][0]
    assert (entry['value'], entry['from_nodes'], entry['why']) == (
        45, 1024, "the guide's rule gives 45 for 2000 nodes (2 message hops, 3 with a width of 16); Slurm 24.11's default is 16")


@pytest.mark.parametrize('threshold, from_nodes', [(1, 257), (256, 257), (257, 257), (258, 258)])
def test_tree_width_starts_where_the_rule_beats_16_or_at_the_threshold(threshold, from_nodes):
    entry = large_system_settings(300, '24.11.5', 'auto', threshold)['settings'][0]
    assert (entry['key'], entry['value'], entry['from_nodes']) == ('TreeWidth', 18, from_nodes)
