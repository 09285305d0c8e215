# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_topology: every bad input fails with one message naming the option, the value and what is valid, before
anything is read or written: the test's tree (dest's directory, the input files, hidden temporary files) is the same
after, and no command runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import slurm_topology
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, run_module, snapshot

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'topology')
FAT_NODES = ['b05-p1-dgx-05-c01', 'b05-p1-dgx-05-c02', 'b05-p1-dgx-05-c03', 'b06-p1-dgx-06-c01', 'b06-p1-dgx-06-c02',
             'b06-p1-dgx-06-c03', 'b07-p1-dgx-07-c01', 'b07-p1-dgx-07-c02', 'b07-p1-dgx-07-c03']
SITE_FILE = 'SwitchName=site Nodes=b05-p1-dgx-05-c01\n'
UUID = '6d1e3f2a-0000-4000-8000-000000000001'
BLOCK = {'plugin': 'block', 'nodes': ['gb01', 'gb02'], 'ibnetdiscover_path': None,
         'fabric': {'gb01': {'cluster_uuid': UUID, 'clique_id': 0}, 'gb02': {'cluster_uuid': UUID, 'clique_id': 0}}}
ABSENT = {'state': 'absent', 'ibnetdiscover_path': None}


def _tree(tmp):
    """The host: slurm.conf's directory with a site's topology.conf, a dump, and files that are not what an option wants."""
    os.makedirs(os.path.join(tmp, 'etc', 'slurm'))
    with open(os.path.join(tmp, 'etc', 'slurm', 'topology.conf'), 'w') as handle:
        handle.write(SITE_FILE)
    shutil.copy(os.path.join(FIXTURES, 'ndr_fat_tree_rail1.txt'), os.path.join(tmp, 'fabric.txt'))
    with open(os.path.join(tmp, 'ibnetdiscover'), 'wb') as handle:   # what the program itself looks like
        handle.write(b'\x7fELF\x02\x01\x01\x00' + bytes(bytearray(range(256))))
    with open(os.path.join(tmp, 'latin1.txt'), 'wb') as handle:
        handle.write(u'# Topology file: generated on Mittwoch\n# caf\xe9\n'.encode('latin-1'))
    with open(os.path.join(tmp, 'file-parent'), 'w') as handle:
        handle.write('a file, not a directory\n')
    with open(os.path.join(tmp, 'bad-map'), 'w') as handle:
        handle.write('# site map\n0x2c5eab0300c26040 "leaf-05"\nleaf-06 0x2c5eab0300c26440\n')
    os.mkdir(os.path.join(tmp, 'a-directory'))
    os.mkfifo(os.path.join(tmp, 'fifo'))


def _fill(value, tmp):
    if isinstance(value, str):
        return value.replace('{tmp}', tmp)
    if isinstance(value, list):
        return [_fill(item, tmp) for item in value]
    if isinstance(value, dict):
        return dict((key, _fill(item, tmp)) for key, item in value.items())
    return value


def _args(args, tmp):
    full = {'nodes': FAT_NODES, 'ibnetdiscover_path': '{tmp}/fabric.txt', 'dest': '{tmp}/etc/slurm/topology.conf'}
    full.update(args)
    return dict((key, _fill(value, tmp)) for key, value in full.items() if value is not None)


def _block(**args):
    return dict(BLOCK, **args)


def _absent(**args):
    return dict(ABSENT, **args)


