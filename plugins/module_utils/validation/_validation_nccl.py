# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NCCL stage of the validation playbook: which runs to launch and how each one is gated (pure logic).

Runs: one per GPU node (all GPUs of the node in one process, ``-g N``: the NVLink figure; all nodes at
once), one across all nodes (one task per GPU, ``-g 1``: the fabric figure) and, optionally, node pairs
in rounds of disjoint pairs (to find a slow node or link). Gating is ``_nccl.evaluate``: a topology's gate curve
(size -> lowest busbw; the multi-node ``ib-*`` curves per NIC, their sizes stretched for runs over more than two
nodes) or a flat threshold. A run over exactly two nodes (a two-node fabric run, every pair run) is given
``NCCL_ALGO=Ring`` (``ring_env``): on two nodes NCCL's Tree and NVLS-Tree reduce inside each node first, so their
busbw can exceed what the NICs carry (sjeaugey, https://github.com/NVIDIA/nccl-tests/issues/196); where the
environment sets ``NCCL_ALGO`` itself, that is kept and the run's busbw check says so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import busbw_platform
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    require_bool, require_choice, require_int, require_list, require_match, require_str, require_word, slurm_name)
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _busbw
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _nccl
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (
    NcclParseError, busbw_series, evaluate, gate_curve, gate_info, parse_run, threshold_for, writes_json)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import (
    check_run_settings, command_words, is_false, slurm_names)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import check_records

STAGE = 'nccl'
COLLECTIVE = 'all_reduce_perf'
# The catalogue's busbw platform (catalogue._gpus.busbw_platform) -> the legacy topology key a site may have set a
# threshold or curve under (validate_nccl_settings.thresholds / validate_nccl_settings.gate_curves); the built-in curves are the platform's own.
_PLATFORM_TOPOLOGY = {'a100-nvswitch': 'a100-nvlink-8', 'h100-nvswitch': 'h100-nvlink-8', 'h200-nvswitch': 'h200-nvlink-8',
                      'a100-pcie': 'a100-pcie', 'h100-pcie': 'h100-pcie', 'l40s-pcie': 'l40s-pcie'}
DEFAULT_ARGS = ['-b', '8', '-e', '8G', '-f', '2']
_SAFE_ENV_KEY = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
RING_NODES = 2
# A fabric group's name (validate_nccl_multinode.group, or made from the GPU model): it goes into record names (fabric:<group>)
FABRIC_GROUP = r'[A-Za-z0-9][A-Za-z0-9_.+-]*'


def node_topology(model, gpus):
    """Topology key for a node of ``gpus`` GPUs named ``model`` (NVML name), or None when no default fits."""
    return _PLATFORM_TOPOLOGY.get(busbw_platform(model, gpus))


def model_group(model):
    """The fabric group of a node by its GPU model (NVML name): ``NVIDIA H100 80GB HBM3`` -> ``h100-80gb-hbm3``;
    ``unknown`` without one."""
    name = str(model or '').strip()
    if name.upper().startswith('NVIDIA '):
        name = name[len('NVIDIA '):]
    name = re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')
    return name or 'unknown'


def fabric_groups(nodes):
    """``[(group, [node, ...])]``: the nodes (plan nodes) by node type, in the order first met. A node's type is its
    ``fabric_group`` (validate_nccl_multinode.group) where set, else its GPU model (``model_group``): nodes of different
    GPU models never share a multi-node run or its gate."""
    groups, order = {}, []
    for node in nodes:
        group = node.get('fabric_group') or model_group(node.get('model'))
        if group not in groups:
            groups[group] = []
            order.append(group)
        groups[group].append(node)
    return [(group, groups[group]) for group in order]


GROUP_GATE_KEYS = (('fabric_topology', 'validate_nccl_multinode.topology'), ('fabric_min_busbw_gbps', 'validate_nccl_multinode.min_busbw_gbps'),
                   ('fabric_nics', 'validate_nccl_multinode.nics'))


def group_gate(group, members, plan):
    """``{fabric_topology, fabric_min_busbw_gbps, fabric_nics}`` of a fabric group: its nodes' own (set per host or group),
    else the plan's. Nodes of one group that give different values are refused, naming both nodes and the variable."""
    gate = {}
    for key, variable in GROUP_GATE_KEYS:
        given = [(n['name'], n.get(key)) for n in members if n.get(key) not in (None, '')]
        values = []
        for name, value in given:
            if value not in [v for dummy, v in values]:
                values.append((name, value))
        if len(values) > 1:
            raise ValueError('fabric group %s: %s is %r on %s but %r on %s; expected one value for the nodes of one group (set it in '
                             'the group_vars of the node type, or put the nodes in different groups with validate_nccl_multinode.group)'
                             % (group, variable, values[0][1], values[0][0], values[1][1], values[1][0]))
        gate[key] = values[0][1] if values else plan.get(key)
    return gate


def pair_rounds(nodes):
    """Rounds of disjoint node pairs covering every neighbour pair of the ring ``nodes`` (one node in two pairs).

    ``[a, b, c, d]`` -> ``[[(a, b), (c, d)], [(b, c), (d, a)]]``; with an odd count a third round holds the leftover pair.
    """
    nodes = list(nodes)
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [[(nodes[0], nodes[1])]]
    pairs = [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]
    rounds = []
    for pair in pairs:
        for current in rounds:
            busy = set(n for p in current for n in p)
            if pair[0] not in busy and pair[1] not in busy:
                current.append(pair)
                break
        else:
            rounds.append([pair])
    return rounds


