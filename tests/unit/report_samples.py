# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation reports as a run of the role gives them, built with the pure functions of ``_validation_report``:
``sample_report(nodes, failing)`` - every node's node checks and its own NCCL run (one node slow, with the command
that reruns it), the runs' busbw curves with their gate, the versions per node (one node on another driver) and the
times. The unit tests and the browser test (tests/browser) read the same reports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_report as vr

SIZES = [2 ** k for k in range(3, 34)]                  # all_reduce_perf -b 8 -e 8G -f 2
HALF = 2 ** 26                                          # busbw reaches half its top at 64 MiB
GATE = [[2 ** 26, 150.0], [2 ** 30, 280.0], [2 ** 33, 296.0]]
NODE_CHECKS = ("nvml", "gpu_count", "gres_conf", "munge", "slurmd")
SVG_NS = "{http://www.w3.org/2000/svg}"


def rec(node, check, status, reason="", stage="nccl", **extra):
    """A check record."""
    item = {"stage": stage, "node": node, "check": check, "status": status, "reason": reason}
    item.update(extra)
    return item


def name_of(index):
    return "gpu-%03d" % index


def curve(top):
    """busbw by size of a run whose busbw tops out at ``top`` GB/s."""
    return [[size, round(top * size / (size + HALF), 3)] for size in SIZES]


def many_series(count, slow=()):
    """One curve per node ``gpu-000`` ...; the nodes in ``slow`` top out at 120 GB/s, the others at 300 to 306 (300 + i % 7)."""
    return [{"label": name_of(i), "points": curve(120.0 if name_of(i) in slow else 300.0 + i % 7)} for i in range(count)]


def sample_report(nodes=2, failing="gpu-001", odd_driver=None):
    """The report of ``nodes`` GPU nodes of which ``failing`` is slow in its own NCCL run; ``odd_driver``: a node on another
    driver than the others."""
    records, versions = [], []
    for i in range(nodes):
        name = name_of(i)
        bad = name == failing
        records += [rec(name, check, "pass", "ok", stage="node") for check in NODE_CHECKS]
        record = rec(name, "busbw", "fail" if bad else "pass",
                     "mean busbw 117.6 GB/s at 1 GiB and up is below the gate (296.0 GB/s)" if bad else "mean busbw 301.0 GB/s",
                     hosts=[name], value=117.6 if bad else 301.0, threshold=296.0, versions={"nccl": "2.21.5", "nccl_tests": "2.13.9"})
        if bad:
            record["command"] = ("srun --nodes=1 --nodelist=%s --exclusive --gres=gpu:8 --time=15 --export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO "
                                 "--label --ntasks-per-node=1 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 8" % name)
        records.append(record)
        versions.append({"node": name, "slurm": "22.05.8", "driver": "535.104.05" if name == odd_driver else "550.54.15", "cuda": "12.4"})
    provenance = {"generated": "2025-01-31T09:00:00Z", "started": "2025-01-31T08:00:00Z", "collection_version": "0.1.0", "nodes": versions}
    series = [dict(run, gate=GATE) for run in many_series(nodes, slow=(failing,))]
    return vr.build_report(records, series=series, threshold_gbps=296.0, provenance=provenance)
