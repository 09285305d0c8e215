"""Issue 50: an admin's DOWN is never undone by resume.yml.

With slurmd stopped and the node set ``state=down reason="admin: DIMM replacement, keep down"``, resume.yml used to
start slurmd there (with ReturnToService=2 the node came back and the admin's reason was gone) and ended with
``resumed: [] kept: {}``. Now slurmd stays stopped, the node stays DOWN with the admin's reason, and the run names it
as kept with that reason.
"""
import json
import re
import time

import pytest

from simcluster import COMPUTE, ROOT, ctl, resume_by_hand, run_playbook, sh, wait_idle

pytestmark = pytest.mark.acceptance

REASON = "admin: DIMM replacement, keep down"


def _node_line(name):
    return ctl("scontrol -o show node %s" % name).stdout


def test_resume_keeps_an_admins_down_node_down(tmp_path):
    target = COMPUTE[-1]
    wait_idle([target])
    sh(target, "systemctl stop slurmd")
    try:
        ctl("scontrol update nodename=%s state=down reason='%s'" % (target, REASON))
        rc, output = run_playbook(ROOT / "playbooks" / "resume.yml", ["-e", json.dumps({"validate_report_dir": str(tmp_path / "report")})],
                                  log=tmp_path / "resume.log")
        # (rc: the play fails when a node stays down, with validate_fail_on_error; what matters is what it did)
        assert sh(target, "systemctl is-active slurmd", check=False).stdout.strip() != "active", output[-3000:]
        time.sleep(5)   # ReturnToService would have brought it back by now had slurmd been started
        line = _node_line(target)
        assert re.search(r"\sState=DOWN\S*\s", line), line
        assert "Reason=%s [" % REASON in line, line
        # the listing names the node and who set it; the summary keeps it with the admin's reason
        assert "%s: node is DOWN" % target in output, output[-3000:]
        assert '"%s": "down by an admin: %s' % (target, REASON) in output, output[-3000:]
        assert "slurmd started on %s" % target not in output, output[-3000:]
    finally:
        sh(target, "systemctl start slurmd", check=False)
        resume_by_hand(target)
        wait_idle([target])


HEALTHCHECK = "/usr/local/sbin/gpucluster-healthcheck"
DEEP_REPORT = ROOT / "validation-report" / "deep" / "report.json"


def test_the_health_checks_auto_resume_and_the_deep_tier_keep_an_admins_down_node_down(tmp_path):
    """slurmd runs (the node answers), the admin set it DOWN: two passing periodic runs in a row (what auto-resume
    waits for, slurm_healthcheck_settings.resume_after_passes) and a deep-tier run leave it DOWN with the admin's reason."""
    target = COMPUTE[-1]
    wait_idle([target])
    try:
        ctl("scontrol update nodename=%s state=down reason='%s'" % (target, REASON))
        for _ in range(3):
            result = sh(target, HEALTHCHECK, check=False)
            assert result.rc == 0, result.stdout + result.stderr
        line = _node_line(target)
        assert re.search(r"\sState=DOWN\S*\s", line) and "Reason=%s [" % REASON in line, line
        rc, output = run_playbook(ROOT / "playbooks" / "health_deep.yml", log=tmp_path / "deep.log")
        assert rc == 0, output[-3000:]
        report = json.loads(DEEP_REPORT.read_text())
        found = dict(((node["node"], rec["check"]), rec) for stage in report["stages"] for node in stage["nodes"] for rec in node["checks"])
        assert found[(target, "deep_job")]["status"] == "skip", found.get((target, "deep_job"))
        line = _node_line(target)
        assert re.search(r"\sState=DOWN\S*\s", line) and "Reason=%s [" % REASON in line, line
        assert "gpucluster-deep-health" not in ctl("scontrol -o show reservation", check=False).stdout
    finally:
        resume_by_hand(target)
        wait_idle([target])
