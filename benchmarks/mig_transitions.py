#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG layout transitions on simulated 8-GPU nodes: nvidia_mig versus the optimum and "recreate every instance of a changed GPU".

For each transition a fresh simulated node (NVML simulator, ``nvml_sim/``)
is brought to the *from* layout with the module, then the module applies the
*to* layout while every NVML call that destroys or creates a GPU instance is
counted.  The baseline is what mig-parted does: a GPU whose layout differs
loses all its instances and gets the wanted ones created from scratch
(computed from the same node state with ``recreate_all_counts``).  The
optimum is the exhaustive reference of ``tests/unit/plugins/module_utils/
mig_optimum.py``: per GPU, every subset of the existing GPU instances to keep,
checked for a valid completion of the wanted layout; the fewest destroyed
wins.  The run time is the module's whole run for the *to* layout (read the node, plan,
apply, re-read), median of ``--repeat`` runs; on the simulator it is
dominated by the simulator's state-file I/O (about 1 ms per NVML call), so
the planner's own time is printed too.

``--random N`` adds N seeded random transitions per MIG model (planner
only, replayed through the simulated driver) with the same three counts.

    python3 benchmarks/mig_transitions.py [--repeat 5] [--random 300]
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
LINK = os.path.join(COLLECTIONS, 'ansible_collections', 'gpucluster', 'bringup')
if not os.path.islink(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(ROOT, LINK)
sys.path[:0] = [os.path.join(ROOT, 'nvml_sim', 'src'), COLLECTIONS]

from nvmlsim import api as pynvml  # noqa: E402  (the simulator's NVML API in-process: the benchmark counts calls)
from nvmlsim import cli  # noqa: E402

from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import (  # noqa: E402
    expand_instances, plan_node, recreate_all_counts, select_gpus)
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.mig import mig_optimum  # noqa: E402


def one(profile, count=1, **extra):
    spec = {'profile': profile, 'count': count}
    spec.update(extra)
    return spec


H100_1G = [one('1g.10gb', 7)]
H100_BALANCED = [one('3g.40gb'), one('2g.20gb'), one('1g.10gb', 2)]
H100_BALANCED_20 = [one('3g.40gb'), one('2g.20gb'), one('1g.20gb')]
H100_3G_4X1G = [one('3g.40gb'), one('1g.10gb', 4)]
H100_2X3G = [one('3g.40gb', 2)]
H100_4G_3G = [one('4g.40gb'), one('3g.40gb')]
H100_7G = [one('7g.80gb')]
A40_1G = [one('1g.5gb', 7)]
A40_BALANCED = [one('3g.20gb'), one('2g.10gb'), one('1g.5gb', 2)]
A40_3G_4X1G = [one('3g.20gb'), one('1g.5gb', 4)]
H200_1G = [one('1g.18gb', 7)]
H200_BALANCED = [one('3g.71gb'), one('2g.35gb'), one('1g.18gb', 2)]


def every(layout):
    return [{'gpu': 'all', 'instances': layout}]


def except_gpu(base, index, other):
    return [{'gpu': str(i), 'instances': other if i == index else base} for i in range(8)]


# (name, preset, from, to)
TRANSITIONS = [
    ('H100 all-1g.10gb -> all-balanced', 'h100-80gb-x8', every(H100_1G), every(H100_BALANCED)),
    ('H100 all-balanced, GPU 3 2x1g.10gb -> 1g.20gb', 'h100-80gb-x8', every(H100_BALANCED), except_gpu(H100_BALANCED, 3, H100_BALANCED_20)),
    ('H100 7x1g.10gb -> 3g.40gb+4x1g.10gb', 'h100-80gb-x8', every(H100_1G), every(H100_3G_4X1G)),
    ('H100 2x3g.40gb -> 4g.40gb+3g.40gb', 'h100-80gb-x8', every(H100_2X3G), every(H100_4G_3G)),
    ('H100 all-balanced -> all-7g.80gb', 'h100-80gb-x8', every(H100_BALANCED), every(H100_7G)),
    ('H100 all-balanced re-applied (identical)', 'h100-80gb-x8', every(H100_BALANCED), every(H100_BALANCED)),
    ('A100-40GB 7x1g.5gb -> 3g.20gb+4x1g.5gb', 'a100-40gb-x8', every(A40_1G), every(A40_3G_4X1G)),
    ('A100-40GB all-balanced, GPUs 0-1 -> 7x1g.5gb', 'a100-40gb-x8', every(A40_BALANCED),
     [{'gpu': str(i), 'instances': A40_1G if i < 2 else A40_BALANCED} for i in range(8)]),
    ('H200 all-1g.18gb -> all-balanced', 'h200-x8', every(H200_1G), every(H200_BALANCED)),
]


def _normalise(wanted):
    """What AnsibleModule's argument spec fills in."""
    out = []
    for entry in wanted:
        entry = dict({'gpu': 'all', 'model': None, 'mig': True}, **entry)
        entry['instances'] = [dict({'count': 1, 'placement': None, 'compute_instances': None}, **spec) for spec in entry['instances']]
        out.append(entry)
    return out


def _counting():
    counts = {'destroy': 0, 'create': 0}
    originals = {}

    def wrap(name, key):
        original = getattr(pynvml, name)
        originals[name] = original

        def wrapper(*args, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)
        setattr(pynvml, name, wrapper)
    wrap('nvmlGpuInstanceDestroy', 'destroy')
    wrap('nvmlDeviceCreateGpuInstanceWithPlacement', 'create')
    wrap('nvmlDeviceCreateGpuInstance', 'create')

    def restore():
        for name, original in originals.items():
            setattr(pynvml, name, original)
    return counts, restore


def _baseline(wanted):
    """(destroyed, created) GIs of the recreate-every-instance strategy from the node as it is,
    the planner's own time (ms) for the same node and request, and the optimum (fewest GIs destroyed)."""
    pynvml.nvmlInit()
    try:
        gpus = _mig_nvml.Nvml(pynvml).read_node()
    finally:
        pynvml.nvmlShutdown()
    destroyed = created = best = 0
    for gpu, entry, _number in select_gpus(gpus, wanted):
        gone, made = recreate_all_counts(gpu, expand_instances(gpu, entry))
        destroyed += gone
        created += made
        best += mig_optimum.optimum(gpu, entry['instances'])['destroyed']
    started = time.perf_counter()
    plan_node(gpus, wanted)
    return destroyed, created, (time.perf_counter() - started) * 1000.0, best


def run_transition(preset, before, after, repeat):
    times = []
    plan_times = []
    counts = None
    baseline = None
    with tempfile.TemporaryDirectory() as tmp:
        os.environ['NVMLSIM_STATE'] = os.path.join(tmp, 'state.json')
        os.environ['NVMLSIM_ROOT'] = os.path.join(tmp, 'root')
        for _run in range(repeat):
            cli.run(['create', '--preset', preset, '--auto-reset', '--force'])
            _mig_nvml.apply_layout(pynvml, _normalise(before))
            baseline = _baseline(_normalise(after))
            plan_times.append(baseline[2])
            counts, restore = _counting()
            started = time.perf_counter()
            try:
                result = _mig_nvml.apply_layout(pynvml, _normalise(after))
            finally:
                restore()
            times.append((time.perf_counter() - started) * 1000.0)
    return counts, baseline[:2], statistics.median(times), statistics.median(plan_times), result['changed'], baseline[3]


def _ratio(value, best):
    if best == 0:
        return '1.00' if value == 0 else 'inf'
    return '%.2f' % (value / best)


def random_sweep(count):
    """Planner, optimum and recreate counts (GIs destroyed) over ``count`` random transitions per MIG model."""
    rows = []
    for model_key in mig_optimum.MIG_MODELS:
        rng = random.Random('benchmark/%s' % model_key)
        ours = best = recreate = worse = 0
        for _number in range(count):
            before, wanted = mig_optimum.random_transition(model_key, rng)
            state = mig_optimum.planner_state(before)
            plan = plan_node([state], [{'gpu': 0, 'mig': True, 'instances': wanted}])[0]
            if mig_optimum.layout_problems(mig_optimum.apply_in_simulator(before, plan), wanted):
                raise RuntimeError('%s: the plan for %r does not give the wanted layout' % (model_key, wanted))
            optimal = mig_optimum.optimum(state, wanted)['destroyed']
            ours += len(plan['destroy_gis'])
            best += optimal
            worse += len(plan['destroy_gis']) != optimal
            recreate += recreate_all_counts(state, expand_instances(state, {'instances': wanted}))[0]
        rows.append((model_key, count, ours, best, recreate, worse))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=5, help='runs per transition (median time reported)')
    parser.add_argument('--random', type=int, default=0, metavar='N', help='also N random transitions per MIG model (planner only)')
    args = parser.parse_args(argv)
    columns = ('transition (8 GPUs)', 'ours -', 'optimum-', 'recreate-', 'ours/opt', 'rec/opt', 'ours +', 'recreate+', 'changed',
               'module ms', 'plan ms')
    header = '%-48s %7s %8s %9s %8s %7s %7s %9s %8s %10s %8s' % columns
    print(header)
    print('-' * len(header))
    total = [0, 0, 0, 0, 0]
    for name, preset, before, after in TRANSITIONS:
        counts, (base_destroyed, base_created), median_ms, plan_ms, changed, best = run_transition(preset, before, after, args.repeat)
        total = [total[0] + counts['destroy'], total[1] + best, total[2] + base_destroyed, total[3] + counts['create'], total[4] + base_created]
        row = (name, counts['destroy'], best, base_destroyed, _ratio(counts['destroy'], best), _ratio(base_destroyed, best),
               counts['create'], base_created, 'yes' if changed else 'no', median_ms, plan_ms)
        print('%-48s %7d %8d %9d %8s %7s %7d %9d %8s %10.1f %8.1f' % row)
    print('-' * len(header))
    print('%-48s %7d %8d %9d %8s %7s %7d %9d' % ('total', total[0], total[1], total[2], _ratio(total[0], total[1]),
                                                 _ratio(total[2], total[1]), total[3], total[4]))
    print('ours -/+: GPU instances nvidia_mig destroyed/created (counted NVML calls); optimum-: the fewest GPU instances '
          'any plan must destroy (exhaustive, mig_optimum.py); recreate-/+: recreating every instance of a changed GPU.')
    print('module ms: whole module run (read, plan, apply, re-read) on the simulator, median of %d; '
          'plan ms: the planner alone for all 8 GPUs.' % args.repeat)
    if args.random:
        print()
        header = '%-18s %11s %7s %8s %9s %8s %7s %16s' % ('random (1 GPU)', 'transitions', 'ours -', 'optimum-', 'recreate-',
                                                          'ours/opt', 'rec/opt', 'ours > optimum')
        print(header)
        print('-' * len(header))
        for model_key, count, ours, best, recreate, worse in random_sweep(args.random):
            print('%-18s %11d %7d %8d %9d %8s %7s %16d' % (model_key, count, ours, best, recreate, _ratio(ours, best),
                                                          _ratio(recreate, best), worse))
    return 0


if __name__ == '__main__':
    sys.exit(main())
