# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation report renderers' exact output, the plot's axes and the edges of its input checks (_validation_report)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr

SVG_NS = "{http://www.w3.org/2000/svg}"


def rec(node, check, status, reason="", stage="nccl", **extra):
    item = {"stage": stage, "node": node, "check": check, "status": status, "reason": reason}
    item.update(extra)
    return item


# One report that reaches every branch of the renderers: a passing check with a reason and values, one without a
# reason, failures with only a value, only a threshold and neither, a skip, a node without one of the stage's checks,
# a multi-node run that names its hosts, and a busbw series.
RECORDS = [
    rec("n1", "busbw", "pass", "mean 470 GB/s", value=470.0, threshold=296.0),
    rec("n1", "wrong", "pass"),
    rec("n2", "busbw", "fail", "below | a\\b", value=142.5),
    rec("n3", "wrong", "skip", "no CUDA"),
    rec("n2", "driver", "fail", "nvidia-smi not found", stage="preflight", threshold=1.0),
    rec("n4+n1", "transport", "fail", "NET/Socket", stage="pairs", hosts=["n4", "n1"]),
]
SERIES = [{"label": "n1", "points": [[1024, 1.5], [8, 0.25]]}]


def report():
    return vr.build_report(RECORDS, series=SERIES, title="T <1>", threshold_gbps=296.0)


# ------------------------------------------------------------------ input records


