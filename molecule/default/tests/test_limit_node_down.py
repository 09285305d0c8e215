"""Issue 50, item 4: a compute node that is down at deploy time, left out with --limit as the facts stage advises.

The facts stage's message for a node that cannot be reached says to leave it out with --limit. Following it used to
fail in the slurm stage ("slurm.conf lists every compute node, and these are not in this run ... (unreachable)").
Now the node keeps its last known definition, its NodeName line of the controller's slurm.conf: the run ends rc 0
with a warning naming the node and the file, the controller's slurm.conf keeps the node's line and partitions as
they were, slurmctld is not restarted, sinfo still lists the node, and nothing on the node changed when it is back.
"""
import sys
import time

import pytest

from simcluster import COMPUTE, CONTROLLER, PREFIX, ROOT, SITE, ctl, podman, recap, run_playbook, sh, start_times, wait_booted, wait_idle, wait_ssh

pytestmark = pytest.mark.acceptance

CONF = "/etc/slurm/slurm.conf"


def _expand(hostlist):
    """The names of a slurm.conf hostlist, read by the collection's own hostlist code."""
    sys.path.insert(0, str(ROOT / ".build" / "collections"))
    from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import expand  # pylint: disable=import-outside-toplevel
    return expand(hostlist)


def _definition(text, name):
    """The NodeName line of slurm.conf text that names ``name``, and the PartitionName lines."""
    lines = [line for line in text.splitlines() if line.startswith("NodeName=") and name in _expand(line.split()[0][len("NodeName="):])]
    return lines, [line for line in text.splitlines() if line.startswith("PartitionName=")]


def _bring_back(name):
    podman("start", PREFIX + name, check=False)
    wait_booted(name)
    wait_ssh(name)
    # (ReturnToService=2: a node Slurm marked DOWN for not responding returns when its slurmd registers)
    deadline = time.time() + 300
    while time.time() < deadline and ctl("sinfo -h -n %s -o %%t" % name, check=False).stdout.strip() != "idle":
        time.sleep(3)
    wait_idle([name], timeout=60)


def test_limit_leaves_out_a_node_that_is_down_and_it_keeps_its_definition(tmp_path):
    target = COMPUTE[-1]
    others = [n for n in COMPUTE if n != target]
    wait_idle(COMPUTE)
    conf_before = ctl("cat %s" % CONF).stdout
    node_conf_before = sh(target, "cat %s" % CONF, check=False).stdout
    line_before, partitions_before = _definition(conf_before, target)
    assert len(line_before) == 1, conf_before
    ctld_before = start_times({"slurmctld": [CONTROLLER]})
    podman("stop", "-t", "20", PREFIX + target)
    try:
        # the facts stage names it and says how to leave it out
        rc, output = run_playbook(SITE, ["--tags", "facts"], log=tmp_path / "site-node-down.log")
        assert rc != 0, output[-3000:]
        assert "Bring them back, or leave them out with --limit, and run again (--limit '!%s')" % target in output, output[-3000:]
        assert "A compute node left out keeps its last known definition in slurm.conf" in output, output[-3000:]

        # following it works
        rc, output = run_playbook(SITE, ["--limit", "!%s" % target], log=tmp_path / "site-limit.log")
        assert rc == 0, output[-5000:]
        counts = recap(output)
        assert set(counts) >= {CONTROLLER} | set(others), counts
        assert target not in counts, counts
        assert all(c["failed"] == 0 and c["unreachable"] == 0 for c in counts.values()), counts
        flat = " ".join(output.split())
        assert "%s is not in this run and could not be read (" % target in flat, output[-5000:]
        pairs = line_before[0].split(" ", 1)[1]
        assert "it keeps its last known definition from %s:%s, NodeName=%s %s" % (CONTROLLER, CONF, target, pairs) in flat, output[-5000:]
        assert "slurm.conf lists every compute node" not in output, output[-5000:]

        # the controller's slurm.conf has the node's line and its partitions as they were; no restart for it
        conf_after = ctl("cat %s" % CONF).stdout
        assert _definition(conf_after, target) == (line_before, partitions_before), conf_after
        assert start_times({"slurmctld": [CONTROLLER]}) == ctld_before
        listed = ctl("sinfo -N -h -o %N").stdout.split()
        assert target in listed, listed
        assert ctl("scontrol -o show node %s" % target).rc == 0
    finally:
        _bring_back(target)
    # nothing on the node changed while it was out: its slurm.conf is the one it had (and, not configless, the controller's)
    assert sh(target, "cat %s" % CONF, check=False).stdout == node_conf_before
