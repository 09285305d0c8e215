# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The resume playbook's decisions: why a node is drained or down, and whether to resume it (pure logic).

Causes come from the drain reason Slurm keeps (``scontrol show node``: the GPU health check's tags
``gpuhc:<tier>:<check>: ...`` name its tier and check) and, for ``Prolog error`` /
``Epilog error``, from the log of the prolog/epilog hook runner that the ``slurm`` role installs
(syslog ident ``slurm-hooks``; lines ``prolog job=12 hook=95-all-x rc=1 duration=0.010s status=failed``,
``prolog hook 95-all-x output: ...``, ``drained gpu-01: prolog hook 95-all-x failed (exit 1)``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
# node_owner (who set a node's DOWN or DRAIN: ours, Slurm's or an admin's) is the one classifier of the resume playbook, the
# health check's auto-resume and the deep tier; it lives in slurm/_healthcheck.py (tags: slurm/_drain_tag.py), which the node programs get.
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as drain_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import node_owner, owner_text
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._job_dispatch import dispatch_settings
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import node_problem, record, slurm_names
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, ModuleFailure, require_choice, require_dict, require_int, require_list, require_match, require_str, show, slurm_name)

CAUSES = ('hook', 'prolog_error', 'epilog_error', 'healthcheck', 'validate', 'gres', 'not_responding', 'down', 'mig', 'slurm', 'admin',
          'loop')
# Causes a passing node is resumed from without being told to; an admin's drain or down (any other reason) is not.
AUTO_RESUME_CAUSES = ('hook', 'prolog_error', 'epilog_error', 'healthcheck', 'validate', 'gres', 'not_responding', 'down', 'mig', 'slurm')
ADMIN_KEPT = "kept: an admin's down or drain is undone only with validate_resume_admin_drains"
LOOP_KEPT = ('kept: the closed loop returns the node itself after its reboot and a passing deep tier, or sends it to service '
             '(slurm_healthcheck_loop_*; its history: gpucluster-node-loop --history NODE)')

_LOG_RESULT = re.compile(r'\b(prolog|epilog) job=(\S+) hook=(\S+) rc=(\S+) duration=(\S+) status=(.+?)\s*$')
_LOG_OUTPUT = re.compile(r'\b(prolog|epilog) hook (\S+) output: (.*?)\s*$')
_LOG_DRAINED = re.compile(r'\bdrained (\S+): ((?:prolog|epilog) hook (\S+) .*?)\s*$')


def parse_hook_log(text):
    """Hook runs in the runner's log, oldest first: ``[{phase, job, hook, rc, status, ok, output}]``."""
    runs = []
    for line in (text or '').splitlines():
        match = _LOG_RESULT.search(line)
        if match:
            rc = match.group(4)
            status = match.group(6)
            runs.append({'phase': match.group(1), 'job': match.group(2), 'hook': match.group(3),
                         'rc': int(rc) if re.match(r'^-?\d+$', rc) else None, 'status': status,
                         'ok': status == 'ok' or status.startswith('skipped'), 'output': ''})
            continue
        match = _LOG_OUTPUT.search(line)
        if match:
            for run in reversed(runs):
                if run['hook'] == match.group(2) and run['phase'] == match.group(1):
                    run['output'] = match.group(3)
                    break
    return runs


def last_hook_failure(text, phase=None):
    """The most recent failed hook run in the log (optionally of one phase), or None."""
    for run in reversed(parse_hook_log(text)):
        if not run['ok'] and (phase is None or run['phase'] == phase):
            return run
    return None


def hook_failure_text(run):
    text = '%s hook %s %s' % (run['phase'], run['hook'], 'failed (exit %s)' % run['rc'] if run['status'] == 'failed' else run['status'])
    if run['job'] not in ('-', ''):
        text += ' in job %s' % run['job']
    if run['output']:
        text += ': %s' % run['output'][:200]
    return text


def admin_detail(node, prefix='gpuhc'):
    """``down by an admin: <reason> (set by <user>)``."""
    return owner_text(node, prefix) + (' (set by %s)' % node['reason_user'] if node.get('reason_user') else '')


