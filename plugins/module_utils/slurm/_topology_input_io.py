# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_topology's options checked and its input files read (I/O: it stats and reads the files the options name).

``check_options(params)`` checks every option before anything is read or written (``InputError``);
``plan(params)`` reads the inputs and gives the text of topology.conf (the topology itself is _topology's).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import stat

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
