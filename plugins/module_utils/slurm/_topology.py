# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm's topology.conf from the InfiniBand fabric (tree) and the NVLink domains (block).

* :func:`parse_ibnetdiscover` reads ibnetdiscover's default output (the
  "topology file" of ibnetdiscover(8), also ``-g``) into switches, hosts (CAs)
  and routers with their port links, and refuses a dump that is cut short or
  does not hold together (every link is printed from both ends; each end must
  name the other).
* :func:`tree_topology` turns a parsed fabric into the lines of the
  topology/tree plugin (``SwitchName=... Nodes=...`` / ``Switches=...``) for
  the given Slurm nodes, with warnings for what it leaves out.
* :func:`node_nvlink_domain` reduces one node's per-GPU fabric answers
  (``_nvml.Client.fabric()``) to that node's NVLink domain.
* :func:`block_topology` turns each node's GPU fabric domain (cluster UUID and
  clique id from ``nvmlDeviceGetGpuFabricInfo`` on NVL72-class systems) into
  the lines of the topology/block plugin (``BlockName=... Nodes=...``,
  ``BlockSizes=...``).

Pure functions, standard library only; bad input raises ``ValueError`` naming
the bad thing and what would be valid.  Nothing is guessed silently: what is
left out is said in ``warnings``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import Counter

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress, expand

# --- ibnetdiscover's output -------------------------------------------------------------------------------------------

# out_switch_detail()/out_ca_detail(): 'Switch\t65 "S-<guid>"\t\t# "<desc>" enhanced port 0 lid 73 lmc 0',
# 'Ca\t1 "H-<guid>"\t\t# "<desc>"' (' (scp)' on Xsigo HCAs), 'Rt\t<n> "R-<guid>"\t\t# "<desc>"'.
_NODE = re.compile(r'^(?P<kind>Switch|Ca|Rt)\s+(?P<nports>\d+)\s+"(?P<type>[SHR?])-(?P<guid>[0-9a-fA-F]+)"'
                   r'\s*#\s*"(?P<desc>.*)"(?P<rest>[^"]*)$')
_SWITCH_REST = re.compile(r'^\s+(?:base|enhanced)\s+port\s+0\s+lid\s+(?P<lid>\d+)\s+lmc\s+\d+\s*$')
_CA_REST = re.compile(r'^(?:\s+\(scp\))?\s*$')
# out_switch_port()/out_ca_port(): '[1]\t"H-<guid>"[1](<portguid>) \t\t# "<desc>" lid 647 4xNDR' on a switch,
# '[1](<portguid>) \t"S-<guid>"[17]\t\t# lid 657 lmc 0 "<desc>" lid 73 4xNDR' on a CA; '[ext N]' with -g.
_PORT = re.compile(r'^\[(?P<port>\d+)\](?:\[ext \d+\])?(?:\([0-9a-fA-F]+\))?\s*'
                   r'"(?P<type>[SHR?])-(?P<guid>[0-9a-fA-F]+)"\[(?P<rport>\d+)\](?:\[ext \d+\])?'
                   r'(?:\s*\([0-9a-fA-F]+\))?\s*#\s*(?P<comment>.*)$')
_PORT_COMMENT = re.compile(r'^(?:lid\s+\d+\s+lmc\s+\d+\s+)?".*"\s+lid\s+\d+(?:\s.*)?$')
# out_ids()/out_switch()/out_ca(); with -g a chassis comment may follow.
_IDS = re.compile(r'^(?P<key>vendid|devid|sysimgguid|switchguid|caguid|rtguid)=0x[0-9a-fA-F]+'
                  r'(?:\([0-9a-fA-F]+\))?(?:\s*#.*)?$')
# -g (grouping) lines: 'Chassis 3 (guid 0x...)', 'Non-Chassis Nodes', 'Hostname: ...'.
_GROUPING = re.compile(r'^(?:Chassis\s+\d+(?:\s.*)?|Non-Chassis Nodes|Hostname:.*)$')

_KIND = {'Switch': ('S', 'switches'), 'Ca': ('H', 'hosts'), 'Rt': ('R', 'routers')}
_TABLE = {'S': 'switches', 'H': 'hosts', 'R': 'routers'}
_PREFIX = {'switches': 'S', 'hosts': 'H', 'routers': 'R'}

# The adapter's own NodeDescription when the host never set one ("MT4129 ConnectX7   Mellanox Technologies").
_DEFAULT_CA_DESC = re.compile(r'^MT\d+\b')
# The SHARP aggregation node inside a Quantum switch is a CA, not a host.
_AGGREGATION_NODE = re.compile(r'\bAggregation Node\s*$')
# Managed switches describe themselves "MF0;<system name>:<model>/<ASIC>".
_MANAGED_SWITCH = re.compile(r'^MF0;(?P<name>[^:]+):(?P<rest>.*)$')
_UNSAFE = re.compile(r'[^A-Za-z0-9._-]+')
_SWITCH_NAME_MAX = 64  # Slurm: "SwitchName ... cannot be longer than 64 characters"
# What a Slurm node name cannot hold here: blanks, hostlist syntax, topology.conf's "#" (comment) and "=", control
# characters; nor may it start with "-" (it would read as an option on a command line).
_NAME_BAD = re.compile(r'[\s,\[\]#=\x00-\x1f\x7f]|^-')
NODE_NAME_RULE = 'a Slurm node name (not empty, no blanks, commas, brackets, "#" or "=", not starting with "-")'
# What ibnetdiscover (libibmad, libibumad, libibnetdisc) prints on its standard error, which "2>&1" puts before the
# dump: "ibwarn: [3592] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,13,17)",
# "src/query_smp.c:227; umad (DR path slid 0; dlid 0; 0,1,13,17 Attr 0x11:0) bad status 110; Connection timed out".
_STDERR = re.compile(r'^(?:(?:ibwarn|iberror|ibdebug|ibnetdiscover|libibumad|libibmad|libibnetdisc|umad_\w+|mad_\w+)\s*:'
                     r'|[\w./-]+\.c:\d+;\s)')
_STDERR_SHOWN = 3
# ibnetdiscover --node-name-map (rdma-core util/node_name_map.c): '<GUID> "<name>"', "#" comments, blank lines.
_MAP_GUID = re.compile(r'^0[xX](?P<guid>[0-9a-fA-F]{1,16})(?=[\s#]|$)\s*(?P<rest>.*)$')


def _node_id(table, guid):
    return '%s-%s' % (_PREFIX[table], guid)


