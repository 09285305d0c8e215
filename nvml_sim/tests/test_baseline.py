"""The node baseline beside NVML: /proc/driver/nvidia/version (both flavours, kept in line by `driver`), the loaded
kernel modules (the simulated /sys/module tree, `nvmlsim module`, its errors) and the nv-fabricmanager STAND-IN
(--version, the mismatch refusal, start/SIGTERM as a subprocess, reboot), plus the node files that install them."""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from nvmlsim import api as pynvml
from nvmlsim import cli, kmod

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.dirname(HERE)
REPO = os.path.dirname(SIM)
NV_FABRICMANAGER = os.path.join(SIM, "bin", "nv-fabricmanager")
VERSION_FILE = os.path.join("var", "lib", "nvmlsim", "proc-driver-nvidia-version")
MODULES = os.path.join("var", "lib", "nvmlsim", "sys", "module")
GCC = "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n"
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  " \
       "Tue Mar 18 00:00:00 UTC 2025\n" + GCC
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar 18 00:00:00 UTC 2025\n" + GCC
BASE = ["nvidia", "nvidia_uvm", "nvidia_modeset"]


def _version_file(node):
    with open(node.root / VERSION_FILE, encoding="ascii") as handle:
        return handle.read()


def _tree(node):
    """{module: {file: text}} of the simulated /sys/module."""
    root = node.root / MODULES
    return {name: {f: (root / name / f).read_text() for f in sorted(os.listdir(root / name))}
            for name in sorted(os.listdir(root))}


def _fabric_state():
    pynvml.nvmlInit()
    try:
        info = pynvml.c_nvmlGpuFabricInfo_v3_t()
        assert pynvml.nvmlDeviceGetGpuFabricInfoV(pynvml.nvmlDeviceGetHandleByIndex(0), ctypes.byref(info)) == 0
        return info.state
    finally:
        pynvml.nvmlShutdown()


def _fm(*argv, timeout=20):
    return subprocess.run([NV_FABRICMANAGER, *argv], capture_output=True, text=True, timeout=timeout, check=False)


# ---- /proc/driver/nvidia/version -------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, text", [
    ("h100-80gb-x8", OPEN % "570.133.20"),            # Hopper: the open kernel modules (NVIDIA's recommendation)
    ("h200-x8", OPEN % "570.133.20"),
    ("a100-40gb-x8", PROPRIETARY % "535.129.03"),
    ("a100-80gb-pcie-x4", PROPRIETARY % "535.129.03"),
    ("l40s-x4", PROPRIETARY % "550.127.08"),
    ("seed-003", PROPRIETARY % "535.129.03"),
    ("a100-gi-gaps", PROPRIETARY % "535.129.03"),
])
def test_version_file_per_preset_in_the_drivers_two_forms(node, preset, text):
    node.create(preset)
    assert _version_file(node) == text
    assert node.state["kernel_module"] == ("open" if text.startswith("NVRM version: NVIDIA UNIX Open") else "proprietary")
    assert node.show_json()["driver_version_file"] == {"path": str(node.root / VERSION_FILE), "text": text}


@pytest.mark.parametrize("argv, text", [
    (["--version", "535.104.05"], OPEN % "535.104.05"),                        # keeps the flavour
    (["--version", "535.104.05", "--cuda", "12020"], OPEN % "535.104.05"),
    (["--version", "550.54.15", "--kernel-module", "proprietary"], PROPRIETARY % "550.54.15"),
    (["--version", "570.133.20", "--kernel-module", "open"], OPEN % "570.133.20"),
])
def test_driver_command_rewrites_the_version_file(node, argv, text):
    node.create("h100-80gb-x8")
    node.cli("driver", *argv)
    assert _version_file(node) == text
    assert (node.root / MODULES / "nvidia" / "version").read_text() == argv[1] + "\n"
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlSystemGetDriverVersion() == argv[1]     # NVML and the file agree
    finally:
        pynvml.nvmlShutdown()


def test_bad_kernel_module_flavour_is_one_error_line_and_changes_nothing(node, capsys):
    node.create("a100-40gb-x8")
    before = _version_file(node)
    assert cli.main(["driver", "--version", "550.54.15", "--kernel-module", "closed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nvmlsim: error: ") and "open, proprietary" in err
    assert _version_file(node) == before and node.state["driver_version"] == "535.129.03"


def test_boot_rewrites_the_version_file(node):
    node.create("l40s-x4")
    os.unlink(node.root / VERSION_FILE)
    node.cli("boot")
    assert _version_file(node) == PROPRIETARY % "550.127.08"


# ---- loaded kernel modules -------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, loaded", [
    ("h100-80gb-x8", BASE + ["nvidia_peermem"]),      # InfiniBand HCAs: GPUDirect RDMA
    ("h200-x8", BASE + ["nvidia_peermem"]),
    ("a100-40gb-x8", BASE + ["nvidia_peermem"]),
    ("a100-80gb-pcie-x4", BASE),
    ("l40s-x4", BASE),
    ("seed-003", BASE),
])
def test_module_tree_per_preset(node, preset, loaded):
    node.create(preset)
    version = node.state["driver_version"] + "\n"
    assert _tree(node) == {name: {"initstate": "live\n", "refcnt": "0\n", "version": version} for name in loaded}
    assert "modules" not in node.state                         # absent = the preset's default
    assert node.show_json()["kernel_modules"]["loaded"] == [n for n in kmod.KNOWN_MODULES if n in loaded]


