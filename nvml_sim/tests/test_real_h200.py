"""The simulator against real NVML: what an H200 (driver 580.159.04, nvidia-ml-py 13.610.43) answered.

``data/real-h200-580.159.04/`` was recorded on 2026-11-26 on a lent machine
with one NVIDIA H200, MIG off, by ``nvml_sim/real_probe.py`` (read-only: NVML
getters, nvidia-smi queries, /proc and /dev); its README-like header is the
probe's docstring.  Here the same probe runs against the simulator's
``h200-x8`` preset (MIG off, as the real GPU was) and every call the
simulator implements must answer as the real one did -- the value, or the
same NVML error -- except the listed differences, each with its reason.
"""
import json
import os
import subprocess
import sys

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import devfiles

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "real-h200-580.159.04")
PROBE = os.path.join(HERE, "..", "real_probe.py")

# call -> why the simulator's answer differs from this one real GPU's, by design
DIFFERENT_BY_DESIGN = {
    "nvmlSystemGetDriverVersion": "the preset names the driver of a DGX H200 (570.133.20)",
    "nvmlSystemGetNVMLVersion": "follows the driver version",
    "nvmlSystemGetCudaDriverVersion": "follows the driver version",
    "nvmlSystemGetCudaDriverVersion_v2": "follows the driver version",
    "nvmlDeviceGetCount": "the preset has 8 GPUs, the lent machine 1",
    "nvmlDeviceGetUUID": "a deterministic UUID per preset and index",
    "nvmlDeviceGetSerial": "a made-up serial",
    "nvmlDeviceGetPciInfo": "DGX H200 bus ids; the lent VM had its GPU at 00:06.0 (and another board's subsystem id)",
    "nvmlDeviceGetMemoryInfo": "used/free differ: the driver's reservation is not modelled byte for byte",
    "nvmlDeviceGetMemoryInfo_v2": "used/free/reserved differ likewise",
    "nvmlDeviceGetCpuAffinity": "a DGX host's CPUs; the VM had 16",
    "nvmlDeviceGetNumaNodeId": "a DGX host has NUMA nodes; the VM reported NOT_SUPPORTED",
    "nvmlDeviceGetHandleByUUID": "the real GPU's own UUID is not the preset's",
    "nvmlDeviceGetHandleByPciBusId": "the real GPU's own bus id is not the preset's (the bad ids are compared below)",
    # The presets model an HGX/DGX board: 18 NVLinks (NVLink 4) to NVSwitches and a running fabric manager.
    # The lent VM had one SXM GPU passed through without its NVLinks or NVSwitches: NVLink calls answered
    # NOT_SUPPORTED and the fabric state NOT_SUPPORTED (0).  Both answers are tested on presets that match
    # the VM's kind (tests/test_health.py).
    "nvmlDeviceGetNvLinkState": "an HGX board's 18 active links; the VM saw no NVLink (NOT_SUPPORTED)",
    "nvmlDeviceGetNvLinkRemotePciInfo": "an HGX board's links end at NVSwitches (made-up bus ids); the VM saw no NVLink (NOT_SUPPORTED)",
    "nvmlDeviceGetNvLinkVersion": "NVLink 4 on an HGX board; the VM saw no NVLink (NOT_SUPPORTED)",
    "nvmlDeviceGetNvLinkErrorCounter": "an HGX board's link counters; the VM saw no NVLink (NOT_SUPPORTED)",
    "nvmlDeviceGetGpuFabricInfo(c_nvmlGpuFabricInfo_t)": "COMPLETED with NVSwitches and the fabric manager; "
    "the VM's state was NOT_SUPPORTED (0), and its older nvidia-ml-py declared an 80-byte cluster UUID",
    "nvmlDeviceGetGpuFabricInfoV(c_nvmlGpuFabricInfo_v2_t)": "COMPLETED on an HGX board; the VM's state was 0",
    "nvmlDeviceGetGpuFabricInfoV(c_nvmlGpuFabricInfo_v3_t)": "COMPLETED on an HGX board; the VM's state was 0",
}


def load_record(data_dir):
    with open(os.path.join(data_dir, "calls.json")) as handle:
        return json.load(handle)


