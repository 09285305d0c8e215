#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: preflight
short_description: Check the inventory and every role's inputs on the Ansible controller before anything changes
version_added: 0.1.0
description:
  - Runs on the Ansible controller (an action plugin) and contacts no host. It is the first task of C(playbooks/site.yml),
    and each role of the collection runs it for its own inputs first (O(inventory=false), O(hosts) the host running the role).
  - Checks the shape of the inventory - exactly one host in O(controller_group), at least one in O(compute_group), every host
    of O(gpu_group) also in O(compute_group), host names Slurm accepts as node names. Among the slurm role's checks, a host
    of the inventory group C(slurm_login) (login nodes, optional) that is also the controller or a compute node is refused; a login
    node's name is no Slurm node name (any inventory host name), and it needs no GPU.
  - With O(inventory), also the play's strategy - one that lets hosts run ahead of each other (V(free), V(host_pinned),
    V(mitogen_free) ...) is refused; the collection's plays read other hosts' results of the same play and rely on
    C(any_errors_fatal).
  - For each role of O(roles) and each host of its O(roles[].groups) that is in this run (O(hosts)), takes the host's value of
    every variable of the role's C(meta/argument_specs.yml) (its inventory or extra var, else the role's C(defaults/main.yml)
    value), templates it, and has Ansible's own C(ansible.module_utils.common.arg_spec.ArgumentSpecValidator) judge it against
    the argument spec (type and Ansible's conversions, choices, elements, required, sub-options and unknown keys; each answer
    names the value's path and the value), then makes the role's own checks that need no facts on the values as Ansible
    converts them (the MIG layout is in the catalogue, the package source names its location, the database password rules,
    partition names ...).
  - Three values Ansible's validator accepts are refused, because the role reads the variable as given - a list or a
    dictionary for a string or a path, a string for a dictionary, and an unquoted YAML boolean where the choices are words
    (V(off) read as false); a required value set to null is missing.
  - The task's own options are checked first, and a bad one stops it before any role value is looked at - a role without
    groups, a group name that cannot be one, a host of O(hosts) that the inventory does not have (each would check nothing
    and pass), a role given twice.
  - Among the role's own checks - numbers in the range the role can use (ports 1 to 65535, counts and timeouts that cannot be
    negative or zero), the nodes of each partition of C(slurm_partitions) as the slurm role reads them (V(ALL), a hostlist
    that parses, node names), and with C(slurm_topology=tree) the C(slurm_topology_settings.ibnetdiscover_src) file on the Ansible
    controller (it must be there and readable; a relative path is looked up in the C(files/) directories of the play and of
    the role, as the role's file lookup does).
  - With O(inventory), also what the inventory says as a whole, on the hosts of this run and the controller (whose
    C(slurm_partitions) and associations are the cluster's) - the MIG layout of each GPU node against the GPU model and
    count of the node type the inventory declares for it (C(gpucluster_node_type), its C(gpu_model) and C(gpu_count)),
    a model the GPU catalogue does not know named with the valid ones, with the MIG User Guide's profile
    tables and the mig planner's own placement search - profile names, counts that fit, GPU indices within the count, every
    GPU covered when C(mig_require_all_gpus), no MIG asked of a model without MIG (L40S ...); a model matching no table
    here, or several, leaves the profiles to the node.
  - The partitions - option keys of a C(PartitionName) line of slurm.conf (Slurm 22.05 to 26.05), node keys (C(Gres),
    C(Features) ...) and C(Nodes)/C(Default) given as options, nodes that are no compute host of the inventory,
    C(AllowAccounts)/C(AllowQos)/C(QOS) naming accounts or QOS the associations do not define, C(validate_jobs.partition) naming
    no partition; a compute node in no partition is a warning, not a failure.
  - A C(Gres) of C(slurm_node_params) against what the declared GPUs and the MIG layout yield.
  - The associations (C(slurmdbd_qos), C(slurmdbd_accounts), C(slurmdbd_users)) with the value checks of
    M(gpucluster.bringup.slurm_assoc), every bad value at once, and parents, accounts and QOS that neither the inventory
    nor Slurm (C(root), C(normal)) defines.
  - The expectations of the health check and of the validation - model names no GPU of the catalogue has (an inventory
    variable C(preflight_gpu_models), a list of GPU names, adds names for GPUs the collection does not know yet), and
    counts or models on which C(validate_*) and C(slurm_healthcheck_*) disagree for the same node.
  - A value whose template reads a file on the controller that is not there (a C(lookup('file', ...)) of a munge key) is
    named with the file's path; a secret's value is still not shown.
  - A value that cannot be templated before the facts are gathered (it uses C(ansible_facts), a fact of another host or a
    variable set at run time) is left for the role and listed in RV(skipped_values).
  - All problems of all hosts make one failure, one plain line per problem naming the host(s), the variable, the bad value,
    what would be valid and the role; the same problem on several hosts is one line with a hostlist.
  - The value of a secret (an option with C(no_log), or named like a password, key, secret, token or credentials) is never
    shown, only its name.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  controller_group:
    description: Inventory group of the one slurmctld host.
    type: str
    default: slurm_controller
  compute_group:
    description: Inventory group of the slurmd hosts.
    type: str
    default: slurm_compute
  gpu_group:
    description: Inventory group of the GPU nodes; each must also be in O(compute_group).
    type: str
    default: gpu_nodes
  roles:
    description:
      - The roles to check and the inventory groups each runs on.
      - Not set, the roles of C(playbooks/site.yml) on the groups of their playbooks - C(munge) on C(slurm_controller),
        C(slurm_compute), C(slurmdbd) and C(slurm_login); C(nvml) and C(mig) on C(gpu_nodes); C(slurmdbd) on C(slurmdbd);
        C(slurm_healthcheck) on C(slurm_compute); C(slurm), C(enroot) and C(pyxis) on C(slurm_controller), C(slurm_compute) and
        C(slurm_login) (login nodes, optional - the group may be empty or absent).
    type: list
    elements: dict
    suboptions:
      name:
        description: A role of this collection (its main entry point is checked).
        type: str
        required: true
        choices: [munge, nvml, mig, slurmdbd, slurm_healthcheck, slurm, enroot, pyxis]
      groups:
        description: Inventory groups whose hosts run the role (at least one; V(all) for every host).
        type: list
        elements: str
        required: true
  hosts:
    description:
      - The hosts of this run; a role is checked on those of its groups' hosts that are in this list.
      - Each must be a host of the inventory, and the list may not be empty.
      - Not set, the hosts of the play (C(ansible_play_hosts_all)), so that C(--limit) limits the checks as it limits the run.
    type: list
    elements: str
  inventory:
    description:
      - Check the shape of the inventory (the groups above and the node names), the play's strategy, and what the inventory
        says as a whole (MIG layouts against the declared GPUs, partitions, associations, Gres, expectations; see above).
      - V(false) checks only the roles' inputs, as a role that is not about Slurm's inventory does for itself.
    type: bool
    default: true
notes:
  - The inventory checks always look at the whole groups, also under C(--limit).
  - Play variables of later plays (C(vars), C(vars_files)) are not seen; set the role variables in the inventory. For the host
    running the task, its task's variables are used (inside a role, the role's parameters and variables too).
seealso:
  - name: Role argument validation
    description: How Ansible validates a role's arguments when the role runs.
    link: https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_reuse_roles.html#role-argument-validation
'''

EXAMPLES = r'''
- name: The inventory and every role's inputs, before the first change
  gpucluster.bringup.preflight:
  run_once: true

- name: Only the slurm role, on its usual groups
  gpucluster.bringup.preflight:
    roles:
      - name: slurm
        groups: [slurm_controller, slurm_compute]
  run_once: true

- name: A role's own inputs on the host running it (the first task of each role)
  gpucluster.bringup.preflight:
    inventory: false
    roles:
      - name: munge
        groups: [all]
    hosts: ["{{ inventory_hostname }}"]
'''

RETURN = r'''
msg:
  description:
    - The failure, a count and one line per problem; or a summary when there is none.
    - For bad options of the task itself, C(the preflight task has N bad options, nothing was checked or changed:) and one line per option.
  returned: always
  type: str
  sample: |-
    the inventory has 1 problem, nothing was changed:
    gpu-[01-02]: slurm_gres_sharing is 'shards'; valid values: none, mps, shard (role gpucluster.bringup.slurm)
problems:
  description: One line per problem (inventory problems first, then per role, hosts with the same problem on one line).
  returned: always
  type: list
  elements: str
  sample: ["gpu-02: mig_layout is 'all-balancd', not a shipped layout or one of mig_layouts_custom; valid layouts: ..."]
skipped_values:
  description: The variables left for the roles because they cannot be templated before the facts are gathered.
  returned: always
  type: list
  elements: str
  sample: ["gpu-01: slurm_node_params (role gpucluster.bringup.slurm)"]
checked_values:
  description: How many host values were checked.
  returned: always
  type: int
  sample: 412
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            controller_group=dict(type='str', default='slurm_controller'),
            compute_group=dict(type='str', default='slurm_compute'),
            gpu_group=dict(type='str', default='gpu_nodes'),
            roles=dict(type='list', elements='dict', options=dict(
                name=dict(type='str', required=True, choices=['munge', 'nvml', 'mig', 'slurmdbd', 'slurm_healthcheck', 'slurm', 'enroot', 'pyxis']),
                groups=dict(type='list', elements='str', required=True),
            )),
            hosts=dict(type='list', elements='str'),
            inventory=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    module.fail_json(msg='gpucluster.bringup.preflight runs on the Ansible controller through its action plugin; '
                         'it cannot run as a module on a host')


if __name__ == '__main__':
    main()
