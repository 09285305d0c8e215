# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""A real all_reduce_perf on a node without a driver (recorded by the nccl-build stage): one clear failure, never a bandwidth.

The fixture is the whole output of nccl-tests 2.19.6 (built by the validate role with CUDA 13.0 and NCCL 2.27.7, MPI build)
run on a node container with no GPU and no libcuda.so.1 through the validation's own ``sh -c`` wrapper (``JSON_SCRIPT``:
the text, then the -J report between the marker lines), as validation_jobs receives it from a job
(tests/unit/fixtures/nccl/README.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'fixtures', 'nccl')
NO_DRIVER = 'v2.19.6_cuda13.0_no_driver_sh_c.txt'
NODE = 'gcnccl-h100-2'
CUDA_LINE = "gcnccl-h100-2: Test CUDA failure util.cu:674 'CUDA driver version is insufficient for CUDA runtime version'"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def judged(stdout, rc=2):
    """validation_jobs' reading of one per-node run: the -J report taken out of the output, then judge()."""
    result = {'rc': rc, 'stdout': stdout, 'stderr': ''}
    result.update(vn.split_json_report(stdout))
    argv = vn.srun_argv('/opt/nccl-tests-src/nccl-tests-2.19.6/build/all_reduce_perf', [NODE], 8, False, None, {'NCCL_DEBUG': 'INFO'},
                        json=True)
    job = {'kind': 'nccl', 'name': NODE, 'hosts': [NODE], 'argv': argv, 'expect': vn.expect_for(topology='h100-nvlink-8')}
    records, series, notes = vj.judge(job, result, {'stage': 'nccl'})
    return records, series, result


def test_the_recorded_run_holds_the_text_and_a_closed_json_report():
    records, series, result = judged(fixture(NO_DRIVER))
    assert result['json_reports'] == 1
    assert result['json'].startswith('{"version":3,') and '"results"' not in result['json']
    assert CUDA_LINE in result['stdout']


def test_a_node_without_a_driver_is_one_failed_record_naming_node_command_and_cuda_message():
    records, series, dummy = judged(fixture(NO_DRIVER))
    assert series == []
    assert len(records) == 1
    command = records[0].pop('command')
    assert records == [{
        'stage': 'nccl', 'node': NODE, 'check': 'all_reduce', 'status': 'fail', 'hosts': [NODE], 'versions': {'nccl_tests': '2.19.6'},
        'reason': "all_reduce_perf stopped before its first result (rc 2): %s (and 1 more): no usable NVIDIA driver on the node: "
                  "libcuda.so.1 is missing, or older than the CUDA runtime nccl-tests was built with; no bandwidth was measured" % CUDA_LINE}]
    assert command.startswith('srun --nodes=1 --nodelist=gcnccl-h100-2 ') and ' /opt/nccl-tests-src/nccl-tests-2.19.6/build/all_reduce_perf ' in command


def test_the_text_alone_reads_the_same():
    text = vn.split_json_report(fixture(NO_DRIVER))['stdout']
    records, series, dummy = judged(text)
    assert [(r['check'], r['status']) for r in records] == [('all_reduce', 'fail')] and CUDA_LINE in records[0]['reason']


@pytest.mark.parametrize('message, hint', [
    ('system has unsupported display driver / cuda driver combination',
     "the NVIDIA kernel module and the driver's libcuda.so.1 are of different versions (a driver upgrade without a reboot?)"),
    ('no CUDA-capable device is detected', 'the driver sees no GPU in the job (none given to it, or the GPUs are gone)'),
    ('CUDA-capable device(s) is/are busy or unavailable', 'the GPUs are held by another process or set to an exclusive compute mode'),
    ('initialization error', None),
])
def test_cuda_messages_say_what_they_mean_for_the_node(message, hint):
    stdout = fixture(NO_DRIVER).replace('CUDA driver version is insufficient for CUDA runtime version', message)
    records, dummy, dummy = judged(stdout)
    assert len(records) == 1 and "'%s' (and 1 more)" % message in records[0]['reason']
    if hint:
        assert records[0]['reason'].endswith(': %s; no bandwidth was measured' % hint)
    else:
        assert records[0]['reason'].endswith("(and 1 more); no bandwidth was measured")


def test_an_nccl_failure_before_the_first_result_is_one_record_too():
    stdout = fixture(NO_DRIVER).replace("Test CUDA failure util.cu:674 'CUDA driver version is insufficient for CUDA runtime version'",
                                        "Test NCCL failure common.cu:1285 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '")
    records, dummy, dummy = judged(stdout)
    assert len(records) == 1 and "Test NCCL failure common.cu:1285 'unhandled system error" in records[0]['reason']


@pytest.mark.parametrize('name, rc', [
    # a failure after results (the 2.17.8 #wrong paste) is gated check by check, as before
    ('v2.17.8_gh200_two_nodes_wrong.txt', 1),
])
def test_runs_with_results_are_gated_check_by_check(name, rc):
    records, dummy, dummy = judged(fixture(name), rc)
    assert {r['check'] for r in records} >= {'complete', 'test_errors', 'wrong', 'busbw'}


def test_a_secondary_failure_line_alone_is_not_read_as_a_cuda_error():
    stdout = fixture(NO_DRIVER).replace(CUDA_LINE + '\n', '')
    assert vn.stopped_reason(vn.parse_run(vn.split_json_report(stdout)['stdout']), 2) is None
