#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's benchmark (issue 48, "Benchmarks"): its steps on the simulated cluster, its cost at scale.

    .venv/bin/python benchmarks/closed_loop.py cluster [--runs 2] [--keep]
    .venv/bin/python benchmarks/closed_loop.py scale [--up 1024] [--down] [--failing 1] [--repeat 3] [--baseline REF]

``cluster``: on the simulated cluster (``scripts/cluster.sh cluster``, up and converged), the loop installed as the
acceptance test molecule/default/tests/test_closed_loop.py installs it (its STAND-IN RebootProgram, its playbook
variables, but ``reboot_max`` 100 so that each run goes round the loop), then per run: an Xid 79 injected on gpu-01
the way the test injects it (``nvmlsim xid``), the health check's periodic tier run as slurmd runs it, and the time
from the injection to each step: the health check's drain, the loop's reboot asked (its JSON log), the new boot
(``BootTime``), the loop seeing the node back, the deep tier passed, the node returned (back in service: idle, no
reason).  Each step's time also as the time since the step before.  The loop is switched off again at the end
(``--keep``: left on).

``scale``: on the emulated cluster (``scripts/scale.sh``, containers ``gcscale-``; ``--up N`` brings it up with
``RebootProgram=/bin/true`` and ``--down`` removes it after), the loop program of this checkout (and with
``--baseline REF`` the one committed at REF, in turn) is copied into the controller container with its module_utils
and run there, one pass at a time, with its own state, events and metrics files under /tmp/gcloop.  Each pass is timed
inside the container: wall time, CPU seconds (user+sys) of the loop program's process, and of the commands it ran
(scontrol, squeue).  First a pass with every node new to the loop, then ``--repeat`` passes with no failing node (the
baseline), then per repeat ``--failing`` % of the nodes drained with the health check's Xid 79 tag and one pass (the
loop asks each a reboot through Slurm); the ratio failing / baseline is taken on medians.  Nodes left drained or
rebooting are resumed at the end (``scontrol cancel_reboot``, ``state=resume``).

Prints one JSON line per measurement and a table; ``--json FILE`` keeps the lines.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = os.path.join(ROOT, 'scripts', 'scale.sh')
CTL = 'gcscale-ctl'
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'lib', 'containers.conf'))
XID79 = 'gpuhc:periodic:xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node'
PROGRAM = 'roles/slurm_healthcheck/files/gpucluster_node_loop.py'
REMOTE = '/tmp/gcloop'
# run inside the controller container: one pass of the loop program in this process, timed
MEASURE = r'''
import importlib.machinery, importlib.util, json, os, resource, sys, time
lib, program, config = sys.argv[1:4]
os.environ['GPUCLUSTER_HEALTHCHECK_LIB'] = lib
sys.path.insert(0, lib)
start = time.monotonic()
self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
loader = importlib.machinery.SourceFileLoader('gpucluster_node_loop', program)
spec = importlib.util.spec_from_loader('gpucluster_node_loop', loader)
module = importlib.util.module_from_spec(spec)
loader.exec_module(module)
out = sys.stdout
sys.stdout = open(os.devnull, 'w')
rc = module.main(['--config', config])
sys.stdout = out
wall = time.monotonic() - start
self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({'rc': rc, 'wall_s': wall, 'cpu_s': self1.ru_utime - self0.ru_utime + self1.ru_stime - self0.ru_stime,
                  'children_cpu_s': kids1.ru_utime - kids0.ru_utime + kids1.ru_stime - kids0.ru_stime,
                  'max_rss_kib': self1.ru_maxrss}))
'''