def probe_preset(node, tmp_path, preset):
    """The probe's calls.json for a preset (MIG off), run as a separate process."""
    node.create(preset)
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "src"))
    out = tmp_path / "probe"
    subprocess.run([sys.executable, PROBE, str(out), "--allow-sim"], env=env, check=True, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=300)
    with open(out / "calls.json") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def real():
    return load_record(DATA)


@pytest.fixture()
def simulated(node, tmp_path):
    return probe_preset(node, tmp_path, "h200-x8")


def _answers(record, device_calls_only=True):
    """(call, args) -> the answer, for the first GPU's calls (the probe visits GPU 0 first)."""
    answers = {}
    for call in record["calls"]:
        key = (call["call"], json.dumps(call["args"]))
        if key in answers:
            continue   # later GPUs of the preset repeat GPU 0's calls
        if "value" in call:
            value = call["value"]
            answers[key] = ("value", value if not (isinstance(value, str) and "LP_struct" in value) else "<handle>")
        elif "error" in call:
            answers[key] = ("error", call["error"])
        else:
            answers[key] = ("exception", call["exception"].split(":")[0])
    return answers


def test_every_simulated_call_answers_as_the_real_driver(real, simulated):
    assert_same_answers(real, simulated, DIFFERENT_BY_DESIGN)


def assert_same_answers(real, simulated, different_by_design):
    """Every call the simulator implements answers as in the real record, but the listed differences."""
    real_answers = _answers(real)
    sim_answers = _answers(simulated)
    compared, wrong = 0, []
    for key, answer in real_answers.items():
        name = key[0]
        sim = sim_answers.get(key)
        if sim is None or sim == ("error", "not in this nvidia-ml-py") or name in different_by_design:
            continue
        if answer == ("error", "not in this nvidia-ml-py"):
            continue
        compared += 1
        if isinstance(answer[1], dict) and isinstance(sim[1], dict):
            # the real binding's structures carry a version field the simulator's may set differently
            answer = (answer[0], {k: v for k, v in answer[1].items() if k != "version"})
            sim = (sim[0], {k: v for k, v in sim[1].items() if k != "version"})
        if sim != answer:
            wrong.append("%s%s: real %r, simulated %r" % (name, key[1], answer, sim))
    assert not wrong, "\n".join(wrong)
    assert compared >= 60, "only %d calls compared: the probe or the recording lost its calls" % compared


def test_the_mig_off_answers_that_used_to_differ(real, simulated):
    """The calls where the simulator was wrong before the recording, named one by one."""
    real_answers, sim_answers = _answers(real), _answers(simulated)
    for call, args in [
        ("nvmlDeviceGetGpuInstanceProfileInfo", ["<handle>", 0]),            # profiles listed with MIG off
        ("nvmlDeviceGetGpuInstanceProfileInfo", ["<handle>", 99]),           # INVALID_ARGUMENT
        ("nvmlDeviceGetGpuInstanceRemainingCapacity", ["<handle>", 19]),     # 7 with MIG off
        ("nvmlDeviceGetGpuInstanceById", ["<handle>", 1]),                   # NOT_FOUND
        ("nvmlDeviceGetMigDeviceHandleByIndex", ["<handle>", 0]),            # NOT_FOUND
        ("nvmlDeviceGetGpuInstanceId", ["<handle>"]),                        # INVALID_ARGUMENT on a GPU handle
        ("nvmlDeviceGetRetiredPagesPendingStatus", ["<handle>"]),            # NOT_SUPPORTED: Hopper remaps rows
        ("nvmlDeviceGetRemappedRows", ["<handle>"]),                         # (0, 0, 0, 0)
        ("nvmlDeviceGetHandleByPciBusId", ["nonsense"]),                     # INVALID_ARGUMENT
        ("nvmlDeviceGetHandleByPciBusId", ["0000:FF:00.0"]),                 # NOT_FOUND
    ]:
        key = (call, json.dumps(args))
        assert key in real_answers, key
        real_answer, sim_answer = real_answers[key], sim_answers.get(key)
        if isinstance(real_answer[1], dict):
            real_answer = (real_answer[0], {k: v for k, v in real_answer[1].items() if k != "version"})
            sim_answer = (sim_answer[0], {k: v for k, v in sim_answer[1].items() if k != "version"})
        assert sim_answer == real_answer, key


