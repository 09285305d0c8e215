# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The closed loop's event lines, text-file metrics (parsed back here) and webhook body (issue 48)."""

from __future__ import absolute_import, division, print_function

import json
import re
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _loop_events as ev
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop

T0 = 1796486400
POLICY = loop.load_policy({})
XID79 = 'gpuhc:periodic:xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, fallen off the bus); reboot the node'

# the text exposition format as node_exporter's textfile collector reads it (prometheus/common expfmt):
# "# HELP name text", "# TYPE name counter|gauge", then samples "name{l="v",...} value"
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\})? (-?[0-9.e+]+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\.)*)"')


def parse_textfile(text):
    """{(metric, ((label, value), ...)): value} and {metric: type}; AssertionError on anything the collector would refuse."""
    assert text.endswith('\n')
    samples, types, helped = {}, {}, set()
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name = line.split()[2]
            assert name not in helped, 'HELP twice for %s' % name
            helped.add(name)
            continue
        if line.startswith('# TYPE '):
            _h, _t, name, kind = line.split()
            assert kind in ('counter', 'gauge') and name not in types and name in helped
            types[name] = kind
            continue
        match = _SAMPLE.match(line)
        assert match, 'not a sample line: %r' % line
        name = match.group(1)
        assert name in types, 'sample before its TYPE: %r' % line
        labels = tuple(_LABEL.findall(match.group(2) or ''))
        key = (name, labels)
        assert key not in samples, 'series twice: %r' % line
        samples[key] = float(match.group(3))
    return samples, types


def pass_of_a_reboot():
    """A reboot asked at T0, the node back at T0+300 and returned after its deep run at T0+600."""
    node = {'name': 'gpu-01', 'state': 'MIXED', 'flags': ['DRAIN'], 'reason': XID79, 'reason_time': None, 'comment': '',
            'boot_time': T0 - 9000, 'jobs': [7]}
    first = loop.step(None, node, POLICY, T0)
    tag = [a for a in first.actions[-1] if a.startswith('reason=')][0][len('reason='):]
    back_node = dict(node, state='IDLE', reason=tag, boot_time=T0 + 200, jobs=[])
    second = loop.step(first.record, back_node, POLICY, T0 + 300)
    third = loop.settle_deep(second.record, back_node, {'status': 0, 'passes': 1, 'results': []}, POLICY, T0 + 600)
    return third.record, first.events + second.events + third.events


def test_each_event_is_one_json_line_and_the_history_reads_them_back():
    record, events = pass_of_a_reboot()
    assert [e['event'] for e in events] == ['detected', 'reboot_asked', 'back', 'deep_passed', 'returned']
    lines = [ev.event_line(e) for e in events]
    assert all('\n' not in line for line in lines)
    other = json.dumps({'node': 'gpu-01', 'action': 'drain'})  # the health check's own log lines are not the loop's
    back = ev.history(lines + [other, 'not json', ev.event_line(dict(events[0], node='gpu-02'))], 'gpu-01')
    assert [e['event'] for e in back] == [e['event'] for e in events]
    assert back[1]['reason'].startswith('gpuloop:reboot:xid-79:') and back[1]['jobs'] == [7]
    text = ev.history_text(back)
    assert re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} detected ok -> ok xid-79 \(reboot\): gpuhc:periodic:xid:', text[0]), text[0]
    assert ' reboot_asked ok -> reboot-asked xid-79: gpuloop:reboot:xid-79:' in text[1]
    with pytest.raises(ValueError, match='is not one of'):
        ev.event_line(dict(events[0], event='exploded'))


