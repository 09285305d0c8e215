# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one Slurm client: the command lines it runs, its time-out convention, its errors.

Slurm's commands do not run here: ``run`` is a recorder (a stand-in for run_command), except in the
``run_process`` tests, which start real processes (coreutils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_cli as cli

LINE = 'NodeName=gpu-01 Arch=x86_64 Gres=gpu:h100:8 State=IDLE+DRAIN Partitions=gpu Reason=gpuhc:periodic:xid: Xid 79 [root@2026-11-21T06:12:01]'


class Recorder(object):
    """Stand-in for run_command: records every argv, answers from ``answers`` (argv[1] -> (rc, out, err))."""

    def __init__(self, answers=None, default=(0, '', '')):
        self.answers = answers or {}
        self.default = default
        self.calls = []

    def __call__(self, argv, env=None, data=None):
        self.calls.append((list(argv), env))
        return self.answers.get(argv[1] if len(argv) > 1 else argv[0], self.default)


def client(recorder, which=None):
    return cli.SlurmCli(run=recorder, which=which, clock=Clock())


class Clock(object):
    def __init__(self, step=0.5):
        self.now, self.step = 100.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_show_nodes_runs_scontrol_once_and_reads_every_node():
    recorder = Recorder({'-o': (0, LINE + '\nNodeName=gpu-02 State=MIXED\n', '')})
    nodes = client(recorder, which=lambda name: '/opt/slurm/bin/' + name).show_nodes(['gpu-01', 'gpu-02'])
    assert recorder.calls == [(['/opt/slurm/bin/scontrol', '-o', 'show', 'node', 'gpu-01,gpu-02'], None)]
    assert nodes['gpu-01']['reason'] == 'gpuhc:periodic:xid: Xid 79' and nodes['gpu-02']['state'] == 'MIXED'


@pytest.mark.parametrize('answer, message', [
    ((1, '', 'slurm_load_node error: Unable to contact slurm controller\n'),
     'scontrol -o show node failed (rc 1): slurm_load_node error: Unable to contact slurm controller'),
    ((0, 'NodeName=gpu-01 State=idle\n', ''), 'State=idle, expected Slurm state words'),
])
def test_show_nodes_errors_name_the_cause(answer, message):
    with pytest.raises(cli.SlurmError) as err:
        client(Recorder({'-o': answer})).show_nodes()
    assert message in str(err.value)


def test_show_node_without_a_node_line():
    with pytest.raises(cli.SlurmError, match=r'^cannot read Slurm node gpu-09: scontrol printed no "NodeName=" line'):
        client(Recorder({'-o': (0, 'Node gpu-09 not found\n', '')})).show_node('gpu-09')


def test_drain_resume_and_their_errors():
    recorder = Recorder({'update': (1, '', 'Invalid node state specified\n')})
    slurm = client(recorder)
    assert slurm.drain('gpu-01', 'validate: node/gres_conf: x y') == 'Invalid node state specified'
    recorder.answers = {}
    assert slurm.resume(['gpu-01', 'gpu-02']) is None
    assert [argv for argv, _env in recorder.calls] == [
        ['scontrol', 'update', 'NodeName=gpu-01', 'State=DRAIN', 'Reason=validate: node/gres_conf: x y'],
        ['scontrol', 'update', 'NodeName=gpu-01,gpu-02', 'State=RESUME']]


@pytest.mark.parametrize('name', ['-Mcluster', 'gpu 01', 'a,b', '', 'x=y'])
def test_a_name_that_is_no_slurm_name_runs_nothing(name):
    recorder = Recorder()
    for call in (lambda s: s.drain(name, 'r'), lambda s: s.show_node(name), lambda s: s.jobs_on(name), lambda s: s.show_nodes([name])):
        with pytest.raises(cli.SlurmError, match='expected a Slurm node name'):
            call(client(recorder))
    assert recorder.calls == []


def test_jobs_on_reads_squeue():
    recorder = Recorder({'--noheader': (0, '12|RUNNING|alice|train\n13|COMPLETING|bob|a|b\n', '')})
    assert client(recorder).jobs_on('gpu-01') == [
        {'id': '12', 'state': 'RUNNING', 'user': 'alice', 'name': 'train'}, {'id': '13', 'state': 'COMPLETING', 'user': 'bob', 'name': 'a|b'}]
    assert recorder.calls[0][0] == ['squeue', '--noheader', '--nodelist', 'gpu-01', '--format', '%i|%T|%u|%j']
    with pytest.raises(cli.SlurmError, match='cannot read the jobs of Slurm node gpu-01: unexpected squeue line'):
        client(Recorder({'--noheader': (0, 'garbage\n', '')})).jobs_on('gpu-01')


def test_reservations():
    recorder = Recorder({'-o': (0, 'ReservationName=maint StartTime=now Nodes=gpu-01\n', '')})
    slurm = client(recorder)
    assert slurm.reservation_exists('maint') and not slurm.reservation_exists('main')
    assert slurm.delete_reservation('maint') is None
    assert recorder.calls[-1][0] == ['scontrol', 'delete', 'ReservationName=maint']


@pytest.mark.parametrize('rc, step, timed_out, result_rc', [
    (0, 0.5, False, 0),
    (1, 0.5, False, 1),
    # coreutils timeout: 124 after SIGTERM, 137 after SIGKILL; only past the limit is it a time-out
    (124, 30.0, True, None),
    (137, 30.0, True, None),
    (124, 0.5, False, 124),     # the job itself exited 124, well before the limit
])
def test_job_runs_under_coreutils_timeout(rc, step, timed_out, result_rc):
    recorder = Recorder(default=(rc, 'out', 'err'))
    slurm = cli.SlurmCli(run=recorder, clock=Clock(step))
    result = slurm.job(['srun', '-N1', 'hostname'], 20, env={'NCCL_DEBUG': 'WARN', 'N': 1})
    assert recorder.calls == [(['timeout', '--kill-after=10', '20', 'srun', '-N1', 'hostname'], {'NCCL_DEBUG': 'WARN', 'N': '1'})]
    assert (result['rc'], result['timed_out'], result['timeout'], result['stdout']) == (result_rc, timed_out, 20, 'out')


def test_a_job_that_cannot_start_is_rc_127():
    def broken(argv, env=None, data=None):
        raise OSError('no such file')
    result = cli.SlurmCli(run=broken).job(['srun', 'x'], 5)
    assert result['rc'] == 127 and 'cannot run srun: no such file' in result['stderr']


def test_run_process_without_ansible():
    assert cli.run_process(['sh', '-c', 'echo out; echo err >&2; exit 3']) == (3, 'out\n', 'err\n')
    rc, out, err = cli.run_process(['/nonexistent/scontrol', 'show'])
    assert rc == 127 and out == '' and err.startswith('/nonexistent/scontrol: ')
    rc, _out, err = cli.run_process(['sleep', '5'], timeout=0.2)
    assert rc == 124 and 'timed out after 0.2s' in err
