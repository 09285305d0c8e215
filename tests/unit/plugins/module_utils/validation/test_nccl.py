# -*- coding: utf-8 -*-
"""Table tests for the nccl-tests parser and gates (plugins/module_utils/validation/_nccl.py).

Recorded outputs live in tests/unit/fixtures/nccl/ (README.md there says where each came from).
The few inline samples below are written with the printf formats of nccl-tests' src/util.cu
for layouts no recorded sample shows (per-iteration columns, timestamps, cputime); they say so.
"""

from __future__ import absolute_import, division, print_function

import copy
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
    """Set doc[path[0]][path[1]]... to value; the value KeyError deletes the key (the edge cases below use it too)."""
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


# === edge cases (formerly test_nccl_edges.py): Edge tables for the nccl-tests parser and gates (plugins/module_utils/validation/_nccl.py).

ROW_HEAD = "   134217728      33554432     float     sum      -1"
ROW_REST = "    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"
DEBUG = "node005:291005:291090 [0] NCCL INFO "
PARAMS = {"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 8, "step": 2, "step_kind": "factor",
          "warmup_iters": 5, "iters": 20, "agg_iters": 1, "validation": 1, "graph": 0}
STANDARD_COLUMNS = {"keys": ["size", "count", "type", "redop", "root"], "out_of_place": ["time", "algbw", "busbw", "wrong"],
                    "in_place": ["time", "algbw", "busbw", "wrong"], "time_label": "time", "per_iteration": False, "timestamp": False, "fields": 13}
PARSED_ROW = {"size": 134217728, "count": 33554432, "type": "float", "redop": "sum", "root": -1,
              "out_of_place": {"time": 613.3, "algbw": 218.85, "busbw": 382.99, "wrong": 0},
              "in_place": {"time": 614.3, "algbw": 218.48, "busbw": 382.34, "wrong": 0}}


def parse(*parts):
    return parse_all_reduce("".join(parts))


def parse_error(func, text):
    with pytest.raises(NcclParseError) as err:
        func(text)
    return str(err.value)


def gates(result, expect=None):
    return dict((item["check"], item) for item in evaluate(result, expect))


def base_result(**fields):
    """The parse of one complete single-row run, with ``fields`` replaced."""
    result = parse(HEADER, COLS, ROW, FOOTER)
    result.update(copy.deepcopy(fields))
    return result


def text_result(**fields):
    """Every key of a text parse, as ``_empty_result('text')`` starts it, with ``fields`` replaced."""
    result = {
        "format": "text", "version": None, "version_commit": None, "nccl_headers": None, "nccl_library": None, "nccl_version": None,
        "collective": None, "concluded": False, "runs": 0, "params": {}, "flags": [], "ranks": [], "hosts": [], "columns": None,
        "rows": [], "avg_busbw": None, "avg_busbw_status": None, "out_of_bounds": None, "warnings": [], "errors": [],
        "nccl_warnings": [], "transports": [], "networks": [], "json_path": None, "truncated": False, "truncated_reason": None,
        "columns_inferred": False,
    }
    result.update(fields)
    return result


# --- the whole result of a plain run, and the whole verdict on it ------------------------------------------------------

def test_plain_run_parses_to_exactly_this_result():
    assert parse(HEADER, COLS, ROW, FOOTER) == text_result(
        runs=1, params=PARAMS, columns=STANDARD_COLUMNS, rows=[PARSED_ROW], avg_busbw=382.665, out_of_bounds={"count": 0, "ok": True})


def test_counts_stay_integers_in_a_json_report():
    row = parse(HEADER, COLS, ROW, FOOTER)["rows"][0]
    assert json.dumps(row["out_of_place"], sort_keys=True) == '{"algbw": 218.85, "busbw": 382.99, "time": 613.3, "wrong": 0}'


def test_every_gate_passes_a_clean_run_with_exact_reasons():
    assert evaluate(base_result(), {"min_busbw_gbps": 300}) == [
        {"check": "complete", "status": "pass", "reason": "output complete: 1 result rows and the footer"},
        {"check": "single_run", "status": "pass", "reason": "one run; rank count unknown (the output has no '# Rank' device lines)"},
        {"check": "test_errors", "status": "pass", "reason": "no test failure reported"},
        {"check": "wrong", "status": "pass", "reason": "#wrong is 0 in all 2 results", "value": 0},
        {"check": "out_of_bounds", "status": "pass", "reason": "Out of bounds values: 0 OK", "value": 0},
        {"check": "busbw", "status": "pass", "value": 382.66, "threshold": 300.0,
         "reason": "mean busbw 382.7 GB/s over the 1 largest sizes (no row reached 1 GiB) (128 MiB) reaches 300.0 GB/s (min_busbw_gbps)"},
        {"check": "transport", "status": "skip", "reason": "not checked: no transport expected"},
    ]


