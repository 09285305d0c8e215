# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's state machine (issue 48): every transition, the windows, admin drains, a crash half-way."""

from __future__ import absolute_import, division, print_function

import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop

T0 = 1796486400  # 2026-12-05 some hour, local time
XID79 = 'gpuhc:periodic:xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node'
PERSIST = 'gpuhc:periodic:persistence: GPU 4 (00000000:87:00.0) persistence mode is off'
REMAP = 'gpuhc:periodic:gpu-error: GPU 5 (00000000:90:00.0) has a failed memory row remapping'
ADMIN = 'PSU swap, ticket 4711'
POLICY = loop.load_policy({})


def node(state='IDLE', flags=(), reason='', comment='', boot=T0 - 3600, jobs=(), reason_time=None, name='gpu-01'):
    return {'name': name, 'state': state, 'flags': sorted(flags), 'reason': reason, 'reason_time': reason_time, 'comment': comment,
            'boot_time': boot, 'jobs': list(jobs)}


def record(state='ok', **extra):
    rec = loop.new_record(T0 - 100)
    rec['state'] = state
    rec.update(extra)
    return rec


def events(result):
    return [e['event'] for e in result.events]


def reboot_tag(condition='xid-79'):
    return loop.loop_reason('gpuloop', 'reboot', condition, 'the GPU at PCI 0000:1b:00 had Xid 79 since boot')


# ------------------------------------------------------------------ ok -> ...

def test_a_healthy_node_is_left_alone():
    result = loop.step(None, node(), POLICY, T0)
    assert (result.record['state'], result.actions, result.events, result.deep) == ('ok', [], [], False)


def test_xid_79_on_a_busy_node_requeues_its_jobs_and_asks_slurm_for_a_reboot():
    result = loop.step(record(), node('MIXED', ['DRAIN'], XID79, jobs=[17, 18]), POLICY, T0)
    reason = loop.loop_reason('gpuloop', 'reboot', 'xid-79', XID79.split(': ', 1)[1])
    assert result.actions == [['scontrol', 'requeue', '17,18'],
                              ['scontrol', 'reboot', 'ASAP', 'reason=' + reason, 'gpu-01']]
    assert reason.startswith('gpuloop:reboot:xid-79: the GPU at PCI 0000:1b:00 had Xid 79')
    assert result.record['state'] == 'reboot-asked' and result.record['asked_at'] == T0 and result.record['reboots'] == [T0]
    assert events(result) == ['detected', 'reboot_asked']
    assert result.events[0]['action'] == 'reboot' and result.events[1]['jobs'] == [17, 18]


def test_a_node_down_but_not_drained_is_drained_before_its_reboot_so_slurm_keeps_it_drained_after():
    # scontrol reboot ASAP on a node without DRAIN sets nextstate UNDRAIN (slurmctld proc_req.c): the drain would go at boot
    result = loop.step(record(), node('DOWN', [], XID79), POLICY, T0)
    reason = loop.loop_reason('gpuloop', 'reboot', 'xid-79', XID79.split(': ', 1)[1])
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reason],
                              ['scontrol', 'reboot', 'ASAP', 'reason=' + reason, 'gpu-01']]


def test_without_requeue_the_reboot_waits_for_the_jobs():
    policy = loop.load_policy({'requeue': False})
    result = loop.step(record(), node('MIXED', ['DRAIN'], XID79, jobs=[17]), policy, T0)
    assert [a[1] for a in result.actions] == ['reboot']


XID48 = 'gpuhc:prolog:xid: GPU 2 (00000000:52:00.0) had Xid 48 since boot (last: 48, DBE); reset the GPU'
ECC = 'gpuhc:periodic:ecc: GPU 1 (00000000:2A:00.0) has 4 uncorrected ECC errors since the driver loaded (at most 0 allowed)'
RESET_OK = {'ok': True, 'rc': 0, 'gpus': ['2'], 'mig': 'none', 'text': ''}
RESET_LOST = {'ok': False, 'rc': 15, 'gpus': ['2'], 'mig': 'none', 'text': 'Unable to determine the device handle for GPU 00000000:52:00.0: GPU is lost'}
RESET_IN_USE = {'ok': False, 'rc': 255, 'gpus': ['2'], 'mig': 'none', 'text': 'The following GPUs could not be reset: In use by another client'}


def reset_tag(condition='xid-48', detail=XID48.split(': ', 1)[1]):
    return loop.loop_reason('gpuloop', 'reset', condition, detail)


@pytest.mark.parametrize('detail, gpus', [
    ('GPU 2 (00000000:52:00.0) had Xid 48 since boot', ['2']),
    ('GPU 3 (00000000:61:00.0) has 2 uncorrected ECC errors; GPU 1 (00000000:2A:00.0) has 1', ['1', '3']),
    ('the GPU at PCI 0000:1B:00.0 had Xid 95 since boot', ['0000:1b:00.0']),
    ('NVLinks inactive on this node', []),
    ('', []),
])
def test_the_gpus_to_reset_are_those_the_condition_names_else_every_gpu(detail, gpus):
    assert loop.reset_gpus(detail) == gpus


def test_reset_gpu_on_a_busy_node_requeues_its_jobs_and_drains_it_with_the_reset_tag():
    result = loop.step(record(), node('MIXED', ['DRAIN'], XID48, jobs=[17]), POLICY, T0)
    assert result.actions == [['scontrol', 'requeue', '17'],
                              ['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reset_tag()]]
    assert reset_tag().startswith('gpuloop:reset:xid-48: GPU 2 (00000000:52:00.0) had Xid 48')
    assert result.record['state'] == 'reset-asked' and result.record['gpus'] == ['2'] and result.record['reboots'] == []
    assert events(result) == ['detected', 'reset_asked'] and result.events[0]['action'] == 'reset-gpu'
    assert result.events[1]['gpus'] == ['2'] and result.events[1]['jobs'] == [17]
    assert not result.deep and result.reset is None  # not idle yet: no reset
    idle = loop.step(record(), node('IDLE', ['DRAIN'], ECC), POLICY, T0)
    assert events(idle) == ['detected', 'reset_asked'] and idle.record['state'] == 'reset-asked'
    assert idle.deep and idle.reset == ['1']  # idle already: the reset runs in this pass


@pytest.mark.parametrize('state, flags, jobs, idle', [
    ('MIXED', ['DRAIN'], [17], False),         # DRAINING: its job still runs
    ('ALLOCATED', ['DRAIN'], [], False),
    ('IDLE', ['DRAIN'], [17], False),          # squeue still lists a job
    ('IDLE', ['DRAIN', 'COMPLETING'], [], False),
    ('DOWN', ['DRAIN', 'NOT_RESPONDING'], [], False),
    ('IDLE', ['DRAIN'], [], True),             # DRAINED: the reset runs
])
def test_the_reset_runs_only_on_an_idle_node(state, flags, jobs, idle):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.step(rec, node(state, flags, reset_tag(), jobs=jobs), POLICY, T0 + 30)
    assert result.record['state'] == 'reset-asked' and result.actions == [] and result.events == []
    assert (result.deep, result.reset) == ((True, ['2']) if idle else (False, None))


def test_a_reset_and_a_passing_deep_run_return_the_node_without_a_reboot():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), PASS, POLICY, T0 + 60, resumed=True, reset=RESET_OK)
    assert events(result) == ['reset_done', 'deep_passed', 'returned'] and result.record['state'] == 'ok'
    assert result.events[0]['from'] == 'reset-asked' and result.events[0]['gpus'] == ['2']
    assert result.actions == [] and result.record['reboots'] == [] and result.record['resets'] == [T0 + 60]
    assert result.record['via'] is None


@pytest.mark.parametrize('reset', [RESET_LOST, RESET_IN_USE])
def test_a_failed_reset_a_lost_gpu_or_one_in_use_escalates_to_a_reboot_counted_in_the_window(reset):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), None, POLICY, T0 + 60, resumed=True, reset=reset)
    assert events(result) == ['reset_failed', 'reboot_asked'] and result.record['state'] == 'reboot-asked'
    assert result.events[0]['to'] == 'reboot-asked' and result.events[0]['rc'] == reset['rc']
    reason = result.actions[-1][3]
    assert reason.startswith('reason=gpuloop:reboot:xid-48: the GPU reset failed (rc=%d): ' % reset['rc'])
    # resumed into the reservation: drained again first, so that the reboot keeps the drain
    assert result.actions[0] == ['scontrol', 'update', 'nodename=gpu-01', 'state=drain', reason]
    assert result.actions[1][:3] == ['scontrol', 'reboot', 'ASAP']
    assert result.record['reboots'] == [T0 + 60] and result.record['via'] == 'reboot'


def test_a_failed_reset_with_the_reboot_window_full_goes_to_service():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag(), reboots=[T0 - 50, T0 - 40])
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), None, POLICY, T0 + 60, resumed=True, reset=RESET_LOST)
    assert events(result) == ['reset_failed', 'service'] and result.events[0]['to'] == 'service'
    assert '2 reboots within 86400s, the last for the GPU reset failed (rc=15)' in result.actions[0][4]


