# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prolog / epilog hook runner and TaskProlog logic (pure functions).

The role ``gpucluster.bringup.slurm`` installs this file next to the runner
script ``gpucluster-slurm-hooks`` on every compute node; the runner does the
I/O (listing ``prolog.d``/``epilog.d``, running hooks, syslog, scontrol) and
asks this module what to do.  Standard library only; the role copies it to
the nodes with what it imports (``_validate_input.py``: the node_library filter).

Hook names follow DeepOps: ``<NN>-<class>-<name>`` where class is

* ``all``: every job;
* ``exclusive``: only jobs that own the node (``--exclusive``,
  ``OverSubscribe=NO`` in ``scontrol show job``);
* ``lastuserjob``: epilog only, when the job is the user's last job on the
  node (``squeue -w NODE -u USER`` lists no other job).

A hook may declare, in a comment among its first lines,
``# requires: enroot nvidia-smi`` (skipped, not failed, when a tool is
missing) and ``# timeout: 30`` (seconds, overrides the runner default).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import is_slurm_name
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._drain_tag import MAX_REASON, clean, format_tag

HOOK_CLASSES = ('all', 'exclusive', 'lastuserjob')
PHASES = ('prolog', 'epilog')
IGNORED_SUFFIXES = ('~', '.bak', '.orig', '.swp', '.rpmnew', '.rpmsave', '.rpmorig', '.dpkg-old', '.dpkg-new',
                    '.dpkg-dist', '.dpkg-tmp', '.ucf-old', '.ucf-new', '.ucf-dist', '.disabled')
HEADER_LINES = 30

_HOOK_NAME = re.compile(r'^(?P<order>\d+)-(?P<class>[a-z]+)-(?P<label>[A-Za-z0-9][A-Za-z0-9._-]*)$')
_HEADER = re.compile(r'^#\s*(?P<key>requires|timeout)\s*:\s*(?P<value>.*?)\s*$', re.IGNORECASE)
_TOOL = re.compile(r'^[A-Za-z0-9._/+-]+$')
_JOB_FIELD = re.compile(r'(?:^|\s)([A-Za-z][A-Za-z0-9:/_]*)=(\S*)')


def parse_hook_name(name):
    """``'50-all-enroot-dirs'`` -> ``{'order': 50, 'class': 'all', 'label': 'enroot-dirs'}``.

    Raises ``ValueError`` for a name that does not follow ``NN-class-name``
    or uses an unknown class.
    """
    match = _HOOK_NAME.match(name or '')
    if not match:
        raise ValueError('hook "%s" is not named <NN>-<class>-<name> (e.g. "50-all-enroot-dirs"); classes: %s'
                         % (name, ', '.join(HOOK_CLASSES)))
    if match.group('class') not in HOOK_CLASSES:
        raise ValueError('hook "%s" has class "%s"; valid classes: %s' % (name, match.group('class'), ', '.join(HOOK_CLASSES)))
    return {'order': int(match.group('order')), 'class': match.group('class'), 'label': match.group('label')}


def is_ignored(name):
    """Files the runner never considers: hidden files and package-manager or editor leftovers."""
    return name.startswith('.') or name.endswith(IGNORED_SUFFIXES)


def parse_header(text, lines=HEADER_LINES):
    """``{'requires': [tools], 'timeout': seconds or None}`` from a hook's first lines."""
    requires = []
    timeout = None
    for raw in (text or '').splitlines()[:lines]:
        match = _HEADER.match(raw.strip())
        if not match:
            continue
        key, value = match.group('key').lower(), match.group('value')
        if key == 'requires':
            for tool in re.split(r'[\s,]+', value):
                if not tool:
                    continue
                if not _TOOL.match(tool):
                    raise ValueError('"# requires:" names "%s", which is not a command name or path' % tool)
                if tool not in requires:
                    requires.append(tool)
        else:
            if not re.match(r'^\d+$', value) or int(value) < 1:
                raise ValueError('"# timeout: %s" must be a whole number of seconds, at least 1' % value)
            timeout = int(value)
    return {'requires': requires, 'timeout': timeout}


