# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot role's own files, rendered and read as Ansible would, without running a play.

* the release file names of roles/enroot/vars/main.yml against _enroot.package_files (enroot's
  doc/installation.md: enroot[+caps]_<version>-<release>_<debarch>.deb);
* the defaults are not weaker than enroot's own (ENROOT_SQUASH_OPTIONS of enroot >= 4.1);
* the registry credentials: templates/credentials.j2 rendered from a sample is the netrc file
  enroot hands to curl (one "machine HOST login USER password PASS" line each, NGC's two lines
  from enroot_ngc_api_key), and tasks/credentials.yml writes it 0600, owned by
  enroot_credentials_user, in a 0700 directory, with no_log and no diff.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import netrc
import os

import jinja2
import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_conf
from ansible_collections.gpucluster.bringup.tests.unit.enroot_role import trusted

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'enroot')


def load(relative):
    with open(os.path.join(ROLE, relative)) as handle:
        return yaml.safe_load(handle)


def role_templar(**overrides):
    """A templar with the role's defaults and vars, as a play on a host with these facts/overrides sees them."""
    variables = dict(load('defaults/main.yml'))
    variables.update(load('vars/main.yml'))
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=trusted(variables))


@pytest.mark.parametrize('version, release, machine, caps', [
    ('4.1.2', '1', 'x86_64', True),
    ('4.1.2', '1', 'aarch64', True),
    ('4.1.2', '1', 'ppc64le', False),
    ('4.2.0~rc1', '1', 'x86_64', True),
    ('4.1.2', '2', 's390x', True),
])
def test_role_release_file_names(version, release, machine, caps):
    templar = role_templar(enroot_version=version, enroot_package_release=release, enroot_install_caps=caps,
                           ansible_facts={'architecture': machine})
    assert templar.template(trust_as_template('{{ _enroot_package_files }}')) == _enroot.package_files(version, release, machine, caps)


def test_default_version_and_release_url():
    defaults = load('defaults/main.yml')
    assert defaults['enroot_version'] == '4.1.2'
    templar = role_templar(ansible_facts={'architecture': 'x86_64'})
    assert templar.template(trust_as_template('{{ enroot_release_url }}/{{ _enroot_package_files[0] }}')) == \
        'https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb'


# enroot's conf/enroot.conf.in (4.1 and later): "#ENROOT_SQUASH_OPTIONS -comp lzo -noD -exit-on-error".
ENROOT_SQUASH_DEFAULT = ['-comp', 'lzo', '-noD', '-exit-on-error']


def test_squash_options_not_weaker_than_enroots():
    ours = dict(_enroot_conf.DEFAULTS)['ENROOT_SQUASH_OPTIONS'].split()
    assert [option for option in ENROOT_SQUASH_DEFAULT if option not in ours] == []
    # the argument spec documents the default it has
    specs = load('meta/argument_specs.yml')['argument_specs']['main']['options']
    assert 'C(ENROOT_SQUASH_OPTIONS) C(%s)' % dict(_enroot_conf.DEFAULTS)['ENROOT_SQUASH_OPTIONS'] in ' '.join(specs['enroot_conf']['description'])


SAMPLE = [{'machine': 'registry.example.org', 'login': 'ci-bot', 'password': 's3cr3t-Pa55'},
          {'machine': '127.0.0.1:5000', 'login': 'alice', 'password': 'x$y%z'}]


def render_credentials(credentials, ngc_api_key=''):
    templar = role_templar(enroot_credentials=credentials, enroot_ngc_api_key=ngc_api_key)
    entries = templar.template(trust_as_template('{{ _enroot_all_credentials }}'))
    with open(os.path.join(ROLE, 'templates', 'credentials.j2')) as handle:
        template = jinja2.Template(handle.read(), keep_trailing_newline=True, trim_blocks=True)
    return template.render(_enroot_all_credentials=entries, ansible_managed='Ansible managed')


@pytest.mark.parametrize('credentials, ngc, lines', [
    (SAMPLE, '', ['machine registry.example.org login ci-bot password s3cr3t-Pa55', 'machine 127.0.0.1:5000 login alice password x$y%z']),
    ([], 'nvapi-KEY', ['machine nvcr.io login $oauthtoken password nvapi-KEY', 'machine authn.nvidia.com login $oauthtoken password nvapi-KEY']),
    (SAMPLE[:1], 'nvapi-KEY', ['machine registry.example.org login ci-bot password s3cr3t-Pa55',
                               'machine nvcr.io login $oauthtoken password nvapi-KEY',
                               'machine authn.nvidia.com login $oauthtoken password nvapi-KEY']),
])
def test_credentials_file_is_netrc(tmp_path, credentials, ngc, lines):
    text = render_credentials(credentials, ngc)
    body = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert body == lines
    # The netrc format curl reads (enroot passes the file to curl --netrc-file).
    path = tmp_path / 'credentials'
    path.write_text(text)
    path.chmod(0o600)
    parsed = netrc.netrc(str(path))
    for line in lines:
        _machine, host, _login, login, _password, password = line.split()
        assert parsed.authenticators(host) == (login, '', password)


def test_credentials_tasks_protect_the_file():
    tasks = {task['name']: task for task in load('tasks/credentials.yml')}
    write = tasks['Write the registry credentials']
    assert write['ansible.builtin.template']['src'] == 'credentials.j2'
    assert write['ansible.builtin.template']['dest'] == '{{ enroot_credentials_path }}'
    assert write['ansible.builtin.template']['mode'] == '0600'
    assert write['ansible.builtin.template']['owner'] == '{{ enroot_credentials_user }}'
    assert write['no_log'] is True
    assert write['diff'] is False
    directory = tasks['Create the credentials directory']
    assert directory['ansible.builtin.file']['mode'] == '0700'
    assert directory['ansible.builtin.file']['owner'] == '{{ enroot_credentials_user }}'
    assert directory['ansible.builtin.file']['path'] == '{{ enroot_credentials_path | dirname }}'
    # The entries are checked by the role's preflight (test_preflight.py: it names the machine, never the password),
    # not again here.
    assert not [name for name in tasks if 'credential names' in name]


def test_credentials_path_is_enroots():
    """enroot reads $ENROOT_CONFIG_PATH/.credentials; the default path is root's."""
    defaults = load('defaults/main.yml')
    assert defaults['enroot_credentials_path'] == '/root/.config/enroot/.credentials'
    assert dict(_enroot_conf.DEFAULTS)['ENROOT_CONFIG_PATH'] == '${HOME}/.config/enroot'
    assert defaults['enroot_credentials_user'] == 'root'
