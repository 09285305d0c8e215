"""Issue 44 item 6: the login node of the simulated cluster (inventory group slurm_login), brought up by site.yml.

A user logs in to a login node and submits from there; the node runs no Slurm daemon. Checked on the converged
cluster (core): munge with the cluster's key and the Slurm client commands, but no slurmd and no slurmctld
(neither installed nor running); alice runs `srun -N1 hostname` and gets a compute node's name, `sbatch --wait` a
script whose output file, on the node that ran it, names that compute node; a container job from the login node
reaches pyxis and enroot on the compute node (the image of test_enroot.py, docker://ubuntu, which the simulated
cluster cannot pull: pyxis says it imports it and that the import failed - what proves that the SPANK plugin on
the submitting side passed --container-image on).

Acceptance (minutes each): site.yml limited to the login node changes nothing (the full second run,
test_second_run.py, checks changed=0 on every host, the login node included); slurm_configless on the login
node - no files, sackd with --conf-server fetches them, alice still submits - and back to files.
"""
import json
import os
import re
import shlex

import pytest
import yaml

from simcluster import COMPUTE, CONTROLLER, GPU_NODES, ROOT, SITE, node, recap, run_playbook, sh, wait_idle

USER = "alice"


def _login_nodes():
    """The hosts of group slurm_login in the inventory that brought the cluster up: the default molecule scenario's
    (inventory/simulated/.molecule-login.yml, linked into its inventory) or scripts/cluster.sh's
    (inventory/simulated/hosts.yml)."""
    name = ".molecule-login.yml" if os.environ.get("MOLECULE_INVENTORY_FILE") else "hosts.yml"
    inventory = yaml.safe_load((ROOT / "inventory" / "simulated" / name).read_text())
    return sorted(((inventory["all"].get("children") or {}).get("slurm_login") or {}).get("hosts") or {})


LOGINS = _login_nodes()
LOGIN = LOGINS[0] if LOGINS else None

pytestmark = pytest.mark.skipif(LOGIN is None, reason="this inventory has no login node (group slurm_login)")


def as_user(command):
    """command as alice on the login node, from a login shell's directory (/tmp: alice's home is not on the nodes)."""
    return sh(LOGIN, "cd /tmp && runuser -u %s -- %s" % (USER, command), check=False)


def test_the_login_node_has_the_client_commands_and_munge_but_no_slurm_daemon():
    host = node(LOGIN)
    assert host.package("slurm-client").is_installed
    for package in ("slurmd", "slurmctld"):
        assert not host.package(package).is_installed, package
    for unit in ("slurmd", "slurmctld"):
        assert host.run("systemctl is-active %s" % unit).stdout.strip() != "active", unit
        assert host.run("pgrep -x %s" % unit).rc != 0, unit
    assert host.run("systemctl is-active munge").stdout.strip() == "active"
    reference = sh(CONTROLLER, "sha256sum /etc/munge/munge.key").stdout.split()[0]
    assert sh(LOGIN, "sha256sum /etc/munge/munge.key").stdout.split()[0] == reference
    # no node-side files: no gres.conf, no cgroup.conf, no hooks
    for path in ("/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf", "/usr/local/lib/gpucluster-slurm"):
        assert not host.file(path).exists, path
    # the same slurm.conf as the controller's (files, not configless)
    assert host.file("/etc/slurm/slurm.conf").content_string == node(CONTROLLER).file("/etc/slurm/slurm.conf").content_string


def test_munge_credentials_cross_between_the_login_node_and_the_controller():
    for made, decoded in ((LOGIN, CONTROLLER), (CONTROLLER, LOGIN)):
        credential = sh(made, "munge -n").stdout.strip()
        out = sh(decoded, "echo %s | unmunge" % shlex.quote(credential), check=False)
        assert out.rc == 0 and "STATUS:          Success" in out.stdout, (made, decoded, out.stdout + out.stderr)


def test_alice_runs_srun_from_the_login_node_on_a_compute_node():
    wait_idle(COMPUTE)
    out = as_user("timeout 120 srun -N1 hostname")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() in COMPUTE, out.stdout
    assert as_user("squeue -h -u %s" % USER).rc == 0