def test_the_library_error_strings_are_the_real_ones(real, node):
    node.create("h200-x8")
    pynvml.nvmlInit()
    try:
        for code, text in sorted(real["errorStrings"].items(), key=lambda item: int(item[0])):
            if int(code) in pynvml.NVMLError._errcode_to_string:  # pylint: disable=protected-access
                continue   # the binding's own table answers these, not the library
            assert pynvml.nvmlErrorString(int(code)) == text, code
    finally:
        pynvml.nvmlShutdown()


def test_the_mig_minors_table_is_the_drivers():
    with open(os.path.join(DATA, "mig-minors")) as handle:
        assert devfiles.mig_minors_text() == handle.read()


def test_the_recorded_parity_survey_has_the_presets_identity():
    """Name, memory, PCI device id, architecture and compute capability: the H200 preset's are the real GPU's."""
    with open(os.path.join(DATA, "parity.json")) as handle:
        device = json.load(handle)["devices"][0]
    from nvmlsim.models import MODELS  # pylint: disable=import-outside-toplevel
    model = MODELS["h200-sxm5-141gb"]
    assert (model.name, model.memory_mib, model.pci_device_id, model.architecture, list(model.cuda_cc)) == (
        device["name"], device["memory"]["total"] >> 20, device["pci"]["pciDeviceId"], device["architecture"],
        device["cudaComputeCapability"])


def test_a_cuda_process_looks_as_on_the_real_gpu(node):
    """processes.json / smi-processes.txt: a PyTorch process holding 1634 MiB on the real H200, MIG off."""
    with open(os.path.join(DATA, "processes.json")) as handle:
        real = json.load(handle)
    pid = real["process"]["pid"]
    calls = {(c["call"], json.dumps(c["args"])): c for c in real["calls"]}
    real_procs = calls[("nvmlDeviceGetComputeRunningProcesses", '["<handle>"]')]["value"]
    real_name = calls[("nvmlSystemGetProcessName", json.dumps([pid]))]["value"]
    assert calls[("nvmlSystemGetProcessName", "[999999]")]["error"] == "NVML_ERROR_NOT_FOUND"

    node.create("h200-x8")
    node.cli("process", "add", "--gpu", "0", "--pid", str(pid), "--name", real_name,
             "--used-mib", str(real_procs[0]["usedGpuMemory"] >> 20))
    pynvml.nvmlInit()
    try:
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(0))
        assert [{"pid": p.pid, "usedGpuMemory": p.usedGpuMemory, "gpuInstanceId": p.gpuInstanceId,
                 "computeInstanceId": p.computeInstanceId} for p in procs] == real_procs
        assert pynvml.nvmlSystemGetProcessName(pid) == real_name
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlSystemGetProcessName(999999)
    finally:
        pynvml.nvmlShutdown()

    from nvmlsim import smi  # pylint: disable=import-outside-toplevel
    compared = 0
    for argv, real_lines in _smi_blocks(os.path.join(DATA, "smi-processes.txt")):
        if not argv or not argv[0].startswith("--query-compute-apps"):
            continue
        rc, out = smi.run(argv)
        # the same columns and values but the GPU's own identity (UUID, serial, bus id differ by design)
        expected = [line.replace(REAL_UUID, node.state["gpus"][0]["uuid"]).replace("00000000:00:06.0", "00000000:1B:00.0")
                    .replace(REAL_SERIAL, node.state["gpus"][0]["serial"]) for line in real_lines]
        assert (rc, out.splitlines()) == (0, expected), argv
        compared += 1
    assert compared == 3


def _smi_blocks(path):
    """(argv, output lines) of each command in a probe's nvidia-smi record."""
    blocks = []
    with open(path) as handle:
        for line in handle.read().splitlines():
            if line.startswith("### nvidia-smi"):
                blocks.append((line[len("### nvidia-smi"):].split(), []))
            elif blocks and not line.startswith("### ") and line:
                blocks[-1][1].append(line)
    return blocks


REAL_UUID = "GPU-7569c611-7eef-c527-00d0-eafa8d44d951"
REAL_SERIAL = "1653924043662"