def parse_ibnetdiscover(text):
    """Parse ibnetdiscover's default output.

    Returns ``{'switches': {guid: {'guid', 'desc', 'lid', 'ports'}}, 'hosts': {guid: {'guid', 'desc', 'ports'}},
    'routers': {guid: {'guid', 'desc', 'ports'}}, 'warnings': [...]}``; GUIDs are 16 lower-case hex digits as ibnetdiscover prints
    them in ``"S-<guid>"``, ``ports`` maps a port number to ``(peer_guid, peer_port)``.  Example::

        {'switches': {'2c5eab0300c262c0': {'guid': '2c5eab0300c262c0', 'desc': 'MF0;A09-P1-IBLEAF-03-04:MQM9701/U1',
                                           'lid': 155, 'ports': {1: ('e09d7303007a4bd4', 1), ...}}},
         'hosts': {'e09d7303007a4bd4': {'guid': 'e09d7303007a4bd4', 'desc': 'a08-p1-dgx-04-c01 mlx5_4',
                                        'ports': {1: ('2c5eab0300c262c0', 1)}}, ...},
         'routers': {}, 'warnings': []}

    Lines of ibnetdiscover's standard error BEFORE the dump (``ibwarn: ...``, ``src/query_smp.c:227; umad ...``: the
    user saved it with ``2>&1``) are read past and said in ``warnings`` (discovery had trouble with some node or
    link, which the dump may lack); the rest of the dump is read as usual.  Comment lines, the ``vendid=``/
    ``devid=``/``sysimgguid=``/``switchguid=``/``caguid=``/``rtguid=`` lines and the grouping (``-g``) lines are
    read past.  ``ValueError`` for an empty text, a line that is not part of this
    output (``ibwarn:`` lines after the dump began included), a block cut short, a port listed twice or beyond
    the node's port count, a GUID with two blocks, and a dump that does not hold together: every link is printed
    from both ends, so a port naming a GUID that never got its block, or whose block does not name it back, means
    the dump is truncated or inconsistent.
    """
    if text is None or not str(text).strip():
        raise ValueError('the ibnetdiscover output is empty; expected the text ibnetdiscover prints '
                         '(blocks starting "Switch <ports> "S-<guid>"" and "Ca <ports> "H-<guid>"")')
    fabric = {'switches': {}, 'hosts': {}, 'routers': {}, 'warnings': []}
    seen = {}
    stderr = []             # (line number, line) of ibnetdiscover's standard error before the dump
    started = False
    current = None          # (table, node, port count, line) of the block being read
    pending_ids = None      # line number of a vendid= etc. run that has not reached its Switch/Ca/Rt line yet
    pending_keys = set()
    lines = str(text).splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if not started and _STDERR.match(line):
            stderr.append((number, line))
            continue
        started = True
        if line.startswith('#') or _GROUPING.match(line):
            continue
        ids = _IDS.match(line)
        if ids:
            if pending_ids is None:
                pending_ids, pending_keys = number, set()
            elif ids.group('key') in pending_keys:
                raise ValueError('line %d: "%s" starts another block while the block of line %d never reached its '
                                 '"Switch"/"Ca"/"Rt" line: that block is cut short' % (number, line, pending_ids))
            pending_keys.add(ids.group('key'))
            current = None
            continue
        node = _NODE.match(line)
        if node:
            current = _read_node(node, number, line, fabric, seen)
            pending_ids = None
            continue
        port = _PORT.match(line)
        if port:
            if pending_ids is not None:
                raise ValueError('line %d: a port line follows the node ids of line %d without their '
                                 '"Switch"/"Ca"/"Rt" line: the block is cut short' % (number, pending_ids))
            if current is None:
                raise ValueError('line %d: port line "%s" belongs to no "Switch"/"Ca"/"Rt" block' % (number, line))
            _read_port(port, number, line, current)
            continue
        if _STDERR.match(line):
            raise ValueError('line %d: "%s" is ibnetdiscover\'s standard error inside the dump, which may be cut there; '
                             'save its standard output alone (ibnetdiscover > fabric.txt) and run it again if it warns'
                             % (number, _short(line)))
        raise ValueError('line %d: "%s" is not part of ibnetdiscover\'s topology output (expected "Switch"/"Ca"/"Rt" '
                         'lines, port lines like "[1]  "H-<guid>"[1] ...", "vendid=" etc. or comments); '
                         'an "ibwarn" line means the discovery had trouble: run it again' % (number, _short(line)))
    _finish_fabric(fabric, seen, stderr, started, pending_ids)
    return fabric


def _finish_fabric(fabric, seen, stderr, started, pending_ids):
    """The end of parse_ibnetdiscover: raise ValueError for a dump cut short, empty or not holding together; add the warning of its error lines."""
    if pending_ids is not None:
        raise ValueError('line %d: the output ends inside a block (node ids without their "Switch"/"Ca"/"Rt" line): '
                         'the dump is cut short' % pending_ids)
    if not seen:
        if stderr and not started:
            raise ValueError('the ibnetdiscover output holds only its error lines (%s), no dump: discovery failed; '
                             'run it again on a node whose port is up' % _stderr_text(stderr))
        raise ValueError('the ibnetdiscover output has no "Switch", "Ca" or "Rt" block')
    _check_links(fabric)
    if stderr:
        fabric['warnings'].append('%s before the dump %s ibnetdiscover\'s standard error (%s): discovery had trouble, '
                                  'so a node or link may be missing from the dump; the dump was read as it is'
                                  % ('line %d' % stderr[0][0] if len(stderr) == 1 else 'lines %d-%d' % (stderr[0][0], stderr[-1][0]),
                                     'is' if len(stderr) == 1 else 'are', _stderr_text(stderr)))


def _stderr_text(stderr):
    shown = '; '.join('"%s"' % _short(line) for _number, line in stderr[:_STDERR_SHOWN])
    return shown + (' and %d more' % (len(stderr) - _STDERR_SHOWN) if len(stderr) > _STDERR_SHOWN else '')


def parse_node_name_map(text, source='node_name_map'):
    """Parse ibnetdiscover's node name map (``--node-name-map``, ``/etc/rdma/ib-node-name-map``): ``{guid: name}``.

    The format is rdma-core's (``util/node_name_map.c``): per line a node GUID in hex (``0x`` and up to 16 digits)
    and the name that replaces the node's description, in double quotes (or the rest of the line up to a ``#``);
    ``#`` comments and blank lines.  Example::

        # leaves
        0x2c5eab0300c26040 "leaf-05"
        0xe09d730300233b10 "gpu-05 mlx5_0"    # rail 0

    gives ``{'2c5eab0300c26040': 'leaf-05', 'e09d730300233b10': 'gpu-05 mlx5_0'}`` (GUIDs as 16 lower-case hex
    digits, as :func:`parse_ibnetdiscover` keys nodes).  ``source`` names the map in messages (the option, or the
    option and the file).  ``ValueError`` naming the line for a line without a hex GUID, a name without its closing
    quote or followed by other text than a comment, an empty name, a GUID given two different names, and a map
    with no entry at all.
    """
    if not isinstance(text, str):
        raise ValueError('%s is %r, expected the text of a node name map (lines <GUID> "<name>")' % (source, text))
    names = {}
    lines = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        match = _MAP_GUID.match(line)
        if not match:
            raise ValueError('%s line %d: "%s" does not start with a node GUID in hex; expected <GUID> "<name>" '
                             '(e.g. 0x2c5eab0300c26040 "leaf-05"), a # comment or a blank line' % (source, number, _short(line)))
        guid = match.group('guid').lower().rjust(16, '0')
        rest = match.group('rest')
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise ValueError('%s line %d: the name of GUID 0x%s has no closing quote: "%s"' % (source, number, guid, _short(line)))
            name, after = rest[1:end], rest[end + 1:].strip()
            if after and not after.startswith('#'):
                raise ValueError('%s line %d: "%s" follows the quoted name of GUID 0x%s; expected only a # comment there'
                                 % (source, number, _short(after), guid))
        else:
            name = rest.split('#', 1)[0]
        name = name.strip()
        if not name:
            raise ValueError('%s line %d: GUID 0x%s has no name; expected <GUID> "<name>"' % (source, number, guid))
        if guid in names and names[guid] != name:
            raise ValueError('%s line %d: GUID 0x%s is named "%s", but line %d named it "%s"; a GUID has one name'
                             % (source, number, guid, name, lines[guid], names[guid]))
        names[guid] = name
        lines.setdefault(guid, number)
    if not names:
        raise ValueError('%s has no entry; expected lines <GUID> "<name>" (e.g. 0x2c5eab0300c26040 "leaf-05")' % source)
    return names


