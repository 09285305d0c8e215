# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pending restarts (issue #50 item 1): the marker written before a file a daemon reads is replaced, kept until the daemon took it.

The pure rules (``_pending_restart``) in tables; then the two modules that
keep the markers, run in-process on real files and real processes: a
``sleep`` started before the marker is a daemon that has not restarted, one
started after it is a daemon that has.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import subprocess
import time

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.module_utils import _pending_restart as pending
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io
from ansible_collections.gpucluster.bringup.plugins.modules import install_files, slurm_daemons

from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module, snapshot

BOOT = 'b0b0'


def marker(action='restart', since=100.0, boot_id=BOOT, reasons=('/etc/slurm/slurm.conf changed (content)',)):
    return {'daemon': 'slurmd', 'action': action, 'since': since, 'boot_id': boot_id, 'reasons': list(reasons), 'written': 0}


# --- the rules ---

@pytest.mark.parametrize('started, boot_id, reconfigured, action, expected', [
    (None, BOOT, False, 'restart', 'not running'),                   # it reads the files when it starts
    (99.0, BOOT, False, 'restart', ''),                              # the old process: the restart is still to do
    (100.0, BOOT, False, 'restart', ''),                             # same tick: not after
    (100.01, BOOT, False, 'restart', 'its process started after'),   # restarted since
    (99.0, 'other', False, 'restart', 'rebooted'),                   # a marker of another boot
    (99.0, BOOT, True, 'reconfigure', 'reconfigured'),               # Slurm < 23.11 reconfigures in place
    (99.0, BOOT, True, 'restart', ''),                               # a reconfigure never settles a restart
    (101.0, BOOT, False, 'reconfigure', 'its process started after'),  # 23.11+: the reconfigure starts a new process
])
def test_settled(started, boot_id, reconfigured, action, expected):
    why = pending.settled(marker(action), boot_id, started, reconfigured)
    assert (expected in why) if expected else why == ''


@pytest.mark.parametrize('old, action, expected_action, expected_reasons', [
    (None, 'reconfigure', 'reconfigure', ['new']),
    (marker('reconfigure', reasons=['old']), 'restart', 'restart', ['old', 'new']),
    (marker('restart', reasons=['old']), 'reconfigure', 'restart', ['old', 'new']),   # a restart outweighs a reconfigure
    (marker('restart', reasons=['new']), 'restart', 'restart', ['new']),               # a reason once
    (marker('restart', boot_id='other', reasons=['old']), 'reconfigure', 'reconfigure', ['new']),  # another boot: gone
])
def test_merge(old, action, expected_action, expected_reasons):
    merged = pending.merge(old, 'slurmd', action, ['new'], BOOT, 200.0, 1.0)
    assert (merged['action'], merged['reasons'], merged['since'], merged['boot_id']) == (expected_action, expected_reasons, 200.0, BOOT)


@pytest.mark.parametrize('text', ['', '{', 'null', '[]', '{"action": "stop", "since": 1, "boot_id": "b", "reasons": []}',
                                  '{"action": "restart", "since": true, "boot_id": "b", "reasons": []}',
                                  '{"action": "restart", "since": 1, "boot_id": "b", "reasons": [1]}', '\x00\xff'])
def test_a_garbled_marker_is_a_restart_to_do_never_nothing(text):
    read = pending.parse_marker('slurmd', text, 50.0, BOOT)
    assert read['action'] == 'restart' and read['since'] == 50.0 and 'could not be read' in read['reasons'][0]
    assert pending.settled(read, BOOT, 49.0) == '' and pending.settled(read, BOOT, 51.0)


