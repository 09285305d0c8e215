# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""health_deep's order of commands against a recorded Slurm: reserve, resume into it, run, settle, end the reservation.

The Slurm here is a small state machine answering the module's scontrol calls as Slurm 24.11 prints them
(node lines, reservation lines, errors); the jobs' outputs are the node program's report lines.  The real
thing (slurmctld, srun, the program on the simulated nodes) is molecule/default/tests/test_health_deep.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.modules import health_deep


class FakeSlurm(SlurmCli):
    """The real Slurm client over a stand-in of scontrol (its ``scontrol``) and srun (its ``job``)."""

    def __init__(self, nodes, jobs, reservations=()):
        SlurmCli.__init__(self)
        self.nodes = nodes          # name -> [state, reason]
        self.jobs = jobs            # name -> job result, or a callable(self) -> result
        self.reservations = set(reservations)
        self.calls = []

    def line(self, name):
        state, reason = self.nodes[name]
        text = 'NodeName=%s Arch=x86_64 Gres=gpu:h100:8(S:0-1) State=%s Partitions=batch' % (name, state)
        if reason:
            text += ' Reason=%s [root@2026-11-27T01:00:00]' % reason
        return text

    def scontrol(self, *args):
        self.calls.append(('scontrol',) + args)
        if args[:3] == ('-o', 'show', 'node'):
            names = args[3].split(',') if len(args) > 3 else sorted(self.nodes)
            return 0, '\n'.join(self.line(n) for n in names) + '\n', ''
        if args[:3] == ('-o', 'show', 'reservation'):
            if args[3] in self.reservations:
                return 0, 'ReservationName=%s StartTime=2026-11-27T01:00:00 Nodes=gpu-01 Flags=MAINT,IGNORE_JOBS\n' % args[3], ''
            return 1, '', 'Reservation %s not found\n' % args[3]
        if args[:2] == ('create', 'reservation'):
            name = args[2].split('=', 1)[1]
            self.reservations.add(name)
            for node in args[3].split('=', 1)[1].split(','):
                self.nodes[node][0] += '+MAINT+RESERVED'
            return 0, 'Reservation created: %s\n' % name, ''
        if args[0] == 'delete':
            self.reservations.discard(args[1].split('=', 1)[1])
            for entry in self.nodes.values():
                entry[0] = entry[0].replace('+MAINT+RESERVED', '')
            return 0, '', ''
        if args[0] == 'update':
            node = args[1].split('=', 1)[1]
            if args[2] == 'State=RESUME':
                self.nodes[node] = [self.nodes[node][0].replace('+DRAIN', ''), '']
            else:
                self.nodes[node] = [self.nodes[node][0].replace('+MAINT', '+DRAIN+MAINT') if '+DRAIN' not in self.nodes[node][0]
                                    else self.nodes[node][0], args[3].split('=', 1)[1]]
            return 0, '', ''
        raise AssertionError('unexpected scontrol %r' % (args,))

    def path(self, name):
        return '/usr/bin/' + name

    def job(self, argv, timeout, env=None):
        assert argv[0] == '/usr/bin/srun'
        node = [a for a in argv if a.startswith('--nodelist=')][0].split('=', 1)[1]
        self.calls.append(('srun', node))
        assert '--reservation=gpucluster-deep-health' in argv and '--exclusive' in argv and '--gres=gpu:8' in argv
        job = self.jobs[node]
        return job(self) if callable(job) else job


def report(node, *results):
    data, status = hd.outcome(node, list(results), 'gpuhc')
    return {'rc': status, 'stdout': hd.report_line(data) + '\n', 'stderr': '', 'timed_out': False, 'timeout': 3780}


PASS = [hd.result('dcgm', 'pass', 'dcgmi diag -r 2: 9 pass'), hd.result('nccl', 'pass', 'busbw ok', value=350.0)]
SLOW = [hd.result('dcgm', 'pass', 'ok'), hd.result('nvbandwidth', 'fail', 'nvbandwidth: GPU 2 host_to_device_memcpy_ce 5.5 GB/s, below 44.1')]
PARAMS = {'names': [], 'include_drained': 'ours', 'reservation': 'gpucluster-deep-health', 'time_limit': 60, 'batch_size': 0,
          'resume_after_passes': 1,
          'program': '/usr/local/sbin/gpucluster-healthcheck', 'prefix': 'gpuhc', 'settings': {}}


def run(slurm, check_mode=False, **params):
    return health_deep.DeepManager(slurm, dict(PARAMS, **params), check_mode=check_mode).run()


