#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_node
short_description: Drain, wait for, check and resume one Slurm node around a change made to it
version_added: 0.1.0
description:
  - Runs on a host with the Slurm client commands (the controller), through the collection's one Slurm client
    (C(scontrol -o show node), C(squeue), C(scontrol update)) and its one node parser and drain tag.
  - With O(action=drained), drains the node with O(reason) unless it is drained already. A drain whose reason starts
    with O(owner) is the caller's own (this run's, or one a failed run left); any other drain (an admin's, the health
    check's) is left as it is and RV(owned) is V(false), so that the caller never resumes a node somebody else drained.
  - With O(action=noted), writes O(reason) over the caller's own drain (what failed and what to run); other drains are
    left as they are.
  - With O(action=jobs_done), waits until no job (running, suspended, completing) is on the node, at most O(timeout) seconds.
  - With O(action=registered), waits until the node's slurmd is registered again after a restart (not DOWN,
    NOT_RESPONDING, INVALID_REG, UNKNOWN ...), with O(restarted_since) until its SlurmdStartTime differs from the one
    before the restart (slurmctld keeps a node's last state until slurmd registers again), and, with O(gres), until
    it shows that Gres= (order and socket bindings ignored).
  - With O(action=resumed), resumes the node if it is drained with a reason that starts with O(owner); otherwise
    changes nothing.
  - With O(action=query), reads the node and its jobs.
  - The mig role uses it around a MIG layout change; the reasons it writes are the drain tags of C(slurm/_drain_tag.py).
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
options:
  action:
    description: What to do (see the description).
    type: str
    choices: [query, drained, noted, jobs_done, registered, resumed]
    required: true
  node:
    description: The Slurm node name (letters, digits, C(_), C(-) and C(.); no leading C(-)).
    type: str
    required: true
  reason:
    description: The drain reason (O(action=drained) and O(action=noted)); must start with O(owner).
    type: str
  owner:
    description: The start of the caller's drain reasons; only a drain whose reason starts with it is ever resumed or rewritten.
    type: str
    default: "gpucluster.bringup.mig:"
  gres:
    description: The Gres= the node must show (O(action=registered)).
    type: str
  restarted_since:
    description: The node's SlurmdStartTime before slurmd was restarted; O(action=registered) waits for a newer registration.
    type: str
  timeout:
    description: Seconds to wait (O(action=jobs_done), O(action=registered)); 0 or more.
    type: int
    default: 600
  poll:
    description: Seconds between two looks; 1 or more.
    type: int
    default: 5
'''

EXAMPLES = r'''
- name: Drain the node before its MIG layout changes
  gpucluster.bringup.slurm_node:
    action: drained
    node: gpu-01
    reason: "gpucluster.bringup.mig: applying layout all-1g"
  delegate_to: "{{ groups['slurm_controller'][0] }}"
'''

RETURN = r'''
owned:
  description: Whether the node is drained with a reason that starts with O(owner).
  returned: always
  type: bool
node:
  description: The node as Slurm shows it after the action - C(name), C(state) (the base state and its flags as a list), C(reason)
    (without its user and time; null when none), C(gres), C(slurmd_start).
  returned: when the node could be read
  type: dict
jobs:
  description: The jobs on the node (C(id), C(state), C(user), C(name)) - O(action=query), and O(action=jobs_done) when it timed out.
  returned: always
  type: list
  elements: dict
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import gres_set, is_drained, is_registered, state_text
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli, SlurmError
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import SLURM_NAME_TEXT, is_slurm_name

ACTIONS = ('query', 'drained', 'noted', 'jobs_done', 'registered', 'resumed')


class NodeFailure(Exception):
    """The action failed; ``result`` goes into the module's result."""

    def __init__(self, message, **result):
        super(NodeFailure, self).__init__(message)
        self.result = result


def view(node):
    """The parts of a node (``slurm._nodes``) the result shows."""
    return {'name': node['name'], 'state': [node['state']] + list(node['flags']), 'reason': node['reason'] or None,
            'gres': node['gres'] or None, 'slurmd_start': node['slurmd_start'] or None}


def jobs_text(jobs):
    return ', '.join('%s (%s, %s, %s)' % (j['id'], j['user'], j['name'], j['state']) for j in jobs)


class NodeManager(object):
    """One slurm_node call over the Slurm client; every failure is one ``NodeFailure``."""

    def __init__(self, client, params, sleep=time.sleep):
        self.client = client
        self.params = params
        self.sleep = sleep

    def owned(self, node):
        return bool(is_drained(node) and node['reason'] and node['reason'].startswith(self.params['owner']))

    def read(self):
        return self.client.show_node(self.name)

    def run(self):
        params = self.params
        if not is_slurm_name(params['node']):
            raise NodeFailure('node is %r, expected a Slurm node name (%s); nothing was run' % (params['node'], SLURM_NAME_TEXT))
        self.name = params['node']
        if params['action'] in ('drained', 'noted') and not (params['reason'] or '').startswith(params['owner']):
            raise NodeFailure('reason is %r, expected a reason that starts with %r (owner) so that the caller can recognise its own drain'
                              % (params['reason'], params['owner']))
        for key, least in (('timeout', 0), ('poll', 1)):
            if params[key] < least:
                raise NodeFailure('%s is %d, expected %d or more seconds' % (key, params[key], least))
        try:
            return self.act()
        except SlurmError as exc:
            raise NodeFailure(str(exc))

    def act(self):
        params, action = self.params, self.params['action']
        node = self.read()
        result = {'changed': False, 'owned': self.owned(node), 'jobs': []}
        deadline = self.client.clock() + params['timeout']
        if action == 'drained' and not is_drained(node) or action == 'noted' and result['owned'] and node['reason'] != params['reason']:
            self.update('State=DRAIN', 'Reason=%s' % params['reason'])
            node = self.read()
            result.update(changed=True, owned=self.owned(node))
        elif action == 'resumed' and result['owned']:
            self.update('State=RESUME')
            node = self.read()
            result['changed'] = True
        elif action == 'jobs_done':
            jobs = self.client.jobs_on(self.name)
            while jobs and self.client.clock() < deadline:
                self.sleep(params['poll'])
                jobs = self.client.jobs_on(self.name)
            if jobs:
                raise NodeFailure('Slurm node %s still runs %d job(s) after %d s (mig_slurm_wait.drain_timeout): %s; the MIG layout was not changed'
                                  % (self.name, len(jobs), params['timeout'], jobs_text(jobs)), node=view(node), jobs=jobs, owned=result['owned'])
        elif action == 'registered':
            node = self.registered(node, deadline, result['owned'])
        elif action == 'query':
            result['jobs'] = self.client.jobs_on(self.name)
        result['node'] = view(node)
        return result

    def update(self, *settings):
        error = self.client.update_nodes(self.name, *settings)
        if error:
            raise NodeFailure('scontrol update NodeName=%s %s failed: %s' % (self.name, ' '.join(settings), error))

    def registered(self, node, deadline, owned):
        params = self.params
        wanted = gres_set(params['gres']) if params['gres'] is not None else None
        since = params['restarted_since']

        def done(node):
            return (is_registered(node) and (wanted is None or gres_set(node['gres']) == wanted)
                    and (since is None or node['slurmd_start'] != since))
        while self.client.clock() < deadline and not done(node):
            self.sleep(params['poll'])
            node = self.read()
        if since is not None and node['slurmd_start'] == since:
            raise NodeFailure('slurmd on Slurm node %s was restarted but has not registered again within %d s (SlurmdStartTime=%s): '
                              'look at its slurmd.log' % (self.name, params['timeout'], since), node=view(node), owned=owned)
        if not is_registered(node):
            raise NodeFailure('Slurm node %s did not register within %d s: state %s, reason %r' % (
                self.name, params['timeout'], state_text(node), node['reason'] or None), node=view(node), owned=owned)
        if wanted is not None and gres_set(node['gres']) != wanted:
            raise NodeFailure('Slurm node %s shows Gres=%s after %d s, expected %s' % (self.name, node['gres'] or None, params['timeout'], params['gres']),
                              node=view(node), owned=owned)
        return node


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type='str', choices=list(ACTIONS), required=True),
            node=dict(type='str', required=True),
            reason=dict(type='str'),
            owner=dict(type='str', default='gpucluster.bringup.mig:'),
            gres=dict(type='str'),
            restarted_since=dict(type='str'),
            timeout=dict(type='int', default=600),
            poll=dict(type='int', default=5),
        ),
        supports_check_mode=False,
    )
    try:
        result = NodeManager(SlurmCli.for_module(module), module.params).run()
    except NodeFailure as exc:
        result = dict(exc.result)
        result.setdefault('changed', False)
        result.setdefault('jobs', [])
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
