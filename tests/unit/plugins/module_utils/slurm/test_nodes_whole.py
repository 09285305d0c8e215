# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node reader compared whole (issue 43): whole node dicts, Slurm's "not given" words, every state mark, every
refusal word for word with its clipped line on both sides of the clip, and the small helpers' results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes

EXPECTED = 'expected Slurm state words joined by "+" such as IDLE+DRAIN'


def test_the_tables():
    assert _nodes.STATE_MARKS == '*~#!%$@^-'
    assert _nodes.NOT_GIVEN == ('', '(null)', 'None', 'none', 'n/a')
    assert _nodes.NOT_REGISTERED == ('DOWN', 'NOT_RESPONDING', 'INVALID_REG', 'INVAL', 'UNKNOWN', 'FAIL', 'FUTURE', 'POWERED_DOWN',
                                     'POWERING_UP')


def test_not_given_values_read_as_empty_whole():
    line = ('NodeName=gpu-01 State=IDLE+DRAIN Gres=(null) Partitions= BootTime=None SlurmdStartTime=n/a '
            'Reason=none [root@2026-11-21T06:12:01] Comment=(null)')
    assert _nodes.parse_node_line(line) == {
        'name': 'gpu-01', 'state': 'IDLE', 'marks': '', 'flags': ['DRAIN'], 'reason': '', 'reason_user': 'root',
        'reason_time': '2026-11-21T06:12:01', 'comment': '', 'boot_time': '', 'slurmd_start': '', 'gres': '', 'partitions': [],
        'fields': {'NodeName': 'gpu-01', 'State': 'IDLE+DRAIN', 'Gres': '(null)', 'Partitions': '', 'BootTime': 'None',
                   'SlurmdStartTime': 'n/a', 'Reason': 'none', 'Comment': '(null)'}}


def test_a_full_node_whole():
    line = ('  NodeName=gpu-07 Arch=x86_64 Arch=arm64 Gres=gpu:h100:8 State=MIXED@+DRAIN+COMPLETING Partitions=gpu,,debug '
            'BootTime=2026-11-20T08:00:00 SlurmdStartTime=2026-11-21T06:00:00 Reason=r [u@t] x [v@2026-11-21T06:12:01 ] '
            'Extra=e Comment=c Topology=t Comment=d  ')
    assert _nodes.parse_node_line(line) == {
        'name': 'gpu-07', 'state': 'MIXED', 'marks': '@', 'flags': ['COMPLETING', 'DRAIN'], 'reason': 'r [u@t] x', 'reason_user': 'v',
        'reason_time': '2026-11-21T06:12:01', 'comment': 'c', 'boot_time': '2026-11-20T08:00:00', 'slurmd_start': '2026-11-21T06:00:00',
        'gres': 'gpu:h100:8', 'partitions': ['gpu', 'debug'],
        'fields': {'NodeName': 'gpu-07', 'Arch': 'x86_64', 'Gres': 'gpu:h100:8', 'State': 'MIXED@+DRAIN+COMPLETING',
                   'Partitions': 'gpu,,debug', 'BootTime': '2026-11-20T08:00:00', 'SlurmdStartTime': '2026-11-21T06:00:00',
                   'Reason': 'r [u@t] x', 'Extra': 'e', 'Comment': 'c', 'Topology': 't'}}


@pytest.mark.parametrize('rest, reason, user, when, comment', [
    # a second line after the suffix, then a Comment=
    (' Reason=one [root@t1]        two Comment=c', 'one two', 'root', 't1', 'c'),
    # a second line of only spaces
    (' Reason=one [root@t1]         ', 'one', 'root', 't1', ''),
    # seven spaces are no second line: the suffix is part of the text
    (' Reason=one [root@t1]       two', 'one [root@t1]       two', '', '', ''),
    # a suffix in the middle of the text is not the setter
    (' Reason=a [x@y] b', 'a [x@y] b', '', '', ''),
    # a key that is no trailing key does not end the reason
    (' Reason=a Weight=1 b', 'a Weight=1 b', '', '', ''),
    (' Reason=a [b c@d] e', 'a [b c@d] e', '', '', ''),
])
def test_reasons_whole(rest, reason, user, when, comment):
    node = _nodes.parse_node_line('NodeName=n State=IDLE+DRAIN' + rest)
    assert (node['reason'], node['reason_user'], node['reason_time'], node['comment']) == (reason, user, when, comment)


@pytest.mark.parametrize('mark', list('*~#!%$@^-'))
def test_every_state_mark(mark):
    assert _nodes.parse_state('DOWN%s+NOT_RESPONDING%s' % (mark, mark), 'n') == ('DOWN', mark, ['NOT_RESPONDING'])


@pytest.mark.parametrize('value, name, message', [
    ('IDLE**', 'gpu-01', 'scontrol line for gpu-01 has State=IDLE**, %s' % EXPECTED),
    ('IDLE&', 'gpu-01', 'scontrol line for gpu-01 has State=IDLE&, %s' % EXPECTED),
    ('_IDLE', 'gpu-01', 'scontrol line for gpu-01 has State=_IDLE, %s' % EXPECTED),
    ('IDLE\n', 'gpu-01', 'scontrol line for gpu-01 has State=IDLE\n, %s' % EXPECTED),
    ('a' * 150, 'gpu-01', 'scontrol line for gpu-01 has State=%s, %s' % ('a' * 100, EXPECTED)),
])
def test_parse_state_refusals_whole(value, name, message):
    with pytest.raises(ValueError) as err:
        _nodes.parse_state(value, name)
    assert str(err.value) == message


