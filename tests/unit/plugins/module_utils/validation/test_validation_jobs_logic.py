# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decisions of the validation_jobs module, called directly (_validation_jobs).

The module's own tests run real commands; these give each function its inputs and compare the whole result:
the planned jobs with their defaults, the ``{mpi}`` placeholder filled in or the job skipped, the records of
finished and skipped jobs, the failures and the cut results.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj

PARAMS = {'stage': 'custom', 'mpi_required_paths': ['srun_pmi']}
# A stage other than the record helpers' defaults ('slurm', 'mpi'), so a lost stage shows.
INPUT = {'stage': 'custom', 'mpi_plugin': 'auto', 'srun': 'srun', 'mpi_required_paths': [], 'jobs': [], 'slurm': None, 'mpi': None,
         'nccl': None}
NCCL_PLAN = {'binary': '/opt/nccl/all_reduce_perf', 'nodes': [{'name': 'gpu-01', 'gpus': 8, 'model': 'H100'}]}


def full_job(**values):
    job = dict((key, None) for key in vj.JOB_KEYS)
    job.update(env={}, timeout=300, round=0, check='all_reduce', status='skip')
    job.update(values)
    return job


# ---------------------------------------------------------------- planned_jobs / checked_jobs

def test_planned_jobs_fill_the_defaults_of_the_jobs_option():
    jobs = vj.planned_jobs(dict(INPUT, slurm={'nodes': [{'name': 'gpu-01', 'gpus': 0}]}))
    assert jobs == [
        full_job(name='gpu-01', kind='srun', timeout=120, check='all_reduce', status='skip',
                 argv=['srun', '--nodes=1', '--ntasks=1', '--nodelist=gpu-01', '--time=2', '--export=ALL', '--job-name=validate-srun', 'hostname']),
        full_job(name='gpu-01/container', kind='skip', check='container_job', reason='not checked: pyxis not expected (validate_node.pyxis is false)'),
        full_job(name='job-environment', kind='env', timeout=120,
                 argv=['srun', '--nodes=1', '--ntasks=1', '--nodelist=gpu-01', '--time=2', '--export=ALL', '--job-name=validate-env', 'env']),
    ]
    assert jobs[1]['env'] == {} and jobs[1]['timeout'] == 300 and jobs[1]['round'] == 0 and jobs[1]['status'] == 'skip'
    assert jobs[0]['check'] == 'all_reduce'
    assert vj.planned_jobs(INPUT) == []


@pytest.mark.parametrize('params, message', [
    (dict(INPUT, mpi={'nodes': ['a'], 'binary': '/b', 'env': {'X': [1]}}), 'mpi plan: env[X] is [1], expected a string or number'),
    (dict(INPUT, slurm={'nodes': []}), "slurm plan: Slurm plan nodes must be a non-empty list of {name, gpus, usable}, got []"),
    (dict(INPUT, nccl={'nodes': []}), 'nccl plan: the NCCL plan needs binary: the path of all_reduce_perf on the nodes'),
])
def test_planned_jobs_name_the_plan_that_fails(params, message):
    with pytest.raises(vj.JobsFailure) as failure:
        vj.planned_jobs(params)
    assert failure.value.msg == message


def test_checked_jobs_given_then_planned():
    given = {'name': 'mine', 'kind': 'skip', 'timeout': 5, 'round': 2}
    jobs = vj.checked_jobs(dict(INPUT, jobs=[given], mpi={'nodes': [], 'skip_reason': 'no MPI here'}))
    assert [(job['name'], job['kind'], job['timeout'], job['round']) for job in jobs] == [
        ('mine', 'skip', 5, 2), ('srun_pmi', 'skip', 300, 0), ('srun_plain', 'skip', 300, 0), ('mpirun', 'skip', 300, 0), ('pyxis', 'skip', 300, 0)]
    assert given == {'name': 'mine', 'kind': 'skip', 'timeout': 5, 'round': 2}


