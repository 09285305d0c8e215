# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's state machine, pure (issue 48): from what Slurm says of a node to the Slurm commands to run.

The controller program ``gpucluster-node-loop`` (role ``gpucluster.bringup.slurm_healthcheck``) reads
``scontrol -o show node`` each pass, calls :func:`step` per node with the node's record (the state file) and
runs the argv lists it returns; after the deep tier ran on a node that came back it calls :func:`settle_deep`.

States (a node's record, ``record['state']``):

* ``ok``: nothing the loop manages;
* ``quarantine``: a ``comment``-action condition was seen (the health check wrote a hit in the node's Comment,
  :func:`hit_comment`); the loop counts hits per condition and promotes the node to a drain after
  ``promote_after`` hits within ``promote_window_s``;
* ``drained``: drained for a ``drain``-action condition (by the health check: its K-pass resume returns it; or
  promoted by the loop: a person returns it);
* ``reset-asked``: a ``reset-gpu`` condition: drained with the loop's ``reset`` tag (after requeueing the node's jobs when
  the policy allows); once the node is idle the GPU reset (:func:`reset_gpus`: the GPU(s) the condition names, else
  every GPU; then the mig role's boot unit, when enabled, re-creates the MIG layout) runs on the node as the first part
  of the deep tier's job (``health._loop_deep.with_reset``), and :func:`settle_deep` reads both: reset and deep tier
  pass -> returned; the reset or the deep tier fails (a GPU in use, a lost GPU) -> ``reboot-asked`` (counted in the
  reboot window), where a second failure sends it to ``service``;
* ``reboot-asked``: ``scontrol reboot ASAP reason=<loop tag>`` was run on the drained node (after requeueing the
  node's jobs when the policy allows);
* ``back``: the node booted after the request (or its GPU reset was done); the deep tier is to run on it;
* ``deep-passed`` and ``returned``: passing states of one pass (the node is resumed);
* ``service``: drained with the loop's service tag, for a person (hardware repair); the loop never returns it.

Every drain the loop makes carries its tag (:func:`loop_reason`, the ONE function that formats it), so a record
lost in a crash is derived again from Slurm's view (:func:`derive`): no node is left in a state nothing returns
it from.  A node drained or down for any reason that is neither the loop's nor the health check's (an admin's,
Slurm's) is never touched.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, require_bool, require_choice, require_int, require_match, show)
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _conditions as conditions
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as drain_tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes as slurm_nodes

STATES = ('ok', 'quarantine', 'drained', 'reset-asked', 'reboot-asked', 'back', 'deep-passed', 'returned', 'service')
EVENTS = ('detected', 'drained', 'reboot_asked', 'back', 'deep_passed', 'deep_failed', 'returned', 'service', 'quarantined',
          'promoted', 'reset_asked', 'reset_done', 'reset_failed')
# what the loop writes into a drain reason: <tag>:<step>:<condition>: <detail>
STEPS = drain_tag.LOOP_STEPS
MAX_REASON = 200
MAX_SEEN = 20
REBOOT_ACTIONS = ('reboot',)
RESET_ACTION = 'reset-gpu'
# how the health check names a GPU in its details: "GPU 3 (00000000:3B:00.0) ...", "the GPU at PCI 0000:3b:00.0 ..."
_GPU_INDEX = re.compile(r'\bGPU (\d+)\b')
_GPU_BUS = re.compile(r'\bPCI ((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b')

POLICY_DEFAULTS = {
    'scontrol': 'scontrol',
    # the health check's reason prefix (gpuhc:<tier>:<check>: ...) and the loop's own tag
    'prefix': 'gpuhc',
    'tag': 'gpuloop',
    # condition -> action overrides (_conditions.load_overrides)
    'actions': {},
    # more than reboot_max reboots within reboot_window_s: service
    'reboot_max': 2,
    'reboot_window_s': 86400,
    # a node not back this long after its reboot was asked: service
    'reboot_timeout_s': 1800,
    # a node waiting this long for its GPU reset (not idle, or the reset job gave no verdict): a reboot (counted); back from
    # its reboot this long without a deep-tier verdict: service -- so that no node waits in a state nothing returns it from
    'settle_timeout_s': 3600,
    # comment-mode: promote_after hits within promote_window_s drain the node
    'promote_after': 3,
    'promote_window_s': 86400,
    # requeue the jobs of a node that goes to reboot (the health check's requeue setting)
    'requeue': True,
    # run the deep tier on a node that came back (and carry out reset-gpu: the reset runs in the deep tier's job; with
    # the deep tier off a reset-gpu condition is carried out as a reboot); passes in a row it needs (its resume_passes)
    'deep': True,
    'deep_passes': 1,
}
_WORD = r'[A-Za-z][A-Za-z0-9_-]*'
_TIME = re.compile(r'^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$')


def load_policy(data, actions_name='actions'):
    """The loop's settings with defaults filled in; ``InputError`` names the first bad one and what is valid
    (``actions_name``: what the message calls the actions overrides, the role variable)."""
    if not isinstance(data, dict):
        raise InputError('the loop settings are %s, expected a mapping' % show(data))
    unknown = sorted(str(k) for k in data if k not in POLICY_DEFAULTS)
    if unknown:
        raise InputError('the loop settings have unknown key(s) %s; valid keys: %s' % (', '.join(unknown), ', '.join(sorted(POLICY_DEFAULTS))))
    policy = dict(POLICY_DEFAULTS)
    policy.update(data)
    require_match('scontrol', policy['scontrol'], r'[^\s-]\S*', 'a command name or path (no spaces, not starting with "-")')
    for key in ('prefix', 'tag'):
        require_match(key, policy[key], _WORD, 'a word such as "gpuloop" (letters, digits, "-", "_", starting with a letter)')
    if policy['prefix'] == policy['tag']:
        raise InputError('tag is %s, expected a word other than the health check prefix %s' % (show(policy['tag']), show(policy['prefix'])))
    policy['actions'] = conditions.load_overrides(policy['actions'], actions_name)
    for key, minimum in (('reboot_max', 0), ('reboot_window_s', 1), ('reboot_timeout_s', 60), ('settle_timeout_s', 60), ('promote_after', 1),
                         ('promote_window_s', 1), ('deep_passes', 1)):
        policy[key] = require_int(key, policy[key], minimum=minimum)
    for key in ('requeue', 'deep'):
        policy[key] = require_bool(key, policy[key])
    return policy


# ------------------------------------------------------------------ tags

def loop_reason(tag, step, condition, detail):
    """The loop's drain reason ``<tag>:<step>:<condition>: <detail>`` (one line, no double quotes, at most 200
    characters), written by the one drain tag of the collection (``slurm._drain_tag``, owner ``loop``)."""
    if step not in STEPS:
        raise ValueError('step %r is not one of %s' % (step, ', '.join(STEPS)))
    return drain_tag.format_tag('loop', condition, detail, scope=step, prefix=tag, limit=MAX_REASON)


def parse_loop_reason(reason, tag=POLICY_DEFAULTS['tag']):
    """``{'step', 'condition', 'detail'}`` of a reason :func:`loop_reason` wrote, else None (``slurm._drain_tag``)."""
    parsed = drain_tag.parse_tag(reason, loop_prefix=tag)
    if not parsed or parsed['owner'] != 'loop':
        return None
    return {'step': parsed['scope'], 'condition': parsed['check'], 'detail': parsed['detail']}


def hit_comment(prefix, condition, epoch, detail):
    """The Comment the health check writes for a ``comment``-action condition: ``<prefix>-hit:<condition>@<epoch>: <detail>``."""
    text = ('%s-hit:%s@%d: %s' % (prefix, condition, int(epoch), detail or '')).replace('\n', ' ').replace('"', "'")
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + '...'


def reset_gpus(detail):
    """The GPUs a condition's detail names, as ``nvidia-smi -i`` takes them: NVML indexes (``GPU 3``), else PCI bus ids
    (``the GPU at PCI 0000:3b:00.0``); ``[]`` when it names none (every GPU of the node is reset)."""
    indexes = []
    for found in _GPU_INDEX.findall(detail or ''):
        if found not in indexes:
            indexes.append(found)
    if indexes:
        return sorted(indexes, key=int)
    buses = []
    for found in _GPU_BUS.findall(detail or ''):
        if found.lower() not in buses:
            buses.append(found.lower())
    return buses


def parse_hit(comment, prefix=POLICY_DEFAULTS['prefix']):
    """``(condition, epoch, detail)`` of a :func:`hit_comment`, else None."""
    match = re.match(r'^%s-hit:([a-z0-9-]+)@(\d+): ?(.*)$' % re.escape(prefix), comment or '')
    return (match.group(1), int(match.group(2)), match.group(3)) if match else None


def quarantine_comment(tag, condition, hits, policy):
    return '%s:quarantine:%s: %d of %d hits in %ds' % (tag, condition, hits, policy['promote_after'], policy['promote_window_s'])


def health_tag(reason, prefix):
    """``{'tier', 'check', 'detail'}`` of the health check's drain reason ``<prefix>:<tier>:<check>: <detail>``, else None
    (``slurm._drain_tag``)."""
    parsed = drain_tag.parse_tag(reason, prefix)
    if not parsed or parsed['owner'] != 'healthcheck':
        return None
    return {'tier': parsed['scope'], 'check': parsed['check'], 'detail': parsed['detail']}


# ------------------------------------------------------------------ Slurm's view

def slurm_time(text):
    """Seconds since the epoch of Slurm's local ``YYYY-MM-DDTHH:MM:SS`` (None for ``None``, ``Unknown`` or another form)."""
    match = _TIME.match(text or '')
    if not match:
        return None
    return int(time.mktime(tuple(int(g) for g in match.groups()) + (0, 0, -1)))


def parse_nodes(text):
    """``scontrol -o show node`` as a list of ``{'name', 'state', 'flags', 'reason', 'reason_time', 'comment', 'boot_time'}``
    (times in seconds since the epoch), read by the one node parser (``slurm._nodes``); ``ValueError`` for a line that is
    not a node."""
    nodes = []
    for node in slurm_nodes.parse_nodes(text).values():
        nodes.append({
            'name': node['name'], 'state': node['state'], 'flags': sorted(set(node['flags'])), 'reason': node['reason'],
            'reason_time': slurm_time(node['reason_time']) if node['reason_time'] else None,
            'comment': node['comment'], 'boot_time': slurm_time(node['boot_time']),
        })
    return nodes


def is_drained(node):
    return 'DRAIN' in node['flags'] or node['state'] in ('DRAIN', 'DRAINED', 'DRAINING')


def is_down(node):
    return node['state'] == 'DOWN' or 'NOT_RESPONDING' in node['flags']


def is_busy(node):
    return node['state'] in ('ALLOCATED', 'MIXED', 'COMPLETING') or 'COMPLETING' in node['flags']


def rebooting(node):
    return bool(set(node['flags']) & set(('REBOOT_REQUESTED', 'REBOOT_ISSUED', 'POWERING_UP'))) or is_down(node)


def owner(node, policy):
    """``None`` (neither drained nor down), ``loop``, ``health`` (the health check's tag) or ``other`` (an admin, Slurm).

    A reason on a node that is neither drained nor down is history: slurmctld keeps the last reason when a node is
    resumed (update_node replaces a reason, never clears it; ``sinfo -R`` hides it), so a tag there is no drain."""
    if not (is_drained(node) or is_down(node)):
        return None
    if parse_loop_reason(node['reason'], policy['tag']):
        return 'loop'
    if health_tag(node['reason'], policy['prefix']):
        return 'health'
    if not (is_drained(node) or node['state'] == 'DOWN'):
        return None
    return 'other'


# ------------------------------------------------------------------ records

def new_record(now):
    return {'state': 'ok', 'since': now, 'condition': None, 'reason': None, 'asked_at': None, 'reboots': [], 'hits': {},
            'seen': [], 'deep_runs': 0, 'time_in': {},
            'via': None, 'gpus': [], 'resets': []}


class Result(object):
    """What one step decided: the new ``record``, the scontrol ``actions`` (argv lists, in order), the ``events``
    (dicts for _loop_events), whether the node wants a ``deep`` run now and the GPUs to ``reset`` first."""

    def __init__(self, record):
        self.record = record
        self.actions = []
        self.events = []
        self.deep = False
        # with deep: the GPUs to reset before the deep tier ([]: every GPU), None for no reset
        self.reset = None


def _move(result, node, state, now, event=None, **extra):
    record = result.record
    before = record['state']
    if state != before:
        record['time_in'][before] = round(record['time_in'].get(before, 0) + max(0, now - record['since']), 1)
        record['state'] = state
        record['since'] = now
    if event:
        entry = {'time': now, 'node': node['name'], 'event': event, 'from': before, 'to': state, 'condition': record['condition']}
        entry.update(extra)
        result.events.append(entry)


def _window(times, now, seconds):
    return [t for t in times if now - t < seconds]


def _note(record, text):
    if text and text not in record['seen']:
        record['seen'] = (record['seen'] + [text])[-MAX_SEEN:]


def _update(policy, node, *settings):
    return [policy['scontrol'], 'update', 'nodename=' + node['name']] + list(settings)


def derive(record, node, policy, now):
    """``record`` made to agree with what Slurm shows (the loop's own tag is the truth): after a crash, a lost state
    file or a change by hand.  Returns the record (a copy)."""
    # a copy down to its lists: the caller keeps the record it gave when Slurm refuses the actions
    record = copy.deepcopy(record) if record else new_record(now)
    record.setdefault('time_in', {})
    tag = parse_loop_reason(node['reason'], policy['tag']) if is_drained(node) or is_down(node) else None
    if tag:
        state = {'reset': 'reset-asked', 'reboot': 'reboot-asked', 'drain': 'drained', 'service': 'service'}[tag['step']]
        keep = state == record['state'] or (state in ('reboot-asked', 'reset-asked') and record['state'] == 'back')
        if not keep:
            record['state'], record['since'] = state, now
            record['condition'] = tag['condition']
            record['reason'] = node['reason']
            if state in ('reboot-asked', 'reset-asked'):
                record['asked_at'] = node['reason_time'] or now
                record['via'] = 'reset' if state == 'reset-asked' else 'reboot'
            if state == 'reset-asked':
                # a crash between the drain and the reset: the GPUs are read back from the tag
                record['gpus'] = reset_gpus(tag['detail'])
        return record
    if record['state'] in ('deep-passed', 'returned'):
        # passing states of one pass, cut short: the node is resumed, or it is picked up by its tag above
        record['state'], record['since'] = 'ok', now
    if record['state'] in ('reset-asked', 'reboot-asked', 'back', 'service') or (record['state'] == 'drained' and record.get('owner') == 'loop'):
        if record['state'] == 'back' and record.get('deep_started'):
            # resumed into the deep tier's reservation by the loop itself, which stopped before the verdict: the deep
            # tier runs again (a node is never returned without it)
            pass
        elif not (is_drained(node) or is_down(node)):
            # our drain is gone: a person resumed the node
            record['returned_by_hand'] = True
        elif (record['state'] in ('reboot-asked', 'back') and record.get('via') != 'reset' and health_tag(node['reason'], policy['prefix'])
              and not _booted_since(node, record['asked_at'])):
            # the health check's drain is still there, no boot since: the reboot command never reached Slurm
            record['state'], record['since'] = 'ok', now
    return record


def _booted_since(node, asked_at):
    return node['boot_time'] is not None and asked_at is not None and node['boot_time'] > asked_at


def _ask_reboot(result, node, policy, now, condition, detail):
    record = result.record
    recent = _window(record['reboots'], now, policy['reboot_window_s'])
    if len(recent) >= policy['reboot_max']:
        return _to_service(result, node, policy, now, condition, '%d reboots within %ds, the last for %s'
                           % (len(recent), policy['reboot_window_s'], detail))
    reason = loop_reason(policy['tag'], 'reboot', condition, detail)
    if policy['requeue'] and node.get('jobs'):
        result.actions.append([policy['scontrol'], 'requeue', ','.join(str(j) for j in node['jobs'])])
    if not is_drained(node):
        # ASAP on a node that is not drained yet makes Slurm lift the drain after the reboot (nextstate UNDRAIN): drained first
        result.actions.append(_update(policy, node, 'state=drain', 'reason=' + reason))
    # no nextstate: scontrol knows only RESUME and DOWN ("Invalid state: DRAIN"); a drained node keeps its drain and
    # this reason after the reboot (slurmctld clears DRAIN at registration only when a nextstate was given)
    result.actions.append([policy['scontrol'], 'reboot', 'ASAP', 'reason=' + reason, node['name']])
    record['reboots'] = recent + [now]
    record['asked_at'] = now
    record['reason'] = reason
    record['deep_runs'] = 0
    record['via'] = 'reboot'
    _move(result, node, 'reboot-asked', now, 'reboot_asked', reason=reason, jobs=list(node.get('jobs') or []))
    return result


def _ask_reset(result, node, policy, now, condition, detail):
    """Drained with the loop's reset tag (the jobs requeued first when the policy allows); the reset runs once it is idle."""
    record = result.record
    reason = loop_reason(policy['tag'], 'reset', condition, detail)
    if policy['requeue'] and node.get('jobs'):
        result.actions.append([policy['scontrol'], 'requeue', ','.join(str(j) for j in node['jobs'])])
    # the health check's drain (or none) replaced by the loop's tag: a crash from here on is derived again from it
    result.actions.append(_update(policy, node, 'state=drain', 'reason=' + reason))
    record['gpus'] = reset_gpus(detail)
    record['asked_at'] = now
    record['reason'] = reason
    record['deep_runs'] = 0
    record['via'] = 'reset'
    _move(result, node, 'reset-asked', now, 'reset_asked', reason=reason, gpus=list(record['gpus']), jobs=list(node.get('jobs') or []))
    if _idle(node):
        result.deep = True
        result.reset = list(record['gpus'])
    return result


def _idle(node):
    """Drained (or about to be) with no job left: DRAINED, not DRAINING, MIXED or ALLOCATED; not rebooting."""
    return not (is_busy(node) or node.get('jobs') or rebooting(node))


def _to_service(result, node, policy, now, condition, why):
    record = result.record
    record['condition'] = condition
    _note(record, why)
    seen = '; '.join(record['seen'])
    reason = loop_reason(policy['tag'], 'service', condition, why)
    result.actions.append(_update(policy, node, 'state=drain', 'reason=' + reason))
    result.actions.append(_update(policy, node, 'comment=' + ('%s:service: %s' % (policy['tag'], seen))[:MAX_REASON * 2]))
    record['reason'] = reason
    _move(result, node, 'service', now, 'service', reason=reason, seen=list(record['seen']))
    return result


def _detected(result, node, policy, now, tag):
    """A drain of the health check: what its condition's action says."""
    record = result.record
    condition = conditions.classify(tag['check'], tag['detail'], policy['actions']) or tag['check']
    action = policy['actions'].get(condition, 'drain')
    record['condition'] = condition
    _note(record, '%s:%s: %s' % (tag['tier'], tag['check'], tag['detail']))
    result.events.append({'time': now, 'node': node['name'], 'event': 'detected', 'from': record['state'], 'to': record['state'],
                          'condition': condition, 'action': action, 'reason': node['reason']})
    if action == RESET_ACTION:
        recent = _window(record.get('resets') or [], now, policy['reboot_window_s'])
        if not policy['deep']:
            # the reset runs in the deep tier's job: without the deep tier a reboot resets every GPU
            return _ask_reboot(result, node, policy, now, condition, tag['detail'])
        if recent:
            # a GPU reset within the window did not hold: a reboot
            return _ask_reboot(result, node, policy, now, condition, 'again after a GPU reset: %s' % tag['detail'])
        return _ask_reset(result, node, policy, now, condition, tag['detail'])
    if action in REBOOT_ACTIONS:
        return _ask_reboot(result, node, policy, now, condition, tag['detail'])
    if action == 'service':
        return _to_service(result, node, policy, now, condition, tag['detail'])
    # drain (and a none/comment condition the health check drained anyway): its drain stays, its resume returns it
    record['owner'] = 'health'
    record['reason'] = node['reason']
    _move(result, node, 'drained', now, 'drained', reason=node['reason'], action=action)
    return result


def _comment_hit(result, node, policy, now):
    """A hit the health check wrote in the Comment: count it, quarantine or promote."""
    record = result.record
    hit = parse_hit(node['comment'], policy['prefix'])
    if not hit:
        return False
    condition, epoch, detail = hit
    times = record['hits'].setdefault(condition, [])
    if epoch in times:
        return False
    times.append(epoch)
    record['hits'][condition] = times = _window(times, now, policy['promote_window_s'])
    record['condition'] = condition
    _note(record, '%s: %s' % (condition, detail))
    result.events.append({'time': now, 'node': node['name'], 'event': 'detected', 'from': record['state'], 'to': record['state'],
                          'condition': condition, 'action': policy['actions'].get(condition, 'comment'), 'detail': detail})
    # the node is not drained here: step() returns before this for every drained node (an admin's or Slurm's drain,
    # the health check's, and the loop's own, whose states all return earlier)
    if len(times) >= policy['promote_after']:
        reason = loop_reason(policy['tag'], 'drain', condition, '%d hits within %ds, the last: %s'
                             % (len(times), policy['promote_window_s'], detail))
        result.actions.append(_update(policy, node, 'state=drain', 'reason=' + reason))
        result.actions.append(_update(policy, node, 'comment=' + quarantine_comment(policy['tag'], condition, len(times), policy)))
        record['owner'] = 'loop'
        record['reason'] = reason
        _move(result, node, 'drained', now, 'promoted', reason=reason, hits=len(times))
        return True
    result.actions.append(_update(policy, node, 'comment=' + quarantine_comment(policy['tag'], condition, len(times), policy)))
    _move(result, node, 'quarantine', now, 'quarantined', hits=len(times))
    return True


def step(record, node, policy, now):
    """One pass of the loop over one node (``node``: a :func:`parse_nodes` entry, with ``jobs``: the ids of its
    running jobs).  Returns a :class:`Result`."""
    result = Result(derive(record, node, policy, now))
    record = result.record
    who = owner(node, policy)
    if who == 'other':
        # an admin's or Slurm's drain/down: never touched (a node rebooting shows DOWN with our reason, not this)
        if record['state'] == 'reboot-asked' and now - (record['asked_at'] or now) > policy['reboot_timeout_s']:
            # ... except that a reboot we asked for and Slurm gave up on ("reboot timed out") goes to service
            if node['reason'].startswith('reboot timed out'):
                return _to_service(result, node, policy, now, record['condition'], 'the node did not come back from its reboot')
        return result
    if record.pop('returned_by_hand', False) and who != 'loop':
        record['owner'] = None
        record['hits'] = {}  # a person returned it: counting starts afresh
        if record['state'] == 'service':
            record['reboots'] = []  # ... and after a repair, so do the reboots
        _move(result, node, 'ok', now, 'returned', by='hand')
        record['condition'] = None
    state = record['state']
    if state in ('reset-asked', 'reboot-asked', 'back') and who == 'health':
        # the health check (slurmd runs it at start, the prolog tier at the deep job) drained it again after the reboot
        tag = health_tag(node['reason'], policy['prefix'])
        _note(record, '%s:%s: %s' % (tag['tier'], tag['check'], tag['detail']))
        if record.get('via') == 'reset':
            # ... or around its GPU reset: the reset did not help, a reboot (counted in the window)
            return _ask_reboot(result, node, policy, now, record['condition'], 'still failing around the GPU reset: %s' % node['reason'])
        return _to_service(result, node, policy, now, record['condition'], 'still failing after the reboot: %s' % node['reason'])
    if state in ('reset-asked', 'back') and now - record['since'] > policy['settle_timeout_s'] and not rebooting(node):
        return _settle_timed_out(result, node, policy, now, state)
    if state == 'reset-asked':
        if _idle(node):
            # idle (drained, no job): the reset and the deep tier run in one job in the maintenance reservation
            result.deep = True
            result.reset = list(record.get('gpus') or [])
        return result
    if state == 'reboot-asked':
        if _booted_since(node, record['asked_at']) and not rebooting(node):
            result.deep = policy['deep']
            _move(result, node, 'back', now, 'back', boot_time=node['boot_time'])
            if not policy['deep']:
                return _return(result, node, policy, now, 'the deep tier is off')
            return result
        if now - (record['asked_at'] or now) > policy['reboot_timeout_s']:
            return _to_service(result, node, policy, now, record['condition'], 'not back %ds after the reboot was asked'
                               % policy['reboot_timeout_s'])
        return result
    if state == 'back':
        if rebooting(node):
            return result
        result.deep = policy['deep']
        if not policy['deep']:
            return _return(result, node, policy, now, 'the deep tier is off')
        return result
    if state == 'service':
        return result
    if who == 'health':
        tag = health_tag(node['reason'], policy['prefix'])
        if state == 'drained' and record.get('reason') == node['reason']:
            return result  # already handled; the health check's resume returns it
        return _detected(result, node, policy, now, tag)
    if state == 'drained' and who is None:
        by = record.get('owner') or 'health'
        record['owner'] = None
        _move(result, node, 'ok', now, 'returned', by='the health check' if by == 'health' else 'hand')
        record['condition'] = None
    if state == 'drained' and who == 'loop':
        return result
    if _comment_hit(result, node, policy, now):
        return result
    if result.record['state'] == 'quarantine':
        live = dict((c, _window(t, now, policy['promote_window_s'])) for c, t in record['hits'].items())
        record['hits'] = dict((c, t) for c, t in live.items() if t)
        if not record['hits']:
            if node['comment'].startswith('%s:quarantine:' % policy['tag']):
                result.actions.append(_update(policy, node, 'comment='))
            _move(result, node, 'ok', now, 'returned', by='quarantine window over')
            record['condition'] = None
    return result


def _settle_timed_out(result, node, policy, now, state):
    """A node in ``reset-asked`` or ``back`` past ``settle_timeout_s`` (its jobs never ended, or the deep tier never gave
    a verdict): a GPU reset that never happened becomes a reboot (counted in the window), a node back from its reboot
    without a verdict goes to service."""
    waited = int(now - result.record['since'])
    if state == 'reset-asked':
        why = 'the GPU reset not done %ds after it was asked (%s)' % (waited, 'no verdict from its job' if _idle(node) else 'the node never became idle')
        _note(result.record, why)
        return _ask_reboot(result, node, policy, now, result.record['condition'], why)
    return _to_service(result, node, policy, now, result.record['condition'], 'no deep-tier verdict %ds after the node came back' % waited)


def _return(result, node, policy, now, why, resumed=False):
    record = result.record
    if not resumed:
        result.actions.append(_update(policy, node, 'state=resume'))
    if node.get('comment', '').startswith(policy['tag'] + ':'):
        result.actions.append(_update(policy, node, 'comment='))
    _move(result, node, 'returned', now, 'returned', why=why)
    _move(result, node, 'ok', now)
    record['condition'] = None
    record['reason'] = None
    record['seen'] = []
    record['owner'] = None
    record['via'] = None
    return result


def _resumed_view(node):
    """``node`` as it is after the loop resumed it into the deep tier's reservation: not drained, no job of its own."""
    flags = [f for f in node['flags'] if f not in ('DRAIN', 'DRAINED', 'DRAINING')]
    return dict(node, flags=flags, state='IDLE' if is_drained(node) else node['state'], jobs=[])


def settle_deep(record, node, report, policy, now, resumed=False, reset=None):
    """After the deep tier ran on a node in ``back`` or ``reset-asked``: ``report`` is the deep tier's report
    (``_deep_tier.read_report``) or None when the job gave no verdict; ``reset`` (``reset-asked`` only) what the
    GPU reset before it said (``health._loop_deep.read_reset``: ``{'ok', 'rc', 'gpus', 'mig', 'text'}``, None when the
    job never got to it).  Pass (``passes`` at least ``deep_passes``): resumed (``resumed``: it was already, into the
    deep tier's reservation); fail: service, or after a GPU reset a reboot; a failed reset: a reboot; no verdict: stays
    (run again next pass)."""
    result = Result(copy.deepcopy(record))
    record = result.record
    if record['state'] not in ('back', 'reset-asked'):
        raise ValueError('%s is %s, the deep tier settles only a node that is back or waits for its GPU reset' % (node['name'], record['state']))
    view = _resumed_view(node) if resumed else node
    record['deep_runs'] = record.get('deep_runs', 0) + 1
    record['deep_started'] = False
    if record['state'] == 'reset-asked':
        if reset is None:
            result.events.append({'time': now, 'node': node['name'], 'event': 'deep_failed', 'from': 'reset-asked', 'to': 'reset-asked',
                                  'condition': record['condition'], 'verdict': 'none', 'why': 'the GPU reset gave no verdict'})
            return result
        if not reset.get('ok'):
            why = 'the GPU reset failed (rc=%s): %s' % (reset.get('rc'), reset.get('text') or 'no message')
            event = {'time': now, 'node': node['name'], 'event': 'reset_failed', 'from': 'reset-asked', 'to': None,
                     'condition': record['condition'], 'gpus': reset.get('gpus'), 'rc': reset.get('rc'), 'why': why}
            result.events.append(event)
            _note(record, why)
            _ask_reboot(result, view, policy, now, record['condition'], why)
            event['to'] = record['state']
            return result
        record['resets'] = _window(record.get('resets') or [], now, policy['reboot_window_s']) + [now]
        _move(result, node, 'back', now, 'reset_done', gpus=reset.get('gpus'), mig=reset.get('mig'))
    if report is None or report.get('status') == 2:
        why = 'no verdict' if report is None else 'the deep tier could not judge everything'
        result.events.append({'time': now, 'node': node['name'], 'event': 'deep_failed', 'from': 'back', 'to': 'back',
                              'condition': record['condition'], 'verdict': 'none', 'why': why})
        return result
    if report.get('status') == 1:
        failed = [r for r in report.get('results') or [] if r.get('status') == 'fail']
        after = 'the GPU reset' if record.get('via') == 'reset' else 'the reboot'
        why = 'the deep tier failed after %s: %s' % (after, report.get('reason') or ', '.join(r['check'] for r in failed))
        event = {'time': now, 'node': node['name'], 'event': 'deep_failed', 'from': 'back', 'to': 'service',
                 'condition': record['condition'], 'verdict': 'fail', 'checks': [r['check'] for r in failed]}
        result.events.append(event)
        if record.get('via') == 'reset':
            _note(record, why)
            _ask_reboot(result, view, policy, now, record['condition'], why)
            event['to'] = record['state']
            return result
        return _to_service(result, node, policy, now, record['condition'], why)
    passes = report.get('passes') or 0
    if passes < policy['deep_passes']:
        result.events.append({'time': now, 'node': node['name'], 'event': 'deep_passed', 'from': 'back', 'to': 'back',
                              'condition': record['condition'], 'passes': passes, 'needed': policy['deep_passes']})
        return result
    _move(result, node, 'deep-passed', now, 'deep_passed', passes=passes)
    return _return(result, node, policy, now, 'the deep tier passed', resumed)


# ------------------------------------------------------------------ the controller program's settings

SETTINGS_DEFAULTS = {
    'policy': {},
    'state_file': '/var/lib/gpucluster-node-loop/state.json',
    'events_file': '/var/log/gpucluster-node-loop.jsonl',
    # node_exporter's --collector.textfile.directory; '' writes no metrics
    'metrics_file': '/var/lib/node_exporter/textfile_collector/gpucluster_node_loop.prom',
    # http(s) URL the pass's events are POSTed to as JSON; '' none
    'webhook': '',
    'squeue': 'squeue',
    'srun': 'srun',
    # the deep tier: the node program (gpucluster-healthcheck --tier deep), run as one job per node in a maintenance reservation
    'deep_program': '/usr/local/sbin/gpucluster-healthcheck',
    'deep_reservation': 'gpucluster-loop-deep',
    'deep_time_limit': 30,
    'deep_settings': {},
    # how the deep runs reach Slurm (health/_loop_deep.py): one allocation per node type with a step per node
    # ('allocation'), one job per node ('per_node'), or the allocation from deep_dispatch_min_nodes runs in a pass on
    'deep_dispatch': 'auto',
    'deep_dispatch_min_nodes': 4,
    'deep_allocation_wait': 60,
}
DEEP_DISPATCH = ('auto', 'per_node', 'allocation')


def load_settings(data, actions_name='actions'):
    """The loop program's configuration file, validated (``InputError`` naming the first bad key and what is valid)."""
    if not isinstance(data, dict):
        raise InputError('the loop configuration is %s, expected a JSON object' % show(data))
    unknown = sorted(str(k) for k in data if k not in SETTINGS_DEFAULTS)
    if unknown:
        raise InputError('the loop configuration has unknown key(s) %s; valid keys: %s'
                         % (', '.join(unknown), ', '.join(sorted(SETTINGS_DEFAULTS))))
    settings = dict(SETTINGS_DEFAULTS)
    settings.update(data)
    settings['policy'] = load_policy(settings['policy'], actions_name)
    for key in ('state_file', 'events_file', 'deep_program'):
        require_match(key, settings[key], r'/\S*[^/]', 'an absolute path of a file')
    require_match('metrics_file', settings['metrics_file'], r'/\S*\.prom', 'an absolute path ending in .prom, or ""', allow_empty=True)
    require_match('webhook', settings['webhook'], r'https?://\S+', 'an http:// or https:// URL, or ""', allow_empty=True)
    for key in ('squeue', 'srun'):
        require_match(key, settings[key], r'[^\s-]\S*', 'a command name or path (no spaces, not starting with "-")')
    require_match('deep_reservation', settings['deep_reservation'], r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}', 'a Slurm reservation name')
    settings['deep_time_limit'] = require_int('deep_time_limit', settings['deep_time_limit'], minimum=1, maximum=24 * 60)
    require_choice('deep_dispatch', settings['deep_dispatch'], DEEP_DISPATCH)
    settings['deep_dispatch_min_nodes'] = require_int('deep_dispatch_min_nodes', settings['deep_dispatch_min_nodes'], minimum=1)
    settings['deep_allocation_wait'] = require_int('deep_allocation_wait', settings['deep_allocation_wait'], minimum=1, maximum=3600,
                                                   unit='seconds')
    if not isinstance(settings['deep_settings'], dict):
        raise InputError('deep_settings is %s, expected a mapping of deep tier settings' % show(settings['deep_settings']))
    return settings


def running_jobs(text, expand):
    """Node name -> job ids from ``squeue -h -t RUNNING,COMPLETING -o '%i %N'`` (``expand``: the hostlist expander)."""
    jobs = {}
    for line in (text or '').splitlines():
        words = line.split()
        if len(words) != 2 or not words[0].replace('_', '').isdigit():
            continue
        for name in expand(words[1]):
            jobs.setdefault(name, []).append(words[0])
    return jobs
