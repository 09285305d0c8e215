"""Issue 7 on the simulated cluster: munge, Slurm, GRES, MIG, hooks, restarts.

Run by molecule's verify of the default scenario (containers named after the
nodes) and usable against `bash scripts/cluster.sh up` (set
GPUCLUSTER_SIM_CONTAINER_PREFIX=gcsim-). Everything is checked on the real
daemons: sinfo/srun/scontrol output, file modes, systemd start timestamps, the
output of a real ansible-playbook run. The second run of site.yml (changed=0,
nothing restarted, no secret in -vvv --diff) is test_second_run.py.
"""
import difflib
import json
import re
import subprocess
import sys
import time

import pytest

import yaml

from simcluster import (ANSIBLE_PLAYBOOK, COMPUTE, CONNECTION, CONTROLLER, GPU_NODES, NODES, PREFIX, ROOT, SIMULATED_VARS, SITE, ctl, inventories, sh,
                        node, overlap, playbook_env, podman, recap, reconfigure_restarts, run_jobs_together, run_playbook, start_times,
                        wait_idle)

HOOKS_DIR = "/usr/local/lib/gpucluster-slurm"


def node_gres_from_conf():
    """Gres= of every node as slurm.conf on the controller declares it."""
    conf = node(CONTROLLER).file("/etc/slurm/slurm.conf").content_string
    result = {}
    for line in conf.splitlines():
        if not line.startswith("NodeName="):
            continue
        fields = dict(token.split("=", 1) for token in line.split())
        names = ctl("scontrol show hostnames '%s'" % fields["NodeName"]).stdout.split()
        for name in names:
            result[name] = fields.get("Gres", "")
    return result


def mig_node():
    for name, gres in sorted(node_gres_from_conf().items()):
        if "gpu:1g.10gb:" in gres:
            return name
    pytest.fail("no node declares gpu:1g.10gb GRES in slurm.conf: %s" % node_gres_from_conf())
    return None


# --- files -----------------------------------------------------------------

@pytest.mark.parametrize("name", NODES)
def test_munge_key_is_0400_munge_and_the_same_everywhere(name):
    key = node(name).file("/etc/munge/munge.key")
    assert key.exists
    assert key.mode == 0o400, oct(key.mode)
    assert key.user == "munge" and key.group == "munge"
    directory = node(name).file("/etc/munge")
    assert directory.mode == 0o700 and directory.user == "munge", (oct(directory.mode), directory.user)
    reference = node(CONTROLLER).run("sha256sum /etc/munge/munge.key").stdout.split()[0]
    assert node(name).run("sha256sum /etc/munge/munge.key").stdout.split()[0] == reference


@pytest.mark.parametrize("name", NODES)
def test_munge_works_across_nodes(name):
    # A credential made on this node decodes on the controller: same key.
    result = node(name).run("munge -n")
    assert result.rc == 0, result.stderr
    decoded = node(CONTROLLER).run("echo '%s' | unmunge" % result.stdout.strip())
    assert decoded.rc == 0 and "STATUS:          Success" in decoded.stdout, decoded.stdout + decoded.stderr


@pytest.mark.parametrize("name", NODES)
def test_slurm_conf_is_0644_root(name):
    conf = node(name).file("/etc/slurm/slurm.conf")
    assert conf.mode == 0o644 and conf.user == "root" and conf.group == "root"


@pytest.mark.parametrize("name", COMPUTE)
def test_gres_and_cgroup_conf_are_0644_root(name):
    for path in ("/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf"):
        conf = node(name).file(path)
        assert conf.mode == 0o644 and conf.user == "root" and conf.group == "root", path


@pytest.mark.parametrize("name", COMPUTE)
def test_hooks_are_root_owned_and_not_writable_by_others(name):
    # one find for every file (owner, octal mode, type, path): a testinfra file() per path costs a command each
    listing = node(name).run("find %s /etc/slurm/prolog.d /etc/slurm/epilog.d -xdev -printf '%%u %%m %%y %%p\\n'" % HOOKS_DIR).stdout
    entries = [line.split(" ", 3) for line in listing.splitlines() if line.strip()]
    paths = [path for _user, _mode, _kind, path in entries]
    assert any(p.endswith("/prolog.d/50-all-enroot-dirs") for p in paths), paths
    assert any(p.endswith("/hook_runner.py") for p in paths), paths
    for user, mode, kind, path in entries:
        if kind == "l":
            continue
        assert user == "root", path
        assert int(mode, 8) & 0o022 == 0, "%s is writable by group or others: %s" % (path, mode)