def test_a_deep_run_failing_after_the_reset_escalates_to_a_reboot_and_failing_after_that_to_service():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), FAIL, POLICY, T0 + 60, resumed=True, reset=RESET_OK)
    assert events(result) == ['reset_done', 'deep_failed', 'reboot_asked'] and result.record['state'] == 'reboot-asked'
    assert 'the deep tier failed after the GPU reset: gpuhc:deep:dcgm' in result.actions[-1][3]
    # the reboot path: back, then a second failure -> service
    back = loop.step(result.record, node('IDLE', ['DRAIN'], result.actions[-1][3][len('reason='):], boot=T0 + 200), POLICY, T0 + 230)
    assert back.record['state'] == 'back' and back.deep and back.reset is None
    again = loop.settle_deep(back.record, node('IDLE', ['DRAIN'], 'x'), FAIL, POLICY, T0 + 300, resumed=True)
    assert events(again) == ['deep_failed', 'service'] and 'failed after the reboot' in again.actions[0][4]


def test_a_reset_done_without_a_deep_verdict_runs_the_deep_tier_again_next_pass_without_resetting_again():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), None, POLICY, T0 + 60, resumed=True, reset=RESET_OK)
    assert events(result) == ['reset_done', 'deep_failed'] and result.record['state'] == 'back'
    nxt = loop.step(result.record, node('IDLE', ['DRAIN'], reset_tag()), POLICY, T0 + 90)
    assert nxt.record['state'] == 'back' and nxt.deep and nxt.reset is None


def test_a_job_that_never_got_to_the_reset_leaves_the_node_waiting_for_it():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), None, POLICY, T0 + 60, resumed=True, reset=None)
    assert result.record['state'] == 'reset-asked' and events(result) == ['deep_failed'] and result.actions == []


@pytest.mark.parametrize('state,jobs,why', [
    ('MIXED', [17], 'the node never became idle'),
    ('IDLE', [], 'no verdict from its job'),
])
def test_a_reset_not_done_within_the_settle_time_becomes_a_reboot_counted_in_the_window(state, jobs, why):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag(), since=T0)
    waiting = loop.step(rec, node(state, ['DRAIN'], reset_tag(), jobs=jobs), POLICY, T0 + 3600)
    assert waiting.record['state'] == 'reset-asked'
    result = loop.step(rec, node(state, ['DRAIN'], reset_tag(), jobs=jobs), POLICY, T0 + 3601)
    assert result.record['state'] == 'reboot-asked' and result.record['reboots'] == [T0 + 3601]
    assert result.actions[-1][:3] == ['scontrol', 'reboot', 'ASAP']
    assert 'the GPU reset not done 3601s after it was asked (%s)' % why in result.actions[-1][3]
    assert not result.deep


def test_a_node_back_without_a_deep_verdict_within_the_settle_time_goes_to_service():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0 + 100)
    early = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), POLICY, T0 + 3700)
    assert early.record['state'] == 'back' and early.deep
    result = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), POLICY, T0 + 3701)
    assert result.record['state'] == 'service' and not result.deep
    assert 'no deep-tier verdict 3601s after the node came back' in result.actions[0][4]
    shorter = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), loop.load_policy({'settle_timeout_s': 600}), T0 + 701)
    assert shorter.record['state'] == 'service'


def test_a_settle_time_below_a_minute_is_refused():
    with pytest.raises(InputError, match='settle_timeout_s'):
        loop.load_policy({'settle_timeout_s': 59})


def test_a_crash_between_the_drain_and_the_reset_is_derived_again_from_the_tag():
    tag = reset_tag('ecc', ECC.split(': ', 1)[1])
    result = loop.step(None, node('IDLE', ['DRAIN'], tag, reason_time=T0 - 10), POLICY, T0)
    assert result.record['state'] == 'reset-asked' and result.record['gpus'] == ['1'] and result.record['condition'] == 'ecc'
    assert result.record['asked_at'] == T0 - 10 and result.actions == []
    assert result.deep and result.reset == ['1']


def test_the_health_check_draining_again_around_the_reset_escalates_to_a_reboot():
    rec = record('back', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.step(rec, node('IDLE', ['DRAIN'], XID48), POLICY, T0 + 100)
    assert result.record['state'] == 'reboot-asked' and events(result) == ['reboot_asked']
    assert 'still failing around the GPU reset: gpuhc:prolog:xid' in result.actions[-1][3]


def test_a_second_reset_gpu_condition_within_the_window_goes_to_a_reboot_not_another_reset():
    rec = record('ok', resets=[T0 - 3600])
    result = loop.step(rec, node('IDLE', ['DRAIN'], ECC), POLICY, T0)
    assert events(result) == ['detected', 'reboot_asked'] and 'again after a GPU reset' in result.actions[-1][3]
    later = loop.step(record('ok', resets=[T0 - 86401]), node('IDLE', ['DRAIN'], ECC), POLICY, T0)
    assert events(later) == ['detected', 'reset_asked']


def test_without_the_deep_tier_reset_gpu_is_carried_out_as_a_reboot():
    result = loop.step(record(), node('IDLE', ['DRAIN'], XID48), loop.load_policy({'deep': False}), T0)
    assert result.actions[-1][:3] == ['scontrol', 'reboot', 'ASAP'] and 'reason=gpuloop:reboot:xid-48: GPU 2' in result.actions[-1][3]


@pytest.mark.parametrize('state', ['reset-asked', 'back'])
def test_an_admin_drain_over_a_reset_is_never_touched(state):
    rec = record(state, asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.step(rec, node('IDLE', ['DRAIN'], ADMIN), POLICY, T0 + 100)
    assert result.actions == [] and result.events == [] and not result.deep and result.reset is None


def test_a_node_resumed_by_hand_while_it_waits_for_its_reset_is_returned():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.step(rec, node('IDLE', [], reset_tag()), POLICY, T0 + 100)
    assert result.record['state'] == 'ok' and events(result) == ['returned'] and result.events[0]['by'] == 'hand'


def test_a_drain_condition_stays_with_the_health_check_until_its_resume():
    result = loop.step(record(), node('IDLE', ['DRAIN'], PERSIST), POLICY, T0)
    assert result.actions == [] and result.record['state'] == 'drained' and events(result) == ['detected', 'drained']
    again = loop.step(result.record, node('IDLE', ['DRAIN'], PERSIST), POLICY, T0 + 60)
    assert again.actions == [] and again.events == [] and again.record['state'] == 'drained'
    back = loop.step(again.record, node('IDLE'), POLICY, T0 + 600)
    assert back.record['state'] == 'ok' and events(back) == ['returned'] and back.events[0]['by'] == 'the health check'
    assert back.record['time_in']['drained'] == 600


def test_a_service_condition_drains_with_the_service_tag_and_a_record_of_what_was_seen():
    result = loop.step(record(), node('IDLE', ['DRAIN'], REMAP), POLICY, T0)
    assert result.record['state'] == 'service' and events(result) == ['detected', 'service']
    drain, comment = result.actions
    assert drain[:4] == ['scontrol', 'update', 'nodename=gpu-01', 'state=drain']
    assert drain[4].startswith('reason=gpuloop:service:row-remap-failure: GPU 5')
    assert comment[3].startswith('comment=gpuloop:service: periodic:gpu-error: GPU 5')
    later = loop.step(result.record, node('IDLE', ['DRAIN'], drain[4][7:]), POLICY, T0 + 3600)
    assert later.actions == [] and later.record['state'] == 'service'


def test_a_node_repaired_and_resumed_by_hand_from_service_starts_its_reboot_count_afresh():
    rec = record('service', reboots=[T0 - 60], condition='xid-79', hits={'thermal': [T0 - 30]})
    result = loop.step(rec, node('IDLE'), POLICY, T0)
    assert result.record['state'] == 'ok' and events(result) == ['returned'] and result.events[0]['by'] == 'hand'
    assert result.record['reboots'] == [] and result.record['hits'] == {}
    kept = loop.step(record('back', reboots=[T0 - 60], asked_at=T0 - 60), node('IDLE'), POLICY, T0)
    assert kept.record['state'] == 'ok' and kept.record['reboots'] == [T0 - 60]


def test_a_site_override_changes_the_action():
    policy = loop.load_policy({'actions': {'persistence': 'reboot'}})
    result = loop.step(record(), node('IDLE', ['DRAIN'], PERSIST), policy, T0)
    assert result.record['state'] == 'reboot-asked'


# ------------------------------------------------------------------ reboot-asked -> back -> returned / service

@pytest.mark.parametrize('state, flags, boot', [
    ('DOWN', ['DRAIN', 'REBOOT_ISSUED'], T0 - 3600),
    ('IDLE', ['DRAIN', 'REBOOT_REQUESTED'], T0 - 3600),  # ASAP: waiting for the jobs to end
    ('DOWN', ['DRAIN', 'NOT_RESPONDING'], T0 + 30),
    ('IDLE', ['DRAIN'], T0 - 3600),  # booted before the request: not the reboot we asked for
])
def test_a_node_still_rebooting_is_waited_for(state, flags, boot):
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.step(rec, node(state, flags, reboot_tag(), boot=boot), POLICY, T0 + 120)
    assert (result.record['state'], result.actions, result.events, result.deep) == ('reboot-asked', [], [], False)


def test_a_node_that_booted_after_the_request_is_back_and_wants_the_deep_tier():
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79', since=T0)
    result = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), POLICY, T0 + 120)
    assert result.record['state'] == 'back' and result.deep and result.actions == [] and events(result) == ['back']
    assert result.record['time_in']['reboot-asked'] == 120


