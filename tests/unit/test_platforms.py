# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the collection says it runs on, against what its tests run on (issue 46 item 6).

plugins/module_utils/_distributions.py marks the distribution releases the project's tests run on (``tested``); every
role's meta/main.yml lists exactly those as Galaxy platforms, and README's "Supported versions" says "not tested" on
the row of every other release of that table.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils import _distributions as distributions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METAS = sorted(glob.glob(os.path.join(ROOT, 'roles', '*', 'meta', 'main.yml')))
# Roles tested on fewer of those releases: the slurm-smd package build runs on a Debian 13 build host only
# (scripts/lib/smd_build.sh); its packages link Debian 13's libraries
NARROWER = {'slurm_packages_build': {'Debian': ['trixie']}}


def test_the_table_marks_debian_12_and_13_tested_and_ubuntu_not():
    assert [(row['name'], row['tested']) for row in distributions.DISTRIBUTIONS] == [
        ('Debian 12 (bookworm)', True), ('Debian 13 (trixie)', True), ('Ubuntu 22.04 (jammy)', False), ('Ubuntu 24.04 (noble)', False)]


@pytest.mark.parametrize('meta', METAS, ids=[m.split(os.sep)[-3] for m in METAS])
def test_role_platforms_are_what_is_tested(meta):
    with open(meta) as handle:
        platforms = yaml.safe_load(handle)['galaxy_info']['platforms']
    tested = {}
    for row in distributions.DISTRIBUTIONS:
        if row['tested']:
            tested.setdefault(row['id'].capitalize(), []).append(row['codename'])
    assert dict((p['name'], p['versions']) for p in platforms) == NARROWER.get(meta.split(os.sep)[-3], tested)


def _supported_versions_rows():
    with open(os.path.join(ROOT, 'README.md')) as handle:
        text = handle.read()
    section = text.split('## Supported versions', 1)[1].split('\n## ', 1)[0]
    return [line for line in section.splitlines() if line.startswith('| ')]


@pytest.mark.parametrize('row', list(distributions.DISTRIBUTIONS), ids=[r['codename'] for r in distributions.DISTRIBUTIONS])
def test_readme_says_what_is_tested(row):
    lines = [line for line in _supported_versions_rows() if line.startswith('| %s' % re.sub(r' \(.*', '', row['name']))]
    assert len(lines) == 1, 'README "Supported versions" has no single row for %s' % row['name']
    assert ('**not tested**' in lines[0]) is (not row['tested']), lines[0]
    assert row['slurm'] in lines[0]


@pytest.mark.parametrize('name, version, expected', [
    ('debian', '12', 'Debian 12 (bookworm)'),
    ('Debian', '13', 'Debian 13 (trixie)'),
    ('ubuntu', '22.04', 'Ubuntu 22.04 (jammy)'),
    ('Ubuntu', '24', 'Ubuntu 24.04 (noble)'),       # Ansible's distribution_major_version
    ('Ubuntu', '24.04.2', 'Ubuntu 24.04 (noble)'),  # distribution_version
    ('ubuntu', 'noble', 'Ubuntu 24.04 (noble)'),
    ('ubuntu', '26.04', ''),
    ('rocky', '9.4', ''),
    (None, None, ''),
])
def test_find(name, version, expected):
    assert distributions.find(name, version)['name'] == expected