@pytest.mark.parametrize('actions, controller, compute, expected', [
    ({'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False, 'reasons': ['a']}, True, False, [('slurmctld', 'restart')]),
    ({'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False, 'reasons': ['a']}, True, True,
     [('slurmctld', 'restart'), ('slurmd', 'restart')]),
    ({'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True, 'reasons': ['a']}, True, False, [('slurmctld', 'reconfigure')]),
    ({'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True, 'reasons': ['a']}, False, True, []),  # the controller's reconfigure
    ({'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False, 'reasons': ['a']}, False, True, [('slurmd', 'restart')]),
    ({'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': False, 'reasons': []}, True, True, []),
])
def test_conf_restarts(actions, controller, compute, expected):
    restarts = pending.conf_restarts(actions, controller, compute)
    assert [(item['daemon'], item['action']) for item in restarts] == expected
    assert pending.check_restarts('files[0]', restarts) == restarts


@pytest.mark.parametrize('value, fragments', [
    ('slurmd', ['restarts is', 'expected a list']),
    ([{'daemon': '-x'}], ['restarts[0].daemon is', 'systemd unit name']),
    ([{'daemon': 'slurmd', 'action': 'stop'}], ['restarts[0].action is', 'restart, reconfigure']),
    ([{'daemon': 'slurmd', 'when': 1}], ["key 'when'"]),
    ([{'daemon': 'slurmd', 'reason': 'a\nb'}], ['reason is', 'one line']),
    ([3], ['restarts[0] is 3']),
])
def test_bad_restarts(value, fragments):
    with pytest.raises(ValueError) as info:
        pending.check_restarts('files[0] (/etc/x)', value)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_the_message_names_the_daemon_the_host_the_change_and_the_command():
    text = pending.describe('ctl', dict(marker('reconfigure'), daemon='slurmctld'))
    assert text.startswith('slurmctld on ctl has not applied /etc/slurm/slurm.conf changed (content)') and 'sudo scontrol reconfigure' in text
    assert 'sudo systemctl restart munge' in pending.describe('gpu-01', dict(marker(), daemon='munge'))


# --- install_files: the marker before the file, never in check mode, not for a mode change ---

def _files(tmp_path, text, restarts=('slurmd',), mode='0644'):
    dest = str(tmp_path / 'etc' / 'gres.conf')
    data = text.encode()
    return dict(files=[{'dest': dest, 'checksum': hashlib.sha1(data).hexdigest(), 'mode': mode, 'restarts': list(restarts)}],
                contents={dest: base64.b64encode(data).decode()}, pending_dir=str(tmp_path / 'pending')), dest


def test_a_changed_file_marks_its_daemon_before_it_is_replaced(tmp_path):
    (tmp_path / 'etc').mkdir()
    args, dest = _files(tmp_path, 'Name=gpu File=/dev/nvidia0\n')
    outcome = run_module(install_files.main, args)
    assert not outcome.failed and outcome.result['changed'], outcome.result
    assert [item['daemon'] for item in outcome.result['restarts']] == ['slurmd']
    written = json.loads((tmp_path / 'pending' / 'slurmd.json').read_text())
    assert written['action'] == 'restart' and written['reasons'] == ['%s changed (create file)' % dest]
    assert written['boot_id'] == pending_io.boot_id() and written['since'] <= pending_io.boot_clock()
    # the same content again: nothing changes, no new reason
    outcome = run_module(install_files.main, args)
    assert not outcome.result['changed'] and outcome.result['restarts'] == []
    # a mode change alone restarts nothing
    (tmp_path / 'pending' / 'slurmd.json').unlink()
    args, dest = _files(tmp_path, 'Name=gpu File=/dev/nvidia0\n', mode='0600')
    outcome = run_module(install_files.main, args)
    assert outcome.result['changed'] and outcome.result['restarts'] == [] and not (tmp_path / 'pending' / 'slurmd.json').exists()


def test_check_mode_never_writes_a_marker(tmp_path):
    (tmp_path / 'etc').mkdir()
    args, dest = _files(tmp_path, 'x\n')
    before = snapshot(str(tmp_path))
    outcome = run_module(install_files.main, args, check_mode=True)
    assert outcome.result['changed'] and outcome.result['restarts'][0]['daemon'] == 'slurmd'
    assert snapshot(str(tmp_path)) == before


def test_the_marker_stays_when_the_write_fails_after_it(tmp_path, monkeypatch):
    """A run stopped (here: the write fails) after the marker and before the file: the restart stays to do, never lost."""
    (tmp_path / 'etc').mkdir()
    args, dest = _files(tmp_path, 'x\n')

    def broken(*args, **kwargs):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(install_files, 'write_file', broken)
    outcome = run_module(install_files.main, args)
    assert outcome.failed and 'No space left on device' in outcome.msg
    assert json.loads((tmp_path / 'pending' / 'slurmd.json').read_text())['action'] == 'restart'


def test_a_marker_that_cannot_be_written_stops_before_the_file(tmp_path):
    (tmp_path / 'etc').mkdir()
    (tmp_path / 'pending').write_text('a file where the directory goes')
    args, dest = _files(tmp_path, 'x\n')
    outcome = run_module(install_files.main, args)
    assert outcome.failed and 'marker of slurmd could not be written' in outcome.msg and 'nothing was changed' in outcome.msg
    assert not os.path.exists(dest)


# --- slurm_daemons: pending until the process started after the marker ---

@pytest.fixture
def daemon(monkeypatch):
    """A stand-in daemon: a real process whose pid systemctl show reports; ``restart()`` replaces it."""
    procs = []

    def start():
        procs.append(subprocess.Popen(['sleep', '60']))
        time.sleep(0.05)   # /proc's start time counts in clock ticks (10 ms)
        return procs[-1]

    def run_command(self, args, **kwargs):
        assert args[:3] == ['systemctl', 'show', '--property=Id,MainPID'], args
        pid = procs[-1].pid if procs and procs[-1].poll() is None else 0
        return 0, 'Id=slurmd.service\nMainPID=%d\n' % pid, ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _mark(tmp_path, action='restart'):
    time.sleep(0.05)
    pending_io.write_markers(str(tmp_path), [{'daemon': 'slurmd', 'action': action, 'reason': 'gres.conf changed'}])
    time.sleep(0.05)


def test_pending_until_the_daemon_restarts_then_settled_and_removed(tmp_path, daemon):
    daemon()
    _mark(tmp_path)
    args = {'daemons': ['slurmd'], 'pending_dir': str(tmp_path)}
    read = run_module(slurm_daemons.main, args)
    assert not read.failed and read.result['pending']['slurmd']['action'] == 'restart' and read.result['settled'] == {}
    assert 'gres.conf changed' in read.result['pending']['slurmd']['message']
    # the restart fails (the old process still runs): the settle fails naming it, the marker stays
    failed = run_module(slurm_daemons.main, dict(args, settle=True, fail_pending=True))
    assert failed.failed and 'slurmd on' in failed.msg and 'sudo systemctl restart slurmd' in failed.msg
    assert (tmp_path / 'slurmd.json').exists()
    daemon()   # restarted
    checked = run_module(slurm_daemons.main, dict(args, settle=True, fail_pending=True, _ansible_check_mode=True))
    assert checked.result['settled'] == {'slurmd': 'its process started after the change'} and (tmp_path / 'slurmd.json').exists()
    done = run_module(slurm_daemons.main, dict(args, settle=True, fail_pending=True))
    assert not done.failed and done.result['changed'] and done.result['pending'] == {}
    assert not (tmp_path / 'slurmd.json').exists()
    again = run_module(slurm_daemons.main, dict(args, settle=True, fail_pending=True))
    assert not again.result['changed'] and again.result['settled'] == {}


def test_a_reconfigure_marker_is_settled_by_this_runs_reconfigure(tmp_path, daemon):
    daemon()
    _mark(tmp_path, 'reconfigure')
    args = {'daemons': ['slurmd'], 'pending_dir': str(tmp_path), 'settle': True}
    assert run_module(slurm_daemons.main, args).result['pending']['slurmd']['action'] == 'reconfigure'
    done = run_module(slurm_daemons.main, dict(args, reconfigured=['slurmd.service']))
    assert done.result['settled'] == {'slurmd': 'reconfigured'} and not (tmp_path / 'slurmd.json').exists()


def test_a_stopped_daemon_takes_the_change_when_it_starts(tmp_path, daemon):
    _mark(tmp_path)
    done = run_module(slurm_daemons.main, {'daemons': ['slurmd'], 'pending_dir': str(tmp_path), 'settle': True})
    assert 'not running' in done.result['settled']['slurmd'] and not (tmp_path / 'slurmd.json').exists()


def test_no_marker_no_change(tmp_path, daemon):
    daemon()
    outcome = run_module(slurm_daemons.main, {'daemons': ['slurmd'], 'pending_dir': str(tmp_path / 'none'), 'settle': True})
    assert not outcome.failed and not outcome.result['changed'] and outcome.result['pending'] == {} and outcome.result['settled'] == {}


# --- the filters the roles use ---

def test_the_validation_records_one_failure_per_pending_daemon_or_one_pass():
    from ansible_collections.gpucluster.bringup.plugins.filter.pending import pending_records, slurm_conf_restarts
    assert [(rec['check'], rec['status']) for rec in pending_records({}, 'gpu-01')] == [('pending_restart', 'pass')]
    found = pending_records({'slurmd': {'action': 'restart', 'message': 'slurmd on gpu-01 has not applied x'},
                             'munge': {'action': 'restart', 'message': 'munge on gpu-01 has not applied y'}}, 'gpu-01')
    assert [(rec['node'], rec['status'], rec['reason']) for rec in found] == [
        ('gpu-01', 'fail', 'munge on gpu-01 has not applied y'), ('gpu-01', 'fail', 'slurmd on gpu-01 has not applied x')]
    assert slurm_conf_restarts({'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True, 'reasons': ['MaxJobCount changed']},
                               True, False) == [{'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': 'MaxJobCount changed'}]


@pytest.mark.parametrize('value, shown', [
    ('pending', "'pending'"),
    ('/var/lib/x\x00', "'/var/lib/x\\x00'"),
    ('/var/lib/../etc', "'/var/lib/../etc'"),
    (7, '7'),
])
def test_a_bad_pending_dir_is_one_sentence_naming_it_and_a_valid_one(value, shown):
    with pytest.raises(pending.InputError) as err:
        pending.check_dir(value)
    assert str(err.value) == ('pending_dir is %s, expected an absolute path without control characters or ".." such as '
                              '"/var/lib/gpucluster/pending"' % shown)
    assert pending.check_dir('/var/lib/gpucluster/pending') == '/var/lib/gpucluster/pending'
