"""Issue 21's deep tier on the simulated cluster: playbooks/health_deep.yml against real slurmctld, srun and slurmd.

The module makes a real maintenance reservation, resumes drained nodes into it, and runs one real Slurm job per
node (srun --exclusive --gres=gpu:8, through the real prolog with its health check hook) that runs
gpucluster-healthcheck --tier deep on the node. The tools that job runs are STAND-INs (tests/standins/: no CUDA,
DCGM host engine or RDMA device here): dcgmi, nvbandwidth and ib_write_bw answer from the simulated GPUs and
InfiniBand tree, all_reduce_perf prints recorded outputs. Faults are injected as the simulator shows them (a
GPU's PCIe link at x4, an InfiniBand port at a quarter of its rate, a row remap failure) or, for what only an
active test sees, with a stand-in's failure on demand. What is asserted is what an admin sees: sinfo's state
and reason, scontrol's reservations, the report in <validate_report_dir>/deep.
"""
import json
import re
import time

import pytest

from simcluster import COMPUTE, CONTROLLER, ROOT, SIMULATED_VARS, assert_no_change, ctl, run_playbook, sh, states, wait_idle

pytestmark = pytest.mark.acceptance  # the `acceptance` stage (conftest.py), not CI's molecule stage

PLAYBOOK = ROOT / "playbooks" / "health_deep.yml"
HEALTHCHECK = "/usr/local/sbin/gpucluster-healthcheck"
REPORT = ROOT / "validation-report" / "deep" / "report.json"
H100 = "gpu-01"  # h100-80gb-x8: PCIe gen 5, 8 NDR ports
A100 = "gpu-02"  # a100-40gb-x8: PCIe gen 4, 8 HDR ports
NVBANDWIDTH_FAIL = "/opt/nvbandwidth-STANDIN/FAIL"
CHECKS = ("dcgm", "nccl", "nvbandwidth", "ib-bw")


def reason(name):
    text = ctl("sinfo -h -n %s -o '%%E'" % name).stdout.strip()
    return "" if text == "none" else text


def deep(*extra):
    args = []
    for item in extra:
        args += ["-e", json.dumps(item)]
    rc, out = run_playbook(PLAYBOOK, args)
    return rc, out


def report():
    return json.loads(REPORT.read_text())


def records(data):
    return dict(((node["node"], rec["check"]), rec) for stage in data["stages"] for node in stage["nodes"] for rec in node["checks"])


def no_reservation():
    return "gpucluster-deep-health" not in ctl("scontrol -o show reservation", check=False).stdout


@pytest.fixture(autouse=True)
def _healthy_nodes():
    wait_idle(COMPUTE)
    yield
    for name in COMPUTE:
        sh(name, "rm -f %s; nvmlsim inject --clear; nvmlsim pcie --gpu 2 --restore >/dev/null 2>&1; "
                 "for h in $(ls /var/lib/nvmlsim/sys/class/infiniband); do nvmlsim ib --hca $h --restore; done; true" % NVBANDWIDTH_FAIL,
           check=False)
        if reason(name):
            ctl("scontrol update nodename=%s state=resume" % name, check=False)
    ctl("scontrol delete ReservationName=gpucluster-deep-health", check=False)


def test_a_healthy_cluster_passes_every_deep_check_and_nothing_changes():
    rc, out = deep()
    assert rc == 0, out[-4000:]
    data = report()
    found = records(data)
    for name in COMPUTE:
        for check in CHECKS:
            if (name, check) == (H100, "dcgm"):
                # GPU 0 of gpu-01 is split into MIG instances: DCGM runs no diagnostic there, and says so
                assert found[(name, check)]["status"] == "skip" and "MIG" in found[(name, check)]["reason"], found[(name, check)]
                continue
            assert found[(name, check)]["status"] == "pass", found[(name, check)]
    # the CUDA tests ran on gpu-01's seven whole GPUs
    assert found[(H100, "nccl")]["reason"].startswith("all_reduce_perf on 7 GPUs"), found[(H100, "nccl")]
    # the measured figures are in the report, against their floors
    assert found[(H100, "ib-bw")]["value"] > 0.8 * 400 and found[(A100, "ib-bw")]["value"] > 0.8 * 200
    assert data["status"] == "pass"
    assert all(states()[n] == "idle" for n in COMPUTE), states()
    assert no_reservation()
    # a second run changes nothing: no node drained or resumed, the same report (the first run may have written it)
    verdicts = dict((key, (rec["status"], str(rec.get("reason") or "").split(":")[0])) for key, rec in found.items())
    rc, out = deep()
    assert rc == 0, out[-6000:]
    assert_no_change(out, [CONTROLLER])
    again = report()
    assert again["status"] == "pass"
    assert dict((key, (rec["status"], str(rec.get("reason") or "").split(":")[0])) for key, rec in records(again).items()) == verdicts


def test_check_mode_tests_nothing():
    rc, out = run_playbook(PLAYBOOK, ["--check"])
    assert rc == 0, out[-3000:]
    assert "would be tested (check mode)" in out
    assert no_reservation() and all(states()[n] == "idle" for n in COMPUTE)


