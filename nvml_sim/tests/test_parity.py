"""The parity survey: read-only, and on a simulated H100 it has real NVML's keys and values.

EXPECTED_H100 holds what NVIDIA's documentation shows for an H100 80GB HBM3
(MIG User Guide R580: nvidia-smi header, ``-lgip``/``-lgipp``, the two
3g.40gb MIG devices of its MPS example); see nvml_sim/README.md.
"""
import hashlib
import json
import os
import subprocess
import sys

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import parity

HERE = os.path.dirname(os.path.abspath(__file__))
PARITY = os.path.join(HERE, "..", "parity.py")

EXPECTED_H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "memory_total_mib": 81559,
    "architecture": 9,
    "cuda_cc": [9, 0],
    "pci_device_id": 0x233010DE,
    "max_mig_devices": 7,
    # NVML profile enum -> (id, name, instances, SMs, GiB as printed by -lgip, placements from -lgipp)
    "profiles": {
        "0": (19, "MIG 1g.10gb", 7, 16, 9.75, [[s, 1] for s in range(7)]),
        "7": (20, "MIG 1g.10gb+me", 1, 16, 9.75, [[s, 1] for s in range(7)]),
        "9": (15, "MIG 1g.20gb", 4, 26, 19.62, [[0, 2], [2, 2], [4, 2], [6, 2]]),
        "1": (14, "MIG 2g.20gb", 3, 32, 19.62, [[0, 2], [2, 2], [4, 2]]),
        "2": (9, "MIG 3g.40gb", 2, 60, 39.50, [[0, 4], [4, 4]]),
        "3": (5, "MIG 4g.40gb", 1, 64, 39.50, [[0, 4]]),
        "4": (0, "MIG 7g.80gb", 1, 132, 79.25, [[0, 8]]),
    },
    "unsupported_enums": ["5", "6", "8"],
    # guide's MPS example: GI 1 and GI 2 (3g.40gb), MIG devices of 40448MiB
    "mig_devices": [(1, 0, 40448), (2, 0, 40448)],
}

DEVICE_KEYS = {"index", "name", "uuid", "minorNumber", "pci", "memory", "architecture", "cudaComputeCapability",
               "cpuAffinity", "numaNodeId", "migMode", "maxMigDeviceCount", "isMigDeviceHandle", "processes"}
PROFILE_KEYS = {"id", "isP2pSupported", "sliceCount", "instanceCount", "multiprocessorCount", "copyEngineCount",
                "decoderCount", "encoderCount", "jpegCount", "ofaCount", "memorySizeMB", "name",
                "placements", "remaining", "instances"}
MUTATORS = {"nvmlDeviceSetMigMode", "nvmlDeviceCreateGpuInstance", "nvmlDeviceCreateGpuInstanceWithPlacement",
            "nvmlGpuInstanceDestroy", "nvmlGpuInstanceCreateComputeInstance",
            "nvmlGpuInstanceCreateComputeInstanceWithPlacement", "nvmlComputeInstanceDestroy"}


def h100_with_two_3g(node):
    """h100-80gb-x8 with GPU 0 in MIG mode holding 2 x 3g.40gb, each with a full CI."""
    node.create("h100-80gb-x8")
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    node.cli("reset", "--gpu", "0")
    for _ in range(2):
        gi = pynvml.nvmlDeviceCreateGpuInstance(handle, 9)
        pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE)
    pynvml.nvmlShutdown()


