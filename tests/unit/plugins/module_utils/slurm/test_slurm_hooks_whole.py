# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hook runner's pure logic compared whole (issue 43): every ignored suffix, the header's line limit on both sides,
the drain reason a failed hook asks for, the held drain, the command lines, the TaskProlog's needs and the hook files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as hooks


def test_the_tables():
    assert (hooks.HOOK_CLASSES, hooks.PHASES, hooks.HEADER_LINES, hooks.DRAIN_REASON_LINE, hooks.MAX_DRAIN_REASON) == (
        ('all', 'exclusive', 'lastuserjob'), ('prolog', 'epilog'), 30, 'drain-reason: ', 200)


@pytest.mark.parametrize('suffix', ['~', '.bak', '.orig', '.swp', '.rpmnew', '.rpmsave', '.rpmorig', '.dpkg-old', '.dpkg-new',
                                    '.dpkg-dist', '.dpkg-tmp', '.ucf-old', '.ucf-new', '.ucf-dist', '.disabled'])
def test_every_leftover_suffix_is_ignored(suffix):
    assert hooks.is_ignored('50-all-x' + suffix) is True
    assert hooks.is_ignored('50-all-x' + suffix + '2') is False
    assert [e['name'] for e in hooks.plan([{'name': '50-all-x' + suffix, 'executable': True}], 'prolog', {}, {}, 60)] == []


@pytest.mark.parametrize('blank, read', [(29, True), (30, False)])
def test_the_header_is_the_first_30_lines(blank, read):
    text = '\n' * blank + '# requires: tool\n# timeout: 9\n'
    assert hooks.parse_header(text) == ({'requires': ['tool'], 'timeout': None} if read else {'requires': [], 'timeout': None})
    assert hooks.parse_header(text, lines=blank + 2) == {'requires': ['tool'], 'timeout': 9}


@pytest.mark.parametrize('text, expected', [
    ('  #  REQUIRES :  a/b+c.d_e-f  \n', {'requires': ['a/b+c.d_e-f'], 'timeout': None}),
    ('# Timeout: 12\n# timeout: 7\n', {'requires': [], 'timeout': 7}),
    ('# requires:\n', {'requires': [], 'timeout': None}),
    ('# timeout: 1\n', {'requires': [], 'timeout': 1}),
])
def test_parse_header_whole(text, expected):
    assert hooks.parse_header(text) == expected


@pytest.mark.parametrize('value', ['-1', '1.5', '5 s', '00'])
def test_a_bad_timeout_whole(value):
    with pytest.raises(ValueError) as err:
        hooks.parse_header('# timeout: %s \n' % value)
    assert str(err.value) == '"# timeout: %s" must be a whole number of seconds, at least 1' % value


def test_needed_job_facts_in_the_prolog_and_the_epilog():
    assert hooks.needed_job_facts(['20-lastuserjob-b'], 'prolog') == set()
    assert hooks.needed_job_facts(['20-lastuserjob-b'], 'epilog') == {'last_user_job'}
    assert hooks.needed_job_facts(['10-exclusive-a'], 'prolog') == {'exclusive'}
    assert hooks.needed_job_facts([], 'epilog') == set()


def test_plan_whole():
    hook_list = [
        {'name': '60-exclusive-gpu', 'executable': True, 'header': {'requires': [], 'timeout': 3}},
        {'name': '10-all-a', 'executable': True, 'header': None},
        {'name': '20-all-b', 'executable': False, 'header': {'requires': ['x'], 'timeout': None}},
        {'name': '30-all-c', 'executable': True, 'header': {'requires': ['x', 'y', 'z'], 'timeout': None}},
        {'name': '40-lastuserjob-d', 'executable': True},
        {'name': '.hidden', 'executable': True},
    ]
    assert hooks.plan(hook_list, 'epilog', {'exclusive': False, 'last_user_job': True}, {'x': True, 'y': False}, 60) == [
        {'name': '10-all-a', 'run': True, 'reason': 'run', 'timeout': 60},
        {'name': '20-all-b', 'run': False, 'reason': 'skipped: not executable', 'timeout': 60},
        {'name': '30-all-c', 'run': False, 'reason': 'skipped: requires y, z, not found', 'timeout': 60},
        {'name': '40-lastuserjob-d', 'run': True, 'reason': 'run', 'timeout': 60},
        {'name': '60-exclusive-gpu', 'run': False, 'reason': 'skipped: job does not own the node', 'timeout': 3},
    ]
    assert hooks.plan(hook_list[:1] + hook_list[4:5], 'prolog', {'exclusive': True, 'last_user_job': True}, {}, 5) == [
        {'name': '40-lastuserjob-d', 'run': False, 'reason': 'skipped: lastuserjob hooks run only in the epilog', 'timeout': 5},
        {'name': '60-exclusive-gpu', 'run': True, 'reason': 'run', 'timeout': 3},
    ]


