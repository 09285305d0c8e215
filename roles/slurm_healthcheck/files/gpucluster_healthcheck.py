# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpucluster-healthcheck: tiered GPU node health check for Slurm.

The role installs this file as the program, with a "#!" line naming the
node's Python 3 (slurm_healthcheck_python) put in front.

Installed by the role gpucluster.bringup.slurm_healthcheck.  Two tiers:

* periodic (the default): slurmd runs it every HealthCheckInterval seconds.
  It reads the GPUs through the collection's NVML client (module_utils/_nvml.py
  over nvidia-ml-py): count, models, lost GPUs, ECC, retired pages and row
  remapping, MIG layout, driver version, persistence mode, NVLink fabric
  state, NVLinks and their error counters, PCIe link, clock slowdown reasons
  and temperature; the Xids since boot in the kernel log; the InfiniBand
  ports in /sys/class/infiniband; the device files jobs need; the munge key's
  permissions.  A failure drains the node with the reason
  "gpuhc:periodic:<check>: <detail>".  A node drained by this check (any tier)
  is resumed after resume_after_passes passing runs in a row (auto_resume);
  a node drained by anybody else is never resumed.
* prolog (--tier prolog, run by the slurm role's prolog hook at every job
  start, within prolog_budget seconds): GPU count and models, lost GPUs,
  pending retirement or failed row remapping, fatal Xids since boot.  It never
  calls scontrol: on a failure it prints "drain-reason: gpuhc:prolog:..." and
  exits 1; the hook runner drains the node with that reason and Slurm
  requeues the job.
* deep (--tier deep, run as a Slurm job inside a maintenance reservation by
  the health_deep module of playbooks/health_deep.yml): dcgmi diag, the
  single-node all_reduce_perf, nvbandwidth and ib_write_bw between the
  node's InfiniBand HCAs, each where installed (health/_deep_tier.py).
  It never calls scontrol: it prints one line "gpucluster-healthcheck deep:
  {json}" with each check's result and the drain reason; the orchestrator
  drains, restores or resumes the node.

    gpucluster-healthcheck                  periodic tier; drain on failure, resume after K passes
    gpucluster-healthcheck --tier prolog    prolog tier (the hook)
    gpucluster-healthcheck --tier deep [--deep-config JSON]
                                            deep tier (a Slurm job of playbooks/health_deep.yml)
    gpucluster-healthcheck --dry-run        check and print, change nothing
    gpucluster-healthcheck --resume         check; resume this check's drain now if healthy
    gpucluster-healthcheck --observe        print what it reads as JSON
    gpucluster-healthcheck --baseline       print the expectations this node meets now as JSON (for the role)

Exit status: 0 healthy, 1 a check failed, 2 the check could not run (bad
configuration, pynvml missing, scontrol failing): the node is not drained
for a problem of the check itself.
Every drain and resume goes to syslog (ident gpucluster-healthcheck) and, as
one JSON line with the failures found, to events_file.
The decisions live in the collection's module_utils slurm/_healthcheck.py and
slurm/_healthcheck_fleet.py (with mig/_mig_minors.py, slurm/_munge_key.py and
_nvml.py), which the role installs in the collection's tree under LIB_DIR (the
node_library filter, the way every node program gets its module_utils;
GPUCLUSTER_HEALTHCHECK_LIB overrides it).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import socket
import subprocess
import sys
import syslog
import time

LIB_DIR = os.environ.get('GPUCLUSTER_HEALTHCHECK_LIB', '/usr/local/lib/gpucluster-healthcheck')
if os.path.isdir(LIB_DIR) and LIB_DIR not in sys.path:
    sys.path.insert(0, LIB_DIR)

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _conditions as conditions  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as node_loop  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _munge_key  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import run_process  # noqa: E402

DEFAULT_CONFIG = '/etc/gpucluster/healthcheck.json'
# the closed loop's condition -> action table, written by the role where the loop is on (slurm_healthcheck_loop_enabled)
LOOP_ACTIONS = '/etc/gpucluster/healthcheck-actions.json'
KERNEL_LOG_TAIL = 8 * 1024 * 1024


