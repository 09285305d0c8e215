# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_hooks import (
    drain_reason,
    held_drain,
    is_exclusive,
    is_ignored,
    is_last_user_job,
    log_line,
    needed_job_facts,
    parse_header,
    parse_hook_name,
    parse_scontrol_job,
    parse_uuid_map,
    phase_from_program,
    plan,
    task_prolog_lines,
)


@pytest.mark.parametrize('name, expected', [
    ('50-all-enroot-dirs', {'order': 50, 'class': 'all', 'label': 'enroot-dirs'}),
    ('05-exclusive-gpu', {'order': 5, 'class': 'exclusive', 'label': 'gpu'}),
    ('95-lastuserjob-enroot.cleanup', {'order': 95, 'class': 'lastuserjob', 'label': 'enroot.cleanup'}),
])
def test_parse_hook_name(name, expected):
    assert parse_hook_name(name) == expected


@pytest.mark.parametrize('name, message', [
    ('enroot-dirs', 'hook "enroot-dirs" is not named <NN>-<class>-<name> (e.g. "50-all-enroot-dirs"); classes: all, exclusive, lastuserjob'),
    ('50-all-', 'hook "50-all-" is not named <NN>-<class>-<name>'),
    ('50-sometimes-x', 'hook "50-sometimes-x" has class "sometimes"; valid classes: all, exclusive, lastuserjob'),
])
def test_parse_hook_name_errors(name, message):
    with pytest.raises(ValueError) as err:
        parse_hook_name(name)
    assert message in str(err.value)


@pytest.mark.parametrize('name, ignored', [
    ('50-all-x', False), ('.50-all-x', True), ('50-all-x~', True), ('50-all-x.dpkg-old', True),
    ('50-all-x.rpmnew', True), ('50-all-x.disabled', True), ('50-all-x.sh', False),
])
def test_is_ignored(name, ignored):
    assert is_ignored(name) is ignored


@pytest.mark.parametrize('text, expected', [
    ('#!/bin/bash\n# requires: enroot\n# timeout: 30\n', {'requires': ['enroot'], 'timeout': 30}),
    ('#!/bin/sh\n#Requires: nvidia-smi, /usr/bin/nvidia-cuda-mps-control enroot\n', {
        'requires': ['nvidia-smi', '/usr/bin/nvidia-cuda-mps-control', 'enroot'], 'timeout': None}),
    ('#!/bin/sh\necho hi\n', {'requires': [], 'timeout': None}),
    ('\n' * 40 + '# requires: late\n', {'requires': [], 'timeout': None}),
    ('# requires: a\n# requires: a b\n', {'requires': ['a', 'b'], 'timeout': None}),
])
def test_parse_header(text, expected):
    assert parse_header(text) == expected


@pytest.mark.parametrize('text, message', [
    ('# timeout: soon\n', '"# timeout: soon" must be a whole number of seconds, at least 1'),
    ('# timeout: 0\n', '"# timeout: 0" must be a whole number of seconds, at least 1'),
    ('# requires: $(rm)\n', '"# requires:" names "$(rm)", which is not a command name or path'),
])
def test_parse_header_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_header(text)
    assert message in str(err.value)


@pytest.mark.parametrize('names, phase, expected', [
    (['10-all-a', '20-all-b'], 'prolog', set()),
    (['10-exclusive-a', '20-lastuserjob-b'], 'prolog', {'exclusive'}),
    (['10-exclusive-a', '20-lastuserjob-b', 'junk'], 'epilog', {'exclusive', 'last_user_job'}),
])
def test_needed_job_facts(names, phase, expected):
    assert needed_job_facts(names, phase) == expected


def _hook(name, executable=True, requires=(), timeout=None):
    return {'name': name, 'executable': executable, 'header': {'requires': list(requires), 'timeout': timeout}}


HOOKS = [
    _hook('90-all-rootless', requires=['singularity']),
    _hook('50-all-enroot-dirs', requires=['enroot'], timeout=5),
    _hook('10-all-health'),
    _hook('60-exclusive-gpu-reset'),
    _hook('95-lastuserjob-cleanup'),
    _hook('70-all-notexec', executable=False),
    _hook('README'),
    _hook('50-all-x.dpkg-old'),
]