def test_a_slow_copy_only_an_active_test_sees_drains_and_only_a_passing_deep_run_returns_the_node(name=H100):
    # nvbandwidth measuring a tenth of the figures (a riser that trains at full width but carries little):
    # nothing NVML reports, so the periodic tier passes
    sh(name, "echo slow > %s" % NVBANDWIDTH_FAIL)
    rc, out = deep()
    assert rc != 0 and "the deep tier drained %s" % name in out, out[-3000:]
    assert states()[name].startswith("drain")
    assert reason(name).startswith("gpuhc:deep:nvbandwidth: nvbandwidth: GPU 0 host_to_device_memcpy_ce"), reason(name)
    assert records(report())[(name, "nvbandwidth")]["status"] == "fail"
    assert states()[[n for n in COMPUTE if n != name][0]] == "idle"
    # the periodic tier passes and leaves the deep tier's drain alone, run after run
    for _ in range(3):
        result = sh(name, HEALTHCHECK, check=False)
        assert result.rc == 0 and "stays drained by the deep tier" in result.stdout, result.stdout
    assert reason(name).startswith("gpuhc:deep:nvbandwidth:")
    # fixed: the next deep run tests the drained node in the reservation and returns it
    sh(name, "rm -f %s" % NVBANDWIDTH_FAIL)
    rc, out = deep({"validate_deep_nodes": [name]})
    assert rc == 0, out[-3000:]
    # exactly this node resumed (the module's result, as the callback prints it on one line or over several)
    assert re.search(r"""['"]resumed['"]: \[\s*['"]%s['"]\s*\]""" % re.escape(name), out), out[-3000:]
    wait_idle([name], timeout=60)
    assert reason(name) == "" and no_reservation()


def test_a_degraded_pcie_link_and_a_slow_ib_port_are_measured_and_named(name=A100):
    sh(name, "nvmlsim pcie --gpu 2 --width 4")
    sh(name, "nvmlsim ib --hca mlx5_5 --rate 50")
    # the periodic tier sees both first and drains the node with its tag
    assert sh(name, HEALTHCHECK, check=False).rc == 1
    assert reason(name).startswith("gpuhc:periodic:")
    rc, out = deep({"validate_deep_nodes": [name]})
    assert rc != 0
    found = records(report())
    assert found[(name, "nvbandwidth")]["status"] == "fail" and "GPU 2" in found[(name, "nvbandwidth")]["reason"], found[(name, "nvbandwidth")]
    assert found[(name, "ib-bw")]["status"] == "fail" and "mlx5_5" in found[(name, "ib-bw")]["reason"], found[(name, "ib-bw")]
    # the deep tier's measured verdict replaces the periodic tier's drain
    assert reason(name).startswith("gpuhc:deep:nvbandwidth:"), reason(name)


def test_an_admins_drain_is_not_tested_unless_asked_and_always_put_back(name=A100):
    ctl("scontrol update nodename=%s state=drain reason='bad fan, ticket 123'" % name)
    rc, out = deep()
    assert rc == 0, out[-3000:]
    found = records(report())
    assert found[(name, "deep_job")]["status"] == "skip" and "drained by someone else" in found[(name, "deep_job")]["reason"]
    assert reason(name) == "bad fan, ticket 123"
    # asked to test it: it is tested inside the reservation, and its drain comes back though it passes
    rc, out = deep({"validate_deep_nodes": [name], "validate_deep_include_drained": "all"})
    assert rc == 0, out[-3000:]
    assert records(report())[(name, "dcgm")]["status"] == "pass"
    assert reason(name) == "bad fan, ticket 123" and states()[name].startswith("drain")
    assert no_reservation()


def test_a_busy_node_is_left_to_its_job(name=H100):
    job = ctl("sbatch --parsable -w %s --gres=gpu:1 --wrap 'sleep 120'" % name).stdout.strip().split(";")[0]
    try:
        deadline = time.time() + 60
        while time.time() < deadline and ctl("squeue -h -j %s -o %%T" % job).stdout.strip() != "RUNNING":
            time.sleep(1)
        rc, out = deep()
        assert rc == 0, out[-3000:]
        found = records(report())
        assert found[(name, "deep_job")]["status"] == "skip" and "jobs are running on it" in found[(name, "deep_job")]["reason"]
        assert ctl("squeue -h -j %s -o %%T" % job).stdout.strip() == "RUNNING"
    finally:
        ctl("scancel %s" % job, check=False)


def test_the_simulated_inventory_points_the_deep_tier_at_the_stand_ins():
    assert SIMULATED_VARS["validate_deep_settings"]["dcgmi"].startswith("/opt/dcgm-STANDIN/")
    for name in COMPUTE:
        out = sh(name, "/opt/dcgm-STANDIN/bin/dcgmi --version; /opt/perftest-STANDIN/bin/ib_write_bw --version", check=False)
        assert "STAND-IN" in out.stdout + out.stderr
