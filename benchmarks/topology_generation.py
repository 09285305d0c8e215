#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long topology.conf generation takes as the InfiniBand fabric grows, end to end with the REAL tools.

    python3 benchmarks/topology_generation.py [--sizes 16,64,256,1024] [--repeat 5]

For each host count N, ``tests/unit/ibsim_fabric.py``'s ``fat_tree`` builds a rail-optimised fabric in the style
of NVIDIA's DGX SuperPOD: 8 HCAs a host (mlx5_0..mlx5_7), scalable units of 32 hosts on 8 leaves (one per rail,
HCA i of every host of a unit on the unit's leaf i), pods of up to 4 units (32 leaves) with 8 spines each (every
spine linked to every leaf of its pod), and above more than one pod 8 cores, each linked to every spine.  ibsim
serves it (with ``-N``/``-S``/``-P`` raised to the fabric by ``running_ibsim``), and for each N it times

  (a) the real ``ibnetdiscover`` (infiniband-diags, through libumad2sim.so) from gpu-0001's mlx5_0: the whole
      process, its start included; ibsim is started once per N before the repeats, and its start-up (reading
      the net file until "Network simulator ready") is timed apart and not in (a);
  (b) ``parse_ibnetdiscover`` + ``tree_topology`` (plugins/module_utils/slurm/_topology.py) on that dump, in
      this process, for every host as a Slurm node;

the median of ``--repeat`` runs each (wall seconds, and cpu seconds: ibnetdiscover's and ibsim's during the
run for (a), this process's for (b)), and counts (c) the dump's lines and the topology.conf lines, which must
equal ``Fabric.expected_lines()`` (the lines by construction) with no warning, and every repeat's dump must be
the same text but for its date line: otherwise the script stops with exit status 1 and says what differs.  The
ratios are time per host against the smallest N: 1.0 is linear growth, above 1 is worse than linear.  Needs
ibsim-utils and infiniband-diags (the packages of the ibsim unit tests); standard library only otherwise.

The shape's ceiling is 1024 hosts: a core has 64 ports, one per spine (8 pods x 8 spines).  ibsim's default
capacity (MaxNetNodes 2048, MaxNetSwitches 256, MaxNetPorts 13312) is too small from 256 hosts on (2048 CAs and
88 switches); ``running_ibsim`` passes ``-N``/``-S``/``-P`` sized to the net file (for 1024 hosts:
-N 8521 -S 329 -P 37705), and the table prints what it passed.
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'gpucluster', 'bringup')
if not os.path.islink(LINK):  # what the repository's conftest.py does for the tests
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    try:
        os.symlink(ROOT, LINK)
    except FileExistsError:
        pass
sys.path.insert(0, COLLECTIONS)

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import parse_ibnetdiscover, tree_topology  # noqa: E402
from ansible_collections.gpucluster.bringup.tests.unit import ibsim_fabric  # noqa: E402

HOSTS_PER_UNIT = 32   # a scalable unit: 32 hosts
RAILS = 8             # 8 HCAs a host, one leaf per rail in each unit
UNITS_PER_POD = 4     # 32 leaves: every spine port facing down (ports 1-32) is used
SPINES_PER_POD = 8
CORES = 8             # a core has 64 ports, one per spine: at most 8 pods of 8 spines (1024 hosts)


