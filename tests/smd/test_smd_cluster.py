"""The simulated cluster on SchedMD's slurm-smd packages of Slurm 26.05.3 (issue 46 item 3, the cluster half).

scripts/lib/smd_build.sh builds the packages through playbooks/slurm_build_packages.yml (the first half of
``scripts/test.sh smd``) and prints their directory, given here as ``GPUCLUSTER_SMD_DEBS``. This brings the simulated
cluster up (scripts/cluster.sh) and runs site.yml on it with ``slurm_install_source: local`` and that directory as
``slurm_local_package_dir``, then checks on the real daemons: every Slurm host has SchedMD's packages of the built
release and none of Debian's, SlurmUser has the fixed uid and gid on every host, the nodes registered their GPUs, a
job runs across both GPU nodes, and a second site.yml run changes nothing. Then the 26.05 behaviour changes the
collection handles where it generates config or jobs (docs/slurm-versions.md), on the real 26.05 daemons, each
through ``site.yml --tags slurm`` and put back afterwards: topology.yaml (slurm_topology: block) is what slurmctld
reads; the GPU requests the collection generates run, --gpus-per-node alone runs, and the two together are refused
by srun; slurmctld takes the HealthCheckNodeState value only 26.05 has, and the role refuses one slurmctld would not.

When it runs: ``GPUCLUSTER_SMD_DEBS`` set (``bash scripts/test.sh deps smd``); otherwise skipped. About the time of the
default scenario's converge on 2 cores.
"""
import glob
import json
import os
import re
import shlex
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PODMAN = os.path.join(ROOT, "scripts", "lib", "podman")
DEBS = os.environ.get("GPUCLUSTER_SMD_DEBS", "")
PREFIX = "gcsim-"
SLURM_HOSTS = ("ctl", "gpu-01", "gpu-02")
GPU_NODES = ("gpu-01", "gpu-02")
UID = 64030

pytestmark = pytest.mark.skipif(not DEBS, reason="the cluster on slurm-smd packages runs with GPUCLUSTER_SMD_DEBS "
                                                 "(bash scripts/test.sh deps smd)")


def _release():
    found = glob.glob(os.path.join(DEBS, "slurm-smd_*.deb"))
    assert len(found) == 1, "%s holds %s, expected one slurm-smd .deb" % (DEBS, found)
    return re.match(r"slurm-smd_([0-9.]+)-", os.path.basename(found[0])).group(1)


def cluster(*args, **kwargs):
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "cluster.sh")] + list(args), cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False, **kwargs)


