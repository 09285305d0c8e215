# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the validate role gives the report besides the records, evaluated by a real ansible-playbook on this machine.

The collection version (roles/validate/tasks/report.yml): MANIFEST.json where the collection is installed
(``ansible-galaxy collection install`` writes it, and leaves galaxy.yml out), galaxy.yml in a checkout, null (the
report says "unknown") where neither is; the expression is read from report.yml itself. The start time
(tasks/main.yml): UTC ISO 8601, as validation_report's ``started`` takes it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import parse_time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def role_task(path, name):
    with open(os.path.join(ROOT, 'roles', 'validate', 'tasks', path)) as handle:
        return [task for task in yaml.safe_load(handle) if task['name'] == name][0]


def layouts(tmp_path):
    """role_path of the validate role in: an installed collection, a checkout, a tree with neither file, this checkout."""
    installed = tmp_path / 'collections' / 'ansible_collections' / 'gpucluster' / 'bringup'
    (installed / 'roles' / 'validate').mkdir(parents=True)
    (installed / 'MANIFEST.json').write_text(json.dumps({'collection_info': {'namespace': 'gpucluster', 'name': 'bringup', 'version': '9.8.7'},
                                                         'format': 1}))
    checkout = tmp_path / 'checkout'
    (checkout / 'roles' / 'validate').mkdir(parents=True)
    (checkout / 'galaxy.yml').write_text('namespace: gpucluster\nname: bringup\nversion: 1.2.3\n')
    bare = tmp_path / 'bare'
    (bare / 'roles' / 'validate').mkdir(parents=True)
    return {'installed': str(installed / 'roles' / 'validate'), 'checkout': str(checkout / 'roles' / 'validate'),
            'bare': str(bare / 'roles' / 'validate'), 'this': os.path.join(ROOT, 'roles', 'validate')}


def test_collection_version_and_start_time(tmp_path):
    report = role_task('report.yml', 'Write the validation report')
    wanted = dict((key, report['vars'][key]) for key in ('__validate_collection_root', '__validate_collection_version'))
    started = role_task('main.yml', 'Note when the validation began (the report gives its duration)')
    roots = layouts(tmp_path)
    tasks = [dict(started, run_once=True)]
    for name, path in sorted(roots.items()):
        tasks.append({'name': name, 'ansible.builtin.set_fact': {'found_%s' % name: report['gpucluster.bringup.validation_report']['collection_version']},
                      'vars': {'role_path': path}})
    (tmp_path / 'play.yml').write_text(yaml.safe_dump([{'name': 'report inputs', 'hosts': 'localhost', 'gather_facts': False, 'vars': wanted,
                                                        'tasks': tasks}], sort_keys=False))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json')
    done = subprocess.run([PLAYBOOK_BIN, '-i', 'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                           str(tmp_path / 'play.yml')], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                          cwd=str(tmp_path), check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    facts = {}
    for task in json.loads(done.stdout[done.stdout.index('{'):])['plays'][0]['tasks']:
        facts.update(task['hosts']['localhost'].get('ansible_facts') or {})
    found = {'started': facts['_validate_started'], 'versions': dict((name, facts['found_%s' % name]) for name in roots)}
    with open(os.path.join(ROOT, 'galaxy.yml')) as handle:
        ours = str(yaml.safe_load(handle)['version'])
    assert found['versions'] == {'installed': '9.8.7', 'checkout': '1.2.3', 'bare': None, 'this': ours}
    assert parse_time(found['started']) is not None and found['started'].endswith('Z')
