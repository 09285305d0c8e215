# -*- coding: utf-8 -*-
"""Table tests for the nccl-tests parser and gates (plugins/module_utils/validation/_nccl.py).

Recorded outputs live in tests/unit/fixtures/nccl/ (README.md there says where each came from).
The few inline samples below are written with the printf formats of nccl-tests' src/util.cu
for layouts no recorded sample shows (per-iteration columns, timestamps, cputime); they say so.
"""

from __future__ import absolute_import, division, print_function

import json
import math
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._busbw import BUSBW_FRACTION, resolve
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (
    CHECKS,
    NcclParseError,
    busbw_series,
    error_tolerance,
    evaluate,
    parse_all_reduce,
    parse_json,
    parse_run,
    size_label,
    summarize,
    threshold_for,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def statuses(checks):
    return dict((item["check"], item["status"]) for item in checks)


def reasons(checks):
    return dict((item["check"], item["reason"]) for item in checks)


H200_HOSTS = ["nvidiatools-dell-h200-2-workload", "nvidiatools-dell-h200-3-workload"]

# name, version, collective, ranks, hosts, rows, avg, oob, truncated, transports, networks, reduced maxBytes, errors,
# first row (size, oop busbw, oop wrong, ip busbw, ip wrong), last row (same)
PARSE_TABLE = [
    ("v2.13-era_h100_single_node.txt", None, None, 8, ["node005"], 6, 439.369, (0, True), False, [], [], None, 0,
     (134217728, 382.99, 0, 382.34, 0), (4294967296, 473.60, 0, 476.53, 0)),
    ("v2.13-era_h100_two_nodes_c0_srun_label.txt", None, None, 16, ["node005", "node007"], 11, 142.735, (0, True), False, [], [], None, 0,
     (8388608, 73.04, None, 87.38, None), (8589934592, 155.57, None, 155.56, None)),
    ("composed_h100_two_nodes_socket_fallback.txt", None, None, 16, ["node005", "node007"], 11, 142.735, (0, True), False,
     ["P2P", "NET/Socket"], ["Socket"], None, 0, (8388608, 73.04, None, 87.38, None), (8589934592, 155.57, None, 155.56, None)),
    ("v2.16-era_a100_gather_ib_debug_cut.txt", None, "gather_perf", 2, ["n013", "n014"], 10, None, None, True, ["NET/IB"], ["IB"], 12703978837, 0,
     (134217728, 20.19, 0, 22.34, 0), (1342177280, 19.98, 0, 22.49, 0)),
    ("v2.17.8_gh200_two_nodes_wrong.txt", "2.17.8", "all_reduce_perf", 2, ["gpu-1-1", "gpu-1-7"], 25, 4.79995, (4, False), False, [], [], None, 2,
     (8, 0.0, 0, 0.0, 0), (134217728, 22.87, 0, 22.80, 0)),
    ("v2.17.8_gh200_busy_failure.txt", "2.17.8", "all_reduce_perf", 8, ["gpu-1-1", "gpu-1-7"], 0, None, None, True, [], [], None, 12, None, None),
    ("v2.18.3_h200_two_nodes.txt", "2.18.3", "all_reduce_perf", 16, H200_HOSTS, 25, 178.222, (0, True), False, [], [], None, 0,
     (1024, 0.04, 0, 0.04, 0), (17179869184, 485.66, 0, 485.52, 0)),
    ("v2.18.3_h200_two_nodes_reduced_maxbytes.txt", "2.18.3", "all_reduce_perf", 16, H200_HOSTS, 36, 433.477, (0, True), False, [], [],
     48247057066, 0, (10737418240, 389.40, 0, 389.42, 0), (42949672960, 363.85, 0, 363.46, 0)),
]


def _row_digest(row):
    return (row["size"], row["out_of_place"]["busbw"], row["out_of_place"]["wrong"], row["in_place"]["busbw"], row["in_place"]["wrong"])


@pytest.mark.parametrize(
    "name,version,collective,nranks,hosts,nrows,avg,oob,truncated,transports,networks,reduced,nerrors,first,last",
    PARSE_TABLE, ids=[row[0] for row in PARSE_TABLE])
def test_parse_recorded_outputs(name, version, collective, nranks, hosts, nrows, avg, oob, truncated, transports, networks, reduced, nerrors, first, last):
    result = parse_all_reduce(fixture(name))
    assert result["version"] == version
    assert result["collective"] == collective
    assert len(result["ranks"]) == nranks
    assert result["hosts"] == hosts
    assert len(result["rows"]) == nrows
    assert result["avg_busbw"] == avg
    assert (None if result["out_of_bounds"] is None else (result["out_of_bounds"]["count"], result["out_of_bounds"]["ok"])) == oob
    assert result["truncated"] is truncated
    assert bool(result["truncated_reason"]) is truncated
    assert result["transports"] == transports
    assert result["networks"] == networks
    assert [w["max_bytes"] for w in result["warnings"]] == ([reduced] if reduced else [])
    assert len(result["errors"]) == nerrors
    assert result["runs"] == 1
    if first is not None:
        assert _row_digest(result["rows"][0]) == first
        assert _row_digest(result["rows"][-1]) == last


@pytest.mark.parametrize("name,params", [
    ("v2.13-era_h100_single_node.txt", {"nThread": 1, "nGpus": 8, "minBytes": 134217728, "maxBytes": 4294967296, "step": 2, "step_kind": "factor",
                                        "warmup_iters": 5, "iters": 2, "agg_iters": 1, "validation": 1, "graph": 0}),
    ("v2.18.3_h200_two_nodes.txt", {"nThread": 1, "nGpus": 8, "minBytes": 1024, "maxBytes": 17179869184, "step": 2, "step_kind": "factor",
                                    "warmup_iters": 50, "iters": 100, "agg_iters": 1, "validation": 1, "graph": 0, "unalign": 0}),
    ("v2.16-era_a100_gather_ib_debug_cut.txt", {"nThread": 1, "nGpus": 1, "minBytes": 134217728, "maxBytes": 12884901888, "step": 134217728,
                                                "step_kind": "bytes", "warmup_iters": 5, "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0}),
])
def test_header_params(name, params):
    assert parse_all_reduce(fixture(name))["params"] == params


@pytest.mark.parametrize("name,rank,expected", [
    ("v2.13-era_h100_single_node.txt", 0,
     {"rank": 0, "group": 0, "pid": 295203, "host": "node005", "device": 0, "bus_id": "0x18", "name": "NVIDIA H100 80GB HBM3"}),
    ("v2.18.3_h200_two_nodes.txt", 15,
     {"rank": 15, "group": 0, "pid": 9750, "host": "nvidiatools-dell-h200-3-workload", "device": 7, "bus_id": "0000:dc:00", "name": "NVIDIA H200"}),
    ("v2.17.8_gh200_two_nodes_wrong.txt", 1,
     {"rank": 1, "group": 0, "pid": 2448661, "host": "gpu-1-7", "device": 0, "bus_id": "0009:01:00", "name": "NVIDIA GH200 120GB"}),
])
def test_rank_lines_both_device_formats(name, rank, expected):
    assert parse_all_reduce(fixture(name))["ranks"][rank] == expected


def test_version_line_and_nccl_version():
    result = parse_all_reduce(fixture("v2.18.3_h200_two_nodes.txt"))
    assert (result["nccl_headers"], result["nccl_library"], result["nccl_version"], result["concluded"]) == (23004, 23004, "2.30.4+cuda13.2", True)
    old = parse_all_reduce(fixture("v2.13-era_h100_single_node.txt"))
    assert (old["nccl_headers"], old["concluded"]) == (None, False)


def test_wrong_run_keeps_exact_counts():
    rows = parse_all_reduce(fixture("v2.17.8_gh200_two_nodes_wrong.txt"))["rows"]
    bad = [(r["size"], r["out_of_place"]["wrong"], r["in_place"]["wrong"]) for r in rows if r["out_of_place"]["wrong"] or r["in_place"]["wrong"]]
    assert bad == [(1048576, 96, 32)]


# --- every gate on every recorded output -----------------------------------------------------------------------------

EVAL_TABLE = [
    ("v2.13-era_h100_single_node.txt", {"topology": "h100-nvlink-8"},
     {"complete": "pass", "single_run": "pass", "test_errors": "pass", "wrong": "pass", "out_of_bounds": "pass", "busbw": "pass", "transport": "skip"},
     {"busbw": "busbw reaches the h100-nvswitch/node/ring gate curve at all 6 sizes gated (128 MiB..4 GiB); closest at 4 GiB: 475.1 GB/s >= 293.7 GB/s "
               "required"}),
    ("v2.13-era_h100_single_node.txt", {"topology": "h200-nvlink-8"},
     {"busbw": "pass"}, {"busbw": "reaches the h200-nvswitch/node/ring gate curve at all 6 sizes gated"}),
    ("v2.13-era_h100_two_nodes_c0_srun_label.txt", {"topology": "ib-ndr-400", "nics": 8},
     {"complete": "pass", "wrong": "skip", "busbw": "fail", "transport": "skip"},
     {"wrong": "not checked: #wrong reads N/A (the run used -c 0, no data validation)",
      "busbw": "at 8 GiB 155.6 GB/s < 300.8 GB/s required, 51.7 % of it (ib-ndr-400x8/ring gate curve); below the curve at 8 of the 8 sizes gated "
               "(64 MiB, 128 MiB, 256 MiB, 512 MiB, 1 GiB, ...)"}),
    ("v2.13-era_h100_two_nodes_c0_srun_label.txt", {"topology": "ib-ndr-400", "nics": 4},
     {"busbw": "pass"}, {"busbw": "reaches the ib-ndr-400x4/ring gate curve at all 8 sizes gated (64 MiB..8 GiB); closest at 8 GiB: "
                                  "155.6 GB/s >= 150.4 GB/s required"}),
    ("composed_h100_two_nodes_socket_fallback.txt", {"expect_transport": "ib"},
     {"transport": "fail", "busbw": "skip"},
     {"transport": "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: P2P, NET/Socket; network: Socket)",
      "busbw": "not checked: no busbw threshold (set topology or min_busbw_gbps)"}),
    ("v2.16-era_a100_gather_ib_debug_cut.txt", {"expect_transport": "ib", "topology": "ib-hdr-200"},
     {"complete": "fail", "transport": "pass", "out_of_bounds": "skip", "busbw": "pass"},
     {"complete": "output is incomplete: output ends after 10 result rows (last size 1342177280 B) without the '# Avg bus bandwidth' footer",
      "transport": "NCCL used InfiniBand (transports: NET/IB; network: IB)",
      "out_of_bounds": "not checked: no '# Out of bounds values' footer",
      "busbw": "nccl-tests reduced maxBytes to 12703978837 (memory limitation)"}),
    ("v2.17.8_gh200_two_nodes_wrong.txt", {"min_busbw_gbps": 20},
     {"complete": "pass", "test_errors": "fail", "wrong": "fail", "out_of_bounds": "fail", "busbw": "pass"},
     {"wrong": "#wrong > 0 in 2 of 50 results: 1048576 B float out-of-place: 96, 1048576 B float in-place: 32",
      "out_of_bounds": "Out of bounds values: 4 FAILED",
      "test_errors": "the binary reported an error: .. gpu-1-1 pid 662195: Test failure common.cu:1189 (and 1 more)",
      "busbw": "mean busbw 22.1 GB/s over the 3 largest sizes (no row reached 1 GiB) (32 MiB..128 MiB) reaches 20.0 GB/s (min_busbw_gbps)"}),
    ("v2.17.8_gh200_busy_failure.txt", {"topology": "h100-nvlink-8"},
     {"complete": "fail", "test_errors": "fail", "wrong": "skip", "out_of_bounds": "skip", "busbw": "fail"},
     {"complete": "output is incomplete: output ends before the results table (last line 25: '.. gpu-1-1 pid 3617718: Test failure common.cu:1189'); "
                  "the binary reported: gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'",
      "wrong": "not checked: no result rows",
      "busbw": "no result rows to measure busbw against the h100-nvswitch/node/ring gate curve (149.2 GB/s at 64 MiB to 296.0 GB/s at 8 GiB)"}),
    ("v2.18.3_h200_two_nodes.txt", {"topology": "h200-nvlink-8", "expect_transport": "ib"},
     {"complete": "pass", "single_run": "pass", "test_errors": "pass", "wrong": "pass", "out_of_bounds": "pass", "busbw": "pass", "transport": "skip"},
     {"busbw": "busbw reaches the h200-nvswitch/node/ring gate curve at all 9 sizes gated (64 MiB..16 GiB); closest at 512 MiB: 433.0 GB/s >= 265.2 GB/s "
               "required",
      "transport": "not checked: no NCCL_DEBUG=INFO transport lines in the output"}),
    ("v2.18.3_h200_two_nodes.txt", {"topology": "h200-nvlink-8", "thresholds": {"h200-nvlink-8": 480}},
     {"busbw": "fail"}, {"busbw": "is below 480.0 GB/s (h200-nvlink-8)"}),
    ("v2.18.3_h200_two_nodes.txt", {"min_busbw_gbps": 486, "large_size_bytes": 16 * 1024 ** 3},
     {"busbw": "fail"}, {"busbw": "mean busbw 485.6 GB/s over rows >= 16 GiB (16 GiB) is below 486.0 GB/s (min_busbw_gbps)"}),
    ("v2.18.3_h200_two_nodes_reduced_maxbytes.txt", {"topology": "h200-nvlink-8"},
     {"busbw": "pass", "wrong": "pass"},
     {"busbw": "busbw reaches the h200-nvswitch/node/ring gate curve at all 3 sizes gated (10 GiB..40 GiB); closest at 10 GiB: 432.8 GB/s >= 296.0 GB/s "
               "required; nccl-tests reduced maxBytes to 48247057066 (memory limitation)",
      "wrong": "#wrong is 0 in all 72 results"}),
]


@pytest.mark.parametrize("name,expect,want_status,want_reason", EVAL_TABLE)
def test_evaluate_recorded_outputs(name, expect, want_status, want_reason):
    checks = evaluate(parse_all_reduce(fixture(name)), expect)
    assert [item["check"] for item in checks] == list(CHECKS)
    got_status = statuses(checks)
    for check, status in want_status.items():
        assert got_status[check] == status, reasons(checks)[check]
    got_reason = reasons(checks)
    for check, text in want_reason.items():
        assert text in got_reason[check]


def test_busbw_gate_reports_value_and_threshold():
    """A gate curve's check reports its worst size (the lowest share of the curve): here 4 GiB, 475.065 GB/s against 293.7 GB/s.
    (Before gate curves: the mean of the rows >= 1 GiB against 296.0 GB/s.)"""
    check = [c for c in evaluate(parse_all_reduce(fixture("v2.13-era_h100_single_node.txt")), {"topology": "h100-nvlink-8"}) if c["check"] == "busbw"][0]
    # 4 GiB: out-of-place 473.60, in-place 476.53
    assert check["value"] == round((473.60 + 476.53) / 2, 2)
    assert (check["threshold"], check["size"]) == (293.7, 4 * 1024 ** 3)


# --- thresholds table -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("topology,gbps,reported", [
    # h200-nvlink-8 was 380.0 (80 % of the NVLS figure, 475) before gate curves: the key is the Ring curve, which a healthy H200 runs at
    # the H100's ~370 GB/s (the same NVLink 4); the catalogue's NVLS curve of the H200 is h200-nvswitch/node/nvls
    ("a100-nvlink-8", 184.0, 230.0), ("h100-nvlink-8", 296.0, 370.0), ("h200-nvlink-8", 296.0, 370.0), ("ib-hdr-200", 19.2, 24.0),
    ("ib-ndr-400", 37.6, 47.0),
])
def test_legacy_keys_gate_at_80_percent_of_reported(topology, gbps, reported):
    """The topology keys of earlier releases still name their curves (now in the catalogue), at the same 8 GiB figure."""
    assert BUSBW_FRACTION == 0.8
    curve = resolve(topology)
    assert curve["points"][-1] == (8 * 1024 ** 3, gbps)
    assert curve["reported"] == reported and round(reported * 0.8, 1) == gbps


@pytest.mark.parametrize("expect,want", [
    (None, (None, None)),
    ({}, (None, None)),
    ({"topology": "a100-nvlink-8"}, (184.0, "a100-nvswitch/node/ring")),
    ({"topology": "ib-hdr-200", "nics": 8}, (153.6, "ib-hdr-200x8/ring")),
    ({"platform": "h100-nvswitch", "gpus": 8}, (384.0, "h100-nvswitch/node/nvls")),
    ({"platform": "h100-nvswitch", "gpus": 8, "algorithm": "ring"}, (296.0, "h100-nvswitch/node/ring")),
    ({"topology": "a100-nvlink-8", "min_busbw_gbps": 100}, (100.0, "min_busbw_gbps")),
    ({"topology": "my-fabric", "thresholds": {"my-fabric": 55.5}}, (55.5, "my-fabric")),
])
def test_threshold_for(expect, want):
    assert threshold_for(expect) == want


@pytest.mark.parametrize("expect,message", [
    ("h100", "expect must be a dict with keys topology, min_busbw_gbps, thresholds, nics, large_size_bytes, top_rows, expect_transport, "
             "gate_curves, nodes, notes, platform, gpus, algorithm, got 'h100'"),
    ({"topolgy": "h100-nvlink-8"}, "unknown expect key(s) topolgy; valid keys: topology, min_busbw_gbps, thresholds"),
    ({"topology": "x100-nvlink-8"}, "unknown topology 'x100-nvlink-8'; valid topologies: a100-nvlink-8, a100-pcie, h100-nvlink-8, h100-pcie, "
        "h200-nvlink-8, ib-hdr-200, ib-ndr-400, ib-xdr-800, l40s-pcie, or a platform or a curve id of the catalogue, "
     "<platform>/node/<nvls|ring|pcie> or <platform>/rack/nvls, such as h100-nvswitch/node/nvls (platforms: a100-nvswitch, a100-pcie, "
     "b200-nvswitch, b300-nvswitch, gb200-nvl72, gb300-nvl72, h100-nvswitch, h100-pcie, h200-nvl, h200-nvswitch, l40s-pcie, rtx-pro-6000-pcie)"),
    ({"nics": 0}, "nics is 0, expected an integer of at least 1"),
    ({"large_size_bytes": "1G"}, "large_size_bytes is '1G', expected an integer of at least 1"),
    ({"top_rows": True}, "top_rows is True, expected an integer of at least 1"),
    ({"min_busbw_gbps": -1}, "min_busbw_gbps is -1, expected a number of GB/s above 0"),
    ({"thresholds": ["a", 1]}, "thresholds must be a dict of topology -> GB/s, got ['a', 1]"),
    ({"thresholds": {"a100-nvlink-8": "fast"}}, "thresholds['a100-nvlink-8'] is 'fast', expected a number of GB/s above 0"),
    ({"expect_transport": "roce"}, "expect_transport is 'roce'; valid values: ib (or leave it unset)"),
])
def test_bad_expectations_raise_one_clear_error(expect, message):
    result = parse_all_reduce(fixture("v2.13-era_h100_single_node.txt"))
    with pytest.raises(ValueError) as err:
        evaluate(result, expect)
    assert message in str(err.value)


# --- truncated outputs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["v2.13-era_h100_single_node.txt", "v2.18.3_h200_two_nodes.txt", "v2.17.8_gh200_two_nodes_wrong.txt"])
def test_every_line_cut_is_truncated_or_rejected(name):
    """Cut a complete recorded output after each of its lines: only the cuts that keep the footer are complete."""
    lines = fixture(name).splitlines(True)
    avg_line = [i for i, line in enumerate(lines) if "Avg bus bandwidth" in line][0]
    seen_truncated = 0
    for cut in range(1, len(lines) + 1):
        text = "".join(lines[:cut])
        try:
            result = parse_all_reduce(text)
        except NcclParseError as err:
            # only a cut that keeps nothing of nccl-tests' own header may be rejected
            assert "not nccl-tests output" in str(err)
            assert not any("nThread" in line for line in lines[:cut])
            continue
        assert result["truncated"] is (cut <= avg_line), (cut, result["truncated_reason"])
        if result["truncated"]:
            seen_truncated += 1
            assert evaluate(result)[0]["status"] == "fail"
    assert seen_truncated > 10


def test_every_character_cut_never_crashes():
    text = fixture("v2.18.3_h200_two_nodes.txt")
    for cut in range(0, len(text), 7):
        try:
            result = parse_all_reduce(text[:cut])
        except NcclParseError:
            continue
        assert isinstance(result["rows"], list)


HEAD_CUT_FIXTURES = ["v2.13-era_h100_single_node.txt", "v2.18.3_h200_two_nodes.txt", "v2.17.8_gh200_two_nodes_wrong.txt",
                     "rendered_v2.0-era_a100_error_column.txt", "rendered_v2.13-era_a100_single_node.txt"]


@pytest.mark.parametrize("name", HEAD_CUT_FIXTURES)
def test_every_head_cut_keeps_the_rows_and_is_truncated(name):
    """Cut the head off a complete output before each of its lines (as a paste that starts inside the table):
    the rows left are parsed with the standard layout, exactly as in the full parse, and the output is truncated."""
    lines = fixture(name).splitlines(True)
    full = parse_all_reduce("".join(lines))
    params_line = [i for i, line in enumerate(lines) if "nThread" in line][0]
    oob_line = [i for i, line in enumerate(lines) if "Out of bounds values" in line][0]
    row_lines = [i for i, line in enumerate(lines) if line.strip() and line.split()[0].isdigit() and len(line.split()) >= 11]
    assert len(row_lines) == len(full["rows"])
    headless = 0
    for cut in range(params_line + 1, oob_line + 1):
        result = parse_all_reduce("".join(lines[cut:]))
        kept = len([i for i in row_lines if i >= cut])
        assert result["rows"] == full["rows"][len(full["rows"]) - kept:], cut
        assert result["truncated"] is True, cut
        assert result["truncated_reason"].startswith("the head of the output is missing"), result["truncated_reason"]
        assert (result["avg_busbw"], result["out_of_bounds"]) == (full["avg_busbw"], full["out_of_bounds"])
        checks = dict((c["check"], c) for c in evaluate(result, {"min_busbw_gbps": 1}))
        assert checks["complete"]["status"] == "fail"
        assert "the head of the output is missing" in checks["complete"]["reason"]
        assert checks["single_run"]["status"] == "skip"
        tail = full["rows"][len(full["rows"]) - kept:]
        if kept:
            bad = any(row[place].get("wrong") for row in tail for place in ("out_of_place", "in_place"))
            assert checks["wrong"]["status"] == ("fail" if bad else "pass"), (cut, checks["wrong"])
        else:
            assert checks["busbw"]["status"] == "fail"
        headless += result["columns_inferred"]
    assert headless >= len(full["rows"])


@pytest.mark.parametrize("name", HEAD_CUT_FIXTURES)
def test_a_paste_starting_inside_a_row_never_invents_a_row(name):
    """Cut the first data row at every character: the row is kept whole or dropped, never read with a cut size."""
    text = fixture(name)
    full = parse_all_reduce(text)
    lines = text.splitlines(True)
    first = [i for i, line in enumerate(lines) if line.strip() and line.split()[0].isdigit() and len(line.split()) >= 11][0]
    rest = "".join(lines[first + 1:])
    for cut in range(len(lines[first])):
        result = parse_all_reduce(lines[first][cut:] + rest)
        assert result["rows"] in (full["rows"], full["rows"][1:]), (cut, lines[first][cut:])


def test_head_and_tail_cut_of_a_wrong_run_still_fails_the_wrong_gate():
    lines = fixture("v2.17.8_gh200_two_nodes_wrong.txt").splitlines(True)
    start = [i for i, line in enumerate(lines) if line.lstrip().startswith("1048576 ")][0]
    result = parse_all_reduce("".join(lines[start:start + 3]))
    assert [(r["size"], r["out_of_place"]["wrong"], r["in_place"]["wrong"]) for r in result["rows"]] == [
        (1048576, 96, 32), (2097152, 0, 0), (4194304, 0, 0)]
    assert result["truncated_reason"].startswith("the head of the output is missing")
    assert result["truncated_reason"].endswith("output ends after 3 result rows (last size 4194304 B) without the '# Avg bus bandwidth' footer")
    checks = dict((c["check"], c) for c in evaluate(result))
    assert checks["wrong"]["status"] == "fail" and checks["wrong"]["value"] == 2
    assert checks["complete"]["status"] == "fail"


def test_markdown_that_ate_the_hashes_reads_like_the_original():
    """A paste outside a code block loses the leading '#' of every comment line (it became a Markdown heading)."""
    original = fixture("rendered_v2.0-era_a100_error_column.txt")
    eaten = "\n".join(line[1:] if line.startswith("#") else line for line in original.splitlines()) + "\n"
    assert "\n nThread 1 nGpus 8" in "\n" + eaten and "# " not in eaten
    want, got = parse_all_reduce(original), parse_all_reduce(eaten)
    for key in ("runs", "params", "ranks", "hosts", "columns", "rows", "avg_busbw", "out_of_bounds", "truncated"):
        assert got[key] == want[key], key
    assert got["truncated"] is False and len(got["rows"]) == 28


@pytest.mark.parametrize("name,ranks,reason", [
    ("v2.18.3_h200_two_nodes.txt", 16, "one run of 16 rank(s)"),
    ("v2.18.3_h200_two_nodes.txt", 0, "one run; rank count unknown (the output has no '# Rank' device lines)"),
    ("v2.13-era_h100_single_node.txt", 0, "one run; rank count unknown (the output has no '# Rank' device lines)"),
])
def test_single_run_with_rank_lines_trimmed_says_the_count_is_unknown(name, ranks, reason):
    text = fixture(name)
    if not ranks:
        text = "".join(line for line in text.splitlines(True) if "  Rank " not in line)
    result = parse_all_reduce(text)
    assert len(result["ranks"]) == ranks
    check = [c for c in evaluate(result) if c["check"] == "single_run"][0]
    assert (check["status"], check["reason"]) == ("pass", reason)


# --- nccl-tests 2.0-2.10: the error column (largest difference), gated with the tool's own bound ----------------------

ERROR_FIXTURE = "rendered_v2.0-era_a100_error_column.txt"


def _with_error(value, size="1073741824", place=0, text=None):
    """The 8-rank float run of ERROR_FIXTURE with ``value`` as the error of ``size`` (place 0: out-of-place, 1: in-place)."""
    lines = []
    for line in (text or fixture(ERROR_FIXTURE)).splitlines(True):
        tokens = line.split()
        if tokens and tokens[0] == size:
            index = 7 if place == 0 else 11
            old = tokens[index]
            head, tail = line.rsplit(old, 1) if index == 11 else line.split(old, 1)
            line = head + ("%" + str(len(old)) + "s") % value + tail
        lines.append(line)
    return "".join(lines)


def test_error_column_is_kept_as_a_float():
    rows = parse_all_reduce(fixture(ERROR_FIXTURE))["rows"]
    assert rows[0]["out_of_place"] == {"time": 24.2, "algbw": 0.0, "busbw": 0.0, "error": 0.0}
    assert rows[-1]["in_place"]["error"] == 5e-07 and "wrong" not in rows[-1]["in_place"]
    bad = parse_all_reduce(_with_error("4e-01"))["rows"]
    assert bad[-1]["out_of_place"]["error"] == 0.4 and bad[-1]["in_place"]["error"] == 5e-07


@pytest.mark.parametrize("value,place,status,reason", [
    ("5e-07", 0, "pass", "error within nccl-tests' tolerance in all 56 results (largest 5e-07)"),
    ("4e-01", 0, "fail", "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 1 of 56 results: "
                         "1073741824 B float out-of-place: 4e-01 > 7e-05"),
    ("4e-01", 1, "fail", "in 1 of 56 results: 1073741824 B float in-place: 4e-01 > 7e-05"),
    # float over 8 ranks: DeltaMaxValue 1e-5 x 7 = 7e-05; the bound itself passes (the tool counts maxDelta > bound)
    ("7e-05", 0, "pass", "error within nccl-tests' tolerance in all 56 results (largest 7e-05)"),
    ("8e-05", 0, "fail", "1073741824 B float out-of-place: 8e-05 > 7e-05"),
    ("nan", 0, "fail", "1073741824 B float out-of-place: nan > 7e-05"),
])
def test_error_column_gate(value, place, status, reason):
    check = [c for c in evaluate(parse_all_reduce(_with_error(value, place=place))) if c["check"] == "wrong"][0]
    assert check["status"] == status, check
    assert reason in check["reason"]


def test_error_column_bound_without_rank_lines_is_the_strictest_known():
    # rank lines trimmed: nThread 1 x nGpus 8 from the parameter line still gives 8 ranks
    trimmed = "".join(line for line in _with_error("6e-05").splitlines(True) if "  Rank " not in line)
    check = [c for c in evaluate(parse_all_reduce(trimmed)) if c["check"] == "wrong"][0]
    assert check["status"] == "pass"
    assert check["reason"].endswith("(rank count unknown: the bound for 8 ranks, the fewest the output allows)")
    # the head cut off too: nothing says how many ranks, so the bound for 2 ranks (1e-5 for float)
    lines = _with_error("6e-05").splitlines(True)
    headless = "".join(lines[[i for i, line in enumerate(lines) if line.split()[:1] == ["8"]][0]:])
    check = [c for c in evaluate(parse_all_reduce(headless)) if c["check"] == "wrong"][0]
    assert check["status"] == "fail"
    assert "1073741824 B float out-of-place: 6e-05 > 1e-05" in check["reason"]
    assert check["reason"].endswith("(rank count unknown: the bound for 2 ranks, the fewest the output allows)")


@pytest.mark.parametrize("value,status", [("1e-05", "pass"), ("2e-05", "fail")])
def test_error_exactly_at_the_bound_passes(value, status):
    """The tool counts an error when maxDelta > bound: a paste without its head (bound for 2 ranks: exactly 1e-05 for float)."""
    lines = _with_error(value).splitlines(True)
    headless = "".join(lines[[i for i, line in enumerate(lines) if line.split()[:1] == ["8"]][0]:])
    check = [c for c in evaluate(parse_all_reduce(headless)) if c["check"] == "wrong"][0]
    assert check["status"] == status, check


def test_error_column_with_c0_is_not_checked():
    text = "\n".join(line.replace("0e+00", "  N/A").replace("2e-07", "  N/A").replace("5e-07", "  N/A")
                     for line in fixture(ERROR_FIXTURE).splitlines())
    check = [c for c in evaluate(parse_all_reduce(text)) if c["check"] == "wrong"][0]
    assert (check["status"], check["reason"]) == ("skip", "not checked: error reads N/A (the run used -c 0, no data validation)")


@pytest.mark.parametrize("datatype,nranks,bound", [
    ("float", 8, 7e-05), ("float", 2, 1e-05), ("half", 8, 7e-02), ("bfloat16", 4, 3e-02), ("double", 16, 1.5e-11),
    ("int32", 8, 7e-200), ("uint8", 2, 1e-200), ("FLOAT", 3, 2e-05), (None, 2, 1e-200),
    ("float", 1, 0.0),
])
def test_error_tolerance_table(datatype, nranks, bound):
    assert error_tolerance(datatype, nranks) == pytest.approx(bound, rel=1e-9)


# --- busbw exactly at the threshold -----------------------------------------------------------------------------------

def _flat_run(busbw):
    rows = "".join("%12d  %12d     float     sum      -1   8000.0  171.43  %6.2f      0   8000.0  171.43  %6.2f      0\n" % (
        size, size // 4, busbw, busbw) for size in (1073741824, 2147483648, 4294967296))
    return HEADER + COLS + rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g\n" % busbw


@pytest.mark.parametrize("busbw,threshold,status", [
    (300.0, 300, "pass"),      # the gate is mean >= threshold: exactly at it passes
    (299.99, 300, "fail"),
    (300.01, 300, "pass"),
])
def test_busbw_exactly_at_the_threshold_passes(busbw, threshold, status):
    check = [c for c in evaluate(parse_all_reduce(_flat_run(busbw)), {"min_busbw_gbps": threshold}) if c["check"] == "busbw"][0]
    assert (check["status"], check["value"], check["threshold"]) == (status, busbw, float(threshold))


@pytest.mark.parametrize("text,reason", [
    ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
     "output ends before the results table (last line 3: '# Using devices')"),
    ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
     "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n",
     "output ends after the column header, before any result row"),
    ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
     "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
     "   134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3\n",
     "data row at line 3 is incomplete: '134217728 33554432 float sum -1 613.3 218.85 382.99 0 614.3'"),
    # a column header cut at the end of the input is a cut output, like a cut data row
    ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
     "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   alg",
     "the column header at line 2 is cut: '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   alg'"),
    ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
     "#       size         count      type   redop    root     time   algbw   busbw #wrong\n",
     "the column header at line 2 is cut: '#       size         count      type   redop    root     time   algbw   busbw #wrong'"),
    # the head cut off: read with the standard layout, both cuts named
    ("   134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"
     "   268435456      67108864     float     sum      -1   1139.2  235.63  412.35      0   1134.8  236.56",
     "the head of the output is missing: there is no '# nThread N nGpus N ...' parameter line, it starts at line 1: "
     "'134217728      33554432     float     sum      -1    613.3  218.85  382.99   ...'; "
     "its rows were read with the standard column layout; "
     "data row at line 2 is incomplete: '268435456 67108864 float sum -1 1139.2 235.63 412.35 0 1134.8 236.56'"),
    ("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 439.369\n",
     "the head of the output is missing: there is no '# nThread N nGpus N ...' parameter line, it starts at line 1: '# Out of bounds values : 0 OK'"),
])
def test_truncation_reasons(text, reason):
    result = parse_all_reduce(text)
    assert result["truncated"] is True
    assert result["truncated_reason"] == reason


