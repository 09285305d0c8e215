"""Debian 12's Slurm 22.05 to Debian 13's 24.11: refused before anything changes, and, forced, stopped safely.

24.11 is four major releases after 22.05; SchedMD supports three from 24.11 on, and 24.11's slurmdbd
refuses a 22.05 database. Debian ships no 23.x to go through, so the plan stops with the releases to go
through. Forced (slurm_upgrade_force_unsupported), the slurmdbd step fails for real before any
conversion: Debian 13's Slurm packages cannot be configured on Debian 12 (their sysusers.d file uses the
'u!' modifier, unknown to systemd 252). The play must stop before slurmctld, leave slurmctld and slurmd
running 22.05, and say how to restore the backup - and doing what it says must bring accounting back.
A failed schema conversion itself is shown in test_2 (Slurm 26.05 without the ALTER privilege).
"""
import re

import pytest

from upgrade_cluster import (CONTROLLER, COMPUTE, add_apt_source, bring_up, main_pid, out, package_version, playbook,
                             sacct_jobs, sh, wait_job)

SUITE = "bookworm"
BEFORE = {}


@pytest.fixture(scope="module", autouse=True)
def cluster_22_05():
    bring_up(SUITE, "1")


def test_before_a_job_is_accounted():
    assert package_version(CONTROLLER, "slurmdbd").startswith("22.05.")
    job = out(CONTROLLER, "sbatch --parsable -w gpu-01 --gres=gpu:1 --wrap true")
    wait_job(CONTROLLER, job)
    add_apt_source("trixie")
    BEFORE.update(jobs=sacct_jobs(), ctld_pid=main_pid(CONTROLLER, "slurmctld"),
                  slurmd_pids={node: main_pid(node, "slurmd") for node in COMPUTE})


def test_the_plan_names_the_releases_to_go_through_and_changes_nothing():
    run = playbook(SUITE, "slurm_upgrade.yml", "-e", "slurm_upgrade_apt_default_release=trixie", log="1-refused.log")
    assert run.returncode != 0
    assert "The Slurm upgrade cannot be made, nothing was changed: Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step" in run.stdout
    assert "upgrade through 22.05 -> 23.11 -> 24.11" in run.stdout
    assert package_version(CONTROLLER, "slurmdbd").startswith("22.05.")
    assert sh(CONTROLLER, "test -e /var/backups/slurmdbd", check=False).returncode != 0


def test_a_forced_upgrade_stops_at_the_failed_slurmdbd_step_before_slurmctld():
    run = playbook(SUITE, "slurm_upgrade.yml", "-e", "slurm_upgrade_apt_default_release=trixie",
                   "-e", "slurm_upgrade_force_unsupported=true", log="1-forced.log")
    assert run.returncode != 0
    assert "slurm_upgrade_force_unsupported is set: Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step" in run.stdout
    assert "The slurmdbd upgrade 22.05.8 -> 24.11.5 failed on ctl at 'Install the new Slurm packages of the host (exact versions)'" in run.stdout
    assert "The play stopped before slurmctld" in run.stdout
    assert "PLAY [Slurm upgrade - slurmctld" not in run.stdout
    BEFORE["message"] = run.stdout
    # slurmdbd's package was replaced (left unconfigured); slurmctld and the slurmd still run their 22.05 processes
    assert package_version(CONTROLLER, "slurmdbd").startswith("24.11.")
    assert main_pid(CONTROLLER, "slurmctld") == BEFORE["ctld_pid"]
    for node in COMPUTE:
        assert main_pid(node, "slurmd") == BEFORE["slurmd_pids"][node]
        assert package_version(node, "slurmd").startswith("22.05.")
    # the 22.05 clients of a compute node still reach slurmctld, and jobs still run
    sh("gpu-02", "srun -N1 -w gpu-02 true")
    assert sh(CONTROLLER, "test -e /usr/sbin/policy-rc.d", check=False).returncode != 0


def test_doing_what_the_message_says_brings_accounting_back():
    message = BEFORE["message"]
    downgrade = re.search(r"\(1\) (apt-get install --allow-downgrades [^;]+);", message).group(1)
    restore = re.search(r"\(2\) restore the database from the dump taken before: (mysql < \S+\.sql)", message).group(1)
    sh(CONTROLLER, "DEBIAN_FRONTEND=noninteractive %s -y -o Dpkg::Options::=--force-confold" % downgrade)
    sh(CONTROLLER, restore)
    sh(CONTROLLER, "systemctl restart slurmdbd")
    assert package_version(CONTROLLER, "slurmdbd").startswith("22.05.")
    wait = sh(CONTROLLER, "for i in $(seq 60); do sacctmgr -n show cluster >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1",
              check=False)
    assert wait.returncode == 0, "slurmdbd 22.05 did not come back"
    after = sacct_jobs()
    for job, record in BEFORE["jobs"].items():
        assert after[job] == record
    job = out(CONTROLLER, "sbatch --parsable -w gpu-02 --wrap true")
    assert wait_job(CONTROLLER, job) == "COMPLETED"
