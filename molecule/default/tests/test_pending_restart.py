"""Issue 50 item 1: a change interrupted between the write and the restart is never lost.

A run stopped (SIGTERM to its process group, as a second Ctrl-C or a killed job does) right after it wrote a file
and before it restarted or reconfigured the daemon: the file is new, the daemon runs the old configuration, and
the marker install_files wrote before it replaced the file is on the node. validate.yml fails naming the daemon,
the node and the command; the next run applies the change (reconfigures, restarts) and removes the marker; the run
after that changes nothing.
"""
import base64
import json
import os
import re
import signal
import subprocess
import time

import pytest

from simcluster import (ANSIBLE_PLAYBOOK, CONTROLLER, COMPUTE, NODES, ROOT, SIMULATED_VARS, SLURM_PLAY_HOSTS, ctl, inventories, playbook_env,
                        recap_of, run_playbook, sh, wait_idle)

pytestmark = pytest.mark.acceptance

SLURM = ROOT / "playbooks" / "slurm_cluster.yml"
MUNGE = ROOT / "playbooks" / "slurm_munge.yml"
PENDING = "/var/lib/gpucluster/pending"


def run_until(playbook, args, trigger, log):
    """ansible-playbook PLAYBOOK ARGS, stopped with SIGTERM (its whole process group) once a line matches ``trigger``.

    Returns the output; fails the test when the trigger never came (the run ended on its own)."""
    proc = subprocess.Popen([str(ANSIBLE_PLAYBOOK)] + inventories() + [str(playbook)] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(ROOT), start_new_session=True)
    lines, stopped = [], False
    for line in proc.stdout:
        lines.append(line)
        if not stopped and re.search(trigger, line):
            os.killpg(proc.pid, signal.SIGTERM)
            stopped = True
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    output = "".join(lines)
    log.write_text(output)
    assert stopped, "the run ended before %r:\n%s" % (trigger, output[-3000:])
    return output


def marker(name, daemon):
    result = sh(name, "cat %s/%s.json" % (PENDING, daemon), check=False)
    return json.loads(result.stdout) if result.rc == 0 else None


def running_max_job_count():
    return re.search(r"^MaxJobCount\s+=\s+(\d+)", ctl("scontrol show config").stdout, re.M).group(1)


def validate(tmp_path):
    report = tmp_path / "report"
    rc, output = run_playbook(ROOT / "playbooks" / "validate.yml",
                              ["-e", json.dumps({"validate_report_dir": str(report), "validate_mpi": False, "validate_nccl": False})],
                              log=tmp_path / "validate.log")
    return rc, output, json.loads((report / "report.json").read_text())


def test_a_slurm_conf_change_stopped_before_the_reconfigure_is_applied_by_the_next_run(tmp_path):
    before = running_max_job_count()
    wanted = str(int(before) + 1234)
    changed = ["-e", json.dumps({"slurm_conf_overrides": dict(SIMULATED_VARS["slurm_conf_overrides"], MaxJobCount=int(wanted))})]
    try:
        # stopped once every host wrote slurm.conf (the next task of conf.yml began), long before restart.yml
        run_until(SLURM, changed, r"^TASK \[gpucluster\.bringup\.slurm : Write slurm\.conf on the Slurm hosts outside this run\]",
                  tmp_path / "stopped.log")
        assert "MaxJobCount=%s" % wanted in ctl("cat /etc/slurm/slurm.conf").stdout
        assert running_max_job_count() == before, "slurmctld took the change although the run stopped before the reconfigure"
        left = marker(CONTROLLER, "slurmctld")
        assert left and left["action"] in ("reconfigure", "restart") and any("maxjobcount" in reason.lower() for reason in left["reasons"]), left
        # the validation fails in between, naming slurmctld, the node and the command
        rc, output, report = validate(tmp_path / "between")
        failed = [rec for stage in report["stages"] for node in stage["nodes"] for rec in node["checks"]
                  if rec["check"] == "pending_restart" and rec["status"] == "fail"]
        assert rc != 0 and failed, output[-3000:]
        assert any(rec["reason"].startswith("slurmctld on ") and "maxjobcount" in rec["reason"].lower() and "sudo scontrol reconfigure" in rec["reason"]
                   for rec in failed), failed
        # the next run, the same change: nothing to write, and still it finishes what the marker says
        rc, output = run_playbook(SLURM, changed, log=tmp_path / "next.log")
        assert rc == 0, output[-3000:]
        assert re.search(r"TASK \[gpucluster\.bringup\.slurm : (Reconfigure Slurm|Restart slurmctld)[^\]]*\][^\n]*\nchanged: \[%s\]" % CONTROLLER, output), \
            output[-5000:]
        assert running_max_job_count() == wanted
        assert marker(CONTROLLER, "slurmctld") is None
        # and the run after it changes nothing
        rc, output = run_playbook(SLURM, changed, log=tmp_path / "again.log")
        assert rc == 0 and not any(counts["changed"] for counts in recap_of(output, SLURM_PLAY_HOSTS).values()), output[-3000:]
    finally:
        rc, output = run_playbook(SLURM, log=tmp_path / "restore.log")
        assert rc == 0, output[-3000:]
        assert running_max_job_count() == before
        wait_idle(COMPUTE)


def test_a_munge_key_change_stopped_before_the_restart_is_applied_by_the_next_run(tmp_path):
    target = COMPUTE[0]
    old_key = sh(CONTROLLER, "base64 -w0 /etc/munge/munge.key").stdout.strip()
    new_key = base64.b64encode(os.urandom(1024)).decode()
    started = sh(target, "systemctl show -p ExecMainStartTimestampMonotonic munge").stdout.strip()
    try:
        run_until(MUNGE, ["-e", "munge_key_b64=%s" % new_key], r"^TASK \[gpucluster\.bringup\.munge : Point munged at munge_key_path",
                  tmp_path / "stopped.log")
        assert sh(target, "base64 -w0 /etc/munge/munge.key").stdout.strip() == new_key
        assert sh(target, "systemctl show -p ExecMainStartTimestampMonotonic munge").stdout.strip() == started, "munged restarted"
        left = marker(target, "munge")
        assert left and left["action"] == "restart" and any("munge.key changed" in reason for reason in left["reasons"]), left
        # the next run with the same key: the key is in place, and munged is restarted all the same
        rc, output = run_playbook(MUNGE, ["-e", "munge_key_b64=%s" % new_key], log=tmp_path / "next.log")
        assert rc == 0, output[-3000:]
        assert sh(target, "systemctl show -p ExecMainStartTimestampMonotonic munge").stdout.strip() != started
        assert all(marker(name, "munge") is None for name in NODES)
        rc, output = run_playbook(MUNGE, ["-e", "munge_key_b64=%s" % new_key], log=tmp_path / "again.log")
        assert rc == 0 and not any(counts["changed"] for counts in recap_of(output, NODES).values()), output[-3000:]
    finally:
        rc, output = run_playbook(MUNGE, ["-e", "munge_key_b64=%s" % old_key], log=tmp_path / "restore.log")
        assert rc == 0, output[-3000:]
        assert all(marker(name, "munge") is None for name in NODES)
        time.sleep(2)
        wait_idle(COMPUTE)