def ring_env(env, nodes):
    """``(env, note)`` of a run over ``nodes`` nodes: for exactly two nodes ``NCCL_ALGO=Ring`` is added to ``env`` (a copy)
    unless ``env`` sets ``NCCL_ALGO`` itself; then ``env`` is kept and, unless it asks for Ring, ``note`` says that the
    run's busbw may exceed what the NICs carry. ``note`` is None otherwise; other node counts keep ``env`` as it is."""
    env = dict(env or {})
    if nodes != RING_NODES:
        return env, None
    algo = str(env.get('NCCL_ALGO') if env.get('NCCL_ALGO') is not None else '').strip()
    if not algo:
        env['NCCL_ALGO'] = 'Ring'
        return env, None
    if algo.lower() == 'ring':
        return env, None
    return env, ('NCCL_ALGO=%s from the run environment (validate_nccl_settings.env) kept on this 2-node run: its busbw may exceed what the NICs '
                 'carry (only NCCL_ALGO=Ring measures the network on two nodes, NVIDIA/nccl-tests#196)' % algo)


def _env_args(env):
    for key in sorted(env or {}):
        if not _SAFE_ENV_KEY.match(key):
            raise ValueError('environment variable name %r is not valid (letters, digits and _)' % (key,))
    return ','.join(['ALL'] + ['%s=%s' % (key, env[key]) for key in sorted(env or {})])


# The -J report of a run comes back on the run's stdout: all_reduce_perf runs under ``sh -c JSON_SCRIPT`` on the node,
# writes the report into a directory of its own (nccl-tests opens the file with "wx", so it must not exist, and writes
# JSON only to a path ending in ".json"), and the script prints it between two marker lines once the binary has exited,
# keeping its exit status. Only rank 0 of an MPI run writes the file; the other tasks print no report.
JSON_BEGIN = '# gpucluster: the nccl-tests -J report follows'
JSON_END = '# gpucluster: end of the nccl-tests -J report'
JSON_SCRIPT = ('d=$(mktemp -d "${TMPDIR:-/tmp}/gpucluster-nccl.XXXXXX") || exit 127; "$0" "$@" -J "$d/nccl.json"; rc=$?; '
               'if [ -s "$d/nccl.json" ]; then printf "%%s\\n" "%s"; cat "$d/nccl.json"; printf "\\n%%s\\n" "%s"; fi; '
               'rm -rf "$d"; exit $rc' % (JSON_BEGIN, JSON_END))
_MARK_LABEL = re.compile(r'^(?:\s*\d+: ?|\[\d+,\d+\]<std(?:out|err)>: ?)')


def split_json_report(stdout):
    """``{stdout, json, json_reports}`` of a run made with ``JSON_SCRIPT``: the text report without the JSON, the first
    JSON report (its lines joined: srun --label may cut a long line, the writer itself writes none) and how many there
    were (more than one: tasks that did not form one MPI job). A report whose end marker is missing (the run was killed
    while printing it) is kept as far as it goes; ``json`` is None where there is none."""
    text, reports, current = [], [], None
    for line in (stdout or '').splitlines(True):
        match = _MARK_LABEL.match(line)
        body = line[match.end():] if match else line
        if body.strip() == JSON_BEGIN:
            current = []
            reports.append(current)
        elif body.strip() == JSON_END and current is not None:
            current = None
        elif current is not None:
            current.append(body.rstrip('\r\n'))
        else:
            text.append(line)
    return {'stdout': ''.join(text), 'json': ''.join(reports[0]) if reports else None, 'json_reports': len(reports)}


def wants_json(plan):
    """Whether the plan's runs ask all_reduce_perf for its -J JSON report: the plan's ``json`` (true or false) where given, else
    when ``tests_version`` (the nccl-tests version the role built) writes one (``_nccl.writes_json``); an unknown version
    (a binary the role did not build) is read as text, which every version prints."""
    if plan.get('json') is not None:
        return require_bool('json', plan['json'])
    return writes_json(plan.get('tests_version'))


def srun_argv(binary, nodes, gpus_per_node, per_gpu_tasks, mpi, env, args=None, srun='srun', extra=None, time_limit='10', gres_type=None,
              exclusive=True, json=False):
    """argv of one ``all_reduce_perf`` run through srun.

    ``per_gpu_tasks`` False: one task per node driving its ``gpus_per_node`` GPUs (``-g N``);
    True: one task per GPU (``-g 1``), wired with ``--mpi=<mpi>``. ``gres_type``: ask for whole GPUs of that
    GRES type (``--gres=gpu:h100:8``), so that a node with MIG instances is not given one (NCCL does not run
    across MIG instances). ``exclusive``: ``--exclusive`` (no other job on the nodes while it runs).

    What comes from the inventory goes where srun cannot read it as an option of its own: node names, GRES type
    and MPI plugin inside ``--option=value`` words and checked as names (a "," would change the node list); the
    program ``binary`` one word not starting with "-" (srun reads every word before its program as an option).
    ``extra`` (``validate_nccl_settings.srun_args``) are srun options on purpose and ``args`` all_reduce_perf's own: both
    are passed as given. ``json``: the binary runs under ``sh -c JSON_SCRIPT``, which adds ``-J`` and prints the
    report after the text (``split_json_report`` takes it apart).
    """
    if not nodes:
        raise ValueError('an NCCL run needs at least one node')
    slurm_names('nodes', list(nodes))
    require_word('binary', binary, 'the path of all_reduce_perf on the nodes (one word: no spaces, not starting with "-")')
    require_word('srun', srun, 'the srun command or its path (one word: no spaces, not starting with "-")')
    if gres_type:
        slurm_name('gres_type', gres_type, 'a GRES type such as h100')
    if mpi:
        check_mpi(mpi)
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise ValueError('gpus_per_node is %r, expected a whole number of at least 1' % (gpus_per_node,))
    argv = [srun, '--nodes=%d' % len(nodes), '--nodelist=%s' % ','.join(nodes), '--gres=gpu:%s%d' % ('%s:' % gres_type if gres_type else '', gpus_per_node),
            '--time=%s' % time_limit, '--export=%s' % _env_args(env), '--label']
    if exclusive:
        argv.insert(4, '--exclusive')
    if per_gpu_tasks:
        argv += ['--ntasks-per-node=%d' % gpus_per_node]
        if mpi:
            argv += ['--mpi=%s' % mpi]
    else:
        argv += ['--ntasks-per-node=1']
    argv += list(extra or [])
    if json:
        argv += ['sh', '-c', JSON_SCRIPT]
    argv += [binary] + list(args if args is not None else DEFAULT_ARGS) + ['-g', '1' if per_gpu_tasks else str(gpus_per_node)]
    return argv