# run inside the controller container: the loop's deep tier on nodes back from a reboot, one dispatch, timed
DEEP = r"""
import importlib.machinery, importlib.util, json, os, resource, sys, time
lib, program, config, dispatch, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(',')
os.environ['GPUCLUSTER_HEALTHCHECK_LIB'] = lib
sys.path.insert(0, lib)
loader = importlib.machinery.SourceFileLoader('gpucluster_node_loop', program)
spec = importlib.util.spec_from_loader('gpucluster_node_loop', loader)
module = importlib.util.module_from_spec(spec)
loader.exec_module(module)
settings = module.loop.load_settings(dict(json.load(open(config)), deep_dispatch=dispatch))
started = {}
real = module.run
def counted(argv, timeout=60):
    started[os.path.basename(argv[0])] = started.get(os.path.basename(argv[0]), 0) + 1
    return real(argv, timeout)
module.run = counted
module.log = lambda level, text: None
text = module.Pass(settings).show_nodes(names)
nodes = [n for n in module.loop.parse_nodes(text)]
run = module.Pass(settings)
tag = 'gpuloop:reboot:xid-79: the deep dispatch benchmark'
for n in nodes:
    n['reason'] = tag
    run.state['nodes'][n['name']] = dict(module.loop.new_record(run.now), state='back', condition='xid-79', reason=tag, asked_at=run.now - 60)
extras = module.deep_jobs.node_extras(module.slurm_nodes.parse_nodes(text))
def slurmctld():
    pid = os.popen('pidof slurmctld').read().split()[0]
    fields = open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf('SC_CLK_TCK'))
ctld0 = slurmctld()
start = time.monotonic()
self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
run.deep(nodes, extras)
wall = time.monotonic() - start
self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
states = dict((k, v['state']) for k, v in run.state['nodes'].items())
print(json.dumps({'dispatch': dispatch, 'nodes': len(nodes), 'wall_s': wall, 'started': started,
                  'allocations': len(run.allocations), 'returned': sum(1 for k, v in states.items() if v == 'ok' and k in names),
                  'cpu_s': self1.ru_utime - self0.ru_utime + self1.ru_stime - self0.ru_stime,
                  'children_cpu_s': kids1.ru_utime - kids0.ru_utime + kids1.ru_stime - kids0.ru_stime, 'slurmctld_cpu_s': slurmctld() - ctld0}))
"""
STANDIN = '/opt/gcloop-STANDIN/gpucluster-healthcheck'


