# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decisions of the ``validation_jobs`` module (pure logic).

- ``checked_jobs``: the jobs given and the ones the ``slurm``, ``mpi`` and ``nccl`` plans make, checked before
  anything runs.
- ``needing_mpi`` / ``fill_mpi``: the jobs whose argv holds ``{mpi}``, and that placeholder filled with the chosen
  plugin (or the job turned into a skipped one when srun offers none).
- ``judge_jobs``: the records, series and warnings of the finished (and skipped) jobs; ``tails``: their results as
  the module returns them. An NCCL run's failed records carry the command that reruns it (``command``), its first
  record the NCCL and nccl-tests versions its output names (``versions``), both for the report.

Every failure is one ``JobsFailure``; the module runs the commands (``srun --mpi=list`` and the jobs, round by round).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError, ModuleFailure
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import parse_sinfo_names
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import (
    check_jobs, check_jobs_input, container_record, gres_job_record, mpi_jobs, mpi_record, record, slow_env_warnings, slurm_jobs,
    srun_record)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import NcclParseError, parse_run
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_isolate import isolate, isolation_records, pair_measurements
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import evaluate_run, plan_jobs, version_records

TAIL = 4000
JOB_KEYS = ('name', 'kind', 'argv', 'env', 'timeout', 'round', 'hosts', 'gpus', 'image', 'path', 'label', 'ranks', 'expect', 'check', 'reason',
            'status')
# The plans the module turns into jobs, in the order their jobs are appended.
PLANNERS = (('slurm', slurm_jobs), ('mpi', mpi_jobs), ('nccl', plan_jobs))


# srun's allocation request timed out or was refused for load before the job started (the job printed nothing). On
# the emulated 1,024-node cluster 22 of 1,024 per-node sruns started at once ended so (slurmctld: "Job allocate
# response msg send failure, killing JobId=..."; srun: exit 1, no output): such a job is started again.
# (a refusal such as "Requested node configuration is not available" is not load: it is kept)
ALLOCATION_ERROR = re.compile(r'Socket timed out|Connection (reset|refused|timed out)|Job allocate response|Zero Bytes were transmitted|'
                              r'Slurm temporarily unable', re.I)
ATTEMPTS = 3
# salloc's line once the nodes are the job's
GRANTED = re.compile(r'Granted job allocation (\d+)')


def retry_allocation(result, attempt):
    """Whether a job's result (``run_job``'s dict) is a failed start to try again after attempt ``attempt`` (1-based):
    no output at all whatever the exit status (every job the module runs prints something; under the same load 8
    sruns exited 0 with nothing - their steps' output never reached them), or srun's own allocation error on stderr,
    a non-zero exit and nothing on stdout."""
    if attempt >= ATTEMPTS or result.get('timed_out') or (result.get('stdout') or '').strip():
        return False
    err = (result.get('stderr') or '').strip()
    if not err:
        return True
    return result.get('rc') not in (0, None) and bool(ALLOCATION_ERROR.search(err))


def allocation_groups(jobs):
    """``[(allocation, [jobs])]``: the jobs that are steps of an allocation (the plan's ``allocation_dispatch``), by
    allocation, in the order they first appear."""
    groups = {}  # allocation name (one per node type) -> (allocation, jobs)
    for job in jobs:
        if job.get('allocation') and job['kind'] != 'skip':
            groups.setdefault(job['allocation']['name'], (job['allocation'], []))[1].append(job)
    return list(groups.values())


def granted_job(result):
    """The job id salloc says it was granted (``run_job``'s result), else None."""
    found = GRANTED.search((result.get('stderr') or '') + '\n' + (result.get('stdout') or ''))
    return found.group(1) if found else None


def refusal(result):
    """Why an allocation was not granted, in a line: salloc's last message, else its exit or time-out."""
    if result.get('timed_out'):
        return 'salloc timed out after %s s' % result.get('timeout')
    lines = [line.strip() for line in (result.get('stderr') or '').splitlines() + (result.get('stdout') or '').splitlines() if line.strip()]
    return lines[-1] if lines else 'salloc exited %s with no message' % result.get('rc')


def idle_nodes(result):
    """The node names ``sinfo -h -N -t idle -o %N`` printed (a job result, ``slurm._nodes.parse_sinfo_names``); empty when it failed."""
    return set(parse_sinfo_names(result.get('stdout'))) if result.get('rc') == 0 else set()


def job_node(job):
    """The node of a per-node job: its name up to a "/" (the Slurm stage's ``gpu-01/gres``)."""
    return job['name'].split('/')[0]


def split_idle(jobs, idle):
    """``(free, busy)``: the jobs of the nodes in ``idle`` and the others."""
    return [job for job in jobs if job_node(job) in idle], [job for job in jobs if job_node(job) not in idle]


def use_allocation(jobs, job_id):
    """The jobs become steps of job ``job_id``."""
    for job in jobs:
        job['argv'] = [arg.replace('{jobid}', job_id) for arg in job['argv']]
        job['dispatch'] = 'step of job %s' % job_id


