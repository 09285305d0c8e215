# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_topology_input_io.plan: the options of slurm_topology (the text or the files they name) -> the exact file it writes,
its lines and warnings; read_text's refusals of a file that is not UTF-8 text."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _topology_input_io as tio

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'topology')
RAIL_NODES = ['b05-p1-dgx-05-c01', 'b05-p1-dgx-05-c02', 'b06-p1-dgx-06-c01', 'b06-p1-dgx-06-c02', 'b06-p1-dgx-06-c03']
MAN = 'rdma_core_manpage_two_switches.txt'
TREE_HEADER = '# topology.conf written by gpucluster.bringup.slurm_topology (tree): do not edit, it is rewritten\n'


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def tree(**more):
    params = {'plugin': 'tree', 'nodes': RAIL_NODES, 'ibnetdiscover': None, 'ibnetdiscover_path': None, 'node_name_map': None,
              'node_name_map_path': None, 'name_map': None, 'name_regex': None, 'rail_hca': None, 'format': 'conf'}
    params.update(more)
    return params


def _rail_lines(rail):
    leaves = 'B09-P1-IBLEAF-%02d-[05-06]' % rail
    return ['SwitchName=B09-P1-IBLEAF-%02d-05 Nodes=b05-p1-dgx-05-c[01-02]' % rail,
            'SwitchName=B09-P1-IBLEAF-%02d-06 Nodes=b06-p1-dgx-06-c[01-03]' % rail,
            'SwitchName=A10-P1-IBSPINE-03 Switches=' + leaves, 'SwitchName=B10-P1-IBSPINE-05 Switches=' + leaves]


@pytest.mark.parametrize('rail_hca, lines', [(None, _rail_lines(1)), ('HCA-2', _rail_lines(2))])
def test_the_rail_hca_places_the_hosts(rail_hca, lines):
    text, got, warnings = tio.plan(tree(ibnetdiscover=fixture('ndr_multi_rail.txt'), rail_hca=rail_hca))
    assert (text, got) == (TREE_HEADER + ''.join(line + '\n' for line in lines), lines)
    # the four CAs with the adapter's default description, on the rails' leaves
    assert len(warnings) == 4 and all('so its host is unknown' in warning for warning in warnings), warnings


MAN_MAP_LINES = ['SwitchName=ISR9024_Voltaire Nodes=ib[1-2]', 'SwitchName=SW-6IB4_Voltaire Nodes=ib[3-4]',
                 'SwitchName=fabric Switches=ISR9024_Voltaire,SW-6IB4_Voltaire']
MAN_NAMED_LINES = ['SwitchName=ISR9024_edge Nodes=ib[1-2]', 'SwitchName=sw-6ib4 Nodes=ib[3-4]', 'SwitchName=fabric Switches=ISR9024_edge,sw-6ib4']


@pytest.mark.parametrize('more, lines', [
    ({'name_map': {'0008f10403961354': 'ib1', '0008f10403960558': 'ib2', '0008f10403960984': 'ib3', '005442b100004900': 'ib4'}},
     MAN_MAP_LINES),
    ({'node_name_map': fixture('manpage_node_name_map.txt')}, MAN_NAMED_LINES),
])
def test_the_host_names_from_name_map_or_node_name_map(more, lines):
    text, got, _warnings = tio.plan(tree(ibnetdiscover=fixture(MAN), nodes='ib[1-4]', **more))
    assert (text, got) == (TREE_HEADER + ''.join(line + '\n' for line in lines), lines)


def test_the_host_names_from_name_regex():
    text, got, _warnings = tio.plan(tree(ibnetdiscover=fixture('ndr_multi_rail.txt'), name_regex=r'^b0\d-p1-(?P<name>dgx-\d+-c\d+) ',
                                         nodes='dgx-05-c[01-02],dgx-06-c[01-03]'))
    assert got == ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=dgx-05-c[01-02]', 'SwitchName=B09-P1-IBLEAF-01-06 Nodes=dgx-06-c[01-03]',
                   'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-06]',
                   'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-06]']


