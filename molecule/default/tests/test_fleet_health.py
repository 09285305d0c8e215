"""Issue 21 on the simulated cluster: the GPU health check's tiers, tagged drains and automatic undrain.

Each fault is injected the way the simulated driver shows it (`nvmlsim xid`, `ecc`, `nvlink`, `ib`,
`fabric-manager`, `persistence`, `driver`): through the real nvidia-ml-py over the simulated
libnvidia-ml.so.1, the simulated kernel log (/var/log/kern.log) and InfiniBand sysfs tree. The periodic tier
is the program slurmd runs as HealthCheckProgram (run here as slurmd runs it: no arguments, as root; and once
by slurmd itself, at its start); the prolog tier runs in the real prolog of a real job. What is asserted is
what an admin sees: sinfo's state and reason, squeue/scontrol for the requeued job, the program's output and
duration, the event log.
"""
import json
import subprocess
import time

import pytest

from simcluster import ANSIBLE_PLAYBOOK, COMPUTE, ROOT, ctl, inventories, playbook_env, run_playbook, sh, states, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

HEALTHCHECK = "/usr/local/sbin/gpucluster-healthcheck"
H100 = "gpu-01"  # h100-80gb-x8: NVSwitch fabric, 18 NVLinks per GPU, 8 NDR InfiniBand ports
A100 = "gpu-02"  # a100-40gb-x8: 12 NVLinks per GPU, 8 HDR ports, no NVML fabric state
# what a reboot of the simulated node does: the driver starts afresh (no MIG instances, no Xid since boot),
# then the mig role's boot unit re-creates the layout
REBOOT = "nvmlsim reboot && if systemctl is-enabled -q gpucluster-mig; then systemctl restart gpucluster-mig; fi"
PERIODIC_BUDGET = 30
PROLOG_BUDGET = 3


def reason(name):
    text = ctl("sinfo -h -n %s -o '%%E'" % name).stdout.strip()
    return "" if text == "none" else text


def periodic(name):
    """One run of the periodic tier as slurmd runs it; (rc, stdout, seconds)."""
    start = time.monotonic()
    result = sh(name, HEALTHCHECK, check=False)
    seconds = time.monotonic() - start
    assert result.rc in (0, 1), result.stdout + result.stderr
    return result.rc, result.stdout, seconds


def resume_after_passes(name):
    """Clear-side of every fault: the first passing run keeps the node drained, the second resumes it."""
    rc, out, _seconds = periodic(name)
    assert rc == 0 and "(1 of 2 passing runs in a row)" in out, out
    assert states()[name].startswith("drain"), states()
    rc, out, _seconds = periodic(name)
    assert rc == 0 and "healthy 2 runs in a row: resuming %s" % name in out, out
    wait_idle([name], timeout=60)
    assert reason(name) == ""


@pytest.fixture(autouse=True)
def _healthy_nodes():
    wait_idle(COMPUTE)
    for name in COMPUTE:
        assert periodic(name)[0] == 0
    yield
    # whatever a test broke: back to the preset's healthy node, no drain left
    for name in COMPUTE:
        sh(name, "nvmlsim inject --clear; for h in $(ls /var/lib/nvmlsim/sys/class/infiniband); do nvmlsim ib --hca $h --restore; done; "
                 "nvmlsim module --unload nvidia_drm >/dev/null 2>&1; nvmlsim module --load nvidia_peermem >/dev/null 2>&1; "
                 "nvmlsim fabric-manager --version driver >/dev/null 2>&1; systemctl start nvidia-fabricmanager >/dev/null 2>&1; true",
           check=False)
        if reason(name).startswith("gpuhc:"):
            ctl("scontrol update nodename=%s state=resume" % name, check=False)