MPI_TYPE = r'\{mpi\}|[a-z][a-z0-9_]*'


def check_mpi(value, name='mpi'):
    """The ``--mpi=`` value of the multi-node runs: a Slurm MPI plugin type (pmix, pmi2, none, ...) or ``{mpi}``."""
    return require_match(name, value, MPI_TYPE, 'a Slurm MPI plugin type such as pmix, pmi2 or none, or {mpi} (the module picks one)')


# What CUDA's own messages (cudaGetErrorString, in nccl-tests' "Test CUDA failure" lines) say about the node, first match wins
CUDA_HINTS = (
    ('CUDA driver version is insufficient for CUDA runtime version',
     'no usable NVIDIA driver on the node: libcuda.so.1 is missing, or older than the CUDA runtime nccl-tests was built with'),
    ('system has unsupported display driver / cuda driver combination',
     "the NVIDIA kernel module and the driver's libcuda.so.1 are of different versions (a driver upgrade without a reboot?)"),
    ('no CUDA-capable device is detected', 'the driver sees no GPU in the job (none given to it, or the GPUs are gone)'),
    ('busy or unavailable', 'the GPUs are held by another process or set to an exclusive compute mode'),
)
_STOPPED = re.compile(r'\bTest (?:CUDA|NCCL) failure\b')


def stopped_reason(parsed, rc):
    """The reason of a run that stopped on a CUDA or NCCL error before its first result (no row: nothing was measured),
    naming CUDA's or NCCL's message and what it says about the node; None for any other run."""
    if parsed['rows']:
        return None
    failures = [error for error in parsed['errors'] if _STOPPED.search(error)]
    if not failures:
        return None
    more = len(parsed['errors']) - 1
    hint = [text for needle, text in CUDA_HINTS if needle in failures[0]]
    return 'all_reduce_perf stopped before its first result (rc %s): %s%s%s; no bandwidth was measured' % (
        rc, failures[0], ' (and %d more)' % more if more else '', ': ' + hint[0] if hint else '')


def evaluate_run(name, result, hosts, expect, check='all_reduce'):
    """Records and plot series of one finished run (``result``: {rc, stdout, stderr, timed_out, timeout}).

    A run that printed nccl-tests output is gated by ``_nccl.evaluate`` (``#wrong``, busbw at the largest sizes,
    transport) whatever its exit code, a part of one too (its head or tail cut off: the ``complete`` check fails
    and says what is missing); a run that printed none fails with the error it gave; a run that stopped on a CUDA or
    NCCL error before its first result fails one record naming that error (``stopped_reason``).
    """
    stdout = result.get('stdout') or ''
    parsed, parse_error = None, None
    if stdout.strip() or (result.get('json') or '').strip():
        try:
            parsed = parse_run(stdout, result.get('json'))
        except NcclParseError as exc:
            parse_error = str(exc)
    if parsed is None or (not parsed['rows'] and not parsed['ranks'] and not parsed['params'] and parsed['avg_busbw'] is None
                          and parsed['out_of_bounds'] is None):
        text = ' '.join(((result.get('stderr') or '') + ' ' + stdout).split())
        if result.get('timed_out'):
            reason = 'all_reduce_perf timed out after %ss' % result.get('timeout')
        elif parse_error and not stdout.strip():
            reason = "all_reduce_perf's -J JSON report cannot be read and it printed no text report (%s); rc %s: %s" % (
                parse_error, result.get('rc'), text[-240:] or 'no output')
        elif parse_error:
            reason = 'all_reduce_perf output is not nccl-tests output (%s); rc %s: %s' % (parse_error, result.get('rc'), text[-240:])
        else:
            reason = 'all_reduce_perf printed no results (rc %s): %s' % (result.get('rc'), text[-240:] or 'no output')
        return [{'stage': STAGE, 'node': name, 'check': check, 'status': 'fail', 'reason': reason, 'hosts': list(hosts)}], []
    if parsed['collective'] not in (None, COLLECTIVE):
        source = 'its -J JSON report (args %s)' % parsed['collective'] if parsed['format'] == 'json' else "its '# Collective test' line"
        return [{'stage': STAGE, 'node': name, 'check': check, 'status': 'fail', 'hosts': list(hosts),
                 'reason': 'the output is of %s, not %s (%s): is the binary path (validate_nccl_settings.tests_path) right? Its figures are not '
                           'gated' % (parsed['collective'], COLLECTIVE, source)}], []
    stopped = stopped_reason(parsed, result.get('rc'))
    if stopped:
        return [{'stage': STAGE, 'node': name, 'check': check, 'status': 'fail', 'reason': stopped, 'hosts': list(hosts)}], []
    checks = evaluate(parsed, expect)
    if result.get('rc') not in (0, None) and not any(c['status'] == 'fail' for c in checks):
        checks.append({'check': 'exit', 'status': 'fail', 'reason': 'all_reduce_perf exited with rc %s' % result.get('rc')})
    records = with_curve(check_records(STAGE, name, checks, hosts=list(hosts)), expect)
    series = busbw_series(parsed)
    return records, ([{'label': name, 'points': series, 'gate': gate_curve(expect)}] if series else [])