def test_every_gate_fails_a_broken_run_with_exact_reasons():
    result = base_result(runs=2, errors=["gpu-1-1: Test NCCL failure common.cu:958 'unhandled cuda error'"],
                         out_of_bounds={"count": 3, "ok": False}, truncated=True, truncated_reason="output ends after 1 result rows",
                         transports=["NET/Socket"], networks=["Socket"])
    result["rows"][0]["in_place"]["wrong"] = 7
    assert evaluate(result, {"min_busbw_gbps": 400, "expect_transport": "ib"}) == [
        {"check": "complete", "status": "fail", "reason": "output is incomplete: output ends after 1 result rows"},
        {"check": "single_run", "status": "fail",
         "reason": "output holds 2 separate runs (one '# nThread' header each): the tasks did not form one job; "
                   "was nccl-tests built without MPI=1 or launched without --mpi?"},
        {"check": "test_errors", "status": "fail", "reason": "the binary reported an error: gpu-1-1: Test NCCL failure common.cu:958 'unhandled cuda error'"},
        {"check": "wrong", "status": "fail", "reason": "#wrong > 0 in 1 of 2 results: 134217728 B float in-place: 7", "value": 1},
        {"check": "out_of_bounds", "status": "fail", "reason": "Out of bounds values: 3 FAILED", "value": 3},
        {"check": "busbw", "status": "fail", "value": 382.66, "threshold": 400.0,
         "reason": "mean busbw 382.7 GB/s over the 1 largest sizes (no row reached 1 GiB) (128 MiB) is below 400.0 GB/s (min_busbw_gbps)"},
        {"check": "transport", "status": "fail",
         "reason": "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: NET/Socket; network: Socket)"},
    ]


@pytest.mark.parametrize("fields,expect,name,want", [
    ({}, None, "busbw", {"check": "busbw", "status": "skip", "reason": "not checked: no busbw threshold (set topology or min_busbw_gbps)"}),
    ({"rows": []}, {"topology": "h100-nvlink-8"}, "busbw",
     {"check": "busbw", "status": "fail", "threshold": 296.0,
      "reason": "no result rows to measure busbw against the h100-nvswitch/node/ring gate curve (149.2 GB/s at 64 MiB to 296.0 GB/s at 8 GiB)"}),
    ({"out_of_bounds": None}, None, "out_of_bounds",
     {"check": "out_of_bounds", "status": "skip", "reason": "not checked: no '# Out of bounds values' footer"}),
    ({"runs": 0}, None, "single_run",
     {"check": "single_run", "status": "skip",
      "reason": "not checked: the head of the output (its '# nThread' line) is missing, so the runs and ranks are unknown"}),
    ({"runs": 0, "format": "json"}, None, "single_run",
     {"check": "single_run", "status": "pass", "reason": "one run; rank count unknown (the output has no '# Rank' device lines)"}),
    ({"ranks": [{"rank": 0}, {"rank": 1}]}, None, "single_run", {"check": "single_run", "status": "pass", "reason": "one run of 2 rank(s)"}),
    ({"rows": []}, None, "wrong", {"check": "wrong", "status": "skip", "reason": "not checked: no result rows"}),
    ({"avg_busbw_status": "FAILED", "errors": ["a", "b"]}, None, "test_errors",
     {"check": "test_errors", "status": "fail", "reason": "the binary reported an error: a (and 2 more)"}),
])
def test_single_gate(fields, expect, name, want):
    assert gates(base_result(**fields), expect)[name] == want


# --- the wrong gate: #wrong counts ---------------------------------------------------------------------------------

def _row(size, oop, ip, datatype="float", key="wrong"):
    row = {"size": size}
    if datatype is not None:
        row["type"] = datatype
    for place, value in (("out_of_place", oop), ("in_place", ip)):
        if value is not False:
            row[place] = {"time": 10.0, "algbw": 1.0, "busbw": 1.5, key: value}
    return row


def _bad_rows(count, key="wrong", value=1):
    return [_row(8 << i, value, 0, key=key) for i in range(count)]


@pytest.mark.parametrize("rows,status,reason,value", [
    ([_row(8, None, None)], "skip", "not checked: #wrong reads N/A (the run used -c 0, no data validation)", None),
    # a place that reads N/A does not stop the other place of the same row from being checked
    ([_row(8, None, 2)], "fail", "#wrong > 0 in 1 of 1 results: 8 B float in-place: 2", 1),
    ([_row(8, 3, 0, datatype=None)], "fail", "#wrong > 0 in 1 of 2 results: 8 B  out-of-place: 3", 1),
    # five bad results are all named; from the sixth on the list ends with ", ..."
    (_bad_rows(5), "fail", "#wrong > 0 in 5 of 10 results: 8 B float out-of-place: 1, 16 B float out-of-place: 1, 32 B float out-of-place: 1, "
                           "64 B float out-of-place: 1, 128 B float out-of-place: 1", 5),
    (_bad_rows(6), "fail", "#wrong > 0 in 6 of 12 results: 8 B float out-of-place: 1, 16 B float out-of-place: 1, 32 B float out-of-place: 1, "
                           "64 B float out-of-place: 1, 128 B float out-of-place: 1, ...", 6),
])
def test_wrong_gate_counts(rows, status, reason, value):
    check = gates(base_result(rows=rows))["wrong"]
    assert (check["status"], check["reason"], check.get("value")) == (status, reason, value)


# --- the wrong gate: the error column of nccl-tests 2.0-2.10 --------------------------------------------------------------

UNKNOWN_2 = " (rank count unknown: the bound for 2 ranks, the fewest the output allows)"


