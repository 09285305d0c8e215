"""Issue 6 (second half) on the simulated cluster: MIG layout changes on a running cluster, last of the verify tests.

Run by molecule's verify of the default scenario (containers named after the nodes), after every other test
(its module's marker cluster_order(2) is the highest: conftest.py runs the files by it):
the first test runs mig_change.yml with all-balanced on both GPU nodes (the layouts and simulation settings are
in ../vars/mig-changes.yml), the others change layouts from there. Each test runs the operator playbook
mig_change.yml the way an operator would and checks the result on the nodes: the simulator's GPU state
(`nvmlsim show --json`, read through podman), the real slurmctld/slurmd (`scontrol`, `sinfo`, `sbatch`), the
files written. The tests run in file order; each leaves the cluster idle; the GPU nodes keep the layouts of the
last tests (site.yml puts back the inventory's own: mig_layout of each node).
"""
import json
import re
import subprocess
import sys
import time

import pytest
import yaml

from simcluster import ANSIBLE_PLAYBOOK, PREFIX, ROOT, inventories, node, playbook_env, recap, run_playbook, sh

# the collection's one node parser and the slurm_node module's view of a node (the checkout as a collection: conftest.py)
sys.path.insert(0, str(ROOT / ".build" / "collections"))
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._mig_layouts import LAYOUTS  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import gres_set, parse_node  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.modules.slurm_node import view  # noqa: E402
from test_validate import load, records  # the validation report's reader

# the `acceptance` stage (conftest.py), not CI's molecule stage; last of all tests (conftest.py)
pytestmark = [pytest.mark.acceptance, pytest.mark.cluster_order(2)]

VARS = ROOT / "molecule" / "default" / "vars" / "mig-changes.yml"
MUTATING = ("nvmlDeviceSetMigMode", "nvmlDeviceCreateGpuInstance", "nvmlDeviceCreateGpuInstanceWithPlacement", "nvmlGpuInstanceDestroy",
            "nvmlGpuInstanceCreateComputeInstance", "nvmlGpuInstanceCreateComputeInstanceWithPlacement", "nvmlComputeInstanceDestroy")


CONTROLLER = "ctl"
H100 = "gpu-01"
A100 = "gpu-02"
GPU_NODES = [H100, A100]
WHOLE_TYPE = {"NVIDIA H100 80GB HBM3": "h100", "NVIDIA A100-SXM4-40GB": "a100"}


def sim(name):
    return json.loads(sh(name, "nvmlsim show --json").stdout)


def layout(name):
    """{gpu index: sorted [(start, profile, gi id, (MIG UUIDs))]} of a node."""
    return dict((gpu["index"], sorted((gi["start"], gi["profile"], gi["id"], tuple(ci["uuid"] for ci in gi["compute_instances"]))
                                      for gi in gpu["gpu_instances"])) for gpu in sim(name)["gpus"])


def profiles(name):
    return dict((index, sorted(gi[1] for gi in gis)) for index, gis in layout(name).items())


def expected_gres(name):
    """The Gres= the node must show, from what its GPUs really have: one gpu entry per MIG instance or whole GPU."""
    counts = {}
    for gpu in sim(name)["gpus"]:
        types = [gi["profile"].split("+")[0] for gi in gpu["gpu_instances"]] if gpu["mig_current"] else [WHOLE_TYPE[gpu["name"]]]
        for gres_type in types:
            counts[gres_type] = counts.get(gres_type, 0) + 1
    return set("gpu:%s:%d" % item for item in counts.items())


def slurm_node(name):
    # the one node parser (slurm/_nodes.py), shown as the slurm_node module shows a node
    return view(parse_node(sh(CONTROLLER, "scontrol -o show node %s" % name).stdout))


def wait_idle(names, timeout=120):
    deadline = time.time() + timeout
    views = {}
    while time.time() < deadline:
        views = dict((n, slurm_node(n)) for n in names)
        if all(v["state"] == ["IDLE"] for v in views.values()):
            return views
        time.sleep(2)
    raise AssertionError("nodes not idle after %d s: %s" % (timeout, views))


def playbook(*extra):
    return run_playbook("gpucluster.bringup.mig_change", ["-e", "@%s" % VARS] + list(extra))