# --- garbage ---------------------------------------------------------------------------------------------------------

HEADER = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
COLS = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
ROW = "   134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"


@pytest.mark.parametrize("text,message", [
    ("", "nccl-tests output is empty: no line to parse"),
    ("\n   \n", "nccl-tests output is empty: no line to parse"),
    (b"# nThread", "nccl-tests output must be text, got bytes"),
    ("hello\nworld\n", "line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: 'hello'"),
    ("\nsrun: error: Unable to allocate resources: Invalid partition name specified\n",
     "line 2: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; "
     "first line: 'srun: error: Unable to allocate resources: Invalid partition name specified'"),
    (HEADER + COLS + "   134217728      33554432     float     sum      -1    613.3  fast  382.99  0  614.3  218.48  382.34  0\n" + ROW,
     "line 3: data row does not match the 13 columns of the header (size count type redop root): "
     "'134217728 33554432 float sum -1 613.3 fast 382.99 0 614.3 218.48 382.34 0'"),
    (HEADER + COLS + "   134217728      33554432     float     sum\n" + ROW,
     "line 3: data row does not match the 13 columns of the header (size count type redop root): '134217728 33554432 float sum'"),
    # a header that does not parse is an error when more follows it (at the very end it is a cut header, truncated)
    (HEADER + "#       size         count      type   redop    root     time   algbw   busbw #wrong\n" + ROW,
     "line 2: column header has 1 time columns, expected 2 (out-of-place and in-place)"),
    (HEADER + "#  size count type redop root time algbw speed #wrong time algbw busbw #wrong\n" + ROW,
     "line 2: column header group time algbw speed wrong lacks time/algbw/busbw"),
    (HEADER + "#  size count type redop root time algbw speed #wrong time algbw busbw #wrong\n# Avg bus bandwidth    : 1\n",
     "line 2: column header group time algbw speed wrong lacks time/algbw/busbw"),
    (HEADER + COLS + ROW + "#  size count type redop root cputime algbw busbw #wrong cputime algbw busbw #wrong\n",
     "line 4: a second column header differs from the first"),
    (HEADER + COLS + ROW + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : fast\n",
     "line 5: average bus bandwidth 'fast' is not a number"),
])
def test_garbage_raises_naming_line(text, message):
    with pytest.raises(NcclParseError) as err:
        parse_all_reduce(text)
    assert message in str(err.value)


