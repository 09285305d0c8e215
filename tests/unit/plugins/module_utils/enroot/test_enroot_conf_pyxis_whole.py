# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_enroot_conf and _pyxis: whole merged settings, whole messages, both sides of each limit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_conf as conf
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _pyxis

DEFAULT_SETTINGS = {
    'ENROOT_RUNTIME_PATH': '/run/enroot/user-$(id -u)', 'ENROOT_CACHE_PATH': '/tmp/enroot-cache/group-$(id -g)',
    'ENROOT_DATA_PATH': '/tmp/enroot-data/user-$(id -u)', 'ENROOT_TEMP_PATH': '/tmp', 'ENROOT_CONFIG_PATH': '${HOME}/.config/enroot',
    'ENROOT_SQUASH_OPTIONS': '-comp lzo -noD -exit-on-error', 'ENROOT_MAX_PROCESSORS': 0, 'ENROOT_MAX_CONNECTIONS': 10,
    'ENROOT_CONNECT_TIMEOUT': 30, 'ENROOT_TRANSFER_TIMEOUT': 0, 'ENROOT_TRANSFER_RETRIES': 3, 'ENROOT_REMAP_ROOT': False,
    'ENROOT_MOUNT_HOME': False, 'ENROOT_RESTRICT_DEV': True, 'ENROOT_ROOTFS_WRITABLE': False, 'ENROOT_ALLOW_HTTP': False}


def test_settings_whole_and_in_order():
    merged = conf.settings({'ENROOT_ZSTD_OPTIONS': '-1', 'ENROOT_BUNDLE_ALL': True, 'ENROOT_TEMP_PATH': '/scratch'})
    assert merged == dict(DEFAULT_SETTINGS, ENROOT_TEMP_PATH='/scratch', ENROOT_ZSTD_OPTIONS='-1', ENROOT_BUNDLE_ALL=True)
    assert list(merged) == [key for key, _default in conf.DEFAULTS] + ['ENROOT_BUNDLE_ALL', 'ENROOT_ZSTD_OPTIONS']
    assert conf.settings(None) == conf.settings({}) == DEFAULT_SETTINGS


@pytest.mark.parametrize('value, expected', [
    ('yes', True), ('On', True), ('TRUE', True), ('1', True), ('no', False), ('OFF', False), ('false', False), ('0', False),
    (True, True), (False, False),
])
def test_booleans_as_ansible_reads_them(value, expected):
    assert conf.settings({'ENROOT_ALLOW_HTTP': value})['ENROOT_ALLOW_HTTP'] is expected


@pytest.mark.parametrize('value, expected', [(' 5 ', 5), ('-2', -2), ('0', 0), (7, 7)])
def test_whole_numbers_from_strings(value, expected):
    assert conf.settings({'ENROOT_MAX_CONNECTIONS': value})['ENROOT_MAX_CONNECTIONS'] == expected


@pytest.mark.parametrize('given, message', [
    ({'zstd': 1, 'Enroot_x': 2, 'ENROOT_OK': 3}, 'enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), '
                                                 'these do not: zstd, Enroot_x'),
    ({'ENROOT_': 1, 'ENROOT_A1': 2}, 'enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do '
                                     'not: ENROOT_, ENROOT_A1'),
    (['ENROOT_ALLOW_HTTP'], "enroot_conf is ['ENROOT_ALLOW_HTTP']; expected a mapping of enroot.conf keys (ENROOT_NAME) to values"),
    ({'ENROOT_ALLOW_HTTP': 'maybe'}, "enroot_conf.ENROOT_ALLOW_HTTP is 'maybe'; expected true or false"),
    ({'ENROOT_ALLOW_HTTP': 1}, 'enroot_conf.ENROOT_ALLOW_HTTP is 1; expected true or false'),
    ({'ENROOT_MAX_CONNECTIONS': 'ten'}, "enroot_conf.ENROOT_MAX_CONNECTIONS is 'ten'; expected a whole number"),
    ({'ENROOT_MAX_CONNECTIONS': '1.5'}, "enroot_conf.ENROOT_MAX_CONNECTIONS is '1.5'; expected a whole number"),
    ({'ENROOT_MAX_CONNECTIONS': '5x'}, "enroot_conf.ENROOT_MAX_CONNECTIONS is '5x'; expected a whole number"),
    ({'ENROOT_MAX_CONNECTIONS': True}, 'enroot_conf.ENROOT_MAX_CONNECTIONS is True; expected a whole number'),
    ({'ENROOT_MAX_CONNECTIONS': 2.0}, 'enroot_conf.ENROOT_MAX_CONNECTIONS is 2.0; expected a whole number'),
    ({'ENROOT_DATA_PATH': 5}, 'enroot_conf.ENROOT_DATA_PATH is 5; expected a string'),
])
def test_bad_input_whole_message(given, message):
    with pytest.raises(ValueError) as raised:
        conf.settings(given)
    assert str(raised.value) == message