def test_parse_state_names_an_unknown_node_by_default():
    with pytest.raises(ValueError) as err:
        _nodes.parse_state('')
    assert str(err.value) == 'scontrol line for ? has State=, %s' % EXPECTED
    assert _nodes.parse_state('ALLOCATED_X') == ('ALLOCATED_X', '', [])


@pytest.mark.parametrize('line, message', [
    ('NodeName=gpu-01 State=idle Reason=x', 'scontrol line for gpu-01 has State=idle, %s' % EXPECTED),
    ('NodeName= State=IDLE', "scontrol line has an empty NodeName=: 'NodeName= State=IDLE'"),
    ('NodeName=a State=', "scontrol line for a has no State=: 'NodeName=a State='"),
    ('  x' * 70, "scontrol printed no \"NodeName=\" line: '%s...'" % ('x' + '  x' * 69)[:197]),   # stripped, then clipped
    (None, "scontrol printed no \"NodeName=\" line: ''"),
])
def test_parse_node_line_refusals_whole(line, message):
    with pytest.raises(ValueError) as err:
        _nodes.parse_node_line(line)
    assert str(err.value) == message


@pytest.mark.parametrize('length, clipped', [(200, 'y' * 200), (201, 'y' * 197 + '...')])
def test_the_clip_on_both_sides_of_its_limit(length, clipped):
    with pytest.raises(ValueError) as err:
        _nodes.parse_node('y' * length)
    assert str(err.value) == 'scontrol printed no "NodeName=" line: %r' % clipped


def test_parse_node_takes_the_first_node_line_and_nodes_skip_the_rest():
    assert _nodes.parse_node('junk\n  NodeName=b State=IDLE\nNodeName=c State=DOWN\n')['name'] == 'b'
    with pytest.raises(ValueError) as err:
        _nodes.parse_node(None)
    assert str(err.value) == "scontrol printed no \"NodeName=\" line: ''"
    with pytest.raises(ValueError) as err:
        _nodes.parse_node('  Node c not found \n')
    assert str(err.value) == "scontrol printed no \"NodeName=\" line: 'Node c not found'"
    assert sorted(_nodes.parse_nodes('header\n NodeName=b State=IDLE\nNodeName=c State=DOWN\n')) == ['b', 'c']
    assert _nodes.parse_nodes(None) == {}
    with pytest.raises(ValueError) as err:
        _nodes.parse_nodes('NodeName=a State=IDLE\n\nNodeName= State=IDLE')
    assert str(err.value) == "scontrol line has an empty NodeName=: 'NodeName= State=IDLE' (line 3)"


def test_sinfo_and_squeue_whole():
    assert _nodes.parse_sinfo_names(None) == []
    assert _nodes.parse_sinfo_names('b a\tb\n') == ['b', 'a']
    assert _nodes.parse_squeue('\n 12 | RUNNING | alice | a|b \n  \n') == [{'id': '12', 'state': 'RUNNING', 'user': 'alice', 'name': 'a|b'}]
    assert _nodes.parse_squeue(None) == []
    with pytest.raises(ValueError) as err:
        _nodes.parse_squeue('12|RUNNING|alice')
    assert str(err.value) == "unexpected squeue line '12|RUNNING|alice' (expected id|state|user|name)"


@pytest.mark.parametrize('state, flags, registered', [
    ('IDLE', [], True), ('IDLE', ['DRAIN'], True), ('DOWN', [], False), ('IDLE', ['NOT_RESPONDING'], False),
    ('MIXED', ['POWERING_UP'], False), ('FUTURE', (), False), ('INVAL', [], False), ('ALLOCATED', ['COMPLETING'], True),
])
def test_is_registered(state, flags, registered):
    assert _nodes.is_registered({'state': state, 'flags': flags}) is registered


@pytest.mark.parametrize('node, drained', [
    ({'state': 'IDLE', 'flags': ['DRAIN']}, True), ({'state': 'DRAINED'}, True), ({'state': 'DRAINING', 'flags': None}, True),
    ({'state': 'DRAIN', 'flags': []}, True), ({'state': 'IDLE', 'flags': ['NOT_RESPONDING']}, False), ({}, False),
])
def test_is_drained(node, drained):
    assert _nodes.is_drained(node) is drained


@pytest.mark.parametrize('value, entries', [
    ('gpu:h100:8(S:0-1),gpu:1g.10gb:2', {'gpu:h100:8', 'gpu:1g.10gb:2'}),
    ('gpu:h100:4(S:0,1), shard:8 ,(null)', {'gpu:h100:4', 'shard:8'}),
    ('(null)', set()), (None, set()), ('', set()), (',,', set()),
])
def test_gres_set(value, entries):
    assert _nodes.gres_set(value) == entries


def test_state_text():
    assert _nodes.state_text({'state': 'IDLE', 'flags': ('DRAIN', 'RESERVED')}) == 'IDLE+DRAIN+RESERVED'
    assert _nodes.state_text({'state': 'DOWN', 'flags': []}) == 'DOWN'
