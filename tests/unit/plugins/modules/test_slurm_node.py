# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm_node module (the mig role's drain / wait / registered / resume around a MIG change), over the one
Slurm client (slurm/_slurm_cli.py), node parser (slurm/_nodes.py) and drain tag.

The client calls Slurm through one function ``run(argv)``; here it is a STAND-IN (not Slurm) that keeps one
node's State, Reason, Gres and jobs in a dict, prints the Slurm 22.05.8 formats and logs each call.  The real
commands are exercised in molecule/default (tests/test_mig_changes.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.modules import slurm_node
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands

OS = 'OS=Linux 6.1.0-26-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-09-30) '
LINE = ('NodeName=gpu-01 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.11 AvailableFeatures=(null) '
        'ActiveFeatures=(null) Gres=%(gres)s NodeAddr=gpu-01 NodeHostName=gpu-01 Version=22.05.8 ' + OS +
        'RealMemory=7000 AllocMem=0 FreeMem=5000 Sockets=2 Boards=1 State=%(state)s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A '
        'MCS_label=N/A Partitions=batch BootTime=2026-11-21T06:00:00 SlurmdStartTime=%(started)s '
        'CfgTRES=cpu=2,mem=7000M,billing=2,gres/gpu=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s '
        'ExtSensorsWatts=0 ExtSensorsTemp=n/s%(reason)s')


def line(state='IDLE', gres='gpu:h100:8', reason=None, started='2026-11-21T06:10:00'):
    return LINE % {'state': state, 'gres': gres, 'reason': '' if reason is None else ' Reason=%s' % reason, 'started': started}


@pytest.mark.parametrize('text, view', [
    (line(), {'name': 'gpu-01', 'state': ['IDLE'], 'reason': None, 'gres': 'gpu:h100:8', 'slurmd_start': '2026-11-21T06:10:00'}),
    (line('IDLE+DRAIN', reason='gpucluster.bringup.mig: applying layout all-balanced [root@2026-11-21T07:00:01]'),
     {'name': 'gpu-01', 'state': ['IDLE', 'DRAIN'], 'reason': 'gpucluster.bringup.mig: applying layout all-balanced',
      'gres': 'gpu:h100:8', 'slurmd_start': '2026-11-21T06:10:00'}),
    (line('MIXED+DRAIN', reason='disk a=b broken [alice@2026-11-21T07:00:01]'),
     {'name': 'gpu-01', 'state': ['MIXED', 'DRAIN'], 'reason': 'disk a=b broken', 'gres': 'gpu:h100:8', 'slurmd_start': '2026-11-21T06:10:00'}),
    (line('IDLE+DRAIN+INVALID_REG', gres='gpu:h100:6,gpu:1g.10gb:14(S:0-1)', reason='gres/gpu count reported lower than configured (6 < 8)'),
     {'name': 'gpu-01', 'state': ['IDLE', 'DRAIN', 'INVALID_REG'], 'reason': 'gres/gpu count reported lower than configured (6 < 8)',
      'gres': 'gpu:h100:6,gpu:1g.10gb:14(S:0-1)', 'slurmd_start': '2026-11-21T06:10:00'}),
    (line('DOWN*+NOT_RESPONDING', gres='(null)'),
     {'name': 'gpu-01', 'state': ['DOWN', 'NOT_RESPONDING'], 'reason': None, 'gres': None, 'slurmd_start': '2026-11-21T06:10:00'}),
    ('\n' + line('UNKNOWN') + '\n\n',
     {'name': 'gpu-01', 'state': ['UNKNOWN'], 'reason': None, 'gres': 'gpu:h100:8', 'slurmd_start': '2026-11-21T06:10:00'}),
])
def test_show_node_parsing(text, view):
    node = _nodes.parse_node(text)
    assert node['fields']['OS'] == OS[3:].strip()
    assert node['fields']['CfgTRES'] == 'cpu=2,mem=7000M,billing=2,gres/gpu=8' and node['fields']['AllocTRES'] == ''
    assert slurm_node.view(node) == view


@pytest.mark.parametrize('text, jobs', [
    ('', []),
    ('12|RUNNING|alice|train|eval\n13|SUSPENDED|bob|x\n\n', [
        {'id': '12', 'state': 'RUNNING', 'user': 'alice', 'name': 'train|eval'},
        {'id': '13', 'state': 'SUSPENDED', 'user': 'bob', 'name': 'x'}]),
])
def test_squeue_parsing(text, jobs):
    assert _nodes.parse_squeue(text) == jobs


def test_squeue_bad_line():
    with pytest.raises(ValueError, match=r"^unexpected squeue line '12 RUNNING' \(expected id\|state\|user\|name\)$"):
        _nodes.parse_squeue('12 RUNNING\n')


@pytest.mark.parametrize('left, right, same', [
    ('gpu:h100:8', 'gpu:h100:8(S:0-1)', True),
    ('gpu:h100:6,gpu:1g.10gb:7', 'gpu:1g.10gb:7,gpu:h100:6', True),
    ('gpu:h100:8', 'gpu:h100:6,gpu:1g.10gb:7', False),
    ('', '(null)', True),
])
def test_gres_comparison(left, right, same):
    assert (_nodes.gres_set(left) == _nodes.gres_set(right)) is same


# ----------------------------------------------------------------- the helper, with a stand-in Slurm


class StandIn(object):
    """STAND-IN for scontrol and squeue (not Slurm): one node; ``log`` holds every call."""

    def __init__(self, **node):
        self.node = {'name': 'gpu-01', 'state': 'IDLE', 'gres': 'gpu:h100:8', 'reason': None, 'jobs': [],
                     'jobs_left_polls': 0, 'register_after_polls': 0, 'new_gres': None, 'started': '2026-11-21T06:10:00'}
        self.node.update(node)
        self.log = []

    def __call__(self, argv, env=None, data=None):
        self.log.append(list(argv))
        node = self.node
        if argv[0] == 'squeue':
            if node['jobs_left_polls']:
                node['jobs_left_polls'] -= 1
                if not node['jobs_left_polls']:
                    node['jobs'] = []
            return 0, ''.join('|'.join(job) + '\n' for job in node['jobs']), ''
        if argv[1:4] == ['-o', 'show', 'node']:
            if argv[4] != node['name']:
                return 1, '', 'Node %s not found\n' % argv[4]
            text = line(node['state'], node['gres'], node['reason'] and node['reason'] + ' [root@2026-11-21T07:00:01]', node['started'])
            if node['register_after_polls']:
                node['register_after_polls'] -= 1
                if not node['register_after_polls']:
                    node['state'] = node['state'].replace('+INVALID_REG', '')
                    node['gres'] = node['new_gres']
                    node['started'] = '2026-11-21T07:02:13'
            return 0, text + '\n', ''
        settings = dict(item.split('=', 1) for item in argv[2:])
        if settings['State'] == 'DRAIN':
            node['state'] += '+DRAIN' if '+DRAIN' not in node['state'] else ''
            node['reason'] = settings['Reason']
        else:
            node['state'] = node['state'].split('+', maxsplit=1)[0]
            node['reason'] = None
        return 0, '', ''

    def updates(self):
        return [argv for argv in self.log if argv[:2] == ['scontrol', 'update']]


def run(standin, action, *options, **kwargs):
    """The module's manager with the stand-in, options as the role's old helper took them (``--node N --timeout S``):
    (0, result), or (1, result with msg) when it failed."""
    args = {'action': action, 'node': None, 'reason': None, 'owner': 'gpucluster.bringup.mig:', 'gres': None,
            'restarted_since': None, 'timeout': 600, 'poll': 5}
    for key, value in zip(options[::2], options[1::2]):
        key = key.lstrip('-').replace('-', '_')
        args[key] = int(value) if key in ('timeout', 'poll') else value
    try:
        return 0, slurm_node.NodeManager(SlurmCli(run=standin), args, sleep=lambda seconds: None).run()
    except slurm_node.NodeFailure as exc:
        return 1, dict(exc.result, failed=True, msg=str(exc), changed=False)


REASON = 'gpucluster.bringup.mig: applying layout all-balanced'


def test_drain_then_resume_own_drain(capsys):
    slurm = StandIn()
    status, out = run(slurm, 'drained', '--node', 'gpu-01', '--reason', REASON, capsys=capsys)
    assert status == 0 and out['changed'] and out['owned']
    assert out['node']['state'] == ['IDLE', 'DRAIN'] and out['node']['reason'] == REASON
    assert slurm.updates() == [['scontrol', 'update', 'NodeName=gpu-01', 'State=DRAIN', 'Reason=' + REASON]]
    status, again = run(slurm, 'drained', '--node', 'gpu-01', '--reason', REASON, capsys=capsys)
    assert status == 0 and not again['changed'] and again['owned'] and len(slurm.updates()) == 1
    status, resumed = run(slurm, 'resumed', '--node', 'gpu-01', capsys=capsys)
    assert status == 0 and resumed['changed'] and resumed['node']['state'] == ['IDLE'] and slurm.node['reason'] is None
    assert not run(slurm, 'resumed', '--node', 'gpu-01', capsys=capsys)[1]['changed']


def test_somebody_elses_drain_is_never_touched(capsys):
    slurm = StandIn(state='IDLE+DRAIN', reason='bad DIMM (ticket 42)')
    status, out = run(slurm, 'drained', '--node', 'gpu-01', '--reason', REASON, capsys=capsys)
    assert status == 0 and not out['changed'] and not out['owned']
    assert not run(slurm, 'resumed', '--node', 'gpu-01', capsys=capsys)[1]['changed']
    assert slurm.updates() == [] and slurm.node['reason'] == 'bad DIMM (ticket 42)'


def test_jobs_done_waits_then_times_out_naming_the_jobs(capsys):
    slurm = StandIn(state='MIXED+DRAIN', reason=REASON, jobs=[['12', 'RUNNING', 'alice', 'train'], ['13', 'COMPLETING', 'bob', 'eval']],
                    jobs_left_polls=3)
    status, out = run(slurm, 'jobs_done', '--node', 'gpu-01', '--timeout', '60', '--poll', '1', capsys=capsys)
    assert status == 0 and out['jobs'] == [] and not out['changed']
    squeues = [argv for argv in slurm.log if argv[0] == 'squeue']
    assert len(squeues) == 3 and squeues[0] == ['squeue', '--noheader', '--nodelist', 'gpu-01', '--format', '%i|%T|%u|%j']
    slurm = StandIn(state='MIXED+DRAIN', reason=REASON, jobs=[['12', 'RUNNING', 'alice', 'train']])
    status, out = run(slurm, 'jobs_done', '--node', 'gpu-01', '--timeout', '0', capsys=capsys)
    assert status == 1 and out['failed'] and out['jobs'] == [{'id': '12', 'state': 'RUNNING', 'user': 'alice', 'name': 'train'}]
    assert out['msg'] == ('Slurm node gpu-01 still runs 1 job(s) after 0 s (mig_slurm_wait.drain_timeout): 12 (alice, train, RUNNING); '
                          'the MIG layout was not changed')


def test_registered_waits_for_the_new_gres(capsys):
    slurm = StandIn(state='IDLE+DRAIN+INVALID_REG', reason=REASON, register_after_polls=2, new_gres='gpu:h100:7,gpu:1g.10gb:7')
    status, out = run(slurm, 'registered', '--node', 'gpu-01', '--gres', 'gpu:1g.10gb:7,gpu:h100:7', '--timeout', '60', capsys=capsys)
    assert status == 0 and out['node']['gres'] == 'gpu:h100:7,gpu:1g.10gb:7'


def test_registered_waits_for_the_restarted_slurmd(capsys):
    """slurmctld shows the old state and Gres= until the restarted slurmd registers: wait for a new SlurmdStartTime."""
    slurm = StandIn(state='IDLE+DRAIN', reason=REASON, register_after_polls=3, new_gres='gpu:h100:8')
    status, out = run(slurm, 'registered', '--node', 'gpu-01', '--gres', 'gpu:h100:8', '--restarted-since', '2026-11-21T06:10:00',
                      '--timeout', '60', capsys=capsys)
    assert status == 0 and out['node']['slurmd_start'] == '2026-11-21T07:02:13'
    assert len([argv for argv in slurm.log if argv[1:4] == ['-o', 'show', 'node']]) == 4


@pytest.mark.parametrize('node, gres, message', [
    ({'state': 'IDLE+DRAIN+INVALID_REG', 'reason': 'gres/gpu count reported lower than configured (6 < 8)'}, None,
     "Slurm node gpu-01 did not register within 0 s: state IDLE+DRAIN+INVALID_REG, reason 'gres/gpu count reported lower than configured (6 < 8)'"),
    ({'state': 'IDLE+DRAIN', 'reason': REASON}, 'gpu:h100:7,gpu:1g.10gb:7',
     'Slurm node gpu-01 shows Gres=gpu:h100:8 after 0 s, expected gpu:h100:7,gpu:1g.10gb:7'),
    ({'state': 'IDLE+DRAIN', 'reason': REASON}, 'since',
     'slurmd on Slurm node gpu-01 was restarted but has not registered again within 0 s (SlurmdStartTime=2026-11-21T06:10:00): '
     'look at its slurmd.log'),
])
def test_registered_failures(capsys, node, gres, message):
    argv = ['registered', '--node', 'gpu-01', '--timeout', '0']
    if gres == 'since':
        argv += ['--restarted-since', '2026-11-21T06:10:00']
    elif gres:
        argv += ['--gres', gres]
    status, out = run(StandIn(**node), *argv, capsys=capsys)
    assert status == 1 and out['msg'] == message


@pytest.mark.parametrize('argv, message', [
    (['drained', '--node', 'gpu-01', '--reason', 'maintenance'],
     "reason is 'maintenance', expected a reason that starts with 'gpucluster.bringup.mig:' (owner) so that the caller can recognise "
     "its own drain"),
    (['query', '--node', 'gpu-09'], 'scontrol -o show node gpu-09 failed (rc 1): Node gpu-09 not found'),
])
def test_bad_calls(capsys, argv, message):
    status, out = run(StandIn(), *argv, capsys=capsys)
    assert status == 1 and out['msg'] == message and out['changed'] is False


@pytest.mark.parametrize('argv, output, message', [
    (['query', '--node', 'gpu-01'], {'scontrol': 'Node gpu-01 is unknown to this tool\n'},
     'cannot read Slurm node gpu-01: scontrol printed no "NodeName=" line: \'Node gpu-01 is unknown to this tool\''),
    (['jobs_done', '--node', 'gpu-01'], {'squeue': '12 RUNNING alice\n'},
     "cannot read the jobs of Slurm node gpu-01: unexpected squeue line '12 RUNNING alice' (expected id|state|user|name)"),
])
def test_unexpected_output_is_reported(capsys, argv, output, message):
    standin = StandIn()

    def garbled(command, env=None, data=None):
        if command[0] in output:
            return 0, output[command[0]], ''
        return standin(command)
    status, out = run(garbled, *argv, capsys=capsys)
    assert status == 1 and out['msg'] == message


FAILED_REASON = 'gpucluster.bringup.mig: layout all-balanced failed, fix the cause, then run gpucluster.bringup.mig_change --limit gpu-01: boom'


@pytest.mark.parametrize('state, reason, changed, final_reason', [
    pytest.param('IDLE+DRAIN', REASON, True, FAILED_REASON, id='own-drain-gets-the-failure'),
    pytest.param('IDLE+DRAIN', FAILED_REASON, False, FAILED_REASON, id='already-noted'),
    pytest.param('IDLE+DRAIN', 'bad DIMM (ticket 42)', False, 'bad DIMM (ticket 42)', id='admin-drain-untouched'),
    pytest.param('IDLE', None, False, None, id='not-drained-untouched'),
])
def test_noted_rewrites_only_the_roles_own_drain_reason(capsys, state, reason, changed, final_reason):
    slurm = StandIn(state=state, reason=reason)
    status, out = run(slurm, 'noted', '--node', 'gpu-01', '--reason', FAILED_REASON, capsys=capsys)
    assert status == 0 and out['changed'] is changed
    assert slurm.node['reason'] == final_reason
    assert slurm.updates() == ([['scontrol', 'update', 'NodeName=gpu-01', 'State=DRAIN', 'Reason=' + FAILED_REASON]] if changed else [])


def test_noted_needs_the_owner_prefix(capsys):
    status, out = run(StandIn(state='IDLE+DRAIN', reason=REASON), 'noted', '--node', 'gpu-01', '--reason', 'it broke', capsys=capsys)
    assert status == 1 and out['msg'].startswith("reason is 'it broke', expected a reason that starts with 'gpucluster.bringup.mig:'")


# ----------------------------------------------------------------- the module's bad input: one message, nothing run


@pytest.mark.parametrize('args, fragments', [
    ({'action': 'drained', 'node': '-Mother', 'reason': 'gpucluster.bringup.mig: x'}, ["node is '-Mother', expected a Slurm node name", 'nothing was run']),
    ({'action': 'drained', 'node': 'gpu-01', 'reason': 'maintenance'}, ["reason is 'maintenance', expected a reason that starts with"]),
    ({'action': 'noted', 'node': 'gpu-01'}, ['reason is None, expected a reason that starts with']),
    ({'action': 'jobs_done', 'node': 'gpu-01', 'timeout': -1}, ['timeout is -1, expected 0 or more seconds']),
    ({'action': 'registered', 'node': 'gpu-01', 'poll': 0}, ['poll is 0, expected 1 or more seconds']),
    ({'action': 'drain', 'node': 'gpu-01'}, ['action', 'drain', 'query, drained, noted, jobs_done, registered, resumed']),
])
def test_bad_input_runs_nothing(args, fragments, monkeypatch):
    calls = forbid_commands(monkeypatch)
    outcome = bad_input(slurm_node.main, args, *fragments)
    assert outcome.result.get('changed', False) is False and calls == []
