# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_preflight reads a node and changes nothing: run_command answers with recorded outputs of Debian 12, Debian 13
and Ubuntu 22.04 (dpkg-query, apt-cache policy), every command it ran is recorded and must be one that only reads;
the GPUs come from the project's NVML simulator (no NVML call that changes a GPU)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import node_preflight
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module, snapshot
from ansible_collections.gpucluster.bringup.tests.unit.simnode import calls, node  # noqa: F401 pylint: disable=unused-import

OS_RELEASE = {
    'bookworm': 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nVERSION="12 (bookworm)"\n'
                'VERSION_CODENAME=bookworm\nID=debian\n',
    'trixie': 'PRETTY_NAME="Debian GNU/Linux 13 (trixie)"\nNAME="Debian GNU/Linux"\nVERSION_ID="13"\nVERSION="13 (trixie)"\n'
              'VERSION_CODENAME=trixie\nID=debian\n',
    'jammy': 'PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nVERSION="22.04.5 LTS (Jammy Jellyfish)"\n'
             'VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n',
}
POLICY = {
    'bookworm': '''slurmd:
  Installed: (none)
  Candidate: 22.05.8-4+deb12u3
  Version table:
     22.05.8-4+deb12u3 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        500 http://security.debian.org/debian-security bookworm-security/main amd64 Packages
slurm-client:
  Installed: 22.05.8-4+deb12u3
  Candidate: 22.05.8-4+deb12u3
  Version table:
 *** 22.05.8-4+deb12u3 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
''',
    'trixie': '''slurmd:
  Installed: (none)
  Candidate: 24.11.5-4
  Version table:
     24.11.5-4 500
        500 http://deb.debian.org/debian trixie/main amd64 Packages
slurm-client:
  Installed: (none)
  Candidate: 24.11.5-4
  Version table:
     24.11.5-4 500
        500 http://deb.debian.org/debian trixie/main amd64 Packages
''',
    'jammy': '''slurmd:
  Installed: (none)
  Candidate: 21.08.5-2ubuntu1
  Version table:
     21.08.5-2ubuntu1 500
        500 http://archive.ubuntu.com/ubuntu jammy/universe amd64 Packages
slurm-client:
  Installed: (none)
  Candidate: 21.08.5-2ubuntu1
  Version table:
     21.08.5-2ubuntu1 500
        500 http://archive.ubuntu.com/ubuntu jammy/universe amd64 Packages
''',
}
DPKG = {
    'bookworm': (1, 'slurm-client\t22.05.8-4+deb12u3\tii \n', 'dpkg-query: no packages found matching slurmd\n'),
    'trixie': (1, '', 'dpkg-query: no packages found matching slurmd\ndpkg-query: no packages found matching slurm-client\n'),
    'jammy': (1, 'slurmd\t\tun \n', 'dpkg-query: no packages found matching slurm-client\n'),
}
READ_ONLY = ('/usr/bin/dpkg-query', '/usr/bin/apt-cache', '/usr/bin/rpm', '/usr/bin/dnf', '/usr/bin/dpkg-deb', '/usr/bin/systemctl',
             '/usr/bin/nv-fabricmanager', '/usr/bin/nvidia-smi')
