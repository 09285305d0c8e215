# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_hostlist compared whole (issue 43): zero padding on both sides of its rule, the natural order, the refusals of
misplaced brackets word for word, and ranges at the edges of their limits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import (
    compress,
    expand,
    format_int_ranges,
    natural_key,
    parse_int_ranges,
)


@pytest.mark.parametrize('expression, names', [
    ('gpu[0-2]', ['gpu0', 'gpu1', 'gpu2']),                   # a single "0" is no padding
    ('gpu[00-02]', ['gpu00', 'gpu01', 'gpu02']),
    ('gpu[0,007-008]', ['gpu0', 'gpu007', 'gpu008']),        # each part keeps its own width
    ('gpu[98-101]', ['gpu98', 'gpu99', 'gpu100', 'gpu101']),
    ('gpu[5-5]', ['gpu5']),
    ('a[1-2]b[3],c', ['a1b3', 'a2b3', 'c']),
    ('[1-2]x', ['1x', '2x']),
    ('login', ['login']),
])
def test_expand_whole(expression, names):
    assert expand(expression) == names


@pytest.mark.parametrize('expression, message', [
    ('   ', 'hostlist is empty; expected something like "gpu[01-04,10]"'),
    ('gpu]1[', 'hostlist "gpu]1[" has a "]" without a matching "["'),
    ('g[1[2]]', 'hostlist "g[1[2]]" has nested "[" brackets'),
    ('a[1]]', 'hostlist "a[1]]" has a "]" without a matching "["'),
    ('gpu[1],', 'hostlist "gpu[1]," has an empty item (two commas in a row or a comma at an end)'),
    (',gpu1', 'hostlist ",gpu1" has an empty item (two commas in a row or a comma at an end)'),
    ('gpu[1-]', 'hostlist "gpu[1-]": "1-" in "[1-]" is not a number or a range like "01-04"'),
    (' gpu[3-2] ', 'hostlist "gpu[3-2]": range "3-2" runs backwards'),
    ('gpu[1 ]', 'hostlist "gpu[1 ]": "[1 ]" may hold only numbers, "-" and ","'),
])
def test_expand_refusals_whole(expression, message):
    with pytest.raises(ValueError) as err:
        expand(expression)
    assert str(err.value) == message


@pytest.mark.parametrize('names, expression', [
    (['gpu', 'gpu1', 'gpu2'], 'gpu,gpu[1-2]'),               # a name without digits starts no bracket
    (['gpu01', 'gpu02', 'gpu03'], 'gpu[01-03]'),
    (['gpu01', 'gpu1'], 'gpu01,gpu1'),                       # padded, then unpadded: not one bracket
    (['gpu1', 'gpu01'], 'gpu1,gpu01'),
    (['gpu01', 'gpu001'], 'gpu01,gpu001'),                   # two widths
    (['gpu1', 'gpu2', 'gpu4', 'gpu5', 'gpu7'], 'gpu[1-2,4-5,7]'),
    (['gpu1', 'gpu3', 'gpu4'], 'gpu[1,3-4]'),
    (['gpu0', 'gpu10', 'gpu11'], 'gpu[0,10-11]'),            # "0" is unpadded: it joins numbers of any length
    (['a1', 'b2', 'b3'], 'a1,b[2-3]'),                       # another prefix, another item
])
def test_compress_whole(names, expression):
    assert compress(names) == expression


def test_compress_takes_any_iterable():
    # (made in the test: a generator in the parameters would be empty when the tests run twice in one process)
    assert compress('n%d' % i for i in (3, 4)) == 'n[3-4]'


@pytest.mark.parametrize('name', ['a\tb', 'a\nb', 'a]b', 'a[b', None])
def test_compress_refuses_every_separator(name):
    with pytest.raises(ValueError) as err:
        compress(['gpu1', name])
    assert str(err.value) == 'name "%s" cannot go into a hostlist (empty, or contains a comma, bracket or space)' % name


@pytest.mark.parametrize('text, values', [('7-7', [7]), ('3 , 1-2', [3, 1, 2]), ('0010', [10])])
def test_parse_int_ranges_whole(text, values):
    assert parse_int_ranges(text) == values


@pytest.mark.parametrize('text, message', [
    ('', 'range list is empty; expected something like "0-3,8"'),
    (' 1,,2 ', 'range list "1,,2": "" is not a number or a range like "4-7"'),
    ('1-2-3', 'range list "1-2-3": "1-2-3" is not a number or a range like "4-7"'),
])
def test_parse_int_ranges_refusals_whole(text, message):
    with pytest.raises(ValueError) as err:
        parse_int_ranges(text)
    assert str(err.value) == message


@pytest.mark.parametrize('values, text', [(['3', 1, 2.0], '1-3'), ([0, 2], '0,2'), ([9, 10, 11, 99], '9-11,99')])
def test_format_int_ranges_whole(values, text):
    assert format_int_ranges(values) == text


def test_natural_key_orders_numbers_as_numbers():
    names = ['gpu-10', 'gpu-2', 'gpu-1a', 'gpu-1', 'login', 'gpu-02', 10, 'Gpu-3']
    assert sorted(names, key=natural_key) == [10, 'Gpu-3', 'gpu-1', 'gpu-1a', 'gpu-2', 'gpu-02', 'gpu-10', 'login']
    assert natural_key('gpu-10') == [(1, 0, 'gpu-'), (0, 10, ''), (1, 0, '')]
    assert natural_key('10') == [(1, 0, ''), (0, 10, ''), (1, 0, '')]
    assert natural_key(7) == [(1, 0, ''), (0, 7, ''), (1, 0, '')]
    assert sorted(['n10', 'n9', 'm100'], key=natural_key) == ['m100', 'n9', 'n10']