def test_the_metrics_parse_as_the_textfile_collector_reads_them():
    record, events = pass_of_a_reboot()
    quarantined = loop.new_record(T0)
    quarantined.update(state='quarantine', hits={'thermal': [T0 + 100, T0 + 500], 'ib-errors': [T0 - 90000]})
    records = {'gpu-01': record, 'gpu-"02"': quarantined}
    counts = ev.count(ev.count({}, events), [dict(events[0])])
    samples, types = parse_textfile(ev.metrics(records, counts, T0 + 660, POLICY))
    state = 'gpucluster_loop_node_state'
    assert types[state] == 'gauge' and types['gpucluster_loop_conditions_total'] == 'counter'
    assert samples[(state, (('node', 'gpu-01'), ('state', 'ok')))] == 1
    assert samples[(state, (('node', 'gpu-01'), ('state', 'back')))] == 0
    assert sum(v for (n, l), v in samples.items() if n == state and l[0] == ('node', 'gpu-01')) == 1
    assert samples[(state, (('node', 'gpu-\\"02\\"'), ('state', 'quarantine')))] == 1  # label values escaped
    seconds = 'gpucluster_loop_state_seconds_total'
    assert samples[(seconds, (('node', 'gpu-01'), ('state', 'reboot-asked')))] == 300
    assert samples[(seconds, (('node', 'gpu-01'), ('state', 'back')))] == 300
    assert samples[(seconds, (('node', 'gpu-01'), ('state', 'ok')))] == 60
    assert samples[('gpucluster_loop_reboots_in_window', (('node', 'gpu-01'),))] == 1
    assert samples[('gpucluster_loop_quarantine_hits', (('node', 'gpu-"02"'.replace('"', '\\"')), ('condition', 'thermal')))] == 2
    assert samples[('gpucluster_loop_quarantine_hits', (('node', 'gpu-\\"02\\"'), ('condition', 'ib-errors')))] == 0
    assert samples[('gpucluster_loop_conditions_total', (('condition', 'xid-79'), ('action', 'reboot')))] == 2
    assert samples[('gpucluster_loop_events_total', (('event', 'reboot_asked'),))] == 1
    assert samples[('gpucluster_loop_events_total', (('event', 'service'),))] == 0
    assert samples[('gpucluster_loop_last_pass_timestamp_seconds', ())] == T0 + 660


def test_no_node_gives_a_valid_file_too():
    samples, types = parse_textfile(ev.metrics({}, {}, T0, POLICY))
    assert samples.pop(('gpucluster_loop_last_pass_timestamp_seconds', ())) == T0 and len(types) == 7
    assert samples == dict((('gpucluster_loop_events_total', (('event', e),)), 0) for e in loop.EVENTS)


def test_each_metric_says_what_it_counts():
    """The HELP lines an admin reads in Prometheus or Grafana, one per metric, in the file's order."""
    helps = [line for line in ev.metrics({}, {}, T0, POLICY).splitlines() if line.startswith('# HELP ')]
    assert helps == [
        "# HELP gpucluster_loop_node_state The node's state in the closed loop (1 for the state it is in).",
        '# HELP gpucluster_loop_state_seconds_total Seconds the node spent in each state since the loop first saw it.',
        '# HELP gpucluster_loop_reboots_in_window Reboots the loop asked for within the reboot window (more than the limit: service).',
        '# HELP gpucluster_loop_quarantine_hits Comment-mode hits within the promotion window, per node and condition.',
        '# HELP gpucluster_loop_conditions_total Conditions the loop detected, by condition and the action taken.',
        '# HELP gpucluster_loop_events_total Transitions of the loop, by event.',
        '# HELP gpucluster_loop_last_pass_timestamp_seconds When the loop last finished a pass (seconds since the epoch).',
    ]


def test_the_parser_of_this_test_refuses_what_the_collector_refuses():
    for bad in ('x{a="1"} 1\n', '# HELP x y\n# TYPE x counter\nx{a="1} 1\n', '# HELP x y\n# TYPE x gauge\nx 1\nx 2\n', 'x 1'):
        with pytest.raises(AssertionError):
            parse_textfile(bad)


def test_the_webhook_body_carries_the_events():
    _record, events = pass_of_a_reboot()
    body = json.loads(ev.webhook_body(events).decode('utf-8'))
    assert body['source'] == 'gpucluster-node-loop' and [e['event'] for e in body['events']][-1] == 'returned'
    assert all('at' in e and e['node'] == 'gpu-01' for e in body['events'])