@pytest.mark.parametrize("argv, loaded", [
    (["--load", "nvidia_drm"], ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem"]),
    (["--unload", "nvidia_peermem"], BASE),
    (["--unload", "nvidia_uvm"], ["nvidia", "nvidia_modeset", "nvidia_peermem"]),
    (["--load", "nvidia"], BASE + ["nvidia_peermem"]),           # already loaded: no change
    (["--unload", "nvidia_drm"], BASE + ["nvidia_peermem"]),     # not loaded: no change
])
def test_module_command_changes_one_module(node, argv, loaded):
    node.create("h100-80gb-x8")
    node.cli("module", *argv)
    assert sorted(_tree(node)) == sorted(loaded)
    assert node.state["modules"] == loaded
    assert node.show_json()["kernel_modules"]["loaded"] == loaded
    node.cli("boot")                                            # boot rewrites the same tree
    assert sorted(_tree(node)) == sorted(loaded)


def test_unloading_nvidia_takes_its_proc_file_away(node):
    node.create("a100-40gb-x8")
    node.cli("module", "--unload", "nvidia")
    assert not (node.root / VERSION_FILE).exists()
    assert node.show_json()["driver_version_file"]["text"] is None
    node.cli("module", "--load", "nvidia")
    assert _version_file(node) == PROPRIETARY % "535.129.03"


@pytest.mark.parametrize("argv, message", [
    (["module", "--load", "nvidia_peer_mem"], "unknown module 'nvidia_peer_mem'; valid: nvidia, nvidia_uvm, "
                                              "nvidia_modeset, nvidia_drm, nvidia_peermem"),
    (["module", "--unload", "nouveau"], "unknown module 'nouveau'; valid: nvidia, nvidia_uvm"),
    (["module", "--load", "nvidia-drm"], "unknown module 'nvidia-drm'"),     # kernel names use underscores
    (["module"], "module needs one of --load NAME or --unload NAME"),
    (["module", "--load", "nvidia_drm", "--unload", "nvidia"], "module needs one of --load NAME or --unload NAME"),
])
def test_module_errors_exit_2_with_one_line_and_change_nothing(node, capsys, argv, message):
    node.create("h100-80gb-x8")
    state_before, tree_before = (node.tmp / "state.json").read_bytes(), _tree(node)
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nvmlsim: error: ") and message in err
    assert (node.tmp / "state.json").read_bytes() == state_before and _tree(node) == tree_before


def test_boot_and_create_rewrite_the_tree_from_the_state(node):
    node.create("h100-80gb-x8")
    node.cli("module", "--load", "nvidia_drm")
    shutil.rmtree(node.root / MODULES / "nvidia_uvm")
    (node.root / MODULES / "nvidia_drm" / "refcnt").write_text("5\n")
    os.makedirs(node.root / MODULES / "ext4")                  # not the driver's: left alone
    node.cli("boot")
    expected = BASE + ["nvidia_drm", "nvidia_peermem"]
    assert sorted(n for n in _tree(node) if n != "ext4") == sorted(expected)
    assert _tree(node)["nvidia_drm"]["refcnt"] == "0\n"
    node.create("l40s-x4", "--force")                          # a preset without HCAs: no peermem, no drm
    assert sorted(n for n in _tree(node) if n != "ext4") == sorted(BASE)


# ---- nv-fabricmanager STAND-IN ---------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, steps, printed", [
    ("h100-80gb-x8", [], "570.133.20"),
    ("a100-40gb-x8", [], "535.129.03"),
    ("h200-x8", [["driver", "--version", "570.172.08"]], "570.172.08"),          # follows the driver
    ("h100-80gb-x8", [["fabric-manager", "--version", "570.124.06"]], "570.124.06"),
    ("h100-80gb-x8", [["fabric-manager", "--version", "570.124.06"], ["fabric-manager", "--version", "driver"]],
     "570.133.20"),
])
def test_version_prints_the_real_line(node, preset, steps, printed):
    node.create(preset)
    for argv in steps:
        node.cli(*argv)
    for flag in ("--version", "-v"):
        result = _fm(flag)
        assert (result.returncode, result.stdout) == (0, "Fabric Manager version is : %s\n" % printed)