@pytest.mark.parametrize("rows,status,reason,value", [
    # an error column in either place alone still selects the error gate
    ([_row(8, 0.0, False, key="error")], "pass", "error within nccl-tests' tolerance in all 1 results (largest 0e+00)" + UNKNOWN_2, 0),
    ([_row(8, False, 0.0, key="error")], "pass", "error within nccl-tests' tolerance in all 1 results (largest 0e+00)" + UNKNOWN_2, 0),
    ([_row(8, None, 5e-06, key="error")], "pass", "error within nccl-tests' tolerance in all 1 results (largest 5e-06)" + UNKNOWN_2, 0),
    ([_row(8, None, 0.5, key="error")], "fail", "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 1 of 1 results: "
                                                "8 B float in-place: 5e-01 > 1e-05" + UNKNOWN_2, 1),
    # no datatype: the bound of the integer types (any difference)
    ([_row(8, 1e-100, 0.0, datatype=None, key="error")], "fail",
     "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 1 of 2 results: 8 B  out-of-place: 1e-100 > 1e-200" + UNKNOWN_2, 1),
    (_bad_rows(5, key="error", value=0.5), "fail",
     "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 5 of 10 results: 8 B float out-of-place: 5e-01 > 1e-05, "
     "16 B float out-of-place: 5e-01 > 1e-05, 32 B float out-of-place: 5e-01 > 1e-05, 64 B float out-of-place: 5e-01 > 1e-05, "
     "128 B float out-of-place: 5e-01 > 1e-05" + UNKNOWN_2, 5),
    (_bad_rows(6, key="error", value=0.5), "fail",
     "error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 6 of 12 results: 8 B float out-of-place: 5e-01 > 1e-05, "
     "16 B float out-of-place: 5e-01 > 1e-05, 32 B float out-of-place: 5e-01 > 1e-05, 64 B float out-of-place: 5e-01 > 1e-05, "
     "128 B float out-of-place: 5e-01 > 1e-05, ..." + UNKNOWN_2, 6),
])
def test_error_column_gate_exact(rows, status, reason, value):
    check = gates(base_result(rows=rows))["wrong"]
    assert check == {"check": "wrong", "status": status, "reason": reason, "value": value}


@pytest.mark.parametrize("ranks,runs,params,note", [
    # the rank lines of a run with its head: the count is known, no note
    (3, 1, {}, ""),
    # rank lines left by a cut head: at least that many ranks
    (3, 0, {}, " (rank count unknown: the bound for 3 ranks, the fewest the output allows)"),
    # no rank lines: nThread x nGpus of the parameter line, a missing factor counting 1, and never fewer than 2
    (0, 1, {"nThread": 2, "nGpus": 4}, " (rank count unknown: the bound for 8 ranks, the fewest the output allows)"),
    (0, 1, {"nGpus": 4}, " (rank count unknown: the bound for 4 ranks, the fewest the output allows)"),
    (0, 1, {"nThread": 3}, " (rank count unknown: the bound for 3 ranks, the fewest the output allows)"),
    (0, 1, {"nThread": 1, "nGpus": 1}, UNKNOWN_2),
    (0, 0, {}, UNKNOWN_2),
])
def test_error_gate_rank_bound(ranks, runs, params, note):
    result = base_result(ranks=[{"rank": i} for i in range(ranks)], runs=runs, params=params, rows=[_row(8, 5e-07, 0.0, key="error")])
    assert gates(result)["wrong"] == {"check": "wrong", "status": "pass", "value": 0,
                                      "reason": "error within nccl-tests' tolerance in all 2 results (largest 5e-07)" + note}


@pytest.mark.parametrize("ranks,status", [(3, "pass"), (2, "fail")])
def test_error_gate_bound_grows_with_the_ranks(ranks, status):
    # float: 1e-5 x (ranks - 1); 1.5e-05 passes over 3 ranks (2e-05) and fails over 2 (1e-05)
    result = base_result(ranks=[{"rank": i} for i in range(ranks)], rows=[_row(8, 1.5e-05, 0.0, key="error")])
    assert gates(result)["wrong"]["status"] == status


# --- busbw gate ---------------------------------------------------------------------------------------------------------

def test_busbw_value_is_rounded_to_two_decimals_when_it_fails():
    result = base_result()
    result["rows"][0]["out_of_place"]["busbw"] = 10.0
    result["rows"][0]["in_place"]["busbw"] = 10.004
    check = gates(result, {"min_busbw_gbps": 11})["busbw"]
    # mean 10.002 GB/s
    assert (check["status"], check["value"], check["threshold"]) == ("fail", 10.0, 11.0)


# --- transport gate -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("transports,networks,status,reason", [
    ([], [], "skip", "not checked: no NCCL_DEBUG=INFO transport lines in the output"),
    # a socket fallback on either side fails, whatever else was used
    (["NET/Socket"], [], "fail", "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: NET/Socket; network: none)"),
    ([], ["Socket"], "fail", "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: none; network: Socket)"),
    (["NET/IB", "NET/Socket"], ["IB", "Socket"], "fail",
     "NCCL fell back to NET/Socket (TCP) while InfiniBand was expected (transports: NET/IB, NET/Socket; network: IB, Socket)"),
    # InfiniBand seen on either side passes
    (["NET/IB"], [], "pass", "NCCL used InfiniBand (transports: NET/IB; network: none)"),
    ([], ["IB"], "pass", "NCCL used InfiniBand (transports: none; network: IB)"),
    (["P2P", "NET/IB"], ["AWS Libfabric", "IB"], "pass", "NCCL used InfiniBand (transports: P2P, NET/IB; network: AWS Libfabric, IB)"),
    # some transport seen, none of it InfiniBand
    (["P2P", "SHM"], [], "fail", "NCCL used no InfiniBand transport while InfiniBand was expected (transports: P2P, SHM; network: none)"),
    ([], ["AWS Libfabric", "UCX"], "fail",
     "NCCL used no InfiniBand transport while InfiniBand was expected (transports: none; network: AWS Libfabric, UCX)"),
])
def test_transport_gate(transports, networks, status, reason):
    check = gates(base_result(transports=transports, networks=networks), {"expect_transport": "ib"})["transport"]
    assert check == {"check": "transport", "status": status, "reason": reason}