def test_a_gpu_reset_shows_as_event_lines_history_and_metrics():
    ecc = 'gpuhc:periodic:ecc: GPU 1 (00000000:2A:00.0) has 4 uncorrected ECC errors since the driver loaded (at most 0 allowed)'
    node = {'name': 'gpu-01', 'state': 'MIXED', 'flags': ['DRAIN'], 'reason': ecc, 'reason_time': None, 'comment': '',
            'boot_time': T0 - 9000, 'jobs': [7]}
    first = loop.step(None, node, POLICY, T0)
    tag = [a for a in first.actions[-1] if a.startswith('reason=')][0][len('reason='):]
    idle = dict(node, state='IDLE', reason=tag, jobs=[])
    second = loop.step(first.record, idle, POLICY, T0 + 100)
    assert second.deep and second.reset == ['1']
    third = loop.settle_deep(second.record, idle, {'status': 0, 'passes': 1, 'results': []}, POLICY, T0 + 160, resumed=True,
                             reset={'ok': True, 'rc': 0, 'gpus': ['1'], 'mig': 'restarted', 'text': ''})
    events = first.events + second.events + third.events
    assert [e['event'] for e in events] == ['detected', 'reset_asked', 'reset_done', 'deep_passed', 'returned']
    lines = [ev.event_line(e) for e in events]
    back = ev.history(lines, 'gpu-01')
    assert back[1]['gpus'] == ['1'] and back[2]['mig'] == 'restarted'
    text = ev.history_text(back)
    assert ' reset_asked ok -> reset-asked ecc: gpuloop:reset:ecc: GPU 1 ' in text[1]
    assert ' reset_done reset-asked -> back ecc' in text[2]
    samples, _types = parse_textfile(ev.metrics({'gpu-01': third.record}, ev.count({}, events), T0 + 200, POLICY))
    assert samples[('gpucluster_loop_events_total', (('event', 'reset_done'),))] == 1
    assert samples[('gpucluster_loop_events_total', (('event', 'reset_failed'),))] == 0
    assert samples[('gpucluster_loop_state_seconds_total', (('node', 'gpu-01'), ('state', 'reset-asked')))] == 160
    assert samples[('gpucluster_loop_reboots_in_window', (('node', 'gpu-01'),))] == 0


# ------------------------------------------------------------------ exact renderings

