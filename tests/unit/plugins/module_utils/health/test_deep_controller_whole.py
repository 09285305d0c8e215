# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_deep_controller compared whole (issue 43): every reason a node is skipped, every settle() outcome as a whole dict,
the srun line's defaults, every refusal of the program path and of the module's options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as dh
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import SLURM_NAME_TEXT, InputError


def node(name='gpu-01', state='IDLE', flags=(), reason='', reason_user=''):
    return {'name': name, 'state': state, 'flags': list(flags), 'reason': reason, 'reason_user': reason_user}


GPUS = {'gpus': 8, 'partitions': ['batch']}


@pytest.mark.parametrize('the_node, extra, include, why', [
    (node(), {}, 'ours', 'no GPU in its Gres'),
    (node(), {'gpus': 0}, 'ours', 'no GPU in its Gres'),
    (node(state='FUTURE'), GPUS, 'ours', 'node is FUTURE: the deep tier tests idle or drained nodes that answer'),
    (node(flags=['POWERED_DOWN']), GPUS, 'ours', 'node is IDLE+POWERED_DOWN: the deep tier tests idle or drained nodes that answer'),
    (node(state='COMPLETING'), GPUS, 'ours', 'jobs are running on it (COMPLETING): the deep tier tests idle or drained nodes'),
    (node(flags=['COMPLETING']), GPUS, 'ours', 'jobs are running on it (IDLE+COMPLETING): the deep tier tests idle or drained nodes'),
    (node(flags=['MAINT', 'RESERVED']), GPUS, 'ours', 'it is in a reservation already (IDLE+MAINT+RESERVED)'),
    (node(flags=['RESERVED']), GPUS, 'all', 'it is in a reservation already (IDLE+RESERVED)'),
    (node(flags=['DRAIN'], reason='x'), GPUS, 'none', 'drained ("x"); include_drained=none tests idle nodes only'),
    (node(flags=['DRAIN'], reason='gpuloop:reboot:xid-79: GPU 3'), GPUS, 'all',
     'drained by the closed loop ("gpuloop:reboot:xid-79: GPU 3"), which runs the deep tier on it itself'),
    (node(flags=['DRAIN'], reason='admin', reason_user='alice'), GPUS, 'ours',
     'drained by someone else ("admin", set by alice); include_drained=all tests it and puts the drain back'),
    (node(flags=['DRAIN'], reason='admin'), GPUS, 'ours', 'drained by someone else ("admin"); include_drained=all tests it and puts the drain back'),
    (node(flags=['DRAIN'], reason='admin'), GPUS, 'all', ''),
    (node(flags=['DRAIN'], reason='gpuhc:periodic:xid: Xid 79'), GPUS, 'ours', ''),
    (node(state='DRAINED', reason='x'), GPUS, 'all', ''),
    (node(state='PLANNED'), GPUS, 'ours', 'node is PLANNED: the deep tier tests idle or drained nodes'),
    (node(), GPUS, 'ours', ''),
])
def test_why_not_whole(the_node, extra, include, why):
    assert dh.why_not(the_node, extra, include, 'gpuhc') == why


def test_why_not_reads_the_prefix():
    drained = node(flags=['DRAIN'], reason='mine:periodic:xid: Xid 79')
    assert dh.why_not(drained, GPUS, 'ours', 'mine') == ''
    assert dh.why_not(drained, GPUS, 'ours', 'gpuhc') == \
        'drained by someone else ("mine:periodic:xid: Xid 79"); include_drained=all tests it and puts the drain back'