def needed_job_facts(names, phase):
    """Which job facts the plan needs: a subset of ``{'exclusive', 'last_user_job'}``.

    The runner asks slurmctld (``scontrol``/``squeue``) only for these, so
    a directory of ``-all-`` hooks costs no RPC.
    """
    needed = set()
    for name in names:
        try:
            klass = parse_hook_name(name)['class']
        except ValueError:
            continue
        if klass == 'exclusive':
            needed.add('exclusive')
        elif klass == 'lastuserjob' and phase == 'epilog':
            needed.add('last_user_job')
    return needed


def plan(hooks, phase, job, tool_present, default_timeout):
    """Decide, in name order, which hooks run.

    ``hooks``: ``[{'name': str, 'executable': bool, 'header': parse_header() result}]``;
    ``job``: ``{'exclusive': bool or None, 'last_user_job': bool or None}``
    (``None`` when unknown); ``tool_present``: ``{tool: bool}`` for every
    required tool.  Returns ``[{'name', 'run', 'reason', 'timeout'}]``;
    ignored files (see :func:`is_ignored`) are left out entirely.
    """
    if phase not in PHASES:
        raise ValueError('phase "%s" is not one of: %s' % (phase, ', '.join(PHASES)))
    if not isinstance(default_timeout, int) or default_timeout < 1:
        raise ValueError('default hook timeout %r must be a whole number of seconds, at least 1' % (default_timeout,))
    result = []
    for hook in sorted(hooks, key=lambda h: h['name']):
        name = hook['name']
        if is_ignored(name):
            continue
        header = hook.get('header') or {'requires': [], 'timeout': None}
        timeout = header.get('timeout') or default_timeout
        entry = {'name': name, 'run': False, 'reason': '', 'timeout': timeout}
        result.append(entry)
        try:
            klass = parse_hook_name(name)['class']
        except ValueError as exc:
            entry['reason'] = 'skipped: %s' % exc
            continue
        if not hook.get('executable'):
            entry['reason'] = 'skipped: not executable'
            continue
        if klass == 'exclusive' and job.get('exclusive') is not True:
            entry['reason'] = 'skipped: job does not own the node' if job.get('exclusive') is False else \
                'skipped: could not tell whether the job owns the node'
            continue
        if klass == 'lastuserjob':
            if phase != 'epilog':
                entry['reason'] = 'skipped: lastuserjob hooks run only in the epilog'
                continue
            if job.get('last_user_job') is not True:
                entry['reason'] = 'skipped: the user has other jobs on this node' if job.get('last_user_job') is False else \
                    'skipped: could not tell whether this is the user\'s last job on this node'
                continue
        missing = [tool for tool in header.get('requires', []) if not tool_present.get(tool)]
        if missing:
            entry['reason'] = 'skipped: requires %s, not found' % ', '.join(missing)
            continue
        entry['run'] = True
        entry['reason'] = 'run'
    return result


def parse_scontrol_job(text):
    """Fields of ``scontrol show job -o JOBID`` (one line) as a dict."""
    return dict(_JOB_FIELD.findall((text or '').strip()))


def is_exclusive(fields):
    """True when the job owns its nodes (``OverSubscribe=NO``); None if the field is absent."""
    value = fields.get('OverSubscribe', fields.get('Shared'))
    if value is None:
        return None
    return value.upper() in ('NO', '0')


def is_last_user_job(squeue_output, job_id):
    """True when ``squeue -h -o %A -w NODE -u USER`` lists no job but ``job_id``."""
    others = [line.strip() for line in (squeue_output or '').splitlines() if line.strip() and line.strip() != str(job_id)]
    return not others


# ------------------------------------------------------------ command lines
#
# The values come from slurmd's environment (SLURM_JOB_ID, SLURMD_NODENAME, SLURM_JOB_USER), not from a user; still
# each is checked before it goes on a command line: scontrol reads options anywhere on its line (getopt without "+"),
# so a job id or name with a leading "-" would be one of its options, and a "," or "=" would change what it acts on.
# A value that fails gives no command (None): the fact stays unknown, the drain is logged as not done.

_JOB_ID = re.compile(r'[0-9]+\Z')
_USER = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.@-]*\Z')


def job_show_argv(job_id):
    """``scontrol show job -o JOBID``; None unless ``job_id`` is a job id (digits)."""
    if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
        return None
    return ['scontrol', 'show', 'job', '-o', job_id]