# --- layouts seen in the sources, written with util.cu's printf formats -----------------------------------------------

PER_ITER = fixture("rendered_v2.19_per_iteration_timestamp.txt")


def test_per_iteration_and_timestamp_columns():
    result = parse_all_reduce(PER_ITER)
    assert result["columns"]["per_iteration"] is True
    assert result["columns"]["timestamp"] is True
    assert result["columns"]["fields"] == 5 + 8 + 8 + 2
    assert result["flags"] == ["per_iteration"]
    row = result["rows"][1]
    assert row["out_of_place"] == {
        "time": 8020.3, "algbw": 267.76, "busbw": 468.57, "wrong": 0, "i_min": 7990.5, "i_max": 8066.0, "i_p99": 8066.0, "i_cv%": 0.31}
    assert row["in_place"]["busbw"] == 469.64
    assert row["timestamp"] == "2026-01-02 03:04:06"
    assert (result["avg_busbw"], result["avg_busbw_status"], result["version"]) == (466.79, "OK", "2.19.6")
    assert statuses(evaluate(result, {"topology": "h100-nvlink-8"}))["busbw"] == "pass"


CPUTIME_C0 = fixture("rendered_v2.20_cputime_c0_min_bw_failed.txt")


def test_cputime_c0_new_format_and_min_bw_failure():
    result = parse_all_reduce(CPUTIME_C0)
    assert (result["version"], result["version_commit"], result["nccl_headers"]) == ("2.20.0", "b4d5bee", 23102)
    assert result["columns"]["time_label"] == "cputime"
    assert [(r["out_of_place"]["wrong"], r["in_place"]["wrong"]) for r in result["rows"]] == [(None, None), (None, None)]
    assert result["avg_busbw_status"] == "FAILED"
    checks = evaluate(result)
    assert statuses(checks)["wrong"] == "skip"
    assert reasons(checks)["test_errors"] == "the binary reported an error: nccl-tests marked 'Avg bus bandwidth' FAILED (below its NCCL_TESTS_MIN_BW)"


