# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Size-aware busbw gates (issue #22, item 2): the gate curves of _nccl (built-in and the user's, their lookup,
interpolation and verdict) and what _validation_nccl makes of them (NCCL_ALGO=Ring on two-node runs, the node
count of the multi-node runs, the ``gate`` of every series item)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._busbw import resolve
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import (
    GIB,
    MIB,
    curve_minimum,
    evaluate,
    gate_curve,
    gate_info,
    parse_all_reduce,
    parse_size,
    threshold_for,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'fixtures', 'nccl')
HEADER = "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
COLS = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 200.0\n"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def run(*points):
    """A parsed complete run with one row per (size, busbw): out-of-place and in-place both at that busbw."""
    rows = "".join("%12d  %12d     float     sum      -1   %6.1f  %6.2f  %6.2f      0   %6.1f  %6.2f  %6.2f      0\n"
                   % (size, size // 4, 100.0, busbw, busbw, 100.0, busbw, busbw) for size, busbw in points)
    return parse_all_reduce(HEADER + COLS + rows + FOOTER)


def busbw(result, expect):
    return [item for item in evaluate(result, expect) if item["check"] == "busbw"][0]


# --- the built-in curves -------------------------------------------------------------------------------------------------

SIZES = [64 * MIB, 128 * MIB, 256 * MIB, 512 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB]


@pytest.mark.parametrize("topology,gbps", [
    # 80 % of the reported figure at 8 GiB, scaled to each size by busbw(S) ~ S / (S + 64 MiB)
    ("a100-nvlink-8", [92.7, 123.6, 148.3, 164.8, 174.5, 179.8, 182.6, 184.0]),
    ("h100-nvlink-8", [149.2, 198.9, 238.7, 265.2, 280.8, 289.3, 293.7, 296.0]),
    ("h200-nvlink-8", [149.2, 198.9, 238.7, 265.2, 280.8, 289.3, 293.7, 296.0]),
    ("ib-hdr-200", [9.7, 12.9, 15.5, 17.2, 18.2, 18.8, 19.1, 19.2]),
    ("ib-ndr-400", [18.9, 25.3, 30.3, 33.7, 35.7, 36.7, 37.3, 37.6]),
    # the PCIe platforms: conservative estimates (no published figure), 80 % of 20 / 20 / 25 GB/s
    ("l40s-pcie", [8.1, 10.8, 12.9, 14.3, 15.2, 15.6, 15.9, 16.0]),
    ("a100-pcie", [8.1, 10.8, 12.9, 14.3, 15.2, 15.6, 15.9, 16.0]),
    ("h100-pcie", [10.1, 13.4, 16.1, 17.9, 19.0, 19.5, 19.8, 20.0]),
])
def test_builtin_curves_exactly(topology, gbps):
    """The keys of earlier releases keep their curves' figures (now read from the catalogue, catalogue/_busbw.py)."""
    assert list(resolve(topology)["points"]) == list(zip(SIZES, gbps))
    assert gate_curve({"topology": topology}) == [[size, value] for size, value in zip(SIZES, gbps)]


@pytest.mark.parametrize("topology", ["l40s-pcie", "a100-pcie", "h100-pcie"])
def test_pcie_curves_say_they_are_estimates_and_cite_a_public_thread(topology):
    source = resolve(topology)["source"]
    assert "CONSERVATIVE ESTIMATE, no published figure" in source
    assert "https://github.com/NVIDIA/nccl/issues/1639" in source


# --- which curve a run is gated with -------------------------------------------------------------------------------------

@pytest.mark.parametrize("expect,want", [
    (None, []),
    ({"topology": None}, []),
    # per-NIC curves: the figures x the NICs; stated for two nodes, their sizes x nodes / 2 above that
    ({"topology": "ib-ndr-400", "nics": 8}, [[64 * MIB, 151.2], [128 * MIB, 202.4], [256 * MIB, 242.4], [512 * MIB, 269.6], [GIB, 285.6],
                                             [2 * GIB, 293.6], [4 * GIB, 298.4], [8 * GIB, 300.8]]),
    ({"topology": "ib-ndr-400", "nics": 8, "nodes": 2}, gate_curve({"topology": "ib-ndr-400", "nics": 8})),
    ({"topology": "ib-hdr-200", "nics": 2, "nodes": 8}, [[256 * MIB, 19.4], [512 * MIB, 25.8], [GIB, 31.0], [2 * GIB, 34.4], [4 * GIB, 36.4],
                                                         [8 * GIB, 37.6], [16 * GIB, 38.2], [32 * GIB, 38.4]]),
    ({"topology": "ib-hdr-200", "nodes": 3}, [[size * 3 // 2, value] for size, value in gate_curve({"topology": "ib-hdr-200"})]),
    # a node topology does not stretch with the nodes
    ({"topology": "a100-nvlink-8", "nodes": 8}, gate_curve({"topology": "a100-nvlink-8"})),
    # the flat gates of before: one point at large_size_bytes, holding from there on
    ({"topology": "h100-nvlink-8", "min_busbw_gbps": 300}, [[GIB, 300.0]]),
    ({"topology": "h100-nvlink-8", "thresholds": {"h100-nvlink-8": 350}}, [[GIB, 350.0]]),
    ({"topology": "ib-xdr-800", "thresholds": {"ib-xdr-800": 90}, "nics": 4, "large_size_bytes": 4 * GIB}, [[4 * GIB, 360.0]]),
    # the user's curve: sizes in bytes or as nccl-tests writes them, over the built-in one of its topology
    ({"topology": "h100-nvlink-8", "gate_curves": {"h100-nvlink-8": [["64M", 120], ["1G", 250], [8589934592, 300.5]]}},
     [[64 * MIB, 120.0], [GIB, 250.0], [8 * GIB, 300.5]]),
    ({"topology": "ib-xdr-800", "nics": 8, "nodes": 4, "gate_curves": {"ib-xdr-800": [["1g", 70]]}}, [[2 * GIB, 560.0]]),
])
def test_gate_curve(expect, want):
    assert gate_curve(expect) == want


@pytest.mark.parametrize("expect,want", [
    ({"topology": "ib-ndr-400", "nics": 8, "nodes": 16}, (300.8, "ib-ndr-400x8/ring")),
    ({"topology": "my-gpus", "gate_curves": {"my-gpus": [["64M", 100], ["8G", 420]]}}, (420.0, "my-gpus")),
])
def test_threshold_for_a_curve_is_its_last_figure(expect, want):
    assert threshold_for(expect) == want


@pytest.mark.parametrize("size,want", [
    (64 * MIB - 1, None),                # below the first point: not gated
    (64 * MIB, 149.2),
    (8 * GIB, 296.0),
    (16 * GIB, 296.0),                   # past the last point its figure holds
    (96 * MIB, 178.27),                  # 149.2 + log2(1.5) x 49.7
    (3 * GIB, 291.87),                   # 289.3 + log2(1.5) x 4.4
])
def test_curve_minimum_interpolates_in_log_size(size, want):
    assert curve_minimum(resolve("h100-nvlink-8")["points"], size) == want


def test_curve_minimum_of_one_point():
    assert [curve_minimum([(GIB, 50.0)], size) for size in (GIB // 2, GIB, 64 * GIB)] == [None, 50.0, 50.0]
    # past the last point its figure to 0.01 GB/s, not to the whole GB/s
    assert curve_minimum([(MIB, 10.0), (GIB, 50.125)], 64 * GIB) == 50.12


@pytest.mark.parametrize("gpus", [True, 0, -8, "8"])
def test_a_gpu_count_that_is_no_whole_number_of_at_least_one_is_refused(gpus):
    with pytest.raises(ValueError, match=r"^gpus is %s, expected an integer of at least 1$" % re.escape(repr(gpus))):
        threshold_for({"gpus": gpus})


@pytest.mark.parametrize("value,want", [
    (1, 1), (67108864, 67108864), ("1024", 1024), ("64M", 64 * MIB), ("64m", 64 * MIB), (" 8G ", 8 * GIB), ("2T", 2 * 1024 ** 4),
    ("512K", 512 * 1024), (0, None), (-1, None), ("0M", None), ("1.5G", None), ("8GB", None), ("8 G", None), (True, None), (1.0, None),
    (None, None), ("", None),
])
def test_parse_size(value, want):
    assert parse_size(value) == want


# --- the verdict: every measured size against the curve, the worst one named ----------------------------------------------

def test_a_run_that_passes_at_8_gib_but_fails_at_64_mib_names_64_mib():
    result = run((32 * MIB, 60.0), (64 * MIB, 95.1), (128 * MIB, 250.0), (GIB, 300.0), (8 * GIB, 300.0))
    assert busbw(result, {"topology": "h100-nvlink-8"}) == {
        "check": "busbw", "status": "fail", "value": 95.1, "threshold": 149.2, "size": 64 * MIB,
        "reason": "at 64 MiB 95.1 GB/s < 149.2 GB/s required, 63.7 % of it (h100-nvswitch/node/ring gate curve); below the curve at 1 of the 4 sizes "
                  "gated (64 MiB)"}
    # the same run against a site's own curve
    mine = {"topology": "h100-nvlink-8", "gate_curves": {"h100-nvlink-8": [["64M", 120], ["8G", 296]]}}
    assert busbw(result, mine)["reason"].startswith("at 64 MiB 95.1 GB/s < 120.0 GB/s required, 79.2 % of it (h100-nvlink-8 gate curve)")
    # the flat threshold of before looks at the large sizes only, and passes it
    assert busbw(result, {"topology": "h100-nvlink-8", "thresholds": {"h100-nvlink-8": 296}})["status"] == "pass"


def test_the_worst_size_is_the_lowest_share_of_the_curve_and_a_pass_names_it_too():
    # shares of the curve: 160/149.2 = 1.07 at 64 MiB, 250/238.7 = 1.05 at 256 MiB, 320/296 = 1.08 at 8 GiB
    result = run((64 * MIB, 160.0), (256 * MIB, 250.0), (8 * GIB, 320.0))
    assert busbw(result, {"topology": "h100-nvlink-8"}) == {
        "check": "busbw", "status": "pass", "value": 250.0, "threshold": 238.7, "size": 256 * MIB,
        "reason": "busbw reaches the h100-nvswitch/node/ring gate curve at all 3 sizes gated (64 MiB..8 GiB); closest at 256 MiB: 250.0 GB/s >= 238.7 GB/s "
                  "required"}


def test_a_figure_equal_to_the_curve_passes():
    assert busbw(run((64 * MIB, 149.2), (8 * GIB, 296.0)), {"topology": "h100-nvlink-8"})["status"] == "pass"


def test_a_figure_just_below_the_curve_is_shown_to_the_hundredth():
    # 96 MiB: the curve reads 178.27; 178.26 GB/s is below it, and would read "178.3 < 178.3" to 0.1
    check = busbw(run((96 * MIB, 178.26)), {"topology": "h100-nvlink-8"})
    assert (check["status"], check["value"], check["threshold"]) == ("fail", 178.26, 178.27)
    assert check["reason"].startswith("at 96 MiB 178.26 GB/s < 178.27 GB/s required")
    assert busbw(run((96 * MIB, 178.2)), {"topology": "h100-nvlink-8"})["reason"].startswith("at 96 MiB 178.2 GB/s < 178.3 GB/s required")


def test_many_sizes_below_the_curve_are_listed_up_to_five():
    result = run(*[(size, 10.0) for size in SIZES])
    assert busbw(result, {"topology": "a100-nvlink-8"})["reason"] == (
        "at 8 GiB 10.0 GB/s < 184.0 GB/s required, 5.4 % of it (a100-nvswitch/node/ring gate curve); below the curve at 8 of the 8 sizes gated "
        "(64 MiB, 128 MiB, 256 MiB, 512 MiB, 1 GiB, ...)")


def test_a_multi_node_run_is_gated_at_its_stretched_sizes():
    # 8 nodes: the ib-ndr-400 curve's 64 MiB figure applies at 256 MiB; 64 and 128 MiB are not gated
    result = run((64 * MIB, 5.0), (128 * MIB, 5.0), (256 * MIB, 160.0), (8 * GIB, 320.0))
    check = busbw(result, {"topology": "ib-ndr-400", "nics": 8, "nodes": 8})
    assert (check["status"], check["size"], check["threshold"]) == ("pass", 256 * MIB, 151.2)
    assert "ib-ndr-400x8/ring gate curve, sizes x 4 for 8 nodes at all 2 sizes gated (256 MiB..8 GiB)" in check["reason"]
    assert busbw(result, {"topology": "ib-ndr-400", "nics": 8, "nodes": 2})["reason"].startswith(
        "at 128 MiB 5.0 GB/s < 202.4 GB/s required, 2.4 % of it (ib-ndr-400x8/ring gate curve); below the curve at 3 of the 4 sizes gated "
        "(64 MiB, 128 MiB, 256 MiB)")


def test_a_run_that_stops_below_the_curve_fails_saying_how_far_to_run():
    check = busbw(run((16 * MIB, 100.0), (32 * MIB, 120.0)), {"topology": "h100-nvlink-8"})
    assert check == {"check": "busbw", "status": "fail", "threshold": 149.2,
                     "reason": "no result row at or above 64 MiB, where the h100-nvswitch/node/ring gate curve starts (largest size measured: 32 MiB): "
                               "run all_reduce_perf up to 8 GiB or more (-e)"}


def test_notes_follow_the_busbw_reason_whatever_its_verdict():
    note = "NCCL_ALGO=Tree kept"
    assert busbw(run((8 * GIB, 300.0)), {"topology": "h100-nvlink-8", "notes": [note]})["reason"].endswith("required; " + note)
    assert busbw(run((8 * GIB, 300.0)), {"notes": [note]})["reason"] == (
        "not checked: no busbw threshold (set topology or min_busbw_gbps); " + note)
    assert busbw(run((8 * GIB, 300.0)), {"min_busbw_gbps": 100, "notes": [note]})["reason"].endswith("(min_busbw_gbps); " + note)


def test_the_recorded_two_node_h200_run_passes_its_nics_curve_closest_at_512_mib():
    check = busbw(parse_all_reduce(fixture("v2.18.3_h200_two_nodes.txt")), {"topology": "ib-ndr-400", "nics": 8, "nodes": 2})
    assert (check["status"], check["size"], check["value"], check["threshold"]) == ("pass", 512 * MIB, 433.01, 269.6)


# --- the user's curves: one clear error naming the bad value -------------------------------------------------------------

SIZE_HELP = 'expected a whole number of bytes above 0 or one with a K, M, G or T suffix (powers of 1024) such as "64M" or "8G"'


@pytest.mark.parametrize("curves,message", [
    ("fast", "gate_curves must be a dict of topology -> [[size, GB/s], ...] (sizes rising), got 'fast'"),
    ([["64M", 100]], "gate_curves must be a dict of topology -> [[size, GB/s], ...] (sizes rising), got [['64M', 100]]"),
    ({"": [["64M", 100]]}, "gate_curves has the key '', expected a topology name (a non-empty string)"),
    ({1: [["64M", 100]]}, "gate_curves has the key 1, expected a topology name (a non-empty string)"),
    ({"x": []}, "gate_curves['x'] is [], expected a non-empty list of [size, GB/s] points such as [[\"64M\", 150], [\"8G\", 296]]"),
    ({"x": {"64M": 100}}, "gate_curves['x'] is {'64M': 100}, expected a non-empty list of [size, GB/s] points such as [[\"64M\", 150], [\"8G\", 296]]"),
    ({"x": ["64M"]}, "gate_curves['x'][0] is '64M', expected a [size, GB/s] pair such as [\"64M\", 150]"),
    ({"x": [["64M", 100, 1]]}, "gate_curves['x'][0] is ['64M', 100, 1], expected a [size, GB/s] pair such as [\"64M\", 150]"),
    ({"x": [["64X", 100]]}, "gate_curves['x'][0]: size '64X' is not valid, " + SIZE_HELP),
    ({"x": [["64M", 100], ["1.5G", 200]]}, "gate_curves['x'][1]: size '1.5G' is not valid, " + SIZE_HELP),
    ({"x": [[0, 100]]}, "gate_curves['x'][0]: size 0 is not valid, " + SIZE_HELP),
    ({"x": [[-8, 100]]}, "gate_curves['x'][0]: size -8 is not valid, " + SIZE_HELP),
    ({"x": [[True, 100]]}, "gate_curves['x'][0]: size True is not valid, " + SIZE_HELP),
    ({"x": [["64M", 0]]}, "gate_curves['x'][0]: GB/s 0 is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", 0.001]]}, "gate_curves['x'][0]: GB/s 0.001 is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", -5.5]]}, "gate_curves['x'][0]: GB/s -5.5 is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", "100"]]}, "gate_curves['x'][0]: GB/s '100' is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", False]]}, "gate_curves['x'][0]: GB/s False is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", float("inf")]]}, "gate_curves['x'][0]: GB/s inf is not valid, expected a number of at least 0.01"),
    ({"x": [["64M", float("nan")]]}, "gate_curves['x'][0]: GB/s nan is not valid, expected a number of at least 0.01"),
    ({"x": [["8G", 300], ["64M", 100]]}, "gate_curves['x']: sizes must rise from one point to the next, but point 1 (64 MiB) follows point 0 (8 GiB)"),
    ({"x": [["64M", 100], [67108864, 120]]},
     "gate_curves['x']: sizes must rise from one point to the next, but point 1 (64 MiB) follows point 0 (64 MiB)"),
])
def test_bad_gate_curves_exactly(curves, message):
    with pytest.raises(ValueError) as err:
        threshold_for({"gate_curves": curves})
    assert str(err.value) == message


