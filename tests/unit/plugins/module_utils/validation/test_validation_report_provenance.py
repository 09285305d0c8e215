# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the validation report says was validated (times, collection and per-node versions), the command under a failure,
the gate curves on the busbw plot, and a report of 256 nodes that stays readable (_validation_report)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr
from ansible_collections.gpucluster.bringup.tests.unit.report_samples import SIZES, SVG_NS, many_series, rec, sample_report


def svg_root(*args, **kwargs):
    return ET.fromstring(vr.render_svg(*args, **kwargs))


def by_class(root, tag, cls):
    return [element for element in root.iter(SVG_NS + tag) if cls in (element.get("class") or "").split()]


# ------------------------------------------------------------------ times


@pytest.mark.parametrize("text, seconds", [
    ("2025-01-31T08:00:00Z", 1738310400),
    ("2025-01-31T08:00:00", 1738310400),           # no zone: UTC
    ("2025-01-31 08:00:00Z", 1738310400),          # str() of a datetime, with a space
    ("2025-01-31T08:00:00.123456Z", 1738310400),   # fractions are dropped
    ("2025-01-31T09:30:00+01:30", 1738310400),     # an offset is applied
    ("2025-01-31T06:00:00-0200", 1738310400),
    ("2024-02-29T00:00:00Z", 1709164800),
])
def test_parse_time(text, seconds):
    assert vr.parse_time(text) == seconds


@pytest.mark.parametrize("text", ["", "yesterday", "2025-13-01T00:00:00Z", "2025-01-32T00:00:00Z", "2025-01-31T24:00:00Z",
                                  "2025-01-31", "2025-01-31T08:00Z", None, 1738310400])
def test_parse_time_refuses(text):
    assert vr.parse_time(text) is None


@pytest.mark.parametrize("seconds, text", [(None, "unknown"), (0, "0s"), (59, "59s"), (60, "1m 00s"), (3599, "59m 59s"),
                                           (3600, "1h 00m 00s"), (90061, "25h 01m 01s")])
def test_duration_text(seconds, text):
    assert vr.duration_text(seconds) == text


@pytest.mark.parametrize("provenance, duration", [
    ({"generated": "2025-01-31T08:00:09Z", "started": "2025-01-31T08:00:00Z"}, 9),
    ({"generated": "2025-01-31T08:00:00Z", "started": "2025-01-31T08:00:09Z"}, None),   # clocks disagree: not a negative duration
    ({"generated": "2025-01-31T08:00:00Z"}, None),
    ({"started": "2025-01-31T08:00:00Z"}, None),
    ({"generated": "", "started": ""}, None),
])
def test_duration_needs_both_times(provenance, duration):
    assert vr.build_report([], provenance=provenance)["provenance"]["duration_s"] == duration


# ------------------------------------------------------------------ versions


def test_versions_per_node_merge_what_is_given_with_the_nccl_runs():
    records = [
        rec("fabric", "busbw", "fail", hosts=["n1", "n2", "n3"], versions={"nccl": "2.19.3", "nccl_tests": "2.13.8"}),
        rec("n1", "complete", "pass", versions={"nccl": "2.21.5", "nccl_tests": "2.13.9"}),
        rec("n1", "busbw", "pass"),
    ]
    provenance = {"nodes": [{"node": "n1", "slurm": "22.05.8", "driver": "550.54.15", "cuda": "12.4"},
                            {"node": "n2", "slurm": 23.02, "driver": None, "nccl": "2.18.1"},
                            {"node": "n4"}]}
    nodes = vr.build_report(records, provenance=provenance)["provenance"]["nodes"]
    assert nodes == [
        # given first; the fabric run (met first) fills what is unknown, the node's own run comes too late for n1
        {"node": "n1", "slurm": "22.05.8", "driver": "550.54.15", "cuda": "12.4", "nccl": "2.19.3", "nccl_tests": "2.13.8"},
        {"node": "n2", "slurm": "23.02", "driver": None, "cuda": None, "nccl": "2.18.1", "nccl_tests": "2.13.8"},
        {"node": "n4", "slurm": None, "driver": None, "cuda": None, "nccl": None, "nccl_tests": None},
        {"node": "n3", "slurm": None, "driver": None, "cuda": None, "nccl": "2.19.3", "nccl_tests": "2.13.8"},
    ]


