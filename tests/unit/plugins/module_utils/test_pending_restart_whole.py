# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_pending_restart's edges (issue 43): a marker of another boot not merged, what parse_marker refuses field by field,
the limits of a reason on both sides, the constants the roles and docs name."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _pending_restart as pending


def test_the_constants():
    assert (pending.ACTIONS, pending.DEFAULT_DIR, pending.MAX_REASONS) == (('restart', 'reconfigure'), '/var/lib/gpucluster/pending', 20)


def test_a_marker_of_another_boot_is_not_merged():
    old = {'daemon': 'slurmd', 'action': 'restart', 'reasons': ['old'], 'boot_id': 'b1', 'since': 1.0, 'written': 1.0}
    assert pending.merge(old, 'slurmd', 'reconfigure', ['new'], 'b2', 5.0, 6.0) == {
        'daemon': 'slurmd', 'action': 'reconfigure', 'reasons': ['new'], 'boot_id': 'b2', 'since': 5.0, 'written': 6.0}
    same = dict(old, boot_id='b2')
    assert pending.merge(same, 'slurmd', 'reconfigure', ['new', 'old'], 'b2', 5.0, 6.0)['reasons'] == ['new', 'old']
    assert pending.merge(same, 'slurmd', 'reconfigure', ('x',), 'b2', 5.0, 6.0)['reasons'] == ['old', 'x']


@pytest.mark.parametrize('data', [
    {'action': 'restart', 'since': True, 'boot_id': 'b', 'reasons': []},
    {'action': 'stop', 'since': 1, 'boot_id': 'b', 'reasons': []},
    {'action': 'restart', 'since': 1, 'boot_id': 'b', 'reasons': ['a', 2]},
    {'action': 'restart', 'since': 1, 'boot_id': 'b'},
    {'since': 1, 'boot_id': 'b', 'reasons': []},
    ['restart'],
])
def test_parse_marker_refuses_field_by_field(data):
    text = json.dumps(data)
    assert pending.parse_marker('slurmd', text, 9.0, 'boot') == {
        'daemon': 'slurmd', 'action': 'restart', 'reasons': ['its marker could not be read (%s)' % pending.show(text[:80])],
        'boot_id': 'boot', 'since': 9.0, 'written': None}


@pytest.mark.parametrize('reason, ok', [(' ' * 1000, True), (' ' * 1001, False), ('a\x1f', False), ('a ', True), ('\t', False), ('\x00', False)])
def test_a_reasons_characters_and_length(reason, ok):
    if ok:
        assert pending.check_restarts('p', [{'daemon': 'slurmd', 'reason': reason}]) == [{'daemon': 'slurmd', 'action': 'restart', 'reason': reason}]
    else:
        with pytest.raises(pending.InputError) as err:
            pending.check_restarts('p', [{'daemon': 'slurmd', 'reason': reason}])
        assert str(err.value) == 'p: restarts[0].reason is %s, expected one line of text of at most 1000 characters' % pending.show(reason)


def test_settled_past_the_marker_by_a_little():
    marker = {'daemon': 'slurmd', 'action': 'restart', 'since': 100.0, 'boot_id': 'b', 'reasons': []}
    assert pending.settled(marker, 'b', 100.01) == 'its process started after the change'
    assert pending.settled(marker, 'b', 99.99, True) == ''
    assert pending.settled(marker, 'b', 100.0) == ''          # started at the change: not after it


@pytest.mark.parametrize('value', ['/a/../', '/..', '/a\x00'])
def test_check_dir_refuses_whole(value):
    with pytest.raises(pending.InputError) as err:
        pending.check_dir(value)
    assert str(err.value) == ('pending_dir is %s, expected an absolute path without control characters or ".." such as '
                              '"/var/lib/gpucluster/pending"' % pending.show(value))
