"""Issue 11 on the simulated cluster: validate.yml as a gate with a report, resume.yml.

Run by molecule's verify of the default scenario (containers named after
the nodes); usable against `bash scripts/cluster.sh up` with
GPUCLUSTER_SIM_CONTAINER_PREFIX=gcsim-. Every case runs the real playbooks
with ansible-playbook against the real Slurm daemons and reads the report
files they write. all_reduce_perf is the stand-in that node-prepare.sh
installs on the GPU nodes: it prints recorded nccl-tests output (there is no
CUDA here).
"""
import base64
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from simcluster import COMPUTE, GPU_NODES, ROOT, ctl, node, resume_by_hand, run_awx_job, run_playbook, states, wait_drained, wait_idle


def playbook(name, tmp_path, extra_vars=None):
    """Run playbooks/<name>.yml; return (rc, output, report dir)."""
    report = tmp_path / "report"
    variables = {"validate_report_dir": str(report)}
    variables.update(extra_vars or {})
    tmp_path.mkdir(parents=True, exist_ok=True)
    rc, output = run_playbook(ROOT / "playbooks" / ("%s.yml" % name), ["-e", json.dumps(variables)], log=tmp_path / ("%s.log" % name))
    return rc, output, report


def load(report):
    return json.loads((report / "report.json").read_text())


def records(data, stage=None, status=None):
    out = []
    for st in data["stages"]:
        for entry in st["nodes"]:
            for rec in entry["checks"]:
                if (stage is None or rec["stage"] == stage) and (status is None or rec["status"] == status):
                    out.append(rec)
    return out


def failed(data):
    return sorted((r["stage"], r["node"], r["check"]) for r in records(data, status="fail"))


# --- it passes after site.yml ----------------------------------------------------------

def test_validate_passes_after_site(tmp_path):
    """Run as the AWX validate job template runs it: ansible-runner on an AWX-style private data directory."""
    wait_idle(COMPUTE)
    report = tmp_path / "report"
    rc, out, status = run_awx_job("playbooks/validate.yml", tmp_path, extra_vars={"validate_report_dir": str(report)})
    data = load(report)
    assert (rc, status) == (0, "successful"), out[-4000:]
    assert data["status"] == "pass" and failed(data) == [], failed(data)
    assert sorted(os.listdir(report)) == ["report.html", "report.json", "report.junit.xml", "report.md"]
    suites = ET.parse(report / "report.junit.xml").getroot()
    assert suites.get("failures") == "0" and int(suites.get("tests")) == data["totals"]["checks"]
    node_checks = dict(((r["node"], r["check"]), r) for r in records(data, "node"))
    for name in GPU_NODES:
        for check in ("nvml", "gpu_count", "gpu_models", "gres_conf", "munge", "slurmd", "node_state"):
            assert node_checks[(name, check)]["status"] == "pass", node_checks[(name, check)]
    assert node_checks[(GPU_NODES[0], "mig_layout")]["status"] == "pass"
    slurm = dict(((r["node"], r["check"]), r["status"]) for r in records(data, "slurm"))
    for name in GPU_NODES:
        assert slurm[(name, "srun")] == "pass" and slurm[(name, "gres_job")] == "pass", slurm
    nccl = dict(((r["node"], r["check"]), r) for r in records(data, "nccl"))
    for name in GPU_NODES:
        assert nccl[(name, "wrong")]["status"] == "pass", nccl
        assert nccl[(name, "busbw")]["status"] == "pass", nccl[(name, "busbw")]
        # the record names the gate curve that judged the run (catalogue/_busbw.py), and the reason names the same id
        curve = nccl[(name, "busbw")]["curve"]
        assert curve["id"] != "none" and curve["source"] and curve["id"] in nccl[(name, "busbw")]["reason"], nccl[(name, "busbw")]
    assert "### Gate curves" in (report / "report.md").read_text()
    # gpu-01 (H100) and gpu-02 (A100) are two node types: no fabric run over both, one (skipped) fabric group each (issue 44)
    assert sorted(r["node"] for r in records(data, "nccl") if r["node"].startswith("fabric")) == ["fabric:a100-sxm4-40gb", "fabric:h100-80gb-hbm3"]
    assert sorted(s["label"] for s in data["series"]) == sorted(GPU_NODES)
    # munge across nodes: every pair decodes (the nodes share one key)
    cross = [r for r in records(data, "node") if r["check"] == "munge_cross"]
    assert cross and all(r["status"] == "pass" for r in cross), cross
    assert "<svg" in (report / "report.html").read_text()
    mpi = dict((r["node"], "%s: %s" % (r["status"], r["reason"])) for r in records(data, "mpi"))
    print("MPI launch paths on the simulated cluster:\n  " + "\n  ".join("%s = %s" % item for item in sorted(mpi.items())))
    assert set(mpi) == {"srun_pmi", "srun_plain", "mpirun", "pyxis"}
    # srun --mpi=pmix works (the slurm role installs libpmix2); srun without PMI is opt-in
    assert mpi["srun_pmi"].startswith("pass"), mpi
    assert mpi["srun_plain"].startswith("skip: srun --mpi=none (no PMI): not run"), mpi