@pytest.mark.parametrize('timeout', [1.5, None, -3])
def test_plan_refuses_a_default_that_is_no_whole_number(timeout):
    with pytest.raises(ValueError) as err:
        hooks.plan([], 'prolog', {}, {}, timeout)
    assert str(err.value) == 'default hook timeout %r must be a whole number of seconds, at least 1' % (timeout,)


def test_parse_scontrol_job_whole():
    assert hooks.parse_scontrol_job('  JobId=7 a:b/c_d=x Bad-Key=1 Empty= 9x=1\n') == {'JobId': '7', 'a:b/c_d': 'x', 'Empty': ''}
    assert hooks.parse_scontrol_job(None) == {}


@pytest.mark.parametrize('fields, exclusive', [
    ({'OverSubscribe': 'no'}, True), ({'OverSubscribe': 'NO', 'Shared': 'OK'}, True), ({'OverSubscribe': 'YES', 'Shared': 'NO'}, False),
])
def test_is_exclusive_reads_oversubscribe_first(fields, exclusive):
    assert hooks.is_exclusive(fields) is exclusive


def test_is_last_user_job_compares_the_job_id_as_text():
    assert hooks.is_last_user_job(' 42 \n\n', '42') is True
    assert hooks.is_last_user_job(None, 42) is True
    assert hooks.is_last_user_job('420\n', 42) is False
    assert hooks.is_last_user_job('42\n', 42) is True


@pytest.mark.parametrize('job_id, argv', [
    ('42', ['scontrol', 'show', 'job', '-o', '42']), (42, None), ('-1', None), ('4 2', None), ('42\n', None), ('', None),
])
def test_job_show_argv(job_id, argv):
    assert hooks.job_show_argv(job_id) == argv


@pytest.mark.parametrize('node, user, argv', [
    ('gpu-01', 'alice', ['squeue', '-h', '-o', '%A', '-w', 'gpu-01', '-u', 'alice']),
    ('gpu-01', 'a.b@c-d_e', ['squeue', '-h', '-o', '%A', '-w', 'gpu-01', '-u', 'a.b@c-d_e']),
    ('gpu-01', '_svc', ['squeue', '-h', '-o', '%A', '-w', 'gpu-01', '-u', '_svc']),
    ('-w', 'alice', None), ('gpu-01', '-alice', None), ('gpu-01', 'al ice', None), ('gpu-01', 1000, None), ('gpu-01', 'alice\n', None),
])
def test_user_jobs_argv(node, user, argv):
    assert hooks.user_jobs_argv(node, user) == argv


@pytest.mark.parametrize('output, asked', [
    ('checking\ndrain-reason: gpuhc:prolog:xid: Xid 79\n', 'gpuhc:prolog:xid: Xid 79'),
    ('drain-reason: first\nmore\ndrain-reason: second "quoted"\n', "second 'quoted'"),   # the last one, cleaned
    ('drain-reason: ' + 'x' * 250, 'x' * 197 + '...'),
    (' drain-reason: indented\n', None),
    ('drain-reason:   \n', None),
    ('', None),
    (None, None),
])
def test_asked_reason(output, asked):
    assert hooks.asked_reason(output) == asked


@pytest.mark.parametrize('node, held', [
    ({'reason': 'r', 'state': 'DRAINED', 'flags': []}, 'r'),
    ({'reason': 'r', 'state': 'DRAINING'}, 'r'),
    ({'reason': 'r', 'state': 'DRAIN', 'flags': None}, 'r'),
    ({'reason': 'r', 'state': 'IDLE', 'flags': ['DRAIN']}, 'r'),
    ({'reason': 'r', 'state': 'IDLE', 'flags': ['NOT_RESPONDING']}, None),
    ({'reason': '', 'state': 'DRAINED', 'flags': ['DRAIN']}, None),
    ({}, None),
])
def test_held_drain(node, held):
    assert hooks.held_drain(node) == held


