# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter slurm_running_config on registered results, and the validate role's tasks that use it (stage 2,
roles/validate/tasks/slurm_checks.yml) run by a real ansible-playbook on this machine with a stand-in scontrol
that prints the recorded ``scontrol show config`` (tests/unit/fixtures/slurm/), also in check mode."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.filter.slurm import FilterModule

FILTERS = FilterModule().filters()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'slurm')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


CONF = fixture('slurm.conf.22.05.8')
SHOW = fixture('show_config.22.05.8.txt')
SLURP = {'content': base64.b64encode(CONF.encode()).decode(), 'encoding': 'base64', 'source': '/etc/slurm/slurm.conf', 'changed': False}
CONNECT = 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)'


def record(show, slurp=None):
    return FILTERS['slurm_running_config'](show, SLURP if slurp is None else slurp, 'ctl', '/etc/slurm/slurm.conf')


def test_healthy_registered_results_pass():
    result = record({'rc': 0, 'stdout': SHOW, 'stderr': '', 'changed': False})
    assert (result['node'], result['check'], result['status']) == ('slurmctld@ctl', 'running_config', 'pass')
    assert result['reason'].startswith('slurmctld on ctl runs /etc/slurm/slurm.conf: compared 43 keys, all equal; 6 not comparable: ')


@pytest.mark.parametrize('show, slurp, reason', [
    # slurmctld stopped: what scontrol printed (recorded), exit code 1
    ({'rc': 1, 'stdout': '', 'stderr': CONNECT}, None,
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol show config '
     'exited 1: ' + CONNECT),
    ({'rc': 2, 'stdout': '', 'stderr': '', 'msg': "[Errno 2] No such file or directory: b'scontrol'", 'failed': True}, None,
     "slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol show config "
     "exited 2: [Errno 2] No such file or directory: b'scontrol'"),
    ({'skipped': True, 'changed': False}, None,
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol did not run'),
    (None, None, 'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol did not run'),
    ({'unreachable': True, 'msg': 'Failed to connect to the host via ssh'}, None,
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol did not run: '
     'Failed to connect to the host via ssh'),
    # exit code 0 and nothing printed: nothing read, never a pass
    ({'rc': 0, 'stdout': '', 'stderr': ''}, None,
     'slurmctld on ctl: scontrol show config printed no "Key = value" line (no output): nothing was read of what slurmctld runs'),
    ({'rc': 0, 'stdout': SHOW}, {'failed': True, 'msg': 'file not found: /etc/slurm/slurm.conf'},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: file not found: /etc/slurm/slurm.conf'),
    # a read marked failed is not trusted, whatever content it carries
    ({'rc': 0, 'stdout': SHOW}, {'failed': True, 'msg': 'permission denied', 'content': 'U2x1cm1Vc2VyPXNsdXJtCg==', 'encoding': 'base64'},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: permission denied'),
    ({'rc': 0, 'stdout': SHOW}, {'content': '%%% not base64', 'encoding': 'base64'},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: its content is not base64'),
    ({'rc': 0, 'stdout': SHOW}, {'skipped': True},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: slurp did not read it'),
])
def test_a_failed_read_fails_naming_why(show, slurp, reason):
    result = record(show, slurp)
    assert result['status'] == 'fail'
    assert result['reason'].startswith(reason), result['reason']


# --- the role's tasks, run for real -------------------------------------------------------------

TASKS = ('Read the configuration slurmctld runs', "Read the controller's slurm.conf", 'Keep the Slurm stage records')


def run_tasks(tmp_path, conf_text, show_text, check=False):
    """Run the three tasks of slurm_checks.yml (as the role has them) on localhost as the controller, with a stand-in
    scontrol on PATH printing ``show_text``; return the records the stage keeps and what changed on disk."""
    with open(os.path.join(ROOT, 'roles', 'validate', 'tasks', 'slurm_checks.yml')) as handle:
        tasks = dict((task['name'], task) for task in yaml.safe_load(handle))
    bindir = tmp_path / 'bin'
    bindir.mkdir(parents=True)
    (tmp_path / 'show.txt').write_text(show_text)
    scontrol = bindir / 'scontrol'
    scontrol.write_text('#!/bin/sh\n[ "$*" = "show config" ] || { echo "unexpected: $*" >&2; exit 9; }\n'
                        'echo "$*" >> %s\ncat %s\n' % (tmp_path / 'calls.log', tmp_path / 'show.txt'))
    scontrol.chmod(0o755)
    confdir = tmp_path / 'etc-slurm'
    confdir.mkdir()
    (confdir / 'slurm.conf').write_text(conf_text)
    play = [{'name': 'stage 2', 'hosts': 'localhost', 'gather_facts': False,
             'vars': {'_validate_controller': 'localhost', 'slurm_conf_dir': str(confdir)},
             'environment': {'PATH': '%s:%s' % (bindir, os.environ.get('PATH', ''))},
             'tasks': [tasks[name] for name in TASKS]}]
    (tmp_path / 'play.yml').write_text(yaml.safe_dump(play, sort_keys=False))
    before = sorted((p, os.stat(os.path.join(d, p)).st_mtime) for d, _s, files in os.walk(str(confdir)) for p in files)
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('ANSIBLE_'))
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-tmp'), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json')
    argv = [PLAYBOOK_BIN, '-i', 'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable, str(tmp_path / 'play.yml')]
    done = subprocess.run(argv + (['--check'] if check else []), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          env=env, cwd=str(tmp_path), check=False, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:]
    facts = {}
    changed = []
    for task in json.loads(done.stdout[done.stdout.index('{'):])['plays'][0]['tasks']:
        host = task['hosts']['localhost']
        facts.update(host.get('ansible_facts') or {})
        if host.get('changed'):
            changed.append(task['task']['name'])
    after = sorted((p, os.stat(os.path.join(d, p)).st_mtime) for d, _s, files in os.walk(str(confdir)) for p in files)
    calls = (tmp_path / 'calls.log').read_text().splitlines() if (tmp_path / 'calls.log').exists() else []
    return facts['_validate_slurm_records'], changed, before == after, calls


@pytest.mark.parametrize('check', [False, True], ids=['run', 'check-mode'])
def test_the_stage_keeps_a_running_config_record(tmp_path, check):
    records, changed, same, calls = run_tasks(tmp_path, CONF.replace('KillWait=30', 'KillWait=60'), SHOW, check=check)
    assert [(r['stage'], r['node'], r['check'], r['status']) for r in records] == [('slurm', 'slurmctld@localhost', 'running_config', 'fail')]
    assert 'KillWait is 60 in the file, 30 sec in slurmctld' in records[0]['reason']
    assert 'sudo scontrol reconfigure on localhost' in records[0]['reason']  # 22.05.8: KillWait needs no restart
    assert changed == [] and same and calls == ['show config']  # reads only, in check mode too


def test_the_stage_passes_a_healthy_controller_and_fails_an_empty_answer(tmp_path):
    records = run_tasks(tmp_path / 'healthy', CONF, SHOW)[0]
    assert [r['status'] for r in records] == ['pass'], records
    records = run_tasks(tmp_path / 'empty', CONF, '')[0]
    assert [r['status'] for r in records] == ['fail']
    assert 'scontrol show config printed no "Key = value" line (no output)' in records[0]['reason']
