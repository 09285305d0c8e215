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
        description: The command. Required unless O(jobs[].kind=skip).
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
            expect_transport). Checked before any job runs; only V(nccl) jobs take one.
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
        C(fabric_min_busbw_gbps), C(expect_transport), C(thresholds), C(pairwise), C(mpi).
      - Per-node runs start together; the fabric run follows, then the pair rounds.
    type: dict
  slurm:
    description:
      - The Slurm stage as a plan (see C(_validation_checks.slurm_jobs)), appended to O(jobs) - C(nodes)
        (C([{name, gpus, mig}])), C(srun), C(partition), C(time_limit), C(timeout), C(pyxis), C(container_image), C(env).
    type: dict
  mpi:
    description:
      - The MPI stage as a plan (see C(_validation_checks.mpi_jobs)), appended to O(jobs) - C(nodes), C(binary), C(srun),
        C(salloc), C(mpirun), C(mpirun_args), C(partition), C(time_limit), C(timeout), C(container_image),
        C(container_mounts), C(env), C(skip_reason), C(no_pmi_path) (run C(srun --mpi=none), else reported skipped),
        C(no_pmi_timeout).
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
    description: MPI launch paths (V(srun_pmi), V(srun_plain), V(mpirun), V(pyxis)) whose failure fails the validation; others are reported only.
    type: list
    elements: str
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
  description: Check records of every job, in job order.
  returned: always
  type: list
  elements: dict
series:
  description: busbw-vs-size series of the V(nccl) jobs (C([{label, points}])).
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
  description: Per job, its exit code, duration, whether it timed out, and the last 4000 characters of stdout and stderr.
  returned: always
  type: dict