def test_the_files_are_read(tmp_path):
    dump, names = tmp_path / 'fabric.txt', tmp_path / 'names.map'
    dump.write_text(fixture(MAN))
    names.write_text(fixture('manpage_node_name_map.txt'))
    text, lines, _warnings = tio.plan(tree(ibnetdiscover_path=str(dump), node_name_map_path=str(names), nodes='ib[1-4]', format='yaml'))
    assert lines == MAN_NAMED_LINES
    assert text.startswith('# topology.yaml written by gpucluster.bringup.slurm_topology (tree): do not edit, it is rewritten\n---\n- topology: "default"\n')
    names.write_text('0x0008f10400410015 "edge"\nnot a line\n')
    with pytest.raises(ValueError) as found:
        tio.plan(tree(ibnetdiscover_path=str(dump), node_name_map_path=str(names), nodes='ib[1-4]'))
    assert str(found.value).startswith('node_name_map_path %s line 2' % names), str(found.value)


@pytest.mark.parametrize('where', ['text', 'file'])
def test_a_dump_that_is_none_names_where_it_came_from(tmp_path, where):
    dump = tmp_path / 'fabric.txt'
    dump.write_text('no dump here\n')
    params = tree(ibnetdiscover='no dump here\n') if where == 'text' else tree(ibnetdiscover_path=str(dump))
    with pytest.raises(ValueError) as found:
        tio.plan(params)
    assert str(found.value).startswith('ibnetdiscover: ' if where == 'text' else 'ibnetdiscover_path %s: ' % dump), str(found.value)


def test_block_plan():
    uuid = '6d1e3f2a-0000-4000-8000-000000000001'
    params = {'plugin': 'block', 'nodes': ['gb01', 'gb02'], 'block_sizes': None, 'format': None,
              'fabric': {'gb01': {'cluster_uuid': uuid, 'clique_id': 0}, 'gb02': {'cluster_uuid': uuid, 'clique_id': 0},
                         'other': {'cluster_uuid': uuid, 'clique_id': 1}}}
    assert tio.plan(params) == (
        '# topology.conf written by gpucluster.bringup.slurm_topology (block): do not edit, it is rewritten\n'
        'BlockName=block1 Nodes=gb[01-02]\n', ['BlockName=block1 Nodes=gb[01-02]'], [])


@pytest.mark.parametrize('data, message', [
    (b'\x7fELF\x02\x01', 'is a binary file (a program), not text; expected the dump'),
    (b'text\x00more', 'is a binary file, not text; expected the dump'),
    (b'# caf\xe9\n', 'is not UTF-8 text (byte 0xe9 at offset 5); expected the dump'),
])
def test_read_text_refuses_what_is_not_text(tmp_path, data, message):
    path = tmp_path / 'in.txt'
    path.write_bytes(data)
    with pytest.raises(InputError) as found:
        tio.read_text('ibnetdiscover_path', str(path), 'the dump')
    assert str(found.value) == "ibnetdiscover_path is '%s', which %s" % (path, message)


def test_read_text_gives_the_text(tmp_path):
    path = tmp_path / 'in.txt'
    path.write_bytes(u'# caf\xe9\n'.encode('utf-8'))
    assert tio.read_text('x', str(path), 'y') == u'# caf\xe9\n'


def _host(tmp_path):
    (tmp_path / 'dir').mkdir()
    (tmp_path / 'file').write_text('x\n')
    os.symlink(str(tmp_path / 'gone'), str(tmp_path / 'dangling'))
    with open(str(tmp_path / 'huge'), 'wb') as handle:
        handle.truncate(tio.MAX_INPUT + 1)   # sparse: no disk
    with open(str(tmp_path / 'largest'), 'wb') as handle:
        handle.truncate(tio.MAX_INPUT)
    return str(tmp_path)