def sh(argv, check=True, **kwargs):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=ENV, check=False, **kwargs)
    if check and result.returncode != 0:
        raise SystemExit('closed_loop: %s failed (%d):\n%s\n%s' % (' '.join(argv), result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
    return result


def emit(record, sink):
    print(json.dumps(record, sort_keys=True), flush=True)
    sink.append(record)


def ratio(top, bottom):
    return top / bottom if bottom else float('nan')


def median(values):
    return statistics.median(values) if values else float('nan')


# ------------------------------------------------------------------ scale

def ctl(*argv, **kwargs):
    return sh(['podman', 'exec', CTL] + list(argv), **kwargs)


def stage(label, ref):
    """The loop program and the collection's module_utils (of ``ref``, or of this checkout for None) under
    /tmp/gcloop/<label> in the controller container."""
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, label)
        lib = os.path.join(base, 'lib', 'ansible_collections', 'gpucluster', 'bringup')
        os.makedirs(lib)
        if ref:
            git = subprocess.run(['git', '-C', ROOT, 'archive', '--format=tar', ref, 'plugins/module_utils', PROGRAM],
                                 stdout=subprocess.PIPE, check=True)
            subprocess.run(['tar', '-C', lib, '-xf', '-'], input=git.stdout, check=True)
        else:
            os.makedirs(os.path.join(lib, os.path.dirname(PROGRAM)))
            shutil.copytree(os.path.join(ROOT, 'plugins', 'module_utils'), os.path.join(lib, 'plugins', 'module_utils'),
                            ignore=shutil.ignore_patterns('__pycache__'))
            shutil.copy(os.path.join(ROOT, PROGRAM), os.path.join(lib, PROGRAM))
        with open(os.path.join(base, 'measure.py'), 'w') as handle:
            handle.write(MEASURE)
        with open(os.path.join(base, 'deep.py'), 'w') as handle:
            handle.write(DEEP)
        state = '%s/%s/state' % (REMOTE, label)
        with open(os.path.join(base, 'node-loop.json'), 'w') as handle:
            json.dump({'state_file': state + '/state.json', 'events_file': state + '/events.jsonl',
                       'metrics_file': state + '/loop.prom', 'policy': {'reboot_timeout_s': 86400}, 'deep_program': STANDIN,
                       'deep_time_limit': 5, 'deep_settings': {'checks': ['dcgm']}}, handle)
        ctl('rm', '-rf', '%s/%s' % (REMOTE, label))
        ctl('mkdir', '-p', REMOTE)
        tar = subprocess.run(['tar', '-C', tmp, '-cf', '-', label], stdout=subprocess.PIPE, check=True)
        subprocess.run(['podman', 'exec', '-i', CTL, 'tar', '-C', REMOTE, '--no-same-owner', '-xf', '-'], input=tar.stdout, env=ENV, check=True)
    return '%s/%s' % (REMOTE, label)


def one_pass(where):
    result = ctl('python3', where + '/measure.py', where + '/lib', where + '/lib/ansible_collections/gpucluster/bringup/' + PROGRAM,
                 where + '/node-loop.json')
    return json.loads(result.stdout.strip().splitlines()[-1])


def node_names():
    return sorted(set(ctl('sinfo', '-h', '-N', '-o', '%N').stdout.split()))


def scale(args):
    sink = []
    if args.up:
        env = dict(ENV, GPUCLUSTER_SCALE_SET='--set RebootProgram=/bin/true')
        start = time.monotonic()
        up = subprocess.run(['bash', SCALE, 'up', str(args.up)], env=env, check=False)
        if up.returncode != 0:
            raise SystemExit('closed_loop: scripts/scale.sh up %d failed' % args.up)
        emit({'step': 'up', 'nodes': args.up, 'wall_s': round(time.monotonic() - start, 1)}, sink)
    try:
        names = node_names()
        if not names:
            raise SystemExit('closed_loop: the emulated cluster (%s) shows no node; bring it up: bash scripts/scale.sh up 1024' % CTL)
        reboot_program = [line for line in ctl('scontrol', 'show', 'config').stdout.splitlines() if line.startswith('RebootProgram')]
        release([])  # nothing drained by an earlier run
        failing = max(1, int(round(len(names) * args.failing / 100.0)))
        labels = [('this', None)] + ([('baseline', args.baseline)] if args.baseline else [])
        rows = {}
        for label, ref in labels:
            where = stage(label, ref)
            first = one_pass(where)
            emit(dict(first, step='first pass', code=label, nodes=len(names)), sink)
            rows[label] = {'first': first, 'idle': [], 'failing': []}
            for number in range(args.repeat):
                rows[label]['idle'].append(one_pass(where))
                emit(dict(rows[label]['idle'][-1], step='no failing node', code=label, run=number + 1, nodes=len(names)), sink)
            used = []
            for number in range(args.repeat):
                # a different 1 % each repeat, spread over the fleet
                chosen = names[number::max(1, len(names) // failing)][:failing]
                used.extend(chosen)
                ctl('scontrol', 'update', 'nodename=' + ','.join(chosen), 'state=drain', 'reason=' + XID79)
                rows[label]['failing'].append(one_pass(where))
                emit(dict(rows[label]['failing'][-1], step='%d failing' % failing, code=label, run=number + 1, nodes=len(names),
                          reboots_asked=sum(1 for n in chosen if 'gpuloop:reboot:' in ctl('scontrol', '-o', 'show', 'node', n).stdout)), sink)
            release(used)
        deep_rows = deep_dispatch(args, names, sink) if args.deep else []
        print()
        print('closed loop, one pass of gpucluster-node-loop in the controller container, %d nodes, %d failing (%s %%); %s; '
              'medians of %d; load average %s' % (len(names), failing, args.failing, reboot_program[0] if reboot_program else 'no RebootProgram',
                                                  args.repeat, ' '.join(open('/proc/loadavg').read().split()[:3])))
        print('%-9s %-22s %9s %9s %12s %9s' % ('code', 'pass', 'wall s', 'cpu s', 'commands s', 'rss MiB'))
        for label, _ref in labels:
            row = rows[label]
            for name, runs in (('first (all new)', [row['first']]), ('no failing node', row['idle']), ('%d failing' % failing, row['failing'])):
                figures = [median([r[key] for r in runs]) for key in ('wall_s', 'cpu_s', 'children_cpu_s')]
                print('%-9s %-22s %9.3f %9.3f %12.3f %9.1f' % tuple([label, name] + figures + [max(r['max_rss_kib'] for r in runs) / 1024.0]))
            cpu = [median([r['cpu_s'] for r in row[key]]) for key in ('failing', 'idle')]
            wall = [median([r['wall_s'] for r in row[key]]) for key in ('failing', 'idle')]
            print('%-9s ratio failing / no failing node: cpu %.2f, wall %.2f' % (label, ratio(*cpu), ratio(*wall)))
        for row in deep_rows:
            print('deep tier on %(nodes)d nodes back at once, %(dispatch)-10s: %(wall_s)6.1f s wall, %(cpu_s)5.2f cpu s (+ %(children_cpu_s)5.2f in '
                  'srun/salloc/scontrol; slurmctld %(slurmctld_cpu_s)5.2f), %(allocations)d allocation(s), commands started %(started)s, '
                  '%(returned)d returned' % row)
        if args.baseline:
            for name in ('idle', 'failing'):
                ours, theirs = median([r['cpu_s'] for r in rows['this'][name]]), median([r['cpu_s'] for r in rows['baseline'][name]])
                print('this / %s, %s pass: cpu %.2f' % (args.baseline, 'no failing node' if name == 'idle' else 'failing', ratio(ours, theirs)))
    finally:
        if args.down:
            subprocess.run(['bash', SCALE, 'down'], env=ENV, check=False)
    return sink


def deep_dispatch(args, names, sink):
    """The loop's deep tier on ``args.deep`` nodes back from a reboot (records made so), per dispatch: one job per node
    against steps of one allocation per node type. The deep tier program on the racks is a STAND-IN printing a
    passing report line (the real one needs GPUs)."""
    sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))
    from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep  # noqa: E402
    line = deep.report_line(deep.outcome('standin', [deep.result('dcgm', 'pass', 'STAND-IN: no GPU here')], 'gpuhc', 0.1, 0)[0])
    script = '#!/bin/sh\n# STAND-IN of gpucluster-healthcheck --tier deep (benchmarks/closed_loop.py): a passing report\necho %s\n' % (
        "'%s'" % line.replace("'", "'\\''"))
    racks = [n for n in sh(['podman', 'ps', '--format', '{{.Names}}', '--filter', 'label=io.gpucluster.sim=scale']).stdout.split()
             if n.startswith('gcscale-rack-')]
    for rack in racks:
        subprocess.run(['podman', 'exec', '-i', rack, 'sh', '-c', 'mkdir -p %s && cat > %s && chmod 0755 %s'
                        % (os.path.dirname(STANDIN), STANDIN, STANDIN)], input=script.encode(), env=ENV, check=True)
    chosen = names[5::max(1, len(names) // args.deep)][:args.deep]
    where = '%s/this' % REMOTE
    rows = []
    for dispatch in ('per_node', 'allocation'):
        ctl('scontrol', 'update', 'nodename=' + ','.join(chosen), 'state=drain', 'reason=gpuloop:reboot:xid-79: the deep dispatch benchmark')
        result = ctl('python3', where + '/deep.py', where + '/lib', where + '/lib/ansible_collections/gpucluster/bringup/' + PROGRAM,
                     where + '/node-loop.json', dispatch, ','.join(chosen))
        row = json.loads(result.stdout.strip().splitlines()[-1])
        emit(dict(row, step='deep tier'), sink)
        rows.append(row)
        release(chosen)
    return rows


def release(names):
    """The nodes the benchmark drained: reboot cancelled, resumed one by one (scontrol refuses a whole list when one
    of its nodes is not drained), and every drain with the loop's or the health check's tag lifted too."""
    for line in ctl('sinfo', '-h', '-R', '-N', '-o', '%N|%E').stdout.splitlines():
        name, _sep, reason = line.partition('|')
        if reason.startswith(('gpuhc:', 'gpuloop:')) and name not in names:
            names = list(names) + [name]
    if names:
        ctl('sh', '-c', 'for n in %s; do scontrol cancel_reboot $n; scontrol update nodename=$n state=resume; done 2>/dev/null'
            % ' '.join(names), check=False)


# ------------------------------------------------------------------ cluster

def cluster(args):
    sys.path.insert(0, os.path.join(ROOT, 'molecule', 'default', 'tests'))
    import test_closed_loop as t  # noqa: E402  the acceptance test's injection, playbook variables and helpers
    sink = []
    t.wait_idle(t.COMPUTE)
    for name in t.COMPUTE:
        script = t.SIM_REBOOT % {'dir': t.DROP_IN.rsplit('/', 1)[0], 'drop_in': t.DROP_IN, 'exec_start': t.exec_start_with_b(name)}
        t.sh(name, "cat > %s <<'SCRIPT'\n%sSCRIPT\nchmod 0755 %s" % (t.REBOOT_PROGRAM, script, t.REBOOT_PROGRAM))
    t.ctl('rm -f %s /var/lib/gpucluster-node-loop/state.json' % t.EVENTS)
    variables = dict(t.LOOP_VARS, slurm_healthcheck_loop=dict(t.LOOP_VARS['slurm_healthcheck_loop'], reboot_max=100))
    rc, out = t.run_playbook(t.PLAYBOOK, ['-e', json.dumps(variables)])
    if rc != 0:
        raise SystemExit('closed_loop: slurm_cluster.yml with the loop on failed:\n%s' % out[-3000:])
    node = t.H100
    steps = ('drained', 'reboot asked', 'rebooted', 'back', 'deep passed', 'returned', 'idle')
    rows = []
    try:
        for number in range(args.runs):
            seen = len(t.events(node))
            booted = t.boot_time(node)
            at = {}
            start = time.time()
            t.sh(node, 'nvmlsim xid --gpu 0 --code 79')
            t.periodic(node)
            t.wait_for('drained', lambda: t.reason(node).startswith('gpuhc:') or t.reason(node).startswith('gpuloop:'), 60, 0.2)
            at['drained'] = time.time() - start

            def event(kind):
                found = [e for e in t.events(node)[seen:] if e['event'] == kind]
                return found[0]['time'] if found else None
            at['reboot asked'] = t.wait_for('reboot asked', lambda: event('reboot_asked'), 120, 0.5) - start
            t.wait_for('rebooted', lambda: t.boot_time(node) != booted, 600, 0.5)
            at['rebooted'] = time.time() - start
            at['back'] = t.wait_for('back', lambda: event('back'), 600, 0.5) - start
            at['deep passed'] = t.wait_for('deep passed or service', lambda: event('deep_passed') or event('service'), 900, 0.5) - start
            if event('service'):
                raise SystemExit('closed_loop: %s went to service (%s), not back; see %s --history %s' % (node, t.reason(node), t.LOOP, node))
            at['returned'] = t.wait_for('returned', lambda: event('returned'), 120, 0.5) - start
            t.wait_idle([node], timeout=120)
            at['idle'] = time.time() - start
            row = dict((key, round(value, 1)) for key, value in at.items())
            rows.append(row)
            emit(dict(row, step='run', run=number + 1, node=node), sink)
        print()
        print('closed loop on the simulated cluster, %s, Xid 79 injected; seconds since the injection (loop timer every %ss; '
              'the event times are the loop pass\'s, whole seconds)' % (node, t.LOOP_VARS['slurm_healthcheck_loop']['interval']))
        print('%-14s %s' % ('step', ' '.join('%9s' % ('run %d' % (i + 1)) for i in range(len(rows))) + '   median   step median'))
        before = 0.0
        for step in steps:
            values = [row[step] for row in rows]
            print('%-14s %s %8.1f %13.1f' % (step, ' '.join('%9.1f' % v for v in values), median(values), median(values) - before))
            before = median(values)
    finally:
        if not args.keep:
            t.run_playbook(t.PLAYBOOK, ['-e', json.dumps({'slurm_healthcheck_loop_enabled': False})])
            for name in t.COMPUTE:
                t.sh(name, 'rm -f %s' % t.REBOOT_PROGRAM, check=False)
                if t.reason(name):
                    t.ctl('scontrol update nodename=%s state=resume' % name, check=False)
    return sink


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='what')
    one = sub.add_parser('cluster', help='the steps on the simulated cluster (scripts/cluster.sh cluster, up)')
    one.add_argument('--runs', type=int, default=2)
    one.add_argument('--keep', action='store_true', help='leave the loop on')
    many = sub.add_parser('scale', help='one loop pass on the emulated cluster (scripts/scale.sh)')
    many.add_argument('--up', type=int, default=0, metavar='N', help='bring the emulated cluster up with N nodes first')
    many.add_argument('--down', action='store_true', help='remove the emulated cluster at the end')
    many.add_argument('--failing', type=float, default=1.0, metavar='PERCENT')
    many.add_argument('--repeat', type=int, default=3)
    many.add_argument('--baseline', metavar='REF', help='also the loop program committed at REF, in turn')
    many.add_argument('--deep', type=int, default=0, metavar='N', help="then the loop's deep tier on N nodes back at once, one job per node "
                      'against steps of one allocation')
    for each in (one, many):
        each.add_argument('--json', metavar='FILE')
    args = parser.parse_args()
    if not args.what:
        parser.error('say cluster or scale')
    sink = cluster(args) if args.what == 'cluster' else scale(args)
    if args.json:
        with open(args.json, 'a') as handle:
            for record in sink:
                handle.write(json.dumps(record, sort_keys=True) + '\n')


if __name__ == '__main__':
    main()
