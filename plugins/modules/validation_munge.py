#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_munge
short_description: Decode munge credentials made on other nodes, one record per pair
version_added: 0.1.0
description:
  - Decodes with C(unmunge) on this host each credential of O(credentials) (made with C(munge -n) on another node) and returns one
    check record per pair - stage C(node), check C(munge_cross), node C(<maker>-><decoder>), C(hosts) both nodes - that passes when the
    credential decodes (the two nodes share one munge key and their clocks agree) and fails naming both nodes and the likely cause
    (another key, clocks apart, munged not running) otherwise.
  - A credential whose maker gave none (its C(munge -n) failed) fails naming the maker, without running anything for it.
  - Reads only (a decode changes nothing); it runs in check mode too. Bad input fails the task before C(unmunge) runs.
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
  node:
    description: The node name of this host (the decoder), as the report names it.
    type: str
    required: true
  credentials:
    description:
      - The credentials to decode here, C([{node, credential, rc, error}]) - C(node) the maker, C(credential) what its C(munge -n)
        printed, C(rc) and C(error) its exit code and error output.
    type: list
    elements: dict
    default: []
  unmunge:
    description: The unmunge command or its path.
    type: str
    default: unmunge
'''

EXAMPLES = r'''
- name: Decode the neighbour's credential
  gpucluster.bringup.validation_munge:
    node: gpu-02
    credentials:
      - {node: gpu-01, credential: "{{ hostvars['gpu-01'].made.stdout }}", rc: 0}
  register: cross
'''

RETURN = r'''
records:
  description: One check record per credential, C({stage, node, check, status, reason, hosts}).
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_munge import (
    check_munge_input, cross_record, made_problem, made_record)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node=dict(type='str', required=True),
            credentials=dict(type='list', elements='dict', default=[]),
            unmunge=dict(type='str', default='unmunge'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        items = check_munge_input(params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    records = []
    for item in items:
        problem = made_problem(item)
        if problem:
            records.append(made_record(item['node'], params['node'], problem))
            continue
        try:
            rc, out, err = module.run_command([params['unmunge']], data=item['credential'].strip(), handle_exceptions=False)
        # (a missing unmunge, an odd credential: a failed record, not a crash)
        except Exception as exc:  # pylint: disable=broad-except
            rc, out, err = None, '', str(exc)
        records.append(cross_record(item['node'], params['node'], {'rc': rc, 'stdout': out, 'stderr': err}))
    module.exit_json(changed=False, records=records)


if __name__ == '__main__':
    main()