# --- expectations ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("expect,message", [
    ("h100", "expect must be a dict with keys topology, min_busbw_gbps, thresholds, nics, large_size_bytes, top_rows, expect_transport, "
             "gate_curves, nodes, notes, platform, gpus, algorithm, got 'h100'"),
    ({"topolgy": 1, "nic": 2}, "unknown expect key(s) nic, topolgy; valid keys: topology, min_busbw_gbps, thresholds, nics, large_size_bytes, "
                               "top_rows, expect_transport, gate_curves, nodes, notes, platform, gpus, algorithm"),
    ({"thresholds": "fast"}, "thresholds must be a dict of topology -> GB/s, got 'fast'"),
    ({"thresholds": {"x": 0}}, "thresholds['x'] is 0, expected a number of GB/s above 0"),
    ({"thresholds": {"x": False}}, "thresholds['x'] is False, expected a number of GB/s above 0"),
    ({"top_rows": 0}, "top_rows is 0, expected an integer of at least 1"),
    ({"min_busbw_gbps": 0}, "min_busbw_gbps is 0, expected a number of GB/s above 0"),
    ({"min_busbw_gbps": True}, "min_busbw_gbps is True, expected a number of GB/s above 0"),
    ({"min_busbw_gbps": "300"}, "min_busbw_gbps is '300', expected a number of GB/s above 0"),
    ({"expect_transport": "IB"}, "expect_transport is 'IB'; valid values: ib (or leave it unset)"),
])
def test_bad_expectation_messages_exactly(expect, message):
    with pytest.raises(ValueError) as err:
        threshold_for(expect)
    assert str(err.value) == message


@pytest.mark.parametrize("expect,want", [
    # any threshold above 0 is valid, a fraction of 1 GB/s included
    ({"topology": "slow-link", "thresholds": {"slow-link": 0.5}}, (0.5, "slow-link")),
    ({"min_busbw_gbps": 0.25}, (0.25, "min_busbw_gbps")),
    # a site's own per-NIC topology: multiplied by the NICs and rounded to 0.1 GB/s
    ({"topology": "ib-xdr-800", "thresholds": {"ib-xdr-800": 12.34}, "nics": 2}, (24.7, "ib-xdr-800 x 2 NIC(s)")),
])
def test_threshold_edges(expect, want):
    assert threshold_for(expect) == want


# --- rows split by NCCL debug lines ---------------------------------------------------------------------------------------

CHANNEL = DEBUG + "Channel 00/1 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA/Shared\n"
CUT_ROW = "data row at line 3 is incomplete: '134217728 33554432 float sum -1'"


@pytest.mark.parametrize("between", [
    "# nccl-tests version 2.18.3 nccl-headers=23004 nccl-library=23004",
    "# Collective test starting: all_reduce_perf",
    "# Collective test concluded: all_reduce_perf",
    HEADER.strip(),
    "#  Rank  0 Group  0 Pid 1 on node005 device  0 [0x18] NVIDIA H100 80GB HBM3",
    "# Reducing maxBytes to 1024 due to memory limitation",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 382.665",
    "# Writing JSON output to /tmp/nccl.json",
    "# error: boom",
    COLS.strip(),
])
def test_a_recognised_comment_line_ends_a_row_cut_by_debug_lines(between):
    """nccl-tests prints a '#' line only between rows: the row before it never got its numbers."""
    result = parse(HEADER, COLS, ROW_HEAD, CHANNEL, between + "\n", ROW_REST, FOOTER)
    assert result["rows"] == []
    assert result["truncated_reason"].startswith(CUT_ROW)


@pytest.mark.parametrize("between", ["# Using devices", "#", "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"])
def test_an_unrecognised_comment_line_does_not_end_a_row_cut_by_debug_lines(between):
    result = parse(HEADER, COLS, ROW_HEAD, CHANNEL, between + "\n", ROW_REST, FOOTER)
    assert (result["rows"], result["truncated"]) == ([PARSED_ROW], False)


def test_a_row_cut_by_debug_lines_at_the_end_of_the_output_is_incomplete():
    result = parse(HEADER, COLS, ROW_HEAD, CHANNEL, CHANNEL)
    assert (result["rows"], result["truncated_reason"]) == ([], CUT_ROW)
    assert result["transports"] == ["NET/IB"]


def test_a_debug_message_after_a_whole_row_keeps_the_row():
    result = parse(HEADER, COLS, ROW.rstrip("\n"), CHANNEL, ROW.replace("134217728      33554432", "268435456      67108864"), FOOTER)
    assert [row["size"] for row in result["rows"]] == [134217728, 268435456]
    assert (result["truncated"], result["transports"]) == (False, ["NET/IB"])


# --- '#' lines -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,want", [
    ("# nccl-tests version 2.13.9", ("2.13.9", None, None, None)),
    ("# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102", ("2.20.0", "b4d5bee", 23102, 23102)),
    ("# nccl-tests version 2.18.3 nccl-headers=23004", ("2.18.3", None, 23004, None)),
])
def test_version_line_parts(line, want):
    result = parse(line + "\n", HEADER, COLS, ROW, FOOTER)
    assert (result["version"], result["version_commit"], result["nccl_headers"], result["nccl_library"]) == want


@pytest.mark.parametrize("lines,collective", [
    (["# Collective test concluded: all_gather_perf"], "all_gather_perf"),
    (["# Collective test starting: all_reduce_perf", "# Collective test concluded: all_gather_perf"], "all_reduce_perf"),
])
def test_collective_from_the_starting_line_else_the_concluded_one(lines, collective):
    result = parse(HEADER, COLS, ROW, FOOTER, "\n".join(lines) + "\n")
    assert (result["collective"], result["concluded"]) == (collective, True)


