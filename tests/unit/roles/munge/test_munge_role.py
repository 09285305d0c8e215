# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The munge role run by ansible-playbook on this machine: munge_key_path reaches munged, munge_key_src brings a key.

- ``preflight``: munge_key_path and munge_key_src are checked before any node changes, one message each, in the
  words of ``_slurm_munge`` (which the collection's preflight can reuse).
- ``options``: the systemd drop-in that gives munged ``--key-file`` is written only for a path other than the
  default, with the site's ``$OPTIONS`` kept; a second run changes nothing; check mode writes nothing and
  ``--diff`` shows it; going back to the default removes it (the drop-in directory is a temporary one here).
- ``key``: a key from a controller file (munge_key_src, binary, a relative path found in the play's files/)
  arrives byte for byte as 0400 munge:munge and is never printed.

The cluster half (munged really reads the new path, credentials cross nodes) is
molecule/default/tests/test_munge_key_path.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os
import pwd
import re
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_munge import munge_key_file_errors, munge_key_path_errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
# every byte value, a NUL, trailing newline and spaces: a text lookup would change it
KEY = bytes(range(256)) * 3 + b'\0\n  \n'
KEY_B64 = base64.b64encode(bytes(range(64))).decode()

pytestmark = pytest.mark.skipif(not os.path.exists(PLAYBOOK_BIN), reason='ansible-playbook is not in the venv')


def _munge_user():
    try:
        pwd.getpwnam('munge')
        return True
    except KeyError:
        return False


def _env():
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='0',
                ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0')


def _inventory(tmp):
    inventory = {'all': {'vars': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable},
                         'children': {'slurm_controller': {'hosts': {'ctl1': None}}, 'slurm_compute': {'hosts': {'node1': None}}}}}
    with open(str(tmp / 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle)


def _run(tmp, plays, *extra):
    _inventory(tmp)
    with open(str(tmp / 'play.yml'), 'w') as handle:
        yaml.safe_dump(plays, handle, sort_keys=False)
    result = subprocess.run([PLAYBOOK_BIN, '-i', str(tmp / 'hosts.yml'), str(tmp / 'play.yml')] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=_env(), cwd=str(tmp),
                            check=False, timeout=300)
    return result.returncode, result.stdout


def _recap(output, host):
    match = re.search(r'^%s\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)' % host, output, re.M)
    assert match, output[-3000:]
    return int(match.group(1)), int(match.group(2))


# --- preflight: bad munge_key_path / munge_key_src stop the role with one message, naming the value ---

SRC_PROBLEMS = {
    'missing_abs': ('{tmp}/nowhere/munge.key', 'there is no such file'),
    'missing_rel': ('nowhere.key', 'there is no such file (a relative path is looked up in the files/ directories of the play and the role)'),
    'short': ('{tmp}/short.key', '{tmp}/short.key holds 31 bytes; munged needs at least 32 (mungekey --create makes 1024)'),
    'empty': ('{tmp}/empty.key', '{tmp}/empty.key holds 0 bytes; munged needs at least 32 (mungekey --create makes 1024)'),
    # (an absolute path that is not a file is refused by the collection's preflight, the role's first task, in its words)
    'directory': ('{tmp}/keydir', '{tmp}/keydir is a directory'),
}
PATH_CASES = ['/etc/munge.key', '/etc/munge/site key', '/etc/munge/%n.key', '/etc/munge/../munge.key', 'munge/munge.key']
GOOD = {
    'default': {},
    'site_path': {'munge_key_path': '/etc/munge/site.key'},
    'src_abs': {'munge_key_src': '{tmp}/good.key'},
    'src_rel': {'munge_key_src': 'site-munge.key'},
    'b64': {'munge_key_b64': KEY_B64},
}


@pytest.fixture(scope='module')
def preflight(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('munge-preflight')
    out = tmp / 'results'
    out.mkdir()
    (tmp / 'files').mkdir()
    (tmp / 'files' / 'site-munge.key').write_bytes(KEY)
    (tmp / 'good.key').write_bytes(KEY)
    (tmp / 'short.key').write_bytes(b'k' * 31)
    (tmp / 'empty.key').write_bytes(b'')
    (tmp / 'keydir').mkdir()
    cases = {}
    for name, (src, _problem) in SRC_PROBLEMS.items():
        cases['src_' + name] = {'munge_key_src': src.format(tmp=tmp)}
    for index, path in enumerate(PATH_CASES):
        cases['path_%d' % index] = {'munge_key_path': path}
    cases['both'] = {'munge_key_src': str(tmp / 'good.key'), 'munge_key_b64': KEY_B64}
    for name, variables in GOOD.items():
        cases['good_' + name] = dict((key, value.format(tmp=tmp)) for key, value in variables.items())
    plays = []
    for name, variables in cases.items():
        plays.append({
            'name': name, 'hosts': 'node1', 'gather_facts': False, 'vars': variables,
            'tasks': [{'block': [
                {'ansible.builtin.include_role': {'name': 'gpucluster.bringup.munge', 'tasks_from': 'preflight'}},
                {'ansible.builtin.copy': {'content': 'ok', 'dest': str(out / name)}},
            ], 'rescue': [
                {'ansible.builtin.copy': {'content': '{{ ansible_failed_result.msg }}', 'dest': str(out / name)}},
            ]}],
        })
    dummy, output = _run(tmp, plays, '-vvv')
    found = dict((name, (out / name).read_text() if (out / name).exists() else None) for name in cases)
    return tmp, found, output


@pytest.mark.parametrize('name', sorted(SRC_PROBLEMS))
def test_a_bad_munge_key_src_is_named_by_path(preflight, name):
    tmp, found, output = preflight
    src, problem = SRC_PROBLEMS[name]
    expected = munge_key_file_errors(src.format(tmp=tmp), problem.format(tmp=tmp))
    assert len(expected) == 1
    # the role's own check, or the collection's preflight (its first task: the same rule, one line per host)
    assert expected[0] in ' '.join(found['src_' + name].split()), (found['src_' + name], output[-3000:])


@pytest.mark.parametrize('index', range(len(PATH_CASES)))
def test_a_bad_munge_key_path_is_refused_in_the_words_of_the_preflight_rules(preflight, index):
    dummy, found, output = preflight
    expected = munge_key_path_errors(PATH_CASES[index])
    assert len(expected) == 1
    got = found['path_%d' % index]
    assert got is not None and expected[0] in ' '.join(got.split()), (got, output[-3000:])


def test_both_key_sources_is_one_message_without_the_key(preflight):
    dummy, found, output = preflight
    assert 'munge_key_b64 and munge_key_src are both set (the key is not shown), expected one of them' in ' '.join(found['both'].split())
    assert KEY_B64 not in output


@pytest.mark.parametrize('name', sorted(GOOD))
def test_good_settings_pass(preflight, name):
    dummy, found, output = preflight
    assert found['good_' + name] == 'ok', (found['good_' + name], output[-3000:])


# --- options: the drop-in that points munged at munge_key_path ---

def _options_play(tmp, path):
    dropin_dir = tmp / 'systemd' / 'munge.service.d'
    return [{
        'name': 'options', 'hosts': 'node1', 'gather_facts': False,
        'vars': {'munge_key_path': path, 'munge_service_enabled': False},
        'tasks': [{'ansible.builtin.include_role': {'name': 'gpucluster.bringup.munge', 'tasks_from': 'options'},
                   'vars': {'_munge_unit_dropin_dir': str(dropin_dir)}}],
    }], dropin_dir / 'gpucluster-key-file.conf'


DROPIN_BODY = ('[Service]\nExecStart=\nExecStart=/usr/sbin/munged $OPTIONS --key-file=/etc/munge/site.key\n')


def test_a_key_path_other_than_the_default_gives_munged_key_file_once(tmp_path):
    plays, dropin = _options_play(tmp_path, '/etc/munge/site.key')
    rc, first = _run(tmp_path, plays, '--diff')
    assert rc == 0, first[-3000:]
    text = dropin.read_text()
    assert text.endswith(DROPIN_BODY), text
    assert text.startswith('# ') and 'gpucluster.bringup.munge' in text.splitlines()[0]
    assert stat.S_IMODE(dropin.stat().st_mode) == 0o644 and dropin.stat().st_uid == 0
    assert _recap(first, 'node1') == (1, 0)
    assert '--key-file=/etc/munge/site.key' in first  # --diff shows the unit line
    rc, second = _run(tmp_path, plays, '--diff')
    assert rc == 0 and _recap(second, 'node1') == (0, 0), second[-3000:]


def test_check_mode_writes_nothing_and_reports_the_drop_in(tmp_path):
    plays, dummy = _options_play(tmp_path, '/etc/munge/site.key')
    rc, output = _run(tmp_path, plays, '--check', '--diff')
    assert rc == 0, output[-3000:]
    assert _recap(output, 'node1') == (1, 0)
    assert '--key-file=/etc/munge/site.key' in output
    assert not (tmp_path / 'systemd').exists()


def test_the_default_path_writes_nothing_and_removes_an_earlier_drop_in(tmp_path):
    plays, dummy = _options_play(tmp_path, '/etc/munge/munge.key')
    rc, output = _run(tmp_path, plays)
    assert rc == 0 and _recap(output, 'node1') == (0, 0), output[-3000:]
    assert not (tmp_path / 'systemd').exists()
    plays, dropin = _options_play(tmp_path, '/etc/munge/site.key')
    rc, output = _run(tmp_path, plays)
    assert rc == 0 and dropin.exists(), output[-3000:]
    plays, dropin = _options_play(tmp_path, '/etc/munge/munge.key')
    rc, output = _run(tmp_path, plays, '--diff')
    assert rc == 0 and _recap(output, 'node1') == (1, 0), output[-3000:]
    assert not dropin.exists()
    assert dropin.parent.is_dir()  # a directory is never removed: other drop-ins may live there
    rc, output = _run(tmp_path, plays)
    assert rc == 0 and _recap(output, 'node1') == (0, 0), output[-3000:]


def test_a_changed_drop_in_restarts_munge_and_reloads_systemd_only_then():
    """The drop-in entries mark munged to restart, and the daemon-reload runs right after them (before service.yml
    starts munged), only when the drop-in changed and the role manages the service."""
    with open(os.path.join(ROOT, 'roles', 'munge', 'tasks', 'options.yml')) as handle:
        tasks = yaml.safe_load(handle)
    write, reload_ = tasks
    # (the restart: the drop-in entries mark munged before they change; service.yml restarts it and settles the mark)
    assert 'notify' not in write and write['register'] == '__munge_dropin'
    assert write['vars']['_munge_dropin_files'].count("'restarts': _munge_restarts") == 2
    with open(os.path.join(ROOT, 'roles', 'munge', 'tasks', 'service.yml')) as handle:
        service = yaml.safe_load(handle)
    assert [t['name'].split(' (')[0] for t in service] == [
        'Check mode - munged is not installed yet, its service is not started', 'Enable and start munged',
        'Read whether munged has a change of its key or unit still to take', 'Restart munged', 'Check that munged took the change']
    assert reload_['ansible.builtin.systemd_service'] == {'daemon_reload': True}
    assert reload_['when'] == ['__munge_dropin is changed', 'munge_service_enabled | bool']
    with open(os.path.join(ROOT, 'roles', 'munge', 'tasks', 'main.yml')) as handle:
        order = [t['ansible.builtin.import_tasks'] for t in yaml.safe_load(handle)]
    assert order.index('key.yml') < order.index('options.yml') < order.index('service.yml')


# --- key: munge_key_src arrives byte for byte, private to munge, never printed ---

@pytest.mark.skipif(not _munge_user(), reason='no munge user on this machine')
def test_a_key_from_munge_key_src_arrives_byte_for_byte_and_is_never_printed(tmp_path):
    (tmp_path / 'files').mkdir()
    (tmp_path / 'files' / 'site-munge.key').write_bytes(KEY)
    key_path = tmp_path / 'node' / 'munge' / 'site.key'
    plays = [{
        'name': 'key', 'hosts': 'node1', 'gather_facts': False,
        'vars': {'munge_key_path': str(key_path), 'munge_key_src': 'site-munge.key', 'munge_service_enabled': False},
        'tasks': [{'ansible.builtin.include_role': {'name': 'gpucluster.bringup.munge', 'tasks_from': 'key'}}],
    }]
    rc, first = _run(tmp_path, plays, '-vvv', '--diff')
    assert rc == 0, first[-3000:]
    assert key_path.read_bytes() == KEY
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o400 and stat.S_IMODE(key_path.parent.stat().st_mode) == 0o700
    assert pwd.getpwuid(key_path.stat().st_uid).pw_name == 'munge'
    # the source host was not asked (no mungekey, no slurp): the key came from the controller file
    assert re.search(r'TASK \[gpucluster.bringup.munge : Create the cluster key on the source host if it has none\] \*+\n'
                     r'(task path: .*\n)?skipping: \[node1\]', first), first[-3000:]
    assert not (tmp_path / 'node' / 'munge' / 'site.key.new').exists()
    leaked = base64.b64encode(KEY).decode()[:40] in first or KEY[:64].hex() in first
    assert not leaked, 'the key appears in the -vvv --diff output'
    rc, second = _run(tmp_path, plays)
    assert rc == 0 and _recap(second, 'node1') == (0, 0), second[-3000:]
