# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_resume's resume path: one scontrol update for all nodes, probes at once (issue #23: resuming 64
nodes one probe after another took 196 s on the emulated cluster), node by node only when the one update fails."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import expand
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.modules import validation_resume

REASON = 'gpuhc:periodic:xid: Xid 79 on GPU 0'


class FakeSlurm(SlurmCli):
    """The real Slurm client over a stand-in of scontrol, srun, salloc, sinfo and scancel (a dict of node states); records
    every call; probes take ``delay`` seconds. ``busy``: nodes that hold a job (MIXED); salloc grants job 100, 101, ...
    unless ``refuse_allocation`` or one of its nodes is busy; ``kill_allocation``: a failing probe's node ends its whole
    allocation (a prolog failing with PrologFlags=Alloc), so every step of it fails."""

    def __init__(self, names, refuse=(), failing_probe=(), hostlist_update_fails=False, delay=0.05, busy=(), refuse_allocation=False,
                 kill_allocation=False):
        SlurmCli.__init__(self)
        self.state = dict((name, 'MIXED+DRAIN' if name in busy else 'IDLE+DRAIN') for name in names)
        self.busy = set(busy)
        self.refuse_allocation = refuse_allocation
        self.kill_allocation = kill_allocation
        self.allocated = {}  # job id -> node names
        self.steps = {}  # node name -> the job ids its probe ran as a step of ('' for a job of its own), in order
        self.refuse = set(refuse)
        self.failing_probe = set(failing_probe)
        self.hostlist_update_fails = hostlist_update_fails
        self.delay = delay
        self.calls = []
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.full = False
        self.deadline = None
        self.warnings = []

    def scontrol(self, *args):
        self.calls.append(('scontrol',) + args)
        if args[:2] == ('-o', 'show'):
            return 0, ''.join('NodeName=%s Arch=x86_64 State=%s Reason=%s [root@2026-11-27T07:00:00]\n' % (
                name, state, REASON) if 'DRAIN' in state else 'NodeName=%s Arch=x86_64 State=%s\n' % (name, state)
                for name, state in sorted(self.state.items())), ''
        if args[0] == 'update':
            target = args[1].split('=', 1)[1]
            if '[' in target and self.hostlist_update_fails:
                return 1, '', 'Invalid node name specified'
            names = [target] if '[' not in target else [n for n in self.state if n.startswith(target.split('[')[0])]
            if self.refuse & set(names):
                return 1, '', 'Invalid node name specified'
            for name in names:
                self.state[name] = self.state[name].replace('+DRAIN', '')
            return 0, '', ''
        if args[0] in ('create', 'delete'):
            return 0, '', ''
        raise AssertionError(args)

    def run(self, argv, env=None, data=None):
        self.calls.append(tuple(argv))
        assert argv[0] == 'scancel', argv
        del self.allocated[argv[1]]
        return 0, '', ''

    def job(self, argv, timeout, env=None):
        name = [a for a in argv if a.startswith('--nodelist=')][0].split('=', 1)[1] if argv[0] != 'sinfo' else None
        if argv[0] == 'salloc':
            nodes = expand(name)
            self.calls.append(('salloc', name))
            if self.refuse_allocation or self.busy & set(nodes):
                return {'rc': 1, 'stdout': '', 'stderr': 'salloc: error: Unable to allocate resources: Requested nodes are busy', 'seconds': 0.01}
            job_id = str(100 + len([c for c in self.calls if c[0] == 'salloc']) - 1)
            self.allocated[job_id] = nodes
            return {'rc': 0, 'stdout': '', 'stderr': 'salloc: Granted job allocation %s\n' % job_id, 'seconds': 0.01}
        if argv[0] == 'sinfo':
            self.calls.append(('sinfo', argv[-1]))
            return {'rc': 0, 'stdout': '\n'.join(n for n in expand(argv[-1]) if self.state[n] == 'IDLE'), 'stderr': '', 'seconds': 0.01}
        job_id = ''.join(a.split('=', 1)[1] for a in argv if a.startswith('--jobid='))
        assert not job_id or (job_id in self.allocated and name in self.allocated[job_id]), argv
        assert not job_id or not any(a.startswith('--reservation') for a in argv), argv
        with self.lock:
            self.steps.setdefault(name, []).append(job_id)
        if job_id and self.kill_allocation and self.failing_probe & set(self.allocated[job_id]):
            # the prolog of the failing node ended the allocation: that node drained, every step failed
            for node in self.failing_probe & set(self.allocated[job_id]):
                self.state[node] = 'IDLE+DRAIN'
            self.calls.append(('probe', name))
            return {'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to create step for job %s: Job/step already completing or completed'
                    % job_id, 'seconds': 0.01}
        with self.cond:
            self.calls.append(('probe', name))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            # the first probes wait (2 s at most in all) until as many run as the module allows, so that a loaded
            # machine starting threads slowly cannot make the count smaller
            if self.running >= min(validation_resume.PROBE_PARALLEL, len(self.state) - len(self.refuse)):
                self.full = True
                self.cond.notify_all()
            if self.deadline is None:
                self.deadline = time.monotonic() + 2
            self.cond.wait_for(lambda: self.full, timeout=max(0, self.deadline - time.monotonic()))
        time.sleep(self.delay)
        with self.lock:
            self.running -= 1
        if name in self.failing_probe:
            self.state[name] = 'IDLE+DRAIN'
            return {'rc': 1, 'stdout': '', 'stderr': 'srun: error: Prolog error', 'seconds': 0.01}
        return {'rc': 0, 'stdout': '', 'stderr': '', 'seconds': 0.01}

    def warn(self, text):
        self.warnings.append(text)