def start_time(name, unit):
    return sh(name, "systemctl show -p ExecMainStartTimestampMonotonic --value %s" % unit).stdout.strip()


def slurm_conf_node_gres(text, name):
    """Gres= of the NodeName line that names ``name`` (the role may merge nodes into hostlists; ours differ)."""
    for line in text.splitlines():
        if line.startswith("NodeName=%s " % name):
            return set(dict(item.split("=", 1) for item in line.split() if "=" in item).get("Gres", "").split(","))
    raise AssertionError("no NodeName=%s line in slurm.conf:\n%s" % (name, text))


# ----------------------------------------------------------------------------- the layout in place


@pytest.mark.ci  # also in CI's molecule stage (conftest.py)
def test_all_balanced_gives_each_model_its_own_layout_and_slurm_follows():
    rc, output = playbook()
    assert rc == 0, output[-5000:]
    assert all(recap(output)[name]["changed"] > 0 for name in GPU_NODES), recap(output)
    assert profiles(H100) == dict((i, ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]) for i in range(8))
    assert profiles(A100) == dict((i, ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]) for i in range(8))
    views = wait_idle(GPU_NODES)
    slurm_conf = sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout
    for name in GPU_NODES:
        want = expected_gres(name)
        assert gres_set(views[name]["gres"]) == want, (name, views[name])
        assert slurm_conf_node_gres(slurm_conf, name) == want
        gres_conf = [line for line in sh(name, "cat /etc/slurm/gres.conf").stdout.splitlines() if line.startswith("Name=gpu")]
        assert len(gres_conf) == 32 and all(" MultipleFiles=/dev/nvidia" in line for line in gres_conf)
        assert sh(name, "cat /etc/slurm/slurm.conf").stdout == slurm_conf


@pytest.mark.ci  # also in CI's molecule stage (conftest.py)
def test_boot_unit_and_layout_file_are_installed():
    for name in GPU_NODES:
        host = node(name)
        unit = host.service("gpucluster-mig")
        assert unit.is_enabled and unit.is_running
        text = host.file("/etc/systemd/system/gpucluster-mig.service").content_string
        assert "Before=slurmd.service" in text and "ExecStart=/usr/local/sbin/gpucluster-mig-boot --layout-file /etc/gpucluster/mig-layout.json" in text
        saved = json.loads(host.file("/etc/gpucluster/mig-layout.json").content_string)
        assert saved["layout"] == "all-balanced"
        check = sh(name, "/usr/local/sbin/gpucluster-mig-boot --check")
        assert check.stdout.splitlines()[-1] == "gpucluster-mig-boot: layout all-balanced is in place, nothing to do on 8 GPU(s)"


# ----------------------------------------------------------------------------- re-applying


def test_reapplying_changes_nothing_and_makes_no_nvml_mutation():
    """Every NVML call that changes a GPU is made to fail: a re-apply that made one would fail."""
    wait_idle(GPU_NODES)
    before = dict((name, layout(name)) for name in GPU_NODES)
    slurmd = dict((name, start_time(name, "slurmd")) for name in GPU_NODES)
    slurmctld = start_time(CONTROLLER, "slurmctld")
    try:
        for name in GPU_NODES:
            for call in MUTATING:
                sh(name, "nvmlsim inject --call %s --error NVML_ERROR_UNKNOWN --count 0" % call)
        rc, output = playbook()
    finally:
        for name in GPU_NODES:
            sh(name, "nvmlsim inject --clear")
    assert rc == 0, output
    assert all(recap(output)[name] == dict(changed=0, unreachable=0, failed=0) for name in GPU_NODES), output
    assert dict((name, layout(name)) for name in GPU_NODES) == before
    assert dict((name, start_time(name, "slurmd")) for name in GPU_NODES) == slurmd
    assert start_time(CONTROLLER, "slurmctld") == slurmctld


# ----------------------------------------------------------------------------- one GPU, a shrink, a running job


