"""Helpers of the Slurm upgrade tests: a simulated cluster of scripts/cluster.sh on one Debian release.

Run by `bash scripts/test.sh upgrade` (docs/slurm-upgrade.md), not by CI: each test module brings its own
cluster up (`cluster.sh down` first), which takes minutes.
"""
import json
import os
import pathlib
import re
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOGS = ROOT / ".build" / "test" / "upgrade"
PODMAN = str(ROOT / "scripts" / "lib" / "podman")
PREFIX = "gcsim-"
CONTROLLER = "ctl"
COMPUTE = ["gpu-01", "gpu-02"]
# the login node of inventory/simulated (slurm_login): client commands, pyxis, sackd with slurm_configless
LOGIN = "login"


def cluster(suite, *args, log=None, check=True):
    """scripts/cluster.sh ARGS on the Debian release ``suite``; output kept in LOGS/log."""
    env = dict(os.environ, GPUCLUSTER_SIM_SUITE=suite)
    run = subprocess.run(["bash", str(ROOT / "scripts" / "cluster.sh")] + list(args), env=env, cwd=str(ROOT),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if log:
        LOGS.mkdir(parents=True, exist_ok=True)
        (LOGS / log).write_text(run.stdout)
    if check:
        assert run.returncode == 0, "cluster.sh %s failed (rc %d):\n%s" % (" ".join(args), run.returncode, run.stdout[-6000:])
    return run


def bring_up(suite, tag):
    """A fresh cluster on ``suite`` (the old one removed), deployed with site.yml; logs LOGS/<tag>-*.log."""
    cluster(suite, "down", log="%s-down.log" % tag)
    cluster(suite, "up", log="%s-up.log" % tag)
    site = playbook(suite, "site.yml", log="%s-site.log" % tag)
    assert site.returncode == 0, site.stdout[-4000:]


def playbook(suite, name, *args, log):
    return cluster(suite, "playbook", "playbooks/%s" % name, *args, log=log, check=False)


def sh(node, command, check=True):
    run = subprocess.run([PODMAN, "exec", PREFIX + node, "bash", "-c", command], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if check:
        assert run.returncode == 0, "%s on %s: rc=%d\n%s\n%s" % (command, node, run.returncode, run.stdout, run.stderr)
    return run


def out(node, command):
    return sh(node, command).stdout.strip()


def recap(output):
    """{host: {'ok': n, 'changed': n, 'failed': n, ...}} of the last PLAY RECAP."""
    hosts = {}
    block = output[output.rindex("PLAY RECAP"):]
    for line in block.splitlines()[1:]:
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if match:
            hosts[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return hosts


def assert_no_change(output, hosts):
    """The last run changed nothing and failed nowhere, on exactly ``hosts`` (``localhost`` may be there too).

    The host set is asserted first: ``all(...)`` over a recap that parsed to nothing would pass anything.
    """
    found = recap(output)
    assert found, "no PLAY RECAP in the output:\n" + output[-3000:]
    assert set(found) - {"localhost"} == set(hosts), "PLAY RECAP lists %s, expected %s" % (sorted(found), sorted(hosts))
    moved = {host: counts for host, counts in found.items() if counts.get("changed") or counts.get("failed") or counts.get("unreachable")}
    assert not moved, "changed, failed or unreachable: %s" % moved
    return found


def add_apt_source(release, pin=100):
    """Add Debian ``release`` (same mirror) to every node, the login node too, at a priority that installs nothing by itself."""
    for node in [CONTROLLER] + COMPUTE + [LOGIN]:
        mirror = out(node, "awk '/^deb /{print $2; exit}' /etc/apt/sources.list")
        # forky's Release file on the mirror may be past its Valid-Until date
        sh(node, "echo 'deb [check-valid-until=no] %s %s main contrib' > /etc/apt/sources.list.d/%s.list && "
                 "printf 'Package: *\\nPin: release n=%s\\nPin-Priority: %d\\n' > /etc/apt/preferences.d/%s"
           % (mirror, release, release, release, pin, release))


def package_version(node, package):
    return out(node, "dpkg-query -W -f '${Version}' %s" % package)


def main_pid(node, unit):
    return int(out(node, "systemctl show -p MainPID --value %s" % unit))


def sacct_jobs(node=CONTROLLER):
    """{job id: 'name|state|account|exit code'} of every job, from sacct."""
    text = out(node, "sacct -X -n -P -a -S 2020-01-01 -o JobID,JobName,State,Account,ExitCode")
    return {line.split("|", 1)[0]: line.split("|", 1)[1] for line in text.splitlines() if line}


def wait_job(node, job, states=("COMPLETED",), timeout=300):
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        state = out(node, "sacct -X -n -P -j %s -o State" % job)
        if state in states:
            return state
        time.sleep(2)
    raise AssertionError("job %s is %r after %d s, not %s" % (job, state, timeout, states))


def pyxis_built(node):
    return json.loads(out(node, "cat /var/lib/gpucluster/pyxis-build.json"))["slurm_version"]