def _summary(result):
    return [(e['name'], e['run'], e['reason'], e['timeout']) for e in result]


def test_plan_prolog_shared_job():
    result = plan(HOOKS, 'prolog', {'exclusive': False, 'last_user_job': None}, {'enroot': True, 'singularity': False}, 60)
    assert _summary(result) == [
        ('10-all-health', True, 'run', 60),
        ('50-all-enroot-dirs', True, 'run', 5),
        ('60-exclusive-gpu-reset', False, 'skipped: job does not own the node', 60),
        ('70-all-notexec', False, 'skipped: not executable', 60),
        ('90-all-rootless', False, 'skipped: requires singularity, not found', 60),
        ('95-lastuserjob-cleanup', False, 'skipped: lastuserjob hooks run only in the epilog', 60),
        ('README', False, 'skipped: hook "README" is not named <NN>-<class>-<name> (e.g. "50-all-enroot-dirs"); '
                          'classes: all, exclusive, lastuserjob', 60),
    ]


@pytest.mark.parametrize('job, expected_runs', [
    ({'exclusive': True, 'last_user_job': True}, ['10-all-health', '50-all-enroot-dirs', '60-exclusive-gpu-reset', '95-lastuserjob-cleanup']),
    ({'exclusive': None, 'last_user_job': False}, ['10-all-health', '50-all-enroot-dirs']),
])
def test_plan_epilog(job, expected_runs):
    result = plan(HOOKS, 'epilog', job, {'enroot': True}, 60)
    assert [e['name'] for e in result if e['run']] == expected_runs


SEVERAL = [_hook('40-all-gpu-check', requires=['enroot', 'nvidia-smi', 'singularity'], timeout=7)]


@pytest.mark.parametrize('present, run, reason', [
    ({'enroot': True, 'nvidia-smi': True, 'singularity': True}, True, 'run'),
    # every tool is checked, not only the first: each missing one alone skips the hook and is named
    ({'enroot': False, 'nvidia-smi': True, 'singularity': True}, False, 'skipped: requires enroot, not found'),
    ({'enroot': True, 'nvidia-smi': False, 'singularity': True}, False, 'skipped: requires nvidia-smi, not found'),
    ({'enroot': True, 'nvidia-smi': True, 'singularity': False}, False, 'skipped: requires singularity, not found'),
    # several missing: all named, in the header's order
    ({'enroot': False, 'nvidia-smi': True, 'singularity': False}, False, 'skipped: requires enroot, singularity, not found'),
    ({'enroot': False, 'nvidia-smi': False, 'singularity': False}, False, 'skipped: requires enroot, nvidia-smi, singularity, not found'),
    # a tool nobody looked for counts as missing
    ({'enroot': True, 'nvidia-smi': True}, False, 'skipped: requires singularity, not found'),
])
def test_plan_hook_with_several_required_tools(present, run, reason):
    assert _summary(plan(SEVERAL, 'prolog', {}, present, 60)) == [('40-all-gpu-check', run, reason, 7)]


def test_several_requires_lines_and_tools_all_reach_the_plan():
    header = parse_header('#!/bin/sh\n# requires: enroot nvidia-smi\n# requires: singularity\n')
    assert header['requires'] == ['enroot', 'nvidia-smi', 'singularity']
    hooks = [{'name': '40-all-gpu-check', 'executable': True, 'header': header}]
    assert plan(hooks, 'prolog', {}, {'enroot': True, 'nvidia-smi': True, 'singularity': False}, 60)[0]['reason'] == \
        'skipped: requires singularity, not found'


def test_plan_unknown_job_reasons():
    result = dict((e['name'], e['reason']) for e in plan(HOOKS, 'epilog', {}, {}, 60))
    assert result['60-exclusive-gpu-reset'] == 'skipped: could not tell whether the job owns the node'
    assert result['95-lastuserjob-cleanup'] == "skipped: could not tell whether this is the user's last job on this node"
    assert result['95-lastuserjob-cleanup'] != 'run'
    result = dict((e['name'], e['reason']) for e in plan(HOOKS, 'epilog', {'last_user_job': False}, {}, 60))
    assert result['95-lastuserjob-cleanup'] == 'skipped: the user has other jobs on this node'


