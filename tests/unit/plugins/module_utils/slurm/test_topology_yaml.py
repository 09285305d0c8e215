# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 46: topology.yaml (Slurm 25.05 and later) from the same topology model as topology.conf."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _topology as topo

TREE = ['SwitchName=leaf1 Nodes=gpu-[01-02]', 'SwitchName=leaf2 Nodes=gpu-03', 'SwitchName=spine Switches=leaf[1-2]']
TREE_YAML = '''---
- topology: "default"
  cluster_default: true
  tree:
    switches:
      - switch: "leaf1"
        nodes: "gpu-[01-02]"
      - switch: "leaf2"
        nodes: "gpu-03"
      - switch: "spine"
        children: "leaf[1-2]"
'''
BLOCK = ['BlockName=block1 Nodes=gb[01-18]', 'BlockName=block2 Nodes=gb[19-36]', 'BlockSizes=18,36']
BLOCK_YAML = '''---
- topology: "default"
  cluster_default: true
  block:
    block_sizes:
      - 18
      - 36
    blocks:
      - block: "block1"
        nodes: "gb[01-18]"
      - block: "block2"
        nodes: "gb[19-36]"
'''


@pytest.mark.parametrize('plugin, lines, expected', [('tree', TREE, TREE_YAML), ('block', BLOCK, BLOCK_YAML)])
def test_rendered_yaml(plugin, lines, expected):
    assert topo.topology_yaml(plugin, lines) == expected


def test_yaml_holds_the_same_topology_as_the_conf_lines():
    """Read back as YAML: what topology.yaml(5) / the 26.05 data_parser expects, the same switches and blocks."""
    tree = yaml.safe_load(topo.topology_yaml('tree', TREE))
    assert tree == [{'topology': 'default', 'cluster_default': True, 'tree': {'switches': [
        {'switch': 'leaf1', 'nodes': 'gpu-[01-02]'}, {'switch': 'leaf2', 'nodes': 'gpu-03'}, {'switch': 'spine', 'children': 'leaf[1-2]'}]}}]
    block = yaml.safe_load(topo.topology_yaml('block', BLOCK[:2], name='nvl72'))
    assert block == [{'topology': 'nvl72', 'cluster_default': True, 'block': {'blocks': [
        {'block': 'block1', 'nodes': 'gb[01-18]'}, {'block': 'block2', 'nodes': 'gb[19-36]'}]}}]


def test_from_the_block_model():
    """block_topology's lines, as the module computes them, go through unchanged."""
    nodes = dict(('gb%02d' % i, {'cluster_uuid': 'c0ffee' if i <= 2 else 'beef', 'clique_id': 1}) for i in range(1, 5))
    lines = topo.block_topology(nodes, [2])['lines']
    assert yaml.safe_load(topo.topology_yaml('block', lines))[0]['block'] == {
        'block_sizes': [2], 'blocks': [{'block': 'block1', 'nodes': 'gb[01-02]'}, {'block': 'block2', 'nodes': 'gb[03-04]'}]}


@pytest.mark.parametrize('plugin, lines, name, message', [
    ('ring', TREE, 'default', "plugin is 'ring', expected 'tree' or 'block'"),
    ('tree', [], 'default', 'lines is [], expected the topology.conf lines of the tree topology'),
    ('tree', BLOCK, 'default', "lines has 'BlockName=block1 Nodes=gb[01-18]', expected SwitchName=<name> Nodes=|Switches= lines"),
    ('block', TREE, 'default', "lines has 'SwitchName=leaf1 Nodes=gpu-[01-02]', expected BlockName=<name> Nodes= lines and one BlockSizes="),
    ('block', ['BlockSizes=18'], 'default', "expected at least one BlockName= line"),
    ('tree', TREE, 'my topo', "name is 'my topo', expected a topology name"),
    ('tree', TREE, '', "name is '', expected a topology name of letters, digits, \".\", \"_\" or \"-\""),
    ('block', BLOCK, None, "name is None, expected a topology name of letters, digits, \".\", \"_\" or \"-\""),
])
def test_bad_input(plugin, lines, name, message):
    with pytest.raises(ValueError) as found:
        topo.topology_yaml(plugin, lines, name)
    assert message in str(found.value)


def test_a_block_sizes_line_is_no_line_of_a_tree():
    with pytest.raises(ValueError) as found:
        topo.topology_yaml('tree', ['BlockSizes=4', 'SwitchName=s Nodes=n1'])
    assert str(found.value) == "lines has 'BlockSizes=4', expected SwitchName=<name> Nodes=|Switches= lines"
