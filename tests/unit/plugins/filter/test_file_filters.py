# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.files import FilterModule

FILTERS = FilterModule().filters()


def test_file_entries():
    assert FILTERS['file_entries'](['/a', '/b/c'], state='directory', mode='1777') == [
        {'dest': '/a', 'state': 'directory', 'mode': '1777'}, {'dest': '/b/c', 'state': 'directory', 'mode': '1777'}]
    assert FILTERS['file_entries']([], state='absent') == []


@pytest.mark.parametrize('paths, attrs, fragment', [
    ('/a', {}, "'/a' is not a list of paths"),
    ([1], {}, 'is not a list of paths'),
    (['/a'], {'dest': '/x'}, 'dest comes from the list'),
])
def test_file_entries_bad(paths, attrs, fragment):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['file_entries'](paths, **attrs)
    assert fragment in str(err.value)


@pytest.mark.parametrize('names, state, expected', [
    (['50-slurm-pmi.sh'], 'link', [{'dest': '/etc/enroot/hooks.d/50-slurm-pmi.sh', 'state': 'link',
                                    'target': '/usr/share/enroot/hooks.d/50-slurm-pmi.sh'}]),
    (['a', 'b'], 'absent', [{'dest': '/etc/enroot/hooks.d/a', 'state': 'absent'},
                            {'dest': '/etc/enroot/hooks.d/b', 'state': 'absent'}]),
    ([], 'link', []),
])
def test_link_entries(names, state, expected):
    assert FILTERS['link_entries'](names, '/usr/share/enroot/hooks.d/', '/etc/enroot/hooks.d', state) == expected


@pytest.mark.parametrize('names, state, fragment', [
    (['a/b'], 'link', 'is not a list of file names'),
    ([''], 'link', 'is not a list of file names'),
    ('a', 'link', 'is not a list of file names'),
    (['a'], 'hard', "state 'hard' is not valid; valid: link, absent"),
])
def test_link_entries_bad(names, state, fragment):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['link_entries'](names, '/s', '/d', state)
    assert fragment in str(err.value)
