"""A real build of nccl-tests through the validate role's own build path, and its binary on nodes without a driver.

tests/nccl_build/run_nccl_build.py builds nccl-tests 2.19.6 with the role's tasks/nccl_build.yml on three node containers
of the simulated node image (two H100 nodes, MPI build; one A100 node, non-MPI build) with CUDA 13.0 and NCCL 2.27.7 from
NVIDIA's wheels, runs the playbook a second time, then all_reduce_perf on a node of each type. These tests read its report:
one build per node type, the binaries real and linked as asked, the second run changing nothing, and the validation's
reading of all_reduce_perf's real output on a node with no driver: one failed record naming the node, the command and
CUDA's message, never a bandwidth.

When it runs: ``GPUCLUSTER_NCCL_BUILD=1`` (the ``nccl-build`` stage of scripts/test.sh): always, a missing prerequisite is
a failure; otherwise skipped (it downloads about 300 MB of wheels and compiles for minutes).
"""
import json
import os
import subprocess
import sys

import pytest

import run_nccl_build as rb

MODE = os.environ.get("GPUCLUSTER_NCCL_BUILD", "")
pytestmark = pytest.mark.skipif(MODE != "1", reason="the real nccl-tests build runs with GPUCLUSTER_NCCL_BUILD=1 "
                                                    "(bash scripts/test.sh deps nccl-build)")