NO_CURVE = 'none'


def run_curve(expect):
    """``{id, source}`` of the gate curve (or flat threshold) that judges a run with ``expect``; ``id`` ``none`` where its busbw
    is not gated, and ``source`` says so."""
    info = gate_info(expect)
    if info is None:
        return {'id': NO_CURVE, 'source': 'not gated: no built-in curve for this run (GPU model, GPU count, nodes or network unknown to the '
                                          'catalogue) and no site setting (validate_nccl_node.topology, validate_nccl_settings.gate_curves, '
                                          'validate_nccl_node.min_busbw_gbps, validate_nccl_multinode.topology)'}
    return info


def with_curve(records, expect):
    """``records`` of one run, each naming the curve that judged the run (``curve``: ``run_curve``)."""
    curve = run_curve(expect)
    for record in records:
        record['curve'] = dict(curve)
    return records


def version_records(records):
    """A failed record naming the nodes of each nccl-tests (or NCCL) version when the NCCL runs' ``records`` (their
    ``versions``, see ``_validation_jobs.with_run_facts``) name more than one: nodes running different builds are not
    measured alike, whatever their figures. ``[]`` when they agree or say nothing."""
    out = []
    for key, what in (('nccl_tests', 'nccl-tests'), ('nccl', 'NCCL')):
        nodes = {}
        for rec in records:
            version = (rec.get('versions') or {}).get(key)
            if version and rec.get('stage') == STAGE:
                for host in rec.get('hosts') or [rec.get('node')]:
                    nodes.setdefault(version, [])
                    if host not in nodes[version]:
                        nodes[version].append(host)
        if len(nodes) > 1:
            ordered = sorted(nodes, key=lambda version: (-len(nodes[version]), version))
            hosts = sorted(set(h for names in nodes.values() for h in names))
            out.append({'stage': STAGE, 'node': 'cluster', 'check': '%s_version' % key, 'status': 'fail', 'hosts': hosts,
                        'reason': 'the NCCL runs report %d %s versions: %s; every node should run the same build (validate_nccl_build.enabled '
                                  'builds the pinned one)' % (len(nodes), what, '; '.join(
                                      '%s on %s' % (version, compress(nodes[version])) for version in ordered))})
    return out


def skip_record(name, reason, hosts=None):
    item = {'stage': STAGE, 'node': name, 'check': 'all_reduce', 'status': 'skip', 'reason': reason}
    if hosts:
        item['hosts'] = list(hosts)
    return item


def expect_for(topology=None, min_busbw_gbps=None, thresholds=None, nics=1, expect_transport=None, large_size_bytes=None, gate_curves=None,
               nodes=1, notes=None, platform=None, gpus=None, algorithm=None):
    """An ``_nccl.evaluate`` expectation; raises ``ValueError`` (from ``_nccl``) for an unknown topology or platform, a bad
    number or a bad gate curve. ``gate_curves``, ``nodes`` (of a multi-node run), ``notes``, ``platform`` (the catalogue's
    busbw platform of the run's nodes), ``gpus`` (GPUs a node) and ``algorithm`` (``_busbw.algorithm_of`` of the run's
    NCCL_ALGO) are in it only when given (``gpus`` and ``algorithm`` only with a platform): without ``topology`` the catalogue
    picks the curve from them."""
    expect = {'topology': topology, 'min_busbw_gbps': min_busbw_gbps, 'thresholds': thresholds or {}, 'nics': nics,
              'expect_transport': expect_transport}
    if large_size_bytes:
        expect['large_size_bytes'] = large_size_bytes
    if gate_curves:
        expect['gate_curves'] = gate_curves
    if nodes != 1:
        expect['nodes'] = nodes
    if notes:
        expect['notes'] = list(notes)
    if platform is not None:  # (gpus and algorithm choose among a platform's curves; without one they choose nothing)
        for key, value in (('platform', platform), ('gpus', gpus), ('algorithm', algorithm)):
            if value is not None:
                expect[key] = value
    threshold_for(expect)
    return expect


def known_topologies(thresholds=None, gate_curves=None):
    return _nccl.known_topologies(thresholds, gate_curves)


def node_platform(model, gpus, topology=None):
    """The busbw platform (``_busbw.PLATFORMS``) of a node: that of its gate key where it names one, else the GPU
    catalogue's platform of its GPU model and count (``catalogue._gpus.busbw_platform``); None when unknown."""
    platform = _busbw.platform_of(topology) if topology else None
    return platform or busbw_platform(model, gpus)


