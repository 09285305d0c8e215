# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""parse_ibnetdiscover's refusals compared whole, and tree_topology's host names, on a two-node dump built here: a 4-port
switch and one CA.

Every limit is tried on both sides (port 0, 1, 4 and 5 of a 4-port switch; a line of 100 and of 101
characters in a message) so that a message or a limit that changes shows here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import parse_ibnetdiscover, tree_topology

SW_GUID = '0000000000000001'
CA_GUID = '0000000000000002'
SWITCH = 'Switch\t4 "S-%s"\t\t# "sw1" base port 0 lid 1 lmc 0\n' % SW_GUID
LINK = '[1]\t"H-%s"[1](2)\t\t# "node1 mlx5_0" lid 2 4xNDR\n' % CA_GUID
CA = '\nCa\t1 "H-%s"\t\t# "node1 mlx5_0"\n[1](2)\t"S-%s"[1]\t\t# lid 2 lmc 0 "sw1" lid 1 4xNDR\n' % (CA_GUID, SW_GUID)


def dump(extra=''):
    """The two-node dump with ``extra`` as line 3, a second port line of the switch."""
    return SWITCH + LINK + extra + CA


def refusal(text):
    with pytest.raises(ValueError) as error:
        parse_ibnetdiscover(text)
    return str(error.value)


def test_the_dump_parses_whole():
    assert parse_ibnetdiscover(dump()) == {
        'switches': {SW_GUID: {'guid': SW_GUID, 'desc': 'sw1', 'lid': 1, 'ports': {1: (CA_GUID, 1)}}},
        'hosts': {CA_GUID: {'guid': CA_GUID, 'desc': 'node1 mlx5_0', 'ports': {1: (SW_GUID, 1)}}},
        'routers': {},
        'warnings': [],
    }


def test_the_last_port_of_a_switch_is_a_port():
    # port 4 of a 4-port switch: a link printed from both ends
    switch = SWITCH + LINK.replace('[1]\t', '[4]\t')
    ca = CA.replace('"S-%s"[1]' % SW_GUID, '"S-%s"[4]' % SW_GUID)
    assert parse_ibnetdiscover(switch + ca)['switches'][SW_GUID]['ports'] == {4: (CA_GUID, 1)}


@pytest.mark.parametrize('port', [0, 5])
def test_a_port_outside_the_switch(port):
    line = '[%d]\t"H-%s"[1]\t\t# "x" lid 2 4xNDR\n' % (port, CA_GUID)
    assert refusal(dump(line)) == 'line 3: port %d of S-%s, which has 4 ports (line 1)' % (port, SW_GUID)


def test_a_port_listed_twice():
    assert refusal(dump(LINK)) == 'line 3: port 1 of S-%s is listed twice' % SW_GUID


def test_a_port_to_a_node_of_unknown_type():
    line = '[2]\t"?-00000000000000AB"[1]\t\t# "x" lid 2 4xNDR\n'
    assert refusal(dump(line)) == ('line 3: port 2 of S-%s leads to a node of unknown type "?-00000000000000AB"'
                                   % SW_GUID)


def _cut_port_line(width):
    """A port line of ``width`` characters whose comment lacks the peer's description."""
    head = '[2]\t"H-%s"[1]\t\t# lid 2 ' % CA_GUID
    return head + 'x' * (width - len(head))


@pytest.mark.parametrize('width, shown', [
    (100, None),
    (101, 100),
])
def test_a_port_line_cut_short_is_shown_up_to_100_characters(width, shown):
    line = _cut_port_line(width)
    assert len(line) == width
    quoted = line if shown is None else line[:shown] + '...'
    assert refusal(dump(line + '\n')) == (
        'line 3: port line "%s" is cut short (expected \'# ... "<description>" lid <lid> ...\' after the peer)' % quoted)


def test_a_port_line_before_any_block():
    assert refusal(LINK + SWITCH + CA) == ('line 1: port line "%s" belongs to no "Switch"/"Ca"/"Rt" block'
                                           % LINK.strip())


def test_a_port_line_right_after_the_node_ids():
    text = 'vendid=0x2c9\ndevid=0xd2f2\n' + LINK + SWITCH + CA
    assert refusal(text) == ('line 3: a port line follows the node ids of line 1 without their "Switch"/"Ca"/"Rt" '
                             'line: the block is cut short')


def test_node_ids_twice_before_a_node_line():
    text = 'vendid=0x2c9\ndevid=0xd2f2\nvendid=0x2c9\n' + SWITCH + LINK + CA
    assert refusal(text) == ('line 3: "vendid=0x2c9" starts another block while the block of line 1 never reached '
                             'its "Switch"/"Ca"/"Rt" line: that block is cut short')


def test_node_ids_of_two_kinds_then_the_node_line():
    text = 'vendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x1\nswitchguid=0x1(1)\n' + dump()
    assert parse_ibnetdiscover(text) == parse_ibnetdiscover(dump())


def test_the_output_ends_inside_a_block():
    assert refusal(dump() + '\nvendid=0x2c9\ndevid=0xd2f2\n') == (
        'line 7: the output ends inside a block (node ids without their "Switch"/"Ca"/"Rt" line): the dump is cut short')


