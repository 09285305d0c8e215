# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 50: an admin's DOWN or DRAIN is never undone by the collection.

One classifier (``node_owner``: ours / Slurm's / an admin's) decides for resume.yml's slurmd start, its resume, the
health check's auto-resume and the deep tier's return to service; these tables hold each of them to it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as dh
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_resume as vr
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import parse_scontrol_nodes
from ansible_collections.gpucluster.bringup.plugins.modules import validation_resume

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ADMIN = 'admin: DIMM replacement, keep down'


def node(state='IDLE', flags=(), reason='', name='gpu-02', user='root'):
    return {'name': name, 'state': state, 'flags': list(flags), 'reason': reason, 'reason_user': user if reason else '', 'reason_time': ''}


# ---------------------------------------------------------------- the classifier

@pytest.mark.parametrize('state, flags, reason, owner', [
    # the collection's own tags, at the start of the reason: the health check's (each tier, the earlier prefix), the
    # mig role's, validate.yml's, the hook runner's
    ('IDLE', ['DRAIN'], 'gpuhc:periodic:xid: GPU 0 had Xid 79', 'ours'),
    ('MIXED', ['DRAIN'], 'gpuhc:prolog:gpu-count: NVML sees 7 GPUs, expected 8', 'ours'),
    ('IDLE', ['DRAIN'], 'gpuhc:deep:dcgm: Memory on GPU 1: row remap failure', 'ours'),
    ('IDLE', ['DRAIN'], 'healthcheck: ecc: GPU 0 uncorrected', 'ours'),
    ('IDLE', ['DRAIN'], 'gpucluster.bringup.mig: applying layout all-1g; if this stays, fix the cause', 'ours'),
    ('IDLE', ['DRAIN'], 'validate: node/gres_conf: gres.conf differs', 'ours'),
    ('IDLE', ['DRAIN'], 'prolog hook 95-all-x failed (exit 1)', 'ours'),
    ('IDLE', ['DRAIN'], 'epilog hook 90-all-y timed out after 30s', 'ours'),
    ('IDLE', ['DRAIN'], 'prolog hook 95-all-x killed by signal 9', 'ours'),
    # ours even when Slurm marked the node DOWN later (it keeps a reason it finds) and slurmd does not answer
    ('DOWN', ['DRAIN', 'NOT_RESPONDING'], 'gpuhc:periodic:xid: GPU 0 had Xid 79', 'ours'),
    # Slurm's own reasons
    ('DOWN', ['NOT_RESPONDING'], 'Not responding', 'slurm'),
    ('DOWN', [], 'Not responding', 'slurm'),
    ('DOWN', [], 'Node unexpectedly rebooted', 'slurm'),
    ('DOWN', [], 'reboot timed out', 'slurm'),
    ('DOWN', ['POWERED_DOWN'], 'ResumeTimeout reached', 'slurm'),
    ('IDLE', ['DRAIN'], 'Kill task failed (JobId=12 StepId=0)', 'slurm'),
    ('DOWN', [], 'Kill task failed', 'slurm'),
    ('IDLE', ['DRAIN'], 'batch job complete failure', 'slurm'),
    ('IDLE', ['DRAIN'], 'Prolog error', 'slurm'),
    ('IDLE', ['DRAIN'], 'Epilog error', 'slurm'),
    ('IDLE', ['DRAIN'], 'Job env setup error', 'slurm'),
    ('IDLE', ['DRAIN'], 'Low RealMemory (reported:1000 < 100.00% of configured:2000)', 'slurm'),
    ('IDLE', ['DRAIN', 'INVALID_REG'], 'Low socket*core*thread count, Low CPUs', 'slurm'),
    ('IDLE', ['DRAIN', 'INVALID_REG'], 'gres/gpu count reported lower than configured (7 < 8)', 'slurm'),
    ('IDLE', ['DRAIN'], 'gpu:h100 count too low (7 < 8)', 'slurm'),
    ('IDLE', ['DRAIN'], 'SlurmdSpoolDir is full', 'slurm'),
    # no reason: scontrol refuses a DOWN or DRAIN without one, only slurmctld leaves a node without (and a node that is
    # only NOT_RESPONDING, before SlurmdTimeout, has none)
    ('IDLE', ['NOT_RESPONDING'], '', 'slurm'),
    ('DOWN', ['NOT_RESPONDING'], '', 'slurm'),
    ('IDLE', ['DRAIN'], '   ', 'slurm'),
    # an admin's free text, whatever the node's state
    ('DOWN', [], ADMIN, 'admin'),
    ('DOWN', ['NOT_RESPONDING'], ADMIN, 'admin'),
    ('IDLE', ['DRAIN'], ADMIN, 'admin'),
    ('IDLE', ['DRAIN', 'NOT_RESPONDING'], ADMIN, 'admin'),
    ('IDLE', ['NOT_RESPONDING'], ADMIN, 'admin'),
    ('MIXED', ['DRAIN'], 'disk replacement', 'admin'),
    # our tag or Slurm's words in the middle of an admin's text: still the admin's
    ('IDLE', ['DRAIN'], 'keep out, was gpuhc:periodic:xid: GPU 0 had Xid 79', 'admin'),
    ('DOWN', [], 'admin: see validate: node/gres_conf', 'admin'),
    ('DOWN', [], 'checking why Not responding', 'admin'),
    ('IDLE', ['DRAIN'], 'gpuhc is down for lunch', 'admin'),
    ('IDLE', ['DRAIN'], 'gpucluster.bringup.migration pending', 'admin'),
    ('IDLE', ['DRAIN'], 'prolog hook review', 'admin'),
    # a Slurm DOWN reason on a node only drained: written by a person; a word that merely starts like Slurm's
    ('IDLE', ['DRAIN'], 'Not responding', 'admin'),
    ('IDLE', ['DRAIN'], 'Node unexpectedly rebooted', 'admin'),
    ('DOWN', [], 'Not respondingly slow', 'admin'),
    ('IDLE', ['DRAIN'], 'Prolog errors to look at', 'admin'),
    # Slurm writes these for a person's request: a DownNodes= line without Reason=, "scontrol reboot nextstate=down"
    ('DOWN', [], 'Set in slurm.conf', 'admin'),
    ('DOWN', [], 'reboot complete', 'admin'),
    ('IDLE', ['DRAIN'], 'gres/gpu cabling check', 'admin'),
    # the closed loop's drains: its own owner (only the loop returns such a node)
    ('IDLE', ['DRAIN', 'REBOOT_REQUESTED'], 'gpuloop:reboot:xid-79: GPU 3 had Xid 79', 'loop'),
    ('IDLE', ['DRAIN'], 'gpuloop:service:xid-79: 3 reboots in 86400s', 'loop'),
    ('IDLE', ['DRAIN'], 'gpuloop is what we call the rack', 'admin'),
])
def test_node_owner(state, flags, reason, owner):
    assert vr.node_owner(node(state, flags, reason)) == owner
    # the same with the flags as a set (scontrol parsed by the health check's parse_scontrol_node)
    assert hc.node_owner(dict(node(state, flags, reason), flags=set(flags))) == owner


