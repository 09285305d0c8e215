# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deep tier of the GPU health check: which tools to run on a node and how their results are judged (pure logic).

The deep tier runs as a Slurm job on an idle or drained node inside a maintenance reservation (the
``health_deep`` module plans that on the controller); on the node, ``gpucluster-healthcheck --tier deep``
runs, each where it is installed:

* ``dcgm``: ``dcgmi diag -r <level> -j`` (NVIDIA DCGM's active diagnostics); a test with status Fail
  fails the check, naming test and GPU;
* ``nccl``: nccl-tests' ``all_reduce_perf`` over every GPU of the node in one process (``-g N``), the
  validation role's single-node NCCL test, gated by ``_nccl.evaluate`` (wrong results, bus bandwidth
  below the topology's threshold);
* ``nvbandwidth``: host<->device copy bandwidth per GPU against ``pcie_min_fraction`` of what the GPU's
  PCIe link can carry at its maximum generation and width, device<->device bandwidth of each GPU against
  ``peer_min_fraction`` of the node's median (the slow GPU is named);
* ``ib-bw``: ``ib_write_bw`` between pairs of the node's active InfiniBand HCAs (one as server, the other
  as client over loopback) against ``ib_min_fraction`` of the lower port rate.

A check whose tool is not installed is skipped and says so; a tool that could not run (no DCGM host
engine, a crash without a verdict, a timeout) is an ``error``: reported, never a drain.  Failures give the
drain reason ``<prefix>:deep:<check>: <detail>``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import Failure, reason_text
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _dcgm
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _nvbandwidth
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _perftest
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import NcclParseError, evaluate, parse_run, summarize
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import expect_for, node_topology

TIER = 'deep'
CHECKS = ('dcgm', 'nccl', 'nvbandwidth', 'ib-bw')
STATUSES = ('pass', 'fail', 'skip', 'error')
DCGM_LEVELS = (1, 2, 3, 4)
# seconds a dcgmi diag level may take before it is stopped (DCGM: level 1 seconds, 2 about two minutes,
# 3 about 15 minutes, 4 longer)
DCGM_TIMEOUTS = {1: 300, 2: 900, 3: 3600, 4: 14400}
NVBANDWIDTH_TESTCASES = ('host_to_device_memcpy_ce', 'device_to_host_memcpy_ce', 'device_to_device_memcpy_read_ce')
# GB/s one PCIe lane carries per direction, by generation (after line encoding)
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

DEFAULTS = {
    'checks': list(CHECKS),
    'dcgmi': '/usr/bin/dcgmi',
    'dcgm_level': 2,
    'dcgm_timeout': None,
    'all_reduce_perf': '/opt/nccl-tests/build/all_reduce_perf',
    'nccl_args': ['-b', '8', '-e', '8G', '-f', '2'],
    'nccl_env': {},
    'nccl_topology': None,
    'nccl_min_busbw_gbps': None,
    'nccl_thresholds': {},
    # the validation role's validate_nccl_settings.gate_curves (size -> lowest busbw per topology key)
    'nccl_gate_curves': {},
    'nccl_timeout': 1200,
    'nvbandwidth': '/usr/local/bin/nvbandwidth',
    'nvbandwidth_testcases': list(NVBANDWIDTH_TESTCASES),
    'nvbandwidth_timeout': 900,
    'pcie_min_fraction': 0.7,
    'peer_min_fraction': 0.8,
    'ib_write_bw': '/usr/bin/ib_write_bw',
    'ib_sysfs_root': '/sys/class/infiniband',
    'ib_min_fraction': 0.8,
    'ib_duration': 5,
    'ib_tcp_port': 18515,
    'ib_timeout': 120,
}
_PATH_KEYS = ('dcgmi', 'all_reduce_perf', 'nvbandwidth', 'ib_write_bw', 'ib_sysfs_root')
_TIMEOUT_KEYS = ('nccl_timeout', 'nvbandwidth_timeout', 'ib_timeout')
_FRACTION_KEYS = ('pcie_min_fraction', 'peer_min_fraction', 'ib_min_fraction')
_ENV_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_TESTCASE = re.compile(r'[a-z0-9_]+\Z')
_PATH = re.compile(r'/[^\s\x00]*\Z')


