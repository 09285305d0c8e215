"""Issue 44 item 4 on the simulated cluster: a validation that cannot pass untested.

- nccl-tests absent on the nodes (validate_nccl_settings.tests_path pointed at a directory without all_reduce_perf) while nccl is
  required (validate_require): the play fails and the report names the stage and the variable that provides it;
- per-node-type gating: gpu-01 (8 x H100) and gpu-02 (8 x A100) are two node types, so the report shows two fabric
  groups and no fabric run over both; validate_nccl_multinode.group puts them in one on purpose;
- munge across nodes: each node's credential decodes on its neighbour and on the controller; a node with another key
  fails the pairs it is in, naming both nodes.

Long (several validate.yml runs): the acceptance stage. Run:
    .venv/bin/molecule verify -s default -- -k test_validate_require   (or scripts' acceptance stage)
"""
import json

import pytest

from simcluster import COMPUTE, GPU_NODES, ROOT, ctl, node, run_playbook, wait_idle

pytestmark = pytest.mark.acceptance

# The pyxis STAND-IN cannot run containers (tests/standins/README.md): the container job is not required here.
REQUIRE = ["node", "slurm", "nccl"]


def playbook(tmp_path, extra_vars=None):
    report = tmp_path / "report"
    variables = {"validate_report_dir": str(report), "validate_mpi": False, "validate_require": REQUIRE}
    variables.update(extra_vars or {})
    tmp_path.mkdir(parents=True, exist_ok=True)
    rc, output = run_playbook(ROOT / "playbooks" / "validate.yml", ["-e", json.dumps(variables)], log=tmp_path / "validate.log")
    return rc, output, json.loads((report / "report.json").read_text()), report


def records(data, stage=None, status=None):
    return [rec for st in data["stages"] for entry in st["nodes"] for rec in entry["checks"]
            if (stage is None or rec["stage"] == stage) and (status is None or rec["status"] == status)]


def test_nccl_tests_absent_and_required_fails_naming_the_stage_and_the_variable(tmp_path):
    wait_idle(COMPUTE)
    rc, out, data, report = playbook(tmp_path, {"validate_nccl_settings": {"tests_path": "/opt/no-nccl-tests-here/build"}})
    assert rc != 0, out[-4000:]
    assert data["status"] == "fail"
    required = [r for r in records(data, "nccl", "fail") if r["check"] == "required"]
    assert len(required) == 1 and required[0]["node"] == "cluster", records(data, "nccl")
    reason = required[0]["reason"]
    assert reason.startswith("stage nccl is required (validate_require) but could not run: no CUDA/nccl-tests on this cluster: "
                             "/opt/no-nccl-tests-here/build/all_reduce_perf not found on"), reason
    for name in GPU_NODES:
        assert name in reason, reason
    assert "validate_nccl_settings.tests_path" in reason and "or remove nccl from validate_require" in reason, reason
    # the play's failure says it too, and no node is drained for it
    assert "stage nccl is required (validate_require)" in out
    assert "validate_nccl_settings.tests_path" in (report / "report.md").read_text()
    for name in GPU_NODES:
        state = ctl("scontrol -o show node %s" % name).stdout
        assert "DRAIN" not in state.split("State=")[1].split()[0], state


def test_not_required_the_absent_nccl_tests_are_a_skip(tmp_path):
    wait_idle(COMPUTE)
    rc, out, data, dummy = playbook(tmp_path, {"validate_nccl_settings": {"tests_path": "/opt/no-nccl-tests-here/build"},
                                               "validate_require": ["node", "slurm"]})
    assert rc == 0 and data["status"] == "pass", out[-4000:]
    assert [r["status"] for r in records(data, "nccl")] == ["skip"]


def test_two_gpu_models_are_two_fabric_groups(tmp_path):
    """gpu-01 H100 and gpu-02 A100: two fabric groups, each gated on its own (here: one node each, so each says why it has no
    run); no run and no gate over both."""
    wait_idle(COMPUTE)
    rc, out, data, dummy = playbook(tmp_path, {"validate_nccl_multinode": {"min_busbw_gbps": 300}})
    assert rc == 0 and data["status"] == "pass", out[-4000:]
    fabric = dict((r["node"], r) for r in records(data, "nccl") if r["node"].startswith("fabric"))
    assert sorted(fabric) == ["fabric:a100-sxm4-40gb", "fabric:h100-80gb-hbm3"], fabric
    assert fabric["fabric:h100-80gb-hbm3"]["hosts"] == ["gpu-01"] and fabric["fabric:a100-sxm4-40gb"]["hosts"] == ["gpu-02"]
    for rec in fabric.values():
        assert rec["status"] == "skip" and "fabric group" in rec["reason"], rec
    # every NCCL run that ran is over one node type: no series over both nodes
    assert sorted(s["label"] for s in data["series"]) == sorted(GPU_NODES)
    # one group on purpose: one fabric run over both (named fabric), gated as before
    rc, out, data, dummy = playbook(tmp_path / "one", {"validate_nccl_multinode": {"group": "sim"}})
    runs = [r for r in records(data, "nccl") if r["node"] == "fabric"]
    assert runs and all(r.get("hosts") == GPU_NODES for r in runs), runs


def test_a_node_with_another_munge_key_fails_the_pairs_it_is_in_naming_both(tmp_path):
    """The local round trip passes on a node with its own key; the cross-node check does not."""
    wait_idle(COMPUTE)
    target = GPU_NODES[-1]
    key = "/etc/munge/munge.key"
    node(target).run("cp -p %s /root/munge.key.validate-test && dd if=/dev/urandom of=%s bs=1024 count=1 2>/dev/null && "
                     "systemctl restart munge" % (key, key))
    try:
        rc, out, data, dummy = playbook(tmp_path, {"validate_nccl": False, "validate_require": ["node", "slurm"]})
    finally:
        node(target).run("cp -p /root/munge.key.validate-test %s && systemctl restart munge && rm -f /root/munge.key.validate-test" % key)
        node(target).run("systemctl restart slurmd")
    assert rc != 0
    cross = [r for r in records(data, "node") if r["check"] == "munge_cross"]
    bad = [r for r in cross if r["status"] == "fail"]
    assert bad and all(target in r["hosts"] and len(r["hosts"]) == 2 for r in bad), cross
    assert any("Invalid credential" in r["reason"] or "do not share one munge key" in r["reason"] for r in bad), bad
    assert "%s->ctl" % target in [r["node"] for r in bad], bad