# nccl-tests prints a row's first five fields, runs the collective, then prints the rest; NCCL's own
# INFO lines (lazy connection setup on the first collective) go through the same stdout buffer and
# can land in between. Constructed from the NCCL line format of NVIDIA/nccl-tests#350.
SPLIT_ROW = HEADER + COLS + (
    "   134217728      33554432     float     sum      -1"
    "node005:291005:291090 [0] NCCL INFO Channel 00/1 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA/Shared\n"
    "node005:291005:291090 [0] NCCL INFO Channel 01/1 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA/Shared\n"
    "    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"
    "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 382.665\n")


def test_row_split_by_interleaved_debug_lines_is_joined():
    result = parse_all_reduce(SPLIT_ROW)
    assert not result["truncated"]
    assert [_row_digest(r) for r in result["rows"]] == [(134217728, 382.99, 0, 382.34, 0)]
    assert result["transports"] == ["NET/IB"]


def test_row_cut_by_a_debug_line_and_never_finished_is_truncated():
    text = SPLIT_ROW.replace("    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n", "")
    result = parse_all_reduce(text)
    assert result["rows"] == []
    assert result["truncated_reason"] == "data row at line 3 is incomplete: '134217728 33554432 float sum -1'"


FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 382.665\n"
MPIRUN_TAGGED = "".join("[1,0]<stdout>:" + line + "\n" for line in (HEADER + COLS + ROW + FOOTER).splitlines())


