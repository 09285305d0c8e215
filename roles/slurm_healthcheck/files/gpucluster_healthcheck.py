# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpucluster-healthcheck: GPU node health check for Slurm's HealthCheckProgram.

The role installs this file as the program, with a "#!" line naming the
node's Python 3 (slurm_healthcheck_python) put in front.

Installed by the role gpucluster.bringup.slurm_healthcheck.  slurmd runs it
every HealthCheckInterval seconds.  It reads the GPUs through the
collection's NVML client (module_utils/_nvml.py over nvidia-ml-py),
checks them and their device files against /etc/gpucluster/healthcheck.json,
checks that the munge key is private to the munge user (mode 0400/0600, in a
0700 directory, both owned by munge) and, when a check fails, drains the node with the reason
"healthcheck: <check>: <detail>".  It never resumes a node drained by
someone else; it resumes its own drain only with --resume (the resume
playbook) or auto_resume in the configuration.

    gpucluster-healthcheck              check; drain on failure
    gpucluster-healthcheck --dry-run    check and print, change nothing
    gpucluster-healthcheck --resume     check; resume this check's drain if healthy
    gpucluster-healthcheck --observe    print what NVML sees as JSON
    gpucluster-healthcheck --baseline   print the expectations this node meets now as JSON (for the role)

Exit status: 0 healthy, 1 a check failed, 2 the check could not run (bad
configuration, pynvml missing, scontrol failing): the node is not drained
for a problem of the check itself.
The decisions live in the collection's module_utils slurm/_healthcheck.py (with
mig/_mig_minors.py, slurm/_munge_key.py and _nvml.py), which the role installs
in the collection's tree under LIB_DIR (the node_library filter, the way every
node program gets its module_utils; GPUCLUSTER_HEALTHCHECK_LIB overrides it).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import socket
import subprocess
import sys

LIB_DIR = os.environ.get('GPUCLUSTER_HEALTHCHECK_LIB', '/usr/local/lib/gpucluster-healthcheck')
if os.path.isdir(LIB_DIR) and LIB_DIR not in sys.path:
    sys.path.insert(0, LIB_DIR)

from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _munge_key  # noqa: E402

DEFAULT_CONFIG = '/etc/gpucluster/healthcheck.json'


def read_gpu(client, index):
    """One GPU as the dictionary _healthcheck.find_failures takes; ``error`` set when NVML fails for it."""
    gpu = {'index': index}
    try:
        handle = client.handle(index)
        gpu['name'] = nvml.text(client.call('nvmlDeviceGetName', handle))
        gpu['pci_bus_id'] = nvml.text(client.call('nvmlDeviceGetPciInfo', handle).busId)
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
        gpu.update(client.health(handle))
    except nvml.NvmlError as exc:
        gpu['error'] = str(exc)
    return gpu


def observe(pynvml):
    """What NVML says about the node: ``{'nvml_error': text or None, 'gpus': [...]}``."""
    try:
        with nvml.session(pynvml) as client:
            return {'nvml_error': None, 'gpus': [read_gpu(client, index) for index in range(client.count())]}
    except nvml.NvmlError as exc:
        return {'nvml_error': str(exc), 'gpus': []}


def _import_pynvml():
    return nvml.import_bindings()


def observe_munge_key(config):
    """The munge key's mode and owner (and its directory's), or ``None`` when the configuration does not check it."""
    if not config['munge_key_path']:
        return None
    return _munge_key.observe(config['munge_key_path'], config['munge_user'])


def check(config, pynvml):
    """``(observed, failures)`` for this node."""
    observed = observe(pynvml)
    observed['munge_key'] = observe_munge_key(config)
    minors_text = None
    if any(g.get('mig_devices') for g in observed['gpus']):
        try:
            with open(config['mig_minors_path']) as handle:
                minors_text = handle.read()
        except (IOError, OSError):
            minors_text = None
    present = set()
    if config['check_device_files']:
        try:
            needed = hc.required_files(observed['gpus'], minors_text, config['mig_minors_path'])
        except ValueError:
            needed = []
        root = config['dev_root']
        for _index, path in needed:
            if os.path.exists(os.path.join(root, path.lstrip('/'))):
                present.add(path)
    return observed, hc.find_failures(config, observed, present, minors_text)


