"""slurm_gres_autodetect: nvml on the converged cluster, against the real Debian archive and the real plugin.

Debian 13 (the default scenario): the role installs Debian's slurm-wlm-nvml-plugin 24.11, gres.conf says
AutoDetect=nvml, and the real slurmd detects every GPU and MIG instance through Slurm's own NVML plugin over
the simulated libnvidia-ml.so.1 (whose /proc/driver/nvidia-caps/mig-minors the simulated nodes expose as the
driver does); jobs get their GPUs and end at once; switching back to off restores the facts' gres.conf.

Debian 12 (molecule/bookworm imports check_nvml_on_debian_12_stops_before_any_change_naming_the_pin): the GPU nodes have contrib in their apt sources (as a node with Debian's NVIDIA
packages has) and the simulated libnvidia-ml.so.1 installed as a package that
Provides libnvidia-ml.so.1 (>= 450, as the plugin asks). Debian 12's
slurm-wlm-nvml-plugin (22.05.8-4+deb12u2) depends on exactly
slurm-wlm-basic-plugins 22.05.8-4+deb12u2 while the archive carries deb12u3,
so the slurm role must stop before anything changes, naming both versions and
the choices (docs/slurm-gres-autodetect.md). What a user would see: one
failure per GPU node, changed=0 everywhere, the files and daemons untouched.
"""
import hashlib
import re
import time

import pytest

from simcluster import CONTROLLER, GPU_NODES, NODES, SLURM_PLAY_HOSTS, assert_no_change, recap, run_playbook, sh, shown_gres, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

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


def _release():
    return sh(CONTROLLER, "sinfo --version").stdout.split()[-1]


def check_nvml_on_debian_12_stops_before_any_change_naming_the_pin(tmp_path):
    assert _release().startswith("22.05."), _release()
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


def _gres(name):
    """The node's GRES as slurmctld shows them, in name order (the plugin registers the whole GPUs before the MIG
    instances) and without the socket binding, which slurmctld keeps after the switch back."""
    return ",".join(sorted(shown_gres(name).split(",")))


def _every_gpu_job(name, gres, step=True):
    """A job holding every GPU GRES of the node runs: what a core binding without a core (a GPU Slurm can never
    give) would refuse with "Requested node configuration is not available". ``step=False``: the allocation alone
    (salloc): under AutoDetect=nvml Slurm 24.11 allocates it but refuses a step over every GRES of a node mixing MIG
    instances and whole GPUs ("Invalid generic resource (gres) specification"; seen here, not investigated yet)."""
    total = sum(int(re.match(r"\d+", item.split(":")[2]).group()) for item in gres.split(","))
    if step:
        job = sh(CONTROLLER, "timeout 60 srun -w %s --gres=gpu:%d printenv CUDA_VISIBLE_DEVICES" % (name, total), check=False)
        assert job.rc == 0 and job.stdout.strip(), (name, gres, job.stdout, job.stderr)
    else:
        job = sh(CONTROLLER, "timeout 60 salloc -w %s --gres=gpu:%d true" % (name, total), check=False)
        assert job.rc == 0 and "Granted job allocation" in job.stderr, (name, gres, job.stdout, job.stderr)


def test_nvml_on_debian_13_slurm_detects_every_gpu_itself_and_off_puts_the_facts_back(tmp_path):
    assert _release().startswith("24.11."), _release()
    gres = dict((name, _gres(name)) for name in GPU_NODES)
    try:
        rc, output = run_playbook(PLAYBOOK, ["-e", "slurm_gres_autodetect=nvml"], log=tmp_path / "nvml.log")
        assert rc == 0, output[-6000:]
        for name in GPU_NODES:
            assert sh(name, "dpkg-query -W -f='${Status}' slurm-wlm-nvml-plugin").stdout == "install ok installed"
            conf = sh(name, "cat /etc/slurm/gres.conf").stdout
            assert re.search(r"^AutoDetect=nvml$", conf, re.M), conf
            assert not re.search(r"^Name=gpu", conf, re.M), conf
        wait_idle(GPU_NODES)
        # slurmd registered what its NVML plugin found: the same GRES as the facts, MIG instances included
        assert dict((name, _gres(name)) for name in GPU_NODES) == gres
        for name in GPU_NODES:
            detected = sh(name, "slurmd -G 2>&1").stdout
            # (24.11 prints "Flags=", 22.05 "Flags:")
            assert re.search(r"^slurmd: Gres Name=gpu Type=\S+ Count=1 .*Flags[=:]HAS_FILE,HAS_TYPE,ENV_NVML$", detected, re.M), detected
            assert "Discarding" not in detected and "being ignored" not in detected, detected
        # a job on every GRES type of each node gets its device and ends at once (the plugin asks NVML for the
        # running processes of the job's GPUs when the step ends)
        for name in GPU_NODES:
            for item in gres[name].split(","):
                kind, type_, _count = item.split(":")
                started = time.time()
                job = sh(CONTROLLER, "timeout 60 srun -w %s --gres=%s:%s:1 printenv CUDA_VISIBLE_DEVICES" % (name, kind, type_))
                assert job.stdout.strip(), (name, item, job.stdout, job.stderr)
                assert "error" not in job.stderr, job.stderr
                assert time.time() - started < 20, (name, item, time.time() - started)
                # (a MIG job sees "0" here: Slurm 24.11 exports the index within the job, where the 22.05
                # oracle recorded the MIG UUID; docs/slurm-gres-autodetect.md)
                assert re.match(r"^(\d+(,\d+)*|MIG-[0-9a-f-]+)$", job.stdout.strip()), job.stdout
        # the core bindings the plugin made from NVML's CPU affinity leave every GPU usable at once
        for name in GPU_NODES:
            _every_gpu_job(name, gres[name], step=False)
        rc, output = run_playbook(PLAYBOOK, ["-e", "slurm_gres_autodetect=nvml"], log=tmp_path / "nvml-again.log")
        assert rc == 0, output[-6000:]
        assert_no_change(output, SLURM_PLAY_HOSTS)
    finally:
        rc, output = run_playbook(PLAYBOOK, log=tmp_path / "off.log")
        assert rc == 0, output[-6000:]
    for name in GPU_NODES:
        assert re.search(r"^Name=gpu ", sh(name, "cat /etc/slurm/gres.conf").stdout, re.M)
    wait_idle(GPU_NODES)
    assert dict((name, _gres(name)) for name in GPU_NODES) == gres
    # slurmctld keeps the core bindings NVML gave while a gres.conf line states none (Slurm's gres.c): still usable
    for name in GPU_NODES:
        _every_gpu_job(name, gres[name])