def test_version_summary():
    nodes = [dict(node="n%d" % i, driver="550.54.15") for i in range(12)] + [dict(node="odd", driver="535.104.05"), dict(node="new", driver=None)]
    assert vr.version_summary(nodes, "driver") == "550.54.15 on 12 nodes; 535.104.05 on odd; unknown on new"
    assert vr.version_summary(nodes[:3], "driver") == "550.54.15"
    assert vr.version_summary([dict(node="a", driver=None)], "driver") == "unknown"
    assert vr.version_summary([], "driver") == "unknown"
    # as common: a known version before unknown, then the one met first
    assert vr.version_summary([dict(node="a", cuda=None), dict(node="b", cuda="12.4"), dict(node="c", cuda="12.2")], "cuda") == (
        "12.4 on b; 12.2 on c; unknown on a")


@pytest.mark.parametrize("provenance, records, message", [
    ("x", [], "provenance is 'x', expected a dict"),
    ({"generated": "now"}, [], "provenance generated is 'now', expected a time such as 2025-01-31T08:00:00Z (UTC ISO 8601)"),
    ({"started": "8am"}, [], "provenance started is '8am', expected a time such as 2025-01-31T08:00:00Z (UTC ISO 8601)"),
    ({"collection_version": ["1"]}, [], "provenance: collection_version is ['1'], expected a version string"),
    ({"nodes": "n1"}, [], "provenance nodes is 'n1', expected a list of {node, slurm, driver, cuda, nccl, nccl_tests}"),
    ({"nodes": [{"slurm": "22.05"}]}, [], "versions 0 is {'slurm': '22.05'}, expected {'node': name, 'slurm': version, 'driver': version, "
                                          "'cuda': version, 'nccl': version, 'nccl_tests': version}"),
    ({"nodes": [{"node": "n1", "gpu": "H100"}]}, [], "versions 0 (n1) has unknown key(s) gpu; valid keys: node, slurm, driver, cuda, nccl, nccl_tests"),
    ({"nodes": [{"node": "n1", "driver": {"v": 1}}]}, [], "versions 0 (n1): driver is {'v': 1}, expected a version string"),
    ({}, [rec("n1", "busbw", "pass", versions="2.21.5")],
     "result 0: versions is '2.21.5', expected a dict with keys slurm, driver, cuda, nccl, nccl_tests"),
    ({}, [rec("n1", "busbw", "pass", command=["srun"])], "result 0: command is ['srun'], expected the command line as a string"),
])
def test_bad_provenance_is_one_clear_error(provenance, records, message):
    with pytest.raises(ValueError) as err:
        vr.build_report(records, provenance=provenance)
    assert str(err.value) == message


@pytest.mark.parametrize("params", [
    {"title": "t", "started": None, "versions": None},
    {"title": "t", "started": "", "versions": []},
    {"title": "t", "started": "2025-01-31T08:00:00Z", "versions": [{"node": "n1"}, {"node": "n2", "slurm": "22.05.8", "cuda": 12.4, "nccl": None}]},
])
def test_check_report_input_accepts_provenance(params):
    assert vr.check_report_input(params) is None


