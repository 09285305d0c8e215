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

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.modules import validation_resume

REASON = 'gpuhc:periodic:xid: Xid 79 on GPU 0'


class FakeSlurm(SlurmCli):
    """The real Slurm client over a stand-in of scontrol and srun (a dict of node states); records every call; probes
    take ``delay`` seconds."""

    def __init__(self, names, refuse=(), failing_probe=(), hostlist_update_fails=False, delay=0.05):
        SlurmCli.__init__(self)
        self.state = dict((name, 'IDLE+DRAIN') for name in names)
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
                self.state[name] = 'IDLE'
            return 0, '', ''
        if args[0] in ('create', 'delete'):
            return 0, '', ''
        raise AssertionError(args)

    def job(self, argv, timeout, env=None):
        name = [a for a in argv if a.startswith('--nodelist=')][0].split('=', 1)[1]
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
            return {'rc': 1, 'stdout': '', 'stderr': 'srun: error: Prolog error'}
        return {'rc': 0, 'stdout': '', 'stderr': ''}

    def warn(self, text):
        self.warnings.append(text)


def manager(slurm, names):
    params = {'action': 'resume', 'names': names, 'resume_admin_drains': False, 'probe': True, 'probe_timeout': 120,
              'reservation': 'gpucluster-resume',
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