def test_a_node_not_back_in_time_goes_to_service():
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.step(rec, node('DOWN', ['DRAIN', 'NOT_RESPONDING'], reboot_tag()), POLICY, T0 + 1801)
    assert result.record['state'] == 'service' and 'not back 1800s after the reboot was asked' in result.actions[0][4]


def test_slurm_giving_up_on_the_reboot_sends_it_to_service():
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.step(rec, node('DOWN', ['DRAIN'], 'reboot timed out'), POLICY, T0 + 1801)
    assert result.record['state'] == 'service'
    early = loop.step(rec, node('DOWN', ['DRAIN'], 'reboot timed out'), POLICY, T0 + 60)
    assert early.record['state'] == 'reboot-asked' and early.actions == []


def test_without_the_deep_tier_a_node_back_is_resumed():
    policy = loop.load_policy({'deep': False})
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), policy, T0 + 120)
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=resume']]
    assert result.record['state'] == 'ok' and events(result) == ['back', 'returned'] and not result.deep


def test_a_node_the_health_check_drains_again_after_its_reboot_goes_to_service():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79')
    again = 'gpuhc:prolog:gpu-count: NVML sees 7 GPUs, expected 8'
    result = loop.step(rec, node('IDLE', ['DRAIN'], again, boot=T0 + 90), POLICY, T0 + 200)
    assert result.record['state'] == 'service'
    assert 'still failing after the reboot: gpuhc:prolog:gpu-count' in result.actions[0][4]


PASS = {'status': 0, 'passes': 1, 'results': [{'check': 'dcgm', 'status': 'pass'}], 'reason': None}
FAIL = {'status': 1, 'passes': 0, 'results': [{'check': 'dcgm', 'status': 'fail'}], 'reason': 'gpuhc:deep:dcgm: GPU 0 memory'}


def test_a_passing_deep_run_returns_the_node():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', seen=['periodic:xid: Xid 79'])
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag(), comment='gpuloop:quarantine:x: 1'), PASS, POLICY, T0 + 400)
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=resume'],
                              ['scontrol', 'update', 'nodename=gpu-01', 'comment=']]
    assert events(result) == ['deep_passed', 'returned'] and result.record['state'] == 'ok'
    assert result.record['reboots'] == [T0]  # the window still counts it
    # back in service, the record forgets the episode: its condition, reason and what the checks saw
    assert (result.record['condition'], result.record['reason'], result.record['seen']) == (None, None, [])


def test_a_failing_deep_run_after_the_reboot_sends_the_node_to_service():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', seen=['periodic:xid: Xid 79'])
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), FAIL, POLICY, T0 + 400)
    assert events(result) == ['deep_failed', 'service'] and result.record['state'] == 'service'
    assert result.actions[0][4].startswith('reason=gpuloop:service:xid-79: the deep tier failed after the reboot: gpuhc:deep:dcgm')
    assert 'periodic:xid: Xid 79; the deep tier failed' in result.actions[1][3]


@pytest.mark.parametrize('report', [None, {'status': 2, 'passes': 0, 'results': []}])
def test_a_deep_run_without_a_verdict_leaves_the_node_back_for_the_next_pass(report):
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), report, POLICY, T0 + 400)
    assert result.record['state'] == 'back' and result.actions == [] and events(result) == ['deep_failed']
    why = 'no verdict' if report is None else 'the deep tier could not judge everything'
    assert result.events == [{'time': T0 + 400, 'node': 'gpu-01', 'event': 'deep_failed', 'from': 'back', 'to': 'back',
                              'condition': 'xid-79', 'verdict': 'none', 'why': why}]
    assert result.record['deep_runs'] == 1
    # each run counts: the next pass's run is the second
    again = loop.settle_deep(result.record, node('IDLE', ['DRAIN'], reboot_tag()), report, POLICY, T0 + 800)
    assert again.record['deep_runs'] == 2


def test_a_pass_cut_short_during_the_deep_run_runs_it_again_and_never_returns_the_node_without_it():
    # the loop resumed the node into the reservation and stopped (killed) before the verdict
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', deep_started=True)
    result = loop.step(rec, node('IDLE'), POLICY, T0 + 900)
    assert result.record['state'] == 'back' and result.deep and result.actions == [] and result.events == []
    settled = loop.settle_deep(result.record, node('IDLE'), PASS, POLICY, T0 + 1000, resumed=True)
    assert settled.record['state'] == 'ok' and settled.record['deep_started'] is False and settled.actions == []
    # without the mark (a person resumed it) the node is simply back in service
    assert loop.step(dict(rec, deep_started=False), node('IDLE'), POLICY, T0 + 900).record['state'] == 'ok'


def test_k_deep_passes_are_needed_before_the_return():
    policy = loop.load_policy({'deep_passes': 2})
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79')
    first = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), PASS, policy, T0 + 400)
    assert first.record['state'] == 'back' and first.actions == []
    assert first.events == [{'time': T0 + 400, 'node': 'gpu-01', 'event': 'deep_passed', 'from': 'back', 'to': 'back',
                             'condition': 'xid-79', 'passes': 1, 'needed': 2}]
    second = loop.settle_deep(first.record, node('IDLE', ['DRAIN'], reboot_tag()), dict(PASS, passes=2), policy, T0 + 800)
    assert second.record['state'] == 'ok' and second.actions[0][3] == 'state=resume'


def test_settle_deep_refuses_a_node_that_is_not_back():
    with pytest.raises(ValueError, match='settles only a node that is back'):
        loop.settle_deep(record('ok'), node(), PASS, POLICY, T0)


# ------------------------------------------------------------------ windows

@pytest.mark.parametrize('reboots, limit, expected', [
    ([], 1, 'reboot-asked'),
    ([T0 - 3600], 1, 'service'),                   # a second fault within the window
    ([T0 - 86400 - 1], 1, 'reboot-asked'),         # the earlier one is out of the window
    ([T0 - 7200, T0 - 3600], 2, 'service'),
    ([T0 - 90000, T0 - 3600], 2, 'reboot-asked'),
    ([T0 - 3600], 0, 'service'),                   # 0: never reboot
    ([], 0, 'service'),
])
def test_more_reboots_than_allowed_within_the_window_go_to_service(reboots, limit, expected):
    policy = loop.load_policy({'reboot_max': limit})
    result = loop.step(record(reboots=list(reboots)), node('IDLE', ['DRAIN'], XID79), policy, T0)
    assert result.record['state'] == expected
    if expected == 'service':
        assert result.actions[0][4].startswith('reason=gpuloop:service:xid-79: %d reboots within 86400s' % len(reboots))


def hit(epoch, condition='thermal'):
    return loop.hit_comment('gpuhc', condition, epoch, 'GPU 0 clocks are held down by hw_slowdown')


def test_comment_hits_quarantine_then_promote_after_m_within_the_window():
    policy = loop.load_policy({'promote_after': 3, 'promote_window_s': 3600})
    first = loop.step(record(), node(comment=hit(T0)), policy, T0 + 5)
    assert first.record['state'] == 'quarantine' and events(first) == ['detected', 'quarantined']
    assert first.actions == [['scontrol', 'update', 'nodename=gpu-01', 'comment=gpuloop:quarantine:thermal: 1 of 3 hits in 3600s']]
    # the same hit seen again (the comment was not replaced yet) is not counted twice
    same = loop.step(first.record, node(comment=hit(T0)), policy, T0 + 65)
    assert same.actions == [] and same.events == [] and same.record['hits']['thermal'] == [T0]
    second = loop.step(same.record, node(comment=hit(T0 + 300)), policy, T0 + 305)
    assert second.record['state'] == 'quarantine' and second.actions[0][3].endswith('2 of 3 hits in 3600s')
    third = loop.step(second.record, node(comment=hit(T0 + 600)), policy, T0 + 605)
    assert third.record['state'] == 'drained' and events(third) == ['detected', 'promoted']
    assert third.actions[0][3:] == ['state=drain', 'reason=gpuloop:drain:thermal: 3 hits within 3600s, the last: GPU 0 clocks are '
                                    'held down by hw_slowdown']
    # promoted: a person returns it; the loop leaves its own drain alone
    later = loop.step(third.record, node('IDLE', ['DRAIN'], third.actions[0][4][7:], comment=hit(T0 + 900)), policy, T0 + 905)
    assert later.actions == [] and later.record['state'] == 'drained'
    resumed = loop.step(later.record, node('IDLE', comment=hit(T0 + 900)), policy, T0 + 1000)
    # a person resumed it: the count starts afresh, the hit that came meanwhile is the first
    assert events(resumed) == ['returned', 'detected', 'quarantined'] and resumed.events[0]['by'] == 'hand'
    assert resumed.record['state'] == 'quarantine' and resumed.record['hits'] == {'thermal': [T0 + 900]}


