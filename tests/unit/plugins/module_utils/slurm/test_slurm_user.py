# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_user: SlurmUser with a fixed uid and gid, checked against a host's getent answers (issue 46 item 1); the
flavour filters that give slurmdbd, pam_slurm_adopt and pyxis their package names.

The getent answers are in the form ansible.builtin.getent gives them (``{name: [fields]}``, ``{key: None}`` for a key it
did not find); Debian's slurm is uid/gid 64030 (slurm-wlm-basic-plugins 24.11.5-4+deb13u1 postinst and sysusers.d)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.gpucluster.bringup.plugins.filter import slurm_flavour, slurm_user
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_user as su

DEBIANS = {'slurm': ['x', '64030', '64030', '', '/nonexistent', '/usr/sbin/nologin']}
NONE_P = {'slurm': None}
GROUP = {'slurm': ['x', '64030', '']}


def facts(**changes):
    doc = {'host': 'gpu-01', 'user': 'slurm', 'uid': 64030, 'gid': 64030, 'passwd_by_name': NONE_P, 'passwd_by_uid': {'64030': None},
           'group_by_name': {'slurm': None}, 'group_by_gid': {'64030': None}, 'spread': {}}
    doc.update(changes)
    return doc


@pytest.mark.parametrize('changes', [
    {},                                                      # a fresh host: nothing there
    {'passwd_by_name': DEBIANS, 'passwd_by_uid': DEBIANS, 'group_by_name': GROUP, 'group_by_gid': GROUP},   # Debian's
    {'uid': '64030', 'gid': '64030'},                        # strings, as templated
    {'uid': 990, 'gid': 990, 'spread': {'ctl': {'uid': 990, 'gid': 990}, 'gpu-01': {'uid': '990', 'gid': '990'}}},
    {'passwd_by_name': {}, 'passwd_by_uid': {}, 'group_by_name': {}, 'group_by_gid': {}},
])
def test_no_problem(changes):
    assert slurm_user.slurm_user_problem(facts(**changes)) == ''


@pytest.mark.parametrize('changes, prefix, message', [
    ({'passwd_by_name': {'slurm': ['x', '1001', '1001', '', '/home/slurm', '/bin/bash']}}, 'slurm_user',
     'slurm_user_uid is 64030, but on gpu-01 the user slurm already has uid 1001 (gid 1001), expected 1001: set slurm_user_uid: '
     '1001 and slurm_user_gid: 1001 for every host to keep the ids it has, or change the user there first; nothing was changed'),
    ({'passwd_by_name': {'slurm': ['x', '64030', '100', '', '/nonexistent', '/usr/sbin/nologin']}}, 'slurm_user',
     'slurm_user_gid is 64030, but on gpu-01 the user slurm (uid 64030) already has the primary group gid 100, expected 100'),
    ({'passwd_by_uid': {'munge': ['x', '64030', '64030', '', '/nonexistent', '/usr/sbin/nologin']}}, 'slurm_user',
     'slurm_user_uid is 64030, but on gpu-01 the uid 64030 belongs to the user munge, expected a uid no other user has'),
    ({'group_by_name': {'slurm': ['x', '2000', '']}}, 'slurm_user',
     'slurm_user_gid is 64030, but on gpu-01 the group slurm already has gid 2000, expected 2000: set slurm_user_gid: 2000'),
    ({'group_by_gid': {'render': ['x', '64030', '']}}, 'slurm_user',
     'slurm_user_gid is 64030, but on gpu-01 the gid 64030 belongs to the group render, expected a gid no other group has'),
    ({'uid': 0}, 'slurm_user', 'slurm_user_uid is 0, expected a number from 1 to 4294967294, not 65534 or 65535'),
    ({'uid': 65534}, 'slurm_user', 'slurm_user_uid is 65534, expected'),
    ({'gid': 'slurm'}, 'slurm_user', "slurm_user_gid is 'slurm', expected a number"),
    ({'gid': -5}, 'slurm_user', 'slurm_user_gid is -5, expected'),
    ({'uid': True}, 'slurm_user', 'slurm_user_uid is True, expected'),
    ({'uid': None}, 'slurm_user', 'slurm_user_uid is None, expected'),
    ({'spread': {'ctl': {'uid': 64030, 'gid': 64030}, 'gpu-01': {'uid': 64030, 'gid': 64030}, 'gpu-02': {'uid': 1001, 'gid': 64030}}},
     'slurm_user', 'slurm_user_uid differs between the hosts (64030 on ctl, gpu-01; 1001 on gpu-02), expected one value for every host'),
    ({'spread': {'ctl': {'uid': 64030, 'gid': 64030}, 'gpu-01': {'uid': 64030, 'gid': 7}}},
     'slurm_user', 'slurm_user_gid differs between the hosts (64030 on ctl; 7 on gpu-01)'),
    ({'passwd_by_name': {'slurm': ['x', '1001', '1001', '', '/home/slurm', '/bin/bash']}}, 'slurm_user',
     'slurm_user_uid is 64030, but on gpu-01 the user slurm already has uid 1001 (gid 1001), expected 1001: set slurm_user_uid'),
])
def test_problem(changes, prefix, message):
    assert message in slurm_user.slurm_user_problem(facts(**changes), prefix)


