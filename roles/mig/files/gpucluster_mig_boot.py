# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpucluster-mig-boot: re-create this node's MIG layout at boot, before slurmd starts.

The role gpucluster.bringup.mig installs this file as the program, with a
"#!" line naming the node's Python 3 (mig_python) put in front, and runs it
from gpucluster-mig.service (Type=oneshot, Before=slurmd.service). MIG
instances do not survive a reboot (MIG mode does); without them slurmd would
find fewer GRES than slurm.conf declares and the node would go INVAL.

    gpucluster-mig-boot            apply the layout in /etc/gpucluster/mig-layout.json
    gpucluster-mig-boot --check    print what it would change, change nothing
    gpucluster-mig-boot --layout-file FILE

The layout file is {"layout": NAME, "gpus": [...]}, "gpus" in the format of
the nvidia_mig module's option. The program runs the MIG manager the module
runs (plugins/module_utils/mig/_mig_nvml.py and what it imports, standard
library only, which the role installs in the collection's tree under LIB_DIR
with the node_library filter; GPUCLUSTER_MIG_LIB overrides it):
the same validation, the same minimal-change planner, the same refusal to
touch instances that processes use, the same rollback. Ansible is not needed
on the node.

Exit status: 0 the layout is in place (or, with --check, was planned),
1 applying failed or a GPU reset is still needed, 2 the program could not
run (layout file unreadable or invalid, pynvml missing).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys

LIB_DIR = os.environ.get('GPUCLUSTER_MIG_LIB', '/usr/local/lib/gpucluster-mig')
if os.path.isdir(LIB_DIR) and LIB_DIR not in sys.path:
    sys.path.insert(0, LIB_DIR)
DEFAULT_LAYOUT_FILE = '/etc/gpucluster/mig-layout.json'
PROG = 'gpucluster-mig-boot'

_ENTRY_KEYS = ('gpu', 'model', 'mig', 'instances', 'shape')
_INSTANCE_KEYS = ('profile', 'count', 'placement', 'compute_instances')


class BootError(Exception):
    """Something the program reports and exits on; ``code`` is the exit status."""

    def __init__(self, message, code):
        super(BootError, self).__init__(message)
        self.code = code


def load_manager():
    """``(manager module, pynvml)``: the MIG manager installed under LIB_DIR and the NVML bindings."""
    try:
        from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml  # pylint: disable=import-outside-toplevel
        from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise BootError('cannot load the MIG manager from %s: %s; re-run the gpucluster.bringup.mig role' % (LIB_DIR, exc), 2)
    pynvml, missing = _nvml.import_bindings()
    if pynvml is None:
        raise BootError(missing, 2)
    return _mig_nvml, pynvml


def _normalise_instance(spec, where):
    if not isinstance(spec, dict):
        raise BootError('%s is %r; each instance is a mapping with "profile" (and count, placement, compute_instances)' % (where, spec), 2)
    unknown = sorted(set(spec) - set(_INSTANCE_KEYS))
    if unknown:
        raise BootError('%s has unknown key(s) %s; valid keys: %s' % (where, ', '.join(unknown), ', '.join(_INSTANCE_KEYS)), 2)
    if not spec.get('profile'):
        raise BootError('%s has no "profile"' % where, 2)
    count = spec.get('count')
    return {'profile': str(spec['profile']), 'count': 1 if count is None else count, 'placement': spec.get('placement'),
            'compute_instances': spec.get('compute_instances')}


def normalise(gpus):
    """The layout's ``gpus`` with the module's defaults filled in (what AnsibleModule would pass)."""
    if not isinstance(gpus, list) or not gpus:
        raise BootError('"gpus" is %r; it must be a non-empty list of GPU entries' % (gpus,), 2)
    result = []
    for number, entry in enumerate(gpus):
        where = 'gpus[%d]' % number
        if not isinstance(entry, dict):
            raise BootError('%s is %r; each entry is a mapping with keys %s' % (where, entry, ', '.join(_ENTRY_KEYS)), 2)
        unknown = sorted(set(entry) - set(_ENTRY_KEYS))
        if unknown:
            raise BootError('%s has unknown key(s) %s; valid keys: %s' % (where, ', '.join(unknown), ', '.join(_ENTRY_KEYS)), 2)
        instances = entry.get('instances') or []
        if not isinstance(instances, list):
            raise BootError('%s.instances is %r; it must be a list' % (where, instances), 2)
        result.append({
            'gpu': 'all' if entry.get('gpu') is None else str(entry['gpu']),
            'model': None if entry.get('model') is None else str(entry['model']),
            'mig': True if entry.get('mig') is None else bool(entry['mig']),
            'instances': [_normalise_instance(spec, '%s.instances[%d]' % (where, i)) for i, spec in enumerate(instances)],
            'shape': None if entry.get('shape') is None else str(entry['shape']),
        })
    return result


def read_layout(path):
    """``(name, gpus)`` from the layout file."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError) as exc:
        raise BootError('cannot read the layout file %s: %s' % (path, exc.strerror or exc), 2)
    except ValueError as exc:
        raise BootError('the layout file %s is not JSON: %s' % (path, exc), 2)
    if not isinstance(data, dict) or 'gpus' not in data:
        raise BootError('the layout file %s must hold {"layout": NAME, "gpus": [...]}' % path, 2)
    return str(data.get('layout') or 'unnamed'), normalise(data['gpus'])


def apply(gpus, check_mode=False):
    """Apply ``gpus`` on this node; returns the manager's result (changed, actions, gpus)."""
    manager, pynvml = load_manager()
    try:
        return manager.apply_layout(pynvml, gpus, force=False, check_mode=check_mode)
    except manager.MigFailure as exc:
        raise BootError(exc.msg, 1)


def report(name, result, check_mode):
    """Lines to print, and the exit status."""
    lines = ['%s: %s' % (PROG, action) for action in result['actions']]
    pending = [gpu for gpu in result['gpus'] if gpu['reset_required']]
    for gpu in pending:
        blockers = ', '.join('pid %s (%s)' % (p['pid'], p['name'] or '?') for p in gpu['blocking_processes']) or 'none'
        lines.append('%s: GPU %d (%s): the MIG mode change is pending until the GPU is reset; processes that block the reset: %s'
                     % (PROG, gpu['index'], gpu['uuid'], blockers))
    if check_mode:
        verb = 'would take %d action(s)' % len(result['actions']) if result['changed'] else 'is in place, nothing to do'
    else:
        verb = 'applied (%d action(s))' % len(result['actions']) if result['changed'] else 'already in place'
    lines.append('%s: layout %s %s on %d GPU(s)' % (PROG, name, verb, len(result['gpus'])))
    return lines, (1 if pending and not check_mode else 0)


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description='Re-create the MIG layout of this node (at boot, before slurmd).')
    parser.add_argument('--layout-file', default=DEFAULT_LAYOUT_FILE, help='layout file (default %(default)s)')
    parser.add_argument('--check', action='store_true', help='print what would change, change nothing')
    args = parser.parse_args(argv)
    try:
        name, gpus = read_layout(args.layout_file)
        result = apply(gpus, check_mode=args.check)
    except BootError as exc:
        sys.stderr.write('%s: error: %s\n' % (PROG, exc))
        return exc.code
    lines, status = report(name, result, args.check)
    sys.stdout.write('\n'.join(lines) + '\n')
    return status


if __name__ == '__main__':
    sys.exit(main())