def _scontrol(config, argv):
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError('%s failed: %s' % (' '.join(argv), exc))
    if result.returncode != 0:
        raise RuntimeError('%s failed (rc=%d): %s' % (' '.join(argv), result.returncode, (result.stderr or result.stdout).strip()))
    return result.stdout


def _write_status(config, status):
    path = config['status_file']
    if not path:
        return
    try:
        tmp = path + '.tmp'
        with open(tmp, 'w') as handle:
            json.dump(status, handle, indent=1, sort_keys=True)
        os.rename(tmp, path)
    except (IOError, OSError):
        pass


def main(argv=None, pynvml=None):
    parser = argparse.ArgumentParser(prog='gpucluster-healthcheck', description='GPU node health check for Slurm.')
    parser.add_argument('--config', default=DEFAULT_CONFIG, help='expectations (JSON), default %(default)s')
    parser.add_argument('--node', help='Slurm node name (default: node_name of the configuration, else the short host name)')
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument('--dry-run', action='store_true', help='check and print; never run scontrol update')
    mode.add_argument('--resume', action='store_true', help="resume the node if healthy and drained by this check")
    mode.add_argument('--observe', action='store_true', help='print what NVML sees as JSON and exit')
    mode.add_argument('--baseline', action='store_true', help='print the expectations this node meets now as JSON and exit')
    args = parser.parse_args(argv)

    missing = None
    if pynvml is None:
        pynvml, missing = _import_pynvml()
    if args.observe or args.baseline:
        if pynvml is None:
            print('gpucluster-healthcheck: %s' % missing, file=sys.stderr)
            return 2
        observed = observe(pynvml)
        if args.observe:
            print(json.dumps(observed, indent=1, sort_keys=True))
            return 0 if not observed['nvml_error'] else 1
        try:
            print(json.dumps(hc.baseline(observed), indent=1, sort_keys=True))
        except ValueError as exc:
            print('gpucluster-healthcheck: %s' % exc, file=sys.stderr)
            return 2
        return 0

    try:
        with open(args.config) as handle:
            config = hc.load_config(json.load(handle))
    except (IOError, OSError, ValueError) as exc:
        print('gpucluster-healthcheck: cannot use the configuration %s: %s' % (args.config, exc), file=sys.stderr)
        return 2

    if pynvml is None:
        if config['gpu_count'] != 0 or config['mig_layout']:
            print('gpucluster-healthcheck: %s' % missing, file=sys.stderr)
            return 2
        # a node that is to have no GPUs needs no NVML bindings
        observed = {'nvml_error': missing, 'gpus': [], 'munge_key': observe_munge_key(config)}
        failures = hc.find_failures(config, observed)
    else:
        observed, failures = check(config, pynvml)
    for failure in failures:
        print('FAIL %s' % failure.text())
    status = {'failures': [f.as_dict() for f in failures], 'gpus': len(observed['gpus']), 'action': 'none'}
    if args.dry_run:
        print('gpucluster-healthcheck: %s (dry run)' % ('failing' if failures else 'healthy'))
        return 1 if failures else 0

    node_name = args.node or config['node_name'] or socket.gethostname().split('.')[0]
    try:
        node = hc.parse_scontrol_node(_scontrol(config, [config['scontrol'], '-o', 'show', 'node', node_name]))
        decision = hc.decide(failures, node, config['reason_prefix'], config['auto_resume'], args.resume)
        command = decision.argv(config['scontrol'], node_name)
        if command:
            _scontrol(config, command)
    except (RuntimeError, ValueError) as exc:
        print('gpucluster-healthcheck: %s' % exc, file=sys.stderr)
        status['error'] = str(exc)
        _write_status(config, status)
        return 2
    print('gpucluster-healthcheck: %s' % decision.message)
    status['action'] = decision.action
    status['message'] = decision.message
    _write_status(config, status)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
