# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm client's results and messages compared whole (issue 43): every error as the user reads it, the
``err or out`` fallbacks, the defaults of ``run_process`` and ``SlurmCli``, the time-out's limit on both sides.

``run`` is a recorder; ``subprocess.run`` is replaced where ``run_process``'s arguments are checked."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import SLURM_NAME_TEXT
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_cli as cli


class Recorder(object):
    """Records every call ``(argv, env, data)``; answers ``answer`` (one for all, or a list used in turn)."""

    def __init__(self, *answers):
        self.answers = list(answers) or [(0, '', '')]
        self.calls = []

    def __call__(self, argv, env=None, data=None):
        self.calls.append((list(argv), env, data))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Clock(object):
    def __init__(self, step):
        self.now, self.step = 100.0, step

    def __call__(self):
        self.now += self.step
        return self.now


class Proc(object):
    returncode, stdout, stderr = 5, 'o', 'e'


def test_the_conventions_numbers():
    assert (cli.KILL_AFTER, cli.QUERY_TIMEOUT, cli.TIMED_OUT, cli.JOB_FORMAT) == (10, 60, (124, 137), '%i|%T|%u|%j')
    assert cli.SLURM_COMMANDS == ('scontrol', 'sinfo', 'squeue', 'sacct', 'srun', 'salloc', 'sbatch', 'scancel')
    assert cli.timeout_argv(('srun', 'x'), 7) == ['timeout', '--kill-after=10', '7', 'srun', 'x']


def test_run_process_passes_its_defaults_to_subprocess(monkeypatch):
    seen = []

    def fake(argv, **kwargs):
        seen.append((argv, kwargs))
        return Proc()
    monkeypatch.setattr(subprocess, 'run', fake)
    assert cli.run_process(('scontrol', 'ping')) == (5, 'o', 'e')
    assert seen == [(['scontrol', 'ping'], {'input': None, 'stdout': subprocess.PIPE, 'stderr': subprocess.PIPE,
                                            'universal_newlines': True, 'timeout': 60, 'check': False, 'env': None})]
    cli.run_process(['cat'], env={'A': '1'}, data='in', timeout=3)
    assert seen[1][1]['input'] == 'in' and seen[1][1]['env'] == {'A': '1'} and seen[1][1]['timeout'] == 3


@pytest.mark.parametrize('exc, message', [
    (OSError(2, 'No such file or directory'), 'scontrol: No such file or directory'),
    (OSError('no strerror here'), 'scontrol: no strerror here'),
])
def test_run_process_that_cannot_start(monkeypatch, exc, message):
    def fake(argv, **kwargs):
        raise exc
    monkeypatch.setattr(subprocess, 'run', fake)
    assert cli.run_process(['scontrol', 'show']) == (127, '', message)


def test_run_process_past_its_time(monkeypatch):
    def fake(argv, **kwargs):
        raise subprocess.TimeoutExpired(argv, kwargs['timeout'])
    monkeypatch.setattr(subprocess, 'run', fake)
    assert cli.run_process(['scontrol', 'show', 'node']) == (124, '', 'scontrol show node timed out after 60s')


@pytest.mark.parametrize('names, what, message', [
    ([], 'node name', 'node name is [], expected a Slurm node name (%s); nothing was run' % SLURM_NAME_TEXT),
    (['gpu-01', 'a b', 'c,d'], 'node name', "node name is 'a b', expected a Slurm node name (%s); nothing was run" % SLURM_NAME_TEXT),
    ('x=y', 'reservation', "reservation is 'x=y', expected a Slurm reservation (%s); nothing was run" % SLURM_NAME_TEXT),
])
def test_checked_names_refuses_whole(names, what, message):
    with pytest.raises(cli.SlurmError) as err:
        cli.checked_names(names, what)
    assert str(err.value) == message


def test_checked_names_default_and_results():
    with pytest.raises(cli.SlurmError) as err:
        cli.checked_names('')
    assert str(err.value) == "node name is '', expected a Slurm node name (%s); nothing was run" % SLURM_NAME_TEXT
    assert cli.checked_names('gpu-01') == ['gpu-01']
    assert cli.checked_names(('a', 'b')) == ['a', 'b']


def test_the_client_defaults():
    slurm = cli.SlurmCli()
    assert slurm._run is cli.run_process and slurm.clock is time.monotonic
    assert slurm.path('scontrol') == 'scontrol'
    slurm.warn('nobody listens')   # no warn: nothing happens, nothing raised