def manager(slurm, names, dispatch='per_node'):
    params = {'action': 'resume', 'names': names, 'resume_admin_drains': False, 'probe': True, 'probe_timeout': 120,
              'reservation': 'gpucluster-resume', 'dispatch': dispatch,
              'checks': dict((n, {'name': n, 'records': [{'stage': 'node', 'node': n, 'check': 'nvml', 'status': 'pass'}]}) for n in names)}
    return validation_resume.ResumeManager(slurm, params)


NAMES = ['gpu-%03d' % i for i in range(1, 101)]


def test_all_nodes_lifted_with_one_update_and_probed_at_once():
    slurm = FakeSlurm(NAMES, failing_probe={'gpu-050'})
    start = time.monotonic()
    result = manager(slurm, NAMES).run()
    seconds = time.monotonic() - start
    updates = [c for c in slurm.calls if c[:2] == ('scontrol', 'update')]
    assert updates == [('scontrol', 'update', 'NodeName=gpu-[001-100]', 'State=RESUME')]
    assert sorted(c[1] for c in slurm.calls if c[0] == 'probe') == NAMES
    assert slurm.most_running == validation_resume.PROBE_PARALLEL
    # 100 probes of 0.05 s: two rounds of 64, not 5 s one after another
    assert seconds < 4, seconds
    assert result['resumed'] == [n for n in NAMES if n != 'gpu-050']
    assert result['kept']['gpu-050'].startswith('probe job on gpu-050 failed (rc 1: srun: error: Prolog error) and node is IDLE+DRAIN')
    # the node list is read before (the problems) and once after all probes, not after each
    assert len([c for c in slurm.calls if c[:3] == ('scontrol', '-o', 'show')]) == 2
    assert slurm.calls[-1] == ('scontrol', 'delete', 'ReservationName=gpucluster-resume')


def test_node_by_node_when_the_one_update_fails():
    names = NAMES[:5]
    slurm = FakeSlurm(names, refuse={'gpu-003'}, hostlist_update_fails=True)
    result = manager(slurm, names).run()
    updates = [c[2] for c in slurm.calls if c[:2] == ('scontrol', 'update')]
    assert updates == ['NodeName=gpu-[001-005]'] + ['NodeName=%s' % n for n in names]
    assert result['resumed'] == ['gpu-001', 'gpu-002', 'gpu-004', 'gpu-005']
    assert result['kept'] == {'gpu-003': 'scontrol update NodeName=gpu-003 State=RESUME failed: Invalid node name specified'}
    assert 'gpu-003' not in [c[1] for c in slurm.calls if c[0] == 'probe']


@pytest.mark.parametrize('probe', [False, True])
def test_no_probe_when_probes_are_off_or_nothing_was_lifted(probe):
    names = NAMES[:3]
    slurm = FakeSlurm(names, refuse=set(names) if probe else (), hostlist_update_fails=probe)
    mgr = manager(slurm, names)
    mgr.params['probe'] = probe
    result = mgr.run()
    assert [c for c in slurm.calls if c[0] == 'probe'] == []
    assert result['resumed'] == ([] if probe else names)


# ---------------------------------------------------------------- allocation dispatch (issue 48 item 6), stand-in Slurm

def outcome(slurm, names, dispatch):
    result = manager(slurm, names, dispatch).run()
    return result['resumed'], result['kept'], result


def test_default_dispatch_probes_100_nodes_as_steps_of_one_allocation_in_the_reservation():
    slurm = FakeSlurm(NAMES, failing_probe={'gpu-050'}, delay=0)
    resumed, kept, result = outcome(slurm, NAMES, 'auto')
    assert [c for c in slurm.calls if c[0] == 'salloc'] == [('salloc', 'gpu-[001-100]')]
    assert set(tuple(v) for v in slurm.steps.values()) == {('100',)} and sorted(slurm.steps) == NAMES
    assert [c for c in slurm.calls if c[0] == 'scancel'] == [('scancel', '100')]
    # released after the last probe, before the reservation goes
    assert slurm.calls.index(('scancel', '100')) > max(i for i, c in enumerate(slurm.calls) if c[0] == 'probe')
    assert slurm.calls[-1] == ('scontrol', 'delete', 'ReservationName=gpucluster-resume')
    assert [(a['name'], a['nodes'], a['job_id']) for a in result['allocations']] == [('probe in the default partition on 100 nodes', 100, '100')]
    assert resumed == [n for n in NAMES if n != 'gpu-050']
    assert kept['gpu-050'].startswith('probe job on gpu-050 failed (rc 1: srun: error: Prolog error) and node is IDLE+DRAIN')


