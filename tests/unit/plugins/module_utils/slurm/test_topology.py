# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for slurm/_topology.py: ibnetdiscover's output -> topology.conf (tree), NVLink domains -> topology.conf (block).

The dumps are in ``tests/unit/fixtures/topology`` (real ibnetdiscover outputs, sources and trims in its README).
The expected lines are the ones the README derives by hand from each dump.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import (
    block_topology,
    node_nvlink_domain,
    parse_ibnetdiscover,
    parse_node_name_map,
    switch_names,
    tree_topology,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'topology')

MT4129 = 'MT4129 ConnectX7   Mellanox Technologies'
MT23108 = 'MT23108 InfiniHost Mellanox Technologies'
FAT_NODES = 'b05-p1-dgx-05-c[01-03],b06-p1-dgx-06-c[01-03],b07-p1-dgx-07-c[01-03]'
RAIL_NODES = 'b05-p1-dgx-05-c[01-02],b06-p1-dgx-06-c[01-04]'
MANPAGE_MAP = {'H-0008f10403961354': 'ib1', '0008f10403960558': 'ib2', '0x8f10403960984': 'ib3',
               '005442b100004900': 'ib4'}


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def parsed(name):
    return parse_ibnetdiscover(fixture(name))


def default_ca(guid, where):
    return ('CA H-%s "%s" on %s shows the adapter\'s default node description, so its host is unknown (set it on '
            'the host, e.g. with rdma-ndd, or map the CA GUID in name_map); left out' % (guid, MT4129, where))


def not_in_fabric(hostlist):
    return 'Slurm nodes not in the fabric (no CA names them): %s; they are left out' % hostlist


RAIL_DEFAULT_CAS = [default_ca('e09d7303008574bc', 'B09-P1-IBLEAF-03-06 port 4'),
                    default_ca('e09d7303008574c0', 'B09-P1-IBLEAF-04-06 port 4'),
                    default_ca('e09d730300858f4c', 'B09-P1-IBLEAF-01-06 port 2'),
                    default_ca('e09d730300858f50', 'B09-P1-IBLEAF-02-06 port 4')]


# --- parse_ibnetdiscover ------------------------------------------------------------------------------------------------

def test_parse_manpage_example_exactly():
    assert parsed('rdma_core_manpage_two_switches.txt') == {
        'switches': {
            '005442ba00003080': {'guid': '005442ba00003080', 'desc': 'ISR9024 Voltaire', 'lid': 6,
                                 'ports': {22: ('0008f10403961354', 1), 10: ('0008f10400410015', 1),
                                           8: ('0008f10403960558', 2), 6: ('0008f10400410015', 3),
                                           12: ('0008f10403960558', 1)}},
            '0008f10400410015': {'guid': '0008f10400410015', 'desc': 'SW-6IB4 Voltaire', 'lid': 3,
                                 'ports': {6: ('0008f10403960984', 1), 4: ('005442b100004900', 1),
                                           1: ('005442ba00003080', 10), 3: ('005442ba00003080', 6)}},
        },
        'hosts': {
            '0008f10403960984': {'guid': '0008f10403960984', 'desc': MT23108, 'ports': {1: ('0008f10400410015', 6)}},
            '005442b100004900': {'guid': '005442b100004900', 'desc': MT23108, 'ports': {1: ('0008f10400410015', 4)}},
            '0008f10403961354': {'guid': '0008f10403961354', 'desc': MT23108, 'ports': {1: ('005442ba00003080', 22)}},
            '0008f10403960558': {'guid': '0008f10403960558', 'desc': MT23108,
                                 'ports': {2: ('005442ba00003080', 8), 1: ('005442ba00003080', 12)}},
        },
        'routers': {},
        'warnings': [],
    }


def test_parse_ca_only_dump():
    assert parsed('gb200_ca_only_no_switch.txt') == {
        'switches': {},
        'hosts': {'b8e92403009ca838': {'guid': 'b8e92403009ca838', 'desc': 'dgx-gb200-n01-c1 HCA-1', 'ports': {}}},
        'routers': {},
        'warnings': [],
    }


def test_parse_single_leaf_switch():
    switch = parsed('ndr_single_leaf.txt')['switches']
    assert switch == {'2c5eab0300c262c0': {
        'guid': '2c5eab0300c262c0', 'desc': 'MF0;A09-P1-IBLEAF-03-04:MQM9701/U1', 'lid': 155,
        'ports': {1: ('e09d7303007a4bd4', 1), 2: ('e09d730300859294', 1), 3: ('e09d73030085826c', 1),
                  4: ('e09d730300858974', 1), 65: ('2c5eab0300c262d0', 1)}}}


@pytest.mark.parametrize('name, switches, hosts, probe, desc', [
    ('ndr_single_leaf.txt', 1, 5, 'e09d730300858974', 'a08-p1-dgx-04-c04 mlx5_4'),
    ('ndr_fat_tree_rail1.txt', 5, 14, 'e09d730300858f4c', MT4129),
    ('ndr_multi_rail.txt', 8, 27, 'e09d73030085817c', 'b06-p1-dgx-06-c01 HCA-5'),
    ('rdma_core_manpage_two_switches.txt', 2, 4, '0008f10403961354', MT23108),
    ('gb200_ca_only_no_switch.txt', 0, 1, 'b8e92403009ca838', 'dgx-gb200-n01-c1 HCA-1'),
])
def test_parse_fixture_sizes(name, switches, hosts, probe, desc):
    fabric = parsed(name)
    assert (len(fabric['switches']), len(fabric['hosts']), fabric['hosts'][probe]['desc']) == (switches, hosts, desc)


def test_parse_spine_links_and_lids():
    fabric = parsed('ndr_fat_tree_rail1.txt')
    spine = fabric['switches']['2c5eab0300c25f80']
    assert (spine['desc'], spine['lid']) == ('MF0;B10-P1-IBSPINE-05:MQM9701/U1', 116)
    assert spine['ports'] == {33: ('2c5eab0300c26040', 41), 34: ('2c5eab0300c26040', 42),
                              41: ('2c5eab0300c26440', 41), 42: ('2c5eab0300c26440', 42),
                              49: ('2c5eab0300c26140', 41), 50: ('2c5eab0300c26140', 42),
                              65: ('2c5eab0300c25f90', 1)}


def _grouped_variant(text):
    """The man page example with what -g, -f and other builds add (ibnetdiscover.c's formats), CRLF line ends."""
    text = text.replace('sysimgguid=0x5442ba00003000\n', 'sysimgguid=0x5442ba00003000\t\t# Chassis 1 (ISR9024)\n')
    text = text.replace('switchguid=0x5442ba00003080(5442ba00003080)\n',
                        'switchguid=0x5442ba00003080(5442ba00003080)\t# ISR9024 Line 1 Chip 1\n')
    text = text.replace('Non-Chassis Nodes\n', 'Chassis 1 (guid 0x5442ba00003000)\n\n# Spine Nodes\nNon-Chassis Nodes\n')
    text = text.replace('[10]    "S-0008f10400410015"[1]', '[10][ext 10]    "S-0008f10400410015"[1][ext 2]')
    text = text.replace('lid 3 4xSDR\n', 'lid 3 4xSDR s=1 w=2 v=3\n')
    text = text.replace('# "MT23108 InfiniHost Mellanox Technologies"\n[1](5442b100004901)',
                        '# "MT23108 InfiniHost Mellanox Technologies" (scp)\n[1](5442b100004901)')
    return text.replace('\n', '\r\n')


def test_parse_reads_grouping_full_and_crlf_variants_the_same():
    plain = fixture('rdma_core_manpage_two_switches.txt')
    variant = _grouped_variant(plain)
    assert variant != plain.replace('\n', '\r\n')
    assert parse_ibnetdiscover(variant) == parse_ibnetdiscover(plain)


def test_parse_router_block():
    text = ('vendid=0x2c9\ndevid=0xd2f2\nswitchguid=0x2c5eab0300c262c0(2c5eab0300c262c0)\n'
            'Switch\t65 "S-2c5eab0300c262c0"\t\t# "MF0;sw1:MQM9701/U1" enhanced port 0 lid 155 lmc 0\n'
            '[7]\t"R-0002c90300000001"[1](2c90300000001) \t\t# "gw1 router" lid 9 4xNDR\n\n'
            'vendid=0x2c9\ndevid=0x1021\nrtguid=0x2c90300000001\n'
            'Rt\t1 "R-0002c90300000001"\t\t# "gw1 router"\n'
            '[1](2c90300000001) \t"S-2c5eab0300c262c0"[7]\t\t# lid 9 lmc 0 "MF0;sw1:MQM9701/U1" lid 155 4xNDR\n')
    fabric = parse_ibnetdiscover(text)
    assert fabric['routers'] == {'0002c90300000001': {'guid': '0002c90300000001', 'desc': 'gw1 router',
                                                      'ports': {1: ('2c5eab0300c262c0', 7)}}}
    assert fabric['hosts'] == {}


FAT = 'ndr_fat_tree_rail1.txt'
MAN = 'rdma_core_manpage_two_switches.txt'


def _cut(name, how):
    text = fixture(name)
    return how(text)