def test_path_asks_which_once_and_falls_back_to_the_name():
    asked = []

    def which(name):
        asked.append(name)
        return {'scontrol': '/opt/slurm/bin/scontrol'}.get(name)
    slurm = cli.SlurmCli(run=Recorder(), which=which)
    assert [slurm.path('scontrol'), slurm.path('scontrol'), slurm.path('sinfo'), slurm.path('sinfo')] == [
        '/opt/slurm/bin/scontrol', '/opt/slurm/bin/scontrol', 'sinfo', 'sinfo']
    assert asked == ['scontrol', 'sinfo']


def test_for_module_uses_run_command_get_bin_path_and_warn():
    class Module(object):
        def __init__(self):
            self.calls, self.warnings = [], []

        def run_command(self, argv, environ_update=None, data=None):
            self.calls.append(('run', argv, environ_update, data))
            return 0, 'out', ''

        def get_bin_path(self, name, required=False):
            self.calls.append(('which', name, required))
            return '/usr/bin/' + name

        def warn(self, text):
            self.warnings.append(text)
    module = Module()
    slurm = cli.SlurmCli.for_module(module)
    assert slurm.run(('x', 'y'), env={'E': '1'}, data='d') == (0, 'out', '')
    assert slurm.scontrol('ping') == (0, 'out', '')
    slurm.warn('careful')
    assert module.calls == [('run', ['x', 'y'], {'E': '1'}, 'd'), ('which', 'scontrol', True),
                            ('run', ['/usr/bin/scontrol', 'ping'], None, None)]
    assert module.warnings == ['careful']


@pytest.mark.parametrize('answer, message', [
    ((2, 'out text\n', '  err text \n'), 'squeue --noheader --nodelist gpu-01 --format %i|%T|%u|%j failed (rc 2): err text'),
    ((3, ' only out \n', ''), 'squeue --noheader --nodelist gpu-01 --format %i|%T|%u|%j failed (rc 3): only out'),
])
def test_checked_failure_message_whole(answer, message):
    with pytest.raises(cli.SlurmError) as err:
        cli.SlurmCli(run=Recorder(answer)).jobs_on('gpu-01')
    assert str(err.value) == message


def test_checked_returns_what_was_printed():
    assert cli.SlurmCli(run=Recorder((0, 'text\n', 'noise'))).checked('sinfo', '-h') == 'text\n'


@pytest.mark.parametrize('answer, message', [
    ((1, 'out\n', ' err \n'), 'scontrol -o show node failed (rc 1): err'),
    ((4, ' out only\n', ''), 'scontrol -o show node failed (rc 4): out only'),
    ((0, 'NodeName=gpu-01 State=IDLE\nNodeName=gpu-02 Arch=x\n', ''),
     "scontrol line for gpu-02 has no State=: 'NodeName=gpu-02 Arch=x' (line 2)"),
])
def test_show_nodes_errors_whole(answer, message):
    recorder = Recorder(answer)
    with pytest.raises(cli.SlurmError) as err:
        cli.SlurmCli(run=recorder).show_nodes()
    assert str(err.value) == message
    assert recorder.calls == [(['scontrol', '-o', 'show', 'node'], None, None)]


def test_show_node_reads_its_node_and_names_a_failure():
    recorder = Recorder((0, 'NodeName=gpu-01 State=IDLE\n', ''), (1, '', 'Node gpu-02 not found\n'))
    slurm = cli.SlurmCli(run=recorder)
    assert slurm.show_node('gpu-01')['state'] == 'IDLE'
    with pytest.raises(cli.SlurmError) as err:
        slurm.show_node('gpu-02')
    assert str(err.value) == 'scontrol -o show node gpu-02 failed (rc 1): Node gpu-02 not found'
    assert [argv for argv, _e, _d in recorder.calls] == [['scontrol', '-o', 'show', 'node', 'gpu-01'],
                                                         ['scontrol', '-o', 'show', 'node', 'gpu-02']]


def test_show_node_unreadable_message_whole():
    with pytest.raises(cli.SlurmError) as err:
        cli.SlurmCli(run=Recorder((0, 'Node gpu-09 not found\n', ''))).show_node('gpu-09')
    assert str(err.value) == 'cannot read Slurm node gpu-09: scontrol printed no "NodeName=" line: \'Node gpu-09 not found\''


