"""The nvmlsim command line: output, exit status, one clear message on bad input."""
import json
import os
import subprocess
import sys

import pytest

from nvmlsim import cli

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(HERE, "..", "bin", "nvmlsim")


def run(capsys, *argv):
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_create_show_and_json(node, capsys):
    assert run(capsys, "create", "--preset", "seed-003")[0] == 0
    status, out, _ = run(capsys, "show")
    assert status == 0
    assert "GPU 3  NVIDIA A100 80GB PCIe  00000000:E3:00.0" in out
    assert "    GI 14  1g.10gb    profile 19  placement 3:1  cap 534" in out
    assert "MIG Disabled" in out and "MIG Enabled" in out
    data = json.loads(run(capsys, "show", "--json")[1])
    caps = [ci["cap_minor"] for gpu in data["gpus"] for gi in gpu["gpu_instances"] for ci in gi["compute_instances"]]
    assert caps == [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]
    assert data["gpus"][3]["gpu_instances"][0]["profile"] == "1g.10gb"
    assert data["device_files"]["kind"] == "char"
    assert node.state["mig_minors_path"] == str(node.root / "var/lib/nvmlsim/mig-minors")


def test_presets_listing(capsys):
    out = run(capsys, "presets")[1]
    for name in ("h100-80gb-x8", "a100-40gb-x8", "a100-80gb-pcie-x4", "h200-x8", "l40s-x4", "seed-003"):
        assert name in out


@pytest.mark.parametrize("argv, status, message", [
    (["create", "--preset", "dgx-b200"], 2,
     "nvmlsim: error: unknown preset 'dgx-b200'; valid presets: a100-40gb-x8, a100-80gb-pcie-x4, a100-gi-gaps, b200-x8, b300-x8, "
     "gb200-x4, gb300-x4, h100-80gb-x8, h200-nvl-x4, h200-x8, l40s-x4, seed-003\n"),
    (["create", "--preset", "l40s-x4"], 2, "nvmlsim: error: a simulated node already exists at "),
    (["process", "add", "--gpu", "9", "--pid", "5", "--name", "x"], 2,
     "nvmlsim: error: no GPU with index 9; this node has indices 0, 1, 2, 3\n"),
    (["process", "remove", "--pid", "5"], 2, "nvmlsim: error: pid 5 is not recorded on any GPU\n"),
    (["reset", "--gpu", "7"], 2, "nvmlsim: error: no GPU with index 7; this node has indices 0, 1, 2, 3\n"),
    (["inject", "--call", "nvmlDeviceFrobnicate", "--error", "IN_USE"], 2,
     "nvmlsim: error: unknown call 'nvmlDeviceFrobnicate'; valid calls: nvmlComputeInstanceDestroy, "),
    (["inject", "--call", "nvmlInit", "--error", "NVML_ERROR_BOGUS"], 2,
     "nvmlsim: error: unknown NVML error 'NVML_ERROR_BOGUS'; valid: NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT, "),
    (["inject", "--call", "nvmlInit", "--error", "0"], 2, "nvmlsim: error: unknown NVML error '0'; valid: "),
    (["inject", "--call", "nvmlInit"], 2, "nvmlsim: error: inject needs --call NAME and --error NVML_ERROR_X (or --clear)\n"),
])
def test_bad_input_gives_one_clear_message(node, capsys, argv, status, message):
    node.create("seed-003")
    got_status, out, err = run(capsys, *argv)
    assert (got_status, out) == (status, "")
    assert err.startswith(message)
    assert err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["process", "add", "--gpu", "-1", "--pid", "5", "--name", "x"], "argument --gpu: -1 is negative; give 0 or more"),
    (["process", "add", "--gpu", "x", "--pid", "5", "--name", "x"], "argument --gpu: 'x' is not a whole number"),
])
def test_argument_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_commands_without_a_node(capsys, node):
    status, _, err = run(capsys, "show")
    assert status == 1
    assert err == "nvmlsim: error: no simulated node at %s (create one with: nvmlsim create --preset NAME)\n" % (
        node.tmp / "state.json")