def read_gpu(client, index, tier='periodic'):
    """One GPU as the dictionary _healthcheck.find_failures takes; ``error`` set when NVML fails for it.

    The prolog tier reads what it checks only: name, bus id and the error counters."""
    gpu = {'index': index}
    try:
        handle = client.handle(index)
        gpu['name'] = nvml.text(client.call('nvmlDeviceGetName', handle))
        gpu['pci_bus_id'] = nvml.text(client.call('nvmlDeviceGetPciInfo', handle).busId)
        gpu.update(client.health(handle))
        if tier == 'prolog':
            return gpu
        gpu['minor'] = int(client.call('nvmlDeviceGetMinorNumber', handle))
        mode = client.mig_mode(handle)
        gpu['mig_current'], gpu['mig_pending'] = (None, None) if mode is None else mode
        gpu['mig_devices'] = []
        if gpu['mig_current']:
            for device in client.mig_devices(handle):
                try:
                    profile = nvml.profile_name(device['name'])
                except ValueError as exc:
                    raise nvml.NvmlError('nvmlDeviceGetName', str(exc), message=str(exc))
                gpu['mig_devices'].append({'profile': profile, 'gi': device['gi_id'], 'ci': device['ci_id']})
        gpu['fleet'] = client.fleet_health(handle)
    except nvml.NvmlError as exc:
        gpu['error'] = str(exc)
    return gpu


def observe(pynvml, tier='periodic'):
    """What NVML says about the node: ``{'nvml_error': text or None, 'driver_version', 'gpus': [...]}``."""
    try:
        with nvml.session(pynvml) as client:
            driver = None
            if tier != 'prolog':
                try:
                    driver = client.driver_version()
                except nvml.NvmlError:
                    driver = None
            return {'nvml_error': None, 'driver_version': driver,
                    'gpus': [read_gpu(client, index, tier) for index in range(client.count())]}
    except nvml.NvmlError as exc:
        return {'nvml_error': str(exc), 'gpus': []}


def read_kernel_log(source):
    """``(xids since boot, error text or None)`` from the journal, dmesg or a kernel log file."""
    if source in ('journal', 'dmesg'):
        argv = ['journalctl', '-k', '-b', '0', '-q', '--no-pager', '-o', 'cat'] if source == 'journal' else ['dmesg']
        try:
            result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                    timeout=20, check=False, errors='replace', env=_environment())
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [], '%s: %s' % (' '.join(argv), exc)
        if result.returncode != 0:
            return [], '%s failed (rc=%d): %s' % (' '.join(argv), result.returncode, result.stderr.strip()[:200])
        return fleet.parse_xids(result.stdout, since_last_boot=False), None
    try:
        with open(source, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - KERNEL_LOG_TAIL))
            text = handle.read().decode('utf-8', 'replace')
    except (IOError, OSError) as exc:
        return [], 'cannot read %s: %s' % (source, exc)
    return fleet.parse_xids(text, since_last_boot=True), None


_read = fleet.read_text
read_ib = fleet.read_ib_ports


# slurmd runs HealthCheckProgram with a bare environment (often no PATH at all): the tools it asks
# (systemctl, nv-fabricmanager, journalctl, dmesg) are looked for in these directories too
SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


def _environment():
    env = dict(os.environ)
    env['PATH'] = (env['PATH'] + ':' + SAFE_PATH) if env.get('PATH') else SAFE_PATH
    return env


def _command(argv):
    """``(rc, stdout)`` of a short command; rc None when it cannot run."""
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=10,
                                check=False, errors='replace', env=_environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    return result.returncode, result.stdout if result.stdout.strip() else result.stderr


def read_fabric_manager(config, gpus):
    """On an NVSwitch system (a GPU's NVLink ends at an NVSwitch): nvidia-fabricmanager's state and version."""
    nvswitch = any(gb.nvswitch_links((g.get('fleet') or {}).get('nvlink_remote_ids') or []) for g in gpus)
    if not nvswitch:
        return {'nvswitch': False, 'fabric_manager_state': None}
    return dict(gb.ask_fabric_manager(_command, config['systemctl'], config['fabric_manager_bin']), nvswitch=True)


def read_gpudirect(config):
    """The loaded nvidia* kernel modules, the driver's version file and the kernel release."""
    return {'modules': gb.loaded_modules(config['module_root']), 'driver_proc': gb.parse_driver_proc(_read(config['driver_proc'])),
            'kernel_release': os.uname()[2]}


def loop_actions(path):
    """The closed loop's actions per condition where its file exists, else None (every failure drains, as without the loop)."""
    text = _read(path) if path else None
    if not text:
        return None
    try:
        return conditions.load_overrides(json.loads(text).get('actions'))
    except (ValueError, AttributeError, InputError) as exc:
        print('WARN cannot use the closed loop actions %s: %s; every failure drains' % (path, exc))
        return None


