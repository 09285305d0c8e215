"""Issue 48 on the simulated cluster: the closed loop, from an Xid to a reboot through Slurm, the deep tier and back.

slurm_cluster.yml runs with slurm_healthcheck_loop_enabled: the controller gets gpucluster-node-loop and its timer
(every 5 s here), slurm.conf gets RebootProgram and ResumeTimeout, the nodes the loop's actions file. Faults are
injected as the simulated driver shows them (nvmlsim xid / clocks), the health check's periodic tier is run as
slurmd runs it, and what is asserted is what an admin sees: sinfo's state and reason, the job's restarts, the
loop's JSON log and text-file metrics on the controller.

What a "reboot" is here: a container cannot reboot its kernel.  RebootProgram is a STAND-IN script
(/usr/local/sbin/gpucluster-sim-reboot, written by this test): it restarts the simulated driver (`nvmlsim reboot`:
no Xid since boot, every GPU back; the mig role's boot unit re-creates the layout) and restarts slurmd with
`-b` (slurmd(8): report the node as rebooted when the daemon starts), so that slurmctld sees a boot time after its
reboot request, exactly as after a real reboot.  Everything else is real: scontrol reboot ASAP,
the requeue, slurmctld's reboot bookkeeping, the deep tier's reservation and srun job (with the deep tier's tool
STAND-INs, tests/standins/).

Run by the lead on the running cluster: GPUCLUSTER_MOLECULE_TESTS=acceptance (scripts/test.sh acceptance), or
`pytest -m acceptance molecule/default/tests/test_closed_loop.py` with the cluster up.

A GPU reset (reset-gpu) is the simulator's STAND-IN nvidia-smi --gpu-reset (nvml_sim/bin/nvidia-smi): it clears the
volatile ECC errors and the MIG instances, refuses a GPU in use (IN_USE) or lost (GPU_IS_LOST).
"""
import json
import time

import pytest

from simcluster import COMPUTE, CONTROLLER, ROOT, ctl, run_playbook, sh, states, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

PLAYBOOK = ROOT / "playbooks" / "slurm_cluster.yml"
HEALTHCHECK = "/usr/local/sbin/gpucluster-healthcheck"
LOOP = "/usr/local/sbin/gpucluster-node-loop"
EVENTS = "/var/log/gpucluster-node-loop.jsonl"
METRICS = "/var/lib/node_exporter/textfile_collector/gpucluster_node_loop.prom"
REBOOT_PROGRAM = "/usr/local/sbin/gpucluster-sim-reboot"
DROP_IN = "/run/systemd/system/slurmd.service.d/zz-gpucluster-sim-reboot.conf"
H100 = "gpu-01"
A100 = "gpu-02"
LOOP_VARS = {
    "slurm_healthcheck_loop_enabled": True,
    "slurm_healthcheck_loop": {
        "interval": 5,
        "reboot_program": REBOOT_PROGRAM,
        "reboot_max": 1,          # a second fault within the window: service
        "reboot_timeout": 600,
        "promote_after": 2,
        "promote_window": 3600,
        "deep_time_limit": 5,
        "deep_settings": {
            "checks": ["dcgm", "nvbandwidth"], "dcgmi": "/opt/dcgm-STANDIN/bin/dcgmi", "dcgm_level": 1,
            "nvbandwidth": "/opt/nvbandwidth-STANDIN/nvbandwidth"},
    },
}
SIM_REBOOT = """#!/bin/sh
# STAND-IN RebootProgram of the simulated cluster (written by molecule/default/tests/test_closed_loop.py): the
# simulated driver starts afresh, then slurmd restarts with -b and reports a boot time of its start.
nvmlsim reboot
if systemctl is-enabled -q gpucluster-mig 2>/dev/null; then systemctl restart gpucluster-mig; fi
mkdir -p %(dir)s
cat > %(drop_in)s <<'EOF'
[Service]
ExecStart=
ExecStart=%(exec_start)s
EOF
systemctl daemon-reload
# slurmd runs this program: its restart comes from outside it, and the -b drop-in goes once slurmd is up
systemd-run --no-block --on-active=2 --unit=gpucluster-sim-reboot-$$ /bin/sh -c \\
  'systemctl restart slurmd; sleep 5; rm -f %(drop_in)s; systemctl daemon-reload'
"""


