# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet checks of the GPU health check: Xid errors, driver, persistence, NVLink fabric, NVLinks, PCIe,
thermal slowdown and InfiniBand ports (pure logic).

``_healthcheck`` runs them in its periodic tier (the Xid check also in its prolog tier); the program
``gpucluster-healthcheck`` collects what they read: NVML through ``_nvml.Client.fleet_health``, the kernel log
(for Xids; NVML keeps no history of them: its event API only reports events while a client waits) and the
InfiniBand sysfs tree (``/sys/class/infiniband/<hca>/ports/<port>/...``).

Each check function returns ``[(check, gpu index or None, detail)]``; every detail names the GPU or port, what was
found, what was expected and the fix.  Two small readers (:func:`read_text`, :func:`read_ib_ports`) serve the program
and the ``gpu_baseline`` module.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import driver_minimum as catalogue_driver_minimum
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import version_key

# Xids that drain by default: those whose immediate action in NVIDIA's Xid catalog (Ampere and newer,
# docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) is a GPU reset, a node reboot or service:
# 48 double-bit ECC, 61/62 internal micro-controller breakpoint/halt, 64 row-remapper failure, 74 NVLink fatal
# error, 79 fallen off the bus, 95 uncontained ECC, 119/120 GSP RPC timeout/error, 140 unrecovered ECC,
# 154 recovery action changed (reset or reboot required).  Application faults (13, 31, 43, 45) and
# contained ones (94) do not drain: the job that caused them ends, the GPU stays usable.
XID_DRAIN = (48, 61, 62, 64, 74, 79, 95, 119, 120, 140, 154)
XID_ACTION = {48: 'reset the GPU', 61: 'reset the GPU', 62: 'reset the GPU', 64: 'service the GPU (RMA if it recurs)',
              74: 'reset the GPU and check the NVLink', 79: 'reboot the node (RMA if it recurs)', 95: 'reset the GPU',
              119: 'reset the GPU', 120: 'reset the GPU', 140: 'reset the GPU', 154: 'reset the GPU or reboot, as the Xid says'}

# The oldest driver that supports a model: the catalogue's (catalogue._gpus.driver_minimum).  Override with driver_min.

# nvml.h nvmlClocksEventReason* bits
CLOCK_REASONS = (('gpu_idle', 0x1), ('applications_clocks_setting', 0x2), ('sw_power_cap', 0x4), ('hw_slowdown', 0x8),
                 ('sync_boost', 0x10), ('sw_thermal', 0x20), ('hw_thermal', 0x40), ('hw_power_brake', 0x80),
                 ('display_clocks', 0x100))
THROTTLE_DRAIN = ('hw_slowdown', 'sw_thermal', 'hw_thermal', 'hw_power_brake')

# nvml.h nvmlGpuFabricState_t
FABRIC_STATES = {0: 'NOT_SUPPORTED', 1: 'NOT_STARTED', 2: 'IN_PROGRESS', 3: 'COMPLETED'}
NVLINK_COUNTERS = ('replay', 'recovery', 'crc_flit', 'crc_data')
IB_COUNTERS = ('symbol_error', 'link_error_recovery', 'link_downed', 'port_rcv_errors', 'port_rcv_remote_physical_errors',
               'port_rcv_switch_relay_errors', 'port_xmit_discards', 'port_xmit_constraint_errors', 'port_rcv_constraint_errors',
               'local_link_integrity_errors', 'excessive_buffer_overrun_errors', 'VL15_dropped')

_XID = re.compile(r'NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-9A-Fa-f])?\): (\d+), ?(.*?)\s*$')
# a boot in a persistent kernel log (rsyslog's kern.log): the kernel's first line
_BOOT = re.compile(r'kernel: \[\s*0\.0+\] Linux version ')


def pci_key(bus_id):
    """A GPU's PCI address without domain width and function: ``00000000:1B:00.0`` and ``0000:1b:00`` -> ``1b:00``
    with the domain as a number: ``(0, '1b', '00')``."""
    parts = str(bus_id).split(':')
    if len(parts) != 3:
        raise ValueError('%r is not a PCI bus id such as "00000000:1B:00.0"' % (bus_id,))
    return int(parts[0], 16), parts[1].lower(), parts[2].split('.')[0].lower()