H100_BUILDER, H100_OTHER = rb.NODE_TYPES["h100"]["hosts"]
A100 = rb.NODE_TYPES["a100"]["hosts"][0]
CUDA_MESSAGE = "CUDA driver version is insufficient for CUDA runtime version"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    missing = rb.missing_prerequisites()
    assert not missing, "the nccl-tests build needs: %s" % "; ".join(missing)
    path = tmp_path_factory.mktemp("nccl-build") / "report.json"
    result = subprocess.run([sys.executable, os.path.join(rb.HERE, "run_nccl_build.py"), "--json", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=2400, check=False)
    assert path.exists(), "the build could not run (exit %d):\n%s" % (result.returncode, result.stdout[-6000:])
    with open(str(path), encoding="utf-8") as handle:
        data = json.load(handle)
    data["returncode"], data["stdout"] = result.returncode, result.stdout
    return data


def _first_run(report):
    run = report["runs"][0]
    assert run["rc"] == 0, "the role's build failed (log %s):\n%s" % (run["log"], report["stdout"][-4000:])
    return run


def test_the_role_builds_once_per_node_type(report):
    run = _first_run(report)
    build = run["tasks"]["Build nccl-tests"]
    if report["build_cache"]["cached"]:
        # the build directories kept from a cold run: the role finds the binaries and does not build again
        assert build == {H100_BUILDER: "ok", H100_OTHER: "skipped", A100: "ok"}
    else:
        assert build == {H100_BUILDER: "changed", H100_OTHER: "skipped", A100: "changed"}
    # the H100 type's second node got the builder's binaries through the controller, the A100 type (one node) needs none
    assert run["tasks"]["Fetch the binaries to the controller for the node type's other nodes"][A100] == "skipped"
    assert run["tasks"]["Copy the node type's binaries from the controller"] == {
        H100_BUILDER: "skipped", H100_OTHER: "ok" if report["build_cache"]["cached"] else "changed", A100: "skipped"}
    nodes = report["nodes"]
    expected = sorted("%s_perf" % name for name in ("all_reduce", "all_gather", "broadcast", "reduce_scatter", "reduce", "alltoall",
                                                    "alltoallv", "scatter", "gather", "sendrecv", "hypercube"))
    for host in (H100_BUILDER, H100_OTHER, A100):
        assert sorted(nodes[host]["binaries"]) == expected, host
    assert nodes[H100_OTHER]["binaries"] == nodes[H100_BUILDER]["binaries"]
    # what the build leaves is on the building nodes only: the archive, the sources, the objects, the compilers
    for host in (H100_BUILDER, A100):
        assert nodes[host]["archive"] and nodes[host]["sources"] and nodes[host]["objects"] > 10, host
        assert nodes[host]["packages"]["make"] and nodes[host]["packages"]["g++"], host
    other = nodes[H100_OTHER]
    assert (other["archive"], other["sources"], other["objects"], other["packages"]["make"], other["packages"]["g++"]) == (
        False, False, 0, False, False)


def test_mpi_and_non_mpi_builds_link_as_asked(report):
    _first_run(report)
    nodes = report["nodes"]
    for host in (H100_BUILDER, H100_OTHER):
        assert "libmpi.so" in nodes[host]["ldd"] and "libnccl.so.2 => %s/lib/libnccl.so.2" % rb.NCCL in nodes[host]["ldd"], host
    assert nodes[H100_BUILDER]["packages"]["libopenmpi-dev"]
    assert "libmpi" not in nodes[A100]["ldd"] and "libnccl.so.2 => %s/lib/libnccl.so.2" % rb.NCCL in nodes[A100]["ldd"]
    assert not nodes[A100]["packages"]["libopenmpi-dev"]
    # two node types, two builds: their binaries differ (sm_90 with MPI, sm_80 without)
    assert nodes[A100]["binaries"]["all_reduce_perf"] != nodes[H100_BUILDER]["binaries"]["all_reduce_perf"]


def test_a_second_run_changes_nothing(report):
    _first_run(report)
    assert len(report["runs"]) == 2 and report["runs"][1]["rc"] == 0
    assert dict((host, stats["changed"]) for host, stats in report["runs"][1]["stats"].items()) == {
        H100_BUILDER: 0, H100_OTHER: 0, A100: 0}


def _records(binary_run):
    """What validation_jobs makes of a run's output: the -J report taken out of it, then its judge of an NCCL job."""
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_jobs as vj
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
    result = {"rc": binary_run["rc"], "stdout": binary_run["stdout"], "stderr": binary_run["stderr"]}
    result.update(vn.split_json_report(result["stdout"]))
    name = binary_run["host"]
    job = {"kind": "nccl", "name": name, "hosts": [name], "expect": vn.expect_for(topology="h100-nvlink-8"), "env": None,
           "argv": ["srun", "--nodes=1", "--nodelist=%s" % name] + binary_run["argv"]}
    records, series, notes = vj.judge(job, result, {"stage": "nccl"})
    return records, series, result


@pytest.mark.parametrize("host", [H100_OTHER, A100])
def test_all_reduce_perf_on_a_node_without_a_driver_is_one_clear_failure(report, host):
    _first_run(report)
    runs = dict((r["host"], r) for r in report["binary_runs"])
    assert host in runs, "all_reduce_perf did not run on %s" % host
    binary_run = runs[host]
    assert not report["nodes"][host]["libcuda"]
    assert binary_run["rc"] != 0
    assert "# nccl-tests version %s nccl-headers=22707 nccl-library=22707" % rb.VERSION in binary_run["stdout"]
    assert "%s: Test CUDA failure" % host in binary_run["stdout"] and CUDA_MESSAGE in binary_run["stdout"]
    records, series, result = _records(binary_run)
    # the -J report was written (2.19 closes it on a CUDA error) and holds no result
    assert result["json_reports"] == 1 and '"results"' not in result["json"]
    assert series == []
    assert len(records) == 1
    record = records[0]
    assert (record["node"], record["check"], record["status"], record["hosts"]) == (host, "all_reduce", "fail", [host])
    assert record["reason"].startswith("all_reduce_perf stopped before its first result (rc %d): %s: Test CUDA failure " % (
        binary_run["rc"], host))
    assert CUDA_MESSAGE in record["reason"] and "libcuda.so.1 is missing" in record["reason"]
    assert record["reason"].endswith("no bandwidth was measured")
    assert rb.BINARY in record["command"] and record["command"].startswith("srun --nodes=1 --nodelist=%s sh -c " % host)
    assert record["versions"] == {"nccl_tests": rb.VERSION}
    assert "busbw" not in json.dumps(record) and "GB/s" not in record["reason"]
