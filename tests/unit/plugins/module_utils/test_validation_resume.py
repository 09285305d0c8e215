# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why a node is drained and whether the resume playbook may resume it (_validation_resume).

The hook runner's log lines are made with the runner's own formatters (_slurm_hooks.log_line,
drain_reason), so a change of the runner's format breaks these tests rather than the playbook.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _slurm_hooks as hooks
from ansible_collections.gpucluster.bringup.plugins.module_utils import _validation_resume as vr

FAILED = hooks.drain_reason('prolog', '95-all-rootless', 1, False)
LOG = '\n'.join([
    hooks.log_line('prolog', '11', '10-all-gpu-healthcheck', None, 0, 'skipped: requires nvidia-smi, not found'),
    hooks.log_line('prolog', '11', '50-all-enroot-dirs', 0, 0.012, 'ok'),
    hooks.log_line('prolog', '12', '50-all-enroot-dirs', 0, 0.011, 'ok'),
    hooks.log_line('prolog', '12', '95-all-rootless', 1, 0.004, 'failed'),
    'prolog hook 95-all-rootless output: singularity: command not found',
    'drained gpu-01: ' + FAILED,
    hooks.log_line('epilog', '12', '95-lastuserjob-enroot-cleanup', 0, 0.02, 'ok'),
])


def node(state='IDLE', flags=('DRAIN',), reason='', user='root'):
    return {'name': 'gpu-01', 'state': state, 'flags': list(flags), 'reason': reason, 'reason_user': user, 'reason_time': ''}


def test_parse_hook_log():
    runs = vr.parse_hook_log(LOG)
    assert [(r['phase'], r['job'], r['hook'], r['rc'], r['ok']) for r in runs] == [
        ('prolog', '11', '10-all-gpu-healthcheck', None, True),
        ('prolog', '11', '50-all-enroot-dirs', 0, True),
        ('prolog', '12', '50-all-enroot-dirs', 0, True),
        ('prolog', '12', '95-all-rootless', 1, False),
        ('epilog', '12', '95-lastuserjob-enroot-cleanup', 0, True),
    ]
    assert runs[3]['output'] == 'singularity: command not found'
    assert vr.last_hook_failure(LOG)['hook'] == '95-all-rootless'
    assert vr.last_hook_failure(LOG, 'epilog') is None
    assert vr.last_hook_failure('') is None


def test_parse_hook_log_with_journal_prefix_and_timeout():
    text = ('Nov 21 06:30:01 gpu-01 slurm-hooks[812]: ' + hooks.log_line('prolog', '30', '20-all-slow', None, 30.0, 'timed out after 30s'))
    run = vr.last_hook_failure(text)
    assert (run['hook'], run['rc'], run['status']) == ('20-all-slow', None, 'timed out after 30s')
    assert vr.hook_failure_text(run) == 'prolog hook 20-all-slow timed out after 30s in job 30'


