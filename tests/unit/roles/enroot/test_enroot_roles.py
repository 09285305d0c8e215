# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot and pyxis roles and the stage_images playbook stop with one clear message.

Each case runs the real role (or playbook) with ansible-playbook in check mode on this
machine (connection local, localhost only) and asserts the message of the failed check.
Kernel settings are read from fixture files through the role's internal path variables.
The check of srun loading the plugin needs an installed Slurm: it is exercised on a node
container (roles/pyxis/README.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.tests.unit.roleplay import preflight_failure

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def _failed_messages(node):
    found = []
    if isinstance(node, dict):
        # A loop's own "One or more items failed" is left out: its items carry the messages.
        if node.get('failed') and isinstance(node.get('msg'), str) and 'results' not in node:
            found.append(node['msg'])
        for value in node.values():
            found.extend(_failed_messages(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_failed_messages(value))
    return found


def run_check(tmp_path, play_or_path, extra_vars, groups=None):
    inventory = {'all': {'hosts': {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
                         'children': groups or {}}}
    (tmp_path / 'hosts.yml').write_text(yaml.safe_dump(inventory))
    if isinstance(play_or_path, str):
        playbook = play_or_path
    else:
        playbook = str(tmp_path / 'play.yml')
        (tmp_path / 'play.yml').write_text(yaml.safe_dump(play_or_path))
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_')}
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'))
    (tmp_path / 'vars.json').write_text(json.dumps(extra_vars))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, '--check', '-i', str(tmp_path / 'hosts.yml'), playbook, '-e', '@%s' % (tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, cwd=str(tmp_path), check=False)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError('ansible-playbook printed no JSON (rc %d): %s %s' % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
    return proc.returncode, _failed_messages(report.get('plays', []))


def role_play(role, gather_facts=True):
    return [{'name': 'role under test', 'hosts': 'localhost', 'gather_facts': gather_facts, 'roles': [{'role': 'gpucluster.bringup.%s' % role}]}]


def deb_arch():
    return subprocess.run(['dpkg', '--print-architecture'], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()


def kernel_files(tmp_path, userns='15000', mntns='15000', clone=None):
    (tmp_path / 'max_user_namespaces').write_text(userns + '\n')
    (tmp_path / 'max_mnt_namespaces').write_text(mntns + '\n')
    clone_file = tmp_path / 'unprivileged_userns_clone'
    if clone is not None:
        clone_file.write_text(clone + '\n')
    return {'_enroot_userns_files': [str(tmp_path / 'max_user_namespaces'), str(tmp_path / 'max_mnt_namespaces')],
            '_enroot_userns_clone_file': str(clone_file)}


@pytest.mark.parametrize('source, extra, needs', [
    ('mirror', {}, 'enroot_mirror_url is empty; set it (the base URL of a web server holding the release .deb files)'),
    ('local', {}, 'enroot_local_dir is empty; set it (a directory on the Ansible controller holding the release .deb files)'),
    ('url', {'enroot_release_url': ''}, 'enroot_release_url is empty; set it (the base URL of the release assets)'),
])
def test_package_source_needs_its_location(tmp_path, source, extra, needs):
    extra_vars = dict(kernel_files(tmp_path), enroot_package_source=source, **extra)
    rc, msgs = run_check(tmp_path, role_play('enroot'), extra_vars)
    assert rc != 0
    assert msgs == [preflight_failure('localhost', 'enroot', "enroot_package_source is '%s' but %s" % (source, needs))]


def release_files():
    return ['enroot_4.1.2-1_{0}.deb'.format(deb_arch()), 'enroot+caps_4.1.2-1_{0}.deb'.format(deb_arch())]


RELEASE = 'the .deb assets of the enroot v4.1.2 release for {0} (https://github.com/NVIDIA/enroot/releases/download/v4.1.2/)'


@pytest.mark.parametrize('present', [[], [0], [1]])
def test_local_source_names_the_missing_files(tmp_path, present):
    files = release_files()
    local = tmp_path / 'debs'
    local.mkdir()
    for index in present:
        (local / files[index]).write_bytes(b'not really a deb')
    missing = [name for index, name in enumerate(files) if index not in present]
    rc, msgs = run_check(tmp_path, role_play('enroot'), dict(kernel_files(tmp_path), enroot_package_source='local', enroot_local_dir=str(local)))
    assert rc != 0
    assert msgs == ['enroot_package_source=local: enroot_local_dir %s on the controller lacks %s; it must hold %s, %s'
                    % (local, ', '.join(missing), ', '.join(files), RELEASE.format(deb_arch()))]


def test_file_mirror_names_the_missing_files(tmp_path):
    files = release_files()
    mirror = tmp_path / 'mirror'
    mirror.mkdir()
    (mirror / files[0]).write_bytes(b'not really a deb')
    url = 'file://%s' % mirror
    rc, msgs = run_check(tmp_path, role_play('enroot'), dict(kernel_files(tmp_path), enroot_package_source='mirror', enroot_mirror_url=url))
    assert rc != 0
    assert msgs == ['enroot_package_source=mirror: %s/%s cannot be fetched from localhost; enroot_mirror_url %s must serve %s, %s'
                    % (url, files[1], url, ', '.join(files), RELEASE.format(deb_arch()))]


def test_http_mirror_names_the_missing_files(tmp_path):
    files = release_files()
    mirror = tmp_path / 'mirror'
    mirror.mkdir()
    (mirror / files[1]).write_bytes(b'not really a deb')
    server = subprocess.Popen([sys.executable, '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', str(mirror)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    try:
        port = server.stdout.readline().split('port ')[1].split(' ')[0]
        url = 'http://127.0.0.1:%s' % port
        rc, msgs = run_check(tmp_path, role_play('enroot'), dict(kernel_files(tmp_path), enroot_package_source='mirror', enroot_mirror_url=url))
    finally:
        server.terminate()
        server.wait(10)
    assert rc != 0
    assert msgs == ['enroot_package_source=mirror: %s/%s cannot be fetched from localhost; enroot_mirror_url %s must serve %s, %s'
                    % (url, files[0], url, ', '.join(files), RELEASE.format(deb_arch()))]


def test_extra_config_keys(tmp_path):
    rc, msgs = run_check(tmp_path, role_play('enroot'), dict(kernel_files(tmp_path), enroot_conf={'ENROOT_ZSTD_OPTIONS': '-1', 'zstd': 'x'}))
    assert rc != 0
    assert msgs == [preflight_failure('localhost', 'enroot',
                                      'enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: zstd')]


@pytest.mark.parametrize('userns, mntns, bad', [('0', '15000', 'max_user_namespaces'), ('15000', '1', 'max_mnt_namespaces')])
def test_kernel_without_user_namespaces(tmp_path, userns, mntns, bad):
    files = kernel_files(tmp_path, userns=userns, mntns=mntns)
    rc, msgs = run_check(tmp_path, role_play('enroot'), files)
    value = userns if bad == 'max_user_namespaces' else mntns
    assert rc != 0
    assert msgs == ['%s is %s on localhost; enroot needs user and mount namespaces, so it must be greater than 1 '
                    '(sysctl -w user.%s=15000, and persist it in /etc/sysctl.d)' % (tmp_path / bad, value, bad)]


def test_unprivileged_userns_clone_off(tmp_path):
    files = kernel_files(tmp_path, clone='0')
    rc, msgs = run_check(tmp_path, role_play('enroot'), files)
    assert rc != 0
    assert msgs == ['%s is 0 on localhost; enroot needs it to be 1 for unprivileged users '
                    '(sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d)' % (tmp_path / 'unprivileged_userns_clone')]


def test_credentials_need_all_keys(tmp_path):
    # As on a node where the packages are installed already (no download in this check run).
    extra_vars = dict(kernel_files(tmp_path), _enroot_to_install=[], enroot_slurm_hooks=[],
                      enroot_credentials=[{'machine': 'registry.example', 'login': 'bot', 'password': 'pw'},
                                          {'machine': 'nvcr.io', 'login': '$oauthtoken'}])
    rc, msgs = run_check(tmp_path, role_play('enroot'), extra_vars)
    assert rc != 0
    assert msgs == [preflight_failure('localhost', 'enroot',
                                      'enroot_credentials[1] (machine nvcr.io) needs the keys machine, login and password, all non-empty')]


def test_requested_hook_not_shipped(tmp_path):
    # As on a node where the packages are installed: this machine has no /usr/share/enroot/hooks.d at all.
    assert not os.path.exists('/usr/share/enroot/hooks.d/50-slurm-pytorch.sh')
    rc, msgs = run_check(tmp_path, role_play('enroot'), dict(kernel_files(tmp_path), _enroot_to_install=[], enroot_slurm_hooks=['pytorch']))
    assert rc != 0
    assert msgs == ["enroot_slurm_hooks asks for 'pytorch' but the installed enroot has no /usr/share/enroot/hooks.d/50-slurm-pytorch.sh "
                    "on localhost; remove it from enroot_slurm_hooks or install an enroot release that ships it"]


@pytest.mark.parametrize('extra_vars, msg', [
    ({'pyxis_conf': {'importer': 'bin/importer'}}, "pyxis_conf.importer must be an absolute path to an executable on the nodes, got 'bin/importer'"),
    ({'pyxis_conf': {'runtime_path': '/run/my pyxis'}}, "pyxis_conf.runtime_path must be an absolute path without spaces, got '/run/my pyxis'"),
    ({'pyxis_conf': {'runtime_path': 'run/pyxis'}}, "pyxis_conf.runtime_path must be an absolute path without spaces, got 'run/pyxis'"),
])
def test_pyxis_option_checks(tmp_path, extra_vars, msg):
    rc, msgs = run_check(tmp_path, role_play('pyxis'), extra_vars)
    assert rc != 0
    assert msgs == [preflight_failure('localhost', 'pyxis', msg)]


def test_stage_images_entries(tmp_path):
    playbook = os.path.join(ROOT, 'playbooks', 'stage_images.yml')
    groups = {'slurm_controller': {'hosts': {'localhost': None}}, 'slurm_compute': {'hosts': {'localhost': None}}}
    rc, msgs = run_check(tmp_path, playbook, {'stage_images': [{'name': 'ok', 'uri': 'docker://ubuntu'}, {'name': 'x'}]}, groups)
    assert rc != 0
    assert msgs == ['stage_images[1] needs a name (for --container-name) and a uri (enroot URI), got {"name": "x"}']


@pytest.mark.parametrize('role, msg', [
    ('enroot', "gpucluster.bringup.enroot installs enroot's .deb packages and supports Debian and Ubuntu; localhost runs Rocky (RedHat family)"),
    ('pyxis', "gpucluster.bringup.pyxis builds pyxis against Debian's libslurm-dev and supports Debian and Ubuntu; localhost runs Rocky "
              "(RedHat family)"),
])
def test_not_debian(tmp_path, role, msg):
    # Facts of a Rocky Linux node instead of this machine's.
    facts = {'ansible_facts': {'os_family': 'RedHat', 'distribution': 'Rocky', 'architecture': 'x86_64'}}
    rc, msgs = run_check(tmp_path, role_play(role, gather_facts=False), facts)
    assert rc != 0
    assert msgs == [msg]
