# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""health/_loop_deep.py: the closed loop's deep runs as steps of one allocation per node type (issue 48 item 6)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _loop_deep as loop_deep
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop

PROGRAM = '/usr/local/sbin/gpucluster-healthcheck'
SETTINGS = {'checks': ['dcgm']}


def node(name, gpus=8, partition='gpu'):
    return {'name': name, 'gpus': gpus, 'partition': partition}


def plan(candidates, **kwargs):
    return loop_deep.plan(candidates, 'gpucluster-loop-deep', PROGRAM, SETTINGS, 30, **kwargs)


# (candidates, dispatch, min_nodes, expected allocations {name: nodes}, expected own jobs)
TABLE = [
    ([node('a'), node('b'), node('c'), node('d')], 'auto', 4, {'gpu:8 in gpu on 4 nodes': ['a', 'b', 'c', 'd']}, []),
    ([node('a'), node('b'), node('c')], 'auto', 4, {}, ['a', 'b', 'c']),
    ([node('a'), node('b')], 'allocation', 4, {'gpu:8 in gpu on 2 nodes': ['a', 'b']}, []),
    ([node('a'), node('b'), node('c'), node('d')], 'per_node', 1, {}, ['a', 'b', 'c', 'd']),
    # node types: partition and GPU count; a node alone of its type is a job of its own
    ([node('a'), node('l1', 4, 'l40s'), node('b'), node('l2', 4, 'l40s'), node('m', 2)], 'allocation', 1,
     {'gpu:8 in gpu on 2 nodes': ['a', 'b'], 'gpu:4 in l40s on 2 nodes': ['l1', 'l2']}, ['m']),
    ([node('a', partition=None), node('b', partition=None)], 'allocation', 1, {'gpu:8 on 2 nodes': ['a', 'b']}, []),
    ([node('x')], 'allocation', 1, {}, ['x']),
    ([], 'allocation', 1, {}, []),
]


@pytest.mark.parametrize('candidates, dispatch, min_nodes, allocations, own', TABLE)
def test_plan_groups_by_node_type(candidates, dispatch, min_nodes, allocations, own):
    jobs, planned = plan(candidates, dispatch=dispatch, min_nodes=min_nodes)
    assert [j['name'] for j in jobs] == [c['name'] for c in candidates]
    assert dict((a['name'], a['nodes']) for a in planned) == allocations
    assert [j['name'] for j in jobs if j['allocation'] is None] == own
    for job in jobs:
        if job['allocation'] is None:
            assert job['argv'] == job['own_argv'] and '--exclusive' in job['argv'] and '--jobid={jobid}' not in job['argv']
        else:
            assert job['argv'][:2] == ['srun', '--jobid={jobid}'] and '--exclusive' not in job['argv']
            assert job['argv'][2:] == [a for a in job['own_argv'][1:] if a != '--exclusive']
            assert job['name'] in [a for a in planned if a['name'] == job['allocation']][0]['nodes']


