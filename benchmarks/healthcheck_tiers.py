#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time gpucluster-healthcheck's tiers on a simulated 8 x H100 node.

    python3 benchmarks/healthcheck_tiers.py                  # 30 paired runs, 200 prolog runs for p99
    python3 benchmarks/healthcheck_tiers.py --runs 10 --p99-runs 100
    python3 benchmarks/healthcheck_tiers.py --keep /tmp/hc   # lay the node out in /tmp/hc and keep it

Needs `bash scripts/test.sh deps` first (.venv, .build/nvml-header,
.build/nvml-ref); builds .build/libnvml (the simulated libnvidia-ml.so.1) when
it is missing.  Lays out, in a temporary directory, what the slurm_healthcheck
role installs (the program with a "#!" line, its module_utils library, its
JSON configuration) the way tests/unit/hooks/test_runner_with_real_hooks.py
(install_healthcheck) does, over a node made with
`nvmlsim create --preset h100-80gb-x8`, then times whole processes
(time.monotonic around subprocess.run, start-up included):

  (a) the prolog tier `gpucluster-healthcheck --tier prolog` against the
      collection's previous prolog hook, roles/slurm/files/hooks/10-all-gpu-healthcheck
      taking its nvidia-smi branch (GPUCLUSTER_HEALTHCHECK_PROGRAM names a
      path that does not exist; nvidia-smi is the simulator's STAND-IN
      nvml_sim/bin/nvidia-smi);
  (b) the periodic tier `--dry-run` (no scontrol) against the prolog tier
      and `python3 -c pass` as yardsticks;
  (c) the prolog tier alone, --p99-runs times: median, p99, max against
      its budget (prolog_budget, 3 s).

A and B run in turn (A B A B ...), and the ratio is taken pair by pair.
The simulated NVML answers through a Python server process per NVML client
(nvml_sim/libnvml starts `python3 -m nvmlsim.libserver` at nvmlInit), so every
figure includes starting that server: on a real node the NVML calls are
driver calls and the times are lower.
"""

from __future__ import absolute_import, division, print_function

import argparse
import glob
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, '.build')
SIM_BIN = os.path.join(ROOT, 'nvml_sim', 'bin')
HOOK = os.path.join(ROOT, 'roles', 'slurm', 'files', 'hooks', '10-all-gpu-healthcheck')
PROGRAM = os.path.join(ROOT, 'roles', 'slurm_healthcheck', 'files', 'gpucluster_healthcheck.py')
MODULE_UTILS = os.path.join(ROOT, 'plugins', 'module_utils')
LIBRARY = ['slurm/_healthcheck.py', 'slurm/_healthcheck_fleet.py', 'slurm/_munge_key.py', 'mig/_mig_minors.py', '_nvml.py']
PROLOG_BUDGET = 3.0  # prolog_budget's default (module_utils/slurm/_healthcheck.py)


def fail(message):
    print('healthcheck_tiers: %s' % message, file=sys.stderr)
    sys.exit(2)


def python():
    venv = os.path.join(ROOT, '.venv', 'bin', 'python')
    return venv if os.access(venv, os.X_OK) else sys.executable


def nvml_paths():
    """(directory of the real nvidia-ml-py pynvml.py, directory of the simulated libnvidia-ml.so.1); builds the latter."""
    refs = sorted(glob.glob(os.path.join(BUILD, 'nvml-ref', 'nvidia-ml-py-*', 'pynvml.py')))
    include = os.path.join(BUILD, 'nvml-header', 'include')
    if not refs or not os.path.isfile(os.path.join(include, 'nvml.h')):
        fail("the real nvidia-ml-py (.build/nvml-ref) or NVIDIA's nvml.h (.build/nvml-header) is missing: "
             "run 'bash scripts/test.sh deps'")
    out = os.path.join(BUILD, 'libnvml')
    if not os.path.isfile(os.path.join(out, 'libnvidia-ml.so.1')):
        build = subprocess.run(['make', '-s', '-C', os.path.join(ROOT, 'nvml_sim', 'libnvml'), 'NVML_INCLUDE=' + include,
                                'OUT=' + out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                               check=False)
        if build.returncode != 0:
            fail('building the simulated libnvidia-ml.so.1 failed:\n' + build.stdout)
    return os.path.dirname(refs[-1]), out


def install_library(lib_dir):
    """The program's module_utils under lib_dir, as the node_library filter lays them out (tests/unit/nodelib.py)."""
    spec = importlib.util.spec_from_file_location('_node_library', os.path.join(MODULE_UTILS, '_node_library.py'))
    node_library = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(node_library)
    for entry in node_library.entries(lib_dir, MODULE_UTILS, LIBRARY):
        if entry.get('state') == 'directory':
            os.makedirs(entry['dest'], exist_ok=True)
        else:
            shutil.copy(entry['src'], entry['dest'])


