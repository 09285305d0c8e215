# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The deep tier's orchestration on the controller: which nodes, in which reservation, and what becomes of each (pure logic).

The ``health_deep`` module (``playbooks/health_deep.yml``) asks ``scontrol -o show node``, and this module:

* :func:`select` picks the nodes to test: GPU nodes that are idle, or drained by the GPU health check
  (``<prefix>:<tier>:<check>:`` reasons; with ``include_drained=all`` any drained node); busy nodes (jobs
  running or completing), down or not responding nodes, nodes already in a reservation are left out, each
  with why;
* :func:`batches` cuts them into groups tested one after the other (``batch_size``), so that a large fleet is
  never out of service all at once;
* ``_validation_resume.reservation_argv`` is the maintenance reservation (``Flags=MAINT,IGNORE_JOBS``, ``Users=root``) that
  holds one batch: no user job starts there while the deep jobs run; drained nodes are resumed into it;
* :func:`srun_argv` is one node's job: ``gpucluster-healthcheck --tier deep`` with every GPU of the node;
* :func:`settle` reads the job's report line and says what becomes of the node: drained with
  ``<prefix>:deep:<check>: <detail>`` when a check failed, its earlier drain restored (a drain of another
  tier, or an admin's, is never lifted here), or left resumed when the deep tier had drained it and every
  check passes now.  A node that something else drained while it was tested is left as it is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as drain_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import drained, parse_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._deep_tier import CHECKS, TIER, load_config, read_report
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import record
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    SLURM_NAME_TEXT, InputError, ModuleFailure, is_slurm_name, require_int, require_match, show,
    slurm_name)

STAGE = 'deep'
BUSY_STATES = ('ALLOCATED', 'MIXED', 'COMPLETING')
BUSY_FLAGS = ('COMPLETING',)
DOWN_STATES = ('DOWN', 'ERROR', 'FAIL', 'FUTURE', 'UNKNOWN')
DOWN_FLAGS = ('NOT_RESPONDING', 'FAIL', 'POWERED_DOWN', 'POWER_DOWN', 'POWERING_DOWN', 'POWERING_UP', 'REBOOT_ISSUED', 'REBOOT_REQUESTED')
RESERVED_FLAGS = ('MAINT', 'RESERVED')
# the reservation outlives the batch's longest job by this margin (minutes); it is deleted when the batch ends
RESERVATION_MARGIN_MINUTES = 10

_GRES_GPU = re.compile(r'^gpu(?::[^:(]+)?:(\d+)')


class DeepFailure(ModuleFailure):
    """A health_deep call failed (``msg``, ``result``)."""


def gres_gpus(gres):
    """The GPUs a node's ``Gres=`` offers (whole GPUs and MIG devices alike): ``gpu:h100:6(S:0-1),gpu:1g.10gb:2`` -> 8."""
    total = 0
    for item in re.split(r',(?![^()]*\))', gres or ''):
        match = _GRES_GPU.match(item.strip())
        if match:
            total += int(match.group(1))
    return total


def node_extras(nodes):
    """Per node (``{name: node}`` of ``slurm._nodes.parse_nodes``): ``{'gpus': N, 'partitions': [..]}``."""
    return dict((name, {'gpus': gres_gpus(node['gres']), 'partitions': node['partitions']}) for name, node in nodes.items())


def _state(node):
    return '+'.join([node['state']] + list(node['flags']))


def why_not(node, extra, include_drained, prefix):
    """Why ``node`` is not tested (text), or '' when it is."""
    if not extra.get('gpus'):
        return 'no GPU in its Gres'
    flags = set(node['flags'])
    if node['state'] in DOWN_STATES or flags & set(DOWN_FLAGS):
        return 'node is %s: the deep tier tests idle or drained nodes that answer' % _state(node)
    if node['state'] in BUSY_STATES or flags & set(BUSY_FLAGS):
        return 'jobs are running on it (%s): the deep tier tests idle or drained nodes' % _state(node)
    if flags & set(RESERVED_FLAGS):
        return 'it is in a reservation already (%s)' % _state(node)
    if drained(node):
        if include_drained == 'none':
            return 'drained ("%s"); include_drained=none tests idle nodes only' % node['reason']
        if drain_tag.owner(node['reason'], prefix) == 'loop':
            return 'drained by the closed loop ("%s"), which runs the deep tier on it itself' % node['reason']
        if include_drained == 'ours' and parse_tag(node['reason'], prefix) is None:
            return ('drained by someone else ("%s"%s); include_drained=all tests it and puts the drain back'
                    % (node['reason'], ', set by %s' % node['reason_user'] if node.get('reason_user') else ''))
        return ''
    if node['state'] != 'IDLE':
        return 'node is %s: the deep tier tests idle or drained nodes' % _state(node)
    return ''


def _usable_name(name):
    return is_slurm_name(name)


