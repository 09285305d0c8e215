# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's table of conditions -> actions (issue 48)."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _conditions as cond
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck_fleet import XID_DRAIN


def test_every_condition_has_one_name_an_action_and_a_source():
    assert len(cond.NAMES) == len(set(cond.NAMES))
    for name, check, action, source, why in cond.CONDITIONS:
        assert action in cond.ACTIONS, name
        assert source.startswith('https://') or source.startswith('roles/'), name
        assert why, name
        assert check in hc.CHECKS + deep.CHECKS, (name, check)


def test_every_check_of_the_health_check_and_the_deep_tier_has_a_condition():
    covered = set(cond.CHECK_OF.values())
    assert set(hc.CHECKS) | set(deep.CHECKS) <= covered


@pytest.mark.parametrize('code', XID_DRAIN)
def test_every_xid_that_drains_today_has_an_action_at_least_drain(code):
    name = 'xid-%d' % code
    assert name in cond.DEFAULT_ACTIONS, name
    assert cond.severity(cond.DEFAULT_ACTIONS[name]) >= cond.severity('drain')
    assert cond.SOURCES[name] == cond.XID_CATALOG


@pytest.mark.parametrize('code', (13, 31, 43, 45, 94))
def test_application_xids_are_recorded_only(code):
    assert cond.DEFAULT_ACTIONS['xid-%d' % code] == 'none'


@pytest.mark.parametrize('check, detail, expected', [
    ('xid', 'the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node', 'xid-79'),
    ('xid', 'GPU 2 (00000000:52:00.0) had Xid 48 since boot (last: 48, DBE); reset the GPU', 'xid-48'),
    ('xid', 'GPU 2 had Xid 48, 79 since boot (last: 48, x); reset the GPU', 'xid-79'),  # the worst decides
    ('xid', 'GPU 2 had Xid 64, 79 since boot (last: 64, x)', 'xid-64'),  # service above reboot
    ('xid', 'GPU 2 had Xid 200 since boot (last: 200, x)', 'xid'),  # a code of the site's list the table lacks
    ('xid', 'GPU 2 had Xid 13, 200 since boot (last: 200, x)', 'xid'),
    ('xid', 'something else', 'xid'),
    ('gpu-error', 'GPU 0: nvmlDeviceGetHandleByIndex failed: GPU is lost', 'gpu-lost'),
    ('gpu-error', 'GPU 5 (00000000:90:00.0) has a failed memory row remapping', 'row-remap-failure'),
    ('gpu-error', 'GPU 5 has memory row remapping pending a GPU reset', 'row-remap-pending'),
    ('gpu-error', 'GPU 5 has retired memory pages pending a GPU reset', 'retired-pages-pending'),
    ('nvlink', 'GPU 1 (00000000:43:00.0) has 17 of 18 NVLinks active (down: 3); reset the GPU', 'nvlink-down'),
    ('nvlink', 'GPU 1 NVLink 3 has 5 recovery errors (at most 0)', 'nvlink-errors'),
    ('ib', 'InfiniBand mlx5_3 port 1 is DOWN (physical Polling), expected ACTIVE/LinkUp', 'ib-down'),
    ('ib', 'InfiniBand mlx5_6 port 1 runs at 100 Gb/sec (2X HDR), expected 200 Gb/sec', 'ib-rate'),
    ('ib', 'InfiniBand mlx5_6 port 1 has 12 link_downed (at most 10); check the link', 'ib-errors'),
    ('ib', '7 InfiniBand ports, expected 8; check that every HCA is seen (ibstat)', 'ib-down'),
    ('thermal', 'GPU 0 clocks are held down by hw_slowdown', 'thermal'),
    ('persistence', 'GPU 4 persistence mode is off', 'persistence'),
    ('dcgm', 'GPU 3: Memory test failed', 'dcgm'),
    ('nosuch', 'x', None),
])
def test_classify(check, detail, expected):
    assert cond.classify(check, detail) == expected


def test_overrides_replace_the_default_action():
    actions = cond.load_overrides({'thermal': 'drain', 'xid-79': 'service'})
    assert actions['thermal'] == 'drain' and actions['xid-79'] == 'service'
    assert actions['xid-48'] == 'reset-gpu'
    assert cond.load_overrides(None) == cond.DEFAULT_ACTIONS
    assert cond.DEFAULT_ACTIONS['thermal'] == 'comment'  # the defaults are not changed


def test_an_override_changes_which_xid_decides():
    actions = cond.load_overrides({'xid-48': 'service'})
    assert cond.classify('xid', 'GPU 2 had Xid 48, 79 since boot (last: 48, x)', actions) == 'xid-48'