def test_mpirun_tag_output_prefix():
    result = parse_all_reduce(MPIRUN_TAGGED)
    assert (len(result["rows"]), result["avg_busbw"], result["truncated"]) == (1, 382.665, False)


def test_separate_runs_per_task_fail_single_run():
    """srun without --mpi on a binary built without MPI=1: every task prints its own single-rank run."""
    one = HEADER + "#  Rank  0 Group  0 Pid 1 on node005 device  0 [0x18] NVIDIA H100 80GB HBM3\n" + COLS + ROW + FOOTER
    result = parse_all_reduce(one + one.replace("node005", "node007"))
    assert result["runs"] == 2
    assert result["truncated"] is False
    check = [c for c in evaluate(result) if c["check"] == "single_run"][0]
    assert check["status"] == "fail"
    assert check["reason"].startswith("output holds 2 separate runs (one '# nThread' header each)")
    assert result["hosts"] == ["node005", "node007"]


def test_second_run_cut_short_is_truncated():
    one = HEADER + COLS + ROW + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 382.665\n"
    assert parse_all_reduce(one + HEADER + COLS)["truncated"] is True


@pytest.mark.parametrize("line,name", [
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read", "P2P"),
    ("host:1:2 [0] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/direct pointer", "P2P"),
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[6] via SHM/direct/direct", "SHM"),
    ("host:1:2 [0] NCCL INFO Channel 00 : 1[3000] -> 0[2000] [receive] via direct shared memory", "SHM"),
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0", "NET/Socket"),
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA", "NET/IB"),
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Libfabric/0/GDRDMA", "NET/Libfabric"),
    ("host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NVLS", "NVLS"),
])
def test_transport_names(line, name):
    result = parse_all_reduce(HEADER + line + "\n" + COLS + ROW)
    assert result["transports"] == [name]


