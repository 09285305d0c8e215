# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Edges of the validation report's input (_validation_report): both sides of each limit of the records, series and times
it takes, and a node the closed loop drained, which node_check marks held='loop'."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr


def rec(node, check, status, reason="", stage="nccl", **extra):
    item = {"stage": stage, "node": node, "check": check, "status": status, "reason": reason}
    item.update(extra)
    return item


def clean(record):
    return vr.build_report([record])["stages"][0]["nodes"][0]["checks"][0]


# ------------------------------------------------------------------ held


def test_a_node_the_closed_loop_drained_is_reported_and_not_drained():
    """node_check marks the node_state of a node the closed loop drained held='loop'; the report takes it (it refused it,
    failing the whole validation report) and drain_reasons leaves the node to the loop."""
    nodes = vc.parse_scontrol_nodes("NodeName=gpu-02 State=IDLE+DRAIN Reason=gpuloop:service:xid-79: 3 reboots in 86400s\n")
    held = vc.node_state_record("node", "gpu-02", nodes)
    assert held["held"] == "loop"
    records = [held, rec("gpu-02", "gres_conf", "fail", "differs", stage="node")]
    report = vr.build_report(records)
    assert report["stages"][0]["nodes"][0]["checks"][0] == {
        "stage": "node", "node": "gpu-02", "check": "node_state", "status": "fail", "held": "loop",
        "reason": 'node is IDLE+DRAIN (reason: "gpuloop:service:xid-79: 3 reboots in 86400s")'}
    assert (report["status"], report["failed_nodes"]) == ("fail", ["gpu-02"])
    assert vc.drain_reasons(records, ["gpu-02"]) == {}


@pytest.mark.parametrize("held", ["admin", "loop"])
def test_held_is_kept(held):
    assert clean(rec("n", "node_state", "fail", held=held))["held"] == held


@pytest.mark.parametrize("held", ["slurm", "ours", "", "Admin", True])
def test_held_other_than_admin_or_loop_is_refused(held):
    with pytest.raises(ValueError) as err:
        vr.build_report([rec("n", "node_state", "fail", held=held)])
    assert str(err.value) == "result 0: held is %r, expected admin or loop (a node_state an admin or the closed loop set)" % (held,)


# ------------------------------------------------------------------ records


@pytest.mark.parametrize("record, message", [
    (rec("n", "c", "pass", reason=0), "result 0: reason is 0, expected a string"),
    (rec("n", "c", "pass", reason=[]), "result 0: reason is [], expected a string"),
    (rec("n", "c", "fail", hosts=[]), "result 0: hosts is [], expected a non-empty list of host names"),
    (rec("n", "c", "pass", curve={"id": "", "source": "x"}),
     "result 0: curve is {'id': '', 'source': 'x'}, expected {'id': str, 'source': str} (the gate curve that judged the run)"),
    (rec("n", "c", "pass", curve={"id": "x", "source": ""}),
     "result 0: curve is {'id': 'x', 'source': ''}, expected {'id': str, 'source': str} (the gate curve that judged the run)"),
    (rec("n", "c", "pass", versions={5: "2.21"}), "result 0: versions has unknown key(s) 5; valid keys: slurm, driver, cuda, nccl, nccl_tests"),
    (rec("n", "c", "pass", versions={"zz": "1", 5: "2", "aa": "3"}),
     "result 0: versions has unknown key(s) 5, aa, zz; valid keys: slurm, driver, cuda, nccl, nccl_tests"),
])
def test_bad_records_whole_messages(record, message):
    with pytest.raises(ValueError) as err:
        vr.build_report([record])
    assert str(err.value) == message


def test_an_empty_command_is_left_out():
    assert clean(rec("n", "c", "fail", command="")) == rec("n", "c", "fail")
    assert clean(rec("n", "c", "fail", command=None)) == rec("n", "c", "fail")
    assert clean(rec("n", "c", "fail", command="srun x")) == rec("n", "c", "fail", command="srun x")


def test_check_records_add_hosts_only_when_given():
    checks = [{"check": "busbw", "status": "pass", "reason": "ok"}]
    assert vr.check_records("nccl", "gpu-01", checks) == [rec("gpu-01", "busbw", "pass", "ok")]
    assert vr.check_records("nccl", "gpu-01", checks, []) == [rec("gpu-01", "busbw", "pass", "ok")]
    assert vr.check_records("nccl", "fabric", checks, ("a", "b")) == [rec("fabric", "busbw", "pass", "ok", hosts=["a", "b"])]
    assert checks == [{"check": "busbw", "status": "pass", "reason": "ok"}]  # (the checks given are not changed)


# ------------------------------------------------------------------ series


@pytest.mark.parametrize("series, message", [
    ([{"label": "", "points": [[1, 1]]}], "series 0 is {'label': '', 'points': [[1, 1]]}, expected {'label': str, 'points': [[size, busbw], ...]}"),
    ([{"label": "r", "points": [[1, 1]], "gate": ""}], "series 'r': gate is '', expected a list of [size_bytes, gbps] pairs"),
    ([{"label": "r", "points": [[1, 1]], "gate": {}}], "series 'r': gate is {}, expected a list of [size_bytes, gbps] pairs"),
])
def test_bad_series_whole_messages(series, message):
    with pytest.raises(ValueError) as err:
        vr.build_report([], series=series)
    assert str(err.value) == message


def test_an_empty_gate_list_is_no_gate():
    assert vr.build_report([], series=[{"label": "r", "points": [[2, 1]], "gate": []}])["series"] == [{"label": "r", "points": [[2, 1]]}]


# ------------------------------------------------------------------ times and versions


@pytest.mark.parametrize("text, seconds", [
    ("2025-01-01T00:00:00Z", 1735689600),
    ("2025-12-31T23:59:59Z", 1767225599),
    ("2025-06-30T23:59:60Z", 1751328000),   # a leap second is a time
])
def test_parse_time_at_the_limits(text, seconds):
    assert vr.parse_time(text) == seconds


@pytest.mark.parametrize("text", ["2025-00-10T00:00:00Z", "2025-01-00T00:00:00Z", "2025-01-31T08:60:00Z", "2025-01-31T08:00:61Z"])
def test_parse_time_refuses_out_of_range_fields(text):
    assert vr.parse_time(text) is None


def test_equal_times_are_a_duration_of_zero():
    provenance = {"generated": "2025-01-31T08:00:00Z", "started": "2025-01-31T08:00:00Z"}
    assert vr.build_provenance(provenance)["duration_s"] == 0


@pytest.mark.parametrize("version, text", [("  ", None), ("", None), (None, None), (" 1.2.3 ", "1.2.3"), (7, "7"), (2.5, "2.5")])
def test_collection_version_text(version, text):
    assert vr.build_provenance({"collection_version": version})["collection_version"] == text


def test_build_provenance_skips_what_is_not_a_record():
    assert vr.build_provenance({}, ["x", None, rec("n1", "busbw", "pass", versions={"nccl": "2.21.5"})]) == {
        "generated": None, "started": None, "duration_s": None, "collection_version": None,
        "nodes": [{"node": "n1", "slurm": None, "driver": None, "cuda": None, "nccl": "2.21.5", "nccl_tests": None}]}
    assert vr.build_provenance() == {"generated": None, "started": None, "duration_s": None, "collection_version": None, "nodes": []}
