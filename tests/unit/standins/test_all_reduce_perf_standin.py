# -*- coding: utf-8 -*-
"""The all_reduce_perf STAND-IN (tests/standins/all_reduce_perf-standin), run as a subprocess as srun runs it.

It prints recorded nccl-tests output cut to its arguments (-b/-e/-f/-i/-g/-t, parsed as nccl-tests parses
them), chooses the recording by the node's simulated GPU model (the NVML simulator's state file), fails
on demand and slows the runs that include a slow node, link or leaf uplink. Its output is read back with the
collection's own parser and gates.
"""

from __future__ import absolute_import, division, print_function

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import NcclParseError, evaluate, parse_all_reduce, parse_run

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
STANDIN = os.path.join(ROOT, "tests", "standins", "all_reduce_perf-standin")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "nccl")
GIB = 1024 ** 3
MIB = 1024 ** 2
HOST = socket.gethostname().split(".")[0]


def _state(tmp_path, *models):
    """An NVML simulator state file whose GPUs are ``models`` (``(model key, mig_current)``)."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"gpus": [{"index": i, "model": model, "mig_current": mig} for i, (model, mig) in enumerate(models)]}))
    return str(path)


def run(tmp_path, argv, models=(("a100-sxm4-40gb", 0),), standin=STANDIN, **env):
    """(rc, stdout, stderr) of the stand-in with a clean environment: no Slurm/MPI variables unless given (None: unset)."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVMLSIM_STATE": _state(tmp_path, *models) if models else str(tmp_path / "none.json"),
            "ALL_REDUCE_PERF_STANDIN_FAIL_FILE": str(tmp_path / "no-FAIL"), "ALL_REDUCE_PERF_STANDIN_SLOW_FILE": str(tmp_path / "no-SLOW")}
    full.update(dict((key, str(value)) for key, value in env.items() if value is not None))
    for key in [key for key, value in env.items() if value is None]:
        full.pop(key, None)
    proc = subprocess.run([sys.executable, standin] + list(argv), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def sizes_of(result):
    return [row["size"] for row in result["rows"]]


def checks(text, expect=None):
    return dict((item["check"], item) for item in evaluate(parse_all_reduce(text), expect))


# --- the sizes nccl-tests would run ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,sizes,params", [
    (["-b", "8", "-e", "8G", "-f", "2"], [8 << i for i in range(31)], {"minBytes": 8, "maxBytes": 8 * GIB, "step": 2, "step_kind": "factor"}),
    (["-b", "1G", "-e", "4G", "-f", "2"], [GIB, 2 * GIB, 4 * GIB], {"minBytes": GIB, "maxBytes": 4 * GIB, "step": 2}),
    (["--minbytes", "128M", "--maxbytes", "1G", "--stepfactor", "4"], [128 * MIB, 512 * MIB], {"minBytes": 128 * MIB, "step": 4}),
    (["--minbytes=1g", "--maxbytes=2g", "-f2"], [GIB, 2 * GIB], {"minBytes": GIB, "maxBytes": 2 * GIB}),
    # stepbytes (-i) without a factor: 1024, 2048, 3072, 4096; the recording has no 3072 row
    (["-b", "1K", "-e", "4K", "-i", "1024"], [1024, 2048, 4096], {"step": 1024, "step_kind": "bytes"}),
    (["-b", "1K", "-e", "4K", "-i", "0x400"], [1024, 2048, 4096], {"step": 1024, "step_kind": "bytes"}),
    # each size is rounded down to whole floats, as setupArgs() does: 9 -> 8, 18 -> 16, 36 -> 36 (not recorded)
    (["-b", "9", "-e", "40", "-f", "2"], [8, 16], {"minBytes": 9, "maxBytes": 40}),
    (["-b", "8", "-e", "8", "-f", "2"], [8], {"minBytes": 8, "maxBytes": 8}),
    (["-b", "0.5K", "-e", "1.5k", "-f", "2"], [512, 1024], {"minBytes": 512, "maxBytes": 1536}),
    # nccl-tests' defaults: 32 MiB only
    ([], [32 * MIB], {"minBytes": 32 * MIB, "maxBytes": 32 * MIB, "step": MIB, "step_kind": "bytes"}),
])
def test_prints_only_the_sizes_nccl_tests_would_run(tmp_path, argv, sizes, params):
    rc, out, err = run(tmp_path, argv + ["-g", "8"])
    assert rc == 0, err
    result = parse_all_reduce(out)
    assert sizes_of(result) == sizes
    for key, value in params.items():
        assert result["params"][key] == value, key
    assert result["truncated"] is False
    # the footer's average is that of the rows printed (nccl-tests: the mean of every busbw it printed)
    busbw = [row[place]["busbw"] for row in result["rows"] for place in ("out_of_place", "in_place")]
    assert result["avg_busbw"] == pytest.approx(sum(busbw) / len(busbw), rel=1e-5)