def diagnose(node, log_text=None, prefix='gpuhc'):
    """``{cause, hook, detail}`` for a drained/down node (a ``parse_scontrol_nodes`` entry).

    ``log_text``: the hook runner's log on that node, used when the reason names no hook. A reason :func:`node_owner`
    calls an admin's is cause ``admin`` whatever the node's flags (an admin's DOWN node whose slurmd is stopped is
    NOT_RESPONDING too, and stays the admin's).
    """
    reason = node.get('reason') or ''
    owner = node_owner(node, prefix)
    if owner == 'admin':
        return {'cause': 'admin', 'hook': None, 'detail': admin_detail(node, prefix)}
    state = '+'.join([node['state']] + list(node['flags']))
    # a reason the collection wrote names its owner (slurm._drain_tag), whatever the node's flags say
    tag = drain_tag.parse_tag(reason, prefix)
    if tag and tag['owner'] == 'hook':
        run = last_hook_failure(log_text, tag['scope']) if log_text else None
        detail = hook_failure_text(run) if run and run['hook'] == tag['check'] else reason
        return {'cause': 'hook', 'hook': tag['check'], 'detail': detail}
    lowered = reason.lower()
    for words, cause in (('prolog error', 'prolog_error'), ('prolog launch failure', 'prolog_error'), ('epilog error', 'epilog_error')):
        if lowered.startswith(words):
            phase = cause.partition('_')[0]
            run = last_hook_failure(log_text, phase)
            if run:
                return {'cause': cause, 'hook': run['hook'], 'detail': '"%s": %s' % (reason, hook_failure_text(run))}
            where = 'the hook runner log has no failed %s hook' % phase if log_text is not None else 'the hook runner log could not be read'
            return {'cause': cause, 'hook': None, 'detail': '"%s": %s' % (reason, where)}
    if tag and tag['owner'] == 'healthcheck':
        return {'cause': 'healthcheck', 'hook': None,
                'detail': 'GPU health check, %s tier, check %s: %s' % (tag['scope'], tag['check'], reason)}
    if tag and tag['owner'] == 'loop':
        return {'cause': 'loop', 'hook': None, 'detail': 'the GPU health closed loop, step %s, condition %s: %s'
                % (tag['scope'], tag['check'], reason)}
    if tag and tag['owner'] == 'validate':
        return {'cause': 'validate', 'hook': None, 'detail': reason}
    if tag and tag['owner'] == 'mig':
        return {'cause': 'mig', 'hook': None, 'detail': 'drained by the mig role: %s' % reason}
    if 'gres/' in lowered and ('count' in lowered or 'reported' in lowered):
        return {'cause': 'gres', 'hook': None, 'detail': reason}
    if 'NOT_RESPONDING' in node['flags'] or lowered.startswith('not responding'):
        return {'cause': 'not_responding', 'hook': None, 'detail': reason or 'slurmd does not answer (%s)' % state}
    if not reason or node['state'] == 'DOWN' and lowered in ('', 'node unexpectedly rebooted', 'kill task failed'):
        return {'cause': 'down', 'hook': None, 'detail': reason or state}
    return {'cause': 'slurm', 'hook': None, 'detail': owner_text(node, prefix)}


def problem_nodes(nodes, names=None, resume_admin_drains=False, prefix='gpuhc'):
    """The nodes (of ``names``, default all) that are drained, down or not responding, sorted by name.

    Each with ``problem``, ``owner`` (:func:`node_owner`), ``start_slurmd`` and ``start_why`` (:func:`slurmd_start`) and
    ``line``: ``<name>: <problem>; <who set it>; <slurmd decision>``."""
    out = []
    for name in sorted(nodes):
        if names and name not in names:
            continue
        problem = node_problem(nodes[name])
        if problem:
            entry = dict(nodes[name])
            entry['problem'] = problem
            entry['owner'] = node_owner(entry, prefix)
            start = slurmd_start(entry, resume_admin_drains, prefix)
            entry['start_slurmd'], entry['start_why'] = start['start'], start['why']
            entry['line'] = '; '.join([name + ': ' + problem] + ([owner_text(entry, prefix)] if entry.get('reason') else [])
                                      + ([start['why']] if start['why'] else []))
            out.append(entry)
    return out