CASES = [
    # dest
    ({'dest': '/proc/topology.conf'}, ["dest is '/proc/topology.conf', which is under /proc, a kernel file system"]),
    ({'dest': '/sys/kernel/topology.conf'}, ["dest is '/sys/kernel/topology.conf', which is under /sys"]),
    ({'dest': '{tmp}/etc/slurm'}, ['dest is ', "/etc/slurm', which is a directory; expected a file path"]),
    ({'dest': '{tmp}/file-parent/topology.conf'}, ['dest is ', 'file-parent/topology.conf', 'is a file, not a directory']),
    ({'dest': '{tmp}/no-such-dir/topology.conf'}, ['dest is ', 'no-such-dir/topology.conf', 'whose directory',
                                                   'does not exist; expected a file in an existing directory']),
    ({'dest': 'topology.conf'}, ["dest is 'topology.conf', expected an absolute file path"]),
    ({'dest': '{tmp}/etc/slurm/'}, ['dest is ', 'expected an absolute file path']),
    ({'dest': ''}, ["dest is '', expected the path of topology.conf"]),
    ({'dest': '{tmp}/fifo'}, ['dest is ', "/fifo', which is not a regular file (a device, FIFO or socket)"]),
    # mode
    ({'mode': 'rw'}, ["mode is 'rw', expected an octal file mode such as '0644'"]),
    ({'mode': '0844'}, ["mode is '0844', expected an octal file mode"]),
    ({'mode': '4755'}, ["mode is '4755', expected an octal file mode", 'at most 0777']),
    ({'mode': 644}, ['mode is 644, expected an octal file mode', "an unquoted YAML number is the mode's decimal value"]),
    ({'mode': -1}, ['mode is -1, expected an octal file mode']),
    ({'mode': True}, ['mode is True, expected an octal file mode']),
    ({'mode': ['0644']}, ["mode is ['0644'], expected an octal file mode"]),
    # ibnetdiscover_path / ibnetdiscover
    ({'ibnetdiscover_path': '{tmp}/missing.txt'}, ['ibnetdiscover_path is ', "missing.txt', which does not exist"]),
    ({'ibnetdiscover_path': '{tmp}/a-directory'}, ['ibnetdiscover_path is ', "a-directory', which is a directory"]),
    ({'ibnetdiscover_path': '{tmp}/ibnetdiscover'}, ['ibnetdiscover_path is ', "/ibnetdiscover', which is a binary file (a program), "
                                                     'not text; expected the output of ibnetdiscover (saved with ibnetdiscover > fabric.txt)']),
    ({'ibnetdiscover_path': '{tmp}/latin1.txt'}, ['ibnetdiscover_path is ', "latin1.txt', which is not UTF-8 text (byte 0xe9 at offset 44)"]),
    ({'ibnetdiscover_path': '{tmp}/fifo'}, ['ibnetdiscover_path is ', "/fifo', which is not a regular file"]),
    ({'ibnetdiscover_path': 'fabric.txt'}, ["ibnetdiscover_path is 'fabric.txt', expected an absolute path"]),
    ({'ibnetdiscover_path': '/proc/self/status'}, ["ibnetdiscover_path is '/proc/self/status', which is under /proc"]),
    ({'ibnetdiscover_path': None}, ['give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not neither']),
    ({'ibnetdiscover': 'x'}, ['give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not both']),
    ({'ibnetdiscover_path': None, 'ibnetdiscover': ''}, ["ibnetdiscover is '', expected a non-empty string"]),
    ({'ibnetdiscover_path': None, 'ibnetdiscover': 'Switch\x00\x00'}, ["ibnetdiscover is 'Switch\\x00\\x00', expected text without a NUL byte"]),
    ({'ibnetdiscover_path': None, 'ibnetdiscover': 'ibwarn: [12] mad_rpc: _do_madrpc failed\n'
                                                   'ibnetdiscover: iberror: failed: discover failed\n'},
     ['ibnetdiscover: the ibnetdiscover output holds only its error lines', 'no dump: discovery failed']),
    ({'ibnetdiscover_path': None, 'ibnetdiscover': open(os.path.join(FIXTURES, 'ndr_fat_tree_rail1.txt')).read().replace(
        '\nvendid=0x2c9\ndevid=0xcf09', '\nPermission denied\nvendid=0x2c9\ndevid=0xcf09', 1)},
     ['ibnetdiscover: line 74: "Permission denied" is not part of ibnetdiscover\'s topology output']),
    # nodes
    ({'nodes': []}, ['nodes is [], expected a list of at least 1 item(s)']),
    ({'nodes': ['']}, ["nodes[0] is '', expected a Slurm node name (not empty"]),
    ({'nodes': ['b05-p1-dgx-05-c01', 'gpu 01']}, ["nodes[1] is 'gpu 01', expected a Slurm node name"]),
    ({'nodes': ['-Hroot@host']}, ["nodes[0] is '-Hroot@host', expected a Slurm node name", 'not starting with "-"']),
    ({'nodes': ['gpu[01-04]']}, ["nodes[0] is 'gpu[01-04]', expected a Slurm node name", 'brackets']),
    ({'nodes': ['gpu#1']}, ["nodes[0] is 'gpu#1', expected a Slurm node name"]),
    ({'nodes': ['gpu-01']}, ['none of the 1 Slurm nodes is in the fabric: gpu-01', "the fabric's hosts are b05-p1-dgx-05-c01"]),
    # name_map, name_regex, rail_hca
    ({'name_map': {'b05-p1-dgx-05-c01': 'bad name'}}, ["name_map['b05-p1-dgx-05-c01'] is 'bad name', expected a Slurm node name"]),
    ({'name_map': {'b05-p1-dgx-05-c01': '-n1'}}, ["name_map['b05-p1-dgx-05-c01'] is '-n1', expected a Slurm node name"]),
    ({'name_map': {'b05-p1-dgx-05-c01': 5}}, ["name_map['b05-p1-dgx-05-c01'] is 5, expected a Slurm node name"]),
    ({'name_map': {' ': 'n1'}}, ["name_map has the key ' ', expected HCA GUIDs, node descriptions or host names"]),
    ({'name_regex': '(unclosed'}, ["name_regex is '(unclosed', expected a regular expression", 'it does not compile']),
    ({'name_regex': '^\\S+ '}, ["name_regex is '^\\\\S+ ', expected a regular expression with a group", '(it has no group)']),
    ({'name_regex': ''}, ["name_regex is '', expected a non-empty string"]),
    ({'name_regex': '(x)', 'name_map': {'a': 'b'}}, ['give one of name_map or name_regex, not both']),
    ({'rail_hca': ''}, ["rail_hca is '', expected the device name of the rail-0 HCA"]),
    ({'rail_hca': 'mlx5 0'}, ["rail_hca is 'mlx5 0', expected the device name of the rail-0 HCA", 'one word such as mlx5_0 or HCA-1']),
    ({'rail_hca': '-mlx5_0'}, ["rail_hca is '-mlx5_0', expected the device name"]),
    # node_name_map
    ({'node_name_map': '0x12 "a"\n', 'node_name_map_path': '{tmp}/bad-map'},
     ['give one of node_name_map (the text) or node_name_map_path (a file), not both']),
    ({'node_name_map': 'garbage\n'}, ['node_name_map line 1: "garbage" does not start with a node GUID in hex',
                                      'expected <GUID> "<name>"']),
    ({'node_name_map': ''}, ["node_name_map is '', expected a non-empty string"]),
    ({'node_name_map': '0x12 "a"\n0x12 "b"\n'}, ['node_name_map line 2: GUID 0x0000000000000012 is named "b", but line 1 named it "a"']),
    ({'node_name_map_path': '{tmp}/bad-map'}, ['node_name_map_path ', '/bad-map line 3: "leaf-06 0x2c5eab0300c26440" does not start '
                                               'with a node GUID in hex']),
    ({'node_name_map_path': '{tmp}/no-map'}, ['node_name_map_path is ', "/no-map', which does not exist"]),
    ({'node_name_map_path': '{tmp}/ibnetdiscover'}, ['node_name_map_path is ', 'which is a binary file (a program), not text; '
                                                     'expected a node name map']),
    # plugin and state
    ({'plugin': 'mesh'}, ['plugin', 'mesh', 'tree, block']),
    ({'state': 'gone'}, ['state', 'gone', 'present, absent']),
    ({'fabric': {'gb01': None}}, ["fabric is {'gb01': None}, expected nothing with plugin=tree (it is an option of plugin=block)"]),
    ({'block_sizes': [18]}, ['block_sizes is [18], expected nothing with plugin=tree']),
    (_block(ibnetdiscover_path='{tmp}/fabric.txt'), ['ibnetdiscover_path is ', 'expected nothing with plugin=block (it is an option of '
                                                     'plugin=tree)']),
    (_block(rail_hca='mlx5_0'), ["rail_hca is 'mlx5_0', expected nothing with plugin=block"]),
    (_block(name_map={'a': 'b'}), ["name_map is {'a': 'b'}, expected nothing with plugin=block"]),
    (_absent(ibnetdiscover_path='{tmp}/fabric.txt'), ['ibnetdiscover_path is ', 'expected nothing with state=absent']),
    (_absent(block_sizes=[18]), ['block_sizes is [18], expected nothing with state=absent']),
    (_absent(dest='{tmp}/etc/slurm'), ['dest is ', "/etc/slurm', which is a directory"]),
    (_absent(dest='/proc/topology.conf'), ["dest is '/proc/topology.conf', which is under /proc"]),
    (_absent(dest='{tmp}/file-parent/topology.conf'), ['dest is ', 'is a file, not a directory']),
    (_absent(nodes=['gpu 01']), ["nodes[0] is 'gpu 01', expected a Slurm node name"]),
    # block
    (_block(block_sizes=[0]), ['block_sizes: 0 is not a positive number of nodes']),
    (_block(block_sizes=[-5]), ['block_sizes: -5 is not a positive number of nodes']),
    (_block(block_sizes=[2, 3]), ['block_sizes [2, 3]: 3 is not the base 2 times a power of two']),
    (_block(block_sizes=[10 ** 20]), ['block_sizes [100000000000000000000]: the base 100000000000000000000 is more than 65535 nodes']),
    (_block(block_sizes=[4]), ['block1 (2 nodes: gb[01-02]) hold fewer nodes than the planning base block size 4 of block_sizes']),
    (_block(fabric={'gb 01': None}), ["fabric has the key 'gb 01', expected Slurm node names as keys"]),
    (_block(fabric={'gb01': 'NVL72'}), ["fabric['gb01'] is 'NVL72', expected a dict"]),
    (_block(fabric={'gb01': {'cluster_uuid': UUID, 'clique_id': -1}}),
     ["fabric['gb01'].clique_id is -1, expected a whole number from 0 to 4294967295"]),
    (_block(fabric={'gb01': {'cluster_uuid': UUID, 'clique_id': 1 << 40}}), ["fabric['gb01'].clique_id is 1099511627776, expected a whole number"]),
    (_block(fabric={'gb01': {'cluster_uuid': 7, 'clique_id': 0}}), ["fabric['gb01'].cluster_uuid is 7, expected the cluster UUID as a string"]),
    (_block(fabric={}), ['no node has an NVLink fabric domain (gb[01-02])']),
    (_block(nodes=['gb01', '-gb02']), ["nodes[1] is '-gb02', expected a Slurm node name"]),
]


