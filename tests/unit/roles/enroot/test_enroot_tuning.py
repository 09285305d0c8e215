# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tuning that real sites ask for (issue 45, item 6), and the registry CA: each variable validated by the collection's
preflight (one message naming it, the value and what is valid) and rendered into the file the node reads.

* the preflight: ``preflight._roles.role_problems`` with the role's argument spec and defaults, as the preflight task runs it;
* the files: templates/enroot.conf.j2 and pyxis.conf.j2 rendered with the role's defaults and vars and the collection's
  filters (tests/unit/enroot_role.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_spec import role_value_problems
from ansible_collections.gpucluster.bringup.tests.unit import enroot_role

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
CA = '''-----BEGIN CERTIFICATE-----
MIIBszCCAVmgAwIBAgIUQ2FmZWJhYmVjYWZlYmFiZWNhZmViYWJlMAoGCCqGSM49
BAMCMBUxEzARBgNVBAMMCnNpdGUtY2EtMDEwHhcNMjQwMTAxMDAwMDAwWhcNMzQw
MTAxMDAwMDAwWjAVMRMwEQYDVQQDDApzaXRlLWNhLTAxMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAE
-----END CERTIFICATE-----
'''


def problems(role, **values):
    with open(os.path.join(ROOT, 'roles', role, 'meta', 'argument_specs.yml')) as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    with open(os.path.join(ROOT, 'roles', role, 'defaults', 'main.yml')) as handle:
        found = dict((k, v) for k, v in yaml.safe_load(handle).items() if not (isinstance(v, str) and '{{' in v))
    found.update(values)
    return role_value_problems(role, 'gpu-01', options, found, {'all': ['gpu-01']})


@pytest.mark.parametrize('role', ['enroot', 'pyxis'])
def test_defaults_pass(role):
    assert problems(role) == []


@pytest.mark.parametrize('values', [
    {'enroot_conf': {'ENROOT_SQUASH_OPTIONS': '-comp zstd -Xcompression-level 3 -exit-on-error'}},
    {'enroot_conf': {'ENROOT_SQUASH_OPTIONS': '-noI -noD -noF -noX -exit-on-error'}},
    {'enroot_conf': {'ENROOT_CACHE_PATH': '/raid/enroot/cache/group-$(id -g)', 'ENROOT_DATA_PATH': '${HOME}/.local/share/enroot'}},
    {'enroot_conf': {'ENROOT_TEMP_PATH': '${TMPDIR}', 'ENROOT_RUNTIME_PATH': '/run/enroot/user-$(id -u)'}},
    {'enroot_registry_ca_certificates': CA},
    {'enroot_registry_ca_certificates': CA + '\n' + CA},
    {'pyxis_conf': {'container_scope': 'job', 'sbatch_support': False, 'importer': '/usr/local/libexec/pyxis-importer'}},
])
def test_what_sites_choose_passes(values):
    role = 'pyxis' if any(k.startswith('pyxis_') for k in values) else 'enroot'
    assert problems(role, **values) == []


@pytest.mark.parametrize('values, message', [
    ({'enroot_conf': {'ENROOT_SQUASH_OPTIONS': '-comp zstd'}},
     "enroot_conf.ENROOT_SQUASH_OPTIONS is '-comp zstd', expected options that keep -exit-on-error (without it mksquashfs skips a file it "
     "cannot read and enroot import succeeds with an image that lacks it), e.g. '-comp zstd -exit-on-error'"),
    ({'enroot_conf': {'ENROOT_SQUASH_OPTIONS': ''}},
     "enroot_conf.ENROOT_SQUASH_OPTIONS is '', expected mksquashfs options such as \"-comp lzo -noD -exit-on-error\" (enroot's default)"),
    ({'enroot_conf': {'ENROOT_SQUASH_OPTIONS': '-comp lzo -exit-on-error $(rm -rf /)'}},
     "enroot_conf.ENROOT_SQUASH_OPTIONS is '-comp lzo -exit-on-error $(rm -rf /)', expected mksquashfs options only (enroot passes them "
     "unquoted, word by word): '$(rm', '/)' is not one"),
    ({'enroot_conf': {'ENROOT_CACHE_PATH': 'enroot-cache'}},
     "enroot_conf.ENROOT_CACHE_PATH is 'enroot-cache', expected an absolute path without blanks (but in $(...)), in which enroot expands $(id -u), "
     "$(id -g), ${HOME} per user (e.g. '/tmp/enroot-data/user-$(id -u)')"),
    ({'enroot_conf': {'ENROOT_DATA_PATH': '/shared data/enroot'}},
     "enroot_conf.ENROOT_DATA_PATH is '/shared data/enroot', expected an absolute path without blanks (but in $(...)), in which enroot expands $(id -u), "
     "$(id -g), ${HOME} per user (e.g. '/tmp/enroot-data/user-$(id -u)')"),
    ({'enroot_registry_ca_certificates': '/usr/local/share/ca-certificates/site.crt'},
     "enroot_registry_ca_certificates is '/usr/local/share/ca-certificates/site.crt', expected the PEM text of one or more CA "
     'certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----), e.g. what the ansible.builtin.file lookup reads '
     'from a site-ca.pem; a path on the nodes is not read'),
    ({'enroot_registry_ca_certificates': CA + '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'},
     "enroot_registry_ca_certificates is '-----BEGIN CERTIFICATE-----'..., expected the PEM text of one or more CA certificates "
     '(-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----) and nothing else, e.g. what the ansible.builtin.file lookup '
     'reads from a site-ca.pem; a path on the nodes is not read'),
    ({'enroot_registry_ca_certificates': CA.replace('KoZIzj0DAQcDQgAE', 'KoZIzj0DAQcDQgA')},
     'enroot_registry_ca_certificates holds a certificate whose base64 text is cut (207 characters, not a multiple of 4); expected '
     'whole PEM certificates'),
    ({'pyxis_conf': {'importer': 'bin/importer'}},
     "pyxis_conf.importer must be an absolute path to an executable on the nodes, got 'bin/importer'"),
])
def test_bad_value_one_message(values, message):
    role = 'pyxis' if any(k.startswith('pyxis_') for k in values) else 'enroot'
    assert problems(role, **values) == [message]


@pytest.mark.parametrize('values, fragment', [
    ({'pyxis_conf': {'container_scope': 'node'}}, 'pyxis_conf.container_scope'),
    ({'pyxis_conf': {'sbatch_support': 'sometimes'}}, 'pyxis_conf.sbatch_support'),
])
def test_pyxis_choices_and_booleans(values, fragment):
    found = problems('pyxis', **values)
    assert len(found) == 1 and fragment in found[0] and list(values['pyxis_conf'].values())[0] in found[0], found


def _conf_lines(text):
    return [line for line in text.splitlines() if line and not line.startswith('#')]


def test_enroot_conf_renders_the_tuning():
    conf, ca = enroot_role.enroot_conf(enroot_conf={'ENROOT_SQUASH_OPTIONS': '-comp zstd -Xcompression-level 3 -exit-on-error',
                                                    'ENROOT_CACHE_PATH': '/raid/enroot/cache/group-$(id -g)',
                                                    'ENROOT_DATA_PATH': '/raid/enroot/data/user-$(id -u)'}, enroot_registry_ca_certificates=CA)
    lines = _conf_lines(conf)
    assert 'ENROOT_SQUASH_OPTIONS -comp zstd -Xcompression-level 3 -exit-on-error' in lines
    assert 'ENROOT_CACHE_PATH /raid/enroot/cache/group-$(id -g)' in lines
    assert 'ENROOT_DATA_PATH /raid/enroot/data/user-$(id -u)' in lines
    assert lines[-1] == 'SSL_CERT_FILE /etc/enroot/registry-ca.pem'
    assert ca == _enroot.ca_bundle(CA) and ca.startswith('-----BEGIN CERTIFICATE-----\n') and ca.endswith('-----END CERTIFICATE-----\n')


def test_enroot_conf_defaults_keep_caches_off_shared_file_systems():
    conf, ca = enroot_role.enroot_conf()
    lines = _conf_lines(conf)
    assert 'ENROOT_SQUASH_OPTIONS -comp lzo -noD -exit-on-error' in lines
    assert 'ENROOT_CACHE_PATH /tmp/enroot-cache/group-$(id -g)' in lines
    assert 'ENROOT_DATA_PATH /tmp/enroot-data/user-$(id -u)' in lines
    assert not [line for line in lines if line.startswith('SSL_CERT')] and ca == ''


@pytest.mark.parametrize('values, option', [
    ({'pyxis_conf': {'container_scope': 'job'}}, 'container_scope=job'),
    ({'pyxis_conf': {'container_scope': 'global'}}, 'container_scope=global'),
    ({'pyxis_conf': {'sbatch_support': False}}, 'sbatch_support=0'),
    ({'pyxis_conf': {'sbatch_support': True}}, 'sbatch_support=1'),
    ({'pyxis_conf': {'importer': '/usr/local/libexec/pyxis-importer'}}, 'importer=/usr/local/libexec/pyxis-importer'),
])
def test_pyxis_conf_renders_the_tuning(values, option):
    text, _ca = enroot_role.render('pyxis', 'pyxis.conf.j2', ansible_facts={'architecture': 'x86_64'}, **values)
    line = _conf_lines(text)[0]
    assert option in line.split(), line
    if 'importer' not in values['pyxis_conf']:
        assert not [word for word in line.split() if word.startswith('importer=')]
