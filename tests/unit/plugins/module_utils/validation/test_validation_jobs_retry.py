# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which failed job starts are tried again (validation_jobs): srun's allocation errors and silent exits only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_jobs import ATTEMPTS, request_allocation, retry_allocation


def result(rc=1, stdout='', stderr='', timed_out=False):
    return {'rc': rc, 'stdout': stdout, 'stderr': stderr, 'timed_out': timed_out}


@pytest.mark.parametrize('res, attempt, expected', [
    (result(), 1, True),                                                                   # exit 1, nothing printed
    (result(stderr='srun: error: Unable to allocate resources: Socket timed out on send/recv operation'), 1, True),
    (result(stderr='srun: error: Slurm temporarily unable to accept job, sleeping and retrying'), 2, True),
    (result(stderr='srun: error: Unable to allocate resources: Requested node configuration is not available'), 1, False),
    (result(), ATTEMPTS, False),                                                           # the last attempt is kept
    (result(rc=0), 1, True),                                                               # exit 0, nothing printed
    (result(rc=0, stdout='gpu-01'), 1, False),                                             # it ran
    (result(rc=0, stderr='srun: error: Socket timed out on send/recv operation'), 1, False),
    (result(rc=None, timed_out=True), 1, False),                                           # it ran out of time
    (result(rc=None), 1, True),
    (result(stdout='# nThread 1 nGpus 8'), 1, False),                                      # it started
    (result(stderr='srun: error: gpu-01: task 0: Exited with exit code 1'), 1, False),     # the program failed
    (result(stderr='Test NCCL failure common.cu:1050'), 1, False),
])
def test_retry_allocation(res, attempt, expected):
    assert retry_allocation(res, attempt) is expected


class Answers(object):
    """A client whose salloc answers come from a list, one per call."""

    def __init__(self, *stderrs):
        self.stderrs = list(stderrs)
        self.calls = 0

    def job(self, argv, timeout):
        self.calls += 1
        return {'rc': 1, 'stdout': '', 'stderr': self.stderrs.pop(0), 'seconds': 0.1, 'timed_out': False}


GRANTED = 'salloc: Granted job allocation 42\nsalloc: Nodes are ready for job'
BUSY = 'salloc: error: Unable to allocate resources: Connection timed out'
REFUSED = 'salloc: error: Unable to allocate resources: Requested nodes are busy'


@pytest.mark.parametrize('answers, calls, job_id, refused', [
    ([GRANTED], 1, '42', None),
    ([BUSY, GRANTED], 2, '42', None),                     # a controller too busy to answer: asked again
    ([BUSY, BUSY, BUSY], ATTEMPTS, None, BUSY),
    ([REFUSED], 1, None, REFUSED),                        # busy nodes: not asked again (the idle nodes are, by the caller)
])
def test_an_allocation_the_controller_could_not_answer_is_asked_again(answers, calls, job_id, refused):
    client, granted, records, slept = Answers(*answers), [], [], []
    allocation = {'name': 'srun gpu:8 on 2 nodes', 'argv': ['salloc'], 'release': ['scancel']}
    members = [{'name': 'g1', 'argv': ['srun', '--jobid={jobid}', 'hostname']}, {'name': 'g2', 'argv': ['srun', '--jobid={jobid}', 'hostname']}]
    why = request_allocation(client, allocation, members, granted, records, sleep=slept.append)
    assert client.calls == calls and why == refused and records[0]['job_id'] == job_id
    assert records[0].get('attempts', 1) == calls and slept == [5 * n for n in range(1, calls)]