def test_select_defaults_and_whole_outcome():
    nodes = {'gpu-01': node(), 'gpu-02': node('gpu-02', flags=['DRAIN'], reason='gpuhc:deep:dcgm: bad'),
             'bad,name': node('bad,name'), 'gpu-03': node('gpu-03'), 'gpu-04': node('gpu-04'), 'cpu-01': node('cpu-01')}
    extras = {'gpu-01': {'gpus': 8, 'partitions': ['batch', 'other']}, 'gpu-02': {'gpus': 4, 'partitions': []}, 'bad,name': GPUS,
              'gpu-03': {'gpus': 2, 'partitions': ['-x', 'batch']}, 'gpu-04': {'gpus': 1}, 'cpu-01': {'gpus': 0, 'partitions': ['c']}}
    candidates, skipped = dh.select(nodes, extras, [])
    assert candidates == [
        {'name': 'gpu-01', 'gpus': 8, 'partition': 'batch', 'drained': False, 'reason': '', 'tag': None},
        {'name': 'gpu-02', 'gpus': 4, 'partition': None, 'drained': True, 'reason': 'gpuhc:deep:dcgm: bad', 'tag': {'tier': 'deep', 'check': 'dcgm'}},
        {'name': 'gpu-04', 'gpus': 1, 'partition': None, 'drained': False, 'reason': '', 'tag': None}]
    assert skipped == {
        'bad,name': 'its name is not a Slurm node name this module puts on a command line (%s)' % SLURM_NAME_TEXT,
        'gpu-03': "its partition '-x' is not a Slurm partition name this module puts on a command line"}
    # named nodes: each once, those without GPUs said why; the prefix reads the tag
    candidates, skipped = dh.select(nodes, extras, ['gpu-02', 'cpu-01', 'gpu-02'], 'ours', 'other')
    assert candidates == [] and skipped == {
        'cpu-01': 'no GPU in its Gres',
        'gpu-02': 'drained by someone else ("gpuhc:deep:dcgm: bad"); include_drained=all tests it and puts the drain back'}
    # include_drained=ours by default: an admin's drain is left out
    nodes['gpu-01'] = node(flags=['DRAIN'], reason='admin')
    assert dh.select(nodes, extras, ['gpu-01']) == ([], {'gpu-01': 'drained by someone else ("admin"); include_drained=all tests it and puts '
                                                                   'the drain back'})
    candidates, skipped = dh.select(nodes, {}, ['gpu-01'])
    assert (candidates, skipped) == ([], {'gpu-01': 'no GPU in its Gres'})


def test_select_refuses_unknown_names_whole():
    with pytest.raises(dh.DeepFailure) as caught:
        dh.select({'b': node('b'), 'a': node('a')}, {}, ['x', 'a', 'y'])
    assert caught.value.msg == 'Slurm knows no node(s) x, y; its nodes are: a, b'


def test_gres_and_node_extras():
    assert dh.gres_gpus(None) == 0
    assert dh.gres_gpus(' gpu:h100:2 , gpu:3') == 5
    assert dh.gres_gpus('gpu:h100:12(S:0-1)') == 12
    assert dh.gres_gpus('gpu:a:b:4') == 0
    assert dh.node_extras({'n': {'gres': 'gpu:2,gpu:x:1', 'partitions': ['p', 'q']}}) == {'n': {'gpus': 3, 'partitions': ['p', 'q']}}


def test_batches_edges_and_reservation_minutes():
    assert dh.batches([1, 2, 3], None) == [[1, 2, 3]]
    assert dh.batches([1, 2, 3], 3) == [[1, 2, 3]]
    assert dh.batches([1, 2, 3], 2) == [[1, 2], [3]]
    assert dh.batches([], 0) == []
    group = [1, 2]
    assert dh.batches(group, 0)[0] is not group
    assert dh.reservation_minutes('30') == 40


PROGRAM = '/usr/local/sbin/gpucluster-healthcheck'


def test_srun_argv_whole_with_defaults_and_without_partition():
    argv = dh.srun_argv({'name': 'gpu-01', 'gpus': 4, 'partition': None}, 'res', PROGRAM, {}, 45)
    assert argv == ['srun', '--reservation=res', '--nodelist=gpu-01', '--nodes=1', '--ntasks=1', '--exclusive', '--gres=gpu:4', '--time=45',
                    '--immediate=120', '--job-name=gpucluster-deep-health', PROGRAM, '--tier', 'deep', '--node', 'gpu-01', '--deep-config', '{}']
    argv = dh.srun_argv({'name': 'gpu-01', 'gpus': 4}, 'res', PROGRAM, {'b': 1, 'a': 2}, 45, srun='/bin/srun', immediate=7)
    assert argv[0] == '/bin/srun' and argv[8] == '--immediate=7' and argv[-1] == '{"a": 2, "b": 1}'


@pytest.mark.parametrize('candidate, reservation, program, message', [
    ({'name': '-n', 'gpus': 1}, 'r', PROGRAM, "node name is '-n', expected a Slurm node name: " + SLURM_NAME_TEXT),
    ({'name': 'n', 'gpus': 1}, 'r s', PROGRAM, "reservation is 'r s', expected a Slurm reservation name: " + SLURM_NAME_TEXT),
    ({'name': 'n', 'gpus': 1, 'partition': 'a=b'}, 'r', PROGRAM, "partition is 'a=b', expected a Slurm partition name: " + SLURM_NAME_TEXT),
    ({'name': 'n', 'gpus': 1}, 'r', '/usr/bin/', "program is '/usr/bin/', expected the absolute path of gpucluster-healthcheck on the "
     'nodes (a file: no spaces, not ending in "/")'),
])
def test_srun_argv_refusals_whole(candidate, reservation, program, message):
    with pytest.raises(InputError) as caught:
        dh.srun_argv(candidate, reservation, program, {}, 10)
    assert str(caught.value) == message


