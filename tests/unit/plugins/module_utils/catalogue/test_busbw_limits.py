# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Edges of the busbw gate curves (catalogue/_busbw.py): both sides of each limit of curve selection, every default, and
the whole messages of bad input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _busbw as bb

MIB = 1024 ** 2
GIB = 1024 ** 3
PLATFORM_LIST = ('a100-nvswitch, a100-pcie, b200-nvswitch, b300-nvswitch, gb200-nvl72, gb300-nvl72, h100-nvswitch, h100-pcie, h200-nvl, '
                 'h200-nvswitch, l40s-pcie, rtx-pro-6000-pcie')


def summary(curve):
    return None if curve is None else (curve['id'], curve['reported'], curve['floor'], curve['scale'], curve['points'][-1])


def test_the_constants():
    assert (bb.BUSBW_FRACTION, bb.GATE_HALF_BYTES, bb.RACK_HALF_BYTES, bb.GATE_REFERENCE_BYTES, bb.GATE_CURVE_NODES) == (
        0.8, 64 * MIB, 256 * MIB, 8 * GIB, 2)
    assert bb.GATE_SIZES == (64 * MIB, 128 * MIB, 256 * MIB, 512 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB)
    assert bb.nic_key('ndr-400') == 'ib-ndr-400'


@pytest.mark.parametrize('size, half, share', [
    (8 * GIB, None, 1.0),
    (64 * MIB, None, (0.5) / (8192.0 / 8256.0)),
    (256 * MIB, None, (256.0 / 320.0) / (8192.0 / 8256.0)),
    (256 * MIB, 256 * MIB, 0.5 / (8192.0 / 8448.0)),
])
def test_size_share(size, half, share):
    got = bb.size_share(size) if half is None else bb.size_share(size, half)
    assert got == pytest.approx(share, rel=1e-12)


@pytest.mark.parametrize('args, want', [
    # the published two-node figure gates two nodes only; three nodes with NCCL's own algorithm: the Ring floor, stretched
    (('h100-nvswitch', 8, 2, 8, 'ndr-400', 'nvls'), ('h100-nvswitch/2-node/ib-ndr-400x8/nvls', 440.0, 352.0, 1.0, (8 * GIB, 352.0))),
    (('h100-nvswitch', 8, 3, 8, 'ndr-400', 'nvls'), ('h100-nvswitch/ib-ndr-400x8/ring', 370.0, 296.0, 1.5, (12 * GIB, 296.0))),
    (('h100-nvswitch', 8, 3, 4, 'ndr-400', 'ring'), ('h100-nvswitch/ib-ndr-400x4/ring', 188.0, 150.4, 1.5, (12 * GIB, 150.4))),
    # no platform: no published two-node figure, whatever the algorithm
    ((None, None, 2, 8, 'ndr-400', 'nvls'), ('ib-ndr-400x8/ring', 376.0, 300.8, 1.0, (8 * GIB, 300.8))),
    # a node size the platform has no figure for: no cap by the node's own figure
    (('h100-nvswitch', 4, 2, 8, 'ndr-400', 'ring'), ('h100-nvswitch/ib-ndr-400x8/ring', 376.0, 300.8, 1.0, (8 * GIB, 300.8))),
    # no GPU count given: the node's figure caps
    (('h100-nvswitch', None, 2, 8, 'ndr-400', 'ring'), ('h100-nvswitch/ib-ndr-400x8/ring', 370.0, 296.0, 1.0, (8 * GIB, 296.0))),
    # NVL72 trays without a NIC: up to the domain's 18 trays, with the tray's GPU count or none given
    (('gb200-nvl72', None, 18, None, None, 'auto'), ('gb200-nvl72/rack/nvls', 835.0, 668.0, 1.0, (8 * GIB, 668.0))),
    (('gb200-nvl72', 4, 2, None, None, 'nvls'), ('gb200-nvl72/rack/nvls', 835.0, 668.0, 1.0, (8 * GIB, 668.0))),
    (('gb200-nvl72', 8, 2, None, None, 'auto'), None),
    (('gb200-nvl72', 4, 19, None, None, 'nvls'), None),
    (('gb300-nvl72', 4, 3, None, None, 'tree'), ('gb300-nvl72/node/ring', 640.0, 512.0, 1.0, (8 * GIB, 512.0))),
    (('gb300-nvl72', 4, 3, None, None, 'other'), ('gb300-nvl72/node/ring', 640.0, 512.0, 1.0, (8 * GIB, 512.0))),
    # several nodes without a NIC, not NVL72: no curve
    (('h100-nvswitch', 8, 2, None, None, 'auto'), None),
    ((None, None, 2, None, None, 'auto'), None),
    ((None, None, 1, 4, 'ndr-400', 'ring'), None),
])
def test_curve_for_edges(args, want):
    assert summary(bb.curve_for(*args)) == want


