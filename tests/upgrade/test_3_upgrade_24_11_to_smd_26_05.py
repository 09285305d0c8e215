"""Debian 13's own Slurm 24.11 to SchedMD's slurm-smd 26.05.3 packages, the package flavour switched on the way (issue 46 item 4).

The cluster is brought up on Debian 13's packages with site.yml, runs jobs and accounting; the slurm-smd packages come
from scripts/lib/smd_build.sh (playbooks/slurm_build_packages.yml from the release tarball, cached by content hash; the
upgrade stage builds them and passes their directory as GPUCLUSTER_SMD_DEBS). playbooks/slurm_upgrade.yml then
upgrades with ``slurm_upgrade_package_dir`` pointing there: slurmdbd (database dump, conversion in the foreground),
slurmctld, each slurmd while a job runs on it, the login node - every host ending with SchedMD's packages and none of
Debian's. Before that, the directory's mistakes are refused with nothing changed: a directory mixing the flavours, one
lacking a daemon's package, and both sources named. What a user would look at is checked afterwards: the packages, the
daemons' versions, sacct and sacctmgr, the job that ran across the upgrade, the GRES, a new GPU job, pyxis, and a
second run that changes nothing.
"""
import glob
import os
import re
import shutil
import tempfile

import pytest

from upgrade_cluster import (CONTROLLER, COMPUTE, LOGIN, assert_no_change, bring_up, main_pid, out, playbook, pyxis_built, sacct_jobs,
                             sh, wait_job)

SUITE = "trixie"
DEBS = os.environ.get("GPUCLUSTER_SMD_DEBS", "")
HOSTS = [CONTROLLER] + COMPUTE + [LOGIN]
BEFORE = {}

pytestmark = pytest.mark.skipif(not DEBS, reason="needs SchedMD's packages: GPUCLUSTER_SMD_DEBS (bash scripts/test.sh deps upgrade builds them)")


def _release():
    found = glob.glob(os.path.join(DEBS, "slurm-smd_*.deb"))
    assert len(found) == 1, "%s holds %s, expected one slurm-smd .deb" % (DEBS, found)
    return re.match(r"slurm-smd_([0-9.]+)-", os.path.basename(found[0])).group(1)


def installed(node):
    """{package: version} of the installed Slurm packages of either flavour."""
    listed = out(node, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n' 'slurm*' 'libslurm*' 'libpam-slurm*' 'sackd' 2>/dev/null "
                       "| awk '$1 == \"ii\" {print $2, $3}' || true")
    return dict(line.split()[:2] for line in listed.splitlines() if line.strip())


def upgrade(*args, log):
    return playbook(SUITE, "slurm_upgrade.yml", "-e", "slurm_upgrade_package_dir=" + DEBS, *args, log=log)


@pytest.fixture(scope="module", autouse=True)
def cluster_24_11():
    if not DEBS:
        yield
        return
    bring_up(SUITE, "3")
    yield


