# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NCCL plan asks for the -J JSON report where the version has it (issue 47): the argv, the split of the run's stdout."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import (
    JSON_BEGIN, JSON_END, JSON_SCRIPT, plan_jobs, split_json_report, wants_json)

NODES = [{'name': 'gpu-01', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}, {'name': 'gpu-02', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}]


@pytest.mark.parametrize('plan,expected', [
    ({}, False),
    ({'tests_version': '2.19.6'}, True),
    ({'tests_version': '2.18.3'}, True),
    ({'tests_version': '2.17.8'}, False),
    ({'tests_version': ''}, False),
    ({'tests_version': '2.13.9', 'json': True}, True),
    ({'tests_version': '2.19.6', 'json': False}, False),
    ({'json': 'yes'}, True),
])
def test_wants_json(plan, expected):
    assert wants_json(plan) is expected


def test_plan_json_must_be_a_boolean():
    with pytest.raises(ValueError) as err:
        plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': NODES, 'json': 'sometimes'})
    assert str(err.value) == "json is 'sometimes', expected true or false"


def test_every_run_of_a_2_19_plan_asks_for_json():
    jobs = plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': NODES, 'fabric': True, 'pairwise': True, 'mpi': 'pmix',
                      'tests_version': '2.19.6'})
    runs = [job for job in jobs if job['kind'] == 'nccl']
    assert [job['name'] for job in runs] == ['gpu-01', 'gpu-02', 'fabric']
    for job in runs:
        assert job['json'] is True
        at = job['argv'].index('sh')
        assert job['argv'][at:at + 4] == ['sh', '-c', JSON_SCRIPT, '/opt/nccl-tests/build/all_reduce_perf']
        assert job['argv'][at + 4:] == ['-b', '8', '-e', '8G', '-f', '2', '-g', '1' if job['name'] == 'fabric' else '8']
    text = plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': NODES, 'fabric': True, 'tests_version': '2.17.8'})
    assert [job for job in text if job.get('json') or 'sh' in (job.get('argv') or [])] == []


def test_the_script_prints_the_report_between_markers_and_keeps_the_exit_status(tmp_path):
    import subprocess
    fake = tmp_path / 'fake_perf'
    # writes its -J file as nccl-tests does (the path after -J) and fails as a run with #wrong does
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "-J" ]; do shift; done\nprintf \'{"version":3}\' > "$2"\necho "# text"\nexit 1\n')
    fake.chmod(0o755)
    proc = subprocess.run(['sh', '-c', JSON_SCRIPT, str(fake), '-b', '8'], capture_output=True, text=True, check=False,
                          env={'TMPDIR': str(tmp_path), 'PATH': '/usr/bin:/bin'})
    assert proc.returncode == 1
    assert proc.stdout == '# text\n%s\n{"version":3}\n%s\n' % (JSON_BEGIN, JSON_END)
    assert split_json_report(proc.stdout) == {'stdout': '# text\n', 'json': '{"version":3}', 'json_reports': 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ['fake_perf']


@pytest.mark.parametrize('stdout,expected', [
    ('# a\n', {'stdout': '# a\n', 'json': None, 'json_reports': 0}),
    ('', {'stdout': '', 'json': None, 'json_reports': 0}),
    (None, {'stdout': '', 'json': None, 'json_reports': 0}),
    # srun --label: the prefix goes; a long line cut by the launcher is joined again
    ('0: # a\n0: %s\n0: {"x":\n0: 1}\n0: %s\n0: # b\n' % (JSON_BEGIN, JSON_END), {'stdout': '0: # a\n0: # b\n', 'json': '{"x":1}', 'json_reports': 1}),
    # the end marker missing: the run was killed while printing the report
    ('# a\n%s\n{"x":[1,2\n' % JSON_BEGIN, {'stdout': '# a\n', 'json': '{"x":[1,2', 'json_reports': 1}),
    # two reports: tasks that did not form one MPI job (each wrote its own)
    ('%s\n{"a":1}\n%s\n%s\n{"b":2}\n%s\n' % (JSON_BEGIN, JSON_END, JSON_BEGIN, JSON_END), {'stdout': '', 'json': '{"a":1}', 'json_reports': 2}),
    # an end marker with no start is text
    ('%s\n' % JSON_END, {'stdout': '%s\n' % JSON_END, 'json': None, 'json_reports': 0}),
    # a line cut anywhere (here after an X, before CR LF) is joined as it was
    ('%s\r\n{"args": ["/opt/X\r\nX"]}\r\n%s\r\n' % (JSON_BEGIN, JSON_END), {'stdout': '', 'json': '{"args": ["/opt/XX"]}', 'json_reports': 1}),
])
def test_split_json_report(stdout, expected):
    assert split_json_report(stdout) == expected


def test_srun_argv_json_goes_before_the_binary():
    argv = vn.srun_argv('arp', ['a'], 2, False, None, {}, args=['-b', '1G'], exclusive=False, json=True)
    assert argv[-8:] == ['sh', '-c', JSON_SCRIPT, 'arp', '-b', '1G', '-g', '2']
