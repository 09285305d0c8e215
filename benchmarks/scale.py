#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scale benchmark on the emulated cluster (issue #23; docs/scale.md): one table, one run.

    python3 benchmarks/scale.py --sizes 2,64,256,1024      (benchmarks/scale.sh runs this)

For each size N: ``scripts/scale.sh up N`` (real slurmctld + N real slurmds,
the configuration made by the collection's code), then on that cluster:

  conf      slurm.conf / gres.conf lines and the seconds the slurm role's filters took
  idle      seconds from slurmctld's start until every node registered idle
  reconf    ``scontrol reconfigure`` until every node responds again
  validate  the validate role's NCCL stage (module validation_jobs, through
            ansible-playbook): one all_reduce_perf (STAND-IN) run per node, all
            at once through Slurm, twice: as steps of one allocation per node
            type, then as one job per node; Ansible's own time (a no-op run) taken off
  report    validation_report over those records: seconds, report.html/json size
  resume    min(N, 256) nodes drained, then validation_resume (resume.yml's
            controller part: reservation, a probe job per node, drains lifted)
  churn     every node drains itself (scontrol update from its rack, as the
            health check does), then every node is resumed: seconds each way
  isolate   one node made slow (the stand-in's SLOW file), the pair rounds that
            find it (validation_jobs pairs_only): rounds, seconds, who is named
            (up to --isolate-max nodes: each pair job runs 16 stand-in processes)

Prints one JSON line per measurement as it goes and the table at the end;
``--json FILE`` keeps the lines.  Needs root, podman and the project's
virtualenv (``bash scripts/test.sh deps``), as scripts/scale.sh does.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, '.build', 'scale')
SCALE = os.path.join(ROOT, 'scripts', 'scale.sh')
PLAYBOOK = os.path.join(ROOT, 'benchmarks', 'scale', 'controller.yml')
CTL = 'gcscale-ctl'
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, 'scripts', 'lib', 'containers.conf'))
# a drain reason of the health check (gpucluster-healthcheck's tag: prefix, tier, check), which resume lifts
DRAIN_REASON = 'gpuhc:periodic:xid: Xid 79 on GPU 0 (scale benchmark)'
MODELS = {'h100': 'NVIDIA H100 80GB HBM3', 'a100': 'NVIDIA A100-SXM4-40GB', 'a100-mig': 'NVIDIA A100 80GB PCIe'}