def select(nodes, extras, names, include_drained='ours', prefix='gpuhc'):
    """``(candidates, skipped)``: the nodes to test (``{name, gpus, partition, drained, reason, tag}``, by name) and
    name -> why a node is not tested.  ``names`` empty: every node with GPUs."""
    unknown = [name for name in names if name not in nodes]
    if unknown:
        raise DeepFailure('Slurm knows no node(s) %s; its nodes are: %s' % (', '.join(unknown), ', '.join(sorted(nodes))))
    wanted = list(names) if names else sorted(name for name in nodes if extras.get(name, {}).get('gpus'))
    candidates, skipped = [], {}
    for name in sorted(set(wanted)):
        node, extra = nodes[name], extras.get(name, {})
        why = why_not(node, extra, include_drained, prefix)
        if not why and not _usable_name(name):
            why = 'its name is not a Slurm node name this module puts on a command line (%s)' % SLURM_NAME_TEXT
        if not why and extra.get('partitions') and not _usable_name(extra['partitions'][0]):
            why = 'its partition %s is not a Slurm partition name this module puts on a command line' % show(extra['partitions'][0])
        if why:
            skipped[name] = why
            continue
        was_drained = drained(node)
        tag = parse_tag(node['reason'], prefix) if was_drained else None
        candidates.append({'name': name, 'gpus': extra['gpus'], 'partition': (extra.get('partitions') or [None])[0],
                           'drained': was_drained, 'reason': node['reason'] if was_drained else '', 'tag': tag})
    return candidates, skipped


def batches(candidates, size):
    """The candidates in groups of ``size`` (0: one group)."""
    if not size:
        return [list(candidates)] if candidates else []
    return [candidates[i:i + size] for i in range(0, len(candidates), size)]


def reservation_minutes(time_limit_minutes):
    return int(time_limit_minutes) + RESERVATION_MARGIN_MINUTES


# ---------------------------------------------------------------- command lines
#
# scontrol reads options anywhere on its command line (getopt without "+"), srun every word before its program:
# a name given as a word of its own, or the program, that starts with "-" would be an option. So every name that
# goes on a command line is checked here as a Slurm name (no leading "-", no spaces, "," or "="), whatever checked it
# before, and the program is an absolute path; ``InputError`` names the value.


def check_program(name, value):
    """The node program's path as srun's program: absolute (so never an option), no spaces or control characters."""
    return require_match(name, value, r'/[^\s\x00-\x1f]*[^/\s\x00-\x1f]',
                         'the absolute path of gpucluster-healthcheck on the nodes (a file: no spaces, not ending in "/")')


def srun_argv(candidate, reservation, program, settings, time_limit, srun='srun', immediate=120):
    """One node's deep job: every GPU of the node, the whole node, inside the reservation."""
    slurm_name('node name', candidate['name'], 'a Slurm node name')
    slurm_name('reservation', reservation, 'a Slurm reservation name')
    if candidate.get('partition'):
        slurm_name('partition', candidate['partition'], 'a Slurm partition name')
    check_program('program', program)
    argv = [srun, '--reservation=%s' % reservation, '--nodelist=%s' % candidate['name'], '--nodes=1', '--ntasks=1', '--exclusive',
            '--gres=gpu:%d' % candidate['gpus'], '--time=%d' % time_limit, '--immediate=%d' % immediate, '--job-name=gpucluster-deep-health']
    if candidate.get('partition'):
        argv.append('--partition=%s' % candidate['partition'])
    return argv + [program, '--tier', TIER, '--node', candidate['name'], '--deep-config', json.dumps(settings, sort_keys=True)]


def _job_text(job):
    text = ' '.join(((job.get('stderr') or '') + ' ' + (job.get('stdout') or '')).split())
    return text[-300:] or 'no output'