@pytest.mark.parametrize('name, how, message', [
    (FAT, lambda t: '', r'^the ibnetdiscover output is empty'),
    (FAT, lambda t: ' \n\t\n', r'^the ibnetdiscover output is empty'),
    (FAT, lambda t: '#\n# Topology file: generated on Wed Aug  6 16:11:23 2025\n#\n',
     r'has no "Switch", "Ca" or "Rt" block'),
    (FAT, lambda t: 'hello world\n', r'^line 1: "hello world" is not part of ibnetdiscover\'s topology output'),
    (FAT, lambda t: '<html><body>502 Bad Gateway</body></html>\n', r'^line 1: "<html>'),
    (FAT, lambda t: t.replace('\nvendid=0x2c9\ndevid=0xcf09', '\nibwarn: [1234] mad_rpc: _do_madrpc failed; dport (DR path '
                              'slid 0; dlid 0; 0,1,33)\nvendid=0x2c9\ndevid=0xcf09', 1),
     r'^line 74: "ibwarn: \[1234\] mad_rpc: .*" is ibnetdiscover\'s standard error inside the dump, which may be cut there'),
    (FAT, lambda t: 'ibwarn: [1234] mad_rpc: _do_madrpc failed\nhello\n' + t,
     r'^line 2: "hello" is not part of ibnetdiscover\'s topology output'),
    (FAT, lambda t: 'ibwarn: [1234] _do_madrpc: recv failed: Connection timed out\n'
                    'ibnetdiscover: iberror: failed: discover failed\n',
     r'^the ibnetdiscover output holds only its error lines \("ibwarn: \[1234\] _do_madrpc: recv failed: Connection timed '
     r'out"; "ibnetdiscover: iberror: failed: discover failed"\), no dump: discovery failed'),
    (FAT, lambda t: t.replace('Switch\t65 "S-2c5eab0300c26440"', 'Switch\t65 "H-2c5eab0300c26440"'),
     r'a "Switch" line names "H-2c5eab0300c26440"'),
    (FAT, lambda t: t.replace(' enhanced port 0 lid 70 lmc 0', ''), r'lacks "base\|enhanced port 0 lid'),
    (FAT, lambda t: t[:-20], r'^line 170: port line .* is cut short'),
    (FAT, lambda t: t[:t.rindex('Ca\t1')], r'^line 165: the output ends inside a block'),
    (FAT, lambda t: t[:t.rindex('[1](')], r'^S-2c5eab0300c26040 port 1 links to H-e09d730300233b10 port 1, but the block '
                                          r'of H-e09d730300233b10 has no port 1'),
    (FAT, lambda t: t[:t.index('\nvendid=0x2c9\ndevid=0xcf09')],
     r'^S-2c5eab0300c25f80 port 65 links to H-2c5eab0300c25f90 port 1, but the dump has no block for '
     r'H-2c5eab0300c25f90: the output is truncated'),
    (FAT, lambda t: t + t, r'^line 180: GUID 2c5eab0300c26140 has a second block \(first at line 10\)'),
    (FAT, lambda t: t.replace('"S-2c5eab0300c26040"[1]\t\t# lid 42', '"S-2c5eab0300c26040"[5]\t\t# lid 42'),
     r'^S-2c5eab0300c26040 port 1 links to H-e09d730300233b10 port 1, but H-e09d730300233b10 port 1 names '
     r'S-2c5eab0300c26040 port 5'),
    (FAT, lambda t: t.replace('Ca\t1 "H-e09d730300233b10"\t\t# "b05-p1-dgx-05-c01 HCA-1"\n', ''),
     r'a port line follows the node ids of line 165 without their "Switch"/"Ca"/"Rt" line'),
    (FAT, lambda t: t.replace('Ca\t1 "H-e09d7303002324f0"\t\t# "b05-p1-dgx-05-c02 HCA-1"\n[1](e09d7303002324f0) '
                              '\t"S-2c5eab0300c26040"[2]\t\t# lid 171 lmc 0 "MF0;B09-P1-IBLEAF-01-05:MQM9701/U1" '
                              'lid 65 4xNDR\n', ''),
     r'^line 163: "vendid=0x2c9" starts another block while the block of line 158 never reached'),
    (MAN, lambda t: t.replace('[22]    "H-0008f10403961354"', '[25]    "H-0008f10403961354"'),
     r'^line 14: port 25 of S-005442ba00003080, which has 24 ports \(line 13\)'),
    (MAN, lambda t: t.replace('[6]     "S-0008f10400410015"[3]', '[8]     "S-0008f10400410015"[3]'),
     r'^line 17: port 8 of S-005442ba00003080 is listed twice'),
    (MAN, lambda t: t[t.index('[22]'):], r'^line 1: port line .* belongs to no "Switch"/"Ca"/"Rt" block'),
    (MAN, lambda t: t.replace('"H-0008f10403961354"[1](8f10403961355)', '"?-0008f10403961354"[1]'),
     r'leads to a node of unknown type'),
])
def test_parse_refuses(name, how, message):
    with pytest.raises(ValueError, match=message):
        parse_ibnetdiscover(_cut(name, how))


# --- tree_topology: the fixtures ---------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, nodes, kwargs, lines, warnings', [
    ('ndr_single_leaf.txt', 'a08-p1-dgx-04-c[01-04]', {},
     ['SwitchName=A09-P1-IBLEAF-03-04 Nodes=a08-p1-dgx-04-c[01-04]'], []),
    ('ndr_single_leaf.txt', 'c[01-04]', {'name_map': r'dgx-04-(c\d\d) '},
     ['SwitchName=A09-P1-IBLEAF-03-04 Nodes=c[01-04]'], []),
    (FAT, FAT_NODES, {},
     ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-03]',
      'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
      'SwitchName=B09-P1-IBLEAF-01-07 Nodes=b07-p1-dgx-07-c[01-03]',
      'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-07]',
      'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-07]'],
     [default_ca('e09d730300858f4c', 'B09-P1-IBLEAF-01-06 port 2')]),
    ('ndr_multi_rail.txt', RAIL_NODES, {},
     ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-02]',
      'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
      'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-06]',
      'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-06]'],
     RAIL_DEFAULT_CAS + [not_in_fabric('b06-p1-dgx-06-c04')]),
    ('ndr_multi_rail.txt', RAIL_NODES, {'rail_hca': 'HCA-2'},
     ['SwitchName=B09-P1-IBLEAF-02-05 Nodes=b05-p1-dgx-05-c[01-02]',
      'SwitchName=B09-P1-IBLEAF-02-06 Nodes=b06-p1-dgx-06-c[01-03]',
      'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-02-[05-06]',
      'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-02-[05-06]'],
     RAIL_DEFAULT_CAS + [not_in_fabric('b06-p1-dgx-06-c04')]),
    ('ndr_multi_rail.txt', RAIL_NODES, {'rail_hca': 'HCA-5'},
     ['SwitchName=B09-P1-IBLEAF-03-06 Nodes=b06-p1-dgx-06-c[01-03]',
      'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-03-06',
      'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-03-06'],
     RAIL_DEFAULT_CAS + [
         'host b05-p1-dgx-05-c01 has no CA named HCA-5 (it has "b05-p1-dgx-05-c01 HCA-1", "b05-p1-dgx-05-c01 HCA-2"); '
         'left out',
         'host b05-p1-dgx-05-c02 has no CA named HCA-5 (it has "b05-p1-dgx-05-c02 HCA-1", "b05-p1-dgx-05-c02 HCA-2"); '
         'left out',
         not_in_fabric('b06-p1-dgx-06-c04')]),
    (MAN, 'ib[1-4]', {'name_map': MANPAGE_MAP},
     ['SwitchName=ISR9024_Voltaire Nodes=ib[1-2]',
      'SwitchName=SW-6IB4_Voltaire Nodes=ib[3-4]',
      'SwitchName=fabric Switches=ISR9024_Voltaire,SW-6IB4_Voltaire'],
     ['the leaves do not all meet under common switches (ISR9024_Voltaire, SW-6IB4_Voltaire are linked only to each '
      'other or through switches that carry other hosts); switch fabric, which is not in the fabric, joins them so '
      'that jobs may span them']),
])
def test_tree_from_fixture(name, nodes, kwargs, lines, warnings):
    result = tree_topology(parsed(name), nodes, **kwargs)
    assert result == {'lines': lines, 'warnings': warnings}


def test_tree_node_names_list_or_hostlist_give_the_same():
    fabric = parsed(FAT)
    names = ['b07-p1-dgx-07-c03', 'b05-p1-dgx-05-c01', 'b06-p1-dgx-06-c02', 'b05-p1-dgx-05-c03', 'b06-p1-dgx-06-c01',
             'b07-p1-dgx-07-c01', 'b05-p1-dgx-05-c02', 'b06-p1-dgx-06-c03', 'b07-p1-dgx-07-c02']
    assert tree_topology(fabric, names) == tree_topology(fabric, FAT_NODES)