def test_flags_warnings_errors_and_json_path_lines():
    result = parse(HEADER,
                   "# Blocking Enabled: wait for completion and barrier after each collective \n",
                   "# Parallel Init Enabled: threads call into NcclInitRank concurrently \n",
                   "# Reducing maxBytes to 1024 due to memory limitation\n",
                   COLS, ROW, "# error: Test NCCL failure common.cu:958\n", FOOTER, "# Writing JSON output to /tmp/nccl.json\n")
    assert result["flags"] == ["blocking", "parallel_init"]
    assert result["warnings"] == [{"kind": "reduced_max_bytes", "max_bytes": 1024, "message": "Reducing maxBytes to 1024 due to memory limitation"}]
    assert result["errors"] == ["Test NCCL failure common.cu:958"]
    assert result["json_path"] == "/tmp/nccl.json"


@pytest.mark.parametrize("line", ["# busbw is algbw scaled by 2(n-1)/n", "# size and count of the last row"])
def test_a_comment_naming_some_header_words_is_not_a_column_header(line):
    result = parse(HEADER, COLS, ROW, line + "\n", FOOTER)
    assert (result["rows"], result["columns"], result["truncated"]) == ([PARSED_ROW], STANDARD_COLUMNS, False)


def test_a_header_after_rows_read_with_the_standard_layout_replaces_it():
    """A paste that starts inside one run and holds the next one whole: the header of the second run is the layout."""
    result = parse(ROW, HEADER, COLS, ROW, FOOTER)
    assert result["columns"] == STANDARD_COLUMNS
    assert result["rows"] == [PARSED_ROW, PARSED_ROW]
    assert result["columns_inferred"] is True


@pytest.mark.parametrize("header,fields", [
    ("#  size count type redop root cputime algbw busbw #wrong cputime algbw busbw #wrong\n", 13),
    ("#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong timestamp\n", 15),
])
def test_column_header_layouts(header, fields):
    columns = parse(HEADER, header)["columns"]
    assert columns == dict(STANDARD_COLUMNS, time_label=header.split()[6], timestamp=fields == 15, fields=fields)


@pytest.mark.parametrize("text,message", [
    (b"# nThread", "nccl-tests output must be text, got bytes"),
    ("  \n\n", "nccl-tests output is empty: no line to parse"),
    ("hello\n", "line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: 'hello'"),
    # a 13-field line whose first field is no size is not a data row
    ("step 1 of 13 done in 0.5 s with 8 GPUs ok\n",
     "line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: "
     "'step 1 of 13 done in 0.5 s with 8 GPUs ok'"),
    # the first line is quoted whole up to 160 characters, cut to 157 and '...' beyond
    ("x" * 160 + "\n", "line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: '%s'" % ("x" * 160)),
    ("x" * 161 + "\n", "line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' header found; first line: '%s...'" % ("x" * 157)),
    (HEADER + COLS + "   134217728      33554432     float     sum\n" + ROW,
     "line 3: data row does not match the 13 columns of the header (size count type redop root): '134217728 33554432 float sum'"),
    (HEADER + "#  size count type redop root time algbw busbw #wrong\n" + ROW,
     "line 2: column header has 1 time columns, expected 2 (out-of-place and in-place): '#  size count type redop root time algbw busbw #wrong'"),
    (HEADER + "#  time algbw busbw #wrong time algbw busbw #wrong size count\n" + ROW,
     "line 2: column header has no key columns (size count ...) before its first time column: "
     "'#  time algbw busbw #wrong time algbw busbw #wrong size count'"),
    (HEADER + "#  size count type redop root time algbw speed #wrong time algbw busbw #wrong\n" + ROW,
     "line 2: column header group time algbw speed wrong lacks time/algbw/busbw: "
     "'#  size count type redop root time algbw speed #wrong time algbw busbw #wrong'"),
    (HEADER + COLS + ROW + "#  size count type redop root cputime algbw busbw #wrong cputime algbw busbw #wrong\n",
     "line 4: a second column header differs from the first: '#  size count type redop root cputime algbw busbw #wrong cputime algbw busbw #wrong'"),
    (HEADER + COLS + ROW + "# Avg bus bandwidth    : fast\n", "line 4: average bus bandwidth 'fast' is not a number: '# Avg bus bandwidth    : fast'"),
])
def test_parse_errors_exactly(text, message):
    assert parse_error(parse_all_reduce, text) == message


# --- data rows -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("column", [5, 6, 7])
def test_na_in_time_algbw_or_busbw_makes_the_row_incomplete(column):
    tokens = ROW.split()
    tokens[column] = "N/A"
    result = parse(HEADER, COLS, "  ".join(tokens) + "\n")
    assert (result["rows"], result["truncated_reason"]) == ([], "data row at line 3 is incomplete: %r" % " ".join(tokens))


def test_size_zero_row_is_a_row():
    # all_reduce_perf -b 0 starts with an empty message
    zero = "           0             0     float     sum      -1     5.10    0.00    0.00      0     4.90    0.00    0.00      0\n"
    rows = parse(HEADER, COLS, zero, ROW, FOOTER)["rows"]
    assert [(row["size"], row["count"], row["out_of_place"]["time"]) for row in rows] == [(0, 0, 5.1), (134217728, 33554432, 613.3)]


