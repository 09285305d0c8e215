# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight's checks across roles and hosts: what the whole inventory says, before any node is contacted.

:mod:`_roles` checks each role's variables on each host on their own.  This module checks what only the
inventory as a whole can say, from the templated values of every host (plain data the action plugin hands over):

* MIG layouts against the GPU catalogue (the MIG User Guide's profile tables of ``catalogue._gpus``) for
  the node type the inventory declares for the host (``gpucluster_node_type``: its ``gpu_model`` and ``gpu_count``):
  profile names, counts that fit (the planner's own placement search, on GPUs made from the tables), GPU indices
  within the count, MIG asked of a model without MIG;
* the partitions of the controller's ``slurm_partitions``: option keys that ``slurm.conf`` knows for a
  ``PartitionName`` line, node keys (``Gres``, ``Features`` ...) given as partition options, ``Nodes`` given as an
  option, node sets that name nodes of the inventory, accounts and QOS of ``AllowAccounts``/``AllowQos``/``QOS``
  that the associations define, a compute node in no partition (a warning);
* ``slurm_node_params`` ``Gres`` against what the MIG layout and the declared GPUs yield;
* the associations (``slurmdbd_qos``, ``slurmdbd_accounts``, ``slurmdbd_users`` of the controller, where the
  association stage runs): every bad value with ``_sacctmgr``'s own value checks, parents, accounts and QOS that
  neither the inventory nor Slurm itself defines;
* the node type itself (``catalogue._node_type``: a ``gpu_model`` the catalogue does not know, with the names the
  inventory adds in ``preflight_gpu_models``), and a ``validate_jobs.partition`` that no partition has.

:func:`site_problems` returns ``(problems, warnings)``: problems as ``(host, role, message)`` for
``_roles.report``, warnings as plain lines.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress, expand, natural_key
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus as catalogue
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts as mig_layouts
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type as node_type
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_plan as mig_plan
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as sacctmgr
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import gpu_type
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import parse_gres_value
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_hooks import task_prolog_needs

# The variables each role contributes to these checks (the action templates them per host, the role's default
# when the inventory does not set them).
SITE_VARIABLES = {
    'mig': ('mig_layout', mig_layouts.CUSTOM, 'mig_require_all_gpus'),
    'slurm': ('slurm_partitions', 'slurm_node_params', 'slurm_node_name', 'slurm_gres_enabled', 'slurm_gres_type_map',
              'slurm_task_prolog_uuids', 'slurm_gres_autodetect', 'slurm_gres_sharing', 'slurm_hooks_shipped', 'slurm_conf_overrides'),
    'validate': (node_type.VARIABLE, 'validate_jobs'),
    'slurmdbd': ('slurmdbd_qos', 'slurmdbd_accounts', 'slurmdbd_users'),
}
# Inventory variable (no role's): GPU names the preflight accepts besides its catalogue (no MIG profile check for them).
EXTRA_MODELS_VAR = 'preflight_gpu_models'

# PartitionName options of slurm.conf(5), Slurm 22.05 to 26.05 (src/common/read_config.c, _partition_options);
# lower case -> the spelling of the man page.
PARTITION_KEYS = dict((key.lower(), key) for key in (
    'AllocNodes', 'AllowAccounts', 'AllowGroups', 'AllowQos', 'Alternate', 'CpuBind', 'DefCpuPerGPU', 'DefMemPerCPU',
    'DefMemPerGPU', 'DefMemPerNode', 'Default', 'DefaultTime', 'DenyAccounts', 'DenyQos', 'DisableRootJobs', 'Exclusive',
    'ExclusiveUser', 'ExclusiveTopo', 'GraceTime', 'Hidden', 'LLN', 'MaxCPUsPerNode', 'MaxCPUsPerSocket', 'MaxMemPerCPU',
    'MaxMemPerNode', 'MaxNodes', 'MaxTime', 'MinNodes', 'Nodes', 'OverSubscribe', 'OverTimeLimit', 'PowerDownOnIdle',
    'PreemptMode', 'Priority', 'PriorityJobFactor', 'PriorityTier', 'QOS', 'ReqResv', 'ResumeTimeout', 'RootOnly',
    'SelectTypeParameters', 'Shared', 'State', 'SuspendTime', 'SuspendTimeout', 'Topology', 'TRESBillingWeights'))
# NodeName options of slurm.conf(5) (_nodename_options) that are no partition's.
NODE_KEYS = dict((key.lower(), key) for key in (
    'BcastAddr', 'Boards', 'CoreSpecCount', 'CoresPerSocket', 'CPUs', 'CPUSpecList', 'Feature', 'Features', 'Gres',
    'GresConf', 'MemSpecLimit', 'NodeAddr', 'NodeHostname', 'Parameters', 'Port', 'Procs', 'RealMemory', 'Reason',
    'RestrictedCoresPerGPU', 'Sockets', 'SocketsPerBoard', 'ThreadsPerCore', 'TmpDisk', 'TRESWeights', 'Weight'))
_PARTITION_STATES = ('UP', 'DOWN', 'DRAIN', 'INACTIVE')
_PARTITION_BOOLS = ('default', 'disablerootjobs', 'exclusiveuser', 'exclusivetopo', 'hidden', 'lln', 'powerdownonidle',
                    'reqresv', 'rootonly')
_PARTITION_UINTS = ('defcpupergpu', 'defmempercpu', 'defmempergpu', 'defmempernode', 'gracetime', 'maxcpuspernode',
                    'maxcpuspersocket', 'maxmempercpu', 'maxmempernode', 'minnodes', 'priority', 'priorityjobfactor',
                    'prioritytier', 'resumetimeout', 'suspendtimeout')
_UINT16 = ('priority', 'priorityjobfactor', 'prioritytier', 'resumetimeout', 'suspendtimeout')
_MAX_LISTED = 100


def _show(value):
    text = repr(value) if not isinstance(value, bool) else ('true' if value else 'false')
    return text if len(text) <= 80 else text[:77] + '...'


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _names_text(names):
    names = sorted(set(names), key=natural_key)
    try:
        text = compress(names)
    except ValueError:
        text = ', '.join(names)
    return text if len(text) <= _MAX_LISTED else text[:_MAX_LISTED - 3] + '...'


# ----------------------------------------------------------------------------------------------- GPU models

def resolve_model(text, extra=()):
    """What the catalogue says of a model-name substring ``text`` (case-insensitive, as the checks match it).

    Returns ``{'kind': 'mig' | 'mig-unknown' | 'no-mig' | 'extra' | 'unknown', 'name': NVML name or None,
    'names': [matching names]}``; ``mig`` when the matching names with a catalogue MIG table share one table
    (``name`` is one of them), ``mig-unknown`` when the model has MIG but no table (or several tables) here.
    """
    wanted = text.strip().lower()
    found = catalogue.models_matching(wanted)
    guide = [name for name, model in found if model.profiles]
    if guide:
        tables = set(model.profiles for name, model in found if model.profiles)
        return {'kind': 'mig' if len(tables) == 1 else 'mig-unknown', 'name': guide[0], 'names': guide}
    other = [name for name, model in found if model.mig]
    none = [name for name, model in found if not model.mig]
    if other and not none:
        return {'kind': 'mig-unknown', 'name': None, 'names': other}
    if none and not other:
        return {'kind': 'no-mig', 'name': none[0], 'names': none}
    if other or none:
        return {'kind': 'mig-unknown', 'name': None, 'names': other + none}
    if any(wanted in str(name).lower() for name in extra if isinstance(name, str)):
        return {'kind': 'extra', 'name': None, 'names': []}
    return {'kind': 'unknown', 'name': None, 'names': []}


MODEL_VAR = node_type.VARIABLE + '.gpu_model'
COUNT_VAR = node_type.VARIABLE + '.gpu_count'


def _node_type(values):
    value = values.get(node_type.VARIABLE)
    if value is None or node_type.problems(value, extra=None):
        return None  # none declared, or a mistake its own check names
    return node_type.normalise(value, extra=None)


def declared_models(values):
    """``(variable, [model])`` of the host's GPUs as its node type declares them, or ``(None, None)``."""
    declared = _node_type(values)
    if declared is None or not declared['gpu_model'].strip():
        return None, None
    return MODEL_VAR, [declared['gpu_model'].strip()]


def declared_count(values):
    """``(variable, count)`` of the host's GPUs as its node type declares them, or ``(None, None)``."""
    declared = _node_type(values)
    if declared is None:
        return None, None
    return COUNT_VAR, declared['gpu_count']


def _expectation_problems(host, values, extra):
    """A node type whose model the catalogue (and ``preflight_gpu_models``) does not know.

    (Its other mistakes are the argument spec's and ``_roles``' of each role that reads it, on every host.)
    """
    value = values.get(node_type.VARIABLE)
    if value is None or node_type.problems(value, extra=None):
        return []
    return [(host, 'validate', message) for message in node_type.problems(value, extra)]


# ----------------------------------------------------------------------------------------------- MIG

def _layout_of(values):
    """``(layout name, variable holding it, entries)`` of the host's mig_layout, or None when there is none to check."""
    layout = values.get('mig_layout')
    if not isinstance(layout, str) or not layout:
        return None
    custom = values.get(mig_layouts.CUSTOM)
    catalogue = mig_layouts.layouts(custom if isinstance(custom, dict) else None)
    if layout not in catalogue:
        return None  # _roles._mig names it
    entries, where = catalogue[layout], mig_layouts.source(layout, custom)
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        return None  # _roles._mig names it
    return layout, where, entries


def _declared_gpu(index, name, mig):
    return {'index': index, 'uuid': 'declared', 'name': name, 'mig_capable': mig, 'mig_current': False, 'mig_pending': False,
            'profiles': catalogue.mig_profiles(name) if mig else None, 'instances': [], 'processes': []}


def _mig_message(text, where):
    return text.replace('gpus[0]', where)


def _entry_shape_problems(var, layout, entries):
    """The problems of the layout's entries taken one by one (the planner's own request checks)."""
    problems = []
    for number, entry in enumerate(entries):
        where = '%s[%s][%d]' % (var, _show(layout), number)
        try:
            mig_plan.check_request([entry])
        except mig_plan.MigPlanError as exc:
            problems.append(('mig', '%s (mig_layout %s): %s' % (where, _show(layout), _mig_message(str(exc), where))))
    return problems


def _gpu_index_problems(var, layout, entries, count, count_var):
    """The problems of the GPU indices the entries select one GPU by."""
    problems = []
    indices = []
    for number, entry in enumerate(entries):
        selector = entry.get('gpu', 'all')
        if _whole(selector) or (isinstance(selector, str) and selector.strip().isdigit()):
            indices.append((number, int(str(selector).strip())))
    if count is not None:
        for number, index in indices:
            if index >= count:
                problems.append(('mig', '%s[%s][%d].gpu is %d, but %s says the node has %d GPU%s; expected a GPU index from 0 to %d%s'
                                 % (var, _show(layout), number, index, count_var, count, '' if count == 1 else 's', count - 1,
                                    ' (or fix %s)' % count_var)))
    seen = {}
    for number, index in indices:
        if index in seen:
            problems.append(('mig', '%s[%s][%d].gpu is %d, already selected by %s[%s][%d]; select each GPU once'
                             % (var, _show(layout), number, index, var, _show(layout), seen[index])))
        else:
            seen[index] = number
    return problems


def _uncovered_problems(label, gpus, selected, count, count_var):
    """The problem of declared GPUs no entry of the layout selects, as a list."""
    problems = []
    uncovered = [gpu['index'] for gpu in gpus if gpu['index'] not in selected]
    if uncovered:
        problems.append(('mig', '%s selects none of GPUs %s of the %d the node has (%s %d); expected an entry for each GPU '
                         '({gpu: "%d", mig: false} leaves one whole) or mig_require_all_gpus: false'
                         % (label, ', '.join(str(i) for i in uncovered), count, count_var, count, uncovered[0])))
    return problems


def _layout_devices(values, gpus, selected, mig, name):
    """{gres type: count} the layout yields on the declared GPUs, or None when only the node can tell."""
    devices = {}
    type_map = catalogue.gres_type_map()
    if isinstance(values.get('slurm_gres_type_map'), dict):
        type_map.update(values['slurm_gres_type_map'])
    for gpu in gpus:
        entry = (selected.get(gpu['index']) or (None, None))[0]
        if entry is not None and entry.get('mig', True) and mig:
            instances = entry.get('instances') or []
            if entry.get('shape'):
                instances = catalogue.shape_instances(gpu['profiles'], entry['shape'])  # plan_gpu took it above
            for spec in instances:
                if spec.get('compute_instances'):
                    return None  # the GRES of a split GPU instance: left to the node
                profile = spec['profile'].split('+', 1)[0]
                devices[profile] = devices.get(profile, 0) + (spec.get('count') or 1)
            continue
        try:
            whole = gpu_type(name, type_map)
        except ValueError:
            return None
        devices[whole] = devices.get(whole, 0) + 1
    return devices


def mig_layout_problems(host, values, extra):
    """The host's MIG layout against its declared GPUs; ``(problems, devices)``.

    ``devices``: ``{gres type: count}`` the layout yields on the declared GPUs (whole GPUs by their GRES type), or None
    when that cannot be computed from the inventory alone.
    """
    found = _layout_of(values)
    if found is None:
        return [], None
    layout, var, entries = found
    label = 'mig_layout %s (%s[%s])' % (_show(layout), var, _show(layout))
    model_var, models = declared_models(values)
    count_var, count = declared_count(values)
    resolved = resolve_model(models[0], extra) if models and len(models) == 1 else None
    problems = _entry_shape_problems(var, layout, entries)
    if problems:
        return [(host, role, message) for role, message in problems], None
    problems.extend(_gpu_index_problems(var, layout, entries, count, count_var))
    if resolved is None or resolved['kind'] in ('unknown', 'extra', 'mig-unknown'):
        # no one model, or one whose profile table is not here: profiles are checked on the node
        return [(host, role, message) for role, message in problems], None
    mig = resolved['kind'] == 'mig'
    name = resolved['name']
    # a resolved model means a node type without mistakes (declared_models), so its gpu_count is a whole number here
    gpus = [_declared_gpu(index, name, mig) for index in range(count)]
    selected = {}
    uuids = False
    for number, entry in enumerate(entries):
        where = '%s[%s][%d]' % (var, _show(layout), number)
        selector = entry.get('gpu', 'all')
        filter_ = entry.get('model')
        matches = not filter_ or filter_.lower() in name.lower() or any(filter_.lower() in n.lower() for n in resolved['names'])
        if selector == 'all':
            picked = gpus if matches and (mig or entry.get('shape') not in catalogue.SHAPES) else []  # as the planner's select_gpus
        elif _whole(selector) or str(selector).strip().isdigit():
            index = int(str(selector).strip())
            picked = [gpus[index]] if index < len(gpus) else []
            if picked and not matches:
                problems.append(('mig', '%s.model is %s, but %s says GPU %d is %s; expected part of that name, or leave model out'
                                 % (where, _show(filter_), model_var, index, name)))
                picked = []
        else:
            uuids = True  # a UUID: only the node knows
            continue
        for gpu in picked:
            if gpu['index'] in selected:
                other = selected[gpu['index']][1]
                if selector == 'all' or entries[other].get('gpu', 'all') == 'all':
                    problems.append(('mig', '%s selects GPU %d, already selected by %s[%s][%d]; select each GPU once (gpu: all '
                                     'selects every GPU the model filter lets through)' % (where, gpu['index'], var, _show(layout), other)))
                    break
                continue  # two explicit indices: named above
            selected[gpu['index']] = (entry, number)
            wants = entry.get('mig', True)
            if not mig and wants:
                problems.append(('mig', '%s (mig_layout %s) asks for MIG on GPU %d, but %s says the node\'s GPUs are %s (%s), which have '
                                 'no MIG; expected no mig_layout on this node (or entries with mig: false)'
                                 % (where, _show(layout), gpu['index'], model_var, _show(models[0]), name)))
                break
            try:
                mig_plan.plan_gpu(gpu, entry)
            except mig_plan.MigPlanError as exc:
                text = str(exc).replace('(declared, %s)' % name, '(%s, as %s %s declares)' % (name, model_var, _show(models[0])))
                problems.append(('mig', '%s (mig_layout %s): %s' % (where, _show(layout), text)))
                break
    if count is not None and not uuids and values.get('mig_require_all_gpus') is not False:
        problems.extend(_uncovered_problems(label, gpus, selected, count, count_var))
    if problems:
        return [(host, role, message) for role, message in problems], None
    devices = _layout_devices(values, gpus, selected, mig, name)
    if devices is None or count is None or uuids:  # (a GPU selected by UUID: which one, only the node knows)
        return [], None
    return [], devices


def _node_gres(values):
    params = values.get('slurm_node_params')
    if not isinstance(params, dict):
        return None, None
    for key, value in params.items():
        if isinstance(key, str) and key.lower() == 'gres':
            return key, value
    return None, None


def _gres_problems(host, values, devices, extra):
    """A hand-set Gres of slurm_node_params against what the declared GPUs (and the MIG layout) yield."""
    key, value = _node_gres(values)
    if key is None or not isinstance(value, str):
        return []
    try:
        parsed = parse_gres_value(value)
    except ValueError as exc:
        return [(host, 'slurm', 'slurm_node_params.%s is %s: %s' % (key, _show(value), exc))]
    gpus = {}
    for name, gres_type, number in parsed:
        if name == 'gpu':
            gpus[gres_type or ''] = gpus.get(gres_type or '', 0) + number
    if devices is None and _layout_of(values) is None:
        count_var, count = declared_count(values)
        if count is None or not gpus:
            return []
        total = sum(gpus.values())
        if total != count:
            return [(host, 'slurm', 'slurm_node_params.%s is %s: %d GPU%s, but %s says the node has %d; slurmd would register %d and '
                     'the node would go INVALID (drained); expected gpu counts adding up to %d, or leave Gres out (the collection '
                     'writes it from the GPUs the node has)' % (key, _show(value), total, '' if total == 1 else 's', count_var, count,
                                                                count, count))]
        return []
    if devices is None:
        return []
    wanted = ','.join('gpu:%s:%d' % item for item in sorted(devices.items()))
    have = dict((t.lower(), n) for t, n in gpus.items())
    if have != dict((t.lower(), n) for t, n in devices.items()):
        layout = values.get('mig_layout')
        return [(host, 'slurm', 'slurm_node_params.%s is %s, but mig_layout %s on the GPUs the inventory declares yields %s; slurmd would '
                 'register those and the node would go INVALID (drained); expected %s, or leave Gres out (the collection writes it '
                 'from the MIG layout)' % (key, _show(value), _show(layout), wanted, wanted))]
    return []


# ----------------------------------------------------------------------------------------------- partitions

def node_names(host, values):
    """The Slurm node names the inventory host may have (its slurm_node_name, its name, its first label)."""
    names = {host, host.split('.', 1)[0]}
    given = values.get('slurm_node_name')
    if isinstance(given, str) and given and '{' not in given:
        names.add(given)
    return names


def _partition_nodes(nodes):
    if nodes is None or (isinstance(nodes, str) and nodes.strip().lower() == 'all'):
        return None  # (ALL in another case is named by _roles)
    if isinstance(nodes, str):
        try:
            return expand(nodes)
        except ValueError:
            return []
    if isinstance(nodes, list):
        return [str(n) for n in nodes]
    return []


def _option_value_problem(path, key, value):
    lower = key.lower()
    text = str(value).strip() if value is not None and not isinstance(value, (dict, list)) else None
    if isinstance(value, bool):
        text = 'YES' if value else 'NO'
    if text is None:
        return '%s is %s; expected a single value' % (path, _show(value))
    if lower == 'state' and text.upper() not in _PARTITION_STATES:
        return '%s is %s; valid values: %s' % (path, _show(value), ', '.join(_PARTITION_STATES))
    if lower in _PARTITION_BOOLS and text.upper() not in ('YES', 'NO'):
        return '%s is %s; expected YES or NO' % (path, _show(value))
    if lower in _PARTITION_UINTS:
        top = 65533 if lower in _UINT16 else 4294967293
        if lower in ('maxmempernode', 'maxmempercpu', 'defmempercpu', 'defmempernode', 'defmempergpu') and text.upper() in ('UNLIMITED', 'INFINITE'):
            return None
        if not re.match(r'^[0-9]+$', text) or int(text) > top:
            return '%s is %s; expected a whole number from 0 to %d' % (path, _show(value), top)
    if lower in ('maxnodes',) and text.upper() not in ('UNLIMITED', 'INFINITE') and not re.match(r'^[0-9]+$', text):
        return '%s is %s; expected a whole number or UNLIMITED' % (path, _show(value))
    return None


def _partition_problems(controller, values, compute_names, accounts, qos, warnings, compute_hosts):
    partitions = values.get('slurm_partitions')
    problems = []
    if not isinstance(partitions, list):
        return problems, set()
    covered = set()
    names = set()
    for index, part in enumerate(partitions):
        if not isinstance(part, dict):
            continue
        pname = part.get('name')
        if isinstance(pname, str):
            names.add(pname)
        label = ' (partition %s)' % pname if isinstance(pname, str) else ''
        members = _partition_nodes(part.get('nodes'))
        if members is None:
            covered.update(compute_names)
        else:
            unknown = [n for n in members if n not in compute_names]
            if unknown:
                problems.append((controller, 'slurm', 'slurm_partitions[%d].nodes is %s%s: %s %s not a compute node of the inventory; '
                                 'expected ALL or names of hosts of slurm_compute (%s)'
                                 % (index, _show(part.get('nodes')), label, _names_text(unknown), 'is' if len(unknown) == 1 else 'are',
                                    _names_text(compute_names) or 'none')))
            covered.update(n for n in members if n in compute_names)
        options = part.get('options')
        if not isinstance(options, dict):
            continue
        for key in sorted(options, key=str):
            path = 'slurm_partitions[%d].options.%s' % (index, key)
            lower = str(key).lower()
            if lower == 'nodes':
                problems.append((controller, 'slurm', '%s is %s%s: give the nodes of a partition as slurm_partitions[%d].nodes '
                                 '(ALL, a hostlist or a list), not among its options' % (path, _show(options[key]), label, index)))
                continue
            if lower == 'default':
                problems.append((controller, 'slurm', '%s is %s%s: mark the default partition with slurm_partitions[%d].default: true, '
                                 'not among its options' % (path, _show(options[key]), label, index)))
                continue
            if lower in ('partitionname', 'name'):
                problems.append((controller, 'slurm', '%s is %s%s: the name is slurm_partitions[%d].name' % (path, _show(options[key]), label, index)))
                continue
            if lower not in PARTITION_KEYS:
                if lower in NODE_KEYS:
                    problems.append((controller, 'slurm', '%s is %s%s: %s is a key of a node (NodeName line), not of a partition; '
                                     'set it per node in slurm_node_params (the GPU Gres is written from the nodes\' GPUs), valid '
                                     'partition keys: %s' % (path, _show(options[key]), label, NODE_KEYS[lower], _partition_key_text())))
                else:
                    problems.append((controller, 'slurm', '%s%s: %s is not a PartitionName option of slurm.conf (slurmctld would refuse the '
                                     'file); valid keys: %s' % (path, label, _show(key), _partition_key_text())))
                continue
            problem = _option_value_problem(path, key, options[key])
            if problem:
                problems.append((controller, 'slurm', problem + label))
                continue
            if accounts is not None and lower in ('allowaccounts', 'denyaccounts'):
                listed = [a.strip() for a in str(options[key]).split(',') if a.strip() and a.strip().upper() != 'ALL']
                bad = [a for a in listed if a.lower() not in accounts]
                if bad:
                    problems.append((controller, 'slurm', '%s is %s%s: %s %s not an account of slurmdbd_accounts; expected accounts the '
                                     'associations define (%s)' % (path, _show(options[key]), label, ', '.join(bad),
                                                                   'is' if len(bad) == 1 else 'are', ', '.join(sorted(accounts)))))
            if qos is not None and lower in ('allowqos', 'denyqos', 'qos'):
                listed = [a.strip() for a in str(options[key]).split(',') if a.strip() and a.strip().upper() != 'ALL']
                bad = [a for a in listed if a.lower() not in qos]
                if bad:
                    problems.append((controller, 'slurm', '%s is %s%s: QOS %s %s not defined; expected a QOS of slurmdbd_qos or normal (%s)'
                                     % (path, _show(options[key]), label, ', '.join(bad), 'is' if len(bad) == 1 else 'are',
                                        ', '.join(sorted(qos)))))
    alone = [host for host in compute_hosts if not (compute_hosts[host] & covered)]
    if alone:
        warnings.append('%s: in no partition of slurm_partitions (host %s): Slurm configures the node%s but no job can run there; add '
                        '%s to a partition\'s nodes (or ALL)' % (_names_text(alone), controller, '' if len(alone) == 1 else 's',
                                                                 'it' if len(alone) == 1 else 'them'))
    return problems, names


def _partition_key_text():
    return ', '.join(sorted((v for k, v in PARTITION_KEYS.items() if k not in ('nodes', 'default')), key=str.lower))


# ----------------------------------------------------------------------------------------------- associations

def _assoc_settings(controller, var, index, spec, fields, reserved, what):
    problems, settings = [], {}
    for key in spec:
        if key in reserved:
            continue
        path = '%s[%d].%s' % (var, index, key)
        try:
            field = sacctmgr.lookup_field(key, fields, what, reserved)
        except ValueError:
            problems.append((controller, 'slurmdbd', '%s: %s is not a setting of %s; valid settings: %s'
                             % (path, _show(key), what, ', '.join(sorted(list(reserved) + [f.name for f in fields])))))
            continue
        try:
            settings[field.name] = sacctmgr.inventory_value(field, spec[key], what)
        except ValueError as exc:
            problems.append((controller, 'slurmdbd', '%s is %s: %s' % (path, _show(spec[key]), exc)))
    return problems, settings


def _entries(controller, values, var):
    entries = values.get(var)
    if entries is None:
        return [], []
    if not isinstance(entries, list):
        return [], []  # the argument spec names it
    good, problems, seen = [], [], {}
    for index, spec in enumerate(entries):
        if not isinstance(spec, dict) or not isinstance(spec.get('name'), str) or not spec['name']:
            continue  # _roles._slurmdbd and the argument spec name it
        name = spec['name'].lower()
        try:
            sacctmgr.check_inventory_name(spec['name'], var.split('_', 1)[1].rstrip('s'))
        except ValueError as exc:
            problems.append((controller, 'slurmdbd', '%s[%d].name is %s: %s' % (var, index, _show(spec['name']), exc)))
            try:
                # (a name in upper case still defines the lower-case one: its references are not named again)
                sacctmgr.check_name(name, var)
            except ValueError:
                continue
        if name in seen:
            problems.append((controller, 'slurmdbd', '%s[%d].name is %s, also %s[%d]; give each once' % (var, index, _show(name), var, seen[name])))
            continue
        seen[name] = index
        good.append((index, name, spec))
    return good, problems


def _account_problems(controller, account_entries, accounts, refs):
    """The problems of slurmdbd_accounts (settings, parents, parent loops); appends each account's settings to refs."""
    problems = []
    parents = {}
    for index, name, spec in account_entries:
        entity_keys = ('description', 'organization')
        found, dummy = _assoc_settings(controller, 'slurmdbd_accounts', index, dict((k, v) for k, v in spec.items() if str(k).lower() in entity_keys),
                                       sacctmgr.ACCOUNT_FIELDS, (), 'account %s' % name)
        problems.extend(found)
        found, settings = _assoc_settings(controller, 'slurmdbd_accounts', index,
                                          dict((k, v) for k, v in spec.items() if str(k).lower() not in entity_keys),
                                          sacctmgr.ASSOC_FIELDS, ('name', 'state', 'parent'), 'account %s' % name)
        problems.extend(found)
        refs.append(('slurmdbd_accounts[%d]' % index, settings))
        parent = spec.get('parent', 'root')
        if not isinstance(parent, str) or not parent:
            problems.append((controller, 'slurmdbd', 'slurmdbd_accounts[%d].parent is %s; expected the name of an account' % (index, _show(parent))))
            continue
        if parent == name:
            problems.append((controller, 'slurmdbd', 'slurmdbd_accounts[%d].parent is %s, the account itself; expected another account or root'
                             % (index, _show(parent))))
            continue
        parents[name] = parent
        if parent.lower() not in accounts:
            problems.append((controller, 'slurmdbd', 'slurmdbd_accounts[%d].parent is %s (account %s), which is not an account of slurmdbd_accounts; '
                             'expected root or one of %s' % (index, _show(parent), name, ', '.join(sorted(accounts)))))
    for name in sorted(parents):
        seen, parent = [name], parents[name]
        while parent in parents and parent not in seen:
            seen.append(parent)
            parent = parents[parent]
        if parent in seen and parent == name:
            problems.append((controller, 'slurmdbd', 'slurmdbd_accounts: the parents of %s form a loop (%s); expected a tree below root'
                             % (name, ' -> '.join(seen + [parent]))))
    return problems


def _user_problems(controller, user_entries, accounts, refs):
    """The problems of slurmdbd_users (settings, accounts, default account, admin level); appends their settings to refs."""
    problems = []
    for index, name, spec in user_entries:
        what = 'user %s' % name
        found, common = _assoc_settings(controller, 'slurmdbd_users', index, spec, sacctmgr.ASSOC_FIELDS,
                                        ('name', 'state', 'accounts', 'default_account', 'admin_level'), what)
        problems.extend(found)
        refs.append(('slurmdbd_users[%d]' % index, common))
        listed = spec.get('accounts')
        names = []
        if isinstance(listed, list):
            for position, entry in enumerate(listed):
                path = 'slurmdbd_users[%d].accounts[%d]' % (index, position)
                entry = {'name': entry} if isinstance(entry, str) else entry
                if not isinstance(entry, dict) or not isinstance(entry.get('name'), str):
                    problems.append((controller, 'slurmdbd', '%s is %s; expected an account name or {name, <association option>}'
                                     % (path, _show(listed[position]))))
                    continue
                names.append(entry['name'].lower())
                found, settings = _assoc_settings(controller, 'slurmdbd_users', index, dict((k, v) for k, v in entry.items() if k != 'name'),
                                                  sacctmgr.ASSOC_FIELDS, (), '%s account %s' % (what, entry['name']))
                problems.extend(found)
                refs.append((path, settings))
                if entry['name'].lower() not in accounts:
                    problems.append((controller, 'slurmdbd', '%s is %s (user %s), which is not an account of slurmdbd_accounts; expected one '
                                     'of %s' % (path, _show(entry['name']), name, ', '.join(sorted(accounts)))))
        elif listed is not None:
            problems.append((controller, 'slurmdbd', 'slurmdbd_users[%d].accounts is %s; expected a list of account names' % (index, _show(listed))))
        if spec.get('state', 'present') == 'present' and isinstance(listed, list) and not listed:
            problems.append((controller, 'slurmdbd', 'slurmdbd_users[%d].accounts is [] (user %s); expected at least one account (a user '
                             'exists only through an association)' % (index, name)))
        default = spec.get('default_account')
        if isinstance(default, str) and names and default.lower() not in names:
            problems.append((controller, 'slurmdbd', 'slurmdbd_users[%d].default_account is %s (user %s); expected one of its accounts: %s'
                             % (index, _show(default), name, ', '.join(names))))
        admin = spec.get('admin_level')
        if admin is not None:
            try:
                sacctmgr.inventory_value(sacctmgr.USER_FIELDS[1], admin, what)
            except ValueError as exc:
                problems.append((controller, 'slurmdbd', 'slurmdbd_users[%d].admin_level is %s: %s' % (index, _show(admin), exc)))
    return problems


def _qos_ref_problems(controller, refs, preempts, qos):
    """The problems of QOS names used by associations and by Preempt= that slurmdbd_qos does not define."""
    problems = []
    for path, settings in refs:
        used = set(settings.get('QOS') or ())
        if settings.get('DefaultQOS'):
            used.add(settings['DefaultQOS'])
        for ref in sorted(used - qos):
            problems.append((controller, 'slurmdbd', '%s uses QOS %s, which is not in slurmdbd_qos; expected one of %s'
                             % (path, _show(ref), ', '.join(sorted(qos)))))
        default = settings.get('DefaultQOS')
        if default and 'QOS' in settings and default not in settings['QOS']:
            problems.append((controller, 'slurmdbd', '%s.DefaultQOS is %s, not in its QOS list (%s); expected one of them'
                             % (path, _show(default), ', '.join(sorted(settings['QOS'])) or 'empty')))
    for path, ref in preempts:
        if ref not in qos:
            problems.append((controller, 'slurmdbd', '%s names QOS %s, which is not in slurmdbd_qos; expected one of %s'
                             % (path, _show(ref), ', '.join(sorted(qos)))))
    return problems


def association_problems(controller, values):
    """Every problem of the controller's slurmdbd_qos/accounts/users; ``(problems, accounts, qos)`` (the names defined)."""
    problems = []
    qos_entries, found = _entries(controller, values, 'slurmdbd_qos')
    problems.extend(found)
    account_entries, found = _entries(controller, values, 'slurmdbd_accounts')
    problems.extend(found)
    user_entries, found = _entries(controller, values, 'slurmdbd_users')
    problems.extend(found)
    qos = set(sacctmgr.PROTECTED_QOS) | set(name for _i, name, spec in qos_entries if spec.get('state', 'present') == 'present')
    accounts = set(sacctmgr.PROTECTED_ACCOUNTS) | set(name for _i, name, spec in account_entries if spec.get('state', 'present') == 'present')
    preempts = []
    for index, name, spec in qos_entries:
        found, settings = _assoc_settings(controller, 'slurmdbd_qos', index, spec, sacctmgr.QOS_FIELDS, ('name', 'state'), 'QOS %s' % name)
        problems.extend(found)
        preempts.extend(('slurmdbd_qos[%d].Preempt' % index, ref) for ref in settings.get('Preempt') or ())
    refs = []
    problems.extend(_account_problems(controller, account_entries, accounts, refs))
    problems.extend(_user_problems(controller, user_entries, accounts, refs))
    problems.extend(_qos_ref_problems(controller, refs, preempts, qos))
    return problems, accounts, qos


# ----------------------------------------------------------------------------------------------- all of it

def _task_prolog_warnings(compute, gpu_nodes, values, ctl_values):
    """The nodes that make the slurm role configure its TaskProlog, unless the controller's slurm_conf_overrides removes
    it: slurmstepd runs the TaskProlog inside pyxis containers, where it cannot run (a warning: a site without
    container jobs keeps it)."""
    overrides = (ctl_values or {}).get('slurm_conf_overrides')
    if isinstance(overrides, dict) and any(str(k).lower() == 'taskprolog' and v is None for k, v in overrides.items()):
        return []
    table = dict((host, dict(values.get(host) or {}, mig_layout=(values.get(host) or {}).get('mig_layout') if host in gpu_nodes else ''))
                 for host in compute)
    needs = task_prolog_needs(table)
    if not needs:
        return []
    shown = '; '.join('%s: %s' % (host, reason) for host, reason in needs[:4])
    more = ' and %d more node(s)' % (len(needs) - 4) if len(needs) > 4 else ''
    return ['TaskProlog: the slurm role configures it for %s%s. slurmstepd runs it inside pyxis containers, where it cannot '
            'run, so every container job of the cluster fails (pyxis issues 83 and 163); where jobs run in containers set '
            'slurm_conf_overrides: {TaskProlog: null} on the controller (README, Troubleshooting)' % (shown, more)]


def site_problems(values, groups, controller, run_hosts, compute_group='slurm_compute', gpu_group='gpu_nodes', accounting=True):
    """Problems and warnings of the inventory as a whole.

    ``values``: host -> its templated values of :data:`SITE_VARIABLES` (only what could be templated);
    ``groups``: the inventory groups; ``controller``: the controller host (its slurm_partitions and associations
    are the cluster's) or None; ``run_hosts``: the hosts of this run (--limit); ``accounting``: whether the
    association stage runs (the slurmdbd group has a host).
    """
    problems, warnings = [], []
    compute = [h for h in (groups.get(compute_group) or []) if isinstance(h, str)]
    gpu_nodes = set(h for h in (groups.get(gpu_group) or []) if isinstance(h, str))
    run = set(run_hosts)
    for host in sorted(compute, key=natural_key):
        if host not in run or host not in values:
            continue
        host_values = values[host]
        extra = host_values.get(EXTRA_MODELS_VAR)
        extra = extra if isinstance(extra, list) else []
        problems.extend(_expectation_problems(host, host_values, extra))
        devices = None
        if host in gpu_nodes:
            found, devices = mig_layout_problems(host, host_values, extra)
            problems.extend(found)
            if found:
                continue
        problems.extend(_gres_problems(host, host_values, devices, extra))
    accounts = qos = None
    ctl_values = values.get(controller) if controller else None
    if ctl_values is not None and accounting:
        found, accounts, qos = association_problems(controller, ctl_values)
        problems.extend(found)
    if ctl_values is not None:
        compute_hosts = dict((h, node_names(h, values.get(h) or {})) for h in compute if h in run)
        names = set()
        for host in compute:
            names.update(node_names(host, values.get(host) or {}))
        found, partitions = _partition_problems(controller, ctl_values, names, accounts, qos, warnings, compute_hosts)
        problems.extend(found)
        if isinstance(ctl_values.get('slurm_partitions'), list):
            for host in sorted(set(compute) | {controller}, key=natural_key):
                jobs = (values.get(host) or {}).get('validate_jobs')
                wanted = jobs.get('partition') if isinstance(jobs, dict) else None
                if host in run and isinstance(wanted, str) and wanted and wanted not in partitions:
                    problems.append((host, 'validate', 'validate_jobs.partition is %s, which is not a partition of slurm_partitions; expected one '
                                     'of %s, or "" for the default partition' % (_show(wanted), ', '.join(sorted(partitions)) or 'none')))
    warnings.extend(_task_prolog_warnings(compute, gpu_nodes, values, ctl_values))
    return problems, warnings
