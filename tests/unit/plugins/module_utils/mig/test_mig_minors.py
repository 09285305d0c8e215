# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for the mig-minors parser."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_minors import (
    cap_device,
    instance_minors,
    parse_mig_minors,
)

# The lines of seed 003's node that matter: GPU 2 GIs 7-13 and GPU 3 GIs
# 7, 8, 9, 11, 12, 13, 14, each with CI 0 (the 28 capability files the seed
# lists besides nvidia-cap1 and nvidia-cap2).
SEED_003_MIG_MINORS = """config 1
monitor 2
gpu2/gi7/access 336
gpu2/gi7/ci0/access 337
gpu2/gi8/access 345
gpu2/gi8/ci0/access 346
gpu2/gi9/access 354
gpu2/gi9/ci0/access 355
gpu2/gi10/access 363
gpu2/gi10/ci0/access 364
gpu2/gi11/access 372
gpu2/gi11/ci0/access 373
gpu2/gi12/access 381
gpu2/gi12/ci0/access 382
gpu2/gi13/access 390
gpu2/gi13/ci0/access 391
gpu3/gi7/access 471
gpu3/gi7/ci0/access 472
gpu3/gi8/access 480
gpu3/gi8/ci0/access 481
gpu3/gi9/access 489
gpu3/gi9/ci0/access 490
gpu3/gi11/access 507
gpu3/gi11/ci0/access 508
gpu3/gi12/access 516
gpu3/gi12/ci0/access 517
gpu3/gi13/access 525
gpu3/gi13/ci0/access 526
gpu3/gi14/access 534
gpu3/gi14/ci0/access 535
"""


def test_seed_003_table():
    minors = parse_mig_minors(SEED_003_MIG_MINORS)
    assert minors['config'] == 1
    assert minors['monitor'] == 2
    assert len(minors['gi']) == 14
    assert len(minors['ci']) == 14
    assert [minors['ci'][key] for key in sorted(minors['ci'])] == [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]


@pytest.mark.parametrize('gpu, gi, ci, expected', [
    (2, 7, 0, (336, 337)),
    (2, 13, 0, (390, 391)),
    (3, 11, 0, (507, 508)),
    (3, 14, 0, (534, 535)),
])
def test_instance_minors(gpu, gi, ci, expected):
    assert instance_minors(parse_mig_minors(SEED_003_MIG_MINORS), gpu, gi, ci) == expected


@pytest.mark.parametrize('text, key, minor', [
    ('gpu2/gi7/ci0 337', (2, 7, 0), 337),              # seed 003's abbreviated quote
    ('gpu2/gi7 336', (2, 7), 336),
    ('  gpu31/gi14/ci7/access   4322  ', (31, 14, 7), 4322),
    ('\n\ngpu0/gi0/access 3\n\n', (0, 0), 3),
])
def test_line_forms(text, key, minor):
    minors = parse_mig_minors(text)
    table = minors['ci'] if len(key) == 3 else minors['gi']
    assert table == {key: minor}


@pytest.mark.parametrize('text, message', [
    ('config 1\nmonitor\n', '/proc/driver/nvidia-caps/mig-minors line 2: "monitor" is not "<name> <minor>" '
                            '(expected lines like "gpu2/gi7/ci0/access 337")'),
    ('config 1\ngpu2/gi7/access 336 extra\n', '/proc/driver/nvidia-caps/mig-minors line 2: "gpu2/gi7/access 336 extra" is not '
                                              '"<name> <minor>" (expected lines like "gpu2/gi7/ci0/access 337")'),
    ('gpu2/gi7/access x', '/proc/driver/nvidia-caps/mig-minors line 1: minor "x" of "gpu2/gi7/access" is not a non-negative integer'),
    ('gpu2/gi7/access -3', '/proc/driver/nvidia-caps/mig-minors line 1: minor "-3" of "gpu2/gi7/access" is not a non-negative integer'),
    ('config 1\n\ngpuX/gi7/access 3', '/proc/driver/nvidia-caps/mig-minors line 3: name "gpuX/gi7/access" is not "config", "monitor", '
                                      '"gpu<N>/gi<M>/access" or "gpu<N>/gi<M>/ci<K>/access"'),
    ('gpu2/ci0/access 3', '/proc/driver/nvidia-caps/mig-minors line 1: name "gpu2/ci0/access" is not "config", "monitor", '
                          '"gpu<N>/gi<M>/access" or "gpu<N>/gi<M>/ci<K>/access"'),
    ('gpu2/gi7/access 336\ngpu2/gi7/access 337', '/proc/driver/nvidia-caps/mig-minors line 2: "gpu2/gi7/access" is listed twice (first on line 1)'),
    ('gpu2/gi7/access 336\ngpu2/gi7 337', '/proc/driver/nvidia-caps/mig-minors line 2: "gpu2/gi7" is listed twice (first on line 1)'),
    ('config 1\nconfig 1', '/proc/driver/nvidia-caps/mig-minors line 2: "config" is listed twice (first on line 1)'),
])
def test_malformed(text, message):
    with pytest.raises(ValueError) as err:
        parse_mig_minors(text)
    assert str(err.value) == message


def test_source_named_in_errors():
    with pytest.raises(ValueError) as err:
        parse_mig_minors('bad', source='/tmp/mm')
    assert str(err.value).startswith('/tmp/mm line 1: ')