@pytest.mark.parametrize("expect,message", [
    ({"topology": "h100-nvlink-8", "thresholds": {"h100-nvlink-8": 300}, "gate_curves": {"h100-nvlink-8": [["8G", 300]]}},
     "topology 'h100-nvlink-8' has both a threshold (thresholds) and a gate curve (gate_curves); give one of them"),
    ({"topology": "b200-nvlink-8", "gate_curves": {"gb200": [["8G", 600]]}},
     "unknown topology 'b200-nvlink-8'; valid topologies: a100-nvlink-8, a100-pcie, gb200, h100-nvlink-8, h100-pcie, "
     "h200-nvlink-8, ib-hdr-200, ib-ndr-400, ib-xdr-800, l40s-pcie, or a platform or a curve id of the catalogue, "
     "<platform>/node/<nvls|ring|pcie> or <platform>/rack/nvls, such as h100-nvswitch/node/nvls (platforms: a100-nvswitch, a100-pcie, "
     "b200-nvswitch, b300-nvswitch, gb200-nvl72, gb300-nvl72, h100-nvswitch, h100-pcie, h200-nvl, h200-nvswitch, l40s-pcie, rtx-pro-6000-pcie)"),
    ({"nodes": 0}, "nodes is 0, expected an integer of at least 1"),
    ({"notes": "x"}, "notes is 'x', expected a list of non-empty strings"),
    ({"notes": [""]}, "notes is [''], expected a list of non-empty strings"),
])
def test_bad_curve_expectations_exactly(expect, message):
    with pytest.raises(ValueError) as err:
        evaluate(run((8 * GIB, 300.0)), expect)
    assert str(err.value) == message


