# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_version import (
    behaviour,
    major_releases,
    parse_version,
    releases_ahead,
    upgrade_path,
    upgrade_problem,
    upgrade_window,
)


@pytest.mark.parametrize('text, expected', [
    ('slurm 22.05.8', (22, 5, 8)),            # slurmd -V of SchedMD's build
    ('slurm-wlm 24.11.5', (24, 11, 5)),       # Debian's build
    ('slurm-wlm 24.11.5\n', (24, 11, 5)),
    ('24.11.5-4+deb13u1', (24, 11, 5)),       # the package version
    ('22.05.8-4+deb12u3', (22, 5, 8)),
    ('1:26.05.5-1', (26, 5, 5)),              # with an epoch
    ('slurm 25.05.0-0rc1', (25, 5, 0)),
    ('slurm 23.02.7', (23, 2, 7)),
    ('slurm 23.2.7', (23, 2, 7)),             # the minor without its 0
])
def test_parse_version(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize('text, message', [
    ('', "'' is not a Slurm version"),
    ('slurm', "'slurm' is not a Slurm version"),
    ('9.1.1', "'9.1.1' is not a Slurm version"),
    ('22.07.1', "names Slurm 22.07, which is not a Slurm release"),
    ('24.06.1', "names Slurm 24.06, which is not a Slurm release"),
    (None, 'must be a string'),
    (24.11, 'must be a string'),
])
def test_parse_version_errors(text, message):
    with pytest.raises(ValueError, match=message.replace('.', r'\.').replace('(', r'\(')):
        parse_version(text)


def test_major_releases_extend_past_the_known_ones():
    assert major_releases((26, 5))[-5:] == [(24, 5), (24, 11), (25, 5), (25, 11), (26, 5)]
    assert major_releases((22, 5))[-2:] == [(21, 8), (22, 5)]


@pytest.mark.parametrize('installed, target, ahead', [
    ((22, 5, 8), (22, 5, 9), 0),
    ((22, 5, 8), (23, 2, 0), 1),
    ((22, 5, 8), (23, 11, 0), 2),
    ((22, 5, 8), (24, 11, 5), 4),
    ((24, 11, 5), (26, 5, 5), 3),
    ((24, 11, 5), (22, 5, 8), -4),
])
def test_releases_ahead(installed, target, ahead):
    assert releases_ahead(installed, target) == ahead


@pytest.mark.parametrize('target, window', [
    ((23, 2, 0), 2), ((23, 11, 0), 2), ((24, 5, 0), 2), ((24, 11, 0), 3), ((26, 5, 5), 3),
])
def test_upgrade_window(target, window):
    assert upgrade_window(target) == window


@pytest.mark.parametrize('installed, target, problem', [
    ((24, 11, 5), (24, 11, 6), ''),
    ((22, 5, 8), (23, 11, 1), ''),        # two ahead: 23.11 takes 22.05
    ((23, 2, 7), (24, 11, 5), ''),        # three ahead: 24.11 takes 23.02
    ((24, 11, 5), (26, 5, 5), ''),        # Debian 13 to forky
    ((22, 5, 8), (24, 5, 1), 'upgrade through 22.05 -> 23.11 -> 24.05'),
    ((22, 5, 8), (24, 11, 5), 'Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step: 24.11 is 4 major releases ahead '
                              'and 24.11 upgrades from at most 3 releases back'),
    ((22, 5, 8), (24, 11, 5), 'upgrade through 22.05 -> 23.11 -> 24.11'),
    ((24, 11, 5), (24, 5, 1), 'cannot be downgraded to 24.05.1'),
])
def test_upgrade_problem(installed, target, problem):
    found = upgrade_problem(installed, target)
    if problem:
        assert problem in found
    else:
        assert found == ''


@pytest.mark.parametrize('installed, target, path', [
    ((22, 5, 8), (22, 5, 9), ['22.05']),
    ((22, 5, 8), (24, 11, 5), ['22.05', '23.11', '24.11']),
    ((21, 8, 1), (26, 5, 5), ['21.08', '23.02', '24.11', '26.05']),
])
def test_upgrade_path(installed, target, path):
    assert upgrade_path(installed, target) == path
    # every step is inside its target's window
    for old, new in zip(path, path[1:]):
        assert upgrade_problem(parse_version(old + '.0'), parse_version(new + '.0')) == ''


@pytest.mark.parametrize('version, reconfigure_restarts', [
    ((22, 5, 8), False), ((23, 2, 7), False), ((23, 11, 0), True), ((24, 11, 5), True),
])
def test_behaviour(version, reconfigure_restarts):
    found = behaviour(version)
    assert found['reconfigure_restarts'] is reconfigure_restarts
    # topology/block came with the same release (23.11)
    assert found['topology_block'] is reconfigure_restarts
    assert found['version'] == '%d.%02d.%d' % version
