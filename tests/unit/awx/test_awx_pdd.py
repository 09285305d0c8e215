"""scripts/lib/awx_pdd.py: an AWX-style private data directory that ansible-runner really runs."""
import glob
import json
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SCRIPT = os.path.join(ROOT, 'scripts', 'lib', 'awx_pdd.py')
VENV_BIN = os.path.dirname(sys.executable)
RUNNER = os.path.join(VENV_BIN, 'ansible-runner')

PLAYBOOK = """---
- name: AWX-style job on localhost
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:

    - name: Show the extra var
      ansible.builtin.debug:
        msg: "probe={{ awx_pdd_probe }} group_var={{ pdd_group_var }} tres={{ ['gpu:h100:8'] | gpucluster.bringup.slurm_accounting_tres }}"
"""

INVENTORY = """---
all:
  vars:
    pdd_group_var: from-group-vars
  hosts:
    localhost:
      ansible_connection: local
      ansible_python_interpreter: {python}
    elsewhere:
      ansible_connection: local
      ansible_python_interpreter: {python}
"""


def pdd(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)


@pytest.fixture()
def project(tmp_path):
    proj = tmp_path / 'project'
    (proj / 'playbooks').mkdir(parents=True)
    (proj / 'playbooks' / 'hello.yml').write_text(PLAYBOOK)
    (proj / '.git').mkdir()
    (proj / '.git' / 'HEAD').write_text('ref: refs/heads/main\n')
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(INVENTORY.format(python=sys.executable))
    return proj, inventory