def slurmd_start(node, resume_admin_drains=False, prefix='gpuhc'):
    """Whether resume.yml may start slurmd on a problem node: ``{start, why}``.

    Only where slurmctld does not hear from slurmd (state DOWN, or the NOT_RESPONDING flag: IDLE+NOT_RESPONDING is the
    time before SlurmdTimeout makes it DOWN), and only when the collection or Slurm set that state (:func:`node_owner`):
    an admin's DOWN or DRAIN is never started (with ReturnToService=2 a registering slurmd returns a DOWN node to service
    and the admin's reason is gone), unless ``resume_admin_drains``. ``why``: '' for a node slurmd is not the question on."""
    flags = node.get('flags') or ()
    if node.get('state') != 'DOWN' and 'NOT_RESPONDING' not in flags:
        return {'start': False, 'why': ''}
    owner = node_owner(node, prefix)
    if owner == 'loop':
        return {'start': False, 'why': 'slurmd not started on %s: the closed loop handles it (%s)' % (node['name'], node.get('reason'))}
    if owner == 'admin' and not resume_admin_drains:
        return {'start': False, 'why': "slurmd not started on %s: an admin's %s (validate_resume_admin_drains overrides)"
                % (node['name'], 'down' if node.get('state') == 'DOWN' else 'drain')}
    return {'start': True, 'why': 'slurmd to be started on %s where it is stopped' % node['name']}


def started_text(name, node_after, seconds, check_mode=False):
    """What starting slurmd on ``name`` did: ``slurmd started on gpu-02; node idle after 6 s`` (``node_after``: the node
    when slurmctld heard from it, or when the wait ended; None when Slurm no longer lists it)."""
    if check_mode:
        return 'slurmd would be started on %s (check mode)' % name
    if node_after is None:
        return 'slurmd started on %s; Slurm no longer lists the node' % name
    state = '+'.join([node_after['state']] + list(node_after['flags']))
    if 'NOT_RESPONDING' in node_after['flags']:
        return 'slurmd started on %s; slurmctld still does not hear from it after %d s (node %s)' % (name, seconds, state)
    problem = node_problem(node_after)
    if not problem:
        return 'slurmd started on %s; node %s after %d s' % (name, state.lower() if state == 'IDLE' else state, seconds)
    return 'slurmd started on %s; slurmctld hears from it after %d s, %s' % (name, seconds, problem)


def decide(node, diagnosis, check_records, resume_admin_drains=False):
    """``{action: resume|keep, reason}`` for one problem node after its node checks ran.

    Resumed: every check except ``node_state`` passed or was skipped, and the cause is one this playbook
    may clear (an admin's drain or down only with ``resume_admin_drains``; it is kept whatever its checks say).
    """
    if diagnosis['cause'] not in CAUSES:
        raise ValueError('unknown cause %r; valid causes: %s' % (diagnosis['cause'], ', '.join(CAUSES)))
    if diagnosis['cause'] == 'loop':
        # the closed loop returns its nodes itself (after the reboot and a passing deep tier) or sends them to service
        return {'action': 'keep', 'reason': '%s; %s' % (diagnosis['detail'], LOOP_KEPT)}
    if diagnosis['cause'] not in AUTO_RESUME_CAUSES and not resume_admin_drains:
        return {'action': 'keep', 'reason': '%s; %s' % (diagnosis['detail'], ADMIN_KEPT)}
    if check_records is None:
        return {'action': 'keep', 'reason': 'node checks did not run on %s (unreachable?); cause: %s' % (node['name'], diagnosis['detail'])}
    failed = [rec for rec in check_records if rec['status'] == 'fail' and rec['check'] != 'node_state']
    if failed:
        return {'action': 'keep', 'reason': 'node checks still fail: %s; cause: %s' % (
            '; '.join('%s: %s' % (rec['check'], rec.get('reason') or 'failed') for rec in failed), diagnosis['detail'])}
    return {'action': 'resume', 'reason': 'node checks pass; cause was: %s' % diagnosis['detail']}