def lay_out(tmp):
    """A simulated node and the health check installed on it: (environment, config path, program path)."""
    pynvml_dir, libnvml = nvml_paths()
    py = python()
    root = os.path.join(tmp, 'nvmlsim', 'root')
    env = {
        'PATH': '%s:/usr/local/bin:/usr/bin:/bin' % SIM_BIN,
        'HOME': os.environ.get('HOME', tmp),
        'LANG': 'C.UTF-8',
        'NVMLSIM_STATE': os.path.join(tmp, 'nvmlsim', 'state.json'),
        'NVMLSIM_ROOT': root,
        'GPUCLUSTER_HEALTHCHECK_LIB': os.path.join(tmp, 'hc-lib'),
        'PYTHONPATH': pynvml_dir,
        'LD_LIBRARY_PATH': libnvml,
        'NVMLSIM_PYTHONPATH': os.path.join(ROOT, 'nvml_sim', 'src'),
        'NVMLSIM_PYTHON': py,
        'SLURM_JOB_ID': '7',
        'SLURMD_NODENAME': 'gpu-01',
    }
    create = subprocess.run([os.path.join(SIM_BIN, 'nvmlsim'), 'create', '--preset', 'h100-80gb-x8'], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=120)
    if create.returncode != 0:
        fail('nvmlsim create failed:\n' + create.stdout)
    install_library(env['GPUCLUSTER_HEALTHCHECK_LIB'])
    program = os.path.join(tmp, 'gpucluster-healthcheck')
    with open(PROGRAM) as handle:
        source = handle.read()
    with open(program, 'w') as handle:
        handle.write('#!%s\n%s' % (py, source))
    os.chmod(program, 0o755)
    config = {'node_name': 'gpu-01', 'dev_root': root, 'munge_key_path': '',
              'status_file': os.path.join(tmp, 'hc-status.json'), 'state_file': os.path.join(tmp, 'hc-state.json'),
              'events_file': os.path.join(tmp, 'hc-events.jsonl'),
              'xid_source': os.path.join(root, 'var', 'log', 'kern.log'),
              'ib_sysfs_root': os.path.join(root, 'var', 'lib', 'nvmlsim', 'sys', 'class', 'infiniband'),
              'gpu_count': 8, 'gpu_models': ['H100']}
    config_path = os.path.join(tmp, 'healthcheck.json')
    with open(config_path, 'w') as handle:
        json.dump(config, handle)
    return env, config_path, program


def run_once(argv, env, timeout=120):
    start = time.monotonic()
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, check=False, timeout=timeout)
    return time.monotonic() - start, result.returncode, result.stdout


def check_once(label, argv, env, want):
    """Run a command once; it must exit 0 and print ``want`` (a healthy node, the branch we mean to time)."""
    _, rc, out = run_once(argv, env)
    if rc != 0 or want not in out:
        fail('%s: exit %s, expected %r in its output:\n%s' % (label, rc, want, out))


def percentile(values, q):
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n*q/100)
    return ordered[int(rank) - 1]


def paired(label_a, a, label_b, b, runs, warmup):
    """A and B in turn; prints min/median/max of each and the pair-by-pair ratio A/B."""
    for _ in range(warmup):
        run_once(a[1], a[0])
        run_once(b[1], b[0])
    times_a, times_b, ratios, codes = [], [], [], set()
    for _ in range(runs):
        ta, rca, _ = run_once(a[1], a[0])
        tb, rcb, _ = run_once(b[1], b[0])
        times_a.append(ta)
        times_b.append(tb)
        ratios.append(ta / tb)
        codes.update([('A', rca), ('B', rcb)])
    print('  A %-40s min %7.3fs  median %7.3fs  max %7.3fs' % (label_a, min(times_a), statistics.median(times_a), max(times_a)))
    print('  B %-40s min %7.3fs  median %7.3fs  max %7.3fs' % (label_b, min(times_b), statistics.median(times_b), max(times_b)))
    print('  ratio A/B (pair by pair)                   min %7.2f   median %7.2f   max %7.2f   (%d pairs, exit codes %s)'
          % (min(ratios), statistics.median(ratios), max(ratios), runs, ', '.join('%s=%s' % c for c in sorted(codes))))
    return statistics.median(times_a), statistics.median(times_b), statistics.median(ratios)


