# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm.conf model: node lines, settings with overrides, change classification.

The role ``gpucluster.bringup.slurm`` renders slurm.conf from values computed
here (through the filter plugins in ``plugins/filter/slurm.py``); the template
only prints them.

* :func:`parse_slurmd_c` reads a node's ``slurmd -C`` line.
* :func:`node_lines` merges nodes with identical hardware and GRES into one
  ``NodeName=gpu-[01-64] ...`` line (hostlist from ``_hostlist.compress``).
* :func:`merge_settings` applies an overrides dictionary to the defaults
  (Slurm keys are case-insensitive; ``None`` removes a key).
* :func:`kept_nodes` gives a compute node that a run cannot read (outside
  ``--limit`` and unreachable) its last known entry, the NodeName line of the
  controller's slurm.conf (:func:`parse_node_definitions`).
* :func:`change_actions` compares the old and new slurm.conf and says which
  daemons must restart and whether ``scontrol reconfigure`` is enough, from
  the restart notes of the slurm.conf(5) man page of the installed release
  (22.05: many keys need restarts; 23.11 on: a reconfigure restarts the
  daemons itself, only TCP listening settings and AuthType need a restart).

Standard library only; bad input raises ``ValueError`` naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress, expand

# Hardware keys of a node line, in the order slurmd -C prints them.
HARDWARE_KEYS = ('CPUs', 'Boards', 'SocketsPerBoard', 'CoresPerSocket', 'ThreadsPerCore', 'RealMemory')

# slurm.conf(5) of Slurm 22.05, "A restart of slurmctld is required ..." and
# friends.  Keys are lower case (Slurm keys are case-insensitive).
RESTART_SLURMCTLD_KEYS = frozenset(k.lower() for k in (
    'AccountingStorageEnforce', 'CredType', 'JobContainerType', 'MaxJobCount', 'MaxNodeCount', 'PowerPlugin',
    'ProctrackType', 'SchedulerType', 'SelectTypeParameters', 'SlurmctldHost', 'ControlMachine', 'ControlAddr',
    'BackupController', 'BackupAddr', 'SlurmctldPort', 'SlurmdPort', 'StateSaveLocation', 'SlurmctldParameters',
))
# "A restart of slurmctld and the slurmd daemons is required" (GresTypes,
# PluginDir, SelectType), "All Slurm daemons ... must be terminated"
# (AuthType, SwitchType), X11Parameters; plugin types that slurmd loads once at
# start (TaskPlugin, JobAcctGatherType, CoreSpecPlugin, SlurmdUser) are added
# on the safe side: a restart where a reconfigure might do costs little, the
# reverse leaves a daemon running the old plugin.
RESTART_ALL_KEYS = frozenset(k.lower() for k in (
    'AuthType', 'GresTypes', 'PluginDir', 'SelectType', 'SwitchType', 'X11Parameters', 'TaskPlugin',
    'JobAcctGatherType', 'CoreSpecPlugin', 'SlurmdUser', 'SlurmUser', 'ClusterName', 'SlurmdSpoolDir',
    'CommunicationParameters', 'TopologyPlugin', 'RoutePlugin',
))

# Slurm 23.11 on, where `scontrol reconfigure` makes every daemon start a new
# process of itself with the new files (slurm.conf(5) of 24.11: "Changes to
# TCP listening settings will require a daemon restart"; AuthType: "All Slurm
# daemons and commands must be terminated"; CredType must match on all
# daemons at once).
RESTART_ALL_KEYS_SINCE_23_11 = frozenset(k.lower() for k in (
    'AuthType', 'CredType', 'SlurmctldPort', 'SlurmdPort', 'SlurmctldAddr', 'CommunicationParameters',
))

# A host name: labels of letters, digits and '-' (not first or last) joined with '.'.
_NODE_NAME = re.compile(r'^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$')
_RESERVED_NAMES = ('all', 'default')
_SETTING_KEY = re.compile(r'^[A-Za-z][A-Za-z0-9]*$')
_PARTITION_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')


def validate_node_name(name):
    """Return ``name`` if Slurm accepts it as a NodeName, else raise ``ValueError``."""
    if not isinstance(name, str) or not _NODE_NAME.match(name):
        raise ValueError(
            'node name %r is not one Slurm accepts: a host name of letters, digits and "-" (not first or last in a label), '
            'labels joined with ".", no "_", spaces, brackets, commas, "=" or "#" (e.g. "gpu-01")' % (name,))
    if name.lower() in _RESERVED_NAMES:
        raise ValueError('node name "%s" is reserved by Slurm (ALL and DEFAULT cannot be node names)' % name)
    return name


def preflight_errors(controllers, compute, node_names=None, gpu_nodes=None, group_names=None):
    """Problems with the inventory that stop the run before it changes anything.

    ``controllers`` and ``compute`` are the host lists of the controller and
    compute groups; ``node_names`` the Slurm node names to check (defaults to
    the compute host names); ``gpu_nodes`` the hosts of the GPU group, which
    must all be compute hosts (checked when given).

    ``group_names`` (``{'controller': ..., 'compute': ..., 'gpu': ...}``)
    names the inventory groups in the messages (site.yml's preflight); a group
    given as ``None`` is then reported as missing rather than empty.  Without
    it the messages speak of "the controller group" (the slurm role).
    """
    errors = []
    names = dict(group_names or {})
    named = bool(names)

    def group(role, fallback):
        return 'inventory group %s' % names[role] if role in names else fallback

    def state(hosts):
        return 'is missing' if named and hosts is None else 'is empty'

    controller_hosts = list(controllers or [])
    compute_hosts = list(compute or [])
    if not controller_hosts:
        errors.append('%s %s: put exactly one host in it (slurmctld runs there)'
                      % (group('controller', 'the controller group'), state(controllers)))
    elif len(controller_hosts) > 1:
        errors.append('%s has %d hosts (%s): exactly one is supported until slurmctld HA is'
                      % (group('controller', 'the controller group'), len(controller_hosts), ', '.join(controller_hosts)))
    if not compute_hosts:
        errors.append('%s %s: put at least one host in it (slurmd runs there)'
                      % (group('compute', 'the compute group'), state(compute)))
    if gpu_nodes is not None:
        outside = [host for host in gpu_nodes if host not in compute_hosts]
        if outside:
            errors.append('hosts of %s must also be in %s (GPUs are scheduled as GRES of compute nodes), these are not: %s'
                          % (group('gpu', 'the GPU group'), group('compute', 'the compute group'), ', '.join(outside)))
    for name in (compute_hosts if node_names is None else node_names):
        try:
            validate_node_name(name)
        except ValueError as exc:
            errors.append(str(exc))
    return errors