def test_jobs_on_unreadable_message_whole():
    with pytest.raises(cli.SlurmError) as err:
        cli.SlurmCli(run=Recorder((0, 'garbage\n', ''))).jobs_on('gpu-01')
    assert str(err.value).startswith('cannot read the jobs of Slurm node gpu-01: unexpected squeue line')


@pytest.mark.parametrize('answer, result', [
    ((0, 'ignored', 'ignored'), None),
    ((1, 'out\n', ' err \n'), 'err'),
    ((1, ' out \n', ''), 'out'),
    ((7, '', ''), 'rc 7'),
    ((7, ' \n', '\n'), 'rc 7'),
])
def test_update_and_delete_errors(answer, result):
    recorder = Recorder(answer)
    slurm = cli.SlurmCli(run=recorder)
    assert slurm.resume('gpu-01') == result
    assert slurm.delete_reservation('maint') == result
    assert slurm.drain('gpu-01', 'why') == result
    assert [argv for argv, _e, _d in recorder.calls] == [
        ['scontrol', 'update', 'NodeName=gpu-01', 'State=RESUME'], ['scontrol', 'delete', 'ReservationName=maint'],
        ['scontrol', 'update', 'NodeName=gpu-01', 'State=DRAIN', 'Reason=why']]


@pytest.mark.parametrize('answer, exists', [
    ((0, 'ReservationName=maint', ''), True),                 # the last word, no space after it
    ((0, 'ReservationName=maint StartTime=now\n', ''), True),
    ((0, 'ReservationName=maint2 StartTime=now\n', ''), False),
    ((1, 'ReservationName=maint StartTime=now\n', ''), False),
])
def test_reservation_exists_both_sides(answer, exists):
    recorder = Recorder(answer)
    assert cli.SlurmCli(run=recorder).reservation_exists('maint') is exists
    assert recorder.calls == [(['scontrol', '-o', 'show', 'reservation', 'maint'], None, None)]


def test_reservation_names_are_checked_as_reservations():
    recorder = Recorder()
    for call in (lambda s: s.reservation_exists('a b'), lambda s: s.delete_reservation('a b')):
        with pytest.raises(cli.SlurmError) as err:
            call(cli.SlurmCli(run=recorder))
        assert str(err.value) == "reservation is 'a b', expected a Slurm reservation (%s); nothing was run" % SLURM_NAME_TEXT
    assert recorder.calls == []


@pytest.mark.parametrize('rc, step, result', [
    # seconds exactly at the limit: a time-out; just under it: the job's own rc
    (124, 10.0, {'rc': None, 'stdout': 'o', 'stderr': 'e', 'timed_out': True, 'timeout': 10, 'seconds': 10.0}),
    (137, 9.99, {'rc': 137, 'stdout': 'o', 'stderr': 'e', 'timed_out': False, 'timeout': 10, 'seconds': 9.99}),
    (0, 0.123456, {'rc': 0, 'stdout': 'o', 'stderr': 'e', 'timed_out': False, 'timeout': 10, 'seconds': 0.12}),
    (123, 30.0, {'rc': 123, 'stdout': 'o', 'stderr': 'e', 'timed_out': False, 'timeout': 10, 'seconds': 30.0}),
    (125, 30.0, {'rc': 125, 'stdout': 'o', 'stderr': 'e', 'timed_out': False, 'timeout': 10, 'seconds': 30.0}),
])
def test_job_result_whole(rc, step, result):
    recorder = Recorder((rc, 'o', 'e'))
    assert cli.SlurmCli(run=recorder, clock=Clock(step)).job(['srun', 'x'], 10) == result
    assert recorder.calls == [(['timeout', '--kill-after=10', '10', 'srun', 'x'], None, None)]


def test_job_that_cannot_start_whole():
    def broken(argv, env=None, data=None):
        raise OSError('no such file')
    assert cli.SlurmCli(run=broken, clock=Clock(1.0)).job(['srun', 'x'], 5, env={}) == {
        'rc': 127, 'stdout': '', 'stderr': 'cannot run srun: no such file', 'timed_out': False, 'timeout': 5, 'seconds': 1.0}


def test_job_passes_no_data_to_a_run_that_takes_it_by_name():
    seen = []

    def run(argv, env, data):        # no defaults: every argument must be given
        seen.append((argv, env, data))
        return 0, 'o', ''
    assert cli.SlurmCli(run=run, clock=Clock(1.0)).job(['srun', 'x'], 5)['rc'] == 0
    assert seen == [(['timeout', '--kill-after=10', '5', 'srun', 'x'], None, None)]