@pytest.mark.parametrize("params, message", [
    ({"title": "t", "started": "today"}, "started is 'today', expected a time such as 2025-01-31T08:00:00Z (UTC ISO 8601)"),
    ({"title": "t", "versions": ["n1"]}, "versions[0] is 'n1', expected a dict with keys node, slurm, driver, cuda, nccl, nccl_tests"),
    ({"title": "t", "versions": [{"slurm": "1"}]}, "versions[0] lacks the key(s) node (required: node)"),
    ({"title": "t", "versions": [{"node": "n1", "gpus": 8}]}, "versions[0] has unknown key(s) gpus; valid keys: node, slurm, driver, cuda, nccl, nccl_tests"),
    ({"title": "t", "versions": [{"node": "n 1"}]}, "versions[0].node is 'n 1', expected a node name (no spaces)"),
    ({"title": "t", "versions": [{"node": "n1", "driver": ["550"]}]}, "versions[0].driver is ['550'], expected a version (a string) or null"),
])
def test_check_report_input_refuses_provenance(params, message):
    with pytest.raises(InputError) as err:
        vr.check_report_input(params)
    assert str(err.value) == message


# ------------------------------------------------------------------ commands


def test_markdown_code_block_fence_is_longer_than_any_backticks_inside():
    assert vr._md_code("echo `hostname`") == ["  ```", "  echo `hostname`", "  ```"]
    assert vr._md_code("a ``` b\nsecond") == ["  ````", "  a ``` b", "  second", "  ````"]


def test_several_commands_are_one_line_each():
    report = vr.build_report([rec("n1", "isolation", "fail", "n1 is slow in both its pairs", command="srun -w n0,n1 x\nsrun -w n1,n2 x")])
    assert "  srun -w n0,n1 x\n  srun -w n1,n2 x\n" in vr.render_markdown(report)
    assert "<pre>srun -w n0,n1 x\nsrun -w n1,n2 x</pre>" in vr.render_html(report)


# ------------------------------------------------------------------ gates on the plot


def test_gate_series_are_checked():
    clean = vr.build_report([], series=[{"label": "a", "points": [[8, 1.0]], "gate": [(2 ** 30, 296), [2 ** 26, 150.5]]},
                                        {"label": "b", "points": [[8, 1.0]], "gate": []},
                                        {"label": "c", "points": [[8, 1.0]], "gate": None}])["series"]
    assert clean == [{"label": "a", "points": [[8, 1.0]], "gate": [[2 ** 26, 150.5], [2 ** 30, 296]]},
                     {"label": "b", "points": [[8, 1.0]]}, {"label": "c", "points": [[8, 1.0]]}]


@pytest.mark.parametrize("gate, message", [
    ("296", "series 'a': gate is '296', expected a list of [size_bytes, gbps] pairs"),
    ([296], "series 'a': gate point 296 is not a [size_bytes, gbps] pair"),
    ([[8, 1, 2]], "series 'a': gate point [8, 1, 2] is not a [size_bytes, gbps] pair"),
    ([[0, 296]], "series 'a': gate point [0, 296] needs a size above 0 and a gbps of 0 or more"),
    ([[8, "fast"]], "series 'a': gate point [8, 'fast'] needs a size above 0 and a gbps of 0 or more"),
])
def test_bad_gate_is_one_clear_error(gate, message):
    with pytest.raises(ValueError) as err:
        vr.build_report([], series=[{"label": "a", "points": [[8, 1.0]], "gate": gate}])
    assert str(err.value) == message


def test_svg_draws_a_gate_curve_over_the_runs_dashed_and_labelled():
    curve = [[2 ** 26, 150.0], [2 ** 30, 280.0], [2 ** 33, 296.0]]
    series = [{"label": "n1", "points": [[s, 300.0 * s / (s + 2 ** 26)] for s in SIZES], "gate": curve},
              {"label": "n2", "points": [[s, 100.0] for s in SIZES], "gate": curve}]
    root = svg_root(series, threshold_gbps=296.0)
    gates = by_class(root, "polyline", "gate")
    assert len(gates) == 1                                     # one line for the gate both runs share
    assert gates[0].get("stroke-dasharray") and gates[0].find(SVG_NS + "title").text == "gate of n1, n2"
    children = list(root)
    assert children.index(gates[0]) > max(children.index(p) for p in by_class(root, "polyline", "run"))   # drawn over the curves
    xs = [float(pair.split(",")[0]) for pair in gates[0].get("points").split()]
    assert xs == sorted(xs) and len(xs) == 3                   # its points, ending at the largest size (the plot's edge)
    assert [t.text for t in by_class(root, "text", "gate")] == ["gate"]
    assert len(by_class(root, "line", "threshold")) == 1       # the single threshold line is kept