def test_one_batch_drains_the_failing_node_resumes_the_healed_one_and_puts_other_drains_back():
    slurm = FakeSlurm(
        {'gpu-01': ['IDLE', ''], 'gpu-02': ['IDLE+DRAIN', 'gpuhc:deep:nvbandwidth: GPU 1 slow'],
         'gpu-03': ['IDLE+DRAIN', 'gpuhc:periodic:nvlink: GPU 3 NVLink 2 down'], 'gpu-04': ['MIXED', ''],
         'gpu-05': ['IDLE+DRAIN', 'bad fan, ticket 123']},
        {'gpu-01': report('gpu-01', *SLOW), 'gpu-02': report('gpu-02', *PASS), 'gpu-03': report('gpu-03', *PASS)})
    result = run(slurm)
    assert result['drained'] == ['gpu-01'] and result['resumed'] == ['gpu-02'] and result['changed'] is True
    assert slurm.nodes['gpu-01'] == ['IDLE+DRAIN', 'gpuhc:deep:nvbandwidth: nvbandwidth: GPU 2 host_to_device_memcpy_ce 5.5 GB/s, below 44.1']
    assert slurm.nodes['gpu-02'] == ['IDLE', '']
    assert slurm.nodes['gpu-03'] == ['IDLE+DRAIN', 'gpuhc:periodic:nvlink: GPU 3 NVLink 2 down']
    assert slurm.nodes['gpu-05'] == ['IDLE+DRAIN', 'bad fan, ticket 123']
    assert set(result['skipped']) == {'gpu-04', 'gpu-05'} and not slurm.reservations
    order = [c[:2] if c[0] == 'scontrol' else c for c in slurm.calls]
    # the reservation first, then the drained nodes resumed into it, then the jobs, then the settling, then the end
    assert order.index(('scontrol', 'create')) < order.index(('scontrol', 'update')) < order.index(('srun', 'gpu-01'))
    assert order[-1] == ('scontrol', 'delete')
    records = dict(((r['node'], r['check']), r['status']) for r in result['records'])
    assert records[('gpu-01', 'nvbandwidth')] == 'fail' and records[('gpu-02', 'nccl')] == 'pass'
    assert records[('gpu-04', 'deep_job')] == 'skip'


def test_a_second_run_on_healthy_idle_nodes_changes_nothing():
    slurm = FakeSlurm({'gpu-01': ['IDLE', '']}, {'gpu-01': report('gpu-01', *PASS)})
    result = run(slurm)
    assert (result['changed'], result['drained'], result['resumed']) == (False, [], [])
    assert not [c for c in slurm.calls if c[:2] == ('scontrol', 'update')]


def test_check_mode_lists_and_touches_nothing():
    slurm = FakeSlurm({'gpu-01': ['IDLE', ''], 'gpu-02': ['IDLE+DRAIN', 'gpuhc:deep:dcgm: x']}, {})
    result = run(slurm, check_mode=True)
    assert [(n['name'], n['action']) for n in result['nodes']] == [('gpu-01', 'test'), ('gpu-02', 'test')]
    assert slurm.calls == [('scontrol', '-o', 'show', 'node')]


def test_an_existing_reservation_stops_the_run_before_anything_changes():
    slurm = FakeSlurm({'gpu-01': ['IDLE+DRAIN', 'gpuhc:deep:dcgm: x']}, {}, reservations=['gpucluster-deep-health'])
    with pytest.raises(health_deep.DeepFailure, match='the reservation gpucluster-deep-health exists already'):
        run(slurm)
    assert [c for c in slurm.calls if c[1] in ('create', 'update', 'delete')] == []


def test_a_job_that_cannot_start_puts_the_node_back():
    def boom(slurm):
        raise OSError('srun vanished')
    slurm = FakeSlurm({'gpu-01': ['IDLE+DRAIN', 'gpuhc:deep:dcgm: Memory on GPU 1']}, {'gpu-01': boom})
    result = run(slurm)
    assert slurm.nodes['gpu-01'] == ['IDLE+DRAIN', 'gpuhc:deep:dcgm: Memory on GPU 1'] and not slurm.reservations
    assert 'cannot run srun: srun vanished' in result['records'][0]['reason']


