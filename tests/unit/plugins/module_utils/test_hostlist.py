# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for Slurm hostlist expand/compress and integer range lists."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import (
    compress,
    expand,
    format_int_ranges,
    parse_int_ranges,
)

CAPS = '/dev/nvidia-caps/nvidia-cap'
SEED_003_CI_CAPS = [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]


@pytest.mark.parametrize('expression, names', [
    ('gpu01', ['gpu01']),
    ('gpu[01-04,10]', ['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu10']),
    ('gpu[9-11]', ['gpu9', 'gpu10', 'gpu11']),
    ('gpu[09-11]', ['gpu09', 'gpu10', 'gpu11']),
    ('bcm-dgxa100-[0006-0007]', ['bcm-dgxa100-0006', 'bcm-dgxa100-0007']),
    ('nvidia-cap[337,346]', ['nvidia-cap337', 'nvidia-cap346']),
    ('gpu[01-02],login1', ['gpu01', 'gpu02', 'login1']),
    ('rack[1-2]-n[1-2]', ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']),
    ('/dev/nvidia[0,1]', ['/dev/nvidia0', '/dev/nvidia1']),
    ('/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337',
     ['/dev/nvidia2', '/dev/nvidia-caps/nvidia-cap336', '/dev/nvidia-caps/nvidia-cap337']),
    ('cap[346,337]', ['cap346', 'cap337']),
    (' gpu[1-2] ', ['gpu1', 'gpu2']),
    (CAPS + '[337,346,355,364,373,382,391,472,481,490,508,517,526,535]', [CAPS + str(n) for n in SEED_003_CI_CAPS]),
])
def test_expand(expression, names):
    assert expand(expression) == names


@pytest.mark.parametrize('expression, message', [
    ('', 'hostlist is empty; expected something like "gpu[01-04,10]"'),
    (None, 'hostlist is empty; expected something like "gpu[01-04,10]"'),
    ('gpu[1-2', 'hostlist "gpu[1-2" has a "[" without a matching "]"'),
    ('gpu1-2]', 'hostlist "gpu1-2]" has a "]" without a matching "["'),
    ('gpu[[1]]', 'hostlist "gpu[[1]]" has nested "[" brackets'),
    ('gpu[]', 'hostlist "gpu[]" has empty brackets "[]"'),
    ('gpu[4-1]', 'hostlist "gpu[4-1]": range "4-1" runs backwards'),
    ('gpu[a-b]', 'hostlist "gpu[a-b]": "[a-b]" may hold only numbers, "-" and ","'),
    ('gpu[1,,2]', 'hostlist "gpu[1,,2]": "" in "[1,,2]" is not a number or a range like "01-04"'),
    ('gpu[1-2-3]', 'hostlist "gpu[1-2-3]": "1-2-3" in "[1-2-3]" is not a number or a range like "01-04"'),
    ('gpu1,,gpu2', 'hostlist "gpu1,,gpu2" has an empty item (two commas in a row or a comma at an end)'),
])
def test_expand_errors(expression, message):
    with pytest.raises(ValueError) as err:
        expand(expression)
    assert str(err.value) == message


@pytest.mark.parametrize('names, expression', [
    (['gpu01'], 'gpu01'),
    (['gpu01', 'gpu02', 'gpu03', 'gpu04', 'gpu10'], 'gpu[01-04,10]'),
    (['gpu9', 'gpu10', 'gpu11'], 'gpu[9-11]'),
    (['gpu09', 'gpu10'], 'gpu[09-10]'),
    (['gpu9', 'gpu010'], 'gpu9,gpu010'),
    (['gpu01', 'gpu100'], 'gpu01,gpu100'),
    (['login', 'gpu1', 'gpu2'], 'login,gpu[1-2]'),
    (['gpu1', 'login', 'gpu2'], 'gpu1,login,gpu2'),
    (['gpu2', 'gpu1'], 'gpu[2,1]'),
    (['gpu1', 'gpu1'], 'gpu[1,1]'),
    (['a1', 'b1', 'b2'], 'a1,b[1-2]'),
    ([CAPS + '337', CAPS + '346'], CAPS + '[337,346]'),
    ([CAPS + str(n) for n in SEED_003_CI_CAPS], CAPS + '[337,346,355,364,373,382,391,472,481,490,508,517,526,535]'),
    (['/dev/nvidia0', '/dev/nvidia1'], '/dev/nvidia[0-1]'),
])
def test_compress(names, expression):
    assert compress(names) == expression
    assert expand(expression) == names


@pytest.mark.parametrize('names, message', [
    ([], 'cannot compress an empty list of names'),
    (['gpu1', ''], 'name "" cannot go into a hostlist (empty, or contains a comma, bracket or space)'),
    (['gpu[1]'], 'name "gpu[1]" cannot go into a hostlist (empty, or contains a comma, bracket or space)'),
    (['a,b'], 'name "a,b" cannot go into a hostlist (empty, or contains a comma, bracket or space)'),
    (['a b'], 'name "a b" cannot go into a hostlist (empty, or contains a comma, bracket or space)'),
])
def test_compress_errors(names, message):
    with pytest.raises(ValueError) as err:
        compress(names)
    assert str(err.value) == message


@pytest.mark.parametrize('text, values', [
    ('0', [0]),
    ('0-3', [0, 1, 2, 3]),
    ('0-3,8', [0, 1, 2, 3, 8]),
    ('16-17, 48', [16, 17, 48]),
])
def test_parse_int_ranges(text, values):
    assert parse_int_ranges(text) == values


@pytest.mark.parametrize('text, message', [
    (None, 'range list is missing; expected something like "0-3,8"'),
    (' ', 'range list is empty; expected something like "0-3,8"'),
    ('0-', 'range list "0-": "0-" is not a number or a range like "4-7"'),
    ('a', 'range list "a": "a" is not a number or a range like "4-7"'),
    ('5-2', 'range list "5-2": range "5-2" runs backwards'),
])
def test_parse_int_ranges_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_int_ranges(text)
    assert str(err.value) == message


@pytest.mark.parametrize('values, text', [
    ([0], '0'),
    ([3, 2, 1, 0], '0-3'),
    ([0, 1, 2, 3, 8, 10, 11], '0-3,8,10-11'),
    ([5, 5, 6], '5-6'),
    (range(16), '0-15'),
])
def test_format_int_ranges(values, text):
    assert format_int_ranges(values) == text


@pytest.mark.parametrize('values, message', [
    ([], 'cannot format an empty list of numbers as a range list'),
    ([-1, 0], 'range lists hold non-negative numbers, got -1'),
])
def test_format_int_ranges_errors(values, message):
    with pytest.raises(ValueError) as err:
        format_int_ranges(values)
    assert str(err.value) == message


# Found by mutation testing (benchmarks/mutation.sh): a single "0" has no zero padding, so it joins a bracket
# of unpadded numbers of any length; a name may hold any character but a comma, a bracket or white space.
@pytest.mark.parametrize('names, expression', [
    (['gpu0', 'gpu10'], 'gpu[0,10]'),
    (['gpu1', 'gpu0'], 'gpu[1,0]'),
    (['nodeX1', 'nodeX2'], 'nodeX[1-2]'),
    (['rack-X'], 'rack-X'),
])
def test_compress_edges(names, expression):
    assert compress(names) == expression
    assert expand(expression) == names
