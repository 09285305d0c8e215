#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: validation_jobs
short_description: Run validation jobs (srun, mpirun, all_reduce_perf) at once and gate their output
version_added: 0.1.0
description:
  - Runs a list of commands, usually C(srun) jobs, on the host it runs on (a Slurm login or controller node). Jobs
    of the same O(jobs[].round) run at the same time, rounds one after the other, so per-node jobs on all nodes
    take the time of one node.
  - A job that exits non-zero without any output, or with only srun's allocation error (a controller too busy to
    answer in MessageTimeout, as 1,024 per-node sruns at once made it on the emulated cluster), is started again,
    up to 3 attempts; its result then says how many (C(attempts)).
  - With C(nccl.dispatch) V(allocation) (V(auto) from C(nccl.dispatch_min_nodes) per-node runs on, 64 by default), the
    per-node runs are steps of one allocation per node type (C(salloc --no-shell --immediate --no-kill)), not one job each, so
    that the controller allocates a few jobs instead of one per node. An allocation not granted within C(nccl.allocation_wait)
    seconds (a busy node) is asked again for the nodes C(sinfo) lists idle, and the runs of the others go as one job each, so that
    a busy node holds up only its own run. The allocations are cancelled (C(scancel)) when the round ends. The Slurm stage
    (O(slurm)) does the same with C(slurm.dispatch).
  - Each finished job is judged by its O(jobs[].kind) and turned into check records for
    C(gpucluster.bringup.validation_report); C(nccl) jobs also return their busbw-vs-size series.
  - A job that fails is a failed check, never a failed task; the module fails only on bad input, and then before any job
    (or C(srun --mpi=list)) runs - a timeout below 1, a negative round or GPU count, an unknown key in O(jobs[].expect),
    an O(jobs[].expect) on a job that is not V(nccl), an MPI path that does not exist in O(mpi_required_paths).
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
  jobs:
    description: The jobs.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The run's name in the report (a node name for per-node jobs).
        type: str
        required: true
      kind:
        description:
          - How the output is judged. V(srun) the job ran on O(jobs[].name); V(gres) it sees O(jobs[].gpus) devices;
            V(container) a pyxis job ran; V(mpi) every rank of one world reported (O(jobs[].path), O(jobs[].ranks));
            V(nccl) C(all_reduce_perf) output gated with O(jobs[].expect); V(env) the job's environment is scanned
            for settings that slow collectives (warnings only); V(skip) nothing runs, O(jobs[].reason) is reported.
        type: str
        required: true
        choices: [srun, gres, container, mpi, nccl, env, skip]
      argv:
        description:
          - The command, run as given (its options are yours on purpose). Required unless O(jobs[].kind=skip); its first
            word, the command, must not start with C(-).
        type: list
        elements: str
      env:
        description: Variables added to the command's environment.
        type: dict
        default: {}
      timeout:
        description: Seconds before the job is stopped (coreutils C(timeout) - SIGTERM, then SIGKILL 10 seconds later); 1 or more.
        type: int
        default: 300
      round:
        description: Jobs of one round run at once; rounds run in increasing order (0 or more).
        type: int
        default: 0
      hosts:
        description: The nodes a multi-node run uses (named when it fails).
        type: list
        elements: str
      gpus:
        description: GPUs the V(gres) job asked for.
        type: int
      image:
        description: Container image of a V(container) job.
        type: str
      path:
        description: MPI launch path of an V(mpi) job.
        type: str
        choices: [srun_pmi, srun_plain, mpirun, pyxis]
      label:
        description: How the launch is described in the report (V(mpi)).
        type: str
      ranks:
        description: Ranks an V(mpi) job must report.
        type: int
      expect:
        description:
          - C(_nccl.evaluate) expectation of an V(nccl) job (topology, min_busbw_gbps, thresholds, nics, large_size_bytes, top_rows,
            expect_transport, gate_curves, nodes, notes). Checked before any job runs; only V(nccl) jobs take one.
          - A topology without an explicit threshold is gated with its gate curve (message size to lowest busbw, built-in or
            from gate_curves); nodes scales a multi-node curve's sizes for runs over more than two nodes.
        type: dict
      check:
        description: Check name of an V(nccl) job's records when its output cannot be parsed.
        type: str
        default: all_reduce
      reason:
        description: Why a V(skip) job is skipped.
        type: str
      status:
        description: Status of a V(skip) job's record (V(fail) reports something missing without running anything).
        type: str
        choices: [skip, fail]
        default: skip
  nccl:
    description:
      - The NCCL stage as a plan; the module turns it into V(nccl) jobs (see C(_validation_nccl.plan_jobs)) and appends
        them to O(jobs). Keys C(binary), C(nodes) (C([{name, gpus, model}])), C(env), C(args), C(timeout),
        C(time_limit), C(node_topology), C(node_min_busbw_gbps), C(fabric), C(fabric_topology), C(fabric_nics),
        C(fabric_min_busbw_gbps), C(expect_transport), C(thresholds), C(pairwise), C(mpi), C(pairs_only), C(leaf_of),
        C(gate_curves), C(dispatch) (V(auto), V(per_node), V(allocation)), C(dispatch_min_nodes), C(allocation_wait), C(salloc),
        C(scancel), C(json), C(tests_version). Two-node runs (a fabric run of two nodes, every pair) get C(NCCL_ALGO=Ring)
        unless C(env) sets C(NCCL_ALGO).
      - C(json) V(true) runs C(all_reduce_perf) under C(sh -c) on the node with C(-J) into a directory of its own and prints
        the JSON report after the text, where the module takes it out of stdout and reads its figures; V(false) reads the
        text; unset, JSON where C(tests_version) (the nccl-tests version the role built) writes it (2.18.3 and later).
      - Node names and GRES types must be Slurm names, C(binary), C(srun), C(salloc) and C(scancel) one word not
        starting with C(-) (srun reads every word before its program as its own option). C(srun_extra) are srun
        options and C(args) C(all_reduce_perf) arguments on purpose, passed as given.
      - Per-node runs start together; the fabric run follows, then the pair rounds.
    type: dict
  slurm:
    description:
      - The Slurm stage as a plan (see C(_validation_checks.slurm_jobs)), appended to O(jobs) - C(nodes)
        (C([{name, gpus, mig, usable, busy}])), C(srun), C(partition), C(time_limit), C(timeout), C(pyxis), C(container_image), C(env),
        C(dispatch), C(dispatch_min_nodes), C(allocation_wait), C(salloc).
      - With C(dispatch) V(allocation) (or V(auto), the default, from C(dispatch_min_nodes) nodes on, 64 by default),
        each round's per-node jobs (C(srun hostname), the C(--gres=gpu) job, the pyxis job) are steps of one allocation per GPU count,
        as the NCCL stage's; a node with C(busy) true, a node alone of its GPU count and the job-environment job keep jobs of their own.
        A step that fails is run again as the node's own job and judged on that, so a node's records are the ones one job per node gives.
        At most 64 steps run at once (at 1,024 emulated nodes, all at once, they timed out); V(per_node) is one job per node at any size.
    type: dict
  mpi:
    description:
      - The MPI stage as a plan (see C(_validation_checks.mpi_jobs)), appended to O(jobs) - C(nodes), C(binary), C(srun),
        C(salloc), C(mpirun), C(mpirun_args), C(partition), C(time_limit), C(timeout), C(container_image),
        C(container_mounts), C(env), C(skip_reason), C(no_pmi_path) (run C(srun --mpi=none), else reported skipped),
        C(no_pmi_timeout).
      - C(binary), C(srun), C(salloc) and C(mpirun) must be one word not starting with C(-); C(mpirun_args) are
        mpirun options on purpose, passed as given.
    type: dict
  mpi_plugin:
    description:
      - Value for C({mpi}) in job argv (C(--mpi={mpi})). V(auto) picks pmix, else pmi2, from C(srun --mpi=list); a job
        whose argv needs C({mpi}) when srun offers neither is reported as skipped with that reason.
    type: str
    default: auto
  srun:
    description: The srun command used for C(srun --mpi=list).
    type: str
    default: srun
  mpi_required_paths:
    description: MPI launch paths whose failure fails the validation; others are reported only.
    type: list
    elements: str
    choices: [srun_pmi, srun_plain, mpirun, pyxis]
    default: []
  stage:
    description: Stage name of V(srun), V(gres) and V(container) records.
    type: str
    default: slurm