def test_node_owner_with_the_sites_prefix():
    tagged = node('IDLE', ['DRAIN'], 'sitehc:periodic:xid: GPU 0 had Xid 79')
    assert vr.node_owner(tagged) == 'admin'
    assert vr.node_owner(tagged, 'sitehc') == 'ours'
    assert vr.node_owner(node('IDLE', ['DRAIN'], 'gpuhc:periodic:xid: x'), 'sitehc') == 'admin'


def test_owner_text():
    assert hc.owner_text(node('DOWN', ['NOT_RESPONDING'], ADMIN)) == 'down by an admin: ' + ADMIN
    assert hc.owner_text(node('IDLE', ['DRAIN'], 'Kill task failed')) == 'drained by Slurm: Kill task failed'
    assert hc.owner_text(node('IDLE', ['DRAIN'], 'validate: node/x: y')) == 'drained by gpucluster.bringup: validate: node/x: y'
    assert hc.owner_text(node('IDLE', ['NOT_RESPONDING'])) == 'not responding by Slurm: no reason given'


# ---------------------------------------------------------------- resume.yml: start slurmd?

@pytest.mark.parametrize('state, flags, reason, admin_drains, start', [
    ('DOWN', ['NOT_RESPONDING'], 'Not responding', False, True),
    ('DOWN', [], 'Node unexpectedly rebooted', False, True),
    ('IDLE', ['NOT_RESPONDING'], '', False, True),                    # before SlurmdTimeout makes it DOWN
    ('IDLE', ['DRAIN', 'NOT_RESPONDING'], 'gpuhc:periodic:xid: x', False, True),
    ('DOWN', ['DRAIN', 'NOT_RESPONDING'], 'Kill task failed', False, True),
    # an admin's: never, unless asked
    ('DOWN', ['NOT_RESPONDING'], ADMIN, False, False),
    ('DOWN', [], ADMIN, False, False),
    ('IDLE', ['NOT_RESPONDING', 'DRAIN'], ADMIN, False, False),
    ('DOWN', ['NOT_RESPONDING'], 'Set in slurm.conf', False, False),
    ('DOWN', ['NOT_RESPONDING'], ADMIN, True, True),
    # slurmctld hears from slurmd: nothing to start
    ('IDLE', ['DRAIN'], 'gpuhc:periodic:xid: x', False, False),
    ('IDLE', ['DRAIN'], ADMIN, True, False),
])
def test_slurmd_start(state, flags, reason, admin_drains, start):
    got = vr.slurmd_start(node(state, flags, reason), admin_drains)
    assert got['start'] is start
    if not start and vr.node_owner(node(state, flags, reason)) == 'admin' and (state == 'DOWN' or 'NOT_RESPONDING' in flags):
        assert got['why'] == ("slurmd not started on gpu-02: an admin's %s (validate_resume_admin_drains overrides)"
                              % ('down' if state == 'DOWN' else 'drain'))