def reason(name):
    text = ctl("sinfo -h -n %s -o '%%E'" % name).stdout.strip()
    return "" if text == "none" else text


def comment(name):
    line = ctl("scontrol -o show node %s" % name).stdout
    return line.split(" Comment=", 1)[1].split(" Extra=")[0].strip() if " Comment=" in line else ""


def boot_time(name):
    line = ctl("scontrol -o show node %s" % name).stdout
    return line.split(" BootTime=", 1)[1].split()[0]


def events(name=None):
    text = ctl("cat %s" % EVENTS, check=False).stdout
    found = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [e for e in found if name is None or e["node"] == name]


def wait_for(what, check, timeout=240, step=2):
    deadline = time.time() + timeout
    value = None
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("%s: not after %ds (last: %r)" % (what, timeout, value))


def periodic(name):
    """One run of the health check's periodic tier as slurmd runs it."""
    result = sh(name, HEALTHCHECK, check=False)
    assert result.rc in (0, 1), result.stdout + result.stderr
    return result


def exec_start_with_b(name):
    """slurmd's ExecStart on the node with -b after the program (the unit the slurm role installed)."""
    unit = sh(name, "systemctl cat slurmd").stdout
    line = [text for text in unit.splitlines() if text.startswith("ExecStart=") and text != "ExecStart="][-1]
    program, _sep, rest = line[len("ExecStart="):].partition(" ")
    return "%s -b %s" % (program, rest)


@pytest.fixture(scope="module", autouse=True)
def loop_on():
    wait_idle(COMPUTE)
    for name in COMPUTE:
        script = SIM_REBOOT % {"dir": DROP_IN.rsplit("/", 1)[0], "drop_in": DROP_IN, "exec_start": exec_start_with_b(name)}
        sh(name, "cat > %s <<'SCRIPT'\n%sSCRIPT\nchmod 0755 %s" % (REBOOT_PROGRAM, script, REBOOT_PROGRAM))
    ctl("rm -f %s /var/lib/gpucluster-node-loop/state.json" % EVENTS)
    rc, out = run_playbook(PLAYBOOK, ["-e", json.dumps(LOOP_VARS)])
    assert rc == 0, out[-3000:]
    yield
    logs = ROOT / ".build" / "test"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "closed-loop-events.jsonl").write_text(ctl("cat %s" % EVENTS, check=False).stdout)
    for name in COMPUTE:
        # a node the loop sent to service keeps its injected fault (and a stand-in reboot left its MIG GPUs without
        # instances until the mig boot unit ran): its simulated driver starts afresh, as after a repair, and slurmd
        # without the stand-in's -b drop-in, before the playbook reads the nodes (seen: the playbook's MIG check
        # failing on gpu-01, "GPU 0 ... is in MIG mode but has no MIG instances")
        sh(name, "nvmlsim reboot >/dev/null && if systemctl is-enabled -q gpucluster-mig 2>/dev/null; then systemctl restart "
                 "gpucluster-mig; fi; rm -f %s && systemctl daemon-reload && systemctl restart slurmd" % DROP_IN, check=False)
    rc, out = run_playbook(PLAYBOOK, ["-e", json.dumps({"slurm_healthcheck_loop_enabled": False})])
    for name in COMPUTE:
        sh(name, "rm -f %s" % REBOOT_PROGRAM, check=False)
        if reason(name):
            ctl("scontrol update nodename=%s state=resume" % name, check=False)
    assert rc == 0, out[-3000:]
    # (scontrol show config prints every key: RebootProgram = (null) once it is unset)
    config = ctl("scontrol show config").stdout
    assert REBOOT_PROGRAM not in config and "RebootProgram           = (null)" in config, config


def test_the_loop_is_installed_and_slurm_knows_the_reboot_program():
    assert ctl("systemctl is-active gpucluster-node-loop.timer").stdout.strip() == "active"
    config = ctl("scontrol show config").stdout
    assert "RebootProgram           = %s" % REBOOT_PROGRAM in config, config
    for name in COMPUTE:
        assert sh(name, "test -f /etc/gpucluster/healthcheck-actions.json", check=False).rc == 0