def test_svg_flat_gate_holds_from_its_size_to_the_edge_and_distinct_gates_are_named():
    series = [{"label": "n1", "points": [[s, 300.0] for s in SIZES], "gate": [[2 ** 30, 296.0]]},
              {"label": "fabric", "points": [[s, 40.0] for s in SIZES], "gate": [[2 ** 30, 37.6]]}]
    root = svg_root(series)
    gates = by_class(root, "polyline", "gate")
    assert len(gates) == 2
    first = [tuple(float(v) for v in pair.split(",")) for pair in gates[0].get("points").split()]
    rect = root.find(SVG_NS + "rect")
    assert len(first) == 2 and first[1][0] == float(rect.get("x")) + float(rect.get("width")) and first[0][1] == first[1][1]
    assert [t.text for t in by_class(root, "text", "gate")] == ["gate n1", "gate fabric"]


def test_svg_of_three_runs_and_two_gates_whole():
    """Every coordinate of a small plot: the axes, the threshold, the runs (the failing one thicker), the legend, and each gate
    labelled at its right end (a gate that ends before the edge holds its last figure to it)."""
    series = [{"label": "n1", "points": [[1024, 10.0], [4096, 40.0]], "gate": [[1024, 20.0], [4096, 30.0]]},
              {"label": "n2", "points": [[1024, 12.0], [2048, 30.0]], "gate": [[2048, 25.0]]},
              {"label": "n3", "points": [[2048, 5.0]], "gate": [[1024, 20.0], [4096, 30.0]]}]
    assert vr.render_svg(series, threshold_gbps=35, width=400, height=200, highlight={"n2"}).split("\n") == [
        '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200" role="img" font-family="sans-serif" font-size="11">',
        '<title>busbw vs message size</title>',
        '<rect x="64" y="20" width="186" height="132" fill="none" stroke="#444"/>',
        '<line x1="64.0" y1="20" x2="64.0" y2="152" stroke="#ddd"/>',
        '<text x="64.0" y="166" text-anchor="middle">1K</text>',
        '<line x1="157.0" y1="20" x2="157.0" y2="152" stroke="#ddd"/>',
        '<text x="157.0" y="166" text-anchor="middle">2K</text>',
        '<line x1="250.0" y1="20" x2="250.0" y2="152" stroke="#ddd"/>',
        '<text x="250.0" y="166" text-anchor="middle">4K</text>',
        '<line x1="64" y1="152.0" x2="250" y2="152.0" stroke="#ddd"/>',
        '<text x="60" y="156.0" text-anchor="end">0</text>',
        '<line x1="64" y1="125.6" x2="250" y2="125.6" stroke="#ddd"/>',
        '<text x="60" y="129.6" text-anchor="end">10</text>',
        '<line x1="64" y1="99.2" x2="250" y2="99.2" stroke="#ddd"/>',
        '<text x="60" y="103.2" text-anchor="end">20</text>',
        '<line x1="64" y1="72.8" x2="250" y2="72.8" stroke="#ddd"/>',
        '<text x="60" y="76.8" text-anchor="end">30</text>',
        '<line x1="64" y1="46.4" x2="250" y2="46.4" stroke="#ddd"/>',
        '<text x="60" y="50.4" text-anchor="end">40</text>',
        '<line x1="64" y1="20.0" x2="250" y2="20.0" stroke="#ddd"/>',
        '<text x="60" y="24.0" text-anchor="end">50</text>',
        '<text x="157.0" y="192" text-anchor="middle">message size (bytes, log2 scale)</text>',
        '<text x="14" y="86.0" text-anchor="middle" transform="rotate(-90 14 86.0)">busbw (GB/s)</text>',
        '<line class="threshold" x1="64" y1="59.6" x2="250" y2="59.6" stroke="#000" stroke-dasharray="6 4"/>',
        '<text x="68" y="55.6">threshold 35 GB/s</text>',
        '<polyline class="run" fill="none" stroke="#1f77b4" stroke-width="2" points="64.0,125.6 250.0,46.4"><title>n1</title></polyline>',
        '<circle cx="64.0" cy="125.6" r="2.5" fill="#1f77b4"/>',
        '<circle cx="250.0" cy="46.4" r="2.5" fill="#1f77b4"/>',
        '<line x1="256" y1="30" x2="272" y2="30" stroke="#1f77b4" stroke-width="2"/>',
        '<text x="276" y="34">n1</text>',
        '<polyline class="run failed" fill="none" stroke="#d62728" stroke-width="3" points="64.0,120.3 157.0,72.8"><title>n2</title></polyline>',
        '<circle cx="64.0" cy="120.3" r="2.5" fill="#d62728"/>',
        '<circle cx="157.0" cy="72.8" r="2.5" fill="#d62728"/>',
        '<line x1="256" y1="46" x2="272" y2="46" stroke="#d62728" stroke-width="3"/>',
        '<text x="276" y="50">n2</text>',
        '<polyline class="run" fill="none" stroke="#2ca02c" stroke-width="2" points="157.0,138.8"><title>n3</title></polyline>',
        '<circle cx="157.0" cy="138.8" r="2.5" fill="#2ca02c"/>',
        '<line x1="256" y1="62" x2="272" y2="62" stroke="#2ca02c" stroke-width="2"/>',
        '<text x="276" y="66">n3</text>',
        '<polyline class="gate" fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="3 3" points="64.0,99.2 250.0,72.8">'
        '<title>gate of n1, n3</title></polyline>',
        '<text class="gate" x="248.0" y="68.8" text-anchor="end">gate (2 runs)</text>',
        '<polyline class="gate" fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="3 3" points="157.0,86.0 250.0,86.0">'
        '<title>gate of n2</title></polyline>',
        '<text class="gate" x="248.0" y="82.0" text-anchor="end">gate n2</text>',
        '</svg>',
    ]


