"""What health checks read: persistence mode, PCIe link, clock event reasons, temperature, NVLink, GPU fabric,
Xid errors and the driver version -- the defaults (from the real H100/H200 records where there is one), the
``nvmlsim`` commands that inject faults, and the same answers through the C library and the real nvidia-ml-py.
"""
import ctypes
import json
import os

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import cli

from test_libnvml import READY, REQUIRED, library, run_client  # noqa: F401  pylint: disable=unused-import

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def nvml(node):
    """The simulator's API, initialised on an h100-80gb-x8 node (tests make other nodes with --force)."""
    node.create("h100-80gb-x8")
    pynvml.nvmlInit()
    yield pynvml
    pynvml.nvmlShutdown()


def _h(index):
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def _error(func, *args):
    with pytest.raises(pynvml.NVMLError) as info:
        func(*args)
    return info.value.value


def _fabric(handle, cls=None):
    info = (cls or pynvml.c_nvmlGpuFabricInfo_v3_t)()
    func = pynvml.nvmlDeviceGetGpuFabricInfo if cls is pynvml.c_nvmlGpuFabricInfo_t else pynvml.nvmlDeviceGetGpuFabricInfoV
    assert func(handle, ctypes.byref(info)) == pynvml.NVML_SUCCESS
    return info.state, info.status


def test_h100_defaults_are_the_real_h100s(node, nvml):
    node.create("h100-80gb-x8", "--force")
    with open(os.path.join(HERE, "data", "real-h100-580.159.04", "calls.json")) as handle:
        real = {(c["call"], json.dumps(c["args"][1:])): c.get("value", c.get("error")) for c in json.load(handle)["calls"]}
    h = _h(0)
    for name in ("nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
                 "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
                 "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetCurrentClocksThrottleReasons",
                 "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"):
        assert getattr(nvml, name)(h) == real[(name, "[]")], name
    assert (1, 1, 511, 38) == (nvml.nvmlDeviceGetPersistenceMode(h), nvml.nvmlDeviceGetCurrentClocksEventReasons(h),
                               nvml.nvmlDeviceGetSupportedClocksEventReasons(h), nvml.nvmlDeviceGetTemperature(h, 0))
    assert nvml.nvmlDeviceGetTemperature(h, 0) == real[("nvmlDeviceGetTemperature", "[0]")]
    for kind in range(8):
        want = real[("nvmlDeviceGetTemperatureThreshold", "[%d]" % kind)]
        got = nvml.nvmlDeviceGetTemperatureThreshold(h, kind) if kind < 4 else "NVML_ERROR_%s" % {
            3: "NOT_SUPPORTED"}[_error(nvml.nvmlDeviceGetTemperatureThreshold, h, kind)]
        assert got == want, kind
    assert _error(nvml.nvmlDeviceGetTemperature, h, 5) == nvml.NVML_ERROR_INVALID_ARGUMENT


def test_persistence_pcie_clocks_temperature_commands(node, nvml):
    node.create("h100-80gb-x8", "--force")
    node.cli("persistence", "--gpu", "1", "--mode", "off")
    node.cli("pcie", "--gpu", "2", "--gen", "3", "--width", "8")
    node.cli("clocks", "--gpu", "3", "--reasons", "hw_slowdown,hw_thermal")
    node.cli("temperature", "--gpu", "4", "--celsius", "92")
    assert [nvml.nvmlDeviceGetPersistenceMode(_h(i)) for i in range(3)] == [1, 0, 1]
    h = _h(2)
    assert (nvml.nvmlDeviceGetCurrPcieLinkGeneration(h), nvml.nvmlDeviceGetCurrPcieLinkWidth(h),
            nvml.nvmlDeviceGetMaxPcieLinkGeneration(h), nvml.nvmlDeviceGetMaxPcieLinkWidth(h),
            nvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(h)) == (3, 8, 5, 16, 5)
    reasons = nvml.nvmlClocksEventReasonHwSlowdown | nvml.nvmlClocksEventReasonHwThermalSlowdown
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(_h(3)) == reasons == 0x48
    assert nvml.nvmlDeviceGetCurrentClocksThrottleReasons(_h(3)) == reasons
    assert nvml.nvmlDeviceGetTemperature(_h(4), nvml.NVML_TEMPERATURE_GPU) == 92
    node.cli("pcie", "--gpu", "2", "--restore")
    node.cli("clocks", "--gpu", "3", "--reasons", "none")
    node.cli("persistence", "--gpu", "1", "--mode", "on")
    assert (nvml.nvmlDeviceGetCurrPcieLinkGeneration(h), nvml.nvmlDeviceGetCurrPcieLinkWidth(h)) == (5, 16)
    assert nvml.nvmlDeviceGetCurrentClocksEventReasons(_h(3)) == 0
    assert nvml.nvmlDeviceGetPersistenceMode(_h(1)) == 1
    node.cli("reboot")   # a fault stays until it is changed back
    node.cli("temperature", "--gpu", "4", "--celsius", "92")
    assert nvml.nvmlDeviceGetTemperature(_h(4), 0) == 92