def parse_xids(text, since_last_boot=True):
    """Xid lines of a kernel log as ``[{'pci': '0000:1b:00', 'code': 79, 'text': ...}]``, oldest first.

    ``since_last_boot``: only the lines after the last boot line (``kernel: [    0.000000] Linux version``) of a
    persistent log such as rsyslog's kern.log; ``journalctl -k -b`` and ``dmesg`` give this boot's lines only.
    """
    xids = []
    for line in (text or '').splitlines():
        if since_last_boot and _BOOT.search(line):
            xids = []
            continue
        match = _XID.search(line)
        if match:
            text = re.sub(r"^pid=[^,]*, (name=[^,]*, )?", '', match.group(3))
            xids.append({'pci': match.group(1).lower(), 'code': int(match.group(2)), 'text': text})
    return xids


def driver_minimum(models, override=None):
    """``(minimum version text, why)`` for the GPU ``models`` (NVML names), or ``(None, None)`` when unknown."""
    if override:
        version_key(override)
        return override, 'driver_min'
    best = None
    for name in models:
        version = catalogue_driver_minimum(name)
        if version and (best is None or version_key(version) > version_key(best[0])):
            best = (version, 'the oldest that supports %s' % name)
    return best if best else (None, None)


def parse_ib_rate(text):
    """sysfs ``rate`` (``"400 Gb/sec (4X NDR)"``) -> 400.0; None when unreadable."""
    match = re.match(r'^\s*(\d+(?:\.\d+)?)\s*Gb/sec', str(text or ''))
    return float(match.group(1)) if match else None


def _word(value):
    """sysfs ``state``/``phys_state`` (``"4: ACTIVE"``) -> ``ACTIVE``."""
    return str(value or '').strip().partition(': ')[2] or str(value or '').strip()


def ib_port(hca, port, files):
    """One port of the sysfs tree from its files' texts (``state``, ``phys_state``, ``rate``, ``link_layer`` and
    ``counters/<name>``): ``{hca, port, state, phys_state, rate, rate_gbps, link_layer, counters}``."""
    counters = {}
    for name, value in (files.get('counters') or {}).items():
        try:
            counters[name] = int(str(value))  # (int() reads past blanks and the newline)
        except ValueError:
            continue
    return {'hca': hca, 'port': int(port), 'state': _word(files.get('state')), 'phys_state': _word(files.get('phys_state')),
            'rate': str(files.get('rate') or '').strip(), 'rate_gbps': parse_ib_rate(files.get('rate')),
            'link_layer': str(files.get('link_layer') or 'InfiniBand').strip(), 'counters': counters}


def _label(gpu):
    bus = gpu.get('pci_bus_id')
    return 'GPU %d (%s)' % (gpu['index'], bus) if bus else 'GPU %d' % gpu['index']


def xid_failures(xids, gpus, codes):
    """A failure per GPU (or unknown PCI address) with an Xid of ``codes`` since boot."""
    by_pci = {}
    for gpu in gpus:
        if gpu.get('pci_bus_id'):
            by_pci[pci_key(gpu['pci_bus_id'])] = gpu
    seen = {}
    for xid in xids:
        if xid['code'] not in codes:
            continue
        key = pci_key(xid['pci'])
        seen.setdefault(key, []).append(xid)
    failures = []
    for key in sorted(seen):
        found = seen[key]
        gpu = by_pci.get(key)
        last = found[-1]
        what = _label(gpu) if gpu else 'the GPU at PCI %s' % last['pci']
        codes_seen = sorted(set(x['code'] for x in found))
        detail = '%s had Xid %s since boot (last: %d, %s); %s' % (
            what, ', '.join(str(c) for c in codes_seen), last['code'], last['text'][:80], XID_ACTION.get(last['code'], 'reset the GPU'))
        failures.append(('xid', gpu['index'] if gpu else None, detail))
    return failures


def driver_failures(driver_version, models, override=None):
    if driver_version is None:
        return []
    minimum, why = driver_minimum(models, override)
    if minimum is None:
        return []
    try:
        have = version_key(driver_version)
    except ValueError:
        return [('driver', None, 'NVML reports driver version %r, which is not a version number' % (driver_version,))]
    if have < version_key(minimum):
        return [('driver', None, 'NVIDIA driver %s is older than %s (%s); install %s or newer'
                 % (driver_version, minimum, why, minimum))]
    return []