def test_problem_nodes_say_who_and_name_the_node():
    nodes = {'gpu-01': node('IDLE', ['NOT_RESPONDING'], name='gpu-01'),
             'gpu-02': node('DOWN', ['NOT_RESPONDING'], ADMIN),
             'gpu-03': node('IDLE', [], name='gpu-03')}
    got = vr.problem_nodes(nodes)
    assert [(n['name'], n['owner'], n['start_slurmd']) for n in got] == [('gpu-01', 'slurm', True), ('gpu-02', 'admin', False)]
    assert got[0]['line'] == 'gpu-01: node is IDLE+NOT_RESPONDING (no reason given); slurmd to be started on gpu-01 where it is stopped'
    assert got[1]['line'] == ('gpu-02: node is DOWN+NOT_RESPONDING (reason: "%s" set by root); down by an admin: %s; '
                              "slurmd not started on gpu-02: an admin's down (validate_resume_admin_drains overrides)" % (ADMIN, ADMIN))


# ---------------------------------------------------------------- resume.yml: resume?

PASS = [{'stage': 'node', 'node': 'gpu-02', 'check': 'munge', 'status': 'pass', 'reason': 'ok'},
        {'stage': 'node', 'node': 'gpu-02', 'check': 'node_state', 'status': 'fail', 'reason': 'node is DOWN'}]
FAIL = PASS + [{'stage': 'node', 'node': 'gpu-02', 'check': 'services', 'status': 'fail', 'reason': 'slurmd is inactive'}]


@pytest.mark.parametrize('state, flags, reason, records, admin_drains, resumed', [
    ('DOWN', ['NOT_RESPONDING'], 'Not responding', PASS, False, True),
    ('IDLE', ['DRAIN'], 'Kill task failed (JobId=3 StepId=0)', PASS, False, True),
    ('IDLE', ['DRAIN'], 'batch job complete failure', PASS, False, True),
    ('IDLE', ['DRAIN'], 'gpucluster.bringup.mig: layout x failed, fix the cause', PASS, False, True),
    ('IDLE', ['DRAIN'], 'gpuhc:periodic:xid: x', PASS, False, True),
    ('IDLE', ['DRAIN'], 'gpuhc:periodic:xid: x', FAIL, False, False),
    ('DOWN', ['NOT_RESPONDING'], 'Not responding', FAIL, False, False),
    # an admin's: kept whatever the checks and the flags say (the NOT_RESPONDING flag used to make it "not responding")
    ('DOWN', ['NOT_RESPONDING'], ADMIN, PASS, False, False),
    ('DOWN', [], ADMIN, PASS, False, False),
    ('IDLE', ['DRAIN', 'NOT_RESPONDING'], ADMIN, PASS, False, False),
    ('IDLE', ['DRAIN'], 'keep out, was gpuhc:periodic:xid: x', PASS, False, False),
    ('IDLE', ['DRAIN'], 'gres/gpu reported by slurmd differs', PASS, False, False),
    ('DOWN', [], ADMIN, None, False, False),
    ('DOWN', [], ADMIN, PASS, True, True),
    ('DOWN', [], ADMIN, FAIL, True, False),
])
def test_resume_decision(state, flags, reason, records, admin_drains, resumed):
    problems = vr.problem_nodes({'gpu-02': node(state, flags, reason)})
    checks = {'gpu-02': {'records': records, 'hook_log': ''}} if records is not None else {}
    to_resume, kept = vr.plan_resume(problems, checks, admin_drains)
    assert (to_resume == ['gpu-02']) is resumed
    if vr.node_owner(problems[0]) == 'admin' and not admin_drains:
        what = 'down' if state == 'DOWN' else 'drained'
        assert kept['gpu-02'] == '%s by an admin: %s (set by root); %s' % (what, reason, vr.ADMIN_KEPT)