@pytest.mark.parametrize('params, message', [
    # the given jobs are checked on their own first
    (dict(INPUT, jobs=[{'name': 'mine', 'kind': 'srun', 'timeout': 5, 'round': 0}]),
     'jobs[0] (mine).argv is None, expected the command as a non-empty list (every kind but skip runs one)'),
    (dict(INPUT, stage='two words'), None),
    # the NCCL plan's own values are checked like the other plans' (its timeout, env and time_limit)
    (dict(INPUT, nccl=dict(NCCL_PLAN, timeout='x')),
     "nccl plan: timeout is 'x', expected a whole number of seconds of at least 1"),
    (dict(INPUT, jobs=[{'name': 'mine', 'kind': 'skip', 'timeout': 5, 'round': 0}], nccl=dict(NCCL_PLAN, env={'X': None})),
     "nccl plan: env[X] is None, expected a string or number"),
    (dict(INPUT, jobs=[{'name': 'gpu-01', 'kind': 'skip', 'timeout': 5, 'round': 0}], nccl=NCCL_PLAN),
     'job names must be unique, these repeat: gpu-01'),
])
def test_checked_jobs_failures(params, message):
    with pytest.raises(vj.JobsFailure) as failure:
        vj.checked_jobs(params)
    if message is None:
        assert failure.value.msg.startswith('stage is ')
    else:
        assert failure.value.msg == message
        assert str(failure.value) == message


# ---------------------------------------------------------------- needing_mpi / fill_mpi

def test_needing_mpi():
    jobs = [
        {'name': 'skipped', 'kind': 'skip', 'argv': ['srun', '--mpi={mpi}']},
        {'name': 'pmi', 'kind': 'mpi', 'argv': ['srun', '--mpi={mpi}', 'hello']},
        {'name': 'plain', 'kind': 'mpi', 'argv': ['srun', '--mpi=none', 'hello']},
        {'name': 'none', 'kind': 'srun', 'argv': None},
        {'name': 'fabric', 'kind': 'nccl', 'argv': ['srun', '--mpi={mpi}']},
    ]
    assert [job['name'] for job in vj.needing_mpi(jobs)] == ['pmi', 'fabric']


def test_fill_mpi_with_a_plugin():
    jobs = [{'name': 'pmi', 'kind': 'mpi', 'argv': ['srun', '--mpi={mpi}', 'x{mpi}'], 'label': 'srun --mpi={mpi}'},
            {'name': 'fabric', 'kind': 'nccl', 'argv': ['srun', '--mpi={mpi}'], 'label': None}]
    assert vj.fill_mpi(jobs, 'pmix', ['pmix', 'pmi2']) == {'mpi_plugin': 'pmix', 'mpi_available': ['pmix', 'pmi2']}
    assert jobs == [{'name': 'pmi', 'kind': 'mpi', 'argv': ['srun', '--mpi=pmix', 'xpmix'], 'label': 'srun --mpi=pmix'},
                    {'name': 'fabric', 'kind': 'nccl', 'argv': ['srun', '--mpi=pmix'], 'label': None}]


@pytest.mark.parametrize('available, shown', [
    (['none', 'cray_shasta'], 'none, cray_shasta'),
    (['none'], 'none'),
    ([], 'nothing'),
])
def test_fill_mpi_without_a_plugin_skips_the_jobs(available, shown):
    jobs = [{'name': 'pmi', 'kind': 'mpi', 'argv': ['srun', '--mpi={mpi}'], 'label': 'srun --mpi={mpi} ({mpi})', 'reason': None},
            {'name': 'fabric', 'kind': 'nccl', 'argv': ['srun', '--mpi={mpi}'], 'reason': None}]
    assert vj.fill_mpi(jobs, None, available) == {'mpi_plugin': None, 'mpi_available': available}
    reason = 'srun offers no PMI plugin (srun --mpi=list: %s), so MPI ranks cannot be wired' % shown
    assert jobs == [{'name': 'pmi', 'kind': 'skip', 'argv': ['srun', '--mpi={mpi}'], 'label': 'srun --mpi=none (none)', 'reason': reason},
                    {'name': 'fabric', 'kind': 'skip', 'argv': ['srun', '--mpi={mpi}'], 'reason': reason}]


# ---------------------------------------------------------------- judge

