# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _deep_controller: which nodes the deep tier tests, its jobs, and what becomes of each node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as dh
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import parse_scontrol_nodes
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import reservation_argv
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError


def line(name, state, gres='gpu:h100:8(S:0-1)', reason=None, partitions='batch'):
    text = ('NodeName=%s Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 AvailableFeatures=(null) Gres=%s NodeAddr=%s State=%s '
            'ThreadsPerCore=1 Partitions=%s BootTime=None CfgTRES=cpu=2' % (name, gres, name, state, partitions))
    if reason:
        text += ' Reason=%s [root@2026-11-27T01:00:00]' % reason
    return text


SHOW = '\n'.join([
    line('gpu-01', 'IDLE'),
    line('gpu-02', 'IDLE+DRAIN', reason='gpuhc:periodic:nvlink: GPU 3 NVLink 2 down'),
    line('gpu-03', 'IDLE+DRAIN', reason='disk replaced, do not use'),
    line('gpu-04', 'MIXED'),
    line('gpu-05', 'IDLE+DRAIN', reason='gpuhc:deep:nvbandwidth: GPU 2 slow'),
    line('gpu-06', 'DOWN+NOT_RESPONDING', reason='Not responding'),
    line('gpu-07', 'ALLOCATED+DRAIN', reason='gpuhc:periodic:xid: Xid 79'),
    line('gpu-08', 'IDLE+MAINT+RESERVED'),
    line('gpu-09', 'IDLE', gres='gpu:h100:6(S:0-1),gpu:1g.10gb:2(S:0),shard:h100:48', partitions='mig,batch'),
    line('cpu-01', 'IDLE', gres='(null)'),
]) + '\n'
NODES = parse_scontrol_nodes(SHOW)
EXTRAS = dh.node_extras(NODES)


@pytest.mark.parametrize('gres, count', [
    ('gpu:h100:8(S:0-1)', 8),
    ('gpu:h100:6(S:0-1),gpu:1g.10gb:2(S:0)', 8),
    ('gpu:4', 4),
    ('gpu:a100:8(S:0-1),mps:800,shard:a100:64', 8),
    ('shard:h100:48', 0),
    ('', 0),
    ('gpu:h100:2(S:0-1,3),gpu:h100:2(S:2)', 4),
])
def test_gres_gpus(gres, count):
    assert dh.gres_gpus(gres) == count


