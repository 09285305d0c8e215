# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse the NVIDIA driver's ``/proc/driver/nvidia-caps/mig-minors`` table.

Each MIG GPU instance (GI) and compute instance (CI) is guarded by a
capability device ``/dev/nvidia-caps/nvidia-cap<minor>``.  The driver lists
the minors, one ``<name> <minor>`` pair per line::

    config 1
    monitor 2
    gpu2/gi7/access 336
    gpu2/gi7/ci0/access 337

``gpu<N>`` is the GPU's minor number (the N of ``/dev/nvidiaN``, what
``nvmlDeviceGetMinorNumber`` returns), not its NVML index.  This is the same
lookup Slurm's NVML autodetection does (``gpu%u/gi%u/access`` and
``gpu%u/gi%u/ci%u/access``).  The trailing ``/access`` is optional here so
that abbreviated copies (as quoted in seed 003) parse too.

Pure functions, standard library only; bad input raises ``ValueError`` naming
the line number and the offending text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

DEFAULT_PATH = '/proc/driver/nvidia-caps/mig-minors'
CAP_DEVICE_DIR = '/dev/nvidia-caps'

_NAME = re.compile(r'^gpu(\d+)/gi(\d+)(?:/ci(\d+))?(?:/access)?$')
# Linux minor numbers have 20 bits (MINORBITS).
MAX_MINOR = (1 << 20) - 1


def parse_mig_minors(text, source=DEFAULT_PATH):
    """Parse the mig-minors text.

    Returns a dict with keys ``config`` and ``monitor`` (int or None), ``gi``
    mapping ``(gpu_minor, gi_id)`` to a minor and ``ci`` mapping
    ``(gpu_minor, gi_id, ci_id)`` to a minor.
    """
    result = {'config': None, 'monitor': None, 'gi': {}, 'ci': {}}
    seen = {}
    minors_seen = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(
                '%s line %d: "%s" is not "<name> <minor>" (expected lines like "gpu2/gi7/ci0/access 337")' % (source, number, line))
        name, minor_text = fields
        if not minor_text.isdigit():
            raise ValueError('%s line %d: minor "%s" of "%s" is not a non-negative integer' % (source, number, minor_text, name))
        minor = int(minor_text)
        if minor > MAX_MINOR:
            raise ValueError('%s line %d: minor %d of "%s" is above %d, the largest minor number Linux has'
                             % (source, number, minor, name, MAX_MINOR))
        if name in ('config', 'monitor'):
            key = name
        else:
            match = _NAME.match(name)
            if not match:
                raise ValueError(
                    '%s line %d: name "%s" is not "config", "monitor", "gpu<N>/gi<M>/access" or "gpu<N>/gi<M>/ci<K>/access"'
                    % (source, number, name))
            gpu, gi, ci = match.groups()
            key = (int(gpu), int(gi)) if ci is None else (int(gpu), int(gi), int(ci))
        if key in seen:
            raise ValueError('%s line %d: "%s" is listed twice (first on line %d)' % (source, number, name, seen[key]))
        seen[key] = number
        if minor in minors_seen:
            raise ValueError('%s line %d: minor %d of "%s" is also the minor of "%s" (line %d); each capability has its own '
                             'device file' % (source, number, minor, name, minors_seen[minor][0], minors_seen[minor][1]))
        minors_seen[minor] = (name, number)
        if key in ('config', 'monitor'):
            result[key] = minor
        elif len(key) == 2:
            result['gi'][key] = minor
        else:
            result['ci'][key] = minor
    return result


def instance_minors(minors, gpu_minor, gi_id, ci_id, source=DEFAULT_PATH):
    """Return ``(gi_minor, ci_minor)`` for one MIG instance.

    Raises ``ValueError`` naming the missing line when the table has no entry,
    e.g. a MIG instance NVML reports but the driver table does not list.
    """
    gi_key = (gpu_minor, gi_id)
    ci_key = (gpu_minor, gi_id, ci_id)
    if gi_key not in minors['gi']:
        raise ValueError(
            'MIG instance gpu%d/gi%d/ci%d has no GPU-instance minor in %s: no line "gpu%d/gi%d/access <minor>"'
            % (gpu_minor, gi_id, ci_id, source, gpu_minor, gi_id))
    if ci_key not in minors['ci']:
        raise ValueError(
            'MIG instance gpu%d/gi%d/ci%d has no compute-instance minor in %s: no line "gpu%d/gi%d/ci%d/access <minor>"'
            % (gpu_minor, gi_id, ci_id, source, gpu_minor, gi_id, ci_id))
    return minors['gi'][gi_key], minors['ci'][ci_key]


def cap_device(minor, cap_dir=CAP_DEVICE_DIR):
    """``337`` -> ``/dev/nvidia-caps/nvidia-cap337``."""
    return '%s/nvidia-cap%d' % (cap_dir.rstrip('/'), minor)
