#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: health_deep
short_description: Run the deep tier of the GPU health check as Slurm jobs in a maintenance reservation
version_added: 0.1.0
description:
  - Picks the GPU nodes that are idle, or drained by the GPU health check (C(<prefix>:<tier>:<check>:) reasons; with
    O(include_drained=all) any drained node), puts them in a maintenance reservation (C(Flags=MAINT,IGNORE_JOBS),
    C(Users=root)) so that no user job starts there, resumes the drained ones into it, and runs on each, as one Slurm job
    with every GPU of the node, C(gpucluster-healthcheck --tier deep) (role C(gpucluster.bringup.slurm_healthcheck)) -
    C(dcgmi diag -r N), the single-node C(all_reduce_perf), C(nvbandwidth) and C(ib_write_bw) between the node's
    InfiniBand HCAs, each where installed.
  - A node with a failed check is drained with the reason C(<prefix>:deep:<check>) followed by the detail (a node drained
    by someone else gets its own reason back); a node the deep tier had drained that passes every check now stays resumed; a node drained by
    another tier of the check, or by an admin, gets its drain back whatever the result; a node drained by something else
    while it was tested is left as it is. The other tiers never resume a deep tier drain.
  - Busy nodes (jobs running or completing), down or not responding nodes and nodes already in a reservation are not
    tested; each is reported with why.
  - With O(batch_size), the nodes are tested in groups, one reservation per group, so that a large fleet is never out of
    service all at once.
  - Runs on a host with the Slurm client commands and rights to create reservations and update nodes (the controller).
  - Bad input (an unknown deep tier setting, a reservation name Slurm would not take, a time limit below 1) fails the task
    before any command runs; a reservation of the same name that exists already fails it before anything changes.
author:
  - gpucluster.bringup maintainers (@gpucluster-bringup)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Lists the nodes it would test and why the others are not; creates no reservation and runs no job.
  diff_mode:
    support: none
options:
  names:
    description: Test only these nodes (Slurm node names); default every node whose C(Gres) has GPUs.
    type: list
    elements: str
    default: []
  include_drained:
    description:
      - V(ours) tests idle nodes and nodes drained by the GPU health check; V(all) also nodes drained for any other
        reason (their drain is put back afterwards, whatever the result); V(none) idle nodes only.
    type: str
    choices: [ours, all, none]
    default: ours
  reservation:
    description: Name of the maintenance reservation (letters, digits, C(_), C(-), C(.)).
    type: str
    default: gpucluster-deep-health
  time_limit:
    description: Minutes each node's job may take (C(srun --time)); the reservation lasts this plus 10 minutes.
    type: int
    default: 60
  batch_size:
    description: Nodes tested at once (one reservation per batch, at most 100000); V(0) tests all selected nodes together.
    type: int
    default: 0
  resume_after_passes:
    description:
      - A node the deep tier drained is resumed once it passed every deep check in this many deep runs in a row (the node
        program counts them); until then its drain is put back after each run.
    type: int
    default: 1
  program:
    description:
      - Absolute path of C(gpucluster-healthcheck) on the nodes (srun's program; no spaces, not under C(/proc), C(/sys) or C(/dev)).
      - Where the path exists on the host the module runs on too, it must be an executable file there.
    type: path
    default: /usr/local/sbin/gpucluster-healthcheck
  prefix:
    description: The health check's drain reason prefix (C(slurm_healthcheck_reason_prefix)).
    type: str
    default: gpuhc
  settings:
    description:
      - The deep tier's settings as the node program takes them (C(--deep-config)); keys C(checks) (of V(dcgm), V(nccl),
        V(nvbandwidth), V(ib-bw)), C(dcgmi), C(dcgm_level) (1-4), C(dcgm_timeout), C(all_reduce_perf), C(nccl_args),
        C(nccl_env), C(nccl_topology), C(nccl_min_busbw_gbps), C(nccl_thresholds), C(nccl_timeout), C(nvbandwidth),
        C(nvbandwidth_testcases), C(nvbandwidth_timeout), C(pcie_min_fraction), C(peer_min_fraction), C(ib_write_bw),
        C(ib_sysfs_root), C(ib_min_fraction), C(ib_duration), C(ib_tcp_port), C(ib_timeout). See the role README of
        C(gpucluster.bringup.slurm_healthcheck).
      - Timeouts and C(ib_duration) are seconds above 0 and at most 86400; paths are absolute. C(nccl_args) are
        C(all_reduce_perf)'s own options and are passed to it as given.
    type: dict
    default: {}
