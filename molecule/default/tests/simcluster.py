"""Shared helpers of the simulated-cluster tests (molecule verify and `scripts/cluster.sh verify`).

The container of an inventory host is GPUCLUSTER_SIM_CONTAINER_PREFIX + its name: molecule names the
containers after the nodes, `scripts/cluster.sh up` names them gcsim-<node>. Playbooks run with the
inventory of whichever started the cluster.
"""
import json
import os
import pathlib
import re
import shlex
import socket
import subprocess
import sys
import time

import pytest
import testinfra
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
PREFIX = os.environ.get("GPUCLUSTER_SIM_CONTAINER_PREFIX", "")
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
SITE = ROOT / "playbooks" / "site.yml"
# The inventory reaches the nodes over ssh as admin with sudo; the other connection, as root through podman exec
# with pipelining (scripts/lib/connection_plugins/podman_pipelined.py), reaches the node a test adds.
CONNECTION_PLUGINS = str(ROOT / "scripts" / "lib" / "connection_plugins")
CONNECTION = "podman_pipelined"


def _groups():
    """The inventory groups of the cluster under test: inventory/hosts.yml, plus the login node the simulated layer adds
    (group slurm_login): inventory/simulated/.molecule-login.yml where the molecule scenario links it into its
    inventory (the default scenario; bookworm has no login container), inventory/simulated/hosts.yml for the demo."""
    sources = [ROOT / "inventory" / "hosts.yml"]
    inventory_file = os.environ.get("MOLECULE_INVENTORY_FILE")
    if inventory_file:
        linked = pathlib.Path(inventory_file).parent / "molecule-login.yml"
        if linked.exists():
            sources.append(linked)
    else:
        sources.append(ROOT / "inventory" / "simulated" / "hosts.yml")
    groups = {}
    for source in sources:
        children = (yaml.safe_load(source.read_text()) or {}).get("all", {}).get("children") or {}
        for name, group in children.items():
            groups.setdefault(name, set()).update((group or {}).get("hosts") or {})
    return {name: sorted(hosts) for name, hosts in groups.items()}


GROUPS = _groups()
CONTROLLER = GROUPS["slurm_controller"][0]
COMPUTE = GROUPS["slurm_compute"]
GPU_NODES = GROUPS["gpu_nodes"]
NODES = sorted(set(sum(GROUPS.values(), [])))
# the hosts of playbooks/slurm_cluster.yml (slurm_controller:slurm_compute:slurm_login): its PLAY RECAP lists these
SLURM_PLAY_HOSTS = sorted(set(GROUPS["slurm_controller"] + GROUPS["slurm_compute"] + GROUPS.get("slurm_login", [])))
SIMULATED_VARS = yaml.safe_load((ROOT / "inventory" / "simulated" / "group_vars" / "all" / "simulated.yml").read_text())


def node(name):
    return testinfra.get_host("podman://%s%s" % (PREFIX, name))


def sh(name, command, check=True):
    """command on node name (through podman); with check, fail the test unless it exits 0."""
    result = node(name).run(command)
    if check:
        assert result.rc == 0, "%s on %s: rc=%s\n%s\n%s" % (command, name, result.rc, result.stdout, result.stderr)
    return result


def ctl(command, check=True):
    result = node(CONTROLLER).run(command)
    if check:
        assert result.rc == 0, "%s: rc=%s\n%s\n%s" % (command, result.rc, result.stdout, result.stderr)
    return result


def shown_gres(name):
    """The node's Gres= as slurmctld shows it, without the socket binding "(S:0)" it adds where the GPUs' cores fill
    a socket (NVML's affinity under AutoDetect=nvml, or gres.conf's Cores=: docs/slurm-gres-autodetect.md)."""
    shown = re.search(r"^\s*Gres=(\S+)", ctl("scontrol show node %s" % name).stdout, re.M).group(1)
    return re.sub(r"\(S:[^)]*\)", "", shown)


def slurm_release():
    """(major, minor) of the controller's Slurm, as sinfo --version prints it there ("slurm-wlm 24.11.5")."""
    major, minor = ctl("sinfo --version").stdout.split()[-1].split(".")[:2]
    return int(major), int(minor)


def reconfigure_restarts():
    """Slurm 23.11 and later: scontrol reconfigure starts new slurmctld and slurmd processes (the roles then
    reconfigure where 22.05 needed restarts, and a reconfigure changes every daemon's PID)."""
    return slurm_release() >= (23, 11)


def states():
    out = ctl("sinfo -N -h -o '%N %t'", check=False).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def wait_idle(names, timeout=120):
    """Wait until every node in names is idle; return sinfo's last answer."""
    deadline = time.time() + timeout
    now = {}
    while time.time() < deadline:
        now = states()
        if all(now.get(n) == "idle" for n in names):
            return now
        time.sleep(2)
    raise AssertionError("nodes %s not idle after %ds: %s" % (names, timeout, now))