# the longest any deep tier tool may run, and ib_write_bw's run, in seconds (a day: longer is a mistake, and
# a number such as 10**20 would overflow the timers that stop the tools)
MAX_SECONDS = 86400


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isinf(value) and not math.isnan(value)


def load_config(data):
    """The deep tier's settings (``DEFAULTS`` overridden by ``data``); ``ValueError`` names the bad key and value."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError('the deep tier settings are %r, expected a JSON object with keys %s' % (data, ', '.join(sorted(DEFAULTS))))
    unknown = sorted(repr(key) if not isinstance(key, str) else key for key in set(data) - set(DEFAULTS))
    if unknown:
        raise ValueError('unknown deep tier setting(s) %s; valid settings: %s' % (', '.join(unknown), ', '.join(sorted(DEFAULTS))))
    config = dict(DEFAULTS)
    config.update(data)
    checks = config['checks']
    if not isinstance(checks, list) or any(c not in CHECKS for c in checks):
        raise ValueError('checks is %r, expected a list of %s' % (checks, ', '.join(CHECKS)))
    for key in _PATH_KEYS:
        # each is a program (argv[0]) or a directory read: absolute, so never an option; one word
        if not isinstance(config[key], str) or not _PATH.match(config[key]):
            raise ValueError('%s is %r, expected an absolute path' % (key, config[key]))
    level = config['dcgm_level']
    if isinstance(level, bool) or not isinstance(level, int) or level not in DCGM_LEVELS:
        raise ValueError('dcgm_level is %r, expected one of %s' % (level, ', '.join(str(x) for x in DCGM_LEVELS)))
    if config['dcgm_timeout'] is None:
        config['dcgm_timeout'] = DCGM_TIMEOUTS[config['dcgm_level']]
    for key in ('dcgm_timeout',) + _TIMEOUT_KEYS + ('ib_duration',):
        if not _number(config[key]) or not 0 < config[key] <= MAX_SECONDS:
            raise ValueError('%s is %r, expected a number of seconds above 0 and at most %d' % (key, config[key], MAX_SECONDS))
    for key in _FRACTION_KEYS:
        if not _number(config[key]) or not 0 < config[key] <= 1:
            raise ValueError('%s is %r, expected a fraction above 0 and at most 1' % (key, config[key]))
    port = config['ib_tcp_port']
    if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65000:
        raise ValueError('ib_tcp_port is %r, expected a TCP port from 1024 to 65000' % (port,))
    # all_reduce_perf's own options, passed as given (on purpose): strings a command line can hold
    if not isinstance(config['nccl_args'], list) or not all(isinstance(a, str) and '\x00' not in a for a in config['nccl_args']):
        raise ValueError('nccl_args is %r, expected a list of strings' % (config['nccl_args'],))
    env = config['nccl_env']
    if not isinstance(env, dict) or any(not isinstance(k, str) or not _ENV_NAME.match(k) or not isinstance(v, (str, int, float)) or '\x00' in str(v)
                                        for k, v in env.items()):
        raise ValueError('nccl_env is %r, expected a mapping of environment variable names to values' % (env,))
    cases = config['nvbandwidth_testcases']
    if not isinstance(cases, list) or not cases or any(not isinstance(c, str) or not _TESTCASE.match(c) for c in cases):
        raise ValueError('nvbandwidth_testcases is %r, expected a non-empty list of nvbandwidth testcase names' % (cases,))
    if config['nccl_topology'] is not None and not isinstance(config['nccl_topology'], str):
        raise ValueError('nccl_topology is %r, expected a topology name such as "h100-nvlink-8", or null for the default' % (config['nccl_topology'],))
    # the NCCL gate's settings are checked where they are used (odd types too: a ValueError naming them)
    try:
        expect_for(config['nccl_topology'], config['nccl_min_busbw_gbps'], config['nccl_thresholds'], gate_curves=config['nccl_gate_curves'])
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError('the NCCL gate settings (nccl_topology %r, nccl_min_busbw_gbps %r, nccl_thresholds %r, nccl_gate_curves %r) '
                         'cannot be read: %s' % (config['nccl_topology'], config['nccl_min_busbw_gbps'], config['nccl_thresholds'],
                                                 config['nccl_gate_curves'], exc))
    return config


def result(check, status, detail, **extra):
    """One check's outcome: ``{check, status, detail[, value, threshold, evidence, seconds]}``."""
    if check not in CHECKS or status not in STATUSES:
        raise ValueError('bad deep tier result %r/%r' % (check, status))
    out = {'check': check, 'status': status, 'detail': detail}
    out.update(extra)
    return out