def test_check_program_takes_a_one_character_name():
    assert dh.check_program('p', '/a') == '/a'
    with pytest.raises(InputError):
        dh.check_program('p', '/a b')
    with pytest.raises(InputError):
        dh.check_program('p', '/a\tb')


# ---------------------------------------------------------------- settle, whole

def cand(reason=None, name='gpu-01'):
    return {'name': name, 'gpus': 8, 'partition': 'batch', 'drained': reason is not None, 'reason': reason or '',
            'tag': hc.parse_tag(reason) if reason else None}


def job(results, passes=None, **extra):
    report, status = hd.outcome('gpu-01', list(results), 'gpuhc')
    if passes is not None:
        report['passes'] = passes
    out = {'rc': status, 'stdout': hd.report_line(report) + '\n', 'stderr': '', 'timed_out': False, 'timeout': 60}
    out.update(extra)
    return out, report


def rec(check, status, reason, **extra):
    item = {'stage': 'deep', 'node': 'gpu-01', 'check': check, 'status': status, 'reason': reason}
    item.update(extra)
    return item


PASS = [hd.result('dcgm', 'pass', 'ok', value=1.0, threshold=None), hd.result('nccl', 'pass', '', value=0, threshold=2.5)]
FAIL = [hd.result('dcgm', 'fail', 'bad row'), hd.result('nccl', 'fail', 'slow')]
ERROR = [hd.result('dcgm', 'error', 'no engine'), hd.result('ib-bw', 'error', 'x')]
DEEP = 'gpuhc:deep:dcgm: old'
PERIODIC = 'gpuhc:periodic:xid: Xid 79'


def settle(candidate, results, passes=None, after=None, resume_after=1):
    the_job, report = job(results, passes)
    return dh.settle(candidate, the_job, after, resume_after=resume_after), report


def test_settle_idle_pass_records_whole():
    out, report = settle(cand(), PASS)
    assert out == {'name': 'gpu-01', 'action': 'none', 'reason': None, 'message': 'passes', 'verdict': True, 'report': report,
                   'records': [rec('dcgm', 'pass', 'ok', value=1.0), rec('nccl', 'pass', '', value=0, threshold=2.5)]}


def test_settle_idle_errors_whole():
    out, report = settle(cand(), ERROR)
    assert out == {'name': 'gpu-01', 'action': 'none', 'reason': None, 'message': 'passes (could not run: dcgm, ib-bw)', 'verdict': True,
                   'report': report, 'records': [rec('dcgm', 'fail', 'could not run: no engine'), rec('ib-bw', 'fail', 'could not run: x')]}


def test_settle_failures_whole():
    out, report = settle(cand(), FAIL)
    assert (out['action'], out['reason'], out['message']) == ('drain', report['reason'], 'failing: drained with "%s"' % report['reason'])
    assert report['reason'] == 'gpuhc:deep:dcgm: bad row (+1 more)'
    out, report = settle(cand('admin'), FAIL)
    assert (out['action'], out['reason'], out['message']) == (
        'restore', 'admin', 'failing (gpuhc:deep:dcgm: bad row (+1 more)); drained by someone else before, that drain is put back')
    out, report = settle(cand(PERIODIC), FAIL)
    assert (out['action'], out['reason']) == ('drain', 'gpuhc:deep:dcgm: bad row (+1 more)')


