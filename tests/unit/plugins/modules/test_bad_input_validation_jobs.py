# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_jobs: every bad input fails before any job (or ``srun --mpi=list``) runs, naming the option, the value and what is valid.

``run_command`` fails the test when called, and each table's valid job would ``touch`` a marker file: it must not exist afterwards.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import validation_jobs
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input


def job(**extra):
    base = {'name': 'gpu-01', 'kind': 'srun', 'argv': ['touch', 'MARKER']}
    base.update(extra)
    return base


NCCL = dict(kind='nccl', hosts=['gpu-01'])
SLURM = {'nodes': [{'name': 'gpu-01', 'gpus': 1}]}
MPI = {'nodes': ['gpu-01', 'gpu-02'], 'binary': '/opt/mpi_hello'}
NCCL_PLAN = {'nodes': [{'name': 'gpu-01', 'gpus': 8}], 'binary': '/opt/nccl-tests/build/all_reduce_perf'}

CASES = [
    ({'jobs': [job(timeout=-1)]}, ['jobs[0] (gpu-01).timeout is -1', 'a whole number of seconds of at least 1']),
    ({'jobs': [job(timeout=0)]}, ['jobs[0] (gpu-01).timeout is 0', 'of at least 1']),
    ({'jobs': [job(), job(name='b', round=-1)]}, ['jobs[1] (b).round is -1', 'a whole number of at least 0']),
    ({'jobs': [job(kind='gres', gpus=-2)]}, ['jobs[0] (gpu-01).gpus is -2', 'of at least 0']),
    ({'jobs': [job(kind='mpi', path='srun_pmi', ranks=0)]}, ['jobs[0] (gpu-01).ranks is 0', 'of at least 1']),
    ({'jobs': [job(expect={'bogus': 1}, **NCCL)]}, ['jobs[0] (gpu-01).expect is', 'unknown expect key(s) bogus', 'valid keys: topology']),
    ({'jobs': [job(expect={'topology': 'h100-nvlink-9'}, **NCCL)]}, ["unknown topology 'h100-nvlink-9'", 'valid topologies:']),
    ({'jobs': [job(expect={'min_busbw_gbps': -5}, **NCCL)]}, ['min_busbw_gbps is -5', 'above 0']),
    ({'jobs': [job(expect={'nics': 0}, **NCCL)]}, ['nics is 0', 'at least 1']),
    ({'jobs': [job(expect={'thresholds': {'x': 0}}, **NCCL)]}, ["thresholds['x'] is 0", 'above 0']),
    ({'jobs': [job(expect={'expect_transport': 'tcp'}, **NCCL)]}, ["expect_transport is 'tcp'", 'valid values: ib']),
    ({'jobs': [job(expect={'topology': 'h100-nvlink-8'})]},
     ['jobs[0] (gpu-01).expect is', 'only kind nccl jobs take an expectation', 'this job is kind srun']),
    ({'jobs': [job(expect='fast', **NCCL)]}, ["argument 'expect' is of type str", 'unable to convert to dict']),
    ({'jobs': [job(env={'A-B': '1'})]}, ["jobs[0] (gpu-01).env key is 'A-B'", 'an environment variable name']),
    ({'jobs': [job(env={'A': {'nested': 1}})]}, ['jobs[0] (gpu-01).env[A] is', 'a string or number']),
    ({'jobs': [job(argv=[])]}, ['jobs[0] (gpu-01).argv is []', 'the command as a non-empty list']),
    ({'jobs': [job(argv=['', 'x'])]}, ["jobs[0] (gpu-01).argv[0] is ''", 'a non-empty string']),
    ({'jobs': [job(kind='mpi')]}, ['jobs[0] (gpu-01) (kind mpi) needs a path: srun_pmi, srun_plain, mpirun, pyxis']),
    ({'jobs': [job(hosts=['gpu-01', ''])]}, ["jobs[0] (gpu-01).hosts[1] is ''", 'a non-empty string']),
    ({'jobs': [job(), job()]}, ['job names must be unique, these repeat: gpu-01']),
    ({'jobs': [job(name='')]}, ["jobs[0].name is ''", 'a non-empty string']),
    ({'jobs': [job(kind='bogus')]}, ['kind', 'bogus']),
    ({'jobs': [job()], 'mpi_required_paths': ['srun-pmi']},
     ['value of mpi_required_paths must be one or more of: srun_pmi, srun_plain, mpirun, pyxis', 'no match for: srun-pmi']),
    ({'jobs': [job()], 'mpi_plugin': 'pmix; reboot'}, ["mpi_plugin is 'pmix; reboot'", 'auto or a Slurm MPI plugin type']),
    ({'jobs': [job()], 'stage': 'two words'}, ["stage is 'two words'", 'a stage name']),
    ({'jobs': [job()], 'srun': ''}, ["srun is ''", 'the srun command']),
    ({'jobs': [job()], 'slurm': dict(SLURM, timeout=-5)}, ['slurm plan: timeout is -5', 'a whole number of seconds of at least 1']),
    ({'jobs': [job()], 'slurm': dict(SLURM, time_limit='soon')}, ["slurm plan: time_limit is 'soon'", 'a Slurm time limit']),
    ({'jobs': [job()], 'slurm': dict(SLURM, time_limit=0)}, ['slurm plan: time_limit is 0', 'of minutes of at least 1']),
    ({'jobs': [job()], 'slurm': dict(SLURM, partition='gpu batch')}, ["slurm plan: partition is 'gpu batch'", 'a Slurm partition name']),
    ({'jobs': [job()], 'slurm': {'nodes': [{'name': 'gpu 01'}]}}, ["slurm plan: nodes[0].name is 'gpu 01'", 'a Slurm node name']),
    ({'jobs': [job()], 'slurm': {'nodes': [{'name': 'n', 'gpus': -1}]}}, ['slurm plan: nodes[0].gpus is -1', 'of at least 0']),
    ({'jobs': [job()], 'slurm': dict(SLURM, env={'X': [1]})}, ['slurm plan: env[X] is [1]', 'a string or number']),
    ({'jobs': [job()], 'slurm': dict(SLURM, pyxis='maybe')}, ["slurm plan: pyxis is 'maybe'", 'true or false']),
    ({'jobs': [job()], 'slurm': dict(SLURM, image='x')}, ['slurm plan: unknown Slurm plan key(s) image']),
    ({'jobs': [job()], 'mpi': {'nodes': ['a b'], 'binary': '/x'}}, ["mpi plan: nodes[0] is 'a b'", 'a Slurm node name']),
    ({'jobs': [job()], 'mpi': dict(MPI, no_pmi_timeout=0)}, ['mpi plan: no_pmi_timeout is 0', 'of at least 1']),
    ({'jobs': [job()], 'mpi': dict(MPI, mpirun_args='--bind-to none')}, ["mpi plan: mpirun_args is '--bind-to none'", 'expected a list']),
    ({'jobs': [job()], 'mpi': dict(MPI, timeout='soon')}, ["mpi plan: timeout is 'soon'", 'a whole number of seconds']),
    ({'jobs': [job()], 'nccl': dict(NCCL_PLAN, env={'X': None})}, ['nccl plan: env[X] is None', 'a string or number']),
    ({'jobs': [job()], 'nccl': dict(NCCL_PLAN, env={'1X': 'a'})}, ["nccl plan: env key is '1X'", 'an environment variable name']),
    ({'jobs': [job()], 'nccl': dict(NCCL_PLAN, timeout=0)}, ['nccl plan: timeout is 0', 'of at least 1']),
    ({'jobs': [job()], 'nccl': dict(NCCL_PLAN, time_limit='soon')}, ["nccl plan: time_limit is 'soon'", 'a Slurm time limit']),
]


@pytest.fixture
def no_commands(monkeypatch, tmp_path):
    def run_command(self, args, **kwargs):
        raise AssertionError('validation_jobs ran %r on bad input' % (args,))
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    monkeypatch.chdir(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize('args, fragments', CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_input(no_commands, args, fragments):
    outcome = bad_input(validation_jobs.main, args, *fragments)
    assert 'records' not in outcome.result
    assert os.listdir(str(no_commands)) == []