def test_tree_host_without_its_rail0_hca_is_placed_by_the_next_with_a_warning():
    text = fixture('ndr_multi_rail.txt')
    port = '[4]\t"H-e09d73030085904c"[1](e09d73030085904c) \t\t# "b06-p1-dgx-06-c02 HCA-1" lid 311 4xNDR\n'
    block = ('\nvendid=0x2c9\ndevid=0x1021\nsysimgguid=0xe09d73030085904c\ncaguid=0xe09d73030085904c\n'
             'Ca\t1 "H-e09d73030085904c"\t\t# "b06-p1-dgx-06-c02 HCA-1"\n'
             '[1](e09d73030085904c) \t"S-2c5eab0300c26440"[4]\t\t# lid 311 lmc 0 '
             '"MF0;B09-P1-IBLEAF-01-06:MQM9701/U1" lid 70 4xNDR\n')
    assert port in text and block in text
    result = tree_topology(parse_ibnetdiscover(text.replace(port, '').replace(block, '')),
                           'b05-p1-dgx-05-c[01-02],b06-p1-dgx-06-c[01-03]')
    assert result == {
        'lines': ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-02]',
                  'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01,03]',
                  'SwitchName=B09-P1-IBLEAF-02-06 Nodes=b06-p1-dgx-06-c02',
                  'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-06],B09-P1-IBLEAF-02-06',
                  'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-06],B09-P1-IBLEAF-02-06'],
        'warnings': RAIL_DEFAULT_CAS + [
            'host b06-p1-dgx-06-c02 was placed by its HCA-2, most hosts by their HCA-1: is its HCA-1 missing from the '
            'fabric (link down)? pass rail_hca to place every host by one HCA']}


def _dump(switches, links, cas):
    """A dump in ibnetdiscover's format (each link from both ends): switches {guid: name}, links [(guid, port,
    guid, port)], cas [(guid, description, switch guid, switch port)]."""
    ports = dict((guid, {}) for guid in switches)
    for a, pa, b, pb in links:
        ports[a][pa] = '[%d]\t"S-%s"[%d]\t\t# "MF0;%s:QM8700/U1" lid 1 4xHDR\n' % (pa, b, pb, switches[b])
        ports[b][pb] = '[%d]\t"S-%s"[%d]\t\t# "MF0;%s:QM8700/U1" lid 1 4xHDR\n' % (pb, a, pa, switches[a])
    blocks = []
    for guid, desc, switch, port in cas:
        ports[switch][port] = '[%d]\t"H-%s"[1](%s) \t\t# "%s" lid 2 4xHDR\n' % (port, guid, guid, desc)
        blocks.append('\nvendid=0x2c9\ndevid=0x101b\nsysimgguid=0x%s\ncaguid=0x%s\nCa\t1 "H-%s"\t\t# "%s"\n'
                      '[1](%s) \t"S-%s"[%d]\t\t# lid 2 lmc 0 "MF0;%s:QM8700/U1" lid 1 4xHDR\n'
                      % (guid, guid, guid, desc, guid, switch, port, switches[switch]))
    text = '#\n# Topology file: generated on Mon Jan  1 00:00:00 2024\n#\n'
    for guid in sorted(switches):
        text += ('\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x%s\nswitchguid=0x%s(%s)\n'
                 'Switch\t41 "S-%s"\t\t# "MF0;%s:QM8700/U1" enhanced port 0 lid 1 lmc 0\n'
                 % (guid, guid, guid, guid, switches[guid]))
        text += ''.join(ports[guid][port] for port in sorted(ports[guid]))
    return text + ''.join(blocks)


def test_tree_three_levels_with_a_storage_leaf():
    """Hand-built (real format): two pods under one core; a storage leaf hangs off spine-a1, a switch off it."""
    sw = dict(('b8599f03000000%02d' % number, name) for number, name in [
        (1, 'leaf-1'), (2, 'leaf-2'), (3, 'leaf-3'), (4, 'leaf-4'), (11, 'spine-a1'), (12, 'spine-a2'),
        (21, 'spine-b1'), (31, 'core-1'), (41, 'storage-1'), (51, 'unused-1')])
    g = dict((name, guid) for guid, name in sw.items())
    links = [(g['leaf-1'], 21, g['spine-a1'], 1), (g['leaf-1'], 22, g['spine-a2'], 1),
             (g['leaf-2'], 21, g['spine-a1'], 2), (g['leaf-2'], 22, g['spine-a2'], 2),
             (g['leaf-3'], 21, g['spine-b1'], 1), (g['leaf-4'], 21, g['spine-b1'], 2),
             (g['spine-a1'], 30, g['core-1'], 1), (g['spine-a2'], 30, g['core-1'], 2), (g['spine-b1'], 30, g['core-1'], 3),
             (g['spine-a1'], 31, g['spine-a2'], 31), (g['spine-a1'], 32, g['storage-1'], 21),
             (g['storage-1'], 22, g['unused-1'], 1)]
    cas = [('0c42a10300000001', 'n01 mlx5_0', g['leaf-1'], 1), ('0c42a10300000002', 'n02 mlx5_0', g['leaf-1'], 2),
           ('0c42a10300000003', 'n03 mlx5_0', g['leaf-2'], 1), ('0c42a10300000004', 'n04 mlx5_0', g['leaf-2'], 2),
           ('0c42a10300000005', 'n05 mlx5_0', g['leaf-3'], 1), ('0c42a10300000006', 'n06 mlx5_0', g['leaf-4'], 1),
           ('0c42a10300000007', 'stor1 mlx5_0', g['storage-1'], 1)]
    assert tree_topology(parse_ibnetdiscover(_dump(sw, links, cas)), 'n[01-06]') == {
        'lines': ['SwitchName=leaf-1 Nodes=n[01-02]', 'SwitchName=leaf-2 Nodes=n[03-04]',
                  'SwitchName=leaf-3 Nodes=n05', 'SwitchName=leaf-4 Nodes=n06',
                  'SwitchName=spine-a1 Switches=leaf-[1-2]', 'SwitchName=spine-a2 Switches=leaf-[1-2]',
                  'SwitchName=spine-b1 Switches=leaf-[3-4]',
                  'SwitchName=core-1 Switches=spine-a[1-2],spine-b1'],
        'warnings': ['fabric host stor1 is not a Slurm node (CA H-0c42a10300000007 "stor1 mlx5_0" on storage-1 '
                     'port 1); left out']}


# --- tree_topology: names and warnings ----------------------------------------------------------------------------------

SINGLE_LINE = 'SwitchName=A09-P1-IBLEAF-03-04 Nodes=%s'


@pytest.mark.parametrize('nodes, name_map, nodes_text, warnings', [
    ('gpu[01-04]', {'a08-p1-dgx-04-c01': 'gpu01', 'a08-p1-dgx-04-c02': 'gpu02', 'a08-p1-dgx-04-c03': 'gpu03',
                    'a08-p1-dgx-04-c04': 'gpu04'}, 'gpu[01-04]', []),
    ('a08-p1-dgx-04-c[01-03],gpu04', {'a08-p1-dgx-04-c04 mlx5_4': 'gpu04'}, 'a08-p1-dgx-04-c[01-03],gpu04', []),
    ('a08-p1-dgx-04-c[01-03],gpu04', {'H-e09d730300858974': 'gpu04'}, 'a08-p1-dgx-04-c[01-03],gpu04', []),
    ('a08-p1-dgx-04-c[01-03],gpu04', {'0xe09d730300858974': 'gpu04'}, 'a08-p1-dgx-04-c[01-03],gpu04', []),
    ('a08-p1-dgx-04-c[01-03],gpu04', {'E09D730300858974': 'gpu04'}, 'a08-p1-dgx-04-c[01-03],gpu04', []),
    ('n[1-4]', r'^a08-p1-dgx-04-c0(?P<num>\d)', None, None),  # group 1 is the digit: names "1".."4" are no Slurm nodes
    ('n[1-4]', re.compile(r'dgx-04-c0(?P<name>\d)'), None, None),
    ('c[01-02]', r'dgx-04-(c0[12]) ', 'c[01-02]',
     ['CA H-e09d73030085826c "a08-p1-dgx-04-c03 mlx5_4" on A09-P1-IBLEAF-03-04 port 3 does not match the name_map '
      'pattern \'dgx-04-(c0[12]) \'; left out',
      'CA H-e09d730300858974 "a08-p1-dgx-04-c04 mlx5_4" on A09-P1-IBLEAF-03-04 port 4 does not match the name_map '
      'pattern \'dgx-04-(c0[12]) \'; left out']),
])
def test_tree_name_map(nodes, name_map, nodes_text, warnings):
    fabric = parsed('ndr_single_leaf.txt')
    if nodes_text is None:
        with pytest.raises(ValueError, match=r'^none of the 4 Slurm nodes is in the fabric: n\[1-4\]; '
                                             r'the fabric\'s hosts are 1, 2, 3, 4'):
            tree_topology(fabric, nodes, name_map=name_map)
        return
    assert tree_topology(fabric, nodes, name_map=name_map) == {'lines': [SINGLE_LINE % nodes_text],
                                                               'warnings': warnings}