def test_arguments_that_cover_the_recording_print_it_unchanged(tmp_path):
    rc, out, err = run(tmp_path, ["-b", "128M", "-e", "4G", "-f", "2", "-g", "8"], models=(("h100-sxm5-80gb", 0),))
    with open(os.path.join(FIXTURES, "v2.13-era_h100_single_node.txt")) as handle:
        recorded = handle.read()
    assert rc == 0 and "printing the recorded output v2.13-era_h100_single_node.txt" in err
    assert out == recorded.replace(" on    node005 ", " on %10s " % HOST)


@pytest.mark.parametrize("argv,env,nthread,ngpus,ranks,hosts", [
    (["-g", "7"], {}, 1, 7, 7, [HOST]),
    (["-g", "8", "-t", "2"], {}, 2, 8, 16, [HOST]),
    (["--ngpus", "4"], {"SLURM_NTASKS": "2"}, 1, 4, 8, [HOST]),
    (["-g", "1"], {"SLURM_NTASKS": "14", "SLURM_NNODES": "2"}, 1, 1, 14,
     ["nvidiatools-dell-h200-2-workload", "nvidiatools-dell-h200-3-workload"]),
])
def test_rank_lines_follow_ngpus_nthreads_and_tasks(tmp_path, argv, env, nthread, ngpus, ranks, hosts):
    rc, out, err = run(tmp_path, argv + ["-b", "1G", "-e", "1G"], **env)
    assert rc == 0, err
    result = parse_all_reduce(out)
    assert (result["params"]["nThread"], result["params"]["nGpus"]) == (nthread, ngpus)
    assert [rank["rank"] for rank in result["ranks"]] == list(range(ranks))
    assert result["hosts"] == hosts


# --- the recording by the node's simulated GPU model ---------------------------------------------------------------------

@pytest.mark.parametrize("models,recording,gpu", [
    ((("a100-sxm4-40gb", 0),) * 8, "rendered_v2.13-era_a100_single_node.txt", "NVIDIA A100-SXM4-40GB"),
    ((("h100-sxm5-80gb", 0),) * 8, "v2.13-era_h100_single_node.txt", "NVIDIA H100 80GB HBM3"),
    # GPU 0 in MIG mode: the model of the whole GPUs counts
    ((("a100-sxm4-40gb", 1), ("h100-sxm5-80gb", 0)), "v2.13-era_h100_single_node.txt", "NVIDIA H100 80GB HBM3"),
    ((("a100-pcie-80gb", None),), "rendered_v2.13-era_a100_single_node.txt", "NVIDIA A100-SXM4-40GB"),
])
def test_recording_follows_the_simulated_gpu_model(tmp_path, models, recording, gpu):
    rc, out, err = run(tmp_path, ["-b", "1G", "-e", "4G", "-f", "2", "-g", "8"], models=models)
    assert rc == 0, err
    assert "printing the recorded output %s" % recording in err
    result = parse_all_reduce(out)
    assert set(rank["name"] for rank in result["ranks"]) == {gpu}


