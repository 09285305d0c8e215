# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the validate role builds nccl-tests: once per node type, not on every node (pure logic).

A node's type is the one its NCCL runs go by (``_validation_nccl.fabric_groups``): ``validate_nccl_multinode.group`` where
set, else its GPU model. The first node of each type (inventory order) builds; the type's other nodes get that build's
binaries (tasks/nccl_build.yml fetches them to the Ansible controller and copies them). What makes the binary differs
by node type, so the build settings of one type must agree: a node whose settings differ from its type's builder
would run a binary built for other settings, and is refused naming both nodes and the variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, require_bool, require_dict, require_list, require_match, require_str, show)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import FABRIC_GROUP, model_group

# (key of a node's entry, the role variable it comes from): what goes into the binary, so one value per node type
BUILD_SETTINGS = (
    ('version', 'validate_nccl_build.version'),
    ('source_checksum', 'validate_nccl_build.source_checksum'),
    ('mpi', 'validate_nccl_build.mpi'),
    ('make_args', 'validate_nccl_build.make_args'),
)
NODE_KEYS = ('host', 'model', 'fabric_group') + tuple(key for key, dummy in BUILD_SETTINGS)


def _node(index, node):
    where = 'nodes[%d]' % index
    require_dict(where, node, allowed=NODE_KEYS, required=('host',) + tuple(key for key, dummy in BUILD_SETTINGS))
    host = require_str('%s.host' % where, node['host'])
    group = node.get('fabric_group')
    if group not in (None, ''):
        node_type = require_match('validate_nccl_multinode.group of %s' % host, group, FABRIC_GROUP,
                                  'a node type name (letters, digits, "_", ".", "+", "-"; starting with a letter or digit)')
    else:
        node_type = model_group(node.get('model'))
    settings = {
        'version': require_str('validate_nccl_build.version of %s' % host, node['version']),
        'source_checksum': require_str('validate_nccl_build.source_checksum of %s' % host, node['source_checksum'], allow_empty=True,
                                       allow_none=True) or '',
        'mpi': require_bool('validate_nccl_build.mpi of %s' % host, node['mpi']),
        'make_args': [require_str('validate_nccl_build.make_args[%d] of %s' % (i, host), arg)
                      for i, arg in enumerate(require_list('validate_nccl_build.make_args of %s' % host, node['make_args']))],
    }
    return host, node_type, settings


def build_plan(nodes):
    """Which node builds nccl-tests for each node type.

    ``nodes``: one entry per GPU node that builds, in inventory order: ``{host, model, fabric_group, version,
    source_checksum, mpi, make_args}`` (``model``: the NVML name of its GPUs; ``fabric_group``: validate_nccl_multinode.group,
    empty or None for none). Returns ``{builders: [host, ...], types: {type: {builder, hosts}}, type_of: {host: type}}``;
    raises ``InputError`` for a malformed entry, a host named twice or a node type whose nodes give different build settings.
    """
    require_list('nodes', nodes)
    types, order, type_of, first = {}, [], {}, {}
    for index, node in enumerate(nodes):
        host, node_type, settings = _node(index, node)
        if host in type_of:
            raise InputError('nodes[%d].host is %s, expected each host once (it is also nodes[%d])' % (index, show(host), first[host]))
        first[host] = index
        if node_type not in types:
            types[node_type] = {'builder': host, 'hosts': [], 'settings': settings}
            order.append(node_type)
        entry = types[node_type]
        for key, variable in BUILD_SETTINGS:
            if settings[key] != entry['settings'][key]:
                raise InputError(
                    'node type %s: %s is %s on %s but %s on %s; expected one value for the nodes of one type (nccl-tests is built '
                    'once per node type, on %s, and its binaries copied to the others: set it in the group_vars of the node type, '
                    'or give the nodes different types with validate_nccl_multinode.group)'
                    % (node_type, variable, show(entry['settings'][key]), entry['builder'], show(settings[key]), host, entry['builder']))
        entry['hosts'].append(host)
        type_of[host] = node_type
    return {'builders': [types[t]['builder'] for t in order],
            'types': dict((t, {'builder': types[t]['builder'], 'hosts': types[t]['hosts']}) for t in order),
            'type_of': type_of}