@pytest.mark.parametrize('nodes, lines, warnings', [
    ('a08-p1-dgx-04-c[01-02]', [SINGLE_LINE % 'a08-p1-dgx-04-c[01-02]'],
     ['fabric host a08-p1-dgx-04-c03 is not a Slurm node (CA H-e09d73030085826c "a08-p1-dgx-04-c03 mlx5_4" on '
      'A09-P1-IBLEAF-03-04 port 3); left out',
      'fabric host a08-p1-dgx-04-c04 is not a Slurm node (CA H-e09d730300858974 "a08-p1-dgx-04-c04 mlx5_4" on '
      'A09-P1-IBLEAF-03-04 port 4); left out']),
    ('a08-p1-dgx-04-c[01-04],a08-p1-dgx-04-c[05-06],login1', [SINGLE_LINE % 'a08-p1-dgx-04-c[01-04]'],
     [not_in_fabric('a08-p1-dgx-04-c[05-06],login1')]),
    ('a08-p1-dgx-04-c04,a08-p1-dgx-04-c09', [SINGLE_LINE % 'a08-p1-dgx-04-c04'],
     ['fabric host a08-p1-dgx-04-c01 is not a Slurm node (CA H-e09d7303007a4bd4 "a08-p1-dgx-04-c01 mlx5_4" on '
      'A09-P1-IBLEAF-03-04 port 1); left out',
      'fabric host a08-p1-dgx-04-c02 is not a Slurm node (CA H-e09d730300859294 "a08-p1-dgx-04-c02 mlx5_4" on '
      'A09-P1-IBLEAF-03-04 port 2); left out',
      'fabric host a08-p1-dgx-04-c03 is not a Slurm node (CA H-e09d73030085826c "a08-p1-dgx-04-c03 mlx5_4" on '
      'A09-P1-IBLEAF-03-04 port 3); left out',
      not_in_fabric('a08-p1-dgx-04-c09')]),
])
def test_tree_warnings(nodes, lines, warnings):
    assert tree_topology(parsed('ndr_single_leaf.txt'), nodes) == {'lines': lines, 'warnings': warnings}


def test_tree_multi_ca_host_not_a_slurm_node_is_named_once():
    result = tree_topology(parsed('ndr_multi_rail.txt'), 'b06-p1-dgx-06-c[01-03]')
    assert result['warnings'][4:] == [
        'fabric host b05-p1-dgx-05-c01 is not a Slurm node (CA H-e09d730300233b10 "b05-p1-dgx-05-c01 HCA-1" on '
        'B09-P1-IBLEAF-01-05 port 1 and 1 more); left out',
        'fabric host b05-p1-dgx-05-c02 is not a Slurm node (CA H-e09d7303002324f0 "b05-p1-dgx-05-c02 HCA-1" on '
        'B09-P1-IBLEAF-01-05 port 2 and 1 more); left out']
    assert result['lines'] == ['SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
                               'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-06',
                               'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-06']


def test_tree_ca_linked_to_no_switch():
    text = ('vendid=0x2c9\ndevid=0xd2f2\nswitchguid=0x2c5eab0300c262c0(2c5eab0300c262c0)\n'
            'Switch\t65 "S-2c5eab0300c262c0"\t\t# "MF0;sw1:MQM9701/U1" enhanced port 0 lid 155 lmc 0\n'
            '[1]\t"H-e09d7303007a4bd4"[1](e09d7303007a4bd4) \t\t# "gpu01 mlx5_0" lid 646 4xNDR\n\n'
            'vendid=0x2c9\ndevid=0x1021\ncaguid=0xe09d7303007a4bd4\nCa\t1 "H-e09d7303007a4bd4"\t\t# "gpu01 mlx5_0"\n'
            '[1](e09d7303007a4bd4) \t"S-2c5eab0300c262c0"[1]\t\t# lid 646 lmc 0 "MF0;sw1:MQM9701/U1" lid 155 4xNDR\n\n'
            'vendid=0x2c9\ndevid=0x1021\ncaguid=0xe09d730300000001\nCa\t2 "H-e09d730300000001"\t\t# "gpu02 mlx5_0"\n'
            '[1](e09d730300000001) \t"H-e09d730300000002"[1] (e09d730300000002) \t\t# lid 1 lmc 0 "gpu03 mlx5_0" '
            'lid 2 4xNDR\n\n'
            'vendid=0x2c9\ndevid=0x1021\ncaguid=0xe09d730300000002\nCa\t1 "H-e09d730300000002"\t\t# "gpu03 mlx5_0"\n'
            '[1](e09d730300000002) \t"H-e09d730300000001"[1] (e09d730300000001) \t\t# lid 2 lmc 0 "gpu02 mlx5_0" '
            'lid 1 4xNDR\n')
    assert tree_topology(parse_ibnetdiscover(text), 'gpu[01-03]') == {
        'lines': ['SwitchName=sw1 Nodes=gpu01'],
        'warnings': ['host gpu02: its CA H-e09d730300000001 "gpu02 mlx5_0" is linked to no switch; left out',
                     'host gpu03: its CA H-e09d730300000002 "gpu03 mlx5_0" is linked to no switch; left out']}


# --- tree_topology: errors ----------------------------------------------------------------------------------------------

def _recabled_manpage():
    """ib2's port 1 moved from ISR9024 port 12 to SW-6IB4 port 5, both ends edited."""
    text = fixture(MAN)
    port12 = '[12]    "H-0008f10403960558"[1](8f10403960559)         # "%s" lid 10 4xSDR\n' % MT23108
    port3 = '[3]     "S-005442ba00003080"[6]         # "ISR9024 Voltaire" lid 6 4xSDR\n'
    ca_end = '"S-005442ba00003080"[12]                # lid 10'
    assert port12 in text and port3 in text and ca_end in text
    return (text.replace(port12, '')
            .replace(port3, port3 + port12.replace('[12]', '[5]'))
            .replace(ca_end, '"S-0008f10400410015"[5]                # lid 10'))


@pytest.mark.parametrize('fabric, nodes, kwargs, message', [
    (lambda: parsed('gb200_ca_only_no_switch.txt'), 'dgx-gb200-n01-c1', {},
     r'^the fabric has no switch at all \(1 CA\(s\)'),
    (lambda: parse_ibnetdiscover(_recabled_manpage()), 'ib[1-4]', {'name_map': MANPAGE_MAP},
     r'^host ib2 would sit in two leaves: its CA H-0008f10403960558 "MT23108 InfiniHost Mellanox Technologies" is '
     r'linked to SW-6IB4_Voltaire and ISR9024_Voltaire; a Slurm node belongs to one leaf switch'),
    (lambda: parsed(FAT), 'x,b07-p1-dgx-07-c01', {'name_map': {'b05-p1-dgx-05-c01': 'x', 'b06-p1-dgx-06-c01': 'x'}},
     r'^host x would sit in two leaves: 2 CAs fit its rail-0 HCA \(H-e09d730300233b10 "b05-p1-dgx-05-c01 HCA-1" on '
     r'B09-P1-IBLEAF-01-05 port 1; H-e09d73030085942c "b06-p1-dgx-06-c01 HCA-1" on B09-P1-IBLEAF-01-06 port 1\): '
     r'two machines with one host name'),
    (lambda: parsed(FAT), 'x', {'name_map': {'b05-p1-dgx-05-c01': 'x', 'b05-p1-dgx-05-c02': 'x'}},
     r'^host x is ambiguous: 2 CAs fit its rail-0 HCA'),
    (lambda: parsed(MAN), 'ib[1-4]', {},
     r'^none of the 4 Slurm nodes is in the fabric: ib\[1-4\]; no CA of the fabric names a host'),
    (lambda: parsed(FAT), 'gpu[01-02]', {},
     r'^none of the 2 Slurm nodes is in the fabric: gpu\[01-02\]; the fabric\'s hosts are b05-p1-dgx-05-c01, '
     r'b05-p1-dgx-05-c02, b05-p1-dgx-05-c03, b06-p1-dgx-06-c01, b06-p1-dgx-06-c02, \.\.\.'),
    (lambda: parsed(FAT), [], {}, r'^nodes is empty, expected at least one Slurm node name'),
    (lambda: parsed(FAT), '', {}, r'^hostlist is empty'),
    (lambda: parsed(FAT), ['gpu 01'], {}, r"^nodes\[0\] is 'gpu 01', expected a Slurm node name \(not empty, no blanks"),
    (lambda: parsed(FAT), ['gpu01', '-Hroot@x'], {}, r"^nodes\[1\] is '-Hroot@x', expected a Slurm node name"),
    (lambda: parsed(FAT), 'gpu[01-02],gpu#3', {}, r"^nodes 'gpu\[01-02\],gpu#3' holds 'gpu#3', expected a Slurm node name"),
    (lambda: parsed(FAT), 42, {}, r'^nodes is 42, expected a list of Slurm node names or a hostlist'),
    (lambda: parsed(FAT), FAT_NODES, {'name_map': 42}, r'^name_map must be a dict .* or a regular expression'),
    (lambda: parsed(FAT), FAT_NODES, {'name_map': r'^\S+ '}, r'has no group'),
    (lambda: parsed(FAT), FAT_NODES, {'name_map': r'^(\S+'}, r'is not a valid regular expression'),
    (lambda: parsed(FAT), FAT_NODES, {'name_map': {'b05-p1-dgx-05-c01': 'bad name'}},
     r"^name_map\['b05-p1-dgx-05-c01'\] is 'bad name', expected a Slurm node name"),
    (lambda: parsed(FAT), FAT_NODES, {'rail_hca': ' '}, r'^rail_hca must be the device name'),
    (lambda: {'switches': []}, FAT_NODES, {}, r'^parsed must be what parse_ibnetdiscover returns'),
])
def test_tree_refuses(fabric, nodes, kwargs, message):
    with pytest.raises(ValueError, match=message):
        tree_topology(fabric(), nodes, **kwargs)


# --- issue 42: what real dumps need (fixtures and hand-derived lines in tests/unit/fixtures/topology/README.md) ------

