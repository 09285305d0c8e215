"""Issue 22 item 1 on the simulated cluster: slurm_topology through `site.yml --tags slurm`, and what Slurm 24.11 makes of it.

The fabrics are simulated InfiniBand fabrics read by the REAL ibnetdiscover (infiniband-diags) over ibsim
(ibsim-utils): on this machine for a dump saved as a file (slurm_topology_settings.ibnetdiscover_src), and on a GPU node
of the cluster, where the role runs it (slurm_topology_settings.ibnetdiscover_host). What the tests check is what an admin
sees: slurm.conf's TopologyPlugin, topology.conf on the Slurm hosts, `scontrol show topology` on the controller.
The module's teardown puts the cluster back to slurm_topology: none.
"""
import json
import re
import shlex
import sys

import pytest

from simcluster import COMPUTE, CONTROLLER, GPU_NODES, NODES, PREFIX, ROOT, SITE, assert_no_change, ctl, podman, run_playbook, sh, wait_idle

sys.path.insert(0, str(ROOT / "tests" / "unit"))
import ibsim_fabric  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

HEADER = "# topology.conf written by gpucluster.bringup.slurm_topology (%s): do not edit, it is rewritten"
SLURM_HOSTS = NODES  # not configless: every Slurm host has slurm.conf and topology.conf
IB_NODE = GPU_NODES[0]
SOCKET = "gpucluster-topology-test"
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
DOMAIN = "6d1e3f2a-9b1c-4c2e-8f00-1a2b3c4d5e6f"


def slurm_stage(extra_vars):
    rc, output = run_playbook(SITE, ["--tags", "slurm", "-e", json.dumps(extra_vars)])
    return rc, output


def topology_conf(name):
    result = sh(name, "cat /etc/slurm/topology.conf", check=False)
    return result.stdout if result.rc == 0 else None


def topology_plugin(name):
    found = re.findall(r"(?im)^TopologyPlugin=(\S+)$", sh(name, "cat /etc/slurm/slurm.conf").stdout)
    return found[-1] if found else None


def shown_topology():
    """{SwitchName or BlockName: {key: value}} of `scontrol show topology` on the controller."""
    shown = {}
    for line in ctl("scontrol show topology", check=False).stdout.splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        name = fields.get("SwitchName") or fields.get("BlockName")
        if name:
            shown[name] = fields
    return shown


def task_output(output, task):
    """What ansible-playbook printed under the task named ``task`` ('' when it did not run)."""
    block = re.search(r"TASK \[[^\]]*%s\][^\n]*\n(.*?)(?=\nTASK |\nPLAY RECAP|\Z)" % re.escape(task), output, re.S)
    return block.group(1) if block else ""


def task_changed(output, task):
    """Whether the task named ``task`` reported changed on any host."""
    return "changed:" in task_output(output, task)


@pytest.fixture(scope="module", autouse=True)
def back_to_none():
    yield
    if any(topology_conf(name) is not None for name in SLURM_HOSTS) or topology_plugin(CONTROLLER):
        slurm_stage({"slurm_topology": "none"})
    sh(IB_NODE, "pkill -x ibsim", check=False)


def test_tree_from_a_saved_dump_is_what_scontrol_shows(tmp_path):
    """Both GPU nodes' 8 HCAs on their own leaf, one spine; a storage adapter and a spare leaf in the fabric."""
    wait_idle(COMPUTE)
    fabric = ibsim_fabric.fat_tree(hosts=2, hcas_per_host=8, leaves=2, spines=1, extra_cas=[("stor-01 mlx5_0", 1)], empty_switches=1)
    dump = tmp_path / "fabric.txt"
    dump.write_text(ibsim_fabric.ibnetdiscover(fabric))
    lines = fabric.expected_lines(COMPUTE)
    assert lines == ["SwitchName=leaf-01 Nodes=gpu-01", "SwitchName=leaf-02 Nodes=gpu-02", "SwitchName=spine-01 Switches=leaf-[01-02]"]
    rc, output = slurm_stage({"slurm_topology": "tree", "slurm_topology_settings": {"ibnetdiscover_src": str(dump)}})
    assert rc == 0, output[-6000:]
    # the storage adapter names no Slurm node: said, not guessed
    assert "stor-01" in output
    for name in SLURM_HOSTS:
        assert topology_plugin(name) == "topology/tree", name
        assert topology_conf(name) == "\n".join([HEADER % "tree"] + lines) + "\n", name
    shown = shown_topology()
    assert shown["leaf-01"]["Nodes"] == "gpu-01" and shown["leaf-02"]["Nodes"] == "gpu-02", shown
    assert shown["spine-01"]["Switches"] == "leaf-[01-02]" and shown["spine-01"]["Level"] == "1", shown
    assert "spare-01" not in shown
    wait_idle(COMPUTE)
    # a multi-node job still runs: the spine joins the two leaves
    job = ctl("srun -N2 -t 1 hostname", check=False)
    assert job.rc == 0 and sorted(job.stdout.split()) == sorted(COMPUTE), job.stdout + job.stderr

    again_rc, again = slurm_stage({"slurm_topology": "tree", "slurm_topology_settings": {"ibnetdiscover_src": str(dump)}})
    assert again_rc == 0, again[-6000:]
    assert_no_change(again, NODES)


