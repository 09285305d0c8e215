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
    C(mlx5_N), or O(rail_hca)); switches with no host below them are left out.
  - With O(plugin=block), writes one C(BlockName=blockN Nodes=<hostlist>) per NVLink domain (cluster UUID and clique id
    of C(nvmlDeviceGetGpuFabricInfo), given in O(fabric)) and C(BlockSizes=) from O(block_sizes).
  - Only O(nodes) are placed; adapters that name no Slurm node and Slurm nodes the fabric does not show are warnings.
    A dump that is cut short or does not hold together, a host in two leaves, or no node found fails the task before
    anything is written; the file is never written with a silently wrong topology.
  - The file is replaced only when its content changes (changed=false otherwise); check mode and diff are supported.
    The slurm.conf side (C(TopologyPlugin=topology/tree) or C(topology/block)) and C(scontrol reconfigure) are the slurm
    role's.
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
    type: str
    choices: [present, absent]
    default: present
  plugin:
    description: V(tree) from the InfiniBand fabric, V(block) from the NVLink domains.
    type: str
    choices: [tree, block]
    default: tree
  nodes:
    description: The Slurm node names to place (for example every host of the compute group). Required with O(state=present).
    type: list
    elements: str
  ibnetdiscover:
    description: The output of C(ibnetdiscover) (for O(plugin=tree)); or give O(ibnetdiscover_path).
    type: str
  ibnetdiscover_path:
    description: A file on the host holding the output of C(ibnetdiscover).
    type: path
  name_map:
    description:
      - How an HCA's node description maps to a Slurm node name where the first word is not it. Keys are HCA GUIDs,
        whole descriptions or host names; values Slurm node names.
    type: dict
    default: {}
  name_regex:
    description: A regular expression applied to the node description; its group C(name) (or its first group) is the Slurm node name.
    type: str
  rail_hca:
    description: The HCA (for example V(mlx5_0)) whose leaf a multi-rail host belongs to; default its lowest-numbered one.
    type: str
  fabric:
    description: For O(plugin=block), per Slurm node its C(cluster_uuid) and C(clique_id).
    type: dict
    default: {}
  block_sizes:
    description: For O(plugin=block), the C(BlockSizes=) values (the first is the base block size).
    type: list
    elements: int
  dest:
    description: The topology.conf to write.
    type: path
    default: /etc/slurm/topology.conf
  mode:
    description: Its mode.
    type: str
    default: '0644'
'''

EXAMPLES = r'''
- name: Topology from a saved ibnetdiscover dump
  gpucluster.bringup.slurm_topology:
    plugin: tree
    nodes: "{{ groups['slurm_compute'] }}"
    ibnetdiscover_path: /root/fabric.txt
    rail_hca: mlx5_0

- name: Remove the topology.conf this module wrote (a site's own file stays)
  gpucluster.bringup.slurm_topology:
    state: absent
'''

RETURN = r'''
lines:
  description: The topology.conf lines (without the header comment).
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
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology import block_topology, parse_ibnetdiscover, tree_topology

HEADER = '# topology.conf written by gpucluster.bringup.slurm_topology (%s): do not edit, it is rewritten\n'


def plan(params, read_file):
    """``(text, lines, warnings)`` of the topology.conf to write; ``ValueError`` names what is wrong."""
    if params['plugin'] == 'tree':
        if bool(params.get('ibnetdiscover')) == bool(params.get('ibnetdiscover_path')):
            raise ValueError('give one of ibnetdiscover (the text) or ibnetdiscover_path (a file), not %s'
                             % ('both' if params.get('ibnetdiscover') else 'neither'))
        text = params['ibnetdiscover'] if params.get('ibnetdiscover') else read_file(params['ibnetdiscover_path'])
        name_map = params.get('name_map') or None
        if params.get('name_regex'):
            if name_map:
                raise ValueError('give one of name_map or name_regex, not both')
            try:
                name_map = re.compile(params['name_regex'])
            except re.error as exc:
                raise ValueError('name_regex %r is not a regular expression: %s' % (params['name_regex'], exc))
        result = tree_topology(parse_ibnetdiscover(text), params['nodes'], name_map=name_map, rail_hca=params.get('rail_hca'))
    else:
        fabric = dict((name, params['fabric'].get(name)) for name in params['nodes'])
        result = block_topology(fabric, params.get('block_sizes'))
    if not re.match(r'^0?[0-7]{3}$', params['mode'] or ''):
        raise ValueError('mode is %r, expected an octal file mode such as 0644' % (params['mode'],))
    text = HEADER % params['plugin'] + ''.join(line + '\n' for line in result['lines'])
    return text, result['lines'], result['warnings']


def remove(module):
    """state=absent: the file goes when its first line is the module's header; a site's own file stays."""
    dest = module.params['dest']
    try:
        with open(dest) as handle:
            before = handle.read()
    except (IOError, OSError):
        module.exit_json(changed=False, lines=[], warnings_found=[], kept=False, dest=dest)
    if not before.startswith(HEADER.split('(', 1)[0]):
        # a site's own file (TopologyPlugin in its slurm_conf_overrides, say): not ours to remove, nothing to say
        module.exit_json(changed=False, lines=[], warnings_found=[], kept=True, dest=dest)
    result = dict(changed=True, lines=[], warnings_found=[], kept=False, dest=dest)
    if module._diff:
        result['diff'] = dict(before=before, after='', before_header=dest, after_header='%s (removed)' % dest)
    if not module.check_mode:
        os.remove(dest)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            plugin=dict(type='str', choices=['tree', 'block'], default='tree'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            nodes=dict(type='list', elements='str'),
            ibnetdiscover=dict(type='str'),
            ibnetdiscover_path=dict(type='path'),
            name_map=dict(type='dict', default={}),
            name_regex=dict(type='str'),
            rail_hca=dict(type='str'),
            fabric=dict(type='dict', default={}),
            block_sizes=dict(type='list', elements='int'),
            dest=dict(type='path', default='/etc/slurm/topology.conf'),
            mode=dict(type='str', default='0644'),
        ),
        required_if=[('state', 'present', ('nodes',))],
        supports_check_mode=True,
    )
    if module.params['state'] == 'absent':
        remove(module)

    def read_file(path):
        try:
            with open(path) as handle:
                return handle.read()
        except (IOError, OSError) as exc:
            raise ValueError('cannot read ibnetdiscover_path %s: %s' % (path, exc))

    try:
        text, lines, warnings = plan(module.params, read_file)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for warning in warnings:
        module.warn(warning)
    dest = module.params['dest']
    try:
        with open(dest) as handle:
            before = handle.read()
    except (IOError, OSError):
        before = None
    changed = before != text
    result = dict(changed=changed, lines=lines, warnings_found=warnings, kept=False, dest=dest)
    if module._diff:
        result['diff'] = dict(before=before or '', after=text, before_header=dest, after_header=dest)
    if changed and not module.check_mode:
        directory = os.path.dirname(dest) or '.'
        if not os.path.isdir(directory):
            module.fail_json(msg='the directory of dest %s does not exist' % dest, **result)
        handle, tmp = tempfile.mkstemp(dir=directory, prefix='.topology.conf.')
        with os.fdopen(handle, 'w') as out:
            out.write(text)
        module.atomic_move(tmp, dest)
    if os.path.exists(dest) or (changed and not module.check_mode):
        result['changed'] = module.set_mode_if_different(dest, module.params['mode'], result['changed'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