@pytest.mark.parametrize('gpu, gi, ci, message', [
    (2, 6, 0, 'MIG instance gpu2/gi6/ci0 has no GPU-instance minor in /proc/driver/nvidia-caps/mig-minors: '
              'no line "gpu2/gi6/access <minor>"'),
    (2, 7, 1, 'MIG instance gpu2/gi7/ci1 has no compute-instance minor in /proc/driver/nvidia-caps/mig-minors: '
              'no line "gpu2/gi7/ci1/access <minor>"'),
    (0, 7, 0, 'MIG instance gpu0/gi7/ci0 has no GPU-instance minor in /proc/driver/nvidia-caps/mig-minors: '
              'no line "gpu0/gi7/access <minor>"'),
])
def test_instance_without_minor(gpu, gi, ci, message):
    with pytest.raises(ValueError) as err:
        instance_minors(parse_mig_minors(SEED_003_MIG_MINORS), gpu, gi, ci)
    assert str(err.value) == message


@pytest.mark.parametrize('minor, directory, path', [
    (337, '/dev/nvidia-caps', '/dev/nvidia-caps/nvidia-cap337'),
    (1, '/dev/nvidia-caps/', '/dev/nvidia-caps/nvidia-cap1'),
])
def test_cap_device(minor, directory, path):
    assert cap_device(minor, directory) == path


# A GPU instance with three compute instances, minors as the driver numbers them
# (gpu0/gi1/access 12, its CIs 13, 14, 15), and the same names with minors that
# follow no arithmetic at all: the lookup must go by name, never by
# "CI minor = GI minor + 1".
MULTI_CI = """config 1
monitor 2
gpu0/gi1/access 12
gpu0/gi1/ci0/access 13
gpu0/gi1/ci1/access 14
gpu0/gi1/ci2/access 15
gpu0/gi2/access 21
gpu0/gi2/ci0/access 22
"""
SHUFFLED = """gpu0/gi1/ci2/access 40
gpu0/gi1/access 300
gpu0/gi1/ci1/access 7
gpu0/gi1/ci0/access 301
gpu0/gi2/ci0/access 12
gpu0/gi2/access 13
"""


@pytest.mark.parametrize('table, gpu, gi, ci, expected', [
    (MULTI_CI, 0, 1, 0, (12, 13)),
    (MULTI_CI, 0, 1, 1, (12, 14)),
    (MULTI_CI, 0, 1, 2, (12, 15)),
    (MULTI_CI, 0, 2, 0, (21, 22)),
    (SHUFFLED, 0, 1, 0, (300, 301)),
    (SHUFFLED, 0, 1, 1, (300, 7)),
    (SHUFFLED, 0, 1, 2, (300, 40)),
    (SHUFFLED, 0, 2, 0, (13, 12)),
])
def test_several_compute_instances_in_one_gpu_instance(table, gpu, gi, ci, expected):
    assert instance_minors(parse_mig_minors(table), gpu, gi, ci) == expected


def test_a_compute_instance_without_its_own_line_is_an_error():
    """gi1/ci3 is not listed: its minor must not be guessed from gi1's."""
    with pytest.raises(ValueError) as err:
        instance_minors(parse_mig_minors(MULTI_CI), 0, 1, 3)
    assert str(err.value) == ('MIG instance gpu0/gi1/ci3 has no compute-instance minor in /proc/driver/nvidia-caps/mig-minors: '
                              'no line "gpu0/gi1/ci3/access <minor>"')


@pytest.mark.parametrize('text, message', [
    ('gpu0/gi1/access 12\ngpu0/gi1/ci0/access 12',
     '/proc/driver/nvidia-caps/mig-minors line 2: minor 12 of "gpu0/gi1/ci0/access" is also the minor of "gpu0/gi1/access" (line 1); '
     'each capability has its own device file'),
    ('config 1\nmonitor 1', '/proc/driver/nvidia-caps/mig-minors line 2: minor 1 of "monitor" is also the minor of "config" (line 1); '
                            'each capability has its own device file'),
    ('gpu0/gi1/access 1048576', '/proc/driver/nvidia-caps/mig-minors line 1: minor 1048576 of "gpu0/gi1/access" is above 1048575, '
                                'the largest minor number Linux has'),
    ('gpu0/gi1/access\t12 13', '/proc/driver/nvidia-caps/mig-minors line 1: "gpu0/gi1/access\t12 13" is not "<name> <minor>" '
                               '(expected lines like "gpu2/gi7/ci0/access 337")'),
    ('gpu0/gi1/ci0/access 1.5', '/proc/driver/nvidia-caps/mig-minors line 1: minor "1.5" of "gpu0/gi1/ci0/access" is not a non-negative integer'),
    ('gpu0/gi1/ci0/ci1/access 5', '/proc/driver/nvidia-caps/mig-minors line 1: name "gpu0/gi1/ci0/ci1/access" is not "config", "monitor", '
                                  '"gpu<N>/gi<M>/access" or "gpu<N>/gi<M>/ci<K>/access"'),
])
def test_more_malformed_tables(text, message):
    with pytest.raises(ValueError) as err:
        parse_mig_minors(text)
    assert str(err.value) == message


def test_largest_minor_is_accepted():
    assert parse_mig_minors('gpu0/gi1/access 1048575')['gi'] == {(0, 1): 1048575}


# Found by mutation testing (benchmarks/mutation.sh): the result always has all four keys, and only the
# trailing slashes of the capability directory are stripped.
def test_lines_without_config_or_monitor_leave_them_none():
    assert parse_mig_minors('gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n') == {
        'config': None, 'monitor': None, 'gi': {(0, 1): 12}, 'ci': {(0, 1, 0): 13}}


@pytest.mark.parametrize('minor, cap_dir, path', [
    (337, '/dev/nvidia-caps', '/dev/nvidia-caps/nvidia-cap337'),
    (337, '/dev/nvidia-caps//', '/dev/nvidia-caps/nvidia-cap337'),
    (5, '/tmp/caps-X/', '/tmp/caps-X/nvidia-cap5'),
])
def test_cap_device_dirs(minor, cap_dir, path):
    assert cap_device(minor, cap_dir) == path
