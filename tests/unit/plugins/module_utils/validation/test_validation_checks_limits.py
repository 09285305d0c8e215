# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""More edges of _validation_checks: both sides of each limit, the defaults of plans and checks, and whole messages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc


@pytest.mark.parametrize('value, expected', [(' no ', True), ('OFF\n', True), (' 0', True), (0.0, True), (False, True), (True, False),
                                             (None, False), (1, False), ('', False), ([], False)])
def test_is_false_more(value, expected):
    assert vc.is_false(value) is expected


# ---------------------------------------------------------------- gres.conf of several nodes

def test_a_nodename_that_is_no_hostlist_names_only_the_node_of_that_name():
    text = 'NodeName=a,,b Name=gpu Count=1\nName=mps Count=2\n'
    assert vc.gres_conf_lines(text, 'a,,b') == ['Name=gpu Count=1', 'Name=mps Count=2']
    assert vc.gres_conf_lines(text, 'a') == ['Name=mps Count=2']


# ---------------------------------------------------------------- node checks

def test_nvml_answering_without_a_gpu_list_is_zero_gpus():
    records = vc.node_records('gpu-01', {'nvml_error': None}, {'gpu_count': 0})
    assert records[:2] == [
        {'stage': 'node', 'node': 'gpu-01', 'check': 'nvml', 'status': 'pass', 'reason': 'NVML answers: 0 GPU(s)'},
        {'stage': 'node', 'node': 'gpu-01', 'check': 'gpu_count', 'status': 'skip', 'reason': 'not checked: NVML was not queried'},
    ]


# ---------------------------------------------------------------- MPI

def test_choose_mpi_plugin_without_a_wish_is_auto():
    assert vc.choose_mpi_plugin(['pmi2', 'pmix'], None) == 'pmix'
    assert vc.choose_mpi_plugin(['pmi2', 'none'], '') == 'pmi2'
    assert vc.choose_mpi_plugin(['none', 'pmix_v3', 'pmix_v4']) == 'pmix_v3'
    assert vc.choose_mpi_plugin(['none']) is None


HELLO = 'mpi_hello rank %d of %d on %s'


@pytest.mark.parametrize('args, expected', [
    # a skipped path with no hosts names none
    (('srun_pmi', 'srun --mpi=pmix', {'skipped': True}, 2, [], ['srun_pmi']),
     {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'fail', 'reason': 'srun --mpi=pmix: not run'}),
    (('mpirun', 'mpirun', None, 2, None, []),
     {'stage': 'mpi', 'node': 'mpirun', 'check': 'launch', 'status': 'skip', 'reason': 'mpirun: not run'}),
    # one rank expected: a world of one is that rank
    (('srun_pmi', 'srun --mpi=pmix', {'rc': 0, 'stdout': HELLO % (0, 1, 'gpu-01')}, 1, ['gpu-01'], ['srun_pmi']),
     {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'pass', 'reason': 'srun --mpi=pmix: 1 ranks in one world on gpu-01',
      'hosts': ['gpu-01']}),
    # the hosts of the ranks, each once and sorted
    (('srun_pmi', 'srun --mpi=pmix', {'rc': 0, 'stdout': '\n'.join(HELLO % (r, 4, h) for r, h in enumerate(['b', 'a', 'b', 'a']))}, 4, [],
      ['srun_pmi']),
     {'stage': 'mpi', 'node': 'srun_pmi', 'check': 'launch', 'status': 'pass', 'reason': 'srun --mpi=pmix: 4 ranks in one world on a, b'}),
])
def test_mpi_record_limits(args, expected):
    assert vc.mpi_record(*args) == expected


@pytest.mark.parametrize('env, expected', [
    # keys and values of env output lines are read without their blanks
    ('0: NCCL_IB_DISABLE = 1 \n', ['the job sets NCCL_IB_DISABLE=1, which turns InfiniBand off for NCCL (sockets only)']),
    ('NCCL_NET=socket\nPATH=/bin\n', ['the job sets NCCL_NET=socket, which forces NCCL onto TCP sockets']),
    ({'NCCL_IB_DISABLE': 0, 'NCCL_P2P_DISABLE': None}, []),
])
def test_slow_env_warnings_read_env_output(env, expected):
    assert vc.slow_env_warnings(env, 'the job') == expected


def test_missing_node_records_count_only_the_stage():
    records = [{'stage': 'slurm', 'node': 'gpu-01', 'check': 'srun', 'status': 'pass'},
               {'stage': 'node', 'node': 'gpu-02', 'check': 'nvml', 'status': 'pass'}]
    assert vc.missing_node_records(records, ['gpu-01', 'gpu-02']) == [
        {'stage': 'node', 'node': 'gpu-01', 'check': 'reachable', 'status': 'fail',
         'reason': 'no node check results from gpu-01: the host was unreachable or its tasks failed'}]
    assert vc.missing_node_records(records, ['gpu-01', 'gpu-02'], stage='slurm') == [
        {'stage': 'slurm', 'node': 'gpu-02', 'check': 'reachable', 'status': 'fail',
         'reason': 'no slurm check results from gpu-02: the host was unreachable or its tasks failed'}]


