# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller program gpucluster-node-loop, one pass at a time, against a STAND-IN Slurm.

The stand-in (``StandInSlurm``, not Slurm) keeps each node's State, Reason, Comment and BootTime, prints
``scontrol -o show node`` in Slurm 26.05's order (Reason, then Comment: src/api/node_info.c), answers squeue,
carries out ``update``/``reboot``/``requeue``/reservations the way slurmctld does for what the program asks, and
answers srun with the deep tier's report line.  The real Slurm runs in the cluster test
molecule/default/tests/test_closed_loop.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
PROGRAM = os.path.join(ROOT, 'roles', 'slurm_healthcheck', 'files', 'gpucluster_node_loop.py')
_loader = importlib.machinery.SourceFileLoader('gpucluster_node_loop', PROGRAM)
_spec = importlib.util.spec_from_loader('gpucluster_node_loop', _loader)
program = importlib.util.module_from_spec(_spec)
_loader.exec_module(program)

XID79 = 'gpuhc:periodic:xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node'


def stamp(epoch):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(epoch))


class StandInSlurm(object):
    """A stand-in for scontrol, squeue and srun (not Slurm)."""

    def __init__(self, deep_status=0):
        boot = int(time.time()) - 86400
        self.nodes = dict((n, {'state': 'IDLE', 'flags': [], 'reason': '', 'reason_time': None, 'comment': '', 'boot': boot})
                          for n in ('gpu-01', 'gpu-02'))
        self.jobs = {}
        self.calls = []
        self.fail = ()
        self.deep_status = deep_status
        self.reservation = None
        self.prolog_drain = None

    def show(self):
        lines = []
        for name, n in sorted(self.nodes.items()):
            line = 'NodeName=%s Arch=x86_64 State=%s ThreadsPerCore=1 Gres=gpu:h100:8 BootTime=%s Partitions=gpu' % (
                name, '+'.join([n['state']] + n['flags']), stamp(n['boot']))
            if n['reason']:
                line += ' Reason=%s [root@%s]' % (n['reason'], stamp(n['reason_time']))
            if n['comment']:
                line += ' Comment=%s' % n['comment']
            lines.append(line)
        return '\n'.join(lines) + '\n'

    def __call__(self, argv, timeout=60):
        self.calls.append(list(argv))
        if any(word in ' '.join(argv) for word in self.fail):
            return 1, '', 'stand-in: refused'
        tool = argv[0]
        if tool == 'squeue':
            return 0, ''.join('%s %s\n' % (job, node) for node, jobs in self.jobs.items() for job in jobs), ''
        if tool == 'srun' and '/bin/sh' in argv and self.prolog_drain:
            # the health check's prolog tier fails at the job's start: it drains the node, the job never runs
            node = self.nodes[argv[2].split('=')[1]]
            node['flags'] = sorted(set(node['flags']) | set(['DRAIN']))
            node['reason'], node['reason_time'] = self.prolog_drain, int(time.time())
            return 1, '', 'srun: error: Unable to create step for job 9: Job/step already completing or completed'
        if tool == 'srun' and '/bin/sh' in argv:
            # the GPU reset before the deep tier (reset-gpu): its shell part runs for real, against the stand-in
            # nvidia-smi and systemctl on PATH (test_loop_deep.py); the deep tier's argv is replaced by its report
            at = argv.index('/bin/sh')
            report = deep.outcome(argv[2].split('=')[1], [deep.result('dcgm', 'fail' if self.deep_status else 'pass', 'x')],
                                  'gpuhc', 1.0, 0)[0]
            done = subprocess.run(argv[at:at + 7] + ['printf', '%s\\n', deep.report_line(report)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True, check=False)
            return done.returncode, done.stdout, done.stderr
        if tool == 'srun':
            report = deep.outcome(argv[2].split('=')[1], [deep.result('dcgm', 'fail' if self.deep_status else 'pass', 'x')],
                                  'gpuhc', 1.0, 0)[0]
            return self.deep_status, 'dcgm ...\n' + deep.report_line(report) + '\n', ''
        assert tool == 'scontrol', argv
        if argv[1:3] == ['-o', 'show']:
            return 0, self.show() if len(argv) == 4 else ''.join(
                line + '\n' for line in self.show().splitlines() if line.startswith('NodeName=%s ' % argv[4])), ''
        if argv[1] == 'requeue':
            for node in self.jobs:
                self.jobs[node] = [j for j in self.jobs[node] if j not in argv[2].split(',')]
            return 0, '', ''
        if argv[1] == 'reboot':
            node = self.nodes[argv[-1]]
            node['flags'] = sorted(set(node['flags']) | set(['DRAIN', 'REBOOT_REQUESTED']))
            if 'DRAIN' not in node['flags'] or any(a.startswith('nextstate=') and a.upper() not in ('NEXTSTATE=DOWN', 'NEXTSTATE=RESUME')
                                                   for a in argv):
                # scontrol: "Invalid state: DRAIN / Valid states: DOWN, RESUME"; ASAP on an undrained node lifts the drain after the reboot
                return 1, '', 'stand-in: the loop asks a reboot only of a drained node, without nextstate'
            node['reason'], node['reason_time'] = [a for a in argv if a.startswith('reason=')][0][len('reason='):], int(time.time())
            return 0, '', ''
        if argv[1] == 'create':
            if self.reservation:
                return 1, '', 'Error creating the reservation: Duplicate reservation name'
            self.reservation = argv[3]
            return 0, '', ''
        if argv[1] == 'delete':
            self.reservation = None
            return 0, '', ''
        if argv[1] == 'update':
            node = self.nodes[argv[2][len('nodename='):]]
            for setting in argv[3:]:
                key, _sep, value = setting.partition('=')
                if key == 'state' and value == 'drain':
                    node['flags'] = sorted(set(node['flags']) | set(['DRAIN']))
                elif key == 'state' and value == 'resume':
                    if 'DRAIN' not in node['flags']:
                        return 1, '', 'Invalid node state specified'
                    node['flags'] = [f for f in node['flags'] if f != 'DRAIN']
                    # the reason stays: slurmctld's update_node replaces a reason, it never clears one (sinfo -R hides it)
                elif key == 'reason':
                    node['reason'], node['reason_time'] = value, int(time.time())
                elif key == 'comment':
                    node['comment'] = value
            return 0, '', ''
        raise AssertionError(argv)

    def reboot_done(self, name):
        """slurmd came back after RebootProgram: a new boot, the reboot flags gone, DRAIN and the reason kept (no nextstate was given)."""
        node = self.nodes[name]
        node['boot'] = int(time.time()) + 1
        node['flags'] = ['DRAIN']


@pytest.fixture
def setup(tmp_path, monkeypatch):
    slurm = StandInSlurm()
    monkeypatch.setattr(program, 'run', slurm)
    monkeypatch.setattr(program, 'log', lambda level, text: None)
    config = {'policy': {'reboot_max': 1}, 'state_file': str(tmp_path / 'state.json'), 'events_file': str(tmp_path / 'events.jsonl'),
              'metrics_file': str(tmp_path / 'loop.prom'), 'deep_settings': {'checks': ['dcgm']}}
    path = tmp_path / 'node-loop.json'
    path.write_text(json.dumps(config))
    return slurm, str(path), tmp_path


def events(tmp_path):
    with open(str(tmp_path / 'events.jsonl')) as handle:
        return [(e['node'], e['event']) for e in (json.loads(line) for line in handle)]


def test_stand_in_slurm_xid_79_on_a_busy_node_goes_round_the_loop_and_a_second_one_to_service(setup, capsys):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(state='MIXED', flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    slurm.jobs['gpu-01'] = ['41']
    assert program.main(['--config', config]) == 0
    assert ['scontrol', 'requeue', '41'] in slurm.calls
    reboot = [c for c in slurm.calls if c[1] == 'reboot'][0]
    assert reboot[:3] == ['scontrol', 'reboot', 'ASAP'] and reboot[3].startswith('reason=gpuloop:reboot:xid-79: ') and len(reboot) == 5
    assert events(tmp_path) == [('gpu-01', 'detected'), ('gpu-01', 'reboot_asked')]
    # still rebooting: nothing new
    slurm.calls[:] = []
    assert program.main(['--config', config]) == 0
    assert not [c for c in slurm.calls if c[1] in ('reboot', 'update', 'create')]
    slurm.reboot_done('gpu-01')
    slurm.nodes['gpu-01']['state'] = 'IDLE'
    assert program.main(['--config', config]) == 0
    kinds = [c[1] for c in slurm.calls if c[1] not in ('-o',) and c[0] == 'scontrol']
    assert kinds[:2] == ['create', 'update'] and kinds[-1] == 'delete', slurm.calls
    srun = [c for c in slurm.calls if c[0] == 'srun'][0]
    assert '--reservation=gpucluster-loop-deep' in srun and '--nodelist=gpu-01' in srun and '--gres=gpu:8' in srun
    assert srun[-7:-1] == ['/usr/local/sbin/gpucluster-healthcheck', '--tier', 'deep', '--node', 'gpu-01', '--deep-config']
    assert slurm.nodes['gpu-01']['flags'] == []
    # resumed, its last reason still shown (as slurmctld keeps it): history, not a drain; the next pass leaves it alone
    calls = len(slurm.calls)
    assert program.main(['--config', config]) == 0
    assert [c for c in slurm.calls[calls:] if c[0] != 'squeue' and c[1] != '-o'] == [] and len(events(tmp_path)) == 5
    assert events(tmp_path)[2:] == [('gpu-01', 'back'), ('gpu-01', 'deep_passed'), ('gpu-01', 'returned')]
    state = json.load(open(str(tmp_path / 'state.json')))
    assert state['nodes']['gpu-01']['state'] == 'ok' and state['counts']['events']['returned'] == 1
    prom = (tmp_path / 'loop.prom').read_text()
    assert 'gpucluster_loop_node_state{node="gpu-01",state="ok"} 1' in prom
    assert 'gpucluster_loop_conditions_total{condition="xid-79",action="reboot"} 1' in prom
    # a second Xid 79 within the window (reboot_max 1): service, with the record of what was seen
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    assert program.main(['--config', config]) == 0
    assert slurm.nodes['gpu-01']['reason'].startswith('gpuloop:service:xid-79: 1 reboots within 86400s')
    assert slurm.nodes['gpu-01']['comment'].startswith('gpuloop:service: periodic:xid: the GPU at PCI')
    assert events(tmp_path)[-1] == ('gpu-01', 'service')
    capsys.readouterr()
    assert program.main(['--config', config, '--history', 'gpu-01']) == 0
    shown = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in shown] == ['detected', 'reboot_asked', 'back', 'deep_passed', 'returned', 'detected', 'service']


def test_stand_in_slurm_a_failing_deep_run_sends_the_node_to_service(setup):
    slurm, config, tmp_path = setup
    slurm.deep_status = 1
    slurm.nodes['gpu-02'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    program.main(['--config', config])
    slurm.reboot_done('gpu-02')
    program.main(['--config', config])
    assert slurm.nodes['gpu-02']['reason'].startswith('gpuloop:service:xid-79: the deep tier failed after the reboot: gpuhc:deep:dcgm')
    assert 'DRAIN' in slurm.nodes['gpu-02']['flags'] and slurm.reservation is None
    assert events(tmp_path)[-2:] == [('gpu-02', 'deep_failed'), ('gpu-02', 'service')]


def test_stand_in_slurm_a_command_that_fails_leaves_the_node_to_the_next_pass(setup):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    slurm.fail = ('reboot',)
    assert program.main(['--config', config]) == 1
    assert not os.path.exists(str(tmp_path / 'events.jsonl'))
    assert 'gpu-01' not in json.load(open(str(tmp_path / 'state.json')))['nodes']
    slurm.fail = ()
    assert program.main(['--config', config]) == 0
    assert events(tmp_path) == [('gpu-01', 'detected'), ('gpu-01', 'reboot_asked')]


def test_stand_in_slurm_a_pass_killed_during_the_deep_run_runs_it_again(setup, monkeypatch):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    program.main(['--config', config])
    slurm.reboot_done('gpu-01')

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt('killed during the deep job')  # nothing after it runs, not even the finally's settle
    monkeypatch.setattr(program.threading, 'Thread', killed)
    monkeypatch.setattr(program.loop, 'settle_deep', killed)
    with pytest.raises(KeyboardInterrupt):
        program.main(['--config', config])
    assert slurm.nodes['gpu-01']['flags'] == []  # resumed into the reservation, no verdict
    monkeypatch.undo()
    monkeypatch.setattr(program, 'run', slurm)
    monkeypatch.setattr(program, 'log', lambda level, text: None)
    assert slurm.reservation == 'ReservationName=gpucluster-loop-deep'  # left behind by the killed pass
    slurm.calls[:] = []
    assert program.main(['--config', config]) == 0
    assert [c[1] for c in slurm.calls if c[1] in ('create', 'delete')] == ['create', 'delete', 'create', 'delete']
    assert [c for c in slurm.calls if c[0] == 'srun'] and slurm.reservation is None
    assert events(tmp_path)[-3:] == [('gpu-01', 'back'), ('gpu-01', 'deep_passed'), ('gpu-01', 'returned')]


def test_stand_in_slurm_a_lost_state_file_is_derived_again_from_the_tags(setup):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    program.main(['--config', config])
    os.remove(str(tmp_path / 'state.json'))  # the controller crashed and lost its disk
    slurm.reboot_done('gpu-01')
    assert program.main(['--config', config]) == 0
    assert slurm.nodes['gpu-01']['flags'] == []
    assert events(tmp_path)[-3:] == [('gpu-01', 'back'), ('gpu-01', 'deep_passed'), ('gpu-01', 'returned')]


def test_stand_in_slurm_an_admin_drain_is_never_touched_and_dry_run_changes_nothing(setup, capsys):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason='PSU swap, ticket 4711', reason_time=int(time.time()))
    slurm.nodes['gpu-02'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    assert program.main(['--config', config, '--dry-run']) == 0
    assert 'would run: scontrol reboot ASAP reason=gpuloop:reboot:xid-79' in capsys.readouterr().out
    assert [c[1] for c in slurm.calls if c[0] == 'scontrol'] == ['-o'] and not os.path.exists(str(tmp_path / 'state.json'))
    program.main(['--config', config])
    assert not [c for c in slurm.calls if 'gpu-01' in c and c[1] != '-o']
    assert slurm.nodes['gpu-01']['reason'] == 'PSU swap, ticket 4711'


@pytest.mark.parametrize('data, fragment', [
    ({'policy': {'reboot_max': -1}}, 'reboot_max is -1'),
    ({'webhook': 'ftp://x'}, "webhook is 'ftp://x', expected an http:// or https:// URL"),
    ({'metrics_file': '/tmp/x.txt'}, 'metrics_file is'),
    ({'nodes': 1}, 'unknown key(s) nodes'),
])
def test_a_bad_configuration_is_named_and_nothing_runs(tmp_path, monkeypatch, capsys, data, fragment):
    slurm = StandInSlurm()
    monkeypatch.setattr(program, 'run', slurm)
    path = tmp_path / 'c.json'
    path.write_text(json.dumps(data))
    assert program.main(['--config', str(path)]) == 2
    assert fragment in capsys.readouterr().err and slurm.calls == []


def test_running_jobs_expands_hostlists():
    text = '41 gpu-[01-02]\n42_3 gpu-02\n43+0 gpu-01\nbad\n'
    from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import expand
    assert loop.running_jobs(text, expand) == {'gpu-01': ['41'], 'gpu-02': ['41', '42_3']}


class StandInSlurmWithAllocations(StandInSlurm):
    """The stand-in with six nodes, salloc (granted unless a node is in ``busy``), scancel and sinfo (not Slurm)."""

    def __init__(self):
        super(StandInSlurmWithAllocations, self).__init__()
        for name in ('gpu-03', 'gpu-04', 'gpu-05', 'gpu-06'):
            self.nodes[name] = dict(self.nodes['gpu-01'])
        self.busy = set()
        self.refuse = False
        self.granted = []

    def __call__(self, argv, timeout=60):
        tool = argv[0]
        if tool == 'srun':
            self.calls.append(list(argv))
            name = [a for a in argv if a.startswith('--nodelist=')][0].split('=')[1]
            report = deep.outcome(name, [deep.result('dcgm', 'pass', 'x')], 'gpuhc', 1.0, 0)[0]
            return 0, deep.report_line(report) + '\n', ''
        if tool == 'salloc':
            self.calls.append(list(argv))
            from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import expand
            names = expand([a for a in argv if a.startswith('--nodelist=')][0].split('=')[1])
            if self.refuse or set(names) & self.busy:
                return 1, '', 'salloc: error: Unable to allocate resources: Immediate execution impossible'
            self.granted.append(str(500 + len(self.granted)))
            return 0, '', 'salloc: Granted job allocation %s\n' % self.granted[-1]
        if tool in ('scancel', 'sinfo'):
            self.calls.append(list(argv))
            if tool == 'sinfo':
                return 0, ''.join('%s\n' % n for n in sorted(self.nodes) if n not in self.busy), ''
            return 0, '', ''
        return super(StandInSlurmWithAllocations, self).__call__(argv, timeout)


@pytest.mark.parametrize('busy, refuse, steps, own', [
    ((), False, 6, 0),                      # one allocation, one step per node
    (('gpu-04',), False, 5, 1),             # asked again for the 5 idle nodes; the busy one runs its own job
    ((), True, 0, 6),                       # never granted: every node its own job
])
def test_stand_in_slurm_nodes_back_together_run_the_deep_tier_as_steps_of_one_allocation(tmp_path, monkeypatch, busy, refuse, steps, own):
    slurm = StandInSlurmWithAllocations()
    slurm.busy, slurm.refuse = set(busy), refuse
    monkeypatch.setattr(program, 'run', slurm)
    monkeypatch.setattr(program, 'log', lambda level, text: None)
    path = tmp_path / 'node-loop.json'
    path.write_text(json.dumps({'state_file': str(tmp_path / 'state.json'), 'events_file': str(tmp_path / 'events.jsonl'),
                                'metrics_file': '', 'deep_settings': {'checks': ['dcgm']}}))
    for name in slurm.nodes:
        slurm.nodes[name].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    assert program.main(['--config', str(path)]) == 0
    for name in slurm.nodes:
        slurm.reboot_done(name)
    slurm.calls[:] = []
    assert program.main(['--config', str(path)]) == 0
    sruns = [c for c in slurm.calls if c[0] == 'srun']
    assert len(sruns) == 6
    assert len([c for c in sruns if c[1].startswith('--jobid=')]) == steps
    assert len([c for c in sruns if '--exclusive' in c]) == own
    assert sorted(c[1] for c in slurm.calls if c[0] == 'scancel') == sorted(slurm.granted)
    assert len(slurm.granted) == (1 if steps else 0)
    if steps:
        assert set(c[1] for c in sruns if c[1].startswith('--jobid=')) == set(['--jobid=%s' % slurm.granted[0]])
    assert all(n['flags'] == [] and n['reason'].startswith('gpuloop:reboot:') for n in slurm.nodes.values())
    assert [e for e in events(tmp_path) if e[1] == 'returned'] == [(n, 'returned') for n in sorted(slurm.nodes)]


@pytest.mark.parametrize('reason', [XID79, 'gpuloop:reboot:xid-79: the GPU had Xid 79', 'gpuloop:service:xid-79: 2 reboots within 86400s'])
def test_stand_in_slurm_a_resumed_node_keeps_its_last_reason_and_the_loop_leaves_it_in_service(setup, reason):
    # a person resumed the node before the loop's pass (or the loop starts on a cluster with history): Slurm still
    # shows the health check's (or the loop's) last reason on the idle node; rebooting or draining it would take a
    # node in service away
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(reason=reason, reason_time=int(time.time()) - 60)
    assert program.main(['--config', config]) == 0
    assert [c for c in slurm.calls if c[0] != 'squeue' and c[1] != '-o'] == []
    assert slurm.nodes['gpu-01']['flags'] == [] and not os.path.exists(str(tmp_path / 'events.jsonl'))


def test_stand_in_slurm_the_state_file_is_written_per_change_not_per_node(setup, monkeypatch):
    slurm, config, tmp_path = setup
    for number in range(3, 41):
        slurm.nodes['gpu-%02d' % number] = dict(slurm.nodes['gpu-01'])
    writes = []
    real = program.write_atomic
    monkeypatch.setattr(program, 'write_atomic', lambda path, text: (writes.append(path), real(path, text)))
    state = str(tmp_path / 'state.json')
    assert program.main(['--config', config]) == 0
    assert writes.count(state) == 1  # 40 new nodes, nothing happening: one write at the end of the pass
    assert sorted(json.load(open(state))['nodes']) == sorted(slurm.nodes)
    writes[:] = []
    assert program.main(['--config', config]) == 0
    assert writes.count(state) == 0  # nothing changed
    slurm.nodes['gpu-07'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    slurm.nodes['gpu-33'].update(flags=['DRAIN'], reason=XID79, reason_time=int(time.time()))
    writes[:] = []
    assert program.main(['--config', config]) == 0
    assert writes.count(state) == 2  # one per node that changed, at once (a crash after it loses nothing)
    records = json.load(open(state))['nodes']
    assert records['gpu-07']['state'] == records['gpu-33']['state'] == 'reboot-asked' and records['gpu-08']['state'] == 'ok'


ECC = 'gpuhc:periodic:ecc: GPU 1 (00000000:2A:00.0) has 4 uncorrected ECC errors since the driver loaded (at most 0 allowed)'


@pytest.fixture
def stand_in_smi(tmp_path, monkeypatch):
    """STAND-IN nvidia-smi and systemctl (test_loop_deep.py's) first on PATH."""
    from tests.unit.plugins.module_utils.health import test_loop_deep as stand_ins
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name, text in (('nvidia-smi', stand_ins.STAND_IN_SMI), ('systemctl', stand_ins.STAND_IN_SYSTEMCTL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / 'smi.log'
    log.write_text('')
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    monkeypatch.setenv('LOG', str(log))
    for key in ('SMI_LOST', 'SMI_BUSY', 'MIG_ENABLED', 'MIG_FAILS'):
        monkeypatch.setenv(key, 'none')
    return log


def test_stand_in_slurm_reset_gpu_on_an_idle_node_resets_its_gpu_deep_checks_and_returns_it_not_rebooted(setup, stand_in_smi, monkeypatch):
    slurm, config, tmp_path = setup
    monkeypatch.setenv('MIG_ENABLED', '1')
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=ECC, reason_time=int(time.time()))
    assert program.main(['--config', config]) == 0
    drain = [c for c in slurm.calls if c[1] == 'update' and any(a.startswith('reason=gpuloop:reset:ecc: GPU 1 ') for a in c)]
    assert drain and drain[0][3] == 'state=drain', slurm.calls
    assert not [c for c in slurm.calls if c[1] == 'reboot']
    srun = [c for c in slurm.calls if c[0] == 'srun'][0]
    assert '--reservation=gpucluster-loop-deep' in srun and srun[srun.index('/bin/sh') + 4:srun.index('/bin/sh') + 7] == [
        '1', 'gpucluster-mig.service', 'nvidia-smi']
    assert stand_in_smi.read_text().splitlines() == ['nvidia-smi --gpu-reset -i 1', 'systemctl is-enabled --quiet gpucluster-mig.service',
                                                     'systemctl restart gpucluster-mig.service']
    assert events(tmp_path) == [('gpu-01', 'detected'), ('gpu-01', 'reset_asked'), ('gpu-01', 'reset_done'),
                                ('gpu-01', 'deep_passed'), ('gpu-01', 'returned')]
    assert slurm.nodes['gpu-01']['flags'] == [] and slurm.reservation is None
    prom = (tmp_path / 'loop.prom').read_text()
    assert 'gpucluster_loop_events_total{event="reset_done"} 1' in prom and 'gpucluster_loop_reboots_in_window{node="gpu-01"} 0' in prom
    assert 'gpucluster_loop_conditions_total{condition="ecc",action="reset-gpu"} 1' in prom
    assert 'gpucluster_loop_node_state{node="gpu-01",state="reset-asked"} 0' in prom


def test_stand_in_slurm_a_lost_gpu_fails_its_reset_and_the_node_goes_to_a_reboot(setup, stand_in_smi, monkeypatch):
    slurm, config, tmp_path = setup
    monkeypatch.setenv('SMI_LOST', '1')
    slurm.nodes['gpu-02'].update(flags=['DRAIN'], reason=ECC, reason_time=int(time.time()))
    assert program.main(['--config', config]) == 0
    assert events(tmp_path) == [('gpu-02', 'detected'), ('gpu-02', 'reset_asked'), ('gpu-02', 'reset_failed'), ('gpu-02', 'reboot_asked')]
    reboot = [c for c in slurm.calls if c[1] == 'reboot'][0]
    assert reboot[3].startswith('reason=gpuloop:reboot:ecc: the GPU reset failed (rc=15): Unable to determine the device handle')
    assert 'DRAIN' in slurm.nodes['gpu-02']['flags'] and 'deep tier' not in stand_in_smi.read_text()
    state = json.load(open(str(tmp_path / 'state.json')))
    assert state['nodes']['gpu-02']['state'] == 'reboot-asked' and len(state['nodes']['gpu-02']['reboots']) == 1


def test_stand_in_slurm_a_busy_node_waits_for_its_reset_and_a_lost_state_file_is_derived_from_the_reset_tag(setup, stand_in_smi):
    slurm, config, tmp_path = setup
    slurm.nodes['gpu-01'].update(state='MIXED', flags=['DRAIN'], reason=ECC, reason_time=int(time.time()))
    slurm.jobs['gpu-01'] = ['41']
    assert program.main(['--config', config]) == 0
    assert ['scontrol', 'requeue', '41'] in slurm.calls and not [c for c in slurm.calls if c[0] == 'srun']
    assert slurm.nodes['gpu-01']['reason'].startswith('gpuloop:reset:ecc: GPU 1 ')
    os.remove(str(tmp_path / 'state.json'))  # the controller crashed between the drain and the reset
    slurm.nodes['gpu-01']['state'] = 'IDLE'  # the requeued job left: DRAINED
    assert program.main(['--config', config]) == 0
    assert stand_in_smi.read_text().splitlines()[0] == 'nvidia-smi --gpu-reset -i 1'
    assert events(tmp_path)[-3:] == [('gpu-01', 'reset_done'), ('gpu-01', 'deep_passed'), ('gpu-01', 'returned')]
    assert slurm.nodes['gpu-01']['flags'] == [] and not [c for c in slurm.calls if c[1] == 'reboot']


def test_stand_in_slurm_a_prolog_drain_at_the_reset_job_is_kept_and_the_node_goes_to_a_reboot(setup, stand_in_smi):
    slurm, config, tmp_path = setup
    remap = 'gpuhc:periodic:gpu-error: GPU 1 (00000000:2A:00.0) has memory row remapping pending a GPU reset'
    slurm.prolog_drain = remap.replace(':periodic:', ':prolog:')
    slurm.nodes['gpu-01'].update(flags=['DRAIN'], reason=remap, reason_time=int(time.time()))
    assert program.main(['--config', config]) == 0
    assert slurm.nodes['gpu-01']['reason'] == slurm.prolog_drain  # not overwritten by the reset tag
    assert stand_in_smi.read_text() == '' and events(tmp_path)[-1] == ('gpu-01', 'deep_failed')
    slurm.prolog_drain = None
    assert program.main(['--config', config]) == 0
    assert events(tmp_path)[-1] == ('gpu-01', 'reboot_asked')
    reboot = [c for c in slurm.calls if c[1] == 'reboot'][0]
    assert reboot[3].startswith('reason=gpuloop:reboot:row-remap-pending: still failing around the GPU reset: gpuhc:prolog:gpu-error')
