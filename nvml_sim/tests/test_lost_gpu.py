"""Xid 79 ("GPU has fallen off the bus") makes the GPU lost: every NVML call on it answers GPU_IS_LOST (through
nvmlsim.api and through the real nvidia-ml-py over the simulated library), nvmlDeviceGetCount still counts it,
a reset is refused, a reboot brings it back and logs a boot line in kern.log; other Xids change nothing else."""
import ctypes
import json
import re

import pytest

from nvmlsim import api as pynvml
from nvmlsim import cli, smi

from test_health import _error, nvml  # noqa: F401  pylint: disable=unused-import  (nvml: h100-80gb-x8, initialised)
from test_libnvml import READY, REQUIRED, library, run_client  # noqa: F401  pylint: disable=unused-import

LOST = pynvml.NVML_ERROR_GPU_IS_LOST


def _log(node):
    return (node.root / "var" / "log" / "kern.log").read_text().splitlines()


def _since_last_boot(lines):
    """What a health check takes: the lines after the last "Linux version" line."""
    starts = [i for i, line in enumerate(lines) if "] Linux version " in line]
    return lines[starts[-1] + 1:] if starts else lines


# (call, arguments after the handle)
CALLS_ON_A_HANDLE = [
    ("nvmlDeviceGetName", ()), ("nvmlDeviceGetUUID", ()), ("nvmlDeviceGetPciInfo", ()), ("nvmlDeviceGetIndex", ()),
    ("nvmlDeviceGetMemoryInfo", ()), ("nvmlDeviceGetMinorNumber", ()), ("nvmlDeviceGetPersistenceMode", ()),
    ("nvmlDeviceGetTemperature", (0,)), ("nvmlDeviceGetCurrPcieLinkWidth", ()), ("nvmlDeviceGetNvLinkState", (0,)),
    ("nvmlDeviceGetComputeRunningProcesses", ()), ("nvmlDeviceGetTotalEccErrors", (1, 1)), ("nvmlDeviceGetMigMode", ()),
    ("nvmlDeviceGetCurrentClocksEventReasons", ()), ("nvmlDeviceSetMigMode", (1,)),
]


@pytest.mark.parametrize("call, args", CALLS_ON_A_HANDLE)
def test_every_call_on_a_lost_gpu_answers_gpu_is_lost(node, nvml, call, args):
    before = nvml.nvmlDeviceGetHandleByIndex(2)     # a handle taken before the GPU fell off the bus
    node.cli("xid", "--gpu", "2", "--code", "79")
    assert _error(getattr(nvml, call), before, *args) == LOST
    getattr(nvml, call)(nvml.nvmlDeviceGetHandleByIndex(3), *args)   # the others answer