def test_xid_79_on_a_busy_node_requeues_reboots_deep_checks_and_returns_it():
    seen = len(events(H100))
    job = ctl("sbatch --parsable --requeue -w %s --gres=gpu:1 -o /dev/null --wrap 'sleep 900'" % H100).stdout.strip()
    try:
        wait_for("job running", lambda: "JobState=RUNNING" in ctl("scontrol -o show job %s" % job).stdout, 60)
        booted = boot_time(H100)
        start = time.time()
        sh(H100, "nvmlsim xid --gpu 0 --code 79")
        assert periodic(H100).rc == 1
        assert reason(H100).startswith("gpuhc:periodic:gpu-error: GPU 0")
        tag = wait_for("reboot asked", lambda: reason(H100) if reason(H100).startswith("gpuloop:reboot:gpu-lost: ") else None, 60)
        asked = time.time() - start
        shown = wait_for("job requeued", lambda: [s for s in [ctl("scontrol -o show job %s" % job).stdout] if "Restarts=1" in s], 60)[0]
        assert "JobState=RUNNING" not in shown or "NodeList=%s " % H100 not in shown, shown
        wait_for("node rebooted", lambda: boot_time(H100) != booted, 300)
        wait_for("returned", lambda: [e for e in events(H100)[seen:] if e["event"] == "returned"], 300)
        back = time.time() - start
        wait_idle([H100], timeout=120)
        assert reason(H100) == ""
        mine = events(H100)[seen:]
        assert [e["event"] for e in mine] == ["detected", "reboot_asked", "back", "deep_passed", "returned"], mine
        # (slurmctld adds " : reboot issued" to the reason once RebootProgram ran; a slower poll reads it so)
        assert tag in (mine[1]["reason"], mine[1]["reason"] + " : reboot issued") and mine[1]["jobs"] == [job], (tag, mine[1])
        metrics = ctl("cat %s" % METRICS).stdout
        assert 'gpucluster_loop_node_state{node="%s",state="ok"} 1' % H100 in metrics, metrics
        assert 'gpucluster_loop_conditions_total{condition="gpu-lost",action="reboot"} 1' in metrics, metrics
        assert 'gpucluster_loop_reboots_in_window{node="%s"} 1' % H100 in metrics, metrics
        history = ctl("%s --history %s" % (LOOP, H100)).stdout
        assert " reboot_asked ok -> reboot-asked gpu-lost: gpuloop:reboot:gpu-lost:" in history, history
        print("closed loop %s: fault to reboot asked %.0fs, to back in service %.0fs" % (H100, asked, back))
    finally:
        ctl("scancel %s" % job, check=False)


def test_a_second_fault_within_the_window_sends_the_node_to_service():
    sh(H100, "nvmlsim xid --gpu 3 --code 79")
    assert periodic(H100).rc == 1
    text = wait_for("service", lambda: reason(H100) if reason(H100).startswith("gpuloop:service:") else None, 60)
    assert text.startswith("gpuloop:service:gpu-lost: 1 reboots within 86400s"), text
    assert comment(H100).startswith("gpuloop:service: periodic:gpu-error: GPU"), comment(H100)
    assert events(H100)[-1]["event"] == "service"
    # the loop never returns a node from service: after three more passes it is still drained
    time.sleep(20)
    assert states()[H100].startswith("drain") and reason(H100) == text
    # a person repairs it (the simulated reboot) and resumes it: the loop follows
    sh(H100, "nvmlsim reboot")
    ctl("scontrol update nodename=%s state=resume comment=" % H100)
    wait_for("returned by hand", lambda: [e for e in events(H100)[-1:] if e["event"] == "returned" and e.get("by") == "hand"], 60)


