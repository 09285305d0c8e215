# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The processes holding a node's GPUs open, read from /proc (I/O; the judgement is in _gpu_baseline)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_baseline as gb


def read_text(path):
    """A file's text (bytes that are not UTF-8 replaced: a process may name itself anything), None when it cannot be read."""
    try:
        with open(path, 'rb') as handle:
            return handle.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return None


def holders(minors, proc_dir='/proc', dev_dir='/dev'):
    """Processes with /dev/nvidia<minor> open, for ``minors`` ([(gpu index, minor)], a minor of None skipped):
    ``[{pid, name, unit, job, gpu, device}]`` sorted by pid and device."""
    targets = dict((os.path.join(dev_dir, 'nvidia%d' % minor), index) for index, minor in minors if minor is not None)
    found = []
    try:
        pids = [name for name in os.listdir(proc_dir) if name.isdigit()]
    except OSError:
        return found
    for name in pids:
        fd_dir = os.path.join(proc_dir, name, 'fd')
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        seen = set()
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target in targets and target not in seen:
                seen.add(target)
                cgroup = read_text(os.path.join(proc_dir, name, 'cgroup')) or ''
                found.append({'pid': int(name), 'name': (read_text(os.path.join(proc_dir, name, 'comm')) or '').strip() or None,
                              'unit': gb.unit_of(cgroup), 'job': gb.is_job(cgroup), 'gpu': targets[target], 'device': target})
    return sorted(found, key=lambda h: (h['pid'], h['device']))
