# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one drain tag: the Slurm drain reasons the collection writes, formatted and read back here (pure logic).

A tag is ``{owner, scope, check, detail}``; :func:`format_tag` writes it, :func:`parse_tag` reads it, :func:`owner`
and :func:`is_ours` tell whose a reason is.  The owners and the words they write (the written forms are those of
earlier releases, kept so that a node drained by an older version is still recognised, and so that the words users
and their scripts match in ``sinfo -R`` stay the same):

=========== ======================================== ==================================================
owner       reason                                   scope / check
=========== ======================================== ==================================================
healthcheck ``<prefix>:<tier>:<check>: <detail>``    tier (prolog, periodic, deep) / check (``xid``);
            (read too: ``healthcheck: <check>: ..``,  ``<prefix>`` is slurm_healthcheck_reason_prefix,
            and ``<prefix>:<check>: ..``, periodic)  default ``gpuhc``
loop        ``<loop>:<step>:<condition>: <detail>``  the closed loop (health/_node_loop): step (reset, reboot,
                                                     drain, service) / condition (``xid-79``); ``<loop>`` is its tag,
                                                     default ``gpuloop``
validate    ``validate: <stage>/<check>: <detail>``  stage (node, slurm, mpi, ...) / check (``gres_conf``)
mig         ``gpucluster.bringup.mig: <detail>``     none / none (the mig role around a layout change)
hook        ``<phase> hook <name> <what>``           phase (prolog, epilog) / hook name; ``<what>``:
                                                     ``failed (exit N)``, ``timed out after Ns``,
                                                     ``killed by signal N``
=========== ======================================== ==================================================

