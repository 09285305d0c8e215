# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate_require (_validation_require), compared whole: the requirement records and the skip reasons they name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_require import (
    REASONS_MAX, REQUIREMENTS, require_records, required_message, why_not_run)


def rec(stage, node, check, status, reason=None, hosts=None):
    item = {'stage': stage, 'node': node, 'check': check, 'status': status}
    if reason is not None:
        item['reason'] = reason
    if hosts is not None:
        item['hosts'] = hosts
    return item


def failure(name, why):
    stage, dummy, check, provides = REQUIREMENTS[name]
    what = 'the container job' if name == 'container' else 'stage %s' % name
    return {'stage': stage, 'node': 'cluster', 'check': check, 'status': 'fail',
            'reason': '%s is required (validate_require) but could not run: %s (%s, or remove %s from validate_require)' % (what, why, provides, name)}


def test_reasons_max_is_three():
    assert REASONS_MAX == 3


@pytest.mark.parametrize('records, expected', [
    ([], ''),
    # no reason: "skipped"; whitespace collapsed; the node named
    ([rec('nccl', 'gpu-01', 'busbw', 'skip')], 'skipped (gpu-01)'),
    ([rec('nccl', 'gpu-01', 'busbw', 'skip', '')], 'skipped (gpu-01)'),
    ([rec('nccl', 'gpu-01', 'busbw', 'skip', '  no\n  tests  here ')], 'no tests here (gpu-01)'),
    # one reason from several nodes: named once, nodes compressed in the order met, a repeated node once
    ([rec('nccl', n, 'busbw', 'skip', 'no tests') for n in ('gpu-01', 'gpu-02', 'gpu-01')], 'no tests (gpu-[01-02])'),
    ([rec('nccl', n, 'busbw', 'skip', 'no tests') for n in ('gpu-02', 'gpu-01')], 'no tests (gpu-[02,01])'),
    # hosts (a list) name the nodes instead of the node
    ([rec('nccl', 'fabric', 'all_reduce', 'skip', 'no tests', ['gpu-01', 'gpu-03'])], 'no tests (gpu-[01,03])'),
    # hosts that are not a list: the node
    ([rec('nccl', 'fabric', 'all_reduce', 'skip', 'no tests', 'gpu-01')], 'no tests (fabric)'),
    # an empty hosts list: the node
    ([rec('nccl', 'fabric', 'all_reduce', 'skip', 'no tests', [])], 'no tests (fabric)'),
    # a host that is not a string, or empty, or that the reason names already: left out
    ([rec('nccl', 'fabric', 'all_reduce', 'skip', 'no tests', [3, '', None, 'gpu-02'])], 'no tests (gpu-02)'),
    ([rec('nccl', None, 'all_reduce', 'skip', 'no tests')], 'no tests'),
    ([rec('nccl', 'gpu-01', 'all_reduce', 'skip', 'not found on gpu-01')], 'not found on gpu-01'),
    ([rec('nccl', 'gpu-01', 'all_reduce', 'skip', 'not found on gpu-01', ['gpu-01', 'gpu-02'])], 'not found on gpu-01 (gpu-02)'),
    # three reasons: all named, none counted
    ([rec('nccl', 'n%d' % i, 'x', 'skip', 'reason %d' % i) for i in range(3)], 'reason 0 (n0); reason 1 (n1); reason 2 (n2)'),
    # four: three named in order of first appearance, one counted
    ([rec('nccl', 'n%d' % i, 'x', 'skip', 'reason %d' % (3 - i)) for i in range(4)],
     'reason 3 (n0); reason 2 (n1); reason 1 (n2); and 1 other reason(s)'),
])
def test_why_not_run(records, expected):
    assert why_not_run(records) == expected


@pytest.mark.parametrize('records, require, expected', [
    # nothing at all: each stage names that no check was run, in the order required
    ([], ['nccl', 'mpi'], [failure('nccl', 'no nccl check was run'), failure('mpi', 'no mpi check was run')]),
    ([], ['deep', 'node', 'deep'], [failure('deep', 'no deep check was run'), failure('node', 'no node check was run')]),
    ([], ['container'], [failure('container', 'no container job was run')]),
    ([], ['slurm'], [failure('slurm', 'no slurm check was run')]),
    # every record skipped: the skip reasons
    ([rec('mpi', 'srun_pmi', 'launch', 'skip', 'no binary', ['gpu-01', 'gpu-02'])], ['mpi'],
     [failure('mpi', 'no binary (gpu-[01-02])')]),
    ([rec('slurm', 'gpu-01', 'container_job', 'skip', 'no image')], ['container'], [failure('container', 'no image (gpu-01)')]),
    # a pass or a fail of the stage: it ran
    ([rec('mpi', 'srun_pmi', 'launch', 'fail', 'broken')], ['mpi'], []),
    ([rec('mpi', 'srun_pmi', 'launch', 'pass', 'ok')], ['mpi'], []),
    # a status other than pass/fail does not count as run
    ([rec('mpi', 'srun_pmi', 'launch', 'warn', 'odd')], ['mpi'], [failure('mpi', 'odd (srun_pmi)')]),
    # records of another stage do not count
    ([rec('node', 'gpu-01', 'nvml', 'pass')], ['mpi'], [failure('mpi', 'no mpi check was run')]),
    # the slurm requirement counts only srun and gres_job; the container one only container_job
    ([rec('slurm', 'gpu-01', 'gres_job', 'pass')], ['slurm'], []),
    ([rec('slurm', 'gpu-01', 'srun', 'fail', 'x')], ['slurm', 'container'], [failure('container', 'no container job was run')]),
    ([rec('slurm', 'gpu-01', 'container_job', 'pass')], ['slurm', 'container'], [failure('slurm', 'no slurm check was run')]),
    # a requirement's own record (node cluster) is not the stage having run; any other record of node cluster is
    ([rec('nccl', 'cluster', 'required', 'fail', 'earlier')], ['nccl'], [failure('nccl', 'no nccl check was run')]),
    ([rec('slurm', 'cluster', 'container_required', 'fail', 'earlier')], ['container'], [failure('container', 'no container job was run')]),
    ([rec('nccl', 'cluster', 'all_reduce', 'pass')], ['nccl'], []),
    # (whatever stage a requirement's record names)
    ([rec('nccl', 'cluster', 'container_required', 'pass')], ['nccl'], [failure('nccl', 'no nccl check was run')]),
    ([rec('nccl', 'cluster', 'required', 'pass')], ['nccl'], [failure('nccl', 'no nccl check was run')]),
    ([rec('nccl', 'gpu-01', 'required', 'pass')], ['nccl'], []),
    # what is not a record is left out
    (['nccl', None, ['nccl']], ['nccl'], [failure('nccl', 'no nccl check was run')]),
])
def test_require_records_whole(records, require, expected):
    assert require_records(records, require) == expected


def test_required_message_takes_only_failed_requirements():
    records = [
        rec('nccl', 'cluster', 'required', 'fail', 'A'),
        rec('slurm', 'cluster', 'container_required', 'fail', 'B'),
        rec('nccl', 'cluster', 'required', 'pass', 'C'),
        rec('nccl', 'cluster', 'all_reduce', 'fail', 'D'),
        rec('nccl', 'gpu-01', 'required', 'fail', 'E'),
        rec('deep', 'cluster', 'required', 'skip', 'F'),
    ]
    assert required_message(records) == ['A', 'B']
    assert required_message([]) == []