def on(node, command):
    return subprocess.run([PODMAN, "exec", PREFIX + node, "bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)


def site(*extra):
    return cluster("playbook", "playbooks/site.yml", "-e", "slurm_install_source=local", "-e", "slurm_local_package_dir=" + DEBS,
                   *extra, timeout=3600)


@pytest.fixture(scope="module")
def up():
    release = _release()
    down = cluster("down")
    assert down.returncode == 0, down.stdout[-3000:]
    started = cluster("up", timeout=1800)
    assert started.returncode == 0, started.stdout[-6000:]
    first = site()
    try:
        assert first.returncode == 0, "site.yml on the slurm-smd packages failed:\n" + first.stdout[-8000:]
        yield {"release": release, "first": first.stdout}
    finally:
        if os.environ.get("GPUCLUSTER_SMD_KEEP") != "1":
            cluster("down")


@pytest.mark.parametrize("node", SLURM_HOSTS)
def test_schedmds_packages_and_none_of_debians(up, node):
    listed = on(node, "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' 'slurm*' 'libslurm*' 'libpam-slurm*' 2>/dev/null "
                      "| grep 'install ok installed'").stdout
    packages = dict(line.split()[:2] for line in listed.splitlines() if line.strip())
    assert packages.get("slurm-smd", "").startswith(up["release"] + "-"), listed
    debians = sorted(name for name in packages if not name.startswith("slurm-smd"))
    assert debians == [], "Debian's Slurm packages on %s: %s" % (node, debians)
    daemon = "slurmctld" if node == "ctl" else "slurmd"
    version = on(node, "%s -V" % daemon).stdout.strip()
    assert version == "slurm %s" % up["release"], version


@pytest.mark.parametrize("node", SLURM_HOSTS)
def test_slurm_user_has_the_fixed_ids(up, node):
    assert on(node, "id -u slurm; id -g slurm").stdout.split() == [str(UID), str(UID)]


def test_nodes_registered_their_gpus_and_a_job_runs_across_them(up):
    nodes = on("ctl", "sinfo -h -N -o '%N %t %G'").stdout
    for node in GPU_NODES:
        line = [row for row in nodes.splitlines() if row.startswith(node + " ")]
        assert line and line[0].split()[1] in ("idle", "mix", "alloc"), nodes
        assert "gpu:" in line[0], nodes
    job = on("ctl", "srun -N2 -t 1 hostname | sort")
    assert job.stdout.split() == list(GPU_NODES), job.stdout


@pytest.mark.parametrize("node", GPU_NODES)
def test_the_nvml_plugin_is_the_packages(up, node):
    """slurm-smd installed Slurm's NVML plugin in its PluginDir (the oracle, tests/oracle with GPUCLUSTER_ORACLE_SMD_DEBS,
    runs slurmd -G through it on every simulator preset)."""
    plugin = on(node, "dpkg -L slurm-smd | grep '/gpu_nvml[.]so$'").stdout.strip()
    assert re.match(r"^/usr/lib/[a-z0-9_]+-linux-gnu/slurm/gpu_nvml[.]so$", plugin), plugin
    assert on(node, "test -f " + plugin).returncode == 0


def test_a_second_run_changes_nothing(up):
    again = site()
    assert again.returncode == 0, again.stdout[-6000:]
    recap = [line for line in again.stdout.splitlines() if re.match(r"^\S+\s+: ok=", line)]
    changed = [line for line in recap if not re.search(r"changed=0\b", line)]
    assert recap and not changed, "\n".join(recap)


# --- 26.05 behaviour changes where the collection generates config or jobs (issue 46 item 3) ------------------------
# (after test_a_second_run_changes_nothing: each puts the cluster back with another --tags slurm run)

DOMAIN = "6d1e3f2a-9b1c-4c2e-8f00-1a2b3c4d5e6f"
TOPOLOGY_HEADER = "# topology.yaml written by gpucluster.bringup.slurm_topology (%s)"


def slurm_stage(**extra_vars):
    return site("--tags", "slurm", "-e", json.dumps(extra_vars))


def _release_tuple(up):
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
    return sv.parse_version(up["release"])


def _idle():
    """Wait (up to a minute) until no job is left on the cluster."""
    on("ctl", "for i in $(seq 60); do [ -z \"$(squeue -h)\" ] && break; sleep 1; done")


def test_topology_yaml_is_what_slurmctld_reads(up):
    """slurm_topology: block on 26.05 writes topology.yaml (no topology.conf), and scontrol shows its block."""
    import yaml
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
    assert sv.behaviour(_release_tuple(up))["topology_file"] == "topology.yaml"
    node = GPU_NODES[0]
    on(node, "nvmlsim fabric-domain --cluster-uuid %s --clique 7" % DOMAIN)
    try:
        _idle()
        stage = slurm_stage(slurm_topology="block")
        assert stage.returncode == 0, stage.stdout[-6000:]
        text = on("ctl", "cat /etc/slurm/topology.yaml").stdout
        assert text.startswith(TOPOLOGY_HEADER % "block"), text
        assert yaml.safe_load(text) == [{"topology": "default", "cluster_default": True,
                                         "block": {"blocks": [{"block": "block1", "nodes": node}]}}], text
        assert on("ctl", "test -e /etc/slurm/topology.conf").returncode != 0
        shown = on("ctl", "scontrol show topology").stdout
        assert [line for line in shown.splitlines() if re.search(r"\bBlockName=block1\b", line) and re.search(r"\bNodes=%s\b" % node, line)], shown
        job = on("ctl", "srun -N1 -t 1 -w %s hostname" % node)
        assert job.returncode == 0 and job.stdout.strip() == node, job.stdout
    finally:
        on(node, "nvmlsim fabric-domain --clear")
        _idle()
        back = slurm_stage(slurm_topology="none")
        assert back.returncode == 0, back.stdout[-6000:]
    assert on("ctl", "test -e /etc/slurm/topology.yaml").returncode != 0
    assert "BlockName" not in on("ctl", "scontrol show topology").stdout


def test_gpu_requests_as_the_collection_generates_them(up):
    """The validate role's --gres=gpu job and the NCCL stage's srun line run on 26.05; --gpus-per-node alone runs; srun
    refuses the two together, as gpu_request_problem says."""
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_checks as vc
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn
    release = _release_tuple(up)
    _idle()
    gres_job = [job for job in vc.slurm_jobs({"nodes": [{"name": GPU_NODES[0], "gpus": 1, "usable": True}]}) if job["kind"] == "gres"]
    nccl = vn.srun_argv("/bin/true", [GPU_NODES[1]], 1, False, None, {}, exclusive=False)
    for argv in (gres_job[0]["argv"], nccl):
        assert sv.gpu_request_problem(argv, release) == ""
        ran = on("ctl", " ".join(shlex.quote(word) for word in argv))
        assert ran.returncode == 0, (argv, ran.stdout)
    per_node = on("ctl", "srun -N1 -t 1 -w %s --gpus-per-node=1 printenv CUDA_VISIBLE_DEVICES" % GPU_NODES[0])
    assert per_node.returncode == 0 and per_node.stdout.strip(), per_node.stdout
    both = ["srun", "-N1", "-t", "1", "-w", GPU_NODES[0], "--gres=gpu:1", "--gpus-per-node=1", "true"]
    assert "mutually exclusive" in sv.gpu_request_problem(both, release)
    refused = on("ctl", " ".join(both))
    assert refused.returncode != 0 and "--gpus-per-node and --gres=gpu are mutually exclusive" in refused.stdout, refused.stdout


def _health_state():
    shown = on("ctl", "scontrol show config | grep -i '^HealthCheckNodeState'").stdout
    return shown.split("=", 1)[1].strip() if "=" in shown else None


def test_healthcheck_node_state_of_26_05(up):
    """REBOOT_ONLY (new in 26.05) is written and slurmctld runs with it; ANY,START_ONLY (slurmctld: fatal) is refused by
    the role before slurm.conf changes; the default goes back."""
    _idle()
    before = on("ctl", "cat /etc/slurm/slurm.conf").stdout
    refused = slurm_stage(slurm_healthcheck_node_state="ANY,START_ONLY")
    assert refused.returncode != 0
    assert "HealthCheckNodeState is ANY,START_ONLY" in refused.stdout and "a *_ONLY state cannot be combined" in refused.stdout, \
        refused.stdout[-6000:]
    assert on("ctl", "cat /etc/slurm/slurm.conf").stdout == before
    try:
        taken = slurm_stage(slurm_healthcheck_node_state="REBOOT_ONLY")
        assert taken.returncode == 0, taken.stdout[-6000:]
        assert re.search(r"(?m)^HealthCheckNodeState=REBOOT_ONLY$", on("ctl", "cat /etc/slurm/slurm.conf").stdout)
        assert _health_state() == "REBOOT_ONLY"
        assert on("ctl", "systemctl is-active slurmctld").stdout.strip() == "active"
    finally:
        _idle()
        back = slurm_stage()
        assert back.returncode == 0, back.stdout[-6000:]
    assert on("ctl", "cat /etc/slurm/slurm.conf").stdout == before