FAT_LINES = ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-03]',
             'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
             'SwitchName=B09-P1-IBLEAF-01-07 Nodes=b07-p1-dgx-07-c[01-03]',
             'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-07]',
             'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-07]']
STDERR_WARNING = ('lines 1-3 before the dump are ibnetdiscover\'s standard error ("ibwarn: [2860] _do_madrpc: recv failed: '
                  'Connection timed out"; "ibwarn: [2860] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; '
                  '0,1,37,17)"; "src/query_smp.c:228; umad (DR path slid 0; dlid 0; 0,1,37,17 Attr 0x11:0) bad status 110; '
                  'Connection..."): discovery had trouble, so a node or link may be missing from the dump; the dump was read '
                  'as it is')


def test_leading_stderr_lines_are_warnings_and_the_dump_is_read():
    fabric = parsed('ndr_fat_tree_rail1_stderr_first.txt')
    assert fabric['warnings'] == [STDERR_WARNING]
    assert dict(fabric, warnings=[]) == parsed(FAT)
    assert tree_topology(fabric, FAT_NODES) == {
        'lines': FAT_LINES, 'warnings': [STDERR_WARNING, default_ca('e09d730300858f4c', 'B09-P1-IBLEAF-01-06 port 2')]}


def test_one_leading_stderr_line_and_blank_lines():
    text = '\nibwarn: [7] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,37,17)\n\n' + fixture(FAT)
    assert parse_ibnetdiscover(text)['warnings'] == [
        'line 2 before the dump is ibnetdiscover\'s standard error ("ibwarn: [7] mad_rpc: _do_madrpc failed; dport (DR path '
        'slid 0; dlid 0; 0,1,37,17)"): discovery had trouble, so a node or link may be missing from the dump; the dump '
        'was read as it is']


@pytest.mark.parametrize('how, message', [
    (lambda t: t.replace('\nvendid=0x2c9\ndevid=0xcf09', '\nhello\nvendid=0x2c9\ndevid=0xcf09', 1),
     r'^line 77: "hello" is not part of ibnetdiscover\'s topology output'),
    (lambda t: t.replace('\nvendid=0x2c9\ndevid=0xcf09', '\nsrc/query_smp.c:228; umad bad status 110\nvendid=0x2c9\ndevid=0xcf09', 1),
     r'^line 77: "src/query_smp.c:228; umad bad status 110" is ibnetdiscover\'s standard error inside the dump'),
    (lambda t: t + 'ibwarn: [2860] trailing\n', r'^line 174: "ibwarn: \[2860\] trailing" is ibnetdiscover\'s standard error'),
])
def test_stderr_or_garbage_after_the_dump_began_is_refused(how, message):
    with pytest.raises(ValueError, match=message):
        parse_ibnetdiscover(how(fixture('ndr_fat_tree_rail1_stderr_first.txt')))


MANPAGE_NAMES = {'005442ba00003080': 'ISR9024 edge', '0008f10400410015': 'sw-6ib4', '0008f10403961354': 'ib1 mlx4_0',
                 '0008f10403960558': 'ib2 mlx4_0', '0008f10403960984': 'ib3 mlx4_0', '005442b100004900': 'ib4 mlx4_0',
                 '0002c90300000099': 'login9 mlx5_0'}


def test_node_name_map_file_is_parsed():
    assert parse_node_name_map(fixture('manpage_node_name_map.txt')) == MANPAGE_NAMES


def test_node_name_map_names_hosts_and_switches():
    result = tree_topology(parsed(MAN), 'ib[1-4]', node_name_map=parse_node_name_map(fixture('manpage_node_name_map.txt')))
    assert result == {
        'lines': ['SwitchName=ISR9024_edge Nodes=ib[1-2]',
                  'SwitchName=sw-6ib4 Nodes=ib[3-4]',
                  'SwitchName=fabric Switches=ISR9024_edge,sw-6ib4'],
        'warnings': ['the leaves do not all meet under common switches (ISR9024_edge, sw-6ib4 are linked only to each other '
                     'or through switches that carry other hosts); switch fabric, which is not in the fabric, joins them so '
                     'that jobs may span them']}


def test_the_joining_switch_takes_a_name_no_switch_of_the_fabric_has():
    names = dict(parse_node_name_map(fixture('manpage_node_name_map.txt')), **{'0008f10400410015': 'fabric'})
    result = tree_topology(parsed(MAN), 'ib[1-4]', node_name_map=names)
    assert result['lines'] == ['SwitchName=ISR9024_edge Nodes=ib[1-2]', 'SwitchName=fabric Nodes=ib[3-4]',
                               'SwitchName=fabric2 Switches=ISR9024_edge,fabric']


def test_node_name_map_then_name_map():
    """The map names the default-description CA on 01-06 port 2; name_map (by host name) applies to what it gives."""
    names = parse_node_name_map('0xe09d730300858f4c "b06-p1-dgx-06-c04 HCA-1"\n0x2c5eab0300c25f80 "spine-5"\n')
    result = tree_topology(parsed(FAT), FAT_NODES + ',gpu-x', node_name_map=names, name_map={'b06-p1-dgx-06-c04': 'gpu-x'})
    assert result == {'lines': FAT_LINES[:1] + ['SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03],gpu-x'] + FAT_LINES[2:4]
                      + ['SwitchName=spine-5 Switches=B09-P1-IBLEAF-01-[05-07]'], 'warnings': []}


@pytest.mark.parametrize('text, message', [
    ('', r'^node_name_map has no entry; expected lines <GUID> "<name>"'),
    ('# only comments\n\n', r'^node_name_map has no entry'),
    ('0x12 "a"\nleaf-05 0x12\n', r'^node_name_map line 2: "leaf-05 0x12" does not start with a node GUID in hex'),
    ('2c5eab0300c26040 "leaf"\n', r'^node_name_map line 1: "2c5eab0300c26040 \"leaf\"" does not start with a node GUID'),
    ('0x2c5eab0300c26040"leaf"\n', r'^node_name_map line 1: .* does not start with a node GUID'),
    ('0x12345678901234567 "a"\n', r'^node_name_map line 1: .* does not start with a node GUID'),
    ('0xZZ "a"\n', r'^node_name_map line 1: .* does not start with a node GUID'),
    ('\n0x12 "leaf\n', r'^node_name_map line 2: the name of GUID 0x0000000000000012 has no closing quote'),
    ('0x12 "leaf" spine\n', r'^node_name_map line 1: "spine" follows the quoted name of GUID 0x0000000000000012'),
    ('0x12 ""\n', r'^node_name_map line 1: GUID 0x0000000000000012 has no name'),
    ('0x12\n', r'^node_name_map line 1: GUID 0x0000000000000012 has no name'),
    ('0x12   # no name\n', r'^node_name_map line 1: GUID 0x0000000000000012 has no name'),
    ('0x12 "a"\n0x0012 "b"\n', r'^node_name_map line 2: GUID 0x0000000000000012 is named "b", but line 1 named it "a"'),
    (42, r'^node_name_map is 42, expected the text of a node name map'),
])
def test_node_name_map_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        parse_node_name_map(text)


def test_node_name_map_names_the_file_and_takes_repeats():
    assert parse_node_name_map('0x12 "a" # first\n0x0012 a\n') == {'0000000000000012': 'a'}
    with pytest.raises(ValueError, match=r'^node_name_map_path /etc/rdma/ib-node-name-map line 1: '):
        parse_node_name_map('x\n', source='node_name_map_path /etc/rdma/ib-node-name-map')
    with pytest.raises(ValueError, match=r'^node_name_map must be what parse_node_name_map returns'):
        tree_topology(parsed(FAT), FAT_NODES, node_name_map='0x12 "a"')


SPINE_LEAVES = ['SwitchName=leaf-1 Nodes=n[01-02]', 'SwitchName=leaf-2 Nodes=n[03-04]', 'SwitchName=leaf-3 Nodes=n05']


def _not_slurm(host, guid, port):
    return 'fabric host %s is not a Slurm node (CA H-%s "%s mlx5_0" on spine-2 port %d); left out' % (host, guid, host, port)


def test_spine_with_slurm_nodes_keeps_its_place():
    assert tree_topology(parsed('hand_spine_with_hosts.txt'), 'n[01-05],mgmt01') == {
        'lines': SPINE_LEAVES + ['SwitchName=spine-2-hosts Nodes=mgmt01',
                                 'SwitchName=spine-1 Switches=leaf-[1-3]',
                                 'SwitchName=spine-2 Switches=leaf-[1-3],spine-2-hosts'],
        'warnings': [_not_slurm('stor01', '0c42a10300000113', 33), _not_slurm('ufm01', '0c42a10300000112', 32),
                     'switch spine-2 holds Slurm nodes (mgmt01) and is above leaf switches (leaf-[1-3]); Slurm refuses '
                     'Nodes= and Switches= on one topology.conf line, so its nodes are on spine-2-hosts, a switch that is '
                     'not in the fabric, listed under spine-2']}


def test_spine_with_other_hosts_is_still_a_spine():
    assert tree_topology(parsed('hand_spine_with_hosts.txt'), 'n[01-05]') == {
        'lines': SPINE_LEAVES + ['SwitchName=spine-1 Switches=leaf-[1-3]', 'SwitchName=spine-2 Switches=leaf-[1-3]'],
        'warnings': [_not_slurm('mgmt01', '0c42a10300000111', 31), _not_slurm('stor01', '0c42a10300000113', 33),
                     _not_slurm('ufm01', '0c42a10300000112', 32)]}