def test_each_model_passes_its_own_topology_gate(tmp_path):
    for model, topology in (("a100-sxm4-40gb", "a100-nvlink-8"), ("h100-sxm5-80gb", "h100-nvlink-8")):
        rc, out, dummy = run(tmp_path, ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"], models=((model, 0),) * 8)
        got = checks(out, {"topology": topology})
        assert rc == 0 and all(got[name]["status"] == "pass" for name in ("complete", "wrong", "out_of_bounds", "busbw")), got
    # the A100 recording does not reach the H100 figure: the recordings differ by model
    rc, out, dummy = run(tmp_path, ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"])
    assert rc == 0 and checks(out, {"topology": "h100-nvlink-8"})["busbw"]["status"] == "fail"


@pytest.mark.parametrize("models,message", [
    ((("l40s", None),), "no recording for the simulated GPU model 'l40s'"),
    ((), "no simulated GPU to choose a recording by: "),
])
def test_no_recording_for_the_node_is_a_clear_error(tmp_path, models, message):
    rc, out, err = run(tmp_path, ["-g", "4"], models=models)
    assert (rc, out) == (2, "")
    assert message in err and "STAND-IN" in err


def test_output_variable_still_chooses_the_recording(tmp_path):
    """What molecule's test_validate uses for the wrong-results gate: unchanged by the size cut of -b 8 -e 8G."""
    rc, out, dummy = run(tmp_path, ["-b", "8", "-e", "8G", "-f", "2", "-g", "7"], ALL_REDUCE_PERF_STANDIN_OUTPUT="v2.17.8_gh200_two_nodes_wrong.txt")
    assert rc == 1
    got = checks(out, {"min_busbw_gbps": 1000})
    assert got["wrong"]["reason"] == "#wrong > 0 in 2 of 50 results: 1048576 B float out-of-place: 96, 1048576 B float in-place: 32"
    assert got["out_of_bounds"]["reason"] == "Out of bounds values: 4 FAILED"
    assert "is below 1000.0 GB/s (min_busbw_gbps)" in got["busbw"]["reason"]


def test_only_rank_0_prints(tmp_path):
    rc, out, err = run(tmp_path, ["-g", "1"], SLURM_PROCID="3", SLURM_NTASKS="8")
    assert (rc, out, err) == (0, "", "")


# --- arguments nccl-tests refuses ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,rc,stdout,stderr", [
    (["-q", "1"], 0, "invalid option '?'\nUSAGE: all_reduce_perf", "all_reduce_perf: invalid option -- 'q'"),
    (["-b"], 0, "invalid option '?'\nUSAGE: all_reduce_perf", "all_reduce_perf: option requires an argument -- 'b'"),
    # an unambiguous prefix of a long option is that option (getopt_long), named in full in the message
    (["--minbyte"], 0, "invalid option '?'\nUSAGE: all_reduce_perf", "all_reduce_perf: option '--minbytes' requires an argument"),
    (["--nope", "1"], 0, "invalid option '?'\nUSAGE: all_reduce_perf", "all_reduce_perf: unrecognized option '--nope'"),
    (["--help=1"], 0, "invalid option '?'\nUSAGE: all_reduce_perf", "all_reduce_perf: option '--help' doesn't allow an argument"),
    (["-h"], 0, "USAGE: all_reduce_perf", ""),
    (["-b", "8X"], 255, "", "invalid size specified for 'minbytes'"),
    (["-b", "big"], 255, "", "invalid size specified for 'minbytes'"),
    (["-e", "-5"], 255, "", "invalid size specified for 'maxbytes'"),
    (["--maxbytes", "8T"], 255, "", "invalid size specified for 'maxbytes'"),
    (["-b", "8G", "-e", "8M"], 255, "", "invalid sizes for 'minbytes' and 'maxbytes': 8589934592 > 8388608"),
    (["-b", "0", "-e", "8", "-f", "2"], 2, "", "minbytes 0 with a step factor never grows: nccl-tests would loop forever"),
    (["-b", "8", "-e", "16", "-i", "0"], 2, "", "stepbytes 0 never reaches maxbytes"),
    (["-g", "0"], 2, "", "nThread 1 x nGpus 0 runs on no GPU"),
    (["-g", "x"], 2, "", "nThread 1 x nGpus 0 runs on no GPU"),
])
def test_bad_arguments_are_refused_like_nccl_tests(tmp_path, argv, rc, stdout, stderr):
    got_rc, out, err = run(tmp_path, argv)
    assert got_rc == rc
    assert out.startswith(stdout) and (stdout or out == "")
    assert stderr in err
    if stdout.startswith("invalid") or stdout.startswith("USAGE"):
        assert "invalid option" not in out or stdout.startswith("invalid")
        with pytest.raises(NcclParseError):
            parse_all_reduce(out)


# --- a failing run on demand -----------------------------------------------------------------------------------------------

ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"]