def test_started_text():
    idle = node('IDLE', [])
    assert vr.started_text('gpu-02', idle, 6) == 'slurmd started on gpu-02; node idle after 6 s'
    assert vr.started_text('gpu-02', node('IDLE', ['NOT_RESPONDING']), 60) == \
        'slurmd started on gpu-02; slurmctld still does not hear from it after 60 s (node IDLE+NOT_RESPONDING)'
    assert vr.started_text('gpu-02', node('DOWN', [], 'Node unexpectedly rebooted'), 4) == \
        'slurmd started on gpu-02; slurmctld hears from it after 4 s, node is DOWN (reason: "Node unexpectedly rebooted" set by root)'
    assert vr.started_text('gpu-02', None, 4) == 'slurmd started on gpu-02; Slurm no longer lists the node'
    assert vr.started_text('gpu-02', idle, 0, check_mode=True) == 'slurmd would be started on gpu-02 (check mode)'


def test_resume_records_name_the_started_slurmd():
    started = {'gpu-02': 'slurmd started on gpu-02; node idle after 6 s',
               'gpu-03': 'slurmd started on gpu-03; slurmctld still does not hear from it after 60 s (node IDLE+NOT_RESPONDING)'}
    assert vr.resume_records([], [], {}, started) == [
        {'stage': 'resume', 'node': 'gpu-02', 'check': 'slurmd', 'status': 'pass', 'reason': started['gpu-02']},
        {'stage': 'resume', 'node': 'gpu-03', 'check': 'slurmd', 'status': 'fail', 'reason': started['gpu-03']}]


# ---------------------------------------------------------------- the module: query, wait, resume

class FakeSlurm(SlurmCli):
    """The real Slurm client over a stand-in of scontrol (a dict of node lines); slurmd "answers" after ``answers_after``
    clock seconds."""

    def __init__(self, nodes, answers_after=None):
        SlurmCli.__init__(self, clock=self.clock)
        self.nodes = nodes
        self.answers_after = answers_after or {}
        self.now = 0.0
        self.calls = []
        self.warnings = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        for name, when in self.answers_after.items():
            if self.now >= when:
                self.nodes[name] = dict(self.nodes[name], state='IDLE', flags=[])

    def scontrol(self, *args):
        self.calls.append(args)
        if args[:2] == ('-o', 'show'):
            out = ''
            for name, n in sorted(self.nodes.items()):
                out += 'NodeName=%s Arch=x86_64 State=%s' % (name, '+'.join([n['state']] + n['flags']))
                out += ' Reason=%s [root@2026-12-05T04:00:00]\n' % n['reason'] if n['reason'] else '\n'
            return 0, out, ''
        return 0, '', ''

    def job(self, argv, timeout, env=None):
        raise AssertionError('no probe expected')

    def warn(self, text):
        self.warnings.append(text)


def params(**extra):
    base = dict(action='query', names=[], checks={}, resume_admin_drains=False, probe=False, probe_timeout=120,
                reservation='gpucluster-resume', prefix='gpuhc', started={}, wait_timeout=60)
    base.update(extra)
    return base


def slurm():
    return FakeSlurm({'gpu-01': node('IDLE', ['NOT_RESPONDING'], name='gpu-01'),
                      'gpu-02': node('DOWN', ['NOT_RESPONDING'], ADMIN),
                      'gpu-03': node('IDLE', [], name='gpu-03')}, {'gpu-01': 6})


def manager(fake, **extra):
    return validation_resume.ResumeManager(fake, params(**extra), clock=fake.clock, sleep=fake.sleep)


def test_query_names_the_nodes_and_starts_slurmd_only_where_no_admin_set_the_state():
    result = manager(slurm()).run()
    assert [(n['name'], n['start_slurmd']) for n in result['nodes']] == [('gpu-01', True), ('gpu-02', False)]
    assert [line.split(':')[0] for line in result['lines']] == ['gpu-01', 'gpu-02']
    assert 'down by an admin: ' + ADMIN in result['lines'][1]