def test_gpu_name_ending_in_x_is_kept():
    result = parse(HEADER, "#  Rank  0 Group  0 Pid 77 on pc device  0 [0x01] NVIDIA TITAN X\n", COLS, ROW, FOOTER)
    assert result["ranks"] == [{"rank": 0, "group": 0, "pid": 77, "host": "pc", "device": 0, "bus_id": "0x01", "name": "NVIDIA TITAN X"}]


def test_a_cut_nccl_version_line_is_no_version():
    result = parse(HEADER, "NCCL version\n", COLS, ROW, FOOTER)
    assert (result["nccl_version"], result["truncated"]) == (None, False)


# --- pastes without the head: the standard layout ----------------------------------------------------------------------------

def _inferred(keys, name="wrong", fields=13):
    group = ["time", "algbw", "busbw", name]
    return {"keys": keys, "out_of_place": group, "in_place": list(group), "time_label": "time", "per_iteration": False,
            "timestamp": False, "fields": fields, "inferred": True}


@pytest.mark.parametrize("line,columns", [
    (ROW, _inferred(["size", "count", "type", "redop", "root"])),
    # nccl-tests before 2.11: no root column (12 fields), and before that no redop (11)
    ("   134217728      33554432     float     sum    613.3  218.85  382.99  0e+00    614.3  218.48  382.34  0e+00\n",
     _inferred(["size", "count", "type", "redop"], "error", 12)),
    ("   134217728      33554432     float    613.3  218.85  382.99  0e+00    614.3  218.48  382.34  0e+00\n",
     _inferred(["size", "count", "type"], "error", 11)),
    # an error printed as a plain decimal is an error column too
    ("   134217728      33554432     float     sum      -1    613.3  218.85  382.99    0.5    614.3  218.48  382.34      0\n",
     _inferred(["size", "count", "type", "redop", "root"], "error")),
    # int8: one byte per element, the size equals the count
    ("        1024          1024      int8     sum      -1     5.10    0.20    0.20      0     4.90    0.21    0.21      0\n",
     _inferred(["size", "count", "type", "redop", "root"])),
    ("        1024          1024      int8     sum      -1     5.10    0.20    0.20    N/A     4.90    0.21    0.21    N/A\n",
     _inferred(["size", "count", "type", "redop", "root"])),
])
def test_a_headless_row_gets_the_standard_layout(line, columns):
    result = parse(line, FOOTER)
    assert result["columns"] == columns
    assert (len(result["rows"]), result["columns_inferred"]) == (1, True)


@pytest.mark.parametrize("line", [
    # a datatype that is no word
    "   134217728      33554432     1.5     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n",
    # a root that is no integer
    "   134217728      33554432     float     sum    all    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n",
    # a size cut at its front: no whole multiple of the count
    "    34217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n",
])
def test_a_line_that_only_looks_like_a_row_is_not_read_as_one(line):
    assert parse_error(parse_all_reduce, line).startswith("line 1: not nccl-tests output")


# --- NCCL debug lines ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("via,transports", [
    ("NET/IB", ["NET/IB"]),
    ("NET/AWS Libfabric/0/GDRDMA", ["NET/AWS Libfabric"]),
    ("NET/", ["NET"]),
    ("CollNet/SHARP/0", ["CollNet"]),
    ("UCX/0/GDRDMA", ["UCX"]),
    # the known transports by the start of their name, whatever follows it
    ("P2PIPC", ["P2P"]),
    ("SHMEM/x", ["SHM"]),
    ("NVLSTree", ["NVLS"]),
    ("CollNetDirect/0", ["CollNet"]),
    ("  ", []),
])
def test_channel_transport_names(via, transports):
    line = DEBUG + "Channel 00/0 : 0[0] -> 1[1] via " + via + "\n"
    assert parse(HEADER, line, COLS, ROW, FOOTER)["transports"] == transports


def test_channel_message_indented_after_the_level():
    line = DEBUG.rstrip() + "  Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    assert parse(HEADER, line, COLS, ROW, FOOTER)["transports"] == ["P2P"]


def test_networks_are_sorted_and_unique():
    lines = "".join(DEBUG + "Using network %s\n" % name for name in ("Socket", "IB", "Socket", "IB"))
    assert parse(HEADER, lines, COLS, ROW, FOOTER)["networks"] == ["IB", "Socket"]


def test_nccl_version_from_a_debug_line_first_one_wins():
    lines = DEBUG + "NCCL version 2.18.5+cuda12.2\n" + DEBUG + "NCCL version 2.19.3+cuda12.3\n"
    assert parse(HEADER, lines, COLS, ROW, FOOTER)["nccl_version"] == "2.18.5+cuda12.2"


def test_nccl_warnings_keep_warn_and_abort_only_and_at_most_twenty():
    lines = (DEBUG + "Bootstrap : Using eth0:10.0.0.5<0>\n"
             + "".join("node005:1:2 [0] transport/net_ib.cc:%d NCCL WARN NET/IB : Got async event : port error\n" % i for i in range(25))
             + "node005:1:2 [0] NCCL ABORT Aborting\n")
    warnings = parse(HEADER, lines, COLS, ROW, FOOTER)["nccl_warnings"]
    assert warnings == ["NET/IB : Got async event : port error"] * 20
    assert parse(HEADER, "node005:1:2 [0] NCCL ABORT Aborting\n", COLS, ROW, FOOTER)["nccl_warnings"] == ["Aborting"]


# --- summary ----------------------------------------------------------------------------------------------------------------