def test_hits_outside_the_window_do_not_promote_and_the_quarantine_ends():
    policy = loop.load_policy({'promote_after': 2, 'promote_window_s': 600})
    first = loop.step(record(), node(comment=hit(T0)), policy, T0)
    second = loop.step(first.record, node(comment=hit(T0 + 700)), policy, T0 + 700)
    assert second.record['state'] == 'quarantine' and second.record['hits']['thermal'] == [T0 + 700]
    quiet = loop.step(second.record, node(comment=second.actions[0][3][8:]), policy, T0 + 1400)
    assert quiet.record['state'] == 'ok' and events(quiet) == ['returned']
    assert quiet.actions == [['scontrol', 'update', 'nodename=gpu-01', 'comment=']]


# ------------------------------------------------------------------ admin drains

@pytest.mark.parametrize('state', loop.STATES)
@pytest.mark.parametrize('slurm', [
    node('IDLE', ['DRAIN'], ADMIN, comment=hit(T0)),
    node('DOWN', [], 'cabling, back Monday'),
    node('MIXED', ['DRAIN'], 'gpuhc is wrong here, ticket 9 ' + XID79, jobs=[5]),  # our words, not at the start
])
def test_an_admin_drain_is_never_touched(state, slurm):
    rec = record(state, asked_at=T0 - 60, reboots=[T0 - 60], condition='xid-79')
    result = loop.step(rec, slurm, POLICY, T0)
    assert result.actions == [] and result.events == [] and not result.deep
    assert result.record['state'] == ('ok' if state in ('deep-passed', 'returned') else state)


# ------------------------------------------------------------------ a crash half-way

@pytest.mark.parametrize('reason, expected', [
    (loop.loop_reason('gpuloop', 'reboot', 'xid-79', 'x'), 'reboot-asked'),
    (loop.loop_reason('gpuloop', 'service', 'xid-79', 'x'), 'service'),
    (loop.loop_reason('gpuloop', 'drain', 'thermal', 'x'), 'drained'),
])
def test_a_lost_record_is_derived_again_from_the_loop_tag(reason, expected):
    result = loop.step(None, node('IDLE', ['DRAIN'], reason, reason_time=T0 - 300, boot=T0 - 3600), POLICY, T0)
    assert result.record['state'] == expected and result.actions == []


def test_a_lost_record_of_a_node_that_rebooted_is_back():
    reason = loop.loop_reason('gpuloop', 'reboot', 'xid-79', 'x')
    result = loop.step({}, node('IDLE', ['DRAIN'], reason, reason_time=T0 - 300, boot=T0 - 200), POLICY, T0)
    assert result.record['state'] == 'back' and result.deep and result.record['asked_at'] == T0 - 300


def test_a_crash_before_the_reboot_command_ran_asks_again():
    # the record says reboot-asked, Slurm still shows the health check's drain: the command never reached Slurm
    rec = record('reboot-asked', asked_at=T0 - 60, reboots=[T0 - 60], condition='xid-79')
    result = loop.step(rec, node('IDLE', ['DRAIN'], XID79), POLICY, T0)
    assert events(result) == ['detected', 'reboot_asked'] and result.record['state'] == 'reboot-asked'
    assert result.actions[-1][1] == 'reboot'


# every record state against every view Slurm can give: a node the loop drained (its tag) is never left 'ok'
# (nothing would return it), a node nobody drained is never left in a drained state of the loop
VIEWS = {
    'free': node('IDLE'),
    'busy': node('MIXED', jobs=[3]),
    'health-drain': node('IDLE', ['DRAIN'], XID79),
    'health-drain-busy': node('MIXED', ['DRAIN'], XID79, jobs=[3]),
    'loop-reboot': node('IDLE', ['DRAIN'], reboot_tag(), reason_time=T0 - 5000),
    'loop-reboot-booted': node('IDLE', ['DRAIN'], reboot_tag(), reason_time=T0 - 5000, boot=T0 - 10),
    'loop-rebooting': node('DOWN', ['DRAIN', 'REBOOT_ISSUED'], reboot_tag(), reason_time=T0 - 5000),
    'loop-service': node('IDLE', ['DRAIN'], loop.loop_reason('gpuloop', 'service', 'xid-79', 'x')),
    'loop-drain': node('IDLE', ['DRAIN'], loop.loop_reason('gpuloop', 'drain', 'thermal', 'x')),
    'hit': node(comment=hit(T0)),
}


@pytest.mark.parametrize('view', sorted(VIEWS))
@pytest.mark.parametrize('state', loop.STATES + (None,))
def test_no_node_is_lost_in_a_state_nothing_returns_it_from(state, view):
    rec = None if state is None else record(state, asked_at=T0 - 5000, reboots=[T0 - 5000], condition='xid-79')
    slurm = VIEWS[view]
    result = loop.step(rec, slurm, POLICY, T0)
    final = result.record['state']
    assert final in loop.STATES and final not in ('returned', 'deep-passed')
    ours = view.startswith('loop-')
    if ours or result.actions:
        # the loop drained it (or is about to): it tracks the node in a state it acts on again
        assert final in ('reboot-asked', 'back', 'service', 'drained', 'quarantine'), (final, result.actions)
    if not ours and not slurm['reason'] and not result.actions:
        assert final in ('ok', 'quarantine'), final
    if final == 'back' and not loop.rebooting(slurm):
        assert result.deep


# ------------------------------------------------------------------ Slurm's text, tags, settings

def test_parse_nodes_reads_the_reason_before_the_comment_and_the_times():
    text = ('NodeName=gpu-01 Arch=x86_64 CoresPerSocket=8 State=IDLE+DRAIN ThreadsPerCore=1 BootTime=2026-12-05T16:00:00 '
            'SlurmdStartTime=2026-12-05T16:00:01 Reason=gpuloop:reboot:xid-79: the GPU fell [root@2026-12-05T16:10:00] '
            'Comment=gpuhc-hit:thermal@1796486400: hot GPU Extra=x\n'
            'NodeName=gpu-02 State=MIXED BootTime=None Comment=(null)\n'
            'NodeName=gpu-03 State=DOWN*+NOT_RESPONDING BootTime=2026-12-05T15:00:00 Reason=Not responding [slurm@2026-12-05T16:11:00]\n')
    one, two, three = loop.parse_nodes(text)
    assert one['reason'] == 'gpuloop:reboot:xid-79: the GPU fell' and one['comment'] == 'gpuhc-hit:thermal@1796486400: hot GPU'
    assert one['reason_time'] - one['boot_time'] == 600 and one['flags'] == ['DRAIN']
    assert (two['reason'], two['comment'], two['boot_time'], two['state']) == ('', '', None, 'MIXED')
    assert (three['state'], three['flags'], three['reason']) == ('DOWN', ['NOT_RESPONDING'], 'Not responding')
    with pytest.raises(ValueError, match='has no State='):
        loop.parse_nodes('NodeName=x Arch=y')


def test_the_loop_tag_is_one_line_without_quotes_and_reads_back():
    text = loop.loop_reason('gpuloop', 'reboot', 'xid-79', 'a "quoted"\nline ' + 'x' * 300)
    assert len(text) == 200 and '"' not in text and '\n' not in text and text.endswith('...')
    assert loop.parse_loop_reason(text) == {'step': 'reboot', 'condition': 'xid-79', 'detail': text[len('gpuloop:reboot:xid-79: '):]}
    assert loop.parse_loop_reason('gpuhc:periodic:xid: x') is None and loop.parse_loop_reason(ADMIN) is None
    assert loop.parse_hit(loop.hit_comment('gpuhc', 'ib-errors', 12.7, 'x')) == ('ib-errors', 12, 'x')
    with pytest.raises(ValueError):
        loop.loop_reason('gpuloop', 'nap', 'x', 'y')


@pytest.mark.parametrize('data, fragments', [
    ({'reboot_max': -1}, ['reboot_max is -1']),
    ({'promote_after': 'three'}, ['promote_after is', 'three']),
    ({'tag': 'gpu loop'}, ['tag is', 'a word']),
    ({'tag': 'gpuhc'}, ['tag is', 'other than the health check prefix']),
    ({'actions': {'thermal': 'panic'}}, ['actions["thermal"] is', 'none, comment, drain, reset-gpu, reboot, service']),
    ({'windows': 1}, ['unknown key(s) windows', 'valid keys:', 'reboot_window_s']),
    ({'requeue': 'maybe'}, ['requeue is']),
])
def test_bad_loop_settings_are_named(data, fragments):
    with pytest.raises(InputError) as info:
        loop.load_policy(data)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


# ------------------------------------------------------------------ each transition in full: its events, actions and record

def test_a_drain_condition_detected_shows_the_condition_its_action_and_the_health_checks_reason():
    result = loop.step(record(), node('IDLE', ['DRAIN'], PERSIST), POLICY, T0)
    assert result.events == [
        {'time': T0, 'node': 'gpu-01', 'event': 'detected', 'from': 'ok', 'to': 'ok', 'condition': 'persistence', 'action': 'drain',
         'reason': PERSIST},
        {'time': T0, 'node': 'gpu-01', 'event': 'drained', 'from': 'ok', 'to': 'drained', 'condition': 'persistence', 'action': 'drain',
         'reason': PERSIST},
    ]
    assert result.actions == [] and (result.deep, result.reset) == (False, None)
    assert result.record == dict(loop.new_record(T0 - 100), state='drained', since=T0, condition='persistence', owner='health', reason=PERSIST,
                                 seen=['periodic:persistence: GPU 4 (00000000:87:00.0) persistence mode is off'], time_in={'ok': 100})


