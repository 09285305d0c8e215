#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The resume probes and validate's Slurm stage, one job per node against steps of one allocation per node type (issue 48
item 6): jobs started, seconds, slurmctld CPU, on the emulated cluster.

    .venv/bin/python benchmarks/job_dispatch.py [--up 64] [--down] [--nodes N] [--what both|resume|slurm] [--json FILE]

On the emulated cluster (``scripts/scale.sh``, containers ``gcscale-`` only; ``--up N`` brings it up first, ``--down``
removes it after), the two modules' managers of this checkout (``validation_resume.ResumeManager``,
``validation_jobs.JobsManager``) run inside the controller container with the real Slurm client (``slurm._slurm_cli``
over ``subprocess``; ``ansible.module_utils.basic`` is not needed by the managers and is stubbed), once per dispatch
(``per_node``, ``allocation``):

- resume: ``--nodes`` nodes (default all) drained with the health check's tag, then ``validation_resume`` ``action=resume``
  with every node's checks passed (the probes in its maintenance reservation);
- slurm: the Slurm stage's plan (``srun hostname`` per node, the ``--gres=gpu:N`` job per node, the job environment;
  pyxis off) over the same nodes, their GPU count from ``.build/scale/fleet.json``.

Counted per run: the commands it started (``srun`` jobs, ``srun`` steps, ``salloc``, ``scancel``, ``sinfo``), i.e. the
jobs slurmctld allocated (``srun`` jobs + ``salloc``), wall seconds, slurmctld's CPU seconds, and the outcome (resumed /
kept; records passed / failed), which must be the same for both dispatches.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = os.path.join(ROOT, 'scripts', 'scale.sh')
CTL = 'gcscale-ctl'
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'lib', 'containers.conf'))
REMOTE = '/tmp/gcdispatch'
REASON = 'gpuhc:periodic:xid: the job dispatch benchmark (issue 48 item 6)'

# run inside the controller container: one manager run, timed, its commands counted
RUN = r'''
import importlib.util, json, os, sys, time, types
lib, what, dispatch, plan_file = sys.argv[1:5]
sys.path.insert(0, lib)
for name in ('ansible', 'ansible.module_utils', 'ansible.module_utils.basic'):
    sys.modules.setdefault(name, types.ModuleType(name))
sys.modules['ansible.module_utils.basic'].AnsibleModule = object
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli, run_process
def load(name):
    spec = importlib.util.spec_from_file_location(name, lib + '/ansible_collections/gpucluster/bringup/plugins/modules/%s.py' % name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
started = {}
def run(argv, env=None, data=None):
    words = argv[3:] if argv[0] == 'timeout' else argv
    key = os.path.basename(words[0])
    if key == 'srun':
        key = 'srun step' if any(a.startswith('--jobid=') for a in words) else 'srun job'
    started[key] = started.get(key, 0) + 1
    return run_process(argv, env=dict(os.environ, **env) if env else None, data=data, timeout=3600)
def slurmctld():
    pid = os.popen('pidof slurmctld').read().split()[0]
    fields = open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf('SC_CLK_TCK'))
plan = json.load(open(plan_file))
client = SlurmCli(run, warn=lambda text: None)
ctld0 = slurmctld()
start = time.monotonic()
if what == 'resume':
    names = plan['names']
    params = {'action': 'resume', 'names': names, 'resume_admin_drains': False, 'probe': True, 'probe_timeout': 300,
              'reservation': 'gcdispatch-bench', 'prefix': 'gpuhc', 'started': {}, 'wait_timeout': 60, 'dispatch': dispatch,
              'dispatch_min_nodes': 1, 'allocation_wait': 60,
              'checks': dict((n, {'records': [{'stage': 'node', 'node': n, 'check': 'nvml', 'status': 'pass'}]}) for n in names)}
    result = load('validation_resume').ResumeManager(client, params).run()
    outcome = {'resumed': len(result['resumed']), 'kept': result['kept']}
    verdicts = dict((n, n in result['resumed']) for n in names)
else:
    plan['slurm']['dispatch'] = dispatch
    params = {'jobs': [], 'stage': 'slurm', 'slurm': plan['slurm'], 'nccl': None, 'mpi': None, 'mpi_plugin': 'auto', 'srun': 'srun',
              'mpi_required_paths': []}
    result = load('validation_jobs').JobsManager(client, params).run()
    records = result['records']
    outcome = {'passed': sum(1 for r in records if r['status'] == 'pass'), 'failed': [r['node'] + ' ' + r['check'] + ': ' + (r.get('reason') or '')
                                                                                        for r in records if r['status'] == 'fail'][:5]}
    verdicts = dict(('%s %s' % (r['node'], r['check']), r['status']) for r in records)
    import re
    whys = {}
    for res in result['results'].values():
        why = re.sub(r'job \d+', 'job N', res.get('dispatch') or '')
        if why.startswith('own job'):
            whys[why] = whys.get(why, 0) + 1
    outcome['own_jobs_why'] = sorted(whys.items(), key=lambda item: -item[1])[:5]
wall = time.monotonic() - start
print(json.dumps({'what': what, 'dispatch': dispatch, 'wall_s': round(wall, 2), 'started': started,
                  'jobs': started.get('srun job', 0) + started.get('salloc', 0), 'steps': started.get('srun step', 0),
                  'allocations': [dict((k, a.get(k)) for k in ('name', 'nodes', 'job_id', 'refused')) for a in result.get('allocations') or []],
                  'slurmctld_cpu_s': round(slurmctld() - ctld0, 2), 'outcome': outcome, 'verdicts': verdicts}))
'''