def test_wait_says_what_starting_slurmd_did():
    fake = slurm()
    result = manager(fake, action='wait', names=['gpu-01']).run()
    assert result['started'] == {'gpu-01': 'slurmd started on gpu-01; node idle after 6 s'}
    assert result['changed'] is False
    # slurmd never answers: the wait ends at wait_timeout and says so
    fake = slurm()
    fake.answers_after = {}
    result = manager(fake, action='wait', names=['gpu-01'], wait_timeout=10).run()
    assert result['started'] == {'gpu-01': 'slurmd started on gpu-01; slurmctld still does not hear from it after 10 s (node IDLE+NOT_RESPONDING)'}


def test_resume_keeps_the_admins_down_and_reports_the_started_slurmd():
    fake = slurm()
    fake.sleep(6)   # gpu-01 came back by itself once its slurmd started
    started = {'gpu-01': 'slurmd started on gpu-01; node idle after 6 s'}
    result = manager(fake, action='resume', checks={'gpu-02': {'records': PASS, 'hook_log': ''}}, started=started).run()
    assert result['resumed'] == []
    assert result['kept'] == {'gpu-02': 'down by an admin: %s (set by root); %s' % (ADMIN, vr.ADMIN_KEPT)}
    assert result['started'] == started
    assert [(r['node'], r['check'], r['status']) for r in result['records']] == [('gpu-01', 'slurmd', 'pass'), ('gpu-02', 'resume', 'fail')]
    assert not [call for call in fake.calls if call[0] == 'update']


# ---------------------------------------------------------------- the health check's auto-resume

XID = [hc.Failure('xid', 0, 'GPU 0 had Xid 79')]


@pytest.mark.parametrize('failures, state, flags, reason, action', [
    # failing: drain, unless someone else already holds the node out of service (an admin's DOWN above all: a drain
    # of ours over it would replace the admin's reason, and a later passing run would resume it)
    (XID, 'IDLE', [], '', 'drain'),
    (XID, 'DOWN', [], ADMIN, 'none'),
    (XID, 'DOWN', [], 'Node unexpectedly rebooted', 'drain'),
    (XID, 'DOWN', ['NOT_RESPONDING'], 'Not responding', 'drain'),
    (XID, 'DOWN', ['NOT_RESPONDING'], ADMIN, 'none'),
    (XID, 'IDLE', ['DRAIN'], ADMIN, 'none'),
    (XID, 'IDLE', ['DRAIN'], 'Kill task failed', 'none'),
    (XID, 'DOWN', ['DRAIN'], 'gpuhc:periodic:ecc: GPU 1 uncorrected', 'drain'),
    # passing: resume only this check's own drain
    ([], 'IDLE', ['DRAIN'], 'gpuhc:periodic:xid: GPU 0 had Xid 79', 'resume'),
    ([], 'DOWN', ['DRAIN'], 'gpuhc:periodic:xid: GPU 0 had Xid 79', 'resume'),
    ([], 'IDLE', ['DRAIN'], ADMIN, 'none'),
    ([], 'DOWN', [], ADMIN, 'none'),
    ([], 'DOWN', ['DRAIN'], ADMIN, 'none'),
    ([], 'IDLE', ['DRAIN'], 'keep out, was gpuhc:periodic:xid: GPU 0 had Xid 79', 'none'),
    ([], 'IDLE', ['DRAIN'], 'Kill task failed', 'none'),
    ([], 'IDLE', ['DRAIN'], 'validate: node/gres_conf: x', 'none'),
])
def test_healthcheck_decision(failures, state, flags, reason, action):
    decision = hc.decide(failures, dict(node(state, flags, reason), flags=set(flags)), 'gpuhc', auto_resume=True, passes=5)
    assert decision.action == action, decision.message
    if action == 'none' and state == 'DOWN' and failures:
        assert decision.message.endswith('gpu-02 is %s, left as it is' % hc.owner_text(node(state, flags, reason)))


# ---------------------------------------------------------------- the deep tier

def deep_line(name, state, reason=None):
    text = 'NodeName=%s Arch=x86_64 Gres=gpu:h100:8(S:0-1) State=%s Partitions=batch' % (name, state)
    return text + (' Reason=%s [root@2026-12-05T01:00:00]' % reason if reason else '')