def test_a_crash_half_way_puts_the_lifted_drains_back_and_ends_the_reservation():
    class Crashing(FakeSlurm):
        def scontrol(self, *args):
            if args[:3] == ('-o', 'show', 'node') and any(c[0] == 'srun' for c in self.calls):
                raise RuntimeError('slurmctld went away')
            return FakeSlurm.scontrol(self, *args)
    slurm = Crashing({'gpu-01': ['IDLE+DRAIN', 'gpuhc:periodic:xid: Xid 79']}, {'gpu-01': report('gpu-01', *PASS)})
    with pytest.raises(RuntimeError):
        run(slurm)
    assert slurm.nodes['gpu-01'] == ['IDLE+DRAIN', 'gpuhc:periodic:xid: Xid 79'] and not slurm.reservations


def test_batches_reserve_one_group_at_a_time():
    slurm = FakeSlurm(dict(('gpu-0%d' % i, ['IDLE', '']) for i in range(1, 6)),
                      dict(('gpu-0%d' % i, report('gpu-0%d' % i, *PASS)) for i in range(1, 6)))
    run(slurm, batch_size=2)
    creates = [c[4] for c in slurm.calls if c[1:3] == ('create', 'reservation')]
    assert creates == ['Nodes=gpu-01,gpu-02', 'Nodes=gpu-03,gpu-04', 'Nodes=gpu-05']
    assert len([c for c in slurm.calls if c[1] == 'delete']) == 3


def test_the_job_gets_the_settings_as_json():
    seen = {}

    class Recording(FakeSlurm):
        def job(self, argv, timeout, env=None):
            seen['argv'] = argv
            seen['timeout'] = timeout
            return report('gpu-01', *PASS)
    slurm = Recording({'gpu-01': ['IDLE', '']}, {})
    run(slurm, settings={'dcgm_level': 3, 'checks': ['dcgm']}, time_limit=30)
    assert json.loads(seen['argv'][-1]) == {'checks': ['dcgm'], 'dcgm_level': 3}
    assert '--time=30' in seen['argv'] and seen['timeout'] == 30 * 60 + 180


def test_with_two_passes_asked_the_first_passing_run_puts_the_deep_drain_back():
    one = report('gpu-02', *PASS)
    slurm = FakeSlurm({'gpu-02': ['IDLE+DRAIN', 'gpuhc:deep:nvbandwidth: GPU 1 slow']}, {'gpu-02': one})
    result = run(slurm, resume_after_passes=2)
    assert result['resumed'] == [] and slurm.nodes['gpu-02'] == ['IDLE+DRAIN', 'gpuhc:deep:nvbandwidth: GPU 1 slow']
    data = hd.read_report(one['stdout'])
    data['passes'] = 2
    slurm.jobs['gpu-02'] = dict(one, stdout=hd.report_line(data) + '\n')
    result = run(slurm, resume_after_passes=2)
    assert result['resumed'] == ['gpu-02'] and slurm.nodes['gpu-02'] == ['IDLE', '']


@pytest.mark.parametrize('job, before, message', [
    ({'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources: Requested node configuration is not available',
      'timed_out': False, 'timeout': 3780}, None,
     'the job gave no verdict (it failed (rc 1): srun: error: Unable to allocate resources: Requested node configuration is not available); '
     'left in service'),
    ({'rc': 124, 'stdout': '', 'stderr': '', 'timed_out': True, 'timeout': 3780}, 'gpuhc:deep:dcgm: x',
     'the job gave no verdict (it did not finish within 3780s); its drain is put back'),
])
def test_a_job_without_a_report_is_named_no_verdict_and_put_back(job, before, message):
    """A node whose job printed no report was not tested: ``no_verdict`` names it (the playbook fails on it)."""
    slurm = FakeSlurm({'gpu-01': ['IDLE+DRAIN' if before else 'IDLE', before or ''], 'gpu-02': ['IDLE', '']},
                      {'gpu-01': job, 'gpu-02': report('gpu-02', *PASS)})
    result = run(slurm)
    assert result['no_verdict'] == ['gpu-01']
    assert slurm.nodes['gpu-01'] == ['IDLE+DRAIN' if before else 'IDLE', before or ''] and not slurm.reservations
    outcome = dict((n['name'], n) for n in result['nodes'])
    assert outcome['gpu-01']['message'] == message and outcome['gpu-01']['verdict'] is False
    assert outcome['gpu-02']['verdict'] is True and result['drained'] == [] and result['resumed'] == []


def test_every_node_with_a_report_has_a_verdict():
    slurm = FakeSlurm({'gpu-01': ['IDLE', ''], 'gpu-02': ['IDLE+DRAIN', 'gpuhc:deep:dcgm: x']},
                      {'gpu-01': report('gpu-01', *SLOW), 'gpu-02': report('gpu-02', *PASS)})
    assert run(slurm)['no_verdict'] == []