def test_identical_nodes_share_one_line_and_gres_types_are_declared():
    conf = node(CONTROLLER).file("/etc/slurm/slurm.conf").content_string
    assert "SelectType=select/cons_tres" in conf
    assert re.search(r"^GresTypes=gpu", conf, re.M), conf
    lines = [line for line in conf.splitlines() if line.startswith("NodeName=")]
    assert len(lines) >= 1
    # every node appears exactly once across the (possibly merged) lines
    gres = node_gres_from_conf()
    assert sorted(gres) == sorted(COMPUTE)


# --- the cluster works -------------------------------------------------------

def test_sinfo_every_node_idle_with_its_gres():
    wait_idle(COMPUTE)
    out = ctl("sinfo -N -h -o '%N|%t|%G'").stdout
    rows = dict((r.split("|")[0], r.split("|")[1:]) for r in out.splitlines() if r.strip())
    declared = node_gres_from_conf()
    for name in COMPUTE:
        state, gres = rows[name]
        assert state == "idle", rows
        if name in GPU_NODES:
            assert gres.startswith("gpu:"), rows
            # sinfo prints the same types and counts as slurm.conf declares
            for item in declared[name].split(","):
                assert item in gres, (name, item, gres)


def _index_set(text):
    """IDX:0-1,4 -> {0, 1, 4}"""
    found = set()
    for part in text.split(","):
        first, _sep, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


@pytest.mark.parametrize("name", GPU_NODES)
def test_a_job_can_hold_every_gpu_gres_slurmd_registered(name):
    """What slurmd registered, not what slurm.conf says: a job asking for every gpu GRES of the node runs, and
    the indexes Slurm gives it (positions in slurmd's registered GRES list) are exactly 0..N-1, N = slurmd -G's count."""
    wanted = [g for g in node_gres_from_conf()[name].split(",") if g.startswith("gpu:")]
    total = sum(int(g.rsplit(":", 1)[1]) for g in wanted)
    registered = [line for line in sh(name, "slurmd -G 2>&1").stdout.splitlines() if "Gres Name=gpu " in line]
    assert len(registered) == total, registered
    wait_idle([name])
    job = ctl("sbatch --parsable -w %s --gres=%s -o /dev/null --wrap 'sleep 30'" % (name, ",".join(wanted))).stdout.strip()
    try:
        deadline = time.time() + 60
        while "RUNNING" not in ctl("squeue -h -j %s -o %%T" % job, check=False).stdout and time.time() < deadline:
            time.sleep(1)
        detail = ctl("scontrol -d show job %s" % job).stdout
        held = dict((m.group(1), _index_set(m.group(3))) for m in re.finditer(r"gpu:([^:(,\s]+):(\d+)\(IDX:([0-9,-]+)\)", detail))
        assert sorted("gpu:%s:%d" % (t, len(i)) for t, i in held.items()) == sorted(wanted), detail
        every = [i for indexes in held.values() for i in indexes]
        assert sorted(every) == list(range(total)), detail
    finally:
        ctl("scancel %s" % job, check=False)
    wait_idle([name], timeout=60)


