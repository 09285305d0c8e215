# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one reader of Slurm's node listings (pure logic, standard library only).

``scontrol -o show node [NAME]`` prints one line per node: ``Key=value`` pairs
separated by spaces, in a fixed order (Slurm ``src/api/node_info.c``).  Most
values hold no space; ``OS=`` does, and the free-text fields at the end of the
line do: ``Reason=<text> [<user>@<time>]`` (the suffix only when Slurm knows
who set it), then ``Comment=``, ``Extra=``, ``InstanceId=``, ``InstanceType=``,
``ReservationName=``, ``TLSCert...=``, ``Topology=``.  A reason may itself hold
``a=b`` or ``[x]``: it runs up to its ``[user@time]`` suffix, or, without one,
up to the next of those trailing keys.

:func:`parse_node_line` reads one line, :func:`parse_nodes` a whole listing
(``{name: node}``), :func:`parse_node` the answer about one node.  A node is
``{name, state, marks, flags, reason, reason_user, reason_time, comment,
boot_time, gres, partitions, fields}``: ``state`` the base state without
sinfo's marks (``IDLE`` of ``IDLE*+DRAIN``), ``marks`` those marks (``*``),
``flags`` the sorted ``+`` flags (``DRAIN``, ``NOT_RESPONDING``), ``fields``
every ``Key=value`` as printed.  ``parse_sinfo_names`` reads
``sinfo -h -N -o %N``, ``parse_squeue`` the jobs of ``squeue``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The fields Slurm prints after Reason= (each may be free text up to the next of them).
TRAILING_KEYS = ('Comment', 'Extra', 'InstanceId', 'InstanceType', 'ReservationName', 'TLSCertTokenSet', 'TLSCertLastRenewal',
                 'Topology')
# sinfo's and scontrol's marks after a state word: * not responding, ~ powered off, # powering up, ! powering down,
# % powering down, $ maintenance reservation, @ reboot pending, ^ rebooting, - planned (Slurm man sinfo, NODE STATE CODES).
STATE_MARKS = '*~#!%$@^-'
NOT_GIVEN = ('', '(null)', 'None', 'none', 'n/a')
# states and flags of a node whose slurmd has not registered (again) with slurmctld
NOT_REGISTERED = ('DOWN', 'NOT_RESPONDING', 'INVALID_REG', 'INVAL', 'UNKNOWN', 'FAIL', 'FUTURE', 'POWERED_DOWN', 'POWERING_UP')

_NAME = re.compile(r'^NodeName=(\S*)')
_KEY = re.compile(r' (?=[A-Za-z][A-Za-z0-9_]*=)')
_TRAILING = re.compile(r' (%s)=' % '|'.join(TRAILING_KEYS))
_TAIL_START = re.compile(r' (Reason|%s)=' % '|'.join(TRAILING_KEYS))
# the suffix Slurm adds to the first line of a reason: " [user@time]"
_SETTER = re.compile(r' \[([^\]@\s]+)@([^\]]+)\]')
_STATE_WORD = re.compile(r'[A-Z][A-Z_]*[%s]?\Z' % re.escape(STATE_MARKS))


def _clip(text, limit=200):
    text = (text or '').strip()
    return text if len(text) <= limit else text[:limit - 3] + '...'


def parse_state(value, name='?'):
    """``IDLE*+DRAIN`` -> ``('IDLE', '*', ['DRAIN'])``; ValueError naming the node unless it is Slurm's state words."""
    parts = value.split('+')
    if not value or not all(_STATE_WORD.match(part) for part in parts):
        raise ValueError('scontrol line for %s has State=%s, expected Slurm state words joined by "+" such as IDLE+DRAIN'
                         % (name, value[:100]))
    base = parts[0].rstrip(STATE_MARKS)
    return base, parts[0][len(base):], sorted(set(part.rstrip(STATE_MARKS) for part in parts[1:]))


def _reason(tail):
    """``(reason, user, time, rest)`` of the text after ``Reason=``; ``rest`` starts at the next trailing key."""
    for setter in _SETTER.finditer(tail):
        after = tail[setter.end():]
        # the suffix ends the first line of the reason: the end of the line, a trailing key, or a second line of it
        # (the line was stripped: nothing after the suffix is the end of the line)
        if not after or _TRAILING.match(after) or after.startswith('        '):
            more = _TRAILING.search(after)
            extra = (after[:more.start()] if more else after).strip()
            reason = tail[:setter.start()] + (' ' + extra if extra else '')
            return reason.strip(), setter.group(1), setter.group(2).strip(), after[more.start():] if more else ''
    more = _TRAILING.search(tail)
    return (tail[:more.start()] if more else tail).strip(), '', '', tail[more.start():] if more else ''