def node_gate(node, plan, gpus, env):
    """``expect_for`` arguments of a node's own run: its ``topology`` (the node's, else the plan's ``node_topology``; else the
    key derived from its GPU model where the site set a threshold or curve under it), ``platform``, ``gpus`` and the
    ``algorithm`` of the run's NCCL_ALGO (``env``): without a topology the catalogue picks the curve from those."""
    thresholds = plan.get('thresholds') or {}
    curves = plan.get('gate_curves') or {}
    explicit = node.get('topology') or plan.get('node_topology')
    derived = node_topology(node.get('model'), gpus)
    topology = explicit or (derived if derived in thresholds or derived in curves else None)
    minimum = node.get('min_busbw_gbps') if node.get('min_busbw_gbps') is not None else plan.get('node_min_busbw_gbps')
    return dict(topology=topology, min_busbw_gbps=minimum, thresholds=thresholds, gate_curves=curves,
                platform=node_platform(node.get('model'), gpus, explicit), gpus=gpus, algorithm=_busbw.algorithm_of((env or {}).get('NCCL_ALGO')))


def group_platform(members):
    """The busbw platform shared by the nodes of a fabric group (``node_platform``), None when they differ or are unknown."""
    platforms = set(node_platform(n.get('model'), n.get('gpus'), n.get('topology')) for n in members)
    return platforms.pop() if len(platforms) == 1 else None


def multi_node_run(env, names, gate):
    """``(expect, env)`` of a run over the nodes ``names``: the expectation of ``gate`` (``expect_for``'s arguments) with the
    run's node count and the algorithm of its environment, and ``env`` as ``ring_env`` makes it (an ``NCCL_ALGO`` it keeps on
    two nodes is noted in the expectation)."""
    run_env, note = ring_env(env, len(names))
    gate = dict(gate, algorithm=_busbw.algorithm_of(run_env.get('NCCL_ALGO')))
    return expect_for(nodes=len(names), notes=[note] if note else None, **gate), run_env


PLAN_KEYS = ('binary', 'nodes', 'env', 'args', 'timeout', 'time_limit', 'srun', 'srun_extra', 'node_topology', 'node_min_busbw_gbps', 'fabric',
             'fabric_topology', 'fabric_nics', 'fabric_min_busbw_gbps', 'expect_transport', 'thresholds', 'pairwise', 'mpi', 'pairs_only',
             'leaf_of', 'gate_curves', 'dispatch', 'dispatch_min_nodes', 'allocation_wait', 'salloc', 'scancel', 'pairs_groups', 'json',
             'tests_version')

# How the per-node runs reach Slurm (``dispatch``): ``per_node`` one job each (one allocation per node: slurmctld
# allocates jobs one at a time, and at 1,024 nodes at once its allocations took 0.3-2.3 s each, docs/scale.md);
# ``allocation`` one allocation per node type (salloc --no-shell) and each node's run a step of it; ``auto`` the
# allocation from ``dispatch_min_nodes`` per-node runs on.
DISPATCH = ('auto', 'per_node', 'allocation')
DISPATCH_MIN_NODES = 64
ALLOCATION_WAIT = 60
# srun options that salloc refuses or that act on a step only: they stay on the steps. Options that act on the job
# (--reservation, --partition, --account, --qos, ...) go on the allocation too; srun ignores them for a step of it.
STEP_ONLY_OPTIONS = ('--container-', '--cpu-bind', '--mpi', '--label', '-l', '--kill-on-bad-exit', '-K', '--multi-prog', '--unbuffered',
                     '-u', '--accel-bind', '--overlap', '--exact', '--task-prolog', '--task-epilog', '--prolog', '--epilog', '--export')


def dispatch_settings(plan):
    """``(dispatch, dispatch_min_nodes, allocation_wait)`` of a plan, checked (and ``salloc``, ``scancel``)."""
    dispatch = require_choice('dispatch', plan.get('dispatch') or 'auto', DISPATCH)
    minimum = require_int('dispatch_min_nodes', DISPATCH_MIN_NODES if plan.get('dispatch_min_nodes') in (None, '') else plan['dispatch_min_nodes'],
                          minimum=1)
    wait = require_int('allocation_wait', ALLOCATION_WAIT if plan.get('allocation_wait') in (None, '') else plan['allocation_wait'],
                       minimum=1, unit='seconds')
    for key in ('salloc', 'scancel'):
        require_str(key, plan.get(key), allow_none=True)
    return dispatch, minimum, wait


def option_groups(options):
    """srun options as groups: an option and the words after it that are not options (``--reservation x``)."""
    groups = []
    for item in options:
        if item.startswith('-') or not groups:
            groups.append([item])
        else:
            groups[-1].append(item)
    return groups


def allocation_options(options):
    """The options of ``options`` (srun's) that also go on the allocation: all but ``STEP_ONLY_OPTIONS``."""
    kept = []
    for group in option_groups(options):
        name = group[0].split('=', 1)[0]
        short = name[:2] if not name.startswith('--') else name
        if any(name == only or short == only or (only.endswith('-') and name.startswith(only)) for only in STEP_ONLY_OPTIONS):
            continue
        kept.extend(group)
    return kept


def sibling_command(srun, command):
    """``command`` (salloc, scancel) next to ``srun``: its directory when srun is given as a path."""
    return srun[:srun.rindex('/') + 1] + command if '/' in srun else command


