"""Issue 50 on the simulated cluster: the validation compares what slurmctld runs with the controller's slurm.conf.

slurm.conf changed by hand and not applied (as a site.yml interrupted between "Write slurm.conf" and
"Reconfigure Slurm" leaves it): validate.yml fails naming slurmctld, the controller, MaxJobCount with both
values and the command that applies it, drains no node, and in check mode reads only. The healthy cluster
passes the check (no false alarm from scontrol's own formats). Run by molecule's verify of the default
scenario, or against `bash scripts/cluster.sh up` with GPUCLUSTER_SIM_CONTAINER_PREFIX=gcsim-:

    .venv/bin/pytest -q molecule/default/tests/test_running_config.py
"""
import json
import re

import pytest

from simcluster import COMPUTE, CONTROLLER, ROOT, ctl, reconfigure_restarts, run_playbook, wait_idle

pytestmark = pytest.mark.acceptance  # three validate.yml runs; the healthy case also runs in CI through test_validate

CONF = "/etc/slurm/slurm.conf"
BACKUP = "/root/slurm.conf.molecule-running-config"
# the stages that take minutes are not needed here: stage 2 holds the check
FAST = {"validate_mpi": False, "validate_nccl": False}


def validate(tmp_path, extra=None, check=False):
    report = tmp_path / "report"
    variables = dict(FAST, validate_report_dir=str(report))
    variables.update(extra or {})
    tmp_path.mkdir(parents=True, exist_ok=True)
    rc, output = run_playbook(ROOT / "playbooks" / "validate.yml", ["-e", json.dumps(variables)] + (["--check"] if check else []),
                              log=tmp_path / "validate.log")
    return rc, output, report


def running_config(report):
    data = json.loads((report / "report.json").read_text())
    found = [rec for stage in data["stages"] for node in stage["nodes"] for rec in node["checks"] if rec["check"] == "running_config"]
    assert len(found) == 1, found
    return data, found[0]


def running_value(key):
    """The value slurmctld runs for key, as scontrol show config prints it."""
    match = re.search(r"^%s\s*=\s*(.*)$" % key, ctl("scontrol show config").stdout, re.M)
    assert match, key
    return match.group(1).strip()


def test_the_healthy_cluster_passes_the_check(tmp_path):
    wait_idle(COMPUTE)
    rc, output, report = validate(tmp_path)
    data, record = running_config(report)
    print("running_config on the healthy cluster: %s" % record["reason"])
    assert rc == 0, output[-4000:]
    assert (record["stage"], record["node"], record["status"]) == ("slurm", "slurmctld@%s" % CONTROLLER, "pass"), record
    match = re.match(r"^slurmctld on %s runs %s: compared (\d+) keys, all equal; (\d+) not comparable: " % (CONTROLLER, CONF), record["reason"])
    assert match, record["reason"]
    assert int(match.group(1)) >= 30, record["reason"]  # the template's numbers, plugins, paths and lists are compared
    assert data["status"] == "pass"


def drains():
    """Each node's state and reason where it is drained or draining, or its reason starts with the validation's tag."""
    out = ctl("sinfo -h -N -o '%N|%t|%E'").stdout
    rows = [line.split("|", 2) for line in out.splitlines() if line.count("|") == 2]
    return sorted(row for row in rows if row[1].startswith(("drain", "drng")) or row[2].startswith("validate:"))


def test_a_change_written_but_not_applied_fails_naming_slurmctld(tmp_path):
    wait_idle(COMPUTE)
    before = drains()
    running = running_value("MaxJobCount")
    wanted = str(int(running) + 10000)
    ctl("cp -p %s %s" % (CONF, BACKUP))
    try:
        # the template does not set MaxJobCount: add it before the node lines, as a changed slurm_conf_overrides would
        ctl("grep -q '^MaxJobCount=' %s && sed -i 's/^MaxJobCount=.*/MaxJobCount=%s/' %s || sed -i '0,/^NodeName=/s//MaxJobCount=%s\\n&/' %s"
            % (CONF, wanted, CONF, wanted, CONF))
        assert "MaxJobCount=%s" % wanted in ctl("cat %s" % CONF).stdout
        # with validate_drain_failed: the check names no Slurm node, so nothing is drained for it
        rc, output, report = validate(tmp_path / "changed", {"validate_drain_failed": True})
        after = drains()
        # check mode: the same verdict, read only (the file and what slurmctld runs stay as they are)
        check_rc, check_output, _report = validate(tmp_path / "check", check=True)
        still = ctl("grep '^MaxJobCount=' %s" % CONF).stdout.strip()
        still_running = running_value("MaxJobCount")
    finally:
        ctl("cp -p %s %s && rm -f %s" % (BACKUP, CONF, BACKUP))
    assert rc != 0, output[-4000:]
    data, record = running_config(report)
    assert (record["node"], record["status"]) == ("slurmctld@%s" % CONTROLLER, "fail"), record
    reason = record["reason"]
    assert reason.startswith("slurmctld on %s does not run %s: MaxJobCount is %s in the file, %s in slurmctld. " % (CONTROLLER, CONF, wanted, running)), reason
    fix = ("sudo scontrol reconfigure on %s" % CONTROLLER if reconfigure_restarts()
           else "sudo systemctl restart slurmctld on %s (MaxJobCount needs a restart" % CONTROLLER)
    assert "Apply the file: %s" % fix in reason, reason
    assert "ansible-playbook gpucluster.bringup.site" in reason
    assert "validation failed on slurmctld@%s" % CONTROLLER in output
    assert "MaxJobCount is %s in the file, %s in slurmctld" % (wanted, running) in output  # the summary the play prints
    assert data["failed_nodes"] == ["slurmctld@%s" % CONTROLLER], data["failed_nodes"]
    # nothing drained, nothing else failed because of it
    assert after == before == [], (before, after)
    assert [(r["stage"], r["node"], r["check"]) for s in data["stages"] for n in s["nodes"] for r in n["checks"] if r["status"] == "fail"] == [
        ("slurm", "slurmctld@%s" % CONTROLLER, "running_config")]
    assert check_rc != 0 and "MaxJobCount is %s in the file, %s in slurmctld" % (wanted, running) in check_output, check_output[-4000:]
    assert (still, still_running) == ("MaxJobCount=%s" % wanted, running)
    # restored by hand: the file is again what slurmctld runs (no reconfigure needed; test_the_healthy_cluster_passes_the_check)
    assert "MaxJobCount=%s" % wanted not in ctl("cat %s" % CONF).stdout