def test_simulated_h100_matches_nvidias_documented_values(node):
    h100_with_two_3g(node)
    result = parity.survey(pynvml)
    assert result["deviceCount"] == 8
    gpu0 = result["devices"][0]
    assert set(gpu0) == DEVICE_KEYS | {"gpuInstanceProfiles", "migDevices"}
    assert set(result["devices"][1]) == DEVICE_KEYS
    assert gpu0["name"] == EXPECTED_H100["name"]
    assert gpu0["memory"]["total"] == EXPECTED_H100["memory_total_mib"] << 20
    assert gpu0["architecture"] == EXPECTED_H100["architecture"]
    assert gpu0["cudaComputeCapability"] == EXPECTED_H100["cuda_cc"]
    assert gpu0["pci"]["pciDeviceId"] == EXPECTED_H100["pci_device_id"]
    assert gpu0["migMode"] == [1, 1] and result["devices"][1]["migMode"] == [0, 0]
    assert gpu0["maxMigDeviceCount"] == EXPECTED_H100["max_mig_devices"]
    profiles = gpu0["gpuInstanceProfiles"]
    for enum, (pid, name, count, sms, gib, placements) in EXPECTED_H100["profiles"].items():
        prof = profiles[enum]
        assert set(prof) == PROFILE_KEYS
        assert (prof["id"], prof["name"], prof["instanceCount"], prof["multiprocessorCount"], prof["placements"]) == (
            pid, name, count, sms, placements)
        assert "%.2f" % (prof["memorySizeMB"] / 1024) == "%.2f" % gib
    for enum in EXPECTED_H100["unsupported_enums"]:
        assert profiles[enum] == {"error": "NVML_ERROR_NOT_SUPPORTED"}
    assert [(d["gpuInstanceId"], d["computeInstanceId"], d["memoryTotal"] >> 20) for d in gpu0["migDevices"]] == \
        EXPECTED_H100["mig_devices"]
    assert [i["placement"] for i in profiles["2"]["instances"]] == [[0, 4], [4, 4]]
    assert profiles["2"]["remaining"] == 0
    cis = profiles["2"]["instances"][0]["computeInstances"]
    assert cis["2"]["instances"] == [{"id": 0, "profileId": 2, "placement": [0, 3]}]
    assert cis["4"] == {"error": "NVML_ERROR_NOT_SUPPORTED"}


def test_shape_of_a_gpu_without_mig(node):
    node.create("l40s-x4")
    result = parity.survey(pynvml)
    device = result["devices"][0]
    assert set(device) == DEVICE_KEYS
    assert device["migMode"] == {"error": "NVML_ERROR_NOT_SUPPORTED"}
    assert parity.shape(device)["memory"] == {"free": "int", "total": "int", "used": "int"}
    assert parity.shape({"a": [{"b": 1}, {"c": 2}]}) == {"a": [{"b": "int"}]}


class Recorder:
    """A pynvml stand-in that records every NVML function the survey touches."""

    def __init__(self, module):
        self.module = module
        self.called = set()

    def __getattr__(self, name):
        value = getattr(self.module, name)
        if name.startswith("nvml") and callable(value):
            self.called.add(name)
        return value


def test_survey_calls_no_mutating_function(node):
    h100_with_two_3g(node)
    recorder = Recorder(pynvml)
    parity.survey(recorder)
    assert not recorder.called & MUTATORS
    assert "nvmlDeviceGetGpuInstances" in recorder.called


def _snapshot(node):
    digest = hashlib.sha256(node.tmp.joinpath("state.json").read_bytes()).hexdigest()
    files = sorted(str(p.relative_to(node.root)) for p in node.root.rglob("*"))
    return digest, files


def test_parity_script_is_read_only_and_prints_json(node):
    h100_with_two_3g(node)
    before = _snapshot(node)
    env = dict(os.environ, NVMLSIM_PARITY_USE_SIM="1")
    result = subprocess.run([sys.executable, PARITY], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["devices"][0]["migDevices"][1]["gpuInstanceId"] == 2
    shaped = subprocess.run([sys.executable, PARITY, "--shape"], env=env, capture_output=True, text=True, check=False)
    assert json.loads(shaped.stdout)["deviceCount"] == "int"
    assert _snapshot(node) == before


def test_parity_without_a_node_fails_cleanly(node, capsys, monkeypatch):  # pylint: disable=unused-argument
    monkeypatch.setenv("NVMLSIM_PARITY_USE_SIM", "1")
    assert parity.main([]) == 1
    assert capsys.readouterr().err == "parity: NVML failed: Driver Not Loaded (NVML_ERROR_DRIVER_NOT_LOADED)\n"
