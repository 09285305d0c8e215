# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm role's local package path (tasks/install.yml, slurm_install_source: local) refuses a package directory it
cannot install from, one message per host and nothing changed: a real ansible-playbook on this machine (local
connection, check mode) runs the role's install.yml for four hosts, each with its own directory of package files
(empty files named as SchedMD's debian/control and Debian name them: only the names are read).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(ROOT, 'roles', 'slurm')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
SMD = ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-slurmctld', 'slurm-smd-slurmd', 'slurm-smd-slurmdbd',
       'slurm-smd-sackd', 'slurm-smd-libpam-slurm-adopt']
PLAY = '''
- name: The slurm role's local package path on this machine
  hosts: all
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Load the role's package names (as tasks/main.yml does first)
      ansible.builtin.include_vars: "{{ slurm_role_dir }}/vars/Debian.yml"
    - name: The install
      ansible.builtin.include_role:
        name: gpucluster.bringup.slurm
        tasks_from: install.yml
'''
DIRS = {
    # the controller: Debian's and SchedMD's packages in one directory
    'ctl': ['slurmctld_24.11.5-4+deb13u1_amd64.deb', 'slurm-client_24.11.5-4+deb13u1_amd64.deb'] + ['%s_26.05.3-1_amd64.deb' % n for n in SMD],
    # a compute node: SchedMD's packages without slurm-smd-slurmd
    'gpu-01': ['%s_26.05.3-1_amd64.deb' % n for n in SMD if n != 'slurm-smd-slurmd'],
    # a compute node: Ubuntu 22.04's 21.08
    'gpu-02': ['slurmd_21.08.5-2ubuntu1_amd64.deb', 'slurm-client_21.08.5-2ubuntu1_amd64.deb'],
    # a compute node: two builds of SchedMD's packages
    'gpu-03': ['%s_26.05.3-1_amd64.deb' % n for n in SMD] + ['slurm-smd-slurmd_26.05.4-1_amd64.deb'],
}
EXPECTED = {
    'ctl': "slurm_local_package_dir holds both Debian's Slurm packages (slurm-client_24.11.5-4+deb13u1_amd64.deb, "
           "slurmctld_24.11.5-4+deb13u1_amd64.deb) and SchedMD's slurm-smd packages",
    'gpu-01': "slurm_local_package_dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd-slurmd, which this host "
              'needs (slurmd), expected slurm-smd-slurmd_26.05.3*.deb beside the others (build every package of debian/control)',
    'gpu-02': 'slurm_local_package_dir holds Slurm 21.08.5 (slurm-client_21.08.5-2ubuntu1_amd64.deb, slurmd_21.08.5-2ubuntu1_amd64.deb), '
              'expected Slurm 22.05 or newer',
    'gpu-03': 'slurm_local_package_dir holds Slurm packages of 2 versions (26.05.3: ',
}


def test_bad_package_directories_stop_each_host_before_anything_changes(tmp_path):
    hosts = {}
    for host, names in DIRS.items():
        directory = tmp_path / ('debs-' + host)
        directory.mkdir()
        for name in names:
            (directory / name).write_bytes(b'')
        hosts[host] = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                       'slurm_local_package_dir': str(directory)}
    inventory = {'all': {'hosts': hosts, 'children': {
        'slurm_controller': {'hosts': {'ctl': None}}, 'slurm_compute': {'hosts': {'gpu-01': None, 'gpu-02': None, 'gpu-03': None}}}}}
    (tmp_path / 'hosts.json').write_text(json.dumps(inventory))
    (tmp_path / 'play.yml').write_text(PLAY)
    (tmp_path / 'vars.json').write_text(json.dumps({'slurm_role_dir': ROLE, 'slurm_install_source': 'local'}))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'), ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote-tmp'))
    done = subprocess.run([PLAYBOOK_BIN, '--check', '-i', str(tmp_path / 'hosts.json'), str(tmp_path / 'play.yml'),
                           '-e', '@%s' % (tmp_path / 'vars.json')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    assert done.returncode != 0, done.stdout
    for host, message in EXPECTED.items():
        recap = re.search(r'^%s\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)' % re.escape(host), done.stdout, re.M)
        assert recap and recap.groups() == ('0', '1'), done.stdout
        failed = re.search(r'^fatal: \[%s\]: FAILED! => .*$' % re.escape(host), done.stdout, re.M)
        assert failed and message in failed.group(0), done.stdout
        # the task that failed is the check, before the package cache is made or a file copied
        before = done.stdout[:failed.start()].rsplit('TASK [', 1)[1]
        assert before.startswith('gpucluster.bringup.slurm : Check the package files'), before[:200]