def _tail(text, limit=1500):
    text = (text or '').strip()
    return text if len(text) <= limit else '...' + text[-limit:]


def not_installed(check, path):
    return result(check, 'skip', '%s is not installed on this node (%s)' % (check_tool(check), path))


def check_tool(check):
    return {'dcgm': 'dcgmi (NVIDIA DCGM)', 'nccl': "nccl-tests' all_reduce_perf", 'nvbandwidth': 'nvbandwidth',
            'ib-bw': "perftest's ib_write_bw"}[check]


def ran_out(check, seconds):
    return result(check, 'error', '%s did not finish within %gs' % (check_tool(check), seconds))


# ---------------------------------------------------------------- dcgm

def dcgm_argv(config):
    return [config['dcgmi'], 'diag', '-r', str(config['dcgm_level']), '-j']


def judge_dcgm(rc, stdout, stderr, level):
    """``dcgmi diag -r <level> -j``'s outcome: fail when a test failed, error when dcgmi gave no verdict, skip when DCGM
    refuses the node's MIG configuration (it runs no diagnostic while MIG instances split a GPU): only DCGM's own
    refusal texts (``_dcgm.MIG_REFUSALS``) in dcgmi's ``runtime_error`` skip; any other text, MIG or not, is an error."""
    try:
        parsed = _dcgm.parse_diag(stdout)
    except ValueError as exc:
        refusal = _dcgm.mig_refusal(exc.error) if isinstance(exc, _dcgm.DiagNotRun) else None
        if refusal:
            return result('dcgm', 'skip', 'dcgmi diag -r %d does not run on this node: %s' % (level, refusal[:300]))
        # what the parser found wrong (the field) and what dcgmi printed (the text)
        text = ' '.join(((stderr or '') + ' ' + (stdout or '')).split())
        return result('dcgm', 'error', 'dcgmi diag -r %d gave no result (rc %s): %s%s' % (level, rc, str(exc)[:300], '; output: ' + text[:200] if text else ''),
                      evidence=_tail((stdout or '') + (stderr or '')))
    failed = _dcgm.failures(parsed)
    counts = {}
    for test in parsed['tests']:
        counts[test['status']] = counts.get(test['status'], 0) + 1
    tally = ', '.join('%d %s' % (counts[s], s) for s in ('pass', 'warn', 'skip', 'fail') if counts.get(s))
    if failed:
        return result('dcgm', 'fail', 'dcgmi diag -r %d: %s' % (level, _dcgm.summary(parsed)), evidence=tally)
    if not parsed['tests']:
        return result('dcgm', 'error', 'dcgmi diag -r %d reported no test (rc %s)' % (level, rc), evidence=_tail(stdout))
    return result('dcgm', 'pass', 'dcgmi diag -r %d: %s' % (level, tally))


# ---------------------------------------------------------------- nccl

def whole_gpus(gpus):
    """The GPUs CUDA tests run on: those NVML reads without error and not in MIG mode (a GPU split into MIG instances
    is no CUDA device of its own; its instances are tested by the periodic tier's checks)."""
    return [g for g in gpus if not g.get('error') and not g.get('mig_current')]


