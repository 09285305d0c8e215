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
* :func:`change_actions` compares the old and new slurm.conf and says which
  daemons must restart and whether ``scontrol reconfigure`` is enough, from
  the restart notes of the slurm.conf(5) man page of the installed release
  (22.05: many keys need restarts; 23.11 on: a reconfigure restarts the
  daemons itself, only TCP listening settings and AuthType need a restart).

Standard library only; bad input raises ``ValueError`` naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