def test_alice_submits_a_batch_job_from_the_login_node_that_runs_on_a_compute_node():
    wait_idle(COMPUTE)
    out = as_user("timeout 180 sbatch --wait --parsable -D /tmp -o /tmp/login-job-%j.out --wrap 'hostname; id -un'")
    assert out.rc == 0, out.stdout + out.stderr
    job = out.stdout.strip().split(";")[0]
    assert re.match(r"^\d+$", job), out.stdout
    # the output file is written where the batch script ran (no shared file system here): one compute node has it
    found = {}
    for name in COMPUTE:
        result = sh(name, "cat /tmp/login-job-%s.out" % job, check=False)
        if result.rc == 0:
            found[name] = result.stdout.split()
    assert len(found) == 1, found
    (ran_on, printed), = found.items()
    assert printed == [ran_on, USER], (ran_on, printed)
    assert not node(LOGIN).file("/tmp/login-job-%s.out" % job).exists
    for name in COMPUTE:
        sh(name, "rm -f /tmp/login-job-%s.out" % job, check=False)


def test_the_login_node_has_enroot_and_pyxis_and_srun_lists_the_container_options():
    host = node(LOGIN)
    assert host.run("enroot version").rc == 0
    assert host.file("/usr/local/lib/slurm/spank_pyxis.so").is_file
    assert "spank_pyxis.so" in host.file("/etc/slurm/plugstack.conf.d/pyxis.conf").content_string
    for cmd in ("srun --help", "sbatch --help"):
        out = as_user(cmd)
        assert out.rc == 0 and "--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH" in out.stdout, (cmd, out.stdout[-2000:])


def test_alice_starts_a_container_job_from_the_login_node():
    wait_idle(COMPUTE)
    target = GPU_NODES[0]
    # the image test_enroot.py uses: Docker Hub cannot be reached from the simulated cluster, so the import on the
    # compute node fails, and pyxis (slurmstepd there, started for the job submitted here) says so
    boxed = as_user("timeout 180 srun -N1 -w %s --container-image=docker://ubuntu true" % target)
    assert "pyxis: importing docker image: docker://ubuntu" in boxed.stderr, boxed.stderr
    assert "pyxis: failed to import docker image: docker://ubuntu" in boxed.stderr, boxed.stderr
    assert boxed.rc != 0 or "launch failed" in boxed.stderr, boxed.stderr
    wait_idle(COMPUTE)


@pytest.mark.acceptance
def test_site_limited_to_the_login_node_changes_nothing(tmp_path):
    wait_idle(COMPUTE)
    rc, output = run_playbook(SITE, ["--limit", LOGIN], log=tmp_path / "site-login.log")
    assert rc == 0, output[-5000:]
    found = recap(output)
    assert LOGIN in found, found
    assert all(counts == dict(changed=0, unreachable=0, failed=0) for counts in found.values()), found


def _slurm_stage(tmp_path, name, configless):
    rc, output = run_playbook("gpucluster.bringup.slurm_cluster", ["-e", json.dumps({"slurm_configless": configless})],
                              log=tmp_path / ("%s.log" % name))
    assert rc == 0, output[-6000:]
    return output


@pytest.mark.acceptance
def test_configless_login_node_runs_sackd_and_switching_back_writes_the_files(tmp_path):
    wait_idle(COMPUTE)
    host = node(LOGIN)
    try:
        _slurm_stage(tmp_path, "configless", True)
        wait_idle(COMPUTE)
        assert not host.file("/etc/slurm/slurm.conf").exists
        assert host.package("sackd").is_installed
        assert 'SACKD_OPTIONS="--conf-server %s:6817"' % CONTROLLER in host.file("/etc/default/sackd").content_string
        assert host.run("systemctl is-active sackd").stdout.strip() == "active"
        assert "--conf-server %s:6817" % CONTROLLER in host.run("ps -o args= -C sackd").stdout
        # the files sackd fetched, where the client commands read them
        assert host.file("/run/slurm/conf/slurm.conf").content_string == sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout
        out = as_user("timeout 120 srun -N1 hostname")
        assert out.rc == 0 and out.stdout.strip() in COMPUTE, out.stdout + out.stderr
        assert not host.package("slurmd").is_installed
        again = _slurm_stage(tmp_path, "configless-again", True)
        assert recap(again)[LOGIN]["changed"] == 0, recap(again)
    finally:
        _slurm_stage(tmp_path, "back", False)
    wait_idle(COMPUTE)
    assert host.file("/etc/slurm/slurm.conf").content_string == sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout
    assert host.run("systemctl is-active sackd").stdout.strip() != "active"
    assert host.run("systemctl is-enabled sackd").stdout.strip() != "enabled"
    assert "--conf-server" not in host.file("/etc/default/sackd").content_string
    assert host.run("systemctl --failed --no-legend --plain").stdout.strip() == ""
    out = as_user("timeout 120 srun -N1 hostname")
    assert out.rc == 0 and out.stdout.strip() in COMPUTE, out.stdout + out.stderr