@pytest.mark.parametrize('path, message', [
    ('', "p is '', expected the absolute path of a file on the host"),
    ('rel', "p is 'rel', expected an absolute path (a file on the host)"),
    ('/sys/kernel/x', "p is '/sys/kernel/x', which is under /sys, a kernel file system; expected a file holding the text"),
    ('/proc', "p is '/proc', which is under /proc, a kernel file system; expected a file holding the text"),
    ('{tmp}/none', "p is '{tmp}/none', which does not exist; expected a readable file"),
    ('{tmp}/dangling', "p is '{tmp}/dangling', which cannot be read (No such file or directory); expected a readable file"),
    ('{tmp}/dir', "p is '{tmp}/dir', which is a directory; expected a file"),
    ('/dev/null', "p is '/dev/null', which is not a regular file (a device, FIFO or socket); expected a file"),
    ('{tmp}/huge', "p is '{tmp}/huge', which holds 268435457 bytes; expected a file of at most 256 MiB"),
    ('{tmp}/largest', None),
    ('{tmp}/file', None),
])
def test_check_input_file(tmp_path, path, message):
    tmp = _host(tmp_path)
    if message is None:
        assert tio.check_input_file('p', path.replace('{tmp}', tmp)) is None
        return
    with pytest.raises(InputError) as found:
        tio.check_input_file('p', path.replace('{tmp}', tmp))
    assert str(found.value) == message.replace('{tmp}', tmp)


@pytest.mark.parametrize('dest, state, message', [
    (' ', 'present', "dest is ' ', expected the path of topology.conf (e.g. /etc/slurm/topology.conf)"),
    ('topology.conf', 'absent', "dest is 'topology.conf', expected an absolute file path (e.g. /etc/slurm/topology.conf)"),
    ('{tmp}/dir/', 'absent', "dest is '{tmp}/dir/', expected an absolute file path (e.g. /etc/slurm/topology.conf)"),
    ('{tmp}/none/topology.conf', 'present',
     "dest is '{tmp}/none/topology.conf', whose directory {tmp}/none does not exist; expected a file in an existing directory (slurm.conf's)"),
    ('/proc/topology.conf', 'absent',
     "dest is '/proc/topology.conf', which is under /proc, a kernel file system that cannot hold files; expected a path on a real file system"),
    ('/sys', 'absent', "dest is '/sys', which is under /sys, a kernel file system that cannot hold files; expected a path on a real file system"),
    ('{tmp}/dir', 'absent', "dest is '{tmp}/dir', which is a directory; expected a file path"),
    ('{tmp}/file/topology.conf', 'absent',
     "dest is '{tmp}/file/topology.conf', but {tmp}/file is a file, not a directory; expected a path whose parents are directories"),
    ('/dev/null', 'absent', "dest is '/dev/null', which is not a regular file (a device, FIFO or socket); expected topology.conf"),
    ('{tmp}/none/topology.conf', 'absent', None),
    ('{tmp}/file', 'present', None),
])
def test_check_dest(tmp_path, dest, state, message):
    tmp = _host(tmp_path)
    if message is None:
        assert tio.check_dest(dest.replace('{tmp}', tmp), state) is None
        return
    with pytest.raises(InputError) as found:
        tio.check_dest(dest.replace('{tmp}', tmp), state)
    assert str(found.value) == message.replace('{tmp}', tmp)


MODE = "mode is %s, expected an octal file mode such as '0644' (quoted; at most 0777)"


@pytest.mark.parametrize('mode, expected', [
    (0, 0), (0o777, 0o777), ('644', 0o644), (' 0600 ', 0o600),
    (0o1000, MODE % 512 + "; an unquoted YAML number is the mode's decimal value"),
    (-1, MODE % -1 + "; an unquoted YAML number is the mode's decimal value"),
    (True, MODE % 'True'), ('0778', MODE % "'0778'"), ('00644', MODE % "'00644'"), (6.0, MODE % '6.0'),
])
def test_check_mode(mode, expected):
    if isinstance(expected, int):
        assert tio.check_mode(mode) == expected
        return
    with pytest.raises(InputError) as found:
        tio.check_mode(mode)
    assert str(found.value) == expected