def _import_pynvml():
    return nvml.import_bindings()


def observe_munge_key(config):
    """The munge key's mode and owner (and its directory's), or ``None`` when the configuration does not check it."""
    if not config['munge_key_path']:
        return None
    return _munge_key.observe(config['munge_key_path'], config['munge_user'])


class Budget(object):
    """The tier's time budget: a stage starts only while time is left; the stages that did not fit are named."""

    def __init__(self, seconds, start):
        self.deadline = start + seconds
        self.skipped = []

    def allows(self, checks):
        if time.monotonic() < self.deadline:
            return True
        self.skipped.extend(checks)
        return False


def check(config, pynvml, tier='periodic', start=None):
    """``(observed, failures)`` for this node, for ``tier``."""
    budget = Budget(config['%s_budget' % tier], time.monotonic() if start is None else start)
    wanted = set(hc.TIER_CHECKS[tier]) - set(config['disabled_checks'])
    if config['gpu_count'] == 0 and not config['mig_layout']:
        wanted.discard('xid')  # a node without GPUs has no NVIDIA driver to log Xids
    if pynvml is None:
        observed = {'nvml_error': 'no NVML bindings', 'gpus': []}
    else:
        observed = observe(pynvml, tier)
    if 'xid' in wanted and budget.allows(['xid']):
        observed['xids'], observed['xid_error'] = read_kernel_log(config['xid_source'])
    if 'ib' in wanted and budget.allows(['ib']):
        observed['ib_ports'], observed['ib_error'] = read_ib(config['ib_sysfs_root'])
    if 'fabric-manager' in wanted and pynvml is not None and budget.allows(['fabric-manager']):
        observed.update(read_fabric_manager(config, observed['gpus']))
    if 'gpudirect' in wanted and 'ib_ports' in observed and budget.allows(['gpudirect']):
        observed.update(read_gpudirect(config))
    if 'munge-key' in wanted and budget.allows(['munge-key']):
        observed['munge_key'] = observe_munge_key(config)
    minors_text = None
    present = set()
    if 'device-files' in wanted and config['check_device_files'] and budget.allows(['device-files']):
        if any(g.get('mig_devices') for g in observed['gpus']):
            minors_text = _read(config['mig_minors_path'])
        try:
            needed = hc.required_files(observed['gpus'], minors_text, config['mig_minors_path'])
        except ValueError:
            needed = []
        root = config['dev_root']
        for _index, path in needed:
            if os.path.exists(os.path.join(root, path.lstrip('/'))):
                present.add(path)
    observed['skipped'] = budget.skipped
    return observed, hc.find_failures(config, observed, present, minors_text, tier)


def _scontrol(config, argv):
    """What ``argv`` (scontrol) printed, through the collection's Slurm client (60 s at most); RuntimeError when it failed."""
    rc, out, err = run_process(argv, timeout=60)
    if rc != 0:
        raise RuntimeError('%s failed (rc=%d): %s' % (' '.join(argv), rc, (err or out).strip()))
    return out


def _write_json(path, data):
    if not path:
        return
    try:
        directory = os.path.dirname(path)
        if directory and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        tmp = path + '.tmp'
        with open(tmp, 'w') as handle:
            json.dump(data, handle, indent=1, sort_keys=True)
        os.rename(tmp, path)
    except (IOError, OSError):
        pass


def _read_passes(path):
    """The count of passing runs in a row kept in a state file (0 when there is none or it is unreadable)."""
    text = _read(path) if path else None
    try:
        passes = json.loads(text).get('passes', 0) if text else 0
    except (ValueError, AttributeError):
        return 0
    return passes if isinstance(passes, int) and not isinstance(passes, bool) and passes >= 0 else 0


def log_event(config, node, tier, action, message, failures, reason=None):
    """One syslog line and one JSON line in events_file per drain, requested drain or resume, with the evidence."""
    syslog.openlog('gpucluster-healthcheck', syslog.LOG_PID, syslog.LOG_DAEMON)
    syslog.syslog(syslog.LOG_WARNING, '%s %s (%s tier): %s' % (action, node, tier, message))
    for failure in failures:
        syslog.syslog(syslog.LOG_WARNING, 'evidence %s: %s' % (node, failure.text()))
    if not config['events_file']:
        return
    event = {'time': time.strftime('%Y-%m-%dT%H:%M:%S%z'), 'node': node, 'tier': tier, 'action': action, 'reason': reason,
             'message': message, 'failures': [f.as_dict() for f in failures]}
    try:
        with open(config['events_file'], 'a') as handle:
            handle.write(json.dumps(event, sort_keys=True) + '\n')
    except (IOError, OSError):
        pass