@pytest.mark.parametrize("mode,rc,failing", [
    (None, 0, []),
    ("wrong", 1, ["wrong", "out_of_bounds"]),
    ("busbw", 0, ["busbw"]),
    # half of the rows, the largest 64 KiB: the busbw of the largest rows is low too
    ("abort", 1, ["complete", "test_errors", "busbw"]),
])
@pytest.mark.parametrize("how", ["env", "file"])
def test_failure_on_demand(tmp_path, mode, rc, failing, how):
    env = {}
    if mode and how == "env":
        env["ALL_REDUCE_PERF_STANDIN_FAIL"] = mode
    elif mode:
        marker = tmp_path / "FAIL"
        marker.write_text(mode + "\n")
        env["ALL_REDUCE_PERF_STANDIN_FAIL_FILE"] = str(marker)
    got_rc, out, err = run(tmp_path, ARGS, **env)
    assert got_rc == rc, err
    got = checks(out, {"topology": "a100-nvlink-8"})
    assert sorted(name for name, item in got.items() if item["status"] == "fail") == sorted(failing), got
    if mode:
        assert "failing on purpose: %s" % mode in err
    if mode == "wrong":
        assert got["wrong"]["reason"] == "#wrong > 0 in 2 of 62 results: 8589934592 B float out-of-place: 96, 8589934592 B float in-place: 96"
        assert got["out_of_bounds"]["reason"] == "Out of bounds values: 2 FAILED"
    if mode == "busbw":
        # the a100-nvswitch/node/ring gate curve names its worst size (before gate curves: the mean of the rows >= 1 GiB, 22.8 GB/s, against 184.0)
        assert ("at 8 GiB 22.9 GB/s < 184.0 GB/s required, 12.4 % of it (a100-nvswitch/node/ring gate curve); below the curve at 8 of the 8 sizes gated"
                in got["busbw"]["reason"])
    if mode == "abort":
        result = parse_all_reduce(out)
        assert len(result["rows"]) == 15 and "Test NCCL failure" in got["test_errors"]["reason"]


def test_failure_on_demand_of_the_old_error_column(tmp_path):
    rc, out, dummy = run(tmp_path, ARGS, ALL_REDUCE_PERF_STANDIN_OUTPUT="rendered_v2.0-era_a100_error_column.txt", ALL_REDUCE_PERF_STANDIN_FAIL="wrong")
    assert rc == 1
    reason = checks(out)["wrong"]["reason"]
    assert reason.startswith("error above nccl-tests' tolerance (DeltaMaxValue(type) x (ranks - 1)) in 2 of 56 results: 1073741824 B float out-of-place: 4e-01")


def test_an_empty_marker_file_means_wrong_and_a_bad_mode_is_refused(tmp_path):
    marker = tmp_path / "FAIL"
    marker.write_text("")
    rc, out, dummy = run(tmp_path, ARGS, ALL_REDUCE_PERF_STANDIN_FAIL_FILE=str(marker))
    assert rc == 1 and checks(out)["wrong"]["status"] == "fail"
    rc, out, err = run(tmp_path, ARGS, ALL_REDUCE_PERF_STANDIN_FAIL="slow")
    assert (rc, out) == (2, "")
    assert "failure mode 'slow' is not one of wrong, busbw, abort" in err


# --- a slow node, link or leaf uplink on demand ------------------------------------------------------------------------------

TWO = ["-b", "1K", "-e", "16G", "-f", "2", "-g", "8"]


def slow_run(tmp_path, spec, nodelist=None, nnodes=None, how="env", argv=tuple(TWO), **env):
    """The stand-in as one srun task of a job on ``nodelist`` (SLURM_NNODES: its node count unless given), slowed by ``spec``."""
    if nodelist is not None:
        env.setdefault("SLURM_JOB_NODELIST", nodelist)
        env.setdefault("SLURM_NNODES", nnodes if nnodes is not None else len(_standin().expand_hostlist(nodelist)))
        env.setdefault("SLURM_PROCID", 0)
    if spec is not None and how == "env":
        env["ALL_REDUCE_PERF_STANDIN_SLOW"] = spec
    elif spec is not None:
        marker = tmp_path / "SLOW"
        marker.write_text(spec)
        env["ALL_REDUCE_PERF_STANDIN_SLOW_FILE"] = str(marker)
    return run(tmp_path, argv, **env)


def assert_slowed(tmp_path, spec, nodelist, nnodes, factor, how="env", **env):
    """The run is the unslowed one with every row slowed by ``factor`` (None: unchanged), read back with the parser."""
    rc, out, err = slow_run(tmp_path, spec, nodelist, nnodes, how, **env)
    base_rc, base, dummy = slow_run(tmp_path, None, nodelist, nnodes, **env)
    assert (rc, base_rc) == (0, 0), err
    if factor is None:
        assert out == base
        assert "no slowness rule of " in err and "matches this run's nodes" in err and "slowed" not in err
        return err
    assert "slowed on purpose to %g %% of the recorded bandwidth" % (factor * 100) in err
    got, want = parse_run(out), parse_run(base)
    assert len(got["rows"]) == len(want["rows"]) > 10 and got["truncated"] is False
    for row, recorded in zip(got["rows"], want["rows"]):
        assert row["size"] == recorded["size"]
        for place in ("out_of_place", "in_place"):
            now, then = row[place], recorded[place]
            assert now["busbw"] == pytest.approx(then["busbw"] * factor, abs=0.0051)
            assert now["algbw"] == pytest.approx(then["algbw"] * factor, abs=0.0051)
            assert now["time"] == pytest.approx(then["time"] / factor, rel=2e-3, abs=0.006)
            assert now["wrong"] == then["wrong"]
    busbw = [row[place]["busbw"] for row in got["rows"] for place in ("out_of_place", "in_place")]
    assert got["avg_busbw"] == pytest.approx(sum(busbw) / len(busbw), rel=1e-5)
    assert got["avg_busbw"] == pytest.approx(want["avg_busbw"] * factor, rel=1e-3)
    assert got["out_of_bounds"] == want["out_of_bounds"]
    return err


