# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why a node is drained and whether the resume playbook may resume it (_validation_resume).

The hook runner's log lines are made with the runner's own formatters (_slurm_hooks.log_line,
drain_reason), so a change of the runner's format breaks these tests rather than the playbook.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as hooks
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_resume as vr

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
# A later epilog failure of another hook: a prolog drain still names the prolog hook's run.
LOG_EPILOG_FAILED = LOG + '\n' + '\n'.join([
    hooks.log_line('epilog', '12', '90-all-scratch-cleanup', 2, 0.03, 'failed'),
    'epilog hook 90-all-scratch-cleanup output: rm: cannot remove /scratch/12: Device or resource busy',
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


def test_hook_output_goes_to_its_own_run():
    # prologs and epilogs of several jobs run at once on the node: an output line need not follow its own run's result line
    text = '\n'.join([
        hooks.log_line('prolog', '21', '95-all-rootless', 1, 0.004, 'failed'),
        hooks.log_line('prolog', '22', '50-all-enroot-dirs', 0, 0.011, 'ok'),
        'prolog hook 95-all-rootless output: singularity: command not found',
        hooks.log_line('prolog', '23', '90-all-scratch', 1, 0.02, 'failed'),
        hooks.log_line('epilog', '20', '90-all-scratch', 0, 0.03, 'ok'),
        'prolog hook 90-all-scratch output: no space left on device',
    ])
    runs = vr.parse_hook_log(text)
    assert [(r['phase'], r['job'], r['hook'], r['output']) for r in runs] == [
        ('prolog', '21', '95-all-rootless', 'singularity: command not found'),
        ('prolog', '22', '50-all-enroot-dirs', ''),
        ('prolog', '23', '90-all-scratch', 'no space left on device'),
        ('epilog', '20', '90-all-scratch', ''),
    ]


@pytest.mark.parametrize('job, output, text', [
    ('12', '', 'prolog hook 95-all-x failed (exit 1) in job 12'),
    ('-', '', 'prolog hook 95-all-x failed (exit 1)'),
    ('', 'boom', 'prolog hook 95-all-x failed (exit 1): boom'),
    ('7', 'y' * 250, 'prolog hook 95-all-x failed (exit 1) in job 7: ' + 'y' * 200),
])
def test_hook_failure_text(job, output, text):
    run = {'phase': 'prolog', 'job': job, 'hook': '95-all-x', 'rc': 1, 'status': 'failed', 'ok': False, 'output': output}
    assert vr.hook_failure_text(run) == text


def test_hook_failure_text_without_job_from_the_log():
    # the runner writes job=- when Slurm gave no job id
    run = vr.last_hook_failure(hooks.log_line('prolog', None, '95-all-x', 3, 0.01, 'failed'))
    assert vr.hook_failure_text(run) == 'prolog hook 95-all-x failed (exit 3)'


MIG = ('gpucluster.bringup.mig: applying layout all-1g; if this stays, fix the cause, then run gpucluster.bringup.mig_change '
       '--limit gpu-01 -e mig_layout=all-1g')


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
     'GPU health check, periodic tier, check gpu-count: healthcheck: gpu-count: NVML sees 7 GPUs, expected 8'),
    ('gpuhc:prolog:xid: GPU 0 (00000000:1B:00.0) had Xid 79 since boot', ('DRAIN',), 'MIXED', None, 'healthcheck', None,
     'GPU health check, prolog tier, check xid: gpuhc:prolog:xid: GPU 0 (00000000:1B:00.0) had Xid 79 since boot'),
    ('gpuhc:periodic:ib: InfiniBand mlx5_3 port 1 is DOWN', ('DRAIN',), 'IDLE', None, 'healthcheck', None,
     'GPU health check, periodic tier, check ib: gpuhc:periodic:ib: InfiniBand mlx5_3 port 1 is DOWN'),
    ('gpuhc is down for lunch', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: gpuhc is down for lunch (set by root)'),
    ('validate: node/gres_conf: x', ('DRAIN',), 'IDLE', None, 'validate', None, 'validate: node/gres_conf: x'),
    ('gres/gpu count reported lower than configured (7 < 8)', ('DRAIN', 'INVALID_REG'), 'IDLE', None, 'gres', None,
     'gres/gpu count reported lower than configured (7 < 8)'),
    ('Not responding', ('NOT_RESPONDING',), 'DOWN', None, 'not_responding', None, 'Not responding'),
    ('', (), 'DOWN', None, 'down', None, 'DOWN'),
    ('disk replacement', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: disk replacement (set by root)'),
    # the log's last failure is an epilog hook's: a prolog hook's drain is explained by that prolog hook's run
    (FAILED, ('DRAIN',), 'IDLE', LOG_EPILOG_FAILED, 'hook', '95-all-rootless',
     'prolog hook 95-all-rootless failed (exit 1) in job 12: singularity: command not found'),
    ('Epilog error', ('DRAIN',), 'IDLE', LOG_EPILOG_FAILED, 'epilog_error', '90-all-scratch-cleanup',
     '"Epilog error": epilog hook 90-all-scratch-cleanup failed (exit 2) in job 12: rm: cannot remove /scratch/12: Device or resource busy'),
    ('Prolog launch failure', ('DRAIN',), 'IDLE', LOG, 'prolog_error', '95-all-rootless',
     '"Prolog launch failure": prolog hook 95-all-rootless failed (exit 1) in job 12: singularity: command not found'),
    ('Prolog launch failure', ('DRAIN',), 'IDLE', None, 'prolog_error', None, '"Prolog launch failure": the hook runner log could not be read'),
    # gres: a gres/ reason with "count" or "reported"
    ('gres/gpu count too low (7 < 8)', ('DRAIN',), 'IDLE', None, 'gres', None, 'gres/gpu count too low (7 < 8)'),
    # not one of Slurm's own gres reasons ("gres/gpu count reported lower than configured", "gpu:a100 count too low"): an admin's
    ('gres/gpu reported by slurmd differs from gres.conf', ('DRAIN',), 'IDLE', None, 'admin', None,
     'drained by an admin: gres/gpu reported by slurmd differs from gres.conf (set by root)'),
    ('gres/gpu cabling check', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: gres/gpu cabling check (set by root)'),
    ('recount the disks', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: recount the disks (set by root)'),
    ('disks reported slow', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: disks reported slow (set by root)'),
    # not responding: the flag or the reason, either one
    ('', ('NOT_RESPONDING',), 'DOWN', None, 'not_responding', None, 'slurmd does not answer (DOWN+NOT_RESPONDING)'),
    ('', ('DRAIN', 'NOT_RESPONDING'), 'IDLE', None, 'not_responding', None, 'slurmd does not answer (IDLE+DRAIN+NOT_RESPONDING)'),
    ('Not responding', (), 'DOWN', None, 'not_responding', None, 'Not responding'),
    # down: no reason at all (any state), or a DOWN node with one of Slurm's own reasons
    ('', ('DRAIN',), 'IDLE', None, 'down', None, 'IDLE+DRAIN'),
    ('Node unexpectedly rebooted', (), 'DOWN', None, 'down', None, 'Node unexpectedly rebooted'),
    ('Kill task failed', (), 'DOWN', None, 'down', None, 'Kill task failed'),
    ('Node unexpectedly rebooted', ('DRAIN',), 'IDLE', None, 'admin', None, 'drained by an admin: Node unexpectedly rebooted (set by root)'),
    ('disk replacement', (), 'DOWN', None, 'admin', None, 'down by an admin: disk replacement (set by root)'),
    # the mig role's drain is the mig role's, also while the slurmd it restarted has not registered yet (NOT_RESPONDING)
    (MIG, ('DRAIN',), 'IDLE', None, 'mig', None, 'drained by the mig role: ' + MIG),
    (MIG, ('DRAIN', 'NOT_RESPONDING'), 'IDLE', None, 'mig', None, 'drained by the mig role: ' + MIG),
    (MIG, ('DRAIN', 'NOT_RESPONDING'), 'DOWN', None, 'mig', None, 'drained by the mig role: ' + MIG),
    ('gpucluster.bringup.mig: layout balanced failed, fix the cause', ('DRAIN',), 'IDLE', None, 'mig', None,
     'drained by the mig role: gpucluster.bringup.mig: layout balanced failed, fix the cause'),
    ('RMA; gpucluster.bringup.mig: later', ('DRAIN',), 'IDLE', None, 'admin', None,
     'drained by an admin: RMA; gpucluster.bringup.mig: later (set by root)'),
    # the closed loop's tag, and the validate tag while the node does not answer
    ('gpuloop:reboot:xid-79: GPU 3 had Xid 79', ('DRAIN', 'REBOOT_REQUESTED'), 'IDLE', None, 'loop', None,
     'the GPU health closed loop, step reboot, condition xid-79: gpuloop:reboot:xid-79: GPU 3 had Xid 79'),
    ('gpuloop:service:xid-79: 3 reboots in 86400s', ('DRAIN',), 'IDLE', None, 'loop', None,
     'the GPU health closed loop, step service, condition xid-79: gpuloop:service:xid-79: 3 reboots in 86400s'),
    ('validate: node/gres_conf: x', ('DRAIN', 'NOT_RESPONDING'), 'IDLE', None, 'validate', None, 'validate: node/gres_conf: x'),
])
def test_diagnose(reason, flags, state, log, cause, hook, detail):
    assert vr.diagnose(node(state, flags, reason), log) == {'cause': cause, 'hook': hook, 'detail': detail}


def test_diagnose_admin_drain_without_user():
    assert vr.diagnose(node(reason='disk replacement', user=''))['detail'] == 'drained by an admin: disk replacement'
    assert vr.diagnose(node(reason='disk replacement', user=None))['detail'] == 'drained by an admin: disk replacement'


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
FAIL2 = FAIL + [{'stage': 'node', 'node': 'gpu-01', 'check': 'munge', 'status': 'fail', 'reason': 'munge key differs'},
                {'stage': 'node', 'node': 'gpu-01', 'check': 'enroot', 'status': 'skip', 'reason': 'not installed'}]


@pytest.mark.parametrize('cause, records, admin, action, reason', [
    ('hook', PASS, False, 'resume', 'node checks pass; cause was: D'),
    ('hook', FAIL, False, 'keep', 'node checks still fail: gres_conf: gres.conf differs; cause: D'),
    ('hook', None, False, 'keep', 'node checks did not run on gpu-01 (unreachable?); cause: D'),
    ('admin', PASS, False, 'keep', 'D; ' + vr.ADMIN_KEPT),
    ('admin', PASS, True, 'resume', 'node checks pass; cause was: D'),
    ('validate', PASS, False, 'resume', 'node checks pass; cause was: D'),
    ('hook', FAIL2, True, 'keep', 'node checks still fail: gres_conf: gres.conf differs; munge: munge key differs; cause: D'),
    ('down', PASS[1:], False, 'resume', 'node checks pass; cause was: D'),
    ('down', [], False, 'resume', 'node checks pass; cause was: D'),
])
def test_decide(cause, records, admin, action, reason):
    assert vr.decide(node(), {'cause': cause, 'hook': None, 'detail': 'D'}, records, admin) == {'action': action, 'reason': reason}


def test_decide_keeps_admin_drains_by_default():
    assert vr.decide(node(), {'cause': 'admin', 'hook': None, 'detail': 'D'}, PASS) == {
        'action': 'keep', 'reason': 'D; ' + vr.ADMIN_KEPT}


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
    assert vr.probe_outcome('gpu-01', {'rc': 1}, node(flags=())) == {'ok': False, 'reason': 'probe job on gpu-01 failed (rc 1): no output'}
    assert vr.probe_outcome('gpu-01', {'rc': 1, 'stdout': '', 'stderr': None}, node(flags=()))['reason'] == 'probe job on gpu-01 failed (rc 1): no output'


def test_probe_outcome_reads_the_hook_log():
    outcome = vr.probe_outcome('gpu-01', {'rc': 1, 'stderr': 'srun: error: Prolog error'}, node(reason='Prolog error', user='slurm'), LOG)
    assert outcome == {'ok': False, 'reason': 'probe job on gpu-01 failed (rc 1: srun: error: Prolog error) and node is IDLE+DRAIN '
                                              '(reason: "Prolog error" set by slurm); cause: "Prolog error": prolog hook 95-all-rootless '
                                              'failed (exit 1) in job 12: singularity: command not found'}


def test_probe_outcome_keeps_the_last_200_characters_of_output():
    out = 'a' * 100 + ' ' + 'b' * 300
    assert vr.probe_outcome('gpu-01', {'rc': 1, 'stdout': out}, node(flags=()))['reason'] == 'probe job on gpu-01 failed (rc 1): ' + 'b' * 200
    got = vr.probe_outcome('gpu-01', {'rc': 1, 'stderr': 'e\n' * 150, 'stdout': 'x'}, node(reason=FAILED))['reason']
    assert got.startswith('probe job on gpu-01 failed (rc 1: ' + ' e' * 99 + ' x) and node is IDLE+DRAIN'), got


# ---------------------------------------------------------------- plan_resume, resume_records

def named(name, state='IDLE', flags=('DRAIN',), reason='', user='root'):
    return dict(node(state, flags, reason, user), name=name)


CHECKED = {'gpu-01': {'records': PASS, 'hook_log': LOG},
           'gpu-02': {'records': PASS, 'hook_log': ''},
           'gpu-04': {'records': FAIL, 'hook_log': None},
           'gpu-05': {'skipped': True, 'changed': False},
           'gpu-06': {'records': PASS}}


def problems():
    return vr.problem_nodes({
        'gpu-01': named('gpu-01', reason='Prolog error', user='slurm'),
        'gpu-02': named('gpu-02', reason='disk replacement'),
        'gpu-03': named('gpu-03', reason='Prolog error', user='slurm'),
        'gpu-04': named('gpu-04', reason='validate: node/gres_conf: x'),
        'gpu-05': named('gpu-05', 'DOWN', ('NOT_RESPONDING',), 'Not responding', ''),
        'gpu-06': named('gpu-06', reason=FAILED),
        'gpu-07': named('gpu-07', flags=()),
    })


RESUMED_01 = 'node checks pass; cause was: "Prolog error": prolog hook 95-all-rootless failed (exit 1) in job 12: singularity: command not found'
RESUMED_06 = 'node checks pass; cause was: %s' % FAILED
ADMIN_02 = 'drained by an admin: disk replacement (set by root)'
KEPT = {
    'gpu-02': ADMIN_02 + '; ' + vr.ADMIN_KEPT,
    'gpu-03': 'node checks did not run on gpu-03 (unreachable?); cause: "Prolog error": the hook runner log could not be read',
    'gpu-04': 'node checks still fail: gres_conf: gres.conf differs; cause: validate: node/gres_conf: x',
    'gpu-05': 'node checks did not run on gpu-05 (unreachable?); cause: Not responding',
}


def test_plan_resume():
    nodes = problems()
    assert [n['name'] for n in nodes] == ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-04', 'gpu-05', 'gpu-06']
    assert vr.plan_resume(nodes, CHECKED) == (['gpu-01', 'gpu-06'], KEPT)
    by_name = dict((n['name'], n) for n in nodes)
    assert [by_name[name]['diagnosis']['cause'] for name in sorted(by_name)] == [
        'prolog_error', 'admin', 'prolog_error', 'validate', 'not_responding', 'hook']
    # the hook log of the node's own check result explains its Prolog error; without a check result it could not be read
    assert by_name['gpu-01']['diagnosis'] == {'cause': 'prolog_error', 'hook': '95-all-rootless', 'detail': RESUMED_01[len('node checks pass; cause was: '):]}
    assert by_name['gpu-03']['diagnosis']['hook'] is None
    assert by_name['gpu-01']['decision'] == RESUMED_01
    assert by_name['gpu-06']['decision'] == RESUMED_06
    assert [name for name in sorted(by_name) if 'decision' in by_name[name]] == ['gpu-01', 'gpu-06']


def test_plan_resume_admin_drains():
    nodes = problems()
    kept = dict(KEPT)
    del kept['gpu-02']
    assert vr.plan_resume(nodes, CHECKED, True) == (['gpu-01', 'gpu-02', 'gpu-06'], kept)
    assert nodes[1]['decision'] == 'node checks pass; cause was: ' + ADMIN_02
    assert vr.plan_resume(problems(), CHECKED, False) == (['gpu-01', 'gpu-06'], KEPT)


def test_plan_resume_without_checks():
    nodes = problems()
    to_resume, kept = vr.plan_resume(nodes, {})
    assert to_resume == []
    assert sorted(kept) == ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-04', 'gpu-05', 'gpu-06']
    assert kept['gpu-01'] == KEPT['gpu-03'].replace('gpu-03', 'gpu-01')
    assert kept['gpu-06'] == 'node checks did not run on gpu-06 (unreachable?); cause: %s' % FAILED
    assert vr.plan_resume([], CHECKED) == ([], {})


def test_resume_records():
    nodes = problems()
    to_resume, kept = vr.plan_resume(nodes, CHECKED)
    kept['gpu-06'] = 'probe job on gpu-06 failed (rc 1): no output'
    records = vr.resume_records(nodes, ['gpu-01'], kept)
    assert records[0] == {'stage': 'resume', 'node': 'gpu-01', 'check': 'resume', 'status': 'pass',
                          'reason': '%s (was node is IDLE+DRAIN (reason: "Prolog error" set by slurm))' % RESUMED_01}
    assert [(r['node'], r['status'], r['reason']) for r in records[1:]] == [
        ('gpu-02', 'fail', KEPT['gpu-02']),
        ('gpu-03', 'fail', KEPT['gpu-03']),
        ('gpu-04', 'fail', KEPT['gpu-04']),
        ('gpu-05', 'fail', KEPT['gpu-05']),
        ('gpu-06', 'fail', 'probe job on gpu-06 failed (rc 1): no output'),
    ]
    assert set(r['stage'] for r in records) == set(r['check'] for r in records) == set(['resume'])
    assert to_resume == ['gpu-01', 'gpu-06']


def test_resume_records_check_mode_and_not_resumed():
    nodes = problems()
    to_resume, kept = vr.plan_resume(nodes, CHECKED)
    records = vr.resume_records(nodes, to_resume, kept)
    assert [(r['node'], r['status']) for r in records] == [
        ('gpu-01', 'pass'), ('gpu-02', 'fail'), ('gpu-03', 'fail'), ('gpu-04', 'fail'), ('gpu-05', 'fail'), ('gpu-06', 'pass')]
    assert records[5]['reason'] == '%s (was node is IDLE+DRAIN (reason: "%s" set by root))' % (RESUMED_06, FAILED)
    # a node neither resumed nor given a reason
    assert vr.resume_records(nodes[:1], [], {}) == [
        {'stage': 'resume', 'node': 'gpu-01', 'check': 'resume', 'status': 'fail', 'reason': 'not resumed'}]
    assert vr.resume_records([], ['gpu-01'], {}) == []


def test_resume_failure():
    exc = vr.ResumeFailure('scontrol -o show node failed (rc 1): down', nodes=[])
    assert isinstance(exc, vr.ModuleFailure)
    assert (str(exc), exc.msg, exc.result) == ('scontrol -o show node failed (rc 1): down', 'scontrol -o show node failed (rc 1): down', {'nodes': []})


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
    ({'probe_timeout': 1, 'checks': {'gpu 01': {}}}, "checks key is 'gpu 01', expected a Slurm node name: letters"),
])
def test_resume_input_refused(params, message):
    with pytest.raises(ValueError) as err:
        vr.check_resume_input(params)
    assert str(err.value).startswith(message), str(err.value)


def test_a_failed_record_without_reason_is_named():
    node = {'name': 'gpu-01', 'state': 'IDLE', 'flags': ['DRAIN'], 'reason': 'validate: x', 'reason_user': 'root'}
    decision = vr.decide(node, vr.diagnose(node), [{'check': 'gres_conf', 'status': 'fail'}])
    assert decision == {'action': 'keep', 'reason': 'node checks still fail: gres_conf: failed; cause: validate: x'}


@pytest.mark.parametrize('resume_admin_drains', [False, True])
def test_a_closed_loop_drain_is_never_resumed_here(resume_admin_drains):
    """The closed loop returns its own nodes (after the reboot and a passing deep tier) or sends them to service: resume.yml
    keeps them whatever their checks say, even with resume_admin_drains, and starts no slurmd there."""
    drained = node('IDLE', ('DRAIN',), 'gpuloop:service:xid-79: 3 reboots in 86400s')
    diagnosis = vr.diagnose(drained, None)
    decision = vr.decide(drained, diagnosis, [], resume_admin_drains)
    assert decision['action'] == 'keep' and vr.LOOP_KEPT in decision['reason']
    down = node('DOWN', ('DRAIN', 'NOT_RESPONDING'), 'gpuloop:reboot:xid-79: GPU 3 had Xid 79')
    assert vr.slurmd_start(down, resume_admin_drains)['start'] is False


# ---------------------------------------------------------------- slurmd_start, started_text: each text whole

LOOP_REASON = 'gpuloop:reboot:xid-79: GPU 3 had Xid 79'


@pytest.mark.parametrize('state, flags, reason, admin_drains, expected', [
    ('IDLE', ('DRAIN',), 'disk replacement', False, {'start': False, 'why': ''}),
    ('MIXED', (), '', False, {'start': False, 'why': ''}),
    ('DOWN', ('DRAIN', 'NOT_RESPONDING'), LOOP_REASON, True,
     {'start': False, 'why': 'slurmd not started on gpu-01: the closed loop handles it (%s)' % LOOP_REASON}),
    ('IDLE', ('DRAIN', 'NOT_RESPONDING'), 'disk replacement', False,
     {'start': False, 'why': "slurmd not started on gpu-01: an admin's drain (validate_resume_admin_drains overrides)"}),
    ('DOWN', (), 'disk replacement', False,
     {'start': False, 'why': "slurmd not started on gpu-01: an admin's down (validate_resume_admin_drains overrides)"}),
    ('DOWN', (), 'disk replacement', True, {'start': True, 'why': 'slurmd to be started on gpu-01 where it is stopped'}),
    ('IDLE', ('NOT_RESPONDING',), '', False, {'start': True, 'why': 'slurmd to be started on gpu-01 where it is stopped'}),
])
def test_slurmd_start_says_why(state, flags, reason, admin_drains, expected):
    assert vr.slurmd_start(node(state, flags, reason), admin_drains) == expected


def test_slurmd_start_of_a_node_without_flags():
    bare = {'name': 'gpu-01', 'state': 'DOWN', 'reason': ''}
    assert vr.slurmd_start(bare) == {'start': True, 'why': 'slurmd to be started on gpu-01 where it is stopped'}
    assert vr.slurmd_start(dict(bare, state='IDLE')) == {'start': False, 'why': ''}


def test_started_text_of_a_state_other_than_idle_keeps_its_case():
    assert vr.started_text('gpu-02', node('MIXED', ()), 3) == 'slurmd started on gpu-02; node MIXED after 3 s'
    assert vr.started_text('gpu-02', node('IDLE', ()), 3, check_mode=False) == 'slurmd started on gpu-02; node idle after 3 s'


# ---------------------------------------------------------------- the hook runner's log

def test_parse_hook_log_reads_every_field():
    text = '\n'.join(['prolog job=1 hook=h rc=- duration=1s status=skipped: x',
                      'epilog hook h output: not the prolog run',
                      'prolog job=2 hook=h rc=-3 duration=1s status=ok  ',
                      'epilog job=3 hook=e rc=12 duration=1s status=failed',
                      'prolog hook h output: spaced  out  '])
    assert vr.parse_hook_log(text) == [
        {'phase': 'prolog', 'job': '1', 'hook': 'h', 'rc': None, 'status': 'skipped: x', 'ok': True, 'output': ''},
        {'phase': 'prolog', 'job': '2', 'hook': 'h', 'rc': -3, 'status': 'ok', 'ok': True, 'output': 'spaced  out'},
        {'phase': 'epilog', 'job': '3', 'hook': 'e', 'rc': 12, 'status': 'failed', 'ok': False, 'output': ''},
    ]
    assert vr.parse_hook_log(None) == []
    assert vr.last_hook_failure(text, 'prolog') is None and vr.last_hook_failure(text)['job'] == '3'


# ---------------------------------------------------------------- argv and probe results

def test_reservation_argv_whole():
    assert vr.reservation_argv('scontrol', 'maint', ['gpu-01', 'gpu-02'], 30) == [
        'scontrol', 'create', 'reservation', 'ReservationName=maint', 'Nodes=gpu-01,gpu-02', 'StartTime=now', 'Duration=30', 'Users=root',
        'Flags=MAINT,IGNORE_JOBS']
    assert vr.reservation_argv('/usr/bin/scontrol', 'r', ['a'], 1)[4:7] == ['Nodes=a', 'StartTime=now', 'Duration=1']


@pytest.mark.parametrize('minutes, shown', [(0, '0'), (-5, '-5'), (True, 'True'), ('5', "'5'"), (1.5, '1.5'), (None, 'None')])
def test_reservation_minutes_refused(minutes, shown):
    with pytest.raises(vr.InputError) as err:
        vr.reservation_argv('scontrol', 'maint', ['a'], minutes)
    assert str(err.value) == 'minutes is %s, expected a whole number of minutes of at least 1' % shown


@pytest.mark.parametrize('args, argv', [
    (('gpu-01',), ['srun', '--nodes=1', '--nodelist=gpu-01', '--time=2', '--job-name=gpucluster-resume-probe', 'true']),
    (('gpu-01', 'maint', '/usr/bin/srun', ['batch', 'gpu']),
     ['/usr/bin/srun', '--nodes=1', '--nodelist=gpu-01', '--time=2', '--job-name=gpucluster-resume-probe', '--partition=batch,gpu',
      '--reservation=maint', 'true']),
    (('gpu-01', '', 'srun', ['gpu']), ['srun', '--nodes=1', '--nodelist=gpu-01', '--time=2', '--job-name=gpucluster-resume-probe', '--partition=gpu', 'true']),
])
def test_probe_argv_whole(args, argv):
    assert vr.probe_argv(*args) == argv


def test_partition_option_and_resume_argv():
    assert vr.partition_option(['a', 'b.c']) == '--partition=a,b.c'
    with pytest.raises(vr.InputError) as err:
        vr.partition_option(['a,b'])
    assert str(err.value).startswith("partition is 'a,b', expected a Slurm partition name")
    assert vr.resume_argv('scontrol', ['gpu-01', 'gpu-02', 'gpu-04']) == ['scontrol', 'update', 'NodeName=gpu-[01-02,04]', 'State=RESUME']


@pytest.mark.parametrize('job, result', [
    ({'rc': None, 'timed_out': True, 'timeout': 30}, {'rc': None, 'stdout': '', 'stderr': 'probe timed out after 30s'}),
    ({'rc': 1, 'stderr': 'err', 'stdout': None, 'timed_out': True, 'timeout': 30}, {'rc': 1, 'stdout': '', 'stderr': 'err probe timed out after 30s'}),
    ({'rc': 0, 'stdout': 'o', 'stderr': 'e', 'timed_out': False, 'timeout': 30}, {'rc': 0, 'stdout': 'o', 'stderr': 'e'}),
    ({}, {'rc': None, 'stdout': '', 'stderr': ''}),
])
def test_probe_result(job, result):
    assert vr.probe_result(job) == result


# ---------------------------------------------------------------- input checks: each message whole

NODE_NAME = 'a Slurm node name: letters, digits, "_", "-" and "." (no spaces, commas or "="), starting with a letter or digit, at most 64 characters'


@pytest.mark.parametrize('params, message', [
    ({'prefix': '1x'}, 'prefix is \'1x\', expected the health check\'s reason prefix, a word such as "gpuhc" (letters, digits, "-", "_")'),
    ({'prefix': None}, 'prefix is None, expected the health check\'s reason prefix, a word such as "gpuhc" (letters, digits, "-", "_")'),
    ({'started': {'gpu 1': 'x'}}, "started key is 'gpu 1', expected " + NODE_NAME),
    ({'started': {'gpu-1': 3}}, "started['gpu-1'] is 3, expected a non-empty string"),
    ({'wait_timeout': 0}, 'wait_timeout is 0, expected a whole number of seconds between 1 and 3600'),
    ({'wait_timeout': 3601}, 'wait_timeout is 3601, expected a whole number of seconds between 1 and 3600'),
    ({'checks': {'n1': {'hook_log': 3}}}, "checks['n1'].hook_log is 3, expected a string"),
    ({'checks': {'n1': {'records': 'x'}}}, "checks['n1'].records is 'x', expected a list"),
    ({'checks': {'n1': {'records': ['x']}}}, "checks['n1'].records[0] is 'x', expected a dict"),
    ({'checks': {'n1': {'records': [{'status': 'pass'}]}}}, "checks['n1'].records[0].check is None, expected a non-empty string"),
    ({'checks': {'n1': {'records': [{'check': 'c', 'status': 'pass', 'reason': 3}]}}}, "checks['n1'].records[0].reason is 3, expected a string"),
    ({'checks': {'n1': 7}}, "checks['n1'] is 7, expected the registered result of gpucluster.bringup.node_check (a dict with records and hook_log)"),
    ({'probe_timeout': 86401}, 'probe_timeout is 86401, expected a whole number of seconds between 1 and 86400'),
    ({'probe_timeout': 0}, 'probe_timeout is 0, expected a whole number of seconds between 1 and 86400'),
    ({'names': ['ok', 'a,b']}, "names[1] is 'a,b', expected " + NODE_NAME),
])
def test_resume_input_refused_whole_message(params, message):
    with pytest.raises(vr.InputError) as err:
        vr.check_resume_input(dict({'probe_timeout': 1}, **params))
    assert str(err.value) == message


@pytest.mark.parametrize('params', [{'wait_timeout': 3600}, {'wait_timeout': 1}, {'prefix': 'Gpu_hc-2'}, {'started': {'gpu-1': 'slurmd started'}},
                                    {'checks': {'n1': {'records': [{'check': 'c', 'status': 'skip', 'reason': ''}], 'hook_log': ''}}}])
def test_resume_input_accepted_at_the_bounds(params):
    assert vr.check_resume_input(dict({'probe_timeout': 86400}, **params)) is None


# ---------------------------------------------------------------- another reason prefix, Slurm's own drains

def test_a_site_prefix_names_the_health_checks_drains_everywhere():
    ours, other = 'site:periodic:xid: x', 'gpuhc:periodic:xid: x'
    assert vr.diagnose(node(reason=ours), None, 'site') == {
        'cause': 'healthcheck', 'hook': None, 'detail': 'GPU health check, periodic tier, check xid: site:periodic:xid: x'}
    assert vr.diagnose(node(reason=other), None, 'site') == {'cause': 'admin', 'hook': None, 'detail': 'drained by an admin: %s (set by root)' % other}
    assert vr.admin_detail(node(reason=other), 'site') == 'drained by an admin: %s (set by root)' % other
    assert vr.slurmd_start(node('DOWN', (), ours), False, 'site') == {'start': True, 'why': 'slurmd to be started on gpu-01 where it is stopped'}
    assert vr.problem_nodes({'gpu-01': node('DOWN', (), ours)}, prefix='site')[0]['line'] == (
        'gpu-01: node is DOWN (reason: "%s" set by root); down by gpucluster.bringup: %s; slurmd to be started on gpu-01 where it is stopped'
        % (ours, ours))
    assert vr.plan_resume(vr.problem_nodes({'gpu-01': node(reason=ours)}, prefix='site'), {'gpu-01': {'records': PASS}}, prefix='site') == (
        ['gpu-01'], {})


def test_slurmd_start_by_default_keeps_an_admins_down():
    assert vr.slurmd_start(node('DOWN', (), 'site:periodic:xid: x')) == {
        'start': False, 'why': "slurmd not started on gpu-01: an admin's down (validate_resume_admin_drains overrides)"}


@pytest.mark.parametrize('reason, user', [('Kill task failed (JobId=3 StepId=0)', 'root'), ('batch job complete failure', 'slurm')])
def test_slurms_own_drain_is_cause_slurm(reason, user):
    assert vr.diagnose(node(reason=reason, user=user)) == {'cause': 'slurm', 'hook': None, 'detail': 'drained by Slurm: %s' % reason}


def test_probe_argv_refuses_a_bad_node_name_whole():
    with pytest.raises(vr.InputError) as err:
        vr.probe_argv('a b')
    assert str(err.value) == "node name is 'a b', expected " + NODE_NAME


def test_problem_nodes_entries_whole_with_admin_drains_resumed():
    nodes = {'gpu-01': node(reason='disk'), 'gpu-02': dict(node('DOWN', (), 'disk'), name='gpu-02')}
    assert vr.problem_nodes(nodes, resume_admin_drains=True) == [
        dict(nodes['gpu-01'], problem='node is IDLE+DRAIN (reason: "disk" set by root)', owner='admin', start_slurmd=False, start_why='',
             line='gpu-01: node is IDLE+DRAIN (reason: "disk" set by root); drained by an admin: disk'),
        dict(nodes['gpu-02'], problem='node is DOWN (reason: "disk" set by root)', owner='admin', start_slurmd=True,
             start_why='slurmd to be started on gpu-02 where it is stopped',
             line='gpu-02: node is DOWN (reason: "disk" set by root); down by an admin: disk; slurmd to be started on gpu-02 where it is stopped')]


def test_admin_detail_by_default_knows_the_health_checks_tag():
    assert vr.admin_detail(node(reason='gpuhc:periodic:xid: x')) == 'drained by gpucluster.bringup: gpuhc:periodic:xid: x (set by root)'


def test_a_closed_loop_drain_is_kept_with_the_loops_words():
    drained = node(reason='gpuloop:service:xid-79: 3 reboots in 86400s')
    assert vr.decide(drained, vr.diagnose(drained), []) == {'action': 'keep', 'reason': (
        'the GPU health closed loop, step service, condition xid-79: gpuloop:service:xid-79: 3 reboots in 86400s; ' + vr.LOOP_KEPT)}
    assert vr.LOOP_KEPT == ('kept: the closed loop returns the node itself after its reboot and a passing deep tier, or sends it to service '
                            '(slurm_healthcheck_loop_*; its history: gpucluster-node-loop --history NODE)')
