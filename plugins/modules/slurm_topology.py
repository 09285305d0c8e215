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
      - A node's entry may also carry C(declared), the NVLink domain its node type declares (C(gpucluster_node_type)
        C(nvlink_domain), filter C(gpucluster.bringup.node_type_nvlink_domain)); the nodes declaring one name are one
        block of that name, also where NVML reports no domain; a declaration NVML contradicts (one name over two NVML
        domains, one NVML domain under two names) fails, naming the nodes and both.
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
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, show
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._topology_input_io import (
    HEADER,
    YAML_HEADER,
    check_options,
    plan,
)


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