@pytest.fixture
def host(tmp_path, monkeypatch):
    """The test's tree, and run_command refused: the module runs no command."""
    calls = forbid_commands(monkeypatch)
    tmp = str(tmp_path)
    _tree(tmp)
    return tmp, calls


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check'])
@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(host, args, fragments, check_mode):
    tmp, calls = host
    before = snapshot(tmp)
    outcome = bad_input(slurm_topology.main, _args(args, tmp), *[_fill(f, tmp) for f in fragments], check_mode=check_mode)
    assert not outcome.result.get('changed'), outcome.result
    assert snapshot(tmp) == before, 'slurm_topology changed the host on bad input'
    assert calls == []


def test_the_valid_tree_of_the_cases_passes(host):
    """The cases differ from a valid call in one option: that call writes the file (so each case's failure is its own)."""
    tmp, calls = host
    outcome = run_module(slurm_topology.main, _args({}, tmp))
    assert not outcome.failed and outcome.result['changed'], outcome.result
    block = run_module(slurm_topology.main, _args(_block(dest='{tmp}/block.conf'), tmp))
    assert not block.failed and block.result['lines'] == ['BlockName=block1 Nodes=gb[01-02]'], block.result
    gone = run_module(slurm_topology.main, _args(_absent(nodes=[], name_map={}, fabric={}, mode='0644'), tmp))
    assert not gone.failed and gone.result['changed'], gone.result
    assert calls == []


@pytest.mark.skipif(os.geteuid() == 0, reason='root may write and read anything')
@pytest.mark.parametrize('args, fragments', [
    ({'dest': '{tmp}/ro/topology.conf'}, ['dest is ', 'but this user may not create files in', '/ro; expected a writable location']),
    ({'ibnetdiscover_path': '{tmp}/secret.txt'}, ['ibnetdiscover_path is ', "secret.txt', which this user may not read"]),
])
def test_bad_input_permissions(host, args, fragments):
    tmp, calls = host
    os.mkdir(os.path.join(tmp, 'ro'), 0o555)
    shutil.copy(os.path.join(tmp, 'fabric.txt'), os.path.join(tmp, 'secret.txt'))
    os.chmod(os.path.join(tmp, 'secret.txt'), 0)
    before = snapshot(tmp)
    bad_input(slurm_topology.main, _args(args, tmp), *[_fill(f, tmp) for f in fragments])
    assert snapshot(tmp) == before