def sh(argv, check=True, **kwargs):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=ENV, check=False, **kwargs)
    if check and result.returncode != 0:
        raise SystemExit('job_dispatch: %s failed (%d):\n%s\n%s' % (' '.join(argv), result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
    return result


def ctl(*argv, **kwargs):
    return sh(['podman', 'exec', CTL] + list(argv), **kwargs)


def stage(plans):
    """The collection's module_utils and the two modules under REMOTE in the controller container, with the run script
    and the plans."""
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, 'gcdispatch')
        lib = os.path.join(base, 'lib', 'ansible_collections', 'gpucluster', 'bringup', 'plugins')
        shutil.copytree(os.path.join(ROOT, 'plugins', 'module_utils'), os.path.join(lib, 'module_utils'),
                        ignore=shutil.ignore_patterns('__pycache__'))
        os.makedirs(os.path.join(lib, 'modules'))
        for name in ('validation_resume', 'validation_jobs'):
            shutil.copy(os.path.join(ROOT, 'plugins', 'modules', name + '.py'), os.path.join(lib, 'modules'))
        with open(os.path.join(base, 'run.py'), 'w') as handle:
            handle.write(RUN)
        for name, plan in plans.items():
            with open(os.path.join(base, name + '.json'), 'w') as handle:
                json.dump(plan, handle)
        ctl('rm', '-rf', REMOTE)
        tar = subprocess.run(['tar', '-C', tmp, '-cf', '-', 'gcdispatch'], stdout=subprocess.PIPE, check=True)
        subprocess.run(['podman', 'exec', '-i', CTL, 'tar', '-C', '/tmp', '--no-same-owner', '-xf', '-'], input=tar.stdout, env=ENV, check=True)


def one_run(what, dispatch):
    result = ctl('python3', REMOTE + '/run.py', REMOTE + '/lib', what, dispatch, '%s/%s.json' % (REMOTE, what))
    return json.loads(result.stdout.strip().splitlines()[-1])


def fleet_gpus():
    """Node name -> GPUs, from the emulated fleet's description (scripts/lib/scale_fleet.py)."""
    with open(os.path.join(ROOT, '.build', 'scale', 'fleet.json')) as handle:
        fleet = json.load(handle)
    return dict((node['name'], int(fleet['types'][node['type']]['gpus'])) for node in fleet['nodes'])


def release(names):
    ctl('sh', '-c', 'scontrol delete reservationname=gcdispatch-bench 2>/dev/null; for n in %s; do scontrol update nodename=$n state=resume; '
        'done 2>/dev/null' % ' '.join(names), check=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--up', type=int, default=0, metavar='N', help='bring the emulated cluster up with N nodes first')
    parser.add_argument('--down', action='store_true', help='remove the emulated cluster at the end')
    parser.add_argument('--nodes', type=int, default=0, help='nodes measured (default all)')
    parser.add_argument('--json', metavar='FILE')
    parser.add_argument('--what', choices=('both', 'resume', 'slurm'), default='both', help='measure the resume probes, the Slurm stage or both')
    args = parser.parse_args()
    rows = []
    if args.up:
        start = time.monotonic()
        if subprocess.run(['bash', SCALE, 'up', str(args.up)], env=ENV, check=False).returncode != 0:
            raise SystemExit('job_dispatch: scripts/scale.sh up %d failed' % args.up)
        print(json.dumps({'step': 'up', 'nodes': args.up, 'wall_s': round(time.monotonic() - start, 1)}), flush=True)
    try:
        gpus = fleet_gpus()
        names = sorted(set(ctl('sinfo', '-h', '-N', '-t', 'idle', '-o', '%N').stdout.split()))
        if not names:
            raise SystemExit('job_dispatch: the emulated cluster (%s) has no idle node; bring it up: bash scripts/scale.sh up 64' % CTL)
        chosen = names[:args.nodes] if args.nodes else names
        stage({'resume': {'names': chosen},
               'slurm': {'slurm': {'nodes': [{'name': n, 'gpus': gpus.get(n, 0), 'usable': True} for n in chosen], 'timeout': 300,
                                   'pyxis': False}}})
        measured = ('resume', 'slurm') if args.what == 'both' else (args.what,)
        for what in measured:
            for dispatch in ('per_node', 'allocation'):
                if what == 'resume':
                    ctl('scontrol', 'update', 'nodename=' + ','.join(chosen), 'state=drain', 'reason=' + REASON)
                row = one_run(what, dispatch)
                if what == 'resume':
                    release(chosen)
                print(json.dumps(dict((k, v) for k, v in row.items() if k != 'verdicts'), sort_keys=True), flush=True)
                rows.append(row)
        print()
        print('%d nodes of the emulated cluster, load average %s' % (len(chosen), ' '.join(open('/proc/loadavg').read().split()[:3])))
        print('%-7s %-11s %8s %6s %6s %9s %12s  %s' % ('what', 'dispatch', 'wall s', 'jobs', 'steps', 'ctld cpu', 'allocations', 'outcome'))
        for row in rows:
            print('%-7s %-11s %8.1f %6d %6d %9.2f %12d  %s' % (row['what'], row['dispatch'], row['wall_s'], row['jobs'], row['steps'],
                                                               row['slurmctld_cpu_s'], len(row['allocations']), json.dumps(row['outcome'])))
        for what in measured:
            pair = [row['verdicts'] for row in rows if row['what'] == what]
            print('%s: the same verdict per node with both dispatches: %s' % (what, pair[0] == pair[1]))
        if args.json:
            with open(args.json, 'a') as handle:
                for row in rows:
                    handle.write(json.dumps(row, sort_keys=True) + '\n')
    finally:
        if args.down:
            subprocess.run(['bash', SCALE, 'down'], env=ENV, check=False)


if __name__ == '__main__':
    main()
