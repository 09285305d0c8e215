#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: gpu_baseline
short_description: Check a GPU node's baseline before the GPU stage changes anything
version_added: 0.1.0
description:
  - Reads the node (NVML, the fabric manager, the kernel modules, the driver's version file, the InfiniBand sysfs tree, the
    processes holding the GPUs) and fails, with one line per problem naming the node, the GPU and the fix, when the node
    cannot run GPU jobs as it should.
  - V(driver) - the NVIDIA driver answers and is at least the version the GPU models (and MIG) need, or O(driver_min).
  - V(persistence) - persistence mode is on for every GPU (C(nvidia-persistenced)).
  - V(fabric-manager) - on NVSwitch systems (an NVLink of a GPU ends at an NVSwitch) C(nvidia-fabricmanager) is active,
    of the driver's version, and every GPU's fabric state is completed (Hopper and newer report it).
  - V(gpudirect) - where InfiniBand ports exist, GPUDirect RDMA is possible - C(nvidia_peermem) loaded, or DMA-BUF (the
    open kernel modules of R515 and later on Linux 5.12 and later).
  - V(reset-blockers) - the processes holding the GPUs' device files that are neither Slurm jobs nor of O(stopped_services),
    and a loaded C(nvidia_drm) - they make the GPU reset of a MIG mode change fail. The mig role asks for it before it drains
    a node for a mode change.
  - Nothing is changed on the node. Every option is checked before anything is read; a bad one fails naming the option,
    the value and what is valid.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
