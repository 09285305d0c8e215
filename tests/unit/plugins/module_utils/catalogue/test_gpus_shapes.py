# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""catalogue/_gpus: shape_instances on the catalogue's tables and on hand-made ones (a 4-slice GPU such as the A30,
variants, empty placements), results and messages whole."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus as catalogue

H100 = catalogue.mig_profiles('NVIDIA H100 80GB HBM3')


def prof(name, pid, slices, count, placements, **more):
    return dict({'name': name, 'id': pid, 'slices': slices, 'instance_count': count, 'placements': placements,
                 'ci_profiles': None}, **more)


# The A30's table as NVML gives it (MIG User Guide, "A30 MIG Profiles"): 4 compute slices, 4 memory slices.
A30 = [prof('1g.6gb', 14, 1, 4, [[0, 1], [1, 1], [2, 1], [3, 1]]), prof('1g.6gb+me', 21, 1, 1, [[0, 1], [1, 1], [2, 1], [3, 1]]),
       prof('2g.12gb', 5, 2, 2, [[0, 2], [2, 2]]), prof('2g.12gb+me', 6, 2, 1, [[0, 2], [2, 2]]), prof('4g.24gb', 0, 4, 1, [[0, 4]])]


@pytest.mark.parametrize('shape, instances', [
    ('1g', [{'profile': '1g.10gb', 'count': 7}]),
    ('2g', [{'profile': '2g.20gb', 'count': 3}]),
    ('3g', [{'profile': '3g.40gb', 'count': 2}]),
    ('4g', [{'profile': '4g.40gb', 'count': 1}]),
    ('7g', [{'profile': '7g.80gb', 'count': 1}]),
    ('balanced', [{'profile': '3g.40gb', 'count': 1}, {'profile': '2g.20gb', 'count': 1}, {'profile': '1g.10gb', 'count': 2}]),
    ('1g.20gb', [{'profile': '1g.20gb', 'count': 4}]),
    ('1g.10gb+me', [{'profile': '1g.10gb+me', 'count': 1}]),
])
def test_shapes_on_the_h100(shape, instances):
    assert catalogue.shape_instances(H100, shape) == instances


@pytest.mark.parametrize('shape, instances', [
    ('balanced', [{'profile': '2g.12gb', 'count': 1}, {'profile': '1g.6gb', 'count': 2}]),
    ('1g', [{'profile': '1g.6gb', 'count': 4}]),
    ('4g', [{'profile': '4g.24gb', 'count': 1}]),
])
def test_shapes_on_a_four_slice_gpu(shape, instances):
    assert catalogue.shape_instances(A30, shape) == instances


def test_a_shape_the_gpu_has_no_profile_of():
    with pytest.raises(ValueError) as found:
        catalogue.shape_instances(A30, '3g')
    assert str(found.value) == ("shape '3g' is not a MIG profile of this GPU nor one of 1g, 2g, 3g, 4g, 7g, balanced; valid profiles: "
                                "1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb")


def test_a_name_that_is_no_shape_lists_the_profiles_by_slices_then_memory():
    table = [prof('2g.b', 2, 2, 1, [[0, 2]]), prof('1g.b', 3, 1, 1, [[0, 2]]), prof('1g.a', 4, 1, 1, [[0, 1]]),
             prof('1g.z', 5, 1, 1, [], memory_mb=100), prof('1g.y', 6, 1, 1, [], memory_mb=50), prof('1g.x', 7, 1, 1, [])]
    with pytest.raises(ValueError) as found:
        catalogue.shape_instances(table, 'all')
    assert str(found.value) == ("shape 'all' is not a MIG profile of this GPU nor one of 1g, 2g, 3g, 4g, 7g, balanced; valid profiles: "
                                "1g.x, 1g.y, 1g.z, 1g.a, 1g.b, 2g.b")


@pytest.mark.parametrize('table', [
    [prof('1g.6gb', 14, 1, 4, [[0, 1]]), prof('4g.24gb', 0, 4, 1, [[0, 4]])],
    [prof('2g.12gb', 5, 2, 2, [[0, 2]]), prof('4g.24gb', 0, 4, 1, [[0, 4]])],
])
def test_balanced_needs_a_2g_and_a_1g(table):
    with pytest.raises(ValueError) as found:
        catalogue.shape_instances(table, 'balanced')
    assert str(found.value) == 'shape balanced needs a 2g and a 1g profile; this GPU has %s' % ', '.join(p['name'] for p in table)


@pytest.mark.parametrize('variant', ['1g.6gb+me', '1g.6gb-me', '1g.6gb+gfx'])
def test_a_shape_takes_no_variant(variant):
    # the variant has fewer memory slices and a lower id: only its name keeps it out
    table = [prof(variant, 1, 1, 1, [[0, 0]]), prof('1g.6gb', 14, 1, 4, [[0, 1]])]
    assert catalogue.shape_instances(table, '1g') == [{'profile': '1g.6gb', 'count': 4}]


def test_a_shape_takes_the_profile_of_fewest_memory_slices_then_lowest_id():
    table = [prof('1g.b', 9, 1, 2, [[0, 2]]), prof('1g.c', 8, 1, 3, [[0, 1]]), prof('1g.a', 7, 1, 4, [[0, 1]])]
    assert catalogue.shape_instances(table, '1g') == [{'profile': '1g.a', 'count': 4}]
    # a profile without placements sorts as 0 memory slices
    table.append(prof('1g.d', 10, 1, 5, []))
    assert catalogue.shape_instances(table, '1g') == [{'profile': '1g.d', 'count': 5}]


def test_mig_profiles_whole_row():
    assert H100[0] == prof('1g.10gb', 19, 1, 7, [[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1], [6, 1]])
    assert H100[-1] == prof('7g.80gb', 0, 7, 1, [[0, 8]])
    assert catalogue.mig_profiles('NVIDIA L40S') is None
    assert catalogue.mig_profiles('NVIDIA X') is None


@pytest.mark.parametrize('text, key', [('535.129.03', (535, 129, 3)), (' 550 ', (550,)), (550.54, (550, 54))])
def test_version_key(text, key):
    assert catalogue.version_key(text) == key


@pytest.mark.parametrize('text', ['550.', 'r550', '', '550.54.14\n1'])
def test_version_key_refuses(text):
    with pytest.raises(ValueError) as found:
        catalogue.version_key(text)
    assert str(found.value) == '%r is not a driver version such as "550.54.14"' % (text,)


@pytest.mark.parametrize('text, names', [
    # "H80" begins no name as a word (H800 goes on with a digit), so every name holding it
    ('H80', ['NVIDIA H800', 'NVIDIA H800 PCIe']),
    ('h800', ['NVIDIA H800']),
    ('H800 PCIe', ['NVIDIA H800 PCIe']),
    ('A800', ['NVIDIA A800-SXM4-80GB', 'NVIDIA A800 80GB PCIe']),
    ('', []),
    (None, []),
])
def test_models_matching_as_a_word(text, names):
    assert [name for name, _model in catalogue.models_matching(text)] == names
