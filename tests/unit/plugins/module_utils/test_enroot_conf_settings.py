# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot_conf merged over the role's defaults (issue 43: one dict of enroot.conf settings) and the lines it writes."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_conf as conf

# what templates/enroot.conf.j2 wrote with the role's defaults before enroot_conf
BEFORE = ['ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)', 'ENROOT_CACHE_PATH /tmp/enroot-cache/group-$(id -g)',
          'ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u)', 'ENROOT_TEMP_PATH /tmp', 'ENROOT_CONFIG_PATH ${HOME}/.config/enroot',
          'ENROOT_SQUASH_OPTIONS -comp lzo -noD -exit-on-error', 'ENROOT_MAX_CONNECTIONS 10', 'ENROOT_CONNECT_TIMEOUT 30',
          'ENROOT_TRANSFER_TIMEOUT 0', 'ENROOT_TRANSFER_RETRIES 3', 'ENROOT_REMAP_ROOT no', 'ENROOT_MOUNT_HOME no',
          'ENROOT_RESTRICT_DEV yes', 'ENROOT_ROOTFS_WRITABLE no', 'ENROOT_ALLOW_HTTP no']


def test_defaults_write_what_the_role_wrote():
    assert conf.conf_lines({}) == BEFORE
    assert conf.conf_lines(None) == BEFORE


@pytest.mark.parametrize('given, ca, changed, tail', [
    ({'ENROOT_MAX_PROCESSORS': 4}, '', {6: 'ENROOT_MAX_PROCESSORS 4'}, []),
    ({'ENROOT_ALLOW_HTTP': True, 'ENROOT_MOUNT_HOME': 'yes'}, '', {11: 'ENROOT_MOUNT_HOME yes', 14: 'ENROOT_ALLOW_HTTP yes'}, []),
    ({'ENROOT_CONNECT_TIMEOUT': '5'}, '', {7: 'ENROOT_CONNECT_TIMEOUT 5'}, []),
    # SSL_CERT_FILE, then the other keys by name
    ({'ENROOT_ZSTD_OPTIONS': '-1', 'ENROOT_BUNDLE_ALL': True}, '/etc/enroot/registry-ca.pem', {},
     ['SSL_CERT_FILE /etc/enroot/registry-ca.pem', 'ENROOT_BUNDLE_ALL True', 'ENROOT_ZSTD_OPTIONS -1']),
])
def test_given_keys(given, ca, changed, tail):
    expected = list(BEFORE)
    for index, line in sorted(changed.items(), reverse=True):
        if line.startswith('ENROOT_MAX_PROCESSORS'):
            expected.insert(index, line)
        else:
            expected[index] = line
    assert conf.conf_lines(given, ca) == expected + tail


@pytest.mark.parametrize('given, fragment', [
    ({'zstd': 1, 'Enroot_x': 2}, 'enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: zstd, Enroot_x'),
    ({'ENROOT_ALLOW_HTTP': 'maybe'}, "enroot_conf.ENROOT_ALLOW_HTTP is 'maybe'; expected true or false"),
    ({'ENROOT_MAX_CONNECTIONS': 'ten'}, "enroot_conf.ENROOT_MAX_CONNECTIONS is 'ten'; expected a whole number"),
    ({'ENROOT_DATA_PATH': 5}, 'enroot_conf.ENROOT_DATA_PATH is 5; expected a string'),
    (['ENROOT_ALLOW_HTTP'], 'enroot_conf is'),
])
def test_bad_input_names_the_key(given, fragment):
    with pytest.raises(ValueError) as raised:
        conf.settings(given)
    assert fragment in str(raised.value)