def test_a_reboot_asked_shows_the_loops_reason_and_the_jobs_requeued():
    result = loop.step(record(), node('MIXED', ['DRAIN'], XID79, jobs=[17, 18]), POLICY, T0)
    reason = 'gpuloop:reboot:xid-79: ' + XID79.split(': ', 1)[1]
    assert result.events[1] == {'time': T0, 'node': 'gpu-01', 'event': 'reboot_asked', 'from': 'ok', 'to': 'reboot-asked', 'condition': 'xid-79',
                                'reason': reason, 'jobs': [17, 18]}
    assert result.record == dict(loop.new_record(T0 - 100), state='reboot-asked', since=T0, condition='xid-79', reason=reason, asked_at=T0,
                                 reboots=[T0], via='reboot', seen=['periodic:xid: ' + XID79.split(': ', 1)[1]], time_in={'ok': 100})


def test_a_reset_asked_on_an_idle_node_shows_the_gpus_and_runs_the_reset_at_once():
    result = loop.step(record(deep_runs=3), node('IDLE', ['DRAIN'], XID48), POLICY, T0)
    assert result.events == [
        {'time': T0, 'node': 'gpu-01', 'event': 'detected', 'from': 'ok', 'to': 'ok', 'condition': 'xid-48', 'action': 'reset-gpu', 'reason': XID48},
        {'time': T0, 'node': 'gpu-01', 'event': 'reset_asked', 'from': 'ok', 'to': 'reset-asked', 'condition': 'xid-48', 'reason': reset_tag(),
         'gpus': ['2'], 'jobs': []},
    ]
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reset_tag()]]
    assert (result.deep, result.reset) == (True, ['2'])
    assert result.record == dict(loop.new_record(T0 - 100), state='reset-asked', since=T0, condition='xid-48', reason=reset_tag(), asked_at=T0,
                                 gpus=['2'], via='reset', seen=['prolog:xid: ' + XID48.split(': ', 1)[1]], time_in={'ok': 100})


def test_a_service_condition_shows_what_was_seen_in_the_event_and_the_comment():
    policy = loop.load_policy({'actions': {'persistence': 'service'}})
    result = loop.step(record(seen=['earlier: x']), node('IDLE', ['DRAIN'], PERSIST), policy, T0)
    reason = 'gpuloop:service:persistence: ' + PERSIST.split(': ', 1)[1]
    seen = ['earlier: x', 'periodic:persistence: ' + PERSIST.split(': ', 1)[1], PERSIST.split(': ', 1)[1]]
    assert result.events[1] == {'time': T0, 'node': 'gpu-01', 'event': 'service', 'from': 'ok', 'to': 'service', 'condition': 'persistence',
                                'reason': reason, 'seen': seen}
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reason],
                              ['scontrol', 'update', 'nodename=gpu-01', 'comment=gpuloop:service: ' + '; '.join(seen)]]
    assert result.record['reason'] == reason and result.record['seen'] == seen


def test_the_service_comment_is_cut_at_400_characters():
    policy = loop.load_policy({'actions': {'persistence': 'service'}})
    result = loop.step(record(seen=['x' * 390]), node('IDLE', ['DRAIN'], PERSIST), policy, T0)
    assert result.actions[1][3] == ('comment=gpuloop:service: ' + 'x' * 390)[:len('comment=') + 400]


def test_back_from_the_reboot_shows_the_boot_time_and_without_the_deep_tier_returns_at_once():
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    back = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 100), POLICY, T0 + 200)
    event = {'time': T0 + 200, 'node': 'gpu-01', 'event': 'back', 'from': 'reboot-asked', 'to': 'back', 'condition': 'xid-79', 'boot_time': T0 + 100}
    assert back.events == [event] and back.actions == [] and (back.deep, back.reset) == (True, None)
    assert back.record['time_in'] == {'reboot-asked': 200} and back.record['since'] == T0 + 200
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    off = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 100, comment='gpuloop:service: x'), loop.load_policy({'deep': False}), T0 + 200)
    assert off.events == [event, {'time': T0 + 200, 'node': 'gpu-01', 'event': 'returned', 'from': 'back', 'to': 'returned', 'condition': 'xid-79',
                                  'why': 'the deep tier is off'}]
    assert off.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=resume'], ['scontrol', 'update', 'nodename=gpu-01', 'comment=']]
    assert not off.deep
    assert off.record == dict(rec, state='ok', since=T0 + 200, condition=None, reason=None, seen=[], owner=None, via=None,
                              time_in={'reboot-asked': 200, 'back': 0, 'returned': 0})


@pytest.mark.parametrize('comment, cleared', [('gpuloop:quarantine:x: 1', True), ('gpuloopy: x', False), ('gpuhc-hit:x@1: y', False), ('', False)])
def test_the_return_clears_only_a_comment_of_the_loop(comment, cleared):
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag(), comment=comment), PASS, POLICY, T0 + 400)
    assert result.actions[1:] == ([['scontrol', 'update', 'nodename=gpu-01', 'comment=']] if cleared else [])


def test_a_passing_deep_run_shows_its_passes_and_why_the_node_returned():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', since=T0 + 100)
    del rec['deep_runs']  # a record of an older loop: the count starts at 0
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), dict(PASS, passes=3), POLICY, T0 + 400)
    assert result.events == [
        {'time': T0 + 400, 'node': 'gpu-01', 'event': 'deep_passed', 'from': 'back', 'to': 'deep-passed', 'condition': 'xid-79', 'passes': 3},
        {'time': T0 + 400, 'node': 'gpu-01', 'event': 'returned', 'from': 'deep-passed', 'to': 'returned', 'condition': 'xid-79',
         'why': 'the deep tier passed'},
    ]
    assert result.record['deep_runs'] == 1 and result.record['deep_started'] is False
    assert result.record['time_in'] == {'back': 300, 'deep-passed': 0, 'returned': 0}


def test_a_report_without_passes_is_no_pass():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79')
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), {'status': 0, 'results': []}, POLICY, T0 + 400)
    assert result.events[0]['passes'] == 0 and result.events[0]['needed'] == 1 and result.record['state'] == 'back'


def test_a_failing_deep_run_shows_the_failed_checks():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', seen=['periodic:xid: Xid 79'])
    results = [{'check': 'dcgm', 'status': 'fail'}, {'check': 'nccl', 'status': 'pass'}, {'check': 'ib-bw', 'status': 'fail'}]
    report = {'status': 1, 'passes': 0, 'reason': None, 'results': results}
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), report, POLICY, T0 + 400)
    why = 'the deep tier failed after the reboot: dcgm, ib-bw'
    assert result.events == [
        {'time': T0 + 400, 'node': 'gpu-01', 'event': 'deep_failed', 'from': 'back', 'to': 'service', 'condition': 'xid-79', 'verdict': 'fail',
         'checks': ['dcgm', 'ib-bw']},
        {'time': T0 + 400, 'node': 'gpu-01', 'event': 'service', 'from': 'back', 'to': 'service', 'condition': 'xid-79',
         'reason': 'gpuloop:service:xid-79: ' + why, 'seen': ['periodic:xid: Xid 79', why]},
    ]


def test_a_reset_that_gave_no_verdict_leaves_the_node_waiting():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), PASS, POLICY, T0 + 60, resumed=True)
    assert result.events == [{'time': T0 + 60, 'node': 'gpu-01', 'event': 'deep_failed', 'from': 'reset-asked', 'to': 'reset-asked',
                              'condition': 'xid-48', 'verdict': 'none', 'why': 'the GPU reset gave no verdict'}]
    assert result.record['state'] == 'reset-asked' and result.record['deep_runs'] == 1 and result.actions == []


@pytest.mark.parametrize('reset, why', [
    (RESET_LOST, 'the GPU reset failed (rc=15): ' + RESET_LOST['text']),
    ({'ok': False, 'rc': 3, 'gpus': [], 'mig': 'gpucluster-mig.service', 'text': ''}, 'the GPU reset failed (rc=3): no message'),
    ({}, 'the GPU reset failed (rc=None): no message'),
])
def test_a_failed_reset_shows_the_gpus_its_exit_status_and_why(reset, why):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag(), since=T0)
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), None, POLICY, T0 + 60, resumed=True, reset=reset)
    reason = 'gpuloop:reboot:xid-48: ' + why
    assert result.events == [
        {'time': T0 + 60, 'node': 'gpu-01', 'event': 'reset_failed', 'from': 'reset-asked', 'to': 'reboot-asked', 'condition': 'xid-48',
         'gpus': reset.get('gpus'), 'rc': reset.get('rc'), 'why': why},
        {'time': T0 + 60, 'node': 'gpu-01', 'event': 'reboot_asked', 'from': 'reset-asked', 'to': 'reboot-asked', 'condition': 'xid-48',
         'reason': reason, 'jobs': []},
    ]
    assert result.record['seen'] == [why] and result.record['time_in'] == {'reset-asked': 60} and result.record['deep_runs'] == 0