def _trailing(rest):
    """``{key: value}`` of the trailing free-text fields (``rest`` starts with `` Key=``)."""
    fields = {}
    starts = list(_TRAILING.finditer(rest))
    for number, match in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else len(rest)
        fields.setdefault(match.group(1), rest[match.end():end].strip())
    return fields


def parse_node_line(line):
    """One ``scontrol -o show node`` line as a node (see the module); ValueError naming the line when it is not one."""
    line = (line or '').strip()
    named = _NAME.match(line)
    if not named:
        raise ValueError('scontrol printed no "NodeName=" line: %r' % (_clip(line),))
    name = named.group(1)
    if not name:
        raise ValueError('scontrol line has an empty NodeName=: %r' % (_clip(line),))
    tail = _TAIL_START.search(line)
    head, rest = (line[:tail.start()], line[tail.start():]) if tail else (line, '')
    fields = {}
    for token in _KEY.split(head):
        key, sep, value = token.partition('=')
        if sep and key not in fields:
            fields[key] = value.strip()
    reason, user, when = '', '', ''
    if rest.startswith(' Reason='):
        reason, user, when, rest = _reason(rest[len(' Reason='):])
        fields['Reason'] = reason
    fields.update((key, value) for key, value in _trailing(rest).items() if key not in fields)
    if 'State' not in fields or not fields['State']:
        raise ValueError('scontrol line for %s has no State=: %r' % (name, _clip(line)))
    state, marks, flags = parse_state(fields['State'], name)

    def given(key):
        value = fields.get(key, '')
        return '' if value in NOT_GIVEN else value
    return {
        'name': name, 'state': state, 'marks': marks, 'flags': flags,
        'reason': '' if reason in NOT_GIVEN else reason, 'reason_user': user, 'reason_time': when,
        'comment': given('Comment'), 'boot_time': given('BootTime'), 'slurmd_start': given('SlurmdStartTime'),
        'gres': given('Gres'), 'partitions': [p for p in given('Partitions').split(',') if p],
        'fields': fields,
    }


def parse_nodes(text):
    """``scontrol -o show node`` (every line that starts with ``NodeName=``) as ``{name: node}``.

    ValueError names the line number and the line that is not a node."""
    nodes = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip().startswith('NodeName='):
            continue
        try:
            node = parse_node_line(line)
        except ValueError as exc:
            raise ValueError('%s (line %d)' % (exc, number))
        nodes[node['name']] = node
    return nodes


def parse_node(text):
    """The first node of ``scontrol -o show node NAME``; ValueError (starting ``scontrol``) when there is none."""
    line = next((row for row in (text or '').splitlines() if row.strip().startswith('NodeName=')), None)
    if line is None:
        raise ValueError('scontrol printed no "NodeName=" line: %r' % (_clip(text),))
    return parse_node_line(line)


def parse_sinfo_names(text):
    """The node names of ``sinfo -h -N -o %N`` (one per line, repeated once per partition), in order, each once."""
    names = []
    for name in (text or '').split():
        if name not in names:
            names.append(name)
    return names


def parse_squeue(text):
    """``squeue --noheader --format '%i|%T|%u|%j'`` lines as ``[{id, state, user, name}]``; ValueError names a line
    of another form."""
    jobs = []
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        parts = line.split('|', 3)
        if len(parts) != 4:
            raise ValueError('unexpected squeue line %r (expected id|state|user|name)' % line)
        jobs.append({'id': parts[0].strip(), 'state': parts[1].strip(), 'user': parts[2].strip(), 'name': parts[3].strip()})
    return jobs


def state_text(node):
    """``IDLE+DRAIN`` (base state and flags, marks left out)."""
    return '+'.join([node['state']] + list(node['flags']))


def is_registered(node):
    """Whether the node's slurmd is registered: none of ``NOT_REGISTERED`` in its state or flags."""
    return not any(word in NOT_REGISTERED for word in [node['state']] + list(node['flags']))


def gres_set(value):
    """``gpu:h100:8(S:0-1),gpu:1g.10gb:2`` as a set of entries without socket bindings, to compare two Gres= values."""
    items = re.split(r',(?![^()]*\))', value or '')
    return set(re.sub(r'\(S:[^)]*\)', '', item).strip() for item in items if item.strip() and item.strip() != '(null)')


def is_drained(node):
    """Whether the node is drained or draining (a ``DRAIN`` flag, or a ``DRAIN``/``DRAINED``/``DRAINING`` state)."""
    return 'DRAIN' in (node.get('flags') or ()) or node.get('state') in ('DRAIN', 'DRAINED', 'DRAINING')
