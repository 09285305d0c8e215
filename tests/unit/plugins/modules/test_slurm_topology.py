# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_topology: topology.conf written from a real ibnetdiscover dump (tests/unit/fixtures/topology), idempotent, check
mode and diff, bad input refused before anything is written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import slurm_topology
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, run_module

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'topology')
FAT = os.path.join(FIXTURES, 'ndr_fat_tree_rail1.txt')
FAT_NODES = ['b05-p1-dgx-05-c01', 'b05-p1-dgx-05-c02', 'b05-p1-dgx-05-c03', 'b06-p1-dgx-06-c01', 'b06-p1-dgx-06-c02',
             'b06-p1-dgx-06-c03', 'b07-p1-dgx-07-c01', 'b07-p1-dgx-07-c02', 'b07-p1-dgx-07-c03']
FAT_LINES = ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-03]',
             'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
             'SwitchName=B09-P1-IBLEAF-01-07 Nodes=b07-p1-dgx-07-c[01-03]',
             'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-07]',
             'SwitchName=B10-P1-IBSPINE-05 Switches=B09-P1-IBLEAF-01-[05-07]']


def test_tree_from_a_dump_file_is_written_once_then_unchanged(tmp_path):
    dest = tmp_path / 'topology.conf'
    args = {'plugin': 'tree', 'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest)}
    first = run_module(slurm_topology.main, args)
    assert not first.failed and first.result['changed'] is True, first.result
    assert first.result['lines'] == FAT_LINES
    text = dest.read_text()
    assert text.splitlines()[1:] == FAT_LINES and text.startswith('# topology.conf written by gpucluster.bringup.slurm_topology (tree)')
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644
    # the adapter left with its default description is said, not guessed
    assert any('e09d730300858f4c' in w for w in first.result['warnings_found'])
    again = run_module(slurm_topology.main, args)
    assert again.result['changed'] is False


def test_check_mode_shows_the_diff_and_writes_nothing(tmp_path):
    dest = tmp_path / 'topology.conf'
    dest.write_text('SwitchName=old Nodes=x\n')
    with open(FAT) as handle:
        text = handle.read()
    outcome = run_module(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover': text, 'dest': str(dest)}, check_mode=True, diff=True)
    assert outcome.result['changed'] is True
    assert outcome.result['diff']['before'] == 'SwitchName=old Nodes=x\n' and FAT_LINES[0] in outcome.result['diff']['after']
    assert dest.read_text() == 'SwitchName=old Nodes=x\n'


def test_block_topology(tmp_path):
    dest = tmp_path / 'topology.conf'
    fabric = dict(('gb%02d' % i, {'cluster_uuid': '6d1e3f2a-0000-4000-8000-%012d' % (1 if i <= 4 else 2), 'clique_id': 0}) for i in range(1, 9))
    outcome = run_module(slurm_topology.main, {'plugin': 'block', 'nodes': sorted(fabric), 'fabric': fabric, 'block_sizes': [4],
                                               'dest': str(dest)})
    assert not outcome.failed, outcome.result
    assert outcome.result['lines'] == ['BlockName=block1 Nodes=gb[01-04]', 'BlockName=block2 Nodes=gb[05-08]', 'BlockSizes=4']


def test_block_topology_names_the_declared_domains_and_refuses_what_nvml_contradicts(tmp_path):
    dest = tmp_path / 'topology.conf'
    fabric = dict(('gb%02d' % i, {'cluster_uuid': '6d1e3f2a-0000-4000-8000-%012d' % (1 if i <= 4 else 2), 'clique_id': 0,
                                  'declared': 'rack-a07' if i <= 4 else 'rack-a08'}) for i in range(1, 9))
    outcome = run_module(slurm_topology.main, {'plugin': 'block', 'nodes': sorted(fabric), 'fabric': fabric, 'dest': str(dest)})
    assert not outcome.failed, outcome.result
    assert outcome.result['lines'] == ['BlockName=rack-a07 Nodes=gb[01-04]', 'BlockName=rack-a08 Nodes=gb[05-08]']
    written = dest.read_text()
    fabric['gb05']['declared'] = 'rack-a07'
    outcome = run_module(slurm_topology.main, {'plugin': 'block', 'nodes': sorted(fabric), 'fabric': fabric, 'dest': str(dest)})
    assert outcome.failed and 'the nodes declaring the NVLink domain rack-a07 are in 2 NVLink domains by NVML' in outcome.result['msg']
    assert dest.read_text() == written


@pytest.mark.parametrize('args, fragments', [
    ({}, ['give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not neither']),
    ({'ibnetdiscover': 'x', 'ibnetdiscover_path': FAT}, ['not both']),
    ({'ibnetdiscover_path': '/nonexistent/fabric.txt'}, ["ibnetdiscover_path is '/nonexistent/fabric.txt', which does not exist"]),
    ({'ibnetdiscover': 'hello world\n'}, ['ibnetdiscover: line 1: "hello world" is not part of ibnetdiscover\'s topology output']),
    ({'ibnetdiscover_path': FAT, 'nodes': ['gpu-01']}, ['none of the 1 Slurm nodes is in the fabric: gpu-01',
                                                        "the fabric's hosts are b05-p1-dgx-05-c01"]),
    ({'ibnetdiscover_path': FAT, 'name_regex': '(unclosed'}, ["name_regex is '(unclosed', expected a regular expression",
                                                              'it does not compile: missing ), unterminated subpattern']),
    ({'ibnetdiscover_path': FAT, 'name_regex': '(x)', 'name_map': {'a': 'b'}}, ['give one of name_map or name_regex, not both']),
    ({'ibnetdiscover_path': FAT, 'mode': 'rw'}, ["mode is 'rw', expected an octal file mode"]),
    ({'plugin': 'mesh', 'ibnetdiscover_path': FAT}, ['plugin', 'mesh', 'tree, block']),
])
def test_bad_input_writes_nothing(tmp_path, args, fragments):
    dest = tmp_path / 'topology.conf'
    full = dict({'nodes': FAT_NODES, 'dest': str(dest)}, **args)
    bad_input(slurm_topology.main, full, *fragments)
    assert not dest.exists()


def test_absent_removes_only_the_file_the_module_wrote(tmp_path):
    dest = tmp_path / 'topology.conf'
    args = {'plugin': 'tree', 'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest)}
    assert run_module(slurm_topology.main, args).result['changed'] is True
    # check mode: shown, not removed
    checked = run_module(slurm_topology.main, {'state': 'absent', 'dest': str(dest)}, check_mode=True, diff=True)
    assert checked.result['changed'] is True and FAT_LINES[0] in checked.result['diff']['before'] and dest.exists()
    removed = run_module(slurm_topology.main, {'state': 'absent', 'dest': str(dest)})
    assert removed.result['changed'] is True and removed.result['kept'] is False and not dest.exists()
    # nothing left: nothing to do
    assert run_module(slurm_topology.main, {'state': 'absent', 'dest': str(dest)}).result['changed'] is False
    # a site's own topology.conf stays, untouched
    dest.write_text('SwitchName=s1 Nodes=gpu-[01-02]\n')
    kept = run_module(slurm_topology.main, {'state': 'absent', 'dest': str(dest)})
    assert kept.result['changed'] is False and kept.result['kept'] is True
    assert dest.read_text() == 'SwitchName=s1 Nodes=gpu-[01-02]\n'


def test_present_needs_the_nodes(tmp_path):
    dest = tmp_path / 'topology.conf'
    bad_input(slurm_topology.main, {'ibnetdiscover_path': FAT, 'dest': str(dest)}, 'state is present but all of the following are missing: nodes')
    assert not dest.exists()


def test_node_name_map_path_names_switches_and_hosts(tmp_path):
    dest = tmp_path / 'topology.conf'
    outcome = run_module(slurm_topology.main, {'nodes': ['ib1', 'ib2', 'ib3', 'ib4'], 'dest': str(dest),
                                               'ibnetdiscover_path': os.path.join(FIXTURES, 'rdma_core_manpage_two_switches.txt'),
                                               'node_name_map_path': os.path.join(FIXTURES, 'manpage_node_name_map.txt')})
    assert not outcome.failed, outcome.result
    assert outcome.result['lines'] == ['SwitchName=ISR9024_edge Nodes=ib[1-2]', 'SwitchName=sw-6ib4 Nodes=ib[3-4]',
                                       'SwitchName=fabric Switches=ISR9024_edge,sw-6ib4']


def test_leading_stderr_lines_are_a_warning_and_the_dump_is_written(tmp_path):
    dest = tmp_path / 'topology.conf'
    outcome = run_module(slurm_topology.main, {'nodes': FAT_NODES, 'dest': str(dest),
                                               'ibnetdiscover_path': os.path.join(FIXTURES, 'ndr_fat_tree_rail1_stderr_first.txt')})
    assert not outcome.failed and outcome.result['lines'] == FAT_LINES, outcome.result
    assert outcome.result['warnings_found'][0].startswith("lines 1-3 before the dump are ibnetdiscover's standard error")
    assert dest.read_text().splitlines()[1:] == FAT_LINES


def test_spine_with_a_slurm_node_gets_its_own_leaf(tmp_path):
    dest = tmp_path / 'topology.conf'
    outcome = run_module(slurm_topology.main, {'nodes': ['n01', 'n02', 'n03', 'n04', 'n05', 'mgmt01'], 'dest': str(dest),
                                               'ibnetdiscover_path': os.path.join(FIXTURES, 'hand_spine_with_hosts.txt')})
    assert outcome.result['lines'][-3:] == ['SwitchName=spine-2-hosts Nodes=mgmt01', 'SwitchName=spine-1 Switches=leaf-[1-3]',
                                            'SwitchName=spine-2 Switches=leaf-[1-3],spine-2-hosts']
    # Slurm refuses a line with both Nodes= and Switches= ("switch ... has both child switches and nodes")
    assert not any('Nodes=' in line and 'Switches=' in line for line in dest.read_text().splitlines())


def _leftovers(directory):
    return sorted(name for name in os.listdir(str(directory)) if name.startswith('.topology.conf.'))


def test_a_failed_rename_leaves_no_temporary_file(tmp_path, monkeypatch):
    dest = tmp_path / 'topology.conf'
    dest.write_text('SwitchName=old Nodes=x\n')

    def rename(src, dst):
        raise OSError(16, 'Device or resource busy')
    monkeypatch.setattr(slurm_topology.os, 'rename', rename)
    outcome = bad_input(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest)},
                        'cannot write dest %s: Device or resource busy' % dest)
    assert outcome.result['changed'] is False
    assert _leftovers(tmp_path) == [] and dest.read_text() == 'SwitchName=old Nodes=x\n'


def test_the_temporary_file_has_the_final_mode_before_the_rename(tmp_path, monkeypatch):
    dest = tmp_path / 'topology.conf'
    seen = []
    real = os.rename

    def rename(src, dst):
        seen.append(stat.S_IMODE(os.stat(src).st_mode))
        real(src, dst)
    monkeypatch.setattr(slurm_topology.os, 'rename', rename)
    outcome = run_module(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest), 'mode': '0640'})
    assert not outcome.failed and seen == [0o640] and stat.S_IMODE(dest.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize('mode, expected', [('0644', 0o644), ('600', 0o600), (420, 0o644), (0o640, 0o640)])
def test_mode_as_a_string_or_a_yaml_number(tmp_path, mode, expected):
    dest = tmp_path / 'topology.conf'
    outcome = run_module(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest), 'mode': mode})
    assert not outcome.failed and stat.S_IMODE(dest.stat().st_mode) == expected
    # the same content with another mode: changed, only the mode
    dest.chmod(0o600 if expected != 0o600 else 0o644)
    assert run_module(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest), 'mode': mode}).result['changed']
    assert stat.S_IMODE(dest.stat().st_mode) == expected


