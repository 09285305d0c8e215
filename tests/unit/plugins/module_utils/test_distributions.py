# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_distributions: the whole row find() returns for each way a release is named, and contrib_words' whole sentences."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _distributions as distributions

BOOKWORM, TRIXIE, JAMMY, NOBLE = distributions.DISTRIBUTIONS
EMPTY = {'id': '', 'version': '', 'codename': '', 'name': '', 'slurm': '', 'slurm_component': '', 'contrib': '', 'tested': False,
         'enable': ''}
DEBIAN_ENABLE = 'Components: main contrib in /etc/apt/sources.list.d/debian.sources, or contrib on the deb lines of /etc/apt/sources.list'
DEBIAN_WHY = 'Debian ships it in the contrib component, which the apt sources of this node do not enable (or its package lists are out of date)'
UBUNTU_WHY = ("Ubuntu carries Debian's contrib packages, where it has them, in its multiverse component, which the apt sources "
              'of this node do not enable (or its package lists are out of date)')


def test_the_rows():
    assert BOOKWORM == {'id': 'debian', 'version': '12', 'codename': 'bookworm', 'name': 'Debian 12 (bookworm)', 'slurm': '22.05.8',
                        'slurm_component': 'main', 'contrib': 'contrib', 'tested': True, 'enable': DEBIAN_ENABLE}
    assert TRIXIE == dict(BOOKWORM, version='13', codename='trixie', name='Debian 13 (trixie)', slurm='24.11.5')
    assert JAMMY == {'id': 'ubuntu', 'version': '22.04', 'codename': 'jammy', 'name': 'Ubuntu 22.04 (jammy)', 'slurm': '21.08.5',
                     'slurm_component': 'universe', 'contrib': 'multiverse', 'tested': False,
                     'enable': 'add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list'}
    assert NOBLE == dict(JAMMY, version='24.04', codename='noble', name='Ubuntu 24.04 (noble)', slurm='23.11.4',
                         enable='add-apt-repository multiverse, or Components: main restricted universe multiverse in '
                                '/etc/apt/sources.list.d/ubuntu.sources')
    assert distributions.GENERIC == EMPTY


@pytest.mark.parametrize('name, version, expected', [
    ('debian', '12', BOOKWORM),
    (' Debian ', ' 12 ', BOOKWORM),
    ('debian', 'bookworm', BOOKWORM),
    ('debian', '12.5', BOOKWORM),         # a point release (distribution_version)
    ('debian', 13, TRIXIE),
    ('ubuntu', '22', JAMMY),
    ('ubuntu', '22.04.3', JAMMY),
    ('UBUNTU', 'noble', NOBLE),
])
def test_find_names_the_row(name, version, expected):
    assert distributions.find(name, version) is expected


@pytest.mark.parametrize('name, version, expected', [
    ('debian', '120', dict(EMPTY, id='debian', contrib='contrib')),     # not 12 followed by more digits
    ('debian', '1', dict(EMPTY, id='debian', contrib='contrib')),
    ('debian', None, dict(EMPTY, id='debian', contrib='contrib')),
    ('Debian', '11', dict(EMPTY, id='debian', contrib='contrib')),
    ('ubuntu', '2', dict(EMPTY, id='ubuntu', contrib='multiverse')),
    ('ubuntu', '22.10', dict(EMPTY, id='ubuntu', contrib='multiverse')),
    ('ubuntu', '22.044', dict(EMPTY, id='ubuntu', contrib='multiverse')),
    (' Ubuntu ', '26.04', dict(EMPTY, id='ubuntu', contrib='multiverse')),
    ('bookworm', '12', EMPTY),
    ('rocky', '9', EMPTY),
    (None, None, EMPTY),
])
def test_find_of_a_release_the_table_does_not_have(name, version, expected):
    assert distributions.find(name, version) == expected


def test_find_without_a_version_is_generic():
    assert distributions.find('debian') == dict(EMPTY, id='debian', contrib='contrib')
    assert distributions.find('rocky') is distributions.GENERIC


@pytest.mark.parametrize('row, why, choice', [
    (BOOKWORM, DEBIAN_WHY, 'enable contrib (%s), run apt-get update and run again' % DEBIAN_ENABLE),
    (dict(EMPTY, id='debian', contrib='contrib'), DEBIAN_WHY, 'enable contrib (%s), run apt-get update and run again' % DEBIAN_ENABLE),
    (NOBLE, UBUNTU_WHY, 'enable multiverse (add-apt-repository multiverse, or Components: main restricted universe multiverse in '
                        '/etc/apt/sources.list.d/ubuntu.sources), run apt-get update and run again'),
    (dict(EMPTY, id='ubuntu', contrib='multiverse'), UBUNTU_WHY,
     'enable multiverse (add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list), run apt-get update '
     'and run again'),
    (EMPTY, "Debian ships it in the contrib component (Ubuntu in multiverse), which the apt sources of this node do not enable "
            '(or its package lists are out of date)',
     'enable the component that carries python3-pynvml (Debian: contrib; Ubuntu: multiverse), run apt-get update and run again'),
])
def test_contrib_words(row, why, choice):
    assert distributions.contrib_words(row, 'python3-pynvml') == (why, choice)