def sh(argv, check=True, **kwargs):
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=ENV, check=False, **kwargs)
    if check and result.returncode != 0:
        raise SystemExit('scale: %s failed (%d):\n%s\n%s' % (' '.join(argv), result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
    return result


def ctl(*argv, **kwargs):
    return sh(['podman', 'exec', CTL] + list(argv), **kwargs)


def node_count(states='idle'):
    out = ctl('sinfo', '-h', '-N', '-t', states, '-o', '%N').stdout.split()
    return len(set(out))


def cpu_seconds():
    """CPU seconds used so far by the controller container and by all rack containers (cgroup v1 cpuacct; None elsewhere)."""
    totals = {'ctl': 0.0, 'racks': 0.0}
    names = sh(['podman', 'ps', '-q', '--filter', 'label=io.gpucluster.sim=scale', '--format', '{{.Names}} {{.ID}}']).stdout.split('\n')
    for line in names:
        if not line.strip():
            continue
        name, short = line.split()
        full = sh(['podman', 'inspect', '-f', '{{.Id}}', short]).stdout.strip()
        path = '/sys/fs/cgroup/cpuacct/libpod_parent/libpod-%s/cpuacct.usage' % full
        if not os.path.isfile(path):
            return None
        with open(path) as handle:
            totals['ctl' if name == CTL else 'racks'] += int(handle.read()) / 1e9
    # slurmctld's own share of the controller's (the rest: srun processes, munge, the module)
    stat = ctl('sh', '-c', 'cat /proc/$(pidof slurmctld)/stat', check=False).stdout.split(')')[-1].split()
    totals['slurmctld'] = (int(stat[11]) + int(stat[12])) / float(os.sysconf('SC_CLK_TCK')) if len(stat) > 12 else 0.0
    return totals


def cpu_since(before):
    after = cpu_seconds()
    if before is None or after is None:
        return {}
    return {'ctl_cpu_s': round(after['ctl'] - before['ctl'], 1), 'racks_cpu_s': round(after['racks'] - before['racks'], 1),
            'slurmctld_cpu_s': round(after['slurmctld'] - before['slurmctld'], 1)}


def wait_for(predicate, limit):
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > limit:
            raise SystemExit('scale: gave up after %d s' % limit)
        time.sleep(0.5)
    return time.monotonic() - start


def playbook(step, extra=None):
    """Run one step of controller.yml; (seconds, result)."""
    inventory = os.path.join(OUT, 'inventory.yml')
    with open(inventory, 'w') as handle:
        handle.write('all:\n  hosts:\n    scale-ctl:\n      ansible_connection: podman_pipelined\n'
                     '      ansible_podman_container: %s\n      ansible_user: root\n'
                     '      ansible_python_interpreter: /usr/bin/python3\n' % CTL)
    varfile = os.path.join(OUT, 'vars-%s.json' % step)
    with open(varfile, 'w') as handle:
        json.dump(dict(extra or {}, scale_step=step, scale_out=OUT), handle)
    env = dict(ENV, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               ANSIBLE_CONNECTION_PLUGINS=os.path.join(ROOT, 'scripts', 'lib', 'connection_plugins'),
               ANSIBLE_PIPELINING='true', ANSIBLE_HOST_KEY_CHECKING='false')
    start = time.monotonic()
    result = subprocess.run([os.path.join(ROOT, '.venv', 'bin', 'ansible-playbook'), '-i', inventory, PLAYBOOK, '-e', '@' + varfile],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, check=False)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit('scale: controller.yml step %s failed:\n%s' % (step, result.stdout[-5000:]))
    return seconds, result.stdout


def plan(fleet, fabric=False, pairs_only=False, dispatch='auto'):
    nodes = []
    for node in fleet['nodes']:
        kind = fleet['types'][node['type']]
        # one fabric group for the whole emulated fleet (validate_nccl_multinode.group): its node types are laid out in blocks
        # that match whole leaves, and a slow leaf is told from its slow nodes only by pairs that leave it, which a group
        # of one leaf's nodes has none of; what this measures is the isolation over every node of the fabric
        nodes.append({'name': node['name'], 'gpus': kind['gpus'], 'model': MODELS[node['type']],
                      'gres_type': kind['gres'].split(',')[0].split(':')[1],
                      'gres_types': len(kind['gres'].split(',')), 'present': True, 'usable': True, 'fabric_group': 'scale'})
    # the fabric gate of the acceptance test of the slow-fabric isolation (molecule test_validate):
    # the stand-in's two-node recording passes 300 GB/s, a pair with a node at 50 % does not
    return {'binary': '/opt/nccl-tests-STANDIN/build/all_reduce_perf', 'nodes': nodes, 'fabric': fabric,
            'pairs_only': pairs_only, 'fabric_min_busbw_gbps': 300, 'env': {'NCCL_DEBUG': 'INFO'}, 'timeout': 600, 'dispatch': dispatch}


def emit(record, sink):
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    sink.append(record)


def one_size(size, racks, isolate_max, sink):
    row = {'nodes': size}
    up = sh(['bash', SCALE, 'up', str(size)] + ([str(racks)] if racks else []))
    for line in up.stdout.splitlines():
        if line.startswith('{'):
            step = json.loads(line)
            emit(dict(step, size=size), sink)
            if step['step'] == 'generate':
                detail = step['detail']
                row.update(conf_lines=detail['slurm_conf_lines'], node_lines=detail['slurm_conf_node_lines'],
                           gres_lines=detail['gres_conf_lines'], gen_s=detail['conf_seconds'])
            elif step['step'] == 'all_idle':
                row['idle_s'] = step['wall_s']
    with open(os.path.join(OUT, 'fleet.json')) as handle:
        fleet = json.load(handle)

    start = time.monotonic()
    ctl('scontrol', 'reconfigure')
    row['reconf_s'] = round(time.monotonic() - start + wait_for(lambda: node_count('idle') == size, 300), 2)
    emit({'step': 'reconfigure', 'size': size, 'wall_s': row['reconf_s']}, sink)

    noop, _out = playbook('noop')
    # the per-node runs both ways: steps of one allocation per node type (the role's default from 64 nodes on), then
    # one job per node, which at 1,024 nodes can leave nodes drained "Kill task failed" (resumed below); the report
    # is made from the first
    kept = None
    for dispatch, suffix in (('allocation', ''), ('per_node', '_own')):
        wait_for(lambda: node_count('idle') == size, 600)  # (the jobs before have ended on every node)
        before = cpu_seconds()
        seconds, _out = playbook('validate', {'scale_nccl_plan': plan(fleet, dispatch=dispatch)})
        cpu = cpu_since(before)
        with open(os.path.join(OUT, 'nccl-results.json')) as handle:
            results = json.load(handle)
        kept = kept or results
        statuses = {}
        for record in results['records']:
            statuses[record['status']] = statuses.get(record['status'], 0) + 1
        drained = node_count('drain')
        if drained:
            ctl('scontrol', 'update', 'nodename=' + ','.join(n['name'] for n in fleet['nodes']), 'state=resume', check=False)
        row['validate%s_s' % suffix] = round(seconds - noop, 2)
        row['validate%s_cpu' % suffix] = '%s (%s) / %s' % (cpu.get('ctl_cpu_s', '-'), cpu.get('slurmctld_cpu_s', '-'), cpu.get('racks_cpu_s', '-'))
        emit(dict(cpu, step='validate', dispatch=dispatch, size=size, wall_s=row['validate%s_s' % suffix], ansible_noop_s=round(noop, 2),
                  records=statuses, allocations=results.get('allocations'), drained_after=drained), sink)
    with open(os.path.join(OUT, 'nccl-results.json'), 'w') as handle:
        json.dump(kept, handle)
    wait_for(lambda: node_count('idle') == size, 600)

    seconds, _out = playbook('report')
    html = os.path.getsize(os.path.join(OUT, 'report', 'report.html'))
    row['report_s'] = round(seconds - noop, 2)
    row['report_kb'] = html // 1024
    emit({'step': 'report', 'size': size, 'wall_s': row['report_s'], 'html_bytes': html,
          'json_bytes': os.path.getsize(os.path.join(OUT, 'report', 'report.json'))}, sink)

    drained = [n['name'] for n in fleet['nodes'][:min(size, 256)]]
    ctl('scontrol', 'update', 'nodename=' + ','.join(drained), 'state=drain', 'reason=' + DRAIN_REASON)
    checks = dict((name, {'name': name, 'records': [{'stage': 'node', 'node': name, 'check': 'nvml', 'status': 'pass'}],
                          'hook_log': ''}) for name in drained)
    before = cpu_seconds()
    seconds, _out = playbook('resume', {'scale_resume_checks': checks})
    cpu = cpu_since(before)
    with open(os.path.join(OUT, 'resume-records.json')) as handle:
        resumed = [r for r in json.load(handle) if r.get('check') == 'resume' and r.get('status') == 'pass']
    row['resume_s'] = round(seconds - noop, 2)
    row['resumed'] = len(resumed)
    emit(dict(cpu, step='resume', size=size, drained=len(drained), resumed=len(resumed), wall_s=row['resume_s']), sink)

    row.update(churn(size, fleet, sink))
    if size <= isolate_max:
        row.update(isolate(size, fleet, noop, sink))
    return row


def churn(size, fleet, sink):
    """Every node drains itself from its rack (as the health check's scontrol call does), then is resumed."""
    racks = sorted(set(n['rack'] for n in fleet['nodes']))
    result = {}
    for state, reason, want in (('drain', 'reason=' + DRAIN_REASON, 'drain'), ('resume', '', 'idle')):
        start = time.monotonic()
        procs = []
        for rack in racks:
            names = ' '.join(n['name'] for n in fleet['nodes'] if n['rack'] == rack)
            script = 'for n in %s; do scontrol update nodename=$n state=%s %s & done; wait' % (names, state, ("'%s'" % reason) if reason else '')
            procs.append(subprocess.Popen(['podman', 'exec', 'gcscale-rack-%d' % rack, 'bash', '-c', script], env=ENV,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for proc in procs:
            proc.wait()
        seconds = time.monotonic() - start + wait_for(lambda: node_count(want) == size, 300)
        result['churn_%s_s' % state] = round(seconds, 2)
        emit({'step': 'churn_' + state, 'size': size, 'wall_s': round(seconds, 2)}, sink)
    return result


def leaves(fleet):
    """node -> leaf switch: 16 nodes a leaf from 64 nodes up, else a quarter of the nodes (at least 2)."""
    names = [n['name'] for n in fleet['nodes']]
    per_leaf = 16 if len(names) >= 64 else max(2, len(names) // 4)
    return dict((name, 'leaf-%02d' % (1 + i // per_leaf)) for i, name in enumerate(names))


def isolate(size, fleet, noop, sink):
    """The pair rounds after a failed fabric run, twice: one node made slow, then one leaf's uplinks."""
    sys.path.insert(0, os.path.join(ROOT, '.build', 'collections'))
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpucluster.bringup.plugins.module_utils import _hostlist  # pylint: disable=import-outside-toplevel
    names = [n['name'] for n in fleet['nodes']]
    rounds = len(_validation_nccl.pair_rounds(names))
    leaf_of = leaves(fleet)
    slow_node = names[size // 3]
    slow_leaf = leaf_of[names[size // 2]]
    members = [n for n in names if leaf_of[n] == slow_leaf]
    cases = [('node', 'node %s 0.5' % slow_node, slow_node),
             ('leaf', 'leaf %s %s 0.5' % (slow_leaf, _hostlist.compress(members)), 'leaf:' + slow_leaf)]
    result = {}
    for kind, rule, expected in cases:
        racks = sorted(set(n['rack'] for n in fleet['nodes']))
        for rack in racks:
            sh(['podman', 'exec', 'gcscale-rack-%d' % rack, 'sh', '-c', 'echo "%s" > /opt/nccl-tests-STANDIN/SLOW' % rule])
        try:
            pairs_plan = dict(plan(fleet, pairs_only=True), leaf_of=leaf_of)
            seconds, _out = playbook('validate', {'scale_nccl_plan': pairs_plan})
        finally:
            for rack in racks:
                sh(['podman', 'exec', 'gcscale-rack-%d' % rack, 'rm', '-f', '/opt/nccl-tests-STANDIN/SLOW'])
        with open(os.path.join(OUT, 'nccl-results.json')) as handle:
            records = json.load(handle)['records']
        named = sorted(set(r['node'] for r in records if r.get('check') == 'isolation' and r.get('status') == 'fail'))
        emit({'step': 'isolate_' + kind, 'size': size, 'slow': rule, 'expected': expected, 'named': named, 'rounds': rounds,
              'pair_jobs': sum(1 for r in records if r.get('check') == 'busbw' and '+' in r.get('node', '')),
              'wall_s': round(seconds - noop, 2)}, sink)
        result['isolate_%s_s' % kind] = round(seconds - noop, 2)
        result['isolate_%s_named' % kind] = ','.join(named) or '-'
        result['isolate_%s_ok' % kind] = named == [expected]
    result['rounds'] = rounds
    return result


COLUMNS = [('nodes', 'N'), ('conf_lines', 'slurm.conf lines'), ('node_lines', 'NodeName lines'), ('gres_lines', 'gres.conf lines'),
           ('gen_s', 'generation s'), ('idle_s', 'all idle s'), ('reconf_s', 'reconfigure s'), ('validate_own_s', 'validate s, a job per node'),
           ('validate_own_cpu', 'CPU s ctl (slurmctld) / racks'), ('validate_s', 'validate s, steps of one allocation per node type'),
           ('validate_cpu', 'CPU s ctl (slurmctld) / racks'),
           ('report_s', 'report s'), ('report_kb', 'report.html KiB'), ('resume_s', 'resume s'), ('resumed', 'resumed'),
           ('churn_drain_s', 'drain all s'), ('churn_resume_s', 'undrain all s'), ('rounds', 'pair rounds'),
           ('isolate_node_s', 'isolation s (slow node)'), ('isolate_node_named', 'named'),
           ('isolate_leaf_s', 'isolation s (slow leaf)'), ('isolate_leaf_named', 'named')]


def table(rows):
    lines = ['| ' + ' | '.join(title for _key, title in COLUMNS) + ' |', '|' + '---|' * len(COLUMNS)]
    for row in rows:
        lines.append('| ' + ' | '.join(str(row.get(key, '-')) for key, _title in COLUMNS) + ' |')
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--sizes', default='2,64,256,1024')
    parser.add_argument('--racks', type=int, default=0, help='rack containers (default: one per 512 nodes)')
    parser.add_argument('--isolate-max', type=int, default=256)
    parser.add_argument('--json', help='keep every measurement (JSON lines) in this file')
    parser.add_argument('--keep', action='store_true', help='leave the last cluster running')
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(',') if s.strip()]
    sink, rows = [], []
    try:
        for size in sizes:
            row = one_size(size, args.racks, args.isolate_max, sink)
            rows.append(row)
    finally:
        if args.json:
            with open(args.json, 'w') as handle:
                handle.write(''.join(json.dumps(r, sort_keys=True) + '\n' for r in sink))
        if not args.keep:
            sh(['bash', SCALE, 'down'], check=False)
    print()
    print(table(rows))
    if len(rows) >= 2 and {64, max(sizes)} <= set(sizes):
        for key, how in (('validate_own_s', 'a job per node'), ('validate_s', 'steps of one allocation per node type')):
            small = [r for r in rows if r['nodes'] == 64][0][key]
            large = [r for r in rows if r['nodes'] == max(sizes)][0][key]
            print('validate (%s) at %d nodes / at 64 nodes: %.2fx (%.1f s / %.1f s)' % (how, max(sizes), large / small, large, small))
    return 0


if __name__ == '__main__':
    sys.exit(main())