def test_spine_with_hosts_and_a_name_its_leaf_would_take():
    """A switch already named "spine-2-hosts" (by the node name map): the spine's leaf is S-<guid>-hosts."""
    names = {'b8599f0300000103': 'spine-2-hosts'}
    result = tree_topology(parsed('hand_spine_with_hosts.txt'), 'n[01-05],mgmt01', node_name_map=names)
    assert result['lines'] == ['SwitchName=S-b8599f0300000112-hosts Nodes=mgmt01', 'SwitchName=leaf-1 Nodes=n[01-02]',
                               'SwitchName=leaf-2 Nodes=n[03-04]', 'SwitchName=spine-2-hosts Nodes=n05',
                               'SwitchName=spine-1 Switches=leaf-[1-2],spine-2-hosts',
                               'SwitchName=spine-2 Switches=S-b8599f0300000112-hosts,leaf-[1-2],spine-2-hosts']


SPINE_2 = 'b8599f0300000112'


@pytest.mark.parametrize('names, leaf', [
    # 58 characters and "-hosts": 64, the longest switch name Slurm takes
    ({SPINE_2: 's' * 58}, 's' * 58 + '-hosts'),
    ({SPINE_2: 's' * 59}, 'S-b8599f0300000112-hosts'),
    # both names taken: the GUID name with the lowest free number
    ({'b8599f0300000103': 'spine-2-hosts', 'b8599f0300000102': 'S-b8599f0300000112-hosts'}, 'S-b8599f0300000112-hosts2'),
    ({'b8599f0300000103': 'spine-2-hosts', 'b8599f0300000102': 'S-b8599f0300000112-hosts', 'b8599f0300000101': 'S-b8599f0300000112-hosts2'},
     'S-b8599f0300000112-hosts3'),
])
def test_the_leaf_of_a_spine_with_slurm_nodes_takes_a_fresh_name(names, leaf):
    result = tree_topology(parsed('hand_spine_with_hosts.txt'), 'n[01-05],mgmt01', node_name_map=names)
    assert 'SwitchName=%s Nodes=mgmt01' % leaf in result['lines']
    assert result['warnings'][-1].endswith('so its nodes are on %s, a switch that is not in the fabric, listed under %s'
                                           % (leaf, names.get(SPINE_2, 'spine-2')))


def test_the_joining_switch_takes_the_lowest_free_number():
    """Two leaves cabled to each other, named "fabric" and "fabric2": the switch joining them is "fabric3"."""
    sw = {'b8599f0300000301': 'fabric', 'b8599f0300000302': 'fabric2'}
    links = [('b8599f0300000301', 21, 'b8599f0300000302', 21)]
    cas = [('0c42a10300000301', 'x1 mlx5_0', 'b8599f0300000301', 1), ('0c42a10300000302', 'x2 mlx5_0', 'b8599f0300000302', 1)]
    assert tree_topology(parse_ibnetdiscover(_dump(sw, links, cas)), 'x[1-2]') == {
        'lines': ['SwitchName=fabric Nodes=x1', 'SwitchName=fabric2 Nodes=x2', 'SwitchName=fabric3 Switches=fabric,fabric2'],
        'warnings': ['the leaves do not all meet under common switches (fabric, fabric2 are linked only to each other or through '
                     'switches that carry other hosts); switch fabric3, which is not in the fabric, joins them so that jobs may span them']}


def test_switch_names_one_the_other_with_a_number_are_sorted():
    """"leaf" and "leaf2" (one name the start of the other) sort as names do: the shorter first."""
    sw = {'b8599f0300000301': 'leaf2', 'b8599f0300000302': 'leaf', 'b8599f0300000303': 'spine'}
    links = [('b8599f0300000301', 21, 'b8599f0300000303', 1), ('b8599f0300000302', 21, 'b8599f0300000303', 2)]
    cas = [('0c42a10300000301', 'x1 mlx5_0', 'b8599f0300000301', 1), ('0c42a10300000302', 'x2 mlx5_0', 'b8599f0300000302', 1)]
    assert tree_topology(parse_ibnetdiscover(_dump(sw, links, cas)), 'x[1-2]') == {
        'lines': ['SwitchName=leaf Nodes=x2', 'SwitchName=leaf2 Nodes=x1', 'SwitchName=spine Switches=leaf,leaf2'], 'warnings': []}


def test_chain_of_three_leaves_the_middle_one_is_above():
    sw = {'b8599f0300000301': 'a', 'b8599f0300000302': 'b', 'b8599f0300000303': 'c'}
    links = [('b8599f0300000301', 21, 'b8599f0300000302', 21), ('b8599f0300000302', 22, 'b8599f0300000303', 21)]
    cas = [('0c42a10300000301', 'x1 mlx5_0', 'b8599f0300000301', 1), ('0c42a10300000302', 'x2 mlx5_0', 'b8599f0300000302', 1),
           ('0c42a10300000303', 'x3 mlx5_0', 'b8599f0300000303', 1)]
    result = tree_topology(parse_ibnetdiscover(_dump(sw, links, cas)), 'x[1-3]')
    assert result['lines'] == ['SwitchName=a Nodes=x1', 'SwitchName=b-hosts Nodes=x2', 'SwitchName=c Nodes=x3',
                               'SwitchName=b Switches=a,b-hosts,c']


def test_mixed_hca_naming_each_host_by_its_own_scheme():
    assert tree_topology(parsed('hand_mixed_hca_names.txt'), 'a[01-02],b[01-03]') == {
        'lines': ['SwitchName=leaf-r0 Nodes=a[01-02],b[01-02]', 'SwitchName=leaf-r1 Nodes=b03',
                  'SwitchName=spine-1 Switches=leaf-r[0-1]'],
        'warnings': ['host b03 was placed by its HCA-2, most hosts whose HCAs are named HCA-<n> by their HCA-1: is its '
                     'HCA-1 missing from the fabric (link down)? pass rail_hca to place every host by one HCA']}


def test_mixed_hca_naming_without_a_missing_hca_warns_nothing():
    assert tree_topology(parsed('hand_mixed_hca_names.txt'), 'a[01-02],b[01-02]') == {
        'lines': ['SwitchName=leaf-r0 Nodes=a[01-02],b[01-02]', 'SwitchName=spine-1 Switches=leaf-r0'],
        'warnings': ['fabric host b03 is not a Slurm node (CA H-0c42a10300000216 "b03 HCA-2" on leaf-r1 port 5 and 1 more); '
                     'left out']}


# --- switch names -------------------------------------------------------------------------------------------------------

def _switches(*descs):
    return {'switches': dict(('%016x' % (0x2c5eab0300c26000 + index), {'desc': desc, 'ports': {}})
                             for index, desc in enumerate(descs)), 'hosts': {}}


@pytest.mark.parametrize('descs, names', [
    (['MF0;A10-P1-IBSPINE-03:MQM9701/U1', 'MF0;leaf 1:QM8700/U1'], ['A10-P1-IBSPINE-03', 'leaf_1']),
    (['MF0;core1:CS8500/L01/U1', 'MF0;core1:CS8500/S03/U1'], ['core1_CS8500_L01_U1', 'core1_CS8500_S03_U1']),
    (['Quantum Mellanox Technologies', 'Quantum Mellanox Technologies', 'ISR9024 Voltaire'],
     ['S-2c5eab0300c26000', 'S-2c5eab0300c26001', 'ISR9024_Voltaire']),
    (['Voltaire 4036 # 4036-8C5C', ''], ['Voltaire_4036_4036-8C5C', 'S-2c5eab0300c26001']),
    (['x' * 65, 'y' * 64], ['S-2c5eab0300c26000', 'y' * 64]),
    # a description reading like another switch's GUID name does not take that name
    (['S-2c5eab0300c26001', 'Quantum', 'Quantum'], ['S-2c5eab0300c26000', 'S-2c5eab0300c26001', 'S-2c5eab0300c26002']),
])
def test_switch_names(descs, names):
    assert [name for _guid, name in sorted(switch_names(_switches(*descs)).items())] == names


# --- block_topology -----------------------------------------------------------------------------------------------------

UUID_A = '8e1f2a3b-0000-4c1d-9a7e-000000000a01'
UUID_B = '8E1F2A3B-0000-4C1D-9A7E-000000000B02'


def rack(names, uuid, clique):
    return dict((name, {'cluster_uuid': uuid, 'clique_id': clique}) for name in names)


def gb(first, last):
    return ['gb%02d' % number for number in range(first, last + 1)]


