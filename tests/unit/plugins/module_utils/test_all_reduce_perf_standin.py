# -*- coding: utf-8 -*-
"""The all_reduce_perf STAND-IN (tests/standins/all_reduce_perf-standin), run as a subprocess as srun runs it.

It prints recorded nccl-tests output cut to its arguments (-b/-e/-f/-i/-g/-t, parsed as nccl-tests parses
them), chooses the recording by the node's simulated GPU model (the NVML simulator's state file) and fails
on demand. Its output is read back with the collection's own parser and gates.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl import NcclParseError, evaluate, parse_all_reduce

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
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


def run(tmp_path, argv, models=(("a100-sxm4-40gb", 0),), **env):
    """(rc, stdout, stderr) of the stand-in with a clean environment: no Slurm/MPI variables unless given."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVMLSIM_STATE": _state(tmp_path, *models) if models else str(tmp_path / "none.json"),
            "ALL_REDUCE_PERF_STANDIN_FAIL_FILE": str(tmp_path / "no-FAIL")}
    full.update(dict((key, str(value)) for key, value in env.items()))
    proc = subprocess.run([sys.executable, STANDIN] + list(argv), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
        assert "mean busbw 22.8 GB/s over rows >= 1 GiB (1 GiB..8 GiB) is below 184.0 GB/s (a100-nvlink-8)" in got["busbw"]["reason"]
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
