#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the slow-node isolation of the validation grows with the node count (issue 22).

    .venv/bin/python benchmarks/isolation_rounds.py [--sizes 2,4,8,...] [--runs 50]

For each cluster size N it plans the follow-up the NCCL stage runs after a failed fabric run
(`_validation_nccl.plan_jobs` with pairs_only: every node with its two ring neighbours, in rounds of
disjoint pairs that run at once) and prints the rounds and jobs; then it makes one node slow, feeds the
pairs' busbw to the judgement (`_validation_isolate.isolate`) and prints its median time and what it
names.  The wall time of the stage is rounds x the time of one pair run (the runs of a round start
together); the baseline is the same pairs run one at a time (jobs x the time of one run), and
serial/rounds is how many times longer that takes.  The measured wall time on clusters of 4 and 8
nodes waits for the scale work's emulated nodes (issue 23): the simulated cluster has two GPU nodes.
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_isolate import isolate  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import plan_jobs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default='2,4,8,16,64,256,1024')
    parser.add_argument('--runs', type=int, default=50)
    args = parser.parse_args()
    print('%6s %7s %6s %14s %10s  %s' % ('nodes', 'rounds', 'jobs', 'serial/rounds', 'judge ms', 'named (slow: the middle node, 50 %)'))
    for count in [int(x) for x in args.sizes.split(',')]:
        names = ['gpu-%04d' % i for i in range(1, count + 1)]
        plan = {'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': [{'name': n, 'gpus': 8} for n in names],
                'pairs_only': True, 'fabric_min_busbw_gbps': 300.0, 'mpi': 'pmix'}
        jobs = plan_jobs(plan)
        rounds = len(set(job['round'] for job in jobs))
        slow = names[count // 2]
        pairs = dict((tuple(job['hosts']), {'value': 190.0 if slow in job['hosts'] else 380.0, 'threshold': 300.0, 'failed': False})
                     for job in jobs)
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            findings = isolate(pairs)
            times.append((time.perf_counter() - start) * 1000.0)
        named = ', '.join('%s %s' % (f['kind'], f['name']) for f in findings)
        print('%6d %7d %6d %14.1f %10.3f  %s' % (count, rounds, len(jobs), len(jobs) / float(rounds), statistics.median(times), named))


if __name__ == '__main__':
    main()