@pytest.mark.parametrize("spec,nodelist,nnodes,env,factor", [
    ("node gpu-02 0.6", "gpu-[01-02]", None, {}, 0.6),
    ("node gpu-02 0.6", "gpu-[01,03]", None, {}, None),
    ("node gpu-02 0.6", "gpu-[01-04]", None, {}, 0.6),
    ("node gpu-02 0.6", "gpu-02,gpu-09", None, {}, 0.6),
    ("node gpu-02 0.6", "gpu-[01,03]", None, {"SLURM_STEP_NODELIST": "gpu-[02-03]"}, 0.6),   # the step's nodes, not the job's
    ("node gpu-02 0.6", "gpu-[01-02]", None, {"SLURM_STEP_NODELIST": "gpu-[01,03]"}, None),
    ("node gpu-[02,05] 0.6", "gpu-[04-05]", None, {}, 0.6),                                  # a host list of slow nodes
    # one node: the local node only (SLURMD_NODENAME, else a node list of one, else the host name)
    ("node gpu-02 0.6", "gpu-02", None, {}, 0.6),
    ("node gpu-02 0.6", "gpu-01", None, {}, None),
    ("node gpu-02 0.6", "gpu-[01-04]", 1, {"SLURMD_NODENAME": "gpu-02"}, 0.6),
    ("node gpu-02 0.6", "gpu-[01-04]", 1, {"SLURMD_NODENAME": "gpu-01"}, None),
    ("node gpu-02 0.6", None, None, {}, None),
    ("node %s 0.5" % HOST, None, None, {}, 0.5),
])
@pytest.mark.parametrize("how", ["env", "file"])
def test_a_slow_node_slows_the_runs_that_include_it(tmp_path, spec, nodelist, nnodes, env, factor, how):
    assert_slowed(tmp_path, spec, nodelist, nnodes, factor, how, **env)


@pytest.mark.parametrize("spec,nodelist,nnodes,factor", [
    ("link gpu-01 gpu-02 0.5", "gpu-[01-02]", None, 0.5),
    ("link gpu-02 gpu-01 0.5", "gpu-[01-02]", None, 0.5),
    ("link gpu-01 gpu-02 0.5", "gpu-[01-03]", None, 0.5),
    ("link gpu-01 gpu-02 0.5", "gpu-[01,03]", None, None),
    ("link gpu-01 gpu-02 0.5", "gpu-[02-03]", None, None),
    ("link gpu-01 gpu-02 0.5", "gpu-01", None, None),
    ("link gpu-01 gpu-02 0.5", "gpu-[01-02]", 1, None),    # a one-node step of a two-node job
])
def test_a_slow_link_slows_only_the_runs_that_include_both_ends(tmp_path, spec, nodelist, nnodes, factor):
    assert_slowed(tmp_path, spec, nodelist, nnodes, factor)


@pytest.mark.parametrize("spec,nodelist,factor", [
    ("leaf leaf-a gpu-[01-04] 0.7", "gpu-[01,05]", 0.7),
    ("leaf leaf-a gpu-[01-04] 0.7", "gpu-[04-06]", 0.7),
    ("leaf leaf-a gpu-[01-04] 0.7", "gpu-[05-06]", None),
    # kept simple: any run of more than one node with a node of the leaf, even one inside the leaf
    ("leaf leaf-a gpu-[01-04] 0.7", "gpu-[01-02]", 0.7),
    ("leaf leaf-a gpu-[01-04] 0.7", "gpu-01", None),
    ("leaf leaf-a gpu-01,gpu-02 0.7", "gpu-[02,09]", 0.7),
    ("leaf leaf-a gpu-01,gpu-02 0.7", "gpu-[03,09]", None),
])
def test_a_slow_leaf_uplink_slows_the_multi_node_runs_with_a_node_of_the_leaf(tmp_path, spec, nodelist, factor):
    err = assert_slowed(tmp_path, spec, nodelist, None, factor)
    assert factor is None or "by 'leaf leaf-a " in err