def wait_drained(name, timeout=60):
    """Wait until ``name`` is drained ("drain": the DRAIN flag set and no job left on it); return its state.

    Right after a failed prolog the node is "drng" (draining) while Slurm completes the job it refused.
    """
    deadline = time.time() + timeout
    state = None
    while time.time() < deadline:
        state = states().get(name)
        if state is not None and state.startswith("drain"):
            return state
        time.sleep(1)
    raise AssertionError("%s is %s after %ds, not drained" % (name, state, timeout))


def run_jobs_together(name, jobs, seconds=6, timeout=120):
    """Submit ``jobs`` ([(user, gres, script)]) to node ``name`` at once with sbatch, each running ``script`` then
    sleeping ``seconds``; wait until all ended. Returns, per job in order, sacct's
    ``{"id", "state", "start", "end", "output"}`` (start and end as epoch seconds; output: what the job printed)."""
    ids = []
    for user, gres, script in jobs:
        command = "sbatch --parsable -w %s --gres=%s -o /tmp/job-%%j.out --wrap %s" % (
            name, gres, shlex.quote("%s; sleep %d" % (script, seconds)))
        if user != "root":
            command = "runuser -u %s -- %s" % (user, command)
        ids.append(ctl(command).stdout.strip().split(";")[0])
    deadline = time.time() + timeout
    rows = {}
    while time.time() < deadline:
        out = ctl("sacct -X -n -P -j %s --format=JobID,State,Start,End" % ",".join(ids)).stdout
        rows = dict((fields[0], fields) for fields in (line.split("|") for line in out.splitlines() if line.strip()))
        if len(rows) == len(ids) and all(rows[i][1] not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") and
                                         rows[i][3] not in ("Unknown", "") for i in ids):
            break
        time.sleep(2)
    else:
        raise AssertionError("jobs %s on %s did not all end within %ds: %s" % (ids, name, timeout, rows))
    epoch = lambda stamp: time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))  # noqa: E731
    return [{"id": i, "state": rows[i][1], "start": epoch(rows[i][2]), "end": epoch(rows[i][3]),
             "output": sh(name, "cat /tmp/job-%s.out" % i, check=False).stdout} for i in ids]


def overlap(first, second):
    """Two jobs of run_jobs_together ran at the same time."""
    return first["start"] < second["end"] and second["start"] < first["end"]


def resume_by_hand(name):
    ctl("scontrol update nodename=%s state=resume" % name, check=False)
    wait_idle([name])


def start_times(daemons):
    """{(unit, node): systemctl's MainPID and start time} of every daemon in daemons ({unit: [node names]}); each must run."""
    times = {}
    for unit, names in daemons.items():
        for name in names:
            out = node(name).run("systemctl show -p MainPID -p ExecMainStartTimestampMonotonic %s" % unit).stdout
            assert "MainPID=0" not in out, (unit, name, out)
            times[(unit, name)] = out.strip()
    return times


def gres_files(name):
    """[[device paths of one gres.conf GPU line]] of a node."""
    lines = []
    for line in sh(name, "cat /etc/slurm/gres.conf").stdout.splitlines():
        match = re.match(r"^Name=gpu .*\b(?:File|MultipleFiles)=(\S+)", line)
        if match:
            lines.append(match.group(1).split(","))
    assert lines, name
    return lines


@pytest.fixture(name="mig_node")
def fixture_mig_node():
    """The first GPU node with MIG instances: nvidia-smi -L lists a MIG device and gres.conf a MIG line (several device files).
    A test module takes the fixture by importing fixture_mig_node."""
    for name in GPU_NODES:
        if "MIG " in sh(name, "nvidia-smi -L").stdout and any(len(line) > 1 for line in gres_files(name)):
            return name
    pytest.fail("no GPU node has MIG instances and a MIG GRES in gres.conf: %s" % GPU_NODES)


def hosts(*names):
    """An inventory group of the hosts names, without host variables."""
    return {"hosts": {n: None for n in names}}


def podman(*argv, check=True):
    """podman ARGV on this machine (the cluster's containers); with check, fail the test unless it exits 0. Returns its output."""
    result = subprocess.run(["podman"] + list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=playbook_env(), check=False)
    assert not check or result.returncode == 0, (argv, result.stdout)
    return result.stdout


def inventories():
    inventory_file = os.environ.get("MOLECULE_INVENTORY_FILE")
    if inventory_file:
        return ["-i", str(pathlib.Path(inventory_file).parent)]
    return ["-i", str(ROOT / "inventory" / "hosts.yml"), "-i", str(ROOT / "inventory" / "simulated" / "hosts.yml")]


def playbook_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               CONTAINERS_CONF=str(ROOT / "scripts" / "lib" / "containers.conf"), GPUCLUSTER_SIM_ROOT=str(ROOT),
               ANSIBLE_CONNECTION_PLUGINS=CONNECTION_PLUGINS)
    return env