def reservation_argv(scontrol, name, nodes, minutes):
    """``scontrol create reservation`` of a maintenance reservation on ``nodes`` from now for ``minutes``, root only,
    made over running jobs (the resume probes and the deep health tier run in one).

    The reservation and node names go inside ``Key=value`` words, so none is an option even with a leading "-";
    they are checked as Slurm names anyway (a "," or "=" would change the node list or the key), ``InputError``."""
    slurm_name('reservation', name, 'a Slurm reservation name')
    slurm_names('nodes', list(nodes))
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
        raise InputError('minutes is %s, expected a whole number of minutes of at least 1' % show(minutes))
    return [scontrol, 'create', 'reservation', 'ReservationName=%s' % name, 'Nodes=%s' % ','.join(nodes), 'StartTime=now',
            'Duration=%d' % minutes, 'Users=root', 'Flags=MAINT,IGNORE_JOBS']


def probe_argv(name, reservation='', srun='srun', partitions=()):
    """The probe job on node ``name`` (in ``reservation`` when given, in the node's ``partitions`` when known: a node
    outside the default partition is refused a job there): ``srun ... true``; names checked as Slurm names."""
    argv = [srun, '--nodes=1', '--nodelist=%s' % slurm_name('node name', name, 'a Slurm node name'), '--time=2',
            '--job-name=gpucluster-resume-probe']
    if partitions:
        argv.append(partition_option(partitions))
    if reservation:
        argv.append('--reservation=%s' % slurm_name('reservation', reservation, 'a Slurm reservation name'))
    return argv + ['true']


def partition_option(partitions):
    """``--partition=a,b`` of a node's partitions (srun and salloc take the first of them that can run the job)."""
    return '--partition=%s' % ','.join(slurm_name('partition', part, 'a Slurm partition name') for part in partitions)


def resume_argv(scontrol, nodes):
    """``scontrol update NodeName=<nodes> State=RESUME`` (``nodes``: one name, or the names as one hostlist)."""
    slurm_names('nodes', list(nodes))
    return [scontrol, 'update', 'NodeName=%s' % compress(list(nodes)), 'State=RESUME']


def probe_result(job):
    """The probe's ``{rc, stdout, stderr}`` from its job result (``slurm._slurm_cli``); a time-out is said in ``stderr``."""
    err = job.get('stderr') or ''
    if job.get('timed_out'):
        err = (err + ' probe timed out after %ss' % job.get('timeout')).strip()
    return {'rc': job.get('rc'), 'stdout': job.get('stdout') or '', 'stderr': err}


def probe_outcome(name, probe, node_after, log_text=None):
    """After resuming: did the probe job run and is the node still up? ``{ok, reason}``."""
    problem = node_problem(node_after) if node_after else 'Slurm no longer lists %s' % name
    if probe.get('rc') == 0 and not problem:
        return {'ok': True, 'reason': 'resumed: a probe job ran on %s' % name}
    cause = diagnose(node_after, log_text)['detail'] if node_after and problem else ''
    text = ' '.join(((probe.get('stderr') or '') + ' ' + (probe.get('stdout') or '')).split())[-200:]
    if problem:
        return {'ok': False, 'reason': 'probe job on %s failed (rc %s: %s) and %s%s' % (
            name, probe.get('rc'), text or 'no output', problem, '; cause: %s' % cause if cause else '')}
    return {'ok': False, 'reason': 'probe job on %s failed (rc %s): %s' % (name, probe.get('rc'), text or 'no output')}


def plan_resume(problems, checks, resume_admin_drains=False, prefix='gpuhc'):
    """``(to_resume, kept)`` of the problem nodes after their node checks ran (``checks``: node name -> ``node_check`` result).

    ``to_resume``: the names to resume; ``kept``: name -> why not. Each node gets its ``diagnosis``, a resumed one its ``decision``.
    """
    to_resume, kept = [], {}
    for node in problems:
        result = checks.get(node['name'])
        node['diagnosis'] = diagnose(node, (result or {}).get('hook_log'), prefix)
        decision = decide(node, node['diagnosis'], (result or {}).get('records'), resume_admin_drains)
        if decision['action'] == 'resume':
            to_resume.append(node['name'])
            node['decision'] = decision['reason']
        else:
            kept[node['name']] = decision['reason']
    return to_resume, kept


