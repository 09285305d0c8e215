# -*- coding: utf-8 -*-
"""Tests for the validation report renderers (plugins/module_utils/validation/_validation_report.py)."""

from __future__ import absolute_import, division, print_function

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr
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


# === edge cases (formerly test_validation_report_edges.py): The validation report renderers' exact output, the plot's axes and the edges of its input checks
# (_validation_report).

# One report that reaches every branch of the renderers: a passing check with a reason and values, one without a
# reason, failures with only a value, only a threshold and neither, a skip, a node without one of the stage's checks,
# a multi-node run that names its hosts, a busbw series, a failure with the command that reruns it, the versions an
# NCCL run names, and provenance (times, collection version, versions per node: one agreed, one not, one unknown).
COMMAND = "srun --nodes=1 --nodelist=n2 --export=ALL,NCCL_DEBUG=INFO /opt/nccl-tests/build/all_reduce_perf -b 8 -e '8G' -g 8"
EDGE_RECORDS = [
    rec("n1", "busbw", "pass", "mean 470 GB/s", value=470.0, threshold=296.0, versions={"nccl": "2.21.5", "nccl_tests": "2.13.9"}),
    rec("n1", "wrong", "pass"),
    rec("n2", "busbw", "fail", "below | a\\b", value=142.5, command=COMMAND),
    rec("n3", "wrong", "skip", "no CUDA"),
    rec("n2", "driver", "fail", "nvidia-smi not found", stage="preflight", threshold=1.0),
    rec("n4+n1", "transport", "fail", "NET/Socket", stage="pairs", hosts=["n4", "n1"]),
]
EDGE_SERIES = [{"label": "n1", "points": [[1024, 1.5], [8, 0.25]]}]
PROVENANCE = {"generated": "2025-01-31T09:02:03Z", "started": "2025-01-31T08:00:00Z", "collection_version": "0.1.0",
              "nodes": [{"node": "n1", "slurm": "22.05.8", "driver": "550.54.15", "cuda": "12.4"},
                        {"node": "n2", "slurm": "22.05.8", "driver": "535.104.05", "cuda": None}]}


def report():
    return vr.build_report(EDGE_RECORDS, series=EDGE_SERIES, title="T <1>", threshold_gbps=296.0, provenance=PROVENANCE)


# ------------------------------------------------------------------ input records


@pytest.mark.parametrize("record, key, expected", [
    ({"stage": "s", "node": "n", "check": "c", "status": "pass"}, "reason", ""),          # no reason: empty
    (rec("n", "c", "pass", reason=None), "reason", ""),                                 # reason None: empty
    (rec("n", "c", "pass", value=0), "value", 0),                                        # 0 is a value, not "none"
    (rec("n", "c", "pass", threshold=0.5), "threshold", 0.5),
    (rec("n", "c", "fail", hosts=["a", "b"]), "hosts", ["a", "b"]),
    (rec("n", "node_state", "fail", held="admin"), "held", "admin"),                    # an admin's drain, kept in the report
])
def test_clean_record_fills_in_and_keeps(record, key, expected):
    clean = vr.build_report([record])["stages"][0]["nodes"][0]["checks"][0]
    assert clean[key] == expected


@pytest.mark.parametrize("record, message", [
    (rec("n", "c", "fail", hosts=[""]), "result 0: hosts is [''], expected a non-empty list of host names"),
    (rec("n", "c", "fail", hosts=["a", 5]), "result 0: hosts is ['a', 5], expected a non-empty list of host names"),
    (rec("n", "c", "fail", hosts="a"), "result 0: hosts is 'a', expected a non-empty list of host names"),
    (rec("n", "c", "fail", hosts=("a",)), "result 0: hosts is ('a',), expected a non-empty list of host names"),
    (rec("n", "c", "pass", value=True), "result 0: value is True, expected a finite number"),
    (rec("n", "c", "pass", threshold=float("inf")), "result 0: threshold is inf, expected a finite number"),
    (rec("n", " ", "pass"), "result 0: check is ' ', expected a non-empty string"),
    (rec("n", "node_state", "fail", held="slurm"), "result 0: held is 'slurm', expected admin or loop (a node_state an admin or the closed loop set)"),
])
def test_clean_record_errors(record, message):
    with pytest.raises(ValueError) as err:
        vr.build_report([record])
    assert str(err.value) == message