def _run(argv, timeout, env=None):
    """``(rc, stdout, stderr)`` of a tool of the deep tier; rc None when it ran out of time or could not start."""
    environment = _environment()
    environment.update(env or {})
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout,
                                check=False, errors='replace', env=environment)
    except subprocess.TimeoutExpired as exc:
        return None, _text(exc.stdout), _text(exc.stderr)
    except OSError as exc:
        return 127, '', str(exc)
    return result.returncode, result.stdout, result.stderr


def _text(data):
    if data is None:
        return ''
    return data.decode('utf-8', 'replace') if isinstance(data, bytes) else data


def _installed(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


# CUDA numbers the devices in PCI bus order like NVML's listing, so that nvbandwidth's device N is the
# N-th GPU by bus id (CUDA's default order is fastest first)
CUDA_ENV = {'CUDA_DEVICE_ORDER': 'PCI_BUS_ID'}
IB_CONNECT_ATTEMPTS = 5


def deep_ib_pairs(settings, pairs, rate):
    """ib_write_bw between each pair of HCAs: the server first, the client a moment later over loopback."""
    outcomes = []
    for index, pair in enumerate(pairs):
        server_argv, client_argv = deep.ib_argvs(settings, pair, index)
        environment = _environment()
        try:
            server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                      errors='replace', env=environment)
        except OSError as exc:
            outcomes.append((False, 'ib_write_bw could not start: %s' % exc, None))
            continue
        # perftest's client connects once: while the server is not listening yet it fails at once with
        # "Couldn't connect to localhost:<port>"; try again a few times before giving up
        for _attempt in range(IB_CONNECT_ATTEMPTS):
            time.sleep(1)
            client_run = _run(client_argv, settings['ib_timeout'])
            if "Couldn't connect to" not in (client_run[1] or '') + (client_run[2] or '') or server.poll() is not None:
                break
        # the server ends soon after a client that finished its test; after a client that failed or timed out it may
        # wait for a connection that never comes (a port down on the client's side): a second, not ten
        try:
            out, err = server.communicate(timeout=10 if client_run[0] == 0 else 1)
            server_run = (server.returncode, out, err)
        except subprocess.TimeoutExpired:
            server.kill()
            out, err = server.communicate()
            server_run = (None, out, err)
        outcomes.append(deep.judge_ib_pair(pair, server_run, client_run, settings, rate))
    return outcomes


