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
:func:`check_params` judges the module's options before anything is read (:func:`require_unit`, the systemd unit
names of the options, serves ``slurm_daemons`` too); :func:`read_driver_proc` reads the driver's version file
naming why it cannot be read.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import stat

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import PSEUDO_ROOTS, InputError, require_match, require_unit, show
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import version_key

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

# what /proc/driver/nvidia/version starts with (nv-procfs.c: "NVRM version: %s"), whatever the release prints after it
DRIVER_PROC_HEAD = 'NVRM version:'
DRIVER_PROC_MAX = 65536


def _under_proc(path):
    """The kernel file system ``path`` is under, other than /sys (where the trees these options name live), or None."""
    return next((root for root in PSEUDO_ROOTS if root != '/sys' and (path == root or path.startswith(root + '/'))), None)


def _absolute(name, path, expected):
    if not isinstance(path, str) or '\x00' in path or not os.path.isabs(path):
        raise InputError('%s is %s, expected an absolute path: %s' % (name, show(path), expected))
    return os.path.normpath(path)


def _listing(name, path, expected):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        raise InputError('%s is %s, which cannot be read (%s); expected %s' % (name, show(path), exc.strerror or exc, expected))


def _check_tree(name, path, expected, entry_is, entries_are, absent_ok):
    """A directory of the node's kernel view (not under /proc) whose every entry passes ``entry_is(path, entry)``."""
    full = _absolute(name, path, expected)
    if _under_proc(full):
        raise InputError('%s is %s, which is under %s; expected %s' % (name, show(path), _under_proc(full), expected))
    if not os.path.lexists(full):
        if absent_ok:
            return path
        raise InputError('%s is %s, which does not exist; expected %s' % (name, show(path), expected))
    if not os.path.isdir(full):
        raise InputError('%s is %s, which is not a directory; expected %s' % (name, show(path), expected))
    others = [entry for entry in _listing(name, full, expected) if not entry_is(full, entry)]
    if others:
        raise InputError('%s is %s, whose entries %s are not %s; expected %s'
                         % (name, show(path), ', '.join(show(e, 40) for e in others[:5]) + (', ...' if len(others) > 5 else ''),
                            entries_are, expected))
    return path


def check_ib_root(name, path):
    """An InfiniBand sysfs tree: absent (no InfiniBand) or a directory of HCAs (``<hca>/ports/``), not under /proc."""
    return _check_tree(name, path, 'the InfiniBand sysfs tree such as /sys/class/infiniband (absent where the node has no InfiniBand)',
                       lambda full, entry: os.path.isdir(os.path.join(full, entry, 'ports')),
                       'InfiniBand devices (a directory with ports/)', absent_ok=True)


def check_module_root(name, path):
    """The directory of the loaded kernel modules: it exists, is not under /proc and holds only directories."""
    return _check_tree(name, path, 'the directory of the loaded kernel modules such as /sys/module (a directory per module)',
                       lambda full, entry: os.path.isdir(os.path.join(full, entry)), 'module directories', absent_ok=False)


def read_driver_proc(path):
    """``(text, problem)`` of the driver's version file: its text (at most 64 KiB, undecodable bytes replaced), or None
    and why it cannot be read, a phrase naming the path (``problem`` None when read). A FIFO or device is never opened."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno == 2:
            return None, 'the driver version file %s does not exist (is the nvidia module loaded?)' % path
        return None, 'cannot read the driver version file %s: %s' % (path, getattr(exc, 'strerror', None) or exc)
    if stat.S_ISDIR(info.st_mode):
        return None, 'the driver version file %s is a directory' % path
    if not stat.S_ISREG(info.st_mode):
        return None, 'the driver version file %s is not a regular file' % path
    try:
        with open(path, 'rb') as handle:
            data = handle.read(DRIVER_PROC_MAX)
    except OSError as exc:
        return None, 'cannot read the driver version file %s: %s' % (path, exc.strerror or exc)
    return data.decode('utf-8', 'replace'), None


def check_driver_proc(name, path):
    """The driver's version file: absent (the driver is not loaded: the checks say so) or a regular file whose text
    has the ``NVRM version:`` line; a directory, a device, a FIFO or another file's text is refused."""
    expected = "the NVIDIA driver's version file such as /proc/driver/nvidia/version"
    full = _absolute(name, path, expected)
    if not os.path.lexists(full):
        return path
    if os.path.isdir(full):
        raise InputError('%s is %s, which is a directory; expected %s' % (name, show(path), expected))
    text, problem = read_driver_proc(full)
    if problem and 'not a regular file' in problem:
        raise InputError('%s is %s, which is not a regular file; expected %s' % (name, show(path), expected))
    if text is not None and not any(line.startswith(DRIVER_PROC_HEAD) for line in text.splitlines()):
        first = (text.splitlines() or [''])[0]
        raise InputError('%s is %s, whose first line is %s; expected %s, whose text has a line such as "%s NVIDIA UNIX x86_64 Kernel '
                         'Module  550.54.14  ..."' % (name, show(path), show(first, 60), expected, DRIVER_PROC_HEAD))
    return path


def check_params(params):
    """Every option of the gpu_baseline module, before anything is read; raises ``InputError`` naming the first bad one."""
    if not params.get('checks'):
        raise InputError('checks is %s, expected one or more of %s' % (show(params.get('checks')), ', '.join(CHECKS)))
    if params.get('driver_min') is not None:
        try:
            version_key(params['driver_min'])
        except ValueError:
            raise InputError('driver_min is %s, expected a driver version such as "550.54.14" (or no value: the oldest '
                             'driver the GPU models support)' % show(params['driver_min']))
    for index, service in enumerate(params.get('stopped_services') or []):
        require_unit('stopped_services[%d]' % index, service, example='dcgm')
    if params.get('node_name') is not None:
        require_match('node_name', params['node_name'], r'[^\s]{1,255}',
                      'a node name (no spaces, at most 255 characters; no value: the short host name)')
    check_ib_root('ib_sysfs_root', params.get('ib_sysfs_root'))
    check_module_root('module_root', params.get('module_root'))
    check_driver_proc('driver_proc', params.get('driver_proc'))
    return params


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


def gpudirect_failures(ib_ports, modules, driver_proc, kernel_release, required=False, driver_proc_problem=None):
    """Where InfiniBand ports exist (or ``required``): nvidia_peermem loaded, or DMA-BUF possible.

    ``driver_proc_problem``: why the driver's version file gave nothing (``read_driver_proc``, naming the path)."""
    if not ib_ports and not required:
        return []
    if 'nvidia_peermem' in modules:
        return []
    info = driver_proc or {}
    kernel = kernel_key(kernel_release)
    dmabuf = (info.get('open') and info.get('version') and version_key(info['version']) >= version_key(DMABUF_DRIVER)
              and kernel is not None and kernel >= DMABUF_KERNEL)
    if dmabuf:
        return []
    why = []
    if not info:
        why.append(driver_proc_problem or 'the driver version file is unreadable')
    elif not info.get('open'):
        why.append('the proprietary kernel modules have no DMA-BUF')
    elif version_key(info['version']) < version_key(DMABUF_DRIVER):
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