def test_the_allocation_is_one_salloc_in_the_reservation_for_the_group():
    jobs, planned = plan([node('gpu-0001'), node('gpu-0002'), node('gpu-0003')], dispatch='allocation', srun='/opt/slurm/bin/srun', wait=45)
    assert planned[0]['argv'] == ['/opt/slurm/bin/salloc', '--no-shell', '--immediate=45', '--no-kill', '--reservation=gpucluster-loop-deep',
                                  '--nodes=3', '--nodelist=gpu-[0001-0003]', '--exclusive', '--gres=gpu:8', '--time=30',
                                  '--job-name=gpucluster-loop-deep', '--partition=gpu']
    assert planned[0]['release'] == ['/opt/slurm/bin/scancel']
    assert planned[0]['idle'] == ['/opt/slurm/bin/sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'gpu-[0001-0003]']
    assert planned[0]['timeout'] == 105
    assert jobs[1]['argv'][-7:-2] == [PROGRAM, '--tier', 'deep', '--node', 'gpu-0002']
    assert '--nodelist=gpu-0002' in jobs[1]['argv'] and '--gres=gpu:8' in jobs[1]['argv']


def test_granted_narrowed_and_own_jobs():
    jobs, planned = plan([node('a'), node('b'), node('c')], dispatch='allocation')
    assert loop_deep.granted_job('salloc: Pending job allocation 77\nsalloc: Granted job allocation 77\n') == '77'
    assert loop_deep.granted_job('salloc: error: Unable to allocate resources: Immediate execution impossible') is None
    assert loop_deep.refusal(1, '\nsalloc: Pending\nsalloc: error: Immediate execution impossible\n') == 'salloc: error: Immediate execution impossible'
    assert loop_deep.refusal(1, '') == 'salloc exited 1 with no message'
    assert loop_deep.idle_names(0, 'a\nc\n') == set(['a', 'c']) and loop_deep.idle_names(1, 'a\n') == set()
    narrow = loop_deep.narrowed(planned[0], ['a', 'c'])
    assert '--nodes=2' in narrow['argv'] and '--nodelist=a,c' in narrow['argv'] and narrow['nodes'] == ['a', 'c']
    assert narrow['name'] == 'gpu:8 in gpu on 3 nodes (2 idle)' and planned[0]['nodes'] == ['a', 'b', 'c']
    members = loop_deep.members(jobs, planned[0])
    loop_deep.use_own_jobs([members[1]], 'not idle')
    loop_deep.use_allocation([members[0], members[2]], '91', narrow['name'])
    assert jobs[0]['argv'][:2] == ['srun', '--jobid=91'] and jobs[0]['allocation'] == narrow['name']
    assert jobs[1]['argv'] == jobs[1]['own_argv'] and jobs[1]['allocation'] is None and jobs[1]['dispatch'] == 'own job (not idle)'
    assert jobs[2]['dispatch'] == 'step of job 91'


@pytest.mark.parametrize('kwargs, fragment', [
    ({'dispatch': 'batched'}, 'deep_dispatch is'),
    ({'min_nodes': 0}, 'deep_dispatch_min_nodes is'),
    ({'wait': 'soon'}, 'deep_allocation_wait is'),
])
def test_bad_dispatch_settings_are_named(kwargs, fragment):
    with pytest.raises(InputError) as info:
        plan([node('a'), node('b')], **kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize('data, fragment', [
    ({'deep_dispatch': 'steps'}, 'deep_dispatch is'),
    ({'deep_dispatch_min_nodes': -1}, 'deep_dispatch_min_nodes is'),
    ({'deep_allocation_wait': 0}, 'deep_allocation_wait is'),
])
def test_the_loop_configuration_checks_the_dispatch_settings(data, fragment):
    with pytest.raises(InputError) as info:
        loop.load_settings(data)
    assert fragment in str(info.value)


def test_the_loop_configuration_defaults():
    settings = loop.load_settings({})
    assert (settings['deep_dispatch'], settings['deep_dispatch_min_nodes'], settings['deep_allocation_wait']) == ('auto', 4, 60)


# ------------------------------------------------------------------ the GPU reset before the deep tier (reset-gpu)

STAND_IN_SMI = '''#!/bin/sh
# STAND-IN nvidia-smi (not NVIDIA's): logs its arguments; GPU "$SMI_LOST" is lost, GPU "$SMI_BUSY" in use
echo "nvidia-smi $*" >> "$LOG"
case "$*" in
  --query-gpu=index*) printf '0\\n1\\n2\\n' ;;
  "--gpu-reset -i $SMI_LOST") echo "Unable to determine the device handle for GPU $SMI_LOST: GPU is lost"; exit 15 ;;
  "--gpu-reset -i $SMI_BUSY") printf 'The following GPUs could not be reset:\\n  GPU 00000000:52:00.0: In use by another client\\n'; exit 255 ;;
  --gpu-reset*) echo "GPU 00000000:52:00.0 was successfully reset."; echo "All done." ;;
esac
'''
STAND_IN_SYSTEMCTL = '''#!/bin/sh
# STAND-IN systemctl (not systemd's): the MIG unit is enabled when $MIG_ENABLED is 1
echo "systemctl $*" >> "$LOG"
case "$1" in
  is-enabled) [ "$MIG_ENABLED" = 1 ] ;;
  restart) [ "$MIG_FAILS" != 1 ] || { echo "Job for $2 failed."; exit 1; } ;;
esac
'''
STAND_IN_DEEP = '''#!/bin/sh
# STAND-IN deep tier (not the health check): says it ran
echo "deep tier ran: $*" >> "$LOG"
echo "deep tier ran"
'''


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name, text in (('nvidia-smi', STAND_IN_SMI), ('systemctl', STAND_IN_SYSTEMCTL), ('deep', STAND_IN_DEEP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / 'log'
    log.write_text('')
    monkeypatch.setenv('PATH', '%s:%s' % (bin_dir, os.environ['PATH']))
    monkeypatch.setenv('LOG', str(log))
    for key in ('SMI_LOST', 'SMI_BUSY', 'MIG_ENABLED', 'MIG_FAILS'):
        monkeypatch.setenv(key, 'none')
    return str(bin_dir / 'deep'), log


def run_reset(program, gpus):
    job = loop_deep.plan([node('gpu-01')], 'gpucluster-loop-deep', program, SETTINGS, 30)[0][0]
    loop_deep.with_reset(job, program, gpus)
    assert job['argv'] == job['own_argv'] and job['argv'][0] == 'srun' and job['reset'] == gpus
    at = job['argv'].index('/bin/sh')
    assert job['argv'][at + 7:at + 10] == [program, '--tier', 'deep']  # the deep tier's argv follows, unchanged
    done = subprocess.run(job['argv'][at:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    return done.returncode, done.stdout


@pytest.mark.parametrize('gpus, env, rc, reset, log_has, log_lacks', [
    # the GPU the condition names, whole GPU (no MIG unit enabled): reset, then the deep tier
    (['2'], {}, 0, {'ok': True, 'rc': 0, 'gpus': ['2'], 'mig': 'none'},
     ['nvidia-smi --gpu-reset -i 2', 'deep tier ran: --tier deep --node gpu-01'], ['systemctl restart']),
    # none named: every GPU NVML lists
    ([], {}, 0, {'ok': True, 'rc': 0, 'gpus': ['0', '1', '2'], 'mig': 'none'},
     ['nvidia-smi --gpu-reset -i 0', 'nvidia-smi --gpu-reset -i 1', 'nvidia-smi --gpu-reset -i 2', 'deep tier ran'], []),
    # MIG-aware: the mig role's boot unit re-creates the layout after the reset, before the deep tier
    (['2'], {'MIG_ENABLED': '1'}, 0, {'ok': True, 'rc': 0, 'gpus': ['2'], 'mig': 'restarted'},
     ['nvidia-smi --gpu-reset -i 2\nsystemctl is-enabled --quiet gpucluster-mig.service\nsystemctl restart gpucluster-mig.service\n'
      'deep tier ran'], []),
    # a lost GPU (GPU_IS_LOST, rc 15) and one in use: no deep tier, the loop reads the failure
    (['2'], {'SMI_LOST': '2'}, 3, {'ok': False, 'rc': 15, 'gpus': ['2'], 'mig': 'none'}, ['nvidia-smi --gpu-reset -i 2'], ['deep tier ran']),
    (['1', '2'], {'SMI_BUSY': '2'}, 3, {'ok': False, 'rc': 255, 'gpus': ['2'], 'mig': 'none'},
     ['nvidia-smi --gpu-reset -i 1\nnvidia-smi --gpu-reset -i 2'], ['deep tier ran']),
    (['2'], {'MIG_ENABLED': '1', 'MIG_FAILS': '1'}, 3, {'ok': False, 'rc': 1, 'gpus': ['2'], 'mig': 'gpucluster-mig.service'},
     ['systemctl restart gpucluster-mig.service'], ['deep tier ran']),
])
def test_stand_in_nvidia_smi_the_reset_runs_before_the_deep_tier_in_the_same_job(stand_ins, monkeypatch, gpus, env, rc, reset, log_has,
                                                                                 log_lacks):
    program, log = stand_ins
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    got_rc, out = run_reset(program, gpus)
    said = loop_deep.read_reset(out)
    assert got_rc == rc, out
    assert dict((k, said[k]) for k in reset) == reset, out
    text = log.read_text()
    for fragment in log_has:
        assert fragment in text, text
    for fragment in log_lacks:
        assert fragment not in text, text
    if rc:
        assert said['text'], said  # nvidia-smi's (or systemctl's) own words reach the loop
    if env.get('SMI_LOST'):
        assert 'GPU is lost' in said['text']


def test_read_reset_takes_the_last_reset_line_and_none_without_one():
    assert loop_deep.read_reset('dcgm ...\nGPUCLUSTER-DEEP {}\n') is None
    said = loop_deep.read_reset('x\nGPUCLUSTER-GPU-RESET failed rc=15 gpus=0000:1b:00.0 mig=none: GPU is lost\n')
    assert said == {'ok': False, 'rc': 15, 'gpus': ['0000:1b:00.0'], 'mig': 'none', 'text': 'GPU is lost'}


def test_with_reset_refuses_a_job_that_does_not_run_the_deep_program():
    job = loop_deep.plan([node('gpu-01')], 'gpucluster-loop-deep', PROGRAM, SETTINGS, 30)[0][0]
    with pytest.raises(ValueError, match='does not run /other --tier'):
        loop_deep.with_reset(job, '/other', ['0'])


# ------------------------------------------------------------------ exact plans, messages and readings

@pytest.mark.parametrize('kwargs, message', [
    ({'dispatch': 'batched'}, "deep_dispatch is 'batched', expected one of auto, per_node, allocation"),
    ({'min_nodes': 0}, 'deep_dispatch_min_nodes is 0, expected a whole number of at least 1'),
    ({'wait': 0}, 'deep_allocation_wait is 0, expected a whole number of seconds between 1 and 3600'),
    ({'wait': 3601}, 'deep_allocation_wait is 3601, expected a whole number of seconds between 1 and 3600'),
])
def test_each_bad_dispatch_setting_has_its_message(kwargs, message):
    with pytest.raises(InputError) as info:
        plan([node('a'), node('b')], **kwargs)
    assert str(info.value) == message


def test_the_dispatch_settings_at_their_bounds():
    assert loop_deep.dispatch_settings('allocation', 1, 1) == ('allocation', 1, 1)
    assert loop_deep.dispatch_settings('per_node', '7', 3600) == ('per_node', 7, 3600)


@pytest.mark.parametrize('count, min_nodes, grouped', [(3, None, False), (4, None, True), (2, 2, True), (1, 1, False)])
def test_auto_dispatch_groups_from_min_nodes_on(count, min_nodes, grouped):
    kwargs = {} if min_nodes is None else {'min_nodes': min_nodes}
    _jobs, planned = plan([node('n%d' % i) for i in range(count)], **kwargs)
    assert bool(planned) is grouped


def test_a_plan_in_full_an_allocation_and_its_steps():
    jobs, planned = plan([node('gpu-01', 4, None), node('gpu-02', 4, '')], dispatch='allocation', wait=10)
    assert planned == [{
        'name': 'gpu:4 on 2 nodes', 'nodes': ['gpu-01', 'gpu-02'], 'timeout': 70,
        'argv': ['salloc', '--no-shell', '--immediate=10', '--no-kill', '--reservation=gpucluster-loop-deep', '--nodes=2',
                 '--nodelist=gpu-[01-02]', '--exclusive', '--gres=gpu:4', '--time=30', '--job-name=gpucluster-loop-deep'],
        'release': ['scancel'], 'idle': ['sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'gpu-[01-02]']}]
    own = loop_deep.deep_jobs.srun_argv(node('gpu-01', 4, None), 'gpucluster-loop-deep', PROGRAM, SETTINGS, 30)
    assert jobs[0] == {'name': 'gpu-01', 'own_argv': own, 'allocation': 'gpu:4 on 2 nodes',
                       'argv': ['srun', '--jobid={jobid}'] + [a for a in own[1:] if a != '--exclusive']}
    assert set(jobs[1]) == {'name', 'argv', 'own_argv', 'allocation'}


def test_a_job_of_its_own_in_full():
    jobs, planned = plan([node('gpu-01')], srun='/opt/slurm/bin/srun')
    own = loop_deep.deep_jobs.srun_argv(node('gpu-01'), 'gpucluster-loop-deep', PROGRAM, SETTINGS, 30, srun='/opt/slurm/bin/srun')
    assert planned == [] and jobs == [{'name': 'gpu-01', 'argv': own, 'own_argv': own, 'allocation': None}]
    assert own[0] == '/opt/slurm/bin/srun'


@pytest.mark.parametrize('srun, command, path', [
    ('srun', 'salloc', 'salloc'), ('/usr/bin/srun', 'scancel', '/usr/bin/scancel'), ('/a/b/c/srun', 'sinfo', '/a/b/c/sinfo'), ('/srun', 'x', '/x'),
])
def test_the_slurm_commands_beside_srun(srun, command, path):
    assert loop_deep.sibling_command(srun, command) == path


@pytest.mark.parametrize('candidate, kind', [
    ({'gpus': 8, 'partition': 'gpu'}, ('gpu', 8)), ({'gpus': '4'}, ('', 4)), ({'gpus': 2, 'partition': None}, ('', 2)),
])
def test_node_type(candidate, kind):
    assert loop_deep.node_type(candidate) == kind


@pytest.mark.parametrize('text, job', [
    ('salloc: Granted job allocation 77', '77'), ('Granted job allocation x', None), ('', None), (None, None),
    ('Granted job allocation 8 and Granted job allocation 9', '8'),
])
def test_granted_job(text, job):
    assert loop_deep.granted_job(text) == job


@pytest.mark.parametrize('rc, text, why', [
    (1, '  first \n\n  last line  \n  \n', 'last line'), (1, None, 'salloc exited 1 with no message'), (None, ' \n ', 'salloc exited None with no message'),
])
def test_refusal(rc, text, why):
    assert loop_deep.refusal(rc, text) == why


def test_use_allocation_without_a_name_keeps_the_allocation_and_fills_in_the_job_id():
    jobs, planned = plan([node('a'), node('b')], dispatch='allocation')
    loop_deep.use_allocation(jobs, 91)
    assert [j['allocation'] for j in jobs] == [planned[0]['name']] * 2
    assert all('--jobid=91' in j['argv'] and '{jobid}' not in ' '.join(j['argv']) for j in jobs)
    assert [j['dispatch'] for j in jobs] == ['step of job 91'] * 2
    assert loop_deep.members(jobs, planned[0]) == jobs and loop_deep.members(jobs, {'name': 'other'}) == []


def test_with_reset_puts_the_reset_before_the_deep_tier_in_both_command_lines():
    jobs, _planned = plan([node('a'), node('b')], dispatch='allocation')
    job = loop_deep.with_reset(jobs[0], PROGRAM, [2, '3'], nvidia_smi='/usr/bin/nvidia-smi', mig_unit='mig.service')
    assert job is jobs[0] and job['reset'] == [2, '3']
    for key in ('argv', 'own_argv'):
        at = job[key].index(PROGRAM)
        assert job[key][at - 7:at] == ['/bin/sh', '-c', loop_deep.RESET_SCRIPT, 'gpucluster-gpu-reset', '2,3', 'mig.service', '/usr/bin/nvidia-smi']
        assert job[key][at:at + 2] == [PROGRAM, '--tier']
    assert job['argv'][:2] == ['srun', '--jobid={jobid}'] and job['own_argv'][0] == 'srun'
    plain = loop_deep.with_reset(plan([node('c')])[0][0], PROGRAM, [])
    at = plain['argv'].index('/bin/sh')
    assert plain['argv'][at + 3:at + 7] == ['gpucluster-gpu-reset', '', 'gpucluster-mig.service', 'nvidia-smi']


def test_with_reset_names_the_job_it_refuses():
    job = plan([node('gpu-01')])[0][0]
    with pytest.raises(ValueError) as info:
        loop_deep.with_reset(job, PROGRAM + '-x', [])
    assert str(info.value) == 'the deep run of gpu-01 does not run %s-x --tier' % PROGRAM
    job['argv'] = job['argv'][:-6] + [PROGRAM]  # the program last, no --tier after it
    with pytest.raises(ValueError):
        loop_deep.with_reset(job, PROGRAM, [])


@pytest.mark.parametrize('text, said', [
    ('GPUCLUSTER-GPU-RESET done rc=0 gpus=0,1 mig=restarted: \n', {'ok': True, 'rc': 0, 'gpus': ['0', '1'], 'mig': 'restarted', 'text': ''}),
    ('  GPUCLUSTER-GPU-RESET failed rc=-9 gpus= mig=none:killed  ', {'ok': False, 'rc': -9, 'gpus': [], 'mig': 'none', 'text': 'killed'}),
    ('GPUCLUSTER-GPU-RESET done rc=0 gpus=1 mig=none: a\nGPUCLUSTER-GPU-RESET failed rc=3 gpus=2 mig=u.service: b  \nafter\n',
     {'ok': False, 'rc': 3, 'gpus': ['2'], 'mig': 'u.service', 'text': 'b'}),
    ('GPUCLUSTER-GPU-RESET maybe rc=0 gpus=1 mig=none: a', None),
    ('GPUCLUSTER-GPU-RESET done rc=x gpus=1 mig=none: a', None),
    (None, None),
])
def test_read_reset(text, said):
    assert loop_deep.read_reset(text) == said


def test_a_narrowed_allocation_asks_for_the_idle_nodes_only_and_keeps_the_rest():
    _jobs, planned = plan([node('gpu-01'), node('gpu-02'), node('gpu-03')], dispatch='allocation')
    narrow = loop_deep.narrowed(planned[0], ['gpu-01', 'gpu-03'])
    assert narrow == dict(planned[0], nodes=['gpu-01', 'gpu-03'], name='gpu:8 in gpu on 3 nodes (2 idle)', argv=[
        'salloc', '--no-shell', '--immediate=60', '--no-kill', '--reservation=gpucluster-loop-deep', '--nodes=2', '--nodelist=gpu-[01,03]',
        '--exclusive', '--gres=gpu:8', '--time=30', '--job-name=gpucluster-loop-deep', '--partition=gpu'])
    assert planned[0]['nodes'] == ['gpu-01', 'gpu-02', 'gpu-03'] and '--nodelist=gpu-[01-03]' in planned[0]['argv']


def test_with_reset_at_the_first_program_and_the_last_word():
    """The reset goes before the first ``program --tier`` of the line, also where ``--tier`` is the line's last word;
    ``reset`` is a list of its own."""
    job = {'name': 'n', 'argv': ['srun', '/p', '--tier'], 'own_argv': ['srun', '/p', '--tier', 'x', '/p', '--tier']}
    gpus = (1, 2)
    loop_deep.with_reset(job, '/p', gpus, 'smi', 'u')
    head = ['/bin/sh', '-c', loop_deep.RESET_SCRIPT, 'gpucluster-gpu-reset', '1,2', 'u', 'smi']
    assert job == {'name': 'n', 'argv': ['srun'] + head + ['/p', '--tier'],
                   'own_argv': ['srun'] + head + ['/p', '--tier', 'x', '/p', '--tier'], 'reset': [1, 2]}


def test_read_reset_strips_the_text():
    assert loop_deep.read_reset('GPUCLUSTER-GPU-RESET done rc=0 gpus= mig=restarted:    all reset  \n') == {
        'ok': True, 'rc': 0, 'gpus': [], 'mig': 'restarted', 'text': 'all reset'}