@pytest.mark.parametrize('reason, flags, state, log, cause, hook, detail', [
    (FAILED, ('DRAIN',), 'IDLE', LOG, 'hook', '95-all-rootless',
     'prolog hook 95-all-rootless failed (exit 1) in job 12: singularity: command not found'),
    (FAILED, ('DRAIN',), 'IDLE', None, 'hook', '95-all-rootless', 'prolog hook 95-all-rootless failed (exit 1)'),
    ('Prolog error', ('DRAIN',), 'IDLE', LOG, 'prolog_error', '95-all-rootless',
     '"Prolog error": prolog hook 95-all-rootless failed (exit 1) in job 12: singularity: command not found'),
    ('Prolog error', ('DRAIN',), 'IDLE', '', 'prolog_error', None, '"Prolog error": the hook runner log has no failed prolog hook'),
    ('Prolog error', ('DRAIN',), 'IDLE', None, 'prolog_error', None, '"Prolog error": the hook runner log could not be read'),
    ('Epilog error', ('DRAIN',), 'IDLE', LOG, 'epilog_error', None, '"Epilog error": the hook runner log has no failed epilog hook'),
    ('healthcheck: gpu-count: NVML sees 7 GPUs, expected 8', ('DRAIN',), 'IDLE', None, 'healthcheck', None,
     'healthcheck: gpu-count: NVML sees 7 GPUs, expected 8'),
    ('validate: node/gres_conf: x', ('DRAIN',), 'IDLE', None, 'validate', None, 'validate: node/gres_conf: x'),
    ('gres/gpu count reported lower than configured (7 < 8)', ('DRAIN', 'INVALID_REG'), 'IDLE', None, 'gres', None,
     'gres/gpu count reported lower than configured (7 < 8)'),
    ('Not responding', ('NOT_RESPONDING',), 'DOWN', None, 'not_responding', None, 'Not responding'),
    ('', (), 'DOWN', None, 'down', None, 'DOWN'),
    ('disk replacement', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained with reason "disk replacement" by root'),
])
def test_diagnose(reason, flags, state, log, cause, hook, detail):
    assert vr.diagnose(node(state, flags, reason), log) == {'cause': cause, 'hook': hook, 'detail': detail}


def test_problem_nodes():
    nodes = {'gpu-01': node(reason=FAILED), 'gpu-02': node(flags=(), reason='', user=''), 'gpu-03': node('DOWN', ('NOT_RESPONDING',), 'Not responding')}
    nodes['gpu-02']['name'] = 'gpu-02'
    nodes['gpu-03']['name'] = 'gpu-03'
    got = vr.problem_nodes(nodes)
    assert [n['name'] for n in got] == ['gpu-01', 'gpu-03']
    assert got[0]['problem'] == 'node is IDLE+DRAIN (reason: "%s" set by root)' % FAILED
    assert [n['name'] for n in vr.problem_nodes(nodes, ['gpu-03'])] == ['gpu-03']


PASS = [{'stage': 'node', 'node': 'gpu-01', 'check': 'munge', 'status': 'pass', 'reason': 'ok'},
        {'stage': 'node', 'node': 'gpu-01', 'check': 'node_state', 'status': 'fail', 'reason': 'node is IDLE+DRAIN'}]
FAIL = PASS + [{'stage': 'node', 'node': 'gpu-01', 'check': 'gres_conf', 'status': 'fail', 'reason': 'gres.conf differs'}]


@pytest.mark.parametrize('cause, records, admin, action, reason', [
    ('hook', PASS, False, 'resume', 'node checks pass; cause was: D'),
    ('hook', FAIL, False, 'keep', 'node checks still fail: gres_conf: gres.conf differs; cause: D'),
    ('hook', None, False, 'keep', 'node checks did not run on gpu-01 (unreachable?); cause: D'),
    ('admin', PASS, False, 'keep', 'D; not resumed: an admin drain is resumed only with validate_resume_admin_drains'),
    ('admin', PASS, True, 'resume', 'node checks pass; cause was: D'),
    ('validate', PASS, False, 'resume', 'node checks pass; cause was: D'),
])
def test_decide(cause, records, admin, action, reason):
    assert vr.decide(node(), {'cause': cause, 'hook': None, 'detail': 'D'}, records, admin) == {'action': action, 'reason': reason}


def test_decide_bad_cause():
    with pytest.raises(ValueError, match=r"^unknown cause 'other'; valid causes: hook, prolog_error, epilog_error, healthcheck, validate, gres, "):
        vr.decide(node(), {'cause': 'other', 'hook': None, 'detail': 'D'}, PASS)


def test_probe_outcome():
    assert vr.probe_outcome('gpu-01', {'rc': 0}, node(flags=())) == {'ok': True, 'reason': 'resumed: a probe job ran on gpu-01'}
    again = vr.probe_outcome('gpu-01', {'rc': 1, 'stderr': 'srun: error: Job step aborted: Prolog error'}, node(reason=FAILED))
    assert again == {'ok': False, 'reason': 'probe job on gpu-01 failed (rc 1: srun: error: Job step aborted: Prolog error) and node is IDLE+DRAIN '
                                            '(reason: "prolog hook 95-all-rootless failed (exit 1)" set by root); '
                                            'cause: prolog hook 95-all-rootless failed (exit 1)'}
    assert vr.probe_outcome('gpu-01', {'rc': 1, 'stdout': 'x'}, node(flags=())) == {'ok': False, 'reason': 'probe job on gpu-01 failed (rc 1): x'}
    assert vr.probe_outcome('gpu-01', {'rc': 0}, None)['reason'] == 'probe job on gpu-01 failed (rc 0: no output) and Slurm no longer lists gpu-01'


# ---------------------------------------------------------------- input checks

REGISTERED = {'changed': False, 'records': [{'stage': 'node', 'node': 'gpu-01', 'check': 'munge', 'status': 'pass', 'reason': 'ok'}],
              'hook_log': '', 'passed': True, 'failed_checks': [], 'node_name': 'gpu-01', 'gpus': [], 'invocation': {'module_args': {}}}


@pytest.mark.parametrize('params', [
    {'names': [], 'checks': {}, 'probe_timeout': 120, 'reservation': 'gpucluster-resume'},
    {'names': ['gpu-01'], 'checks': {'gpu-01': REGISTERED}, 'probe_timeout': 1, 'reservation': ''},
    {'names': ['gpu-01'], 'checks': {'gpu-01': {'name': 'gpu-01', 'records': [], 'hook_log': None}}, 'probe_timeout': 86400, 'reservation': None},
    {'checks': {'gpu-01': {'skipped': True, 'changed': False}}, 'probe_timeout': '60', 'reservation': 'maint.2026_01'},
    {'checks': {'gpu-01': {'records': [{'check': 'x', 'status': 'fail'}]}}, 'probe_timeout': 5, 'reservation': 'r'},
])
def test_resume_input_accepted(params):
    assert vr.check_resume_input(params) is None


@pytest.mark.parametrize('params, message', [
    ({'checks': {'n1': 'notadict'}, 'probe_timeout': 1}, "checks['n1'] is 'notadict', expected the registered result of gpucluster.bringup.node_check"),
    ({'checks': {'n1': {'records': [{'check': 'x', 'status': 'ok'}]}}, 'probe_timeout': 1}, "checks['n1'].records[0].status is 'ok', expected one of"),
    ({'probe_timeout': -1}, 'probe_timeout is -1, expected a whole number of seconds between 1 and 86400'),
    ({'probe_timeout': 1, 'reservation': 'a b'}, "reservation is 'a b', expected a Slurm reservation name (empty: probe without one): letters"),
    ({'probe_timeout': 1, 'names': ['a b']}, "names[0] is 'a b', expected a Slurm node name"),
])
def test_resume_input_refused(params, message):
    with pytest.raises(ValueError) as err:
        vr.check_resume_input(params)
    assert str(err.value).startswith(message), str(err.value)


def test_a_failed_record_without_reason_is_named():
    node = {'name': 'gpu-01', 'state': 'IDLE', 'flags': ['DRAIN'], 'reason': 'validate: x', 'reason_user': 'root'}
    decision = vr.decide(node, vr.diagnose(node), [{'check': 'gres_conf', 'status': 'fail'}])
    assert decision == {'action': 'keep', 'reason': 'node checks still fail: gres_conf: failed; cause: validate: x'}