@pytest.mark.parametrize("name, fault, clear, tag", [
    (H100, "nvmlsim nvlink --gpu 1 --link 3 --state down", "nvmlsim nvlink --gpu 1 --link 3 --state up",
     "gpuhc:periodic:nvlink: GPU 1 (00000000:43:00.0) has 17 of 18 NVLinks active (down: 3)"),
    (H100, "nvmlsim ib --hca mlx5_3 --state down", "nvmlsim ib --hca mlx5_3 --restore",
     "gpuhc:periodic:ib: InfiniBand mlx5_3 port 1 is DOWN (physical Polling), expected ACTIVE/LinkUp"),
    (A100, "nvmlsim ib --hca mlx5_6 --rate 100", "nvmlsim ib --hca mlx5_6 --restore",
     "gpuhc:periodic:ib: InfiniBand mlx5_6 port 1 runs at 100 Gb/sec (2X HDR), expected 200 Gb/sec"),
    (H100, "nvmlsim fabric-manager --state stopped", "nvmlsim fabric-manager --state running",
     "gpuhc:periodic:fabric: GPU 0 (00000000:1B:00.0) NVLink fabric state NOT_STARTED: nvidia-fabricmanager is not running"),
    (A100, "nvmlsim persistence --gpu 4 --mode off", "nvmlsim persistence --gpu 4 --mode on",
     "gpuhc:periodic:persistence: GPU 4 (00000000:87:00.0) persistence mode is off"),
    (H100, "nvmlsim driver --version 515.65.01", "nvmlsim driver --version 570.133.20",
     "gpuhc:periodic:driver: NVIDIA driver 515.65.01 is older than 525.60.13"),
    (A100, "nvmlsim ecc --gpu 5 --remap-failure yes", "nvmlsim ecc --gpu 5 --remap-failure no",
     "gpuhc:periodic:gpu-error: GPU 5 (00000000:90:00.0) has a failed memory row remapping"),
    (H100, "nvmlsim xid --gpu 0 --code 79", REBOOT, "gpuhc:periodic:gpu-error: GPU 0: nvmlDeviceGetHandleByIndex failed: "),
])
def test_the_periodic_tier_drains_with_its_tag_and_resumes_after_two_passes(name, fault, clear, tag):
    sh(name, fault)
    rc, out, seconds = periodic(name)
    assert rc == 1, out
    assert seconds < PERIODIC_BUDGET, seconds
    assert states()[name].startswith("drain"), states()
    assert reason(name).startswith(tag), (reason(name), out)
    events = [json.loads(line) for line in sh(name, "tail -n 3 /var/log/gpucluster-healthcheck.jsonl").stdout.splitlines()]
    assert (events[-1]["action"], events[-1]["tier"]) == ("drain", "periodic") and events[-1]["failures"], events[-1]
    # still broken: it stays drained, the reason unchanged
    assert periodic(name)[0] == 1 and reason(name).startswith(tag)
    sh(name, clear)
    resume_after_passes(name)


@pytest.mark.ci  # also in CI's molecule stage (conftest.py)
def test_xid_79_names_the_lost_gpu_and_the_xid(name=H100):
    sh(name, "nvmlsim xid --gpu 0 --code 79")
    rc, out, _seconds = periodic(name)
    assert rc == 1
    assert "FAIL xid: the GPU at PCI 0000:1b:00 had Xid 79 since boot (last: 79, GPU has fallen off the bus.); reboot the node" in out
    assert reason(name).endswith("(+1 more)"), reason(name)
    sh(name, REBOOT)
    resume_after_passes(name)


def test_slurmd_itself_runs_the_periodic_tier(name=A100):
    """slurmd runs HealthCheckProgram when it starts (and every HealthCheckInterval): no run by hand here."""
    sh(name, "nvmlsim ib --hca mlx5_2 --state down")
    sh(name, "systemctl restart slurmd")
    deadline = time.time() + 90
    while time.time() < deadline and not reason(name).startswith("gpuhc:"):
        time.sleep(2)
    assert reason(name).startswith("gpuhc:periodic:ib: InfiniBand mlx5_2 port 1 is DOWN"), reason(name)
    sh(name, "nvmlsim ib --hca mlx5_2 --restore")
    resume_after_passes(name)


def test_the_prolog_tier_drains_and_slurm_requeues_the_job(name=H100):
    sh(name, "nvmlsim xid --gpu 2 --code 48")
    # the periodic tier would drain it too; the job arrives first
    job = ctl("sbatch --parsable -w %s --gres=gpu:1 -o /dev/null --wrap 'true'" % name).stdout.strip()
    deadline = time.time() + 60
    while time.time() < deadline and not reason(name).startswith("gpuhc:"):
        time.sleep(1)
    assert reason(name).startswith("gpuhc:prolog:xid: GPU 2 (00000000:52:00.0) had Xid 48 since boot"), reason(name)
    shown = ctl("scontrol -o show job %s" % job).stdout
    assert "Restarts=1" in shown and "JobState=PENDING" in shown, shown
    assert "Reason=JobHeldAdmin" not in shown and "Reason=JobHeldUser" not in shown, shown  # nohold_on_prolog_fail
    log = sh(name, "journalctl -t slurm-hooks --no-pager -n 30").stdout
    hook = [l for l in log.splitlines() if "hook=10-all-gpu-healthcheck" in l and "status=failed" in l]
    assert hook, log
    duration = float(hook[-1].split("duration=")[1].split("s")[0])
    assert duration < PROLOG_BUDGET, hook[-1]
    # an admin reboots the node (the simulated driver: a new boot, no Xid since); the node comes back by itself
    sh(name, REBOOT)
    try:
        resume_after_passes(name)
        # the requeued job waits for its EligibleTime (Slurm delays a requeued batch job), not held: it will run
        shown = ctl("scontrol -o show job %s" % job).stdout
        assert "JobState=PENDING" in shown and "Held" not in shown, shown
    finally:
        ctl("scancel %s" % job, check=False)


