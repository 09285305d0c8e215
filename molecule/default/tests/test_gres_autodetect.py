"""slurm_gres_autodetect: nvml on the converged Debian 12 cluster, against the real Debian archive.

The GPU nodes have contrib in their apt sources (as a node with Debian's NVIDIA
packages has) and the simulated libnvidia-ml.so.1 installed as a package that
Provides libnvidia-ml.so.1 (>= 450, as the plugin asks). Debian 12's
slurm-wlm-nvml-plugin (22.05.8-4+deb12u2) depends on exactly
slurm-wlm-basic-plugins 22.05.8-4+deb12u2 while the archive carries deb12u3,
so the slurm role must stop before anything changes, naming both versions and
the choices (docs/slurm-gres-autodetect.md). What a user would see: one
failure per GPU node, changed=0 everywhere, the files and daemons untouched.
The success path (plugin installed, AutoDetect=nvml) needs Debian 13 nodes.
"""
import hashlib

from simcluster import CONTROLLER, GPU_NODES, NODES, recap, run_playbook, sh

PLAYBOOK = "gpucluster.bringup.slurm_cluster"


def _state():
    files = {}
    for name in NODES:
        for path in ("/etc/slurm/slurm.conf", "/etc/slurm/gres.conf", "/usr/local/lib/gpucluster-slurm/hooks.json"):
            text = sh(name, "cat %s 2>/dev/null || true" % path).stdout
            files[(name, path)] = hashlib.sha256(text.encode()).hexdigest()
    started = dict((name, sh(name, "systemctl show -p ExecMainStartTimestampMonotonic --value slurmd").stdout.strip())
                   for name in GPU_NODES)
    return files, started


def test_nvml_on_debian_12_stops_before_any_change_naming_the_pin(tmp_path):
    before = _state()
    rc, output = run_playbook(PLAYBOOK, ["-e", "slurm_gres_autodetect=nvml"], log=tmp_path / "nvml.log")
    assert rc != 0, output[-4000:]
    result = recap(output)
    assert all(result[name]["changed"] == 0 for name in NODES), result
    for name in GPU_NODES:
        assert "%s: slurm_gres_autodetect is nvml, but apt cannot install slurm-wlm-nvml-plugin" % name in output, output[-6000:]
    assert "slurm-wlm-nvml-plugin 22.05.8-4+deb12u2 depends on slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2)" in output
    # the simulated library's package satisfies the plugin's libnvidia-ml dependency: only the pin is named
    assert "which no package of this node provides" not in output
    assert _state() == before
    for name in GPU_NODES:
        assert sh(name, "dpkg -s slurm-wlm-nvml-plugin", check=False).rc != 0
    nodes = sh(CONTROLLER, "sinfo -h -N -o '%N %T'").stdout.split("\n")
    assert all(line.split()[1] == "idle" for line in nodes if line.split() and line.split()[0] in GPU_NODES), nodes