def cuda_visible_without_mig(value):
    """The job's ``CUDA_VISIBLE_DEVICES`` (what Slurm set for its GPUs) without the MIG instances: Slurm lists a MIG
    node's instances (``MIG-<uuid>``) beside its whole GPUs, and CUDA stops at the first entry it cannot use together
    with the others; None leaves the variable as it is."""
    if value is None:
        return None
    return ','.join(item for item in value.split(',') if item.strip() and not item.strip().startswith('MIG-'))


def nccl_argv(config, gpus):
    return [config['all_reduce_perf']] + list(config['nccl_args']) + ['-g', str(gpus)]


def nccl_env(config):
    return dict((str(k), str(v)) for k, v in config['nccl_env'].items())


def judge_nccl(rc, stdout, stderr, config, model, gpus):
    """The single-node all_reduce_perf run, gated as the validation role gates it."""
    try:
        parsed = parse_run(stdout)
    except NcclParseError as exc:
        return result('nccl', 'error', 'all_reduce_perf gave no result (rc %s): %s' % (rc, exc), evidence=_tail((stdout or '') + (stderr or '')))
    # the parser takes nccl-tests' "nan" and "inf" as numbers; a time or bandwidth that is no finite number is no
    # measurement (the gate would drop a nan and pass an inf)
    unreadable = ['%d B %s %s %r' % (row['size'], place.replace('_', '-'), field, row[place][field])
                  for row in parsed.get('rows') or [] for place in ('out_of_place', 'in_place') if isinstance(row.get(place), dict)
                  for field in ('time', 'algbw', 'busbw') if field in row[place] and not _number(row[place][field])]
    if unreadable:
        return result('nccl', 'error', 'all_reduce_perf printed values that are no measurement (rc %s): %s' % (rc, ', '.join(unreadable[:5])[:300]),
                      evidence=_tail(stdout))
    topology = config['nccl_topology'] or node_topology(model, gpus)
    checks = evaluate(parsed, expect_for(topology, config['nccl_min_busbw_gbps'], config['nccl_thresholds'],
                                         gate_curves=config['nccl_gate_curves']))
    digest = summarize(parsed)
    busbw = [c for c in checks if c['check'] == 'busbw'][0]
    bad = [c for c in checks if c['status'] == 'fail']
    extra = {'value': digest['avg_busbw'] if busbw.get('value') is None else busbw.get('value')}
    if busbw.get('threshold') is not None:
        extra['threshold'] = busbw['threshold']
    if bad:
        return result('nccl', 'fail', 'all_reduce_perf on %d GPUs: %s' % (gpus, '; '.join('%s: %s' % (c['check'], c['reason']) for c in bad)), **extra)
    if rc not in (0, None):
        return result('nccl', 'fail', 'all_reduce_perf on %d GPUs exited %s: %s' % (gpus, rc, _tail(stderr, 200)), **extra)
    return result('nccl', 'pass', 'all_reduce_perf on %d GPUs: %s' % (gpus, busbw['reason']), **extra)


# ---------------------------------------------------------------- nvbandwidth

def nvbandwidth_argv(config):
    argv = [config['nvbandwidth']]
    for case in config['nvbandwidth_testcases']:
        argv += ['-t', case]
    return argv + ['-j']


def pcie_gbps(gen, width):
    """What a PCIe link of generation ``gen`` and ``width`` lanes carries per direction (GB/s), None when unknown."""
    if not gen or not width or gen not in PCIE_LANE_GBPS:
        return None
    return round(PCIE_LANE_GBPS[gen] * width, 1)


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def _bus(pci):
    """``00000000:1B:00.0`` / ``00000000:1b:00`` -> ``1b:00`` (bus and device: what NVML and CUDA both print)."""
    parts = str(pci or '').lower().split(':')
    return ':'.join([parts[-2], parts[-1].split('.')[0]]) if len(parts) >= 2 else ''