Any other reason is not ours (an admin's free text or Slurm's own words), even when one of these appears further on.
Every tag is one line without double quotes (scontrol takes ``Reason=`` as one word of its command line) and at most
``MAX_REASON`` characters (longer details end with ``...``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

OWNERS = ('healthcheck', 'loop', 'validate', 'mig', 'hook')
HEALTH_TIERS = ('prolog', 'periodic', 'deep')
HOOK_PHASES = ('prolog', 'epilog')
DEFAULT_PREFIX = 'gpuhc'
# the health check's prefix of earlier releases ("healthcheck: ecc: ..."), read as tier periodic
LEGACY_PREFIXES = ('healthcheck',)
MIG_OWNER = 'gpucluster.bringup.mig:'
VALIDATE_OWNER = 'validate:'
DEFAULT_LOOP_PREFIX = 'gpuloop'
# the closed loop's steps: a node whose GPUs it resets, it reboots, drains, or sends to service (hardware repair)
LOOP_STEPS = ('reset', 'reboot', 'drain', 'service')
MAX_REASON = 200

PREFIX = re.compile(r'[A-Za-z][A-Za-z0-9_-]*\Z')
WORD = re.compile(r'[A-Za-z0-9_.-]+\Z')
# (a tag with an empty detail ends with its ":")
_HEALTH = re.compile(r'^([A-Za-z][A-Za-z0-9_-]*):\s?(?:(%s):)?([a-z-]+):(?: |\Z)' % '|'.join(HEALTH_TIERS))
_LOOP = r'^%s:(' + '|'.join(LOOP_STEPS) + r'):([a-z0-9-]+):(?: |\Z)'
_VALIDATE = re.compile(r'^validate: ([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+):(?: |\Z)')
_HOOK = re.compile(r'^(prolog|epilog) hook (\S+) (failed \(exit -?\d+\)|timed out after \S+|killed by signal \d+)(.*)$')


def clean(text, limit=MAX_REASON):
    """``text`` on one line, ``"`` as ``'``, cut to ``limit`` characters (ending ``...``)."""
    text = ' '.join(str(text).replace('"', "'").split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _need(ok, what, value, valid):
    if not ok:
        raise ValueError('%s is %r, expected %s' % (what, value, valid))


def format_tag(owner, check=None, detail='', scope=None, prefix=DEFAULT_PREFIX, limit=MAX_REASON):
    """The drain reason of ``owner`` (see the module's table); ValueError names a bad owner, scope, check or prefix."""
    _need(owner in OWNERS, 'owner', owner, 'one of %s' % ', '.join(OWNERS))
    detail = ' '.join(str(detail or '').split())
    if owner == 'healthcheck':
        _need(isinstance(prefix, str) and PREFIX.match(prefix), 'prefix', prefix, 'a word such as "gpuhc" (letters, digits, "-", "_")')
        _need(scope in HEALTH_TIERS, 'tier', scope, 'one of %s' % ', '.join(HEALTH_TIERS))
        _need(isinstance(check, str) and re.match(r'[a-z-]+\Z', check), 'check', check, 'lower-case letters and "-" such as "xid"')
        text = '%s:%s:%s: %s' % (prefix, scope, check, detail)
    elif owner == 'loop':
        # prefix: the loop's own tag (DEFAULT_LOOP_PREFIX unless the site set the loop's tag)
        prefix = DEFAULT_LOOP_PREFIX if prefix == DEFAULT_PREFIX else prefix
        _need(isinstance(prefix, str) and PREFIX.match(prefix), 'prefix', prefix, 'a word such as "gpuloop" (letters, digits, "-", "_")')
        _need(scope in LOOP_STEPS, 'step', scope, 'one of %s' % ', '.join(LOOP_STEPS))
        _need(isinstance(check, str) and re.match(r'[a-z0-9-]+\Z', check), 'condition', check, 'lower-case letters, digits and "-" such as "xid-79"')
        text = '%s:%s:%s: %s' % (prefix, scope, check, detail)
    elif owner == 'validate':
        _need(isinstance(scope, str) and WORD.match(scope), 'stage', scope, 'a word such as "node"')
        _need(isinstance(check, str) and WORD.match(check), 'check', check, 'a word such as "gres_conf"')
        text = 'validate: %s/%s: %s' % (scope, check, detail)
    elif owner == 'mig':
        text = '%s %s' % (MIG_OWNER, detail)
    else:
        _need(scope in HOOK_PHASES, 'phase', scope, 'prolog or epilog')
        _need(isinstance(check, str) and re.match(r'\S+\Z', check), 'hook', check, 'a hook name without spaces')
        text = '%s hook %s %s' % (scope, check, detail)
        _need(_HOOK.match(text), 'hook detail', detail, '"failed (exit N)", "timed out after Ns" or "killed by signal N"')
    return clean(text, limit)   # clean() joins the words: no space is left at either end


def parse_tag(reason, prefix=DEFAULT_PREFIX, loop_prefix=DEFAULT_LOOP_PREFIX):
    """``{owner, scope, check, detail}`` of a reason the collection wrote (see the module's table), else None."""
    reason = (reason or '').strip()
    match = re.match(_LOOP % re.escape(loop_prefix), reason)
    if match:
        return {'owner': 'loop', 'scope': match.group(1), 'check': match.group(2), 'detail': reason[match.end():]}
    match = _HEALTH.match(reason)
    if match and match.group(1) in (prefix,) + LEGACY_PREFIXES:
        return {'owner': 'healthcheck', 'scope': match.group(2) or 'periodic', 'check': match.group(3), 'detail': reason[match.end():]}
    match = _VALIDATE.match(reason)
    if match:
        return {'owner': 'validate', 'scope': match.group(1), 'check': match.group(2), 'detail': reason[match.end():]}
    if reason.startswith(VALIDATE_OWNER):
        # an earlier or hand-made validate drain without <stage>/<check>
        return {'owner': 'validate', 'scope': None, 'check': None, 'detail': reason[len(VALIDATE_OWNER):].strip()}
    if reason.startswith(MIG_OWNER):
        return {'owner': 'mig', 'scope': None, 'check': None, 'detail': reason[len(MIG_OWNER):].strip()}
    match = _HOOK.match(reason)
    if match:
        return {'owner': 'hook', 'scope': match.group(1), 'check': match.group(2), 'detail': match.group(3) + match.group(4)}
    return None


def owner(reason, prefix=DEFAULT_PREFIX, loop_prefix=DEFAULT_LOOP_PREFIX):
    """The owner of a reason the collection wrote (``healthcheck``, ``loop``, ``validate``, ``mig``, ``hook``), else None."""
    tag = parse_tag(reason, prefix, loop_prefix)
    return tag['owner'] if tag else None


def is_ours(reason, prefix=DEFAULT_PREFIX, loop_prefix=DEFAULT_LOOP_PREFIX):
    """Whether the collection wrote the reason (an admin's text never is, whatever it contains further on)."""
    return parse_tag(reason, prefix, loop_prefix) is not None