def request_allocation(client, allocation, members, granted, records, timeout=120, sleep=time.sleep):
    """Ask ``client`` (``slurm._slurm_cli.SlurmCli``) for one ``allocation``: granted, ``members`` become its steps and
    ``(release argv, job id)`` goes to ``granted``; ``records`` gets ``{name, nodes, job_id, seconds[, refused,
    attempts]}``. A controller too busy to answer (``ALLOCATION_ERROR``: at 1,024 emulated nodes salloc met "Connection
    timed out") is asked again, up to ``ATTEMPTS`` times. Returns None when granted, else why not (salloc's last message)."""
    attempt = 1
    result = client.job(allocation['argv'], allocation.get('timeout') or timeout)
    while not granted_job(result) and attempt < ATTEMPTS and ALLOCATION_ERROR.search(result.get('stderr') or ''):
        sleep(5 * attempt)
        attempt += 1
        result = client.job(allocation['argv'], allocation.get('timeout') or timeout)
    job_id = granted_job(result)
    entry = {'name': allocation['name'], 'nodes': len(members), 'job_id': job_id, 'seconds': result['seconds']}
    if attempt > 1:
        entry['attempts'] = attempt
    records.append(entry)
    if job_id:
        granted.append((allocation['release'], job_id))
        use_allocation(members, job_id)
        return None
    entry['refused'] = refusal(result)
    return entry['refused']


def use_own_jobs(jobs, why):
    """The allocation was not granted (``why``): each job runs as its own job."""
    for job in jobs:
        job['argv'] = job['own_argv']
        job['dispatch'] = 'own job (the allocation was not granted: %s)' % why


def step_failed(job, result):
    """Whether a job that ran as a step of an allocation (the Slurm stage's, ``_job_dispatch.make_steps``: ``rerun_own``)
    failed or timed out, and so is run again as the job of its own it would have been, and judged on that."""
    return bool(job.get('rerun_own')) and (job.get('dispatch') or '').startswith('step of') and (result.get('rc') != 0 or bool(result.get('timed_out')))


def step_failure(job, result):
    """Why a step is run again as its own job: ``its step of job 12 failed (rc 1)``, with the last line srun printed on
    standard error when there is one (``...: srun: error: ...``)."""
    why = 'its %s %s' % (job['dispatch'], 'timed out after %s s' % result.get('timeout') if result.get('timed_out') else 'failed (rc %s)' % result.get('rc'))
    lines = [line.strip() for line in (result.get('stderr') or '').splitlines() if line.strip()]
    return '%s: %s' % (why, lines[-1][:200]) if lines else why


class JobsFailure(ModuleFailure):
    """A validation_jobs call failed (``msg``, ``result``)."""


def planned_jobs(params):
    """The jobs of the ``slurm``, ``mpi`` and ``nccl`` plans in ``params``, with the defaults of the ``jobs`` option filled in."""
    planned = []
    for key, builder in PLANNERS:
        if params[key]:
            try:
                planned.extend(builder(params[key]))
            except (ValueError, TypeError, AttributeError) as exc:
                raise JobsFailure('%s plan: %s' % (key, exc)) from exc
    jobs = []
    for job in planned:
        full = dict((key, None) for key in JOB_KEYS)
        full.update(env={}, timeout=300, round=0, check='all_reduce', status='skip')
        full.update(job)
        jobs.append(full)
    return jobs


def checked_jobs(params):
    """Every job to run (``jobs``, then the planned ones), checked; raises ``JobsFailure`` before anything runs."""
    try:
        check_jobs_input(params)
        jobs = check_jobs([dict(job) for job in params['jobs']])
    except InputError as exc:
        raise JobsFailure(str(exc)) from exc
    jobs.extend(planned_jobs(params))
    try:
        return check_jobs(jobs, label='jobs (with the planned ones)')
    except InputError as exc:
        raise JobsFailure(str(exc)) from exc


def needing_mpi(jobs):
    """The jobs (not skipped) whose argv holds ``{mpi}``."""
    return [job for job in jobs if job['kind'] != 'skip' and any('{mpi}' in arg for arg in job['argv'] or [])]


def fill_mpi(jobs, chosen, available):
    """Put the ``chosen`` plugin for ``{mpi}`` in the jobs' argv and label; with none chosen, the jobs become skipped ones."""
    for job in jobs:
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
        # what the plan noted about the run (a user's NCCL_ALGO kept on two nodes) is also a warning of the report
        notes = ['NCCL run %s: %s' % (name, note) for note in (job.get('expect') or {}).get('notes') or []]
        return with_run_facts(records, job, result), series, notes
    if kind == 'env':
        if result.get('rc') != 0:
            return [], [], ['could not read the job environment with %s (rc %s)' % (' '.join(job['argv']), result.get('rc'))]
        return [], [], slow_env_warnings(result.get('stdout') or '', 'the job environment (%s)' % name)
    raise ValueError('unknown job kind %r' % kind)


