# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's small helpers compared whole (issue 43): the hit comment and its cut, the GPUs a detail names,
Slurm's times, the policy's limits and messages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop


def test_hit_comment_whole_and_cut_at_200():
    assert loop.hit_comment('gpuhc', 'thermal', 17.9, 'a "b"\nc') == "gpuhc-hit:thermal@17: a 'b' c"
    assert loop.hit_comment('p', 'x', 1, None) == 'p-hit:x@1: '
    head = 'p-hit:x@1: '
    assert loop.hit_comment('p', 'x', 1, 'd' * (200 - len(head))) == head + 'd' * (200 - len(head))
    assert loop.hit_comment('p', 'x', 1, 'd' * (201 - len(head))) == head + 'd' * (197 - len(head)) + '...'


def test_parse_hit():
    assert loop.parse_hit('gpuhc-hit:nvlink-errors@1700000000: GPU 1 link 3') == ('nvlink-errors', 1700000000, 'GPU 1 link 3')
    assert loop.parse_hit('gpuhc-hit:x@5:no space') == ('x', 5, 'no space')
    assert loop.parse_hit('other-hit:x@5: d') is None
    assert loop.parse_hit('other-hit:x@5: d', 'other') == ('x', 5, 'd')
    assert loop.parse_hit('a.b-hit:x@5: d', 'a.b') == ('x', 5, 'd')
    assert loop.parse_hit('axb-hit:x@5: d', 'a.b') is None
    assert loop.parse_hit(None) is None
    assert loop.parse_hit('x gpuhc-hit:x@5: d') is None


@pytest.mark.parametrize('detail, gpus', [
    ('GPU 10 and GPU 2 and GPU 10 again', ['2', '10']),
    ('the GPU at PCI 0000:3b:00.0 and PCI 0000:3B:00.0 and PCI 00000000:1A:00.1', ['0000:3b:00.0', '00000000:1a:00.1']),
    ('GPU 3 at PCI 0000:3b:00.0', ['3']),
    ('no GPU named', []),
    (None, []),
])
def test_reset_gpus(detail, gpus):
    assert loop.reset_gpus(detail) == gpus


def test_quarantine_comment_whole():
    assert loop.quarantine_comment('gpuloop', 'thermal', 2, {'promote_after': 3, 'promote_window_s': 600}) == \
        'gpuloop:quarantine:thermal: 2 of 3 hits in 600s'


def test_slurm_time():
    assert loop.slurm_time('2026-12-05T17:01:02') == int(time.mktime((2026, 12, 5, 17, 1, 2, 0, 0, -1)))
    assert [loop.slurm_time(t) for t in (None, 'Unknown', 'None', '2026-12-05 17:01:02', '2026-12-05T17:01:02Z')] == [None] * 5


def refused(data):
    with pytest.raises(InputError) as caught:
        loop.load_policy(data)
    return str(caught.value)


def test_load_policy_messages_whole():
    keys = ', '.join(sorted(loop.POLICY_DEFAULTS))
    assert refused([]) == 'the loop settings are [], expected a mapping'
    assert refused({'zz': 1, 'aa': 2}) == 'the loop settings have unknown key(s) aa, zz; valid keys: ' + keys
    assert refused({'tag': 'gpuhc'}) == "tag is 'gpuhc', expected a word other than the health check prefix 'gpuhc'"
    assert refused({'scontrol': '-x'}) == "scontrol is '-x', expected a command name or path (no spaces, not starting with \"-\")"
    assert refused({'prefix': '1x'}) == ("prefix is '1x', expected a word such as \"gpuloop\" (letters, digits, \"-\", \"_\", "
                                         'starting with a letter)')


@pytest.mark.parametrize('key, low', [('reboot_max', 0), ('reboot_window_s', 1), ('reboot_timeout_s', 60), ('settle_timeout_s', 60),
                                      ('promote_after', 1), ('promote_window_s', 1), ('deep_passes', 1)])
def test_load_policy_lower_limits(key, low):
    assert loop.load_policy({key: low})[key] == low
    assert loop.load_policy({key: str(low)})[key] == low
    with pytest.raises(InputError) as caught:
        loop.load_policy({key: low - 1})
    assert str(caught.value).startswith('%s is %d, expected a whole number' % (key, low - 1))


def test_load_policy_defaults_whole():
    policy = loop.load_policy({'requeue': 'no'})
    expected = dict(loop.POLICY_DEFAULTS, requeue=False)
    expected['actions'] = policy['actions']
    assert policy == expected and policy['actions']['thermal'] == 'comment'


def test_slurm_time_lets_the_zone_say_whether_summer_time_applies(monkeypatch):
    monkeypatch.setenv('TZ', 'Europe/Berlin')
    time.tzset()
    try:
        assert loop.slurm_time('2026-07-01T12:00:00') == calendar.timegm((2026, 7, 1, 10, 0, 0))
        assert loop.slurm_time('2026-01-01T12:00:00') == calendar.timegm((2026, 1, 1, 11, 0, 0))
    finally:
        monkeypatch.undo()
        time.tzset()
