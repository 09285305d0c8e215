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
    their reason, who set it (the collection's own tag, Slurm's own reason, or an admin's free text) and whether
    slurmd may be started there (down or not responding, and not an admin's; see O(resume_admin_drains)).
  - With O(action=wait), waits (up to O(wait_timeout) seconds) until slurmctld hears from the slurmd of each node of
    O(names) (the ones resume.yml started) and says per node what happened (C(slurmd started on gpu-02; node idle after 6 s)).
  - With O(action=resume), takes the node checks (C(gpucluster.bringup.node_check) results) of those nodes, finds the
    cause of each drain (for C(Prolog error), the failing hook from the hook runner's log the checks returned),
    resumes only the nodes whose checks pass, and proves each with a probe job inside a maintenance reservation (so
    no user job lands on the node first). A node whose probe fails (the hook still fails and the runner drains it
    again) is reported with the cause.
  - An admin's down or drain (a reason that is neither one of the collection's tags nor one of Slurm's own reasons such as
    C(Not responding) or C(Kill task failed)) is never resumed, whatever its checks say, unless O(resume_admin_drains).
  - The nodes are resumed with one C(scontrol update) (node by node only when that fails) and probed 64 at a time, so
    resuming hundreds of nodes takes a few rounds of probe jobs, not one job after another.
  - With O(dispatch) V(allocation) (V(auto) from O(dispatch_min_nodes) probes on), the probes are steps of one allocation per node
    type (partitions and GRES; C(salloc --no-shell --immediate --no-kill) in the reservation), not one job each, as the validation's
    NCCL stage runs its per-node runs. A node that held a job (allocated or mixed) before it was resumed, a node alone of its type,
    and the nodes of an allocation not granted within O(allocation_wait) seconds (after one more try with the nodes C(sinfo) lists
    idle) are probed with jobs of their own. A step that fails on a node that is not drained or down after it is probed again with
    the node's own job, and judged on that; a node drained again is judged on its step. The allocations are cancelled after the probes.
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
    description: V(query) lists problem nodes; V(wait) waits for the slurmds started on O(names); V(resume) decides and resumes.
    type: str
    choices: [query, wait, resume]
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
    description:
      - Also resume nodes drained or downed by hand (a reason this module does not recognise), when their checks pass,
        and (V(query)) allow slurmd to be started on them.
    type: bool
    default: false
  prefix:
    description: The health check's drain reason prefix (C(slurm_healthcheck_reason_prefix)), so that its tags count as the collection's.
    type: str
    default: gpuhc
  started:
    description:
      - V(resume) only. Per node name, what starting its slurmd did (the V(wait) result's C(started)); each becomes a record of
        the report, so it names the node even when the node came back by itself.
    type: dict
    default: {}
  wait_timeout:
    description: V(wait) only. Seconds to wait for slurmctld to hear from the started slurmds (1 to 3600).
    type: int
    default: 60
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
  dispatch:
    description:
      - How the probes reach Slurm. V(per_node) one job each; V(allocation) steps of one allocation per node type; V(auto)
        the allocation from O(dispatch_min_nodes) probes on.
    type: str
    choices: [auto, per_node, allocation]
    default: auto
  dispatch_min_nodes:
    description: With O(dispatch=auto), the number of probes (at least 1) from which they go as steps of allocations.
    type: int
    default: 64
  allocation_wait:
    description: Seconds (1 to 3600) an allocation of the probes may wait for its nodes (C(salloc --immediate)).
    type: int
    default: 60
'''

EXAMPLES = r'''
- name: Drained and down nodes
  gpucluster.bringup.validation_resume:
    action: query
  register: problems
'''

RETURN = r'''
nodes:
  description:
    - Problem nodes (name, state, flags, reason, reason_user, problem), with C(owner) (V(ours), V(slurm) or V(admin)),
      C(start_slurmd) (bool), C(start_why) and C(line) (one line naming the node), and C(diagnosis) ({cause, hook, detail}) for V(resume).
  returned: always
  type: list
  elements: dict
lines:
  description: One line per problem node naming it, its state and reason, who set it and whether slurmd may be started.
  returned: always
  type: list
  elements: str
started:
  description: Per node of O(names) (V(wait)) or of O(started) (V(resume)), what starting its slurmd did.
  returned: always
  type: dict
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
allocations:
  description:
    - The allocations the probes were steps of (O(dispatch)), C([{name, nodes, job_id, seconds, refused}]); C(refused) is
      salloc's last message when one was not granted. Empty when every probe was a job of its own.
  returned: always
  type: list
  elements: dict
'''

import threading
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli, SlurmError
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._job_dispatch import dispatch_settings, probe_plan, rerun_probe
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import node_problem
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_jobs import (
    idle_nodes, request_allocation, split_idle, use_own_jobs)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import narrowed
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import (
    ResumeFailure, check_resume_input, plan_resume, probe_argv, probe_outcome, probe_result, problem_nodes, reservation_argv, resume_argv, resume_records,
    started_text)


# Probe jobs at once. One at a time made resuming 64 nodes take 196 s on the emulated cluster (docs/scale.md):
# each probe is a job start and end (about 3 s), and each was followed by a listing of every node.
PROBE_PARALLEL = 64
# Seconds between two looks at the started slurmds (action wait).
WAIT_POLL = 2


class ResumeManager(object):
    """One validation_resume call: check the input, list the problem nodes, decide, resume and probe, report.

    Every failure is one ``ResumeFailure``; nothing runs before the input is checked.
    """

    def __init__(self, client, params, check_mode=False, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.params = params
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep
        self.before = {}
        self.allocations = []

    def run(self):
        """The module's result; raises ``ResumeFailure``."""
        try:
            check_resume_input(self.params)
            # everything is checked: from here on commands run
            return self._run()
        except InputError as exc:
            # bad input, or (never expected) a node name from Slurm that is not one to put on a command line
            raise ResumeFailure(str(exc))

    def _run(self):
        problems = self.problems()
        lines = [node['line'] for node in problems]
        self.allocations = []
        if self.params['action'] == 'query':
            return dict(changed=False, nodes=problems, lines=lines, started={}, resumed=[], kept={}, records=[], allocations=[])
        if self.params['action'] == 'wait':
            return dict(changed=False, nodes=problems, lines=lines, started=self.wait(), resumed=[], kept={}, records=[], allocations=[])
        to_resume, kept = plan_resume(problems, self.params['checks'], self.params.get('resume_admin_drains', False), self.params.get('prefix', 'gpuhc'))
        resumed = self.resume(to_resume, kept)
        started = self.params.get('started') or {}
        return dict(changed=bool(resumed), nodes=problems, lines=lines, started=started, resumed=resumed, kept=kept,
                    records=resume_records(problems, resumed, kept, started), allocations=self.allocations)

    def wait(self):
        """Until slurmctld hears from every node of ``names`` (no NOT_RESPONDING flag) or ``wait_timeout``: name -> what it did."""
        names = list(self.params['names'])
        start = self.clock()
        nodes = self.show_nodes()
        while not self.check_mode and any('NOT_RESPONDING' in nodes[name]['flags'] for name in names if name in nodes) \
                and self.clock() - start < self.params.get('wait_timeout', 60):
            self.sleep(WAIT_POLL)
            nodes = self.show_nodes()
        seconds = int(round(self.clock() - start))
        return dict((name, started_text(name, nodes.get(name), seconds, self.check_mode)) for name in names)

    def show_nodes(self):
        """Node name -> node of ``scontrol -o show node``."""
        try:
            return self.client.show_nodes()
        except SlurmError as exc:
            raise ResumeFailure(str(exc))

    def problems(self):
        """The drained, down or not responding nodes (of ``names``, default all)."""
        nodes = self.show_nodes()
        self.before = nodes  # (their states before resuming: a busy node's probe is a job of its own)
        unknown = [name for name in self.params['names'] if name not in nodes]
        if unknown:
            raise ResumeFailure('Slurm knows no node(s) %s; its nodes are: %s' % (', '.join(unknown), ', '.join(sorted(nodes))))
        return problem_nodes(nodes, self.params['names'], self.params.get('resume_admin_drains', False), self.params.get('prefix', 'gpuhc'))

    def resume(self, to_resume, kept):
        """Resume ``to_resume`` (probing each inside a maintenance reservation); the names resumed. ``kept`` gets why not."""
        if not to_resume or self.check_mode:
            return list(to_resume)
        reservation = self.reserve(to_resume)
        try:
            lifted = self.lift(to_resume, kept)
            if not self.params['probe'] or not lifted:
                return lifted
            probes, jobs = self.probe_all(lifted, reservation)
            nodes = self.show_nodes()
            # a failed step on a node that is not drained or down after it: judged on a job of its own, as before
            again = [job for job in jobs if rerun_probe(job, probes[job['name']], node_problem(nodes[job['name']]) if job['name'] in nodes else None)]
            if again:
                for job in again:
                    job['argv'] = job['own_argv']
                self.run_probes(again, probes)
                nodes = self.show_nodes()
            resumed = []
            for name in lifted:
                outcome = probe_outcome(name, probes[name], nodes.get(name))
                if outcome['ok']:
                    resumed.append(name)
                else:
                    kept[name] = outcome['reason']
            return resumed
        finally:
            if reservation:
                self.client.delete_reservation(reservation)

    def lift(self, names, kept):
        """``State=RESUME`` for ``names`` in one scontrol call (a hostlist); node by node when that call fails, so
        that ``kept`` names the node Slurm refuses. The names lifted."""
        rc, out, err = self.client.scontrol(*resume_argv('scontrol', names)[1:])
        if rc == 0:
            return list(names)
        lifted = []
        for name in names:
            rc, out, err = self.client.scontrol(*resume_argv('scontrol', [name])[1:])
            if rc != 0:
                kept[name] = 'scontrol update NodeName=%s State=RESUME failed: %s' % (name, (err or out).strip())
            else:
                lifted.append(name)
        return lifted

    def _probe_argv(self, name, reservation):
        """The node's own probe job, in its partitions as Slurm listed them before the resume."""
        return probe_argv(name, reservation, partitions=(self.before.get(name) or {}).get('partitions') or ())

    def probe_all(self, names, reservation):
        """One probe per node: ``(results, jobs)``, node name -> the probe's result, and the probe jobs planned
        (``_job_dispatch.probe_plan``: steps of one allocation per node type from ``dispatch_min_nodes`` nodes on, else
        one job each), ``PROBE_PARALLEL`` at once; the allocations are released after."""
        results, planned = {}, []
        for name in names:
            try:
                self._probe_argv(name, reservation)
                planned.append(name)
            except InputError as exc:
                results[name] = {'rc': None, 'stdout': '', 'stderr': 'no probe: %s' % exc}
        dispatch, min_nodes, wait = dispatch_settings(self.params.get('dispatch'), self.params.get('dispatch_min_nodes'),
                                                      self.params.get('allocation_wait'))
        jobs, allocations = probe_plan(planned, self.before, reservation, lambda name: self._probe_argv(name, reservation),
                                       dispatch=dispatch, min_nodes=min_nodes, wait=wait)
        granted = []
        try:
            for allocation in allocations:
                self.allocate(allocation, [job for job in jobs if job['allocation'] is allocation], granted)
            self.run_probes(jobs, results)
        finally:
            for release, job_id in granted:
                self.client.run(list(release) + [job_id])
        return results, jobs

    def allocate(self, allocation, members, granted):
        """``salloc`` of one allocation; its jobs become its steps. Not granted: asked again for its idle nodes only
        (``sinfo -t idle``); the jobs of the nodes left out, or of an allocation not granted at all, run as jobs of their own."""
        why = self._allocate(allocation, members, granted)
        if why is None:
            return
        idle = idle_nodes(self.client.job(allocation['idle'], 60))
        free, busy = split_idle(members, idle)
        if free and busy:
            use_own_jobs(busy, '%s; not idle: %s' % (why, compress([job['name'] for job in busy])))
            members = free
            why = self._allocate(narrowed(allocation, [job['name'] for job in free]), free, granted)
        if why is not None:
            use_own_jobs(members, why)

    def _allocate(self, allocation, members, granted):
        """Ask for one allocation; None when granted (its jobs are its steps), else why not."""
        return request_allocation(self.client, allocation, members, granted, self.allocations)

    def run_probes(self, jobs, results):
        """Each job's ``argv`` (its probe), ``PROBE_PARALLEL`` at once; ``results`` gets node name -> the probe's result."""
        pending = list(reversed(jobs))
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    if not pending:
                        return
                    job = pending.pop()
                results[job['name']] = probe_result(self.client.job(job['argv'], self.params['probe_timeout']))

        threads = [threading.Thread(target=worker) for dummy in range(min(PROBE_PARALLEL, len(jobs)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def reserve(self, names):
        """The maintenance reservation the probes run in ('' without probes, or when it cannot be created)."""
        reservation = self.params['reservation'] if self.params['probe'] else ''
        if not reservation:
            return ''
        rc, out, err = self.client.scontrol(*reservation_argv('scontrol', reservation, names, 30)[1:])
        if rc != 0:
            self.client.warn('could not create the maintenance reservation %s (%s); probing without it' % (reservation, (err or out).strip()))
            return ''
        return reservation


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type='str', choices=['query', 'wait', 'resume'], default='query'),
            names=dict(type='list', elements='str', default=[]),
            checks=dict(type='dict', default={}),
            resume_admin_drains=dict(type='bool', default=False),
            probe=dict(type='bool', default=True),
            probe_timeout=dict(type='int', default=120),
            reservation=dict(type='str', default='gpucluster-resume'),
            prefix=dict(type='str', default='gpuhc'),
            started=dict(type='dict', default={}),
            wait_timeout=dict(type='int', default=60),
            dispatch=dict(type='str', choices=['auto', 'per_node', 'allocation'], default='auto'),
            dispatch_min_nodes=dict(type='int', default=64),
            allocation_wait=dict(type='int', default=60),
        ),
        supports_check_mode=True,
    )
    try:
        result = ResumeManager(SlurmCli.for_module(module), module.params, check_mode=module.check_mode).run()
    except ResumeFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