def _gres_facts(name):
    """ansible_facts.slurm_gres of one node, from the module run now (ad hoc, as the role calls it)."""
    env = playbook_env()
    env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    args = ("mig_minors_path={{ slurm_gres_mig_minors_path | default('/proc/driver/nvidia-caps/mig-minors') }} "
            "cores={{ slurm_gres_cores | default(true) }}")
    # as root, as the slurm role runs it
    command = [name, "--become", "-m", "gpucluster.bringup.slurm_gres_facts", "-a", args]
    result = subprocess.run([str(ANSIBLE_PLAYBOOK.parent / "ansible")] + inventories() + command,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    answer = json.loads(result.stdout)
    return answer["plays"][0]["tasks"][0]["hosts"][name]["ansible_facts"]["slurm_gres"]


@pytest.mark.parametrize("name", GPU_NODES)
def test_slurmd_dash_g_lists_exactly_the_gres_the_facts_list(name):
    """Issue 5: the real slurmd -G accepts the gres.conf rendered from the facts and lists exactly their entries."""
    sys.path.insert(0, str(ROOT / ".build" / "collections"))
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import compare_gres, parse_slurmd_gres

    facts = _gres_facts(name)
    deployed = node(name).file("/etc/slurm/gres.conf").content_string
    for line in facts["gres_conf_lines"]:
        assert line in deployed, (line, deployed)
    run = node(name).run("slurmd -G")
    output = run.stdout + run.stderr
    parsed = parse_slurmd_gres(output)
    assert parsed["records"], output
    verdict = compare_gres(facts["entries"], parsed)
    assert verdict["equal"], (verdict, output)
    assert len([e for e in facts["entries"] if e["name"] == "gpu"]) == len([r for r in parsed["records"] if r["name"] == "gpu"])


def test_srun_runs_on_both_gpu_nodes():
    wait_idle(GPU_NODES)
    out = ctl("timeout 60 srun -N%d -w %s hostname" % (len(GPU_NODES), ",".join(GPU_NODES))).stdout
    assert sorted(out.split()) == sorted(GPU_NODES)


def test_mig_job_gets_its_mig_uuid():
    name = mig_node()
    wait_idle([name])
    out = ctl("timeout 60 srun -w %s --gres=gpu:1g.10gb:1 env" % name).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    visible = env.get("CUDA_VISIBLE_DEVICES", "")
    assert re.match(r"^MIG-[0-9a-f-]+$", visible), out
    index = int(env.get("SLURM_STEP_GPUS") or env["SLURM_JOB_GPUS"])
    # the UUID is the one of the allocated GRES index in the facts' map...
    uuid_map = node(name).file("/etc/slurm/gres-uuid.map").content_string
    mapped = dict((int(f[0]), f[2]) for f in (line.split() for line in uuid_map.splitlines()) if f and f[0].isdigit())
    assert visible == mapped[index], (index, visible, mapped)
    # ...and a MIG device the (simulated) driver really has
    assert visible in mig_uuids(name)


LIST_MIG_UUIDS = """python3 - <<'EOF'
import pynvml as n
n.nvmlInit()
for g in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(g)
    try:
        count = n.nvmlDeviceGetMaxMigDeviceCount(h)
    except n.NVMLError:
        continue
    for i in range(count):
        try:
            print(n.nvmlDeviceGetUUID(n.nvmlDeviceGetMigDeviceHandleByIndex(h, i)))
        except n.NVMLError:
            pass
EOF"""


def mig_uuids(name):
    result = node(name).run(LIST_MIG_UUIDS)
    assert result.rc == 0, result.stderr
    return result.stdout.split()


def test_two_mig_instances_get_two_uuids():
    name = mig_node()
    wait_idle([name])
    out = ctl("timeout 60 srun -w %s --gres=gpu:1g.10gb:2 printenv CUDA_VISIBLE_DEVICES" % name).stdout.strip()
    uuids = out.split(",")
    assert len(uuids) == 2 and all(u.startswith("MIG-") for u in uuids) and uuids[0] != uuids[1], out


def test_whole_gpu_job_keeps_slurms_index():
    for name in GPU_NODES:
        types = [item.split(":")[1] for item in node_gres_from_conf()[name].split(",") if not item.split(":")[1].startswith("1g.")]
        if not types:
            continue
        out = ctl("timeout 60 srun -w %s --gres=gpu:%s:1 printenv CUDA_VISIBLE_DEVICES" % (name, types[0])).stdout.strip()
        assert re.match(r"^\d+$", out), (name, out)


# --- prolog / epilog hooks -----------------------------------------------------

def _with_hook(target, hook_name, body):
    host = node(target)
    path = "/etc/slurm/prolog.d/%s" % hook_name
    host.run("printf '%%s\\n' %s > %s && chmod 0755 %s" % (" ".join("'%s'" % line for line in body), path, path))
    return path


def _resume(target):
    ctl("scontrol update nodename=%s state=resume" % target, check=False)
    wait_idle([target])


def test_failing_hook_drains_the_node_naming_the_hook():
    target = GPU_NODES[-1]
    wait_idle([target])
    path = _with_hook(target, "99-all-molecule-fails", ["#!/bin/sh", "echo molecule test hook failing on purpose", "exit 1"])
    try:
        result = ctl("timeout 60 srun -w %s true" % target, check=False)
        assert result.rc != 0
        reason = ctl("sinfo -h -n %s -o '%%E'" % target).stdout.strip()
        state = ctl("sinfo -h -n %s -o '%%t'" % target).stdout.strip()
        assert "99-all-molecule-fails" in reason, reason
        assert reason == "prolog hook 99-all-molecule-fails failed (exit 1)", reason
        assert state.startswith(("drain", "drng")), state  # draining while Slurm completes the refused job
        log = node(target).run("journalctl -t slurm-hooks --no-pager -n 50").stdout
        assert re.search(r"hook=99-all-molecule-fails rc=1 duration=[0-9.]+s status=failed", log), log
    finally:
        node(target).run("rm -f %s" % path)
        _resume(target)


def test_hook_whose_tool_is_missing_is_skipped_not_drained():
    target = GPU_NODES[-1]
    wait_idle([target])
    path = _with_hook(target, "90-all-rootless", ["#!/bin/sh", "# requires: singularity", "exit 1"])
    try:
        result = ctl("timeout 60 srun -w %s true" % target, check=False)
        assert result.rc == 0, result.stderr
        wait_idle([target], timeout=30)  # (the epilog may still run: "comp"; a drained node never gets idle)
        log = node(target).run("journalctl -t slurm-hooks --no-pager -n 50").stdout
        assert "hook=90-all-rootless rc=- duration=0.000s status=skipped: requires singularity, not found" in log, log
    finally:
        node(target).run("rm -f %s" % path)
        _resume(target)


@pytest.mark.parametrize("target", GPU_NODES)
def test_every_hook_ran_and_is_logged_with_exit_code_and_duration(target):
    """On a GPU node the shipped hooks really run (rc=0, status=ok): none is skipped for a missing tool."""
    wait_idle([target])
    job = ctl("timeout 60 srun -w %s printenv SLURM_JOB_ID" % target).stdout.strip()
    wanted = [r"%s job=%s hook=%s rc=0 duration=[0-9.]+s status=ok$" % (phase, job, hook)
              for phase, hook in (("prolog", "10-all-gpu-healthcheck"), ("prolog", "50-all-enroot-dirs"),
                                  ("epilog", "40-all-gpu-cleanup"), ("epilog", "95-lastuserjob-enroot-cleanup"))]
    log = ""
    for _attempt in range(30):  # the epilog runs after srun returns, one hook after the other
        log = node(target).run("journalctl -t slurm-hooks --no-pager -n 100 -o cat").stdout
        if all(re.search(pattern, log, re.M) for pattern in wanted):
            break
        time.sleep(1)
    for pattern in wanted:
        assert re.search(pattern, log, re.M), (pattern, log)


# --- configuration changes restart only what they must ----------------------------

DAEMONS = {"munge": NODES, "slurmctld": [CONTROLLER], "slurmd": COMPUTE}


def _slurm_stage(extra_vars=None):
    """The slurm stage of site.yml (--tags slurm), with extra vars merged over the simulated inventory's."""
    args = ["--tags", "slurm"]
    if extra_vars:
        args += ["-e", json.dumps(extra_vars)]
    return run_playbook(SITE, args)


@pytest.mark.acceptance
def test_air_gapped_install_from_a_local_package_directory_and_a_reconfigure_only_change(tmp_path):
    """slurm_install_source: local with the .debs of the installed release in a directory on the Ansible
    controller (downloaded with apt-get download on a node of the cluster's release, as a site would fill its
    directory): the packages are copied to every node and installed from there; the same versions change no
    daemon. The same run changes KillWait, which scontrol reconfigure applies: the role restarts no daemon
    (on Slurm 23.11 and later the reconfigure itself starts new daemon processes, as it documents).

    Air-gapped for real: every node's apt sources are emptied (and its package lists dropped) for the run, and one
    package of the directory (libpmix-dev) is removed from every node first, so the run has to install it and can
    only have it from the directory."""
    wait_idle(COMPUTE)
    debs = tmp_path / "debs"
    debs.mkdir()
    # the PMIx runtime library libpmix-dev depends on (libpmix2 in Debian 12, libpmix2t64 in Debian 13)
    pmix = re.search(r"\b(libpmix2\S*)", ctl("dpkg-query -W -f='${Depends}' libpmix-dev").stdout).group(1)
    names = ["slurmctld", "slurmd", "slurm-client", "libpmix-dev", pmix]
    ctl("rm -rf /tmp/debs && mkdir /tmp/debs && cd /tmp/debs && apt-get download %s" % " ".join(names))
    podman("cp", "%s%s:/tmp/debs/." % (PREFIX, CONTROLLER), str(debs))
    ctl("rm -rf /tmp/debs")
    assert len(list(debs.iterdir())) == len(names), sorted(p.name for p in debs.iterdir())
    wanted = ctl("dpkg-query -W -f='${Version}' libpmix-dev").stdout
    before = start_times(DAEMONS)
    try:
        for name in [CONTROLLER] + COMPUTE:  # no package source left, and one package of the directory to install
            node(name).run_test("cp /etc/apt/sources.list /etc/apt/sources.list.gpucluster-test && : > /etc/apt/sources.list && "
                                "rm -rf /var/lib/apt/lists/* && dpkg -r libpmix-dev")
            policy = node(name).run("apt-cache policy libpmix-dev").stdout
            assert not re.search(r"Candidate: (?!\(none\))", policy), (name, policy)  # apt has nowhere to get it from
        rc, output = _slurm_stage({"slurm_install_source": "local", "slurm_local_package_dir": str(debs),
                                   "slurm_conf_overrides": dict(SIMULATED_VARS["slurm_conf_overrides"], KillWait=29)})
        assert rc == 0, output[-5000:]
        assert "TASK [gpucluster.bringup.slurm : Install the Debian packages]" in output
        for name in [CONTROLLER] + COMPUTE:
            cached = node(name).run("ls /var/cache/gpucluster-slurm-packages").stdout.split()
            # every package, except the other role's daemon: no slurmctld on a compute node, no slurmd on the controller
            skipped = "slurmd_" if name == CONTROLLER else "slurmctld_"
            assert sorted(cached) == sorted(p.name for p in debs.iterdir() if not p.name.startswith(skipped)), (name, cached)
            assert node(name).run("dpkg-query -W -f='${Status}' %s" % skipped[:-1]).stdout != "install ok installed"
            # installed again, from the directory alone
            assert node(name).run("dpkg-query -W -f='${Status} ${Version}' libpmix-dev").stdout == "install ok installed " + wanted
        changed = {task for task, _host in _changes(output)}
        assert "Reconfigure Slurm" in changed, output[-5000:]
        assert not changed & {"Restart slurmctld (before any slurmd)", "Restart slurmd", "Restart the slurmds outside this run"}, changed
        assert re.search(r"^KillWait\s+=\s+29 sec", ctl("scontrol show config").stdout, re.M)
        if reconfigure_restarts():
            assert "Relinquishing control to new slurmctld process" in ctl("tail -n 50 /var/log/slurm/slurmctld.log").stdout
            others = lambda times: dict((k, v) for k, v in times.items() if k[0] not in ("slurmctld", "slurmd"))  # noqa: E731
            assert others(start_times(DAEMONS)) == others(before)
        else:
            assert start_times(DAEMONS) == before
    finally:
        for name in NODES:
            node(name).run("rm -rf /var/cache/gpucluster-slurm-packages")
            node(name).run("test -e /etc/apt/sources.list.gpucluster-test && mv /etc/apt/sources.list.gpucluster-test /etc/apt/sources.list "
                           "&& apt-get -qq update")
        rc, output = _slurm_stage()
        assert rc == 0, output[-5000:]
        wait_idle(COMPUTE)


# --- adding a node: site.yml --limit NEW-NODE --------------------------------------

NEW_NODE = "gpu-03"


def _start_new_node(like):
    """A new container as the cluster's own are started (image, network, label, systemd as PID 1, every node in
    /etc/hosts), prepared by the same node-prepare.sh; every node's /etc/hosts names it, as DNS would."""
    info = json.loads(podman("container", "inspect", PREFIX + like))[0]
    network, settings = sorted(info["NetworkSettings"]["Networks"].items())[0]
    address = settings["IPAddress"].rsplit(".", 1)[0] + ".13"
    labels = ["--label=%s=%s" % item for item in sorted(info["Config"]["Labels"].items()) if item[0].startswith("io.gpucluster")]
    hosts = ["--add-host=%s:%s" % (name, json.loads(podman("container", "inspect", PREFIX + name))[0]
                                   ["NetworkSettings"]["Networks"][network]["IPAddress"]) for name in NODES]
    podman("rm", "-f", "-t", "5", PREFIX + NEW_NODE, check=False)
    # confined like the GPU node it copies (privileged: Slurm's cgroup/v1 plugin)
    confine = ["--privileged"] if info["HostConfig"].get("Privileged") else []
    podman("run", "-d", "--name", PREFIX + NEW_NODE, "--hostname", NEW_NODE, "--network", network, "--ip", address,
           "--network-alias", NEW_NODE, "--add-host=%s:%s" % (NEW_NODE, address), "--systemd=always",
           *(labels + hosts + confine), info["ImageName"], "/sbin/init")
    for name in NODES:
        node(name).run_test("grep -q ' %s$' /etc/hosts || echo '%s %s' >> /etc/hosts" % (NEW_NODE, address, NEW_NODE))
    prepared = subprocess.run(["bash", str(ROOT / "scripts" / "lib" / "node-prepare.sh"), PREFIX + NEW_NODE, "a100-40gb-x8"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), check=False)
    assert prepared.returncode == 0, prepared.stdout


# What a dry run must leave as it was on a node: the packages, every path under /etc, /var/lib, /usr and /opt with its
# modification time, size, mode and owner, and the services running.
NODE_SNAPSHOT = ("dpkg -l | sed 1,5d; "
                 "find /etc /var/lib /usr /opt -xdev -printf '%p %T@ %s %m %u:%g\\n' | sort; "
                 "systemctl list-units --type=service --state=running --no-legend --plain | awk '{print $1}' | sort")

# The tasks a dry run of a fresh GPU node skips because an earlier stage would install what they need: each says so.
CHECK_MODE_SKIPS = [
    "check mode: skipped starting munged on %s: munge is not installed yet (the munge stage installs it" % NEW_NODE,
    "check mode: skipped the node baseline checks of %s (driver, persistence, fabric-manager, gpudirect): not checked: "
    "the Python NVML bindings cannot be imported" % NEW_NODE,
    "check mode: skipped recording the GPU baseline of %s: /usr/local/sbin/gpucluster-healthcheck is not installed yet" % NEW_NODE,
    "check mode: skipped 'slurmd -C' on %s: slurmd is not installed yet (the slurm stage installs it" % NEW_NODE,
    "check mode: the GPUs were not read: the Python NVML bindings cannot be imported",
    "check mode: skipped starting slurmd on %s: not installed yet (the slurm stage installs it" % NEW_NODE,
    "check mode: skipped compiling and installing pyxis",
    "would download and install enroot_",
]


def _node_snapshot(name):
    return sh(name, NODE_SNAPSHOT).stdout


def _snapshot_difference(before, after):
    return "\n".join(list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))[:40])


