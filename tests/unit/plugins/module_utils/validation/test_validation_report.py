# -*- coding: utf-8 -*-
"""Tests for the validation report renderers (plugins/module_utils/validation/_validation_report.py)."""

from __future__ import absolute_import, division, print_function

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import busbw_series, evaluate, parse_all_reduce
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import (
    build_report,
    check_records,
    failure_message,
    render_html,
    render_json,
    render_junit,
    render_markdown,
    render_svg,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl")
SVG_NS = "{http://www.w3.org/2000/svg}"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def rec(node, check, status, reason="", stage="nccl", **extra):
    item = {"stage": stage, "node": node, "check": check, "status": status, "reason": reason}
    item.update(extra)
    return item


RECORDS = [
    rec("node001", "complete", "pass", "output complete"),
    rec("node001", "busbw", "pass", "mean busbw 470.2 GB/s", value=470.2, threshold=296.0),
    rec("node002", "complete", "pass", "output complete"),
    rec("node002", "busbw", "fail", "mean busbw 142.7 GB/s is below 296.0 GB/s | slow", value=142.7, threshold=296.0),
    rec("node003", "complete", "skip", "no CUDA device: NVML simulator node"),
    rec("node003", "busbw", "skip", "no CUDA device: NVML simulator node"),
    rec("node001", "driver", "pass", "driver 550.54", stage="preflight"),
    rec("node002", "driver", "fail", "nvidia-smi not found", stage="preflight"),
]


def test_junit_parses_and_counts():
    root = ET.fromstring(render_junit(build_report(RECORDS)).split("\n", 1)[1])
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("8", "2", "2", "0")
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures"), s.get("skipped")) for s in suites] == [("nccl", "6", "1", "2"), ("preflight", "2", "1", "0")]
    failures = root.findall(".//failure")
    assert len(failures) == 2
    assert [f.get("message") for f in failures] == ["mean busbw 142.7 GB/s is below 296.0 GB/s | slow", "nvidia-smi not found"]
    assert failures[0].text == "mean busbw 142.7 GB/s is below 296.0 GB/s | slow [value=142.7 threshold=296.0]"
    failed_cases = [(case.get("classname"), case.get("name")) for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed_cases == [("nccl.node002", "busbw"), ("preflight.node002", "driver")]
    assert len(root.findall(".//skipped")) == 2


def test_failing_nodes_are_named():
    report = build_report(RECORDS)
    assert report["status"] == "fail"
    assert report["failed_nodes"] == ["node002"]
    assert failure_message(report) == "validation failed on node002: 2 failed check(s) (nccl/busbw, preflight/driver)"
    assert "**FAIL: 2 of 8 checks failed on node002**" in render_markdown(report)


def test_multi_node_run_names_its_hosts():
    records = check_records("nccl", "node[005,007]", [{"check": "transport", "status": "fail", "reason": "NET/Socket"}], hosts=["node005", "node007"])
    report = build_report(records + [rec("node009", "busbw", "pass")])
    assert report["failed_nodes"] == ["node005", "node007"]
    assert failure_message(report) == "validation failed on node005, node007: 1 failed check(s) (nccl/transport)"


def test_passing_report_has_no_failure_message():
    report = build_report([r for r in RECORDS if r["status"] != "fail"])
    assert report["status"] == "pass"
    assert report["failed_nodes"] == []
    assert failure_message(report) == ""
    assert "**PASS: 4 checks passed, 2 skipped**" in render_markdown(report)


def test_all_skipped_stage_reports_skipped():
    report = build_report([rec("node003", "nccl", "skip", "no CUDA on the simulated cluster")])
    assert (report["status"], report["stages"][0]["status"]) == ("skip", "skip")
    assert "**SKIPPED: all 1 checks were skipped**" in render_markdown(report)
    assert "- `node003` nccl: no CUDA on the simulated cluster" in render_markdown(report)
    root = ET.fromstring(render_junit(report).split("\n", 1)[1])
    assert root.find(".//skipped").get("message") == "no CUDA on the simulated cluster"


def test_markdown_per_node_table():
    lines = render_markdown(build_report(RECORDS)).splitlines()
    assert "## Stage `nccl`: FAIL" in lines
    start = lines.index("| node | complete | busbw |")
    assert lines[start + 1] == "|---|---|---|"
    assert lines[start + 2:start + 5] == ["| node001 | pass | pass |", "| node002 | pass | **FAIL** |", "| node003 | skip | skip |"]
    assert "- `node002` busbw: mean busbw 142.7 GB/s is below 296.0 GB/s \\| slow" in lines


def test_json_is_stable_and_round_trips():
    first = render_json(build_report(RECORDS, series=[{"label": "node001", "points": [[8, 0.0], [1024, 1.5]]}], threshold_gbps=296.0))
    second = render_json(build_report([dict(r) for r in RECORDS], series=[{"label": "node001", "points": [[1024, 1.5], [8, 0.0]]}], threshold_gbps=296.0))
    assert first == second
    doc = json.loads(first)
    assert sorted(doc) == ["failed_nodes", "provenance", "series", "stages", "status", "threshold_gbps", "title", "totals"]
    assert doc["totals"] == {"checks": 8, "pass": 4, "fail": 2, "skip": 2}
    assert [n["node"] for n in doc["stages"][0]["nodes"]] == ["node001", "node002", "node003"]
    assert doc["stages"][0]["nodes"][1]["status"] == "fail"
    assert doc["series"][0]["points"] == [[8, 0.0], [1024, 1.5]]


SERIES = [
    {"label": "node001", "points": [[2 ** k, 10.0 * k] for k in range(3, 34)]},
    {"label": "node002", "points": [[2 ** k, 5.0 * k] for k in range(3, 34)]},
    {"label": "node[005,007]", "points": [[2 ** 30, 150.0]]},
]


def test_svg_has_one_polyline_per_run_on_a_log2_axis():
    svg = render_svg(SERIES, threshold_gbps=296.0)
    root = ET.fromstring(svg)
    polylines = root.findall(SVG_NS + "polyline")
    assert len(polylines) == 3
    assert [p.find(SVG_NS + "title").text for p in polylines] == ["node001", "node002", "node[005,007]"]
    xs = [float(pair.split(",")[0]) for pair in polylines[0].get("points").split()]
    assert len(xs) == 31
    gaps = [round(b - a, 1) for a, b in zip(xs, xs[1:])]
    assert max(gaps) - min(gaps) <= 0.2          # doubling the size moves the same distance: log2 axis
    ys = [float(pair.split(",")[1]) for pair in polylines[0].get("points").split()]
    assert ys == sorted(ys, reverse=True)       # higher busbw is drawn higher
    assert len(root.findall(SVG_NS + "circle")) == 31 + 31 + 1
    assert len([line for line in root.findall(SVG_NS + "line") if line.get("class") == "threshold"]) == 1
    labels = [t.text for t in root.findall(SVG_NS + "text")]
    assert "8B" in labels and "1G" in labels and "threshold 296 GB/s" in labels


def test_svg_without_threshold_and_single_size():
    root = ET.fromstring(render_svg([{"label": "n", "points": [[1024, 0.0]]}]))
    assert len(root.findall(SVG_NS + "polyline")) == 1
    assert not [line for line in root.findall(SVG_NS + "line") if line.get("class") == "threshold"]


def test_html_embeds_svg_and_escapes():
    records = [rec("<script>alert(1)</script>", "busbw", "fail", "a < b & c")]
    html = render_html(build_report(records, series=SERIES[:1], title="NCCL <validation>"))
    assert html.startswith("<!DOCTYPE html>")
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "a &lt; b &amp; c" in html
    assert "<title>NCCL &lt;validation&gt;</title>" in html
    assert html.count("<polyline") == 1
    body = html.split("<body>", 1)[1].split("</body>", 1)[0]
    ET.fromstring("<div>" + body + "</div>")     # well-formed


@pytest.mark.parametrize("results,kwargs,message", [
    ("nope", {}, "results must be a list of check records, got str"),
    (["nope"], {}, "result 0 is 'nope', expected a dict with keys stage, node, check, status"),
    ([{"node": "n", "check": "c", "status": "pass"}], {}, "result 0: stage is None, expected a non-empty string"),
    ([rec("n", "c", "ok")], {}, "result 0: status 'ok' is not one of pass, fail, skip"),
    ([rec("n", "c", "pass"), rec("", "c", "pass")], {}, "result 1: node is '', expected a non-empty string"),
    ([rec("n", "c", "pass", reason=5)], {}, "result 0: reason is 5, expected a string"),
    ([rec("n", "c", "pass", value="fast")], {}, "result 0: value is 'fast', expected a finite number"),
    ([rec("n", "c", "pass", threshold=float("nan"))], {}, "result 0: threshold is nan, expected a finite number"),
    ([rec("n", "c", "pass", hosts=[])], {}, "result 0: hosts is [], expected a non-empty list of host names"),
    ([], {"threshold_gbps": 0}, "threshold_gbps is 0, expected a number above 0"),
    ([], {"series": [{"points": [[8, 1.0]]}]}, "series 0 is {'points': [[8, 1.0]]}, expected {'label': str, 'points': [[size, busbw], ...]}"),
    ([], {"series": [{"label": "a", "points": [[8, 1.0, 2]]}]}, "series 'a': point [8, 1.0, 2] is not a [size_bytes, busbw_gbps] pair"),
    ([], {"series": [{"label": "a", "points": [[0, 1.0]]}]}, "series 'a': point [0, 1.0] needs a size above 0 and a busbw of 0 or more"),
    ([], {"series": [{"label": "a", "points": [[8, -1]]}]}, "series 'a': point [8, -1] needs a size above 0 and a busbw of 0 or more"),
    ([], {"series": [{"label": "a", "points": []}]}, "series 'a' has no points"),
])
def test_bad_input_raises_one_clear_error(results, kwargs, message):
    with pytest.raises(ValueError) as err:
        build_report(results, **kwargs)
    assert str(err.value) == message


def test_render_svg_needs_a_series():
    with pytest.raises(ValueError) as err:
        render_svg([])
    assert str(err.value) == "render_svg needs at least one series with points"


def test_end_to_end_from_recorded_outputs():
    """Parse recorded runs, gate them, and check the JUnit failures are exactly the failed gates."""
    runs = [
        ("node005", "v2.13-era_h100_single_node.txt", {"topology": "h100-nvlink-8"}),
        ("gpu-1-1,gpu-1-7", "v2.17.8_gh200_two_nodes_wrong.txt", {"topology": "ib-ndr-400"}),
        ("node005,node007", "composed_h100_two_nodes_socket_fallback.txt", {"topology": "ib-ndr-400", "nics": 8, "expect_transport": "ib"}),
    ]
    records, series = [], []
    for label, name, expect in runs:
        result = parse_all_reduce(fixture(name))
        records += check_records("nccl", label, evaluate(result, expect), hosts=result["hosts"])
        series.append({"label": label, "points": busbw_series(result)})
    report = build_report(records, series=series, title="NCCL all_reduce_perf")
    failed = [(r["node"], r["check"]) for r in records if r["status"] == "fail"]
    assert failed == [("gpu-1-1,gpu-1-7", "test_errors"), ("gpu-1-1,gpu-1-7", "wrong"), ("gpu-1-1,gpu-1-7", "out_of_bounds"),
                      ("gpu-1-1,gpu-1-7", "busbw"), ("node005,node007", "busbw"), ("node005,node007", "transport")]
    root = ET.fromstring(render_junit(report).split("\n", 1)[1])
    assert int(root.get("failures")) == len(failed) == len(root.findall(".//failure"))
    assert report["failed_nodes"] == ["gpu-1-1", "gpu-1-7", "node005", "node007"]
    html = render_html(report)
    assert html.count("<polyline") == 3
    assert "| gpu-1-1,gpu-1-7 | 134217728 | 22.84 |" in render_markdown(report)
