"""The simulated cluster on SchedMD's slurm-smd packages of Slurm 26.05.3 (issue 46 item 3, the cluster half).

scripts/lib/smd_build.sh builds the packages through playbooks/slurm_build_packages.yml (the first half of
``scripts/test.sh smd``) and prints their directory, given here as ``GPUCLUSTER_SMD_DEBS``. This brings the simulated
cluster up (scripts/cluster.sh) and runs site.yml on it with ``slurm_install_source: local`` and that directory as
``slurm_local_package_dir``, then checks on the real daemons: every Slurm host has SchedMD's packages of the built
release and none of Debian's, SlurmUser has the fixed uid and gid on every host, the nodes registered their GPUs, a
job runs across both GPU nodes, and a second site.yml run changes nothing.

When it runs: ``GPUCLUSTER_SMD_DEBS`` set (``bash scripts/test.sh deps smd``); otherwise skipped. About the time of the
default scenario's converge on 2 cores.
"""
import glob
import os
import re
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