'''

import threading
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils._validation_checks import (
    check_jobs, check_jobs_input, choose_mpi_plugin, container_record, gres_job_record, mpi_jobs, mpi_record, parse_mpi_list, record,
    slow_env_warnings, slurm_jobs, srun_record)
from ansible_collections.gpucluster.bringup.plugins.module_utils._validation_nccl import evaluate_run, plan_jobs

TAIL = 4000
JOB_KEYS = ('name', 'kind', 'argv', 'env', 'timeout', 'round', 'hosts', 'gpus', 'image', 'path', 'label', 'ranks', 'expect', 'check', 'reason',
            'status')


def resolve_mpi(module, jobs):
    """Fill ``{mpi}`` in job argv from ``srun --mpi=list``; jobs that need it when there is none become skipped."""
    needing = [job for job in jobs if job['kind'] != 'skip' and any('{mpi}' in arg for arg in job['argv'] or [])]
    if not needing:
        return {}
    wanted = module.params['mpi_plugin']
    available = []
    if wanted == 'auto':
        rc, out, err = module.run_command([module.params['srun'], '--mpi=list'])
        available = parse_mpi_list(out + '\n' + err)
    chosen = choose_mpi_plugin(available) if wanted == 'auto' else wanted
    for job in needing:
        if chosen:
            job['argv'] = [arg.replace('{mpi}', chosen) for arg in job['argv']]
            if job.get('label'):
                job['label'] = job['label'].replace('{mpi}', chosen)
        else:
            job['kind'] = 'skip'
            job['reason'] = 'srun offers no PMI plugin (srun --mpi=list: %s), so MPI ranks cannot be wired' % (', '.join(available) or 'nothing')
            if job.get('label'):
                job['label'] = job['label'].replace('{mpi}', 'none')
    return {'mpi_plugin': chosen, 'mpi_available': available}


def run_job(module, job, results):
    """Run one job under coreutils ``timeout`` (SIGTERM, then SIGKILL 10 s later) and store its result."""
    start = time.time()
    argv = ['timeout', '--kill-after=10', str(job['timeout'])] + list(job['argv'])
    env = dict((str(k), str(v)) for k, v in (job.get('env') or {}).items())
    try:
        rc, out, err = module.run_command(argv, environ_update=env)
    except Exception as exc:  # pylint: disable=broad-except
        rc, out, err = 127, '', 'cannot run %s: %s' % (job['argv'][0], exc)
    seconds = round(time.time() - start, 2)
    timed_out = rc in (124, 137) and seconds >= job['timeout']
    results[job['name']] = {'rc': None if timed_out else rc, 'stdout': out, 'stderr': err, 'timed_out': timed_out,
                            'timeout': job['timeout'], 'seconds': seconds}


def judge(job, result, params):
    """(records, series, warnings) of one finished job."""
    kind = job['kind']
    name = job['name']
    node = name.split('/')[0]
    stage = params['stage']
    if kind == 'srun':
        return [srun_record(node, result, stage)], [], []
    if kind == 'gres':
        return [gres_job_record(node, result, job.get('gpus'), stage)], [], []
    if kind == 'container':
        return [container_record(node, result, job.get('image'), stage)], [], []
    if kind == 'mpi':
        return [mpi_record(job['path'], job.get('label') or name, result, job.get('ranks') or 1, job.get('hosts'),
                           params['mpi_required_paths'])], [], []
    if kind == 'nccl':
        records, series = evaluate_run(name, result, job.get('hosts') or [name], job.get('expect') or {}, job.get('check') or 'all_reduce')
        return records, series, []
    if kind == 'env':
        if result.get('rc') != 0:
            return [], [], ['could not read the job environment with %s (rc %s)' % (' '.join(job['argv']), result.get('rc'))]
        return [], [], slow_env_warnings(result.get('stdout') or '', 'the job environment (%s)' % name)
    raise ValueError('unknown job kind %r' % kind)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jobs=dict(type='list', elements='dict', default=[], options=dict(
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
            )),
            mpi_required_paths=dict(type='list', elements='str', default=[]),
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
        check_jobs_input(module.params)
        jobs = check_jobs([dict(job) for job in module.params['jobs']])
    except InputError as exc:
        module.fail_json(msg=str(exc))
    planned = []
    for key, builder in (('slurm', slurm_jobs), ('mpi', mpi_jobs), ('nccl', plan_jobs)):
        if module.params[key]:
            try:
                planned.extend(builder(module.params[key]))
            except (ValueError, TypeError, AttributeError) as exc:
                module.fail_json(msg='%s plan: %s' % (key, exc))
    if planned:
        for job in planned:
            full = dict((key, None) for key in JOB_KEYS)
            full.update(env={}, timeout=300, round=0, check='all_reduce', status='skip')
            full.update(job)
            jobs.append(full)
    try:
        check_jobs(jobs, label='jobs (with the planned ones)')
    except InputError as exc:
        module.fail_json(msg=str(exc))
    # everything is checked: from here on commands run
    mpi_info = resolve_mpi(module, jobs)

    results = {}
    for number in sorted(set(job['round'] for job in jobs)):
        threads = [threading.Thread(target=run_job, args=(module, job, results)) for job in jobs if job['round'] == number and job['kind'] != 'skip']
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    records, series, warnings = [], [], []
    for job in jobs:
        if job['kind'] == 'skip':
            if job['path']:
                label = (job.get('label') or job['name']).replace('{mpi}', mpi_info.get('mpi_plugin') or '<pmi>')
                records.append(mpi_record(job['path'], label, {'skipped': True, 'reason': job['reason'] or 'skipped'},
                                          job.get('ranks') or 1, job.get('hosts'), module.params['mpi_required_paths']))
            else:
                item = record(module.params['stage'], job['name'].split('/')[0], job.get('check') or 'skipped', job['status'] or 'skip',
                              job['reason'] or 'skipped')
                if job.get('hosts'):
                    item['hosts'] = job['hosts']
                records.append(item)
            continue
        try:
            more, runs, found = judge(job, results[job['name']], module.params)
        except ValueError as exc:
            module.fail_json(msg='job %s: %s' % (job['name'], exc))
        records.extend(more)
        series.extend(runs)
        warnings.extend(found)
    for text in warnings:
        module.warn(text)
    tails = dict((name, dict(result, stdout=result['stdout'][-TAIL:], stderr=result['stderr'][-TAIL:])) for name, result in results.items())
    module.exit_json(changed=False, records=records, series=series, warnings_found=warnings, results=tails, **mpi_info)


if __name__ == '__main__':
    main()