@pytest.mark.parametrize("argv, message", [
    (["pcie", "--gpu", "0", "--gen", "6"], "PCIe generation 6: GPU 0 links at gen 1 to 5"),
    (["pcie", "--gpu", "0", "--width", "12"], "PCIe width x12"),
    (["pcie", "--gpu", "0"], "pcie needs --gen G, --width W or --restore"),
    (["clocks", "--gpu", "0", "--reasons", "bogus"], "unknown clocks event reason 'bogus'"),
    (["nvlink", "--gpu", "0", "--link", "18", "--state", "down"], "NVLink 18: GPU 0 has links 0-17"),
    (["nvlink", "--gpu", "0", "--link", "1"], "nvlink needs --state"),
    (["xid", "--gpu", "0", "--code", "7777"], "no default text for Xid 7777; give --text"),
    (["driver", "--version", "five"], "driver version 'five'"),
    (["temperature", "--gpu", "9", "--celsius", "40"], "no GPU with index 9"),
])
def test_bad_health_commands_exit_2(node, capsys, argv, message):
    node.create("h100-80gb-x8")
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_other_models(node, nvml):
    node.create("a100-40gb-x8", "--force")
    h = _h(0)
    assert (nvml.nvmlDeviceGetMaxPcieLinkGeneration(h), nvml.nvmlDeviceGetMaxPcieLinkWidth(h)) == (4, 16)
    assert nvml.nvmlDeviceGetNvLinkVersion(h, 11) == nvml.NVML_NVLINK_VERSION_3_1
    assert _error(nvml.nvmlDeviceGetNvLinkState, h, 12) == nvml.NVML_ERROR_INVALID_ARGUMENT
    assert [nvml.nvmlDeviceGetTemperatureThreshold(h, k) for k in range(4)] == [92, 89, 95, 85]
    assert _error(nvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(nvml.c_nvmlGpuFabricInfo_v3_t())) == \
        nvml.NVML_ERROR_NOT_SUPPORTED     # nvml.h: Hopper or newer
    node.create("l40s-x4", "--force")
    h = _h(0)
    assert _error(nvml.nvmlDeviceGetNvLinkState, h, 0) == nvml.NVML_ERROR_NOT_SUPPORTED
    assert _error(nvml.nvmlDeviceGetTemperatureThreshold, h, 2) == nvml.NVML_ERROR_NOT_SUPPORTED
    assert (nvml.nvmlDeviceGetCurrPcieLinkGeneration(h), nvml.nvmlDeviceGetPersistenceMode(h)) == (4, 1)
    node.create("h200-x8", "--force")
    assert nvml.nvmlDeviceGetTemperature(_h(0), 0) == 33   # what the real H200 answered