@pytest.mark.parametrize('state, reason, include, tested', [
    ('DOWN', ADMIN, 'all', False),
    ('DOWN+NOT_RESPONDING', ADMIN, 'all', False),
    ('IDLE+DRAIN+NOT_RESPONDING', ADMIN, 'all', False),
    ('IDLE+DRAIN', ADMIN, 'ours', False),
    ('IDLE+DRAIN', 'keep out, was gpuhc:deep:dcgm: x', 'ours', False),
    ('IDLE+DRAIN', 'Kill task failed', 'ours', False),
    ('IDLE+DRAIN', 'gpuhc:deep:dcgm: x', 'ours', True),
    ('DOWN+DRAIN', 'gpuhc:deep:dcgm: x', 'ours', False),
])
def test_deep_tier_picks(state, reason, include, tested):
    text = deep_line('gpu-02', state, reason) + '\n'
    nodes = parse_scontrol_nodes(text)
    candidates, skipped = dh.select(nodes, dh.node_extras(nodes), [], include)
    assert bool(candidates) is tested, skipped


def _deep_job(results):
    report, _status = hd.outcome('gpu-02', list(results), 'gpuhc')
    return {'rc': 1 if report['reason'] else 0, 'stdout': hd.report_line(report) + '\n', 'stderr': '', 'timed_out': False, 'timeout': 60}


@pytest.mark.parametrize('reason, action', [
    ('gpuhc:deep:dcgm: x', 'resume'),
    (ADMIN, 'restore'),
    ('keep out, was gpuhc:deep:dcgm: x', 'restore'),
    ('Kill task failed', 'restore'),
    ('gpuhc:periodic:xid: x', 'restore'),
])
def test_deep_tier_returns_only_its_own_drain(reason, action):
    candidate = {'name': 'gpu-02', 'gpus': 8, 'partition': 'batch', 'drained': True, 'reason': reason, 'tag': hc.parse_tag(reason)}
    after = {'name': 'gpu-02', 'state': 'IDLE', 'flags': [], 'reason': '', 'reason_user': ''}
    outcome = dh.settle(candidate, _deep_job([hd.result('dcgm', 'pass', 'ok')]), after)
    assert outcome['action'] == action
    if action == 'restore':
        assert outcome['reason'] == reason


# ---------------------------------------------------------------- the mig role's hint carries the user's layout

def test_mig_failure_hint_carries_the_layout_and_the_limit(tmp_path):
    """The role's drain-reason hint (roles/mig/vars/main.yml) and the failure task's own vars of roles/mig/tasks/change.yml,
    rendered by ansible-playbook with the layout given with -e (a custom one): the printed command applies that layout to
    that host."""
    with open(os.path.join(ROOT, 'roles', 'mig', 'vars', 'main.yml')) as handle:
        role_vars = yaml.safe_load(handle)
    with open(os.path.join(ROOT, 'roles', 'mig', 'tasks', 'change.yml')) as handle:
        tasks = yaml.safe_load(handle)
    block = [t for t in tasks if t.get('name') == 'Drain, wait and apply'][0]
    stop = [t for t in block['rescue'] if t.get('name') == 'Stop with the reason'][0]
    playbook = [{'hosts': 'localhost', 'gather_facts': False,
                 'vars': {'_mig_reason_rerun': role_vars['_mig_reason_rerun'], 'mig_layouts_custom': {}},
                 'tasks': [{'name': 'hint', 'ansible.builtin.debug': {'msg': '{{ _mig_reason_rerun }}'}},
                           {'name': 'message', 'ansible.builtin.debug': {'msg': '{{ __mig_rerun_command | default(_mig_reason_rerun) }}'},
                            'vars': stop.get('vars') or {}}]}]
    (tmp_path / 'pb.yml').write_text(yaml.safe_dump(playbook))
    custom = {'mig_layout': 'mine', 'mig_layouts_custom': {'mine': [{'gpu': 0, 'profiles': ['1g.10gb']}]}}
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK='json', ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    ansible = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    proc = subprocess.run([ansible, '-i', 'localhost,', str(tmp_path / 'pb.yml'), '-e', json.dumps(custom)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plays = json.loads(proc.stdout)['plays'][0]['tasks']
    hint, message = [task['hosts']['localhost']['msg'] for task in plays]
    assert hint == 'fix the cause, then run gpucluster.bringup.mig_change --limit localhost -e mig_layout=mine'
    assert message == ("fix the cause, then run ansible-playbook -i localhost, gpucluster.bringup.mig_change --limit localhost -e '%s'"
                       % json.dumps(custom))
