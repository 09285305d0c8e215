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
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.tests.unit.roleplay import preflight_failure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
GOOD_PASS = 'Vaulted-Pass-2026'

CASES = {
    'wrong_host': ('dbd2', 'preflight', {},
                   preflight_failure('dbd2', 'slurmdbd', 'run gpucluster.bringup.slurmdbd on the slurmdbd host dbd1 (group slurmdbd), not on dbd2')),
    'no_password_is_generated': ('dbd1', 'preflight', {'slurmdbd_storage_pass': ''}, 'ok'),
    'short_password': ('dbd1', 'preflight', {'slurmdbd_storage_pass': 'short'}, None),
    'hash_password': ('dbd1', 'preflight', {'slurmdbd_storage_pass': 'has#hash-inside'}, None),
    'bad_names': ('dbd1', 'preflight', {'slurmdbd_conf': {'StorageLoc': 'slurm-acct'}},
                  preflight_failure('dbd1', 'slurmdbd', "slurmdbd_conf.StorageLoc is 'slurm-acct'; use letters, digits and '_'")),
    'pass_in_overrides': ('dbd1', 'preflight', {'slurmdbd_conf': {'storagepass': 'x'}},
                          preflight_failure('dbd1', 'slurmdbd', 'slurmdbd_conf.storagepass: set the database password with '
                                            'slurmdbd_storage_pass (the value is not shown)')),
    'package_state': ('dbd1', 'preflight', {'slurmdbd_package_state': 'absent'},
                      preflight_failure('dbd1', 'slurmdbd', "slurmdbd_package_state is 'absent'; valid values: present, latest")),
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
PASSWORD_MESSAGE = preflight_failure(
    'dbd1', 'slurmdbd', "slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, "
    "at least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown")


@pytest.fixture(scope='module')
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('slurmdbd-role')
    out = tmp / 'results'
    out.mkdir()
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
                                  'slurmdbd_storage_pass': GOOD_PASS},
                         'children': {'slurmdbd': {'hosts': {'dbd1': None}},
                                      'other': {'hosts': {'dbd2': None}}}}}
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


# --- the generated password (slurmdbd_storage_pass empty) ---------------------

def _password_play(tmp, state_dir, check_file):
    """A playbook that includes the role's password tasks with the state directory under ``tmp``."""
    play = [{
        'name': 'password', 'hosts': 'dbd1', 'gather_facts': False, 'vars': {'slurmdbd_storage_pass': ''},
        'tasks': [
            {'ansible.builtin.include_role': {'name': 'gpucluster.bringup.slurmdbd', 'tasks_from': 'password'},
             'vars': {'_slurmdbd_state_dir': str(state_dir)}},
            # what the role's later tasks get (written by the test only, to compare with the file)
            {'ansible.builtin.copy': {'content': '{{ __slurmdbd_storage_pass }}', 'dest': str(check_file), 'mode': '0600'},
             'no_log': True},
        ],
    }]
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
                         'children': {'slurmdbd': {'hosts': {'dbd1': None}}}}}
    with open(str(tmp / 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)
    with open(str(tmp / 'password.yml'), 'w') as handle:
        yaml.safe_dump(play, handle, sort_keys=False)


def _run_password_play(tmp, extra=()):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    result = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp / 'hosts.yml'), str(tmp / 'password.yml'), '-vvv', '--diff'] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp),
                            check=False, timeout=300)
    return result.returncode, result.stdout


def _changed(output):
    match = re.search(r'^dbd1\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)', output, re.M)
    assert match, output[-3000:]
    return int(match.group(1)), int(match.group(2))


def test_an_empty_password_is_generated_once_kept_root_only_and_never_printed(tmp_path):
    state_dir = tmp_path / 'state'
    check_file = tmp_path / 'seen-by-the-role'
    _password_play(tmp_path, state_dir, check_file)
    rc, first = _run_password_play(tmp_path)
    assert rc == 0, first[-3000:]
    stored = state_dir / 'slurmdbd-storage-pass'
    password = stored.read_text().strip()
    assert len(password) == 32 and password.isalnum()
    assert oct(stored.stat().st_mode & 0o7777) == '0o600' and stored.stat().st_uid == 0
    assert check_file.read_text() == password
    assert _changed(first) == (3, 0)  # the directory, the password file, the test's copy

    rc, second = _run_password_play(tmp_path)
    assert rc == 0, second[-3000:]
    assert stored.read_text().strip() == password
    assert check_file.read_text() == password
    assert _changed(second) == (0, 0)
    for output in (first, second):
        found = password in output  # (not inside the assert: pytest would print it)
        assert not found, 'the generated password appears in the -vvv --diff output'