def run_deep(config, settings, pynvml, node_name, start):
    """The deep tier on this node: each check where its tool is installed; the report line; the exit status."""
    observed = observe(pynvml) if pynvml is not None else {'nvml_error': 'no NVML bindings', 'gpus': []}
    gpus = deep.whole_gpus(observed['gpus'])
    model = gpus[0].get('name') if gpus else None
    cuda_env = dict(CUDA_ENV)
    visible = deep.cuda_visible_without_mig(os.environ.get('CUDA_VISIBLE_DEVICES'))
    if visible is not None:
        cuda_env['CUDA_VISIBLE_DEVICES'] = visible
    results = []
    for check in deep.CHECKS:
        if check not in settings['checks']:
            continue
        began = time.monotonic()
        if check == 'dcgm':
            if not _installed(settings['dcgmi']):
                item = deep.not_installed(check, settings['dcgmi'])
            else:
                rc, out, err = _run(deep.dcgm_argv(settings), settings['dcgm_timeout'])
                item = deep.ran_out(check, settings['dcgm_timeout']) if rc is None else deep.judge_dcgm(rc, out, err, settings['dcgm_level'])
        elif check == 'nccl':
            if not _installed(settings['all_reduce_perf']):
                item = deep.not_installed(check, settings['all_reduce_perf'])
            elif not gpus:
                item = deep.result(check, 'skip', 'no whole GPU for all_reduce_perf (%s)'
                                   % (observed.get('nvml_error') or 'NVML lists none outside MIG mode'))
            else:
                env = dict(cuda_env, **deep.nccl_env(settings))
                rc, out, err = _run(deep.nccl_argv(settings, len(gpus)), settings['nccl_timeout'], env)
                item = (deep.ran_out(check, settings['nccl_timeout']) if rc is None
                        else deep.judge_nccl(rc, out, err, settings, model, len(gpus)))
        elif check == 'nvbandwidth':
            if not _installed(settings['nvbandwidth']):
                item = deep.not_installed(check, settings['nvbandwidth'])
            else:
                rc, out, err = _run(deep.nvbandwidth_argv(settings), settings['nvbandwidth_timeout'], cuda_env)
                item = (deep.ran_out(check, settings['nvbandwidth_timeout']) if rc is None
                        else deep.judge_nvbandwidth(rc, out, err, settings, gpus))
        else:
            if not _installed(settings['ib_write_bw']):
                item = deep.not_installed(check, settings['ib_write_bw'])
            else:
                ports, error = read_ib(settings['ib_sysfs_root'])
                if error:
                    item = deep.result(check, 'error', 'cannot read the InfiniBand ports: %s' % error)
                else:
                    rate = deep.expected_ib_rate(ports, config.get('ib_rate_gbps'))
                    item = deep.judge_ib(deep_ib_pairs(settings, deep.ib_pairs(ports), rate))
        item['seconds'] = round(time.monotonic() - began, 1)
        results.append(item)
        print('%s %s: %s' % (item['status'].upper(), check, item['detail']))
    state_file = os.path.join(os.path.dirname(config['state_file']), 'deep-state.json') if config['state_file'] else None
    report, status = deep.outcome(node_name, results, config['reason_prefix'], time.monotonic() - start, _read_passes(state_file))
    _write_json(state_file, {'passes': report['passes'], 'node': node_name})
    print(deep.report_line(report))
    return status


def _parser():
    """The command line of gpucluster-healthcheck."""
    parser = argparse.ArgumentParser(prog='gpucluster-healthcheck', description='Tiered GPU node health check for Slurm.')
    parser.add_argument('--config', default=DEFAULT_CONFIG, help='expectations (JSON), default %(default)s')
    parser.add_argument('--node', help='Slurm node name (default: node_name of the configuration, else the short host name)')
    parser.add_argument('--tier', choices=hc.TIERS + (deep.TIER,), default='periodic', help='which checks to run (default %(default)s)')
    parser.add_argument('--deep-config', default='{}', help='the deep tier settings (JSON object; see _deep_tier.DEFAULTS)')
    parser.add_argument('--ib-sysfs-root', default='/sys/class/infiniband', help='InfiniBand sysfs tree for --observe/--baseline')
    parser.add_argument('--loop-actions', default=LOOP_ACTIONS, help="the closed loop's actions per condition, default %(default)s")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--dry-run', action='store_true', help='check and print; never run scontrol update')
    mode.add_argument('--resume', action='store_true', help="resume the node now if healthy and drained by this check")
    mode.add_argument('--observe', action='store_true', help='print what NVML sees as JSON and exit')
    mode.add_argument('--baseline', action='store_true', help='print the expectations this node meets now as JSON and exit')
    return parser


def _observe(args, pynvml, missing):
    """--observe / --baseline: print what NVML sees, or the expectations this node meets now; the exit status."""
    if pynvml is None:
        print('gpucluster-healthcheck: %s' % missing, file=sys.stderr)
        return 2
    observed = observe(pynvml)
    observed['ib_ports'], observed['ib_error'] = read_ib(args.ib_sysfs_root)
    if args.observe:
        print(json.dumps(observed, indent=1, sort_keys=True))
        return 0 if not observed['nvml_error'] else 1
    try:
        print(json.dumps(hc.baseline(observed), indent=1, sort_keys=True))
    except ValueError as exc:
        print('gpucluster-healthcheck: %s' % exc, file=sys.stderr)
        return 2
    return 0


def _deep(args, config, pynvml, start):
    """--tier deep: the deep tier with its --deep-config settings; the exit status."""
    try:
        data = json.loads(args.deep_config)
        if isinstance(data, dict) and 'ib_sysfs_root' not in data:
            data['ib_sysfs_root'] = config['ib_sysfs_root']
        settings = deep.load_config(data)
    except ValueError as exc:
        print('gpucluster-healthcheck: bad --deep-config: %s' % exc, file=sys.stderr)
        return 2
    return run_deep(config, settings, pynvml, args.node or config['node_name'] or socket.gethostname().split('.')[0], start)