@pytest.mark.parametrize("content, message", [
    ("{broken", "cannot read simulator state "),
    ('{"format": "other"}', "is not an nvmlsim state file (expected format 'nvmlsim/1')"),
])
def test_unreadable_state(capsys, node, content, message):
    node.tmp.joinpath("state.json").write_text(content)
    status, _, err = run(capsys, "show")
    assert status == 1 and message in err


def test_create_force_replaces(node, capsys):
    node.create("seed-003")
    assert run(capsys, "create", "--preset", "l40s-x4", "--force")[0] == 0
    assert node.state["preset"] == "l40s-x4"


def test_create_with_mig_minors_path(node, capsys):
    target = node.tmp / "proc" / "mig-minors"
    assert run(capsys, "create", "--preset", "seed-003", "--mig-minors", str(target))[0] == 0
    assert "gpu2/gi7/ci0/access 337\n" in target.read_text()
    assert node.state["mig_minors_path"] == str(target)


def test_reset_refused_while_in_use(node, capsys):
    node.create("h100-80gb-x8")
    node.cli("process", "add", "--gpu", "2", "--pid", "4242", "--name", "nvidia-persistenced")
    status, _, err = run(capsys, "reset", "--gpu", "2")
    assert status == 1
    assert err == ("nvmlsim: error: cannot reset GPU 2: GPU 00000000:52:00.0: in use by another client (pid 4242); "
                   "stop it first (nvmlsim process remove --pid 4242)\n")
    assert run(capsys, "process", "remove", "--pid", "4242")[0] == 0
    status, out, _ = run(capsys, "reset", "--gpu", "2")
    assert (status, out) == (0, "GPU 2 reset; MIG Disabled\n")


def test_pending_mode_is_shown(node, capsys):
    node.create("a100-80gb-pcie-x4")
    node.edit(lambda s: s["gpus"][0].update(mig_pending=1))
    assert "MIG Disabled (pending Enabled until reset)" in run(capsys, "show")[1]
    assert "MIG N/A" not in run(capsys, "show")[1]


def test_show_lists_processes_and_faults(node, capsys):
    node.create("seed-003")
    node.cli("process", "add", "--gpu", "2", "--pid", "31", "--name", "job", "--used-mib", "64", "--gi", "9", "--ci", "0")
    node.cli("inject", "--call", "nvmlDeviceGetCount", "--error", "GPU_IS_LOST", "--after", "2", "--count", "0")
    out = run(capsys, "show")[1]
    assert "    process 31 job 64 MiB  gi 9 ci 0" in out
    assert "fault: nvmlDeviceGetCount -> NVML_ERROR_GPU_IS_LOST after 2 call(s), every call" in out


def test_reboot_and_boot(node, capsys):
    node.create("seed-003")
    caps = node.root / "dev" / "nvidia-caps"
    assert (caps / "nvidia-cap535").exists()
    assert run(capsys, "reboot")[1].startswith("rebooted: processes ended, MIG instances gone, pending MIG modes applied, "
                                               "lost GPUs back; InfiniBand faults stay; boot logged in ")
    assert sorted(p.name for p in caps.iterdir()) == ["nvidia-cap1", "nvidia-cap2"]
    for path in list(caps.iterdir()) + [node.root / "dev" / "nvidia3"]:
        path.unlink()
    assert run(capsys, "boot")[1] == ("device files, mig-minors, the InfiniBand tree (%s), %s and the module tree (%s) "
                                      "recreated (char)\n") % (node.root / "var/lib/nvmlsim/sys/class/infiniband",
                                                               node.root / "var/lib/nvmlsim/proc-driver-nvidia-version",
                                                               node.root / "var/lib/nvmlsim/sys/module")
    assert (caps / "nvidia-cap2").exists() and (node.root / "dev" / "nvidia3").exists()
    assert run(capsys, "boot")[0] == 0  # idempotent


def test_wrapper_script(node):
    env = dict(os.environ)
    result = subprocess.run([WRAPPER, "create", "--preset", "l40s-x4"], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    result = subprocess.run([sys.executable, "-m", "nvmlsim", "show"], env=dict(env, PYTHONPATH=os.path.join(HERE, "..", "src")),
                            capture_output=True, text=True, check=False)
    assert "GPU 3  NVIDIA L40S" in result.stdout
    assert node.state["preset"] == "l40s-x4"