def parse_slurmd_c(text):
    """Parse ``slurmd -C`` output into ``{'NodeName': str, 'CPUs': int, ...}``.

    Only the first line holds the node; ``UpTime=...`` on the second line is
    ignored.  ``CPUs`` and ``RealMemory`` must be present.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError('slurmd -C printed nothing; expected a line like "NodeName=gpu-01 CPUs=64 ... RealMemory=515000"')
    line = None
    for raw in text.splitlines():
        if raw.strip().startswith('NodeName='):
            line = raw.strip()
            break
    if line is None:
        raise ValueError('slurmd -C output has no "NodeName=" line: %r' % text.strip()[:200])
    result = {}
    for token in line.split():
        if '=' not in token:
            raise ValueError('slurmd -C line has "%s", which is not KEY=VALUE: %r' % (token, line))
        key, value = token.split('=', 1)
        if key == 'NodeName':
            result[key] = value
        elif key in HARDWARE_KEYS:
            if not value.isdigit():
                raise ValueError('slurmd -C reports %s=%s; expected a whole number' % (key, value))
            result[key] = int(value)
    for key in ('CPUs', 'RealMemory'):
        if key not in result:
            raise ValueError('slurmd -C line lacks %s=: %r' % (key, line))
    return result


def node_params(hardware, gres=None, extra=None, memory_reserve_mb=0):
    """Ordered ``[(key, value)]`` of one node line (without ``NodeName``).

    ``hardware`` is a :func:`parse_slurmd_c` result; ``memory_reserve_mb`` is
    taken off ``RealMemory`` (slurmd drains a node whose real memory is below
    the configured value, so leaving headroom is common); ``gres`` is the
    ``Gres=`` value (``node_gres`` of ``slurm_gres_facts``); ``extra`` adds or
    overrides keys (``Features``, ``Weight``, ``RealMemory`` ...).
    """
    if not isinstance(memory_reserve_mb, int) or memory_reserve_mb < 0:
        raise ValueError('memory reserve %r must be a non-negative number of MB' % (memory_reserve_mb,))
    params = []
    for key in HARDWARE_KEYS:
        if key not in hardware:
            continue
        value = hardware[key]
        if key == 'RealMemory':
            if value - memory_reserve_mb < 1:
                raise ValueError('memory reserve %d MB leaves no memory on a node with RealMemory=%d' % (memory_reserve_mb, value))
            value = value - memory_reserve_mb
        params.append((key, str(value)))
    if gres:
        params.append(('Gres', str(gres)))
    return _apply(params, extra or {}, 'node parameter')


def _apply(pairs, overrides, what, sort_new=False):
    """Apply ``overrides`` to ``pairs``: same key (any case) replaced in place, new keys appended, ``None`` removes.

    ``sort_new``: new keys are appended in sorted order, so that the result does not depend on the order of
    the dictionary (inventory variables may come back from an inventory script with their keys sorted).
    """
    if not isinstance(overrides, dict):
        raise ValueError('%s overrides %r must be a dictionary of KEY: value' % (what, overrides))
    result = list(pairs)
    items = sorted(overrides.items(), key=lambda item: str(item[0])) if sort_new else list(overrides.items())
    for key, value in items:
        if not isinstance(key, str) or not _SETTING_KEY.match(key):
            raise ValueError('%s key %r is not a slurm.conf key (letters and digits, e.g. "SchedulerType")' % (what, key))
        value_text = _value_text(key, value, what)
        positions = [i for i, (k, _v) in enumerate(result) if k.lower() == key.lower()]
        if value_text is None:
            result = [pair for i, pair in enumerate(result) if i not in positions]
        elif positions:
            result[positions[0]] = (key, value_text)
        else:
            result.append((key, value_text))
    return result


def _value_text(key, value, what):
    if value is None:
        return None
    if isinstance(value, bool):
        return 'YES' if value else 'NO'
    if isinstance(value, (list, tuple)):
        value = ','.join(str(item) for item in value)
    text = str(value)
    if not text.strip() or '\n' in text or '#' in text:
        raise ValueError('%s %s=%r: the value must be non-empty, on one line and without "#"' % (what, key, value))
    if ' ' in text and not (text.startswith('"') and text.endswith('"')):
        raise ValueError('%s %s=%r contains spaces; quote it ("\\"...\\"") or remove them' % (what, key, value))
    return text


def merge_settings(defaults, overrides=None):
    """Defaults updated with overrides, as an ordered list of ``(key, value)``.

    Keys match case-insensitively (``selecttype`` overrides ``SelectType``),
    a ``None`` value removes the key, booleans print as ``YES``/``NO`` and
    lists are joined with commas. Keys the defaults do not have are appended
    in sorted order, whatever the order of ``overrides``.
    """
    if not isinstance(defaults, dict):
        raise ValueError('slurm.conf defaults %r must be a dictionary of KEY: value' % (defaults,))
    pairs = _apply([], defaults, 'slurm.conf setting')
    return _apply(pairs, overrides or {}, 'slurm.conf setting', sort_new=True)


def settings_dict(defaults, overrides=None):
    """:func:`merge_settings` as a dictionary whose keys the defaults have keep the defaults' spelling
    (``storageloc: x`` over ``StorageLoc`` gives ``{'StorageLoc': 'x'}``), so a role reads one key whatever case the
    admin wrote."""
    spelling = dict((key.lower(), key) for key in defaults) if isinstance(defaults, dict) else {}
    return dict((spelling.get(key.lower(), key), value) for key, value in merge_settings(defaults, overrides))


def combine_settings(dicts):
    """Dictionaries of slurm.conf keys merged in order into one: a later key replaces an earlier one in any case.

    The keys other roles contribute and the admin's ``slurm_conf_overrides``
    (in that order) become the one ``overrides`` of :func:`merge_settings`,
    so their keys new to the defaults are sorted together.
    """
    if not isinstance(dicts, (list, tuple)):
        raise ValueError('slurm.conf contributions %r must be a list of dictionaries of KEY: value' % (dicts,))
    merged = {}
    for item in dicts:
        if not isinstance(item, dict):
            raise ValueError('slurm.conf contribution %r must be a dictionary of KEY: value' % (item,))
        for key, value in item.items():
            for old in [k for k in merged if str(k).lower() == str(key).lower()]:
                del merged[old]
            merged[key] = value
    return merged


def render_pairs(pairs):
    """``[('A', '1'), ('B', '2')]`` -> ``['A=1', 'B=2']``."""
    return ['%s=%s' % (key, value) for key, value in pairs]


def node_lines(nodes):
    """``NodeName=`` lines, nodes with identical parameters merged into one hostlist.

    ``nodes`` is a list of ``{'name': str, 'params': [(key, value), ...]}``
    (see :func:`node_params`).  Lines come in order of each group's first
    node; within a line names keep their order, so ``gpu-01, gpu-02`` with the
    same hardware give ``NodeName=gpu-[01-02] ...``.
    """
    groups = []
    index = {}
    seen = set()
    for node in nodes:
        name = validate_node_name(node.get('name') if isinstance(node, dict) else node)
        if name in seen:
            raise ValueError('node "%s" is listed twice; each node needs exactly one NodeName entry' % name)
        seen.add(name)
        params = tuple((str(k), str(v)) for k, v in (node.get('params', []) if isinstance(node, dict) else ()))
        if params not in index:
            index[params] = len(groups)
            groups.append((params, []))
        groups[index[params]][1].append(name)
    lines = []
    for params, names in groups:
        text = 'NodeName=%s' % compress(names)
        if params:
            text += ' ' + ' '.join(render_pairs(params))
        lines.append(text)
    return lines


def cluster_gres_lines(nodes):
    """One gres.conf for every node (configless Slurm: slurmctld serves the controller's file to all slurmds).

    ``nodes`` is a list of ``{'name': str, 'gres_conf_lines': [str], 'gres_conf_comments': [str]}`` (a
    node's own gres.conf, as ``slurm_gres_facts`` gives it).  Each line gets ``NodeName=`` in front; nodes
    whose lines and comments are identical share one block with a hostlist (``NodeName=gpu-[01-64]``), in
    order of each block's first node.  A node without lines is left out.  A line that already names its
    nodes is refused: the node a line belongs to is the node it came from.
    """
    blocks = []
    index = {}
    seen = set()
    for node in nodes or []:
        if not isinstance(node, dict):
            raise ValueError('each node must be a dict with name and gres_conf_lines, got %r' % (node,))
        name = validate_node_name(node.get('name'))
        if name in seen:
            raise ValueError('node "%s" is listed twice; each node has one gres.conf' % name)
        seen.add(name)
        lines = tuple(str(line).strip() for line in node.get('gres_conf_lines') or [] if str(line).strip())
        for line in lines:
            if line.split('=', 1)[0].strip().lower() == 'nodename':
                raise ValueError('gres.conf line of node "%s" already names nodes: "%s"; give the lines of the '
                                 'node alone' % (name, line))
        if not lines:
            continue
        comments = tuple(str(line) for line in node.get('gres_conf_comments') or [])
        key = (lines, comments)
        if key not in index:
            index[key] = len(blocks)
            blocks.append((lines, comments, []))
        blocks[index[key]][2].append(name)
    result = []
    for lines, comments, names in blocks:
        hostlist = compress(names)
        result.extend('# %s: %s' % (hostlist, comment) for comment in comments)
        result.extend('NodeName=%s %s' % (hostlist, line) for line in lines)
    return result


def gres_conf_file_lines(nodes, node_names=False):
    """The lines of a gres.conf: one node's own (``node_names`` false: its comments as ``# ...`` lines, then
    its lines) or, for configless Slurm, every node's with ``NodeName=`` (:func:`cluster_gres_lines`)."""
    if node_names:
        return cluster_gres_lines(nodes)
    if not isinstance(nodes, list) or len(nodes) != 1 or not isinstance(nodes[0], dict):
        raise ValueError('a node\'s own gres.conf is made from exactly one node, got %r' % (nodes,))
    node = nodes[0]
    return (['# %s' % comment for comment in node.get('gres_conf_comments') or []]
            + [str(line) for line in node.get('gres_conf_lines') or []])


def partition_lines(partitions, node_names):
    """``PartitionName=`` lines.

    ``partitions`` is a list of ``{'name': str, 'nodes': 'ALL' | hostlist | [names],
    'default': bool, 'options': {KEY: value}}``; ``node_names`` are the
    configured node names, used to check that partitions name only known nodes.
    """
    if not isinstance(partitions, list) or not partitions:
        raise ValueError('slurm partitions %r must be a non-empty list of {name: ..., nodes: ...}' % (partitions,))
    known = set(node_names)
    lines = []
    names = set()
    defaults = 0
    for part in partitions:
        if not isinstance(part, dict) or 'name' not in part:
            raise ValueError('partition %r needs at least a "name" key' % (part,))
        name = part['name']
        if not isinstance(name, str) or not _PARTITION_NAME.match(name) or name.lower() == 'default':
            raise ValueError('partition name %r is not valid: use letters, digits, ".", "_", "-" (and not DEFAULT)' % (name,))
        if name in names:
            raise ValueError('partition "%s" is defined twice' % name)
        names.add(name)
        nodes = part.get('nodes', 'ALL')
        if nodes == 'ALL':
            nodes_text = 'ALL'
        else:
            members = expand(nodes) if isinstance(nodes, str) else list(nodes)
            if not members:
                raise ValueError('partition "%s" has no nodes' % name)
            unknown = [n for n in members if n not in known]
            if unknown:
                raise ValueError('partition "%s" names nodes that are not configured: %s (configured: %s)'
                                 % (name, ', '.join(unknown), ', '.join(sorted(known)) or 'none'))
            nodes_text = compress(members)
        pairs = [('Nodes', nodes_text)]
        if part.get('default'):
            defaults += 1
            pairs.append(('Default', 'YES'))
        pairs = _apply(pairs, part.get('options') or {}, 'partition "%s"' % name)
        lines.append('PartitionName=%s %s' % (name, ' '.join(render_pairs(pairs))))
    if defaults > 1:
        raise ValueError('%d partitions are marked default; at most one may be' % defaults)
    return lines


def gres_types(node_gres_values, extra=()):
    """``GresTypes`` value: the GRES names used by any node, e.g. ``gpu,mps``."""
    names = []
    for value in list(node_gres_values) + [','.join(extra)]:
        for item in (value or '').split(','):
            item = item.strip()
            if not item:
                continue
            name = item.split(':', 1)[0]
            if name not in names:
                names.append(name)
    return ','.join(names)


def parse_gres_value(value):
    """``gpu:1g.10gb:7,gpu:a100:2,mps:200`` -> ``[('gpu', '1g.10gb', 7), ('gpu', 'a100', 2), ('mps', None, 200)]``."""
    result = []
    for item in (value or '').split(','):
        item = item.strip()
        if not item:
            continue
        parts = item.split(':')
        if len(parts) == 2 and parts[1].isdigit():
            result.append((parts[0], None, int(parts[1])))
        elif len(parts) == 3 and parts[2].isdigit():
            result.append((parts[0], parts[1], int(parts[2])))
        elif len(parts) == 1:
            result.append((parts[0], None, 1))
        else:
            raise ValueError('Gres item "%s" is not NAME[:TYPE]:COUNT (e.g. "gpu:a100:2")' % item)
    return result


def parse_gres_conf_types(lines):
    """``{(name, type)}`` declared by gres.conf lines (``Type`` may be ``None``)."""
    declared = set()
    for raw in lines:
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        fields = {}
        for token in line.split():
            if '=' in token:
                key, value = token.split('=', 1)
                fields[key.lower()] = value
        if 'name' in fields:
            declared.add((fields['name'], fields.get('type')))
    return declared


def check_gres_consistency(node, node_gres, gres_conf_lines):
    """Errors for GRES that slurm.conf declares for ``node`` but its gres.conf lacks.

    Returns a list of messages (empty when consistent).  A typed GRES
    (``gpu:1g.10gb:7``) needs a gres.conf line with that Name and Type; an
    untyped one (``mps:100``) a line with that Name.  ``AutoDetect=`` lines
    make the check impossible, so they yield no error.
    """
    if any(line.strip().lower().startswith('autodetect=') for line in gres_conf_lines):
        return []
    declared = parse_gres_conf_types(gres_conf_lines)
    names = set(name for name, _type in declared)
    errors = []
    for name, gres_type, _count in parse_gres_value(node_gres):
        if gres_type is not None and (name, gres_type) not in declared:
            have = sorted(t for n, t in declared if n == name and t)
            errors.append('node %s: slurm.conf declares Gres=%s:%s but its gres.conf has no Name=%s Type=%s line (types there: %s)'
                          % (node, name, gres_type, name, gres_type, ', '.join(have) or 'none'))
        elif gres_type is None and name not in names:
            errors.append('node %s: slurm.conf declares Gres=%s but its gres.conf has no Name=%s line' % (node, name, name))
    return errors


def parse_conf(text):
    """Parse slurm.conf text: ``{'settings': {key_lower: value}, 'nodes': {...}, 'partitions': {...}, 'other': [...]}``.

    ``nodes`` maps each expanded node name to its parameters (lower-case keys);
    ``partitions`` maps partition names to their parameters.
    """
    settings, nodes, partitions, other = {}, {}, {}, []
    for raw in (text or '').splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        first = tokens[0]
        if '=' not in first:
            other.append(line)
            continue
        key, value = first.split('=', 1)
        if key.lower() == 'nodename':
            params = _token_dict(tokens[1:])
            try:
                names = expand(value)
            except ValueError:
                names = [value]
            for name in names:
                nodes[name] = params
        elif key.lower() == 'partitionname':
            partitions[value] = _token_dict(tokens[1:])
        elif len(tokens) == 1:
            settings[key.lower()] = value
        else:
            settings[key.lower()] = line.split('=', 1)[1]
    return {'settings': settings, 'nodes': nodes, 'partitions': partitions, 'other': other}


def _token_dict(tokens):
    result = {}
    for token in tokens:
        if '=' in token:
            key, value = token.split('=', 1)
            result[key.lower()] = value
    return result


def change_actions(old_text, new_text, reconfigure_restarts=False):
    """What a change from ``old_text`` to ``new_text`` of slurm.conf needs.

    Returns ``{'restart_slurmctld': bool, 'restart_slurmd': bool,
    'reconfigure': bool, 'reasons': [str]}``.  Per slurm.conf(5) and
    scontrol(1) of Slurm 22.05 (``reconfigure_restarts`` false): adding,
    removing or changing a node definition needs both daemons restarted; keys
    in :data:`RESTART_ALL_KEYS` both, :data:`RESTART_SLURMCTLD_KEYS`
    slurmctld; any other change (partitions, Prolog, timeouts ...) is applied
    by ``scontrol reconfigure``.  From Slurm 23.11 on (``reconfigure_restarts``
    true, see ``_slurm_version.behaviour``) a reconfigure restarts the daemons
    itself and takes node changes: only :data:`RESTART_ALL_KEYS_SINCE_23_11`
    need a restart.  An empty or missing old file (first install) restarts
    both.
    """
    if old_text == new_text:
        return {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': False, 'reasons': []}
    if not (old_text or '').strip():
        return {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False, 'reasons': ['no previous slurm.conf']}
    old, new = parse_conf(old_text), parse_conf(new_text)
    reasons = []
    ctld = slurmd = reconfigure = False
    keys = sorted(set(old['settings']) | set(new['settings']))
    for key in keys:
        if old['settings'].get(key) == new['settings'].get(key):
            continue
        if key in (RESTART_ALL_KEYS_SINCE_23_11 if reconfigure_restarts else RESTART_ALL_KEYS):
            ctld = slurmd = True
            reasons.append('%s changed: restart slurmctld and slurmd' % key)
        elif key in RESTART_SLURMCTLD_KEYS and not reconfigure_restarts:
            ctld = True
            reasons.append('%s changed: restart slurmctld' % key)
        else:
            reconfigure = True
            reasons.append('%s changed: scontrol reconfigure' % key)
    if old['nodes'] != new['nodes']:
        added = sorted(set(new['nodes']) - set(old['nodes']))
        removed = sorted(set(old['nodes']) - set(new['nodes']))
        changed = sorted(n for n in set(old['nodes']) & set(new['nodes']) if old['nodes'][n] != new['nodes'][n])
        detail = '; '.join(text for text in (
            'added %s' % compress(added) if added else '',
            'removed %s' % compress(removed) if removed else '',
            'changed %s' % compress(changed) if changed else '') if text)
        if reconfigure_restarts:
            reconfigure = True
            reasons.append('node definitions changed (%s): scontrol reconfigure' % detail)
        else:
            ctld = slurmd = True
            reasons.append('node definitions changed (%s): restart slurmctld and slurmd' % detail)
    if old['partitions'] != new['partitions'] or old['other'] != new['other']:
        reconfigure = True
        reasons.append('partitions or other lines changed: scontrol reconfigure')
    if ctld and slurmd:
        reconfigure = False  # every daemon reads the whole file when it starts
    if not (ctld or slurmd or reconfigure):
        reasons.append('only comments or layout changed: nothing to do')
    return {'restart_slurmctld': ctld, 'restart_slurmd': slurmd, 'reconfigure': reconfigure, 'reasons': reasons}


# --- the last known definition of a compute node outside a run ----------------------------------
#
# A compute node left out of a run (--limit) that cannot be read there (unreachable, slurmd -C fails) keeps
# the definition the controller's slurm.conf has for it: its NodeName line, the same pairs in the same
# order, so the new slurm.conf has the same line for it and no restart is decided because of it.

# Keys of a NodeName line that may list one value per node of the line (slurm.conf(5): "may also be specified
# as a hostlist expression with the same number of entries as NodeName").
_PER_NODE_KEYS = ('nodeaddr', 'nodehostname')
_HARDWARE_BY_LOWER = dict((key.lower(), key) for key in HARDWARE_KEYS)


def _logical_lines(text):
    """``(line number, text)`` of each logical line: comments removed, ``\\`` continuations joined, blank lines left out.

    As Slurm reads its files: ``#`` starts a comment (``\\#`` is a literal ``#``), a line whose last character
    (after the comment is removed) is a backslash continues on the next one; the number is the first line's.
    """
    result = []
    pending, start = '', None
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r'(?<!\\)#.*$', '', raw).replace('\\#', '#').rstrip()
        if start is None:
            start = number
        if line.endswith('\\'):
            pending += line[:-1]
            continue
        line = (pending + line).strip()
        if line:
            result.append((start, line))
        pending, start = '', None
    if pending.strip():
        result.append((start, pending.strip()))
    return result


def _tokens(line):
    """Whitespace-separated words of a line; a double-quoted part (``Features="a b"``) stays in its word."""
    return re.findall(r'(?:[^\s"]+|"[^"]*")+', line)


def parse_node_definitions(text):
    """The ``NodeName=`` lines of a slurm.conf text, per node.

    Returns ``{'nodes': {name: [(key, value), ...]}, 'lines': {name: line number}, 'problems': [str],
    'unusable': {name: why}, 'includes': [path]}``: each node's pairs in the order of its line
    (after the values of the ``NodeName=DEFAULT`` lines above it, which the line's own replace); a line with a
    hostlist (``gpu-[01-04]``, ``a,b``) gives each node the same pairs, ``NodeAddr``/``NodeHostname`` listing one
    value per node split among them. ``problems`` name the lines that cannot be read (a word that is not
    KEY=VALUE, a bad hostlist); ``unusable`` the nodes named by such a line or by two lines (Slurm refuses
    both); ``includes`` the files ``Include`` lines name (not read here).
    """
    if not isinstance(text, str):
        raise ValueError('slurm.conf text is %r, expected the text of a slurm.conf' % (text,))
    nodes, lines, unusable, problems, includes = {}, {}, {}, [], []
    defaults = []
    for number, line in _logical_lines(text):
        words = _tokens(line)
        first = words[0]
        if first.lower() == 'include' and len(words) > 1:
            includes.append(' '.join(words[1:]))
            continue
        if '=' not in first or first.split('=', 1)[0].lower() != 'nodename':
            continue
        value = first.split('=', 1)[1]
        bad = [word for word in words[1:] if '=' not in word or not word.split('=', 1)[0]]
        try:
            names = expand(value)
        except ValueError as exc:
            problems.append('line %d: NodeName=%s is not a hostlist (%s)' % (number, value, exc))
            continue
        if bad:
            why = 'line %d: "%s" is not KEY=VALUE' % (number, bad[0])
            problems.append(why)
            for name in names:
                unusable.setdefault(name, why)
            continue
        pairs = [tuple(word.split('=', 1)) for word in words[1:]]
        if value.lower() == 'default':
            defaults = _merge_pairs(defaults, pairs)
            continue
        per_node = {}
        for key, item in pairs:
            if key.lower() in _PER_NODE_KEYS and len(names) > 1:
                try:
                    values = expand(item)
                except ValueError:
                    values = []
                if len(values) == len(names):
                    per_node[key.lower()] = values
        for index, name in enumerate(names):
            if name in unusable:
                continue
            if name in nodes:
                problems.append('line %d: node %s is already defined on line %d' % (number, name, lines[name]))
                unusable[name] = 'named by two NodeName lines (lines %d and %d)' % (lines[name], number)
                del nodes[name]
                continue
            own = [(key, per_node[key.lower()][index] if key.lower() in per_node else item) for key, item in pairs]
            nodes[name] = _merge_pairs(defaults, own)
            lines[name] = number
    return {'nodes': nodes, 'lines': lines, 'problems': problems, 'unusable': unusable, 'includes': includes}


def _merge_pairs(base, pairs):
    """``base`` with each of ``pairs`` replacing the pair of the same key (any case) in place, or appended."""
    result = list(base)
    for key, value in pairs:
        positions = [i for i, (k, _v) in enumerate(result) if k.lower() == key.lower()]
        if positions:
            result[positions[0]] = (key, value)
        else:
            result.append((key, value))
    return result


def gres_conf_node_lines(text, name):
    """``(lines, comments)`` of node ``name`` in a gres.conf for every node (slurm_configless), as
    :func:`cluster_gres_lines` writes it: the lines whose ``NodeName=`` hostlist holds it, without that word,
    and the ``# <hostlist>: <comment>`` lines whose hostlist holds it."""
    if not isinstance(text, str):
        raise ValueError('gres.conf text is %r, expected the text of a gres.conf' % (text,))
    lines, comments = [], []
    for raw in text.splitlines():
        stripped = raw.strip()
        comment = re.match(r'^#\s*(\S+):\s(.*)$', stripped)
        if comment:
            if _names_hold(comment.group(1), name):
                comments.append(comment.group(2))
            continue
        line = stripped.split('#', 1)[0].strip()
        words = line.split()
        hosts = [w for w in words if w.split('=', 1)[0].lower() == 'nodename' and '=' in w]
        if len(hosts) == 1 and _names_hold(hosts[0].split('=', 1)[1], name):
            lines.append(' '.join(w for w in words if w is not hosts[0]))
    return lines, comments


def _names_hold(hostlist, name):
    try:
        return name in expand(hostlist)
    except ValueError:
        return False


def node_name_candidates(host, node_name='', fact_hostname=''):
    """The names a host may have in slurm.conf: ``slurm_node_name`` when set, else the host name its facts
    reported (what ``slurmd -C`` prints), the inventory name and its first label."""
    if node_name:
        return [str(node_name)]
    names = []
    for name in (fact_hostname, host, str(host).split('.', 1)[0]):
        if name and str(name) not in names:
            names.append(str(name))
    return names


def kept_node_record(name, pairs, gres_conf_lines=(), gres_conf_comments=()):
    """A node's slurm.conf entry (the ``_slurm_node`` of the slurm role) from the pairs of its NodeName line.

    ``conf_params`` holds the pairs as they are, and :func:`entry_params` renders them unchanged;
    ``hardware`` (the whole-number hardware keys), ``gres`` (for ``GresTypes``) and ``params`` (the other keys)
    say the same for the other readers of the entry.
    """
    hardware, params, gres = {'NodeName': name}, {}, ''
    for key, value in pairs:
        known = _HARDWARE_BY_LOWER.get(key.lower())
        if known and value.isdigit():
            hardware[known] = int(value)
        elif key.lower() == 'gres':
            gres = value
        else:
            params[key] = value
    return {'name': name, 'hardware': hardware, 'gres': gres, 'gres_conf_lines': list(gres_conf_lines),
            'gres_conf_comments': list(gres_conf_comments), 'params': params, 'memory_reserve_mb': 0,
            'nvlink_domain': None, 'conf_params': [[key, value] for key, value in pairs]}


def kept_nodes(conf_text, hosts, gres_conf_text=None):
    """The last known slurm.conf entry of each host in ``hosts``, from the controller's slurm.conf text.

    ``hosts``: ``{host: [names it may have in slurm.conf]}`` (:func:`node_name_candidates`), or a list of
    hosts (each its own name). ``gres_conf_text`` (slurm_configless: the controller's gres.conf, every
    node's lines) gives each node its gres.conf lines. Returns ``{'nodes': {host: record}, 'missing': {host: why}}``
    (:func:`kept_node_record`); ``why`` says what the text lacks, and names the files ``Include`` lines name.
    """
    if isinstance(hosts, (list, tuple)):
        hosts = dict((host, [host]) for host in hosts)
    if not isinstance(hosts, dict):
        raise ValueError('hosts is %r, expected a list of host names or a dict host -> [node names]' % (hosts,))
    parsed = parse_node_definitions(conf_text)
    nodes, missing = {}, {}
    for host, names in hosts.items():
        names = [names] if isinstance(names, str) else list(names or [])
        if not names or not all(isinstance(name, str) and name for name in names):
            raise ValueError('the node names of host %s are %r, expected a list of names' % (host, names))
        found = next((name for name in names if name in parsed['nodes']), None)
        if found is not None:
            lines, comments = gres_conf_node_lines(gres_conf_text, found) if gres_conf_text is not None else ([], [])
            nodes[host] = kept_node_record(found, parsed['nodes'][found], lines, comments)
            continue
        named = '/'.join(names)
        bad = next((name for name in names if name in parsed['unusable']), None)
        if bad is not None:
            why = 'its definition cannot be used: %s' % parsed['unusable'][bad]
        else:
            why = 'no NodeName line names %s' % named
            if parsed['includes']:
                why += ' (Include lines are not read: %s)' % ', '.join(parsed['includes'])
            if parsed['problems']:
                why += ' (lines not understood: %s)' % '; '.join(parsed['problems'])
        missing[host] = why
    return {'nodes': nodes, 'missing': missing}


def entry_params(node):
    """The ``[(key, value)]`` of a node's NodeName line: the pairs of a kept definition (``conf_params``) as
    they are, else :func:`node_params` of its facts."""
    kept = node.get('conf_params')
    if kept is not None:
        if not isinstance(kept, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in kept):
            raise ValueError('conf_params of node %s is %r, expected a list of [key, value]' % (node.get('name'), kept))
        return [(str(key), str(value)) for key, value in kept]
    return node_params(node['hardware'], node.get('gres') or None, node.get('params') or {}, int(node.get('memory_reserve_mb') or 0))


# --- the configuration slurmctld runs against the file on disk ---------------------------------
#
# ``scontrol show config`` prints what slurmctld runs, as Slurm's src/api/config_info.c formats it: one
# ``Key = value`` line per setting (``%-23s = %s``), values normalised (``300 sec``, ``CR_CORE_MEMORY``,
# ``slurm(64030)``, ``(null)`` for an empty string, ``x/none`` plugins dropped, implied flags added, keys
# under other names such as ``SlurmctldHost[0]``). Only keys whose printed form is known for certain are
# compared (from config_info.c and read_config.c of Slurm 22.05 to 26.05, and recorded outputs in
# tests/unit/fixtures/slurm/); every other key is skipped and named. A key never fails unless both values
# were read in a form the rule knows.

# How each comparable key is printed: int ("%u", optionally followed by a unit word), plugin ("type/name"),
# word (one token, any case), bool (yes/no), user ("name(uid)"), path (the file's string as it is), list
# (comma list, any order and case), tasks (TaskPlugin: sorted, "task/" prefix), select (SelectTypeParameters).
_RUNNING_KINDS_KEYS = (
    ('int', ('AccountingStoragePort', 'AcctGatherNodeFreq', 'BatchStartTimeout', 'CompleteWait', 'DefMemPerCPU', 'DefMemPerNode',
             'EioTimeout', 'EpilogMsgTime', 'EpilogTimeout', 'FairShareDampeningFactor', 'FirstJobId', 'GroupUpdateForce',
             'GroupUpdateTime', 'HealthCheckInterval', 'HealthCheckTimeout', 'InactiveLimit', 'JobCompPort', 'JobFileAppend',
             'JobRequeue', 'KillOnBadExit', 'KillWait', 'MaxArraySize', 'MaxBatchRequeue', 'MaxDBDMsgs', 'MaxJobCount', 'MaxJobId',
             'MaxMemPerCPU', 'MaxMemPerNode', 'MaxNodeCount', 'MaxStepCount', 'MaxTasksPerNode', 'MessageTimeout', 'MinJobAge',
             'OverTimeLimit', 'PriorityWeightAge', 'PriorityWeightAssoc', 'PriorityWeightFairshare', 'PriorityWeightJobSize',
             'PriorityWeightPartition', 'PriorityWeightQOS', 'PrologEpilogTimeout', 'PrologTimeout', 'PropagatePrioProcess',
             'ResumeRate', 'ResumeTimeout', 'ResvOverRun', 'ReturnToService', 'SchedulerTimeSlice', 'SlurmctldPort',
             'SlurmctldTimeout', 'SlurmdPort', 'SlurmdTimeout', 'SlurmSchedLogLevel', 'SuspendRate', 'SuspendTime',
             'SuspendTimeout', 'TCPTimeout', 'TreeWidth', 'UnkillableStepTimeout', 'VSizeFactor', 'WaitTime')),
    ('plugin', ('AccountingStorageType', 'AcctGatherFilesystemType', 'AcctGatherProfileType', 'AuthType', 'CredType',
                'JobAcctGatherType', 'JobCompType', 'MCSPlugin', 'PreemptType', 'PriorityType', 'PrioritySiteFactorPlugin',
                'ProctrackType', 'SchedulerType', 'SelectType', 'SwitchType', 'TopologyPlugin')),
    ('word', ('AccountingStorageBackupHost', 'AccountingStorageExternalHost', 'AccountingStorageHost', 'ClusterName',
              'JobCompHost', 'JobCompUser', 'MailDomain', 'MpiDefault', 'SlurmctldAddr', 'SlurmctldHost')),
    ('loglevel', ('SlurmctldDebug', 'SlurmctldSyslogDebug', 'SlurmdDebug', 'SlurmdSyslogDebug')),
    ('bool', ('AllowSpecResourcesUsage', 'DisableRootJobs', 'PriorityFavorSmall', 'TrackWCKey', 'UsePam')),
    ('user', ('SlurmUser', 'SlurmdUser')),
    ('path', ('Epilog', 'EpilogSlurmctld', 'HealthCheckProgram', 'JobCompLoc', 'MailProg', 'PlugStackConfig', 'PluginDir',
              'Prolog', 'PrologSlurmctld', 'RebootProgram', 'ResumeFailProgram', 'ResumeProgram', 'ResvEpilog', 'ResvProlog',
              'SlurmSchedLogFile', 'SlurmctldLogFile', 'SlurmctldPidFile', 'SlurmctldPrimaryOffProg', 'SlurmctldPrimaryOnProg',
              'SlurmdLogFile', 'SlurmdPidFile', 'SlurmdSpoolDir', 'SrunEpilog', 'SrunProlog', 'StateSaveLocation',
              'SuspendProgram', 'TaskEpilog', 'TaskProlog', 'UnkillableStepProgram')),
    ('list', ('AuthAltTypes', 'BurstBufferType', 'GresTypes', 'JobAcctGatherFrequency', 'JobAcctGatherParams',
              'JobSubmitPlugins', 'LaunchParameters', 'MpiParams', 'SchedulerParameters', 'SlurmctldParameters',
              'SlurmdParameters', 'X11Parameters')),
    ('tasks', ('TaskPlugin',)),
    ('select', ('SelectTypeParameters',)))
_RUNNING_KINDS = dict((key.lower(), kind) for kind, keys in _RUNNING_KINDS_KEYS for key in keys)

# Keys scontrol prints as KEY[0], KEY[1] ... (one entry per host or program) from Slurm 23.02 on (SlurmctldHost always).
_RUNNING_INDEXED = frozenset(('slurmctldhost', 'prolog', 'epilog', 'prologslurmctld', 'epilogslurmctld'))

# Why a known key is not compared (the rest: "no certain comparison").
_RUNNING_WHY_KEYS = (
    ('Slurm adds its default TRES', ('AccountingStorageTRES',)),
    ('scontrol prints the flags Slurm derives, implied ones added', (
        'AccountingStorageEnforce', 'AccountingStoreFlags', 'DebugFlags', 'EnforcePartLimits', 'HealthCheckNodeState',
        'PreemptMode', 'PriorityFlags', 'PrivateData', 'PrologFlags', 'ReconfigFlags', 'TaskPluginParam')),
    ('scontrol prints its own time format', ('PreemptExemptTime', 'PriorityCalcPeriod', 'PriorityDecayHalfLife',
                                             'PriorityMaxAge')),
    ('Slurm rewrites the value', ('AcctGatherEnergyType', 'AcctGatherInterconnectType', 'CommunicationParameters',
                                  'TopologyParam', 'CryptoType', 'RoutePlugin')),
    ('scontrol prints it under another name', ('ControlMachine', 'ControlAddr', 'BackupController', 'BackupAddr',
                                               'AcctGatherInfinibandType')),
    ('a secret, not printed', ('AccountingStoragePass', 'JobCompPass')))
_RUNNING_WHY = dict((key.lower(), why) for why, keys in _RUNNING_WHY_KEYS for key in keys)

# Lines that are not settings (scontrol show config has no NodeName/PartitionName lines).
_RUNNING_LINE_KEYS = frozenset(('nodename', 'partitionname', 'nodeset', 'downnodes', 'frontendname'))
# Units config_info.c prints after a number.
_RUNNING_UNITS = frozenset(('sec', 'usec', 'min', 'percent', 'nodes/min'))
# log_num2string() names; a number in the file (SlurmctldDebug=3) is printed as its name.
_RUNNING_LOG_LEVELS = frozenset(('quiet', 'fatal', 'error', 'info', 'verbose', 'debug', 'debug2', 'debug3', 'debug4', 'debug5'))
_RUNNING_TRUE = frozenset(('yes', 'up', 'true', '1'))
_RUNNING_FALSE = frozenset(('no', 'down', 'false', '0'))
# SelectTypeParameters: the base type flags of _parse_select_type_param() (read_config.c).
_RUNNING_SELECT_BASE = {'cr_cpu_memory': ('cr_cpu', 'cr_memory'), 'cr_core_memory': ('cr_core', 'cr_memory'),
                        'cr_socket_memory': ('cr_socket', 'cr_memory')}
_RUNNING_WORD = re.compile(r'^[A-Za-z0-9_.:@/+-]+$')
_RUNNING_SHOW_LINE = re.compile(r'^(\S+?)\s*=\s?(.*)$')
# The largest job id Slurm allows (MAX_JOB_ID, slurm.h); MaxJobId above it is reset.
_RUNNING_MAX_JOB_ID = 0x03ff0000


def parse_show_config(text):
    """``{key_lower: (Key, value)}`` of the settings block of ``scontrol show config``.

    The block starts after ``Configuration data as of ...`` (where printed) and ends at the first blank line
    after a setting: the sections after it (``Cgroup Support Configuration:`` ...) are other files' settings.
    A line that is not ``Key = value`` is ignored; of a key printed twice, the first counts.
    """
    settings = {}
    for raw in (text or '').splitlines():
        line = raw.rstrip()
        if line.startswith('Configuration data as of'):
            continue
        if not line.strip():
            if settings:
                break
            continue
        match = _RUNNING_SHOW_LINE.match(line)
        if not match or ' ' in match.group(1):
            continue
        settings.setdefault(match.group(1).lower(), (match.group(1), match.group(2).strip()))
    return settings


def _running_conf_settings(text):
    """``(keys, settings, odd)`` of a slurm.conf: ``keys`` the lower-case keys in the order the file sets them,
    ``settings`` ``{key_lower: (Key, value)}`` of those set once on a line of their own, ``odd``
    ``{key_lower: (Key, why)}`` of those that cannot be compared as written."""
    keys, settings, odd = [], {}, {}
    for raw in (text or '').splitlines():
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        key, sep, value = tokens[0].partition('=')
        lower = key.lower()
        if not sep or not key or lower in _RUNNING_LINE_KEYS:
            continue  # Include, a garbled line, a node or partition line: not a setting
        if lower in settings or lower in odd:
            # named as the file first spells it
            first = settings.pop(lower, None) or odd[lower]
            odd[lower] = first[0], 'set more than once in the file'
            continue
        keys.append(lower)
        if len(tokens) > 1 or line.endswith('\\'):
            odd[lower] = (key, 'its line holds more than KEY=value')
        elif not value or '"' in value or "'" in value:
            odd[lower] = (key, 'empty or quoted in the file')
        else:
            settings[lower] = (key, value)
    return keys, settings, odd


def _running_int(text):
    """The number of a ``%u`` value (``300`` or ``300 sec``), else None. A file value: plain decimal only (Slurm
    reads ``010`` as octal 8, ``0x10`` as hex, ``10k`` as 10240)."""
    parts = text.split()
    if len(parts) == 2 and parts[1] in _RUNNING_UNITS:
        parts = parts[:1]
    if len(parts) == 1 and re.match(r'^(0|[1-9][0-9]*)$', parts[0]):
        return int(parts[0])
    return None


def _running_normal(kind, file_value, shown):
    """``(file form, running form)`` to compare, or ``(None, why)`` when the key cannot be compared for certain."""
    if shown in ('(null)', '(null type)', ''):
        return None, 'scontrol prints %s (Slurm dropped or defaulted the value)' % (shown or 'nothing')
    low_file, low_shown = file_value.lower(), shown.lower()
    if kind == 'int':
        left, right = _running_int(file_value), _running_int(shown)
        if left is None or right is None:
            return None, 'not a plain number on both sides'
        return left, right
    if kind == 'plugin':
        name = low_file.rpartition('/')[2]
        if '/' not in low_file or '/' not in low_shown or 'none' in low_file or name == 'default':
            return None, 'a none or default plugin, which Slurm replaces'
        return low_file, low_shown
    if kind == 'word':
        if not _RUNNING_WORD.match(file_value) or not _RUNNING_WORD.match(shown):
            return None, 'not one word on both sides'
        return low_file, low_shown
    if kind == 'loglevel':
        if low_file not in _RUNNING_LOG_LEVELS:
            return None, 'not a level name in the file'
        return low_file, low_shown
    if kind == 'bool':
        left = True if low_file in _RUNNING_TRUE else False if low_file in _RUNNING_FALSE else None
        right = True if low_shown == 'yes' else False if low_shown == 'no' else None
        if left is None or right is None:
            return None, 'not yes or no on both sides'
        return left, right
    if kind == 'user':
        match = re.match(r'^(.+)\((\d+)\)$', shown)
        if not match or low_file.isdigit():
            return None, 'not a user name in the file and name(uid) in scontrol'
        return file_value, match.group(1)
    if kind == 'path':
        if ',' in file_value:
            return None, 'several values'
        return file_value, shown
    if kind in ('list', 'tasks'):
        left = set(item.strip().lower() for item in low_file.split(',') if item.strip())
        right = set(item.strip().lower() for item in low_shown.split(',') if item.strip())
        if kind == 'tasks':
            if 'none' in low_file:
                return None, 'a none plugin, which Slurm drops'
            left = set(item.replace('task/', '', 1) for item in left)
            right = set(item.replace('task/', '', 1) for item in right)
        return sorted(left), sorted(right)
    # select: the base type may be written as CR_Core_Memory or CR_Core,CR_Memory; scontrol prints the one name
    flags = []
    for value in (low_file, low_shown):
        items = set()
        for item in value.split(','):
            item = item.strip()
            items.update(_RUNNING_SELECT_BASE.get(item, (item,)))
        flags.append(sorted(items))
    return flags[0], flags[1]


def _running_adjusted(lower, number, shown):
    """Why Slurm itself runs another value than the file's ``number`` for an int key (read_config.c), or ''."""
    if lower == 'minjobage' and number < 2:
        return 'Slurm raises MinJobAge below 2 to 2'
    if lower == 'schedulertimeslice' and number < 5:
        return 'Slurm replaces SchedulerTimeSlice below 5 by its default'
    if lower in ('treewidth', 'healthchecktimeout') and number == 0:
        return 'Slurm replaces 0 by its default'
    if lower == 'maxjobid' and number > _RUNNING_MAX_JOB_ID:
        return 'Slurm lowers MaxJobId to %d' % _RUNNING_MAX_JOB_ID
    if lower == 'maxjobcount':
        first = _running_int(shown.get('firstjobid', ('', ''))[1])
        last = _running_int(shown.get('maxjobid', ('', ''))[1])
        if first is not None and last is not None and number > last - first + 1:
            return 'Slurm lowers MaxJobCount to MaxJobId - FirstJobId + 1'
    return ''


def compare_running_config(conf_text, show_text):
    """Compare the settings of a slurm.conf with what ``scontrol show config`` says slurmctld runs.

    Returns ``{'compared': [Key], 'differ': [{'key', 'file', 'running'}], 'skipped': [(Key, why)], 'version': str,
    'slurm_conf': str}`` (``version``: SLURM_VERSION, ``slurm_conf``: the SLURM_CONF slurmctld read; '' where not
    printed). Keys keep the file's spelling and order; NodeName/PartitionName lines are not settings.
    Raises ``ValueError`` when ``show_text`` has no ``Key = value`` line or ``conf_text`` no setting: nothing to
    compare is never a pass.
    """
    shown = parse_show_config(show_text)
    if not shown:
        raise ValueError('scontrol show config printed no "Key = value" line (%s): nothing was read of what slurmctld '
                         'runs' % ('no output' if not (show_text or '').strip() else 'output: %r' % ' '.join(show_text.split())[:200]))
    keys, settings, odd = _running_conf_settings(conf_text)
    if not keys:
        raise ValueError('slurm.conf has no KEY=value setting: nothing to compare with what slurmctld runs')
    compared, differ, skipped = [], [], []
    for lower in keys:
        if lower in odd:
            skipped.append((odd[lower][0], odd[lower][1]))
            continue
        name, file_value = settings[lower]
        kind = _RUNNING_KINDS.get(lower)
        if kind is None:
            skipped.append((name, _RUNNING_WHY.get(lower, 'no certain comparison')))
            continue
        entry = shown.get(lower)
        if entry is None and lower in _RUNNING_INDEXED:
            if '%s[1]' % lower in shown:
                skipped.append((name, 'scontrol prints several %s entries' % name))
                continue
            entry = shown.get('%s[0]' % lower)
        if entry is None:
            skipped.append((name, 'not in scontrol show config'))
            continue
        left, right = _running_normal(kind, file_value, entry[1])
        if left is None:
            skipped.append((name, right))
            continue
        if left != right and kind == 'int':
            adjusted = _running_adjusted(lower, left, shown)
            if adjusted:
                skipped.append((name, adjusted))
                continue
        compared.append(name)
        if left != right:
            differ.append({'key': name, 'file': file_value, 'running': entry[1]})
    return {'compared': compared, 'differ': differ, 'skipped': skipped,
            'version': shown.get('slurm_version', ('', ''))[1], 'slurm_conf': shown.get('slurm_conf', ('', ''))[1]}


def _running_restarts(keys, version):
    """``(restart slurmctld, restart every daemon)`` that ``keys`` changed on the Slurm release ``version`` need
    (the rules of :func:`change_actions`; an unknown release gets the 22.05 rules, which restart more)."""
    match = re.match(r'^(\d+)\.(\d+)', version or '')
    since_23_11 = bool(match) and (int(match.group(1)), int(match.group(2))) >= (23, 11)
    lowers = set(key.lower() for key in keys)
    every = bool(lowers & (RESTART_ALL_KEYS_SINCE_23_11 if since_23_11 else RESTART_ALL_KEYS))
    ctld = every or (not since_23_11 and bool(lowers & RESTART_SLURMCTLD_KEYS))
    return ctld, every


def _running_skip_text(skipped):
    groups = []
    for key, why in skipped:
        for group in groups:
            if group[0] == why:
                group[1].append(key)
                break
        else:
            groups.append((why, [key]))
    return '; '.join('%s (%s)' % (', '.join(keys), why) for why, keys in groups)


def running_config_record(host, conf_path, conf_text=None, show_text=None, conf_error='', show_error='', stage='slurm'):
    """The validation record of ``running_config``: does slurmctld on ``host`` run the settings of ``conf_path``?

    ``conf_text``: the file (None: not read, ``conf_error`` says why); ``show_text``: ``scontrol show config``
    on ``host`` (None or ``show_error``: it failed). The record names the daemon and host as its node
    (``slurmctld@ctl``, never a Slurm node name, so the validation's drain never takes it for a node) and, on a
    difference, each key with both values and the command that applies the file. Anything unread fails:
    nothing compared is not a pass.
    """
    node = 'slurmctld@%s' % host
    record = {'stage': stage, 'node': node, 'check': 'running_config'}
    where = 'slurmctld on %s' % host
    if show_error or show_text is None:
        return dict(record, status='fail', reason='%s: scontrol show config failed, so nothing is known of the configuration slurmctld '
                    'runs: %s' % (where, ' '.join(str(show_error or 'not run').split())[:300]))
    if conf_error or conf_text is None:
        return dict(record, status='fail', reason='%s: %s could not be read to compare with what slurmctld runs: %s'
                    % (where, conf_path, ' '.join(str(conf_error or 'not read').split())[:300]))
    try:
        result = compare_running_config(conf_text, show_text)
    except ValueError as exc:
        return dict(record, status='fail', reason='%s: %s' % (where, exc))
    skipped = result['skipped']
    count = 'compared %d key%s' % (len(result['compared']), '' if len(result['compared']) == 1 else 's')
    not_compared = '%d not comparable%s' % (len(skipped), (': ' + _running_skip_text(skipped)) if skipped else '')
    other = ''
    if result['slurm_conf'] and result['slurm_conf'] != conf_path:
        other = ' (slurmctld reads %s)' % result['slurm_conf']
    if result['differ']:
        keys = [item['key'] for item in result['differ']]
        ctld, every = _running_restarts(keys, result['version'])
        release = 'Slurm %s' % result['version'] if result['version'] else 'an unknown Slurm release'
        need = 'needs' if len(keys) == 1 else 'need'
        if every:
            fix = ('sudo systemctl restart slurmctld on %s, then slurmd on every node (%s %s every daemon restarted on %s)'
                   % (host, ', '.join(keys), need, release))
        elif ctld:
            fix = 'sudo systemctl restart slurmctld on %s (%s %s a restart on %s, a reconfigure is not enough)' % (
                host, ', '.join(keys), need, release)
        else:
            fix = 'sudo scontrol reconfigure on %s' % host
        changes = '; '.join('%s is %s in the file, %s in slurmctld' % (item['key'], item['file'], item['running'])
                            for item in result['differ'])
        return dict(record, status='fail', reason='%s does not run %s%s: %s. Apply the file: %s; or run ansible-playbook '
                    'gpucluster.bringup.site (the collection\'s way). %s, %d differ%s; %s' % (
                        where, conf_path, other, changes, fix, count.capitalize(), len(keys), 's' if len(keys) == 1 else '', not_compared))
    if not result['compared']:
        return dict(record, status='skip', reason='%s: no key of %s can be compared with scontrol show config: %s' % (
            where, conf_path, not_compared))
    return dict(record, status='pass', reason='%s runs %s%s: %s, all equal; %s' % (where, conf_path, other, count, not_compared))


def running_config_from_results(show, conf_file, host, conf_path):
    """:func:`running_config_record` from the registered results of ``scontrol show config`` (``show``) and of ``slurp``
    of ``conf_path`` (``conf_file``) on ``host``: a command that failed, did not run, or a file not read gives a failed
    record naming why, never a pass.
    """
    show_text = show_error = conf_text = None
    conf_error = ''
    if not isinstance(show, dict) or show.get('skipped') or 'rc' not in show:
        show_error = 'scontrol did not run%s' % (': %s' % show.get('msg') if isinstance(show, dict) and show.get('msg') else '')
    elif show.get('rc') != 0:
        said = ' '.join(str(show.get('stderr') or show.get('stdout') or show.get('msg') or '').split())
        show_error = 'scontrol show config exited %s%s' % (show.get('rc'), ': %s' % said if said else '')
    else:
        show_text = str(show.get('stdout') or '')
    if isinstance(conf_file, dict) and not conf_file.get('failed') and isinstance(conf_file.get('content'), str):
        try:
            conf_text = base64.b64decode(conf_file['content']).decode('utf-8', 'replace')
        except (TypeError, ValueError) as exc:
            conf_error = 'its content is not base64 (%s)' % exc
    else:
        conf_error = (conf_file.get('msg') if isinstance(conf_file, dict) else '') or 'slurp did not read it'
    return running_config_record(str(host), str(conf_path), conf_text, show_text, conf_error, show_error)