def test_summarize_exactly():
    result = parse(DEBUG + "NCCL version 2.18.5+cuda12.2\n", "# nccl-tests version 2.18.3\n", "# Collective test starting: all_reduce_perf\n",
                   HEADER, DEBUG + "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n", COLS, ROW, FOOTER)
    assert summarize(result) == {
        "version": "2.18.3", "nccl_version": "2.18.5+cuda12.2", "collective": "all_reduce_perf", "hosts": [], "ranks": 0, "rows": 1,
        "avg_busbw": 382.665, "largest_size": 134217728, "largest_busbw": 382.665, "transports": ["P2P"], "truncated": False,
        "series": [[134217728, 382.665]],
    }


def test_summarize_without_rows():
    digest = summarize(parse(HEADER, COLS))
    assert (digest["rows"], digest["largest_size"], digest["largest_busbw"], digest["series"], digest["truncated"]) == (0, None, None, [], True)


# --- the -J JSON report ----------------------------------------------------------------------------------------------------

JSON_ENTRY = {"size": 134217728, "count": 33554432, "type": "float", "redop": "sum", "root": -1,
              "out_of_place": {"time": 613.3, "alg_bw": 218.85, "bus_bw": 382.99, "nwrong": 0},
              "in_place": {"time": 614.3, "alg_bw": 218.48, "bus_bw": 382.34, "nwrong": 0}}
JSON_DOC = {"version": 2, "nccl_version": 23004,
            "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": 8, "maximum_bytes": 8, "step_factor": 2},
            "results": [JSON_ENTRY], "out_of_bounds": {"count": 0, "okay": "true"},
            "average_bus_bandwidth": {"bandwidth": 382.665, "okay": "unchecked"}, "errors": []}
DEVICE = {"rank": 0, "group": 0, "pid": 77, "hostname": "node005", "device": 0, "device_hex": "0000:18:00", "device_info": "NVIDIA H100"}
RANK = {"rank": 0, "group": 0, "pid": 77, "host": "node005", "device": 0, "bus_id": "0000:18:00", "name": "NVIDIA H100"}


def jdoc(*changes):
    """JSON_DOC as text, each change a (path, value) pair; the value KeyError deletes the key."""
    doc = copy.deepcopy(JSON_DOC)
    for path, value in changes:
        set_path(doc, path, value)
    return json.dumps(doc)