def _dry_run_of_a_new_node(layer):
    """Issue 44 item 5: `site.yml --limit NEW-NODE --check --diff` on the fresh node runs through (rc 0) and reports what it
    would change there (changed > 0, the new node's line in every host's slurm.conf diff); every task that needs what an
    earlier stage would install says so and is skipped; nothing changes on the node (packages, files, services), and
    elsewhere neither slurm.conf nor any daemon nor a pending restart mark."""
    node_before = _node_snapshot(NEW_NODE)
    daemons = start_times(DAEMONS)
    confs = {name: sh(name, "stat -c '%i %Y' /etc/slurm/slurm.conf; sha256sum /etc/slurm/slurm.conf; "
                            "ls -A /var/lib/gpucluster/pending 2>/dev/null").stdout for name in NODES}
    rc, output = run_playbook(SITE, ["-i", str(layer), "--limit", NEW_NODE, "--check", "--diff"])
    assert rc == 0, output[-6000:]
    counts = recap(output)
    assert set(counts) == {NEW_NODE} and counts[NEW_NODE]["changed"] > 0 and counts[NEW_NODE]["failed"] == 0, counts
    changed = {task for task, _host in _changes(output)}
    assert {"Install the munge packages", "Install Slurm from the distribution", "Write slurm.conf"} <= changed, sorted(changed)
    written = {("Write slurm.conf on the Slurm hosts outside this run", name) for name in NODES}
    assert _delegated_changes(output) == written, _delegated_changes(output)
    assert re.search(r"^\+NodeName=%s CPUs=\d+ " % NEW_NODE, output, re.M), output[-6000:]
    for message in CHECK_MODE_SKIPS:
        assert message in output, message
    key = sh(CONTROLLER, "base64 -w0 /etc/munge/munge.key").stdout.strip()
    assert key and key not in output
    assert _node_snapshot(NEW_NODE) == node_before, _snapshot_difference(node_before, _node_snapshot(NEW_NODE))
    assert start_times(DAEMONS) == daemons
    assert {name: sh(name, "stat -c '%i %Y' /etc/slurm/slurm.conf; sha256sum /etc/slurm/slurm.conf; "
                           "ls -A /var/lib/gpucluster/pending 2>/dev/null").stdout for name in NODES} == confs


