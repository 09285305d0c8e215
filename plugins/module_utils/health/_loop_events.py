# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the closed loop shows (issue 48), pure rendering: one JSON line per event, Prometheus text-file metrics
(node_exporter's textfile collector reads ``*.prom`` files of the text exposition format), a webhook body, and a
node's history read back from the log.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _conditions as conditions
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as node_loop

SOURCE = 'gpucluster-node-loop'
METRIC = 'gpucluster_loop'


def iso(epoch):
    """``2026-12-05T17:01:02+0000`` (local time with its offset) of seconds since the epoch."""
    return time.strftime('%Y-%m-%dT%H:%M:%S%z', time.localtime(epoch))


def event_line(event):
    """One event as one JSON line (no newline inside), its ``time`` kept as epoch seconds and shown as ``at``."""
    if event.get('event') not in node_loop.EVENTS:
        raise ValueError('event %r is not one of %s' % (event.get('event'), ', '.join(node_loop.EVENTS)))
    data = dict(event)
    data['at'] = iso(event['time'])
    data['source'] = SOURCE
    return json.dumps(data, sort_keys=True, separators=(',', ':'))


def count(counts, events):
    """``counts`` (the state file's, ``{'conditions': {"<condition> <action>": n}, 'events': {event: n}}``) with
    ``events`` added; returns a new dict."""
    result = {'conditions': dict((counts or {}).get('conditions') or {}), 'events': dict((counts or {}).get('events') or {})}
    for event in events:
        result['events'][event['event']] = result['events'].get(event['event'], 0) + 1
        if event['event'] == 'detected':
            key = '%s %s' % (event.get('condition'), event.get('action'))
            result['conditions'][key] = result['conditions'].get(key, 0) + 1
    return result


def _label(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _sample(name, labels, value):
    text = ','.join('%s="%s"' % (key, _label(val)) for key, val in labels)
    return '%s%s %s' % (name, '{%s}' % text if text else '', _number(value))


def _number(value):
    if isinstance(value, float) and value != int(value):
        return repr(round(value, 3))
    return str(int(value))


def _family(lines, name, kind, text, samples):
    lines.append('# HELP %s_%s %s' % (METRIC, name, text))
    lines.append('# TYPE %s_%s %s' % (METRIC, name, kind))
    lines.extend(_sample('%s_%s' % (METRIC, name), labels, value) for labels, value in samples)


def metrics(records, counts, now, policy):
    """The text-file metrics of the loop's state: ``records`` (node name -> record), ``counts`` (:func:`count`)."""
    names = sorted(records)
    lines = []
    _family(lines, 'node_state', 'gauge', 'The node\'s state in the closed loop (1 for the state it is in).',
            [((('node', n), ('state', s)), 1 if records[n]['state'] == s else 0) for n in names for s in node_loop.STATES])
    seconds = []
    for name in names:
        record = records[name]
        spent = dict(record.get('time_in') or {})
        spent[record['state']] = spent.get(record['state'], 0) + max(0, now - record['since'])
        seconds.extend(((('node', name), ('state', s)), round(spent.get(s, 0), 1)) for s in node_loop.STATES)
    _family(lines, 'state_seconds_total', 'counter', 'Seconds the node spent in each state since the loop first saw it.', seconds)
    _family(lines, 'reboots_in_window', 'gauge', 'Reboots the loop asked for within the reboot window (more than the limit: service).',
            [((('node', n),), len([t for t in records[n].get('reboots') or [] if now - t < policy['reboot_window_s']])) for n in names])
    hits = []
    for name in names:
        for condition, times in sorted((records[name].get('hits') or {}).items()):
            hits.append(((('node', name), ('condition', condition)), len([t for t in times if now - t < policy['promote_window_s']])))
    _family(lines, 'quarantine_hits', 'gauge', 'Comment-mode hits within the promotion window, per node and condition.', hits)
    detected = []
    for key, value in sorted(((counts or {}).get('conditions') or {}).items()):
        condition, _sep, action = key.partition(' ')
        detected.append(((('condition', condition), ('action', action)), value))
    _family(lines, 'conditions_total', 'counter', 'Conditions the loop detected, by condition and the action taken.', detected)
    _family(lines, 'events_total', 'counter', 'Transitions of the loop, by event.',
            [((('event', e),), ((counts or {}).get('events') or {}).get(e, 0)) for e in node_loop.EVENTS])
    _family(lines, 'last_pass_timestamp_seconds', 'gauge', 'When the loop last finished a pass (seconds since the epoch).', [((), now)])
    return '\n'.join(lines) + '\n'


def webhook_body(events):
    """The JSON body POSTed to the site's webhook for one pass's events (bytes)."""
    return json.dumps({'source': SOURCE, 'events': [dict(e, at=iso(e['time'])) for e in events]}, sort_keys=True).encode('utf-8')


def history(lines, node):
    """The events of ``node`` in a log of :func:`event_line` lines, oldest first (lines that are not such events are skipped)."""
    found = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get('source') == SOURCE and event.get('node') == node:
            found.append(event)
    return found


def history_text(events):
    """One line per event: ``<at> <event> <from> -> <to> <condition> (<action>): <reason>``."""
    out = []
    for event in events:
        action = ' (%s)' % event['action'] if event.get('action') else ''
        reason = ': %s' % event['reason'] if event.get('reason') else ''
        out.append('%s %s %s -> %s %s%s%s' % (event.get('at'), event['event'], event.get('from'), event.get('to'),
                                              event.get('condition') or '-', action, reason))
    return out


def sources():
    """Condition -> where its action comes from (for the report)."""
    return dict(conditions.SOURCES)
