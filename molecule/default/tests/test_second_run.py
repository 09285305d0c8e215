"""The second run of site.yml, first of the verify tests (the cluster exactly as converge left it: cluster_order -1).

Issues 7, 8, 9 and 10: a second run of the whole bring-up reports changed=0 on every host, restarts
no daemon (munge, slurmctld, slurmd, slurmdbd, MariaDB: compared by their systemd start times) and
rebuilds nothing (pyxis); run with -vvv --diff, its output holds neither the munge key nor the
accounting database password. This run is the scenario's idempotence check (molecule's own
idempotence step is left out of the test sequence: it would be a third full run).

Issue 9: the run is an AWX job as AWX runs one - ansible-runner on a private data directory laid
out as AWX lays it out (scripts/lib/awx_pdd.py), verbosity 3 and diff set in env/cmdline as the
deploy job template's launch prompts would.
"""
import base64

import pytest

from simcluster import COMPUTE, CONTROLLER, GROUPS, NODES, node, recap, run_awx_job, start_times, wait_idle

pytestmark = pytest.mark.cluster_order(-1)  # first: before any test changes the cluster (conftest.py)

DBD = GROUPS["slurmdbd"][0]
DB_PASSWORD_FILE = "/var/lib/gpucluster/slurmdbd-storage-pass"
DAEMONS = {"munge": NODES, "slurmctld": [CONTROLLER], "slurmd": COMPUTE, "slurmdbd": [DBD], "mariadb": [DBD]}


def _pyxis_builds():
    return dict((name, node(name).run("stat -c %Y /usr/local/lib/slurm/spank_pyxis.so /var/lib/gpucluster/pyxis-build.json 2>&1").stdout)
                for name in NODES)


def test_second_run_changes_restarts_and_rebuilds_nothing_and_shows_no_secret(tmp_path):
    wait_idle(COMPUTE)
    key = base64.b64decode(node(CONTROLLER).run("base64 -w0 /etc/munge/munge.key").stdout.strip())
    assert len(key) >= 32
    password = node(DBD).run("cat %s" % DB_PASSWORD_FILE).stdout.strip()
    assert len(password) >= 16
    before, built = start_times(DAEMONS), _pyxis_builds()
    rc, output, status = run_awx_job("playbooks/site.yml", tmp_path, verbosity=3, diff=True)
    after = start_times(DAEMONS)
    assert (rc, status) == (0, "successful"), output[-5000:]
    assert "task path: " in output  # (printed from -vv on: the verbosity reached the job)
    found = recap(output)
    assert set(NODES) <= set(found), found  # (site.yml's preflight play adds localhost)
    assert all(r == dict(changed=0, unreachable=0, failed=0) for r in found.values()), found
    assert before == after, "a daemon was restarted: %s -> %s" % (before, after)
    assert _pyxis_builds() == built
    raw = output.encode("utf-8", "surrogateescape")
    for form, needle in (("raw bytes", key[:24]), ("base64", base64.b64encode(key)[:24]),
                         ("hex", key[:24].hex().encode()), ("base64 of the middle", base64.b64encode(key[30:54])[:16])):
        found_key = needle in raw  # (not inside the assert: pytest would print the key's bytes)
        assert not found_key, "the munge key appears (%s) in the -vvv --diff output" % form
    found_password = password in output
    assert not found_password, "the database password appears in the -vvv --diff output"