@pytest.mark.ci  # also in CI's molecule stage (conftest.py)
def test_changing_one_gpu_drains_waits_for_the_job_and_shrinks_the_gres():
    wait_idle(GPU_NODES)
    before = layout(H100)
    other_node = layout(A100)
    sh(H100, "rm -f /tmp/mig-job-end")
    job = sh(CONTROLLER, "sbatch --parsable -w %s -o /dev/null --wrap 'sleep 15; date +%%s.%%N > /tmp/mig-job-end'" % H100).stdout.strip()
    deadline = time.time() + 60
    while "RUNNING" not in sh(CONTROLLER, "squeue -h -j %s -o %%T" % job, check=False).stdout and time.time() < deadline:
        time.sleep(1)
    rc, output = playbook("--limit", H100, "-e", "mig_layout=molecule-gpu3-3g")
    assert rc == 0, output
    assert recap(output)[H100]["changed"] > 0
    # The job was waited for, not killed: it wrote its end time; the GPUs changed after it.
    job_end = float(sh(H100, "cat /tmp/mig-job-end").stdout)
    assert "JobState=COMPLETED" in sh(CONTROLLER, "scontrol show job %s" % job).stdout
    state_changed = float(sh(H100, "stat -c %.9Y /var/lib/nvmlsim/state.json").stdout)
    assert state_changed > job_end
    # Only GPU 3's differing instances were touched: its 3g.40gb at 4:4 kept its id and MIG UUID.
    after = layout(H100)
    assert dict((i, after[i]) for i in range(8) if i != 3) == dict((i, before[i]) for i in range(8) if i != 3)
    kept = [gi for gi in before[3] if gi[0] == 4]
    assert kept and kept[0] in after[3]
    assert [(gi[0], gi[1]) for gi in after[3]] == [(0, "3g.40gb"), (4, "3g.40gb")]
    assert layout(A100) == other_node
    # Drained with the role's reason, then back to idle with the smaller Gres=.
    log = sh(CONTROLLER, "cat /var/log/slurm/slurmctld.log").stdout
    assert "reason set to: gpucluster.bringup.mig: applying layout molecule-gpu3-3g" in log
    view = wait_idle([H100])[H100]
    want = expected_gres(H100)
    assert "gpu:1g.10gb:14" in want and "gpu:3g.40gb:9" in want
    assert gres_set(view["gres"]) == want and view["reason"] is None
    assert slurm_conf_node_gres(sh(CONTROLLER, "cat /etc/slurm/slurm.conf").stdout, H100) == want
    gres_conf = [line for line in sh(H100, "cat /etc/slurm/gres.conf").stdout.splitlines() if line.startswith("Name=gpu")]
    assert len(gres_conf) == 30
    rc, output = playbook("--limit", H100, "-e", "mig_layout=molecule-gpu3-3g")
    assert rc == 0 and recap(output)[H100]["changed"] == 0, output


# ----------------------------------------------------------------------------- one MIG vocabulary


def validate_records(tmp_path, *extra):
    """Run validate.yml (node and Slurm checks) with ``extra`` arguments; {(node, check): record} of its report."""
    report = tmp_path / "report"
    tmp_path.mkdir(parents=True, exist_ok=True)
    rc, output = run_playbook(ROOT / "playbooks" / "validate.yml",
                              ["-e", json.dumps({"validate_report_dir": str(report), "validate_mpi": False, "validate_nccl": False})]
                              + list(extra), log=tmp_path / "validate.log")
    assert report.exists(), (rc, output[-6000:])  # (a failed check fails the run too: the report says which)
    return dict(((rec["node"], rec["check"]), rec) for rec in records(load(report)))