SLOW = """#!/bin/sh
# molecule: the all_reduce_perf STAND-IN, 10 s late, noting when this node's run started
[ "${SLURM_PROCID:-0}" = 0 ] && date +%s > /tmp/validate-standin-started
sleep 10
exec /opt/nccl-tests-STANDIN/build/all_reduce_perf "$@"
"""


def test_nccl_runs_per_node_start_together(tmp_path):
    """The per-node runs start together: the stage takes the time of one node, not the sum."""
    wait_idle(COMPUTE)
    encoded = base64.b64encode(SLOW.encode()).decode()
    for name in GPU_NODES:
        node(name).run("mkdir -p /opt/nccl-tests-STANDIN/slow && echo %s | base64 -d > /opt/nccl-tests-STANDIN/slow/all_reduce_perf"
                       " && chmod 0755 /opt/nccl-tests-STANDIN/slow/all_reduce_perf && rm -f /tmp/validate-standin-started" % encoded)
    rc, out, report = playbook("validate", tmp_path, {"validate_mpi": False, "validate_nccl_settings": {
        "fabric": False, "tests_path": "/opt/nccl-tests-STANDIN/slow"}})
    assert rc == 0, out[-3000:]
    started = [int(node(name).run("cat /tmp/validate-standin-started").stdout.strip()) for name in GPU_NODES]
    assert max(started) - min(started) <= 3, started
    data = load(report)
    assert [r["status"] for r in records(data, "nccl") if r["check"] == "busbw"] == ["pass"] * len(GPU_NODES)


@pytest.mark.acceptance
def test_a_slow_fabric_run_is_followed_by_the_pair_runs(tmp_path):
    """The fabric run fails its gate (a link between the two nodes made slow in the all_reduce_perf STAND-IN): the
    validation follows with the node pairs through real srun jobs; with two nodes the one pair cannot be split,
    and the report says so and names the pair, while each node's own run passes."""
    wait_idle(COMPUTE)
    slow = "link %s %s 0.3" % (GPU_NODES[0], GPU_NODES[1])
    for name in GPU_NODES:
        node(name).run("echo '%s' > /opt/nccl-tests-STANDIN/SLOW" % slow)
    try:
        # (one fabric group for both nodes on purpose: gpu-01 H100 and gpu-02 A100 are otherwise two node types, never run together)
        rc, out, report = playbook("validate", tmp_path, {"validate_mpi": False,
                                                          "validate_nccl_multinode": {"min_busbw_gbps": 300, "group": "sim"}})
    finally:
        for name in GPU_NODES:
            node(name).run("rm -f /opt/nccl-tests-STANDIN/SLOW")
    assert rc != 0
    data = load(report)
    nccl = dict(((r["node"], r["check"]), r) for r in records(data, "nccl"))
    assert nccl[("fabric", "busbw")]["status"] == "fail", nccl[("fabric", "busbw")]
    pair = "%s+%s" % (GPU_NODES[0], GPU_NODES[1])
    assert nccl[(pair, "busbw")]["status"] == "fail", nccl.get((pair, "busbw"))
    finding = nccl[("pair:" + pair, "isolation")]
    assert finding["status"] == "fail" and "one pair cannot be split: run the pairs with a third node" in finding["reason"], finding
    for name in GPU_NODES:
        assert nccl[(name, "busbw")]["status"] == "pass", nccl[(name, "busbw")]


# --- it fails with a clear report ------------------------------------------------------

def test_drained_node_fails_naming_it(tmp_path):
    target = GPU_NODES[-1]
    wait_idle(COMPUTE)
    ctl("scontrol update nodename=%s state=drain reason='molecule: maintenance'" % target)
    try:
        # (with validate_drain_failed: the admin's drain is reported, never drained over with the validation's reason)
        rc, out, report = playbook("validate", tmp_path, {"validate_mpi": False, "validate_drain_failed": True})
        kept = ctl("sinfo -h -n %s -o '%%E'" % target).stdout.strip()
    finally:
        resume_by_hand(target)
    assert kept == "molecule: maintenance", kept
    data = load(report)
    assert rc != 0
    assert "validation failed on %s" % target in out
    state = [r for r in records(data, "node", "fail") if r["node"] == target]
    assert [r["check"] for r in state] == ["node_state"], state
    assert state[0]["reason"].startswith("node is IDLE+DRAIN (reason: \"molecule: maintenance\"")
    assert state[0]["held"] == "admin", state
    assert data["failed_nodes"] == [target]
    skipped = [r["reason"] for r in records(data, "slurm", "skip") if r["node"] == target]
    assert "not run: %s cannot take jobs (see its node_state check)" % target in skipped