def _renamed(parsed, node_name_map):
    """``parsed`` with the descriptions a node name map gives, as ``ibnetdiscover --node-name-map`` prints them."""
    if not isinstance(node_name_map, dict):
        raise ValueError('node_name_map must be what parse_node_name_map returns ({guid: name}), got %r' % (node_name_map,))
    renamed = dict(parsed)
    for table in ('switches', 'hosts', 'routers'):
        renamed[table] = dict((guid, dict(node, desc=node_name_map[guid]) if guid in node_name_map else node)
                              for guid, node in (parsed.get(table) or {}).items())
    return renamed


def _short(line, width=100):
    return line if len(line) <= width else line[:width] + '...'


def _read_node(match, number, line, fabric, seen):
    kind = match.group('kind')
    letter, table = _KIND[kind]
    if match.group('type') != letter:
        raise ValueError('line %d: a "%s" line names "%s-%s"; ibnetdiscover writes %s nodes as "%s-<guid>"'
                         % (number, kind, match.group('type'), match.group('guid'), kind, letter))
    guid = match.group('guid').lower()
    rest = match.group('rest')
    node = {'guid': guid, 'desc': match.group('desc'), 'ports': {}}
    if kind == 'Switch':
        detail = _SWITCH_REST.match(rest)
        if not detail:
            raise ValueError('line %d: switch line "%s" lacks "base|enhanced port 0 lid <lid> lmc <lmc>" '
                             'after its description: the line is cut short or not ibnetdiscover\'s' % (number, _short(line)))
        node['lid'] = int(detail.group('lid'))
    elif not _CA_REST.match(rest):
        raise ValueError('line %d: unexpected text "%s" after the description of %s-%s' % (number, rest.strip(), letter, guid))
    if guid in seen:
        raise ValueError('line %d: GUID %s has a second block (first at line %d); a dump lists each node once'
                         % (number, guid, seen[guid]))
    seen[guid] = number
    fabric[table][guid] = node
    return table, node, int(match.group('nports')), number


def _read_port(match, number, line, current):
    table, node, nports, header = current
    port = int(match.group('port'))
    if not _PORT_COMMENT.match(match.group('comment')):
        raise ValueError('line %d: port line "%s" is cut short (expected \'# ... "<description>" lid <lid> ...\' '
                         'after the peer)' % (number, _short(line)))
    if port < 1 or port > nports:
        raise ValueError('line %d: port %d of %s, which has %d ports (line %d)'
                         % (number, port, _node_id(table, node['guid']), nports, header))
    if port in node['ports']:
        raise ValueError('line %d: port %d of %s is listed twice' % (number, port, _node_id(table, node['guid'])))
    if match.group('type') == '?':
        raise ValueError('line %d: port %d of %s leads to a node of unknown type "?-%s"'
                         % (number, port, _node_id(table, node['guid']), match.group('guid')))
    node['ports'][port] = (match.group('guid').lower(), int(match.group('rport')))
    node.setdefault('_types', {})[port] = _TABLE[match.group('type')]


def _check_links(fabric):
    for table in ('switches', 'hosts', 'routers'):
        for guid in sorted(fabric[table]):
            node = fabric[table][guid]
            types = node.get('_types')
            for port in sorted(node['ports']):
                peer_guid, peer_port = node['ports'][port]
                peer_table = types[port]
                here = '%s port %d' % (_node_id(table, guid), port)
                there = '%s port %d' % (_node_id(peer_table, peer_guid), peer_port)
                peer = fabric[peer_table].get(peer_guid)
                if peer is None:
                    raise ValueError('%s links to %s, but the dump has no block for %s: the output is truncated '
                                     'or incomplete (run ibnetdiscover again and keep all of it)'
                                     % (here, there, _node_id(peer_table, peer_guid)))
                back = peer['ports'].get(peer_port)
                if back != (guid, port):
                    if back is None:
                        raise ValueError('%s links to %s, but the block of %s has no port %d: the block is cut '
                                         'short or the dump is inconsistent' % (here, there,
                                                                                _node_id(peer_table, peer_guid), peer_port))
                    # the type the peer's port line wrote for the node it names (which may have no block)
                    raise ValueError('%s links to %s, but %s names %s port %d: the dump is inconsistent'
                                     % (here, there, there, _node_id(peer['_types'][peer_port], back[0]), back[1]))
    for table in ('switches', 'hosts', 'routers'):
        for node in fabric[table].values():
            node.pop('_types', None)


# --- topology/tree ------------------------------------------------------------------------------------------------------

def _natural_key(name):
    # (the name apart from the parts: 'leaf' and 'leaf2' compare 'leaf' with 2 otherwise, a TypeError)
    parts = re.split(r'(\d+)', name)
    return [int(part) if index % 2 else part for index, part in enumerate(parts)], name


def _sorted(names):
    return sorted(names, key=_natural_key)


def _hostlist(names):
    return compress(_sorted(names))


def _node_name_list(node_names, what='nodes'):
    hostlist = isinstance(node_names, str)
    if hostlist:
        names = expand(node_names)
    elif isinstance(node_names, (list, tuple, set, frozenset)):
        names = list(node_names)
    else:
        raise ValueError('%s is %r, expected a list of Slurm node names or a hostlist expression' % (what, node_names))
    if not names:
        raise ValueError('%s is empty, expected at least one Slurm node name (a list or a hostlist like "gpu[01-04]")' % what)
    for index, name in enumerate(names):
        if not is_node_name(name):
            where = '%s %r holds %r' % (what, node_names, name) if hostlist else '%s[%d] is %r' % (what, index, name)
            raise ValueError('%s, expected %s' % (where, NODE_NAME_RULE))
    return names


def is_node_name(name):
    """Whether ``name`` is a Slurm node name (``NODE_NAME_RULE``)."""
    return isinstance(name, str) and bool(name) and not _NAME_BAD.search(name)


def _safe(text):
    return _UNSAFE.sub('_', text).strip('_')


def switch_names(parsed):
    """Slurm-safe, unique names for every switch: ``{guid: name}``.

    A managed switch (``"MF0;<system name>:<model>/<ASIC>"``) is named by its system name; any other by its
    description; letters, digits, ``-``, ``_`` and ``.`` are kept and every other run of characters becomes
    ``_``.  Names two switches would share (several ASICs of one director switch: then ``<name>_<model>_<ASIC>``
    is tried; switches still showing their product description, like "Quantum Mellanox Technologies"), empty
    names and names over Slurm's 64 characters fall back to ibnetdiscover's ``S-<guid>``.
    """
    switches = parsed['switches']
    first = {}
    second = {}
    for guid, switch in switches.items():
        managed = _MANAGED_SWITCH.match(switch['desc'])
        if managed:
            first[guid] = _safe(managed.group('name'))
            second[guid] = _safe('%s_%s' % (managed.group('name'), managed.group('rest')))
        else:
            first[guid] = _safe(switch['desc'])
            second[guid] = None
    counts = Counter(first.values())
    names = {}
    for guid in switches:
        name = first[guid]
        if counts[name] > 1:
            name = second[guid]
        names[guid] = name
    counts = Counter(names.values())
    for guid in switches:
        name = names[guid]
        if not name or counts[name] > 1 or len(name) > _SWITCH_NAME_MAX:
            names[guid] = 'S-%s' % guid
    counts = Counter(names.values())
    for guid in switches:  # a description that happens to read like another switch's "S-<guid>"
        if counts[names[guid]] > 1:
            names[guid] = 'S-%s' % guid
    return names