def test_the_whole_metrics_file_of_one_node():
    now = T0 + 0.5
    rec = loop.new_record(T0 - 30)
    rec.update(state='back', time_in={'ok': 12.3, 'reboot-asked': 100}, reboots=[now - 10, now - 86400],
               hits={'thermal': [now - 5, now - 86400], 'ib-errors': []})
    counts = {'conditions': {'xid-79 reboot': 2, 'thermal comment': 1}, 'events': {'detected': 3, 'back': 1}}
    states = ''.join('gpucluster_loop_node_state{node="n\\\\1\\n",state="%s"} %d\n' % (s, s == 'back') for s in loop.STATES)
    seconds = {'ok': '12.3', 'reboot-asked': '100', 'back': '30.5'}
    spent = ''.join('gpucluster_loop_state_seconds_total{node="n\\\\1\\n",state="%s"} %s\n' % (s, seconds.get(s, '0')) for s in loop.STATES)
    events = ''.join('gpucluster_loop_events_total{event="%s"} %d\n' % (e, {'detected': 3, 'back': 1}.get(e, 0)) for e in loop.EVENTS)
    assert ev.metrics({'n\\1\n': rec}, counts, now, POLICY) == (
        "# HELP gpucluster_loop_node_state The node's state in the closed loop (1 for the state it is in).\n"
        '# TYPE gpucluster_loop_node_state gauge\n' + states
        + '# HELP gpucluster_loop_state_seconds_total Seconds the node spent in each state since the loop first saw it.\n'
        '# TYPE gpucluster_loop_state_seconds_total counter\n' + spent
        + '# HELP gpucluster_loop_reboots_in_window Reboots the loop asked for within the reboot window (more than the limit: service).\n'
        '# TYPE gpucluster_loop_reboots_in_window gauge\n'
        'gpucluster_loop_reboots_in_window{node="n\\\\1\\n"} 1\n'
        '# HELP gpucluster_loop_quarantine_hits Comment-mode hits within the promotion window, per node and condition.\n'
        '# TYPE gpucluster_loop_quarantine_hits gauge\n'
        'gpucluster_loop_quarantine_hits{node="n\\\\1\\n",condition="ib-errors"} 0\n'
        'gpucluster_loop_quarantine_hits{node="n\\\\1\\n",condition="thermal"} 1\n'
        '# HELP gpucluster_loop_conditions_total Conditions the loop detected, by condition and the action taken.\n'
        '# TYPE gpucluster_loop_conditions_total counter\n'
        'gpucluster_loop_conditions_total{condition="thermal",action="comment"} 1\n'
        'gpucluster_loop_conditions_total{condition="xid-79",action="reboot"} 2\n'
        '# HELP gpucluster_loop_events_total Transitions of the loop, by event.\n'
        '# TYPE gpucluster_loop_events_total counter\n' + events
        + '# HELP gpucluster_loop_last_pass_timestamp_seconds When the loop last finished a pass (seconds since the epoch).\n'
        '# TYPE gpucluster_loop_last_pass_timestamp_seconds gauge\n'
        'gpucluster_loop_last_pass_timestamp_seconds 1796486400.5\n')


@pytest.mark.parametrize('policy, reboots, hits', [
    ({'reboot_window_s': 100, 'promote_window_s': 50}, 1, 1),
    ({'reboot_window_s': 101, 'promote_window_s': 51}, 2, 2),
])
def test_the_windows_of_the_metrics_are_the_policys(policy, reboots, hits):
    rec = dict(loop.new_record(T0), reboots=[T0 - 100, T0 - 1], hits={'thermal': [T0 - 50, T0]})
    samples, _types = parse_textfile(ev.metrics({'n': rec}, None, T0, loop.load_policy(policy)))
    assert samples[('gpucluster_loop_reboots_in_window', (('node', 'n'),))] == reboots
    assert samples[('gpucluster_loop_quarantine_hits', (('node', 'n'), ('condition', 'thermal')))] == hits


def test_a_node_that_came_back_in_time_counts_no_negative_seconds_and_rounds_to_a_tenth():
    rec = dict(loop.new_record(T0 + 10), time_in={'ok': 1.26, 'quarantine': 2.0})
    samples, _types = parse_textfile(ev.metrics({'n': rec}, {}, T0, POLICY))
    assert samples[('gpucluster_loop_state_seconds_total', (('node', 'n'), ('state', 'ok')))] == 1.3
    assert samples[('gpucluster_loop_state_seconds_total', (('node', 'n'), ('state', 'quarantine')))] == 2
    text = ev.metrics({'n': dict(rec, time_in={'ok': 1.2345})}, {}, T0 + 0.0004, POLICY)
    assert 'gpucluster_loop_state_seconds_total{node="n",state="ok"} 1.2\n' in text
    assert text.endswith('gpucluster_loop_last_pass_timestamp_seconds 1796486400.0\n')  # a fraction below a thousandth
    assert ev.metrics({}, {}, T0 + 0.1234, POLICY).endswith('gpucluster_loop_last_pass_timestamp_seconds 1796486400.123\n')


def test_an_event_line_is_compact_sorted_json_with_its_time_shown_and_its_source():
    event = {'time': T0, 'node': 'gpu-01', 'event': 'back', 'from': 'reboot-asked', 'to': 'back', 'condition': 'xid-79'}
    assert ev.event_line(event) == ('{"at":"%s","condition":"xid-79","event":"back","from":"reboot-asked","node":"gpu-01",'
                                    '"source":"gpucluster-node-loop","time":%d,"to":"back"}' % (ev.iso(T0), T0))
    assert 'at' not in event and 'source' not in event  # the event itself is left as it was