def loadavg():
    with open('/proc/loadavg') as handle:
        return ' '.join(handle.read().split()[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=30, help='paired runs per comparison (default %(default)s)')
    parser.add_argument('--warmup', type=int, default=2, help='uncounted pairs first (default %(default)s)')
    parser.add_argument('--p99-runs', type=int, default=200, help='prolog tier runs for median/p99 (default %(default)s)')
    parser.add_argument('--keep', metavar='DIR', help='lay the node out in DIR (created) and keep it; prints its environment')
    args = parser.parse_args()

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        tmp = os.path.abspath(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix='hc-tiers-')
    try:
        env, config, program = lay_out(tmp)
        prolog = [program, '--config', config, '--tier', 'prolog']
        periodic = [program, '--config', config, '--dry-run']
        old_env = dict(env, GPUCLUSTER_HEALTHCHECK_PROGRAM=os.path.join(tmp, 'no-such-program'))
        old_hook = [HOOK]
        yardstick = [env['NVMLSIM_PYTHON'], '-c', 'pass']
        smi = shutil.which('nvidia-smi', path=env['PATH'])
        if smi != os.path.join(SIM_BIN, 'nvidia-smi'):
            fail('nvidia-smi on the benchmark PATH is %s, not the simulator STAND-IN' % smi)
        check_once('prolog tier', prolog, env, 'healthy (prolog tier')
        check_once('periodic tier --dry-run', periodic, env, 'healthy (dry run)')
        check_once('previous prolog hook (nvidia-smi branch)', old_hook, old_env, '')
        if args.keep:
            with open(os.path.join(tmp, 'env'), 'w') as handle:
                handle.write(''.join('%s=%s\n' % item for item in sorted(env.items())))
            print('node laid out in %s; environment in %s/env' % (tmp, tmp))
            print('  prolog tier:   %s' % ' '.join(prolog))
            print('  periodic tier: %s' % ' '.join(periodic))
            print('  old hook:      GPUCLUSTER_HEALTHCHECK_PROGRAM=%s %s' % (old_env['GPUCLUSTER_HEALTHCHECK_PROGRAM'], HOOK))

        load_before = loadavg()
        print('gpucluster-healthcheck tiers on a simulated 8 x H100 node (nvmlsim h100-80gb-x8), %d cores, python %s'
              % (os.cpu_count(), sys.version.split()[0]))
        print('whole-process wall seconds; NOTE: the simulated NVML answers through a Python server process per NVML')
        print('client (nvml_sim/libnvml -> python3 -m nvmlsim.libserver), whose start-up is in every figure below.')
        print('load average before: %s' % load_before)
        print()
        print('(a) prolog tier vs the previous prolog hook (nvidia-smi branch), %d pairs after %d warm-up pairs'
              % (args.runs, args.warmup))
        a_prolog, a_old, a_ratio = paired('gpucluster-healthcheck --tier prolog', (env, prolog),
                                          '10-all-gpu-healthcheck (nvidia-smi)', (old_env, old_hook), args.runs, args.warmup)
        print()
        print('(b) periodic tier --dry-run vs yardsticks, %d pairs each' % args.runs)
        paired('gpucluster-healthcheck --dry-run', (env, periodic), '--tier prolog', (env, prolog), args.runs, args.warmup)
        paired('gpucluster-healthcheck --dry-run', (env, periodic), 'python3 -c pass', (env, yardstick), args.runs,
               args.warmup)
        print()
        print('(c) prolog tier alone, %d runs (after 2 uncounted)' % args.p99_runs)
        for _ in range(2):
            run_once(prolog, env)
        times, codes = [], set()
        for _ in range(args.p99_runs):
            elapsed, rc, _ = run_once(prolog, env)
            times.append(elapsed)
            codes.add(rc)
        tail = percentile(times, 99)
        print('  median   %7.3fs' % statistics.median(times))
        print('  p99      %7.3fs  (nearest rank of %d runs)' % (tail, len(times)))
        print('  max      %7.3fs' % max(times))
        print('  min      %7.3fs' % min(times))
        print('  budget   %7.3fs  (prolog_budget default)' % PROLOG_BUDGET)
        print('  p99 under the budget: %s (p99 = %.0f%% of it); exit codes %s'
              % ('yes' if tail < PROLOG_BUDGET else 'NO', 100 * tail / PROLOG_BUDGET, sorted(codes)))
        print()
        print('ratio prolog tier / previous hook (median of pair ratios): %.2f  (medians %.3fs / %.3fs)'
              % (a_ratio, a_prolog, a_old))
        print('load average after: %s' % loadavg())
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
