#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The project's nccl-tests parser, gate and report on a real GPU machine's outputs (scripts/gpu/nccl_real.sh writes them).

    python3 scripts/gpu/nccl_real_check.py OUT NGPUS

Reads OUT/allreduce.txt + .json and OUT/iter.txt + .json (text and -J report of one run each), checks that the text and
the JSON give the same records (as tests/unit/plugins/module_utils/validation/test_nccl_2_19.py does for the rendered fixtures),
gates the runs as the validation does (_validation_nccl.evaluate_run, the topology from the GPU model and count) and
writes OUT/check.json and OUT/report.md (the validation report's Markdown). Exit status 1 when a reading disagrees or
a parse fails; a failing gate is reported, not an error (one GPU has no busbw to gate: all_reduce over one rank moves
nothing across GPUs).
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collection_path():
    """A directory where ``ansible_collections.gpucluster.bringup`` is this checkout (as the root conftest.py links it)."""
    base = os.path.join(ROOT, '.build', 'nccl-real-collections')
    link = os.path.join(base, 'ansible_collections', 'gpucluster', 'bringup')
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    return base


sys.path.insert(0, collection_path())

# pylint: disable=wrong-import-position
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (  # noqa: E402
    NcclParseError, busbw_series, parse_all_reduce, parse_json, parse_run)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import (  # noqa: E402
    evaluate_run, expect_for, node_topology)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import (  # noqa: E402
    build_report, render_markdown)

PLACE_KEYS = ('time', 'algbw', 'busbw', 'i_min', 'i_max', 'i_p99', 'i_cv%')


def close_to_printed(value, token):
    if 'e' in token:
        return abs(value - float(token)) <= abs(float(token)) * 0.051
    decimals = len(token.split('.')[1]) if '.' in token else 0
    return abs(value - float(token)) <= 0.5 * 10 ** -decimals + 1e-9


def compare(text, from_json, raw):
    """What differs between the text's and the JSON's reading of one run ([] when nothing)."""
    problems = []
    if len(text['rows']) != len(from_json['rows']):
        return ['%d text rows, %d JSON rows' % (len(text['rows']), len(from_json['rows']))]
    lines = [line.split() for line in raw.splitlines() if line.strip()[:1].isdigit() and len(line.split()) >= 13]
    for row_text, row_json, tokens in zip(text['rows'], from_json['rows'], lines):
        for key in ('size', 'count', 'type', 'redop', 'root'):
            if row_text[key] != row_json[key]:
                problems.append('size %s: %s %r (text) != %r (JSON)' % (row_text['size'], key, row_text[key], row_json[key]))
        for number, place in enumerate(('out_of_place', 'in_place')):
            if row_text[place]['wrong'] != row_json[place]['wrong']:
                problems.append('size %s %s: #wrong %r != %r' % (row_text['size'], place, row_text[place]['wrong'], row_json[place]['wrong']))
            for key in PLACE_KEYS:
                if key not in row_text[place]:
                    continue
                column = len(text['columns']['keys']) + number * len(text['columns']['out_of_place']) + text['columns'][place].index(key)
                if key not in row_json[place] or not close_to_printed(row_json[place][key], tokens[column]):
                    problems.append('size %s %s: %s %r (JSON) prints as %r (text)?' % (
                        row_text['size'], place, key, row_json[place].get(key), tokens[column]))
    for key in ('hosts', 'out_of_bounds'):
        if text[key] != from_json[key]:
            problems.append('%s: %r (text) != %r (JSON)' % (key, text[key], from_json[key]))
    return problems


def main(out, ngpus):
    summary, records, series, failed = {}, [], [], False
    for name in ('allreduce', 'iter'):
        with open(os.path.join(out, name + '.txt')) as handle:
            raw = handle.read()
        entry = summary.setdefault(name, {})
        try:
            text = parse_all_reduce(raw)
            with open(os.path.join(out, name + '.json')) as handle:
                from_json = parse_json(handle.read())
            with open(os.path.join(out, name + '.json')) as handle:
                both = parse_run(raw, handle.read())
        except (IOError, OSError, NcclParseError) as exc:
            entry['error'] = str(exc)
            failed = True
            continue
        entry.update(version=text['version'], nccl_version=text['nccl_version'], nccl_library=text['nccl_library'],
                     json_version=from_json['json_version'], rows=len(text['rows']), hosts=text['hosts'], per_iteration=text['columns']['per_iteration'],
                     timestamps=text['columns']['timestamp'], truncated=text['truncated'], errors=both['errors'],
                     series=busbw_series(both), text_vs_json=compare(text, from_json, raw))
        failed = failed or bool(entry['text_vs_json']) or text['truncated']
        model = text['ranks'][0]['name'] if text['ranks'] else ''
        topology = node_topology(model, ngpus)
        entry['topology'] = topology
        result = {'rc': 0, 'stdout': raw}
        with open(os.path.join(out, name + '.json')) as handle:
            result['json'] = handle.read()
        runs, plot = evaluate_run('%s-%s' % (text['hosts'][0] if text['hosts'] else 'gpu', name), result, text['hosts'],
                                  expect_for(topology=topology))
        for rec in runs:
            rec['versions'] = {'nccl': text['nccl_version'], 'nccl_tests': text['version']}
        entry['records'] = runs
        records.extend(runs)
        series.extend(plot)
    report = build_report(records, series, title='nccl-tests on a real GPU machine')
    with open(os.path.join(out, 'report.md'), 'w') as handle:
        handle.write(render_markdown(report))
    with open(os.path.join(out, 'check.json'), 'w') as handle:
        json.dump(summary, handle, indent=1, sort_keys=True)
    for name, entry in sorted(summary.items()):
        print('%s: %s' % (name, json.dumps(dict((k, v) for k, v in entry.items() if k not in ('series', 'records')), sort_keys=True)))
        for rec in entry.get('records', []):
            print('  %s %s: %s' % (rec['check'], rec['status'], rec['reason']))
    return 1 if failed else 0


if __name__ == '__main__':
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.stderr.write('usage: nccl_real_check.py OUT NGPUS\n')
        sys.exit(2)
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