def test_nccl_warnings_are_collected():
    text = HEADER + "v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n" + COLS + ROW
    assert parse_all_reduce(text)["nccl_warnings"] == ["Failed to open libibverbs.so[.1]"]


# --- JSON (-J) --------------------------------------------------------------------------------------------------------

def test_json_matches_text_of_the_same_run():
    from_json = parse_json(fixture("v2.18.3_h200_two_nodes.json"))
    from_text = parse_all_reduce(fixture("v2.18.3_h200_two_nodes.txt"))
    assert from_json["format"] == "json"
    assert [_row_digest(r) for r in from_json["rows"]] == [_row_digest(r) for r in from_text["rows"]]
    keys = ("type", "redop", "root", "count")
    assert [[r[k] for k in keys] for r in from_json["rows"]] == [[r[k] for k in keys] for r in from_text["rows"]]
    for key in ("hosts", "avg_busbw", "out_of_bounds", "truncated"):
        assert from_json[key] == from_text[key]
    assert from_json["ranks"] == from_text["ranks"]
    for key, value in from_text["params"].items():
        if key != "unalign":
            assert from_json["params"][key] == value
    assert (from_json["nccl_library"], from_json["json_version"], from_json["avg_busbw_status"]) == (23004, 1, None)
    assert statuses(evaluate(from_json, {"topology": "h200-nvlink-8"})) == statuses(evaluate(from_text, {"topology": "h200-nvlink-8"}))