def test_an_unknown_event_is_refused_naming_the_events():
    with pytest.raises(ValueError) as info:
        ev.event_line({'time': T0, 'event': 'exploded'})
    assert str(info.value) == "event 'exploded' is not one of %s" % ', '.join(loop.EVENTS)
    with pytest.raises(ValueError, match="^event None is not one of detected, "):
        ev.event_line({'time': T0})


def test_iso_is_local_time_with_its_offset():
    text = ev.iso(T0)
    assert re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}$', text), text
    assert text == time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(T0)) + time.strftime('%z', time.localtime(T0))


def test_count_adds_the_events_and_the_detected_conditions_to_a_copy():
    counts = {'conditions': {'xid-79 reboot': 1}, 'events': {'detected': 1}}
    events = [{'event': 'detected', 'condition': 'xid-79', 'action': 'reboot'}, {'event': 'reboot_asked', 'condition': 'xid-79'},
              {'event': 'detected', 'condition': 'thermal', 'action': 'comment'}, {'event': 'detected'}]
    assert ev.count(counts, events) == {'conditions': {'xid-79 reboot': 2, 'thermal comment': 1, 'None None': 1},
                                        'events': {'detected': 4, 'reboot_asked': 1}}
    assert counts == {'conditions': {'xid-79 reboot': 1}, 'events': {'detected': 1}}
    assert ev.count(None, []) == {'conditions': {}, 'events': {}}
    assert ev.count({'conditions': None, 'events': None}, [{'event': 'back'}]) == {'conditions': {}, 'events': {'back': 1}}


def test_the_webhook_body_is_the_events_with_their_time_shown():
    event = {'time': T0, 'node': 'gpu-01', 'event': 'back'}
    body = ev.webhook_body([event])
    assert isinstance(body, bytes)
    assert json.loads(body.decode('utf-8')) == {'source': 'gpucluster-node-loop', 'events': [dict(event, at=ev.iso(T0))]}
    assert body == json.dumps({'source': 'gpucluster-node-loop', 'events': [dict(event, at=ev.iso(T0))]}, sort_keys=True).encode('utf-8')
    assert ev.webhook_body([]) == b'{"events": [], "source": "gpucluster-node-loop"}'


def test_the_history_skips_what_is_not_an_event_of_the_node():
    mine = ev.event_line({'time': T0, 'node': 'gpu-01', 'event': 'back'})
    lines = ['[1, 2]', '"text"', '{"node": "gpu-01", "source": "other"}', '', 'x{', mine,
             ev.event_line({'time': T0, 'node': 'gpu-010', 'event': 'back'})]
    assert ev.history(lines, 'gpu-01') == [json.loads(mine)]
    assert ev.history([], 'gpu-01') == []


@pytest.mark.parametrize('event, line', [
    ({'at': 'A', 'event': 'detected', 'from': 'ok', 'to': 'ok', 'condition': 'xid-79', 'action': 'reboot', 'reason': 'R'},
     'A detected ok -> ok xid-79 (reboot): R'),
    ({'at': 'A', 'event': 'back', 'from': 'reboot-asked', 'to': 'back', 'condition': 'xid-79'}, 'A back reboot-asked -> back xid-79'),
    ({'at': 'A', 'event': 'returned', 'from': 'quarantine', 'to': 'ok', 'condition': None, 'action': '', 'reason': ''},
     'A returned quarantine -> ok -'),
    ({'event': 'service'}, 'None service None -> None -'),
])
def test_history_text_lines(event, line):
    assert ev.history_text([event]) == [line]


def test_sources_say_where_each_conditions_action_comes_from():
    sources = ev.sources()
    assert sources == dict(ev.conditions.SOURCES) and sources is not ev.conditions.SOURCES
    assert set(sources) == set(POLICY['actions'])