# --- _validation_nccl: Ring on two nodes, the node count, the gate of each series ----------------------------------------

RING_NOTE = ("NCCL_ALGO=%s from the run environment (validate_nccl_settings.env) kept on this 2-node run: its busbw may exceed what the NICs carry "
             "(only NCCL_ALGO=Ring measures the network on two nodes, NVIDIA/nccl-tests#196)")


@pytest.mark.parametrize("env,nodes,want_env,note", [
    ({}, 2, {"NCCL_ALGO": "Ring"}, None),
    (None, 2, {"NCCL_ALGO": "Ring"}, None),
    ({"NCCL_DEBUG": "INFO"}, 2, {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "Ring"}, None),
    ({"NCCL_ALGO": ""}, 2, {"NCCL_ALGO": "Ring"}, None),            # set empty: NCCL's own choice, so Ring is given
    ({"NCCL_ALGO": "Ring"}, 2, {"NCCL_ALGO": "Ring"}, None),
    ({"NCCL_ALGO": "RING"}, 2, {"NCCL_ALGO": "RING"}, None),        # NCCL reads the name in any case
    ({"NCCL_ALGO": "Tree"}, 2, {"NCCL_ALGO": "Tree"}, RING_NOTE % "Tree"),
    ({"NCCL_ALGO": "NVLSTree,Ring"}, 2, {"NCCL_ALGO": "NVLSTree,Ring"}, RING_NOTE % "NVLSTree,Ring"),
    ({}, 1, {}, None),
    ({}, 3, {}, None),                                              # three nodes and more: the env as given
    ({"NCCL_ALGO": "Tree"}, 8, {"NCCL_ALGO": "Tree"}, None),
])
def test_ring_env(env, nodes, want_env, note):
    before = dict(env or {})
    assert vn.ring_env(env, nodes) == (want_env, note)
    assert (env or {}) == before                                    # the plan's env is not changed