def test_a_reset_done_shows_the_gpus_and_the_mig_unit_and_counts_in_the_reset_window():
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag(), since=T0,
                 resets=[T0 - 86399, T0 - 86398])
    reset = dict(RESET_OK, mig='restarted')
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), PASS, POLICY, T0 + 1, resumed=True, reset=reset)
    assert result.events[0] == {'time': T0 + 1, 'node': 'gpu-01', 'event': 'reset_done', 'from': 'reset-asked', 'to': 'back', 'condition': 'xid-48',
                                'gpus': ['2'], 'mig': 'restarted'}
    # the window is the reboot window: a reset 86400 s ago has left it, one 86399 s ago still counts
    assert result.record['resets'] == [T0 - 86398, T0 + 1]
    del rec['resets']
    assert loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag()), PASS, POLICY, T0 + 1, resumed=True, reset=reset).record['resets'] == [T0 + 1]


def test_a_comment_hit_quarantines_then_promotes_with_every_field_of_its_events():
    policy = loop.load_policy({'promote_after': 2, 'promote_window_s': 3600})
    detail = 'GPU 0 clocks are held down by hw_slowdown'
    first = loop.step(record(), node(comment=hit(T0)), policy, T0 + 5)
    assert first.events == [
        {'time': T0 + 5, 'node': 'gpu-01', 'event': 'detected', 'from': 'ok', 'to': 'ok', 'condition': 'thermal', 'action': 'comment', 'detail': detail},
        {'time': T0 + 5, 'node': 'gpu-01', 'event': 'quarantined', 'from': 'ok', 'to': 'quarantine', 'condition': 'thermal', 'hits': 1},
    ]
    assert first.record['seen'] == ['thermal: ' + detail] and first.record['hits'] == {'thermal': [T0]}
    second = loop.step(first.record, node(comment=hit(T0 + 60)), policy, T0 + 65)
    reason = 'gpuloop:drain:thermal: 2 hits within 3600s, the last: ' + detail
    assert second.events[1] == {'time': T0 + 65, 'node': 'gpu-01', 'event': 'promoted', 'from': 'quarantine', 'to': 'drained', 'condition': 'thermal',
                                'reason': reason, 'hits': 2}
    assert second.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reason],
                              ['scontrol', 'update', 'nodename=gpu-01', 'comment=gpuloop:quarantine:thermal: 2 of 2 hits in 3600s']]
    assert (second.record['owner'], second.record['reason'], second.record['state']) == ('loop', reason, 'drained')


def test_a_site_action_for_a_comment_condition_shows_in_its_event():
    policy = loop.load_policy({'actions': {'thermal': 'none'}})
    result = loop.step(record(), node(comment=hit(T0)), policy, T0)
    assert result.events[0]['action'] == 'none'


def test_the_quarantine_ends_when_its_window_is_over():
    policy = loop.load_policy({'promote_after': 2, 'promote_window_s': 3600})
    first = loop.step(record(), node(comment=hit(T0)), policy, T0 + 5)
    comment = 'gpuloop:quarantine:thermal: 1 of 2 hits in 3600s'
    inside = loop.step(first.record, node(comment=comment), policy, T0 + 3599)
    assert inside.record['state'] == 'quarantine' and inside.events == [] and inside.record['hits'] == {'thermal': [T0]}
    over = loop.step(first.record, node(comment=comment), policy, T0 + 3600)
    assert over.events == [{'time': T0 + 3600, 'node': 'gpu-01', 'event': 'returned', 'from': 'quarantine', 'to': 'ok', 'condition': 'thermal',
                            'by': 'quarantine window over'}]
    assert over.actions == [['scontrol', 'update', 'nodename=gpu-01', 'comment=']]
    assert (over.record['condition'], over.record['hits'], over.record['time_in']) == (None, {}, {'ok': 105, 'quarantine': 3595})
    # a comment someone else wrote meanwhile stays
    assert loop.step(first.record, node(comment='ticket 12'), policy, T0 + 3600).actions == []


@pytest.mark.parametrize('state, by', [('drained', 'the health check'), ('service', 'hand')])
def test_a_node_returned_shows_who_returned_it(state, by):
    rec = record(state, condition='persistence', reason=PERSIST, owner='health' if state == 'drained' else None, reboots=[T0 - 10], hits={'x': [T0]})
    result = loop.step(rec, node('IDLE'), POLICY, T0)
    assert result.events == [{'time': T0, 'node': 'gpu-01', 'event': 'returned', 'from': state, 'to': 'ok', 'condition': 'persistence', 'by': by}]
    assert result.record['condition'] is None and result.record['owner'] is None
    # after a repair the reboots count afresh, a drain of the health check keeps them
    assert result.record['reboots'] == ([T0 - 10] if state == 'drained' else [])


def test_a_node_not_back_in_time_goes_to_service_saying_so():
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    rebooting = node('DOWN', ['DRAIN', 'REBOOT_ISSUED'], reboot_tag())
    assert loop.step(dict(rec, time_in={}), rebooting, POLICY, T0 + 1800).events == []
    result = loop.step(dict(rec, time_in={}), rebooting, POLICY, T0 + 1801)
    why = 'not back 1800s after the reboot was asked'
    assert result.events == [{'time': T0 + 1801, 'node': 'gpu-01', 'event': 'service', 'from': 'reboot-asked', 'to': 'service', 'condition': 'xid-79',
                              'reason': 'gpuloop:service:xid-79: ' + why, 'seen': [why]}]
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=gpuloop:service:xid-79: ' + why],
                              ['scontrol', 'update', 'nodename=gpu-01', 'comment=gpuloop:service: ' + why]]