def superpod(hosts):
    """The rail-optimised fabric for ``hosts`` hosts and its shape (units, pods, leaves, spines, cores)."""
    units = -(-hosts // HOSTS_PER_UNIT)
    pods = -(-units // UNITS_PER_POD)
    if units % pods:
        raise ValueError('%d hosts make %d scalable units, which do not split into %d pods of %d; give a multiple '
                         'of %d' % (hosts, units, pods, UNITS_PER_POD, HOSTS_PER_UNIT * UNITS_PER_POD))
    shape = dict(units=units, pods=pods, leaves=units * RAILS, spines=pods * SPINES_PER_POD,
                 cores=CORES if pods > 1 else 0)
    fabric = ibsim_fabric.fat_tree(hosts=hosts, hcas_per_host=RAILS, rails=True, hosts_per_leaf=HOSTS_PER_UNIT,
                                   leaves=shape['leaves'], spines=shape['spines'], pods=pods, cores=shape['cores'],
                                   name='gpu-%04d')
    return fabric, shape


def children_cpu():
    """User + system seconds of the reaped child processes (the ibnetdiscover runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid):
    """User + system seconds of a running process (ibsim), from /proc (clock ticks: 10 ms steps)."""
    with open('/proc/%d/stat' % pid) as handle:
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf('SC_CLK_TCK'))


def fail(message):
    print('FAILED: ' + message, file=sys.stderr)
    sys.exit(1)


def measure(hosts, repeat, timeout):
    fabric, shape = superpod(hosts)
    net = fabric.net
    expected = fabric.expected_lines()
    row = dict(shape, hosts=hosts, cas=len(fabric.cas), switches=len(fabric.switches),
               limits=' '.join(ibsim_fabric._limits(net)))  # pylint: disable=protected-access
    start = time.perf_counter()
    with ibsim_fabric.running_ibsim(net, timeout=timeout) as env:
        row['ibsim_start'] = time.perf_counter() - start
        env['SIM_HOST'] = fabric.host_cas[fabric.hosts[0]][0].id
        ibsim_pid = int(env['IBSIM_PID'])
        dumps, discover, discover_cpu = [], [], []
        for _ in range(repeat):
            cpu = children_cpu() + process_cpu(ibsim_pid)
            begin = time.perf_counter()
            dumps.append(ibsim_fabric.run_ibnetdiscover(env, timeout=timeout))
            discover.append(time.perf_counter() - begin)
            discover_cpu.append(children_cpu() + process_cpu(ibsim_pid) - cpu)
    undated = set(re.sub(r'(?m)^# Topology file: generated on .*$', '', dump) for dump in dumps)
    if len(undated) > 1:
        fail('N=%d: the %d ibnetdiscover dumps of one fabric differ beyond their date line (line counts %s)'
             % (hosts, repeat, sorted(set(len(d.splitlines()) for d in dumps))))
    dump = dumps[0]
    parse, tree, both, both_cpu = [], [], [], []
    nodes = fabric.hosts
    for _ in range(repeat):
        cpu = time.process_time()
        begin = time.perf_counter()
        parsed = parse_ibnetdiscover(dump)
        middle = time.perf_counter()
        result = tree_topology(parsed, nodes)
        end = time.perf_counter()
        both_cpu.append(time.process_time() - cpu)
        parse.append(middle - begin)
        tree.append(end - middle)
        both.append(end - begin)
    if result['lines'] != expected or result['warnings']:
        missing = [line for line in expected if line not in result['lines']]
        extra = [line for line in result['lines'] if line not in expected]
        fail('N=%d: topology.conf is not the fabric\'s expected_lines(): %d lines against %d expected; missing %s; '
             'unexpected %s; warnings %s' % (hosts, len(result['lines']), len(expected), missing[:5], extra[:5],
                                              result['warnings'][:5]))
    if len(parsed['hosts']) != row['cas'] or len(parsed['switches']) != row['switches']:
        fail('N=%d: the dump shows %d CAs and %d switches, the fabric has %d and %d'
             % (hosts, len(parsed['hosts']), len(parsed['switches']), row['cas'], row['switches']))
    row.update(dump_lines=len(dump.splitlines()), conf_lines=len(result['lines']),
               discover=statistics.median(discover), parse=statistics.median(parse), tree=statistics.median(tree),
               both=statistics.median(both), discover_cpu=statistics.median(discover_cpu),
               both_cpu=statistics.median(both_cpu), discover_range=(min(discover), max(discover)))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--sizes', default='16,64,256,1024', help='host counts, comma-separated (default %(default)s)')
    parser.add_argument('--repeat', type=int, default=5, help='runs of each step per size; the median is printed '
                        '(default %(default)s)')
    parser.add_argument('--timeout', type=int, default=900, help='seconds for ibsim to get ready and for each '
                        'ibnetdiscover run (default %(default)s)')
    args = parser.parse_args()
    sizes = sorted(set(int(size) for size in args.sizes.split(',')))
    if args.repeat < 1 or not sizes or sizes[0] < 1:
        parser.error('--repeat and every size must be at least 1')
    for size in sizes:
        try:
            superpod(size)
        except ValueError as exc:
            parser.error('--sizes %d: %s' % (size, exc))
    try:
        tools = ibsim_fabric.find_tools()
    except ibsim_fabric.IbsimUnavailable as exc:
        fail(str(exc))
    began = time.perf_counter()
    print('topology.conf generation, rail-optimised fabrics (8 HCAs a host, 32 hosts a unit on 8 leaves, %d spines '
          'a pod of up to %d units, %d cores above pods); medians of %d run(s); Python %s; load average %s'
          % (SPINES_PER_POD, UNITS_PER_POD, CORES, args.repeat, sys.version.split()[0],
             ' '.join('%.2f' % x for x in os.getloadavg())))
    print('tools: %s' % ', '.join('%s=%s' % item for item in sorted(tools.items())))
    print()
    print('%6s %6s %4s %6s %6s %5s %5s %10s %5s %11s %9s %9s %9s %9s %10s %9s  %s'
          % ('hosts', 'CAs', 'pods', 'leaves', 'spines', 'cores', 'sw', 'dump lines', 'conf', 'ibsim start',
             'discover', '(cpu)', 'parse', 'tree', 'parse+tree', '(cpu)', 'ibsim limits (-N -S -P)'))
    rows = []
    for size in sizes:
        start = time.perf_counter()
        row = measure(size, args.repeat, args.timeout)
        row['wall'] = time.perf_counter() - start
        rows.append(row)
        print('%6d %6d %4d %6d %6d %5d %5d %10d %5d %10.3fs %8.3fs %8.3fs %7.1fms %7.1fms %8.1fms %7.1fms  %s   '
              '(%.0fs for this size; discover min %.3fs max %.3fs)'
              % (row['hosts'], row['cas'], row['pods'], row['leaves'], row['spines'], row['cores'], row['switches'],
                 row['dump_lines'], row['conf_lines'], row['ibsim_start'], row['discover'], row['discover_cpu'],
                 row['parse'] * 1e3, row['tree'] * 1e3, row['both'] * 1e3, row['both_cpu'] * 1e3, row['limits'],
                 row['wall'], row['discover_range'][0], row['discover_range'][1]))
        sys.stdout.flush()
    base = rows[0]
    print()
    print('time per host against N=%d (1.00 = linear growth; cpu: the same ratio of cpu seconds)' % base['hosts'])
    print('%6s %16s %6s %6s %18s %6s %6s %18s %6s'
          % ('hosts', 'discover ms/host', 'ratio', 'cpu', 'parse+tree ms/host', 'ratio', 'cpu', 'end-to-end ms/host',
             'ratio'))

    def per_host(row, key):
        return row[key] / row['hosts']

    for row in rows:
        total, base_total = [per_host(r, 'discover') + per_host(r, 'both') for r in (row, base)]
        print('%6d %16.3f %6.2f %6.2f %18.3f %6.2f %6.2f %18.3f %6.2f'
              % (row['hosts'], per_host(row, 'discover') * 1e3, per_host(row, 'discover') / per_host(base, 'discover'),
                 per_host(row, 'discover_cpu') / per_host(base, 'discover_cpu'), per_host(row, 'both') * 1e3,
                 per_host(row, 'both') / per_host(base, 'both'), per_host(row, 'both_cpu') / per_host(base, 'both_cpu'),
                 total * 1e3, total / base_total))
    print()
    print('every topology.conf equals Fabric.expected_lines() with no warning; %.0fs in all; load average %s'
          % (time.perf_counter() - began, ' '.join('%.2f' % x for x in os.getloadavg())))


if __name__ == '__main__':
    main()