def allocation_dispatch(jobs, specs, plan, extra, time_limit, wait):
    """The per-node runs ``jobs`` as steps of one allocation per node type (``specs``: job name -> (gres_type, gpus)).

    Each job keeps its own job's argv as ``own_argv`` (run so when the allocation is not granted, and the command
    that reruns it); ``argv`` becomes the step (``srun --jobid={jobid}``); ``allocation`` is the allocation's
    ``{name, argv, release, idle}`` (``salloc --no-shell``: it returns once the nodes are the job's; ``scancel``;
    ``sinfo`` listing the group's idle nodes). ``--no-kill``: a node that fails does not end the others' steps;
    ``--immediate``: a group that cannot have all its nodes within ``allocation_wait`` seconds is allocated again
    without the nodes that are not idle (``narrowed``), and those run as jobs of their own: a busy node holds up
    only its own run.
    """
    srun = plan.get('srun') or 'srun'
    salloc = plan.get('salloc') or sibling_command(srun, 'salloc')
    scancel = plan.get('scancel') or sibling_command(srun, 'scancel')
    sinfo = sibling_command(srun, 'sinfo')
    groups = {}  # (gres_type, gpus) -> jobs, in the order the nodes came
    for job in jobs:
        groups.setdefault(specs[job['name']], []).append(job)
    for (gres_type, gpus), members in groups.items():
        names = [job['name'] for job in members]
        gres = 'gpu:%s%d' % ('%s:' % gres_type if gres_type else '', gpus)
        allocation = {'name': '%s on %d node%s' % (gres, len(names), '' if len(names) == 1 else 's'),
                      'argv': [salloc, '--no-shell', '--immediate=%d' % wait, '--no-kill', '--nodes=%d' % len(names),
                               '--nodelist=%s' % compress(names), '--exclusive', '--gres=%s' % gres, '--time=%s' % time_limit,
                               '--job-name=gpucluster-validate-nccl'] + allocation_options(extra),
                      'release': [scancel], 'timeout': wait + 60, 'gres': gres,
                      'idle': [sinfo, '-h', '-N', '-t', 'idle', '-o', '%N', '-n', compress(names)]}
        for job in members:
            job['own_argv'] = job['argv']
            step = [arg for arg in job['argv'] if arg != '--exclusive']
            job['argv'] = step[:1] + ['--jobid={jobid}'] + step[1:]
            job['allocation'] = allocation
    return jobs


def narrowed_argv(argv, names):
    """An allocation's ``salloc`` argv (``--nodes=``, ``--nodelist=``) for the nodes ``names`` of it only (also the closed
    loop's deep allocations, ``health._loop_deep``)."""
    out = []
    for arg in argv:
        if arg.startswith('--nodes='):
            arg = '--nodes=%d' % len(names)
        elif arg.startswith('--nodelist='):
            arg = '--nodelist=%s' % compress(names)
        out.append(arg)
    return out


def narrowed(allocation, names):
    """``allocation`` (``allocation_dispatch``'s) for the nodes ``names`` of it only."""
    return dict(allocation, argv=narrowed_argv(allocation['argv'], names),
                name='%s on %d idle node%s' % (allocation['gres'], len(names), '' if len(names) == 1 else 's'))


def _count(value, name):
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise ValueError('node %s: gpus is %r, expected a whole number' % (name, value))


def run_settings(plan):
    """``(env, args, srun_extra, srun, timeout, time_limit)`` of every run of the plan, its defaults filled in."""
    return (plan.get('env') or {}, plan.get('args'), plan.get('srun_extra') or [], plan.get('srun') or 'srun', plan.get('timeout') or 600,
            str(plan.get('time_limit') or 10))


def _checked_plan(plan):
    """plan_jobs' plan checked: (dispatch, dispatch_min_nodes, allocation wait, nodes); ValueError for a bad plan."""
    if not isinstance(plan, dict):
        raise ValueError('the NCCL plan must be a dict with keys %s, got %r' % (', '.join(PLAN_KEYS), plan))
    unknown = sorted(set(plan) - set(PLAN_KEYS))
    if unknown:
        raise ValueError('unknown NCCL plan key(s) %s; valid keys: %s' % (', '.join(unknown), ', '.join(PLAN_KEYS)))
    if not plan.get('binary'):
        raise ValueError('the NCCL plan needs binary: the path of all_reduce_perf on the nodes')
    check_run_settings(plan)  # like the slurm and mpi plans', before any job is made
    dispatch, dispatch_min_nodes, wait = dispatch_settings(plan)
    nodes = plan.get('nodes') or []
    if not isinstance(nodes, list) or not all(isinstance(n, dict) and n.get('name') for n in nodes):
        raise ValueError('NCCL plan nodes must be a list of {name, gpus, model}, got %r' % (nodes,))
    # what goes on the srun, salloc and sinfo command lines: names, commands, the program (see srun_argv)
    command_words(plan)
    for index, node in enumerate(nodes):
        slurm_name('nodes[%d].name' % index, node['name'], 'a Slurm node name')
        if node.get('gres_type'):
            slurm_name('nodes[%d].gres_type' % index, node['gres_type'], 'a GRES type such as h100')
        if node.get('fabric_group'):
            require_match('nodes[%d].fabric_group' % index, node['fabric_group'], FABRIC_GROUP,
                          'a fabric group name (validate_nccl_multinode.group: letters, digits, _ . + -, such as dgx-h100)')
    require_list('pairs_groups', plan.get('pairs_groups'), allow_none=True,
                 element=lambda item, value: require_str(item, value, allow_empty=True))
    if plan.get('mpi'):
        check_mpi(plan['mpi'])
    # srun options and all_reduce_perf arguments on purpose (validate_nccl_settings.srun_args, validate_nccl_settings.args): passed as given
    require_list('srun_extra', plan.get('srun_extra'), allow_none=True, element=require_str)
    require_list('args', plan.get('args'), allow_none=True, element=lambda item, value: require_str(item, value, allow_empty=True))
    return dispatch, dispatch_min_nodes, wait, nodes