@pytest.fixture()
def scratch_dir():
    path = tempfile.mkdtemp(prefix="gcsim-upgrade-debs-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_before_debians_packages_jobs_and_accounting():
    packages = installed(CONTROLLER)
    assert packages.get("slurmctld", "").startswith("24.11.") and packages.get("slurmdbd", "").startswith("24.11."), packages
    assert not [name for name in packages if name.startswith("slurm-smd")], packages
    sh(CONTROLLER, "sacctmgr -i add account smdacct Description=kept && sacctmgr -i add user root account=smdacct")
    sh(CONTROLLER, "srun -N1 -w gpu-02 --gres=gpu:1 true")
    sh(CONTROLLER, "srun -N1 -w gpu-01 --account=smdacct true")
    BEFORE.update(
        jobs=sacct_jobs(),
        assoc=out(CONTROLLER, "sacctmgr -n -P show assoc format=Cluster,Account,User,QOS"),
        gres=out(CONTROLLER, "sinfo -N -h -o '%N %G'"),
        packages={node: installed(node) for node in HOSTS},
    )
    assert "smdacct" in BEFORE["assoc"]


def _refused(run, *fragments):
    assert run.returncode != 0, run.stdout[-3000:]
    for fragment in fragments:
        assert fragment in run.stdout, (fragment, run.stdout[-4000:])
    for node in HOSTS:
        assert installed(node) == BEFORE["packages"][node], node
    assert sh(CONTROLLER, "test -e /usr/sbin/policy-rc.d", check=False).returncode != 0


def test_a_directory_mixing_the_flavours_is_refused_with_nothing_changed(scratch_dir):
    for path in glob.glob(os.path.join(DEBS, "*.deb")):
        os.symlink(path, os.path.join(scratch_dir, os.path.basename(path)))
    open(os.path.join(scratch_dir, "slurmd_24.11.5-4_amd64.deb"), "w").close()
    run = playbook(SUITE, "slurm_upgrade.yml", "-e", "slurm_upgrade_package_dir=" + scratch_dir, log="3-mixed.log")
    _refused(run, "The Slurm upgrade cannot be made, nothing was changed", "slurm_upgrade_package_dir holds both Debian's Slurm packages "
             "(slurmd_24.11.5-4_amd64.deb) and SchedMD's slurm-smd packages")


def test_a_directory_without_slurmds_package_is_refused_by_host(scratch_dir):
    for path in glob.glob(os.path.join(DEBS, "*.deb")):
        if not os.path.basename(path).startswith("slurm-smd-slurmd_"):
            os.symlink(path, os.path.join(scratch_dir, os.path.basename(path)))
    run = playbook(SUITE, "slurm_upgrade.yml", "-e", "slurm_upgrade_package_dir=" + scratch_dir, log="3-missing.log")
    _refused(run, "gpu-01: slurm_upgrade_package_dir holds SchedMD's slurm-smd packages of Slurm %s but not slurm-smd-slurmd" % _release(),
             "gpu-02: slurm_upgrade_package_dir holds")
    assert "ctl: slurm_upgrade_package_dir holds" not in run.stdout


def test_both_sources_are_refused():
    run = upgrade("-e", "slurm_upgrade_apt_default_release=forky", log="3-both.log")
    _refused(run, "slurm_upgrade_package_dir is '%s' and slurm_upgrade_apt_default_release is 'forky'" % DEBS)


def test_check_mode_names_the_switch_and_changes_nothing():
    run = upgrade("--check", "-e", "slurm_upgrade_validate=false", log="3-check.log")
    assert run.returncode == 0, run.stdout[-4000:]
    assert ("Slurm 24.11.5 -> %s: slurmdbd on ctl, then slurmctld on ctl, then slurmd on gpu-01, gpu-02, then the login nodes on login; "
            "SchedMD's slurm-smd packages replace Debian's packages on ctl, gpu-01, gpu-02, login" % _release()) in run.stdout
    for node in HOSTS:
        assert installed(node) == BEFORE["packages"][node], node


def test_upgrade_to_smd_with_a_job_running():
    long_job = out(CONTROLLER, "sbatch --parsable --account=smdacct -w gpu-01 --wrap 'sleep 150'")
    wait_job(CONTROLLER, long_job, states=("RUNNING",), timeout=60)
    BEFORE.update(long_job=long_job, slurmd_pid=main_pid("gpu-01", "slurmd"))
    run = upgrade("-e", "slurm_upgrade_batch=1", log="3-upgrade.log")
    assert run.returncode == 0, run.stdout[-6000:]
    assert re.search(r"slurmdbd (changed the database schema \(\d+ lines of output about it\)|started; it printed no schema change)", run.stdout)
    summary = re.findall(r"\b(?:PASS: \d+ checks passed, \d+ skipped|FAIL: \d+ of \d+ checks failed|SKIPPED: all \d+ checks were skipped)",
                         run.stdout)
    assert summary and re.match(r"PASS: [1-9]\d* checks passed", summary[-1]), summary or run.stdout[-4000:]
    for node in HOSTS:
        assert sh(node, "test -e /usr/sbin/policy-rc.d", check=False).returncode != 0, node


@pytest.mark.parametrize("node", HOSTS)
def test_every_host_has_schedmds_packages_and_none_of_debians(node):
    packages = installed(node)
    assert packages.get("slurm-smd", "").startswith(_release() + "-"), packages
    # Debian's library of the old release (libslurm42t64: no file in common with slurm-smd) is all that stays of Debian's
    # packages, no longer needed by any: apt-get autoremove would take it, as it does any package nothing needs
    leftover = [name for name in packages if not name.startswith("slurm-smd")]
    assert all(re.match(r"^libslurm[0-9]+(t64)?$", name) for name in leftover), packages
    autoremove = out(node, "apt-get -s autoremove 2>/dev/null | awk '/^Remv/ {print $2}'").split()
    assert set(leftover) <= set(autoremove), (leftover, autoremove)
    daemon = {"ctl": "slurmctld", "login": "slurm-smd-client"}.get(node, "slurmd")
    assert daemon == "slurm-smd-client" or "slurm-smd-" + daemon in packages, packages
    assert out(node, "id -u slurm; id -g slurm").split() == ["64030", "64030"]


def test_every_daemon_runs_the_new_release():
    release = _release()
    assert out(CONTROLLER, "slurmdbd -V") == "slurm %s" % release
    assert "SLURM_VERSION           = %s" % release in out(CONTROLLER, "scontrol show config")
    assert out(CONTROLLER, "sinfo -N -h -o '%N %v'").splitlines() == ["gpu-01 %s" % release, "gpu-02 %s" % release]
    assert out(LOGIN, "sinfo --version") == "slurm %s" % release


def test_the_old_jobs_and_associations_are_intact():
    after = sacct_jobs()
    for job, record in BEFORE["jobs"].items():
        assert after[job] == record, (job, record, after.get(job))
    assert out(CONTROLLER, "sacctmgr -n -P show assoc format=Cluster,Account,User,QOS") == BEFORE["assoc"]


def test_the_job_running_during_the_upgrade_completed_and_is_accounted():
    assert main_pid("gpu-01", "slurmd") != BEFORE["slurmd_pid"]
    assert wait_job(CONTROLLER, BEFORE["long_job"], timeout=240) == "COMPLETED"
    assert sacct_jobs()[BEFORE["long_job"]] == "wrap|COMPLETED|smdacct|0:0"


def test_nodes_keep_their_gres_and_a_new_gpu_job_runs():
    assert out(CONTROLLER, "sinfo -N -h -o '%N %G'") == BEFORE["gres"]
    job = out(CONTROLLER, "sbatch --parsable -w gpu-02 --gres=gpu:a100:2 --wrap 'test -n \"$CUDA_VISIBLE_DEVICES\"'")
    assert wait_job(CONTROLLER, job) == "COMPLETED"
    assert out(CONTROLLER, "sacct -X -n -P -j %s -o AllocTRES" % job).count("gres/gpu=2") == 1


def test_pyxis_was_rebuilt_against_the_new_release():
    for node in HOSTS:
        assert pyxis_built(node) == _release(), node


def test_a_second_run_changes_nothing():
    run = upgrade("-e", "slurm_upgrade_validate=false", log="3-second.log")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "Every Slurm daemon runs %s: nothing to upgrade" % _release() in run.stdout
    assert_no_change(run.stdout, HOSTS)