def test_svg_beyond_the_legend_draws_the_others_grey_and_counts_them():
    runs = [{"label": "r%02d" % index, "points": [[1024, 10.0 + index]]} for index in range(vr.LEGEND_MAX + 1)]
    lines = vr.render_svg(runs, highlight={"r05"}).split("\n")
    assert [line for line in lines if "c8c8c8" in line or "more" in line] == [
        '<polyline class="run other" fill="none" stroke="#c8c8c8" stroke-width="1" points="277.0,55.0"><title>r12</title></polyline>',
        '<line x1="496" y1="222" x2="512" y2="222" stroke="#c8c8c8" stroke-width="1"/>',
        '<text class="more" x="516" y="226">1 more runs</text>',
    ]
    assert [line for line in lines if "r05" in line or "r00" in line] == [
        '<polyline class="run failed" fill="none" stroke="#1f77b4" stroke-width="3" points="277.0,136.8"><title>r05</title></polyline>',
        '<text x="516" y="34">r05</text>',
        '<polyline class="run" fill="none" stroke="#d62728" stroke-width="2" points="277.0,195.2"><title>r00</title></polyline>',
        '<text x="516" y="50">r00</text>',
    ]


def test_svg_axis_reaches_a_gate_above_every_run():
    root = svg_root([{"label": "n1", "points": [[1024, 10.0]], "gate": [[1024, 400.0]]}])
    assert [t.text for t in root.findall(SVG_NS + "text") if t.get("text-anchor") == "end" and t.get("class") is None][-1] == "500"


# ------------------------------------------------------------------ many runs and nodes