def _per_node_runs(nodes, plan, env, settings, json, jobs):
    """(the per-node run jobs, {node: (gres_type, gpus)} of those that can be steps); appends every job to jobs."""
    args, extra, srun, timeout, time_limit = settings
    per_node, specs = [], {}  # specs: node -> (gres_type, gpus) of the runs that can be steps
    for node in nodes:
        gpus = node.get('gpus') or 0
        if gpus < 1:
            jobs.append({'name': node['name'], 'kind': 'skip', 'check': 'all_reduce', 'hosts': [node['name']],
                         'reason': 'no GPU GRES on %s' % node['name']})
            continue
        expect = expect_for(**node_gate(node, plan, gpus, env))
        per_node.append({'name': node['name'], 'kind': 'nccl', 'round': 0, 'hosts': [node['name']], 'expect': expect, 'timeout': timeout,
                         'argv': srun_argv(plan['binary'], [node['name']], gpus, False, None, env, args, srun, extra, time_limit,
                                           node.get('gres_type') or None, json=json)})
        if json:
            per_node[-1]['json'] = True
        jobs.append(per_node[-1])
        # Untyped GPUs on a node with GPU GRES of several types stay a job of its own: Slurm 22.05 refuses such a step
        # of an --exclusive job (see multi_exclusive below).
        if node.get('gres_type') or int(node.get('gres_types') or 1) <= 1:
            specs[node['name']] = (node.get('gres_type') or '', gpus)
    return per_node, specs


def plan_jobs(plan):
    """``validation_jobs`` jobs of the NCCL stage from a plan.

    ``plan``: ``binary`` (path of all_reduce_perf on the nodes), ``nodes`` ([{name, gpus, model, present, usable, gres_type,
    gres_types, topology, min_busbw_gbps}]; ``gpus``: whole GPUs, not MIG instances; ``gres_type``: their GRES type when
    they have one, asked for by type; ``gres_types``: how many GPU GRES types the node has (MIG profiles count);
    ``topology``, ``min_busbw_gbps``: this node's own gate, over the plan's ``node_topology``/``node_min_busbw_gbps``;
    ``present`` False: the binary is missing there; ``usable`` False: the node cannot take jobs), ``srun_extra``
    (more srun options, e.g. ``--container-image=...``), ``env`` (exported to the runs, e.g. NCCL_DEBUG=INFO),
    ``args`` (all_reduce_perf arguments before ``-g``),
    ``timeout``, ``time_limit`` (srun --time), ``srun``; per-node gate: ``node_topology`` (unset: the catalogue's
    curve for the node's platform, GPU count and the env's NCCL_ALGO, ``node_gate``), ``node_min_busbw_gbps``;
    ``fabric`` (run across all nodes), ``fabric_topology``,
    ``fabric_nics``, ``fabric_min_busbw_gbps``, ``expect_transport`` (``ib``); ``thresholds`` (flat overrides);
    ``gate_curves`` (topology -> ``[[size, GB/s], ...]``, over the built-in curves);
    ``pairwise`` (node pairs in rounds after the others); ``pairs_only`` (only the pair rounds: the follow-up that
    isolates a slow node after the fabric run failed); ``leaf_of`` (node -> leaf switch, for naming a slow leaf);
    ``mpi`` (the ``--mpi=`` value of the multi-node runs; ``{mpi}`` is filled in by the module). Per-node runs are
    round 0 (all at once), the fabric run round 1, pair rounds 2 and up. A run over two nodes gets ``NCCL_ALGO=Ring``
    (``ring_env``); the multi-node runs' expectations carry their node count (``ib-*`` curves stretch with it).
    ``dispatch`` (``auto``, ``per_node``, ``allocation``), ``dispatch_min_nodes``, ``allocation_wait``, ``salloc``,
    ``scancel``: how the per-node runs reach Slurm (``allocation_dispatch``).
    """
    dispatch, dispatch_min_nodes, wait, nodes = _checked_plan(plan)
    nodes = [dict(n, gpus=_count(n.get('gpus'), n['name'])) for n in nodes]
    jobs = [{'name': n['name'], 'kind': 'skip', 'check': 'all_reduce', 'hosts': [n['name']],
             'reason': 'not run: %s cannot take jobs (see its node_state check)' % n['name']} for n in nodes if is_false(n.get('usable'))]
    nodes = [n for n in nodes if not is_false(n.get('usable'))]
    present = [n for n in nodes if not is_false(n.get('present'))]
    if nodes and not present:
        names = [n['name'] for n in nodes]
        return jobs + [{'name': 'cluster', 'kind': 'skip', 'check': 'all_reduce', 'hosts': names,
                        'reason': 'no CUDA/nccl-tests on this cluster: %s not found on %s' % (plan['binary'], ', '.join(names))}]
    jobs += [{'name': n['name'], 'kind': 'skip', 'status': 'fail', 'check': 'all_reduce', 'hosts': [n['name']],
              'reason': '%s not found on %s (other nodes have it)' % (plan['binary'], n['name'])} for n in nodes if is_false(n.get('present'))]
    nodes = present
    env, args, extra, srun, timeout, time_limit = run_settings(plan)
    require_str('tests_version', plan.get('tests_version'), allow_empty=True, allow_none=True)
    json = wants_json(plan)
    thresholds = plan.get('thresholds') or {}
    curves = plan.get('gate_curves') or {}
    transport = plan.get('expect_transport') or None
    leaf_of = plan.get('leaf_of') or {}
    if not isinstance(leaf_of, dict) or not all(isinstance(v, str) and v for v in leaf_of.values()):
        raise ValueError('leaf_of must map node names to leaf switch names, got %r' % (leaf_of,))
    pairs_only = bool(plan.get('pairs_only'))
    per_node, specs = _per_node_runs([] if pairs_only else nodes, plan, env, (args, extra, srun, timeout, time_limit), json, jobs)
    steps = [job for job in per_node if job['name'] in specs]
    if steps and (dispatch == 'allocation' or (dispatch == 'auto' and len(per_node) >= dispatch_min_nodes)):
        allocation_dispatch(steps, specs, plan, extra, time_limit, wait)  # (the jobs in place, in their order)
    usable = [n for n in nodes if (n.get('gpus') or 0) >= 1]
    fabric_gate = dict(topology=plan.get('fabric_topology'), min_busbw_gbps=plan.get('fabric_min_busbw_gbps'), thresholds=thresholds,
                       nics=plan.get('fabric_nics') or 1, expect_transport=transport, gate_curves=curves)
    expect_for(**fabric_gate)  # checked even where no multi-node run follows
    # The multi-node runs go per node type (fabric_groups): nodes of different GPU models are never in one run nor under
    # one gate. One group (a cluster of one node type) keeps the names fabric and pairs; several are fabric:<group>.
    groups = fabric_groups(usable) or [(None, [])]
    named = len(groups) > 1
    # pairs_groups: the groups whose fabric run failed (the isolation follow-up runs their pairs only); empty: every group
    wanted = [name for name in plan.get('pairs_groups') or [] if name]
    for group, members in groups:
        gate = group_gate(group, members, plan) if members else dict((key, plan.get(key)) for key, dummy in GROUP_GATE_KEYS)
        group_fabric = dict(fabric_gate)
        group_fabric.update(topology=gate['fabric_topology'], min_busbw_gbps=gate['fabric_min_busbw_gbps'], nics=gate['fabric_nics'] or 1,
                            platform=group_platform(members), gpus=min([n['gpus'] for n in members]) if members else None)
        expect_for(**group_fabric)
        jobs += group_jobs(plan, group if named else None, members, group_fabric,
                           pairs_only and (not named or not wanted or group in wanted))
    return jobs


