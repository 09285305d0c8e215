# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurmdbd role's stop messages, run by ansible-playbook on this machine.

Each case is one play that includes the role's ``preflight`` or
``schema_decide`` tasks with a bad (or good) setting and records what Ansible
reported; one ansible-playbook run covers all of them.  The schema decision
gets the releases the role's ``schema.yml`` reads on a real host (package
version, package candidate, release record); the full path against slurmdbd
and MariaDB is molecule/accounting's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
GOOD_PASS = 'Vaulted-Pass-2026'

CASES = {
    'two_hosts': ('dbd1', 'preflight', {'slurmdbd_group': 'two_dbd'},
                  'slurmdbd_group "two_dbd" must hold exactly one host (where slurmdbd runs), it holds 2: ["dbd1", "dbd2"]'),
    'wrong_host': ('dbd2', 'preflight', {},
                   'run gpucluster.bringup.slurmdbd on the slurmdbd host dbd1 (group slurm_controller), not on dbd2'),
    'no_password': ('dbd1', 'preflight', {'slurmdbd_storage_pass': ''}, None),
    'hash_password': ('dbd1', 'preflight', {'slurmdbd_storage_pass': 'has#hash-inside'}, None),
    'bad_names': ('dbd1', 'preflight', {'slurmdbd_storage_loc': 'slurm-acct'},
                  'slurmdbd_storage_loc "slurm-acct" and slurmdbd_storage_user "slurm" must be letters, digits and \'_\', and '
                  'slurmdbd_storage_user_host "localhost" a host name, address or \'%\''),
    'pass_in_overrides': ('dbd1', 'preflight', {'slurmdbd_conf_overrides': {'storagepass': 'x'}},
                          'set the database password with slurmdbd_storage_pass, not in slurmdbd_conf_overrides'),
    'package_state': ('dbd1', 'preflight', {'slurmdbd_package_state': 'absent'}, 'slurmdbd_package_state "absent" must be present or latest'),
    'preflight_ok': ('dbd1', 'preflight', {}, 'ok'),
    'downgrade': ('dbd1', 'schema_decide', {'__slurmdbd_recorded_release': '23.02', '__slurmdbd_target_release': '22.05'},
                  'slurmdbd would go back from Slurm 23.02 to 22.05: Slurm cannot downgrade its accounting database; '
                  'install Slurm 23.02 or newer'),
    'upgrade': ('dbd1', 'schema_decide', {'__slurmdbd_recorded_release': '22.05', '__slurmdbd_target_release': '23.02'},
                'slurmdbd would go from Slurm 22.05 to 23.02: when it starts, it converts the accounting database slurm_acct_db to the '
                'new schema, which cannot be undone and can take long. Upgrade slurmdbd before slurmctld and slurmd, with a backup: '
                'set slurmdbd_allow_schema_upgrade=true to proceed (slurmdbd_backup_before_upgrade=true takes a mysqldump to '
                '/var/backups/slurmdbd first)'),
    'upgrade_allowed': ('dbd1', 'schema_decide', {'__slurmdbd_recorded_release': '22.05', '__slurmdbd_target_release': '23.02',
                                                  'slurmdbd_allow_schema_upgrade': 'true', 'slurmdbd_backup_before_upgrade': False}, 'ok'),
    'same_release': ('dbd1', 'schema_decide', {'__slurmdbd_recorded_release': '22.05', '__slurmdbd_target_release': '22.05'}, 'ok'),
    'first_install': ('dbd1', 'schema_decide', {'__slurmdbd_recorded_release': '', '__slurmdbd_target_release': '22.05'}, 'ok'),
}
PASSWORD_MESSAGE = ("slurmdbd_storage_pass must be set (from Ansible Vault) to at least 8 characters without spaces, quotes, "
                    "backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown")


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('slurmdbd-role')
    out = tmp / 'results'
    out.mkdir()
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                  'slurmdbd_storage_pass': GOOD_PASS},
                         'children': {'slurm_controller': {'hosts': {'dbd1': None}},
                                      'two_dbd': {'hosts': {'dbd1': None, 'dbd2': None}}}}}
    plays = []
    for name, (host, tasks, variables, _expected) in CASES.items():
        plays.append({
            'name': name, 'hosts': host, 'gather_facts': False, 'vars': variables,
            'tasks': [{'block': [
                {'ansible.builtin.include_role': {'name': 'gpucluster.bringup.slurmdbd', 'tasks_from': tasks}},
                {'ansible.builtin.copy': {'content': 'ok', 'dest': str(out / name)}},
            ], 'rescue': [
                {'ansible.builtin.copy': {'content': '{{ ansible_failed_result.msg }}', 'dest': str(out / name)}},
            ]}],
        })
    with open(str(tmp / 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)
    with open(str(tmp / 'play.yml'), 'w') as handle:
        yaml.safe_dump(plays, handle, sort_keys=False)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    result = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp / 'hosts.yml'), str(tmp / 'play.yml')], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp), check=False, timeout=300)
    found = {}
    for name in CASES:
        path = out / name
        found[name] = path.read_text() if path.exists() else None
    found['_output'] = result.stdout
    return found


@pytest.mark.parametrize('name', sorted(CASES))
def test_role_stops_with_a_clear_message(results, name):
    expected = CASES[name][3]
    if expected is None:
        expected = PASSWORD_MESSAGE
    assert results[name] == expected, results['_output'][-3000:]


def test_the_password_is_never_printed(results):
    assert GOOD_PASS not in results['_output']
    assert 'has#hash-inside' not in results['_output']
    assert json.dumps(GOOD_PASS) not in results['_output']