def test_svg_of_256_runs_names_the_failing_and_the_slowest_only():
    series = many_series(256, slow=("gpu-137",))
    root = svg_root(series, highlight={"gpu-137"})
    coloured = by_class(root, "polyline", "run")
    assert len(coloured) == 256                                # every run is drawn
    named = [p for p in coloured if "other" not in p.get("class").split()]
    assert len(named) == vr.LEGEND_MAX and named[0].find(SVG_NS + "title").text == "gpu-137"
    assert [p.find(SVG_NS + "title").text for p in by_class(root, "polyline", "failed")] == ["gpu-137"]   # drawn thicker
    assert named[0].get("stroke-width") == "3" and named[1].get("stroke-width") == "2"
    # the others drawn first, thin and grey, without point markers
    assert all(p.get("stroke") == "#c8c8c8" for p in by_class(root, "polyline", "other"))
    assert len(root.findall(SVG_NS + "circle")) == vr.LEGEND_MAX * len(SIZES)
    legend = [t.text for t in root.findall(SVG_NS + "text") if t.get("x") == "516" and t.get("class") is None]
    assert legend[0] == "gpu-137" and len(legend) == vr.LEGEND_MAX
    # the slowest next (busbw 300 + i % 7: the nodes with i % 7 == 0, first met first)
    assert legend[1:4] == ["gpu-000", "gpu-007", "gpu-014"]
    assert [t.text for t in by_class(root, "text", "more")] == ["244 more runs"]
    assert int(root.get("height")) >= 16 * (vr.LEGEND_MAX + 2) + 20


def big_report():
    return sample_report(256, failing="gpu-137", odd_driver="gpu-200")


def test_html_of_256_nodes_stays_readable():
    report = big_report()
    html = vr.render_html(report)
    body = html.split("<body>\n", 1)[1].split("\n</body>", 1)[0]
    ET.fromstring("<div>" + body + "</div>")                                  # well-formed
    assert "<script" not in html and not re.search(r"\b(?:src|href)=\"(?!#)", html)   # self-contained
    order = [body.index(marker) for marker in ("FAIL: 1 of 1536 checks failed on gpu-137", "<h2>What was validated</h2>", "<h2>Failures</h2>",
                                               "<svg", "<h2>Stages</h2>", '<h2 id="stage-0">')]
    assert order == sorted(order)                                              # the failure and the plot before the long tables
    assert "<tr><th>NVIDIA driver</th><td>550.54.15 on 255 nodes; 535.104.05 on gpu-200</td></tr>" in body
    assert "<tr><th>NCCL</th><td>2.21.5</td></tr>" in body
    assert body.count('<td class="differs">') == 1
    assert ('<li><code>gpu-137</code> nccl/busbw: mean busbw 117.6 GB/s at 1 GiB and up is below the gate (296.0 GB/s)'
            '<div class="rerun">to rerun:</div><pre>srun --nodes=1 --nodelist=gpu-137 ') in body
    # the long tables are folded: the per-node versions and both stages
    assert body.count("<details>") == 3 and "<details open" not in body
    nccl = body.split('<h2 id="stage-1">', 1)[1]
    assert nccl.index("<tr><th>gpu-137</th>") < nccl.index("<tr><th>gpu-000</th>")   # failed nodes first
    assert "<summary>256 nodes: 1 failed, 255 passed, 0 skipped (failed nodes first)</summary>" in nccl
    assert len(html) < 1500000


def test_markdown_and_junit_of_256_nodes():
    report = big_report()
    markdown = vr.render_markdown(report)
    assert "- NVIDIA driver: 550.54.15 on 255 nodes; 535.104.05 on gpu-200" in markdown
    assert "  srun --nodes=1 --nodelist=gpu-137 --exclusive" in markdown
    root = ET.fromstring(vr.render_junit(report).split("\n", 1)[1])
    props = dict((p.get("name"), p.get("value")) for p in root.find("testsuite/properties"))
    assert props["duration_s"] == "3600" and props["driver"] == "550.54.15 on 255 nodes; 535.104.05 on gpu-200"


