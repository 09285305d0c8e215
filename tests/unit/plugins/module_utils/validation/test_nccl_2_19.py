# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl-tests 2.19 (issue 47): the text forms of 2.19.6 and its -J JSON give the same records for the same run.

The 2.19.6 fixtures are RENDERED from the 2.19.6 source's printf/JSON formats (tests/unit/fixtures/nccl/render_v2_19_6.py),
not recorded on a GPU; see the fixture README.
"""

from __future__ import absolute_import, division, print_function

import glob
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (
    JSON_MIN_VERSION, evaluate, parse_all_reduce, parse_json, parse_run, version_tuple, writes_json)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "..", "fixtures", "nccl")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def statuses(checks):
    return dict((c["check"], c["status"]) for c in checks)


def close_to_printed(value, token):
    """True when ``value`` (the JSON's %lf) prints as ``token`` (the text's column): within half its last digit."""
    if "e" in token:
        return abs(value - float(token)) <= abs(float(token)) * 0.051
    decimals = len(token.split(".")[1]) if "." in token else 0
    return abs(value - float(token)) <= 0.5 * 10 ** -decimals + 1e-9


PLACE_KEYS = ("time", "algbw", "busbw", "i_min", "i_max", "i_p99", "i_cv%")

# (text, json, format version, rows, per-iteration columns, version, hosts, -J path the text names)
PAIRS = [
    ("rendered_v2.19.6_h100_single_node.txt", "rendered_v2.19.6_h100_single_node.json", 3, 31, False, "2.19.6", ["gpu-h100-01"],
     "/tmp/gpucluster-nccl.Xq3v9L/nccl.json"),
    ("rendered_v2.19.6_h100_per_iter_timestamp.txt", "rendered_v2.19.6_h100_per_iter_timestamp.json", 3, 2, True, "2.19.6", ["gpu-h100-01"],
     "/tmp/gpucluster-nccl.Pq2x7A/nccl.json"),
    ("v2.18.3_h200_two_nodes.txt", "v2.18.3_h200_two_nodes.json", 1, 25, False, "2.18.3",
     ["nvidiatools-dell-h200-2-workload", "nvidiatools-dell-h200-3-workload"], None),
]


@pytest.mark.parametrize("text_name,json_name,json_version,nrows,per_iter,version,hosts,json_path", PAIRS, ids=[p[0] for p in PAIRS])
def test_text_and_json_of_one_run_give_the_same_records(text_name, json_name, json_version, nrows, per_iter, version, hosts, json_path):
    raw = fixture(text_name)
    text = parse_all_reduce(raw)
    from_json = parse_json(fixture(json_name))
    assert (text["format"], from_json["format"], from_json["json_version"]) == ("text", "json", json_version)
    assert len(text["rows"]) == len(from_json["rows"]) == nrows
    assert text["columns"]["per_iteration"] is per_iter
    assert (text["hosts"], from_json["hosts"]) == (hosts, hosts)
    assert text["ranks"] == from_json["ranks"]
    assert (text["truncated"], from_json["truncated"]) == (False, False)
    assert from_json["collective"] == "all_reduce_perf" == (text["collective"] or "all_reduce_perf")
    # the text's tokens, row by row, as printed
    lines = [line.split() for line in raw.splitlines() if line.strip() and line.strip()[0].isdigit() and len(line.split()) >= 13]
    assert len(lines) == nrows
    for row_text, row_json, tokens in zip(text["rows"], from_json["rows"], lines):
        for key in ("size", "count", "type", "redop", "root"):
            assert row_text[key] == row_json[key]
        for place in ("out_of_place", "in_place"):
            assert row_text[place]["wrong"] == row_json[place]["wrong"]
            keys = [key for key in PLACE_KEYS if key in row_text[place]]
            assert keys == [key for key in PLACE_KEYS if key in row_json[place]]
            for key in keys:
                column = text["columns"][place].index(key) + len(text["columns"]["keys"]) + (
                    0 if place == "out_of_place" else len(text["columns"]["out_of_place"]))
                assert close_to_printed(row_json[place][key], tokens[column]), (row_text["size"], place, key, row_json[place][key], tokens[column])
    assert abs(text["avg_busbw"] - from_json["avg_busbw"]) <= 0.005 * text["avg_busbw"]
    assert text["out_of_bounds"] == from_json["out_of_bounds"]
    for expect in ({"topology": "h100-nvlink-8"}, {"topology": "h200-nvlink-8"}, {"min_busbw_gbps": 300}):
        assert statuses(evaluate(text, expect)) == statuses(evaluate(from_json, expect))
    # the run as the validation reads it: numbers from the JSON, the rest from stdout
    both = parse_run(raw, fixture(json_name))
    assert (both["format"], both["version"], both["json_path"], both["errors"]) == ("json", version, json_path, [])
    assert [c["status"] for c in evaluate(both, {"topology": "h100-nvlink-8"})] == [c["status"] for c in evaluate(from_json, {"topology": "h100-nvlink-8"})]


def test_the_2_19_6_validation_run_passes_the_h100_gate_in_both_forms():
    raw = fixture("rendered_v2.19.6_h100_single_node.txt")
    text = parse_all_reduce(raw)
    assert (text["version"], text["nccl_headers"], text["nccl_library"]) == ("2.19.6", 22703, 22703)
    assert text["params"] == {"nThread": 1, "nGpus": 8, "minBytes": 8, "maxBytes": 8589934592, "step": 2, "step_kind": "factor",
                              "warmup_iters": 1, "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0, "unalign": 0}
    assert (text["avg_busbw"], text["avg_busbw_status"], text["concluded"]) == (134.25, None, True)
    row = text["rows"][-1]
    assert row["out_of_place"] == {"time": 40611.3, "algbw": 211.52, "busbw": 370.15, "wrong": 0}
    from_json = parse_json(fixture("rendered_v2.19.6_h100_single_node.json"))
    assert from_json["params"]["warmup_iters"] == 1 and from_json["avg_busbw_status"] is None and from_json["nccl_library"] == 22703
    for result in (text, from_json):
        checks = dict((c["check"], c) for c in evaluate(result, {"topology": "h100-nvlink-8"}))
        assert [checks[name]["status"] for name in ("complete", "single_run", "test_errors", "wrong", "out_of_bounds", "busbw")] == ["pass"] * 6
        assert checks["busbw"]["reason"].startswith("busbw reaches the h100-nvswitch/node/ring gate curve at all 8 sizes gated (64 MiB..8 GiB)")


def test_per_iteration_json_carries_the_text_columns():
    from_json = parse_json(fixture("rendered_v2.19.6_h100_per_iter_timestamp.json"))
    assert from_json["flags"] == ["per_iter_timing"]
    row = from_json["rows"][0]["out_of_place"]
    assert sorted(row) == ["algbw", "busbw", "i_cv%", "i_max", "i_min", "i_p99", "time", "wrong"]
    text = parse_all_reduce(fixture("rendered_v2.19.6_h100_per_iter_timestamp.txt"))
    assert text["rows"][0]["timestamp"] == "2026-07-20 10:00:04" and "timestamp" not in from_json["rows"][0]
    assert text["flags"] == ["per_iteration"]


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(FIXTURES, "*.txt"))))
def test_every_text_fixture_still_parses(name):
    result = parse_all_reduce(fixture(name))
    assert result["rows"] or result["errors"] or result["truncated"]


@pytest.mark.parametrize("name", sorted(os.path.basename(p) for p in glob.glob(os.path.join(FIXTURES, "*.json"))))
def test_every_json_fixture_parses(name):
    result = parse_json(fixture(name))
    assert result["rows"] and result["collective"] in ("all_reduce_perf", "alltoall_perf")


@pytest.mark.parametrize("version,expected", [
    ("2.19.6", True), ("2.18.3", True), ("2.20.0", True), ("3", True), ("2.18.2", False), ("2.17.8", False), ("2.13.9", False),
    ("", False), (None, False), ("latest", False), ("v2.19.6", False),
])
def test_writes_json_from_the_first_version_read_with_it(version, expected):
    assert writes_json(version) is expected
    assert JSON_MIN_VERSION == (2, 18, 3)


def test_version_tuple():
    assert [version_tuple(v) for v in ("2.19.6", "2.19", "2", "2.19.6rc1", "x")] == [(2, 19, 6), (2, 19, 0), (2, 0, 0), (2, 19, 6), None]
