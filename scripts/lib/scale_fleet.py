#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The emulated large cluster's fleet and Slurm configuration, made with the collection's own code.

    python3 scripts/lib/scale_fleet.py --nodes 1024 --racks 2 --out .build/scale

1. Node types (``TYPES``): each is a simulated GPU node (the project's NVML
   simulator, a preset with its MIG layout) and a ``slurmd -C`` line.  The
   REAL ``slurm_gres_facts`` module runs once per type, in its own Python,
   the real nvidia-ml-py over the simulated ``libnvidia-ml.so.1`` (as the
   unit tests run it): the type's ``Gres=`` value and gres.conf lines.
2. The fleet: N nodes ``gpu-0001`` ... in contiguous blocks of each type (a
   site buys racks of one model), spread over R rack containers, each node
   with its own address (``hosts``) as a real node has.
3. slurm.conf and gres.conf: the slurm role's own filters
   (``slurm_conf_lines``, ``slurm_gres_conf_lines`` with ``NodeName=``, as
   for configless Slurm) over the role's ``slurm_conf_defaults`` with the
   role's variables resolved for this cluster, plus the overrides the
   emulation needs (``EMULATION_OVERRIDES``, each with its reason).

Writes ``slurm.conf``, ``gres.conf``, ``hosts``, ``fleet.json`` (nodes,
types, device files, addresses) and ``generation.json`` (seconds and line
counts) into ``--out``.  docs/scale.md describes the design.
"""

from __future__ import absolute_import, division, print_function

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
NVMLSIM = os.path.join(ROOT, 'nvml_sim', 'bin', 'nvmlsim')

# name: (simulator preset, extra nvmlsim commands for the MIG layout, weight in 16ths of the fleet,
#        sockets, cores per socket, threads per core, RealMemory MB)
TYPES = [
    ('h100', 'h100-80gb-x8', [], 8, 2, 56, 2, 2000000),
    ('a100', 'a100-40gb-x8', [], 4, 2, 64, 2, 1000000),
    # seed 003 of ../shared/seeds: 4 x A100 80GB PCIe, GPUs 2 and 3 split into 7 x 1g.10gb each
    ('a100-mig', 'seed-003', [], 4, 2, 16, 2, 512000),
    # (no H200 type: the all_reduce_perf STAND-IN has no one-node H200 recording to print)
]

# Debian 13's Slurm, which the scale image installs (scripts/scale.sh)
SLURM_VERSION = '24.11.5'

# What the emulation changes in the role's slurm.conf, and why (docs/scale.md).
EMULATION_OVERRIDES = {
    # each emulated slurmd binds to its own node's address, all on port 6818 inside one rack
    # container (slurm.conf(5): "NoInAddrAny ... bind to the address of what the node resolves to")
    'CommunicationParameters': 'NoInAddrAny',
    # the rack container has 2 CPUs and a few GB: the node lines are taken as configured
    # (slurm.conf(5) SlurmdParameters=config_overrides), as big_sys.shtml recommends anyway
    'SlurmdParameters': 'config_overrides',
    # one spool, pid file and log per emulated node (%n: the node name)
    'SlurmdSpoolDir': '/var/spool/slurmd/%n',
    'SlurmdPidFile': '/run/slurmd/%n.pid',
    'SlurmdLogFile': '/var/log/slurm/slurmd-%n.log',
    # no cgroup hierarchy per emulated node in one container; no prolog/epilog hooks installed
    'ProctrackType': 'proctrack/linuxproc',
    'TaskPlugin': 'task/none',
    'JobAcctGatherType': 'jobacct_gather/none',
    'Prolog': None,
    'Epilog': None,
    # each job step learns its node's simulated GPUs (NVMLSIM_STATE), which a real node's
    # /var/lib/nvmlsim/state.json would give: the nodes of a rack share one file system
    'TaskProlog': '/etc/slurm/scale-task-prolog',
}


def fleet_counts(nodes):
    """How many nodes of each type: the weights' shares, the rounding remainder to the first types."""
    total = sum(t[3] for t in TYPES)
    counts = [nodes * t[3] // total for t in TYPES]
    left = nodes - sum(counts)
    i = 0
    while left > 0:
        counts[i % len(counts)] += 1
        left -= 1
        i += 1
    return counts


def node_address(index):
    """The address of node ``index`` (0-based) on the scale network 10.93.0.0/16: 10.93.4.1 onwards."""
    return '10.93.%d.%d' % (4 + index // 250, 1 + index % 250)


def _nvml_env():
    refs = sorted(glob.glob(os.path.join(ROOT, '.build', 'nvml-ref', 'nvidia-ml-py-*', 'pynvml.py')))
    lib = os.path.join(ROOT, '.build', 'libnvml', 'libnvidia-ml.so.1')
    if not refs or not os.path.isfile(lib):
        raise SystemExit('scale_fleet: the real nvidia-ml-py (.build/nvml-ref) or the simulated libnvidia-ml.so.1 '
                         '(.build/libnvml) is missing: run "bash scripts/test.sh deps unit" once (the unit tests build it)')
    link = os.path.join(COLLECTIONS, 'ansible_collections', 'gpucluster', 'bringup')
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    return {
        'LD_LIBRARY_PATH': os.path.dirname(lib),
        'PYTHONPATH': os.pathsep.join([COLLECTIONS, os.path.dirname(refs[-1])]),
        'NVMLSIM_PYTHONPATH': os.path.join(ROOT, 'nvml_sim', 'src'),
        'NVMLSIM_PYTHON': sys.executable,
    }


def type_facts(preset, layout, sockets, cores, threads, keep_state=None):
    """Run the real slurm_gres_facts module over a simulated node of ``preset``: its facts (its state kept in ``keep_state``)."""
    tmp = tempfile.mkdtemp(prefix='scale-type-')
    try:
        env = dict(os.environ, NVMLSIM_STATE=os.path.join(tmp, 'state.json'), NVMLSIM_ROOT=os.path.join(tmp, 'root'))
        env.update(_nvml_env())
        minors = os.path.join(tmp, 'mig-minors')
        for argv in [['create', '--preset', preset, '--mig-minors', minors]] + list(layout):
            subprocess.run([NVMLSIM] + argv, env=env, check=True, stdout=subprocess.DEVNULL)
        # sysfs CPU topology numbered as Linux does (first threads of all cores, then the siblings)
        per_thread = sockets * cores
        for cpu in range(per_thread * threads):
            directory = os.path.join(tmp, 'root', 'sys/devices/system/cpu/cpu%d/topology' % cpu)
            os.makedirs(directory)
            with open(os.path.join(directory, 'physical_package_id'), 'w') as handle:
                handle.write('%d\n' % ((cpu % per_thread) // cores))
            with open(os.path.join(directory, 'core_id'), 'w') as handle:
                handle.write('%d\n' % (cpu % cores))
        args = os.path.join(tmp, 'args.json')
        with open(args, 'w') as handle:
            json.dump({'ANSIBLE_MODULE_ARGS': {'device_root': os.path.join(tmp, 'root'), 'mig_minors_path': minors}}, handle)
        result = subprocess.run([sys.executable, os.path.join(ROOT, 'plugins', 'modules', 'slurm_gres_facts.py'), args],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        try:
            out = json.loads(result.stdout)
        except ValueError:
            raise SystemExit('scale_fleet: slurm_gres_facts on preset %s printed no JSON: %s %s' % (preset, result.stdout, result.stderr))
        if out.get('failed'):
            raise SystemExit('scale_fleet: slurm_gres_facts on preset %s failed: %s' % (preset, out.get('msg')))
        if keep_state:
            shutil.copyfile(os.path.join(tmp, 'state.json'), keep_state)
        return out['ansible_facts']['slurm_gres']
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def role_settings(controller, cluster_name='scale'):
    """The slurm role's slurm_conf_defaults with the role's variables resolved for this cluster (Debian paths)."""
    import yaml  # pylint: disable=import-outside-toplevel  # (the virtualenv's PyYAML: Ansible's own dependency)
    with open(os.path.join(ROOT, 'roles', 'slurm', 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)['slurm_conf_defaults']
    resolved = {
        'ClusterName': cluster_name,
        'SlurmctldHost': controller,
        'SlurmUser': 'slurm',
        'StateSaveLocation': '/var/lib/slurm/slurmctld',
        'SlurmdSpoolDir': '/var/lib/slurm/slurmd',
        'SlurmctldLogFile': '/var/log/slurm/slurmctld.log',
        'SlurmdLogFile': '/var/log/slurm/slurmd.log',
        'SlurmctldParameters': None,
        'TopologyPlugin': None,
        'PrologFlags': 'Alloc',
        'Prolog': '/etc/slurm/hooks/prolog',
        'Epilog': '/etc/slurm/hooks/epilog',
        'TaskProlog': None,
        'ProctrackType': 'proctrack/cgroup',
        'TaskPlugin': 'task/cgroup,task/affinity',
        'JobAcctGatherType': 'jobacct_gather/cgroup',
    }
    settings = {}
    for key, value in defaults.items():
        if isinstance(value, str) and '{{' in value:
            if key not in resolved:
                raise SystemExit('scale_fleet: the slurm role has a new templated default %s=%s: resolve it in role_settings()' % (key, value))
            value = resolved[key]
        if value is not None:
            settings[key] = value
    return settings


def generate(nodes, racks, controller='scale-ctl', overrides=None, state_dir=None):
    """The fleet (list of node dicts) and the two files' lines, with the seconds the role's filters took."""
    sys.path.insert(0, COLLECTIONS)
    from ansible_collections.gpucluster.bringup.plugins.filter import slurm as slurm_filters  # pylint: disable=import-outside-toplevel
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_conf  # pylint: disable=import-outside-toplevel
    started = time.monotonic()
    types = {}
    for name, preset, layout, _weight, sockets, cores, threads, memory in TYPES:
        facts = type_facts(preset, layout, sockets, cores, threads,
                           os.path.join(state_dir, name + '.json') if state_dir else None)
        cpus = sockets * cores * threads
        types[name] = {
            'preset': preset,
            'hardware': {'CPUs': cpus, 'Boards': 1, 'SocketsPerBoard': sockets, 'CoresPerSocket': cores,
                         'ThreadsPerCore': threads, 'RealMemory': memory},
            'gres': facts['node_gres'],
            'gres_conf_lines': facts['gres_conf_lines'],
            'gpus': sum(1 for e in facts['entries'] if e.get('mig') is None),
            'files': sorted({f for e in facts['entries'] for f in e.get('files') or []}),
        }
    facts_seconds = time.monotonic() - started
    fleet = []
    index = 0
    for (name, _preset, _layout, _weight, _s, _c, _t, _m), count in zip(TYPES, fleet_counts(nodes)):
        for _ in range(count):
            fleet.append({'name': 'gpu-%04d' % (index + 1), 'type': name, 'address': node_address(index),
                          'rack': 1 + index * racks // nodes})
            index += 1
    entries = [{'name': n['name'], 'hardware': types[n['type']]['hardware'], 'gres': types[n['type']]['gres'],
                'gres_conf_lines': types[n['type']]['gres_conf_lines']} for n in fleet]
    settings = role_settings(controller)
    all_overrides = dict(EMULATION_OVERRIDES)
    all_overrides.update(overrides or {})
    started = time.monotonic()
    # the slurm role's large-cluster keys (roles/slurm/vars/main.yml _slurm_large), for the Slurm the scale image has
    large = slurm_filters.slurm_large_system(len(entries), SLURM_VERSION)
    conf_lines = slurm_filters.slurm_conf_lines(entries, settings, all_overrides,
                                                [{'name': 'gpu', 'nodes': 'ALL', 'default': True}],
                                                contributions=[large['slurm_conf']])
    gres_lines = _slurm_conf.gres_conf_file_lines(entries, node_names=True)
    conf_seconds = time.monotonic() - started
    return fleet, types, conf_lines, gres_lines, {'facts_seconds': round(facts_seconds, 3), 'conf_seconds': round(conf_seconds, 4),
                                                  'large_system': large['slurm_conf']}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--nodes', type=int, required=True)
    parser.add_argument('--racks', type=int, default=1)
    parser.add_argument('--controller', default='scale-ctl')
    parser.add_argument('--controller-address', default='10.93.0.10')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE', help='a slurm.conf override (as slurm_conf_overrides)')
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    if args.nodes < 2 or args.nodes > 60000:
        parser.error('--nodes %d: give 2 to 60000 nodes' % args.nodes)
    if args.racks < 1 or args.racks > args.nodes:
        parser.error('--racks %d: give 1 to --nodes racks' % args.racks)
    overrides = {}
    for item in args.set:
        if '=' not in item:
            parser.error('--set %s: give KEY=VALUE' % item)
        key, value = item.split('=', 1)
        overrides[key] = value or None
    os.makedirs(os.path.join(args.out, 'nvmlsim'), exist_ok=True)
    fleet, types, conf_lines, gres_lines, seconds = generate(args.nodes, args.racks, args.controller, overrides,
                                                             os.path.join(args.out, 'nvmlsim'))
    header = '# Managed by gpucluster.bringup.slurm; local changes are overwritten.\n'
    with open(os.path.join(args.out, 'slurm.conf'), 'w') as handle:
        handle.write(header + ''.join(line + '\n' for line in conf_lines))
    with open(os.path.join(args.out, 'gres.conf'), 'w') as handle:
        handle.write(header + ''.join(line + '\n' for line in gres_lines))
    with open(os.path.join(args.out, 'hosts'), 'w') as handle:
        handle.write('%s %s\n' % (args.controller_address, args.controller))
        handle.write(''.join('%s %s\n' % (n['address'], n['name']) for n in fleet))
    with open(os.path.join(args.out, 'node-types'), 'w') as handle:
        handle.write(''.join('%s %s\n' % (n['name'], n['type']) for n in fleet))
    with open(os.path.join(args.out, 'fleet.json'), 'w') as handle:
        json.dump({'nodes': fleet, 'types': types, 'racks': args.racks, 'controller': args.controller}, handle, indent=1)
    summary = dict(seconds, nodes=args.nodes, slurm_conf_lines=len(conf_lines) + 1,
                   slurm_conf_node_lines=sum(1 for line in conf_lines if line.startswith('NodeName=')),
                   gres_conf_lines=len(gres_lines) + 1)
    with open(os.path.join(args.out, 'generation.json'), 'w') as handle:
        json.dump(summary, handle)
    print(json.dumps(summary))
    return 0


if __name__ == '__main__':
    sys.exit(main())