WORST = """# several slow parts: the slowest sets the pace of the ring
node gpu-01 0.9
link gpu-01 gpu-02 0.5   # the cable between them
leaf leaf-a gpu-[01-03] 0.7
node gpu-07 0.8; node gpu-08 0.95
"""


@pytest.mark.parametrize("nodelist,factor,by,also", [
    ("gpu-[01-02]", 0.5, "link gpu-01 gpu-02 0.5", ["node gpu-01 0.9", "leaf leaf-a gpu-[01-03] 0.7"]),
    ("gpu-[01,04]", 0.7, "leaf leaf-a gpu-[01-03] 0.7", ["node gpu-01 0.9"]),
    ("gpu-[07-08]", 0.8, "node gpu-07 0.8", ["node gpu-08 0.95"]),
    ("gpu-[01,07]", 0.7, "leaf leaf-a gpu-[01-03] 0.7", ["node gpu-01 0.9", "node gpu-07 0.8"]),
    ("gpu-01", 0.9, "node gpu-01 0.9", []),
    ("gpu-[04-05]", None, None, []),
])
def test_the_worst_factor_wins_and_the_notice_names_the_rules(tmp_path, nodelist, factor, by, also):
    err = assert_slowed(tmp_path, WORST, nodelist, None, factor, how="file")
    if by:
        line = next(number for number, text in enumerate(WORST.splitlines(), 1) if by in text)
        assert "by '%s' (%s line %d)" % (by, tmp_path / "SLOW", line) in err
        assert ("also matching: " + ", ".join("'%s'" % rule for rule in also)) in err if also else "also matching" not in err
    nodes = _standin().expand_hostlist(nodelist)
    assert "run's nodes: %s" % ",".join(nodes) in err or "this run's nodes (%s)" % ",".join(nodes) in err


# a two-node H200 run over 8 NDR NICs a node: the gate is the ib-ndr-400 curve x 8 NICs (300.8 GB/s from 8 GiB, 269.6 GB/s at 512 MiB);
# the recording reaches ~477 GB/s at 1 GiB and above, 433 GB/s at 512 MiB, its closest size to the curve (62.3 % of it would fail)
IB = {"topology": "ib-ndr-400", "nics": 8}


@pytest.mark.parametrize("spec,nodelist,env,expect,rc,failing", [
    (None, "gpu-[01-02]", {}, IB, 0, []),
    ("node gpu-02 0.6", "gpu-[01-02]", {}, IB, 0, ["busbw"]),
    ("node gpu-02 0.6", "gpu-[01,03]", {}, IB, 0, []),          # the pair without the slow node passes: it is isolated
    ("node gpu-02 0.63", "gpu-[01-02]", {}, IB, 0, []),         # 63 % of 433 at 512 MiB still reaches 269.6 (it failed the 300.8 mean before curves)
    ("node gpu-02 0.62", "gpu-[01-02]", {}, IB, 0, ["busbw"]),  # 62 %: 268.5 GB/s < 269.6 at 512 MiB
    ("link gpu-01 gpu-02 0.3", "gpu-[02-03]", {}, IB, 0, []),
    ("link gpu-01 gpu-02 0.3", "gpu-[01-03]", {}, IB, 0, ["busbw"]),
    ("leaf leaf-b gpu-[05-08] 0.5", "gpu-[01,06]", {}, IB, 0, ["busbw"]),
    # one H100 node (gate 296 GB/s, recording ~470): its own node rule only
    ("node gpu-02 0.6", "gpu-02", {}, {"topology": "h100-nvlink-8"}, 0, ["busbw"]),
    ("node gpu-02 0.7", "gpu-02", {}, {"topology": "h100-nvlink-8"}, 0, []),
    ("node gpu-02 0.6", "gpu-01", {}, {"topology": "h100-nvlink-8"}, 0, []),
    # a slowed run with wrong results keeps them: #wrong, the out-of-bounds footer and the exit status unchanged
    # (this recording also holds its ranks' "Test failure" lines)
    ("node gpu-02 0.5", "gpu-[01-02]", {"ALL_REDUCE_PERF_STANDIN_OUTPUT": "v2.17.8_gh200_two_nodes_wrong.txt"}, {"min_busbw_gbps": 100},
     1, ["test_errors", "wrong", "out_of_bounds", "busbw"]),
    ("node gpu-02 0.5", "gpu-[01-02]", {"ALL_REDUCE_PERF_STANDIN_FAIL": "wrong"}, IB, 1, ["wrong", "out_of_bounds", "busbw"]),
])
def test_the_collections_gate_reads_the_slowed_run(tmp_path, spec, nodelist, env, expect, rc, failing):
    got_rc, out, err = slow_run(tmp_path, spec, nodelist, models=(("h100-sxm5-80gb", 0),) * 8, **env)
    assert got_rc == rc, err
    got = dict((item["check"], item) for item in evaluate(parse_run(out), expect))
    assert sorted(name for name, item in got.items() if item["status"] == "fail") == sorted(failing), got
    if "wrong" in failing:
        dummy, base, dummy = slow_run(tmp_path, None, nodelist, models=(("h100-sxm5-80gb", 0),) * 8, **env)
        unslowed = dict((item["check"], item) for item in evaluate(parse_run(base), expect))
        assert got["wrong"]["reason"] == unslowed["wrong"]["reason"]
        assert got["out_of_bounds"]["reason"] == unslowed["out_of_bounds"]["reason"]
        assert got["busbw"]["value"] == pytest.approx(unslowed["busbw"]["value"] * 0.5, rel=1e-3)