def test_a_line_that_is_not_ibnetdiscovers():
    assert refusal(dump('hello world\n')) == (
        'line 3: "hello world" is not part of ibnetdiscover\'s topology output (expected "Switch"/"Ca"/"Rt" lines, '
        'port lines like "[1]  "H-<guid>"[1] ...", "vendid=" etc. or comments); an "ibwarn" line means the '
        'discovery had trouble: run it again')


def test_standard_error_inside_the_dump():
    assert refusal(dump('ibwarn: [1] mad_rpc: failed\n')) == (
        'line 3: "ibwarn: [1] mad_rpc: failed" is ibnetdiscover\'s standard error inside the dump, which may be cut '
        'there; save its standard output alone (ibnetdiscover > fabric.txt) and run it again if it warns')


@pytest.mark.parametrize('line', ['src/query_smp.c:227; umad (DR path slid 0; dlid 0; 0,1) bad status 110',
                                  'libibumad: failed', 'umad_recv: timeout', 'mad_rpc_open_port: failed'])
def test_other_standard_error_lines_before_the_dump(line):
    assert parse_ibnetdiscover(line + '\n' + dump())['warnings'] == [
        'line 1 before the dump is ibnetdiscover\'s standard error ("%s"): discovery had trouble, so a node or link '
        'may be missing from the dump; the dump was read as it is' % line]


def test_only_comments():
    assert refusal('# Topology file\n#\n') == 'the ibnetdiscover output has no "Switch", "Ca" or "Rt" block'


@pytest.mark.parametrize('text', [None, '', ' \n\t\n'])
def test_empty(text):
    assert refusal(text) == ('the ibnetdiscover output is empty; expected the text ibnetdiscover prints (blocks starting '
                             '"Switch <ports> "S-<guid>"" and "Ca <ports> "H-<guid>"")')


def test_a_switch_line_naming_a_ca():
    assert refusal(SWITCH.replace('"S-', '"H-') + LINK + CA) == (
        'line 1: a "Switch" line names "H-%s"; ibnetdiscover writes Switch nodes as "S-<guid>"' % SW_GUID)


def test_a_switch_line_without_its_lid():
    line = SWITCH.replace(' base port 0 lid 1 lmc 0', ' base port 0')
    assert refusal(line + LINK + CA) == (
        'line 1: switch line "%s" lacks "base|enhanced port 0 lid <lid> lmc <lmc>" after its description: the line is '
        'cut short or not ibnetdiscover\'s' % line.strip())


def test_text_after_a_ca_description():
    assert refusal(dump().replace('"node1 mlx5_0"\n[1](2)', '"node1 mlx5_0" extra\n[1](2)')) == (
        'line 4: unexpected text "extra" after the description of H-%s' % CA_GUID)


def test_a_second_block_of_one_guid():
    assert refusal(dump() + '\n' + SWITCH) == 'line 7: GUID %s has a second block (first at line 1); a dump lists each node once' % SW_GUID


def test_a_link_to_a_node_without_a_block():
    assert refusal(SWITCH + LINK) == (
        'S-%s port 1 links to H-%s port 1, but the dump has no block for H-%s: the output is truncated or incomplete '
        '(run ibnetdiscover again and keep all of it)' % (SW_GUID, CA_GUID, CA_GUID))


def test_a_link_whose_far_port_is_missing():
    assert refusal(SWITCH + LINK + '\nCa\t1 "H-%s"\t\t# "node1 mlx5_0"\n' % CA_GUID) == (
        'S-%s port 1 links to H-%s port 1, but the block of H-%s has no port 1: the block is cut short or the dump is '
        'inconsistent' % (SW_GUID, CA_GUID, CA_GUID))


ROUTER = '\nRt\t1 "R-0000000000000003"\t\t# "gw1"\n[1]\t"S-%s"[2]\t\t# lid 3 lmc 0 "sw1" lid 1 4xNDR\n' % SW_GUID


def test_a_link_with_a_router():
    text = dump('[2]\t"R-0000000000000003"[1]\t\t# "gw1" lid 3 4xNDR\n') + ROUTER
    assert parse_ibnetdiscover(text)['routers'] == {
        '0000000000000003': {'guid': '0000000000000003', 'desc': 'gw1', 'ports': {1: (SW_GUID, 2)}}}


@pytest.mark.parametrize('peer, named', [
    ('"S-%s"[3]' % SW_GUID, 'S-%s port 3' % SW_GUID),
    ('"R-0000000000000003"[1]', 'R-0000000000000003 port 1'),
])
def test_a_link_named_back_by_another_port(peer, named):
    # the switch's port 1 leads to the CA's port 1, which names another port (its own switch's, or a router's)
    text = dump('[2]\t"R-0000000000000003"[1]\t\t# "gw1" lid 3 4xNDR\n') + ROUTER
    text = text.replace('[1](2)\t"S-%s"[1]' % SW_GUID, '[1](2)\t%s' % peer)
    assert refusal(text) == ('S-%s port 1 links to H-%s port 1, but H-%s port 1 names %s: the dump is inconsistent'
                             % (SW_GUID, CA_GUID, CA_GUID, named))