def settle(candidate, job, node_after, resume_after=1):
    """What becomes of a tested node: ``{name, action, reason, message, records, report}``.

    ``verdict`` is False where the job printed no report (it failed to start, timed out or crashed): the node was not
    tested, whatever ``action`` puts it back as it was.
    ``action``: ``drain`` (with ``reason``), ``restore`` (drain again with the reason it had), ``resume`` (leave it
    resumed: the deep tier had drained it and every check passed in ``resume_after`` deep runs in a row, the count the
    node program keeps), ``none`` (an idle node that passes, or a node that something else drained during the test:
    its reason stays).
    """
    name = candidate['name']
    out = {'name': name, 'action': 'none', 'reason': None, 'message': '', 'records': [], 'report': None, 'verdict': True}
    before = candidate['reason'] if candidate['drained'] else None
    if node_after is not None and drained(node_after) and node_after['reason'] != before:
        out['message'] = 'drained while it was tested ("%s"); left as it is' % node_after['reason']
    try:
        report = read_report(job.get('stdout'))
    except ValueError as exc:
        rc = job.get('rc')
        why = 'did not finish within %ss' % job.get('timeout') if job.get('timed_out') else 'failed (rc %s): %s' % (rc, _job_text(job))
        out['records'].append(record(STAGE, name, 'deep_job', 'fail', 'the deep tier job %s; %s' % (why, exc)))
        out['verdict'] = False
        if not out['message']:
            out['action'] = 'restore' if before is not None else 'none'
            out['reason'] = before
            out['message'] = 'the job gave no verdict (it %s); %s' % (why, 'its drain is put back' if before is not None else 'left in service')
        return out
    out['report'] = report
    for item in report['results']:
        status = item['status']
        detail = item.get('detail') or ''
        if status == 'error':
            status, detail = 'fail', 'could not run: %s' % detail
        extra = dict((key, item[key]) for key in ('value', 'threshold') if item.get(key) is not None)
        out['records'].append(record(STAGE, name, item['check'], status, detail, **extra))
    if out['message']:
        return out
    failed = [item for item in report['results'] if item['status'] == 'fail']
    ours = candidate.get('tag') is not None
    if failed:
        if before is not None and not ours:
            out.update(action='restore', reason=before, message='failing (%s); drained by someone else before, that drain is put back'
                       % report.get('reason'))
        else:
            out.update(action='drain', reason=report.get('reason'), message='failing: drained with "%s"' % report.get('reason'))
        return out
    errors = [item['check'] for item in report['results'] if item['status'] == 'error']
    if before is None:
        out['message'] = 'passes%s' % (' (could not run: %s)' % ', '.join(errors) if errors else '')
        return out
    if ours and candidate['tag']['tier'] == TIER and not errors:
        passes = report.get('passes') if isinstance(report.get('passes'), int) else 1
        if passes >= resume_after:
            out.update(action='resume', message='every deep check passes%s: resumed (was "%s")'
                       % (' (%d deep runs in a row)' % passes if resume_after > 1 else '', before))
            return out
        out.update(action='restore', reason=before, message='passes (%d of %d deep runs in a row): its drain is put back until run %d'
                   % (passes, resume_after, resume_after))
        return out
    why = ('some checks could not run (%s)' % ', '.join(errors) if errors else
           'drained by the %s tier, which resumes it itself' % candidate['tag']['tier'] if ours else 'drained by someone else')
    out.update(action='restore', reason=before, message='passes; %s: its drain is put back' % why)
    return out


def skipped_records(skipped):
    return [record(STAGE, name, 'deep_job', 'skip', why) for name, why in sorted(skipped.items())]


# ---------------------------------------------------------------- input checks (before anything runs)

MAX_TIME_LIMIT = 24 * 60
# more nodes than any Slurm cluster has: a batch size above it is a mistake (10**20 is not "all at once", 0 is)
MAX_BATCH_SIZE = 100000
# where no program lives (kernel file systems)
NOT_PROGRAM_ROOTS = ('/proc', '/sys', '/dev')
_PREFIX = re.compile(r'[A-Za-z][A-Za-z0-9_-]*\Z')


def _program(program):
    """``program``: an absolute path, not under a kernel file system; where it exists on this host too, an executable file."""
    if not isinstance(program, str) or not program.startswith('/'):
        raise InputError('program is %s, expected the absolute path of gpucluster-healthcheck on the nodes' % show(program))
    check_program('program', program)
    full = os.path.normpath(program)
    for root in NOT_PROGRAM_ROOTS:
        if full == root or full.startswith(root + '/'):
            raise InputError('program is %s, which is under %s, a kernel file system; expected the absolute path of '
                             'gpucluster-healthcheck on the nodes' % (show(program), root))
    # the program is on the nodes; where this host has the path too (a controller that is also a node, the role
    # installed here), a directory or a file that is not executable there is the wrong path
    if os.path.isdir(program):
        raise InputError('program is %s, which is a directory on this host; expected the absolute path of the gpucluster-healthcheck '
                         'program on the nodes' % show(program))
    if os.path.exists(program) and not os.access(program, os.X_OK):
        raise InputError('program is %s, which is not executable on this host; expected the absolute path of the gpucluster-healthcheck '
                         'program on the nodes (mode 0755)' % show(program))
    return program


def check_deep_input(params):
    """``health_deep``'s options beyond the argument spec; ``InputError`` names the option, the value and what is valid.

    Returns the deep tier settings as the node program will read them."""
    for index, name in enumerate(params['names']):
        slurm_name('names[%d]' % index, name, 'a Slurm node name')
    slurm_name('reservation', params.get('reservation'), 'a Slurm reservation name')
    require_int('time_limit', params.get('time_limit'), minimum=1, maximum=MAX_TIME_LIMIT, unit='minutes')
    require_int('batch_size', params.get('batch_size'), minimum=0, maximum=MAX_BATCH_SIZE, unit='nodes (0: all at once)')
    require_int('resume_after_passes', params.get('resume_after_passes', 1), minimum=1, maximum=100)
    if not _PREFIX.match(params['prefix']):
        raise InputError('prefix is %s, expected letters, digits, "_" and "-", starting with a letter (the health check\'s '
                         'reason_prefix)' % show(params['prefix']))
    _program(params.get('program'))
    data = params['settings']
    try:
        settings = load_config(data)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        raise InputError('settings: %s' % exc)
    if not settings['checks']:
        raise InputError('settings.checks is [], expected at least one of %s' % ', '.join(CHECKS))
    return dict((key, value) for key, value in sorted(data.items()))
