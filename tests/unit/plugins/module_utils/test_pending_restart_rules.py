# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pure rules of pending restarts (_pending_restart): each message and each returned marker pinned whole.

The modules that keep the markers are tested in tests/unit/plugins/modules/test_pending_restart.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _pending_restart as pending

BOOT = 'b0b0'
UNIT = ('a systemd unit name such as "slurmd" or "slurmd.service" (letters, digits, ":", "_", ".", "\\", "@" and "-", '
        'not starting with "-" or "@", at most 256 characters)')


def marker(action='restart', since=100.0, boot_id=BOOT, reasons=('slurm.conf changed',), daemon='slurmd'):
    return {'daemon': daemon, 'action': action, 'since': since, 'boot_id': boot_id, 'reasons': list(reasons), 'written': 5.0}


# --- check_restarts ---

@pytest.mark.parametrize('value, expected', [
    ([], []),
    (['slurmd'], [{'daemon': 'slurmd', 'action': 'restart', 'reason': ''}]),
    (['munge.service'], [{'daemon': 'munge', 'action': 'restart', 'reason': ''}]),
    ([{'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': 'x' * 1000}],
     [{'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': 'x' * 1000}]),
    ([{'daemon': 'slurmd', 'reason': ' tabs\x7f are not control characters below 32 '}],
     [{'daemon': 'slurmd', 'action': 'restart', 'reason': ' tabs\x7f are not control characters below 32 '}]),
    (['slurmd', {'daemon': 'slurmdbd', 'action': 'restart'}],
     [{'daemon': 'slurmd', 'action': 'restart', 'reason': ''}, {'daemon': 'slurmdbd', 'action': 'restart', 'reason': ''}]),
])
def test_check_restarts_returns_each_entry_whole(value, expected):
    assert pending.check_restarts('files[0]', value) == expected


@pytest.mark.parametrize('value, message', [
    ('slurmd', "files[0]: restarts is 'slurmd', expected a list of {daemon: a systemd unit such as \"slurmd\", action: restart or reconfigure}"),
    (None, 'files[0]: restarts is None, expected a list of {daemon: a systemd unit such as "slurmd", action: restart or reconfigure}'),
    (['slurmd', 3], 'files[0]: restarts[1] is 3, expected a daemon name or {daemon, action, reason}'),
    ([{'daemon': 'slurmd', 'when': 1, 'after': 2}], "files[0]: restarts[0] has the key 'after', expected only daemon, action and reason"),
    ([{'daemon': 'slurmd', 'z': 1, 2: 2}], 'files[0]: restarts[0] has the key 2, expected only daemon, action and reason'),
    ([{'daemon': '-x'}], "files[0]: restarts[0].daemon is '-x', expected " + UNIT),
    ([{'action': 'restart'}], 'files[0]: restarts[0].daemon is None, expected ' + UNIT),
    ([{'daemon': 'slurmd', 'action': 'stop'}], "files[0]: restarts[0].action is 'stop', expected one of restart, reconfigure"),
    ([{'daemon': 'slurmd', 'action': None}], 'files[0]: restarts[0].action is None, expected one of restart, reconfigure'),
    ([{'daemon': 'slurmd', 'reason': 'x' * 1001}],
     "files[0]: restarts[0].reason is '%s..., expected one line of text of at most 1000 characters" % ('x' * 116)),
    ([{'daemon': 'slurmd', 'reason': 'a\x1fb'}], "files[0]: restarts[0].reason is 'a\\x1fb', expected one line of text of at most 1000 characters"),
    ([{'daemon': 'slurmd', 'reason': 7}], 'files[0]: restarts[0].reason is 7, expected one line of text of at most 1000 characters'),
])
def test_check_restarts_names_the_entry_the_value_and_what_is_valid(value, message):
    with pytest.raises(pending.InputError) as err:
        pending.check_restarts('files[0]', value)
    assert str(err.value) == message


# --- merge, marker_text, parse_marker ---

@pytest.mark.parametrize('old, action, expected_action', [
    (None, 'restart', 'restart'),
    (marker('reconfigure', reasons=[]), 'reconfigure', 'reconfigure'),
    (marker('reconfigure', reasons=[]), 'restart', 'restart'),
    (marker('restart', reasons=[]), 'reconfigure', 'restart'),
])
def test_merge_returns_the_whole_marker(old, action, expected_action):
    assert pending.merge(old, 'slurmd', action, ['new'], BOOT, 200.0, 9.5) == {
        'daemon': 'slurmd', 'action': expected_action, 'reasons': ['new'], 'boot_id': BOOT, 'since': 200.0, 'written': 9.5}


def test_merge_keeps_the_newest_reasons_up_to_the_maximum():
    old = marker(reasons=['r%d' % index for index in range(25)])
    merged = pending.merge(old, 'slurmd', 'restart', ['r3', 'new'], BOOT, 1.0, 2.0)
    assert merged['reasons'] == ['r%d' % index for index in range(7, 25)] + ['r3', 'new']
    assert len(merged['reasons']) == pending.MAX_REASONS == 20
    assert pending.merge(None, 'slurmd', 'restart', ['r%d' % index for index in range(21)], BOOT, 1.0, 2.0)['reasons'] == \
        ['r%d' % index for index in range(1, 21)]


def test_merge_of_a_marker_without_reasons_or_action():
    merged = pending.merge({'boot_id': BOOT}, 'slurmd', 'reconfigure', ['new'], BOOT, 1.0, 2.0)
    assert (merged['action'], merged['reasons']) == ('reconfigure', ['new'])