def _compile_name_map(name_map):
    if name_map is None:
        return None, None
    if isinstance(name_map, dict):
        table = {}
        for key, value in name_map.items():
            if not isinstance(key, str) or not key.strip():
                raise ValueError('name_map: key %r is not a node description, host name or CA GUID' % (key,))
            if not is_node_name(value):
                raise ValueError('name_map[%r] is %r, expected %s' % (key, value, NODE_NAME_RULE))
            table[key.strip()] = value
            guid = re.match(r'^(?:H-|0x)?([0-9a-fA-F]{1,16})$', key.strip())
            if guid:
                table['guid:' + guid.group(1).lower().rjust(16, '0')] = value
        return table, None
    if isinstance(name_map, str):
        try:
            pattern = re.compile(name_map)
        except re.error as err:
            raise ValueError('name_map: %r is not a valid regular expression (%s)' % (name_map, err))
    elif hasattr(name_map, 'search') and hasattr(name_map, 'groups'):
        pattern = name_map
    else:
        raise ValueError('name_map must be a dict (description, host name or CA GUID -> Slurm node name) or a regular '
                         'expression with a group for the node name, got %r' % (name_map,))
    if pattern.groups < 1:
        raise ValueError('name_map: the regular expression %r has no group; put the Slurm node name in a group, '
                         'e.g. r"^(\\S+) "' % pattern.pattern)
    return None, pattern


def _device_of(desc):
    parts = desc.split(None, 1)
    return parts[1].strip() if len(parts) > 1 else ''


def _rail_index(device):
    digits = re.search(r'(\d+)\s*$', device)
    return int(digits.group(1)) if digits else None


def _name_ca(ca, table, pattern):
    """(slurm name or None, why-not warning or None) for one CA."""
    desc = ca['desc']
    guid = ca['guid']
    if table is not None:
        for key in ('guid:' + guid, desc.strip()):
            if key in table:
                return table[key], None
    if pattern is not None:
        match = pattern.search(desc)
        if not match:
            return None, 'does not match the name_map pattern %r' % pattern.pattern
        name = match.group('name') if 'name' in pattern.groupindex else match.group(1)
        if not is_node_name(name):
            return None, 'gives %r through the name_map pattern, which is not a node name' % (name,)
        return name, None
    if not desc.strip() or _DEFAULT_CA_DESC.match(desc):
        return None, ('shows the adapter\'s default node description, so its host is unknown (set it on the host, '
                      'e.g. with rdma-ndd, or map the CA GUID in name_map)')
    host = desc.split()[0]
    if table is not None and host in table:
        return table[host], None
    return host, None


def _where(parsed, names, ca):
    spots = []
    for port in sorted(ca['ports']):
        peer_guid, peer_port = ca['ports'][port]
        if peer_guid in parsed['switches']:
            spots.append('%s port %d' % (names[peer_guid], peer_port))
    return ' on ' + ', '.join(spots) if spots else ''


def _tree_arguments(parsed, node_names, name_map, rail_hca, node_name_map):
    """tree_topology's arguments checked: (parsed renamed by node_name_map, wanted node set, name_map table, pattern)."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get('switches'), dict) \
            or not isinstance(parsed.get('hosts'), dict):
        raise ValueError('parsed must be what parse_ibnetdiscover returns (a dict with "switches" and "hosts")')
    if node_name_map is not None:
        parsed = _renamed(parsed, node_name_map)
    if not parsed['switches']:
        raise ValueError('the fabric has no switch at all (%d CA(s), e.g. only the local HCA with its link down): '
                         'topology.conf needs at least one switch; run ibnetdiscover on a node whose link is up'
                         % len(parsed['hosts']))
    wanted = set(_node_name_list(node_names))
    if rail_hca is not None and (not isinstance(rail_hca, str) or not rail_hca.strip()):
        raise ValueError('rail_hca must be the device name of the rail-0 HCA as the node descriptions show it '
                         '("mlx5_0", "HCA-1"), got %r' % (rail_hca,))
    table, pattern = _compile_name_map(name_map)
    return parsed, wanted, table, pattern


def _fabric_hosts(parsed, names, table, pattern, warnings):
    """{slurm-side host name: [ca]} of the fabric's host adapters (aggregation nodes left out); appends to warnings."""
    hosts = {}
    for guid in sorted(parsed['hosts']):
        ca = parsed['hosts'][guid]
        if _AGGREGATION_NODE.search(ca['desc']):
            continue
        name, why = _name_ca(ca, table, pattern)
        if name is None:
            warnings.append('CA H-%s "%s"%s %s; left out' % (guid, ca['desc'], _where(parsed, names, ca), why))
            continue
        hosts.setdefault(name, []).append(ca)
    return hosts


def _place_hosts(parsed, names, hosts, wanted, rail_hca, warnings):
    """({slurm node: leaf guid}, {slurm node: device of the CA it was placed by, hosts with several CAs})."""
    switches = parsed['switches']
    placed = {}
    chosen = {}
    for name in _sorted(hosts):
        cas = hosts[name]
        if name not in wanted:
            more = ' and %d more' % (len(cas) - 1) if len(cas) > 1 else ''
            warnings.append('fabric host %s is not a Slurm node (CA H-%s "%s"%s%s); left out'
                            % (name, cas[0]['guid'], cas[0]['desc'], _where(parsed, names, cas[0]), more))
            continue
        ca = _rail_zero(name, cas, rail_hca, warnings, lambda c: _where(parsed, names, c))
        if ca is None:
            continue
        leaves = sorted(set(peer for peer, _port in ca['ports'].values() if peer in switches))
        if not leaves:
            warnings.append('host %s: its CA H-%s "%s" is linked to no switch; left out' % (name, ca['guid'], ca['desc']))
            continue
        if len(leaves) > 1:
            raise ValueError('host %s would sit in two leaves: its CA H-%s "%s" is linked to %s; a Slurm node belongs '
                             'to one leaf switch (cable one port of that HCA, or pick another HCA with rail_hca)'
                             % (name, ca['guid'], ca['desc'], ' and '.join(names[g] for g in leaves)))
        placed[name] = leaves[0]
        if len(cas) > 1:
            chosen[name] = _device_of(ca['desc'])
    return placed, chosen


def _warn_other_rail(chosen, warnings):
    """Warn about each host placed by another HCA than most hosts of its naming scheme.

    ``chosen`` maps a host to the device of the CA it was placed by, never empty: without rail_hca that CA is the one
    whose device ends in the lowest number (_rail_zero).
    """
    schemes = {}
    for name, device in chosen.items():
        schemes.setdefault(_scheme(device), []).append(device)
    usual = dict((scheme, sorted(Counter(devices).items(), key=lambda item: (-item[1], item[0]))[0][0])
                 for scheme, devices in schemes.items())
    for name in _sorted(chosen):
        scheme = _scheme(chosen[name])
        if chosen[name] != usual[scheme]:
            most = 'most hosts' if len(schemes) == 1 else 'most hosts whose HCAs are named %s<n>' % scheme
            warnings.append('host %s was placed by its %s, %s by their %s: is its %s missing from the '
                            'fabric (link down)? pass rail_hca to place every host by one HCA'
                            % (name, chosen[name], most, usual[scheme], usual[scheme]))