def test_nvlink_on_an_hgx_board_and_its_faults(node, nvml):
    node.create("h100-80gb-x8", "--force")
    h = _h(0)
    assert [nvml.nvmlDeviceGetNvLinkState(h, link) for link in range(18)] == [1] * 18
    assert nvml.nvmlDeviceGetNvLinkVersion(h, 17) == nvml.NVML_NVLINK_VERSION_4_0
    for link, counter in ((18, 0), (0, 5)):
        assert _error(nvml.nvmlDeviceGetNvLinkErrorCounter, h, link, counter) == nvml.NVML_ERROR_INVALID_ARGUMENT
    node.cli("nvlink", "--gpu", "0", "--link", "3", "--state", "down", "--replay", "7", "--recovery", "1",
             "--crc-flit", "12", "--crc-data", "3")
    assert nvml.nvmlDeviceGetNvLinkState(h, 3) == 0
    assert [nvml.nvmlDeviceGetNvLinkErrorCounter(h, 3, c) for c in range(5)] == [7, 1, 12, 3, 0]
    assert nvml.nvmlDeviceGetNvLinkErrorCounter(h, 2, 0) == 0
    assert nvml.nvmlDeviceGetNvLinkState(_h(1), 3) == 1
    node.cli("nvlink", "--gpu", "0", "--link", "3", "--state", "up")
    assert nvml.nvmlDeviceGetNvLinkState(h, 3) == 1
    assert nvml.nvmlDeviceGetNvLinkErrorCounter(h, 3, 0) == 7


def test_fabric_state_follows_the_fabric_manager(node, nvml):
    node.create("h100-80gb-x8", "--force")
    h = _h(0)
    completed = (nvml.NVML_GPU_FABRIC_STATE_COMPLETED, nvml.NVML_SUCCESS)
    assert _fabric(h) == _fabric(h, nvml.c_nvmlGpuFabricInfo_v2_t) == _fabric(h, nvml.c_nvmlGpuFabricInfo_t) == completed
    node.cli("fabric-manager", "--state", "stopped")
    assert _fabric(h)[0] == nvml.NVML_GPU_FABRIC_STATE_NOT_STARTED
    node.cli("fabric-manager", "--state", "starting")
    assert _fabric(h)[0] == nvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS
    node.cli("fabric-manager", "--state", "running")
    assert _fabric(h) == completed
    bad = nvml.c_nvmlGpuFabricInfo_v3_t()
    bad.version = 0x01000010
    assert _error(nvml.nvmlDeviceGetGpuFabricInfoV, h, ctypes.byref(bad)) == nvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH


def test_fabric_without_nvswitch_is_state_not_supported_as_in_the_vm(node, nvml):
    """A Hopper node without NVSwitch (an older state file, or a VM): state 0, status SUCCESS, as recorded."""
    node.create("h100-80gb-x8", "--force")
    node.edit(lambda state: state.pop("nvswitch"))
    assert _fabric(_h(0)) == (nvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED, nvml.NVML_SUCCESS)
    assert cli.main(["fabric-manager", "--state", "stopped"]) == 2