@pytest.mark.parametrize("points, expected", [
    ([[1, 0.0]], [[1, 0.0]]),                       # the smallest size (1 byte) and a busbw of 0 are valid
    ([(4, 2), [2, 1.5]], [[2, 1.5], [4, 2]]),        # tuples are pairs too; sorted by size
])
def test_series_points_at_the_edges(points, expected):
    assert vr.build_report([], series=[{"label": "r", "points": points}])["series"] == [{"label": "r", "points": expected}]


@pytest.mark.parametrize("threshold", [0.5, 1, 296.0])
def test_threshold_above_zero_is_accepted(threshold):
    assert vr.build_report([], threshold_gbps=threshold)["threshold_gbps"] == threshold
    assert 'class="threshold"' in vr.render_svg(EDGE_SERIES, threshold_gbps=threshold)


@pytest.mark.parametrize("threshold, message", [
    (0, "threshold_gbps is 0, expected a number above 0"),
    (-1.5, "threshold_gbps is -1.5, expected a number above 0"),
    (float("nan"), "threshold_gbps is nan, expected a number above 0"),
    ("296", "threshold_gbps is '296', expected a number above 0"),
    (True, "threshold_gbps is True, expected a number above 0"),
])
def test_render_svg_refuses_a_bad_threshold_like_build_report(threshold, message):
    for call in (lambda: vr.render_svg(EDGE_SERIES, threshold_gbps=threshold), lambda: vr.build_report([], threshold_gbps=threshold)):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == message


# ------------------------------------------------------------------ JSON


def test_json_of_an_empty_report():
    assert vr.render_json(vr.build_report([])) == "\n".join([
        "{",
        '  "failed_nodes": [],',
        '  "provenance": {',
        '    "collection_version": null,',
        '    "duration_s": null,',
        '    "generated": null,',
        '    "nodes": [],',
        '    "started": null',
        "  },",
        '  "series": [],',
        '  "stages": [],',
        '  "status": "skip",',
        '  "threshold_gbps": null,',
        '  "title": "Cluster validation",',
        '  "totals": {',
        '    "checks": 0,',
        '    "fail": 0,',
        '    "pass": 0,',
        '    "skip": 0',
        "  }",
        "}",
        ""])


def test_json_provenance_and_commands():
    doc = vr.build_report(EDGE_RECORDS, provenance=PROVENANCE)
    assert doc["provenance"] == {
        "generated": "2025-01-31T09:02:03Z", "started": "2025-01-31T08:00:00Z", "duration_s": 3723, "collection_version": "0.1.0",
        "nodes": [
            # the versions given, then the NCCL run's for its host where those leave one unknown
            {"node": "n1", "slurm": "22.05.8", "driver": "550.54.15", "cuda": "12.4", "nccl": "2.21.5", "nccl_tests": "2.13.9"},
            {"node": "n2", "slurm": "22.05.8", "driver": "535.104.05", "cuda": None, "nccl": None, "nccl_tests": None}]}
    checks = dict(((node["node"], rec["check"]), rec) for stage in doc["stages"] for node in stage["nodes"] for rec in node["checks"])
    assert checks[("n2", "busbw")]["command"] == COMMAND
    assert "versions" not in checks[("n1", "busbw")]         # in the provenance, not repeated per check


# ------------------------------------------------------------------ JUnit


PROPERTIES = [
    '    <properties>',
    '      <property name="generated" value="2025-01-31T09:02:03Z" />',
    '      <property name="started" value="2025-01-31T08:00:00Z" />',
    '      <property name="duration_s" value="3723" />',
    '      <property name="collection_version" value="0.1.0" />',
    '      <property name="slurm" value="22.05.8" />',
    '      <property name="driver" value="550.54.15 on n1; 535.104.05 on n2" />',
    '      <property name="cuda" value="12.4 on n1; unknown on n2" />',
    '      <property name="nccl" value="2.21.5 on n1; unknown on n2" />',
    '      <property name="nccl_tests" value="2.13.9 on n1; unknown on n2" />',
    '    </properties>',
]