def command_line(argv, env=None):
    """The shell command line that reruns ``argv``: each word quoted as a POSIX shell needs it, ``env`` (variables
    added to the environment) put before it with ``env``."""
    words = list(argv)
    if env:
        words = ['env'] + ['%s=%s' % (key, env[key]) for key in sorted(env)] + words
    return ' '.join(shlex.quote(str(word)) for word in words)


def run_versions(result):
    """``{nccl, nccl_tests}``: the versions an NCCL run's output names (``NCCL version ...``, ``# nccl-tests version ...``)."""
    stdout = result.get('stdout') or ''
    if not stdout.strip() and not (result.get('json') or '').strip():
        return {}
    try:
        parsed = parse_run(stdout, result.get('json'))
    except NcclParseError:
        return {}
    return dict((key, parsed[name]) for key, name in (('nccl', 'nccl_version'), ('nccl_tests', 'version')) if parsed.get(name))


def with_run_facts(records, job, result):
    """The records of an NCCL run, its failed ones with ``command`` (the shell command line that reruns the run), its first
    with ``versions`` (what its output names)."""
    # (a step of an allocation is rerun as the job of its own it would have been)
    command = command_line(job.get('own_argv') or job['argv'], job.get('env'))
    for rec in records:
        if rec.get('status') == 'fail':
            rec['command'] = command
    versions = run_versions(result)
    if records and versions:
        records[0]['versions'] = versions
    return records


def skipped_record(job, params, mpi_plugin=None):
    """The record of a skipped job: an MPI launch path's (``{mpi}`` in its label: the plugin used), else one of ``stage``."""
    if job['path']:
        label = (job.get('label') or job['name']).replace('{mpi}', mpi_plugin or '<pmi>')
        return mpi_record(job['path'], label, {'skipped': True, 'reason': job['reason'] or 'skipped'},
                          job.get('ranks') or 1, job.get('hosts'), params['mpi_required_paths'])
    item = record(params['stage'], job['name'].split('/')[0], job.get('check') or 'skipped', job['status'] or 'skip', job['reason'] or 'skipped')
    if job.get('hosts'):
        item['hosts'] = job['hosts']
    return item


def judge_jobs(jobs, results, params, mpi_plugin=None):
    """(records, series, warnings) of all jobs, in job order (``results``: job name -> result of each job that ran)."""
    records, series, warnings = [], [], []
    for job in jobs:
        if job['kind'] == 'skip':
            records.append(skipped_record(job, params, mpi_plugin))
            continue
        try:
            more, runs, found = judge(job, results[job['name']], params)
        except ValueError as exc:
            raise JobsFailure('job %s: %s' % (job['name'], exc)) from exc
        records.extend(more)
        series.extend(runs)
        warnings.extend(found)
    records.extend(judge_pairs(jobs, records, params))
    records.extend(version_records(records))
    return records, series, warnings


def judge_pairs(jobs, records, params):
    """The isolation records of the NCCL pair runs (rounds 2 and up): the slow node, link or leaf they name, judged per
    fabric group (a pair job's ``group``: nodes of one type; pairs of another type are never compared with them)."""
    groups = {}
    for job in jobs:
        if job['kind'] == 'nccl' and job.get('round', 0) >= 2 and len(job.get('hosts') or []) == 2:
            groups.setdefault(job.get('group'), set()).add(job['name'])
    found = []
    leaf_of = (params.get('nccl') or {}).get('leaf_of') or {}
    for group in sorted(groups, key=lambda name: name or ''):
        pair_records = [rec for rec in records if rec.get('node') in groups[group]]
        pairs = pair_measurements(pair_records)
        more = isolation_records(isolate(pairs, leaf_of), pairs)
        # under a finding, the commands of the failed pair runs of its nodes: what reruns the evidence
        for rec in more:
            if group is not None and rec['node'] == 'pairs':
                rec['node'] = 'pairs:%s' % group
                rec['reason'] = '%s (fabric group %s)' % (rec['reason'], group)
            if rec['status'] == 'fail':
                named = set(rec.get('hosts') or [rec['node']])
                commands = []
                for pair in pair_records:
                    if pair.get('command') and named & set(pair['hosts']) and pair['command'] not in commands:
                        commands.append(pair['command'])
                if commands:
                    rec['command'] = '\n'.join(commands)
        found.extend(more)
    return found


def tails(results):
    """The job results as returned: stdout and stderr cut to their last ``TAIL`` characters, without an NCCL run's JSON report
    (its ``env`` holds the job's whole environment; its figures are in the records)."""
    return dict((name, dict(((key, value) for key, value in result.items() if key != 'json'), stdout=result['stdout'][-TAIL:],
                            stderr=result['stderr'][-TAIL:]))
                for name, result in results.items())
