# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits of _validation_isolate on hand-made pairs: the bar itself, failed and empty runs, a leaf or node with one pair."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_isolate as iso


def p(value, threshold=None, failed=False):
    return {'value': value, 'threshold': threshold, 'failed': failed}


def link(a, b, percent):
    return {'kind': 'link', 'name': '%s+%s' % (a, b), 'nodes': [a, b], 'percent': percent,
            'text': 'the link between %s and %s: %s of expected, while each is fast with its other neighbour'
                    % (a, b, 'no result' if percent is None else '%d %%' % percent)}


def test_a_pair_at_the_bar_is_not_slow():
    assert iso.FRACTION == 0.8
    assert iso.isolate({('a', 'b'): p(80.0), ('b', 'c'): p(100.0), ('a', 'c'): p(100.0)}) == []
    assert iso.isolate({('a', 'b'): p(79.0), ('b', 'c'): p(100.0), ('a', 'c'): p(100.0)}) == [link('a', 'b', 79)]
    # at most 1: the fastest pair is the bar
    assert iso.isolate({('a', 'b'): p(99.0), ('b', 'c'): p(100.0), ('a', 'c'): p(100.0)}, fraction=1) == [link('a', 'b', 99)]


def test_a_failed_run_is_not_the_fastest_pair():
    assert iso.isolate({('a', 'b'): p(500.0, failed=True), ('b', 'c'): p(100.0), ('a', 'c'): p(100.0)}) == [link('a', 'b', 500)]


def test_a_gate_of_zero_gives_no_share():
    assert iso.isolate({('a', 'b'): p(50.0, 0.0, failed=True), ('b', 'c'): p(100.0), ('a', 'c'): p(100.0)}) == [link('a', 'b', None)]


def test_no_figure_at_all_names_every_node():
    found = iso.isolate({('a', 'b'): p(None), ('b', 'c'): p(None), ('a', 'c'): p(None)})
    assert [(f['kind'], f['name'], f['percent'], f['text']) for f in found] == [
        ('node', 'a', None, 'a: no result of expected in pairs with 2 other nodes (b, c)'),
        ('node', 'b', None, 'b: no result of expected in pairs with 2 other nodes (a, c)'),
        ('node', 'c', None, 'c: no result of expected in pairs with 2 other nodes (a, b)')]


def test_a_leaf_of_one_measured_node_is_that_node():
    pairs = {('a', 'b'): p(50.0), ('b', 'c'): p(100.0), ('c', 'd'): p(100.0), ('a', 'd'): p(50.0)}
    found = iso.isolate(pairs, {'a': 'L1', 'b': 'L2', 'c': 'L3', 'd': 'L3'})
    assert found == [{'kind': 'node', 'name': 'a', 'nodes': ['a'], 'percent': 50,
                      'text': 'a (leaf L1): 50 % of expected in pairs with 2 other nodes (b, d)'}]


def test_a_node_in_one_pair_only_is_no_slow_node():
    pairs = {('a', 'b'): p(50.0), ('b', 'c'): p(100.0), ('c', 'd'): p(100.0)}
    assert iso.isolate(pairs) == [link('a', 'b', 50)]


def test_pair_measurements_take_the_nccl_stage_only():
    records = [{'stage': 'mpi', 'hosts': ['a', 'b'], 'check': 'busbw', 'value': 1.0},
               {'hosts': ['a', 'c'], 'check': 'busbw', 'value': 2.0, 'threshold': 3.0},
               {'stage': 'nccl', 'hosts': ['a', 'c'], 'check': 'complete', 'status': 'fail'},
               {'stage': 'nccl', 'hosts': ['b', 'c'], 'check': 'busbw', 'status': 'fail', 'value': 0.5}]
    assert iso.pair_measurements(records) == {('a', 'c'): {'value': 2.0, 'threshold': 3.0, 'failed': True},
                                              ('b', 'c'): {'value': 0.5, 'threshold': None, 'failed': False}}


def test_a_node_without_figures_is_a_record_without_value_or_hosts():
    pairs = {('a', 'b'): p(None, failed=True), ('b', 'c'): p(None, failed=True), ('a', 'c'): p(100.0)}
    assert iso.isolation_records(iso.isolate(pairs), pairs) == [
        {'stage': 'nccl', 'node': 'b', 'check': 'isolation', 'status': 'fail', 'reason': 'b: no result of expected in pairs with 2 other nodes (a, c)'}]
    assert iso.isolation_records([], {}) == []


@pytest.mark.parametrize('fraction', [0, -0.5, 1.01])
def test_fraction_limits(fraction):
    with pytest.raises(ValueError) as err:
        iso.isolate({}, fraction=fraction)
    assert str(err.value) == 'fraction is %r, expected a share above 0 and at most 1' % (fraction,)