@pytest.mark.parametrize('before, results, passes, resume_after, action, reason, message', [
    (DEEP, PASS, None, 1, 'resume', None, 'every deep check passes: resumed (was "gpuhc:deep:dcgm: old")'),
    (DEEP, PASS, 3, 3, 'resume', None, 'every deep check passes (3 deep runs in a row): resumed (was "gpuhc:deep:dcgm: old")'),
    (DEEP, PASS, 2, 3, 'restore', DEEP, 'passes (2 of 3 deep runs in a row): its drain is put back until run 3'),
    (DEEP, PASS, 'x', 1, 'resume', None, 'every deep check passes: resumed (was "gpuhc:deep:dcgm: old")'),
    (DEEP, PASS, 'x', 2, 'restore', DEEP, 'passes (1 of 2 deep runs in a row): its drain is put back until run 2'),
    (DEEP, ERROR, None, 1, 'restore', DEEP, 'passes; some checks could not run (dcgm, ib-bw): its drain is put back'),
    (PERIODIC, PASS, None, 1, 'restore', PERIODIC, 'passes; drained by the periodic tier, which resumes it itself: its drain is put back'),
    (PERIODIC, ERROR, None, 1, 'restore', PERIODIC, 'passes; some checks could not run (dcgm, ib-bw): its drain is put back'),
    ('admin', PASS, None, 1, 'restore', 'admin', 'passes; drained by someone else: its drain is put back'),
])
def test_settle_drained_whole(before, results, passes, resume_after, action, reason, message):
    out, _report = settle(cand(before), results, passes, resume_after=resume_after)
    assert (out['action'], out['reason'], out['message'], out['verdict']) == (action, reason, message, True)


def test_settle_counts_the_report_passes_by_default():
    the_job, _report = job(PASS, passes=1)
    assert dh.settle(cand(DEEP), the_job, None)['action'] == 'resume'
    out, _report = settle(cand(DEEP), PASS, passes=0)
    assert (out['action'], out['message']) == ('restore', 'passes (0 of 1 deep runs in a row): its drain is put back until run 1')


def test_settle_drained_during_the_test_keeps_records():
    out, report = settle(cand(DEEP), FAIL, after=node(flags=['DRAIN'], reason='other'))
    assert out == {'name': 'gpu-01', 'action': 'none', 'reason': None, 'message': 'drained while it was tested ("other"); left as it is',
                   'verdict': True, 'report': report, 'records': [rec('dcgm', 'fail', 'bad row'), rec('nccl', 'fail', 'slow')]}
    # the same drain as before, or a node that is not drained after, is no news
    out, _report = settle(cand(DEEP), PASS, after=node(flags=['DRAIN'], reason=DEEP))
    assert out['action'] == 'resume'
    out, _report = settle(cand(DEEP), PASS, after=node(reason='other'))
    assert out['action'] == 'resume'


@pytest.mark.parametrize('before, the_job, action, reason, message, why', [
    (None, {'rc': 3, 'stdout': 'a\n b', 'stderr': 'err  x'}, 'none', None,
     'the job gave no verdict (it failed (rc 3): err x a b); left in service', 'failed (rc 3): err x a b'),
    (DEEP, {'rc': None, 'timed_out': True, 'timeout': 70}, 'restore', DEEP,
     'the job gave no verdict (it did not finish within 70s); its drain is put back', 'did not finish within 70s'),
    (None, {}, 'none', None, 'the job gave no verdict (it failed (rc None): no output); left in service', 'failed (rc None): no output'),
    (None, {'rc': 1, 'stderr': 'e' * 200, 'stdout': 'o' * 200}, 'none', None,
     'the job gave no verdict (it failed (rc 1): %s); left in service' % ('e' * 99 + ' ' + 'o' * 200), 'failed (rc 1): %s' % ('e' * 99 + ' ' + 'o' * 200)),
])
def test_settle_without_a_report_whole(before, the_job, action, reason, message, why):
    out = dh.settle(cand(before), the_job, None)
    assert out == {'name': 'gpu-01', 'action': action, 'reason': reason, 'message': message, 'verdict': False, 'report': None,
                   'records': [rec('deep_job', 'fail', 'the deep tier job %s; the job printed no deep tier report (a line starting '
                                   '"gpucluster-healthcheck deep:")' % why)]}


def test_settle_without_a_report_while_drained_by_another():
    out = dh.settle(cand(DEEP), {'rc': 1}, node(flags=['DRAIN'], reason='other'))
    assert (out['action'], out['reason'], out['message'], out['verdict']) == (
        'none', None, 'drained while it was tested ("other"); left as it is', False)


# ---------------------------------------------------------------- program and options

def refused(call, *args):
    with pytest.raises(InputError) as caught:
        call(*args)
    return str(caught.value)


@pytest.mark.parametrize('program, message', [
    (None, 'program is None, expected the absolute path of gpucluster-healthcheck on the nodes'),
    ('bin/x', "program is 'bin/x', expected the absolute path of gpucluster-healthcheck on the nodes"),
    ('/proc', "program is '/proc', which is under /proc, a kernel file system; expected the absolute path of gpucluster-healthcheck on the nodes"),
    ('/usr/../dev/x', "program is '/usr/../dev/x', which is under /dev, a kernel file system; expected the absolute path of "
     'gpucluster-healthcheck on the nodes'),
    ('/sys/x', "program is '/sys/x', which is under /sys, a kernel file system; expected the absolute path of gpucluster-healthcheck on the nodes"),
])
def test_program_refusals_whole(program, message):
    assert refused(dh._program, program) == message