WRITING_WORDS = ('install', 'remove', 'purge', 'update', 'upgrade', '-i', '--install', 'start', 'stop', 'restart', 'enable', 'makecache')


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A Debian-family host: run_command answers from the recordings and records every argv."""
    recorded = []
    state = {'release': 'bookworm'}

    def run_command(self, args, **kwargs):
        recorded.append(list(args))
        if args[0].endswith('dpkg-query'):
            return DPKG[state['release']]
        if args[0].endswith('apt-cache'):
            return 0, POLICY[state['release']], ''
        if args[0].endswith('systemctl'):
            return 3, 'inactive\n', ''
        return 1, '', 'unexpected'
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **k: '/usr/bin/' + name)
    monkeypatch.setattr(node_preflight, 'PROC_DIR', str(tmp_path / 'proc'))
    (tmp_path / 'proc').mkdir()

    def use(release):
        state['release'] = release
        path = tmp_path / 'os-release'
        path.write_text(OS_RELEASE[release])
        return str(path)
    return {'use': use, 'argv': recorded, 'tmp': tmp_path}


def _assert_read_only(argv):
    assert argv, 'no command ran'
    for args in argv:
        assert args[0] in READ_ONLY, args
        assert not any(word in args[1:] for word in WRITING_WORDS), args
        if args[0].endswith('apt-cache'):
            assert args[1] == 'policy'
        if args[0].endswith('systemctl'):
            assert args[1] == 'is-active'


@pytest.mark.parametrize('release, os_, slurmd, client', [
    ('bookworm', ('debian', '12', 'bookworm'), {'installed': None, 'candidate': '22.05.8-4+deb12u3'},
     {'installed': '22.05.8-4+deb12u3', 'candidate': '22.05.8-4+deb12u3'}),
    ('trixie', ('debian', '13', 'trixie'), {'installed': None, 'candidate': '24.11.5-4'}, {'installed': None, 'candidate': '24.11.5-4'}),
    ('jammy', ('ubuntu', '22.04', 'jammy'), {'installed': None, 'candidate': '21.08.5-2ubuntu1'},
     {'installed': None, 'candidate': '21.08.5-2ubuntu1'}),
])
def test_reads_packages_and_os(host, release, os_, slurmd, client):
    os_release = host['use'](release)
    before = snapshot(host['tmp'])
    out = run_module(node_preflight.main, {'packages': ['slurmd', 'slurm-client'], 'gpus': False, 'os_release': os_release},
                     check_mode=True)
    assert not out.failed, out.msg
    reading = out.result['reading']
    assert (reading['os']['id'], reading['os']['version_id'], reading['os']['codename']) == os_
    assert reading['os_family'] == 'Debian'
    assert reading['packages'] == {'slurmd': slurmd, 'slurm-client': client}
    assert out.result['changed'] is False
    _assert_read_only(host['argv'])
    assert [a[0] for a in host['argv']] == ['/usr/bin/dpkg-query', '/usr/bin/apt-cache']
    assert snapshot(host['tmp']) == before


def test_package_facts_given_no_dpkg_query(host):
    facts = {'slurmd': [{'name': 'slurmd', 'version': '22.05.8-4+deb12u3', 'arch': 'amd64', 'source': 'apt'}]}
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'installed': facts, 'gpus': False, 'os_release': host['use']('bookworm')})
    assert out.result['reading']['packages']['slurmd']['installed'] == '22.05.8-4+deb12u3'
    assert [a[0] for a in host['argv']] == ['/usr/bin/apt-cache']


def test_local_files_from_names(host):
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'source': 'local', 'gpus': False, 'os_release': host['use']('jammy'),
                                           'local_package_files': ['slurm-smd-slurmd_24.11.5-1_amd64.deb', 'slurm-smd_24.11.5-1_amd64.deb']})
    assert out.result['reading']['local_files'] == [
        {'file': 'slurm-smd-slurmd_24.11.5-1_amd64.deb', 'name': 'slurm-smd-slurmd', 'version': '24.11.5-1'},
        {'file': 'slurm-smd_24.11.5-1_amd64.deb', 'name': 'slurm-smd', 'version': '24.11.5-1'}]
    _assert_read_only(host['argv'])


def test_local_dir_on_the_node_read_with_dpkg_deb(host, monkeypatch):
    pkgs = host['tmp'] / 'pkgs'
    pkgs.mkdir()
    (pkgs / 'slurmd-custom.deb').write_bytes(b'!<arch>\n')
    seen = []

    def run_command(self, args, **kwargs):
        seen.append(list(args))
        if args[0].endswith('dpkg-deb'):
            return 0, 'Package: slurm-smd-slurmd\nVersion: 24.11.5-1\n', ''
        return 0, '', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    os_release = host['use']('bookworm')
    before = snapshot(host['tmp'])
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'source': 'local', 'gpus': False, 'os_release': os_release,
                                           'local_package_dir': str(pkgs)})
    assert out.result['reading']['local_files'] == [{'file': 'slurmd-custom.deb', 'name': 'slurm-smd-slurmd', 'version': '24.11.5-1'}]
    assert ['/usr/bin/dpkg-deb', '-f', str(pkgs / 'slurmd-custom.deb'), 'Package', 'Version'] in seen
    _assert_read_only(seen)
    assert snapshot(host['tmp']) == before


def test_gpus_through_nvml_nothing_changed(host, node, calls):  # noqa: F811 pylint: disable=redefined-outer-name
    node('h100-80gb-x8')
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'os_release': host['use']('bookworm'), 'module_root': str(host['tmp'])})
    assert not out.failed, out.msg
    nvml = out.result['reading']['nvml']
    assert nvml['available'] and len(nvml['gpus']) == 8
    assert all(g['name'] == 'NVIDIA H100 80GB HBM3' and g['mig_capable'] for g in nvml['gpus'])
    assert calls == []
    assert out.result['reading']['fabric_manager'] == {'state': 'inactive', 'version': None}
    _assert_read_only(host['argv'])


def test_no_bindings_no_library(host, monkeypatch):
    monkeypatch.setattr(node_preflight.nvml, 'import_bindings', lambda: (None, 'No module named pynvml'))
    monkeypatch.setattr(node_preflight, 'LIBRARY', 'libnvidia-ml-not-here.so.1')
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'os_release': host['use']('bookworm')})
    assert out.result['reading']['nvml']['reason'] == 'library'
    assert 'libnvidia-ml-not-here.so.1' in out.result['reading']['nvml']['error']


@pytest.mark.parametrize('smi, expected', [
    ((0, '0, NVIDIA H100 80GB HBM3\n1, NVIDIA H100 80GB HBM3\n', ''),
     {'gpus': [{'index': 0, 'name': 'NVIDIA H100 80GB HBM3'}, {'index': 1, 'name': 'NVIDIA H100 80GB HBM3'}]}),
    ((9, '', 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'),
     {'error': 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'}),
    ((0, 'No devices were found\n', ''),
     {'error': "nvidia-smi --query-gpu=index,name printed 'No devices were found', expected \"<index>, <name>\" lines"}),
], ids=['two-h100', 'driver-not-answering', 'garbled'])
def test_a_fresh_node_lists_its_gpus_with_nvidia_smi(host, monkeypatch, smi, expected):
    """The driver loads, the nvml stage has not installed the bindings yet: nvidia-smi (read-only) names the GPUs, so
    that the MIG layout is checked against their model before any change."""
    monkeypatch.setattr(node_preflight.nvml, 'import_bindings', lambda: (None, 'No module named pynvml'))
    monkeypatch.setattr(node_preflight, 'library_loads', lambda: None)
    answered = []

    def run_command(self, args, **kwargs):
        host['argv'].append(list(args))
        if args[0].endswith('nvidia-smi'):
            answered.append(list(args))
            return smi
        if args[0].endswith('dpkg-query'):
            return DPKG['bookworm']
        return 0, POLICY['bookworm'], ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'os_release': host['use']('bookworm')})
    reading = out.result['reading']
    assert reading['nvml']['reason'] == 'bindings'
    assert reading['nvidia_smi'] == expected
    assert answered == [['/usr/bin/nvidia-smi', '--query-gpu=index,name', '--format=csv,noheader']]
    _assert_read_only(host['argv'])


def test_os_release_unreadable_is_read_as_such(host):
    out = run_module(node_preflight.main, {'packages': ['slurmd'], 'gpus': False, 'os_release': str(host['tmp'] / 'nothere')})
    assert not out.failed
    assert 'cannot be read' in out.result['reading']['os']['error']
    assert out.result['reading']['package_error'] == 'no package manager this module knows (Debian or RHEL family)'


def test_read_cgroup_version_from_the_mount_table(tmp_path):
    mounts = tmp_path / 'mounts'
    mounts.write_text('cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n')
    assert node_preflight.read_cgroup_version(str(mounts)) == 'v2'
    mounts.write_text('tmpfs /sys/fs/cgroup tmpfs ro 0 0\ncgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n')
    assert node_preflight.read_cgroup_version(str(mounts)) == 'v1'
    assert node_preflight.read_cgroup_version(str(tmp_path / 'absent')) is None
