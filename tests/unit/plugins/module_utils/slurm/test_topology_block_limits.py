# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_topology: the largest values topology/block takes (a 16-bit base block size, a 32-bit clique id), both sides."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import (
    block_topology,
    is_clique_id,
    node_nvlink_domain,
    parse_block_sizes,
)

UUID = '8e1f2a3b-0000-4c1d-9a7e-000000000a01'


def test_the_largest_base_block_size():
    assert parse_block_sizes([65535]) == [65535]
    assert parse_block_sizes('65535,131070') == [65535, 131070]
    with pytest.raises(ValueError) as found:
        parse_block_sizes([65536])
    assert str(found.value) == ("block_sizes [65536]: the base 65536 is more than 65535 nodes, the most Slurm's base block size holds "
                                '(a 16-bit count)')


@pytest.mark.parametrize('clique, valid', [(0, True), (0xFFFFFFFF, True), (0x100000000, False), (-1, False), (True, False), (1.0, False)])
def test_clique_ids(clique, valid):
    assert is_clique_id(clique) is valid


def test_the_largest_clique_id_is_a_block():
    assert block_topology({'n1': {'cluster_uuid': UUID, 'clique_id': 0xFFFFFFFF}}) == {'lines': ['BlockName=block1 Nodes=n1'], 'warnings': []}
    with pytest.raises(ValueError) as found:
        block_topology({'n1': {'cluster_uuid': UUID, 'clique_id': 0x100000000}})
    assert str(found.value) == 'node n1: clique_id 4294967296 is not a whole number from 0 to 4294967295 (nvmlGpuFabricInfo cliqueId)'


def test_the_largest_clique_id_of_a_gpu():
    fabric = {'state': 3, 'status': 0, 'cluster_uuid': UUID.upper(), 'clique_id': 0xFFFFFFFF}
    assert node_nvlink_domain([fabric]) == ({'cluster_uuid': UUID, 'clique_id': 0xFFFFFFFF}, [])
    with pytest.raises(ValueError) as found:
        node_nvlink_domain([dict(fabric, clique_id=0x100000000)])
    assert str(found.value) == 'GPU 0: clique_id 4294967296 is not a whole number from 0 to 4294967295 (nvmlGpuFabricInfo cliqueId)'