@pytest.mark.parametrize("record, key, expected", [
    ({"stage": "s", "node": "n", "check": "c", "status": "pass"}, "reason", ""),          # no reason: empty
    (rec("n", "c", "pass", reason=None), "reason", ""),                                 # reason None: empty
    (rec("n", "c", "pass", value=0), "value", 0),                                        # 0 is a value, not "none"
    (rec("n", "c", "pass", threshold=0.5), "threshold", 0.5),
    (rec("n", "c", "fail", hosts=["a", "b"]), "hosts", ["a", "b"]),
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
    assert 'class="threshold"' in vr.render_svg(SERIES, threshold_gbps=threshold)


@pytest.mark.parametrize("threshold, message", [
    (0, "threshold_gbps is 0, expected a number above 0"),
    (-1.5, "threshold_gbps is -1.5, expected a number above 0"),
    (float("nan"), "threshold_gbps is nan, expected a number above 0"),
    ("296", "threshold_gbps is '296', expected a number above 0"),
    (True, "threshold_gbps is True, expected a number above 0"),
])
def test_render_svg_refuses_a_bad_threshold_like_build_report(threshold, message):
    for call in (lambda: vr.render_svg(SERIES, threshold_gbps=threshold), lambda: vr.build_report([], threshold_gbps=threshold)):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == message


# ------------------------------------------------------------------ JSON


def test_json_of_an_empty_report():
    assert vr.render_json(vr.build_report([])) == "\n".join([
        "{",
        '  "failed_nodes": [],',
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


# ------------------------------------------------------------------ JUnit


@pytest.mark.skipif(not hasattr(ET, "indent"), reason="ElementTree.indent (Python 3.9+) indents the document")
def test_junit_document():
    assert vr.render_junit(report()) == "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<testsuites name="T &lt;1&gt;" tests="6" failures="3" errors="0" skipped="1">',
        '  <testsuite name="nccl" tests="4" failures="1" errors="0" skipped="1">',
        '    <testcase classname="nccl.n1" name="busbw" time="0">',
        '      <system-out>mean 470 GB/s [value=470.0 threshold=296.0]</system-out>',
        '    </testcase>',
        '    <testcase classname="nccl.n1" name="wrong" time="0" />',
        '    <testcase classname="nccl.n2" name="busbw" time="0">',
        '      <failure message="below | a\\b" type="busbw">below | a\\b [value=142.5 threshold=None]</failure>',
        '    </testcase>',
        '    <testcase classname="nccl.n3" name="wrong" time="0">',
        '      <skipped message="no CUDA" />',
        '    </testcase>',
        '  </testsuite>',
        '  <testsuite name="preflight" tests="1" failures="1" errors="0" skipped="0">',
        '    <testcase classname="preflight.n2" name="driver" time="0">',
        '      <failure message="nvidia-smi not found" type="driver">nvidia-smi not found [value=None threshold=1.0]</failure>',
        '    </testcase>',
        '  </testsuite>',
        '  <testsuite name="pairs" tests="1" failures="1" errors="0" skipped="0">',
        '    <testcase classname="pairs.n4+n1" name="transport" time="0">',
        '      <failure message="NET/Socket" type="transport">NET/Socket</failure>',
        '    </testcase>',
        '  </testsuite>',
        '</testsuites>',
        ''])


# ------------------------------------------------------------------ Markdown


def test_markdown_document():
    assert vr.render_markdown(report()) == "\n".join([
        "# T <1>",
        "",
        "**FAIL: 3 of 6 checks failed on n1, n2, n4**",
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

STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}"
         "td.pass{background:#e6f4ea}td.fail{background:#fce8e6;font-weight:bold}td.skip{color:#777}")


def test_html_document():
    body = [
        '<h1>T &lt;1&gt;</h1>',
        '<p class="summary fail"><strong>FAIL: 3 of 6 checks failed on n1, n2, n4</strong></p>',
        '<h2>Stage <code>nccl</code>: FAIL</h2>',
        '<table><thead><tr><th>node</th><th>busbw</th><th>wrong</th></tr></thead><tbody>',
        '<tr><th>n1</th><td class="pass" title="mean 470 GB/s">PASS</td><td class="pass" title="">PASS</td></tr>',
        '<tr><th>n2</th><td class="fail" title="below | a\\b">FAIL</td><td></td></tr>',
        '<tr><th>n3</th><td></td><td class="skip" title="no CUDA">SKIP</td></tr>',
        '</tbody></table>',
        '<h3>Failures</h3><ul>',
        '<li><code>n2</code> busbw: below | a\\b</li>',
        '</ul>',
        '<h2>Stage <code>preflight</code>: FAIL</h2>',
        '<table><thead><tr><th>node</th><th>driver</th></tr></thead><tbody>',
        '<tr><th>n2</th><td class="fail" title="nvidia-smi not found">FAIL</td></tr>',
        '</tbody></table>',
        '<h3>Failures</h3><ul>',
        '<li><code>n2</code> driver: nvidia-smi not found</li>',
        '</ul>',
        '<h2>Stage <code>pairs</code>: FAIL</h2>',
        '<table><thead><tr><th>node</th><th>transport</th></tr></thead><tbody>',
        '<tr><th>n4+n1</th><td class="fail" title="NET/Socket">FAIL</td></tr>',
        '</tbody></table>',
        '<h3>Failures</h3><ul>',
        '<li><code>n4+n1</code> transport: NET/Socket</li>',
        '</ul>',
        '<h2>busbw vs message size</h2>',
        vr.render_svg(SERIES, threshold_gbps=296.0),      # the plot shows the report's threshold
    ]
    assert vr.render_html(report()) == (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>T &lt;1&gt;</title><style>' + STYLE + '</style></head><body>\n'
        + "\n".join(body) + "\n</body></html>\n")


def test_html_without_series_or_failures_has_no_plot_and_no_failure_list():
    html = vr.render_html(vr.build_report([rec("n1", "busbw", "pass", "ok"), rec("n2", "busbw", "skip", "no GPU")]))
    body = html.split("<body>\n", 1)[1].split("\n</body>", 1)[0]
    assert body.split("\n") == [
        '<h1>Cluster validation</h1>',
        '<p class="summary pass"><strong>PASS: 1 checks passed, 1 skipped</strong></p>',
        '<h2>Stage <code>nccl</code>: PASS</h2>',
        '<table><thead><tr><th>node</th><th>busbw</th></tr></thead><tbody>',
        '<tr><th>n1</th><td class="pass" title="ok">PASS</td></tr>',
        '<tr><th>n2</th><td class="skip" title="no GPU">SKIP</td></tr>',
        '</tbody></table>',
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
        '<text x="496" y="97.0">threshold 90 GB/s</text>',
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
    root = ET.fromstring(vr.render_svg(SERIES, width=800, height=400))
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
    ({"title": 5}, "title is 5, expected a string"),
])
def test_check_report_input_errors(params, message):
    with pytest.raises(InputError) as err:
        vr.check_report_input(params)
    assert str(err.value) == message
