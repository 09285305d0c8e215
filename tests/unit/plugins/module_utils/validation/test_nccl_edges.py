# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Edge tables for the nccl-tests parser and gates (plugins/module_utils/validation/_nccl.py).

test_nccl.py runs the recorded outputs; this file pins the exact result shapes, messages and
boundaries on small inline samples written with nccl-tests' printf formats (src/common.cu,
src/util.cu) and NCCL's ``INFO``/``WARN`` line format.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (
    NcclParseError,
    evaluate,
    parse_all_reduce,
    parse_json,
    parse_run,
    summarize,
    threshold_for,
)
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.validation.test_nccl import set_path

HEADER = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
COLS = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
ROW = "   134217728      33554432     float     sum      -1    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"
ROW_HEAD = "   134217728      33554432     float     sum      -1"
ROW_REST = "    613.3  218.85  382.99      0    614.3  218.48  382.34      0\n"
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 382.665\n"
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