def _print_findings(config, tier, failures, noted, observed):
    """Print the failures, the closed loop's notes, the warnings and the checks the budget left out."""
    for failure in failures:
        print('FAIL %s' % failure.text())
    for condition, action, failure in noted:
        print('NOTE %s (%s, %s): %s' % (failure.check, condition, action, failure.detail))
    for warning in hc.warnings(observed):
        print('WARN %s' % warning)
    if observed['skipped']:
        print('gpucluster-healthcheck: the %s tier ran out of its %gs budget; not checked: %s'
              % (tier, config['%s_budget' % tier], ', '.join(observed['skipped'])))


def main(argv=None, pynvml=None):
    start = time.monotonic()
    args = _parser().parse_args(argv)

    missing = None
    if pynvml is None:
        pynvml, missing = _import_pynvml()
    if args.observe or args.baseline:
        return _observe(args, pynvml, missing)

    try:
        with open(args.config) as handle:
            config = hc.load_config(json.load(handle))
    except (IOError, OSError, ValueError) as exc:
        print('gpucluster-healthcheck: cannot use the configuration %s: %s' % (args.config, exc), file=sys.stderr)
        return 2

    if pynvml is None and (config['gpu_count'] != 0 or config['mig_layout']):
        print('gpucluster-healthcheck: %s' % missing, file=sys.stderr)
        return 2
    if args.tier == deep.TIER:
        return _deep(args, config, pynvml, start)
    # a node that is to have no GPUs needs no NVML bindings
    observed, failures = check(config, pynvml, args.tier, start)
    if pynvml is None:
        observed['nvml_error'] = missing
    tier = args.tier
    node_name = args.node or config['node_name'] or socket.gethostname().split('.')[0]
    actions = loop_actions(args.loop_actions)
    noted = []
    if actions is not None:
        # the closed loop is on: comment-mode and record-only conditions do not drain
        failures, noted = conditions.split_failures(failures, actions)
    _print_findings(config, tier, failures, noted, observed)
    status = {'tier': tier, 'failures': [f.as_dict() for f in failures], 'gpus': len(observed['gpus']), 'action': 'none',
              'warnings': hc.warnings(observed),
              'skipped': observed['skipped'], 'seconds': round(time.monotonic() - start, 3)}
    if args.dry_run:
        print('gpucluster-healthcheck: %s (dry run)' % ('failing' if failures else 'healthy'))
        return 1 if failures else 0
    if tier == 'prolog':
        # the hook runner drains with this reason and Slurm requeues the job; nothing here calls slurmctld
        if not failures:
            print('gpucluster-healthcheck: healthy (prolog tier, %.2fs)' % (time.monotonic() - start))
            return 0
        reason = hc.reason_text(config['reason_prefix'], failures, tier)
        log_event(config, node_name, tier, 'drain requested', reason, failures, reason)
        print('drain-reason: %s' % reason)
        return 1

    try:
        # (the node name is checked there: --node or node_name with a leading "-" would be an option of scontrol)
        node = hc.parse_scontrol_node(_scontrol(config, hc.show_node_argv(config['scontrol'], node_name)))
        decision = hc.decide(failures, node, config['reason_prefix'], config['auto_resume'], args.resume, tier,
                             _read_passes(config['state_file']), config['resume_after_passes'])
        command = decision.argv(config['scontrol'], node_name)
        if command:
            _scontrol(config, command)
        hits = [(condition, failure) for condition, action, failure in noted if action == 'comment']
        if hits:
            # one hit per run in the node's Comment: the closed loop on the controller counts them
            _scontrol(config, [config['scontrol'], 'update', 'nodename=' + hc.check_node_name(node_name),
                               'comment=' + node_loop.hit_comment(config['reason_prefix'], hits[0][0], time.time(), hits[0][1].detail)])
    except (RuntimeError, ValueError) as exc:
        print('gpucluster-healthcheck: %s' % exc, file=sys.stderr)
        status['error'] = str(exc)
        _write_json(config['status_file'], status)
        return 2
    if decision.action != 'none':
        log_event(config, node_name, tier, decision.action, decision.message, failures, decision.reason or node['reason'])
    _write_json(config['state_file'], {'passes': decision.passes, 'node': node_name})
    print('gpucluster-healthcheck: %s' % decision.message)
    status['action'] = decision.action
    status['message'] = decision.message
    _write_json(config['status_file'], status)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