'''

EXAMPLES = r'''
- name: srun on every node at once
  gpucluster.bringup.validation_jobs:
    jobs:
      - {name: gpu-01, kind: srun, argv: [srun, -N1, -w, gpu-01, hostname], timeout: 60}
      - {name: gpu-02, kind: srun, argv: [srun, -N1, -w, gpu-02, hostname], timeout: 60}
  register: slurm_jobs
'''

RETURN = r'''
records:
  description:
    - Check records of every job, in job order.
    - The failed records of an V(nccl) job carry C(command), the shell command line that reruns the job (one line per
      slow pair run under an C(isolation) finding); its first record carries C(versions), the NCCL and nccl-tests
      versions its output names (C({nccl, nccl_tests})).
  returned: always
  type: list
  elements: dict
series:
  description:
    - busbw-vs-size series of the V(nccl) jobs (C([{label, points, gate}])); C(gate) is the gate curve the run was judged
      with (C([[size bytes, GB/s], ...]), empty when it had none).
  returned: always
  type: list
  elements: dict
warnings_found:
  description: Settings in job environments known to slow collectives.
  returned: always
  type: list
  elements: str
mpi_plugin:
  description: The C(--mpi=) value used for C({mpi}), or null when srun offered no PMI plugin.
  returned: when a job's argv holds C({mpi})
  type: str
