"""Faults on the running simulated cluster (issue 16), as an admin meets them.

A node that is down (its container stopped) stops site.yml in the facts stage,
before any stage changes a host, with one message naming it. The node then
boots again: its MIG layout is re-created by the mig role's boot unit before
slurmd starts, and slurmd registers the same GRES as before, without an admin.
(The power-cycle case, where the GPUs lose their MIG instances, is
test_mig_changes.py's reboot test.)
"""
import re

from simcluster import NODES, PREFIX, SITE, ctl, podman, recap, run_playbook, sh, wait_booted, wait_idle, wait_ssh
from simcluster import fixture_mig_node  # noqa: F401  pylint: disable=unused-import  (the mig_node fixture)

UUID = re.compile(r"\(UUID: [^)]*\)")


def _what_slurm_and_nvml_see(name):
    """The node's MIG devices (UUIDs aside: a re-created instance gets a new one), slurmd -G, the node's Gres."""
    devices = [UUID.sub("", line).rstrip() for line in sh(name, "nvidia-smi -L").stdout.splitlines()]
    registered = sh(name, "slurmd -G 2>&1").stdout
    registered = sorted(line.split("Gres ", 1)[-1] for line in registered.splitlines() if "Gres " in line)
    gres = re.search(r"Gres=(\S+)", ctl("scontrol show node %s" % name).stdout).group(1)
    return {"devices": devices, "slurmd -G": registered, "Gres": gres}


def _monotonic(name, unit, prop):
    return int(sh(name, "systemctl show -p %s --value %s" % (prop, unit)).stdout.strip() or 0)


def test_a_node_that_is_down_stops_site_yml_before_any_change_and_returns_by_itself_after_a_reboot(mig_node, tmp_path):
    wait_idle([mig_node])
    before = _what_slurm_and_nvml_see(mig_node)
    assert any("MIG " in line for line in before["devices"]), before
    podman("stop", "-t", "20", PREFIX + mig_node)
    try:
        rc, output = run_playbook(SITE, log=tmp_path / "site-node-down.log")
        assert rc != 0, output[-3000:]
        assert "1 node(s) cannot be reached, nothing was changed: %s: " % mig_node in output, output[-3000:]
        assert "Bring them back, or leave them out with --limit, and run again" in output
        # the facts stage stopped the run: no later stage started, no host changed
        assert "PLAY [Munge" not in output, output[-3000:]
        counts = recap(output)
        assert set(counts) >= set(NODES), counts
        assert all(c["changed"] == 0 for c in counts.values()), counts
    finally:
        podman("start", PREFIX + mig_node)
    wait_booted(mig_node)
    wait_ssh(mig_node)
    # the boot unit re-created the layout, and finished before slurmd started
    mig_done = _monotonic(mig_node, "gpucluster-mig.service", "ExecMainExitTimestampMonotonic")
    slurmd_started = _monotonic(mig_node, "slurmd.service", "ExecMainStartTimestampMonotonic")
    assert 0 < mig_done <= slurmd_started, (mig_done, slurmd_started)
    wait_idle([mig_node], timeout=180)
    after = _what_slurm_and_nvml_see(mig_node)
    assert after == before
    assert ctl("timeout 60 srun -w %s --gres=gpu:%s:1 true" % (mig_node, before["Gres"].split(":")[1])).rc == 0