def test_a_fabric_read_on_a_node_is_applied_with_a_reconfigure(tmp_path):
    """ibnetdiscover run by the role on a GPU node (ibsim there: both hosts now on one leaf): a reconfigure applies it."""
    wait_idle(COMPUTE)
    install = sh(IB_NODE, "command -v ibsim >/dev/null && command -v ibnetdiscover >/dev/null || "
                          "DEBIAN_FRONTEND=noninteractive apt-get install -y -q ibsim-utils infiniband-diags", check=False)
    assert install.rc == 0, install.stdout + install.stderr
    fabric = ibsim_fabric.fat_tree(hosts=2, hcas_per_host=8, leaves=1)
    net = tmp_path / "fabric.net"
    net.write_text(fabric.net)
    podman("cp", str(net), "%s%s:/tmp/fabric.net" % (PREFIX, IB_NODE))
    sh(IB_NODE, "pkill -x ibsim; IBSIM_SOCKNAME=%s setsid nohup ibsim -s -n /tmp/fabric.net >/tmp/ibsim.log 2>&1 < /dev/null &" % SOCKET)
    command = ["env", "IBSIM_SOCKNAME=%s" % SOCKET, "LD_PRELOAD=%s" % UMAD2SIM, "SIM_HOST=gpu-01/mlx5_0", "ibnetdiscover"]
    probe = sh(IB_NODE, " ".join(shlex.quote(a) for a in command), check=False)
    assert probe.rc == 0 and "gpu-02 mlx5_0" in probe.stdout, probe.stdout[-2000:] + probe.stderr
    before = shown_topology()
    rc, output = slurm_stage({"slurm_topology": "tree",
                              "slurm_topology_settings": {"ibnetdiscover_host": IB_NODE, "ibnetdiscover_command": command}})
    assert rc == 0, output[-6000:]
    assert task_changed(output, "Reconfigure Slurm"), output[-6000:]
    assert not task_changed(output, "Restart slurmctld (before any slurmd)")
    for name in SLURM_HOSTS:
        assert topology_conf(name) == HEADER % "tree" + "\nSwitchName=leaf-01 Nodes=gpu-[01-02]\n", name
    shown = shown_topology()
    assert set(shown) == {"leaf-01"} and shown["leaf-01"]["Nodes"] == "gpu-[01-02]", (before, shown)


def test_a_dump_cut_short_stops_the_run_and_changes_nothing(tmp_path):
    wait_idle(COMPUTE)
    before = dict((name, topology_conf(name)) for name in SLURM_HOSTS)
    fabric = ibsim_fabric.fat_tree(hosts=2, hcas_per_host=8, leaves=2, spines=1)
    text = ibsim_fabric.ibnetdiscover(fabric)
    dump = tmp_path / "cut.txt"
    # whole blocks missing, as when ibnetdiscover's output is cut off (a full disk, a killed run)
    dump.write_text(text[:text.rfind("\n\n", 0, len(text) // 2) + 1])
    rc, output = slurm_stage({"slurm_topology": "tree", "slurm_topology_settings": {"ibnetdiscover_src": str(dump)}})
    assert rc != 0
    failed = task_output(output, "Write the topology file (topology.conf, topology.yaml from Slurm 25.05)")
    assert "fatal:" in failed and ("truncated" in failed or "cut short" in failed), output[-4000:]
    assert dict((name, topology_conf(name)) for name in SLURM_HOSTS) == before



def test_block_from_the_nvlink_domains_nvml_reports():
    """The H100 node's GPUs in a multi-node NVLink domain (as a GB200 NVL72 rack reports it), the A100 node in none."""
    wait_idle(COMPUTE)
    h100, a100 = GPU_NODES
    sh(h100, "nvmlsim fabric-domain --cluster-uuid %s --clique 7" % DOMAIN)
    try:
        rc, output = slurm_stage({"slurm_topology": "block"})
        assert rc == 0, output[-6000:]
        # the node without a domain is named, not dropped silently
        assert "nodes without an NVLink fabric domain" in output and a100 in output
        for name in SLURM_HOSTS:
            assert topology_plugin(name) == "topology/block", name
            assert topology_conf(name) == HEADER % "block" + "\nBlockName=block1 Nodes=%s\n" % h100, name
        shown = shown_topology()
        assert set(shown) == {"block1"} and shown["block1"]["Nodes"] == h100, shown
        wait_idle(COMPUTE)
        again_rc, again = slurm_stage({"slurm_topology": "block"})
        assert again_rc == 0, again[-6000:]
        assert_no_change(again, NODES)
    finally:
        sh(h100, "nvmlsim fabric-domain --clear")


def test_none_takes_the_plugin_out_and_removes_the_file():
    wait_idle(COMPUTE)
    rc, output = slurm_stage({"slurm_topology": "none"})
    assert rc == 0, output[-6000:]
    for name in SLURM_HOSTS:
        assert topology_plugin(name) is None, name
        assert topology_conf(name) is None, name
    assert shown_topology() == {}
    wait_idle(COMPUTE)
    # a site's own topology.conf is left alone
    sh(CONTROLLER, "echo 'SwitchName=site Nodes=gpu-[01-02]' > /etc/slurm/topology.conf")
    try:
        rc, output = slurm_stage({"slurm_topology": "none"})
        assert rc == 0, output[-6000:]
        assert_no_change(output, NODES)
        assert topology_conf(CONTROLLER) == "SwitchName=site Nodes=gpu-[01-02]\n"
    finally:
        sh(CONTROLLER, "rm -f /etc/slurm/topology.conf")