def test_absent_with_a_file_it_cannot_remove(tmp_path, monkeypatch):
    dest = tmp_path / 'topology.conf'
    assert run_module(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest)}).result['changed']

    def remove(path):
        raise OSError(13, 'Permission denied')
    monkeypatch.setattr(slurm_topology.os, 'remove', remove)
    outcome = bad_input(slurm_topology.main, {'state': 'absent', 'dest': str(dest)}, 'dest %s cannot be removed: Permission denied' % dest)
    assert outcome.result['changed'] is False and dest.exists()


def test_yaml_format_writes_topology_yaml_with_the_same_topology(tmp_path):
    """format=yaml (Slurm 25.05+): topology.yaml holds the tree the conf lines hold; rewritten only on change; removable."""
    import yaml
    dest = tmp_path / 'topology.yaml'
    args = {'plugin': 'tree', 'format': 'yaml', 'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest)}
    first = run_module(slurm_topology.main, args)
    assert not first.failed and first.result['changed'] is True and first.result['lines'] == FAT_LINES, first.result
    text = dest.read_text()
    assert text.startswith('# topology.yaml written by gpucluster.bringup.slurm_topology (tree)')
    loaded = yaml.safe_load(text)
    switches = loaded[0]['tree']['switches']
    assert loaded[0]['topology'] == 'default' and loaded[0]['cluster_default'] is True
    assert ['SwitchName=%s %s=%s' % (s['switch'], 'Nodes' if 'nodes' in s else 'Switches', s.get('nodes', s.get('children')))
            for s in switches] == FAT_LINES
    assert run_module(slurm_topology.main, args).result['changed'] is False
    # the conf form of the same topology is another text: a switch of format is a change
    assert run_module(slurm_topology.main, dict(args, format='conf')).result['changed'] is True
    run_module(slurm_topology.main, args)
    removed = run_module(slurm_topology.main, {'state': 'absent', 'dest': str(dest)})
    assert removed.result['changed'] is True and not dest.exists()


def test_yaml_format_block(tmp_path):
    import yaml
    dest = tmp_path / 'topology.yaml'
    fabric = dict(('gb%02d' % i, {'cluster_uuid': '6d1e3f2a-0000-4000-8000-%012d' % (1 if i <= 4 else 2), 'clique_id': 0}) for i in range(1, 9))
    outcome = run_module(slurm_topology.main, {'plugin': 'block', 'format': 'yaml', 'nodes': sorted(fabric), 'fabric': fabric,
                                               'block_sizes': [4], 'dest': str(dest)})
    assert not outcome.failed, outcome.result
    assert yaml.safe_load(dest.read_text())[0]['block'] == {
        'block_sizes': [4], 'blocks': [{'block': 'block1', 'nodes': 'gb[01-04]'}, {'block': 'block2', 'nodes': 'gb[05-08]'}]}


def test_bad_format_writes_nothing(tmp_path):
    dest = tmp_path / 'topology.yaml'
    bad_input(slurm_topology.main, {'nodes': FAT_NODES, 'ibnetdiscover_path': FAT, 'dest': str(dest), 'format': 'json'},
              'format', 'json', 'conf, yaml')
    assert not dest.exists()