def test_mig_layout_alone_moves_the_layout_the_health_check_and_the_validation(tmp_path):
    """The admin states mig_layout once: the mig role applied it (the test before), the health check recorded it,
    and the validation compares the node with it; nothing else was set (no validate_* or slurm_healthcheck_* layout)."""
    wait_idle([H100])
    have = profiles(H100)
    assert have[3] == ["3g.40gb", "3g.40gb"]  # molecule-gpu3-3g, applied by the test before
    recorded = json.loads(sh(H100, "cat /etc/gpucluster/healthcheck.json").stdout)["mig_layout"]
    assert dict((int(index), sorted(names)) for index, names in recorded.items()) == dict((i, p) for i, p in have.items() if p)
    assert sh(H100, "/usr/local/sbin/gpucluster-healthcheck").stdout.strip() == "gpucluster-healthcheck: healthy"
    # the same mig_layout the change used: the H100's layout is the wanted one (on the H100 alone, as the change ran: the
    # layout's 3g.40gb is no profile of the A100, and the preflight refuses it for that node, naming the node and the profile)
    now = validate_records(tmp_path / "same", "-e", "@%s" % VARS, "-e", "mig_layout=molecule-gpu3-3g", "--limit", "%s,%s" % (CONTROLLER, H100))
    assert now[(H100, "mig_layout")]["status"] == "pass", now[(H100, "mig_layout")]
    # mig_layout of the vars file (all-balanced): only GPU 3 of the H100 differs; the A100 has all-balanced
    other = validate_records(tmp_path / "other", "-e", "@%s" % VARS)
    record = other[(H100, "mig_layout")]
    assert record["status"] == "fail" and "nvidia_mig would: GPU 3: " in record["reason"], record
    assert not any("GPU %d:" % i in record["reason"] for i in range(8) if i != 3), record
    assert other[(A100, "mig_layout")]["status"] == "pass", other[(A100, "mig_layout")]
    # a name that is no layout stops the validation at its preflight (the collection's one), naming the valid ones
    rc, output = run_playbook(ROOT / "playbooks" / "validate.yml", ["-e", "@%s" % VARS, "-e", "mig_layout=molecule-gpu3-3x"])
    assert rc != 0 and "mig_layout is 'molecule-gpu3-3x', not a shipped layout or one of mig_layouts_custom; valid layouts: " in output, output
    assert "TASK [gpucluster.bringup.validate : Compute the GPU GRES" not in output


# ----------------------------------------------------------------------------- a GPU in use


def test_a_gpu_with_a_running_process_is_refused_and_nothing_changes():
    wait_idle([H100])
    one_g = [gi for gi in layout(H100)[5] if gi[1] == "1g.10gb"][0]
    sh(H100, "nvmlsim process add --gpu 5 --pid 424242 --name python3 --gi %d --ci 0" % one_g[2])
    try:
        before = layout(H100)
        gres_before = slurm_node(H100)["gres"]
        rc, output = playbook("--limit", H100, "-e", "mig_layout=molecule-gpu5-7g")
        after = layout(H100)
    finally:
        sh(H100, "nvmlsim process remove --pid 424242")
    assert rc != 0, output
    assert ("refusing to destroy GPU instance %d (1g.10gb at %d:1) used by pid 424242 (python3); set force to destroy it anyway"
            % (one_g[2], one_g[0])) in output, output
    assert after == before
    view = wait_idle([H100])[H100]
    assert view["reason"] is None and view["gres"] == gres_before


# ----------------------------------------------------------------------------- slurmctld dies during a change