def tree_topology(parsed, node_names, name_map=None, rail_hca=None, node_name_map=None):
    """The topology/tree lines of topology.conf for the Slurm nodes ``node_names`` in the fabric ``parsed``.

    ``parsed`` is :func:`parse_ibnetdiscover`'s result; ``node_names`` the Slurm nodes (a list or a hostlist
    expression); only they are placed.  Returns ``{'lines': [...], 'warnings': [...]}``, e.g.::

        {'lines': ['SwitchName=B09-P1-IBLEAF-01-05 Nodes=b05-p1-dgx-05-c[01-02]',
                   'SwitchName=B09-P1-IBLEAF-01-06 Nodes=b06-p1-dgx-06-c[01-03]',
                   'SwitchName=A10-P1-IBSPINE-03 Switches=B09-P1-IBLEAF-01-[05-06]'],
         'warnings': ['Slurm nodes not in the fabric (no CA names them): b06-p1-dgx-06-c04; they are left out']}

    Hosts: each CA is a host adapter, except a switch's SHARP "Aggregation Node" (left out quietly).  Its host is
    the first word of its node description (``"<host> mlx5_0"``, ``"<host> HCA-1"``) unless ``name_map`` says
    otherwise: a dict whose keys are a CA GUID (``"H-<guid>"``, ``"0x<guid>"`` or the bare hex), a whole
    description or a host name (tried in that order), or a regular expression searched in the description whose
    group ``name`` (else group 1) is the Slurm node name.  A CA still showing its adapter's default description
    ("MT4129 ConnectX7   Mellanox Technologies") names no host unless ``name_map`` names its GUID.
    ``node_name_map`` (:func:`parse_node_name_map`'s ``{guid: name}``) first replaces the descriptions of the nodes
    it names, switches included, as ``ibnetdiscover --node-name-map`` would have printed them; ``name_map`` then
    applies to those descriptions.

    Rail rule: a host with several CAs (multi-rail: 4 or 8 HCAs, each cabled to a different rail's leaf) is
    placed under the leaf of ONE of them, its rail-0 CA: the CA whose device (the words after the host name)
    is ``rail_hca`` when given (``"mlx5_0"``, ``"HCA-1"``), else the CA whose device ends in the lowest number
    (mlx5_0 before mlx5_1, HCA-1 before HCA-2).  The other CAs are ignored.  A host whose rail-0 CA is linked to
    two switches, or that has two CAs both fitting the rule (two machines with one host name), is an error.
    Hosts are compared with the hosts of their own naming scheme (the device without its number: ``mlx5_``,
    ``HCA-``), so a fabric mixing ``mlx5_0`` hosts and ``HCA-1`` hosts warns only about a host placed by another
    HCA than most hosts of its scheme (its rail-0 HCA missing: link down).

    Leaves are the switches holding placed hosts (``SwitchName=<name> Nodes=<hostlist>``).  Above them, by
    breadth-first rank from the leaves, come the switches that carry no host adapter at all (spines, cores):
    a switch of rank k+1 lists its linked switches of rank k (``Switches=<hostlist>``); links between switches of
    one rank are not part of the tree.  A switch with host adapters is above the switches with host adapters it is
    linked to when it is linked to at least two of them and to more of them than each of those is (a spine with
    storage, UFM or management hosts cabled to it, over its leaves; two leaves cabled to each other are neither
    above the other): it keeps its place as a spine.  Slurm refuses ``Nodes=`` and ``Switches=`` on one line
    ("switch ... has both child switches and nodes"), so the Slurm nodes on such a spine go to a leaf
    ``<spine>-hosts`` that is not in the fabric, listed among the spine's children, with a warning.  Any other
    switch carrying host adapters of which none is placed (another rail's
    leaf, a storage or service leaf) is not a spine and is left out, with whatever is reachable only through it;
    so is every switch that no leaf reaches, and every switch above rank 1 whose leaves all sit below one lower
    switch already (a spare leaf without hosts cabled to the spines, another pod's spine reached through the
    cores, a core above a single pod): it joins nothing new.  If the leaves do not all meet under common
    switches (two leaves cabled straight to each other), a switch ``fabric`` that is not in the fabric joins the
    tops, with a warning: Slurm only lets a job span switches that share an ancestor.  Switch names:
    :func:`switch_names`.

    Warnings (the topology is still right for what it holds): the dump's own (``parsed['warnings']``: error lines
    before it), CAs whose host is unknown, fabric hosts that are not Slurm nodes, hosts without their rail-0 CA,
    hosts placed by another HCA than most of their scheme, Slurm nodes the fabric does not show, the ``-hosts``
    leaf of a spine with Slurm nodes, the joining ``fabric`` switch.  ``ValueError``: no switch in the fabric, a host in two leaves,
    no Slurm node in the fabric, bad arguments.
    """
    parsed, wanted, table, pattern = _tree_arguments(parsed, node_names, name_map, rail_hca, node_name_map)
    names = switch_names(parsed)
    warnings = list(parsed.get('warnings') or [])
    hosts = _fabric_hosts(parsed, names, table, pattern, warnings)
    placed, chosen = _place_hosts(parsed, names, hosts, wanted, rail_hca, warnings)
    if rail_hca is None and chosen:
        _warn_other_rail(chosen, warnings)

    missing = wanted - set(hosts)
    if missing:
        warnings.append('Slurm nodes not in the fabric (no CA names them): %s; they are left out' % _hostlist(missing))
    if not placed:
        known = _sorted(hosts)[:5]
        raise ValueError('none of the %d Slurm nodes is in the fabric: %s; %s (name_map maps node descriptions or '
                         'CA GUIDs to Slurm node names)'
                         % (len(wanted), _hostlist(wanted), 'the fabric\'s hosts are ' + ', '.join(known) + (
                             ', ...' if len(hosts) > len(known) else '') if known else 'no CA of the fabric names a host'))

    lines, said = _tree_lines(parsed, names, placed)
    warnings.extend(said)
    return {'lines': lines, 'warnings': warnings}


def _scheme(device):
    """A device name's naming scheme: the name without its trailing number ("mlx5_0" -> "mlx5_", "HCA-1" -> "HCA-")."""
    return re.sub(r'\d+\s*$', '', device)


def _rail_zero(name, cas, rail_hca, warnings, where):
    if rail_hca is not None:
        fits = [ca for ca in cas if _device_of(ca['desc']) == rail_hca.strip()]
        if not fits:
            warnings.append('host %s has no CA named %s (it has %s); left out'
                            % (name, rail_hca, ', '.join('"%s"' % ca['desc'] for ca in cas)))
            return None
    elif len(cas) == 1:
        return cas[0]
    else:
        indexes = [_rail_index(_device_of(ca['desc'])) for ca in cas]
        numbered = [index for index in indexes if index is not None]
        if numbered:
            low = min(numbered)
            fits = [ca for ca, index in zip(cas, indexes) if index == low]
        else:
            fits = cas
    if len(fits) > 1:
        spots = set(frozenset(peer for peer, _port in ca['ports'].values()) for ca in fits)
        raise ValueError('host %s %s: %d CAs fit its rail-0 HCA (%s): two machines with one host name, or node '
                         'descriptions set wrong; fix them, or tell the CAs apart with name_map (CA GUIDs)'
                         % (name, 'would sit in two leaves' if len(spots) > 1 else 'is ambiguous', len(fits),
                            '; '.join('H-%s "%s"%s' % (ca['guid'], ca['desc'], where(ca)) for ca in fits)))
    return fits[0]


