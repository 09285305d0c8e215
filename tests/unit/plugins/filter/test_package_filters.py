# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.packages import FilterModule

MISSING = FilterModule().filters()['missing_packages']
FACTS = {'ansible_facts': {'packages': {'munge': [{'version': '0.5.15'}], 'libmunge2': [{'version': '0.5.15'}]}}}


@pytest.mark.parametrize('names, site, expected', [
    (['munge', 'libmunge2'], FACTS, []),
    (['munge', 'slurmd'], FACTS, ['slurmd']),
    ('libpam-slurm-adopt', FACTS, ['libpam-slurm-adopt']),
    ('munge', FACTS, []),
    (['munge', 'slurmd'], None, ['munge', 'slurmd']),             # no read this run: ask the package manager
    (['munge'], {'skipped': True}, ['munge']),
    (['munge'], {'ansible_facts': {}}, ['munge']),
    ([], FACTS, []),
])
def test_missing_packages(names, site, expected):
    assert MISSING(names, site) == expected


@pytest.mark.parametrize('names', [None, [''], [3], {'munge': 1}])
def test_bad_names(names):
    with pytest.raises(AnsibleFilterError) as err:
        MISSING(names, FACTS)
    assert 'is not a package name or a list of them' in str(err.value)
