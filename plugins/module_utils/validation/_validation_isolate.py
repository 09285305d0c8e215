# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which node, link or leaf makes the multi-node all_reduce slow: the judgement of the pairwise runs (pure logic).

The validation's NCCL stage runs ``all_reduce_perf`` on node pairs in rounds of disjoint pairs
(``_validation_nccl.pair_rounds``: every node with its two ring neighbours, two or three rounds whatever the node
count, each round's pairs at once), after the fabric run fails its gate or on request.  :func:`isolate` reads the
pairs' bus bandwidth and names:

* a **slow node**: every pair it is in is slow (it is in two) - the other ends have a fast pair besides;
* a **slow leaf**: every pair leaving one leaf switch (``leaf_of``, from topology.conf) is slow, two or more of
  its nodes measured - the leaf's uplinks, not its nodes (its inner pairs may be fast or slow);
* a **slow link**: a slow pair whose two nodes are each fast with their other neighbour;
* with two leaves only, the path between them (the pairs leaving one are those leaving the other);
* with two nodes only, the pair itself (one pair cannot be split: a third node is needed), judged by the gate's
  threshold alone (one pair has no other to compare with).

A pair is slow when its busbw is below its gate's threshold, or, where the gate has none, below ``fraction`` of
the fastest pair (a fabric of equal links measures within a few percent of its best pair; the median would move
with the slow pairs when a leaf or several nodes are slow).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import record

STAGE = 'nccl'
CHECK = 'isolation'
FRACTION = 0.8


def pair_measurements(records):
    """``{(a, b): {'value', 'threshold', 'failed'}}`` of the pair runs' records (``hosts`` of two nodes): ``value`` the
    busbw check's mean (None when the run gave none), ``failed`` whether any of the run's checks failed."""
    pairs = {}
    for rec in records:
        hosts = rec.get('hosts') or []
        if len(hosts) != 2 or rec.get('stage', STAGE) != STAGE:
            continue
        key = tuple(hosts)
        entry = pairs.setdefault(key, {'value': None, 'threshold': None, 'failed': False})
        if rec.get('check') == 'busbw':
            entry['value'] = rec.get('value')
            entry['threshold'] = rec.get('threshold')
        if rec.get('status') == 'fail' and rec.get('check') != 'busbw':
            entry['failed'] = True
    return pairs


def _expected(entry, best):
    """What the pair should reach: its gate's threshold, else the fastest pair."""
    if entry.get('threshold') is not None:
        return float(entry['threshold'])
    return best


def _bar(entry, best, fraction):
    """Below this the pair is slow: its gate's threshold, else ``fraction`` of the fastest pair."""
    if entry.get('threshold') is not None:
        return float(entry['threshold'])
    return None if best is None else fraction * best


def isolate(pairs, leaf_of=None, fraction=FRACTION):
    """Findings ``[{kind: node|leaf|leaves|link|pair, name, nodes, percent, text}]`` from ``pair_measurements``; ``[]`` when
    no pair is slow.  ``leaf_of``: node -> its leaf switch (topology.conf), optional."""
    if not 0 < fraction <= 1:
        raise ValueError('fraction is %r, expected a share above 0 and at most 1' % (fraction,))
    leaf_of = leaf_of or {}
    values = [e['value'] for e in pairs.values() if e.get('value') is not None and not e.get('failed')]
    best = max(values) if values else None
    slow, pairs_of = {}, {}
    for key, entry in pairs.items():
        floor = _bar(entry, best, fraction)
        value = entry.get('value')
        slow[key] = entry.get('failed') or value is None or (floor is not None and value < floor)
        for node in key:
            pairs_of.setdefault(node, []).append(key)
    if not any(slow.values()):
        return []

    def percent_of(keys):
        measured = [(pairs[k]['value'], _expected(pairs[k], best)) for k in keys if pairs[k].get('value') is not None]
        shares = [v / e for v, e in measured if e]
        return int(round(100.0 * sum(shares) / len(shares))) if shares else None

    if len(pairs) == 1:
        key = list(pairs)[0]
        return [{'kind': 'pair', 'name': '%s+%s' % key, 'nodes': list(key), 'percent': percent_of([key]),
                 'text': 'the pair %s+%s is slow (%s of expected); one pair cannot be split: run the pairs with a third node'
                         % (key[0], key[1], _share(percent_of([key])))}]
    findings = []
    # a leaf whose every pair leaving it is slow: its uplinks (whatever its inner pairs do); needs two of its nodes
    # measured, else its one node and its uplink cannot be told apart
    in_leaf, covered = set(), set()
    qualifying = []
    for leaf in sorted(set(leaf_of[n] for n in pairs_of if leaf_of.get(n))):
        members = sorted(n for n in pairs_of if leaf_of.get(n) == leaf)
        cross = sorted(k for k in pairs if (k[0] in members) != (k[1] in members))
        if len(members) >= 2 and cross and all(slow[k] for k in cross):
            qualifying.append((leaf, members, cross))
    for leaf, members, cross in qualifying:
        inner = [k for k in pairs if k[0] in members and k[1] in members]
        twins = [other for other, _m, other_cross in qualifying if other != leaf and other_cross == cross]
        if twins and twins[0] < leaf:
            continue  # said with its twin below
        if twins:
            # the pairs leaving one leaf are exactly those leaving the other (two leaves): they cannot tell which
            both = sorted(members + [n for other, m, _c in qualifying if other == twins[0] for n in m])
            findings.append({'kind': 'leaves', 'name': '%s+%s' % (leaf, twins[0]), 'nodes': both, 'percent': percent_of(cross),
                             'text': 'between leaves %s and %s: %s of expected in every pair from one to the other (%d), fast '
                                     'inside each: the uplinks of one of them or the spine (the pairs cannot tell which with '
                                     'two leaves)' % (leaf, twins[0], _share(percent_of(cross)), len(cross))})
            in_leaf.update(both)
            covered.update(cross + [k for k in pairs if k[0] in both and k[1] in both])
            continue
        findings.append({'kind': 'leaf', 'name': leaf, 'nodes': members, 'percent': percent_of(cross),
                         'text': 'leaf %s (%s): %s of expected in every pair leaving it (%d)%s: its uplinks, not its nodes'
                                 % (leaf, ', '.join(members), _share(percent_of(cross)), len(cross),
                                    '' if not inner else '; inside it %s' % _share(percent_of(inner)))})
        in_leaf.update(members)
        covered.update(cross + inner)
    suspects = sorted(n for n, keys in pairs_of.items() if n not in in_leaf and len(keys) >= 2 and all(slow[k] for k in keys))
    for node in suspects:
        if node in in_leaf:
            continue
        keys = pairs_of[node]
        others = sorted(n for k in keys for n in k if n != node)
        where = ' (leaf %s)' % leaf_of[node] if leaf_of.get(node) else ''
        findings.append({'kind': 'node', 'name': node, 'nodes': [node], 'percent': percent_of(keys),
                         'text': '%s%s: %s of expected in pairs with %d other nodes (%s)'
                                 % (node, where, _share(percent_of(keys)), len(others), ', '.join(others))})
    named = set(suspects)
    for key in sorted(k for k, is_slow in slow.items() if is_slow):
        if key[0] in named or key[1] in named or key in covered:
            continue
        findings.append({'kind': 'link', 'name': '%s+%s' % key, 'nodes': list(key), 'percent': percent_of([key]),
                         'text': 'the link between %s and %s: %s of expected, while each is fast with its other neighbour'
                                 % (key[0], key[1], _share(percent_of([key])))})
    return findings


def _share(percent):
    return 'no result' if percent is None else '%d %%' % percent


def isolation_records(findings, pairs):
    """Report records of the findings (stage ``nccl``, check ``isolation``): one per slow node (its name, so that
    ``validate_drain_failed`` can drain it), one per slow leaf or link (the nodes in ``hosts``); a pass record when
    pairs ran and none is slow."""
    if not pairs:
        return []
    if not findings:
        return [record(STAGE, 'pairs', CHECK, 'pass', 'no slow node, link or leaf: all %d pairs reach their gate' % len(pairs))]
    out = []
    for finding in findings:
        name = finding['name'] if finding['kind'] == 'node' else '%s:%s' % (finding['kind'], finding['name'])
        extra = {'hosts': finding['nodes']} if finding['kind'] != 'node' else {}
        extra['value'] = finding['percent']  # (None: no value; record leaves it out)
        out.append(record(STAGE, name, CHECK, 'fail', finding['text'], **extra))
    return out