def _doc():
    return json.loads(fixture("v2.18.3_h200_two_nodes.json"))


def test_json_nwrong_null_is_not_checked_and_nan_is_ignored():
    doc = _doc()
    for row in doc["results"]:
        row["out_of_place"]["nwrong"] = None
        row["in_place"]["nwrong"] = None
    doc["results"][-1]["in_place"]["bus_bw"] = "nan"
    result = parse_json(json.dumps(doc))
    assert statuses(evaluate(result))["wrong"] == "skip"
    assert math.isnan(result["rows"][-1]["in_place"]["busbw"])
    assert busbw_series(result)[-1] == [17179869184, 485.66]


def test_json_without_footer_is_truncated():
    doc = _doc()
    del doc["average_bus_bandwidth"]
    del doc["out_of_bounds"]
    result = parse_json(json.dumps(doc))
    assert result["truncated"] is True
    assert result["truncated_reason"] == "JSON report has no 'average_bus_bandwidth': the run ended before its footer (25 result rows)"


def set_path(doc, path, value):
    """Set doc[path[0]][path[1]]... to value; the value KeyError deletes the key (test_nccl_edges uses it too)."""
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value


def _mutate(path, value):
    doc = _doc()
    set_path(doc, path, value)
    return json.dumps(doc)


@pytest.mark.parametrize("text,message", [
    ("", "nccl-tests JSON is not valid JSON at line 1 column 1: Expecting value (the file ends early"),
    (fixture("v2.18.3_h200_two_nodes.json")[:4974],
     "nccl-tests JSON is not valid JSON at line 1 column 4969: Unterminated string starting at (the file ends early: the run was probably killed"),
    (fixture("v2.18.3_h200_two_nodes.json")[:4964], "nccl-tests JSON is not valid JSON at line 1 column 4965: Expecting ',' delimiter (the file ends early"),
    ("all_reduce_perf: not json", "nccl-tests JSON is not valid JSON at line 1 column 1: Expecting value"),
    ("[1, 2]", "nccl-tests JSON: top level is a list, expected an object with 'config' and 'results'"),
    ('{"foo": 1}', "nccl-tests JSON: no 'config' and no 'results' key; keys found: foo"),
    (_mutate(["config"], [1]), "nccl-tests JSON: config is [1], expected an object"),
    (_mutate(["config", "ngpus"], "eight"), "nccl-tests JSON: config.ngpus is 'eight', expected an integer"),
    (_mutate(["config", "devices"], {"a": 1}), "nccl-tests JSON: devices is {'a': 1}, expected a list"),
    (_mutate(["config", "devices", 0], "node005"), "nccl-tests JSON: devices[0] is 'node005', expected an object with a hostname"),
    (_mutate(["results"], {"size": 8}), "nccl-tests JSON: results is {'size': 8}, expected a list"),
    (_mutate(["results", 3, "size"], KeyError), "nccl-tests JSON: results[3] is {"),
    (_mutate(["results", 3, "size"], True), "nccl-tests JSON: results[3].size is True, expected an integer"),
    (_mutate(["results", 0, "in_place"], 5), "nccl-tests JSON: results[0].in_place is 5, expected an object"),
    (_mutate(["results", 0, "in_place", "bus_bw"], KeyError), "nccl-tests JSON: results[0].in_place has no bus_bw"),
    (_mutate(["results", 0, "out_of_place", "alg_bw"], "fast"), "nccl-tests JSON: results[0].out_of_place.alg_bw is 'fast', expected a number"),
    (_mutate(["results", 0, "out_of_place", "time"], [1]), "nccl-tests JSON: results[0].out_of_place.time is [1], expected a number"),
    (_mutate(["results", 0], {"size": 8}), "nccl-tests JSON: results[0] has neither out_of_place nor in_place"),
    (b"{}", "nccl-tests JSON must be text, got bytes"),
])
def test_json_garbage_raises(text, message):
    with pytest.raises(NcclParseError) as err:
        parse_json(text)
    assert message in str(err.value)