@pytest.mark.parametrize('nodes, sizes, lines, warnings', [
    (dict(rack(gb(19, 36), UUID_B, 0), **rack(gb(1, 18), UUID_A, 0)), None,
     ['BlockName=block1 Nodes=gb[01-18]', 'BlockName=block2 Nodes=gb[19-36]'], []),
    (dict(rack(gb(1, 18), UUID_A, 0), **rack(gb(19, 36), UUID_B, 0)), [18, 36],
     ['BlockName=block1 Nodes=gb[01-18]', 'BlockName=block2 Nodes=gb[19-36]', 'BlockSizes=18,36'], []),
    (dict(rack(gb(1, 18), UUID_A, 0), **rack(gb(19, 36), UUID_B, 0)), '9, 18,36',
     ['BlockName=block1 Nodes=gb[01-18]', 'BlockName=block2 Nodes=gb[19-36]', 'BlockSizes=9,18,36'], []),
    # one NVLink domain split into two cliques: two blocks; the UUID's case does not matter
    (dict(rack(gb(1, 9), UUID_A, 1), **rack(gb(10, 18), UUID_A.upper(), 2)), None,
     ['BlockName=block1 Nodes=gb[01-09]', 'BlockName=block2 Nodes=gb[10-18]'], []),
    (dict(rack(gb(10, 18), UUID_A, 7), **rack(gb(1, 9), UUID_A.upper(), 7)), None,
     ['BlockName=block1 Nodes=gb[01-18]'], []),
    # names follow the natural order of each block's first node
    (dict(rack(['n10', 'n11'], UUID_A, 0), **rack(['n2', 'n3'], UUID_B, 0)), None,
     ['BlockName=block1 Nodes=n[2-3]', 'BlockName=block2 Nodes=n[10-11]'], []),
    (dict(rack(gb(1, 4), UUID_A, 0), gb05=None, gb06={},
          gb07={'cluster_uuid': '00000000-0000-0000-0000-000000000000', 'clique_id': 0}, gb08={'cluster_uuid': '', 'clique_id': 3}),
     [4], ['BlockName=block1 Nodes=gb[01-04]', 'BlockSizes=4'],
     ['nodes without an NVLink fabric domain (no cluster UUID from nvmlDeviceGetGpuFabricInfo): gb[05-08]; '
      'they are in no block']),
    # without BlockSizes a later block may be larger than the first
    (dict(rack(gb(1, 4), UUID_A, 0), **rack(gb(5, 9), UUID_B, 0)), None,
     ['BlockName=block1 Nodes=gb[01-04]', 'BlockName=block2 Nodes=gb[05-09]'], []),
    (rack(gb(1, 4), UUID_A, 0), [2, 4, 8, 65536],
     ['BlockName=block1 Nodes=gb[01-04]', 'BlockSizes=2,4,8,65536'], []),
])
def test_block_topology(nodes, sizes, lines, warnings):
    assert block_topology(nodes, sizes) == {'lines': lines, 'warnings': warnings}


TWO_RACKS = dict(rack(gb(1, 18), UUID_A, 0), **rack(gb(19, 35), UUID_B, 0))


@pytest.mark.parametrize('nodes, sizes, message', [
    ({}, None, r'^nodes must map Slurm node names'),
    ([('gb01', {})], None, r'^nodes must map Slurm node names'),
    ({'gb 01': None}, None, r"^nodes\[0\] is 'gb 01', expected a Slurm node name"),
    ({'gb01': None, 'gb02': {'cluster_uuid': None}}, None, r'^no node has an NVLink fabric domain \(gb\[01-02\]\)'),
    ({'gb01': {'cluster_uuid': UUID_A, 'clique_id': -1}}, None, r"^node gb01: clique_id -1 is not a whole number from 0 to 4294967295"),
    ({'gb01': {'cluster_uuid': UUID_A, 'clique_id': 10 ** 20}}, None, r"^node gb01: clique_id 100000000000000000000 is not a whole number"),
    ({'gb01': {'cluster_uuid': UUID_A, 'clique_id': '3'}}, None, r"^node gb01: clique_id '3'"),
    ({'gb01': {'cluster_uuid': UUID_A, 'clique_id': True}}, None, r'^node gb01: clique_id True'),
    ({'gb01': {'cluster_uuid': UUID_A}}, None, r'^node gb01: clique_id None'),
    ({'gb01': {'cluster_uuid': 7, 'clique_id': 0}}, None, r'^node gb01: cluster_uuid 7 is not a string'),
    ({'gb01': 'NVL72'}, None, r"^node gb01: 'NVL72' is not"),
    (TWO_RACKS, None, r'^block2 \(17 nodes: gb\[19-35\]\) hold fewer nodes than block1 \(18\); without BlockSizes '
                      r'.* base of at most 17'),
    (TWO_RACKS, [18, 36], r'^block2 \(17 nodes: gb\[19-35\]\) hold fewer nodes than the planning base block size 18 '
                          r'of block_sizes; Slurm refuses such blocks: use a base of at most 17'),
    (TWO_RACKS, [18, 27], r'^block_sizes \[18, 27\]: 27 is not the base 18 times a power of two '
                          r'\(valid next sizes: 36, 72, 144, 288\)'),
    (TWO_RACKS, [9, 18, 54], r'54 is not the base 9 times a power of two'),
    (TWO_RACKS, [18, 18], r'^block_sizes \[18, 18\]: 18 does not grow past 18'),
    (TWO_RACKS, [36, 18], r'18 does not grow past 36'),
    (TWO_RACKS, [0], r'^block_sizes: 0 is not a positive number of nodes'),
    (TWO_RACKS, [-18], r'^block_sizes: -18 is not a positive number of nodes'),
    (TWO_RACKS, ['eighteen'], r"^block_sizes: 'eighteen' is not a whole number"),
    (TWO_RACKS, [True], r'^block_sizes: True is not a whole number'),
    (TWO_RACKS, [17.5], r'^block_sizes: 17.5 is not a whole number'),
    (TWO_RACKS, [], r'^block_sizes is empty'),
    (TWO_RACKS, 18, r'^block_sizes must be a list of node counts'),
    (rack(gb(1, 4), UUID_A, 0), [2, 2 * 65536], r'is more than 2\*\*15 times the base 2, which Slurm refuses'),
    (TWO_RACKS, [65536], r"^block_sizes \[65536\]: the base 65536 is more than 65535 nodes, the most Slurm's base block size holds"),
    (TWO_RACKS, [10 ** 20], r'^block_sizes \[100000000000000000000\]: the base 100000000000000000000 is more than 65535 nodes'),
])
def test_block_topology_refuses(nodes, sizes, message):
    with pytest.raises(ValueError, match=message):
        block_topology(nodes, sizes)


def declared(nodes, name):
    """``nodes`` with the node type's declared NVLink domain ``name`` (gpucluster_node_type.nvlink_domain)."""
    return dict((node, dict(info or {}, declared=name)) for node, info in nodes.items())


@pytest.mark.parametrize('nodes, sizes, lines, warnings', [
    # the declared names name the blocks; NVML agrees
    (dict(declared(rack(gb(1, 18), UUID_A, 0), 'rack-a07'), **declared(rack(gb(19, 36), UUID_B, 0), 'rack-a08')), [18, 36],
     ['BlockName=rack-a07 Nodes=gb[01-18]', 'BlockName=rack-a08 Nodes=gb[19-36]', 'BlockSizes=18,36'], []),
    # one rack declared, one not: blockN for the other, numbered past no declared name
    (dict(declared(rack(gb(1, 4), UUID_A, 0), 'block1'), **rack(gb(5, 8), UUID_B, 0)), None,
     ['BlockName=block1 Nodes=gb[01-04]', 'BlockName=block2 Nodes=gb[05-08]'], []),
    (dict(rack(gb(1, 4), UUID_A, 0), **declared(rack(gb(5, 8), UUID_B, 0), 'block1')), None,
     ['BlockName=block2 Nodes=gb[01-04]', 'BlockName=block1 Nodes=gb[05-08]'], []),
    # declared where NVML reports no domain (fabric manager not up): placed by the declaration, said
    (dict(declared(rack(gb(1, 2), UUID_A, 0), 'nvl-1'), **declared({'gb03': None, 'gb04': {'cluster_uuid': None}}, 'nvl-1')), None,
     ['BlockName=nvl-1 Nodes=gb[01-04]'],
     ['nodes whose node type declares an NVLink domain that NVML does not report (fabric state not COMPLETED or no cluster '
      'UUID): gb[03-04]; placed in the declared block']),
    # "" declares nothing
    (declared(rack(gb(1, 4), UUID_A, 0), ''), None, ['BlockName=block1 Nodes=gb[01-04]'], []),
])
def test_block_topology_with_declared_domains(nodes, sizes, lines, warnings):
    assert block_topology(nodes, sizes) == {'lines': lines, 'warnings': warnings}