def test_program_on_this_host(tmp_path):
    assert dh._program('/procx/y') == '/procx/y'
    # the path as this host resolves it: through a directory it does not have, no directory
    assert dh._program(str(tmp_path) + '/nothere/..') == str(tmp_path) + '/nothere/..'
    assert refused(dh._program, str(tmp_path) + '/.') == \
        ("program is %r, which is a directory on this host; expected the absolute path of the gpucluster-healthcheck program on the nodes"
         % (str(tmp_path) + '/.'))
    plain = tmp_path / 'hc'
    plain.write_text('#!/bin/sh\n')
    os.chmod(str(plain), 0o644)
    expected = ("program is %r, which is not executable on this host; expected the absolute path of the gpucluster-healthcheck program on "
                'the nodes (mode 0755)' % str(plain))
    if os.access(str(plain), os.X_OK):
        pytest.skip('this user executes any file')
    assert refused(dh._program, str(plain)) == expected


def test_program_not_executable_for_root(tmp_path, monkeypatch):
    plain = tmp_path / 'hc'
    plain.write_text('#!/bin/sh\n')
    asked = []

    def access(path, mode):
        asked.append((path, mode))
        return False
    monkeypatch.setattr(dh.os, 'access', access)
    assert refused(dh._program, str(plain)).startswith("program is %r, which is not executable on this host" % str(plain))
    assert asked == [(str(plain), os.X_OK)]
    os.chmod(str(plain), 0o755)
    monkeypatch.setattr(dh.os, 'access', lambda path, mode: mode == os.X_OK)
    assert dh._program(str(plain)) == str(plain)


def params(**extra):
    out = {'names': ['gpu-01'], 'reservation': 'deep', 'time_limit': 30, 'batch_size': 0, 'program': PROGRAM, 'prefix': 'gpuhc',
           'settings': {'checks': ['dcgm']}}
    out.update(extra)
    return out


@pytest.mark.parametrize('extra, message', [
    ({'names': ['a', 'b c']}, "names[1] is 'b c', expected a Slurm node name: " + SLURM_NAME_TEXT),
    ({'reservation': None}, 'reservation is None, expected a Slurm reservation name: ' + SLURM_NAME_TEXT),
    ({'time_limit': 1441}, 'time_limit is 1441, expected a whole number of minutes between 1 and 1440'),
    ({'time_limit': 0}, 'time_limit is 0, expected a whole number of minutes between 1 and 1440'),
    ({'batch_size': 100001}, 'batch_size is 100001, expected a whole number of nodes (0: all at once) between 0 and 100000'),
    ({'resume_after_passes': 0}, 'resume_after_passes is 0, expected a whole number between 1 and 100'),
    ({'resume_after_passes': 101}, 'resume_after_passes is 101, expected a whole number between 1 and 100'),
    ({'prefix': '1gpuhc'}, "prefix is '1gpuhc', expected letters, digits, \"_\" and \"-\", starting with a letter (the health check's reason_prefix)"),
    ({'prefix': 'gpuhc:'}, "prefix is 'gpuhc:', expected letters, digits, \"_\" and \"-\", starting with a letter (the health check's reason_prefix)"),
    ({'settings': {'checks': []}}, 'settings.checks is [], expected at least one of dcgm, nccl, nvbandwidth, ib-bw'),
    ({'settings': {'dcgm_level': 0}}, 'settings: dcgm_level is 0, expected one of 1, 2, 3, 4'),
    ({'settings': 'x'}, "settings: the deep tier settings are 'x', expected a JSON object with keys " + ', '.join(sorted(hd.DEFAULTS))),
])
def test_check_deep_input_refusals_whole(extra, message):
    assert refused(dh.check_deep_input, params(**extra)) == message


def test_check_deep_input_edges_pass():
    assert dh.check_deep_input(params(time_limit=1440, batch_size=100000, resume_after_passes=100, prefix='a')) == {'checks': ['dcgm']}
    assert dh.check_deep_input(params(time_limit=1, resume_after_passes=1, names=[], settings={'dcgm_level': 4, 'checks': ['nccl']})) == \
        {'checks': ['nccl'], 'dcgm_level': 4}
