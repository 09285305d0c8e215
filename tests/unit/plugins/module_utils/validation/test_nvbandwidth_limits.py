# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Limits of _nvbandwidth: which testcase a -t value names (as nvbandwidth's findTestcase() reads it), and the matrix
shapes per_gpu() and pairs() take."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _nvbandwidth as nvb


@pytest.mark.parametrize('ident, index', [
    ('', 0),              # strtol of "" is 0
    ('0', 0), (3, 3), ('+2', 2),
    (len(nvb.TESTCASES) - 1, len(nvb.TESTCASES) - 1),
    (len(nvb.TESTCASES), None),
    ('-1', None),
    ('3x', None),         # not all digits: read as a name, and no testcase is called so
    ('host_to_device_memcpy_ce', 0),
    ('device_to_host_memcpy_ce', 1),
    ('no_such_testcase', None),
])
def test_resolve(ident, index):
    assert nvb._resolve(ident) == (None if index is None else nvb.TESTCASES[index])


def case(rows, columns, matrix):
    return {'rows': rows, 'columns': columns, 'matrix': matrix}


def test_per_gpu_takes_exactly_one_row():
    assert nvb.per_gpu(case(['0'], ['0', '1'], [[50.5, None]])) == {0: 50.5, 1: None}
    with pytest.raises(ValueError) as err:
        nvb.per_gpu(case([], [], []))
    assert str(err.value) == 'per_gpu(): the testcase has 0 rows, expected the single row of a host<->device testcase'
    with pytest.raises(ValueError) as err:
        nvb.per_gpu(case(['0', '1'], ['0', '1'], [[1.0, 2.0], [3.0, 4.0]]))
    assert str(err.value) == 'per_gpu(): the testcase has 2 rows, expected the single row of a host<->device testcase'


def test_pairs_of_one_gpu_and_of_a_single_row():
    assert nvb.pairs(case(['0'], ['0'], [[None]])) == {}
    assert nvb.pairs(case(['0', '1'], ['0', '1'], [[None, 7.0], [8.0, None]])) == {(0, 1): 7.0, (1, 0): 8.0}
    with pytest.raises(ValueError) as err:
        nvb.pairs(case(['0'], ['0', '1'], [[1.0, 2.0]]))
    assert str(err.value) == 'pairs(): the testcase has a single row, use per_gpu() for a host<->device testcase'


DEVICE = 'Device 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)'


@pytest.mark.parametrize('text, host', [
    # the host name is the line just before the first device
    ('gpu-01\n' + DEVICE + '\n', 'gpu-01'),
    # a device on the first line has no line before it (the last line is not one)
    (DEVICE + '\ngpu-01', None),
])
def test_the_host_is_the_line_before_the_first_device(text, host):
    result = nvb.parse(text)
    assert (result['host'], result['devices']) == (host, [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3', 'pci': '00000000:1b:00'}])
