"""Issue 44 item 2 on the simulated cluster: the node preflight stops site.yml before any node changes.

The inventory layer says gpu-02 has H100s with a MIG layout of 1g.10gb instances (an H100 profile): the controller
preflight, which knows only what the inventory declares, passes it. gpu-02's real GPUs (what NVML reports there) are
A100-SXM4-40GB, which have no 1g.10gb profile: the node preflight reads them and refuses, naming the node and the
profile, before the munge stage. Nothing changed on any node: slurm.conf, the munge key and gres.conf are the same
files, no daemon restarted, gpu-02's MIG mode as it was.
"""
import pytest
import yaml

from simcluster import COMPUTE, CONTROLLER, NODES, SITE, node, run_playbook, sh, start_times

pytestmark = pytest.mark.acceptance

DAEMONS = {"munge": NODES, "slurmctld": [CONTROLLER], "slurmd": COMPUTE}
FILES = ("/etc/slurm/slurm.conf", "/etc/munge/munge.key", "/etc/slurm/gres.conf")
LAYOUT = {"h100-1g-x7": [{"gpu": "0", "instances": [{"profile": "1g.10gb", "count": 7}]}]}


def _state():
    files = {}
    for name in NODES:
        for path in FILES:
            found = node(name).file(path)
            files[(name, path)] = (found.sha256sum, found.mtime) if found.exists else None
    return files


def test_the_real_gpus_refuse_a_layout_the_inventory_allows(tmp_path):
    # an inventory source of its own with host_vars: they win over the simulated inventory's host_vars/gpu-02.yml
    layer = tmp_path / "h100-claim"
    (layer / "host_vars").mkdir(parents=True)
    (layer / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"gpu-02": None}}}))
    (layer / "host_vars" / "gpu-02.yml").write_text(yaml.safe_dump({
        "gpucluster_node_type": {"name": "dgx-h100", "gpu_model": "H100", "gpu_count": 8}, "mig_layout": "h100-1g-x7", "mig_layouts_custom": LAYOUT,
        "mig_require_all_gpus": False}))
    before, started = _state(), start_times(DAEMONS)
    mig_before = sh("gpu-02", "nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader", check=False).stdout
    rc, out = run_playbook(SITE, ["-i", str(layer / "hosts.yml")], log=tmp_path / "site.log")
    assert rc != 0, out[-4000:]
    # the controller preflight passed it, the node preflight refused it
    assert "TASK [Check the inventory and every role's inputs before anything changes]" in out
    assert "the node preflight found" in out and "nothing was changed" in out, out[-4000:]
    refusal = [line for line in out.splitlines() if "gpu-02" in line and "1g.10gb" in line]
    assert refusal, out[-4000:]
    assert "A100" in " ".join(refusal), refusal
    # no stage after it ran
    assert "TASK [gpucluster.bringup.munge" not in out, out[-4000:]
    assert _state() == before
    assert start_times(DAEMONS) == started
    assert sh("gpu-02", "nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader", check=False).stdout == mig_before
