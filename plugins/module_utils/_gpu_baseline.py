# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU node's baseline: what must hold before the GPU stage changes anything (pure logic).

Read by the module ``gpucluster.bringup.gpu_baseline`` (the nvml role's last step, the mig role before it
drains a node for a MIG mode change) and by the health check's periodic tier:

* the NVIDIA driver, at least the version the GPU models and MIG need (``_healthcheck_fleet.driver_failures``),
  and persistence mode (``_healthcheck_fleet.persistence_failures``);
* on NVSwitch systems (HGX: a GPU's NVLink ends at an NVSwitch, ``nvmlDeviceGetNvLinkRemotePciInfo``) the
  nvidia-fabricmanager service running with the driver's version, and the GPUs' fabric state
  (``_healthcheck_fleet.fabric_failures``);
* where InfiniBand is present, GPUDirect RDMA: ``nvidia_peermem`` loaded, or DMA-BUF (the open kernel modules
  of R515 or newer on Linux 5.12 or newer);
* before a MIG mode change (which needs a GPU reset): the processes that hold the GPUs' device files and that
  neither a drain nor the mig role stops (jobs are drained; the role stops ``mig_reset_blockers``), and a loaded
  ``nvidia_drm``.

Every failure is ``(check, gpu index or None, detail)`` with the fix in the detail; :func:`message` names the
node.  :func:`ask_fabric_manager` and :func:`loaded_modules` are the two readers the module and the program share.
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet

CHECKS = ('driver', 'persistence', 'fabric-manager', 'gpudirect', 'reset-blockers')
# PCI device ids of NVSwitches (vendor 0x10de, pci.ids): 0x1AF1 the A100-generation NVSwitch (HGX A100),
# 0x22A3 the H100-generation NVSwitch (HGX H100/H200)
NVSWITCH_DEVICE_IDS = (0x1AF1, 0x22A3)
FABRIC_MANAGER = 'nvidia-fabricmanager'
# DMA-BUF GPUDirect RDMA: the open GPU kernel modules of R515 and later, Linux 5.12 and later
# (NVIDIA's GPUDirect RDMA guide, "Using DMA-BUF"; NCCL uses it when the kernel and driver offer it)
DMABUF_DRIVER = '515.43.04'
DMABUF_KERNEL = (5, 12)

# systemctl is-active's answers; anything else means systemd could not be asked
UNIT_STATES = ('active', 'inactive', 'failed', 'activating', 'deactivating', 'reloading', 'maintenance', 'refreshing')

_FM_VERSION = re.compile(r'Fabric Manager version is\s*:\s*(\d+(?:\.\d+)+)')
_DRIVER_PROC = re.compile(r'^NVRM version: NVIDIA UNIX (Open Kernel Module for \S+|\S+ Kernel Module)\s+(\d+(?:\.\d+)+)', re.M)
_UNIT = re.compile(r'/([^/\s]+\.(?:service|scope))(?:/|$)')


def nvswitch_links(remote_device_ids):
    """How many NVLinks end at an NVSwitch, from ``nvmlPciInfo_t.pciDeviceId`` values (device id in the upper 16 bits)."""
    return len([v for v in remote_device_ids if v is not None and (int(v) >> 16) in NVSWITCH_DEVICE_IDS])


def parse_fm_version(text):
    """``nv-fabricmanager --version`` -> ``"550.54.15"``, or None."""
    match = _FM_VERSION.search(text or '')
    return match.group(1) if match else None


def parse_driver_proc(text):
    """``/proc/driver/nvidia/version`` -> ``{'version', 'open'}`` (open: the open GPU kernel modules), or None."""
    match = _DRIVER_PROC.search(text or '')
    if not match:
        return None
    return {'version': match.group(2), 'open': match.group(1).startswith('Open')}


def kernel_key(release):
    """``"6.1.0-28-amd64"`` -> ``(6, 1)``; None when unreadable."""
    match = re.match(r'^(\d+)\.(\d+)', str(release or ''))
    return (int(match.group(1)), int(match.group(2))) if match else None


def unit_of(cgroup_text):
    """The systemd unit of a process from ``/proc/<pid>/cgroup`` (``0::/system.slice/telegraf.service``), or None."""
    units = _UNIT.findall(cgroup_text or '')
    return units[-1] if units else None


def is_job(cgroup_text):
    """A Slurm job's process (slurmstepd puts them under ``.../job_<id>/``): a drain waits for it."""
    return bool(re.search(r'/job_\d+(/|$)', cgroup_text or '', re.M)) or 'slurmstepd.scope' in (cgroup_text or '')


def ask_fabric_manager(run, systemctl='systemctl', binary='nv-fabricmanager'):
    """nvidia-fabricmanager's state and ``--version`` text through ``run(argv) -> (rc or None, output)``:
    ``{'fabric_manager_state', 'fabric_manager_version'}``, or ``{'fabric_manager_error'}`` when systemd or the
    program cannot be asked (a problem of the check, not of the node)."""
    _rc, out = run([systemctl, 'is-active', FABRIC_MANAGER])
    state = (out.strip().splitlines() or [''])[0].strip()
    if state not in UNIT_STATES:
        return {'fabric_manager_error': '%s is-active %s: %s' % (systemctl, FABRIC_MANAGER, ' '.join(out.split())[:160])}
    version = None
    if state == 'active':
        rc, version = run([binary, '--version'])
        if rc is None:
            return {'fabric_manager_error': '%s --version: %s' % (binary, version)}
    return {'fabric_manager_state': state, 'fabric_manager_version': version}


def loaded_modules(root):
    """The loaded nvidia* kernel modules listed under ``root`` (``/sys/module``); [] when it cannot be read."""
    try:
        return sorted(m for m in os.listdir(root) if m.startswith('nvidia'))
    except OSError:
        return []


def fabric_manager_failures(nvswitch, service_state, fm_version_text, driver_version):
    """On an NVSwitch system: nvidia-fabricmanager active and of the driver's version."""
    if not nvswitch:
        return []
    if service_state != 'active':
        return [('fabric-manager', None, '%s is %s on this NVSwitch system: the GPUs join no NVLink fabric and CUDA jobs fail; '
                 'systemctl enable --now %s (the package of the driver\'s version, %s)'
                 % (FABRIC_MANAGER, service_state or 'not installed', FABRIC_MANAGER, driver_version or '?'))]
    version = parse_fm_version(fm_version_text)
    if version is None:
        return [('fabric-manager', None, 'cannot tell the version of %s (nv-fabricmanager --version printed %r)'
                 % (FABRIC_MANAGER, (fm_version_text or '').strip()[:80]))]
    if driver_version and version != driver_version:
        return [('fabric-manager', None, '%s is version %s, the driver %s: they must be the same release; install the '
                 'fabric manager package of %s' % (FABRIC_MANAGER, version, driver_version, driver_version))]
    return []


def gpudirect_failures(ib_ports, modules, driver_proc, kernel_release, required=False):
    """Where InfiniBand ports exist (or ``required``): nvidia_peermem loaded, or DMA-BUF possible."""
    if not ib_ports and not required:
        return []
    if 'nvidia_peermem' in modules:
        return []
    info = driver_proc or {}
    kernel = kernel_key(kernel_release)
    dmabuf = (info.get('open') and info.get('version') and fleet.version_key(info['version']) >= fleet.version_key(DMABUF_DRIVER)
              and kernel is not None and kernel >= DMABUF_KERNEL)
    if dmabuf:
        return []
    why = []
    if not info:
        why.append('the driver version file is unreadable')
    elif not info.get('open'):
        why.append('the proprietary kernel modules have no DMA-BUF')
    elif fleet.version_key(info['version']) < fleet.version_key(DMABUF_DRIVER):
        why.append('driver %s is older than %s' % (info['version'], DMABUF_DRIVER))
    if kernel is None or kernel < DMABUF_KERNEL:
        why.append('kernel %s is older than %d.%d' % (kernel_release, DMABUF_KERNEL[0], DMABUF_KERNEL[1]))
    return [('gpudirect', None, 'no GPUDirect RDMA for the %d InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not '
             'possible (%s); modprobe nvidia_peermem (and list it in /etc/modules-load.d), or use the open kernel modules'
             % (ib_ports, '; '.join(why)))]


def reset_blocker_failures(holders, modules, stopped_services=()):
    """Before a GPU reset: ``holders`` ([{pid, name, unit, job, gpu}], the processes with a /dev/nvidia* open) that
    are no job and not of a service the mig role stops, and a loaded nvidia_drm."""
    stopped = set(s if s.endswith('.service') else s + '.service' for s in stopped_services)
    failures = []
    for holder in holders:
        if holder.get('job') or holder.get('unit') in stopped:
            continue
        unit = holder.get('unit')
        fix = ('add %s to mig_reset_blockers (the role stops it during the change) or stop it'
               % unit[:-len('.service')] if unit and unit.endswith('.service') else 'stop it')
        failures.append(('reset-blockers', holder.get('gpu'), 'process %s (%s)%s holds %s, which blocks the GPU reset of the MIG mode '
                         'change; %s' % (holder['pid'], holder.get('name') or '?', ' of %s' % unit if unit else '',
                                         holder.get('device', 'a GPU'), fix)))
    if 'nvidia_drm' in modules:
        failures.append(('reset-blockers', None, 'nvidia_drm is loaded (display/KMS): it holds the GPUs and a GPU reset fails; '
                         'modprobe -r nvidia_drm nvidia_modeset and blacklist nvidia_drm on compute nodes'))
    return failures


def message(node, failures):
    """One text for a failed baseline, a line per failure naming the node and the GPU."""
    lines = []
    for check, gpu, detail in failures:
        lines.append('%s%s: %s: %s' % (node, '' if gpu is None else ' GPU %d' % gpu, check, detail))
    return '; '.join(lines)