def _two_shard_jobs_share_one_gpu_at_the_same_time(name):
    """Two --gres=shard:2 jobs on the node (8 GPUs of 4 shards each) run at the same time on the same GPU: the
    same CUDA_VISIBLE_DEVICES, start and end times that overlap in sacct."""
    jobs = run_jobs_together(name, [("root", "shard:2", "printenv CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS; true")] * 2)
    assert [job["state"] for job in jobs] == ["COMPLETED", "COMPLETED"], jobs
    assert overlap(*jobs), jobs
    assert jobs[0]["output"].split()[:1] == jobs[1]["output"].split()[:1] != [], jobs


def _remove_new_node():
    podman("rm", "-f", "-t", "5", PREFIX + NEW_NODE, check=False)
    for name in NODES:
        # (/etc/hosts is a bind mount: rewrite it in place)
        node(name).run("grep -v ' %s$' /etc/hosts > /tmp/hosts.new; cat /tmp/hosts.new > /etc/hosts" % NEW_NODE)


def _changes(output, delegated=False):
    """{(task name, host)} of the changed results a run reported; the host a task was delegated to where it was,
    or with delegated=True only those."""
    found, task = set(), None
    for line in output.splitlines():
        header = re.match(r"^(?:TASK|RUNNING HANDLER) \[(?:[\w.]+ : )?(.*)\] \**$", line)
        if header:
            task = header.group(1)
        # "changed: [gpu-03 -> ctl]", or with the delegate's ansible_host as written where it differs from the name:
        # "[gpu-03 -> ctl(10.89.43.10)]", "[gpu-03 -> ctl({{ ... }})]"
        changed = re.match(r"^changed: \[([^]]+?)(?: -> ([^](]+)(?:\(.*\))?)?\]", line)
        if changed and (changed.group(2) or not delegated):
            found.add((task, (changed.group(2) or changed.group(1)).strip()))
    return found