def test_bad_keys():
    assert conf.bad_keys(None) == []
    assert conf.bad_keys({1: 'x', 'ENROOT_X': 1, 'enroot_y': 2}) == ['1', 'enroot_y']


@pytest.mark.parametrize('processors, line', [(0, None), (-1, None), (1, 'ENROOT_MAX_PROCESSORS 1'), ('2', 'ENROOT_MAX_PROCESSORS 2')])
def test_max_processors_written_only_above_zero(processors, line):
    lines = conf.conf_lines({'ENROOT_MAX_PROCESSORS': processors})
    assert [text for text in lines if text.startswith('ENROOT_MAX_PROCESSORS')] == ([] if line is None else [line])
    assert len(lines) == 15 + (line is not None)


def test_conf_lines_whole():
    assert conf.conf_lines({'ENROOT_REMAP_ROOT': 'on', 'ENROOT_X': False}, '/ca.pem') == [
        'ENROOT_RUNTIME_PATH /run/enroot/user-$(id -u)', 'ENROOT_CACHE_PATH /tmp/enroot-cache/group-$(id -g)',
        'ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u)', 'ENROOT_TEMP_PATH /tmp', 'ENROOT_CONFIG_PATH ${HOME}/.config/enroot',
        'ENROOT_SQUASH_OPTIONS -comp lzo -noD -exit-on-error', 'ENROOT_MAX_CONNECTIONS 10', 'ENROOT_CONNECT_TIMEOUT 30',
        'ENROOT_TRANSFER_TIMEOUT 0', 'ENROOT_TRANSFER_RETRIES 3', 'ENROOT_REMAP_ROOT yes', 'ENROOT_MOUNT_HOME no',
        'ENROOT_RESTRICT_DEV yes', 'ENROOT_ROOTFS_WRITABLE no', 'ENROOT_ALLOW_HTTP no', 'SSL_CERT_FILE /ca.pem', 'ENROOT_X False']
    assert 'SSL_CERT_FILE' not in ' '.join(conf.conf_lines({}))


# ---- _pyxis -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('given, message', [
    (['job'], "pyxis_conf is ['job']; expected a mapping (keys: container_scope, execute_entrypoint, importer, runtime_path, "
              'sbatch_support, use_enroot_load, use_squashfuse)'),
    ({'scope': 'job', 'b': 1, 'runtime_path': '/r'}, 'pyxis_conf has unknown key(s) b, scope; valid keys: container_scope, '
                                                     'execute_entrypoint, importer, runtime_path, sbatch_support, use_enroot_load, '
                                                     'use_squashfuse'),
])
def test_pyxis_conf_bad_input_whole_message(given, message):
    with pytest.raises(ValueError) as raised:
        _pyxis.merged(_pyxis.CONF, given, _pyxis.CONF_DEFAULTS)
    assert str(raised.value) == message


def test_pyxis_merged_whole():
    assert _pyxis.merged(_pyxis.CONF, None, _pyxis.CONF_DEFAULTS) == _pyxis.CONF_DEFAULTS
    merged = _pyxis.merged(_pyxis.BUILD, {'packages': ['gcc']}, _pyxis.BUILD_DEFAULTS)
    assert merged == {'dir': '/var/cache/gpucluster/pyxis', 'prefix': '/usr/local', 'packages': ['gcc'],
                      'slurm_include_dir': '/usr/include/slurm'}
    _pyxis.merged(_pyxis.BUILD, {}, _pyxis.BUILD_DEFAULTS)['packages'].append('cmake')
    assert _pyxis.BUILD_DEFAULTS['packages'] == ['gcc', 'make', 'libslurm-dev']
    assert _pyxis.CONF_DEFAULTS == {'runtime_path': '/run/pyxis', 'execute_entrypoint': False, 'container_scope': 'global',
                                    'sbatch_support': True, 'use_enroot_load': False, 'importer': '', 'use_squashfuse': False}


def test_pyxis_plugstack_options_whole():
    assert _pyxis.plugstack_options(None) == ['runtime_path=/run/pyxis', 'execute_entrypoint=0', 'container_scope=global',
                                              'sbatch_support=1']
    assert _pyxis.plugstack_options({'runtime_path': '/r', 'execute_entrypoint': True, 'sbatch_support': False, 'importer': '/i',
                                     'use_enroot_load': True, 'use_squashfuse': True}) == [
        'runtime_path=/r', 'execute_entrypoint=1', 'container_scope=global', 'sbatch_support=0', 'use_enroot_load=1', 'importer=/i',
        'use_squashfuse=1']