def user_jobs_argv(node, user):
    """``squeue -h -o %A -w NODE -u USER`` (the user's jobs on the node); None unless both are names."""
    if not is_slurm_name(node) or not isinstance(user, str) or not _USER.match(user):
        return None
    return ['squeue', '-h', '-o', '%A', '-w', node, '-u', user]


DRAIN_REASON_LINE = 'drain-reason: '
MAX_DRAIN_REASON = MAX_REASON


def asked_reason(output):
    """The drain reason a failed hook asked for with a last line ``drain-reason: <text>`` (the GPU health check's
    prolog tier: ``drain-reason: gpuhc:prolog:xid: ...``), cleaned for scontrol; None when it asked none."""
    asked = None
    for line in (output or '').splitlines():
        if line.startswith(DRAIN_REASON_LINE):
            asked = line[len(DRAIN_REASON_LINE):]
    asked = clean(asked or '', MAX_DRAIN_REASON)
    return asked or None


def held_drain(node):
    """The reason of ``node`` (a ``slurm._nodes`` node) when it is drained or draining with one already, else None: a
    failed hook does not replace it (it would erase an admin's words, or the closed loop's reboot tag, which is the
    loop's state: a node rebooting for the loop whose epilog fails would come back as the hook's drain)."""
    if not node or not node.get('reason'):
        return None
    flags = node.get('flags') or ()
    return node['reason'] if 'DRAIN' in flags or node.get('state') in ('DRAIN', 'DRAINED', 'DRAINING') else None


def drain_reason(phase, name, rc, timed_out, limit=None, asked=None):
    """The node's drain reason: the one the failed hook asked for (:func:`asked_reason`), else the hook tag
    (``slurm._drain_tag``) that names the hook, e.g. ``prolog hook 50-all-x failed (exit 1)``; a timeout always names
    the hook."""
    if asked and not timed_out and rc is not None and rc > 0:
        return asked
    if timed_out:
        what = 'timed out after %ss' % limit
    elif rc is not None and rc < 0:
        what = 'killed by signal %d' % -rc
    else:
        what = 'failed (exit %s)' % rc
    try:
        return format_tag('hook', name, what, scope=phase)
    except ValueError:
        # a name or an exit status no tag holds (never one of the runner's own hooks): the words as they are
        return clean('%s hook %s %s' % (phase, name, what))


def log_line(phase, job_id, name, rc, seconds, status):
    """One syslog line per hook: name, exit code and duration."""
    return '%s job=%s hook=%s rc=%s duration=%.3fs status=%s' % (
        phase, job_id or '-', name, '-' if rc is None else rc, seconds, status)


def phase_from_program(program):
    """``prolog`` or ``epilog`` from the runner's name or first argument."""
    base = program.rsplit('/', 1)[-1].lower()
    for phase in PHASES:
        if phase in base:
            return phase
    raise ValueError('cannot tell prolog from epilog by the name "%s"; call the runner as "... prolog" or "... epilog"' % program)


# --- TaskProlog: the allocated MIG instances' UUIDs ------------------------