SRUN_OK = {'rc': 0, 'stdout': 'gpu-01\n', 'stderr': ''}
FAILED = {'rc': 2, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources'}


@pytest.mark.parametrize('job, result, records', [
    ({'name': 'gpu-01', 'kind': 'srun', 'argv': ['srun']}, SRUN_OK,
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'srun', 'status': 'pass', 'reason': 'srun -w gpu-01 ran on gpu-01'}]),
    ({'name': 'gpu-01/x', 'kind': 'srun', 'argv': ['srun']}, SRUN_OK,
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'srun', 'status': 'pass', 'reason': 'srun -w gpu-01 ran on gpu-01'}]),
    ({'name': 'gpu-01/gres', 'kind': 'gres', 'gpus': 2, 'argv': ['srun']}, {'rc': 0, 'stdout': 'CUDA_VISIBLE_DEVICES=0,1\n', 'stderr': ''},
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'gres_job', 'status': 'pass',
       'reason': 'a --gres=gpu:2 job sees 2 device(s): CUDA_VISIBLE_DEVICES=0,1', 'value': 2}]),
    ({'name': 'gpu-01/container', 'kind': 'container', 'image': 'ubuntu:24.04', 'argv': ['srun']}, {'rc': 0, 'stdout': '', 'stderr': ''},
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'container_job', 'status': 'pass', 'reason': 'a pyxis job ran in ubuntu:24.04 on gpu-01'}]),
    ({'name': 'gpu-01/container', 'kind': 'container', 'image': 'ubuntu:24.04', 'argv': ['srun']}, FAILED,
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'container_job', 'status': 'fail',
       'reason': 'srun --container-image=ubuntu:24.04 -w gpu-01 failed (rc 2): srun: error: Unable to allocate resources'}]),
    ({'name': 'gpu-01/container', 'kind': 'container', 'argv': ['srun']}, FAILED,
     [{'stage': 'custom', 'node': 'gpu-01', 'check': 'container_job', 'status': 'skip',
       'reason': 'not checked: no container image given (validate_jobs.container_image)'}]),
    # an MPI job: its label (else its name), its ranks (else 1) and hosts
    ({'name': 'pmi', 'kind': 'mpi', 'path': 'srun_pmi', 'hosts': ['a', 'b'], 'argv': ['srun']},
     {'rc': 0, 'stdout': 'mpi_hello rank 0 of 1 on a\n', 'stderr': ''},
     [{'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'pass', 'reason': 'pmi: 1 ranks in one world on a', 'hosts': ['a', 'b']}]),
    ({'name': 'pmi', 'kind': 'mpi', 'path': 'srun_pmi', 'label': 'srun --mpi=pmix', 'ranks': 2, 'argv': ['srun']},
     {'rc': 0, 'stdout': 'mpi_hello rank 0 of 1 on a\n', 'stderr': ''},
     [{'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail',
       'reason': 'srun --mpi=pmix: each of the 1 tasks started as its own 1-rank world (no PMI wiring between srun and MPI)'}]),
    # an NCCL run without results: its check (default all_reduce) and hosts (default: its name) in the record
    # (a failed one carries the command that reruns it)
    ({'name': 'fabric', 'kind': 'nccl', 'hosts': ['a', 'b'], 'check': 'pair_busbw', 'argv': ['srun']}, FAILED,
     [{'stage': 'nccl', 'node': 'fabric', 'check': 'pair_busbw', 'status': 'fail',
       'reason': 'all_reduce_perf printed no results (rc 2): srun: error: Unable to allocate resources', 'hosts': ['a', 'b'], 'command': 'srun'}]),
    ({'name': 'gpu-01', 'kind': 'nccl', 'argv': ['srun']}, FAILED,
     [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'all_reduce', 'status': 'fail',
       'reason': 'all_reduce_perf printed no results (rc 2): srun: error: Unable to allocate resources', 'hosts': ['gpu-01'], 'command': 'srun'}]),
])
def test_judge_records(job, result, records):
    assert vj.judge(job, result, PARAMS) == (records, [], [])


@pytest.mark.parametrize('argv, env, line', [
    (['srun', '--nodes=2', '--export=ALL,NCCL_DEBUG=INFO,NCCL_ALGO=Ring', '/opt/nccl-tests/build/all_reduce_perf', '-b', '8', '-g', '1'], None,
     'srun --nodes=2 --export=ALL,NCCL_DEBUG=INFO,NCCL_ALGO=Ring /opt/nccl-tests/build/all_reduce_perf -b 8 -g 1'),
    # what a shell would split or expand is quoted
    (['srun', '--container-image=nvcr.io#nvidia/pytorch:24.01', "--comment=it's", 'a b', '$HOME', '*', ''], None,
     "srun '--container-image=nvcr.io#nvidia/pytorch:24.01' '--comment=it'\"'\"'s' 'a b' '$HOME' '*' ''"),
    # the job's own environment goes first, with env
    (['srun', 'x'], {'NCCL_IB_HCA': 'mlx5_0:1', 'B': 'two words'}, "env 'B=two words' NCCL_IB_HCA=mlx5_0:1 srun x"),
    (['srun', 'x'], {}, 'srun x'),
])
def test_command_line(argv, env, line):
    import shlex
    assert vj.command_line(argv, env) == line
    assert shlex.split(line)[-len(argv):] == argv      # the shell gives back the same words


