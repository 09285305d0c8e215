"""slurm_configless: true on the converged cluster, then back (issue 19 item 3).

What an administrator sees: after the slurm stage with slurm_configless, the controller alone holds slurm.conf
(with SlurmctldParameters=enable_configless), cgroup.conf and one gres.conf with NodeName= lines for every GPU
node; the compute nodes have none of them, their slurmd runs with --conf-server ctl:6817 and keeps the files
slurmctld served in its cache (/run/slurm/conf), where the commands run on the node read them too. Every node
registers the same GRES as before, GPU and MIG jobs run, a changed setting reaches the nodes through scontrol
reconfigure alone, and a second run changes nothing. Switching back puts each node's own files back.
"""
import json
import re

import pytest

from simcluster import COMPUTE, CONTROLLER, GPU_NODES, NODES, SIMULATED_VARS, assert_no_change, ctl, reconfigure_restarts, run_playbook, sh, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

PLAYBOOK = "gpucluster.bringup.slurm_cluster"
FILES = ("slurm.conf", "gres.conf", "cgroup.conf")


def _gres():
    return dict((name, re.search(r"^\s*Gres=(\S+)", ctl("scontrol show node %s" % name).stdout, re.M).group(1)) for name in GPU_NODES)


def _run(tmp_path, name, **extra):
    extra.setdefault("slurm_configless", True)
    rc, output = run_playbook(PLAYBOOK, ["-e", json.dumps(extra)], log=tmp_path / ("%s.log" % name))
    assert rc == 0, output[-6000:]
    return output


@pytest.mark.ci  # also in CI's molecule stage (conftest.py)
def test_configless_serves_the_files_from_the_controller_and_switching_back_restores_them(tmp_path):
    wait_idle(COMPUTE)
    gres = _gres()
    try:
        output = _run(tmp_path, "configless")
        wait_idle(COMPUTE)
        conf = sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout
        assert re.search(r"^SlurmctldParameters=enable_configless$", conf, re.M), conf
        served = sh(CONTROLLER, "cat /etc/slurm/gres.conf").stdout
        for name in GPU_NODES:
            assert re.search(r"^NodeName=%s Name=gpu " % name, served, re.M), served
        for name in COMPUTE:
            for path in FILES:
                assert sh(name, "test -e /etc/slurm/%s" % path, check=False).rc != 0, (name, path)
            assert 'SLURMD_OPTIONS="--conf-server ctl:6817"' in sh(name, "cat /etc/default/slurmd").stdout
            assert "--conf-server ctl:6817" in sh(name, "ps -o args= -C slurmd").stdout
            # the files slurmctld served, where slurmd keeps them and the node's commands read them
            assert sh(name, "cat /run/slurm/conf/slurm.conf").stdout == conf
            assert sh(name, "scontrol show config | sed -n 's/^ClusterName *= *//p'").stdout.strip() == "gpucluster"
        assert _gres() == gres
        for name in GPU_NODES:
            job = ctl("timeout 60 srun -w %s --gres=gpu:1 printenv CUDA_VISIBLE_DEVICES" % name)
            assert job.stdout.strip(), job.stdout
        mig = ctl("timeout 60 srun -w gpu-01 --gres=gpu:1g.10gb:1 printenv CUDA_VISIBLE_DEVICES")
        assert mig.stdout.strip().startswith("MIG-"), mig.stdout

        # a changed setting reaches the nodes through the controller alone
        overrides = dict(SIMULATED_VARS["slurm_conf_overrides"], KillWait=29)
        output = _run(tmp_path, "killwait", slurm_conf_overrides=overrides)
        assert "changed: [ctl]" in output.split("TASK [gpucluster.bringup.slurm : Write slurm.conf]")[1].split("TASK")[0]
        if reconfigure_restarts():
            assert re.search(r"TASK \[gpucluster.bringup.slurm : Reconfigure Slurm\] \*+\nchanged:", output), output[-4000:]
        wait_idle(COMPUTE)
        for name in COMPUTE:
            assert re.search(r"^KillWait=29$", sh(name, "cat /run/slurm/conf/slurm.conf").stdout, re.M), name
            assert sh(name, "test -e /etc/slurm/slurm.conf", check=False).rc != 0

        output = _run(tmp_path, "again", slurm_conf_overrides=overrides)
        assert_no_change(output, NODES)  # (the login node included)
    finally:
        output = _run(tmp_path, "back", slurm_configless=False)
    wait_idle(COMPUTE)
    for name in COMPUTE:
        for path in FILES:
            assert sh(name, "test -s /etc/slurm/%s" % path, check=False).rc == 0, (name, path)
        assert "--conf-server" not in sh(name, "cat /etc/default/slurmd").stdout
        assert "--conf-server" not in sh(name, "ps -o args= -C slurmd").stdout
    assert "enable_configless" not in sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout
    assert _gres() == gres