def json_result(**fields):
    """Every key of a JSON parse of one complete run, with ``fields`` replaced."""
    return text_result(**dict(dict(
        format="json", runs=1, json_version=2, nccl_library=23004, concluded=True, avg_busbw=382.665, out_of_bounds={"count": 0, "ok": True},
        params={"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 8, "step": 2, "step_kind": "factor"}, rows=[PARSED_ROW]), **fields))


def test_json_report_parses_to_exactly_this_result():
    assert parse_json(jdoc()) == json_result()


@pytest.mark.parametrize("changes,fields", [
    # a report holding only its results, or only its config
    ([(["config"], KeyError)], {"params": {}}),
    ([(["results"], KeyError)], {"rows": []}),
    ([(["results"], None)], {"rows": []}),
    ([(["config", "step_factor"], KeyError), (["config", "step_bytes"], 1048576)],
     {"params": {"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 8, "step": 1048576, "step_kind": "bytes"}}),
    ([(["config", "step_factor"], KeyError)], {"params": {"nThread": 1, "nGpus": 1, "minBytes": 8, "maxBytes": 8}}),
    ([(["config", "blocking_collectives"], True), (["config", "per_iter_timing"], "true"), (["config", "parallel_init"], "false")],
     {"flags": ["blocking_collectives", "per_iter_timing"]}),
    ([(["config", "parallel_init"], "true"), (["config", "blocking_collectives"], "yes")], {"flags": ["parallel_init"]}),
    # devices at the top level as well as in the config
    ([(["devices"], [DEVICE])], {"ranks": [RANK], "hosts": ["node005"]}),
    ([(["config", "devices"], [DEVICE, dict(DEVICE, rank=1, device=1)])],
     {"ranks": [RANK, dict(RANK, rank=1, device=1)], "hosts": ["node005"]}),
    # count and root may be left out: 0 elements, no root (-1)
    ([(["results", 0, "count"], KeyError), (["results", 0, "root"], KeyError)], {"rows": [dict(PARSED_ROW, count=0, root=-1)]}),
    ([(["results", 0, "root"], "    3")], {"rows": [dict(PARSED_ROW, root=3)]}),
    # one place alone is a result
    ([(["results", 0, "in_place"], KeyError)], {"rows": [dict((k, v) for k, v in PARSED_ROW.items() if k != "in_place")]}),
    ([(["results", 0, "out_of_place"], KeyError)], {"rows": [dict((k, v) for k, v in PARSED_ROW.items() if k != "out_of_place")]}),
    # the time of a -C run is cpu_time; nwrong null or nan is not checked
    ([(["results", 0, "in_place"], {"cpu_time": 614.3, "alg_bw": 218.48, "bus_bw": 382.34, "nwrong": None})],
     {"rows": [dict(PARSED_ROW, in_place={"time": 614.3, "algbw": 218.48, "busbw": 382.34, "wrong": None})]}),
    # the footer's verdict
    ([(["average_bus_bandwidth", "okay"], True)], {"avg_busbw_status": "OK"}),
    ([(["average_bus_bandwidth", "okay"], "true")], {"avg_busbw_status": "OK"}),
    ([(["average_bus_bandwidth", "okay"], False)], {"avg_busbw_status": "FAILED"}),
    ([(["average_bus_bandwidth", "okay"], "false")], {"avg_busbw_status": "FAILED"}),
    ([(["average_bus_bandwidth", "okay"], "TRUE")], {"avg_busbw_status": None}),
    ([(["average_bus_bandwidth", "okay"], KeyError)], {"avg_busbw_status": None}),
    ([(["average_bus_bandwidth", "bandwidth"], "382.665")], {}),
    ([(["out_of_bounds", "count"], "2")], {"out_of_bounds": {"count": 2, "ok": False}}),
    # errors: blank ones dropped, anything but a list taken as one error
    ([(["errors"], ["", "  ", "CUDA failure 'out of memory'", 7])], {"errors": ["CUDA failure 'out of memory'", "7"]}),
    ([(["errors"], "NCCL failure")], {"errors": ["NCCL failure"]}),
    ([(["errors"], None)], {}),
    ([(["errors"], KeyError)], {}),
    # the test it is of: the program named by its args, a path with slashes or backslashes
    ([(["args"], ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8"])], {"collective": "all_reduce_perf"}),
    ([(["args"], ["C:\\nccl-tests\\build\\all_gather_perf"])], {"collective": "all_gather_perf"}),
    ([(["args"], ["build/"])], {"collective": "build"}),
    ([(["args"], ["/"])], {}),
    ([(["args"], [" "])], {}),
    ([(["args"], [7])], {}),
])
def test_json_report_variants(changes, fields):
    assert parse_json(jdoc(*changes)) == json_result(**fields)


def test_json_report_without_footer():
    result = parse_json(jdoc((["average_bus_bandwidth"], KeyError)))
    assert result == json_result(concluded=False, avg_busbw=None, truncated=True,
                                 truncated_reason="JSON report has no 'average_bus_bandwidth': the run ended before its footer (1 result rows)")


@pytest.mark.parametrize("text,message", [
    (b"{}", "nccl-tests JSON must be text, got bytes"),
    ("{}", "nccl-tests JSON: no 'config' and no 'results' key; keys found: none"),
    ('{"version": 2, "args": []}', "nccl-tests JSON: no 'config' and no 'results' key; keys found: args, version"),
    (jdoc((["config", "step_factor"], "two")), "nccl-tests JSON: config.step_factor is 'two', expected an integer"),
    (jdoc((["config", "step_factor"], KeyError), (["config", "step_bytes"], 1.5)), "nccl-tests JSON: config.step_bytes is 1.5, expected an integer"),
    (jdoc((["config", "devices"], [{"rank": 0}])), "nccl-tests JSON: devices[0] is {'rank': 0}, expected an object with a hostname"),
    (jdoc((["results", 0, "count"], "many")), "nccl-tests JSON: results[0].count is 'many', expected an integer"),
    (jdoc((["results", 0, "root"], "r0")), "nccl-tests JSON: results[0].root is 'r0', expected an integer"),
    (jdoc((["results", 0, "in_place", "time"], KeyError)), "nccl-tests JSON: results[0].in_place has no time"),
    (jdoc((["results", 0, "in_place", "alg_bw"], KeyError)), "nccl-tests JSON: results[0].in_place has no alg_bw"),
    (jdoc((["results", 0, "in_place", "bus_bw"], True)), "nccl-tests JSON: results[0].in_place.bus_bw is True, expected a number"),
    (jdoc((["results", 0, "out_of_place", "nwrong"], "none")), "nccl-tests JSON: results[0].out_of_place.nwrong is 'none', expected a number"),
    (jdoc((["out_of_bounds", "count"], "0.5")), "nccl-tests JSON: out_of_bounds.count is '0.5', expected an integer"),
    (jdoc((["average_bus_bandwidth", "bandwidth"], "fast")), "nccl-tests JSON: average_bus_bandwidth.bandwidth is 'fast', expected a number"),
    # a number Python refuses to read (more digits than int() takes): json's own message, no place in the text
    ('{"version": ' + "1" * 5000 + "}",
     "nccl-tests JSON is not valid JSON at line 0 column 0: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits; "
     "use sys.set_int_max_str_digits() to increase the limit"),
])
def test_json_errors_exactly(text, message):
    assert parse_error(parse_json, text) == message


# --- parse_run: the JSON report for the numbers, stdout for the rest ---------------------------------------------------------

@pytest.mark.parametrize("stdout", [None, "", " \n"])
def test_parse_run_without_stdout_is_the_json_report(stdout):
    assert parse_run(stdout, jdoc()) == json_result()


def test_parse_run_takes_errors_runs_and_ranks_from_stdout():
    stdout = "".join((HEADER, "#  Rank  0 Group  0 Pid 77 on node005 device  0 [0000:18:00] NVIDIA H100\n", COLS, ROW,
                      "node005: Test NCCL failure common.cu:958 'unhandled cuda error'\n", FOOTER, HEADER, COLS, ROW, FOOTER))
    result = parse_run(stdout, jdoc((["errors"], ["stray", "node005: Test NCCL failure common.cu:958 'unhandled cuda error'"])))
    assert result["errors"] == ["node005: Test NCCL failure common.cu:958 'unhandled cuda error'", "stray"]
    assert result["runs"] == 2
    assert (result["ranks"], result["hosts"]) == ([RANK], ["node005"])


def test_parse_run_keeps_the_json_devices_and_counts_a_headless_stdout_as_one_run():
    stdout = ROW + FOOTER
    result = parse_run(stdout, jdoc((["config", "devices"], [dict(DEVICE, hostname="node007")])))
    assert result["runs"] == 1
    assert (result["ranks"], result["hosts"]) == ([dict(RANK, host="node007")], ["node007"])