def test_export_names_the_first_bad_variable_in_order():
    with pytest.raises(ValueError) as err:
        vc._export({'b-x': 1, 'a-x': 2, 'OK': 3})
    assert str(err.value) == "environment variable name 'a-x' is not valid (letters, digits and _)"
    assert vc._export({'B': 1, 'A': 'x'}) == '--export=ALL,A=x,B=1'
    assert vc._export(None) == '--export=ALL'


def test_the_no_pmi_path_runs_a_minute_at_most_by_default():
    assert vc.NO_PMI_TIMEOUT == 60
    jobs = vc.mpi_jobs({'nodes': ['a', 'b'], 'binary': '/opt/mpi_hello', 'no_pmi_path': True})
    assert [(job['name'], job['timeout']) for job in jobs[:3]] == [('srun_pmi', 180), ('srun_plain', 60), ('mpirun', 180)]
    jobs = vc.mpi_jobs({'nodes': ['a', 'b'], 'binary': '/opt/mpi_hello', 'no_pmi_path': True, 'timeout': 30})
    assert jobs[1]['timeout'] == 30


# ---------------------------------------------------------------- input checks

def test_slurm_names_take_a_tuple_and_give_a_list():
    names = ('gpu-01', 'gpu-02')
    got = vc.slurm_names('nodes', names)
    assert got == ['gpu-01', 'gpu-02'] and isinstance(got, list)
    with pytest.raises(InputError) as err:
        vc.slurm_names('nodes', 'gpu-01')
    assert str(err.value) == "nodes is 'gpu-01', expected a list of Slurm names"


@pytest.mark.parametrize('env, message', [
    ({'A': (1,)}, 'env[A] is (1,), expected a string or number'),
    ({'A': [1]}, 'env[A] is [1], expected a string or number'),
    ({'A': {}}, 'env[A] is {}, expected a string or number'),
])
def test_check_env_refuses_collections(env, message):
    with pytest.raises(InputError) as err:
        vc.check_env('env', env)
    assert str(err.value) == message


def test_check_time_limit_reads_a_boolean_as_no_number():
    with pytest.raises(InputError) as err:
        vc.check_time_limit('time_limit', True)
    assert str(err.value) == ('time_limit is True, expected a Slurm time limit: minutes (1 or more), "MM:SS", "HH:MM:SS", '
                              '"D-HH[:MM[:SS]]" or UNLIMITED')
    assert vc.check_time_limit('time_limit', 1) == 1


@pytest.mark.parametrize('key', ['usable', 'busy'])
def test_slurm_plan_node_flags_must_be_booleans_even_when_falsy(key):
    with pytest.raises(ValueError) as err:
        vc.slurm_jobs({'nodes': [{'name': 'gpu-01', 'gpus': 0, key: ''}]})
    assert str(err.value) == "nodes[0].%s is '', expected true or false" % key


def job(**more):
    item = {'name': 'j', 'kind': 'srun', 'argv': ['srun'], 'timeout': 10, 'round': 0}
    item.update(more)
    return item


def test_check_jobs_take_zero_gpus():
    assert vc.check_jobs([job(gpus=0)])[0]['gpus'] == 0
    with pytest.raises(InputError) as err:
        vc.check_jobs([job(gpus=-1)])
    assert str(err.value).startswith('jobs[0] (j).gpus is -1')


@pytest.mark.parametrize('error', [TypeError('bad type'), AttributeError('bad attribute'), ValueError('bad value')])
def test_check_jobs_names_the_job_whatever_the_expectation_raises(error, monkeypatch):
    def threshold_for(expect):
        raise error
    monkeypatch.setattr(vc, 'threshold_for', threshold_for)
    with pytest.raises(InputError) as err:
        vc.check_jobs([job(kind='nccl', expect={'min_busbw_gbps': 1})])
    assert str(err.value) == "jobs[0] (j).expect is {'min_busbw_gbps': 1}: %s" % error


@pytest.mark.parametrize('result, reason', [
    # the first error line, standard error before standard output
    ({'rc': 1, 'stdout': 'error in stdout', 'stderr': 'srun: error: in stderr'}, 'srun -w gpu-01 failed (rc 1): srun: error: in stderr'),
    # no error line: the last line, standard output after standard error
    ({'rc': 1, 'stdout': 'last of stdout', 'stderr': 'first of stderr'}, 'srun -w gpu-01 failed (rc 1): last of stdout'),
])
def test_a_failed_job_names_its_first_error_or_last_line(result, reason):
    assert vc.srun_record('gpu-01', result)['reason'] == reason


def test_parse_mpi_list_of_commas_and_blanks():
    assert vc.parse_mpi_list('srun: MPI plugin types are...\n\tnone ,pmi2,\n  pmix, , pmix_v4\n') == ['none', 'pmi2', 'pmix', 'pmix_v4']