def run_playbook(playbook, args=(), log=None):
    """ansible-playbook PLAYBOOK ARGS against the running simulated cluster; returns (rc, output)."""
    started = time.time()
    result = subprocess.run([str(ANSIBLE_PLAYBOOK)] + inventories() + [str(playbook)] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(ROOT), check=False)
    if log is not None:
        pathlib.Path(log).write_text(result.stdout)
    print("%s %s: rc=%d in %.0fs" % (pathlib.Path(playbook).name, " ".join(args), result.returncode, time.time() - started))
    return result.returncode, result.stdout


def recap(output):
    """PLAY RECAP of an ansible-playbook output: {host: {changed, unreachable, failed}}."""
    found = {}
    for line in output.split("PLAY RECAP")[-1].splitlines():
        match = re.match(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", line)
        if match:
            found[match.group(1)] = dict(changed=int(match.group(3)), unreachable=int(match.group(4)), failed=int(match.group(5)))
    return found


def recap_of(output, hosts):
    """The PLAY RECAP of ``output``, after asserting that it lists exactly ``hosts``.

    ``localhost`` may be there too (site.yml's preflight play runs on the controller). A recap that parses to
    nothing, or lists other hosts, fails here: ``all(...)`` over an empty recap would pass anything.
    """
    found = recap(output)
    assert found, "no PLAY RECAP in the output:\n" + output[-3000:]
    assert set(found) - {"localhost"} == set(hosts), "PLAY RECAP lists %s, expected %s" % (sorted(found), sorted(hosts))
    return found


def assert_no_change(output, hosts):
    """The run changed nothing and failed nowhere on exactly ``hosts`` (recap_of); returns the recap."""
    found = recap_of(output, hosts)
    moved = {host: counts for host, counts in found.items() if counts["changed"] or counts["failed"] or counts["unreachable"]}
    assert not moved, "changed, failed or unreachable: %s" % moved
    return found


def run_awx_job(playbook, workdir, verbosity=0, diff=False, extra_vars=None, ident="1"):
    """Run a playbook as an AWX job runs it: ansible-runner on a private data directory laid out as AWX
    lays it out (scripts/lib/awx_pdd.py: project copy, collection in requirements_collections/, the
    inventory as AWX's JSON script, env/cmdline, env/extravars, env/envvars). Returns (rc, stdout, status)."""
    pdd = pathlib.Path(workdir) / "pdd"
    sources = inventories()[1::2]
    build = [sys.executable, str(ROOT / "scripts" / "lib" / "awx_pdd.py"), "--dest", str(pdd), "--playbook", str(playbook),
             "--inventory"] + sources + ["--verbosity", str(verbosity), "--force",
                                         "--env", "CONTAINERS_CONF=%s" % (ROOT / "scripts" / "lib" / "containers.conf"),
                                         "--env", "GPUCLUSTER_SIM_ROOT=%s" % ROOT,
                                         "--env", "ANSIBLE_CONNECTION_PLUGINS=%s" % CONNECTION_PLUGINS]
    if diff:
        build.append("--diff")
    if extra_vars:
        build += ["--extra-vars", json.dumps(extra_vars)]
    env = playbook_env()
    env["PATH"] = "%s:%s" % (ANSIBLE_PLAYBOOK.parent, env.get("PATH", ""))
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)  # the job finds the collection in requirements_collections/, as on AWX
    made = subprocess.run(build, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(ROOT), check=False)
    assert made.returncode == 0, made.stdout
    started = time.time()
    result = subprocess.run([str(ANSIBLE_PLAYBOOK.parent / "ansible-runner"), "run", str(pdd), "-p", str(playbook), "--ident", ident],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(ROOT), check=False)
    artifacts = pdd / "artifacts" / ident
    stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else result.stdout
    status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else "missing"
    print("ansible-runner %s: rc=%d status=%s in %.0fs" % (playbook, result.returncode, status, time.time() - started))
    return result.returncode, stdout, status


def wait_booted(name, timeout=120):
    """Wait until a restarted node's systemd has finished booting (running, or degraded); returns that state."""
    deadline = time.time() + timeout
    state = ""
    while time.time() < deadline:
        state = podman("exec", PREFIX + name, "systemctl", "is-system-running", check=False).strip()
        if state in ("running", "degraded"):
            return state
        time.sleep(2)
    raise AssertionError("%s did not finish booting in %ds: %s" % (name, timeout, state))


def wait_ssh(name, timeout=120):
    """Wait until a node that was restarted answers on its ssh port again, as an admin waits for a rebooted node
    (wait_for_connection): its container gets a new network interface for the same address, and this machine
    reaches it only once its neighbour entry for that address is renewed."""
    info = json.loads(podman("container", "inspect", PREFIX + name))[0]
    address = sorted(n["IPAddress"] for n in info["NetworkSettings"]["Networks"].values())[0]
    subprocess.run(["ip", "neigh", "flush", "to", address], check=False, capture_output=True)
    deadline = time.time() + timeout
    while True:
        try:
            socket.create_connection((address, 22), timeout=2).close()
            return address
        except OSError:
            if time.time() > deadline:
                raise AssertionError("%s (%s) does not answer on port 22 after %ds" % (name, address, timeout))
            time.sleep(1)