def test_a_bad_generated_password_file_stops_the_role(tmp_path):
    state_dir = tmp_path / 'state'
    state_dir.mkdir()
    (state_dir / 'slurmdbd-storage-pass').write_text('short\n')
    _password_play(tmp_path, state_dir, tmp_path / 'seen')
    rc, output = _run_password_play(tmp_path)
    assert rc != 0
    expected = ("%s on dbd1 must hold the database password, at least 8 characters without spaces, quotes, backslashes or '#'; "
                "remove the file to have a new one generated (the database account's password is then set to it); the value is not shown"
                % (state_dir / 'slurmdbd-storage-pass'))
    assert expected in ' '.join(output.split()), output[-3000:]


# --- the schema-upgrade guard, from what this Debian machine's package tools say ---

def _schema_play(tmp, stamp):
    state_dir = tmp / 'state'
    state_dir.mkdir()
    if stamp is not None:
        (state_dir / 'slurmdbd-schema-release').write_text(stamp + '\n')
    result_file = tmp / 'decision'
    play = [{
        'name': 'schema', 'hosts': 'dbd1', 'gather_facts': True, 'gather_subset': ['min'],
        'tasks': [{'block': [
            {'ansible.builtin.include_vars': os.path.join(ROOT, 'roles', 'slurmdbd', 'vars', 'Debian.yml')},
            {'ansible.builtin.include_role': {'name': 'gpucluster.bringup.slurmdbd', 'tasks_from': 'schema'},
             'vars': {'_slurmdbd_state_dir': str(state_dir)}},
            {'ansible.builtin.copy': {'content': 'ok {{ __slurmdbd_recorded_release }} {{ __slurmdbd_target_release }} {{ __slurmdbd_pending }}',
                                      'dest': str(result_file)}},
        ], 'rescue': [
            {'ansible.builtin.copy': {'content': '{{ ansible_failed_result.msg }}', 'dest': str(result_file)}},
        ]}],
    }]
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
                         'children': {'slurmdbd': {'hosts': {'dbd1': None}}}}}
    with open(str(tmp / 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)
    with open(str(tmp / 'schema.yml'), 'w') as handle:
        yaml.safe_dump(play, handle, sort_keys=False)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')
    result = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp / 'hosts.yml'), str(tmp / 'schema.yml')], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp), check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    return result_file.read_text()


def _debian_candidate():
    try:
        out = subprocess.run(['apt-cache', 'policy', 'slurmdbd'], stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout
        installed = subprocess.run(['dpkg-query', '-W', '-f=${Status}', 'slurmdbd'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   universal_newlines=True, check=False).stdout
    except OSError:
        return None
    match = re.search(r'Candidate: (?:\d+:)?(\d+\.\d+)', out)
    if not match or 'installed' in installed:
        return None
    return match.group(1)


CANDIDATE = _debian_candidate()
needs_debian = pytest.mark.skipif(CANDIDATE is None, reason='needs apt with a slurmdbd candidate and slurmdbd not installed (a fresh host)')


@needs_debian
def test_schema_guard_does_not_fire_on_a_fresh_install(tmp_path):
    # no slurmdbd installed, no release record: nothing to convert
    assert _schema_play(tmp_path, None) == 'ok  %s False' % CANDIDATE


@needs_debian
def test_schema_guard_does_not_fire_for_the_recorded_release(tmp_path):
    assert _schema_play(tmp_path, CANDIDATE) == 'ok %s %s False' % (CANDIDATE, CANDIDATE)


@needs_debian
def test_schema_guard_stops_before_a_new_release(tmp_path):
    old = '%d.%s' % (int(CANDIDATE.split('.')[0]) - 1, CANDIDATE.split('.')[1])
    assert _schema_play(tmp_path, old) == (
        'slurmdbd would go from Slurm %s to %s: when it starts, it converts the accounting database slurm_acct_db to the new schema, '
        'which cannot be undone and can take long. Upgrade slurmdbd before slurmctld and slurmd, with a backup: set '
        'slurmdbd_allow_schema_upgrade=true to proceed (slurmdbd_backup_before_upgrade=true takes a mysqldump to /var/backups/slurmdbd '
        'first)' % (old, CANDIDATE))