NODE_RULE = 'a Slurm node name (not empty, no blanks, commas, brackets, "#" or "=", not starting with "-")'
REGEX = 'expected a regular expression with a group (named "name", or the first) for the Slurm node name'
ABSENT = 'expected nothing with state=absent (it only removes the topology.conf this module wrote)'


def options(tmp, **changes):
    params = dict(state='present', plugin='tree', dest=tmp + '/topology.conf', mode='0644', nodes=['n1'], ibnetdiscover='x',
                  ibnetdiscover_path=None, node_name_map=None, node_name_map_path=None, name_map=None, name_regex=None, rail_hca=None,
                  fabric=None, block_sizes=None)
    if changes.get('plugin') == 'block':
        params.update(ibnetdiscover=None, fabric={'n1': None})
    params.update(changes)
    return params


@pytest.mark.parametrize('changes, message', [
    # tree
    ({'name_regex': '('}, "name_regex is '(', %s (it does not compile: missing ), unterminated subpattern at position 0)" % REGEX),
    ({'name_regex': 'abc'}, "name_regex is 'abc', %s (it has no group)" % REGEX),
    ({'name_regex': 'x', 'name_map': {'a': 'b'}}, 'give one of name_map or name_regex, not both'),
    ({'name_regex': '(x)', 'name_map': {}}, None),
    ({'name_map': {'': 'n'}}, "name_map has the key '', expected HCA GUIDs, node descriptions or host names as keys"),
    ({'name_map': {'a': 'b c'}}, "name_map['a'] is 'b c', expected " + NODE_RULE),
    ({'node_name_map': '', 'node_name_map_path': '/x'}, 'give one of node_name_map (the text) or node_name_map_path (a file), not both'),
    ({'node_name_map': 5}, 'node_name_map is 5, expected a non-empty string'),
    ({'node_name_map_path': 'rel'}, "node_name_map_path is 'rel', expected an absolute path (a file on the host)"),
    ({'ibnetdiscover': None}, 'give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not neither'),
    ({'ibnetdiscover_path': '/x'}, 'give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not both'),
    ({'ibnetdiscover': 5}, 'ibnetdiscover is 5, expected a non-empty string'),
    ({'ibnetdiscover': None, 'ibnetdiscover_path': '/sys/x'},
     "ibnetdiscover_path is '/sys/x', which is under /sys, a kernel file system; expected a file holding the text"),
    ({'rail_hca': 'mlx5 0'}, "rail_hca is 'mlx5 0', expected the device name of the rail-0 HCA as the node descriptions show it, one word "
                             'such as mlx5_0 or HCA-1'),
    ({'rail_hca': 'mlx5_0', 'block_sizes': []}, None),
    ({'fabric': {'a': None}}, "fabric is {'a': None}, expected nothing with plugin=tree (it is an option of plugin=block)"),
    ({'nodes': ['n1', '-x']}, "nodes[1] is '-x', expected " + NODE_RULE),
    ({'nodes': []}, 'nodes is [], expected a list of at least 1 item(s)'),
    ({'mode': 2000}, "mode is 2000, expected an octal file mode such as '0644' (quoted; at most 0777); an unquoted YAML number is the "
                     "mode's decimal value"),
    ({'dest': '/nonexistent-dir/topology.conf'},
     "dest is '/nonexistent-dir/topology.conf', whose directory /nonexistent-dir does not exist; expected a file in an existing directory "
     "(slurm.conf's)"),
    # block
    ({'plugin': 'block', 'block_sizes': 'x'}, "block_sizes: 'x' is not a whole number of nodes"),
    ({'plugin': 'block', 'block_sizes': [0]}, 'block_sizes: 0 is not a positive number of nodes'),
    ({'plugin': 'block', 'block_sizes': [4]}, None),
    ({'plugin': 'block', 'fabric': {'bad name': None}}, "fabric has the key 'bad name', expected Slurm node names as keys (%s)" % NODE_RULE),
    ({'plugin': 'block', 'fabric': {'n1': 5}}, "fabric['n1'] is 5, expected a dict"),
    ({'plugin': 'block', 'fabric': {'n1': {'cluster_uuid': 5}}},
     "fabric['n1'].cluster_uuid is 5, expected the cluster UUID as a string (or null: no domain)"),
    ({'plugin': 'block', 'fabric': {'n1': {'cluster_uuid': 'u', 'clique_id': -1}}},
     "fabric['n1'].clique_id is -1, expected a whole number from 0 to 4294967295 (nvmlGpuFabricInfo cliqueId)"),
    ({'plugin': 'block', 'fabric': {'n1': {'cluster_uuid': ' ', 'clique_id': -1}}}, None),
    ({'plugin': 'block', 'fabric': {'n1': {'cluster_uuid': 'u', 'clique_id': 4294967295}}}, None),
    ({'plugin': 'block', 'rail_hca': 'x'}, "rail_hca is 'x', expected nothing with plugin=block (it is an option of plugin=tree)"),
    ({'plugin': 'block', 'name_map': {}}, None),
    # absent
    ({'state': 'absent', 'ibnetdiscover': None, 'nodes': []}, None),
    ({'state': 'absent', 'ibnetdiscover': None, 'nodes': ['a b']}, "nodes[0] is 'a b', expected " + NODE_RULE),
    ({'state': 'absent'}, "ibnetdiscover is 'x', " + ABSENT),
    ({'state': 'absent', 'ibnetdiscover': None, 'block_sizes': [4]}, 'block_sizes is [4], ' + ABSENT),
])
def test_check_options(tmp_path, changes, message):
    params = options(str(tmp_path), **changes)
    if message is None:
        assert tio.check_options(params) == 0o644
        return
    with pytest.raises(InputError) as found:
        tio.check_options(params)
    assert str(found.value) == message