@pytest.mark.parametrize('phase, timeout, message', [
    ('task', 60, 'phase "task" is not one of: prolog, epilog'),
    ('prolog', 0, 'default hook timeout 0 must be a whole number of seconds, at least 1'),
])
def test_plan_errors(phase, timeout, message):
    with pytest.raises(ValueError) as err:
        plan(HOOKS, phase, {}, {}, timeout)
    assert message in str(err.value)


JOB_LINE = ('JobId=42 JobName=x UserId=alice(1000) GroupId=alice(1000) Partition=batch OverSubscribe=NO Contiguous=0 '
            'NodeList=gpu-01 TRES=cpu=2,mem=1000M,node=1 Command=(null)')


@pytest.mark.parametrize('text, expected', [
    (JOB_LINE, True),
    (JOB_LINE.replace('OverSubscribe=NO', 'OverSubscribe=OK'), False),
    (JOB_LINE.replace('OverSubscribe=NO', 'OverSubscribe=USER'), False),
    (JOB_LINE.replace('OverSubscribe=NO', ''), None),
    ('', None),
])
def test_is_exclusive(text, expected):
    assert is_exclusive(parse_scontrol_job(text)) is expected


def test_parse_scontrol_job():
    fields = parse_scontrol_job(JOB_LINE)
    assert fields['JobId'] == '42' and fields['UserId'] == 'alice(1000)' and fields['TRES'] == 'cpu=2,mem=1000M,node=1'


@pytest.mark.parametrize('output, last', [('42\n', True), ('', True), ('42\n43\n', False), ('  43 \n', False)])
def test_is_last_user_job(output, last):
    assert is_last_user_job(output, 42) is last


@pytest.mark.parametrize('args, expected', [
    (('prolog', '99-all-fail', 1, False), 'prolog hook 99-all-fail failed (exit 1)'),
    (('epilog', '60-all-gpu-cleanup', None, True, 30), 'epilog hook 60-all-gpu-cleanup timed out after 30s'),
    (('prolog', '10-all-x', -9, False), 'prolog hook 10-all-x killed by signal 9'),
])
def test_drain_reason(args, expected):
    assert drain_reason(*args) == expected


def test_log_line():
    assert log_line('prolog', '42', '10-all-x', 0, 0.01234, 'ok') == 'prolog job=42 hook=10-all-x rc=0 duration=0.012s status=ok'
    assert log_line('epilog', None, '10-all-x', None, 2, 'skipped') == 'epilog job=- hook=10-all-x rc=- duration=2.000s status=skipped'


@pytest.mark.parametrize('program, phase', [
    ('/usr/lib/gpucluster-slurm/prolog', 'prolog'), ('epilog', 'epilog'), ('/x/slurm-Epilog-runner', 'epilog'),
])
def test_phase_from_program(program, phase):
    assert phase_from_program(program) == phase


def test_phase_from_program_error():
    with pytest.raises(ValueError) as err:
        phase_from_program('/usr/bin/runner')
    assert 'cannot tell prolog from epilog by the name "/usr/bin/runner"; call the runner as "... prolog" or "... epilog"' in str(err.value)


UUIDS = """# GRES index -> device UUID
0 1g.10gb MIG-aaaa
1 1g.10gb MIG-bbbb
2 a100 GPU-cccc
3 a100 GPU-dddd
"""


@pytest.mark.parametrize('env, mode, expected', [
    ({'SLURM_STEP_GPUS': '1', 'CUDA_VISIBLE_DEVICES': '0'}, 'mig', ['export CUDA_VISIBLE_DEVICES=MIG-bbbb']),
    ({'SLURM_JOB_GPUS': '0,1'}, 'mig', ['export CUDA_VISIBLE_DEVICES=MIG-aaaa,MIG-bbbb']),
    ({'SLURM_STEP_GPUS': '0-1', 'SLURM_JOB_GPUS': '3'}, 'mig', ['export CUDA_VISIBLE_DEVICES=MIG-aaaa,MIG-bbbb']),
    ({'SLURM_STEP_GPUS': '2,3'}, 'mig', []),
    ({'SLURM_STEP_GPUS': '2,3'}, 'all', ['export CUDA_VISIBLE_DEVICES=GPU-cccc,GPU-dddd']),
    ({}, 'mig', []),
    ({'SLURM_STEP_GPUS': 'x'}, 'mig', []),
    ({'SLURM_STEP_GPUS': '9'}, 'mig', ['print GRES index 9 is not in the GRES UUID map; CUDA_VISIBLE_DEVICES left as Slurm set it']),
])
def test_task_prolog_lines(env, mode, expected):
    assert task_prolog_lines(env, UUIDS, mode) == expected