@pytest.mark.parametrize('case', [
    dict(failing_probe={'gpu-004'}),
    dict(failing_probe={'gpu-002', 'gpu-005'}, busy={'gpu-003'}),
    dict(failing_probe={'gpu-001'}, refuse_allocation=True),
    dict(busy={'gpu-001', 'gpu-006'}),
], ids=['one-failing', 'failing-and-busy', 'refused', 'busy-at-both-ends'])
def test_the_same_nodes_resumed_and_kept_with_the_same_messages_per_node_and_as_steps(case):
    names = NAMES[:6]
    per_node = outcome(FakeSlurm(names, delay=0, **case), names, 'per_node')
    slurm = FakeSlurm(names, delay=0, **case)
    steps = outcome(slurm, names, 'allocation')
    assert steps[:2] == per_node[:2]
    assert steps[0] == [n for n in names if n not in case.get('failing_probe', ())]
    # a busy node never in an allocation: its probe is a job of its own
    assert all(slurm.steps[n] == [''] for n in case.get('busy', ()))
    assert not any(set(case.get('busy', ())) & set(expand(c[1])) for c in slurm.calls if c[0] == 'salloc')
    if case.get('refuse_allocation'):
        # refused with every node idle: nothing to leave out, so each node's probe is a job of its own
        assert [c for c in slurm.calls if c[0] in ('salloc', 'sinfo')] == [('salloc', 'gpu-[001-006]'), ('sinfo', 'gpu-[001-006]')]
        assert all(v == [''] for v in slurm.steps.values())
        assert result_refused(steps[2]) == ['salloc: error: Unable to allocate resources: Requested nodes are busy']
    else:
        assert len([c for c in slurm.calls if c[0] == 'salloc']) == 1
        assert all(v == ['100'] for n, v in slurm.steps.items() if n not in case.get('busy', ()))


def result_refused(result):
    return [a.get('refused') for a in result['allocations'] if a.get('refused')]


def test_steps_failing_with_their_allocation_are_judged_on_jobs_of_their_own():
    # a prolog failing on gpu-002 (PrologFlags=Alloc) ends the allocation: every step fails, only gpu-002 is drained
    names = NAMES[:5]
    slurm = FakeSlurm(names, failing_probe={'gpu-002'}, kill_allocation=True, delay=0)
    resumed, kept, result = outcome(slurm, names, 'allocation')
    assert [(a['nodes'], a['job_id']) for a in result['allocations']] == [(5, '100')] and slurm.allocated == {}
    assert resumed == ['gpu-001', 'gpu-003', 'gpu-004', 'gpu-005']
    # the drained node is judged on its step (a job of its own would wait on it); the others ran again on their own
    assert slurm.steps == dict([('gpu-002', ['100'])] + [(n, ['100', '']) for n in resumed])
    assert list(kept) == ['gpu-002']
    assert kept['gpu-002'].startswith('probe job on gpu-002 failed (rc 1: srun: error: Unable to create step for job 100') \
        and 'node is IDLE+DRAIN' in kept['gpu-002']


def test_a_refused_allocation_is_asked_again_without_its_busy_node():
    names = NAMES[:4]
    slurm = FakeSlurm(names, delay=0)
    # busy after the list was read (state MIXED only when salloc asks): sinfo leaves it out, the others are steps
    real = slurm.job

    def job(argv, timeout, env=None):
        if argv[0] == 'salloc' and not slurm.busy:
            slurm.busy.add('gpu-003')
            slurm.state['gpu-003'] = 'MIXED'
        return real(argv, timeout, env)
    slurm.job = job
    resumed, kept, result = outcome(slurm, names, 'allocation')
    assert [c for c in slurm.calls if c[0] in ('salloc', 'sinfo')] == [
        ('salloc', 'gpu-[001-004]'), ('sinfo', 'gpu-[001-004]'), ('salloc', 'gpu-[001-002,004]')]
    assert slurm.steps == {'gpu-001': ['101'], 'gpu-002': ['101'], 'gpu-004': ['101'], 'gpu-003': ['']}
    assert [(a['name'], a['job_id']) for a in result['allocations']] == [
        ('probe in the default partition on 4 nodes', None), ('probe in the default partition on 3 idle nodes', '101')]
    assert resumed == names and kept == {}