@pytest.mark.skipif(not hasattr(ET, "indent"), reason="ElementTree.indent (Python 3.9+) indents the document")
def test_junit_document():
    assert vr.render_junit(report()) == "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<testsuites name="T &lt;1&gt;" tests="6" failures="3" errors="0" skipped="1">',
        '  <testsuite name="nccl" tests="4" failures="1" errors="0" skipped="1">'] + PROPERTIES + [
        '    <testcase classname="nccl.n1" name="busbw" time="0">',
        '      <system-out>mean 470 GB/s [value=470.0 threshold=296.0]</system-out>',
        '    </testcase>',
        '    <testcase classname="nccl.n1" name="wrong" time="0" />',
        '    <testcase classname="nccl.n2" name="busbw" time="0">',
        '      <failure message="below | a\\b" type="busbw">below | a\\b [value=142.5 threshold=None]',
        'to rerun:',
        COMMAND + '</failure>',
        '    </testcase>',
        '    <testcase classname="nccl.n3" name="wrong" time="0">',
        '      <skipped message="no CUDA" />',
        '    </testcase>',
        '  </testsuite>',
        '  <testsuite name="preflight" tests="1" failures="1" errors="0" skipped="0">'] + PROPERTIES + [
        '    <testcase classname="preflight.n2" name="driver" time="0">',
        '      <failure message="nvidia-smi not found" type="driver">nvidia-smi not found [value=None threshold=1.0]</failure>',
        '    </testcase>',
        '  </testsuite>',
        '  <testsuite name="pairs" tests="1" failures="1" errors="0" skipped="0">'] + PROPERTIES + [
        '    <testcase classname="pairs.n4+n1" name="transport" time="0">',
        '      <failure message="NET/Socket" type="transport">NET/Socket</failure>',
        '    </testcase>',
        '  </testsuite>',
        '</testsuites>',
        ''])


def test_junit_without_provenance_says_unknown():
    root = ET.fromstring(vr.render_junit(vr.build_report([rec("n1", "busbw", "pass")])).split("\n", 1)[1])
    assert [(p.get("name"), p.get("value")) for p in root.find("testsuite/properties")] == [
        ("generated", "unknown"), ("started", "unknown"), ("duration_s", "unknown"), ("collection_version", "unknown"), ("slurm", "unknown"),
        ("driver", "unknown"), ("cuda", "unknown"), ("nccl", "unknown"), ("nccl_tests", "unknown")]


# ------------------------------------------------------------------ Markdown


def test_markdown_document():
    assert vr.render_markdown(report()) == "\n".join([
        "# T <1>",
        "",
        "**FAIL: 3 of 6 checks failed on n1, n2, n4**",
        "",
        "## What was validated",
        "",
        "- generated: 2025-01-31T09:02:03Z",
        "- started: 2025-01-31T08:00:00Z",
        "- duration: 1h 02m 03s",
        "- collection version: 0.1.0",
        "- Slurm: 22.05.8",
        "- NVIDIA driver: 550.54.15 on n1; 535.104.05 on n2",
        "- CUDA (driver): 12.4 on n1; unknown on n2",
        "- NCCL: 2.21.5 on n1; unknown on n2",
        "- nccl-tests: 2.13.9 on n1; unknown on n2",
        "",
        "| node | Slurm | NVIDIA driver | CUDA (driver) | NCCL | nccl-tests |",
        "|---|---|---|---|---|---|",
        "| n1 | 22.05.8 | 550.54.15 | 12.4 | 2.21.5 | 2.13.9 |",
        "| n2 | 22.05.8 | 535.104.05 | unknown | unknown | unknown |",
        "",
        "## Stage `nccl`: FAIL",
        "",
        "| node | busbw | wrong |",
        "|---|---|---|",
        "| n1 | pass | pass |",
        "| n2 | **FAIL** |  |",
        "| n3 |  | skip |",
        "",
        "### Failures",
        "",
        "- `n2` busbw: below \\| a\\\\b",
        "  ```",
        "  " + COMMAND,
        "  ```",
        "",
        "### Skipped",
        "",
        "- `n3` wrong: no CUDA",
        "",
        "## Stage `preflight`: FAIL",
        "",
        "| node | driver |",
        "|---|---|",
        "| n2 | **FAIL** |",
        "",
        "### Failures",
        "",
        "- `n2` driver: nvidia-smi not found",
        "",
        "## Stage `pairs`: FAIL",
        "",
        "| node | transport |",
        "|---|---|",
        "| n4+n1 | **FAIL** |",
        "",
        "### Failures",
        "",
        "- `n4+n1` transport: NET/Socket",
        "",
        "## busbw at the largest message size",
        "",
        "| run | size (bytes) | busbw (GB/s) |",
        "|---|---|---|",
        "| n1 | 1024 | 1.50 |",
        ""])