def test_curve_for_defaults_are_one_node_and_auto():
    assert bb.curve_for('h100-nvswitch') is bb.CURVES['h100-nvswitch/node/nvls']
    assert bb.curve_for('h100-nvswitch', 8) is bb.CURVES['h100-nvswitch/node/nvls']
    assert bb.curve_for(None) is None


def test_nvl72_trays_over_a_ring_name_their_count_and_algorithm():
    curve = bb.curve_for('gb300-nvl72', 4, 3, None, None, 'tree')
    ring = bb.CURVES['gb300-nvl72/node/ring']
    assert curve['source'] == ring['source'] + "; over 3 trays of one NVLink domain with NCCL_ALGO tree: the tray's Ring figure"
    assert dict(curve, source=None) == dict(ring, source=None)


def test_a_stretched_curve_of_three_nodes_says_so():
    curve = bb.curve_for('h100-nvswitch', 8, 3, 4, 'ndr-400', 'ring')
    assert curve['source'].endswith('; sizes x 1.5 for 3 nodes (stated for 2); smaller sizes by the size rule (H = 64 MiB)')
    assert [size for size, dummy in curve['points']] == [int(round(size * 1.5)) for size in bb.GATE_SIZES]
    assert 'sizes x' not in bb.curve_for('h100-nvswitch', 8, 2, 4, 'ndr-400', 'ring')['source']


