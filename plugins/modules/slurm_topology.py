#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_topology
short_description: Write Slurm's topology.conf from the InfiniBand fabric or the GPUs' NVLink domains
version_added: 0.1.0
description:
  - With O(plugin=tree), reads the fabric as C(ibnetdiscover) prints it (O(ibnetdiscover) text, or the file
    O(ibnetdiscover_path) on the host, for example saved by an admin or by C(ibnetdiscover > file) on a node with the
    InfiniBand tools) and writes the topology/tree lines - one C(SwitchName=<leaf> Nodes=<hostlist>) per leaf switch
    holding Slurm nodes, C(SwitchName=<spine> Switches=<hostlist>) above; hosts are named by their HCA's node
    description (first word, or O(name_map)); a host with several HCAs belongs to the leaf of its rail-0 HCA (the lowest
    C(mlx5_N) or C(HCA-N) of its own naming scheme, or O(rail_hca)); switches with no host below them are left out.
  - A spine that also has hosts cabled to it (storage, UFM, management nodes) stays a spine; Slurm refuses C(Nodes=) and
    C(Switches=) on one line, so Slurm nodes on it are placed on a leaf C(<spine>-hosts) under it, with a warning.
  - Lines of C(ibnetdiscover)'s standard error before the dump (C(ibnetdiscover 2>&1)) are reported as warnings and the
    dump after them is read; anything else that is not part of the dump fails the task.
  - With O(plugin=block), writes one C(BlockName=blockN Nodes=<hostlist>) per NVLink domain (cluster UUID and clique id
    of C(nvmlDeviceGetGpuFabricInfo), given in O(fabric)) and C(BlockSizes=) from O(block_sizes).
  - Only O(nodes) are placed; adapters that name no Slurm node and Slurm nodes the fabric does not show are warnings.
    A dump that is cut short or does not hold together, a host in two leaves, or no node found fails the task before
    anything is written; the file is never written with a silently wrong topology.
  - Every option is checked before anything is read or written (O(dest) not under C(/proc) or C(/sys), not a directory,
    its directory writable; input files regular, readable text); a failed run leaves no file behind.
  - The file is replaced only when its content changes (changed=false otherwise), through a temporary file in its
    directory that already has O(mode); check mode and diff are supported.
    The slurm.conf side (C(TopologyPlugin=topology/tree) or C(topology/block)) and C(scontrol reconfigure) are the slurm
    role's.
  - With O(format=yaml) the same topology is written as Slurm's C(topology.yaml) (Slurm 25.05 and later read it, and
    ignore C(topology.conf) while it exists), one topology C(default) that is the cluster's default.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  state:
    description:
      - V(present) writes the file. V(absent) removes it when this module wrote it (its first line is the module's
        header), and leaves a file written by anyone else in place (RV(kept)).
      - With V(absent) only O(dest), O(mode) and O(nodes) may be given; the options that describe the topology are
        refused.
    type: str
    choices: [present, absent]
    default: present
  plugin:
    description:
      - V(tree) from the InfiniBand fabric, V(block) from the NVLink domains.
      - The options of the other plugin are refused (O(fabric) and O(block_sizes) are V(block)'s, O(ibnetdiscover),
        O(ibnetdiscover_path), O(node_name_map), O(node_name_map_path), O(name_map), O(name_regex) and O(rail_hca)
        are V(tree)'s).
    type: str
    choices: [tree, block]
    default: tree
  format:
    description:
      - V(conf) writes C(topology.conf) lines; V(yaml) writes C(topology.yaml) (Slurm 25.05 and later, topology.yaml(5)) with
        the same switches or blocks under one topology C(default) with C(cluster_default) true.
      - The slurm role picks V(yaml) when the controller runs Slurm 25.05 or later.
    type: str
    choices: [conf, yaml]
    default: conf
  nodes:
    description:
      - The Slurm node names to place (for example every host of the compute group). Required with O(state=present).
      - Each a node name, not a hostlist expression (no blanks, commas, brackets, C(#) or C(=), not starting with C(-)).
    type: list
    elements: str
  ibnetdiscover:
    description: The output of C(ibnetdiscover) (for O(plugin=tree)); or give O(ibnetdiscover_path).
    type: str
  ibnetdiscover_path:
    description:
      - A file on the host holding the output of C(ibnetdiscover) (an absolute path to a readable, regular text file,
        not the C(ibnetdiscover) program itself).
    type: path
  node_name_map:
    description:
      - The text of a node name map in C(ibnetdiscover --node-name-map) format (the site's C(/etc/rdma/ib-node-name-map)),
        for O(plugin=tree) - per line a node GUID in hex (C(0x...)) and the name that replaces the node's description,
        in double quotes; C(#) comments and blank lines. Switches are named, and hosts found, by these names as
        C(ibnetdiscover --node-name-map) would have printed them; O(name_map) or O(name_regex) then apply to them.
      - A line that is not such an entry fails the task, naming the line.
      - Or give O(node_name_map_path).
    type: str
  node_name_map_path:
    description: A file on the host holding a node name map (see O(node_name_map)).
    type: path
  name_map:
    description:
      - How an HCA's node description maps to a Slurm node name where the first word is not it. Keys are HCA GUIDs,
        whole descriptions or host names; values Slurm node names.
      - Quote GUID keys in YAML (C("0x0008f10403961354")); unquoted, YAML reads them as numbers.
    type: dict
    default: {}
  name_regex:
    description: A regular expression applied to the node description; its group C(name) (or its first group) is the Slurm node name.
    type: str
  rail_hca:
    description: The HCA (for example V(mlx5_0)) whose leaf a multi-rail host belongs to; default its lowest-numbered one.
    type: str
  fabric:
    description:
      - For O(plugin=block), per Slurm node its C(cluster_uuid) (a string) and C(clique_id) (0 to 4294967295), or null
        for a node in no NVLink domain.
    type: dict
    default: {}
  block_sizes:
    description:
      - For O(plugin=block), the C(BlockSizes=) values (the first is the base block size, at most 65535 nodes; each next
        one the base times a power of two, at most 2**15).
    type: list
    elements: int
  dest:
    description: The topology.conf to write (an absolute path; not a directory, not under C(/proc) or C(/sys)).
    type: path
    default: /etc/slurm/topology.conf
  mode:
    description:
      - Its mode, an octal string such as V('0644'). A YAML number is taken as the mode's value (an unquoted C(0644) is
        420, that is 0644); a number above 0777 is refused.
    type: raw
    default: '0644'
'''

EXAMPLES = r'''
- name: Topology from a saved ibnetdiscover dump
  gpucluster.bringup.slurm_topology:
    plugin: tree
    nodes: "{{ groups['slurm_compute'] }}"
    ibnetdiscover_path: /root/fabric.txt
    rail_hca: mlx5_0

- name: Topology named by the site's node name map
  gpucluster.bringup.slurm_topology:
    nodes: "{{ groups['slurm_compute'] }}"
    ibnetdiscover_path: /root/fabric.txt
    node_name_map_path: /etc/rdma/ib-node-name-map

- name: The same topology as topology.yaml (Slurm 25.05 and later)
  gpucluster.bringup.slurm_topology:
    plugin: tree
    format: yaml
    nodes: "{{ groups['slurm_compute'] }}"
    ibnetdiscover_path: /root/fabric.txt
    dest: /etc/slurm/topology.yaml

- name: Remove the topology.conf this module wrote (a site's own file stays)
  gpucluster.bringup.slurm_topology:
    state: absent
'''

RETURN = r'''
lines:
  description: The topology.conf lines (without the header comment; also with O(format=yaml), whose file holds the same topology).
  returned: always
  type: list
  elements: str
warnings_found:
  description: What was left out and why (also given as warnings).
  returned: always
  type: list
  elements: str
kept:
  description: With O(state=absent), true when a topology.conf not written by this module was left in place.
  returned: always
  type: bool
'''

import os
import re
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    PSEUDO_ROOTS,
    InputError,
    check_writable_dest,
    nearest_existing,
    require_dict,
    require_list,
    require_match,
    require_str,
    show,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import (
    NODE_NAME_RULE,
    block_topology,
    is_clique_id,
    is_node_name,
    parse_block_sizes,
    parse_ibnetdiscover,
    parse_node_name_map,
    topology_yaml,
    tree_topology,
)

HEADER = '# topology.conf written by gpucluster.bringup.slurm_topology (%s): do not edit, it is rewritten\n'
YAML_HEADER = '# topology.yaml written by gpucluster.bringup.slurm_topology (%s): do not edit, it is rewritten\n'
TREE_OPTIONS = ('ibnetdiscover', 'ibnetdiscover_path', 'node_name_map', 'node_name_map_path', 'name_map', 'name_regex', 'rail_hca')
BLOCK_OPTIONS = ('fabric', 'block_sizes')
MAX_INPUT = 256 * 1024 * 1024   # bytes: a dump of 10,000 hosts with 8 HCAs each is some 50 MB
DEVICE = r'[A-Za-z0-9][A-Za-z0-9_.:-]*'
MAX_CLIQUE = 0xFFFFFFFF


def _given(params, key):
    return params.get(key) not in (None, {}, [])


def _under_pseudo(path):
    full = os.path.abspath(path)
    for root in PSEUDO_ROOTS:
        if full == root or full.startswith(root + '/'):
            return root
    return None


def check_dest(dest, state):
    """``dest`` checked before anything is read or written; ``InputError`` names what is wrong."""
    if not isinstance(dest, str) or not dest.strip():
        raise InputError('dest is %s, expected the path of topology.conf (e.g. /etc/slurm/topology.conf)' % show(dest))
    if not os.path.isabs(dest) or dest.endswith('/'):
        raise InputError('dest is %s, expected an absolute file path (e.g. /etc/slurm/topology.conf)' % show(dest))
    if state == 'present':
        check_writable_dest('dest', dest, directory=False)
        if not os.path.isdir(os.path.dirname(dest)):
            raise InputError('dest is %s, whose directory %s does not exist; expected a file in an existing directory '
                             '(slurm.conf\'s)' % (show(dest), os.path.dirname(dest)))
    else:
        root = _under_pseudo(dest)
        if root:
            raise InputError('dest is %s, which is under %s, a kernel file system that cannot hold files; expected a path '
                             'on a real file system' % (show(dest), root))
        if os.path.isdir(dest):
            raise InputError('dest is %s, which is a directory; expected a file path' % show(dest))
        parent, dummy = nearest_existing(os.path.dirname(dest))
        if not os.path.isdir(parent):
            raise InputError('dest is %s, but %s is a file, not a directory; expected a path whose parents are directories'
                             % (show(dest), parent))
    if os.path.exists(dest) and not stat.S_ISREG(os.stat(dest).st_mode):
        raise InputError('dest is %s, which is not a regular file (a device, FIFO or socket); expected topology.conf'
                         % show(dest))


def check_mode(mode):
    """The file mode as an int: an octal string ('0644', '644') or a number (YAML's unquoted 0644 is 420)."""
    what = 'an octal file mode such as \'0644\' (quoted; at most 0777)'
    if isinstance(mode, bool):
        raise InputError('mode is %s, expected %s' % (show(mode), what))
    if isinstance(mode, int):
        if 0 <= mode <= 0o777:
            return mode
        raise InputError('mode is %s, expected %s; an unquoted YAML number is the mode\'s decimal value' % (show(mode), what))
    if isinstance(mode, str) and re.match(r'^0?[0-7]{3}$', mode.strip()):
        return int(mode.strip(), 8)
    raise InputError('mode is %s, expected %s' % (show(mode), what))


def check_input_file(name, path):
    """A file the module reads: absolute, not under /proc or /sys, a readable regular file of sane size."""
    if not isinstance(path, str) or not path.strip():
        raise InputError('%s is %s, expected the absolute path of a file on the host' % (name, show(path)))
    if not os.path.isabs(path):
        raise InputError('%s is %s, expected an absolute path (a file on the host)' % (name, show(path)))
    root = _under_pseudo(path)
    if root:
        raise InputError('%s is %s, which is under %s, a kernel file system; expected a file holding the text' % (name, show(path), root))
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InputError('%s is %s, which %s; expected a readable file' % (
            name, show(path), 'does not exist' if not os.path.lexists(path) else 'cannot be read (%s)' % exc.strerror))
    if stat.S_ISDIR(info.st_mode):
        raise InputError('%s is %s, which is a directory; expected a file' % (name, show(path)))
    if not stat.S_ISREG(info.st_mode):
        raise InputError('%s is %s, which is not a regular file (a device, FIFO or socket); expected a file' % (name, show(path)))
    if info.st_size > MAX_INPUT:
        raise InputError('%s is %s, which holds %d bytes; expected a file of at most %d MiB' % (name, show(path), info.st_size, MAX_INPUT >> 20))
    if not os.access(path, os.R_OK):
        raise InputError('%s is %s, which this user may not read; expected a readable file' % (name, show(path)))


def read_text(name, path, what):
    """The text of a checked input file; ``InputError`` naming the option and the file for unreadable or binary content."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(MAX_INPUT + 1)
    except (IOError, OSError) as exc:
        raise InputError('%s is %s, which cannot be read (%s); expected a readable file' % (name, show(path), exc.strerror or exc))
    if data.startswith(b'\x7fELF') or b'\x00' in data:
        raise InputError('%s is %s, which is a binary file%s, not text; expected %s'
                         % (name, show(path), ' (a program)' if data.startswith(b'\x7fELF') else '', what))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise InputError('%s is %s, which is not UTF-8 text (byte 0x%02x at offset %d); expected %s'
                         % (name, show(path), bytearray(data[exc.start:exc.start + 1])[0], exc.start, what))


def check_nodes(nodes):
    nodes = require_list('nodes', nodes, min_items=1)
    for index, name in enumerate(nodes):
        if not is_node_name(name):
            raise InputError('nodes[%d] is %s, expected %s' % (index, show(name), NODE_NAME_RULE))
    return nodes


def check_options(params):
    """Every option checked before anything is read or written; ``InputError`` names the option, the value and what is valid."""
    state, plugin = params['state'], params['plugin']
    check_dest(params['dest'], state)
    mode = check_mode(params['mode'])
    if state == 'absent':
        for key in TREE_OPTIONS + BLOCK_OPTIONS:
            if _given(params, key):
                raise InputError('%s is %s, expected nothing with state=absent (it only removes the topology.conf this '
                                 'module wrote)' % (key, show(params[key])))
        if params.get('nodes'):  # the slurm role passes its (maybe empty) node list with either state
            check_nodes(params['nodes'])
        return mode
    check_nodes(params['nodes'])
    other, options = ('block', BLOCK_OPTIONS) if plugin == 'tree' else ('tree', TREE_OPTIONS)
    for key in options:
        if _given(params, key):
            raise InputError('%s is %s, expected nothing with plugin=%s (it is an option of plugin=%s)'
                             % (key, show(params[key]), plugin, other))
    if plugin == 'block':
        _check_fabric(params['fabric'])
        if params.get('block_sizes') is not None:
            try:
                parse_block_sizes(params['block_sizes'])
            except ValueError as exc:
                raise InputError(str(exc))
        return mode
    if (params.get('ibnetdiscover') is None) == (params.get('ibnetdiscover_path') is None):
        raise InputError('give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not %s'
                         % ('both' if params.get('ibnetdiscover') is not None else 'neither'))
    if params.get('ibnetdiscover') is not None:
        require_str('ibnetdiscover', params['ibnetdiscover'])
    else:
        check_input_file('ibnetdiscover_path', params['ibnetdiscover_path'])
    if params.get('node_name_map') is not None and params.get('node_name_map_path') is not None:
        raise InputError('give one of node_name_map (the text) or node_name_map_path (a file), not both')
    if params.get('node_name_map') is not None:
        require_str('node_name_map', params['node_name_map'])
    if params.get('node_name_map_path') is not None:
        check_input_file('node_name_map_path', params['node_name_map_path'])
    if params.get('name_regex') is not None and _given(params, 'name_map'):
        raise InputError('give one of name_map or name_regex, not both')
    for key, value in (params.get('name_map') or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise InputError('name_map has the key %s, expected HCA GUIDs, node descriptions or host names as keys' % show(key))
        if not is_node_name(value):
            raise InputError('name_map[%s] is %s, expected %s' % (show(key), show(value), NODE_NAME_RULE))
    if params.get('name_regex') is not None:
        _compile_regex(params['name_regex'])
    if params.get('rail_hca') is not None:
        require_match('rail_hca', params['rail_hca'], DEVICE,
                      'the device name of the rail-0 HCA as the node descriptions show it, one word such as mlx5_0 or HCA-1')
    return mode


def _compile_regex(regex):
    what = 'a regular expression with a group (named "name", or the first) for the Slurm node name'
    require_str('name_regex', regex)
    try:
        pattern = re.compile(regex)
    except (re.error, OverflowError, RecursionError) as exc:
        raise InputError('name_regex is %s, expected %s (it does not compile: %s)' % (show(regex), what, exc))
    if pattern.groups < 1:
        raise InputError('name_regex is %s, expected %s (it has no group)' % (show(regex), what))
    return pattern


def _check_fabric(fabric):
    require_dict('fabric', fabric)
    for name, info in fabric.items():
        if not is_node_name(name):
            raise InputError('fabric has the key %s, expected Slurm node names as keys (%s)' % (show(name), NODE_NAME_RULE))
        if info is None:
            continue
        where = 'fabric[%s]' % show(name)
        require_dict(where, info)
        uuid = info.get('cluster_uuid')
        if uuid is not None and not isinstance(uuid, str):
            raise InputError('%s.cluster_uuid is %s, expected the cluster UUID as a string (or null: no domain)' % (where, show(uuid)))
        if uuid and uuid.strip() and not is_clique_id(info.get('clique_id')):
            raise InputError('%s.clique_id is %s, expected a whole number from 0 to %d (nvmlGpuFabricInfo cliqueId)'
                             % (where, show(info.get('clique_id')), MAX_CLIQUE))


def plan(params):
    """``(text, lines, warnings)`` of the topology.conf to write; ``ValueError`` names what is wrong."""
    if params['plugin'] == 'tree':
        if params.get('ibnetdiscover') is not None:
            source, text = 'ibnetdiscover', params['ibnetdiscover']
        else:
            path = params['ibnetdiscover_path']
            source, text = 'ibnetdiscover_path %s' % path, read_text('ibnetdiscover_path', path, 'the output of ibnetdiscover '
                                                                     '(saved with ibnetdiscover > fabric.txt)')
        node_name_map = None
        if params.get('node_name_map') is not None:
            node_name_map = parse_node_name_map(params['node_name_map'], 'node_name_map')
        elif params.get('node_name_map_path') is not None:
            path = params['node_name_map_path']
            node_name_map = parse_node_name_map(read_text('node_name_map_path', path, 'a node name map (lines <GUID> "<name>")'),
                                                'node_name_map_path %s' % path)
        name_map = params.get('name_map') or None
        if params.get('name_regex') is not None:
            name_map = _compile_regex(params['name_regex'])
        try:
            parsed = parse_ibnetdiscover(text)
        except ValueError as exc:
            raise ValueError('%s: %s' % (source, exc))
        result = tree_topology(parsed, params['nodes'], name_map=name_map, rail_hca=params.get('rail_hca'),
                               node_name_map=node_name_map)
    else:
        fabric = dict((name, params['fabric'].get(name)) for name in params['nodes'])
        result = block_topology(fabric, params.get('block_sizes'))
    if params.get('format') == 'yaml':
        text = YAML_HEADER % params['plugin'] + topology_yaml(params['plugin'], result['lines'])
    else:
        text = HEADER % params['plugin'] + ''.join(line + '\n' for line in result['lines'])
    return text, result['lines'], result['warnings']


def read_dest(module, dest):
    """The bytes of dest now, or None when it does not exist."""
    if not os.path.lexists(dest) or not os.path.exists(dest):
        return None
    try:
        with open(dest, 'rb') as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg='dest is %s, which cannot be read (%s); expected a readable topology.conf' % (show(dest), exc.strerror or exc))


def _text(data):
    return data.decode('utf-8', 'replace') if data is not None else ''


def remove(module):
    """state=absent: the file goes when its first line is the module's header; a site's own file stays."""
    dest = module.params['dest']
    before = read_dest(module, dest)
    if before is None:
        module.exit_json(changed=False, lines=[], warnings_found=[], kept=False, dest=dest)
    if not any(before.startswith(header.split('(', 1)[0].encode()) for header in (HEADER, YAML_HEADER)):
        # a site's own file (TopologyPlugin in its slurm_conf_overrides, say): not ours to remove, nothing to say
        module.exit_json(changed=False, lines=[], warnings_found=[], kept=True, dest=dest)
    result = dict(changed=True, lines=[], warnings_found=[], kept=False, dest=dest)
    if module._diff:
        result['diff'] = dict(before=_text(before), after='', before_header=dest, after_header='%s (removed)' % dest)
    if not module.check_mode:
        try:
            os.remove(dest)
        except OSError as exc:
            module.fail_json(msg='dest %s cannot be removed: %s' % (dest, exc.strerror or exc), **dict(result, changed=False))
    module.exit_json(**result)


def write(dest, data, mode):
    """Write ``data`` to a temporary file beside ``dest`` that has ``mode`` (and dest's owner), then rename it over
    dest; the error text, or None.  The temporary file is removed whatever happens (a failed rename included).
    """
    tmp = None
    try:
        handle, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), prefix='.topology.conf.')
        with os.fdopen(handle, 'wb') as out:
            os.fchmod(out.fileno(), mode)
            if os.path.exists(dest):  # the file keeps its owner, as atomic_move keeps it
                old = os.stat(dest)
                try:
                    os.fchown(out.fileno(), old.st_uid, old.st_gid)
                except OSError:
                    pass
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.rename(tmp, dest)
        tmp = None
        return None
    except (IOError, OSError) as exc:
        return 'cannot write dest %s: %s' % (dest, exc.strerror or exc)
    finally:
        if tmp is not None and os.path.lexists(tmp):
            try:
                os.remove(tmp)
            except OSError:
                pass


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plugin=dict(type='str', choices=['tree', 'block'], default='tree'),
            format=dict(type='str', choices=['conf', 'yaml'], default='conf'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            nodes=dict(type='list', elements='str'),
            ibnetdiscover=dict(type='str'),
            ibnetdiscover_path=dict(type='path'),
            node_name_map=dict(type='str'),
            node_name_map_path=dict(type='path'),
            name_map=dict(type='dict', default={}),
            name_regex=dict(type='str'),
            rail_hca=dict(type='str'),
            fabric=dict(type='dict', default={}),
            block_sizes=dict(type='list', elements='int'),
            dest=dict(type='path', default='/etc/slurm/topology.conf'),
            mode=dict(type='raw', default='0644'),
        ),
        required_if=[('state', 'present', ('nodes',))],
        supports_check_mode=True,
    )
    try:
        mode = check_options(module.params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    if module.params['state'] == 'absent':
        remove(module)
    try:
        text, lines, warnings = plan(module.params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    dest = module.params['dest']
    before = read_dest(module, dest)
    data = text.encode('utf-8')
    changed = before != data
    result = dict(changed=changed, lines=lines, warnings_found=warnings, kept=False, dest=dest)
    if module._diff:
        result['diff'] = dict(before=_text(before), after=text, before_header=dest, after_header=dest)
    if changed and not module.check_mode:
        error = write(dest, data, mode)
        if error:
            failure = dict(result)
            failure['changed'] = False
            module.fail_json(msg=error, **failure)
        if module.selinux_enabled():
            module.set_default_selinux_context(dest, False)
    if os.path.exists(dest):
        result['changed'] = module.set_mode_if_different(dest, mode, result['changed'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
