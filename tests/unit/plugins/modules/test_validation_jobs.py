# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_jobs runs real commands: the all_reduce_perf stand-in (recorded output), hostname, sleep."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import time

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.modules import validation_jobs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
STANDIN = os.path.join(ROOT, 'tests', 'standins', 'all_reduce_perf-standin')


def run_module(capsys, **args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            validation_jobs.main()
    return json.loads(capsys.readouterr().out)


def nccl_job(name, fixture, hosts, expect=None, round_=0):
    return {'name': name, 'kind': 'nccl', 'argv': [STANDIN, '-b', '8', '-e', '8G', '-f', '2', '-g', '8'], 'hosts': hosts,
            'env': {'ALL_REDUCE_PERF_STANDIN_OUTPUT': fixture}, 'expect': expect or {}, 'round': round_}


def test_standin_runs_are_gated_and_plotted(capsys):
    result = run_module(capsys, stage='nccl', jobs=[
        nccl_job('gpu-01', 'v2.13-era_h100_single_node.txt', ['gpu-01'], {'topology': 'h100-nvlink-8'}),
        nccl_job('gpu-02', 'v2.13-era_h100_single_node.txt', ['gpu-02'], {'min_busbw_gbps': 600}),
        nccl_job('fabric', 'v2.17.8_gh200_two_nodes_wrong.txt', ['gpu-01', 'gpu-02']),
    ])
    assert result.get('failed') is not True, result
    failed = [(r['node'], r['check']) for r in result['records'] if r['status'] == 'fail']
    assert failed == [('gpu-02', 'busbw'), ('fabric', 'test_errors'), ('fabric', 'wrong'), ('fabric', 'out_of_bounds')]
    assert [s['label'] for s in result['series']] == ['gpu-01', 'gpu-02', 'fabric']
    assert result['results']['fabric']['rc'] == 1
    assert 'STAND-IN' in result['results']['gpu-01']['stderr']


def test_jobs_of_one_round_run_at_once(capsys):
    me = socket.gethostname().split('.')[0]
    start = time.time()
    result = run_module(capsys, jobs=[
        {'name': me, 'kind': 'srun', 'argv': ['sh', '-c', 'sleep 2; hostname']},
        {'name': 'other', 'kind': 'srun', 'argv': ['sh', '-c', 'sleep 2; echo elsewhere']},
        {'name': 'later', 'kind': 'srun', 'argv': ['sh', '-c', 'echo later'], 'round': 1},
    ])
    elapsed = time.time() - start
    assert elapsed < 3.8, elapsed
    statuses = dict((r['node'], (r['status'], r['reason'])) for r in result['records'])
    assert statuses[me] == ('pass', 'srun -w %s ran on %s' % (me, me))
    assert statuses['other'] == ('fail', 'srun -w other ran on "elsewhere"')


def test_timeout_and_missing_program(capsys):
    result = run_module(capsys, jobs=[
        {'name': 'slow', 'kind': 'srun', 'argv': ['sleep', '30'], 'timeout': 1},
        {'name': 'gpu-01', 'kind': 'gres', 'gpus': 8, 'argv': ['/nonexistent/srun']},
    ])
    reasons = [r['reason'] for r in result['records']]
    assert reasons[0] == 'srun -w slow timed out after 1s'
    assert reasons[1].startswith('srun --gres=gpu:8 -w gpu-01 failed (rc 127): timeout: failed to run command ')
    assert reasons[1].endswith('/nonexistent/srun\u2019: No such file or directory')


def test_mpi_env_and_skip_jobs(capsys):
    hello = 'echo mpi_hello rank 0 of 2 on a; echo mpi_hello rank 1 of 2 on b'
    result = run_module(capsys, stage='mpi', mpi_required_paths=['srun_pmi'], jobs=[
        {'name': 'pmi', 'kind': 'mpi', 'path': 'srun_pmi', 'label': 'srun --mpi=pmix', 'ranks': 2, 'hosts': ['a', 'b'], 'argv': ['sh', '-c', hello]},
        {'name': 'plain', 'kind': 'mpi', 'path': 'srun_plain', 'label': 'srun', 'ranks': 2, 'hosts': ['a', 'b'],
         'argv': ['sh', '-c', 'echo "  orte_ess_init failed" >&2; exit 1']},
        {'name': 'env', 'kind': 'env', 'argv': ['sh', '-c', 'echo OMPI_MCA_pml=^ucx']},
        {'name': 'container', 'kind': 'skip', 'path': 'pyxis', 'reason': 'pyxis not enabled (validate_node.pyxis)'},
        {'name': 'x', 'kind': 'skip', 'check': 'container_job', 'reason': 'no image'},
    ])
    recs = result['records']
    assert [(r['node'], r['status']) for r in recs] == [('srun_pmi', 'pass'), ('srun_plain', 'skip'), ('pyxis', 'skip'), ('x', 'skip')]
    assert 'orte_ess_init failed' in recs[1]['reason'] and 'without PMI support' in recs[1]['reason']
    assert recs[2]['reason'] == 'srun --mpi=pmix: pyxis not enabled (validate_node.pyxis)' or \
        recs[2]['reason'].endswith('pyxis not enabled (validate_node.pyxis)')
    assert result['warnings_found'] == ['the job environment (env) sets OMPI_MCA_pml=^ucx, which keeps Open MPI off UCX (seed 002: srun + pyxis '
                                        'with OMPI_MCA_pml=^ucx ran all_reduce at half the mpirun bandwidth)']


@pytest.mark.parametrize('jobs, message', [
    ([{'name': 'a', 'kind': 'srun', 'argv': ['true']}, {'name': 'a', 'kind': 'srun', 'argv': ['true']}], 'job names must be unique, these repeat: a'),
    ([{'name': 'a', 'kind': 'srun'}], 'jobs[0] (a).argv is None, expected the command as a non-empty list (every kind but skip runs one)'),
    ([{'name': 'a', 'kind': 'mpi', 'argv': ['true']}], 'jobs[0] (a) (kind mpi) needs a path: srun_pmi, srun_plain, mpirun, pyxis'),
    ([{'name': 'a', 'kind': 'srun', 'argv': ['true'], 'timeout': 0}], 'jobs[0] (a).timeout is 0, expected a whole number of seconds of at least 1'),
])
def test_bad_jobs(capsys, jobs, message):
    result = run_module(capsys, jobs=jobs)
    assert result['failed'] is True and result['msg'] == message


def test_nccl_plan_with_standin_and_mpi_placeholder(capsys, tmp_path, monkeypatch):
    # the all_reduce_perf stand-in picks its recording by the node's (simulated) GPU model
    from nvmlsim import cli
    monkeypatch.setenv('NVMLSIM_STATE', str(tmp_path / 'state.json'))
    monkeypatch.setenv('NVMLSIM_ROOT', str(tmp_path / 'root'))
    assert cli.main(['create', '--preset', 'h100-80gb-x8']) == 0
    capsys.readouterr()
    # a local launcher for the planned srun argv: it records its options and runs the program here
    launcher = tmp_path / 'local-srun'
    launcher.write_text('#!/bin/sh\nwhile [ "${1#--}" != "$1" ]; do echo "$1" >> "%s"; shift; done\nexec "$@"\n' % (tmp_path / 'options'))
    launcher.chmod(0o755)
    result = run_module(capsys, stage='nccl', mpi_plugin='pmi2', nccl={
        'binary': STANDIN, 'srun': str(launcher), 'nodes': [{'name': 'gpu-01', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}], 'fabric': True,
        'env': {'NCCL_DEBUG': 'INFO'}}, jobs=[
        {'name': 'pmi', 'kind': 'mpi', 'path': 'srun_pmi', 'label': 'srun --mpi={mpi}', 'ranks': 1, 'hosts': ['a'],
         'argv': ['sh', '-c', 'echo "--mpi={mpi}" >&2; echo mpi_hello rank 0 of 1 on a']}])
    assert result.get('failed') is not True, result
    assert result['mpi_plugin'] == 'pmi2'
    assert result['results']['pmi']['stderr'] == '--mpi=pmi2\n'
    recs = dict(((r['node'], r['check']), r) for r in result['records'])
    assert recs[('srun_pmi', 'launch')]['reason'] == 'srun --mpi=pmi2: 1 ranks in one world on a'
    assert (tmp_path / 'options').read_text().splitlines() == [
        '--nodes=1', '--nodelist=gpu-01', '--gres=gpu:8', '--exclusive', '--time=10', '--export=ALL,NCCL_DEBUG=INFO', '--label', '--ntasks-per-node=1']
    assert recs[('fabric', 'all_reduce')]['reason'] == 'a fabric run needs at least 2 GPU nodes, there are 1'
    assert recs[('gpu-01', 'busbw')]['status'] == 'pass'


def test_a_job_whose_allocation_failed_is_started_again(capsys, tmp_path):
    # a launcher that fails the first time as srun does when slurmctld is too busy to answer (exit 1, no output)
    count = tmp_path / 'count'
    launcher = tmp_path / 'busy-srun'
    launcher.write_text('#!/bin/sh\necho x >> "%s"\n[ "$(wc -l < "%s")" -ge 2 ] || exit 1\nexec "$@"\n' % (count, count))
    launcher.chmod(0o755)
    job = nccl_job('gpu-01', 'v2.13-era_h100_single_node.txt', ['gpu-01'], {'topology': 'h100-nvlink-8'})
    job['argv'] = [str(launcher)] + job['argv']
    result = run_module(capsys, stage='nccl', jobs=[job])
    assert result.get('failed') is not True, result
    assert result['results']['gpu-01']['attempts'] == 2
    assert [r['status'] for r in result['records'] if r['check'] == 'busbw'] == ['pass']
    assert count.read_text().count('x') == 2


FAKE_SLURM = r'''#!/usr/bin/env python3
# salloc, sinfo, srun and scancel of a fake Slurm for the allocation dispatch: each call is logged (one JSON line); salloc
# grants job 100, 101, ... unless FAKE_SALLOC_REFUSE is set or its nodes hold one of FAKE_BUSY (names, comma-separated);
# sinfo lists the nodes of -n that are not busy; srun exports --export=ALL,K=V and runs the program; a step (--jobid) on
# a node of FAKE_STEP_FAIL fails as a step of an ended allocation does.
import json, os, re, sys
here = os.path.dirname(os.path.abspath(__file__))
name = os.path.basename(sys.argv[0])
with open(os.path.join(here, 'calls.jsonl'), 'a') as log:
    log.write(json.dumps([name] + sys.argv[1:]) + '\n')
busy = set(filter(None, os.environ.get('FAKE_BUSY', '').split(',')))
def expand(hostlist):
    names = []
    for prefix, body, plain in re.findall(r'([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)', hostlist):
        if plain:
            names.append(plain)
            continue
        for part in body.split(','):
            low, _, high = part.partition('-')
            names.extend('%s%0*d' % (prefix, len(low), n) for n in range(int(low), int(high or low) + 1))
    return names
if name == 'salloc':
    nodes = expand(next(a for a in sys.argv if a.startswith('--nodelist='))[len('--nodelist='):])
    if os.environ.get('FAKE_SALLOC_REFUSE') or busy & set(nodes):
        sys.stderr.write('salloc: error: Unable to allocate resources: Requested nodes are busy\n')
        sys.exit(1)
    count = sum(1 for line in open(os.path.join(here, 'calls.jsonl')) if line.startswith('["salloc"'))
    sys.stderr.write('salloc: Granted job allocation %d\nsalloc: Nodes are ready for job\n' % (99 + count))
    sys.exit(0)
if name == 'sinfo':
    print('\n'.join(n for n in expand(sys.argv[sys.argv.index('-n') + 1]) if n not in busy))
    sys.exit(0)
if name == 'scancel':
    sys.exit(0)
step_fail = set(filter(None, os.environ.get('FAKE_STEP_FAIL', '').split(',')))
jobid = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--jobid=')]
if jobid and next(a for a in sys.argv if a.startswith('--nodelist='))[len('--nodelist='):] in step_fail:
    sys.stderr.write('srun: error: Unable to create step for job %s: Job/step already completing or completed\n' % jobid[0])
    sys.exit(1)
if jobid and os.environ.get('FAKE_STEP_TRACE'):
    import time
    with open(os.environ['FAKE_STEP_TRACE'], 'a') as trace:
        trace.write('start\n')
    time.sleep(0.3)
    with open(os.environ['FAKE_STEP_TRACE'], 'a') as trace:
        trace.write('end\n')
args = sys.argv[1:]
while args and args[0].startswith('-'):
    option = args.pop(0)
    if option.startswith('--export=ALL,'):
        os.environ.update(item.split('=', 1) for item in option[len('--export=ALL,'):].split(','))
os.execvp(args[0], args)
'''


def fake_slurm(tmp_path):
    script = tmp_path / 'fake-slurm'
    script.write_text(FAKE_SLURM)
    script.chmod(0o755)
    for name in ('salloc', 'sinfo', 'srun', 'scancel'):
        (tmp_path / name).symlink_to(script)
    return str(tmp_path / 'srun')


def calls(tmp_path):
    return [json.loads(line) for line in (tmp_path / 'calls.jsonl').read_text().splitlines()]


def dispatch_plan(srun, **extra):
    # two node types: two H100 nodes, one node with two A100 (as one allocation each)
    plan_nodes = [{'name': name, 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': 'h100'} for name in ('gpu-01', 'gpu-02')]
    plan_nodes.append({'name': 'gpu-03', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3', 'gres_type': 'h100x'})
    return dict({'binary': STANDIN, 'srun': srun, 'nodes': plan_nodes, 'node_topology': 'h100-nvlink-8',
                 'env': {'ALL_REDUCE_PERF_STANDIN_OUTPUT': 'v2.13-era_h100_single_node.txt'}}, **extra)


def test_per_node_runs_as_steps_of_one_allocation_per_node_type(capsys, tmp_path):
    srun = fake_slurm(tmp_path)
    result = run_module(capsys, stage='nccl', nccl=dispatch_plan(srun, dispatch='allocation'))
    assert result.get('failed') is not True, result
    log = calls(tmp_path)
    sallocs = [c for c in log if c[0] == 'salloc']
    assert [c[5:8] for c in sallocs] == [['--nodelist=gpu-[01-02]', '--exclusive', '--gres=gpu:h100:8'],
                                         ['--nodelist=gpu-03', '--exclusive', '--gres=gpu:h100x:8']]
    # every per-node run is a step of its type's allocation (no --exclusive of its own), and both are cancelled after
    steps = dict((next(a for a in c if a.startswith('--nodelist=')), c) for c in log if c[0] == 'srun')
    assert [(node, c[1]) for node, c in sorted(steps.items())] == [
        ('--nodelist=gpu-01', '--jobid=100'), ('--nodelist=gpu-02', '--jobid=100'), ('--nodelist=gpu-03', '--jobid=101')]
    assert not any('--exclusive' in c for c in steps.values())
    assert [c for c in log if c[0] == 'scancel'] == [['scancel', '100'], ['scancel', '101']]
    assert log.index(['scancel', '100']) > max(log.index(c) for c in steps.values())
    assert [(a['name'], a['nodes'], a['job_id'], a.get('refused')) for a in result['allocations']] == [
        ('gpu:h100:8 on 2 nodes', 2, '100', None), ('gpu:h100x:8 on 1 node', 1, '101', None)]
    assert result['results']['gpu-02']['dispatch'] == 'step of job 100'
    assert [(r['node'], r['status']) for r in result['records'] if r['check'] == 'busbw'] == [
        ('gpu-01', 'pass'), ('gpu-02', 'pass'), ('gpu-03', 'pass')]


def test_an_allocation_not_granted_sends_its_runs_as_jobs_of_their_own(capsys, tmp_path, monkeypatch):
    srun = fake_slurm(tmp_path)
    monkeypatch.setenv('FAKE_SALLOC_REFUSE', '1')
    result = run_module(capsys, stage='nccl', nccl=dispatch_plan(srun, dispatch='allocation', allocation_wait=5))
    assert result.get('failed') is not True, result
    log = calls(tmp_path)
    # refused although sinfo lists every node idle: nothing to leave out, so each run goes as its own job
    assert [c[:3] for c in log if c[0] != 'srun'] == [['salloc', '--no-shell', '--immediate=5'], ['sinfo', '-h', '-N'],
                                                      ['salloc', '--no-shell', '--immediate=5'], ['sinfo', '-h', '-N']]
    steps = [c for c in log if c[0] == 'srun']
    assert len(steps) == 3 and all('--exclusive' in c and not any(a.startswith('--jobid') for a in c) for c in steps)
    why = 'salloc: error: Unable to allocate resources: Requested nodes are busy'
    assert [a['refused'] for a in result['allocations']] == [why, why]
    assert result['results']['gpu-03']['dispatch'] == 'own job (the allocation was not granted: %s)' % why
    assert [r['status'] for r in result['records'] if r['check'] == 'busbw'] == ['pass', 'pass', 'pass']


def test_a_busy_node_is_left_out_of_its_allocation(capsys, tmp_path, monkeypatch):
    srun = fake_slurm(tmp_path)
    monkeypatch.setenv('FAKE_BUSY', 'gpu-02')
    result = run_module(capsys, stage='nccl', nccl=dispatch_plan(srun, dispatch='allocation'))
    assert result.get('failed') is not True, result
    log = calls(tmp_path)
    assert [next(a for a in c if a.startswith('--nodelist=')) for c in log if c[0] == 'salloc'] == [
        '--nodelist=gpu-[01-02]', '--nodelist=gpu-01', '--nodelist=gpu-03']
    assert [c for c in log if c[0] == 'sinfo'] == [['sinfo', '-h', '-N', '-t', 'idle', '-o', '%N', '-n', 'gpu-[01-02]']]
    assert [(a['name'], a['nodes'], a['job_id']) for a in result['allocations']] == [
        ('gpu:h100:8 on 2 nodes', 2, None), ('gpu:h100:8 on 1 idle node', 1, '101'), ('gpu:h100x:8 on 1 node', 1, '102')]
    dispatch = dict((name, r.get('dispatch')) for name, r in result['results'].items())
    assert dispatch == {'gpu-01': 'step of job 101', 'gpu-03': 'step of job 102',
                        'gpu-02': 'own job (the allocation was not granted: salloc: error: Unable to allocate resources: '
                                  'Requested nodes are busy; not idle: gpu-02)'}
    assert [c for c in log if c[0] == 'scancel'] == [['scancel', '101'], ['scancel', '102']]


def test_small_clusters_keep_one_job_per_node_by_default(capsys, tmp_path):
    srun = fake_slurm(tmp_path)
    result = run_module(capsys, stage='nccl', nccl=dispatch_plan(srun))
    assert result.get('failed') is not True, result
    assert [c[0] for c in calls(tmp_path)] == ['srun', 'srun', 'srun'] and result['allocations'] == []
    assert 'dispatch' not in result['results']['gpu-01']


# ---------------------------------------------------------------- the Slurm stage's allocation dispatch (issue 48 item 6), stand-in Slurm

def slurm_stage(srun, **extra):
    nodes = [{'name': 'gpu-%02d' % i, 'gpus': 2, 'usable': True} for i in range(1, 4)] + [{'name': 'cpu-01', 'gpus': 0, 'usable': True}]
    return dict({'nodes': nodes, 'srun': srun, 'pyxis': False}, **extra)


def judged(result):
    return [(r['node'], r['check'], r['status'], r.get('reason')) for r in result['records']]


@pytest.mark.parametrize('case', [{}, {'FAKE_STEP_FAIL': 'gpu-02'}, {'FAKE_BUSY': 'gpu-03'}, {'FAKE_SALLOC_REFUSE': '1'}],
                         ids=['steps', 'failed-step', 'busy', 'refused'])
def test_slurm_stage_as_steps_judges_as_one_job_per_node(capsys, tmp_path, monkeypatch, case):
    srun = fake_slurm(tmp_path)
    per_node = run_module(capsys, stage='slurm', slurm=slurm_stage(srun, dispatch='per_node'))
    assert per_node.get('failed') is not True, per_node
    assert [c[0] for c in calls(tmp_path)] == ['srun'] * 8  # 4 nodes' srun, 3 gres jobs, the job environment
    (tmp_path / 'calls.jsonl').unlink()
    for key, value in case.items():
        monkeypatch.setenv(key, value)
    result = run_module(capsys, stage='slurm', slurm=slurm_stage(srun, dispatch='allocation'))
    assert result.get('failed') is not True, result
    assert judged(result) == judged(per_node)
    log = calls(tmp_path)
    sallocs = [[a for a in c if a.startswith(('--nodelist=', '--gres=', '--job-name='))] for c in log if c[0] == 'salloc']
    dispatch = dict((name, r.get('dispatch')) for name, r in result['results'].items())
    if not case:
        # round 0: srun on the three 2-GPU nodes (cpu-01 alone of its type, the job environment: jobs of their own); round 1: the GRES jobs
        assert sallocs == [['--nodelist=gpu-[01-03]', '--job-name=validate-srun'], ['--nodelist=gpu-[01-03]', '--job-name=validate-gres', '--gres=gpu:2']]
        assert [c for c in log if c[0] == 'scancel'] == [['scancel', '100'], ['scancel', '101']]
        assert dispatch['gpu-02'] == 'step of job 100' and dispatch['gpu-02/gres'] == 'step of job 101'
        assert 'dispatch' not in result['results']['cpu-01'] and 'dispatch' not in result['results']['job-environment']
        assert len([c for c in log if c[0] == 'srun']) == 8
    elif 'FAKE_STEP_FAIL' in case:
        # its steps failed: each ran again as the job of its own it was, and was judged on that
        assert dispatch['gpu-02'] == ('own job (its step of job 100 failed (rc 1): srun: error: Unable to create step for job 100: '
                                      'Job/step already completing or completed)')
        assert dispatch['gpu-02/gres'].startswith('own job (its step of job 101 failed (rc 1): srun: error: Unable to create step')
        assert len([c for c in log if c[0] == 'srun']) == 10
    elif 'FAKE_BUSY' in case:
        assert sallocs[:3] == [['--nodelist=gpu-[01-03]', '--job-name=validate-srun'], ['--nodelist=gpu-[01-02]', '--job-name=validate-srun'],
                               ['--nodelist=gpu-[01-03]', '--job-name=validate-gres', '--gres=gpu:2']]
        assert dispatch['gpu-03'].startswith('own job (the allocation was not granted: ') and dispatch['gpu-03'].endswith('not idle: gpu-03)')
    else:
        assert all(d is None or d.startswith('own job (the allocation was not granted') for d in dispatch.values())
        assert [a['refused'] for a in result['allocations']] == ['salloc: error: Unable to allocate resources: Requested nodes are busy'] * 2


def test_the_slurm_stage_runs_at_most_step_parallel_steps_at_once(capsys, tmp_path, monkeypatch):
    # at 1,024 emulated nodes the steps of one allocation, all started at once, timed out (benchmarks/README.md)
    srun = fake_slurm(tmp_path)
    trace = tmp_path / 'trace'
    monkeypatch.setenv('FAKE_STEP_TRACE', str(trace))
    monkeypatch.setattr(validation_jobs, 'STEP_PARALLEL', 1)
    result = run_module(capsys, stage='slurm', slurm=slurm_stage(srun, dispatch='allocation'))
    assert result.get('failed') is not True, result
    running, peak = 0, 0
    for line in trace.read_text().split():
        running += 1 if line == 'start' else -1
        peak = max(peak, running)
    assert trace.read_text().count('start') == 6 and peak == 1  # 3 srun steps, then 3 GRES steps, one at a time