def _delegated_changes(output):
    """{(task name, host)} of the changed results a run reported for hosts it reached by delegation."""
    return _changes(output, delegated=True)


@pytest.mark.acceptance
def test_adding_a_node_with_limit_changes_only_slurm_conf_elsewhere_and_shards_only_there(tmp_path):
    """The new node in the inventory (A100s like gpu-02, but shared as shards: slurm_gres_sharing for one node),
    then `site.yml --limit gpu-03`: the whole bring-up runs on gpu-03 only;
    the other hosts get the new slurm.conf; on Slurm 22.05 slurmctld restarts before any slurmd and the other
    slurmds restart (they must know the new node), on 23.11 and later one scontrol reconfigure does it (it
    starts new slurmctld and slurmd processes itself); munge, slurmdbd and everything else elsewhere stay as
    they were. Run again: changed=0. Then the node is taken out (the slurm stage without it, every host in the
    run): on 22.05 slurmctld restarts first, then every slurmd; on 24.11 a reconfigure. Before the real run, a dry run
    of the fresh node (--check --diff) changes nothing anywhere (_dry_run_of_a_new_node)."""
    wait_idle(COMPUTE)
    layer = tmp_path / "new-node.yml"
    host_vars = yaml.safe_load((ROOT / "inventory" / "simulated" / "host_vars" / "gpu-02.yml").read_text())
    # the same GPUs as gpu-02, shared as shards (slurm_gres_sharing per node group)
    # reached as root through podman exec (the others over ssh as admin with sudo): both connections in one run
    host_vars.update(ansible_connection=CONNECTION, ansible_host=PREFIX + NEW_NODE, ansible_user="root",
                     slurm_gres_sharing="shard", slurm_gres_shard_count=4)
    layer.write_text(yaml.safe_dump({"all": {"hosts": {NEW_NODE: host_vars},
                                             "children": {"slurm_compute": {"hosts": {NEW_NODE: None}},
                                                          "gpu_nodes": {"hosts": {NEW_NODE: None}}}}}))
    before = start_times(DAEMONS)
    others = {name: node(name).file("/etc/slurm/cgroup.conf").content_string for name in COMPUTE}
    try:
        _start_new_node(like=GPU_NODES[-1])
        _dry_run_of_a_new_node(layer)
        rc, output = run_playbook(SITE, ["-i", str(layer), "--limit", NEW_NODE])
        assert rc == 0, output[-6000:]
        assert set(recap(output)) == {NEW_NODE}, recap(output)
        # on the other hosts, only slurm.conf is written and the daemons restarted
        written = {("Write slurm.conf on the Slurm hosts outside this run", name) for name in NODES}
        # (each write marks the daemon it restarts or reconfigures; the check after the restart settles the mark: a change)
        if reconfigure_restarts():
            assert _delegated_changes(output) == written | {("Reconfigure Slurm", CONTROLLER), ("Check that slurmctld took the change", CONTROLLER)}, \
                _delegated_changes(output)
        else:
            assert _delegated_changes(output) == written | {("Restart slurmctld (before any slurmd)", CONTROLLER),
                                                            ("Check that slurmctld took the change", CONTROLLER)} | {
                ("Restart the slurmds outside this run", name) for name in COMPUTE} | {
                ("Check that the slurmds outside this run took the change", name) for name in COMPUTE}, _delegated_changes(output)
            ctld = output.index("TASK [gpucluster.bringup.slurm : Restart slurmctld (before any slurmd)]")
            outside = output.index("TASK [gpucluster.bringup.slurm : Restart the slurmds outside this run]")
            assert ctld < outside
        wait_idle(COMPUTE + [NEW_NODE])
        # (slurmctld shows the shards with the type of their GPUs once slurmd registered them)
        assert re.search(r"^\s*Gres=gpu:a100:8,shard(:a100)?:32$", ctl("scontrol show node %s" % NEW_NODE).stdout, re.M), \
            ctl("scontrol show node %s" % NEW_NODE).stdout
        assert "shard" not in ctl("scontrol show node %s" % GPU_NODES[-1]).stdout
        assert "Name=shard Count=4 File=/dev/nvidia0" in node(NEW_NODE).file("/etc/slurm/gres.conf").content_string
        job = ctl("timeout 60 srun -w %s --gres=shard:2 printenv CUDA_VISIBLE_DEVICES" % NEW_NODE)
        assert re.match(r"^[0-7]$", job.stdout.strip()), job.stdout
        _two_shard_jobs_share_one_gpu_at_the_same_time(NEW_NODE)
        assert "gres/shard" in ctl("scontrol show config").stdout  # AccountingStorageTRES follows the GRES in use
        conf = node(CONTROLLER).file("/etc/slurm/slurm.conf").content_string
        for name in NODES + [NEW_NODE]:
            assert node(name).file("/etc/slurm/slurm.conf").content_string == conf, name
            assert node(name).file("/etc/munge/munge.key").md5sum == node(CONTROLLER).file("/etc/munge/munge.key").md5sum
        assert ctl("timeout 60 srun -w %s --gres=gpu:a100:1 printenv SLURMD_NODENAME CUDA_VISIBLE_DEVICES" % NEW_NODE).stdout.split() \
            == [NEW_NODE, "0"]
        assert "[pyxis] the image to use for the container" in node(NEW_NODE).check_output("srun --help")
        after = start_times(DAEMONS)
        assert after[("slurmctld", CONTROLLER)] != before[("slurmctld", CONTROLLER)]
        for name in COMPUTE:
            assert after[("slurmd", name)] != before[("slurmd", name)], name
            assert node(name).file("/etc/slurm/cgroup.conf").content_string == others[name]
        for name in NODES:
            assert after[("munge", name)] == before[("munge", name)], name
        # again (the slurm stage, where the other hosts are written): nothing changes, nothing restarts
        rc, output = run_playbook(SITE, ["-i", str(layer), "--limit", NEW_NODE, "--tags", "slurm"])
        assert rc == 0, output[-6000:]
        assert recap(output)[NEW_NODE]["changed"] == 0, [line for line in output.splitlines() if line.startswith("changed:")]
        assert start_times(DAEMONS) == after
    finally:
        _remove_new_node()
        before = start_times(DAEMONS)
        rc, output = _slurm_stage()
        assert rc == 0, output[-5000:]
        wait_idle(COMPUTE)
    assert NEW_NODE not in ctl("sinfo -N -h -o %N").stdout
    if reconfigure_restarts():
        assert ("Reconfigure Slurm", CONTROLLER) in _changes(output), sorted(_changes(output))
        assert not {task for task, _host in _changes(output)} & {"Restart slurmctld (before any slurmd)", "Restart slurmd"}
    else:
        assert {("Restart slurmctld (before any slurmd)", CONTROLLER)} | {("Restart slurmd", name) for name in COMPUTE} \
            <= _changes(output), sorted(_changes(output))
        ctld = output.index("TASK [gpucluster.bringup.slurm : Restart slurmctld (before any slurmd)]")
        slurmd = output.index("TASK [gpucluster.bringup.slurm : Restart slurmd]")
        assert ctld < slurmd
    after = start_times(DAEMONS)
    assert after[("slurmctld", CONTROLLER)] != before[("slurmctld", CONTROLLER)]
    for name in COMPUTE:
        assert after[("slurmd", name)] != before[("slurmd", name)], name
    assert after[("munge", CONTROLLER)] == before[("munge", CONTROLLER)]