def _switch_ranks(parsed, nodes_on):
    """({switch guid: rank above the leaves}, {switch guid: [child guid]}) of the switches in the tree."""
    switches = parsed['switches']
    hosted = set()
    for ca in parsed['hosts'].values():
        if _AGGREGATION_NODE.search(ca['desc']):
            continue
        for peer, _port in ca['ports'].values():
            if peer in switches:
                hosted.add(peer)

    def neighbours(guid):
        return sorted(set(peer for peer, _port in switches[guid]['ports'].values() if peer in switches))

    # A switch with hosts is above the switches with hosts it is linked to when it is linked to two or more of them,
    # and to more of them than each of those is: a spine with storage, UFM or management hosts over its leaves.
    fan = dict((guid, sum(1 for peer in neighbours(guid) if peer in hosted)) for guid in hosted)
    upper = set(guid for guid in hosted
                if fan[guid] >= 2 and all(fan[guid] > fan[peer] for peer in neighbours(guid) if peer in hosted))
    rank = dict((guid, 0) for guid in nodes_on
                if guid not in upper or not any(peer in nodes_on for peer in neighbours(guid)))
    frontier = sorted(rank)
    while frontier:
        step = []
        for guid in frontier:
            for peer in neighbours(guid):
                if peer not in rank and (peer not in hosted or peer in upper):
                    rank[peer] = rank[guid] + 1
                    step.append(peer)
        frontier = sorted(set(step))
    children = {}
    for guid, level in rank.items():
        if level:
            children[guid] = [peer for peer in neighbours(guid) if rank.get(peer) == level - 1]
    # The walk also goes down and sideways (a spare leaf without hosts under the spines, another pod's spines
    # under the cores get the next rank): a switch above rank 1 whose leaves are all below one lower switch
    # already joins nothing new and is left out (a core above a single pod too), and so is what hangs only on it.
    # A spine holding Slurm nodes itself (rank 1, linked to leaves) always stays.
    below = dict((guid, set([guid])) for guid in rank if not rank[guid])
    for level in range(1, max(rank.values()) + 1):
        lower = [guid for guid in below if rank[guid]]
        for guid in sorted(g for g in rank if rank[g] == level):
            kids = [kid for kid in children[guid] if kid in below]
            covered = set().union(*[below[kid] for kid in kids])
            if guid in nodes_on:
                covered.add(guid)
            elif not kids or (level > 1 and any(covered <= below[other] for other in lower)):
                del rank[guid], children[guid]
                continue
            children[guid], below[guid] = kids, covered
    return rank, children


def _tree_lines(parsed, names, placed):
    """(lines, warnings) of the tree for the placed Slurm nodes ``{node: switch guid}``."""
    nodes_on = {}
    for node, switch in placed.items():
        nodes_on.setdefault(switch, []).append(node)
    rank, children = _switch_ranks(parsed, nodes_on)

    taken = set(names.values())
    own_leaf = {}   # spine guid -> the name of the leaf (not in the fabric) holding the Slurm nodes on that spine
    warnings = []
    for guid in sorted((g for g in nodes_on if rank[g]), key=lambda g: _natural_key(names[g])):
        leaf = _fresh_name('%s-hosts' % names[guid], 'S-%s-hosts' % guid, taken)
        own_leaf[guid] = leaf
        warnings.append('switch %s holds Slurm nodes (%s) and is above leaf switches (%s); Slurm refuses Nodes= and '
                        'Switches= on one topology.conf line, so its nodes are on %s, a switch that is not in the '
                        'fabric, listed under %s' % (names[guid], _hostlist(nodes_on[guid]),
                                                     _hostlist(names[c] for c in children[guid]), leaf, names[guid]))
    leaf_lines = [(names[guid], nodes_on[guid]) for guid in nodes_on if not rank[guid]]
    leaf_lines += [(own_leaf[guid], nodes_on[guid]) for guid in own_leaf]
    lines = ['SwitchName=%s Nodes=%s' % (name, _hostlist(nodes))
             for name, nodes in sorted(leaf_lines, key=lambda item: _natural_key(item[0]))]
    for level in range(1, max(rank.values()) + 1):
        for guid in sorted((g for g in rank if rank[g] == level), key=lambda g: _natural_key(names[g])):
            kids = [names[c] for c in children[guid]] + ([own_leaf[guid]] if guid in own_leaf else [])
            lines.append('SwitchName=%s Switches=%s' % (names[guid], _hostlist(kids)))

    tops = _component_tops(rank, children)
    if not tops:
        return lines, warnings
    root = _fresh_name('fabric', None, taken)
    top_names = [names[guid] for guid in tops]
    lines.append('SwitchName=%s Switches=%s' % (root, _hostlist(top_names)))
    warnings.append('the leaves do not all meet under common switches (%s are linked only to each other or through '
                    'switches that carry other hosts); switch %s, which is not in the fabric, joins them so that '
                    'jobs may span them' % (', '.join(_sorted(top_names)), root))
    return lines, warnings


def _fresh_name(name, fallback, taken):
    """``name`` (else ``fallback``) with the lowest number >= 2 appended that no switch in ``taken`` has; taken now."""
    for base in (name, fallback):
        if base and len(base) <= _SWITCH_NAME_MAX and base not in taken:
            taken.add(base)
            return base
    base = fallback or name
    suffix = 2
    while '%s%d' % (base, suffix) in taken:
        suffix += 1
    taken.add('%s%d' % (base, suffix))
    return '%s%d' % (base, suffix)


def _component_tops(rank, children):
    """The top switches (highest rank) of each connected part of the tree, or [] when it is one part."""
    links = dict((guid, set()) for guid in rank)
    for guid, kids in children.items():
        for kid in kids:
            links[guid].add(kid)
            links[kid].add(guid)
    seen = set()
    parts = []
    for start in sorted(rank):
        if start in seen:
            continue
        part = [start]
        seen.add(start)
        index = 0
        while index < len(part):  # breadth first: the list grows while it is walked
            for peer in sorted(links[part[index]]):
                if peer not in seen:
                    seen.add(peer)
                    part.append(peer)
            index += 1
        parts.append(part)
    if len(parts) < 2:
        return []
    tops = []
    for part in parts:
        top_rank = max(rank[guid] for guid in part)
        tops.extend(guid for guid in part if rank[guid] == top_rank)
    return tops


# --- topology/block -----------------------------------------------------------------------------------------------------

_MAX_BLOCK_LEVEL = 15  # block_record.c: a BlockSizes value over 2**15 times the base is fatal
_MAX_BLOCK_BASE = 65535  # block_record.c: the base block size is a uint16_t (bblock_node_cnt)
_MAX_CLIQUE = 0xFFFFFFFF  # nvmlGpuFabricInfo_t cliqueId is an unsigned int


def parse_block_sizes(block_sizes):
    """``BlockSizes=`` as a list of node counts (a list or "18,36,72"): the planning base first, then the base times
    powers of two; raises ``ValueError`` saying what is wrong."""
    if isinstance(block_sizes, str):
        items = [item.strip() for item in block_sizes.split(',')]
    else:
        try:
            items = list(block_sizes)
        except TypeError:
            raise ValueError('block_sizes must be a list of node counts or "18,36,72", got %r' % (block_sizes,))
    if not items:
        raise ValueError('block_sizes is empty; give the planning base block size first, e.g. [18, 36, 72]')
    sizes = []
    for item in items:
        if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and item.isdigit())):
            raise ValueError('block_sizes: %r is not a whole number of nodes' % (item,))
        size = int(item)
        if size <= 0:
            raise ValueError('block_sizes: %d is not a positive number of nodes' % size)
        sizes.append(size)
    base = sizes[0]
    if base > _MAX_BLOCK_BASE:
        raise ValueError('block_sizes %s: the base %d is more than %d nodes, the most Slurm\'s base block size holds '
                         '(a 16-bit count)' % (sizes, base, _MAX_BLOCK_BASE))
    for prior, size in zip(sizes, sizes[1:]):
        if size <= prior:
            raise ValueError('block_sizes %s: %d does not grow past %d; each size must be larger than the one '
                             'before it' % (sizes, size, prior))
    for size in sizes[1:]:
        ratio = size // base
        if size % base or ratio & (ratio - 1):
            raise ValueError('block_sizes %s: %d is not the base %d times a power of two (valid next sizes: %s)'
                             % (sizes, size, base, ', '.join(str(base << n) for n in range(1, 5))))
        if ratio > 1 << _MAX_BLOCK_LEVEL:
            raise ValueError('block_sizes %s: %d is more than 2**%d times the base %d, which Slurm refuses'
                             % (sizes, size, _MAX_BLOCK_LEVEL, base))
    return sizes