def _gpu_links(gpus, devices=None):
    """CUDA device index -> ``(NVML index, max PCIe gen, max width)``: by the PCI address nvbandwidth prints for each
    device, else NVML's GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID is set for the run)."""
    healthy = whole_gpus(gpus)
    by_bus = dict((_bus(g.get('pci_bus_id')), g) for g in healthy)
    ordered = sorted(healthy, key=lambda g: str(g.get('pci_bus_id') or '').lower())
    links = {}
    for position, gpu in enumerate(ordered):
        links[position] = gpu
    for device in devices or []:
        match = by_bus.get(_bus(device.get('pci')))
        if match is not None and isinstance(device.get('index'), int):
            links[device['index']] = match
    out = {}
    for cuda_index, gpu in links.items():
        pcie = (gpu.get('fleet') or {}).get('pcie') or {}
        out[cuda_index] = (gpu.get('index'), pcie.get('max_gen'), pcie.get('max_width'))
    return out


def judge_nvbandwidth(rc, stdout, stderr, config, gpus):
    """Copy bandwidths per GPU: host<->device against the PCIe link, device<->device against the node's median."""
    try:
        parsed = _nvbandwidth.parse(stdout, config['nvbandwidth_testcases'])
    except ValueError as exc:
        return result('nvbandwidth', 'error', 'nvbandwidth gave no result (rc %s): %s' % (rc, exc), evidence=_tail((stdout or '') + (stderr or '')))
    if parsed.get('error'):
        return result('nvbandwidth', 'fail', 'nvbandwidth failed (rc %s): %s' % (rc, parsed['error'][:300]), evidence=_tail(stdout))
    links = _gpu_links(gpus, parsed.get('devices'))
    problems, lowest, unreadable = [], None, []
    cases = parsed['testcases']
    for case in config['nvbandwidth_testcases']:
        entry = cases.get(case)
        if entry is None:
            problems.append('%s did not run' % case)
            continue
        if entry['status'] == 'waived':
            continue
        if entry['status'] != 'passed':
            problems.append('%s: %s' % (case, entry.get('error') or entry['status']))
            continue
        if case.startswith('device_to_device'):
            try:
                pairs = _nvbandwidth.pairs(entry)
            except ValueError as exc:
                unreadable.append('%s: %s' % (case, exc))
                continue
            per_gpu = {}
            for (src, dst), value in sorted(pairs.items()):
                if value is not None and not _number(value):
                    unreadable.append('%s GPU %s -> GPU %s: %r' % (case, src, dst, value))
                elif value is not None:
                    per_gpu.setdefault(src, []).append(value)
                    per_gpu.setdefault(dst, []).append(value)
            means = dict((gpu, sum(v) / len(v)) for gpu, v in per_gpu.items())
            if len(means) < 2:
                continue
            floor = round(config['peer_min_fraction'] * _median(means.values()), 1)
            for gpu in sorted(means):
                if means[gpu] < floor:
                    problems.append('GPU %s %s %.1f GB/s, below %.1f (%d%% of the node median)'
                                    % (gpu, case, means[gpu], floor, round(config['peer_min_fraction'] * 100)))
            continue
        try:
            measured = _nvbandwidth.per_gpu(entry)
        except ValueError as exc:
            unreadable.append('%s: %s' % (case, exc))
            continue
        for gpu, value in sorted(measured.items()):
            if value is None or not _number(value):
                # nvbandwidth measures every GPU's host copies: N/A, nan or inf there is no reading
                unreadable.append('%s GPU %s: %s' % (case, gpu, 'N/A' if value is None else repr(value)))
                continue
            gen = width = None
            if gpu in links:
                _index, gen, width = links[gpu]
            capacity = pcie_gbps(gen, width)
            if capacity is None:
                continue
            floor = round(config['pcie_min_fraction'] * capacity, 1)
            lowest = value if lowest is None else min(lowest, value)
            if value < floor:
                problems.append('GPU %s %s %.1f GB/s, below %.1f (%d%% of PCIe gen %s x%s, %.1f GB/s)'
                                % (gpu, case, value, floor, round(config['pcie_min_fraction'] * 100), gen, width, capacity))
    if problems:
        return result('nvbandwidth', 'fail', 'nvbandwidth: ' + '; '.join(problems[:4]) + (' (+%d more)' % (len(problems) - 4) if len(problems) > 4 else ''),
                      value=lowest)
    if unreadable:
        return result('nvbandwidth', 'error', 'nvbandwidth printed values that are no bandwidth (rc %s): %s' % (rc, '; '.join(unreadable[:4])[:300]),
                      evidence=_tail(stdout))
    if rc not in (0, None):
        return result('nvbandwidth', 'fail', 'nvbandwidth exited %s: %s' % (rc, _tail(stderr, 200)))
    # every testcase ran here: one that did not is a problem above
    return result('nvbandwidth', 'pass', 'nvbandwidth: %s within bounds' % ', '.join(config['nvbandwidth_testcases']),
                  value=lowest)