@pytest.mark.parametrize('args, kwargs, reason', [
    (('prolog', '50-all-x', 1, False), {'asked': 'gpuhc:prolog:xid: 79'}, 'gpuhc:prolog:xid: 79'),
    (('prolog', '50-all-x', 0, False), {'asked': 'gpuhc:prolog:xid: 79'}, 'prolog hook 50-all-x failed (exit 0)'),
    (('prolog', '50-all-x', -9, False), {'asked': 'gpuhc:prolog:xid: 79'}, 'prolog hook 50-all-x killed by signal 9'),
    (('prolog', '50-all-x', None, False), {'asked': 'gpuhc:prolog:xid: 79'}, 'prolog hook 50-all-x failed (exit None)'),
    (('epilog', '50-all-x', 1, True), {'limit': 30, 'asked': 'gpuhc:prolog:xid: 79'}, 'epilog hook 50-all-x timed out after 30s'),
    (('epilog', '50-all-x', 1, True), {}, 'epilog hook 50-all-x timed out after Nones'),
    (('epilog', '50-all-x', 1, False), {'asked': ''}, 'epilog hook 50-all-x failed (exit 1)'),
    # a name no tag holds: the words as they are, on one line, cut to the limit
    (('prolog', 'bad name', 2, False), {}, 'prolog hook bad name failed (exit 2)'),
    (('task', '50-all-x', 2, False), {}, 'task hook 50-all-x failed (exit 2)'),
    (('prolog', 'n' * 250, 2, False), {}, ('prolog hook ' + 'n' * 250)[:197] + '...'),
    (('prolog', 'a "b"\nc', 2, False), {}, "prolog hook a 'b' c failed (exit 2)"),
    (('prolog', 'n ' * 125, 2, False), {}, ('prolog hook ' + 'n ' * 125)[:197] + '...'),
])
def test_drain_reason_whole(args, kwargs, reason):
    assert hooks.drain_reason(*args, **kwargs) == reason


@pytest.mark.parametrize('args', [('prolog', '50-all-x', 1, False), ('epilog', '9-all-y', None, True, 30), ('prolog', 'z', -15, False)])
def test_a_hooks_drain_reason_is_the_hook_tag(args):
    reason = hooks.drain_reason(*args)
    parsed = tag.parse_tag(reason)
    assert (parsed['owner'], parsed['scope'], parsed['check']) == ('hook', args[0], args[1])
    assert tag.format_tag('hook', args[1], parsed['detail'], scope=args[0]) == reason


def test_log_line_rounds_to_milliseconds():
    assert hooks.log_line('epilog', '', 'h', -15, 1.23456, 'failed') == 'epilog job=- hook=h rc=-15 duration=1.235s status=failed'


@pytest.mark.parametrize('program, phase', [('PROLOG', 'prolog'), ('x/y/Epilog.sh', 'epilog'), ('prolog-epilog', 'prolog')])
def test_phase_from_program_whole(program, phase):
    assert hooks.phase_from_program(program) == phase


UUIDS = '0 1g.10gb MIG-a\n1 1g.10gb MIG-b\n2 a100 GPU-c\n3 a100 GPU-d\n'


@pytest.mark.parametrize('env, mode, lines', [
    ({'SLURM_STEP_GPUS': '', 'SLURM_JOB_GPUS': '1'}, 'mig', ['export CUDA_VISIBLE_DEVICES=MIG-b']),
    ({'SLURM_STEP_GPUS': '1-3'}, 'mig', ['export CUDA_VISIBLE_DEVICES=MIG-b,GPU-c,GPU-d']),
    ({'SLURM_STEP_GPUS': '2-3'}, 'all', ['export CUDA_VISIBLE_DEVICES=GPU-c,GPU-d']),
    ({'SLURM_STEP_GPUS': '3-2'}, 'all', []),
    ({'SLURM_STEP_GPUS': '2,x'}, 'all', []),
    ({'SLURM_STEP_GPUS': '1-x'}, 'all', []),
    ({'SLURM_STEP_GPUS': '2,1'}, 'all', ['export CUDA_VISIBLE_DEVICES=GPU-c,MIG-b']),
    ({'SLURM_STEP_GPUS': '2-4'}, 'all', ['print GRES index 4 is not in the GRES UUID map; CUDA_VISIBLE_DEVICES left as Slurm set it']),
])
def test_task_prolog_lines_whole(env, mode, lines):
    assert hooks.task_prolog_lines(env, UUIDS, mode) == lines