@pytest.mark.parametrize('call, message', [
    (lambda: bb.curve_for('h100-sxm'), "platform is 'h100-sxm', expected one of " + PLATFORM_LIST),
    (lambda: bb.check_platform('x', 'node_platform'), "node_platform is 'x', expected one of " + PLATFORM_LIST),
    (lambda: bb.check_nic('ib-ndr-401'), "nic is 'ib-ndr-401', expected one of ib-hdr-200, ib-ndr-400, ib-xdr-800"),
    (lambda: bb.check_nic(400, 'fabric'), 'fabric is 400, expected one of ib-hdr-200, ib-ndr-400, ib-xdr-800'),
    (lambda: bb.check_nic(None), 'nic is None, expected one of ib-hdr-200, ib-ndr-400, ib-xdr-800'),
    (lambda: bb.curve_for('h100-nvswitch', 8, 1, None, None, None), 'algorithm is None, expected one of auto, nvls, ring, tree, other'),
    (lambda: bb.curve_for('h100-nvswitch', 8, True), 'nodes is True, expected a whole number of at least 1'),
    (lambda: bb.curve_for('h100-nvswitch', 8, 2.0), 'nodes is 2.0, expected a whole number of at least 1'),
    (lambda: bb.curve_for('h100-nvswitch', 8, 2, 0, 'ndr-400'), 'rails is 0, expected a whole number of at least 1'),
    (lambda: bb.curve_for('h100-nvswitch', 8, 2, '8', 'ndr-400'), "rails is '8', expected a whole number of at least 1"),
    (lambda: bb.curve_for('h100-nvswitch', 0), 'gpus_per_node is 0, expected a whole number of at least 1'),
    (lambda: bb.curve_for('h100-nvswitch', True), 'gpus_per_node is True, expected a whole number of at least 1'),
])
def test_bad_input_whole_messages(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize('nic, value', [('ndr-400', 'ndr-400'), ('ib-ndr-400', 'ndr-400'), ('ib-xdr-800', 'xdr-800')])
def test_check_nic_takes_the_key_or_the_nic(nic, value):
    assert bb.check_nic(nic) == value


def test_check_platform_returns_it():
    assert bb.check_platform('h200-nvl') == 'h200-nvl'


def test_one_rail_and_one_gpu_are_valid_counts():
    assert summary(bb.curve_for(None, 1, 2, 1, 'hdr-200', 'ring')) == ('ib-hdr-200x1/ring', 24.0, 19.2, 1.0, (8 * GIB, 19.2))


@pytest.mark.parametrize('kwargs, want', [
    # a NIC key gates at least two nodes, stretched beyond
    ({'key': 'ib-ndr-400', 'platform': None, 'nodes': 1}, ('ib-ndr-400x1/ring', 47.0, 37.6, 1.0, (8 * GIB, 37.6))),
    ({'key': 'ib-ndr-400', 'platform': None, 'nodes': 4, 'nics': 2}, ('ib-ndr-400x2/ring', 94.0, 75.2, 2.0, (16 * GIB, 75.2))),
    # no key: chosen from the platform and the run; no platform either: none
    ({'key': None, 'platform': 'h100-nvswitch'}, ('h100-nvswitch/node/nvls', 480.0, 384.0, 1.0, (8 * GIB, 384.0))),
    ({'key': None, 'platform': 'h100-nvswitch', 'algorithm': 'ring'}, ('h100-nvswitch/node/ring', 370.0, 296.0, 1.0, (8 * GIB, 296.0))),
    ({'key': None, 'platform': 'gb200-nvl72', 'gpus_per_node': 4, 'nodes': 4}, ('gb200-nvl72/rack/nvls', 835.0, 668.0, 1.0, (8 * GIB, 668.0))),
    ({'key': None, 'platform': 'h100-nvswitch', 'gpus_per_node': 4}, None),
    ({'key': None, 'platform': None}, None),
    # a platform key with a run over several nodes and no NIC: curve_for's answer
    ({'key': 'gb200-nvl72', 'nodes': 2, 'algorithm': 'ring'}, ('gb200-nvl72/node/ring', 640.0, 512.0, 1.0, (8 * GIB, 512.0))),
    ({'key': 'h100-nvswitch', 'nodes': 2}, None),
])
def test_resolve_edges(kwargs, want):
    assert summary(bb.resolve(**kwargs)) == want


def test_resolve_a_legacy_key_names_it_in_the_source():
    curve = bb.resolve('h100-nvlink-8', platform='b200-nvswitch', nodes=4)
    ring = bb.CURVES['h100-nvswitch/node/ring']
    assert curve['source'] == ring['source'] + ' (the topology key h100-nvlink-8 of earlier releases)'
    assert dict(curve, source=None) == dict(ring, source=None)
    assert bb.resolve('h100-nvswitch/node/ring', platform='b200-nvswitch', nodes=4) is ring


def test_known_keys_in_full():
    assert bb.known_keys() == sorted(set(bb.CURVES) | {'a100-nvlink-8', 'h100-nvlink-8', 'h200-nvlink-8', 'ib-hdr-200', 'ib-ndr-400', 'ib-xdr-800'}
                                     | set(bb.PLATFORMS))
    assert len(bb.known_keys()) == len(bb.CURVES) + 3 + 3 + len(bb.PLATFORMS)


@pytest.mark.parametrize('key, want', [('a100-pcie', True), ('gb300-nvl72', True), ('h100-nvlink-8', True), ('ib-xdr-800', True),
                                       ('b300-nvswitch/node/ring', True), ('h100-nvswitch/ib-ndr-400x8/ring', False), ('', False)])
def test_is_key(key, want):
    assert bb.is_key(key) is want