@pytest.mark.parametrize("text, expected", [
    ("a|b", "a\\|b"),
    ("C:\\dir", "C:\\\\dir"),
    ("\\|", "\\\\\\|"),                  # the backslash first, then the pipe: no double escaping of the pipe's backslash
    ("one\ntwo", "one two"),
    ("one\r\ntwo", "one  two"),
    ("one\rtwo", "one two"),
    (296.0, "296.0"),
])
def test_markdown_cell_text(text, expected):
    assert vr._md(text) == expected


# ------------------------------------------------------------------ HTML

def test_html_document():
    body = [
        '<h1>T &lt;1&gt;</h1>',
        '<p class="summary fail"><strong>FAIL: 3 of 6 checks failed on n1, n2, n4</strong></p>',
        '<h2>What was validated</h2>',
        '<table class="provenance"><tbody>',
        '<tr><th>generated</th><td>2025-01-31T09:02:03Z</td></tr>',
        '<tr><th>started</th><td>2025-01-31T08:00:00Z</td></tr>',
        '<tr><th>duration</th><td>1h 02m 03s</td></tr>',
        '<tr><th>collection version</th><td>0.1.0</td></tr>',
        '<tr><th>Slurm</th><td>22.05.8</td></tr>',
        '<tr><th>NVIDIA driver</th><td>550.54.15 on n1; 535.104.05 on n2</td></tr>',
        '<tr><th>CUDA (driver)</th><td>12.4 on n1; unknown on n2</td></tr>',
        '<tr><th>NCCL</th><td>2.21.5 on n1; unknown on n2</td></tr>',
        '<tr><th>nccl-tests</th><td>2.13.9 on n1; unknown on n2</td></tr>',
        '</tbody></table>',
        '<details open="open"><summary>Versions per node (2 nodes; a version other than most nodes\' is marked)</summary>',
        '<table class="versions"><thead><tr><th>node</th><th>Slurm</th><th>NVIDIA driver</th><th>CUDA (driver)</th><th>NCCL</th>'
        '<th>nccl-tests</th></tr></thead><tbody>',
        '<tr><th>n1</th><td>22.05.8</td><td>550.54.15</td><td>12.4</td><td>2.21.5</td><td>2.13.9</td></tr>',
        '<tr><th>n2</th><td>22.05.8</td><td class="differs">535.104.05</td><td class="differs">unknown</td><td class="differs">unknown</td>'
        '<td class="differs">unknown</td></tr>',
        '</tbody></table></details>',
        '<h2>Failures</h2><ul class="failures">',
        '<li><code>n2</code> nccl/busbw: below | a\\b<div class="rerun">to rerun:</div><pre>%s</pre></li>' % COMMAND.replace("'", "&#x27;"),
        '<li><code>n2</code> preflight/driver: nvidia-smi not found</li>',
        '<li><code>n4+n1</code> pairs/transport: NET/Socket</li>',
        '</ul>',
        '<h2>busbw vs message size</h2>',
        # the plot shows the report's threshold; the failed runs are named to it
        vr.render_svg(EDGE_SERIES, threshold_gbps=296.0, highlight={"n1", "n2", "n4", "n4+n1"}),
        '<h2>Stages</h2>',
        '<table class="stages"><thead><tr><th>stage</th><th>status</th><th>nodes</th><th>failed nodes</th><th>checks</th><th>pass</th>'
        '<th>fail</th><th>skip</th></tr></thead><tbody>',
        '<tr><th><a href="#stage-0">nccl</a></th><td class="fail">FAIL</td><td>3</td><td>1</td><td>4</td><td>2</td><td>1</td><td>1</td></tr>',
        '<tr><th><a href="#stage-1">preflight</a></th><td class="fail">FAIL</td><td>1</td><td>1</td><td>1</td><td>0</td><td>1</td><td>0</td></tr>',
        '<tr><th><a href="#stage-2">pairs</a></th><td class="fail">FAIL</td><td>1</td><td>1</td><td>1</td><td>0</td><td>1</td><td>0</td></tr>',
        '</tbody></table>',
        '<h2 id="stage-0">Stage <code>nccl</code>: FAIL</h2>',
        '<details open="open"><summary>3 nodes: 1 failed, 1 passed, 1 skipped (failed nodes first)</summary>',
        '<table><thead><tr><th>node</th><th>busbw</th><th>wrong</th></tr></thead><tbody>',
        '<tr><th>n2</th><td class="fail" title="below | a\\b">FAIL</td><td></td></tr>',
        '<tr><th>n1</th><td class="pass" title="mean 470 GB/s">PASS</td><td class="pass" title="">PASS</td></tr>',
        '<tr><th>n3</th><td></td><td class="skip" title="no CUDA">SKIP</td></tr>',
        '</tbody></table></details>',
        '<h2 id="stage-1">Stage <code>preflight</code>: FAIL</h2>',
        '<details open="open"><summary>1 nodes: 1 failed, 0 passed, 0 skipped (failed nodes first)</summary>',
        '<table><thead><tr><th>node</th><th>driver</th></tr></thead><tbody>',
        '<tr><th>n2</th><td class="fail" title="nvidia-smi not found">FAIL</td></tr>',
        '</tbody></table></details>',
        '<h2 id="stage-2">Stage <code>pairs</code>: FAIL</h2>',
        '<details open="open"><summary>1 nodes: 1 failed, 0 passed, 0 skipped (failed nodes first)</summary>',
        '<table><thead><tr><th>node</th><th>transport</th></tr></thead><tbody>',
        '<tr><th>n4+n1</th><td class="fail" title="NET/Socket">FAIL</td></tr>',
        '</tbody></table></details>',
    ]
    assert vr.render_html(report()) == (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>T &lt;1&gt;</title><style>' + vr._STYLE + '</style></head><body>\n' + "\n".join(body) + "\n</body></html>\n")


def test_html_without_series_or_failures_has_no_plot_and_no_failure_list():
    html = vr.render_html(vr.build_report([rec("n1", "busbw", "pass", "ok"), rec("n2", "busbw", "skip", "no GPU")]))
    body = html.split("<body>\n", 1)[1].split("\n</body>", 1)[0]
    assert "<svg" not in body and "Failures" not in body and "Versions per node" not in body
    assert body.split("\n")[-6:] == [
        '<h2 id="stage-0">Stage <code>nccl</code>: PASS</h2>',
        '<details open="open"><summary>2 nodes: 0 failed, 1 passed, 1 skipped (failed nodes first)</summary>',
        '<table><thead><tr><th>node</th><th>busbw</th></tr></thead><tbody>',
        '<tr><th>n1</th><td class="pass" title="ok">PASS</td></tr>',
        '<tr><th>n2</th><td class="skip" title="no GPU">SKIP</td></tr>',
        '</tbody></table></details>',
    ]


# ------------------------------------------------------------------ SVG


def test_svg_document():
    """Plot area 426 x 292 at (64, 20); x: 2^10..2^12 over 426 px; y: 0..120 GB/s (step 20) over 292 px."""
    svg = vr.render_svg([{"label": "a", "points": [[4096, 100.0], [1024, 40.0], [2048, 80.0]]}, {"label": "b<&>", "points": [[4096, 50.0]]}],
                        threshold_gbps=90)
    assert svg.split("\n") == [
        '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="360" viewBox="0 0 640 360" role="img" font-family="sans-serif" font-size="11">',
        '<title>busbw vs message size</title>',
        '<rect x="64" y="20" width="426" height="292" fill="none" stroke="#444"/>',
        '<line x1="64.0" y1="20" x2="64.0" y2="312" stroke="#ddd"/>',
        '<text x="64.0" y="326" text-anchor="middle">1K</text>',
        '<line x1="277.0" y1="20" x2="277.0" y2="312" stroke="#ddd"/>',
        '<text x="277.0" y="326" text-anchor="middle">2K</text>',
        '<line x1="490.0" y1="20" x2="490.0" y2="312" stroke="#ddd"/>',
        '<text x="490.0" y="326" text-anchor="middle">4K</text>',
        '<line x1="64" y1="312.0" x2="490" y2="312.0" stroke="#ddd"/>',
        '<text x="60" y="316.0" text-anchor="end">0</text>',
        '<line x1="64" y1="263.3" x2="490" y2="263.3" stroke="#ddd"/>',
        '<text x="60" y="267.3" text-anchor="end">20</text>',
        '<line x1="64" y1="214.7" x2="490" y2="214.7" stroke="#ddd"/>',
        '<text x="60" y="218.7" text-anchor="end">40</text>',
        '<line x1="64" y1="166.0" x2="490" y2="166.0" stroke="#ddd"/>',
        '<text x="60" y="170.0" text-anchor="end">60</text>',
        '<line x1="64" y1="117.3" x2="490" y2="117.3" stroke="#ddd"/>',
        '<text x="60" y="121.3" text-anchor="end">80</text>',
        '<line x1="64" y1="68.7" x2="490" y2="68.7" stroke="#ddd"/>',
        '<text x="60" y="72.7" text-anchor="end">100</text>',
        '<line x1="64" y1="20.0" x2="490" y2="20.0" stroke="#ddd"/>',
        '<text x="60" y="24.0" text-anchor="end">120</text>',
        '<text x="277.0" y="352" text-anchor="middle">message size (bytes, log2 scale)</text>',
        '<text x="14" y="166.0" text-anchor="middle" transform="rotate(-90 14 166.0)">busbw (GB/s)</text>',
        '<line class="threshold" x1="64" y1="93.0" x2="490" y2="93.0" stroke="#000" stroke-dasharray="6 4"/>',
        '<text x="68" y="89.0">threshold 90 GB/s</text>',
        '<polyline class="run" fill="none" stroke="#1f77b4" stroke-width="2" points="64.0,214.7 277.0,117.3 490.0,68.7"><title>a</title></polyline>',
        '<circle cx="64.0" cy="214.7" r="2.5" fill="#1f77b4"/>',
        '<circle cx="277.0" cy="117.3" r="2.5" fill="#1f77b4"/>',
        '<circle cx="490.0" cy="68.7" r="2.5" fill="#1f77b4"/>',
        '<line x1="496" y1="30" x2="512" y2="30" stroke="#1f77b4" stroke-width="2"/>',
        '<text x="516" y="34">a</text>',
        '<polyline class="run" fill="none" stroke="#d62728" stroke-width="2" points="490.0,190.3"><title>b&lt;&amp;&gt;</title></polyline>',
        '<circle cx="490.0" cy="190.3" r="2.5" fill="#d62728"/>',
        '<line x1="496" y1="46" x2="512" y2="46" stroke="#d62728" stroke-width="2"/>',
        '<text x="516" y="50">b&lt;&amp;&gt;</text>',
        '</svg>',
    ]


def test_svg_of_another_size_scales_the_plot_area():
    root = ET.fromstring(vr.render_svg(EDGE_SERIES, width=800, height=400))
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == ("800", "400", "0 0 800 400")
    rect = root.find(SVG_NS + "rect")
    assert (rect.get("x"), rect.get("y"), rect.get("width"), rect.get("height")) == ("64", "20", "586", "332")


def x_ticks(svg):
    root = ET.fromstring(svg)
    return [(t.text, t.get("x")) for t in root.findall(SVG_NS + "text") if t.get("text-anchor") == "middle" and t.get("transform") is None][:-1]


@pytest.mark.parametrize("sizes, ticks", [
    # one size: the axis spans one power of two either side, the point in the middle
    ([1024], [("512B", "64.0"), ("1K", "277.0"), ("2K", "490.0")]),
    # sizes between powers of two: the axis runs from the power below the smallest to the power above the largest
    ([1000, 5000], [("512B", "64.0"), ("1K", "170.5"), ("2K", "277.0"), ("4K", "383.5"), ("8K", "490.0")]),
    # 12 doublings: a tick at each
    ([2 ** 3, 2 ** 15], [(label, None) for label in ("8B", "16B", "32B", "64B", "128B", "256B", "512B", "1K", "2K", "4K", "8K", "16K", "32K")]),
    # 13 doublings: a tick at every second power of two
    ([2 ** 3, 2 ** 16], [(label, None) for label in ("8B", "32B", "128B", "512B", "2K", "8K", "32K")]),
    # 30 doublings: every third
    ([2 ** 3, 2 ** 33], [(label, None) for label in ("8B", "64B", "512B", "4K", "32K", "256K", "2M", "16M", "128M", "1G", "8G")]),
])
def test_svg_x_axis_ticks(sizes, ticks):
    got = x_ticks(vr.render_svg([{"label": "r", "points": [[size, 1.0] for size in sizes]}]))
    if ticks[0][1] is None:
        got = [(label, None) for label, dummy in got]
    assert got == ticks


def y_ticks(svg):
    root = ET.fromstring(svg)
    return [t.text for t in root.findall(SVG_NS + "text") if t.get("text-anchor") == "end"]


@pytest.mark.parametrize("busbws, threshold, ticks", [
    ([40.0, 100.0], None, ["0", "20", "40", "60", "80", "100", "120"]),       # 100 * 1.05 rounded up to the step of 20
    ([40.0, 100.0], 296.0, ["0", "100", "200", "300", "400"]),              # the threshold is on the plot too
    ([0.1, 0.5], None, ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]),    # below 1 GB/s
    ([0.0, 0.0], None, ["0", "0.2", "0.4", "0.6", "0.8", "1", "1.2"]),      # all 0: a 0..1 axis (and a margin)
])
def test_svg_y_axis_ticks(busbws, threshold, ticks):
    points = [[2 ** (10 + index), value] for index, value in enumerate(busbws)]
    assert y_ticks(vr.render_svg([{"label": "r", "points": points}], threshold_gbps=threshold)) == ticks