def test_a_change_whose_slurmctld_dies_reports_the_cause_first_and_the_node_says_what_to_run():
    wait_idle([H100])
    before = layout(H100)
    # the layout in place (the shrink test's, or all-balanced when this test runs alone)
    in_place = "molecule-gpu3-3g" if profiles(H100)[3] == ["3g.40gb", "3g.40gb"] else "all-balanced"
    job = sh(CONTROLLER, "sbatch --parsable -w %s -o /dev/null --wrap 'sleep 20'" % H100).stdout.strip()
    deadline = time.time() + 60
    while "RUNNING" not in sh(CONTROLLER, "squeue -h -j %s -o %%T" % job, check=False).stdout and time.time() < deadline:
        time.sleep(1)
    change = subprocess.Popen([str(ANSIBLE_PLAYBOOK)] + inventories() + ["gpucluster.bringup.mig_change", "-e", "@%s" % VARS,
                                                                        "--limit", H100, "-e", "mig_layout=molecule-gpu5-7g"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(ROOT))
    try:
        # the role drained the node and waits for the job: now slurmctld dies
        deadline = time.time() + 120
        while "applying layout molecule-gpu5-7g" not in (slurm_node(H100)["reason"] or "") and time.time() < deadline:
            time.sleep(1)
        sh(CONTROLLER, "systemctl stop slurmctld")
        output = change.communicate(timeout=300)[0]
    finally:
        if change.poll() is None:
            change.kill()
        sh(CONTROLLER, "systemctl start slurmctld")
    assert change.returncode != 0, output
    fatal = [line for line in output.splitlines() if line.startswith("fatal: [%s]" % H100)]
    msg = json.loads(fatal[-1].split("=> ", 1)[1])["msg"]
    # the cause first (the job wait could not ask slurmctld), then what to do, then the rescue's own failure
    cause, stays, resume = re.match(r"^(.*?)\. (%s stays drained: .*?); (resuming it failed too: .*)$" % H100, msg).groups()
    # (the slurm_node module's message, through the Slurm client: the command, its exit status, what it printed)
    assert re.match(r"^(scontrol -o show node %s|squeue --noheader --nodelist %s .*) failed \(rc 1\): .*"
                    r"Unable to contact slurm controller" % (H100, H100), cause), msg
    # the hint is the whole command as the user ran it: inventories, this node and the layout of this run
    hint = re.match(r"^%s stays drained: fix the cause, then run ansible-playbook(?: -i \S+)+ gpucluster.bringup.mig_change "
                    r"--limit %s -e '(\{.*\})'$" % (H100, H100), stays)
    assert hint and json.loads(hint.group(1))["mig_layout"] == "molecule-gpu5-7g", msg
    assert resume.startswith("resuming it failed too: scontrol -o show node %s failed (rc 1): " % H100), msg
    assert layout(H100) == before
    # slurmctld is back: the node is still drained by the role, and its reason says what to run
    deadline = time.time() + 60
    while sh(CONTROLLER, "scontrol ping", check=False).rc != 0 and time.time() < deadline:
        time.sleep(1)
    view = slurm_node(H100)
    assert "DRAIN" in view["state"] or "DRAINED" in view["state"] or "DRAINING" in view["state"], view
    assert view["reason"] == ("gpucluster.bringup.mig: applying layout molecule-gpu5-7g; if this stays, fix the cause, "
                              "then run gpucluster.bringup.mig_change --limit %s -e mig_layout=molecule-gpu5-7g" % H100), view
    # as the reason says: once the job has ended, mig_change (with the layout in place) resumes the node
    deadline = time.time() + 60
    while sh(CONTROLLER, "squeue -h -w %s" % H100).stdout.strip() and time.time() < deadline:
        time.sleep(1)
    rc, output = playbook("--limit", H100, "-e", "mig_layout=%s" % in_place)
    assert rc == 0, output
    view = wait_idle([H100])[H100]
    assert view["reason"] is None and layout(H100) == before


# ----------------------------------------------------------------------------- a wrong name


def test_an_unknown_layout_name_fails_in_preflight_listing_the_valid_ones():
    custom = yaml.safe_load(VARS.read_text())["mig_layouts_custom"]
    before = layout(H100)
    rc, output = playbook("--limit", H100, "-e", "mig_layout=all-balancd")
    assert rc != 0
    assert ("%s: mig_layout is 'all-balancd', not a shipped layout or one of mig_layouts_custom; valid layouts: %s "
            '(or "" to leave MIG alone) (role gpucluster.bringup.mig)'
            % (H100, ", ".join(sorted(set(LAYOUTS) | set(custom))))) in " ".join(output.split()), output
    assert layout(H100) == before


# ----------------------------------------------------------------------------- after a reboot


def test_the_boot_unit_recreates_the_layout_before_slurmd_after_a_reboot():
    wait_idle([A100])
    before = layout(A100)
    sh(A100, "nvmlsim reboot")
    assert all(gis == [] for gis in layout(A100).values())
    subprocess.run([str(ROOT / "scripts" / "lib" / "podman"), "restart", PREFIX + A100], check=True, capture_output=True)
    deadline = time.time() + 90
    while time.time() < deadline:
        status = node(A100).run("systemctl is-system-running").stdout.strip()
        if status in ("running", "degraded"):
            break
        time.sleep(1)
    assert sh(A100, "systemctl is-active gpucluster-mig").stdout.strip() == "active"
    assert layout(A100) == before  # same placements, ids and MIG UUIDs
    mig_done = int(sh(A100, "systemctl show -p ActiveEnterTimestampMonotonic --value gpucluster-mig").stdout)
    slurmd_start = int(start_time(A100, "slurmd"))
    assert 0 < mig_done <= slurmd_start
    view = wait_idle([A100])[A100]
    assert gres_set(view["gres"]) == expected_gres(A100)