def nccl_fixture(name):
    import os
    with open(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures', 'nccl', name)) as handle:
        return handle.read()


def test_an_nccl_run_names_its_versions_on_its_first_record_and_its_command_on_its_failures():
    job = {'name': 'fabric', 'kind': 'nccl', 'hosts': ['gpu-01', 'gpu-02'], 'argv': ['srun', '--nodes=2', 'all_reduce_perf'],
           'expect': {'min_busbw_gbps': 10000.0}}
    records, series, dummy = vj.judge(job, {'rc': 0, 'stdout': nccl_fixture('v2.18.3_h200_two_nodes.txt')}, PARAMS)
    assert records[0]['versions'] == {'nccl': '2.30.4+cuda13.2', 'nccl_tests': '2.18.3'}
    assert [r for r in records[1:] if 'versions' in r] == []
    assert [(r['check'], r.get('command')) for r in records if r['status'] == 'fail'] == [('busbw', 'srun --nodes=2 all_reduce_perf')]
    assert [r for r in records if r['status'] != 'fail' and 'command' in r] == []
    assert series and series[0]['label'] == 'fabric'


@pytest.mark.parametrize('name, versions', [
    ('v2.17.8_gh200_two_nodes_wrong.txt', {'nccl_tests': '2.17.8'}),                  # no NCCL_DEBUG=INFO: no NCCL version line
    ('composed_h100_two_nodes_socket_fallback.txt', {'nccl': '2.21.5+cuda12.4'}),     # an older nccl-tests without its version line
    ('v2.13-era_h100_single_node.txt', {}),
])
def test_run_versions(name, versions):
    assert vj.run_versions({'rc': 0, 'stdout': nccl_fixture(name)}) == versions


@pytest.mark.parametrize('result', [
    {'rc': 2, 'stdout': '', 'stderr': 'srun: error'},
    {'rc': 0, 'stdout': None},
    {'rc': 0, 'stdout': '# nccl-tests version 2.13.9\n'},    # not a run's output (no header): nothing is said of it
])
def test_run_versions_of_a_run_without_results(result):
    assert vj.run_versions(result) == {}


def test_a_note_of_the_plan_is_a_warning_of_the_report():
    """A user's NCCL_ALGO kept on a two-node run (the plan's note) reaches the report's warnings, not only the busbw reason."""
    note = 'NCCL_ALGO=Tree from the run environment (validate_nccl_settings.env) kept on this 2-node run: its busbw may exceed what the NICs carry'
    job = {'name': 'fabric', 'kind': 'nccl', 'hosts': ['gpu-01', 'gpu-02'], 'argv': ['srun', '--nodes=2', 'all_reduce_perf'],
           'expect': {'min_busbw_gbps': 1.0, 'nodes': 2, 'notes': [note]}}
    dummy, dummy_series, warnings = vj.judge(job, {'rc': 0, 'stdout': nccl_fixture('v2.18.3_h200_two_nodes.txt')}, PARAMS)
    assert warnings == ['NCCL run fabric: ' + note]
    del job['expect']['notes']
    assert vj.judge(job, {'rc': 0, 'stdout': nccl_fixture('v2.18.3_h200_two_nodes.txt')}, PARAMS)[2] == []


def test_judge_mpi_pmi_wiring_and_unknown_path():
    job = {'name': 'pmi', 'kind': 'mpi', 'path': 'srun_pmi', 'argv': ['srun']}
    # ranks default to 1: a 1-rank world passes, the same output with two ranks expected does not
    ok = {'rc': 0, 'stdout': 'mpi_hello rank 0 of 1 on a\n', 'stderr': ''}
    assert vj.judge(job, ok, PARAMS)[0][0]['status'] == 'pass'
    assert vj.judge(dict(job, ranks=2), ok, PARAMS)[0][0]['status'] == 'fail'
    with pytest.raises(ValueError, match="unknown MPI path 'nowhere'"):
        vj.judge(dict(job, path='nowhere'), ok, PARAMS)


def test_judge_env_job():
    job = {'name': 'job-environment', 'kind': 'env', 'argv': ['srun', '--nodes=1', 'env']}
    assert vj.judge(job, {'rc': 1, 'stdout': '', 'stderr': ''}, PARAMS) == (
        [], [], ['could not read the job environment with srun --nodes=1 env (rc 1)'])
    assert vj.judge(job, {'stdout': '', 'stderr': ''}, PARAMS) == ([], [], ['could not read the job environment with srun --nodes=1 env (rc None)'])
    assert vj.judge(job, {'rc': 0, 'stdout': None, 'stderr': ''}, PARAMS) == ([], [], [])
    warnings = vj.judge(job, {'rc': 0, 'stdout': 'NCCL_P2P_DISABLE=1\n', 'stderr': ''}, PARAMS)
    assert warnings[:2] == ([], []) and len(warnings[2]) == 1
    assert warnings[2][0].startswith('the job environment (job-environment) sets NCCL_P2P_DISABLE=1, which ')


@pytest.mark.parametrize('kind', ['skip', 'bogus', 'CONTAINER'])
def test_judge_refuses_other_kinds(kind):
    with pytest.raises(ValueError) as error:
        vj.judge({'name': 'x', 'kind': kind, 'argv': ['srun']}, SRUN_OK, PARAMS)
    assert str(error.value) == 'unknown job kind %r' % kind


# ---------------------------------------------------------------- skipped_record

@pytest.mark.parametrize('job, plugin, item', [
    # an MPI launch path: its label (else name) with the plugin used, its reason, its hosts
    (full_job(name='srun_pmi', kind='skip', path='srun_pmi', label='srun --mpi={mpi}', reason='no PMI', hosts=['a', 'b'], ranks=2), 'pmix',
     {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'srun --mpi=pmix: no PMI', 'hosts': ['a', 'b']}),
    (full_job(name='srun_pmi', kind='skip', path='srun_pmi', label='srun --mpi={mpi}', reason='no PMI'), None,
     {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'srun --mpi=<pmi>: no PMI'}),
    (full_job(name='pyxis {mpi}', kind='skip', path='pyxis'), 'pmi2',
     {'stage': 'mpi', 'node': 'pyxis', 'check': 'launch', 'status': 'skip', 'reason': 'pyxis pmi2: skipped'}),
    # any other job: a record of the stage, on the node its name starts with
    (full_job(name='gpu-01/container', kind='skip', check='container_job', status='fail', reason='no image', hosts=['gpu-01']), None,
     {'stage': 'custom', 'node': 'gpu-01', 'check': 'container_job', 'status': 'fail', 'reason': 'no image', 'hosts': ['gpu-01']}),
    (full_job(name='gpu-02/gres', kind='skip', check=None, status=None, reason=None), 'pmix',
     {'stage': 'custom', 'node': 'gpu-02', 'check': 'skipped', 'status': 'skip', 'reason': 'skipped'}),
])
def test_skipped_record(job, plugin, item):
    assert vj.skipped_record(job, PARAMS, plugin) == item


# ---------------------------------------------------------------- judge_jobs / tails

def test_judge_jobs_in_job_order():
    jobs = [full_job(name='srun_pmi', kind='skip', path='srun_pmi', label='srun --mpi={mpi}', reason='asked'),
            full_job(name='gpu-01', kind='srun', argv=['srun']),
            full_job(name='job-environment', kind='env', argv=['srun', 'env'])]
    results = {'gpu-01': SRUN_OK, 'job-environment': {'rc': 0, 'stdout': 'NCCL_P2P_DISABLE=1\n', 'stderr': ''}}
    records, series, warnings = vj.judge_jobs(jobs, results, PARAMS, 'pmi2')
    assert records == [
        {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'srun --mpi=pmi2: asked'},
        {'stage': 'custom', 'node': 'gpu-01', 'check': 'srun', 'status': 'pass', 'reason': 'srun -w gpu-01 ran on gpu-01'},
    ]
    assert series == []
    assert len(warnings) == 1 and warnings[0].startswith('the job environment (job-environment) sets NCCL_P2P_DISABLE=1')
    assert vj.judge_jobs(jobs[:1], {}, PARAMS)[0][0]['reason'] == 'srun --mpi=<pmi>: asked'


def test_judge_jobs_names_the_job_that_cannot_be_judged():
    jobs = [full_job(name='odd', kind='bogus', argv=['srun'])]
    with pytest.raises(vj.JobsFailure) as failure:
        vj.judge_jobs(jobs, {'odd': SRUN_OK}, PARAMS)
    assert failure.value.msg == "job odd: unknown job kind 'bogus'"


def test_tails():
    long_out = 'o' * 10 + 'x' * vj.TAIL
    results = {'a': {'rc': 0, 'stdout': long_out, 'stderr': 'e' * 5 + 'y' * vj.TAIL, 'timed_out': False},
               'b': {'rc': 1, 'stdout': 'short', 'stderr': 'err'}}
    assert vj.tails(results) == {'a': {'rc': 0, 'stdout': 'x' * vj.TAIL, 'stderr': 'y' * vj.TAIL, 'timed_out': False},
                                 'b': {'rc': 1, 'stdout': 'short', 'stderr': 'err'}}
    assert vj.TAIL == 4000