def persistence_failures(gpus):
    off = [g for g in gpus if not g.get('error') and (g.get('fleet') or {}).get('persistence') is False]
    if not off:
        return []
    return [('persistence', off[0]['index'], '%s persistence mode is off%s; run nvidia-persistenced '
             '(systemctl enable --now nvidia-persistenced)' % (
                 ', '.join(_label(g) for g in off[:2]) + (' and %d more' % (len(off) - 2) if len(off) > 2 else ''),
                 '' if len(off) == 1 else ' on all of them'))]


def fabric_failures(gpus, driver_version=None):
    failures = []
    for gpu in gpus:
        fabric = (gpu.get('fleet') or {}).get('fabric')
        if gpu.get('error') or not fabric:
            continue
        state = FABRIC_STATES.get(fabric['state'])
        if state in ('NOT_STARTED', 'IN_PROGRESS'):
            failures.append(('fabric', gpu['index'], '%s NVLink fabric state %s: nvidia-fabricmanager is not running or has not '
                             'registered the GPU; systemctl start nvidia-fabricmanager (its version must be the driver\'s, %s)'
                             % (_label(gpu), state, driver_version or 'see nvidia-smi')))
        elif state == 'COMPLETED' and fabric.get('status', 0) != 0:
            failures.append(('fabric', gpu['index'], '%s NVLink fabric registration failed (status %d); see the '
                             'nvidia-fabricmanager log' % (_label(gpu), fabric['status'])))
    return failures[:1] + ([] if len(failures) < 2 else [('fabric', None, '%d more GPUs with the same fabric state' % (len(failures) - 1))])


def nvlink_failures(gpus, expected_active, error_max):
    """Down links against ``expected_active`` ({gpu index: active links}) and counters over ``error_max``."""
    failures = []
    for gpu in gpus:
        links = (gpu.get('fleet') or {}).get('nvlinks')
        if gpu.get('error') or links is None:
            continue
        active = [l for l in links if l['active']]
        want = (expected_active or {}).get(gpu['index'])
        if want is not None and len(active) < want:
            down = [str(l['link']) for l in links if not l['active']]
            failures.append(('nvlink', gpu['index'], '%s has %d of %d NVLinks active (down: %s); reset the GPU, then check the '
                             'NVLink/NVSwitch (nvidia-smi nvlink -s)' % (_label(gpu), len(active), want, ','.join(down) or 'none')))
        for link in links:
            for counter in NVLINK_COUNTERS:
                limit = (error_max or {}).get(counter)
                value = link.get(counter)
                if limit is not None and value is not None and value > limit:
                    failures.append(('nvlink', gpu['index'], '%s NVLink %d has %d %s errors (at most %d)' % (
                        _label(gpu), link['link'], value, counter.replace('_', ' '), limit)))
                    break
    return failures


def pcie_failures(gpus):
    """A link narrower than its maximum; a generation below its maximum unless the GPU is idle (an idle GPU may
    lower its link speed to save power)."""
    failures = []
    for gpu in gpus:
        fleet = gpu.get('fleet') or {}
        pcie = fleet.get('pcie') or {}
        if gpu.get('error') or not pcie:
            continue
        width, max_width, gen, max_gen = pcie.get('width'), pcie.get('max_width'), pcie.get('gen'), pcie.get('max_gen')
        idle = bool((fleet.get('clock_reasons') or 0) & 0x1)
        if width is not None and max_width is not None and width < max_width:
            failures.append(('pcie', gpu['index'], '%s PCIe link is x%d, the GPU and slot do x%d; reseat the GPU or check the '
                             'riser/slot' % (_label(gpu), width, max_width)))
        elif gen is not None and max_gen is not None and gen < max_gen and not idle:
            failures.append(('pcie', gpu['index'], '%s PCIe link runs at gen %d under load, the GPU and slot do gen %d; check the '
                             'slot, riser and BIOS PCIe settings' % (_label(gpu), gen, max_gen)))
    return failures


def reason_names(bits):
    return [name for name, bit in CLOCK_REASONS if bits & bit]


