# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What to do about a node, per condition: the closed loop's one table (issue 48).

A *condition* is what the health check found, named after the check that finds it (``slurm/_healthcheck.py``
``CHECKS``, the deep tier's ``_deep_tier.CHECKS``), split where the check covers several faults with
different cures (``xid`` per Xid code, ``gpu-error`` into lost GPU / retired pages / row remapping, ``nvlink``
and ``ib`` into link down and error counters).  Each has one *action*:

* ``none``: recorded only (an event line, a metric);
* ``comment``: the node's Slurm ``Comment`` says so, no drain; after ``promote_after`` hits within
  ``window_s`` the loop drains it (quarantine, then promotion);
* ``drain``: drained, a person looks (configuration: driver, MIG layout, munge key, a cable);
* ``reset-gpu``: the GPU needs a reset (NVIDIA's RESET_GPU); the controller loop drains the node, and once it is
  idle resets the GPU(s) the condition names on the node (MIG-aware), then the deep tier; a failed reset or deep
  tier escalates to ``reboot`` (health/_node_loop.py);
* ``reboot``: ``scontrol reboot ASAP``, then the deep tier, then back in service;
* ``service``: hardware repair: drained with the loop's service tag and never returned by the loop.

Sites override the action per condition (``slurm_healthcheck_loop.actions``; :func:`load_overrides`).
Standard library only (the loop program imports it on the controller).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show

ACTIONS = ('none', 'comment', 'drain', 'reset-gpu', 'reboot', 'service')  # in rising severity

XID_CATALOG = 'https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html'
MEMORY_ERRORS = 'https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html'
PAGE_RETIREMENT = 'https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html'
NVML_API = 'https://docs.nvidia.com/deploy/nvml-api/'
FABRIC_MANAGER = 'https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html'
PERSISTENCE = 'https://docs.nvidia.com/deploy/driver-persistence/index.html'
IB_SYSFS = 'https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband'
DCGM_DIAG = 'https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html'
COLLECTION = 'roles/slurm_healthcheck/README.md (the check of the same name)'

# (condition, check that finds it, action, source, why).  Xids: NVIDIA's catalogue "Resolution" per Xid (Ampere
# and newer): RESTART_APP -> none (the job that caused it ends, the GPU stays usable), RESET_GPU -> reset-gpu,
# RESTART_BM (reboot the node) -> reboot, CONTACT_SUPPORT / hardware inspection -> service.
CONDITIONS = (
    ('xid-13', 'xid', 'none', XID_CATALOG, 'Graphics Engine Exception: an application fault (RESTART_APP)'),
    ('xid-31', 'xid', 'none', XID_CATALOG, 'GPU memory page fault: an application fault (RESTART_APP)'),
    ('xid-43', 'xid', 'none', XID_CATALOG, 'GPU stopped processing: the application ends (RESTART_APP)'),
    ('xid-45', 'xid', 'none', XID_CATALOG, 'preemptive cleanup after an earlier error (IGNORE)'),
    ('xid-48', 'xid', 'reset-gpu', XID_CATALOG, 'double-bit ECC error (RESET_GPU)'),
    ('xid-61', 'xid', 'reset-gpu', XID_CATALOG, 'internal micro-controller breakpoint (RESET_GPU)'),
    ('xid-62', 'xid', 'reset-gpu', XID_CATALOG, 'internal micro-controller halt (RESET_GPU)'),
    ('xid-63', 'xid', 'none', XID_CATALOG, 'ECC page retirement or row remapping recorded (the row-remap conditions decide)'),
    ('xid-64', 'xid', 'service', XID_CATALOG, 'ECC page retirement or row remapper failure (CONTACT_SUPPORT)'),
    ('xid-74', 'xid', 'reset-gpu', XID_CATALOG, 'NVLink error (RESET_GPU; check the link if it recurs)'),
    ('xid-79', 'xid', 'reboot', XID_CATALOG, 'GPU has fallen off the bus (RESTART_BM; hardware inspection if it recurs)'),
    ('xid-92', 'xid', 'comment', XID_CATALOG, 'high single-bit ECC error rate (watch it)'),
    ('xid-94', 'xid', 'none', XID_CATALOG, 'contained ECC error: the application ends (RESTART_APP)'),
    ('xid-95', 'xid', 'reset-gpu', XID_CATALOG, 'uncontained ECC error (RESET_GPU)'),
    ('xid-119', 'xid', 'reset-gpu', XID_CATALOG, 'GSP RPC timeout (RESET_GPU)'),
    ('xid-120', 'xid', 'reset-gpu', XID_CATALOG, 'GSP error (RESET_GPU)'),
    ('xid-140', 'xid', 'reset-gpu', XID_CATALOG, 'unrecovered ECC error (RESET_GPU)'),
    ('xid-154', 'xid', 'reboot', XID_CATALOG, 'GPU recovery action changed: reset or reboot as the Xid says (a reboot does both)'),
    ('xid', 'xid', 'drain', COLLECTION, 'an Xid of slurm_healthcheck_settings.xid_drain this table does not name'),
    ('gpu-lost', 'gpu-error', 'reboot', NVML_API, 'NVML cannot read the GPU (GPU_IS_LOST, after Xid 79): only a reboot brings it back'),
    ('retired-pages-pending', 'gpu-error', 'reset-gpu', PAGE_RETIREMENT, 'retired pages take effect at the next GPU reset'),
    ('row-remap-pending', 'gpu-error', 'reset-gpu', MEMORY_ERRORS, 'a remapped row takes effect at the next GPU reset'),
    ('row-remap-failure', 'gpu-error', 'service', MEMORY_ERRORS, 'row remapping failed: the GPU goes to repair (RMA)'),
    ('ecc', 'ecc', 'reset-gpu', MEMORY_ERRORS, 'volatile uncorrected ECC errors clear at a GPU reset'),
    ('nvml', 'nvml', 'reboot', NVML_API, 'libnvidia-ml does not load or answer (the driver is not loaded)'),
    ('gpu-count', 'gpu-count', 'reboot', NVML_API, 'a GPU is missing (fallen off the bus); a reboot finds it or not'),
    ('gpu-model', 'gpu-model', 'drain', COLLECTION, 'another GPU model than expected: the inventory or the node is wrong'),
    ('mig', 'mig', 'drain', COLLECTION, 'MIG mode pending or another layout: the mig role sets it'),
    ('device-files', 'device-files', 'reboot', COLLECTION, '/dev/nvidia* missing: the driver did not create them'),
    ('driver', 'driver', 'drain', COLLECTION, 'a driver older than the GPU models need: an upgrade, not a reboot'),
    ('persistence', 'persistence', 'drain', PERSISTENCE, 'persistence mode off: enable nvidia-persistenced'),
    ('fabric-manager', 'fabric-manager', 'reboot', FABRIC_MANAGER, 'nvidia-fabricmanager not active or not the driver version'),
    ('fabric', 'fabric', 'reboot', FABRIC_MANAGER, 'NVLink fabric not started or failed: the fabric manager trains it at start'),
    ('nvlink-down', 'nvlink', 'reset-gpu', NVML_API, 'NVLinks inactive: a GPU reset retrains them'),
    ('nvlink-errors', 'nvlink', 'comment', NVML_API, 'NVLink error counters above the limit: watch, drain when it recurs'),
    ('pcie', 'pcie', 'reboot', NVML_API, 'PCIe link narrower or slower than the slot: retrained at boot, else reseat'),
    ('thermal', 'thermal', 'comment', NVML_API, 'clocks held down by thermal or power slowdown: watch, drain when it recurs'),
    ('ib-down', 'ib', 'drain', IB_SYSFS, 'an InfiniBand port down or missing: cable, transceiver or switch port'),
    ('ib-rate', 'ib', 'drain', IB_SYSFS, 'an InfiniBand port slower than expected: cable or transceiver'),
    ('ib-errors', 'ib', 'comment', IB_SYSFS, 'InfiniBand error counters above the limit: watch, drain when it recurs'),
    ('gpudirect', 'gpudirect', 'drain', COLLECTION, 'neither nvidia_peermem nor DMA-BUF: a driver installation matter'),
    ('munge-key', 'munge-key', 'drain', COLLECTION, 'the munge key readable by others: a person fixes it'),
    ('dcgm', 'dcgm', 'service', DCGM_DIAG, 'a DCGM diagnostic failed: hardware'),
    ('nccl', 'nccl', 'drain', COLLECTION, 'single-node all_reduce below its threshold or wrong'),
    ('nvbandwidth', 'nvbandwidth', 'drain', COLLECTION, 'a copy below its floor'),
    ('ib-bw', 'ib-bw', 'drain', COLLECTION, 'ib_write_bw between the HCAs below its floor'),
)
NAMES = tuple(row[0] for row in CONDITIONS)
DEFAULT_ACTIONS = dict((row[0], row[2]) for row in CONDITIONS)
SOURCES = dict((row[0], row[3]) for row in CONDITIONS)
CHECK_OF = dict((row[0], row[1]) for row in CONDITIONS)

_XID_CODES = re.compile(r'had Xid ([\d, ]+) since boot')


def severity(action):
    """The rank of ``action`` in :data:`ACTIONS` (``ValueError`` for another word)."""
    return ACTIONS.index(action)


def _xid_condition(detail, actions):
    match = _XID_CODES.search(detail or '')
    codes = [int(c) for c in re.findall(r'\d+', match.group(1))] if match else []
    named = ['xid-%d' % c for c in codes if 'xid-%d' % c in actions]
    if len(named) < len(codes) or not named:
        named.append('xid')
    # the most severe of the Xids seen since boot decides
    return max(named, key=lambda name: (severity(actions[name]), name))


def classify(check, detail, actions=None):
    """The condition of a health check finding (``check`` of ``_healthcheck.CHECKS`` or the deep tier's, its
    ``detail`` text as the drain reason carries it), or ``None`` for a check this table does not know."""
    actions = actions or DEFAULT_ACTIONS
    text = detail or ''
    if check == 'xid':
        return _xid_condition(text, actions)
    if check == 'gpu-error':
        if 'failed memory row remapping' in text:
            return 'row-remap-failure'
        if 'row remapping pending' in text:
            return 'row-remap-pending'
        if 'retired memory pages pending' in text:
            return 'retired-pages-pending'
        return 'gpu-lost'
    if check == 'nvlink':
        return 'nvlink-errors' if ' errors (at most ' in text else 'nvlink-down'
    if check == 'ib':
        if ' runs at ' in text:
            return 'ib-rate'
        if ' (at most ' in text:
            return 'ib-errors'
        return 'ib-down'
    return check if check in actions else None


def load_overrides(value, name='slurm_healthcheck_loop.actions'):
    """The action per condition: the defaults with ``value`` (``{condition: action}``) over them.

    ``InputError`` names the first unknown condition or action with the valid ones."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InputError('%s is %s, expected a mapping of condition to action such as {"thermal": "drain"}' % (name, show(value)))
    actions = dict(DEFAULT_ACTIONS)
    for condition in sorted(value, key=str):
        if condition not in DEFAULT_ACTIONS:
            raise InputError('%s has the condition %s, expected one of %s' % (name, show(condition), ', '.join(NAMES)))
        action = value[condition]
        if action not in ACTIONS:
            raise InputError('%s["%s"] is %s, expected one of %s' % (name, condition, show(action), ', '.join(ACTIONS)))
        actions[condition] = action
    return actions


def split_failures(failures, actions):
    """The health check's failures (objects with ``check`` and ``detail``) as ``(to drain, noted)``: ``noted`` holds
    ``(condition, action, failure)`` for the ``comment`` and ``none`` conditions, which do not drain where the closed
    loop is on (a comment-mode hit goes to the node's Comment, the loop counts it)."""
    drain, noted = [], []
    for failure in failures:
        condition = classify(failure.check, failure.detail, actions)
        # a condition the actions do not name (or no condition) drains: its action is None, neither comment nor none
        action = actions.get(condition)
        if action in ('comment', 'none'):
            noted.append((condition, action, failure))
        else:
            drain.append(failure)
    return drain, noted