def test_a_lost_gpu_has_no_handle_but_is_counted(node, nvml):
    gpu = node.state["gpus"][2]
    node.cli("xid", "--gpu", "2", "--code", "79")
    assert nvml.nvmlDeviceGetCount() == 8
    for func, arg in ((nvml.nvmlDeviceGetHandleByIndex, 2), (nvml.nvmlDeviceGetHandleByPciBusId, gpu["pci_bus_id"]),
                      (nvml.nvmlDeviceGetHandleByPciBusId, gpu["pci_bus_id"][4:]),
                      (nvml.nvmlDeviceGetHandleByUUID, gpu["uuid"]), (nvml.nvmlDeviceGetHandleBySerial, gpu["serial"])):
        assert _error(func, arg) == LOST, (func, arg)
    with pytest.raises(nvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetHandleByIndex(2)
    assert [nvml.nvmlDeviceGetIndex(nvml.nvmlDeviceGetHandleByIndex(i)) for i in (0, 1, 3, 7)] == [0, 1, 3, 7]
    assert node.state["gpus"][2]["lost"] is True


def test_the_mig_devices_of_a_lost_gpu_are_lost_too(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    try:
        mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(pynvml.nvmlDeviceGetHandleByIndex(2), 0)
        mig_uuid = pynvml.nvmlDeviceGetUUID(mig)
        gi = pynvml.nvmlDeviceGetGpuInstanceById(pynvml.nvmlDeviceGetHandleByIndex(2), 7)
        node.cli("xid", "--gpu", "2", "--code", "79")
        assert _error(pynvml.nvmlDeviceGetMemoryInfo, mig) == LOST
        assert _error(pynvml.nvmlDeviceGetHandleByUUID, mig_uuid) == LOST
        assert _error(pynvml.nvmlGpuInstanceGetInfo, gi) == LOST
    finally:
        pynvml.nvmlShutdown()


@pytest.mark.parametrize("code", [13, 31, 43, 45, 48, 63, 64, 74, 92, 94, 95])
def test_other_xids_change_nothing_else(node, nvml, code):
    node.cli("xid", "--gpu", "2", "--code", str(code))
    h = nvml.nvmlDeviceGetHandleByIndex(2)
    assert nvml.nvmlDeviceGetTemperature(h, 0) == 38
    assert "lost" not in node.state["gpus"][2]
    node.cli("reset", "--gpu", "2")


def test_reset_of_a_lost_gpu_is_refused_and_reboot_brings_it_back(node, nvml, capsys):
    node.cli("xid", "--gpu", "2", "--code", "79")
    before = open(cli.store.state_path(), "rb").read()
    assert cli.main(["reset", "--gpu", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nvmlsim: error: cannot reset GPU 2: GPU 2 (00000000:52:00.0) is lost") and "reboot" in err
    assert err.count("\n") == 1
    assert open(cli.store.state_path(), "rb").read() == before
    rc, out = smi.run(["-r", "-i", "2"])
    assert (rc, out) == (15, "Unable to determine the device handle for GPU0000:52:00.0: GPU is lost.  "
                             "Reboot the system to recover this GPU\n")
    node.cli("reboot")
    assert "lost" not in node.state["gpus"][2]
    assert nvml.nvmlDeviceGetTemperature(nvml.nvmlDeviceGetHandleByIndex(2), 0) == 38
    node.cli("reset", "--gpu", "2")
    assert node.state["gpus"][2]["xids"][0]["code"] == 79     # the record stays


STAMP = re.compile(r"^[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \S+ kernel: \[ *(\d+\.\d{6})\] (.*)$")


def test_boot_lines_in_kern_log_split_the_xids_by_boot(node):
    node.create("h100-80gb-x8")
    node.create("h100-80gb-x8", "--force")       # kern.log has a boot already: no second one
    log = _log(node)
    assert len(log) == 1
    stamp, message = STAMP.match(log[0]).groups()
    assert stamp == "0.000000" and message.startswith("Linux version 6.1.0-")
    assert log[0].split(" kernel: ")[0].endswith(" " + cli.socket.gethostname().split(".")[0])
    node.cli("xid", "--gpu", "0", "--code", "79")
    node.cli("reboot")
    node.cli("xid", "--gpu", "5", "--code", "48")
    log = _log(node)
    assert [STAMP.match(line).group(2).split(",")[0] for line in log] == [
        "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0",
        "NVRM: Xid (PCI:0000:1b:00): 79",
        "Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0",
        "NVRM: Xid (PCI:0000:c3:00): 48"]
    assert [float(STAMP.match(line).group(1)) < 60 for line in log] == [True] * 4   # uptime restarts at the boot
    assert _since_last_boot(log) == log[3:]


def test_the_smi_stand_in_answers_for_a_lost_gpu(node):
    node.create("h100-80gb-x8")
    node.cli("xid", "--gpu", "1", "--code", "79")
    rc, out = smi.run(["--query-gpu=index,name,temperature.gpu", "--format=csv,noheader", "-i", "0,1"])
    assert rc == 15
    assert out.splitlines() == [
        "0, NVIDIA H100 80GB HBM3, 38",
        "Unable to determine the device handle for GPU0000:43:00.0: GPU is lost.  Reboot the system to recover this GPU",
        "[GPU is lost], [GPU is lost], [GPU is lost]"]
    rc, out = smi.run(["-L", "-i", "00000000:43:00.0"])
    assert (rc, out) == (15, "Unable to determine the device handle for GPU0000:43:00.0: GPU is lost.  "
                             "Reboot the system to recover this GPU\n")
    assert smi.run(["--query-gpu=index", "--format=csv,noheader", "-i", "2"]) == (0, "2\n")


CLIENT = """
import json, subprocess, sys, os, pynvml
pynvml.nvmlInit()
held = pynvml.nvmlDeviceGetHandleByIndex(4)
bus = pynvml.nvmlDeviceGetPciInfo(held).busId
bus = bus.decode() if isinstance(bus, bytes) else bus
uuid = pynvml.nvmlDeviceGetUUID(held)
uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
env = dict(os.environ, PYTHONPATH=os.environ["NVMLSIM_PYTHONPATH"])
subprocess.run([sys.executable, "-m", "nvmlsim", "xid", "--gpu", "4", "--code", "79"], env=env, check=True,
               stdout=subprocess.DEVNULL)
out = {"count": pynvml.nvmlDeviceGetCount()}
def rec(name, func, *args):
    try:
        func(*args)
        out[name] = "ok"
    except pynvml.NVMLError_GpuIsLost as exc:
        out[name] = "NVMLError_GpuIsLost %d %s" % (exc.value, exc)
    except pynvml.NVMLError as exc:
        out[name] = "other %d" % exc.value
rec("byIndex", pynvml.nvmlDeviceGetHandleByIndex, 4)
rec("byPciBusId", pynvml.nvmlDeviceGetHandleByPciBusId, bus)
rec("byUUID", pynvml.nvmlDeviceGetHandleByUUID, uuid)
rec("name", pynvml.nvmlDeviceGetName, held)
rec("temperature", pynvml.nvmlDeviceGetTemperature, held, 0)
rec("memory", pynvml.nvmlDeviceGetMemoryInfo, held)
rec("other GPU", pynvml.nvmlDeviceGetName, pynvml.nvmlDeviceGetHandleByIndex(5))
subprocess.run([sys.executable, "-m", "nvmlsim", "reboot"], env=env, check=True, stdout=subprocess.DEVNULL)
rec("byIndex after reboot", pynvml.nvmlDeviceGetHandleByIndex, 4)
rec("name after reboot", pynvml.nvmlDeviceGetName, held)
pynvml.nvmlShutdown()
print(json.dumps(out, sort_keys=True))
"""


@pytest.mark.skipif(not READY and not REQUIRED, reason="set NVMLSIM_NVML_INCLUDE and NVMLSIM_REAL_PYNVML")
def test_the_real_bindings_see_gpu_is_lost_through_the_library(node, library):  # noqa: F811
    node.create("h100-80gb-x8")
    result = run_client(library, CLIENT)
    assert result.returncode == 0, result.stderr
    lost = "NVMLError_GpuIsLost 15 GPU is lost"
    assert json.loads(result.stdout) == {
        "count": 8, "byIndex": lost, "byPciBusId": lost, "byUUID": lost, "name": lost, "temperature": lost,
        "memory": lost, "other GPU": "ok", "byIndex after reboot": "ok", "name after reboot": "ok"}


def test_fabric_info_of_a_lost_gpu(node, nvml):
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    node.cli("xid", "--gpu", "0", "--code", "79")
    assert _error(nvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(nvml.c_nvmlGpuFabricInfo_v3_t())) == LOST