@pytest.mark.parametrize('reason, now, service', [
    ('reboot timed out', T0 + 1801, True),
    ('reboot timed out', T0 + 1800, False),
    ('Not responding', T0 + 1801, False),
])
def test_slurm_giving_up_on_a_reboot_is_service_only_after_the_reboot_timeout(reason, now, service):
    rec = record('reboot-asked', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    result = loop.step(rec, node('DOWN', [], reason), POLICY, now)
    assert result.record['state'] == ('service' if service else 'reboot-asked')
    if service:
        assert result.events[0]['reason'] == 'gpuloop:service:xid-79: the node did not come back from its reboot'


def test_step_and_settle_deep_leave_the_record_they_are_given_as_it_was():
    """The program keeps the record it passed in when Slurm refused the actions (it tries again next pass)."""
    policy = loop.load_policy({'promote_after': 3})
    rec = record('quarantine', hits={'thermal': [T0 - 60]}, time_in={'ok': 5})
    before = repr(rec)
    loop.step(rec, node(comment=hit(T0)), policy, T0)
    assert repr(rec) == before
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', time_in={'reboot-asked': 5}, resets=[T0 - 5])
    before = repr(rec)
    loop.settle_deep(rec, node('IDLE', ['DRAIN'], reboot_tag()), PASS, POLICY, T0 + 400)
    assert repr(rec) == before


# ------------------------------------------------------------------ every setting's message, both sides of its bounds

POLICY_KEYS = ('actions, deep, deep_passes, prefix, promote_after, promote_window_s, reboot_max, reboot_timeout_s, reboot_window_s, requeue, '
               'scontrol, settle_timeout_s, tag')
COMMAND = 'expected a command name or path (no spaces, not starting with "-")'


@pytest.mark.parametrize('data, message', [
    ('x', "the loop settings are 'x', expected a mapping"),
    ({'zz': 1, 'aa': 2}, 'the loop settings have unknown key(s) aa, zz; valid keys: ' + POLICY_KEYS),
    ({'scontrol': '-x'}, "scontrol is '-x', " + COMMAND),
    ({'scontrol': 'a b'}, "scontrol is 'a b', " + COMMAND),
    ({'prefix': '1a'}, 'prefix is \'1a\', expected a word such as "gpuloop" (letters, digits, "-", "_", starting with a letter)'),
    ({'tag': 'gpu:loop'}, 'tag is \'gpu:loop\', expected a word such as "gpuloop" (letters, digits, "-", "_", starting with a letter)'),
    ({'tag': 'gpuhc'}, "tag is 'gpuhc', expected a word other than the health check prefix 'gpuhc'"),
    ({'prefix': 'gpuloop'}, "tag is 'gpuloop', expected a word other than the health check prefix 'gpuloop'"),
    ({'reboot_max': -1}, 'reboot_max is -1, expected a whole number of at least 0'),
    ({'reboot_window_s': 0}, 'reboot_window_s is 0, expected a whole number of at least 1'),
    ({'reboot_timeout_s': 59}, 'reboot_timeout_s is 59, expected a whole number of at least 60'),
    ({'settle_timeout_s': 59}, 'settle_timeout_s is 59, expected a whole number of at least 60'),
    ({'promote_after': 0}, 'promote_after is 0, expected a whole number of at least 1'),
    ({'promote_window_s': 0}, 'promote_window_s is 0, expected a whole number of at least 1'),
    ({'deep_passes': 0}, 'deep_passes is 0, expected a whole number of at least 1'),
    ({'requeue': 'x'}, "requeue is 'x', expected true or false"),
    ({'deep': 2}, 'deep is 2, expected true or false'),
    ({'actions': {'thermal': 'x'}}, 'actions["thermal"] is \'x\', expected one of none, comment, drain, reset-gpu, reboot, service'),
])
def test_each_bad_loop_setting_has_its_message(data, message):
    with pytest.raises(InputError) as info:
        loop.load_policy(data)
    assert str(info.value) == message


def test_the_actions_overrides_are_named_as_the_caller_calls_them():
    with pytest.raises(InputError) as info:
        loop.load_policy({'actions': {'thermal': 'x'}}, 'slurm_healthcheck_loop_actions')
    assert str(info.value).startswith('slurm_healthcheck_loop_actions["thermal"] is ')


def test_the_lowest_loop_settings_are_accepted_and_the_defaults_filled_in():
    lowest = {'reboot_max': 0, 'reboot_window_s': 1, 'reboot_timeout_s': 60, 'settle_timeout_s': 60, 'promote_after': 1, 'promote_window_s': 1,
              'deep_passes': 1, 'requeue': False, 'deep': False, 'scontrol': '/usr/bin/scontrol', 'prefix': 'hc', 'tag': 'L-1_x'}
    assert loop.load_policy(lowest) == dict(lowest, actions=POLICY['actions'])
    assert POLICY == dict(loop.POLICY_DEFAULTS, actions=POLICY['actions'])
    assert POLICY['actions']['xid-79'] == 'reboot'


SETTINGS_KEYS = ('deep_allocation_wait, deep_dispatch, deep_dispatch_min_nodes, deep_program, deep_reservation, deep_settings, deep_time_limit, '
                 'events_file, metrics_file, policy, squeue, srun, state_file, webhook')


@pytest.mark.parametrize('data, message', [
    ('x', "the loop configuration is 'x', expected a JSON object"),
    ({'zz': 1}, 'the loop configuration has unknown key(s) zz; valid keys: ' + SETTINGS_KEYS),
    ({'policy': []}, 'the loop settings are [], expected a mapping'),
    ({'state_file': 'rel'}, "state_file is 'rel', expected an absolute path of a file"),
    ({'events_file': '/x/'}, "events_file is '/x/', expected an absolute path of a file"),
    ({'deep_program': ''}, "deep_program is '', expected an absolute path of a file"),
    ({'metrics_file': '/x.txt'}, 'metrics_file is \'/x.txt\', expected an absolute path ending in .prom, or ""'),
    ({'webhook': 'ftp://x'}, 'webhook is \'ftp://x\', expected an http:// or https:// URL, or ""'),
    ({'squeue': '-x'}, "squeue is '-x', " + COMMAND),
    ({'srun': 'a b'}, "srun is 'a b', " + COMMAND),
    ({'deep_reservation': '-x'}, "deep_reservation is '-x', expected a Slurm reservation name"),
    ({'deep_reservation': 'a' * 65}, "deep_reservation is '%s', expected a Slurm reservation name" % ('a' * 65)),
    ({'deep_time_limit': 0}, 'deep_time_limit is 0, expected a whole number between 1 and 1440'),
    ({'deep_time_limit': 1441}, 'deep_time_limit is 1441, expected a whole number between 1 and 1440'),
    ({'deep_dispatch': 'x'}, "deep_dispatch is 'x', expected one of auto, per_node, allocation"),
    ({'deep_dispatch_min_nodes': 0}, 'deep_dispatch_min_nodes is 0, expected a whole number of at least 1'),
    ({'deep_allocation_wait': 0}, 'deep_allocation_wait is 0, expected a whole number of seconds between 1 and 3600'),
    ({'deep_allocation_wait': 3601}, 'deep_allocation_wait is 3601, expected a whole number of seconds between 1 and 3600'),
    ({'deep_settings': []}, 'deep_settings is [], expected a mapping of deep tier settings'),
    ({'policy': {'actions': {'thermal': 'x'}}}, 'actions["thermal"] is \'x\', expected one of none, comment, drain, reset-gpu, reboot, service'),
])
def test_each_bad_program_setting_has_its_message(data, message):
    with pytest.raises(InputError) as info:
        loop.load_settings(data)
    assert str(info.value) == message


def test_the_program_settings_at_their_bounds_are_accepted():
    data = {'metrics_file': '', 'webhook': 'https://hooks.example/x', 'deep_reservation': 'a' * 64, 'deep_time_limit': 1440,
            'deep_dispatch': 'per_node', 'deep_dispatch_min_nodes': 1, 'deep_allocation_wait': 3600, 'deep_settings': {'dcgm_level': 1},
            'state_file': '/s', 'squeue': '/opt/slurm/bin/squeue', 'policy': {'tag': 'loop'}}
    settings = loop.load_settings(data)
    assert settings == dict(loop.SETTINGS_DEFAULTS, **dict(data, policy=loop.load_policy({'tag': 'loop'})))
    assert loop.load_settings({'deep_time_limit': 1, 'deep_allocation_wait': 1})['deep_allocation_wait'] == 1
    with pytest.raises(InputError, match=r'^bad\["thermal"\] is'):
        loop.load_settings({'policy': {'actions': {'thermal': 'x'}}}, 'bad')


# ------------------------------------------------------------------ small readers and writers

def test_a_new_record_knows_nothing_yet():
    assert loop.new_record(T0) == {'state': 'ok', 'since': T0, 'condition': None, 'reason': None, 'asked_at': None, 'reboots': [], 'hits': {},
                                   'seen': [], 'deep_runs': 0, 'time_in': {}, 'via': None, 'gpus': [], 'resets': []}


@pytest.mark.parametrize('text, jobs', [
    ('17 gpu-[01-02]\n18 gpu-02\n', {'gpu-01': ['17'], 'gpu-02': ['17', '18']}),
    ('17_3 gpu-01\n', {'gpu-01': ['17_3']}),
    ('JOBID NODELIST\n17 gpu-01 extra\n\n17\nab gpu-01\n', {}),
    ('', {}), (None, {}),
])
def test_running_jobs_per_node(text, jobs):
    assert loop.running_jobs(text, lambda names: {'gpu-[01-02]': ['gpu-01', 'gpu-02']}.get(names, [names])) == jobs


@pytest.mark.parametrize('detail, comment', [
    ('hot', 'gpuhc-hit:thermal@12: hot'),
    (None, 'gpuhc-hit:thermal@12: '),
    ('a "b"\nc', "gpuhc-hit:thermal@12: a 'b' c"),
    ('x' * 178, 'gpuhc-hit:thermal@12: ' + 'x' * 178),  # 200 characters: kept
    ('x' * 179, 'gpuhc-hit:thermal@12: ' + 'x' * 175 + '...'),  # 201: cut to 200
])
def test_the_hit_comment_is_one_line_of_at_most_200_characters(detail, comment):
    assert loop.hit_comment('gpuhc', 'thermal', 12.9, detail) == comment


@pytest.mark.parametrize('comment, prefix, parsed', [
    ('gpuhc-hit:thermal@12: hot', 'gpuhc', ('thermal', 12, 'hot')),
    ('gpuhc-hit:ib-errors@12:hot', 'gpuhc', ('ib-errors', 12, 'hot')),
    ('hc.x-hit:thermal@12: hot', 'hc.x', ('thermal', 12, 'hot')),
    ('hcax-hit:thermal@12: hot', 'hc.x', None),  # the prefix is text, not a pattern
    ('gpuhc-hit:Thermal@12: hot', 'gpuhc', None),
    ('gpuhc-hit:thermal@x: hot', 'gpuhc', None),
    ('x gpuhc-hit:thermal@12: hot', 'gpuhc', None),
    (None, 'gpuhc', None),
])
def test_parse_hit(comment, prefix, parsed):
    assert loop.parse_hit(comment, prefix) == parsed


def test_parse_hit_reads_the_default_prefix():
    assert loop.parse_hit('gpuhc-hit:thermal@12: hot') == ('thermal', 12, 'hot')


@pytest.mark.parametrize('detail, gpus', [
    ('GPU 10 and GPU 2 and GPU 10 again', ['2', '10']),
    ('GPU 3 at PCI 0000:3b:00.0', ['3']),  # an index wins over a bus id
    ('PCI 3B:00.0 and PCI 0000:3b:00.0 and PCI 3b:00.0', ['3b:00.0', '0000:3b:00.0']),
    ('PCI 0000:3b:00.8', []),
    ('GPU3 and xGPU 4', []),
    (None, []),
])
def test_the_gpus_a_detail_names_each_once(detail, gpus):
    assert loop.reset_gpus(detail) == gpus


def test_slurm_time_is_local_time():
    epoch = loop.slurm_time('2026-12-05T16:00:00')
    assert isinstance(epoch, int) and time.localtime(epoch)[:6] == (2026, 12, 5, 16, 0, 0)
    assert loop.slurm_time('2026-12-05T16:10:09') - epoch == 609


@pytest.mark.parametrize('text', ['Unknown', 'None', None, '', '2026-12-05 16:00:00', '2026-12-05T16:00:00Z', 'x2026-12-05T16:00:00'])
def test_slurm_time_of_no_time_is_none(text):
    assert loop.slurm_time(text) is None


def test_a_loop_reason_of_an_unknown_step_is_refused_naming_the_steps():
    with pytest.raises(ValueError) as info:
        loop.loop_reason('gpuloop', 'nap', 'x', 'y')
    assert str(info.value) == "step 'nap' is not one of %s" % ', '.join(loop.STEPS)


@pytest.mark.parametrize('reason, tag, parsed', [
    ('gpuloop:reset:xid-48: GPU 2', 'gpuloop', {'step': 'reset', 'condition': 'xid-48', 'detail': 'GPU 2'}),
    ('L:drain:thermal: x', 'L', {'step': 'drain', 'condition': 'thermal', 'detail': 'x'}),
    ('gpuloop:drain:thermal: x', 'L', None),
    ('gpuhc:periodic:xid: x', 'gpuloop', None),
])
def test_parse_loop_reason(reason, tag, parsed):
    assert loop.parse_loop_reason(reason, tag) == parsed


@pytest.mark.parametrize('reason, prefix, parsed', [
    (XID79, 'gpuhc', {'tier': 'periodic', 'check': 'xid', 'detail': XID79.split(': ', 1)[1]}),
    ('hc:deep:dcgm: GPU 1', 'hc', {'tier': 'deep', 'check': 'dcgm', 'detail': 'GPU 1'}),
    (XID79, 'hc', None),
    (reboot_tag(), 'gpuhc', None),
    (ADMIN, 'gpuhc', None),
])
def test_health_tag(reason, prefix, parsed):
    assert loop.health_tag(reason, prefix) == parsed


@pytest.mark.parametrize('slurm, who', [
    (node('IDLE'), None),
    (node('IDLE', [], XID79), None),  # a reason left from before the resume is history
    (node('IDLE', ['DRAIN'], XID79), 'health'),
    (node('DRAINED', [], XID79), 'health'),
    (node('DRAINING', [], ADMIN), 'other'),
    (node('DRAIN', [], ADMIN), 'other'),
    (node('IDLE', ['DRAIN'], reboot_tag()), 'loop'),
    (node('DOWN', [], reboot_tag()), 'loop'),
    (node('DOWN', [], ADMIN), 'other'),
    (node('IDLE', ['NOT_RESPONDING'], ADMIN), None),  # not responding, nobody drained it
    (node('IDLE', ['NOT_RESPONDING'], XID79), 'health'),
])
def test_who_owns_a_node(slurm, who):
    assert loop.owner(slurm, POLICY) == who


@pytest.mark.parametrize('slurm, busy', [
    (node('ALLOCATED'), True), (node('MIXED'), True), (node('COMPLETING'), True), (node('IDLE', ['COMPLETING']), True),
    (node('IDLE'), False), (node('DRAINED'), False),
])
def test_is_busy(slurm, busy):
    assert loop.is_busy(slurm) is busy


@pytest.mark.parametrize('flags, state, answer', [
    (['REBOOT_REQUESTED'], 'IDLE', True), (['REBOOT_ISSUED'], 'IDLE', True), (['POWERING_UP'], 'IDLE', True), (['NOT_RESPONDING'], 'IDLE', True),
    ([], 'DOWN', True), (['DRAIN'], 'IDLE', False), ([], 'IDLE', False),
])
def test_rebooting(flags, state, answer):
    assert loop.rebooting(node(state, flags)) is answer


# ------------------------------------------------------------------ what is derived, and the node as the deep tier left it

def test_a_check_no_condition_knows_is_its_own_condition_and_drains():
    reason = 'gpuhc:periodic:fan-speed: fan 2 at 0 rpm'
    result = loop.step(record(), node('IDLE', ['DRAIN'], reason), POLICY, T0)
    assert [(e['event'], e['condition'], e.get('action')) for e in result.events] == [('detected', 'fan-speed', 'drain'), ('drained', 'fan-speed', 'drain')]


@pytest.mark.parametrize('reason_time, asked_at', [(T0 - 300, T0 - 300), (None, T0)])
def test_a_lost_record_takes_the_time_of_the_drain_else_now(reason_time, asked_at):
    result = loop.step(None, node('IDLE', ['DRAIN'], reboot_tag(), reason_time=reason_time), POLICY, T0)
    assert (result.record['state'], result.record['asked_at'], result.record['via']) == ('reboot-asked', asked_at, 'reboot')
    assert (result.record['condition'], result.record['reason'], result.record['since']) == ('xid-79', reboot_tag(), T0)


def test_a_lost_record_of_a_service_or_drain_tag_asks_nothing_and_resets_no_gpu():
    for step, state in (('service', 'service'), ('drain', 'drained')):
        reason = loop.loop_reason('gpuloop', step, 'ecc', 'GPU 1 (00000000:2A:00.0) had ECC errors')
        rec = loop.step(None, node('IDLE', ['DRAIN'], reason, reason_time=T0 - 5), POLICY, T0).record
        assert (rec['state'], rec['asked_at'], rec['via'], rec['gpus']) == (state, None, None, [])


def test_a_record_back_from_its_reboot_keeps_its_state_under_the_reboot_tag():
    rec = record('back', asked_at=T0 - 500, since=T0 - 100, condition='xid-79', reason=reboot_tag(), via='reboot')
    result = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), reason_time=T0 - 500, boot=T0 - 200), POLICY, T0)
    assert (result.record['state'], result.record['since'], result.deep) == ('back', T0 - 100, True)


