"""Slurm's NVML plugin as an oracle for slurm_gres_facts (tests/oracle/run_oracle.py).

Runs the whole oracle (one container, every simulator preset) and asserts
that Slurm's own detection (``slurmd -G`` with ``AutoDetect=nvml`` and the
real ``gpu_nvml.so``) and the module's facts differ only in the explained ways
listed in run_oracle.EXPLAINED (docs/slurm-nvml-oracle.md).

When it runs:

* ``GPUCLUSTER_ORACLE=1``: always; a missing prerequisite is a failure;
* ``GPUCLUSTER_ORACLE=0``: never (skipped);
* unset: when podman, the node image (``scripts/cluster.sh images``), the
  repository's .venv and the pinned nvidia-ml-py's pynvml.py are all there;
  otherwise skipped, naming what is missing.

About 30 s on 2 cores once the node image exists (apt installs slurmd from the
Debian mirror in the container).
"""
import json
import os
import subprocess
import sys

import pytest

import run_oracle

MODE = os.environ.get("GPUCLUSTER_ORACLE", "")
# Presets the oracle must cover (issue #18 item 3): whole GPUs of several
# models, A100 presets, MIG mixed with whole GPUs.
REQUIRED_PRESETS = {"h100-80gb-x8", "l40s-x4", "a100-80gb-pcie-x4", "a100-40gb-x8", "seed-003"}


def _skip_reason():
    if MODE == "1":
        return None
    if MODE == "0":
        return "GPUCLUSTER_ORACLE=0"
    missing = run_oracle.missing_prerequisites()
    if missing:
        return "the Slurm NVML oracle needs: %s (GPUCLUSTER_ORACLE=1 turns this skip into a failure)" % "; ".join(missing)
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    report = tmp_path_factory.mktemp("oracle") / "report.json"
    result = subprocess.run([sys.executable, os.path.join(run_oracle.HERE, "run_oracle.py"), "--json", str(report)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                            timeout=900, check=False)
    assert result.returncode in (0, 1), "the oracle could not run (exit %d):\n%s" % (result.returncode, result.stdout[-6000:])
    with open(str(report), encoding="utf-8") as handle:
        data = json.load(handle)
    data["returncode"], data["stdout"] = result.returncode, result.stdout
    return data


def _unexplained(result):
    lines = []
    for row in result["rows"]:
        for diff in row["diffs"]:
            if not diff["explained"]:
                lines.append("%s %s: slurm %r, module %r" % (row["files"], diff["field"], diff["slurm"], diff["module"]))
    for check in result["checks"]:
        if not check["ok"] and not check["explained"]:
            lines.append("%s: %s" % (check["check"], check["detail"]))
    return lines


def test_every_required_preset_is_compared(oracle):
    compared = {result["preset"] for result in oracle["results"]}
    assert REQUIRED_PRESETS <= compared, "presets not compared: %s" % sorted(REQUIRED_PRESETS - compared)
    assert any(any(row["module"] and row["module"]["mig"] for row in result["rows"]) for result in oracle["results"]), \
        "no preset with MIG devices was compared"


def test_slurm_detects_every_device_the_module_lists(oracle):
    for result in oracle["results"]:
        assert result["rows"], "%s: no device at all" % result["preset"]
        detected = [row for row in result["rows"] if row["slurm"]]
        assert len(detected) == len(result["rows"]), "%s: slurmd detected %d of %d devices" % (
            result["preset"], len(detected), len(result["rows"]))


def test_no_unexplained_difference(oracle):
    problems = {result["preset"]: _unexplained(result) for result in oracle["results"]}
    problems = {preset: lines for preset, lines in problems.items() if lines}
    assert not problems, "unexplained differences between slurmd -G (AutoDetect=nvml) and slurm_gres_facts:\n%s\n\n%s" % (
        "\n".join("%s:\n  %s" % (preset, "\n  ".join(lines)) for preset, lines in sorted(problems.items())),
        oracle["stdout"][-8000:])
    assert oracle["returncode"] == 0, oracle["stdout"][-8000:]


def test_explained_differences_name_their_slurm_source(oracle):
    for key, item in oracle["explained"].items():
        assert item["source"] and all(".c:" in line for line in item["source"]), key
    used = {d["explained"] for r in oracle["results"] for row in r["rows"] for d in row["diffs"] if d["explained"]}
    assert used <= set(oracle["explained"]), used


def test_the_container_is_removed(oracle):
    assert oracle["container"]
    exists = subprocess.run([run_oracle.PODMAN, "container", "exists", oracle["container"]], check=False)
    assert exists.returncode == 1, "the oracle left its container %s" % oracle["container"]