def resume_records(problems, resumed, kept, started=None):
    """One check record (stage ``resume``) per problem node: passed when it was resumed, else failed with why it was kept;
    first one record (check ``slurmd``) per node where slurmd was started (``started``: node name -> what it did,
    :func:`started_text`), so the report names it even when the node came back by itself."""
    records = [record('resume', name, 'slurmd', 'fail' if 'still does not hear' in text or 'no longer lists' in text else 'pass', text)
               for name, text in sorted((started or {}).items())]
    for node in problems:
        name = node['name']
        if name in resumed:
            records.append(record('resume', name, 'resume', 'pass', '%s (was %s)' % (node.get('decision'), node['problem'])))
        else:
            records.append(record('resume', name, 'resume', 'fail', kept.get(name, 'not resumed')))
    return records


class ResumeFailure(ModuleFailure):
    """A validation_resume call failed (``msg``, ``result``)."""


# ---------------------------------------------------------------- input checks (before anything runs)

RECORD_STATUSES = ('pass', 'fail', 'skip')
# The longest a probe job may be given: a probe that needs more than a day is not a probe.
MAX_PROBE_TIMEOUT = 86400
# The longest resume.yml waits for slurmctld to hear from the slurmds it started (SlurmdTimeout is at most hours).
MAX_WAIT_TIMEOUT = 3600


def check_records(name, records):
    """A node's check records as ``decide`` reads them: a list of dicts with ``check`` and ``status`` (and a string ``reason``)."""
    require_list(name, records, element=require_dict)
    for index, rec in enumerate(records):
        where = '%s[%d]' % (name, index)
        require_str(where + '.check', rec.get('check'))
        require_choice(where + '.status', rec.get('status'), RECORD_STATUSES)
        require_str(where + '.reason', rec.get('reason'), allow_empty=True, allow_none=True)
    return records


def check_resume_input(params):
    """``validation_resume``'s options beyond the argument spec; raises ``InputError`` naming the option, the value and what is valid.

    ``names``: Slurm node names. ``checks``: node name -> the registered ``node_check`` result (a dict; its
    ``records`` a list of records, its ``hook_log`` a string; other keys of a registered result are ignored).
    ``probe_timeout``: 1 to 86400 seconds. ``reservation``: a Slurm reservation name or empty. ``dispatch``,
    ``dispatch_min_nodes``, ``allocation_wait``: how the probes reach Slurm (``_job_dispatch``).
    """
    for index, name in enumerate(params.get('names') or []):
        slurm_name('names[%d]' % index, name, 'a Slurm node name')
    for node, result in (params.get('checks') or {}).items():
        slurm_name('checks key', node, 'a Slurm node name')
        where = 'checks[%s]' % show(node)
        if not isinstance(result, dict):
            raise InputError('%s is %s, expected the registered result of gpucluster.bringup.node_check (a dict with records and hook_log)'
                             % (where, show(result)))
        if result.get('records') is not None:
            check_records(where + '.records', result['records'])
        require_str(where + '.hook_log', result.get('hook_log'), allow_empty=True, allow_none=True)
    require_int('probe_timeout', params.get('probe_timeout'), minimum=1, maximum=MAX_PROBE_TIMEOUT, unit='seconds')
    slurm_name('reservation', params.get('reservation') or '', 'a Slurm reservation name (empty: probe without one)', allow_empty=True)
    require_match('prefix', params.get('prefix', 'gpuhc'), r'^[A-Za-z][A-Za-z0-9_-]*\Z',
                  'the health check\'s reason prefix, a word such as "gpuhc" (letters, digits, "-", "_")')
    for node, text in (params.get('started') or {}).items():
        slurm_name('started key', node, 'a Slurm node name')
        require_str('started[%s]' % show(node), text)
    require_int('wait_timeout', params.get('wait_timeout', 60), minimum=1, maximum=MAX_WAIT_TIMEOUT, unit='seconds')
    dispatch_settings(params.get('dispatch'), params.get('dispatch_min_nodes'), params.get('allocation_wait'))