@pytest.mark.parametrize('value, fragments', [
    ({'thermals': 'drain'}, ['slurm_healthcheck_loop.actions has the condition', "'thermals'", 'expected one of', 'thermal', 'xid-79']),
    ({'thermal': 'rma'}, ['slurm_healthcheck_loop.actions["thermal"] is', "'rma'", 'none, comment, drain, reset-gpu, reboot, service']),
    (['thermal'], ['slurm_healthcheck_loop.actions is', 'expected a mapping of condition to action']),
])
def test_bad_overrides_name_the_value_and_what_is_valid(value, fragments):
    with pytest.raises(InputError) as info:
        cond.load_overrides(value)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_split_failures_keeps_comment_and_record_only_conditions_from_the_drain():
    failures = [hc.Failure('thermal', 0, 'GPU 0 clocks are held down by hw_slowdown'),
                hc.Failure('xid', 1, 'GPU 1 had Xid 79 since boot (last: 79, x)'),
                hc.Failure('nvlink', 2, 'GPU 2 NVLink 3 has 5 recovery errors (at most 0)'),
                hc.Failure('gpu-model', None, 'GPU 3 is a A100, expected H100')]
    drain, noted = cond.split_failures(failures, cond.load_overrides({'gpu-model': 'none'}))
    assert [f.check for f in drain] == ['xid']
    assert [(c, a, f.check) for c, a, f in noted] == [('thermal', 'comment', 'thermal'), ('nvlink-errors', 'comment', 'nvlink'),
                                                      ('gpu-model', 'none', 'gpu-model')]
    drain, noted = cond.split_failures(failures, cond.load_overrides({'thermal': 'drain', 'nvlink-errors': 'reboot'}))
    assert [f.check for f in drain] == ['thermal', 'xid', 'nvlink', 'gpu-model'] and noted == []


# ---------------------------------------------------------------- whole messages, ties and defaults (issue 43)

def _refusal(*args):
    with pytest.raises(InputError) as info:
        cond.load_overrides(*args)
    return str(info.value)


def test_bad_overrides_messages_whole():
    names = ', '.join(cond.NAMES)
    assert _refusal({'zz': 'drain', 'aa': 'drain'}) == "slurm_healthcheck_loop.actions has the condition 'aa', expected one of " + names
    assert _refusal({1: 'drain'}) == 'slurm_healthcheck_loop.actions has the condition 1, expected one of ' + names
    assert _refusal({'thermal': 'rma'}, 'actions') == 'actions["thermal"] is \'rma\', expected one of none, comment, drain, reset-gpu, reboot, service'
    assert _refusal('x') == ('slurm_healthcheck_loop.actions is \'x\', expected a mapping of condition to action such as '
                             '{"thermal": "drain"}')


def test_overrides_whole():
    expected = dict(cond.DEFAULT_ACTIONS, thermal='none', dcgm='drain')
    assert cond.load_overrides({'thermal': 'none', 'dcgm': 'drain'}) == expected
    assert cond.load_overrides({}) == cond.DEFAULT_ACTIONS


@pytest.mark.parametrize('detail, expected', [
    ('GPU 1 had Xid 48, 61 since boot (last: 61, x)', 'xid-61'),  # the same action: the larger name
    ('GPU 1 had Xid 61, 48 since boot (last: 48, x)', 'xid-61'),
    ('GPU 1 had Xid 79, 200 since boot (last: 200, x)', 'xid-79'),  # reboot above the drain of the unnamed code
    ('GPU 1 had Xid 13,31 since boot', 'xid-31'),
    ('GPU 1 had Xid 13 since boot', 'xid-13'),
    ('GPU 1 had Xid  since boot', 'xid'),
    (None, 'xid'),
])
def test_xid_conditions(detail, expected):
    assert cond.classify('xid', detail) == expected
    assert cond.classify('xid', detail, {}) == expected


def test_classify_with_actions_of_a_site():
    actions = cond.load_overrides({'xid-13': 'drain'})
    assert cond.classify('xid', 'GPU 1 had Xid 13, 200 since boot', actions) == 'xid-13'
    assert cond.classify('xid', 'GPU 1 had Xid 13 since boot', {'xid': 'drain'}) == 'xid'
    assert cond.classify('dcgm', 'x', {'xid': 'drain'}) is None
    assert cond.classify('gpu-error', None) == 'gpu-lost'
    assert cond.classify('nvlink', None) == 'nvlink-down'
    assert cond.classify('ib', None) == 'ib-down'


def test_severity():
    assert [cond.severity(a) for a in cond.ACTIONS] == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        cond.severity('rma')


def test_split_failures_drains_what_the_actions_do_not_name():
    failures = [hc.Failure('nosuch', 0, 'x'), hc.Failure('gpu-error', 1, 'GPU 1: GPU is lost'), hc.Failure('thermal', 2, 'hot')]
    drain, noted = cond.split_failures(failures, {'thermal': 'none'})
    assert drain == failures[:2] and noted == [('thermal', 'none', failures[2])]