def is_clique_id(clique):
    """Whether ``clique`` is an NVLink clique id (NVML's ``cliqueId``, an unsigned 32-bit int)."""
    return not isinstance(clique, bool) and isinstance(clique, int) and 0 <= clique <= _MAX_CLIQUE


def _no_domain(uuid):
    return uuid is None or (isinstance(uuid, str) and (not uuid.strip() or not uuid.replace('-', '').strip('0')))


_FABRIC_COMPLETED = 3  # nvml.h NVML_GPU_FABRIC_STATE_COMPLETED: the fabric manager registered the GPU


def _gpu_domain(index, fabric):
    """(lowercased cluster UUID, clique id) of one GPU's fabric() answer; None when the GPU is in no domain."""
    if fabric is None:
        return None
    if not isinstance(fabric, dict):
        raise ValueError('GPU %d: %r is not a fabric() answer ({"state": ..., "status": ..., "cluster_uuid": ..., '
                         '"clique_id": ...}) or None' % (index, fabric))
    uuid = fabric.get('cluster_uuid')
    if uuid is not None and not isinstance(uuid, str):
        raise ValueError('GPU %d: cluster_uuid %r is not a string' % (index, uuid))
    if fabric.get('state') != _FABRIC_COMPLETED or _no_domain(uuid):
        return None
    clique = fabric.get('clique_id')
    if not is_clique_id(clique):
        raise ValueError('GPU %d: clique_id %r is not a whole number from 0 to %d (nvmlGpuFabricInfo cliqueId)'
                         % (index, clique, _MAX_CLIQUE))
    return uuid.strip().lower(), clique


def _gpus(indexes):
    return ('GPU %s' if len(indexes) == 1 else 'GPUs %s') % (', '.join(str(index) for index in indexes))


def _domain_text(domain):
    return 'cluster UUID %s clique %d' % domain


def node_nvlink_domain(fabrics):
    """One node's NVLink fabric domain, in the form :func:`block_topology` takes per node, and warnings.

    ``fabrics`` lists the node's GPUs in index order, each ``_nvml.Client.fabric()``'s answer
    (``{'state': n, 'status': n, 'cluster_uuid': str or None, 'clique_id': n}``) or None (no fabric info).  A GPU
    is in a domain when its state is COMPLETED (the fabric manager / NVLink Subnet Manager registered it) and its
    cluster UUID is not missing, empty or all zeros (what a single-node HGX board reports).  Returns
    ``(domain, warnings)``: ``domain`` is ``{'cluster_uuid': <lowercase UUID>, 'clique_id': n}`` of the first GPU in
    a domain, None when no GPU is in one; ``warnings`` name the GPUs in another domain and those in none while
    others are in one (the node goes in the first GPU's).  ``ValueError`` for input that is not such a list.
    """
    if not isinstance(fabrics, (list, tuple)):
        raise ValueError('fabrics must list the fabric() answers of one node\'s GPUs (or None), got %r' % (fabrics,))
    domains = [_gpu_domain(index, fabric) for index, fabric in enumerate(fabrics)]
    first = next((index for index, domain in enumerate(domains) if domain is not None), None)
    if first is None:
        return None, []
    chosen = domains[first]
    others = {}
    for index, domain in enumerate(domains):
        if domain is not None and domain != chosen:
            others.setdefault(domain, []).append(index)
    outside = [index for index, domain in enumerate(domains) if domain is None]
    where = 'GPU %d\'s (%s)' % (first, _domain_text(chosen))
    warnings = []
    if others:
        warnings.append('GPUs of this node report different NVLink domains: %s; the node is placed in %s' % (
            '; '.join('%s: %s' % (_gpus(indexes), _domain_text(domain))
                      for domain, indexes in sorted(others.items(), key=lambda item: item[1][0])), where))
    if outside:
        warnings.append('%s report%s no NVLink domain (fabric state not COMPLETED or no cluster UUID) while %s is in '
                        'one; the node is placed in %s' % (_gpus(outside), 's' if len(outside) == 1 else '',
                                                           'GPU %d' % first, where))
    return {'cluster_uuid': chosen[0], 'clique_id': chosen[1]}, warnings


def block_topology(nodes, block_sizes=None):
    """The topology/block lines of topology.conf from the nodes' NVLink fabric domains.

    ``nodes`` maps each Slurm node to ``{'cluster_uuid': str, 'clique_id': int}`` (``nvmlDeviceGetGpuFabricInfo``:
    clusterUuid, cliqueId); a node whose value is None, or whose cluster UUID is missing, empty or all zeros
    (the fabric manager has not registered it), has no domain.  Every (cluster UUID, clique id) is one block,
    named ``block1``, ``block2``... in the order of the blocks' first nodes (natural order, so stable).  Returns
    ``{'lines': [...], 'warnings': [...]}``, e.g.::

        {'lines': ['BlockName=block1 Nodes=gb[01-18]', 'BlockName=block2 Nodes=gb[19-36]', 'BlockSizes=18,36'],
         'warnings': ['nodes without an NVLink fabric domain ...: gb37; they are in no block']}

    A node's value may also carry ``declared``: the NVLink domain its node type declares (``gpucluster_node_type``
    ``nvlink_domain``, e.g. ``rack-a07``; ``''`` for none).  The nodes declaring one name are one block of that name,
    placed by the declaration also where NVML reports no domain (a warning says so).  Declaration and NVML must agree:
    the nodes of one declared name in one NVML domain, and an NVML domain holding the nodes of one declared name only
    (``ValueError`` naming both otherwise).  The other blocks keep their ``blockN`` names.

    ``block_sizes`` (a list or ``"18,36"``) becomes ``BlockSizes=`` after the blocks.  As topology.conf(5) and
    Slurm's block plugin (block_record.c) require: the first value is the planning base block size, each next
    one larger than the one before and the base times a power of two (at most 2**15), and every block must hold
    at least the base's number of nodes.  Without ``block_sizes`` Slurm takes the first block's node count as
    the base, so a later, smaller block is refused here as it would be by slurmctld.  ``ValueError`` also for
    an empty ``nodes``, a bad clique id, and no node with a domain.
    """
    if not isinstance(nodes, dict) or not nodes:
        raise ValueError('nodes must map Slurm node names to {"cluster_uuid": ..., "clique_id": ...}; got %r' % (nodes,))
    _node_name_list(list(nodes), what='nodes')
    detected, declared = _node_domains(nodes)
    blocks, warnings = _declared_blocks(detected, declared)
    lost = [name for name in nodes if detected.get(name) is None and not declared.get(name)]
    if lost:
        warnings.insert(0, 'nodes without an NVLink fabric domain (no cluster UUID from nvmlDeviceGetGpuFabricInfo): '
                           '%s; they are in no block' % _hostlist(lost))
    if not blocks:
        raise ValueError('no node has an NVLink fabric domain (%s); topology/block needs at least one block'
                         % _hostlist(lost))
    blocks = sorted(blocks, key=lambda block: _natural_key(block[1][0]))
    names, index = [], 0
    taken = set(name for name, _members in blocks if name)
    for name, _members in blocks:
        if not name:
            index += 1
            while 'block%d' % index in taken:
                index += 1
            name = 'block%d' % index
        names.append(name)
    sizes = parse_block_sizes(block_sizes) if block_sizes is not None else None
    base = sizes[0] if sizes else len(blocks[0][1])
    small = ['%s (%d nodes: %s)' % (name, len(members), _hostlist(members))
             for name, (_declared, members) in zip(names, blocks) if len(members) < base]
    if small:
        if sizes:
            smallest = min(len(members) for _name, members in blocks)
            raise ValueError('%s hold fewer nodes than the planning base block size %d of block_sizes; Slurm refuses '
                             'such blocks: use a base of at most %d' % (', '.join(small), base, smallest))
        raise ValueError('%s hold fewer nodes than %s (%d); without BlockSizes Slurm takes the first block\'s '
                         'node count as the planning base and refuses smaller blocks: pass block_sizes with a base '
                         'of at most %d' % (', '.join(small), names[0], base, min(len(members) for _name, members in blocks)))
    lines = ['BlockName=%s Nodes=%s' % (name, compress(members)) for name, (_declared, members) in zip(names, blocks)]
    if sizes:
        lines.append('BlockSizes=%s' % ','.join(str(size) for size in sizes))
    return {'lines': lines, 'warnings': warnings}