@pytest.mark.parametrize("spec,message", [
    ("nodes gpu-01 0.5", "line 1: unknown rule 'nodes' (rules: leaf <leafname> <nodes> <factor>, link <nameA> <nameB> <factor>, "
                         "node <name> <factor>, nvls-off <nodes>, pcie-gen4-x8 <nodes>, rail-down <nodes> [<rails of the node, 8>]): 'nodes gpu-01 0.5'"),
    ("node gpu-01", "line 1: node wants 2 fields after 'node', got 1 (node <name> <factor>)"),
    ("node gpu-01 0.5 0.6", "line 1: node wants 2 fields after 'node', got 3"),
    ("link gpu-01 0.5", "line 1: link wants 3 fields after 'link', got 2 (link <nameA> <nameB> <factor>)"),
    ("leaf gpu-[01-04] 0.5", "line 1: leaf wants 3 fields after 'leaf', got 2 (leaf <leafname> <nodes> <factor>)"),
    ("node gpu-01 1.5", "line 1: factor '1.5' is not a share of the recorded bandwidth above 0 and at most 1 (0.6: 60 %)"),
    ("node gpu-01 0", "factor '0' is not a share"),
    ("node gpu-01 -0.5", "factor '-0.5' is not a share"),
    ("node gpu-01 nan", "factor 'nan' is not a share"),
    ("node gpu-01 60%", "factor '60%' is not a share"),
    ("link gpu-01 gpu-01 0.5", "a link joins two different nodes, not 'gpu-01' and itself"),
    ("link gpu-[01-02] gpu-03 0.5", "a link joins two single nodes, not the host lists 'gpu-[01-02]' and 'gpu-03'"),
    ("leaf a gpu-[01-04 0.5", "'gpu-[01-04': '[' without ']'"),
    ("leaf a gpu-[04-01] 0.5", "'gpu-[04-01]': '04-01' is not a number or a range low-high"),
    ("node gpu-01 0.5\n# a comment\n\nnode gpu-[x] 0.5", "line 4: 'gpu-[x]': 'x' is not a number or a range low-high"),
    ("node gpu-01 0.5; link gpu-01 0.5 # two rules on a line", "line 1: link wants 3 fields after 'link', got 2"),
])
@pytest.mark.parametrize("how", ["env", "file"])
def test_a_bad_slowness_rule_is_the_standins_own_error(tmp_path, spec, message, how):
    # refused whether or not the rule would apply, on one node or several
    for nodelist in ("gpu-[01-02]", None):
        rc, out, err = slow_run(tmp_path, spec, nodelist, how=how)
        assert (rc, out) == (2, ""), err
        source = "ALL_REDUCE_PERF_STANDIN_SLOW" if how == "env" else str(tmp_path / "SLOW")
        assert err.startswith("all_reduce_perf STAND-IN: %s line " % source)
        assert message in err and "the stand-in's own error: the real all_reduce_perf has no slowness rules" in err


@pytest.mark.parametrize("env,message", [
    ({"SLURM_NNODES": "2"}, "SLURM_NNODES is 2 but no SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or SLURM_NODELIST names the nodes"),
    ({"SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu-[01-"}, "SLURM_JOB_NODELIST: 'gpu-[01-': '[' without ']'"),
    ({"SLURM_NNODES": "2", "SLURM_NODELIST": "gpu-[2-1]"}, "SLURM_NODELIST: 'gpu-[2-1]': '2-1' is not a number or a range"),
    ({"SLURM_NNODES": "1", "SLURM_STEP_NODELIST": "gpu-]"}, "SLURM_STEP_NODELIST: 'gpu-]': ']' without '['"),
])
def test_a_bad_node_list_is_refused_only_where_slowness_rules_need_it(tmp_path, env, message):
    rc, out, err = slow_run(tmp_path, "node gpu-09 0.5", **env)
    assert (rc, out) == (2, "") and message in err and "the stand-in's own error" in err
    rc, out, err = slow_run(tmp_path, None, **env)
    assert rc == 0 and parse_all_reduce(out)["rows"] and "slow" not in err