def test_check_ids():
    assert su.check_ids('64030', 990) == (64030, 990)
    with pytest.raises(InputError, match='slurm_user_uid is 4294967295'):
        su.check_ids(4294967295, 1)


@pytest.mark.parametrize('flavour, part, package', [
    ('debian', 'slurmdbd', 'slurmdbd'), ('smd', 'slurmdbd', 'slurm-smd-slurmdbd'), ('', 'pam_slurm_adopt', 'libpam-slurm-adopt'),
    (None, 'dev', 'libslurm-dev'), ('smd', 'pam_slurm_adopt', 'slurm-smd-libpam-slurm-adopt'), ('smd', 'dev', 'slurm-smd-dev'),
])
def test_slurm_package_of(flavour, part, package):
    assert slurm_flavour.slurm_package_of(flavour, part) == package


@pytest.mark.parametrize('args, message', [
    (('rpm', 'dev'), "slurm_package_of: flavour is 'rpm', expected one of: debian, smd"),
    (('smd', 'headers'), "slurm_package_of: part is 'headers', expected one of"),
])
def test_slurm_package_of_bad_input(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        slurm_flavour.slurm_package_of(*args)


@pytest.mark.parametrize('packages, flavour, out', [
    (['gcc', 'make', 'libslurm-dev'], 'smd', ['gcc', 'make', 'slurm-smd-dev']),
    (['gcc', 'make', 'libslurm-dev'], 'debian', ['gcc', 'make', 'libslurm-dev']),
    (['slurmdbd', 'slurm-client'], 'smd', ['slurm-smd-slurmdbd', 'slurm-smd-client']),
    (['slurmdbd', 'slurm-client'], '', ['slurmdbd', 'slurm-client']),
    # the NVML and MySQL plugins are both inside slurm-smd: once
    (['slurm-wlm-nvml-plugin', 'slurm-wlm-mysql-plugin'], 'smd', ['slurm-smd']),
])
def test_slurm_packages_of(packages, flavour, out):
    assert slurm_flavour.slurm_packages_of(packages, flavour) == out


@pytest.mark.parametrize('files, flavour, version, release, problem', [
    (['/d/slurm-smd_26.05.3-1_amd64.deb', '/d/slurm-smd-slurmdbd_26.05.3-1_amd64.deb'], 'smd', '26.05.3', '26.05', ''),
    (['/d/slurmdbd_24.11.5-4+deb13u1_amd64.deb', '/d/slurm-client_24.11.5-4+deb13u1_amd64.deb'], 'debian', '24.11.5', '24.11', ''),
    (['/d/libpmix-dev_5.0.7-1_amd64.deb'], None, '', '', ''),
    ([], None, '', '', ''),
    (['/d/slurm-smd_26.05.3-1_amd64.deb', '/d/slurmdbd_24.11.5-4_amd64.deb'], None, '', '',
     "slurm_local_package_dir holds both Debian's Slurm packages (slurmdbd_24.11.5-4_amd64.deb) and SchedMD's"),
    (['/d/slurm-smd_26.05.3-1_amd64.deb', '/d/slurm-smd-slurmdbd_26.05.2-1_amd64.deb'], None, '', '',
     'slurm_local_package_dir holds Slurm packages of 2 versions'),
])
def test_slurm_package_directory(files, flavour, version, release, problem):
    found = slurm_flavour.slurm_package_directory(files)
    assert (found['flavour'], found['version'], found['release']) == (flavour, version, release)
    assert found['problem'].startswith(problem) and bool(found['problem']) == bool(problem)