def test_xid_is_recorded_and_logged_in_the_drivers_format(node):
    node.create("h100-80gb-x8")
    out = node.cli("xid", "--gpu", "0", "--code", "79")
    node.cli("xid", "--gpu", "5", "--code", "13", "--pid", "4242", "--name", "python3", "--text", "Graphics Exception")
    log = (node.root / "var" / "log" / "kern.log").read_text().splitlines()
    assert len(log) == 3 and "] Linux version " in log.pop(0)   # create's boot line
    assert log[0].endswith("] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    assert " kernel: [" in log[0]
    assert log[1].endswith("] NVRM: Xid (PCI:0000:c3:00): 13, pid=4242, name=python3, Graphics Exception")
    assert "kern.log" in out
    assert node.state["gpus"][0]["xids"] == [{"code": 79, "text": "GPU has fallen off the bus.", "pid": None, "name": None}]


def test_driver_version_command(node, nvml):
    node.create("h100-80gb-x8", "--force")
    node.cli("driver", "--version", "535.104.05", "--cuda", "12020")
    assert (nvml.nvmlSystemGetDriverVersion(), nvml.nvmlSystemGetNVMLVersion(),
            nvml.nvmlSystemGetCudaDriverVersion()) == ("535.104.05", "12.535.104.05", 12020)
    node.cli("driver", "--version", "580.159.04")
    assert nvml.nvmlSystemGetNVMLVersion() == "12.580.159.04"


def test_injected_failures_reach_the_new_calls(node, nvml):
    node.create("h100-80gb-x8", "--force")
    node.cli("inject", "--call", "nvmlDeviceGetTemperature", "--error", "GPU_IS_LOST")
    assert _error(nvml.nvmlDeviceGetTemperature, _h(0), 0) == nvml.NVML_ERROR_GPU_IS_LOST
    assert nvml.nvmlDeviceGetTemperature(_h(0), 0) == 38


CLIENT = """
import ctypes, json, pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
out = {}
def rec(name, *args):
    try:
        out[name + repr(args)] = getattr(pynvml, name)(h, *args)
    except pynvml.NVMLError as exc:
        out[name + repr(args)] = "error %d" % exc.value
for name in ("nvmlDeviceGetPersistenceMode", "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
             "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetGpuMaxPcieLinkGeneration",
             "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
             "nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"):
    rec(name)
rec("nvmlDeviceGetTemperature", 0)
rec("nvmlDeviceGetTemperature", 3)
for k in range(8):
    rec("nvmlDeviceGetTemperatureThreshold", k)
for link in (0, 3, 18):
    rec("nvmlDeviceGetNvLinkState", link)
    rec("nvmlDeviceGetNvLinkVersion", link)
    for c in range(6):
        rec("nvmlDeviceGetNvLinkErrorCounter", link, c)
for cls, func in ((pynvml.c_nvmlGpuFabricInfo_t, "nvmlDeviceGetGpuFabricInfo"),
                  (pynvml.c_nvmlGpuFabricInfo_v2_t, "nvmlDeviceGetGpuFabricInfoV"),
                  (pynvml.c_nvmlGpuFabricInfo_v3_t, "nvmlDeviceGetGpuFabricInfoV")):
    info = cls()
    try:
        getattr(pynvml, func)(h, ctypes.byref(info))
        out[func + cls.__name__] = [info.state, info.status, info.cliqueId, getattr(info, "healthMask", 0),
                                    getattr(info, "version", 0)]
    except pynvml.NVMLError as exc:
        out[func + cls.__name__] = "error %d" % exc.value
pynvml.nvmlShutdown()
print(json.dumps(out, sort_keys=True))
"""


@pytest.mark.skipif(not READY and not REQUIRED, reason="set NVMLSIM_NVML_INCLUDE and NVMLSIM_REAL_PYNVML")
@pytest.mark.parametrize("preset", ["h100-80gb-x8", "l40s-x4", "a100-40gb-x8"])
def test_the_library_answers_as_the_python_api(node, library, preset):  # noqa: F811
    """The real nvidia-ml-py over the C library, after faults, answers as nvmlsim.api does."""
    node.create(preset)
    if preset == "h100-80gb-x8":
        for argv in (["persistence", "--gpu", "0", "--mode", "off"], ["pcie", "--gpu", "0", "--gen", "2", "--width", "4"],
                     ["clocks", "--gpu", "0", "--reasons", "sw_power_cap,hw_power_brake"],
                     ["temperature", "--gpu", "0", "--celsius", "90"],
                     ["nvlink", "--gpu", "0", "--link", "3", "--state", "down", "--crc-data", "9"],
                     ["fabric-manager", "--state", "starting"]):
            node.cli(*argv)
    result = run_client(library, CLIENT)
    assert result.returncode == 0, result.stderr
    through_library = json.loads(result.stdout)
    pynvml.nvmlInit()
    try:
        expected = {}
        for key in through_library:
            name, _, rest = key.partition("(")
            if name.startswith("nvmlDeviceGetGpuFabricInfo"):
                continue
            args = json.loads("[" + rest.rstrip(")").rstrip(",") + "]")
            try:
                expected[key] = getattr(pynvml, name)(_h(0), *args)
            except pynvml.NVMLError as exc:
                expected[key] = "error %d" % exc.value
        for cls in (pynvml.c_nvmlGpuFabricInfo_t, pynvml.c_nvmlGpuFabricInfo_v2_t, pynvml.c_nvmlGpuFabricInfo_v3_t):
            func = "nvmlDeviceGetGpuFabricInfo" + ("" if cls is pynvml.c_nvmlGpuFabricInfo_t else "V")
            info = cls()
            try:
                getattr(pynvml, func)(_h(0), ctypes.byref(info))
                expected[func + cls.__name__] = [info.state, info.status, info.cliqueId, getattr(info, "healthMask", 0),
                                                 getattr(info, "version", 0)]
            except pynvml.NVMLError as exc:
                expected[func + cls.__name__] = "error %d" % exc.value
    finally:
        pynvml.nvmlShutdown()
    assert through_library == expected
    if preset == "h100-80gb-x8":
        assert through_library["nvmlDeviceGetPersistenceMode()"] == 0
        assert through_library["nvmlDeviceGetCurrentClocksEventReasons()"] == 0x84
        assert through_library["nvmlDeviceGetNvLinkErrorCounter(3, 3)"] == 9
        assert through_library["nvmlDeviceGetGpuFabricInfoVc_nvmlGpuFabricInfo_v3_t"][:2] == [2, pynvml.NVML_ERROR_NOT_READY]


def test_the_smi_stand_in_prints_the_health_fields_as_the_real_580_did(node):
    """The recorded line of the real H100's nvidia-smi, from persistence_mode on (its identity differs by design)."""
    from nvmlsim import smi  # pylint: disable=import-outside-toplevel
    node.create("h100-80gb-x8")
    fields = "persistence_mode,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current," \
             "temperature.gpu,clocks_event_reasons.active,remapped_rows.pending,remapped_rows.failure"
    with open(os.path.join(HERE, "data", "real-h100-580.159.04", "smi.txt")) as handle:
        text = handle.read()
    real = text.split("--format=csv,noheader,nounits\n### rc=0\n", 1)[1].splitlines()[0]
    assert smi_lines(smi, "--query-gpu=" + fields, "--format=csv,noheader,nounits")[0] == real.split(", ", 18)[18]
    node.cli("clocks", "--gpu", "0", "--reasons", "hw_slowdown")
    node.cli("persistence", "--gpu", "0", "--mode", "off")
    assert smi_lines(smi, "--query-gpu=persistence_mode,clocks_event_reasons.active", "--format=csv,noheader") == [
        "Disabled, 0x0000000000000008"] + ["Enabled, 0x0000000000000001"] * 7


def smi_lines(smi, *argv):
    import contextlib  # pylint: disable=import-outside-toplevel
    import io  # pylint: disable=import-outside-toplevel
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert smi.main(list(argv)) == 0
    return out.getvalue().splitlines()


REMOTE_CLIENT = """
import json, pynvml
pynvml.nvmlInit()
out = {}
for index in (0, 7):
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    for link in (0, 1, 4, 17, 18):
        try:
            bus = pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId
            out["%d/%d" % (index, link)] = bus.decode() if isinstance(bus, bytes) else bus
        except pynvml.NVMLError as exc:
            out["%d/%d" % (index, link)] = "error %d" % exc.value
pynvml.nvmlShutdown()
print(json.dumps(out, sort_keys=True))
"""


@pytest.mark.skipif(not READY and not REQUIRED, reason="set NVMLSIM_NVML_INCLUDE and NVMLSIM_REAL_PYNVML")
def test_every_link_of_an_hgx_gpu_ends_at_an_nvswitch_not_at_another_gpu(node, library):  # noqa: F811
    """What Slurm's NVML plugin asks for each active link (nvmlDeviceGetNvLinkRemotePciInfo): on an HGX H100
    board an NVSwitch's bus id (four switches), never a GPU's, so the plugin counts no GPU-to-GPU links;
    INVALID_ARGUMENT past the 18 links."""
    node.create("h100-80gb-x8")
    result = run_client(library, REMOTE_CLIENT)
    assert result.returncode == 0, result.stderr
    remote = json.loads(result.stdout)
    assert remote == {"%d/%d" % (i, link): ("00000000:%02X:00.0" % (0xE0 + link % 4) if link < 18 else "error 2")
                      for i in (0, 7) for link in (0, 1, 4, 17, 18)}
    gpus = {gpu["pci_bus_id"] for gpu in node.state["gpus"]}
    assert not gpus & set(remote.values())
    node.create("a100-80gb-pcie-x4", "--force")
    pynvml.nvmlInit()
    try:
        assert _error(pynvml.nvmlDeviceGetNvLinkRemotePciInfo, _h(0), 0) == pynvml.NVML_ERROR_NOT_SUPPORTED
    finally:
        pynvml.nvmlShutdown()