@pytest.mark.parametrize('nodes, message', [
    # one declared name over two NVML domains
    (declared(dict(rack(gb(1, 9), UUID_A, 0), **rack(gb(10, 18), UUID_B, 0)), 'rack-a07'),
     r"^the declared NVLink domains \(gpucluster_node_type.nvlink_domain\) and the ones NVML reports differ: the nodes "
     r"declaring the NVLink domain rack-a07 are in 2 NVLink domains by NVML: gb\[01-09\]: cluster UUID "
     r"8e1f2a3b-0000-4c1d-9a7e-000000000a01 clique 0; gb\[10-18\]: cluster UUID 8e1f2a3b-0000-4c1d-9a7e-000000000b02 clique 0$"),
    # one NVML domain under two declared names, and under a name and none
    (dict(declared(rack(gb(1, 9), UUID_A, 0), 'rack-a07'), **declared(rack(gb(10, 18), UUID_A, 0), 'rack-a08')),
     r'NVML puts gb\[01-18\] in one NVLink domain \(cluster UUID 8e1f2a3b-0000-4c1d-9a7e-000000000a01 clique 0\), but their '
     r'node types declare "rack-a07" for gb\[01-09\], "rack-a08" for gb\[10-18\]$'),
    (dict(declared(rack(gb(1, 9), UUID_A, 0), 'rack-a07'), **rack(gb(10, 18), UUID_A, 0)),
     r'node types declare none for gb\[10-18\], "rack-a07" for gb\[01-09\]$'),
    (declared(rack(gb(1, 2), UUID_A, 0), 'rack a07'), r"^node gb01: the declared NVLink domain \(gpucluster_node_type.nvlink_domain\) "
                                                      r"is 'rack a07'; expected a block name of letters"),
    (declared(rack(gb(1, 2), UUID_A, 0), 7), r"^node gb01: the declared NVLink domain .* is 7;"),
])
def test_block_topology_refuses_declared_domains_nvml_contradicts(nodes, message):
    with pytest.raises(ValueError, match=message):
        block_topology(nodes)


# --- node_nvlink_domain --------------------------------------------------------------------------------------------------

UUID_A_LOW = UUID_A
UUID_B_LOW = UUID_B.lower()


def gpu_fabric(uuid=UUID_A, clique=0, state=3, status=0):
    """One GPU's _nvml.Client.fabric() answer (state 3: NVML_GPU_FABRIC_STATE_COMPLETED)."""
    return {'state': state, 'status': status, 'cluster_uuid': uuid, 'clique_id': clique}


HGX_H100 = gpu_fabric(None, 0)   # a single-node HGX H100: COMPLETED, zeros


@pytest.mark.parametrize('fabrics, domain, warnings', [
    ([], None, []),                                                              # no GPUs
    ([None] * 4, None, []),                                                      # no fabric info (before Hopper)
    ([HGX_H100] * 8, None, []),                                                  # single-node NVSwitch board
    ([gpu_fabric(state=0, uuid=None)] * 8, None, []),                            # Hopper without NVSwitch (a VM)
    ([gpu_fabric(state=1)] * 4, None, []),                                       # fabric manager stopped
    ([gpu_fabric(state=2)] * 4, None, []),                                       # registering
    ([gpu_fabric('00000000-0000-0000-0000-000000000000', 7)] * 4, None, []),     # zeros as text
    ([gpu_fabric('', 7)] * 4, None, []),
    ([gpu_fabric(UUID_A, 32766)] * 4, {'cluster_uuid': UUID_A_LOW, 'clique_id': 32766}, []),
    ([gpu_fabric(UUID_B, 0)] * 4, {'cluster_uuid': UUID_B_LOW, 'clique_id': 0}, []),   # lowercased; clique 0
    ((gpu_fabric(UUID_B.lower(), 3), gpu_fabric(' %s ' % UUID_B, 3)), {'cluster_uuid': UUID_B_LOW, 'clique_id': 3}, []),
    # the first GPU in a domain decides; a GPU whose probe failed (status) still reports its domain
    ([HGX_H100, gpu_fabric(UUID_A, 1, status=12), gpu_fabric(UUID_A, 1)], {'cluster_uuid': UUID_A_LOW, 'clique_id': 1},
     ['GPU 0 reports no NVLink domain (fabric state not COMPLETED or no cluster UUID) while GPU 1 is in one; '
      'the node is placed in GPU 1\'s (cluster UUID %s clique 1)' % UUID_A_LOW]),
    ([gpu_fabric(UUID_A, 1), gpu_fabric(UUID_A, 2), gpu_fabric(UUID_B, 1), gpu_fabric(UUID_A, 2), None,
      gpu_fabric(UUID_A, 1, state=2)],
     {'cluster_uuid': UUID_A_LOW, 'clique_id': 1},
     ['GPUs of this node report different NVLink domains: GPUs 1, 3: cluster UUID %s clique 2; GPU 2: cluster UUID %s '
      'clique 1; the node is placed in GPU 0\'s (cluster UUID %s clique 1)' % (UUID_A_LOW, UUID_B_LOW, UUID_A_LOW),
      'GPUs 4, 5 report no NVLink domain (fabric state not COMPLETED or no cluster UUID) while GPU 0 is in one; '
      'the node is placed in GPU 0\'s (cluster UUID %s clique 1)' % UUID_A_LOW]),
])
def test_node_nvlink_domain(fabrics, domain, warnings):
    assert node_nvlink_domain(fabrics) == (domain, warnings)


@pytest.mark.parametrize('fabrics, message', [
    (None, r"^fabrics must list the fabric\(\) answers of one node's GPUs \(or None\), got None"),
    ({'state': 3}, r'^fabrics must list'),
    ('GPU 0', r'^fabrics must list'),
    ([HGX_H100, 'COMPLETED'], r"^GPU 1: 'COMPLETED' is not a fabric\(\) answer"),
    ([gpu_fabric(7)], r'^GPU 0: cluster_uuid 7 is not a string'),
    ([gpu_fabric(UUID_A, -1)], r'^GPU 0: clique_id -1 is not a whole number from 0 to 4294967295'),
    ([gpu_fabric(UUID_A, 1 << 32)], r'^GPU 0: clique_id 4294967296 is not a whole number from 0 to 4294967295'),
    ([HGX_H100, gpu_fabric(UUID_A, None)], r'^GPU 1: clique_id None'),
    ([gpu_fabric(UUID_A, True)], r'^GPU 0: clique_id True'),
])
def test_node_nvlink_domain_refuses(fabrics, message):
    with pytest.raises(ValueError, match=message):
        node_nvlink_domain(fabrics)


def test_node_nvlink_domains_are_block_topologys_input():
    """Per node node_nvlink_domain(), then block_topology() over the nodes, warnings of both said."""
    racks = dict(('gb%02d' % n, [gpu_fabric(UUID_A if n <= 2 else UUID_B, 0)] * 4) for n in range(1, 5))
    racks['gb05'] = [HGX_H100] * 4
    racks['gb06'] = [gpu_fabric(UUID_B, 0)] * 3 + [gpu_fabric(UUID_A, 0)]
    domains, warnings = {}, []
    for name in sorted(racks):
        domains[name], said = node_nvlink_domain(racks[name])
        warnings += ['%s: %s' % (name, text) for text in said]
    assert block_topology(domains) == {
        'lines': ['BlockName=block1 Nodes=gb[01-02]', 'BlockName=block2 Nodes=gb[03-04,06]'],
        'warnings': ['nodes without an NVLink fabric domain (no cluster UUID from nvmlDeviceGetGpuFabricInfo): gb05; '
                     'they are in no block']}
    assert warnings == ['gb06: GPUs of this node report different NVLink domains: GPU 3: cluster UUID %s clique 0; the '
                        'node is placed in GPU 0\'s (cluster UUID %s clique 0)' % (UUID_A_LOW, UUID_B_LOW)]


def test_two_cas_naming_only_their_host_are_ambiguous():
    """CAs whose descriptions hold the host name and no device: no rail-0 HCA stands out."""
    cas = [('0c42a10300000301', 'x1', 'b8599f0300000301', 1), ('0c42a10300000302', 'x1', 'b8599f0300000301', 2)]
    with pytest.raises(ValueError) as found:
        tree_topology(parse_ibnetdiscover(_dump({'b8599f0300000301': 'leaf'}, [], cas)), 'x1')
    assert str(found.value) == ('host x1 is ambiguous: 2 CAs fit its rail-0 HCA (H-0c42a10300000301 "x1" on leaf port 1; H-0c42a10300000302 '
                                '"x1" on leaf port 2): two machines with one host name, or node descriptions set wrong; fix them, or tell '
                                'the CAs apart with name_map (CA GUIDs)')


def test_a_name_map_expression_without_a_group():
    with pytest.raises(ValueError) as found:
        tree_topology(parsed(MAN), 'ib1', name_map=r'^\S+ ')
    assert str(found.value) == ('name_map: the regular expression %r has no group; put the Slurm node name in a group, e.g. r"^(\\S+) "'
                                % r'^\S+ ')


ONLY_ERRORS = ('the ibnetdiscover output holds only its error lines (%s), no dump: discovery failed; run it again on a node whose port '
               'is up')
ERROR_LINES = ['"ibwarn: [%d] mad_rpc: failed"' % number for number in range(3)]


@pytest.mark.parametrize('count, shown', [(3, '; '.join(ERROR_LINES)), (4, '; '.join(ERROR_LINES) + ' and 1 more'),
                                          (6, '; '.join(ERROR_LINES) + ' and 3 more')])
def test_only_error_lines_show_the_first_three(count, shown):
    with pytest.raises(ValueError) as found:
        parse_ibnetdiscover(''.join('ibwarn: [%d] mad_rpc: failed\n' % number for number in range(count)))
    assert str(found.value) == ONLY_ERRORS % shown


def test_text_after_the_description_of_a_ca_is_refused():
    line = 'Ca\t1 "H-2c5eab0300c25f90"\t\t# "Mellanox Technologies Aggregation Node"'
    text = fixture(FAT)
    assert line in text
    with pytest.raises(ValueError) as found:
        parse_ibnetdiscover(text.replace(line, line + ' junk', 1))
    assert str(found.value) == 'line 78: unexpected text "junk" after the description of H-2c5eab0300c25f90'