# ---------------------------------------------------------------- ib-bw

def ib_pairs(ports):
    """Pairs ``(server, client)`` of the active InfiniBand ports (``_healthcheck_fleet.read_ib_ports``), each port in
    one pair at least: hca0-hca1, hca2-hca3, ...; an odd last port pairs with the first.  RoCE ports are left out."""
    active = [p for p in ports if p.get('link_layer', 'InfiniBand') == 'InfiniBand' and str(p.get('state', '')).upper().endswith('ACTIVE')]
    active.sort(key=lambda p: (p['hca'], p['port']))
    pairs = [(active[i], active[i + 1]) for i in range(0, len(active) - 1, 2)]
    if len(active) % 2 and len(active) > 1:
        pairs.append((active[-1], active[0]))
    return pairs


def ib_argvs(config, pair, index):
    """The server's and the client's ``ib_write_bw`` command lines for one pair (a TCP port of its own)."""
    server, client = pair
    tcp = str(config['ib_tcp_port'] + index)
    common = ['-F', '--report_gbits', '-D', str(config['ib_duration']), '-p', tcp]
    return ([config['ib_write_bw'], '-d', server['hca'], '-i', str(server['port'])] + common,
            [config['ib_write_bw'], '-d', client['hca'], '-i', str(client['port'])] + common + ['localhost'])


def expected_ib_rate(ports, recorded=None):
    """The rate a pair should reach (Gb/s): the node's recorded InfiniBand rate (the health check's ``ib_rate_gbps``),
    else the fastest of its active InfiniBand ports - so that a port trained down to a lower rate does not lower its
    own bar."""
    if recorded:
        return float(recorded)
    rates = [p.get('rate_gbps') for p in ports if p.get('link_layer', 'InfiniBand') == 'InfiniBand' and p.get('rate_gbps')]
    return max(rates) if rates else None


def judge_ib_pair(pair, server_run, client_run, config, rate=None):
    """One pair's run (``(rc, stdout, stderr)`` each) against ``rate`` (:func:`expected_ib_rate`; default the lower
    of the pair's two port rates): ``(ok, text, gbps)``."""
    server, client = pair
    label = '%s/%s<->%s/%s' % (server['hca'], server['port'], client['hca'], client['port'])
    if rate is None:
        rate = min([p.get('rate_gbps') for p in pair if p.get('rate_gbps')] or [0])
    texts = []
    for role, run in (('client', client_run), ('server', server_run)):
        rc, out, err = run
        unread = None
        try:
            parsed = _perftest.parse_bw(out + '\n' + err if err else out)
        except ValueError as exc:
            parsed, unread = None, str(exc)
        if parsed and parsed.get('error'):
            texts.append('%s %s: %s' % (role, label, parsed['error'][:160]))
        elif parsed is None or not parsed.get('rows'):
            if rc is None:
                texts.append('%s %s did not finish within %gs' % (role, label, config['ib_timeout']))
            elif role == 'client':
                # output the parser does not recognise is no result: its text is named, never read as a pass
                texts.append('%s %s printed no result (rc %s): %s' % (role, label, rc, (unread or _tail(err or out, 160))[:300]))
        elif role == 'client' and rc not in (0, None):
            texts.append('%s %s exited %s after its result table: %s' % (role, label, rc, _tail(err or out, 160)))
        elif role == 'client':
            gbps = parsed['bw_avg_gbps']
            if not _number(gbps):
                texts.append('%s %s printed no bandwidth: %r' % (role, label, gbps))
                continue
            if rate:
                floor = round(config['ib_min_fraction'] * rate, 1)
                if gbps < floor:
                    return False, '%s %.1f Gb/s, below %.1f (%d%% of %g Gb/s)' % (label, gbps, floor, round(config['ib_min_fraction'] * 100), rate), gbps
            return True, '%s %.1f Gb/s' % (label, gbps), gbps
    return False, '; '.join(texts) or '%s gave no result' % label, None