def thermal_failures(gpus, drain_reasons, margin):
    failures = []
    for gpu in gpus:
        fleet = gpu.get('fleet') or {}
        if gpu.get('error') or not fleet:
            continue
        bits = fleet.get('clock_reasons')
        active = [n for n in reason_names(bits or 0) if n in drain_reasons]
        temp, slowdown = fleet.get('temperature'), fleet.get('temperature_slowdown')
        if active:
            failures.append(('thermal', gpu['index'], '%s clocks are held down by %s (%s C); check cooling and power'
                             % (_label(gpu), ', '.join(active), temp if temp is not None else '?')))
        elif temp is not None and slowdown is not None and margin is not None and temp >= slowdown - margin:
            failures.append(('thermal', gpu['index'], '%s is at %d C, its slowdown temperature is %d C; check cooling'
                             % (_label(gpu), temp, slowdown)))
    return failures


def ib_failures(ports, expected_ports, rate_gbps, counter_max, hcas=None):
    """InfiniBand ports (``ib_port`` results) against the expected count of ports, their state, minimum rate and counters,
    and the devices the node type declares (``hcas``: each must have an InfiniBand port)."""
    ib = [p for p in ports if p['link_layer'].lower() == 'infiniband']
    failures = []
    for port in ib:
        name = '%s port %d' % (port['hca'], port['port'])
        if port['state'] != 'ACTIVE' or port['phys_state'] != 'LinkUp':
            failures.append(('ib', None, 'InfiniBand %s is %s (physical %s), expected ACTIVE/LinkUp; check the cable, transceiver '
                             'and switch port' % (name, port['state'] or '?', port['phys_state'] or '?')))
        elif rate_gbps is not None and port['rate_gbps'] is not None and port['rate_gbps'] < rate_gbps:
            failures.append(('ib', None, 'InfiniBand %s runs at %s, expected %g Gb/sec; reseat the cable or replace the transceiver'
                             % (name, port['rate'], rate_gbps)))
        else:
            for counter in IB_COUNTERS:
                limit = (counter_max or {}).get(counter)
                value = port['counters'].get(counter)
                if limit is not None and value is not None and value > limit:
                    failures.append(('ib', None, 'InfiniBand %s has %d %s (at most %d); check the link' % (name, value, counter, limit)))
                    break
    if expected_ports is not None and len(ib) < expected_ports:
        failures.append(('ib', None, '%d InfiniBand ports, expected %d; check that every HCA is seen (ibstat)' % (len(ib), expected_ports)))
    seen = set(port['hca'] for port in ib)
    missing = [hca for hca in hcas or () if hca not in seen]
    if missing:
        failures.append(('ib', None, 'InfiniBand device%s %s of the node type (gpucluster_node_type.hcas) %s no port here (the node has: %s); '
                         'check that every HCA is seen (ibstat), its firmware and its PCIe slot'
                         % ('s' if len(missing) > 1 else '', ', '.join(missing), 'have' if len(missing) > 1 else 'has',
                            ', '.join(sorted(seen)) or 'none')))
    return failures


def ib_baseline(ports):
    """``(ports, minimum rate of the ACTIVE ones)`` a node has now, for the expectations left unset."""
    ib = [p for p in ports if p['link_layer'].lower() == 'infiniband']
    rates = [p['rate_gbps'] for p in ib if p['state'] == 'ACTIVE' and p['rate_gbps'] is not None]
    return len(ib), (min(rates) if rates else None)


# ------------------------------------------------------------------ readers (the program and gpu_baseline)

def read_text(path):
    """A file's text, None when it cannot be read."""
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def read_ib_ports(root):
    """``(ports, error or None)`` of the InfiniBand sysfs tree at ``root``; no tree: no ports."""
    if not os.path.isdir(root):
        return [], None
    ports = []
    try:
        for hca in sorted(os.listdir(root)):
            ports_dir = os.path.join(root, hca, 'ports')
            if not os.path.isdir(ports_dir):
                continue
            for port in sorted((name for name in os.listdir(ports_dir) if name.isdigit()), key=int):
                base = os.path.join(ports_dir, port)
                files = dict((name, read_text(os.path.join(base, name))) for name in ('state', 'phys_state', 'rate', 'link_layer'))
                counters_dir = os.path.join(base, 'counters')
                files['counters'] = {}
                if os.path.isdir(counters_dir):
                    for name in IB_COUNTERS:
                        value = read_text(os.path.join(counters_dir, name))
                        if value is not None:
                            files['counters'][name] = value
                ports.append(ib_port(hca, port, files))
    except (IOError, OSError) as exc:
        return ports, 'cannot read %s: %s' % (root, exc)
    return ports, None
