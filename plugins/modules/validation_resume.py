#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_resume
short_description: List drained or down Slurm nodes with their cause, and resume the ones whose checks pass
version_added: 0.1.0
description:
  - With O(action=query), lists the nodes that are drained, down or not responding (C(scontrol -o show node)) with
    their reason.
  - With O(action=resume), takes the node checks (C(gpucluster.bringup.node_check) results) of those nodes, finds the
    cause of each drain (for C(Prolog error), the failing hook from the hook runner's log the checks returned),
    resumes only the nodes whose checks pass, and proves each with a probe job inside a maintenance reservation (so
    no user job lands on the node first). A node whose probe fails (the hook still fails and the runner drains it
    again) is reported with the cause.
  - Runs on a host with the Slurm client commands and rights to update nodes (the controller).
  - Bad input (a malformed O(checks) entry, a O(probe_timeout) below 1, a reservation name Slurm would not take) fails the task
    before any command runs.
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
  action:
    description: V(query) lists problem nodes; V(resume) decides and resumes.
    type: str
    choices: [query, resume]
    default: query
  names:
    description: Consider only these nodes (default all); Slurm node names.
    type: list
    elements: str
    default: []
  checks:
    description:
      - Per node name, the registered C(node_check) result (C(records), C(hook_log)). A problem node without an entry
        is not resumed. Each entry must be a dict; C(records) a list of check records (C(check), C(status) of V(pass),
        V(fail) or V(skip), C(reason)); C(hook_log) a string. Other keys of a registered result are ignored.
    type: dict
    default: {}
  resume_admin_drains:
    description: Also resume nodes drained by hand for a reason this module does not recognise, when their checks pass.
    type: bool
    default: false
  probe:
    description: Run a probe job on each resumed node; a node whose probe fails is reported as still failing.
    type: bool
    default: true
  probe_timeout:
    description: Seconds a probe job may take (1 to 86400).
    type: int
    default: 120
  reservation:
    description:
      - Name of the maintenance reservation the probes run in; empty runs the probes without one. Letters, digits, C(_), C(-)
        and C(.), starting with a letter or digit (no spaces, commas or C(=)).
    type: str
    default: gpucluster-resume
'''

EXAMPLES = r'''
- name: Drained and down nodes
  gpucluster.bringup.validation_resume:
    action: query
  register: problems
'''

RETURN = r'''
nodes:
  description: Problem nodes (name, state, flags, reason, reason_user, problem), with C(diagnosis) ({cause, hook, detail}) for V(resume).
  returned: always
  type: list
  elements: dict
resumed:
  description: Nodes resumed and (with O(probe)) proven by a probe job.
  returned: always
  type: list
  elements: str
kept:
  description: Per node not resumed (or drained again by its probe), why.
  returned: always
  type: dict
records:
  description: One check record per problem node (stage V(resume)) for C(validation_report).
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validation_checks import parse_scontrol_nodes, record
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils._validation_resume import (
    check_resume_input, decide, diagnose, probe_outcome, problem_nodes)


def show_nodes(module, scontrol):
    rc, out, err = module.run_command([scontrol, '-o', 'show', 'node'])
    if rc != 0:
        module.fail_json(msg='scontrol -o show node failed (rc %d): %s' % (rc, (err or out).strip()))
    try:
        return parse_scontrol_nodes(out)
    except ValueError as exc:
        module.fail_json(msg=str(exc))


def probe(module, argv, timeout):
    rc, out, err = module.run_command(['timeout', '--kill-after=10', str(timeout)] + argv)
    if rc in (124, 137):
        err = (err + ' probe timed out after %ds' % timeout).strip()
    return {'rc': rc, 'stdout': out, 'stderr': err}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type='str', choices=['query', 'resume'], default='query'),
            names=dict(type='list', elements='str', default=[]),
            checks=dict(type='dict', default={}),
            resume_admin_drains=dict(type='bool', default=False),
            probe=dict(type='bool', default=True),
            probe_timeout=dict(type='int', default=120),
            reservation=dict(type='str', default='gpucluster-resume'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        check_resume_input(params)
    except InputError as exc:
        module.fail_json(msg=str(exc))
    # everything is checked: from here on commands run
    scontrol = module.get_bin_path('scontrol', required=True)
    nodes = show_nodes(module, scontrol)
    unknown = [name for name in params['names'] if name not in nodes]
    if unknown:
        module.fail_json(msg='Slurm knows no node(s) %s; its nodes are: %s' % (', '.join(unknown), ', '.join(sorted(nodes))))
    problems = problem_nodes(nodes, params['names'])
    if params['action'] == 'query':
        module.exit_json(changed=False, nodes=problems, resumed=[], kept={}, records=[])

    to_resume, kept = [], {}
    for node in problems:
        result = params['checks'].get(node['name'])
        node['diagnosis'] = diagnose(node, (result or {}).get('hook_log'))
        decision = decide(node, node['diagnosis'], (result or {}).get('records'), params['resume_admin_drains'])
        if decision['action'] == 'resume':
            to_resume.append(node['name'])
            node['decision'] = decision['reason']
        else:
            kept[node['name']] = decision['reason']
    resumed = []
    if to_resume and module.check_mode:
        resumed = list(to_resume)
    elif to_resume:
        reservation = params['reservation'] if params['probe'] else ''
        if reservation:
            rc, out, err = module.run_command([scontrol, 'create', 'reservation', 'ReservationName=%s' % reservation,
                                               'Nodes=%s' % ','.join(to_resume), 'StartTime=now', 'Duration=30', 'Users=root',
                                               'Flags=MAINT,IGNORE_JOBS'])
            if rc != 0:
                module.warn('could not create the maintenance reservation %s (%s); probing without it' % (reservation, (err or out).strip()))
                reservation = ''
        try:
            for name in to_resume:
                rc, out, err = module.run_command([scontrol, 'update', 'NodeName=%s' % name, 'State=RESUME'])
                if rc != 0:
                    kept[name] = 'scontrol update NodeName=%s State=RESUME failed: %s' % (name, (err or out).strip())
                    continue
                if not params['probe']:
                    resumed.append(name)
                    continue
                argv = ['srun', '--nodes=1', '--nodelist=%s' % name, '--time=2', '--job-name=gpucluster-resume-probe']
                if reservation:
                    argv.append('--reservation=%s' % reservation)
                outcome = probe_outcome(name, probe(module, argv + ['true'], params['probe_timeout']), show_nodes(module, scontrol).get(name))
                if outcome['ok']:
                    resumed.append(name)
                else:
                    kept[name] = outcome['reason']
        finally:
            if reservation:
                module.run_command([scontrol, 'delete', 'ReservationName=%s' % reservation])
    records = []
    for node in problems:
        name = node['name']
        if name in resumed:
            records.append(record('resume', name, 'resume', 'pass', '%s (was %s)' % (node.get('decision'), node['problem'])))
        else:
            records.append(record('resume', name, 'resume', 'fail', kept.get(name, 'not resumed')))
    module.exit_json(changed=bool(resumed), nodes=problems, resumed=resumed, kept=kept, records=records)


if __name__ == '__main__':
    main()