def test_the_slowness_file_next_to_the_standin_and_the_variable_before_it(tmp_path):
    """/opt/nccl-tests-STANDIN/build/all_reduce_perf reads /opt/nccl-tests-STANDIN/SLOW; the variable, when set, wins."""
    build = tmp_path / "nccl-tests-STANDIN" / "build"
    build.mkdir(parents=True)
    standin = str(build / "all_reduce_perf")
    shutil.copy(STANDIN, standin)
    (tmp_path / "nccl-tests-STANDIN" / "SLOW").write_text("node gpu-01 0.5\n")
    common = dict(standin=standin, ALL_REDUCE_PERF_STANDIN_DIR=FIXTURES, ALL_REDUCE_PERF_STANDIN_SLOW_FILE=None,
                  SLURM_JOB_NODELIST="gpu-[01-02]", SLURM_NNODES=2)
    for env, factor in (({}, 0.5), ({"ALL_REDUCE_PERF_STANDIN_SLOW": ""}, 0.5), ({"ALL_REDUCE_PERF_STANDIN_SLOW": "node gpu-01 0.8"}, 0.8)):
        rc, out, err = run(tmp_path, TWO, **dict(common, **env))
        assert rc == 0 and "slowed on purpose to %g %%" % (factor * 100) in err, err
        assert parse_all_reduce(out)["avg_busbw"] == pytest.approx(178.222 * factor, rel=1e-3)
    (tmp_path / "nccl-tests-STANDIN" / "SLOW").unlink()
    rc, out, err = run(tmp_path, TWO, **common)
    assert rc == 0 and "slow" not in err and parse_all_reduce(out)["avg_busbw"] == 178.222


def test_the_notice_comes_from_rank_0_only(tmp_path):
    rc, out, err = slow_run(tmp_path, "node gpu-01 0.5", "gpu-[01-02]", SLURM_PROCID=1)
    assert (rc, out, err) == (0, "", "")
    rc, out, err = slow_run(tmp_path, "node gpu-01 0.5", "gpu-[01-02]")
    assert rc == 0 and err.splitlines() == [
        "all_reduce_perf STAND-IN (not nccl-tests, measures nothing): printing the recorded output v2.18.3_h200_two_nodes.txt",
        "all_reduce_perf STAND-IN: slowed on purpose to 50 % of the recorded bandwidth (time x 2, algbw and busbw x 0.5) "
        "by 'node gpu-01 0.5' (ALL_REDUCE_PERF_STANDIN_SLOW line 1); run's nodes: gpu-01,gpu-02"]


def _standin():
    """The stand-in's code as a module (its hostlist expander)."""
    loader = importlib.machinery.SourceFileLoader("all_reduce_perf_standin", STANDIN)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("text,names", [
    ("gpu-01", ["gpu-01"]),
    ("gpu-[01-03,07]", ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("n[5]", ["n5"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("a,b[1-2],c", ["a", "b1", "b2", "c"]),
    ("gpu-[01-02],gpu-[07,09]", ["gpu-01", "gpu-02", "gpu-07", "gpu-09"]),
    ("[1-2]x", ["1x", "2x"]),
])
def test_hostlist_expansion(text, names):
    assert _standin().expand_hostlist(text) == names


@pytest.mark.parametrize("text,message", [
    ("", "'' is not a host list"),
    ("a b", "'a b' is not a host list"),
    ("a,,b", "'a,,b': an empty name"),
    ("a,", "'a,': an empty name"),
    ("gpu-[01-", "'[' without ']'"),
    ("gpu-01]", "']' without '['"),
    ("gpu-[[1]]", "'[' inside '[...]'"),
    ("gpu-[]", "'' is not a number or a range low-high"),
    ("gpu-[3-1]", "'3-1' is not a number or a range low-high"),
    ("gpu-[1-x]", "'1-x' is not a number or a range low-high"),
    ("gpu-[1,,2]", "'' is not a number or a range low-high"),
    ("n[1-100000]", "more than 65536 names"),
    ("n[1-300]m[1-300]", "more than 65536 names"),
])
def test_hostlist_expansion_refuses_what_is_not_a_hostlist(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _standin().expand_hostlist(text)