'''

EXAMPLES = r'''
- name: Deep health check of the idle and health-drained GPU nodes, 16 at a time
  gpucluster.bringup.health_deep:
    batch_size: 16
    settings:
      dcgm_level: 3
  register: deep
'''

RETURN = r'''
nodes:
  description: Per tested node, C(name), C(action) (V(drain), V(restore), V(resume), V(none)), C(reason), C(message) and the node's C(report).
  returned: always
  type: list
  elements: dict
skipped:
  description: Node name -> why it was not tested.
  returned: always
  type: dict
drained:
  description: Nodes drained by this run (a deep check failed).
  returned: always
  type: list
  elements: str
no_verdict:
  description: >-
    Tested nodes whose job printed no report (it could not start, timed out or crashed): each is put back as it was, and
    the validate role's deep playbook fails naming them, since they were not tested.
  returned: always
  type: list
  elements: str
resumed:
  description: Nodes the deep tier had drained that pass every check now and stay in service.
  returned: always
  type: list
  elements: str
records:
  description: Check records (stage V(deep)), one per check and node and one per node not tested, for C(validation_report).
  returned: always
  type: list
  elements: dict
'''

import threading

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli, SlurmError
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._deep_controller import (
    DeepFailure, batches, check_deep_input, node_extras, reservation_minutes, select, settle, skipped_records, srun_argv)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import record
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import reservation_argv
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError


class DeepManager(object):
    """One health_deep call. Every failure is one ``DeepFailure``; nothing runs before the input is checked."""

    def __init__(self, client, params, check_mode=False):
        self.client = client
        self.params = params
        self.check_mode = check_mode

    def run(self):
        try:
            self.settings = check_deep_input(self.params)
            return self._run()
        except (InputError, SlurmError) as exc:
            # bad input, Slurm failing or printing what no parser reads, or (never expected) a name from Slurm that is not
            # one to put on a command line
            raise DeepFailure(str(exc))

    def _run(self):
        nodes, extras = self.show_nodes()
        candidates, skipped = select(nodes, extras, self.params['names'], self.params['include_drained'], self.params['prefix'])
        result = dict(changed=False, nodes=[], skipped=skipped, drained=[], resumed=[], no_verdict=[], records=skipped_records(skipped))
        if self.check_mode or not candidates:
            result['nodes'] = [{'name': c['name'], 'action': 'test', 'reason': c['reason'] or None,
                                'message': 'would be tested (check mode)' if self.check_mode else '', 'records': [], 'report': None}
                               for c in candidates]
            return result
        self.refuse_existing_reservation()
        for batch in batches(candidates, self.params['batch_size']):
            for outcome in self.run_batch(batch):
                result['nodes'].append(outcome)
                result['records'].extend(outcome['records'])
                if outcome['action'] == 'drain':
                    result['drained'].append(outcome['name'])
                elif outcome['action'] == 'resume':
                    result['resumed'].append(outcome['name'])
                if not outcome.get('verdict', True):
                    result['no_verdict'].append(outcome['name'])
                if outcome['action'] in ('drain', 'resume') or outcome.get('resumed_for_test'):
                    result['changed'] = True
        return result

    def show_nodes(self, names=None):
        nodes = self.client.show_nodes(names or ())
        return nodes, node_extras(nodes)

    def refuse_existing_reservation(self):
        name = self.params['reservation']
        if self.client.reservation_exists(name):
            raise DeepFailure('the reservation %s exists already: a deep run is going on, or one ended without removing it '
                              '(scontrol delete ReservationName=%s); nothing was changed' % (name, name))

    def update(self, name, *settings):
        return self.client.update_nodes(name, *settings)

    def run_batch(self, batch):
        """Reserve the batch, resume its drained nodes into the reservation, run the jobs, settle each node, end the reservation."""
        names = [c['name'] for c in batch]
        reservation = self.params['reservation']
        rc, out, err = self.client.scontrol(*reservation_argv('scontrol', reservation, names, reservation_minutes(self.params['time_limit']))[1:])
        if rc != 0:
            raise DeepFailure('could not create the maintenance reservation %s on %s: %s' % (reservation, ','.join(names), (err or out).strip()))
        outcomes, pending = [], dict((c['name'], c) for c in batch)
        try:
            nodes, _extras = self.show_nodes(names)
            testing = []
            for candidate in batch:
                node = nodes.get(candidate['name'])
                # a job that started between the listing and the reservation: the node is busy now
                if node is None or node['state'] in ('ALLOCATED', 'MIXED', 'COMPLETING'):
                    outcomes.append(self.not_tested(candidate, 'a job started on it before the reservation held it'))
                    del pending[candidate['name']]
                    continue
                if candidate['drained']:
                    error = self.update(candidate['name'], 'State=RESUME')
                    if error:
                        outcomes.append(self.not_tested(candidate, 'could not resume it into the reservation: %s' % error))
                        del pending[candidate['name']]
                        continue
                    candidate['resumed_for_test'] = True
                testing.append(candidate)
            jobs = self.run_jobs(testing)
            after, _extras = self.show_nodes([c['name'] for c in testing]) if testing else ({}, {})
            for candidate in testing:
                outcome = settle(candidate, jobs[candidate['name']], after.get(candidate['name']),
                                 resume_after=self.params['resume_after_passes'])
                outcome['resumed_for_test'] = candidate.get('resumed_for_test', False)
                self.carry_out(outcome)
                del pending[candidate['name']]
                outcomes.append(outcome)
        finally:
            # whatever happened: the drains lifted for the test are put back, the reservation ends
            for candidate in pending.values():
                if candidate.get('resumed_for_test'):
                    self.update(candidate['name'], 'State=DRAIN', 'Reason=%s' % candidate['reason'])
            self.client.delete_reservation(reservation)
        return outcomes

    def not_tested(self, candidate, why):
        return {'name': candidate['name'], 'action': 'none', 'reason': None, 'message': why, 'report': None,
                'records': [record('deep', candidate['name'], 'deep_job', 'skip', why)]}

    def run_jobs(self, testing):
        """Node name -> job result; every node's job at once."""
        results = {}
        timeout = self.params['time_limit'] * 60 + 180
        srun = self.client.path('srun')

        def one(candidate):
            try:
                argv = srun_argv(candidate, self.params['reservation'], self.params['program'], self.settings, self.params['time_limit'], srun)
                results[candidate['name']] = self.client.job(argv, timeout)
            except Exception as exc:  # pylint: disable=broad-except
                # a job that cannot even start gives no verdict: the node is put back as it was
                results[candidate['name']] = {'rc': 127, 'stdout': '', 'stderr': 'cannot run srun: %s' % exc, 'timed_out': False, 'timeout': timeout}

        threads = [threading.Thread(target=one, args=(c,)) for c in testing]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def carry_out(self, outcome):
        if outcome['action'] in ('drain', 'restore'):
            error = self.update(outcome['name'], 'State=DRAIN', 'Reason=%s' % outcome['reason'])
            if error:
                outcome['message'] += '; scontrol update failed: %s' % error
                outcome['records'].append(record('deep', outcome['name'], 'deep_job', 'fail', 'could not drain it: %s' % error))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            names=dict(type='list', elements='str', default=[]),
            include_drained=dict(type='str', choices=['ours', 'all', 'none'], default='ours'),
            reservation=dict(type='str', default='gpucluster-deep-health'),
            time_limit=dict(type='int', default=60),
            batch_size=dict(type='int', default=0),
            resume_after_passes=dict(type='int', default=1, no_log=False),
            program=dict(type='path', default='/usr/local/sbin/gpucluster-healthcheck'),
            prefix=dict(type='str', default='gpuhc'),
            settings=dict(type='dict', default={}),
        ),
        supports_check_mode=True,
    )
    try:
        result = DeepManager(SlurmCli.for_module(module), module.params, check_mode=module.check_mode).run()
    except DeepFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