def judge_ib(pair_results):
    """``[(ok, text, gbps)]`` of every pair -> the ``ib-bw`` result."""
    if not pair_results:
        return result('ib-bw', 'skip', 'fewer than two active InfiniBand ports: no pair to test')
    bad = [text for ok, text, _gbps in pair_results if not ok]
    values = [gbps for _ok, _text, gbps in pair_results if gbps is not None]
    extra = {'value': min(values)} if values else {}
    if bad:
        return result('ib-bw', 'fail', 'ib_write_bw: ' + '; '.join(bad[:3]) + (' (+%d more)' % (len(bad) - 3) if len(bad) > 3 else ''), **extra)
    return result('ib-bw', 'pass', 'ib_write_bw: ' + ', '.join(text for _ok, text, _g in pair_results), **extra)


# ---------------------------------------------------------------- the tier's outcome

def reason(prefix, results):
    """The drain reason of the failed checks, ``<prefix>:deep:<check>: <detail> (+N more)`` (the other tiers' form,
    ``_healthcheck.reason_text``), or None."""
    failed = [Failure(r['check'], None, r['detail']) for r in results if r['status'] == 'fail']
    return reason_text(prefix, failed, TIER) if failed else None


def next_passes(previous, status):
    """Deep runs in a row that passed every check, after a run of exit ``status``: a failure starts again from 0, a run
    that could not judge everything (2) leaves the count as it was."""
    previous = previous if isinstance(previous, int) and not isinstance(previous, bool) and previous >= 0 else 0
    return {0: previous + 1, 1: 0}.get(status, previous)


def outcome(node, results, prefix, seconds=None, previous_passes=0):
    """The program's JSON report for the orchestrator; exit status 1 on a failure, 2 when only errors, else 0.
    ``passes``: the deep runs in a row, this one included, that passed every check on this node."""
    status = 0
    if any(r['status'] == 'fail' for r in results):
        status = 1
    elif any(r['status'] == 'error' for r in results):
        status = 2
    report = {'node': node, 'tier': TIER, 'results': results, 'reason': reason(prefix, results), 'status': status,
              'passes': next_passes(previous_passes, status)}
    if seconds is not None:
        report['seconds'] = round(seconds, 1)
    return report, status


REPORT_MARK = 'gpucluster-healthcheck deep: '


def report_line(report):
    """The one stdout line the orchestrator looks for (other output of the job may come before it)."""
    return REPORT_MARK + json.dumps(report, sort_keys=True)


def read_report(text):
    """The last report line of a job's output, as a dict; ``ValueError`` when there is none or it is malformed."""
    for line in reversed((text or '').splitlines()):
        line = line.strip()
        position = line.find(REPORT_MARK)
        if position < 0:
            continue
        try:
            report = json.loads(line[position + len(REPORT_MARK):])
        except ValueError as exc:
            raise ValueError('the deep tier report line is not JSON: %s' % exc)
        if not isinstance(report, dict) or not isinstance(report.get('results'), list):
            raise ValueError('the deep tier report has no results list: %r' % (line[:200],))
        for item in report['results']:
            if not isinstance(item, dict) or item.get('check') not in CHECKS or item.get('status') not in STATUSES:
                raise ValueError('the deep tier report has a malformed result: %r' % (item,))
        return report
    raise ValueError('the job printed no deep tier report (a line starting "%s")' % REPORT_MARK.strip())