def test_json_syntax_error_in_the_middle_is_not_called_early_end():
    with pytest.raises(NcclParseError) as err:
        parse_json('{"results": [}, "config": {}}')
    assert str(err.value) == "nccl-tests JSON is not valid JSON at line 1 column 14: Expecting value"


def test_parse_run_takes_numbers_from_json_and_transports_from_stdout():
    stdout = fixture("v2.18.3_h200_two_nodes.txt").replace(
        "NCCL version 2.30.4+cuda13.2\n",
        "NCCL version 2.30.4+cuda13.2\nh:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n# Writing JSON output to /tmp/nccl.json\n")
    result = parse_run(stdout, fixture("v2.18.3_h200_two_nodes.json"))
    assert result["format"] == "json"
    assert (result["transports"], result["version"], result["json_path"]) == (["NET/IB"], "2.18.3", "/tmp/nccl.json")
    assert len(result["rows"]) == 25
    assert parse_run(stdout)["format"] == "text"
    assert parse_run(stdout, "  ")["format"] == "text"


def test_parse_run_keeps_stdout_errors_when_json_is_complete():
    stdout = fixture("v2.17.8_gh200_busy_failure.txt")
    result = parse_run(stdout, fixture("v2.18.3_h200_two_nodes.json"))
    # the 12 failure lines of the text, then that the JSON is of another run (other hosts)
    assert len(result["errors"]) == 13
    assert result["errors"][0] == parse_all_reduce(stdout)["errors"][0]
    assert result["errors"][-1] == ("the JSON report names the hosts nvidiatools-dell-h200-2-workload, nvidiatools-dell-h200-3-workload, "
                                    "the text output gpu-1-1, gpu-1-7")
    assert statuses(evaluate(result))["test_errors"] == "fail"


# --- helpers for reports ----------------------------------------------------------------------------------------------

def test_busbw_series_averages_places_and_datatypes():
    series = busbw_series(parse_all_reduce(fixture("v2.18.3_h200_two_nodes_reduced_maxbytes.txt")))
    assert [point[0] for point in series] == [10737418240, 21474836480, 42949672960]
    rows = [r for r in parse_all_reduce(fixture("v2.18.3_h200_two_nodes_reduced_maxbytes.txt"))["rows"] if r["size"] == 10737418240]
    expected = sum(r["out_of_place"]["busbw"] + r["in_place"]["busbw"] for r in rows) / (2 * len(rows))
    assert series[0][1] == round(expected, 3)


@pytest.mark.parametrize("size,label", [(8, "8 B"), (1024, "1 KiB"), (1536, "1.5 KiB"), (8388608, "8 MiB"), (1342177280, "1.2 GiB"), (17179869184, "16 GiB")])
def test_size_label(size, label):
    assert size_label(size) == label


def test_summarize():
    digest = summarize(parse_all_reduce(fixture("v2.18.3_h200_two_nodes.txt")))
    assert digest["hosts"] == H200_HOSTS
    assert (digest["ranks"], digest["rows"], digest["largest_size"], digest["largest_busbw"]) == (16, 25, 17179869184, 485.59)
    assert len(digest["series"]) == 25
    assert json.loads(json.dumps(digest)) == digest