def group_jobs(plan, group, members, fabric_gate, pairs=False):
    """The multi-node jobs of one fabric group (``group`` None: the only one, whose runs keep the names ``fabric`` and
    ``a+b``): its fabric run (round 1) and, with ``pairwise`` or ``pairs`` (the isolation follow-up of a failed fabric run
    of this group), its node pairs in rounds (2 and up), all gated by ``fabric_gate`` (``expect_for``'s arguments)."""
    env, args, extra, srun, timeout, time_limit = run_settings(plan)
    json = wants_json(plan)
    pairs_only = bool(plan.get('pairs_only'))
    label = 'fabric' if group is None else 'fabric:%s' % group
    jobs = []
    gpus_per_node = min([n['gpus'] for n in members]) if members else 0
    # One GRES type for a multi-node run only when every node has it (one srun asks the same of every node).
    types = set(n.get('gres_type') or '' for n in members)
    multi_type = types.pop() if len(types) == 1 else None
    # Slurm 22.05 refuses the step of an --exclusive job that asks for untyped GPUs on a node with GPU GRES
    # of several types (MIG instances and whole GPUs): "Step requested gres_per_node=gpu:7 is more than the
    # job's gres_per_node=gpu:2". Such a run goes without --exclusive.
    multi_exclusive = bool(multi_type) or all(int(n.get('gres_types') or 1) <= 1 for n in members)
    names = [n['name'] for n in members]
    if plan.get('fabric') and len(members) >= 2 and not pairs_only:
        expect, run_env = multi_node_run(env, names, fabric_gate)
        job = {'name': label, 'kind': 'nccl', 'round': 1, 'hosts': names, 'expect': expect, 'timeout': timeout,
               'argv': srun_argv(plan['binary'], names, gpus_per_node, True, plan.get('mpi'), run_env, args, srun, extra, time_limit,
                                 multi_type or None, multi_exclusive, json=json)}
        if json:
            job['json'] = True
        if group is not None:
            job['group'] = group
        jobs.append(job)
    elif plan.get('fabric') and not pairs_only:
        if group is None:
            reason = 'a fabric run needs at least 2 GPU nodes, there are %d' % len(members)
        else:
            reason = ('a fabric run needs at least 2 GPU nodes of one type, fabric group %s has %d (%s); nodes of other GPU models are '
                      'not run nor gated with it (validate_nccl_multinode.group puts nodes in one group)' % (group, len(members), ', '.join(names)))
        job = {'name': label, 'kind': 'skip', 'check': 'all_reduce', 'reason': reason}
        if group is not None:
            job['hosts'] = names
        jobs.append(job)
    if (plan.get('pairwise') or pairs) and len(members) >= (2 if pairs_only else 3):
        for number, rounds in enumerate(pair_rounds(names)):
            for pair in rounds:
                expect, run_env = multi_node_run(env, list(pair), fabric_gate)
                job = {'name': '%s+%s' % pair, 'kind': 'nccl', 'round': 2 + number, 'hosts': list(pair), 'expect': expect,
                       'timeout': timeout,
                       'argv': srun_argv(plan['binary'], list(pair), gpus_per_node, True, plan.get('mpi'), run_env, args, srun, extra,
                                         time_limit, multi_type or None, multi_exclusive, json=json)}
                if json:
                    job['json'] = True
                if group is not None:
                    job['group'] = group
                jobs.append(job)
    return jobs