@pytest.mark.parametrize('peer, named', [
    ('"S-00000000000000f9"[1]', 'S-00000000000000f9 port 1'),
    ('"R-00000000000000f9"[2]', 'R-00000000000000f9 port 2'),
    ('"H-00000000000000f9"[1]', 'H-00000000000000f9 port 1'),
])
def test_a_link_named_back_by_a_node_without_a_block_is_named_as_the_dump_wrote_it(peer, named):
    # the node the CA names has no block: its type comes from the CA's port line (it was always "H-" before)
    text = dump().replace('[1](2)\t"S-%s"[1]' % SW_GUID, '[1](2)\t%s' % peer)
    assert refusal(text) == ('S-%s port 1 links to H-%s port 1, but H-%s port 1 names %s: the dump is inconsistent'
                             % (SW_GUID, CA_GUID, CA_GUID, named))


@pytest.mark.parametrize('name_map', [
    {' node1 mlx5_0 ': 'gpu-01'},             # a whole description, blanks around it
    {' node1 ': 'gpu-01'},                    # a host name, blanks around it
    {' H-%s ' % CA_GUID: 'gpu-01'},            # a CA GUID
    r'^(n)ode(?P<name>\d) ',                  # the group named "name", not the first
    r'^(?P<other>\w)\w+(\d) ',                # no group "name": the first group
])
def test_the_host_of_a_ca_by_name_map(name_map):
    wanted = 'gpu-01' if isinstance(name_map, dict) else ('1' if 'name' in name_map else 'n')
    assert tree_topology(parse_ibnetdiscover(dump()), [wanted], name_map=name_map) == {
        'lines': ['SwitchName=sw1 Nodes=%s' % wanted], 'warnings': []}


NODE_RULE = 'a Slurm node name (not empty, no blanks, commas, brackets, "#" or "=", not starting with "-")'
NO_GROUP = 'name_map: the regular expression %r has no group; put the Slurm node name in a group, e.g. r"^(\\S+) "'


@pytest.mark.parametrize('kwargs, message', [
    ({'name_map': r'^\S+ '}, NO_GROUP % r'^\S+ '),
    ({'name_map': re.compile(r'^\S+')}, NO_GROUP % r'^\S+'),
    ({'name_map': r'^(\S+'}, "name_map: '^(\\\\S+' is not a valid regular expression (missing ), unterminated subpattern at position 1)"),
    ({'name_map': {5: 'a'}}, 'name_map: key 5 is not a node description, host name or CA GUID'),
    ({'name_map': {' ': 'a'}}, "name_map: key ' ' is not a node description, host name or CA GUID"),
    ({'name_map': {'a': 'b c'}}, "name_map['a'] is 'b c', expected " + NODE_RULE),
    ({'rail_hca': 5}, 'rail_hca must be the device name of the rail-0 HCA as the node descriptions show it ("mlx5_0", "HCA-1"), got 5'),
    ({'node_name_map': [1]}, 'node_name_map must be what parse_node_name_map returns ({guid: name}), got [1]'),
])
def test_tree_topology_refuses_bad_arguments_whole(kwargs, message):
    with pytest.raises(ValueError) as error:
        tree_topology(parse_ibnetdiscover(dump()), ['node1'], **kwargs)
    assert str(error.value) == message


@pytest.mark.parametrize('parsed, message', [
    ({'switches': {}}, 'parsed must be what parse_ibnetdiscover returns (a dict with "switches" and "hosts")'),
    ({'switches': {}, 'hosts': {}}, 'the fabric has no switch at all (0 CA(s), e.g. only the local HCA with its link down): topology.conf '
                                    'needs at least one switch; run ibnetdiscover on a node whose link is up'),
])
def test_tree_topology_refuses_what_is_no_fabric_whole(parsed, message):
    with pytest.raises(ValueError) as error:
        tree_topology(parsed, ['node1'])
    assert str(error.value) == message


def test_no_slurm_node_in_the_fabric_names_its_hosts():
    with pytest.raises(ValueError) as error:
        tree_topology(parse_ibnetdiscover(dump()), ['gpu1', 'gpu2'])
    assert str(error.value) == ("none of the 2 Slurm nodes is in the fabric: gpu[1-2]; the fabric's hosts are node1 (name_map maps "
                                'node descriptions or CA GUIDs to Slurm node names)')


class _SearchOnly(object):
    """Has a search() like a compiled pattern, but no groups: not a regular expression."""

    def search(self, text):
        return None

    def __repr__(self):
        return '<search only>'


@pytest.mark.parametrize('name_map', [_SearchOnly(), 42])
def test_a_name_map_that_is_neither_a_dict_nor_a_pattern(name_map):
    with pytest.raises(ValueError) as error:
        tree_topology(parse_ibnetdiscover(dump()), ['node1'], name_map=name_map)
    assert str(error.value) == ('name_map must be a dict (description, host name or CA GUID -> Slurm node name) or a regular expression '
                                'with a group for the node name, got %r' % (name_map,))