def test_parse_uuid_map_whole():
    assert hooks.parse_uuid_map('  # c\n\n 10  a100   GPU-x  \n2 t MIG-y\n') == {10: 'GPU-x', 2: 'MIG-y'}
    with pytest.raises(ValueError) as err:
        hooks.parse_uuid_map('0 a b c\n')
    assert str(err.value) == 'GRES UUID map line 1: "0 a b c" is not "<index> <type> <uuid>"'


NEEDS = {
    'c': {'slurm_task_prolog_uuids': 'all'},
    'a': {'slurm_task_prolog_uuids': 'mig', 'mig_layout': 'all-1g', 'slurm_gres_autodetect': 'off'},
    'b': {'slurm_task_prolog_uuids': 'mig', 'mig_layout': 'all-1g', 'slurm_gres_autodetect': 'nvml'},
    'd': {'slurm_task_prolog_uuids': 'mig', 'mig_layout': ''},
    'e': {'slurm_gres_sharing': 'mps', 'slurm_hooks_shipped': ['mps']},
    'f': {'slurm_gres_sharing': 'mps', 'slurm_hooks_shipped': 'mps'},
    'g': {'slurm_gres_sharing': 'mps', 'slurm_hooks_shipped': ['enroot']},
    'h': {'slurm_gres_sharing': 'sharding', 'slurm_hooks_shipped': ['mps']},
    'i': None,
    'j': {'slurm_task_prolog_uuids': 'mig', 'mig_layout': 'x', 'slurm_gres_sharing': 'mps', 'slurm_hooks_shipped': ['mps']},
}


def test_task_prolog_needs_whole():
    assert hooks.task_prolog_needs(NEEDS) == [
        ('a', "mig_layout all-1g with hand-written MIG GRES (slurm_task_prolog_uuids 'mig': the MIG UUIDs)"),
        ('c', "slurm_task_prolog_uuids is 'all' (every allocated GPU exported by UUID)"),
        ('e', "slurm_gres_sharing is 'mps' (the MPS variables of the job)"),
        ('j', "mig_layout x with hand-written MIG GRES (slurm_task_prolog_uuids 'mig': the MIG UUIDs)"),
    ]


TABLE = {'mps': [{'phase': 'prolog', 'name': '50-all-mps'}, {'phase': 'epilog', 'name': '50-all-mps'}],
         'enroot': [{'phase': 'prolog', 'name': '10-all-enroot'}]}


def test_hook_files_whole():
    assert hooks.hook_files(['mps'], TABLE, [{'phase': 'epilog', 'name': '99-all-site', 'src': '/site/x'}], '/etc/slurm',
                            old=('prolog.d/00-all-old',)) == [
        {'dest': '/etc/slurm/prolog.d/10-all-enroot', 'state': 'absent'},
        {'dest': '/etc/slurm/prolog.d/50-all-mps', 'src': 'hooks/50-all-mps', 'mode': '0755'},
        {'dest': '/etc/slurm/epilog.d/50-all-mps', 'src': 'hooks/50-all-mps', 'mode': '0755'},
        {'dest': '/etc/slurm/epilog.d/99-all-site', 'src': '/site/x', 'mode': '0755'},
        {'dest': '/etc/slurm/prolog.d/00-all-old', 'state': 'absent'},
    ]
    assert hooks.hook_files(None, TABLE, None, '/c') == [
        {'dest': '/c/prolog.d/10-all-enroot', 'state': 'absent'}, {'dest': '/c/prolog.d/50-all-mps', 'state': 'absent'},
        {'dest': '/c/epilog.d/50-all-mps', 'state': 'absent'}]


@pytest.mark.parametrize('shipped, table, message', [
    (['mps', 'x', 'y'], TABLE, 'slurm_hooks_shipped: x, y not shipped; valid: enroot, mps'),
    ([], [], 'the table of shipped hooks must be a dict of name -> [{phase, name}]'),
])
def test_hook_files_refusals_whole(shipped, table, message):
    with pytest.raises(ValueError) as err:
        hooks.hook_files(shipped, table, [], '/c')
    assert str(err.value) == message