def test_svg_colours_cycle_through_the_palette():
    runs = [{"label": "r%d" % index, "points": [[1024, 1.0]]} for index in range(12)]
    root = ET.fromstring(vr.render_svg(runs))
    colours = [p.get("stroke") for p in root.findall(SVG_NS + "polyline")]
    assert colours == ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                       "#1f77b4", "#d62728"]


@pytest.mark.parametrize("span, step", [
    (1.0, 0.2),
    (5.0, 1.0),      # exactly 1 x 10^0 per tick
    (6.0, 2.0),
    (10.0, 2.0),
    (25.0, 5.0),
    (35.0, 10.0),
    (100.0, 20.0),
    (296.0, 100.0),
    (0.5, 0.1),
])
def test_nice_step_is_1_2_or_5_times_a_power_of_ten(span, step):
    assert vr._nice_step(span) == pytest.approx(step)


@pytest.mark.parametrize("exponent, label", [
    (0, "1B"), (9, "512B"), (10, "1K"), (19, "512K"), (20, "1M"), (29, "512M"), (30, "1G"), (31, "2G"), (33, "8G"),
])
def test_size_tick_labels(exponent, label):
    assert vr._size_tick(exponent) == label


@pytest.mark.parametrize("value, text", [(0.0, "0"), (10.0, "10"), (296.0, "296"), (2.5, "2.5"), (0.25, "0.2"), (1.2000000000000002, "1.2")])
def test_axis_numbers_drop_a_trailing_zero(value, text):
    assert vr._fmt(value) == text


# ------------------------------------------------------------------ module input


@pytest.mark.parametrize("params", [
    {"expected_nodes": ["n1", "n2"], "drain_nodes": None, "threshold_gbps": None, "title": ""},
    {"expected_nodes": [], "drain_nodes": ["n1"], "threshold_gbps": 0.5, "title": "NCCL"},
])
def test_check_report_input_accepts(params):
    assert vr.check_report_input(params) is None


@pytest.mark.parametrize("params, message", [
    ({"expected_nodes": ["node 1"], "title": "t"}, "expected_nodes[0] is 'node 1', expected a node name (no spaces)"),
    ({"drain_nodes": ["n1", "-x"], "title": "t"}, "drain_nodes[1] is '-x', expected a node name (no spaces)"),
    ({"threshold_gbps": 0, "title": "t"}, "threshold_gbps is 0, expected a number above 0"),
    ({"threshold_gbps": "fast", "title": "t"}, "threshold_gbps is 'fast', expected a number above 0"),
])
def test_check_report_input_errors(params, message):
    with pytest.raises(InputError) as err:
        vr.check_report_input(params)
    assert str(err.value) == message