def test_an_admin_drain_is_never_undone(name=A100):
    ctl("scontrol update nodename=%s state=drain reason='PSU swap, ticket 4711'" % name)
    try:
        sh(name, "nvmlsim nvlink --gpu 0 --link 1 --state down")
        assert periodic(name)[0] == 1
        assert reason(name) == "PSU swap, ticket 4711"
        sh(name, "nvmlsim nvlink --gpu 0 --link 1 --state up")
        for _run in range(3):
            rc, out, _seconds = periodic(name)
            assert rc == 0 and 'drained by someone else ("PSU swap, ticket 4711"), not resumed' in out, out
        assert states()[name].startswith("drain") and reason(name) == "PSU swap, ticket 4711"
    finally:
        ctl("scontrol update nodename=%s state=resume" % name)


# --- the node baseline (gpucluster.bringup.gpu_baseline: the nvml role's last step, the mig role before a drain) ---

SIM_PATHS = {"ib_sysfs_root": "/var/lib/nvmlsim/sys/class/infiniband", "module_root": "/var/lib/nvmlsim/sys/module"}


def baseline(name, **args):
    """The module on one node, ad hoc as root (as the roles call it); its JSON answer."""
    env = playbook_env()
    env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    args = dict(SIM_PATHS, node_name=name, **args)
    result = subprocess.run([str(ANSIBLE_PLAYBOOK.parent / "ansible")] + inventories() + [name, "--become", "-m", "gpucluster.bringup.gpu_baseline",
                                                                                        "-a", json.dumps(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT), check=False)
    return json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"][name]


def test_the_fabric_manager_service_is_part_of_the_baseline_and_the_periodic_tier(name=H100):
    assert not baseline(name).get("failed")
    sh(name, "systemctl stop nvidia-fabricmanager")
    answer = baseline(name)
    assert answer.get("failed") and answer["msg"].startswith("%s: fabric-manager: nvidia-fabricmanager is inactive on this NVSwitch system" % name), answer
    rc, out, _seconds = periodic(name)
    assert rc == 1 and reason(name).startswith("gpuhc:periodic:fabric-manager: nvidia-fabricmanager is inactive"), (reason(name), out)
    sh(name, "systemctl start nvidia-fabricmanager")
    resume_after_passes(name)


def test_a_fabric_manager_of_another_release_than_the_driver_is_named(name=A100):
    """A fabric manager package of another release (the daemon still runs): named with both versions; restarted, the
    STAND-IN refuses to start as the real one does, and the service is named failed."""
    sh(name, "nvmlsim fabric-manager --version 535.104.05")
    answer = baseline(name)
    assert answer.get("failed") and answer["msg"].startswith(
        "%s: fabric-manager: nvidia-fabricmanager is version 535.104.05, the driver 535.129.03: they must be the same release" % name), answer
    sh(name, "systemctl restart nvidia-fabricmanager", check=False)
    answer = baseline(name)
    assert answer.get("failed") and answer["msg"].startswith(
        "%s: fabric-manager: nvidia-fabricmanager is failed on this NVSwitch system" % name), answer


def test_gpudirect_rdma_needs_peermem_with_the_proprietary_modules(name=A100):
    sh(name, "nvmlsim module --unload nvidia_peermem")
    answer = baseline(name, checks=["gpudirect"])
    assert answer.get("failed") and answer["msg"].startswith(
        "%s: gpudirect: no GPUDirect RDMA for the 8 InfiniBand ports: nvidia_peermem is not loaded and DMA-BUF is not possible "
        "(the proprietary kernel modules have no DMA-BUF" % name), answer


def test_a_mig_mode_change_stops_before_the_drain_when_nvidia_drm_would_block_the_reset(name=H100):
    """mig_change.yml --check with a layout that puts GPU 1 in MIG mode: the GPU reset it needs would fail with nvidia_drm
    loaded; the role says so before it drains anything."""
    sh(name, "nvmlsim module --load nvidia_drm")
    layout = [{"gpu": "0", "instances": [{"profile": "1g.10gb", "count": 2}]}, {"gpu": "1", "instances": [{"profile": "7g.80gb", "count": 1}]}]
    layout += [{"gpu": str(i), "mig": False} for i in range(2, 8)]
    rc, output = run_playbook("gpucluster.bringup.mig_change", ["--check", "--limit", name, "-e", json.dumps(
        {"mig_layout": "fleet-health-mode-change", "mig_layouts_custom": {"fleet-health-mode-change": layout}})])
    assert rc != 0, output[-3000:]
    assert "reset-blockers: nvidia_drm is loaded (display/KMS): it holds the GPUs and a GPU reset fails" in output, output[-3000:]
    assert states()[name] == "idle" and reason(name) == ""