mpi_available:
  description: The MPI plugin types C(srun --mpi=list) listed (empty when O(mpi_plugin) was given).
  returned: when a job's argv holds C({mpi})
  type: list
  elements: str
results:
  description:
    - Per job, its exit code, duration, whether it timed out, and the last 4000 characters of stdout and stderr (an NCCL
      run's JSON report taken out of stdout; C(json_reports) says how many it printed).
    - A per-node run dispatched as a step of an allocation says so in C(dispatch) (C(step of job N), or C(own job (...))
      with the reason when its allocation was not granted).
  returned: always
  type: dict
allocations:
  description:
    - The allocations the per-node runs were steps of (C(nccl.dispatch), C(slurm.dispatch)), C([{name, nodes, job_id, seconds, refused}]);
      C(job_id) is null and C(refused) says why when one was not granted (its runs then went as one job each).
  returned: always
  type: list
  elements: dict
'''

import threading
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import SlurmCli
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._job_dispatch import STEP_PARALLEL
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import choose_mpi_plugin, parse_mpi_list
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_jobs import (
    JobsFailure, allocation_groups, checked_jobs, job_node, fill_mpi, idle_nodes, judge_jobs, needing_mpi, request_allocation, retry_allocation,
    split_idle, step_failed, step_failure, tails, use_own_jobs)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import narrowed, split_json_report
from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress


class JobsManager(object):
    """One validation_jobs call: check and plan the jobs, fill in ``{mpi}``, run them round by round, judge them, report.

    Every failure is one ``JobsFailure``; nothing runs before every job is checked.
    """

    def __init__(self, client, params):
        self.client = client
        self.params = params
        self.allocations = []
        self.step_slots = threading.BoundedSemaphore(STEP_PARALLEL)

    def run(self):
        """The module's result; raises ``JobsFailure``."""
        jobs = self.validate()
        # everything is checked: from here on commands run
        mpi_info = self.resolve_mpi(jobs)
        results = self.run_jobs(jobs)
        records, series, warnings = self.judge(jobs, results, mpi_info)
        return self.report(records, series, warnings, results, mpi_info)

    def validate(self):
        """The jobs given and planned, checked before anything runs."""
        return checked_jobs(self.params)

    def resolve_mpi(self, jobs):
        """Fill ``{mpi}`` in job argv from ``srun --mpi=list``; jobs that need it when there is none become skipped."""
        needing = needing_mpi(jobs)
        if not needing:
            return {}
        wanted = self.params['mpi_plugin']
        available = []
        if wanted == 'auto':
            _rc, out, err = self.client.run([self.params['srun'], '--mpi=list'])
            available = parse_mpi_list(out + '\n' + err)
        return fill_mpi(needing, choose_mpi_plugin(available) if wanted == 'auto' else wanted, available)

    def run_jobs(self, jobs):
        """Job name -> result of each job that is not skipped; the jobs of one round run at once, rounds in order."""
        results = {}
        for number in sorted(set(job['round'] for job in jobs)):
            running = [job for job in jobs if job['round'] == number and job['kind'] != 'skip']
            granted = []
            try:
                self.allocate(running, granted)
                threads = [threading.Thread(target=self._run_job, args=(job, results)) for job in running]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            finally:
                for release, job_id in granted:
                    self.client.run(list(release) + [job_id])
        return results

    def allocate(self, jobs, granted):
        """One ``salloc --no-shell`` per allocation the jobs are steps of; ``granted`` gets ``(release argv, job id)`` of each
        granted one. An allocation not granted is asked again for its idle nodes only; the jobs of the nodes left out
        (or of an allocation not granted at all) run as jobs of their own."""
        for allocation, members in allocation_groups(jobs):
            why = self._allocate(allocation, members, granted)
            if why is None:
                continue
            idle = idle_nodes(self.client.job(allocation['idle'], 60)) if allocation.get('idle') else set()
            free, busy = split_idle(members, idle)
            if free and busy:
                use_own_jobs(busy, '%s; not idle: %s' % (why, compress([job_node(job) for job in busy])))
                members = free
                why = self._allocate(narrowed(allocation, [job_node(job) for job in free]), free, granted)
            if why is not None:
                use_own_jobs(members, why)

    def _allocate(self, allocation, members, granted):
        """Ask for one allocation; None when granted (its jobs are its steps), else why not."""
        return request_allocation(self.client, allocation, members, granted, self.allocations)

    def _run_job(self, job, results):
        if job.get('rerun_own') and (job.get('dispatch') or '').startswith('step of'):
            with self.step_slots:  # a step of the Slurm stage: STEP_PARALLEL of them at once
                result = self._run_argv(job, job['argv'])
        else:
            result = self._run_argv(job, job['argv'])
        if step_failed(job, result):
            # judged as before, on a job of its own: the step's failure may be its allocation's, not the node's
            why = step_failure(job, result)
            result = self._run_argv(job, job['own_argv'])
            job['dispatch'] = 'own job (%s)' % why
        if job.get('json'):
            # the -J report printed after the text (JSON_SCRIPT): out of stdout, so that tails never carry it
            result.update(split_json_report(result['stdout']))
        if job.get('dispatch'):
            result['dispatch'] = job['dispatch']
        results[job['name']] = result

    def _run_argv(self, job, argv):
        """The result of ``argv`` (the job's or its step's), started again while its start failed (``retry_allocation``)."""
        attempt = 1
        result = self.client.job(argv, job['timeout'], job.get('env'))
        while retry_allocation(result, attempt):
            time.sleep(2 * attempt)
            attempt += 1
            result = self.client.job(argv, job['timeout'], job.get('env'))
        if attempt > 1:
            result['attempts'] = attempt
        return result

    def judge(self, jobs, results, mpi_info):
        """(records, series, warnings) of every job, in job order."""
        return judge_jobs(jobs, results, self.params, mpi_info.get('mpi_plugin'))

    def report(self, records, series, warnings, results, mpi_info):
        """The module's result; the warnings are passed on to Ansible too."""
        for text in warnings:
            self.client.warn(text)
        return dict(changed=False, records=records, series=series, warnings_found=warnings, results=tails(results), allocations=self.allocations,
                    **mpi_info)


def job_options():
    """The suboptions of ``jobs``."""
    return dict(
        name=dict(type='str', required=True),
        kind=dict(type='str', required=True, choices=['srun', 'gres', 'container', 'mpi', 'nccl', 'env', 'skip']),
        argv=dict(type='list', elements='str'),
        env=dict(type='dict', default={}),
        timeout=dict(type='int', default=300),
        round=dict(type='int', default=0),
        hosts=dict(type='list', elements='str'),
        gpus=dict(type='int'),
        image=dict(type='str'),
        path=dict(type='str', choices=['srun_pmi', 'srun_plain', 'mpirun', 'pyxis']),
        label=dict(type='str'),
        ranks=dict(type='int'),
        expect=dict(type='dict'),
        check=dict(type='str', default='all_reduce'),
        reason=dict(type='str'),
        status=dict(type='str', choices=['skip', 'fail'], default='skip'),
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jobs=dict(type='list', elements='dict', default=[], options=job_options()),
            mpi_required_paths=dict(type='list', elements='str', choices=['srun_pmi', 'srun_plain', 'mpirun', 'pyxis'], default=[]),
            stage=dict(type='str', default='slurm'),
            nccl=dict(type='dict'),
            slurm=dict(type='dict'),
            mpi=dict(type='dict'),
            mpi_plugin=dict(type='str', default='auto'),
            srun=dict(type='str', default='srun'),
        ),
        supports_check_mode=False,
    )
    try:
        result = JobsManager(SlurmCli.for_module(module), module.params).run()
    except JobsFailure as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