@pytest.mark.parametrize('include, tested', [
    ('ours', ['gpu-01', 'gpu-02', 'gpu-05', 'gpu-09']),
    ('all', ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-05', 'gpu-09']),
    ('none', ['gpu-01', 'gpu-09']),
])
def test_select_by_include_drained(include, tested):
    candidates, skipped = dh.select(NODES, EXTRAS, [], include)
    assert [c['name'] for c in candidates] == tested
    # every GPU node is either tested or said why not; the node without GPUs is not considered
    assert sorted(set(skipped) | set(tested)) == ['gpu-0%d' % i for i in range(1, 10)]


@pytest.mark.parametrize('name, why', [
    ('gpu-03', 'drained by someone else ("disk replaced, do not use", set by root)'),
    ('gpu-04', 'jobs are running on it (MIXED)'),
    ('gpu-06', 'node is DOWN+NOT_RESPONDING'),
    ('gpu-07', 'jobs are running on it (ALLOCATED+DRAIN)'),
    ('gpu-08', 'in a reservation already'),
])
def test_why_a_node_is_not_tested(name, why):
    _candidates, skipped = dh.select(NODES, EXTRAS, [], 'ours')
    assert why in skipped[name]


def test_a_node_without_gpus_named_is_skipped_and_an_unknown_one_refused():
    _candidates, skipped = dh.select(NODES, EXTRAS, ['cpu-01'], 'ours')
    assert skipped == {'cpu-01': 'no GPU in its Gres'}
    with pytest.raises(dh.DeepFailure, match='Slurm knows no node.s. gpu-99; its nodes are: cpu-01, gpu-01'):
        dh.select(NODES, EXTRAS, ['gpu-99'], 'ours')


def test_candidates_carry_gpus_partition_and_the_drain_tag():
    candidates, _skipped = dh.select(NODES, EXTRAS, ['gpu-02', 'gpu-09'], 'ours')
    assert candidates == [
        {'name': 'gpu-02', 'gpus': 8, 'partition': 'batch', 'drained': True, 'reason': 'gpuhc:periodic:nvlink: GPU 3 NVLink 2 down',
         'tag': {'tier': 'periodic', 'check': 'nvlink'}},
        {'name': 'gpu-09', 'gpus': 8, 'partition': 'mig', 'drained': False, 'reason': '', 'tag': None},
    ]


@pytest.mark.parametrize('size, groups', [(0, [5]), (2, [2, 2, 1]), (5, [5]), (9, [5]), (1, [1, 1, 1, 1, 1])])
def test_batches(size, groups):
    assert [len(b) for b in dh.batches(list(range(5)), size)] == groups
    assert dh.batches([], 3) == []


def test_reservation_and_srun_argv():
    assert reservation_argv('scontrol', 'gpucluster-deep-health', ['gpu-01', 'gpu-02'], dh.reservation_minutes(60)) == [
        'scontrol', 'create', 'reservation', 'ReservationName=gpucluster-deep-health', 'Nodes=gpu-01,gpu-02', 'StartTime=now',
        'Duration=70', 'Users=root', 'Flags=MAINT,IGNORE_JOBS']
    candidate = {'name': 'gpu-09', 'gpus': 8, 'partition': 'mig'}
    argv = dh.srun_argv(candidate, 'res', '/usr/local/sbin/gpucluster-healthcheck', {'dcgm_level': 3}, 30)
    assert argv[:11] == ['srun', '--reservation=res', '--nodelist=gpu-09', '--nodes=1', '--ntasks=1', '--exclusive', '--gres=gpu:8',
                         '--time=30', '--immediate=120', '--job-name=gpucluster-deep-health', '--partition=mig']
    assert argv[11:] == ['/usr/local/sbin/gpucluster-healthcheck', '--tier', 'deep', '--node', 'gpu-09', '--deep-config', '{"dcgm_level": 3}']


def job_with(*results, **extra):
    report, _status = hd.outcome('gpu-01', list(results), 'gpuhc')
    job = {'rc': 1 if report['reason'] else 0, 'stdout': 'PASS x\n' + hd.report_line(report) + '\n', 'stderr': '', 'timed_out': False, 'timeout': 3780}
    job.update(extra)
    return job


PASS_ALL = [hd.result('dcgm', 'pass', 'dcgmi diag -r 2: 12 pass'), hd.result('nccl', 'pass', 'busbw 300 >= 296', value=300.0, threshold=296.0),
            hd.result('nvbandwidth', 'skip', 'nvbandwidth is not installed'), hd.result('ib-bw', 'pass', 'ib_write_bw: 4 pairs')]
FAIL_NVBW = [hd.result('dcgm', 'pass', 'ok'), hd.result('nvbandwidth', 'fail', 'nvbandwidth: GPU 2 host_to_device_memcpy_ce 24.1 GB/s, below 44.1')]
ERROR_DCGM = [hd.result('dcgm', 'error', 'dcgmi diag -r 2 gave no result: host engine not running'), hd.result('nccl', 'pass', 'ok')]


def cand(reason=None):
    tag = hc.parse_tag(reason) if reason else None
    return {'name': 'gpu-01', 'gpus': 8, 'partition': 'batch', 'drained': reason is not None, 'reason': reason or '', 'tag': tag}


def after(reason=None):
    return {'name': 'gpu-01', 'state': 'IDLE', 'flags': ['DRAIN'] if reason else [], 'reason': reason or '', 'reason_user': ''}


DEEP = 'gpuhc:deep:dcgm: Memory on GPU 1: row remap failure'
PERIODIC = 'gpuhc:periodic:nvlink: GPU 3 NVLink 2 down'
ADMIN = 'disk replaced, do not use'
NVBW_REASON = 'gpuhc:deep:nvbandwidth: nvbandwidth: GPU 2 host_to_device_memcpy_ce 24.1 GB/s, below 44.1'


@pytest.mark.parametrize('before, results, action, reason, message', [
    # an idle node
    (None, PASS_ALL, 'none', None, 'passes'),
    (None, FAIL_NVBW, 'drain', NVBW_REASON, 'failing: drained with'),
    (None, ERROR_DCGM, 'none', None, 'passes (could not run: dcgm)'),
    # drained by the deep tier: a full pass brings it back, a failure drains it with the new finding, an error puts it back
    (DEEP, PASS_ALL, 'resume', None, 'every deep check passes: resumed'),
    (DEEP, FAIL_NVBW, 'drain', NVBW_REASON, 'failing'),
    (DEEP, ERROR_DCGM, 'restore', DEEP, 'some checks could not run (dcgm)'),
    # drained by the periodic tier: its own passes resume it; a deep failure replaces the reason
    (PERIODIC, PASS_ALL, 'restore', PERIODIC, 'drained by the periodic tier, which resumes it itself'),
    (PERIODIC, FAIL_NVBW, 'drain', NVBW_REASON, 'failing'),
    # an admin's drain is put back whatever the result
    (ADMIN, PASS_ALL, 'restore', ADMIN, 'drained by someone else'),
    (ADMIN, FAIL_NVBW, 'restore', ADMIN, 'drained by someone else before, that drain is put back'),
])
def test_settle(before, results, action, reason, message):
    outcome = dh.settle(cand(before), job_with(*results), after(None))
    assert (outcome['action'], outcome['reason']) == (action, reason)
    assert message in outcome['message']
    assert [r['check'] for r in outcome['records']] == [r['check'] for r in results]


def test_settle_records_carry_values_and_errors_fail_the_report():
    outcome = dh.settle(cand(), job_with(*(PASS_ALL + [])), after())
    nccl = [r for r in outcome['records'] if r['check'] == 'nccl'][0]
    assert (nccl['stage'], nccl['status'], nccl['value'], nccl['threshold']) == ('deep', 'pass', 300.0, 296.0)
    outcome = dh.settle(cand(), job_with(*ERROR_DCGM), after())
    assert outcome['records'][0]['status'] == 'fail'
    assert outcome['records'][0]['reason'].startswith('could not run: dcgmi diag')


@pytest.mark.parametrize('before, job, action, reason, text', [
    (None, {'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources: Requested node configuration is not available',
            'timed_out': False, 'timeout': 60}, 'none', None, 'Requested node configuration is not available'),
    (PERIODIC, {'rc': None, 'stdout': 'PASS dcgm: ok\n', 'stderr': '', 'timed_out': True, 'timeout': 3780}, 'restore', PERIODIC,
     'did not finish within 3780s'),
    (DEEP, {'rc': 2, 'stdout': 'gpucluster-healthcheck deep: {not json', 'stderr': '', 'timed_out': False, 'timeout': 60}, 'restore', DEEP,
     'report line is not JSON'),
])
def test_settle_without_a_report_puts_things_back(before, job, action, reason, text):
    outcome = dh.settle(cand(before), job, after(None))
    assert (outcome['action'], outcome['reason']) == (action, reason)
    assert outcome['records'][0]['check'] == 'deep_job' and outcome['records'][0]['status'] == 'fail'
    assert text in outcome['records'][0]['reason']


def test_a_node_drained_by_something_else_during_the_test_is_left_alone():
    prolog = 'gpuhc:prolog:xid: Xid 79 on GPU 1'
    outcome = dh.settle(cand(DEEP), job_with(*PASS_ALL), after(prolog))
    assert outcome['action'] == 'none' and prolog in outcome['message']
    outcome = dh.settle(cand(None), {'rc': 1, 'stdout': '', 'stderr': 'srun: error', 'timed_out': False, 'timeout': 60}, after(prolog))
    assert outcome['action'] == 'none' and 'left as it is' in outcome['message']


@pytest.mark.parametrize('params, message', [
    ({'names': ['gpu 01']}, "names\\[0\\] is 'gpu 01', expected a Slurm node name"),
    ({'reservation': 'a,b'}, "reservation is 'a,b'"),
    ({'time_limit': 0}, 'time_limit is 0'),
    ({'batch_size': -1}, 'batch_size is -1'),
    ({'prefix': 'gpu hc'}, "prefix is 'gpu hc'"),
    ({'program': 'gpucluster-healthcheck'}, "program is 'gpucluster-healthcheck', expected the absolute path"),
    ({'settings': {'dcgm_levl': 2}}, 'unknown deep tier setting.s. dcgm_levl; valid settings:'),
    ({'settings': {'dcgm_level': 5}}, 'dcgm_level is 5, expected one of 1, 2, 3, 4'),
    ({'settings': {'checks': ['dcgm', 'gpu-burn']}}, "checks is \\['dcgm', 'gpu-burn'\\], expected a list of dcgm, nccl, nvbandwidth, ib-bw"),
    ({'settings': {'checks': []}}, 'settings.checks is \\[\\], expected at least one of'),
    ({'settings': {'ib_min_fraction': 1.5}}, 'ib_min_fraction is 1.5, expected a fraction above 0 and at most 1'),
    ({'settings': {'nvbandwidth': 'nvbandwidth'}}, "nvbandwidth is 'nvbandwidth', expected an absolute path"),
    ({'settings': {'nccl_topology': 'h900-nvlink-8'}}, "unknown topology 'h900-nvlink-8'"),
    ({'settings': {'ib_tcp_port': 80}}, 'ib_tcp_port is 80, expected a TCP port from 1024 to 65000'),
])
def test_bad_input_is_refused_naming_it(params, message):
    full = {'names': [], 'include_drained': 'ours', 'reservation': 'gpucluster-deep-health', 'time_limit': 60, 'batch_size': 0,
            'program': '/usr/local/sbin/gpucluster-healthcheck', 'prefix': 'gpuhc', 'settings': {}}
    full.update(params)
    with pytest.raises(InputError, match=message):
        dh.check_deep_input(full)


def test_good_input_gives_the_settings_as_given():
    params = {'names': ['gpu-01'], 'include_drained': 'all', 'reservation': 'deep', 'time_limit': 30, 'batch_size': 4,
              'program': '/usr/local/sbin/gpucluster-healthcheck', 'prefix': 'gpuhc', 'settings': {'dcgm_level': 1, 'checks': ['dcgm']}}
    assert dh.check_deep_input(params) == {'checks': ['dcgm'], 'dcgm_level': 1}
    # the node program takes exactly these
    assert hd.load_config(json.loads(json.dumps(dh.check_deep_input(params))))['dcgm_timeout'] == hd.DCGM_TIMEOUTS[1]


def test_skipped_records():
    assert dh.skipped_records({'gpu-04': 'busy'}) == [{'stage': 'deep', 'node': 'gpu-04', 'check': 'deep_job', 'status': 'skip', 'reason': 'busy'}]


@pytest.mark.parametrize('passes, resume_after, action', [
    (1, 1, 'resume'), (1, 2, 'restore'), (2, 2, 'resume'), (5, 3, 'resume'), (None, 1, 'resume'), (None, 2, 'restore')])
def test_a_deep_drain_is_resumed_after_k_passing_deep_runs(passes, resume_after, action):
    report, _status = hd.outcome('gpu-01', list(PASS_ALL), 'gpuhc')
    if passes is None:
        del report['passes']  # a program of an earlier release: one run counts
    else:
        report['passes'] = passes
    job = {'rc': 0, 'stdout': hd.report_line(report) + '\n', 'stderr': '', 'timed_out': False, 'timeout': 60}
    outcome = dh.settle(cand(DEEP), job, after(None), resume_after=resume_after)
    assert outcome['action'] == action
    if action == 'restore':
        assert outcome['reason'] == DEEP and 'deep runs in a row): its drain is put back until run %d' % resume_after in outcome['message']


@pytest.mark.parametrize('previous, status, passes', [(0, 0, 1), (3, 0, 4), (3, 1, 0), (3, 2, 3), (None, 0, 1), (-1, 0, 1), (True, 0, 1)])
def test_next_passes(previous, status, passes):
    assert hd.next_passes(previous, status) == passes


@pytest.mark.parametrize('include', ['ours', 'all'])
def test_a_node_of_the_closed_loop_is_left_to_it(include):
    """The closed loop runs the deep tier on the nodes it drained itself: health_deep leaves them, even with all."""
    nodes = parse_scontrol_nodes(line('gpu-07', 'IDLE+DRAIN', reason='gpuloop:reboot:xid-79: GPU 3 had Xid 79') + '\n')
    candidates, skipped = dh.select(nodes, dh.node_extras(nodes), [], include)
    assert candidates == [] and 'closed loop' in skipped['gpu-07']


@pytest.mark.parametrize('ports, recorded, want', [
    ([{'rate_gbps': 400}, {'rate_gbps': 200}], None, 400),  # the fastest active port: a port trained down keeps the bar
    ([{'rate_gbps': 400}], 200, 200.0),  # the node's recorded InfiniBand rate wins
    ([{'rate_gbps': 100, 'link_layer': 'Ethernet'}, {'rate_gbps': 200}], None, 200),  # Ethernet ports do not count
    ([{'rate_gbps': 100, 'link_layer': 'Ethernet'}], None, None),  # no InfiniBand port: no rate to reach
    ([{'rate_gbps': None}, {}], None, None),  # ports without a rate
    ([], None, None),
])
def test_the_rate_a_pair_should_reach(ports, recorded, want):
    assert hd.expected_ib_rate(ports, recorded) == want
