# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role with slurm_gres_autodetect: nvml (docs/slurm-gres-autodetect.md), without a cluster.

- The role's variables, templated as Ansible does for each kind of host: which packages a host installs (the
  NVML plugin's on GPU nodes with nvml only), where the plugin is looked for.
- gres.conf and hooks.json as the templates render them: AutoDetect=nvml with the devices NVML shows now as
  comments (the file changes, so slurmd restarts, when they change); the TaskProlog off on nvml nodes; 'off'
  renders exactly the lines of slurm_gres_facts, as before.
- tasks/preflight_nvml.yml run by a real ansible-playbook on this machine (local connection) with the real
  ansible.builtin.apt module in check mode against an apt index made here (APT_CONFIG: its own sources, lists and an
  empty dpkg status, so this machine's apt is not touched and nothing is fetched). The index is a STAND-IN: package
  entries with the names, versions and version relations of Debian 12's and Debian 13's archives
  (tests/unit/fixtures/apt/README.md), no package files behind them; apt's resolution of them is real.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _distro_packages as distro_packages
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import autodetect_comments
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import gres_conf_file_lines
from ansible_collections.gpucluster.bringup.tests.unit.aptindex import apt_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(ROOT, 'roles', 'slurm')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
GROUPS = {'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'cpu-01'], 'gpu_nodes': ['gpu-01']}


# vars/<family>.yml: the package lists, each one call of the collection's filter slurm_distribution_packages (the
# table of plugins/module_utils/slurm/_distro_packages.py), which the in-process Templar here does not know: the call's
# arguments are read from the file and the table answers
_PACKAGES_CALL = re.compile(r"^\{\{ '(?P<family>\w+)' \| gpucluster\.bringup\.slurm_distribution_packages\('(?P<part>\w+)'\) \}\}$")


def _distro_table(name, value):
    match = _PACKAGES_CALL.match(str(value).strip()) if name.startswith('_slurm_packages_') else None
    return distro_packages.packages(match.group('family'), match.group('part')) if match else value


def role_vars(family='Debian', **extra):
    loader = DataLoader()
    found = {}
    for name in ('defaults/main.yml', 'vars/main.yml', 'vars/%s.yml' % family):
        data = loader.load_from_file(os.path.join(ROLE, name), cache='none', trusted_as_template=True)
        found.update((key, _distro_table(key, value)) for key, value in data.items())
    found.update(groups=GROUPS, ansible_facts={'architecture': 'x86_64', 'os_family': family})
    found.update(extra)
    return loader, found


def template(text, family='Debian', **extra):
    loader, variables = role_vars(family, **extra)
    return Templar(loader=loader, variables=variables).template(trust_as_template(text))


# --- variables ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize('family', ['Debian', 'RedHat'])
def test_the_package_lists_are_the_one_tables(family):
    # (one copy of each list: the slurm role's vars file names the table's row, the node preflight reads the same table)
    with open(os.path.join(ROLE, 'vars', '%s.yml' % family)) as handle:
        data = yaml.safe_load(handle)
    lists = sorted(name for name in data if name.startswith('_slurm_packages_'))
    assert lists == ['_slurm_packages_compute', '_slurm_packages_controller', '_slurm_packages_login', '_slurm_packages_mps',
                     '_slurm_packages_nvml', '_slurm_packages_sackd']
    for name in lists:
        match = _PACKAGES_CALL.match(data[name].strip())
        assert match and (match.group('family'), match.group('part')) == (family, name[len('_slurm_packages_'):]), data[name]


@pytest.mark.parametrize('family, host, extra, packages, dirs', [
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml'}, ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'],
     ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    ('Debian', 'gpu-01', {}, ['slurmd', 'slurm-client', 'libpmix-dev'], ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', 'slurm_gres_enabled': False}, ['slurmd', 'slurm-client', 'libpmix-dev'],
     ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    # a compute node without GPUs and the controller never get the plugin (it needs the NVIDIA driver's library)
    ('Debian', 'cpu-01', {'slurm_gres_autodetect': 'nvml'}, ['slurmd', 'slurm-client', 'libpmix-dev'], ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    ('Debian', 'ctl', {'slurm_gres_autodetect': 'nvml'}, ['slurmctld', 'slurm-client', 'libpmix-dev'], ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', 'ansible_facts': {'architecture': 'aarch64', 'os_family': 'Debian'}},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/usr/lib/aarch64-linux-gnu/slurm-wlm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', 'slurm_conf_overrides': {'pluginDIR': '/opt/slurm/lib/slurm:/usr/lib/slurm'}},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/opt/slurm/lib/slurm', '/usr/lib/slurm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', 'slurm_conf_overrides': {'PluginDir': None}},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    # SchedMD's slurm-smd packages of slurm_local_package_dir (install.yml notes their flavour): their own PluginDir
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', '_slurm_local_flavour': 'smd'},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/usr/lib/x86_64-linux-gnu/slurm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', '_slurm_local_flavour': 'smd',
                          'ansible_facts': {'architecture': 'aarch64', 'os_family': 'Debian'}},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/usr/lib/aarch64-linux-gnu/slurm']),
    ('Debian', 'gpu-01', {'slurm_gres_autodetect': 'nvml', '_slurm_local_flavour': 'debian'},
     ['slurmd', 'slurm-client', 'libpmix-dev', 'slurm-wlm-nvml-plugin'], ['/usr/lib/x86_64-linux-gnu/slurm-wlm']),
    # the RHEL family: gpu_nvml.so is in the slurm package of a Slurm built with NVML, nothing more to install
    ('RedHat', 'gpu-01', {'slurm_gres_autodetect': 'nvml'}, ['slurm', 'slurm-slurmd', 'pmix'], ['/usr/lib64/slurm']),
])
def test_packages_and_plugin_dirs(family, host, extra, packages, dirs):
    extra = dict(extra, inventory_hostname=host)
    assert template('{{ _slurm_packages }}', family, **extra) == packages
    assert template('{{ _slurm_nvml_plugin_dirs }}', family, **extra) == dirs


# --- gres.conf and hooks.json ---------------------------------------------------------------------------------------

ENTRIES = [
    {'name': 'gpu', 'type': 'a100', 'files': ['/dev/nvidia0'], 'cores': '0-15'},
    {'name': 'gpu', 'type': '1g.10gb', 'files': ['/dev/nvidia1', '/dev/nvidia-caps/nvidia-cap12', '/dev/nvidia-caps/nvidia-cap13'],
     'cores': None},
    {'name': 'mps', 'type': None, 'files': ['/dev/nvidia0'], 'cores': None},
]


def gres_conf(autodetect, entries, lines):
    """gres.conf as the role renders it from the facts (the comment lines come from _gres.autodetect_comments)."""
    plugin = '/usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_nvml.so'
    gpu_entries = [e for e in entries if e['name'] == 'gpu']
    comments = autodetect_comments(gpu_entries, plugin, 'gpu:a100:1,gpu:1g.10gb:1,mps:100') if autodetect == 'nvml' else []
    with open(os.path.join(ROLE, 'templates', 'gres.conf.j2')) as handle:
        text = handle.read()
    node = {'name': 'gpu-01', 'gres_conf_lines': lines, 'gres_conf_comments': comments}
    # (vars/main.yml computes _slurm_gres_conf_lines with the collection's filter slurm_gres_conf_lines, which is
    # this function; the in-process Templar here knows no collection filters)
    return template(text, inventory_hostname='gpu-01', slurm_gres_autodetect=autodetect,
                    ansible_facts={'architecture': 'x86_64', 'os_family': 'Debian'},
                    _slurm_node=node, _slurm_gres_conf_lines=gres_conf_file_lines([node]))


def test_gres_conf_autodetect_nvml_lists_the_devices():
    assert gres_conf('nvml', ENTRIES, ['AutoDetect=nvml', 'Name=mps Count=100 File=/dev/nvidia0']).splitlines() == [
        '# Managed by gpucluster.bringup.slurm from slurm_gres_facts; local changes are overwritten.',
        '# AutoDetect=nvml (slurm_gres_autodetect): slurmd finds the GPUs itself when it starts, through',
        '# /usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_nvml.so; slurm.conf declares Gres=gpu:a100:1,gpu:1g.10gb:1,mps:100.',
        '# What NVML shows now (type, device files, cores); when this list changes the role restarts slurmd,',
        '# which then detects them again:',
        '#   a100 /dev/nvidia0 0-15',
        '#   1g.10gb /dev/nvidia1,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13',
        'AutoDetect=nvml',
        'Name=mps Count=100 File=/dev/nvidia0',
    ]


def test_gres_conf_changes_with_the_mig_layout_under_nvml():
    # a MIG instance re-created on other capability minors: the Gres= count is the same, gres.conf is not
    moved = [dict(ENTRIES[1], files=['/dev/nvidia1', '/dev/nvidia-caps/nvidia-cap21', '/dev/nvidia-caps/nvidia-cap22'])]
    assert gres_conf('nvml', ENTRIES[:1] + moved, ['AutoDetect=nvml']) != gres_conf('nvml', ENTRIES[:2], ['AutoDetect=nvml'])


def test_gres_conf_off_is_the_facts_lines_only():
    lines = ['Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15']
    assert gres_conf('off', ENTRIES[:1], lines).splitlines() == [
        '# Managed by gpucluster.bringup.slurm from slurm_gres_facts; local changes are overwritten.'] + lines


@pytest.mark.parametrize('host, autodetect, uuids, expected', [
    ('gpu-01', 'nvml', 'mig', 'off'),
    ('gpu-01', 'nvml', 'all', 'off'),
    ('gpu-01', 'off', 'mig', 'mig'),
    ('cpu-01', 'nvml', 'all', 'all'),
])
def test_hooks_json_task_prolog_is_off_on_nvml_nodes(host, autodetect, uuids, expected):
    with open(os.path.join(ROLE, 'templates', 'hooks.json.j2')) as handle:
        text = handle.read()
    rendered = template(text, inventory_hostname=host, slurm_gres_autodetect=autodetect, slurm_task_prolog_uuids=uuids)
    assert json.loads(rendered)['task_prolog_uuids'] == expected


# --- tasks/preflight_nvml.yml, run for real against a stand-in apt index ---------------------------------------------

DEB12 = '22.05.8-4+deb12u3'
DEB13 = '24.11.5-4+deb13u1'
INDEXES = {
    # Debian 12, main only: no plugin
    'debian12-main': [('slurm-wlm-basic-plugins', DEB12, None), ('slurmd', DEB12, 'slurm-wlm-basic-plugins (= %s)' % DEB12),
                      ('slurm-client', DEB12, None), ('libpmix-dev', '4.2.2-1+deb12u1', None)],
    'debian13': [('slurm-wlm-basic-plugins', DEB13, None), ('slurmd', DEB13, 'slurm-wlm-basic-plugins (= %s)' % DEB13),
                 ('slurm-client', DEB13, None), ('libpmix-dev', '5.0.7-1', None),
                 ('slurm-wlm-nvml-plugin', '24.11.5-2', 'slurm-wlm-basic-plugins (>= 24.11.5), slurm-wlm-basic-plugins (<< 24.11.6)')],
}
# Debian 12 with contrib (and non-free: the NVML library is left out of the stand-in's relations)
INDEXES['debian12-contrib'] = INDEXES['debian12-main'] + [
    ('slurm-wlm-nvml-plugin', '22.05.8-4+deb12u2', 'slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2)')]


PLAY = '''
- name: The slurm role's NVML plugin preflight on this machine
  hosts: gpu_nodes
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Load the role's package names (as tasks/main.yml does first)
      ansible.builtin.include_vars: "{{ slurm_role_dir }}/vars/{{ ansible_facts.os_family }}.yml"
    - name: The preflight
      ansible.builtin.include_role:
        name: gpucluster.bringup.slurm
        tasks_from: preflight_nvml.yml
'''


def _skip_unless_apt():
    if shutil.which('apt-get') is None:
        pytest.skip('apt-get is not on this machine')
    if subprocess.run(['/usr/bin/python3', '-c', 'import apt, apt_pkg'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                      check=False).returncode != 0:
        pytest.skip('python3-apt (which ansible.builtin.apt needs) is not on this machine')


def run_preflight(tmp_path, index, extra):
    _skip_unless_apt()
    conf = apt_config(tmp_path / 'apt', INDEXES[index])
    inventory = {'all': {'hosts': {'gpu-01': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}},
                         'children': {'slurm_compute': {'hosts': {'gpu-01': None}}, 'gpu_nodes': {'hosts': {'gpu-01': None}}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'vars.json').write_text(json.dumps(dict(extra, slurm_role_dir=ROLE)))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'), ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote-tmp'),
               APT_CONFIG=str(conf))
    done = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp_path / 'hosts.json'), str(tmp_path / 'play.yml'), '-e', '@%s' % (tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    match = re.search(r'^gpu-01\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)\s+skipped=(\d+)', done.stdout, re.M)
    assert match, done.stdout
    recap = {'changed': int(match.group(1)), 'failed': int(match.group(2)), 'skipped': int(match.group(3))}
    return done.returncode, done.stdout, recap


HEAD = ("gpu-01: slurm_gres_autodetect is nvml, but apt cannot install slurm-wlm-nvml-plugin (Slurm's NVML plugin, gpu_nvml.so) on "
        'this node; nothing was changed. Why: ')


def test_debian12_plugin_pinned_to_an_older_slurm_stops_the_run(tmp_path):
    rc, output, recap = run_preflight(tmp_path, 'debian12-contrib', {'slurm_gres_autodetect': 'nvml'})
    assert rc != 0 and recap == {'changed': 0, 'failed': 1, 'skipped': 0}, output
    assert HEAD + ('slurm-wlm-nvml-plugin 22.05.8-4+deb12u2 depends on slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2), but '
                   'slurm-wlm-basic-plugins 22.05.8-4+deb12u3 is what apt would install. Choose one: keep slurm_gres_autodetect: '
                   "'off'") in output
    assert "pin Slurm to the plugin's version: hold every Slurm package" in output


def test_no_contrib_stops_the_run(tmp_path):
    rc, output, recap = run_preflight(tmp_path, 'debian12-main', {'slurm_gres_autodetect': 'nvml'})
    assert rc != 0 and recap['failed'] == 1 and recap['changed'] == 0, output
    assert HEAD + ('apt has no installation candidate for slurm-wlm-nvml-plugin: Debian ships it in the contrib component, which the apt '
                   'sources of this node do not enable (or its package lists are out of date). Choose one: ') in output


def test_a_plugin_apt_can_install_passes_and_changes_nothing(tmp_path):
    rc, output, recap = run_preflight(tmp_path, 'debian13', {'slurm_gres_autodetect': 'nvml'})
    assert rc == 0 and recap == {'changed': 0, 'failed': 0, 'skipped': 0}, output


@pytest.mark.parametrize('extra', [
    pytest.param({'slurm_gres_autodetect': 'off'}, id='autodetect-off'),
    # the package facts of site.yml's facts play list the plugin: apt is not asked (a second run)
    pytest.param({'slurm_gres_autodetect': 'nvml', '_site_packages': {'ansible_facts': {'packages': {'slurm-wlm-nvml-plugin': [{}]}}}},
                 id='plugin-installed'),
    pytest.param({'slurm_gres_autodetect': 'nvml', 'slurm_install_source': 'local', 'slurm_local_package_dir': '/srv/slurm'},
                 id='local-packages'),
])
def test_not_asked(tmp_path, extra):
    rc, output, recap = run_preflight(tmp_path, 'debian12-contrib', extra)
    assert rc == 0 and recap == {'changed': 0, 'failed': 0, 'skipped': 2}, output