def _node_domains(nodes):
    """``({node: (uuid, clique) or None}, {node: declared name or ''})`` of block_topology's ``nodes``."""
    detected, declared = {}, {}
    for name, info in nodes.items():
        detected[name], declared[name] = None, ''
        if info is None:
            continue
        if not isinstance(info, dict):
            raise ValueError('node %s: %r is not {"cluster_uuid": ..., "clique_id": ...}' % (name, info))
        wanted = info.get('declared') or ''
        if not isinstance(wanted, str) or (wanted and (_UNSAFE.search(wanted) or wanted != wanted.strip())):
            raise ValueError('node %s: the declared NVLink domain (gpucluster_node_type.nvlink_domain) is %r; expected a block '
                             'name of letters, digits, ".", "_" or "-", such as rack-a07, or "" for none' % (name, wanted))
        declared[name] = wanted
        uuid = info.get('cluster_uuid')
        if uuid is not None and not isinstance(uuid, str):
            raise ValueError('node %s: cluster_uuid %r is not a string' % (name, uuid))
        if _no_domain(uuid):
            continue
        clique = info.get('clique_id')
        if not is_clique_id(clique):
            raise ValueError('node %s: clique_id %r is not a whole number from 0 to %d (nvmlGpuFabricInfo cliqueId)'
                             % (name, clique, _MAX_CLIQUE))
        detected[name] = (uuid.strip().lower(), clique)
    return detected, declared


def _declared_blocks(detected, declared):
    """``([(declared name or '', [members])], warnings)``: the nodes grouped by declared name, else by NVML domain;
    ``ValueError`` where the two disagree."""
    by_name, by_domain = {}, {}
    for node in detected:
        if declared[node]:
            by_name.setdefault(declared[node], []).append(node)
        if detected[node] is not None:
            by_domain.setdefault(detected[node], []).append(node)
    problems = []
    for name, members in sorted(by_name.items()):
        domains = sorted(set(detected[node] for node in members if detected[node] is not None))
        if len(domains) > 1:
            where = ['%s: %s' % (_hostlist([n for n in members if detected[n] == domain]), _domain_text(domain)) for domain in domains]
            problems.append('the nodes declaring the NVLink domain %s are in %d NVLink domains by NVML: %s'
                            % (name, len(domains), '; '.join(where)))
    for domain, members in sorted(by_domain.items(), key=lambda item: _natural_key(item[1][0])):
        names = sorted(set(declared[node] for node in members))
        if len(names) > 1:
            problems.append('NVML puts %s in one NVLink domain (%s), but their node types declare %s' % (
                _hostlist(members), _domain_text(domain), ', '.join(
                    '%s for %s' % ('"%s"' % name if name else 'none', _hostlist([n for n in members if declared[n] == name]))
                    for name in names)))
    if problems:
        raise ValueError('the declared NVLink domains (gpucluster_node_type.nvlink_domain) and the ones NVML reports differ: '
                         '%s' % '; '.join(problems))
    warnings = []
    unseen = [node for name in by_name for node in by_name[name] if detected[node] is None]
    if unseen:
        warnings.append('nodes whose node type declares an NVLink domain that NVML does not report (fabric state not '
                        'COMPLETED or no cluster UUID): %s; placed in the declared block' % _hostlist(unseen))
    blocks = [(name, _sorted(members)) for name, members in by_name.items()]
    blocks += [('', _sorted(members)) for members in by_domain.values() if not declared[members[0]]]
    return blocks, warnings


# --- topology.yaml (Slurm 25.05 and later) ----------------------------------------------------------------------------

_CONF_LINE = re.compile(r'^(?P<key>SwitchName|BlockName)=(?P<name>\S+)\s+(?P<what>Nodes|Switches)=(?P<list>\S+)$')
_SIZES_LINE = re.compile(r'^BlockSizes=(?P<sizes>\d+(?:,\d+)*)$')


def _quoted(text):
    """``text`` as a YAML double-quoted scalar (JSON's string syntax is YAML's)."""
    return '"%s"' % text.replace('\\', '\\\\').replace('"', '\\"')


def topology_yaml(plugin, lines, name='default'):
    """The text of topology.yaml (Slurm 25.05 and later) for the topology.conf ``lines`` of :func:`tree_topology`
    (``plugin='tree'``) or :func:`block_topology` (``'block'``): one topology ``name``, the cluster's default, e.g.::

        - topology: "default"
          cluster_default: true
          tree:
            switches:
              - switch: "leaf1"
                nodes: "gpu-[01-02]"
              - switch: "spine"
                children: "leaf[1-2]"

    topology.yaml(5) and the data_parser of 26.05 (TOPOLOGY_CONF: ``topology``, ``cluster_default``, ``tree``
    ``switches`` of ``switch``/``children``/``nodes``; ``block`` ``block_sizes`` and ``blocks`` of
    ``block``/``nodes``).  The same model as topology.conf, so the two files hold the same topology.  ``ValueError``
    for a plugin other than tree or block, a line that is not one the two functions write, no line.
    """
    if plugin not in ('tree', 'block'):
        raise ValueError("plugin is %r, expected 'tree' or 'block'" % (plugin,))
    if not isinstance(name, str) or not name or _UNSAFE.search(name):
        raise ValueError('name is %r, expected a topology name of letters, digits, ".", "_" or "-"' % (name,))
    if not isinstance(lines, (list, tuple)) or not lines:
        raise ValueError('lines is %r, expected the topology.conf lines of the %s topology' % (lines, plugin))
    entries, sizes = [], None
    key = 'SwitchName' if plugin == 'tree' else 'BlockName'
    for line in lines:
        match = _CONF_LINE.match(line) if isinstance(line, str) else None
        sized = _SIZES_LINE.match(line) if isinstance(line, str) and plugin == 'block' else None
        if sized and sizes is None:
            sizes = [int(size) for size in sized.group('sizes').split(',')]
            continue
        if not match or match.group('key') != key or (plugin == 'block' and match.group('what') != 'Nodes'):
            raise ValueError('lines has %r, expected %s=<name> %s lines%s' % (
                line, key, 'Nodes=|Switches=' if plugin == 'tree' else 'Nodes=', ' and one BlockSizes=' if plugin == 'block' else ''))
        entries.append((match.group('name'), match.group('what'), match.group('list')))
    if not entries:
        raise ValueError('lines is %r, expected at least one %s= line' % (list(lines), key))
    out = ['---', '- topology: %s' % _quoted(name), '  cluster_default: true']
    if plugin == 'tree':
        out += ['  tree:', '    switches:']
        for switch, what, members in entries:
            out += ['      - switch: %s' % _quoted(switch),
                    '        %s: %s' % ('nodes' if what == 'Nodes' else 'children', _quoted(members))]
    else:
        out += ['  block:']
        if sizes:
            out += ['    block_sizes:'] + ['      - %d' % size for size in sizes]
        out += ['    blocks:']
        for block, _what, members in entries:
            out += ['      - block: %s' % _quoted(block), '        nodes: %s' % _quoted(members)]
    return '\n'.join(out) + '\n'