@pytest.mark.parametrize('state', ['deep-passed', 'returned'])
def test_a_pass_cut_short_in_a_passing_state_leaves_the_node_ok(state):
    result = loop.step(record(state), node('IDLE'), POLICY, T0)
    assert (result.record['state'], result.record['since'], result.events, result.actions) == ('ok', T0, [], [])


@pytest.mark.parametrize('resumed, actions', [
    # resumed into the reservation: drained again before the reboot, its job there is gone
    (True, ['update', 'reboot']),
    # still drained (the deep tier ran inside its drain): the reboot alone; the jobs Slurm lists are requeued
    (False, ['requeue', 'reboot']),
])
def test_a_failed_reset_asks_the_reboot_of_the_node_as_the_deep_tier_left_it(resumed, actions):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node('IDLE', ['DRAIN'], reset_tag(), jobs=[5]), None, POLICY, T0 + 60, resumed=resumed, reset=RESET_LOST)
    assert [a[1] for a in result.actions] == actions
    assert result.events[1]['jobs'] == ([] if resumed else [5])


@pytest.mark.parametrize('state, flags', [('IDLE', ['DRAIN']), ('DRAINED', []), ('DRAINING', []), ('MIXED', [])])
def test_a_failing_deep_run_after_a_reset_reboots_the_node_as_the_reservation_left_it(state, flags):
    rec = record('back', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag())
    result = loop.settle_deep(rec, node(state, flags, reset_tag(), jobs=[9]), FAIL, POLICY, T0 + 60, resumed=True)
    # the view of a node resumed into the reservation: not drained, no job of its own (nothing to requeue), drained before the reboot
    assert [a[1] for a in result.actions] == ['update', 'reboot'] and result.actions[0][3] == 'state=drain'
    assert result.record['state'] == 'reboot-asked' and result.events[-1]['jobs'] == []


def test_a_reset_asked_without_requeue_leaves_the_jobs_running():
    result = loop.step(record(), node('MIXED', ['DRAIN'], XID48, jobs=[17]), loop.load_policy({'requeue': False}), T0)
    assert result.actions == [['scontrol', 'update', 'nodename=gpu-01', 'state=drain', 'reason=' + reset_tag()]]
    assert result.events[1]['jobs'] == [17] and not result.deep


@pytest.mark.parametrize('state, jobs, why', [
    ('MIXED', [17], 'the GPU reset not done 3601s after it was asked (the node never became idle)'),
    ('IDLE', [], 'the GPU reset not done 3601s after it was asked (no verdict from its job)'),
])
def test_a_reset_not_done_in_time_says_why_in_the_reboot_reason(state, jobs, why):
    rec = record('reset-asked', asked_at=T0, condition='xid-48', gpus=['2'], via='reset', reason=reset_tag(), since=T0)
    result = loop.step(rec, node(state, ['DRAIN'], reset_tag(), jobs=jobs), loop.load_policy({'requeue': False}), T0 + 3601)
    assert result.actions == [['scontrol', 'reboot', 'ASAP', 'reason=gpuloop:reboot:xid-48: ' + why, 'gpu-01']]
    assert result.record['seen'] == [why]


def test_a_node_rebooting_past_the_settle_time_is_waited_for():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    result = loop.step(rec, node('DOWN', ['DRAIN', 'REBOOT_ISSUED'], reboot_tag(), boot=T0 + 90), POLICY, T0 + 4000)
    assert (result.record['state'], result.actions, result.deep) == ('back', [], False)


def test_the_service_of_a_node_back_without_a_verdict_says_how_long_it_waited():
    rec = record('back', asked_at=T0, reboots=[T0], condition='xid-79', via='reboot', reason=reboot_tag(), since=T0)
    result = loop.step(rec, node('IDLE', ['DRAIN'], reboot_tag(), boot=T0 + 90), POLICY, T0 + 3601)
    assert result.events == [{'time': T0 + 3601, 'node': 'gpu-01', 'event': 'service', 'from': 'back', 'to': 'service', 'condition': 'xid-79',
                              'reason': 'gpuloop:service:xid-79: no deep-tier verdict 3601s after the node came back',
                              'seen': ['no deep-tier verdict 3601s after the node came back']}]