def test_an_input_file_this_user_may_not_read(tmp_path, monkeypatch):
    path = tmp_path / 'fabric.txt'
    path.write_text('x\n')
    # as a user with every permission but read (the tests run as root too)
    monkeypatch.setattr(tio.os, 'access', lambda name, how: name == str(path) and how != os.R_OK)
    with pytest.raises(InputError) as found:
        tio.check_input_file('ibnetdiscover_path', str(path))
    assert str(found.value) == "ibnetdiscover_path is '%s', which this user may not read; expected a readable file" % path


def test_read_text_of_a_file_that_cannot_be_opened_says_why(tmp_path):
    with pytest.raises(InputError) as found:
        tio.read_text('ibnetdiscover_path', str(tmp_path), 'the dump')
    assert str(found.value) == "ibnetdiscover_path is '%s', which cannot be read (Is a directory); expected a readable file" % tmp_path


def test_a_node_name_map_file_that_is_not_text(tmp_path):
    dump, names = tmp_path / 'fabric.txt', tmp_path / 'names.map'
    dump.write_text(fixture(MAN))
    names.write_bytes(b'0x0008f10400410015 "edge"\x00\n')
    with pytest.raises(InputError) as found:
        tio.plan(tree(ibnetdiscover_path=str(dump), node_name_map_path=str(names), nodes='ib[1-4]'))
    assert str(found.value) == ("node_name_map_path is '%s', which is a binary file, not text; expected a node name map "
                                '(lines <GUID> "<name>")' % names)


def test_a_dump_file_that_is_not_text(tmp_path):
    dump = tmp_path / 'fabric.txt'
    dump.write_bytes(b'\x7fELF')
    with pytest.raises(InputError) as found:
        tio.plan(tree(ibnetdiscover_path=str(dump)))
    assert str(found.value) == ("ibnetdiscover_path is '%s', which is a binary file (a program), not text; expected the output of "
                                'ibnetdiscover (saved with ibnetdiscover > fabric.txt)' % dump)