def test_hand_edited_gres_conf_fails_and_can_drain_the_node(tmp_path):
    target = GPU_NODES[-1]
    wait_idle(COMPUTE)
    host = node(target)
    original = host.run("cat /etc/slurm/gres.conf").stdout
    lines = [line for line in original.splitlines() if line.startswith("Name=gpu")]
    assert len(lines) == 8, original
    host.run("cp /etc/slurm/gres.conf /root/gres.conf.molecule && sed -i '$d' /etc/slurm/gres.conf")
    try:
        rc, out, report = playbook("validate", tmp_path, {"validate_mpi": False, "validate_nccl": False, "validate_drain_failed": True})
        reason = ctl("sinfo -h -n %s -o '%%E'" % target).stdout.strip()
    finally:
        host.run("cp /root/gres.conf.molecule /etc/slurm/gres.conf")
        resume_by_hand(target)
    data = load(report)
    assert rc != 0
    gres = [r for r in records(data, "node", "fail") if r["node"] == target]
    assert [r["check"] for r in gres] == ["gres_conf"], gres
    assert re.search(r"gpu:a100: 7 in /etc/slurm/gres\.conf, 8 computed from NVML", gres[0]["reason"]), gres[0]["reason"]
    assert "validation failed on %s" % target in out
    assert reason.startswith("validate: node/gres_conf: /etc/slurm/gres.conf differs"), reason


def test_standin_gates_wrong_results_and_low_busbw_fail_on_every_gpu_node(tmp_path):
    """One run, two gates: the stand-in prints recorded output with #wrong > 0, and the busbw threshold is set
    above what it reports; each gate fails on its own, on every GPU node."""
    wait_idle(COMPUTE)
    rc, out, report = playbook("validate", tmp_path, {
        "validate_mpi": False, "validate_nccl_node": {"min_busbw_gbps": 1000},
        # (the whole dict: an extra variable replaces the inventory's, whose tests_path is the stand-in's)
        "validate_nccl_settings": {"tests_path": "/opt/nccl-tests-STANDIN/build",
                                   "env": {"NCCL_DEBUG": "INFO", "ALL_REDUCE_PERF_STANDIN_OUTPUT": "v2.17.8_gh200_two_nodes_wrong.txt"}}})
    data = load(report)
    assert rc != 0
    for check, text in [("wrong", "#wrong > 0 in 2 of 50 results: 1048576 B float out-of-place: 96, 1048576 B float in-place: 32"),
                        ("busbw", "is below 1000.0 GB/s (min_busbw_gbps)")]:
        bad = [r for r in records(data, "nccl", "fail") if r["check"] == check]
        assert sorted(r["node"] for r in bad if r["node"] in GPU_NODES) == GPU_NODES, bad
        assert all(text in r["reason"] for r in bad if r["node"] in GPU_NODES), bad
        assert "nccl/%s" % check in out
    assert "validation failed on %s" % ", ".join(GPU_NODES) in out


# --- resume.yml --------------------------------------------------------------------------

HOOK = "/etc/slurm/prolog.d/97-all-molecule-broken"


def test_resume_brings_back_a_hook_drained_node_once_the_hook_is_fixed(tmp_path):
    target = GPU_NODES[-1]
    wait_idle(COMPUTE)
    host = node(target)
    host.run("printf '#!/bin/sh\\necho molecule: broken on purpose\\nexit 3\\n' > %s && chmod 0755 %s" % (HOOK, HOOK))
    try:
        assert ctl("timeout 60 srun -w %s true" % target, check=False).rc != 0
        wait_drained(target)
        rc, out, report = playbook("resume", tmp_path / "broken")
        assert rc != 0, out[-3000:]
        assert "prolog hook 97-all-molecule-broken failed (exit 3)" in out, out[-3000:]
        assert states()[target].startswith(("drain", "drng")), states()  # the failed probe drains it again
        kept = load(report / "resume")
        assert [r["status"] for r in records(kept) if r["node"] == target] == ["fail"]
    finally:
        host.run("rm -f %s" % HOOK)
    rc, out, report = playbook("resume", tmp_path / "fixed")
    assert rc == 0, out[-3000:]
    assert wait_idle([target])[target] == "idle"
    done = load(report / "resume")
    resumed = [r for r in records(done) if r["node"] == target]
    assert [r["status"] for r in resumed] == ["pass"], resumed
    assert "prolog hook 97-all-molecule-broken failed (exit 3)" in resumed[0]["reason"], resumed
    assert "gpucluster-resume" not in ctl("scontrol show reservation", check=False).stdout


def test_resume_leaves_an_admin_drain_alone(tmp_path):
    target = GPU_NODES[0]
    wait_idle(COMPUTE)
    ctl("scontrol update nodename=%s state=drain reason='disk replacement'" % target)
    try:
        rc, out, report = playbook("resume", tmp_path)
        assert rc != 0
        assert states()[target].startswith("drain")
        assert 'drained by an admin: disk replacement' in out
    finally:
        resume_by_hand(target)