def test_fabric_manager_command_errors(node, capsys):
    node.create("h100-80gb-x8")
    for argv, message in ((["fabric-manager"], "needs --state"),
                          (["fabric-manager", "--version", "latest"], "fabric manager version 'latest'")):
        capsys.readouterr()
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err
    node.create("l40s-x4", "--force")
    assert cli.main(["fabric-manager", "--version", "550.127.08"]) == 2     # no NVSwitch, no fabric manager


def test_mismatch_refuses_to_start(node):
    node.create("h100-80gb-x8")
    node.cli("fabric-manager", "--version", "570.124.06")
    result = _fm()
    assert result.returncode == 1
    assert ("fabric manager NVIDIA GPU driver interface version 570.124.06 don't match with driver version 570.133.20. "
            "Please update with matching NVIDIA driver package.") in result.stderr
    assert node.state["fabric_manager"] == "stopped"
    assert _fabric_state() == pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED


def test_refuses_without_nvswitch(node):
    node.create("l40s-x4")
    result = _fm()
    assert result.returncode == 1 and "NV_WARN_NOTHING_TO_DO" in result.stderr
    assert _fm("--bogus").returncode == 2


def _wait_for(predicate, proc, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_service_runs_until_sigterm(node, stop):
    node.create("h200-x8")
    node.cli("fabric-manager", "--state", "stopped")            # as after a boot, before the service
    assert _fabric_state() == pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED
    proc = subprocess.Popen([NV_FABRICMANAGER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: node.state["fabric_manager"] == "running", proc)
        assert _fabric_state() == pynvml.NVML_GPU_FABRIC_STATE_COMPLETED
        time.sleep(0.3)
        assert proc.poll() is None                               # stays in the foreground
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert node.state["fabric_manager"] == "stopped"
    assert _fabric_state() == pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED


@pytest.mark.parametrize("steps, after", [
    ([], "running"),
    ([["fabric-manager", "--state", "stopped"]], "running"),               # the enabled service starts at boot
    ([["fabric-manager", "--version", "570.124.06"]], "stopped"),           # ... and refuses on a mismatch
    ([["driver", "--version", "570.172.08"], ["fabric-manager", "--version", "570.133.20"]], "stopped"),
])
def test_reboot_gives_what_the_service_makes_it(node, steps, after):
    node.create("h100-80gb-x8")
    for argv in steps:
        node.cli(*argv)
    node.cli("reboot")
    assert node.state["fabric_manager"] == after


def test_running_service_exits_when_the_node_reboots_into_a_mismatch(node):
    node.create("a100-40gb-x8")
    node.cli("fabric-manager", "--state", "stopped")
    proc = subprocess.Popen([NV_FABRICMANAGER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: node.state["fabric_manager"] == "running", proc)
        node.cli("fabric-manager", "--version", "535.104.05")    # upgraded under the running daemon: it keeps running
        time.sleep(1.5)
        assert proc.poll() is None
        node.cli("reboot")
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "don't match with driver version 535.129.03" in err
    assert node.state["fabric_manager"] == "stopped"


# ---- the node files --------------------------------------------------------------------------------------------

NODE = os.path.join(REPO, "scripts", "lib", "nvmlsim-node")
UNIT = os.path.join(NODE, "etc", "systemd", "system", "nvidia-fabricmanager.service")


def test_unit_is_a_stand_in_started_after_the_simulator():
    with open(UNIT, encoding="utf-8") as handle:
        text = handle.read()
    assert "STAND-IN" in text
    for line in ("Type=simple", "After=nvmlsim-boot.service", "ExecStart=/usr/local/bin/nv-fabricmanager",
                 "WantedBy=multi-user.target"):
        assert line + "\n" in text


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("path", [os.path.join(NODE, "usr", "local", "sbin", "nvmlsim-driver-proc"), NV_FABRICMANAGER,
                                  os.path.join(REPO, "scripts", "lib", "node-prepare.sh")])
def test_shell_is_clean(path):
    result = subprocess.run(["shellcheck", "-x", path], capture_output=True, text=True, cwd=REPO,
                            check=False)
    assert result.returncode == 0, result.stdout


def test_driver_proc_links_the_version_file():
    with open(os.path.join(NODE, "usr", "local", "sbin", "nvmlsim-driver-proc"), encoding="utf-8") as handle:
        text = handle.read()
    assert 'ln -sfn "$version" /proc/driver/nvidia/version' in text
    assert "version=${2:-/var/lib/nvmlsim/proc-driver-nvidia-version}" in text


def test_show_json_names_the_stand_ins_version(node):
    node.create("h100-80gb-x8")
    node.cli("fabric-manager", "--version", "570.124.06")
    shown = node.show_json()
    assert shown["fabric_manager_binary"] == {"version": "570.124.06", "follows_driver": False}
    assert shown["fabric_manager_version"] == "570.124.06"
    assert json.loads(cli.run(["show", "--json"]))["kernel_modules"]["flavour"] == "open"