def test_marker_text_is_sorted_indented_json_with_a_newline():
    text = pending.marker_text({'since': 1.5, 'action': 'restart', 'reasons': ['a']})
    assert text == '{\n "action": "restart",\n "reasons": [\n  "a"\n ],\n "since": 1.5\n}\n'


@pytest.mark.parametrize('data', [
    {'action': 'restart', 'since': 7, 'boot_id': 'b', 'reasons': [], 'written': 1},
    {'action': 'reconfigure', 'since': 7.25, 'boot_id': '', 'reasons': ['a', 'b'], 'daemon': 'other'},
])
def test_parse_marker_reads_a_marker_back_under_the_daemons_name(data):
    assert pending.parse_marker('slurmd', json.dumps(data), 50.0, BOOT) == dict(data, daemon='slurmd')


@pytest.mark.parametrize('text, shown', [
    ('{', "'{'"),
    ('', "''"),
    ('{"action": "restart", "since": 1, "boot_id": 5, "reasons": []}', repr('{"action": "restart", "since": 1, "boot_id": 5, "reasons": []}')),
    ('{"action": "restart", "since": "1", "boot_id": "b", "reasons": []}', repr('{"action": "restart", "since": "1", "boot_id": "b", "reasons": []}')),
    ('{"action": "restart", "since": 1, "boot_id": "b", "reasons": "a"}', repr('{"action": "restart", "since": 1, "boot_id": "b", "reasons": "a"}')),
    ('x' * 200, repr('x' * 80)),
])
def test_an_unreadable_marker_is_a_restart_from_its_mtime(text, shown):
    assert pending.parse_marker('slurmd', text, 50.0, BOOT) == {
        'daemon': 'slurmd', 'action': 'restart', 'reasons': ['its marker could not be read (%s)' % shown],
        'boot_id': BOOT, 'since': 50.0, 'written': None}


# --- settled, describe ---

@pytest.mark.parametrize('marker_boot, started, reconfigured, action, why', [
    ('other', 1000.0, True, 'reconfigure', 'the node rebooted since'),
    (BOOT, None, False, 'restart', 'not running (it reads the files when it starts)'),
    (BOOT, 100.5, False, 'restart', 'its process started after the change'),
    (BOOT, 100.0, True, 'reconfigure', 'reconfigured'),
    (BOOT, 100.0, False, 'reconfigure', ''),
    (BOOT, 100.0, True, 'restart', ''),
])
def test_settled_says_why(marker_boot, started, reconfigured, action, why):
    assert pending.settled(marker(action, boot_id=marker_boot), BOOT, started, reconfigured) == why


def test_settled_by_default_is_not_reconfigured():
    assert pending.settled(marker('reconfigure'), BOOT, 99.0) == ''


@pytest.mark.parametrize('given, line', [
    (marker(), 'slurmd on gpu-01 has not applied slurm.conf changed (restart to do; run sudo systemctl restart slurmd there, '
               'or the playbook that changed it)'),
    (marker('reconfigure', daemon='slurmctld', reasons=['a', 'b']),
     'slurmctld on gpu-01 has not applied a; b (reconfigure to do; run sudo scontrol reconfigure there, or the playbook that changed it)'),
    (marker(daemon='munge', reasons=[]),
     'munge on gpu-01 has not applied a change (restart to do; run sudo systemctl restart munge there, or the playbook that changed it)'),
])
def test_describe_is_one_whole_line(given, line):
    assert pending.describe('gpu-01', given) == line


def test_describe_without_reasons_key():
    given = marker()
    del given['reasons']
    assert pending.describe('h', given).startswith('slurmd on h has not applied a change (restart to do;')


# --- conf_restarts ---

@pytest.mark.parametrize('reasons, reason', [
    (['a', 2], 'a; 2'),
    (['x' * 300], 'x' * 300),
    (['x' * 301], 'x' * 297 + '...'),
    (None, ''),
])
def test_conf_restarts_reason_is_joined_and_clipped_at_300(reasons, reason):
    assert pending.conf_restarts({'restart_slurmd': True, 'reasons': reasons}, False, True) == [
        {'daemon': 'slurmd', 'action': 'restart', 'reason': reason}]


@pytest.mark.parametrize('actions, controller, compute, expected', [
    (None, True, True, []),
    ({}, True, True, []),
    ({'restart_slurmctld': True, 'reconfigure': True, 'restart_slurmd': True, 'reasons': ['r']}, True, True,
     [{'daemon': 'slurmctld', 'action': 'restart', 'reason': 'r'}, {'daemon': 'slurmd', 'action': 'restart', 'reason': 'r'}]),
    ({'reconfigure': True, 'restart_slurmd': True, 'reasons': ['r']}, True, False,
     [{'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': 'r'}]),
    ({'restart_slurmctld': True, 'reconfigure': True, 'reasons': ['r']}, False, True, []),
])
def test_conf_restarts_whole_entries(actions, controller, compute, expected):
    assert pending.conf_restarts(actions, controller, compute) == expected


# --- check_dir ---

@pytest.mark.parametrize('value', ['/', '/var/lib/gpucluster/pending', '/a..b/c', '/a/..b', '/' + 'x' * 1023, '/a/b/', '/my pending/~'])
def test_check_dir_accepts(value):
    assert pending.check_dir(value) == value


@pytest.mark.parametrize('value', ['pending', '', None, ['/a'], '/' + 'x' * 1024, '/a\x1fb', '/a\x7fb', '/a/..', '/../a', '/a/../b'])
def test_check_dir_refuses_with_one_sentence(value):
    with pytest.raises(pending.InputError) as err:
        pending.check_dir(value)
    assert str(err.value) == ('pending_dir is %s, expected an absolute path without control characters or ".." such as '
                              '"/var/lib/gpucluster/pending"' % pending.show(value))