def test_the_nccl_stage_series_carry_their_gate_onto_the_plot():
    """A run judged as validation_jobs judges it: its series' gate (the curve it was gated with) is drawn; its versions
    and, failing, its command reach the report."""
    import os
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl", "v2.18.3_h200_two_nodes.txt")) as handle:
        result = {"rc": 0, "stdout": handle.read()}
    job = {"name": "fabric", "kind": "nccl", "hosts": ["gpu-01", "gpu-02"], "argv": ["srun", "--nodes=2", "all_reduce_perf"],
           "expect": {"topology": "ib-ndr-400", "nics": 1}}
    records, series, dummy = vj.judge(job, result, {"stage": "nccl", "mpi_required_paths": []})
    assert series[0].get("gate")
    report = vr.build_report(records, series=series)
    assert [run["gate"] for run in report["series"]] == [[list(point) for point in series[0]["gate"]]]
    assert report["provenance"]["nodes"] == [dict(node=name, slurm=None, driver=None, cuda=None, nccl="2.30.4+cuda13.2", nccl_tests="2.18.3")
                                             for name in ("gpu-01", "gpu-02")]
    root = ET.fromstring(vr.render_html(report).split("<h2>busbw vs message size</h2>\n", 1)[1].split("\n<h2>Stages</h2>", 1)[0])
    assert len(by_class(root, "polyline", "gate")) == 1


# ------------------------------------------------------------------ the gate curve of each run, per stage

RING = {"id": "h100-nvswitch/node/ring", "source": "80 % of 370 GB/s | NVIDIA"}
PAIRS = {"id": "h100/pairs", "source": "<site>"}


def curve_report():
    return vr.build_report([dict(stage="nccl", node="n1", check="busbw", status="pass", reason="ok", curve=RING),
                            dict(stage="nccl", node="n1", check="busbw_small", status="pass", reason="ok", curve=dict(RING)),
                            dict(stage="nccl", node="n1", check="latency", status="pass", reason="ok", curve=PAIRS),
                            dict(stage="nccl", node="n2", check="busbw", status="fail", reason="low", curve=RING),
                            dict(stage="nccl", node="n3", check="busbw", status="skip", reason="no GPU")])


def test_a_records_curve_is_kept_and_listed_once_a_run():
    report = curve_report()
    assert report["stages"][0]["nodes"][0]["checks"][0] == {"stage": "nccl", "node": "n1", "check": "busbw", "status": "pass", "reason": "ok",
                                                            "curve": RING}
    assert "curve" not in report["stages"][0]["nodes"][2]["checks"][0]
    assert vr.stage_curves(report["stages"][0]) == [("n1", RING["id"], RING["source"]), ("n1", "h100/pairs", "<site>"),
                                                    ("n2", RING["id"], RING["source"])]


def test_the_curves_in_markdown_and_html():
    report = curve_report()
    assert vr.render_markdown(report).split("### Gate curves\n", 1)[1].split("\n### Failures", 1)[0] == (
        "\n| run | curve | source |\n|---|---|---|\n| n1 | `h100-nvswitch/node/ring` | 80 % of 370 GB/s \\| NVIDIA |\n"
        "| n1 | `h100/pairs` | <site> |\n| n2 | `h100-nvswitch/node/ring` | 80 % of 370 GB/s \\| NVIDIA |\n")
    assert vr.render_html(report).split("<h3>Gate curves</h3>", 1)[1] == (
        "<table><thead><tr><th>run</th><th>curve</th><th>source</th></tr></thead><tbody>\n"
        "<tr><th>n1</th><td><code>h100-nvswitch/node/ring</code></td><td>80 % of 370 GB/s | NVIDIA</td></tr>\n"
        "<tr><th>n1</th><td><code>h100/pairs</code></td><td>&lt;site&gt;</td></tr>\n"
        "<tr><th>n2</th><td><code>h100-nvswitch/node/ring</code></td><td>80 % of 370 GB/s | NVIDIA</td></tr>\n"
        "</tbody></table>\n</body></html>\n")
    assert "Gate curves" not in vr.render_markdown(vr.build_report([dict(stage="s", node="n", check="c", status="pass")]))
