# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmdbd_mariadb_secure: the slurmdbd role's MariaDB set-up against a recording ``mysql`` on this machine.

The tasks of roles/slurmdbd/tasks/database.yml after MariaDB is started (read the accounts and databases, secure,
create the database and the account) run as they are, by ansible-playbook, with a ``mysql`` first on PATH that
answers the role's state query from a table and records every other statement. Starting MariaDB is the only part
left out (molecule/accounting runs the whole role against a real server).

- true (the default): anonymous users, remote root accounts and the grants on the test databases go; no
  ``DROP DATABASE`` is ever sent; a server with nothing to remove is not touched (a second run changes nothing).
- false: an existing server's accounts are left alone; the role still creates its own database and account.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(ROOT, 'roles', 'slurmdbd')
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')

FAKE_MYSQL = r'''#!%s
import os, sys
text = sys.stdin.read()
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "SELECT 'anonymous_users'" in text:
    with open(os.path.join(here, 'queries.log'), 'a') as handle:
        handle.write(text)
    with open(os.path.join(here, 'state.tsv')) as handle:
        sys.stdout.write(handle.read())
else:
    with open(os.path.join(here, 'statements.log'), 'a') as handle:
        handle.write(text + '\n-- end\n')
'''

CLEAN = {'anonymous_users': 0, 'remote_root': 0, 'test_grants': 0, 'database': 1, 'user': 1, 'password': 1, 'grants': 1}
SHARED = dict(CLEAN, remote_root=2, test_grants=2, anonymous_users=1)   # a shared server with remote roots
FRESH = dict(CLEAN, remote_root=1, test_grants=2, anonymous_users=2, database=0, user=0, password=0, grants=0)
SECURE = "DELETE FROM mysql.global_priv WHERE User = ''"


def _database_tasks():
    """The tasks of the set-up block after MariaDB is started."""
    with open(os.path.join(ROLE, 'tasks', 'database.yml')) as handle:
        tasks = yaml.safe_load(handle)
    block = next(task for task in tasks if 'block' in task)
    names = [task['name'] for task in block['block']]
    start = names.index('Read the MariaDB accounts and databases')
    assert names[:start] == ['Start MariaDB', 'Apply changed MariaDB settings before slurmdbd uses it'], names
    return block['block'][start:]


def _run(tmp, state, secure):
    (tmp / 'bin').mkdir(exist_ok=True)
    mysql = tmp / 'bin' / 'mysql'
    mysql.write_text(FAKE_MYSQL % sys.executable)
    mysql.chmod(0o755)
    if not (tmp / 'templates').exists():
        os.symlink(os.path.join(ROLE, 'templates'), str(tmp / 'templates'))
    (tmp / 'state.tsv').write_text(''.join('%s\t%s\n' % item for item in state.items()))
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    variables = dict((key, value) for key, value in defaults.items() if not (isinstance(value, str) and '{{' in value))
    with open(os.path.join(ROLE, 'vars', 'main.yml')) as handle:
        # the role's own values (the database and account of slurmdbd_conf over _slurmdbd_conf_base)
        variables.update(yaml.safe_load(handle))
    variables.update(__slurmdbd_storage_pass='Vaulted-Pass-2026')
    if secure is not None:
        variables['slurmdbd_mariadb_secure'] = secure
    play = [{'name': 'database', 'hosts': 'dbd1', 'gather_facts': False, 'vars': variables, 'tasks': _database_tasks()}]
    with open(str(tmp / 'play.yml'), 'w') as handle:
        yaml.safe_dump(play, handle, sort_keys=False)
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
                         'children': {'slurmdbd': {'hosts': {'dbd1': None}}}}}
    with open(str(tmp / 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
               PATH='%s:%s' % (tmp / 'bin', os.environ.get('PATH', '/usr/bin:/bin')))
    result = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp / 'hosts.yml'), str(tmp / 'play.yml')], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp), check=False, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert (tmp / 'queries.log').exists(), 'the fake mysql was not the one run:\n' + result.stdout[-3000:]
    log = tmp / 'statements.log'
    statements = log.read_text().split('\n-- end\n')[:-1] if log.exists() else []
    if log.exists():
        log.unlink()
    return statements, result.stdout


def _first_words(statements):
    return [' '.join(s.split()[:2]) for s in statements]


@pytest.mark.parametrize('secure', [None, True])
def test_secure_by_default_removes_remote_root_and_test_grants_and_drops_nothing(tmp_path, secure):
    statements, dummy = _run(tmp_path, SHARED, secure)
    assert len(statements) == 1, statements
    assert SECURE in statements[0]
    assert "DELETE FROM mysql.db WHERE Db = 'test' OR Db LIKE 'test\\\\_%';" in statements[0]
    assert 'DROP' not in statements[0].upper(), statements[0]


def test_secure_false_leaves_a_shared_servers_accounts_alone(tmp_path):
    statements, dummy = _run(tmp_path, SHARED, False)
    assert statements == [], statements


def test_secure_false_still_creates_the_roles_own_database_and_account(tmp_path):
    statements, output = _run(tmp_path, FRESH, False)
    assert _first_words(statements) == ['CREATE DATABASE', 'CREATE USER'], statements
    assert not any(SECURE in s for s in statements)
    assert 'Vaulted-Pass-2026' not in output


def test_a_fresh_server_is_secured_then_gets_the_database_and_account(tmp_path):
    statements, dummy = _run(tmp_path, FRESH, True)
    assert _first_words(statements) == ['DELETE FROM', 'CREATE DATABASE', 'CREATE USER'], statements


def test_a_secured_server_is_not_touched_again(tmp_path):
    statements, output = _run(tmp_path, CLEAN, True)
    assert statements == []
    assert re.search(r'^dbd1\s+:\s+ok=\d+\s+changed=0\s', output, re.M), output[-2000:]


def test_the_state_query_counts_test_grants_not_test_databases(tmp_path):
    _run(tmp_path, CLEAN, True)
    queries = (tmp_path / 'queries.log').read_text()
    assert "SELECT 'test_grants', COUNT(*) FROM mysql.db WHERE Db = 'test' OR Db LIKE 'test\\\\_%';" in queries
    assert 'test_database' not in queries  # an existing test database, which the role keeps, must not make every run change


def test_no_task_or_template_of_any_role_drops_a_database():
    found = []
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', '*', '*')):
        if os.path.isfile(path) and path.endswith(('.yml', '.yaml', '.j2', '.sql')):
            with open(path) as handle:
                if re.search(r'\bDROP\s+(DATABASE|SCHEMA)\b', handle.read(), re.I):
                    found.append(os.path.relpath(path, ROOT))
    assert found == []
