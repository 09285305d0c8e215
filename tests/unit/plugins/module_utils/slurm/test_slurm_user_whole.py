# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_user compared whole (issue 43): every message word for word, the id limits on both sides, the default prefix,
getent answers with keys it did not find before the one it found."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_user as su

EXPECTED = "expected a number from 1 to 4294967294, not 65534 or 65535 (Debian's slurm has 64030)"


def test_the_constants():
    assert (su.DEFAULT_ID, su.MAX_ID) == (64030, 4294967294)


@pytest.mark.parametrize('value, number', [(1, 1), (' 990 ', 990), (4294967294, 4294967294), (65533, 65533), (65536, 65536)])
def test_ids_taken(value, number):
    assert su.check_ids(value, value) == (number, number)


@pytest.mark.parametrize('value', [0, 65534, 65535, 4294967295, 4294967296, -1, '1.5', '', False, None,
                                   '\u00b2', '\u0661\u0662', '12\n3'])
def test_ids_refused_whole(value):
    with pytest.raises(InputError) as err:
        su.check_ids(1, value)
    assert str(err.value) == 'slurm_user_gid is %r, %s' % (value, EXPECTED)
    with pytest.raises(InputError) as err:
        su.check_ids(value, 1, prefix='slurmdbd_user')
    assert str(err.value) == 'slurmdbd_user_uid is %r, %s' % (value, EXPECTED)


def problem(passwd_by_name=None, passwd_by_uid=None, group_by_name=None, group_by_gid=None, uid=990, gid=991, **kwargs):
    return su.host_problem('gpu-01', 'slurm', uid, gid, passwd_by_name, passwd_by_uid, group_by_name, group_by_gid, **kwargs)


@pytest.mark.parametrize('kwargs, message', [
    ({}, ''),
    ({'passwd_by_name': {'slurm': ['x', 990, 991, '', '/', '/bin/false']}, 'group_by_name': {'slurm': ['x', 991, '']}}, ''),
    # getent answers by uid and gid are keyed by the name they found: the user and group themselves
    ({'passwd_by_uid': {'slurm': ['x', '990', '991']}, 'group_by_gid': {'slurm': ['x', '991', '']}}, ''),
    ({'passwd_by_uid': {'990': None, 'slurm': ['x', '990', '991']}}, ''),
    ({'passwd_by_name': {'slurm': ['x', '1001', '1002', '', '/', '/bin/false']}},
     'slurm_user_uid is 990, but on gpu-01 the user slurm already has uid 1001 (gid 1002), expected 1001: set slurm_user_uid: 1001 and '
     'slurm_user_gid: 1002 for every host to keep the ids it has, or change the user there first; nothing was changed'),
    ({'passwd_by_name': {'slurm': ['x', '990', '1002', '', '/', '/bin/false']}, 'prefix': 'slurmdbd_user'},
     'slurmdbd_user_gid is 991, but on gpu-01 the user slurm (uid 990) already has the primary group gid 1002, expected 1002: set '
     'slurmdbd_user_uid: 990 and slurmdbd_user_gid: 1002 for every host to keep the ids it has, or change the user there first; nothing '
     'was changed'),
    ({'passwd_by_uid': {'990': None, 'munge': ['x', '990', '990']}},
     'slurm_user_uid is 990, but on gpu-01 the uid 990 belongs to the user munge, expected a uid no other user has on any Slurm host '
     '(the slurm user gets it on every host); nothing was changed'),
    ({'group_by_name': {'slurm': ['x', '2000', '']}},
     'slurm_user_gid is 991, but on gpu-01 the group slurm already has gid 2000, expected 2000: set slurm_user_gid: 2000 for every host, '
     'or change the group there first; nothing was changed'),
    ({'group_by_name': {'other': ['x', '2000', '']}, 'group_by_gid': {'slurm': ['x', '991', '']}}, ''),
    ({'group_by_gid': {'991': None, 'render': ['x', '991', '']}},
     'slurm_user_gid is 991, but on gpu-01 the gid 991 belongs to the group render, expected a gid no other group has on any Slurm host '
     '(the slurm group gets it on every host); nothing was changed'),
    ({'uid': 65535}, 'slurm_user_uid is 65535, %s' % EXPECTED),
    ({'gid': 0, 'prefix': 'x'}, 'x_gid is 0, %s' % EXPECTED),
])
def test_host_problem_whole(kwargs, message):
    assert problem(**kwargs) == message


def test_a_user_of_another_name_in_passwd_by_name_is_not_the_user():
    # the answer names another user only: the slurm user is not there
    assert problem(passwd_by_name={'other': ['x', '5', '5']}) == ''


@pytest.mark.parametrize('values, message', [
    (None, ''),
    ({}, ''),
    ({'a': {'uid': 1, 'gid': 2}, 'b': {'uid': '1', 'gid': 2}}, ''),
    ({'a': {'uid': 1, 'gid': 2}, 'b': None, 'c': {'uid': 1, 'gid': 3}},
     "slurm_user_uid differs between the hosts (1 on a, c; None on b), expected one value for every host: Slurm's files "
     '(StateSaveLocation, spool, logs) and its messages carry the id, and a node with another one cannot read them'),
    ({'a': {'uid': 1, 'gid': 2}, 'c': {'uid': 1, 'gid': 3}},
     "slurm_user_gid differs between the hosts (2 on a; 3 on c), expected one value for every host: Slurm's files "
     '(StateSaveLocation, spool, logs) and its messages carry the id, and a node with another one cannot read them'),
])
def test_spread_problem_whole(values, message):
    assert su.spread_problem(values) == message


def test_spread_problem_prefix():
    assert su.spread_problem({'a': {'uid': 1}, 'b': {'uid': 2}}, 'munge_user').startswith(
        'munge_user_uid differs between the hosts (1 on a; 2 on b), expected')