requirements:
  - nvidia-ml-py (the C(pynvml) module) on the node
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  checks:
    description: The checks to run (at least one).
    type: list
    elements: str
    choices: [driver, persistence, fabric-manager, gpudirect, reset-blockers]
    default: [driver, persistence, fabric-manager, gpudirect]
  driver_min:
    description:
      - The oldest acceptable driver (C(550.54.14)); default (no value) is the oldest that supports the node's GPU models.
      - An empty or blank string is refused.
    type: str
  gpudirect:
    description: V(auto) checks GPUDirect RDMA where InfiniBand ports exist, V(required) also where none is seen.
    type: str
    choices: [auto, required]
    default: auto
  stopped_services:
    description:
      - Services the caller stops around the GPU reset (the mig role's C(mig_reset_blockers)); their processes do not count.
      - Each a systemd unit name, with or without C(.service) - letters, digits, C(:), C(_), C(.), a backslash, C(@) and C(-), not
        starting with C(-) or C(@).
    type: list
    elements: str
    default: []
  ib_sysfs_root:
    description:
      - The InfiniBand sysfs tree, an absolute path. Absent - the node has no InfiniBand. A directory must hold only InfiniBand
        devices (each a directory with C(ports/)); a path under C(/proc) is refused.
    type: path
    default: /sys/class/infiniband
  module_root:
    description:
      - Where the loaded kernel modules are listed (C(/sys/module)), an absolute path. It must exist and hold only
        directories (one per module); a path under C(/proc) is refused.
    type: path
    default: /sys/module
  driver_proc:
    description:
      - The driver's version file, an absolute path. Absent - the driver is not loaded (the checks say so). A directory,
        a device, a FIFO or a file without the C(NVRM version:) line of the driver's file is refused.
    type: path
    default: /proc/driver/nvidia/version
  node_name:
    description: The name the messages give the node (no spaces, at most 255 characters); default is the short host name.
    type: str
'''

EXAMPLES = r'''
- name: Check the GPU node's baseline
  gpucluster.bringup.gpu_baseline:

- name: Before a MIG mode change, find what blocks the GPU reset (nothing is drained yet)
  gpucluster.bringup.gpu_baseline:
    checks: [reset-blockers]
    stopped_services: [nvidia-persistenced, dcgm]
'''

RETURN = r'''
failures:
  description: One entry per problem found (empty when the node passes).
  returned: always
  type: list
  elements: dict
  sample: [{check: fabric-manager, gpu: null, detail: "nvidia-fabricmanager is inactive on this NVSwitch system: ..."}]
observed:
  description: What was read - driver version, kernel module flavour, NVSwitch links, the fabric manager's state and version,
    InfiniBand ports, loaded NVIDIA modules, GPU holders.
  returned: always
  type: dict
'''

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb
from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_holders_io as holders_io
from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet

BINDINGS = nvml.import_bindings()
PROC_DIR = '/proc'
DEV_DIR = '/dev'


def read_gpus(client):
    gpus = []
    for index in range(client.count()):
        handle = client.handle(index)
        gpu = {'index': index, 'name': nvml.text(client.call('nvmlDeviceGetName', handle)),
               'pci_bus_id': nvml.text(client.call('nvmlDeviceGetPciInfo', handle).busId),
               'minor': int(client.call('nvmlDeviceGetMinorNumber', handle))}
        gpu['fleet'] = client.fleet_health(handle)
        gpu['nvswitch_links'] = gb.nvswitch_links(gpu['fleet']['nvlink_remote_ids'])
        gpus.append(gpu)
    return gpus


def _run(module, argv):
    """``(rc or None, output)`` of a command found on the node's PATH (None: not there)."""
    binary = argv[0] if '/' in argv[0] else module.get_bin_path(argv[0])
    if not binary:
        return None, '%s: not found' % argv[0]
    rc, out, err = module.run_command([binary] + list(argv[1:]))
    return rc, out if out.strip() else err


def ib_port_count(root):
    ports, _error = fleet.read_ib_ports(root)
    return len([p for p in ports if p['link_layer'].lower() == 'infiniband'])


def holders(minors):
    """Processes with /dev/nvidia<minor> open: ``[{pid, name, unit, job, gpu, device}]``."""
    return holders_io.holders(minors, PROC_DIR, DEV_DIR)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type='list', elements='str', choices=list(gb.CHECKS), default=['driver', 'persistence', 'fabric-manager', 'gpudirect']),
            driver_min=dict(type='str'),
            gpudirect=dict(type='str', choices=['auto', 'required'], default='auto'),
            stopped_services=dict(type='list', elements='str', default=[]),
            ib_sysfs_root=dict(type='path', default='/sys/class/infiniband'),
            module_root=dict(type='path', default='/sys/module'),
            driver_proc=dict(type='path', default='/proc/driver/nvidia/version'),
            node_name=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        gb.check_params(params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    node = params['node_name'] if params['node_name'] is not None else socket.gethostname().split('.')[0]
    pynvml, missing = BINDINGS
    if pynvml is None:
        if module.check_mode:  # the nvml role installs them in a real run
            module.exit_json(changed=False, skipped=True, failures=[], observed={}, msg='not checked: %s' % missing)
        module.fail_json(msg='%s: %s' % (node, missing))
    checks = set(params['checks'])
    try:
        with nvml.session(pynvml) as client:
            driver = client.driver_version()
            gpus = read_gpus(client)
    except nvml.NvmlError as exc:
        module.fail_json(msg='%s: driver: NVML does not answer: %s; load the NVIDIA driver (nvidia-smi must work)' % (node, exc))
    observed = {'driver_version': driver, 'gpus': len(gpus), 'nvswitch_links': sum(g['nvswitch_links'] for g in gpus)}
    modules = observed['modules'] = gb.loaded_modules(params['module_root'])
    failures = []
    if 'driver' in checks:
        failures += fleet.driver_failures(driver, [g['name'] for g in gpus], params['driver_min'])
    if 'persistence' in checks:
        failures += fleet.persistence_failures(gpus)
    if 'fabric-manager' in checks:
        nvswitch = observed['nvswitch_links'] > 0
        asked = gb.ask_fabric_manager(lambda argv: _run(module, argv)) if nvswitch else {'fabric_manager_state': None}
        if asked.get('fabric_manager_error'):
            module.fail_json(msg='%s: fabric-manager: cannot tell: %s' % (node, asked['fabric_manager_error']), observed=observed)
        state, fm_version = asked['fabric_manager_state'], asked.get('fabric_manager_version')
        observed.update({'fabric_manager_state': state, 'fabric_manager_version': gb.parse_fm_version(fm_version)})
        manager = gb.fabric_manager_failures(nvswitch, state, fm_version, driver)
        # the fabric manager down is the cause; the GPUs' fabric state then only repeats it
        failures += manager or (fleet.fabric_failures(gpus, driver) if nvswitch else [])
    if 'gpudirect' in checks:
        ports = ib_port_count(params['ib_sysfs_root'])
        text, problem = gb.read_driver_proc(params['driver_proc'])
        proc = gb.parse_driver_proc(text)
        if text is not None and proc is None:
            problem = 'the driver version file %s names no driver version on its NVRM version line' % params['driver_proc']
        observed.update({'ib_ports': ports, 'kernel_modules': proc and ('open' if proc['open'] else 'proprietary')})
        failures += gb.gpudirect_failures(ports, modules, proc, os.uname()[2], params['gpudirect'] == 'required', problem)
    if 'reset-blockers' in checks:
        found = holders([(g['index'], g['minor']) for g in gpus])
        observed['holders'] = found
        failures += gb.reset_blocker_failures(found, modules, params['stopped_services'])
    result = [{'check': c, 'gpu': g, 'detail': d} for c, g, d in failures]
    if failures:
        module.fail_json(msg=gb.message(node, failures), failures=result, observed=observed)
    module.exit_json(changed=False, failures=[], observed=observed)


if __name__ == '__main__':
    main()