def parse_uuid_map(text):
    """``{index: uuid}`` from the GRES UUID map ``_gres.render_uuid_map`` writes (``<index> <type> <uuid>`` lines, ``#`` comments)."""
    result = {}
    for number, raw in enumerate((text or '').splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        fields = line.split()
        if len(fields) != 3 or not fields[0].isdigit():
            raise ValueError('GRES UUID map line %d: "%s" is not "<index> <type> <uuid>"' % (number, line))
        index = int(fields[0])
        if index in result:
            raise ValueError('GRES UUID map line %d: index %d is listed twice' % (number, index))
        result[index] = fields[2]
    return result


def _indices(value):
    indices = []
    for part in (value or '').split(','):
        part = part.strip()
        if not part:
            continue
        match = re.match(r'^(\d+)(?:-(\d+))?$', part)
        if not match:
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        indices.extend(range(low, high + 1))
    return indices


def task_prolog_lines(env, uuid_text, mode='mig'):
    """TaskProlog stdout lines that point CUDA at the allocated devices by UUID.

    The allocated GRES indices come from ``SLURM_STEP_GPUS`` (a step),
    else ``SLURM_JOB_GPUS`` (a batch script).  With ``mode='mig'`` the
    variable is set only when one of them is a MIG instance (with several
    MIG devices in ``CUDA_VISIBLE_DEVICES`` as indices, CUDA uses only the
    first); ``'all'`` also maps full GPUs.  Returns ``[]`` when there is
    nothing to change.
    """
    if mode not in ('mig', 'all'):
        raise ValueError('TaskProlog mode "%s" is not one of: mig, all' % mode)
    raw = env.get('SLURM_STEP_GPUS') or env.get('SLURM_JOB_GPUS') or ''
    indices = _indices(raw)
    if not indices:
        return []
    mapping = parse_uuid_map(uuid_text)
    uuids = []
    for index in indices:
        if index not in mapping:
            return ['print GRES index %d is not in the GRES UUID map; CUDA_VISIBLE_DEVICES left as Slurm set it' % index]
        uuids.append(mapping[index])
    if mode == 'mig' and not any(uuid.startswith('MIG-') for uuid in uuids):
        return []
    return ['export CUDA_VISIBLE_DEVICES=%s' % ','.join(uuids)]


# --- Whether the cluster needs the TaskProlog ------------------------------

def task_prolog_needs(hosts):
    """Which compute nodes need the TaskProlog, and why: ``[(host, reason)]`` sorted by host.

    ``hosts``: ``{host: its values of slurm_task_prolog_uuids, slurm_gres_autodetect, slurm_gres_sharing,
    slurm_hooks_shipped and mig_layout ('' or absent off the GPU nodes)}``.  A node needs it for the MIG UUIDs
    (``uuids`` 'all', or 'mig' with a MIG layout whose GRES are written by hand: Slurm's NVML autodetection exports
    the UUIDs itself) and for the MPS variables (sharing 'mps' with the shipped MPS hooks).  slurm.conf has one
    TaskProlog for the whole cluster, and slurmstepd runs it inside pyxis containers, where it cannot run: it is
    configured only when a node needs it.
    """
    needs = []
    for host in sorted(hosts):
        node = hosts[host] or {}
        uuids, shipped = node.get('slurm_task_prolog_uuids'), node.get('slurm_hooks_shipped')
        if uuids == 'all':
            needs.append((host, "slurm_task_prolog_uuids is 'all' (every allocated GPU exported by UUID)"))
        elif uuids == 'mig' and node.get('mig_layout') and node.get('slurm_gres_autodetect') != 'nvml':
            needs.append((host, "mig_layout %s with hand-written MIG GRES (slurm_task_prolog_uuids 'mig': the MIG UUIDs)"
                          % node['mig_layout']))
        elif node.get('slurm_gres_sharing') == 'mps' and isinstance(shipped, list) and 'mps' in shipped:
            needs.append((host, "slurm_gres_sharing is 'mps' (the MPS variables of the job)"))
    return needs


def hook_files(shipped, table, extra, conf_dir, old=()):
    """install_files entries of the shipped hooks (wanted ones installed, the others and ``old`` removed) and site hooks.

    ``table``: ``{name: [{phase, name}]}`` of the hooks the role ships; ``shipped``: the names wanted; ``extra``: the
    site's own hooks ``[{phase, name, src}]``; ``old``: paths under ``conf_dir`` that earlier releases installed.
    """
    if not isinstance(table, dict):
        raise ValueError('the table of shipped hooks must be a dict of name -> [{phase, name}]')
    unknown = [name for name in shipped or [] if name not in table]
    if unknown:
        raise ValueError('slurm_hooks_shipped: %s not shipped; valid: %s' % (', '.join(unknown), ', '.join(sorted(table))))
    entries = []
    for key in sorted(table):
        for hook in table[key]:
            dest = '%s/%s.d/%s' % (conf_dir, hook['phase'], hook['name'])
            if key in (shipped or []):
                entries.append({'dest': dest, 'src': 'hooks/%s' % hook['name'], 'mode': '0755'})
            else:
                entries.append({'dest': dest, 'state': 'absent'})
    for hook in extra or []:
        entries.append({'dest': '%s/%s.d/%s' % (conf_dir, hook['phase'], hook['name']), 'src': hook['src'], 'mode': '0755'})
    for path in old:
        entries.append({'dest': '%s/%s' % (conf_dir, path), 'state': 'absent'})
    return entries