NODES = [{'name': 'n%d' % i, 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'} for i in range(3)]


def export(job):
    return [arg for arg in job['argv'] if arg.startswith('--export=')][0]


def test_two_node_fabric_and_pair_runs_get_ring_and_three_node_fabric_does_not():
    plan = {'binary': 'arp', 'nodes': NODES, 'fabric': True, 'pairwise': True, 'env': {'NCCL_DEBUG': 'INFO'}, 'fabric_topology': 'ib-ndr-400',
            'fabric_nics': 8}
    jobs = dict((job['name'], job) for job in vn.plan_jobs(plan))
    assert [(name, export(jobs[name]), jobs[name]['expect'].get('nodes')) for name in ('n0', 'fabric', 'n0+n1', 'n1+n2', 'n2+n0')] == [
        ('n0', '--export=ALL,NCCL_DEBUG=INFO', None),
        ('fabric', '--export=ALL,NCCL_DEBUG=INFO', 3),
        ('n0+n1', '--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO', 2),
        ('n1+n2', '--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO', 2),
        ('n2+n0', '--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO', 2),
    ]
    two = vn.plan_jobs(dict(plan, nodes=NODES[:2], pairwise=False))
    assert [(job['name'], export(job)) for job in two] == [
        ('n0', '--export=ALL,NCCL_DEBUG=INFO'), ('n1', '--export=ALL,NCCL_DEBUG=INFO'), ('fabric', '--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO')]
    assert 'notes' not in two[-1]['expect']


def test_a_users_nccl_algo_is_kept_on_two_nodes_and_the_busbw_check_says_so():
    plan = {'binary': 'arp', 'nodes': NODES[:2], 'fabric': True, 'env': {'NCCL_ALGO': 'Tree'}, 'fabric_topology': 'ib-ndr-400', 'fabric_nics': 8}
    fabric = vn.plan_jobs(plan)[-1]
    assert export(fabric) == '--export=ALL,NCCL_ALGO=Tree'
    assert fabric['expect']['notes'] == [RING_NOTE % 'Tree']
    records, dummy = vn.evaluate_run('fabric', {'rc': 0, 'stdout': fixture('v2.18.3_h200_two_nodes.txt')}, fabric['hosts'], fabric['expect'])
    check = [r for r in records if r['check'] == 'busbw'][0]
    assert check['status'] == 'pass' and check['reason'].endswith('required; ' + RING_NOTE % 'Tree')
    # three nodes: no note, the env as given
    three = vn.plan_jobs(dict(plan, nodes=NODES))[-1]
    assert export(three) == '--export=ALL,NCCL_ALGO=Tree' and 'notes' not in three['expect']


def test_plan_gate_curves_reach_every_run_and_a_bad_one_stops_the_plan():
    curves = {'h100-nvlink-8': [['64M', 100], ['8G', 300]], 'ib-ndr-400': [['64M', 20], ['8G', 45]]}
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': NODES, 'fabric': True, 'fabric_topology': 'ib-ndr-400', 'fabric_nics': 8, 'gate_curves': curves})
    assert [job['expect']['gate_curves'] for job in jobs] == [curves] * 4
    assert gate_curve(jobs[0]['expect']) == [[64 * MIB, 100.0], [8 * GIB, 300.0]]
    assert gate_curve(jobs[-1]['expect']) == [[96 * MIB, 160.0], [12 * GIB, 360.0]]    # x 8 NICs, sizes x 3/2 for 3 nodes
    with pytest.raises(ValueError) as err:
        vn.plan_jobs({'binary': 'arp', 'nodes': NODES, 'gate_curves': {'h100-nvlink-8': [['8G', 300], ['1G', 100]]}})
    assert str(err.value) == "gate_curves['h100-nvlink-8']: sizes must rise from one point to the next, but point 1 (1 GiB) follows point 0 (8 GiB)"
    assert 'my-gpus' in vn.known_topologies(gate_curves={'my-gpus': [['8G', 1]]})


@pytest.mark.parametrize("expect,gate", [
    (vn.expect_for(topology='h100-nvlink-8'), [[size, value] for size, value in resolve('h100-nvlink-8')['points']]),
    (vn.expect_for(min_busbw_gbps=400), [[GIB, 400.0]]),
    ({}, []),
])
def test_every_series_item_carries_the_gate_it_was_judged_by(expect, gate):
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-01'], expect)
    assert [sorted(item) for item in series] == [['gate', 'label', 'points']]
    assert series[0]['gate'] == gate


SITE_CURVE = [["1G", 20], ["8G", 40]]


@pytest.mark.parametrize("expect,info,curve,threshold", [
    ({"topology": "ib-ndr-400", "thresholds": {"ib-ndr-400": 40}, "nics": 4},
     {"id": "ib-ndr-400", "source": "the site's flat threshold thresholds['ib-ndr-400'] (validate_nccl_settings.thresholds): 40.0 GB/s x 4 NIC(s), "
                                    "the mean busbw from 1 GiB up"},
     [[GIB, 160.0]], (160.0, "ib-ndr-400 x 4 NIC(s)")),
    ({"topology": "mine", "thresholds": {"mine": 40}, "large_size_bytes": 2 * GIB},
     {"id": "mine", "source": "the site's flat threshold thresholds['mine'] (validate_nccl_settings.thresholds): 40.0 GB/s, the mean busbw from 1 GiB up"},
     [[2 * GIB, 40.0]], (40.0, "mine")),
    ({"topology": "ib-ndr-400", "gate_curves": {"ib-ndr-400": SITE_CURVE}, "nics": 2, "nodes": 8},
     {"id": "ib-ndr-400", "source": "the site's own gate curve gate_curves['ib-ndr-400'] (validate_nccl_settings.gate_curves), per NIC x 2, "
                                    "sizes x 4 for 8 nodes"},
     [[4 * GIB, 40.0], [32 * GIB, 80.0]], (80.0, "ib-ndr-400 x 2 NIC(s)")),
    ({"topology": "ib-ndr-400", "gate_curves": {"ib-ndr-400": SITE_CURVE}, "nics": 2, "nodes": 2},
     {"id": "ib-ndr-400", "source": "the site's own gate curve gate_curves['ib-ndr-400'] (validate_nccl_settings.gate_curves), per NIC x 2"},
     [[GIB, 40.0], [8 * GIB, 80.0]], (80.0, "ib-ndr-400 x 2 NIC(s)")),
    # a site curve of another key is not per NIC: neither multiplied nor stretched
    ({"topology": "mine", "gate_curves": {"mine": SITE_CURVE}, "nics": 2, "nodes": 8},
     {"id": "mine", "source": "the site's own gate curve gate_curves['mine'] (validate_nccl_settings.gate_curves)"},
     [[GIB, 20.0], [8 * GIB, 40.0]], (40.0, "mine")),
    # without a topology, a site entry under the catalogue's curve id replaces that curve
    ({"platform": "h100-nvswitch", "gpus": 8, "thresholds": {"h100-nvswitch/node/nvls": 300}},
     {"id": "h100-nvswitch/node/nvls", "source": "the site's flat threshold thresholds['h100-nvswitch/node/nvls'] (validate_nccl_settings.thresholds): "
                                                 "300.0 GB/s, the mean busbw from 1 GiB up"},
     [[GIB, 300.0]], (300.0, "h100-nvswitch/node/nvls")),
    ({"platform": "h100-nvswitch", "gpus": 8, "gate_curves": {"h100-nvswitch/node/nvls": [[1024, 1]]}},
     {"id": "h100-nvswitch/node/nvls", "source": "the site's own gate curve gate_curves['h100-nvswitch/node/nvls'] (validate_nccl_settings.gate_curves)"},
     [[1024, 1.0]], (1.0, "h100-nvswitch/node/nvls")),
    ({"min_busbw_gbps": 12.5, "topology": "mine", "thresholds": {"mine": 40}},
     {"id": "min_busbw_gbps", "source": "the site's flat threshold min_busbw_gbps (validate_nccl_node.min_busbw_gbps or "
                                        "validate_nccl_multinode.min_busbw_gbps): 12.5 GB/s, the mean busbw from 1 GiB up"},
     [[GIB, 12.5]], (12.5, "min_busbw_gbps")),
    ({"platform": "h100-nvswitch", "gpus": 4}, None, [], (None, None)),
    ({}, None, [], (None, None)),
])
def test_the_gate_of_a_site_setting_in_full(expect, info, curve, threshold):
    assert (gate_info(expect), gate_curve(expect), threshold_for(expect)) == (info, curve, threshold)


def test_a_catalogue_curve_stretched_for_more_nodes_is_named_so():
    expect = {"topology": "ib-ndr-400", "nics": 8, "nodes": 8, "platform": "h100-nvswitch", "gpus": 8}
    assert gate_info(expect)["id"] == "h100-nvswitch/ib-ndr-400x8/ring"
    reason = [c for c in evaluate(parse_all_reduce(HEADER + FOOTER), expect) if c["check"] == "busbw"][0]["reason"]
    assert reason == ("no result rows to measure busbw against the h100-nvswitch/ib-ndr-400x8/ring gate curve, sizes x 4 for 8 nodes "
                      "(149.2 GB/s at 256 MiB to 296.0 GB/s at 32 GiB)")


@pytest.mark.parametrize("expect,check", [
    ({"min_busbw_gbps": 10}, {"check": "busbw", "status": "fail", "threshold": 10.0,
                              "reason": "no result rows to measure busbw against 10.0 GB/s (min_busbw_gbps)"}),
    # a site threshold is kept to 0.1 GB/s
    ({"topology": "mine", "thresholds": {"mine": 40.56}},
     {"check": "busbw", "status": "fail", "threshold": 40.6, "reason": "no result rows to measure busbw against 40.6 GB/s (mine)"}),
    ({"topology": "ib-ndr-400", "gate_curves": {"ib-ndr-400": SITE_CURVE}, "nics": 2, "nodes": 8},
     {"check": "busbw", "status": "fail", "threshold": 80.0,
      "reason": "no result rows to measure busbw against the ib-ndr-400 x 2 NIC(s) gate curve, sizes x 4 for 8 nodes (40.0 GB/s at 4 GiB to "
                "80.0 GB/s at 32 GiB)"}),
])
def test_a_run_without_rows_fails_its_busbw_gate_naming_the_gate(expect, check):
    checks = evaluate(parse_all_reduce(HEADER + FOOTER), expect)
    assert [c for c in checks if c["check"] == "busbw"] == [check]