def test_a_flaky_check_in_comment_mode_is_quarantined_then_promoted_after_two_hits():
    sh(A100, "nvmlsim clocks --gpu 7 --reasons hw_slowdown")
    try:
        first = periodic(A100)
        assert first.rc == 0 and "NOTE thermal (thermal, comment)" in first.stdout, first.stdout
        wait_for("quarantined", lambda: comment(A100).startswith("gpuloop:quarantine:thermal: 1 of 2 hits"), 60)
        assert states()[A100] == "idle"  # watched, not drained
        time.sleep(1.5)  # the next hit has its own second
        assert periodic(A100).rc == 0
        text = wait_for("promoted", lambda: reason(A100) if reason(A100).startswith("gpuloop:drain:thermal: ") else None, 60)
        assert text.startswith("gpuloop:drain:thermal: 2 hits within 3600s"), text
        assert [e["event"] for e in events(A100)][-1] == "promoted"
        # (the pass writes its events before the text file of metrics)
        wanted = 'gpucluster_loop_quarantine_hits{node="%s",condition="thermal"} 2' % A100
        wait_for("the metrics of the promotion", lambda: wanted in ctl("cat %s" % METRICS).stdout, 30)
    finally:
        sh(A100, "nvmlsim clocks --gpu 7 --reasons gpu_idle")
        ctl("scontrol update nodename=%s comment=" % A100, check=False)
        if reason(A100):
            ctl("scontrol update nodename=%s state=resume" % A100, check=False)
        wait_idle([A100], timeout=60)


def test_an_admin_drain_is_never_touched():
    ctl("scontrol update nodename=%s state=drain reason='PSU swap, ticket 4711'" % A100)
    seen = len(events(A100))
    try:
        sh(A100, "nvmlsim xid --gpu 0 --code 79")
        assert periodic(A100).rc == 1
        time.sleep(20)  # four passes of the loop
        assert reason(A100) == "PSU swap, ticket 4711"
        assert len(events(A100)) == seen, events(A100)[seen:]
        assert "REBOOT" not in ctl("scontrol -o show node %s" % A100).stdout
    finally:
        sh(A100, "nvmlsim reboot")
        ctl("scontrol update nodename=%s state=resume" % A100, check=False)
        wait_idle([A100], timeout=60)


def test_uncorrected_ecc_on_an_idle_node_resets_its_mig_gpu_deep_checks_and_returns_it_without_a_reboot():
    """reset-gpu (ecc): drained with the reset tag, nvidia-smi --gpu-reset -i 0 (the simulator's STAND-IN nvidia-smi:
    clears the volatile ECC errors and the MIG instances) and the mig boot unit in the deep tier's job, then back."""
    booted = boot_time(H100)
    seen = len(events(H100))
    start = time.time()
    try:
        sh(H100, "nvmlsim ecc --gpu 0 --uncorrected 2")
        assert periodic(H100).rc == 1
        # (the loop may drain, reset and return an idle node between two polls of sinfo: its events say what it did)
        wait_for("returned", lambda: [e for e in events(H100)[seen:] if e["event"] == "returned"], 180)
        took = time.time() - start
        mine = events(H100)[seen:]
        assert [e["event"] for e in mine] == ["detected", "reset_asked", "reset_done", "deep_passed", "returned"], mine
        assert mine[1]["reason"].startswith("gpuloop:reset:ecc: GPU 0 ") and mine[1]["gpus"] == ["0"], mine[1]
        assert mine[2]["gpus"] == ["0"] and mine[2]["mig"] == "restarted", mine[2]
        assert boot_time(H100) == booted  # not rebooted
        assert "REBOOT" not in ctl("scontrol -o show node %s" % H100).stdout
        wait_idle([H100], timeout=30)
        assert "MIG" in sh(H100, "nvidia-smi -L").stdout  # the layout re-created after the reset
        assert periodic(H100).rc == 0  # the ECC errors are gone
        metrics = ctl("cat %s" % METRICS).stdout
        assert 'gpucluster_loop_events_total{event="reset_done"} 1' in metrics, metrics
        print("closed loop %s: ECC to GPU reset and back in service %.0fs" % (H100, took))
    finally:
        if reason(H100).startswith(("gpuloop:", "gpuhc:")):
            sh(H100, "nvmlsim reboot >/dev/null && systemctl restart gpucluster-mig", check=False)
            ctl("scontrol update nodename=%s state=resume comment=" % H100, check=False)


def test_the_loop_program_is_on_the_controller_only():
    assert ctl("test -x %s" % LOOP, check=False).rc == 0
    for name in COMPUTE:
        assert sh(name, "test -e %s" % LOOP, check=False).rc != 0
