# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate_require (_validation_require): a required stage that could not run fails, naming the stage, why and the variable."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import build_report
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_require import (
    REQUIREMENTS, require_records, required_message)


def rec(stage, node, check, status, reason='', hosts=None):
    item = {'stage': stage, 'node': node, 'check': check, 'status': status, 'reason': reason}
    if hosts:
        item['hosts'] = hosts
    return item


NODE_OK = [rec('node', 'gpu-01', 'nvml', 'pass'), rec('node', 'gpu-02', 'nvml', 'pass')]
SLURM_OK = [rec('slurm', 'gpu-01', 'srun', 'pass'), rec('slurm', 'gpu-01', 'gres_job', 'pass')]
NO_TESTS = [rec('nccl', 'cluster', 'all_reduce', 'skip', 'no CUDA/nccl-tests on this cluster: /opt/nccl-tests/build/all_reduce_perf not found '
                'on gpu-01, gpu-02', ['gpu-01', 'gpu-02'])]
NCCL_OK = [rec('nccl', 'gpu-01', 'busbw', 'pass'), rec('nccl', 'fabric', 'all_reduce', 'skip', 'a fabric run needs at least 2 GPU nodes')]
NO_IMAGE = [rec('slurm', n, 'container_job', 'skip', 'not checked: no container image given (validate_jobs.container_image)') for n in ('gpu-01', 'gpu-02')]
IMAGE_OK = [rec('slurm', 'gpu-01', 'container_job', 'pass'), rec('slurm', 'gpu-02', 'container_job', 'fail', 'enroot import failed')]
# slurmctld's running_config always runs: it is not one of the slurm requirement's checks
RUNNING_CONFIG = [rec('slurm', 'slurmctld@ctl', 'running_config', 'pass')]


@pytest.mark.parametrize('records, require, want', [
    # everything ran: nothing added
    (NODE_OK + SLURM_OK + NCCL_OK + IMAGE_OK, ['node', 'slurm', 'nccl', 'container'], []),
    # the issue: no nccl-tests on the nodes; the stage is all skip -> fail naming the stage, the nodes and the variable
    (NODE_OK + SLURM_OK + NO_TESTS, ['node', 'slurm', 'nccl'],
     [('nccl', 'required', ['stage nccl is required (validate_require) but could not run: no CUDA/nccl-tests on this cluster: '
                            '/opt/nccl-tests/build/all_reduce_perf not found on gpu-01, gpu-02 (set validate_nccl_settings.tests_path',
                            'or remove nccl from validate_require)'])]),
    # not required: the skip stays a skip
    (NODE_OK + SLURM_OK + NO_TESTS, ['node', 'slurm'], []),
    # an empty container image: the container job was skipped on every node
    (NODE_OK + SLURM_OK + NCCL_OK + NO_IMAGE, ['container'],
     [('slurm', 'container_required', ['the container job is required (validate_require) but could not run: not checked: no container image '
                                       'given (validate_jobs.container_image) (gpu-[01-02])', 'set validate_jobs.container_image',
                                       'or remove container from validate_require'])]),
    # a failed container job ran: the failure is its own, not a requirement's
    (IMAGE_OK, ['container'], []),
    # the stage left no record at all (switched off)
    (NODE_OK + SLURM_OK, ['nccl'], [('nccl', 'required', ['stage nccl is required (validate_require) but could not run: no nccl check was run',
                                                          'validate_nccl: true'])]),
    (NODE_OK, ['mpi', 'deep'], [('mpi', 'required', ['stage mpi is required', 'set validate_mpi: true']),
                                ('deep', 'required', ['stage deep is required', 'set validate_deep: true'])]),
    # slurm: running_config alone is not the Slurm jobs
    (NODE_OK + RUNNING_CONFIG, ['slurm'], [('slurm', 'required', ['stage slurm is required', 'no slurm check was run'])]),
    ([rec('slurm', 'gpu-01', 'srun', 'skip', 'not run: gpu-01 cannot take jobs (see its node_state check)')] + RUNNING_CONFIG, ['slurm'],
     [('slurm', 'required', ['could not run: not run: gpu-01 cannot take jobs (see its node_state check)'])]),
    # only fails count as run too: a stage that ran and failed is not a requirement's failure
    ([rec('nccl', 'gpu-01', 'busbw', 'fail', 'slow')], ['nccl'], []),
    # many reasons: three named, the others counted
    ([rec('nccl', 'n%d' % i, 'all_reduce', 'skip', 'reason %d' % i) for i in range(5)], ['nccl'],
     [('nccl', 'required', ['reason 0 (n0); reason 1 (n1); reason 2 (n2); and 2 other reason(s)'])]),
    # repeated names are one requirement
    (NODE_OK, ['nccl', 'nccl'], [('nccl', 'required', ['stage nccl is required'])]),
])
def test_require_records(records, require, want):
    got = require_records(records, require)
    assert [(r['stage'], r['check']) for r in got] == [(stage, check) for stage, check, dummy in want]
    for record, (dummy, dummy2, fragments) in zip(got, want):
        assert record['status'] == 'fail' and record['node'] == 'cluster' and 'hosts' not in record
        for fragment in fragments:
            assert fragment in record['reason'], (fragment, record['reason'])


def test_a_required_stage_that_could_not_run_fails_the_report_and_drains_nobody():
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import drain_reasons
    records = NODE_OK + SLURM_OK + NO_TESTS
    assert build_report(records)['status'] == 'pass'  # before: a green run that tested no NCCL
    records = records + require_records(records, ['node', 'slurm', 'nccl'])
    report = build_report(records)
    assert report['status'] == 'fail' and report['failed_nodes'] == ['cluster']
    assert drain_reasons(records, ['gpu-01', 'gpu-02']) == {}
    assert required_message(records) == [records[-1]['reason']]


def test_the_module_offers_every_requirement_and_no_other():
    """validation_report's argument spec refuses an unknown name (its choices); each choice has its requirement."""
    from ansible_collections.gpucluster.bringup.plugins.modules import validation_report
    choices = yaml.safe_load(validation_report.DOCUMENTATION)['options']['require']['choices']
    assert sorted(choices) == sorted(REQUIREMENTS)