def test_task_prolog_errors():
    with pytest.raises(ValueError) as err:
        task_prolog_lines({'SLURM_STEP_GPUS': '0'}, UUIDS, 'some')
    assert 'TaskProlog mode "some" is not one of: mig, all' in str(err.value)
    with pytest.raises(ValueError) as err:
        parse_uuid_map('0 MIG-x\n')
    assert 'GRES UUID map line 1: "0 MIG-x" is not "<index> <type> <uuid>"' in str(err.value)


# --- found by mutation testing (benchmarks/mutation.sh) -----------------------------------------------

@pytest.mark.parametrize('call, message', [
    (lambda: parse_hook_name('50-sometimes-x'), 'hook "50-sometimes-x" has class "sometimes"; valid classes: all, exclusive, lastuserjob'),
    (lambda: parse_header('# timeout: 0\n'), '"# timeout: 0" must be a whole number of seconds, at least 1'),
    (lambda: parse_header('# requires: $(rm)\n'), '"# requires:" names "$(rm)", which is not a command name or path'),
    (lambda: plan(HOOKS, 'task', {}, {}, 60), 'phase "task" is not one of: prolog, epilog'),
    (lambda: plan(HOOKS, 'prolog', {}, {}, 0), 'default hook timeout 0 must be a whole number of seconds, at least 1'),
    (lambda: plan(HOOKS, 'prolog', {}, {}, '60'), "default hook timeout '60' must be a whole number of seconds, at least 1"),
    (lambda: phase_from_program('/usr/bin/runner'),
     'cannot tell prolog from epilog by the name "/usr/bin/runner"; call the runner as "... prolog" or "... epilog"'),
    (lambda: task_prolog_lines({}, UUIDS, 'some'), 'TaskProlog mode "some" is not one of: mig, all'),
    (lambda: parse_uuid_map('# map\n0 MIG-x\n'), 'GRES UUID map line 2: "0 MIG-x" is not "<index> <type> <uuid>"'),
    (lambda: parse_uuid_map('x 1g.10gb MIG-x\n'), 'GRES UUID map line 1: "x 1g.10gb MIG-x" is not "<index> <type> <uuid>"'),
    (lambda: parse_uuid_map('0 a100 GPU-1\n0 a100 GPU-2'), 'GRES UUID map line 2: index 0 is listed twice'),
])
def test_error_messages_are_exact(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize('text, expected', [
    ('# timeout: 1\n', {'requires': [], 'timeout': 1}),
    ('# requires: ,enroot\n', {'requires': ['enroot'], 'timeout': None}),
    ('# requires: enroot,, nvidia-smi\n', {'requires': ['enroot', 'nvidia-smi'], 'timeout': None}),
    (None, {'requires': [], 'timeout': None}),
])
def test_parse_header_edges(text, expected):
    assert parse_header(text) == expected


def test_needed_job_facts_looks_past_a_badly_named_hook():
    assert needed_job_facts(['junk', '10-exclusive-a', '20-lastuserjob-b'], 'epilog') == {'exclusive', 'last_user_job'}


@pytest.mark.parametrize('hooks, phase, job, expected', [
    # a badly named hook sorted first does not hide the hooks after it
    ([_hook('00-bad'), _hook('10-all-health')], 'prolog', {},
     [('00-bad', False, 'skipped: hook "00-bad" is not named <NN>-<class>-<name> (e.g. "50-all-enroot-dirs"); '
                        'classes: all, exclusive, lastuserjob', 60), ('10-all-health', True, 'run', 60)]),
    # a skipped lastuserjob hook does not hide the hooks after it
    ([_hook('95-lastuserjob-cleanup'), _hook('99-all-final')], 'epilog', {'last_user_job': False},
     [('95-lastuserjob-cleanup', False, 'skipped: the user has other jobs on this node', 60), ('99-all-final', True, 'run', 60)]),
    # a header with only a timeout, and a hook without a header
    ([{'name': '10-all-a', 'executable': True, 'header': {'timeout': 5}}, {'name': '20-all-b', 'executable': True}], 'prolog', {},
     [('10-all-a', True, 'run', 5), ('20-all-b', True, 'run', 60)]),
])
def test_plan_keeps_going(hooks, phase, job, expected):
    assert _summary(plan(hooks, phase, job, {}, 60)) == expected


def test_plan_entries_have_exactly_four_keys_and_one_second_is_a_valid_default():
    assert plan([_hook('10-all-a')], 'prolog', {}, {}, 1) == [{'name': '10-all-a', 'run': True, 'reason': 'run', 'timeout': 1}]


@pytest.mark.parametrize('text, expected', [
    (JOB_LINE.replace('OverSubscribe=NO', 'Shared=NO'), True),
    (JOB_LINE.replace('OverSubscribe=NO', 'Shared=0'), True),
    (JOB_LINE.replace('OverSubscribe=NO', 'Shared=OK'), False),
    (JOB_LINE.replace('OverSubscribe=NO', 'OverSubscribe=0'), True),
])
def test_is_exclusive_older_shared_field(text, expected):
    assert is_exclusive(parse_scontrol_job(text)) is expected


@pytest.mark.parametrize('args, expected', [
    (('prolog', '10-all-x', 0, False), 'prolog hook 10-all-x failed (exit 0)'),
    (('epilog', '10-all-x', None, False), 'epilog hook 10-all-x failed (exit None)'),
])
def test_drain_reason_edges(args, expected):
    assert drain_reason(*args) == expected


@pytest.mark.parametrize('program, phase', [
    # only the last path component counts: a directory named after the other phase does not
    ('/etc/slurm/prolog.d/epilog', 'epilog'),
    ('/etc/slurm/epilog.d/prolog', 'prolog'),
])
def test_phase_from_program_uses_the_base_name(program, phase):
    assert phase_from_program(program) == phase


def test_phase_from_program_ignores_the_directory():
    with pytest.raises(ValueError):
        phase_from_program('/opt/prolog-tools/runner')


@pytest.mark.parametrize('env, expected', [
    ({'SLURM_STEP_GPUS': '0,,1'}, ['export CUDA_VISIBLE_DEVICES=MIG-aaaa,MIG-bbbb']),
    ({'SLURM_STEP_GPUS': '0, 1,'}, ['export CUDA_VISIBLE_DEVICES=MIG-aaaa,MIG-bbbb']),
    ({'SLURM_STEP_GPUS': '2'}, []),
])
def test_task_prolog_lines_default_mode_is_mig(env, expected):
    assert task_prolog_lines(env, UUIDS) == expected


@pytest.mark.parametrize('text', [None, '', '# only a comment\n\n'])
def test_parse_uuid_map_empty(text):
    assert parse_uuid_map(text) == {}


@pytest.mark.parametrize('line, held', [
    # the closed loop's reboot: its tag is the loop's state and stays (a failing epilog must not replace it)
    ('NodeName=gpu-01 State=MIXED+DRAIN+REBOOT_REQUESTED Reason=gpuloop:reboot:gpu-lost: GPU 0 is lost [root@2026-12-05T18:14:10]',
     'gpuloop:reboot:gpu-lost: GPU 0 is lost'),
    ('NodeName=gpu-01 State=IDLE+DRAIN Reason=disk swap [root@2026-12-05T18:14:10]', 'disk swap'),
    ('NodeName=gpu-01 State=ALLOCATED Reason=gpuhc:periodic:xid: old [root@2026-12-05T18:14:10]', None),  # history only
    ('NodeName=gpu-01 State=IDLE', None),
])
def test_a_drained_nodes_reason_is_held(line, held):
    assert held_drain(_nodes.parse_node_line(line)) == held


def test_held_drain_of_an_unread_node():
    assert held_drain(None) is None