def test_runner_runs_the_job_and_records_the_extra_var(tmp_path, project):
    proj, inventory = project
    dest = tmp_path / 'pdd'
    built = pdd('--dest', str(dest), '--project', str(proj), '--playbook', 'playbooks/hello.yml', '--inventory', str(inventory),
                '--extra-vars', '{"awx_pdd_probe": "survey-answer-42"}', '--limit', 'localhost', '--verbosity', '1', '--ident', '7',
                '--env', 'PDD_TEST_ENV=yes')
    assert built.returncode == 0, built.stderr
    result = json.loads(built.stdout)
    assert result['hosts'] == ['elsewhere', 'localhost']

    # the layout AWX writes
    hosts_script = dest / 'inventory' / 'hosts'
    assert stat.S_IMODE(hosts_script.stat().st_mode) == 0o700
    assert hosts_script.read_text().startswith('#! /usr/bin/env python3\n')
    assert (dest / 'env' / 'cmdline').read_text().split() == ['-u', 'root', '-l', 'localhost', '-v']
    assert json.loads((dest / 'env' / 'extravars').read_text()) == {'awx_pdd_probe': 'survey-answer-42', 'awx_job_id': 7}
    envvars = json.loads((dest / 'env' / 'envvars').read_text())
    assert envvars['ANSIBLE_COLLECTIONS_PATH'].split(':')[0] == str(dest / 'requirements_collections')
    assert envvars['PDD_TEST_ENV'] == 'yes' and envvars['JOB_ID'] == '7'
    assert not (dest / 'project' / '.git').exists(), 'the project copy leaves out .git as the collection build does'
    bringup = dest / 'requirements_collections' / 'ansible_collections' / 'gpucluster' / 'bringup'
    assert (bringup / 'galaxy.yml').is_file() and (bringup / 'roles' / 'validate').is_dir()
    assert not (bringup / '.venv').exists() and not (bringup / 'molecule').exists()

    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get('PATH', ''))
    env.pop('ANSIBLE_COLLECTIONS_PATH', None)
    run = subprocess.run([RUNNER, 'run', str(dest), '-p', 'playbooks/hello.yml', '--ident', '7'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, check=False, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    artifacts = dest / 'artifacts' / '7'
    assert (artifacts / 'status').read_text() == 'successful'
    assert (artifacts / 'rc').read_text() == '0'
    events = [json.loads(open(path).read()) for path in sorted(glob.glob(str(artifacts / 'job_events' / '*.json')))]
    ok = [e for e in events if e.get('event') == 'runner_on_ok']
    assert sorted(e['event_data']['host'] for e in ok) == ['localhost', 'localhost'], 'the limit keeps the job on localhost'
    messages = [e['event_data']['res'].get('msg') for e in ok if e['event_data']['task'] == 'Show the extra var']
    assert messages == ['probe=survey-answer-42 group_var=from-group-vars tres=gres/gpu,gres/gpu:h100']
    playbook_start = next(e for e in events if e.get('event') == 'playbook_on_start')
    assert playbook_start['event_data']['playbook'] == 'playbooks/hello.yml'


@pytest.mark.parametrize('args, message', [
    (['--extra-vars', '[1, 2]'], "--extra-vars must be a JSON object of variables, got list: '[1, 2]'"),
    (['--extra-vars', '{bad'], '--extra-vars is not JSON'),
    (['--extra-vars', '@/nonexistent/vars.json'], "--extra-vars file '/nonexistent/vars.json' cannot be read"),
    (['--env', 'NOEQUALS'], "--env 'NOEQUALS' is not KEY=VALUE"),
    (['--env', '1X=y'], "--env '1X=y' is not KEY=VALUE"),
    (['--verbosity', '6'], '--verbosity 6 is out of range: 0 to 5'),
    (['--ident', '../x'], "--ident '../x' must be letters, digits"),
    (['--playbook', 'playbooks/missing.yml'], "--playbook 'playbooks/missing.yml' is not a file of the project"),
    (['--inventory', '/nonexistent/hosts.yml'], "--inventory '/nonexistent/hosts.yml' does not exist"),
    (['--collection', '/tmp'], "--collection '/tmp' has no galaxy.yml"),
])
def test_bad_arguments_give_one_clear_error(tmp_path, project, args, message):
    proj, inventory = project
    base = {'--dest': str(tmp_path / 'pdd'), '--project': str(proj), '--playbook': 'playbooks/hello.yml', '--inventory': str(inventory)}
    argv = []
    for key, value in base.items():
        if key not in args:
            argv += [key, value]
    result = pdd(*(argv + args))
    assert result.returncode == 2
    assert result.stderr.startswith('awx_pdd: error: ' + message), result.stderr


def test_dest_not_empty_needs_force(tmp_path, project):
    proj, inventory = project
    dest = tmp_path / 'pdd'
    dest.mkdir()
    (dest / 'old').write_text('x')
    args = ['--dest', str(dest), '--project', str(proj), '--playbook', 'playbooks/hello.yml', '--inventory', str(inventory), '--no-collection']
    refused = pdd(*args)
    assert refused.returncode == 2
    assert refused.stderr == "awx_pdd: error: --dest '%s' exists and is not empty; remove it or pass --force\n" % dest
    assert pdd(*(args + ['--force'])).returncode == 0
    assert not (dest / 'old').exists()


def test_copy_format_and_options_written_as_awx_does(tmp_path, project):
    proj, inventory = project
    dest = tmp_path / 'pdd'
    built = pdd('--dest', str(dest), '--project', str(proj), '--playbook', 'playbooks/hello.yml', '--inventory', str(inventory),
                '--inventory-format', 'copy', '--no-collection', '--check', '--diff', '--forks', '30', '--tags', 'munge,slurm',
                '--skip-tags', 'staging', '--verbosity', '3', '--user', 'admin', '--become', '--timeout', '600')
    assert built.returncode == 0, built.stderr
    assert (dest / 'inventory' / '00-hosts.yml').read_text() == inventory.read_text()
    assert (dest / 'env' / 'cmdline').read_text().split() == [
        '--check', '-u', 'admin', '--become', '--diff', '--forks=30', '-vvv', '-t', 'munge,slurm', '--skip-tags=staging']
    assert json.loads((dest / 'env' / 'settings').read_text()) == {'job_timeout': 600, 'suppress_ansible_output': False}
    assert not os.listdir(dest / 'requirements_collections')


def test_dest_inside_the_project_is_not_copied_into_itself(tmp_path, project):
    proj, inventory = project
    dest = proj / '.pdd'
    built = pdd('--dest', str(dest), '--project', str(proj), '--playbook', 'playbooks/hello.yml', '--inventory', str(inventory), '--no-collection')
    assert built.returncode == 0, built.stderr
    assert sorted(os.listdir(dest / 'project')) == ['playbooks']


def test_playbook_left_out_by_build_ignore_is_an_error(tmp_path, project):
    proj, inventory = project
    (proj / 'galaxy.yml').write_text('namespace: x\nname: y\nbuild_ignore:\n  - playbooks\n  - "*.tar.gz"\nversion: 1.0.0\n')
    result = pdd('--dest', str(tmp_path / 'pdd'), '--project', str(proj), '--collection', str(proj), '--playbook', 'playbooks/hello.yml',
                 '--inventory', str(inventory))
    assert result.returncode == 2
    assert result.stderr == ("awx_pdd: error: --playbook 'playbooks/hello.yml' is left out of the project copy by the build_ignore "
                             "patterns ['playbooks', '*.tar.gz']\n")


def test_failing_ansible_inventory_is_reported(tmp_path, project):
    proj, inventory = project
    result = pdd('--dest', str(tmp_path / 'pdd'), '--project', str(proj), '--playbook', 'playbooks/hello.yml', '--inventory', str(inventory),
                 '--no-collection', '--ansible-inventory', '/bin/false')
    assert result.returncode == 2
    assert result.stderr.startswith('awx_pdd: error: /bin/false --list --export -i %s failed (rc 1): ' % inventory)


def test_missing_ansible_inventory_is_reported(tmp_path, project):
    proj, inventory = project
    env = dict(os.environ, PATH='/nonexistent')
    python = os.path.realpath('/usr/bin/python3')
    result = subprocess.run([python, SCRIPT, '--dest', str(tmp_path / 'pdd'), '--project', str(proj), '--playbook', 'playbooks/hello.yml',
                             '--inventory', str(inventory), '--no-collection'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    assert result.returncode == 2
    assert result.stderr == ('awx_pdd: error: ansible-inventory not found next to %s nor on PATH; '
                             'install ansible-core or pass --ansible-inventory\n' % python)
