"""The pynvml API of the simulator, used the way nvidia-ml-py is used."""
# NVMLError_* classes are generated at import, as in nvidia-ml-py.
# pylint: disable=no-member,use-implicit-booleaness-not-comparison
import ctypes
import os
import stat
import subprocess
import sys

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import errors as E
from ctypes import byref, c_uint


def gpu(index):
    return pynvml.nvmlDeviceGetHandleByIndex(index)


def gis(handle, profile_id):
    """nvmlDeviceGetGpuInstances the usual way: array + byref(count)."""
    count = c_uint()
    array = (pynvml.c_nvmlGpuInstance_t * 7)()
    pynvml.nvmlDeviceGetGpuInstances(handle, profile_id, array, byref(count))
    return [array[i] for i in range(count.value)]


def gi_ids(handle, profile_id=19):
    return [pynvml.nvmlGpuInstanceGetInfo(g).id for g in gis(handle, profile_id)]


def enable_mig(node, index):
    """Set MIG mode the way a module does, then reset the GPU from the 'outside'."""
    status = pynvml.nvmlDeviceSetMigMode(gpu(index), pynvml.NVML_DEVICE_MIG_ENABLE)
    assert status == pynvml.NVML_ERROR_RESET_REQUIRED
    assert pynvml.nvmlDeviceGetMigMode(gpu(index)) == [0, 1]
    node.cli("reset", "--gpu", str(index))
    assert pynvml.nvmlDeviceGetMigMode(gpu(index)) == [1, 1]


# ------------------------------------------------------------------- library behaviour

def test_calls_before_init_and_after_shutdown_are_uninitialized(node):
    node.create("seed-003")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()
    pynvml.nvmlInit()
    pynvml.nvmlInit()
    pynvml.nvmlShutdown()
    assert pynvml.nvmlDeviceGetCount() == 4  # still one reference
    pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError) as info:
        pynvml.nvmlDeviceGetHandleByIndex(0)
    assert info.value.value == pynvml.NVML_ERROR_UNINITIALIZED
    assert str(info.value) == "Uninitialized"
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlShutdown()


def test_init_without_a_node_is_driver_not_loaded(node):  # pylint: disable=unused-argument
    with pytest.raises(pynvml.NVMLError_DriverNotLoaded) as info:
        pynvml.nvmlInit()
    assert str(info.value) == "Driver Not Loaded"


def test_init_with_a_corrupt_state_is_unknown(node):
    node.tmp.joinpath("state.json").write_text("{not json")
    with pytest.raises(pynvml.NVMLError_Unknown):
        pynvml.nvmlInit()


@pytest.mark.parametrize("code, cls, text", [
    (pynvml.NVML_ERROR_IN_USE, "NVMLError_InUse", "In use by another client"),
    (pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES, "NVMLError_InsufficientResources", "Insufficient Resources"),
    (pynvml.NVML_ERROR_NOT_SUPPORTED, "NVMLError_NotSupported", "Not Supported"),
    (pynvml.NVML_ERROR_INVALID_ARGUMENT, "NVMLError_InvalidArgument", "Invalid Argument"),
    (pynvml.NVML_ERROR_NOT_FOUND, "NVMLError_NotFound", "Not Found"),
    (pynvml.NVML_ERROR_RESET_REQUIRED, "NVMLError_ResetRequired", "GPU requires restart"),
    (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVMLError_LibRmVersionMismatch", "RM has detected an NVML/RM version mismatch."),
])
def test_error_classes_like_nvidia_ml_py(node, code, cls, text):
    node.create("seed-003")
    pynvml.nvmlInit()  # loads the "library": codes outside the bindings' table are asked of it
    err = pynvml.NVMLError(code)
    assert type(err).__name__ == cls and type(err) is getattr(pynvml, cls)  # pylint: disable=unidiomatic-typecheck
    assert isinstance(err, pynvml.NVMLError) and err.value == code
    assert pynvml.nvmlExceptionClass(code) is getattr(pynvml, cls)
    assert getattr(pynvml, cls)().value == code
    assert str(err) == text


def test_constants_agree_with_the_core():
    for name, value in E.CODES.items():
        assert getattr(pynvml, "NVML_ERROR_" + name if name != "SUCCESS" else "NVML_SUCCESS") == value
    assert (pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
            pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
            pynvml.nvmlGpuInstanceProfileInfo_v2) == (1, 7, 9, 4, 0x02000098)
    with pytest.raises(ValueError, match="nvmlErrorCode 12345 is not valid"):
        pynvml.nvmlExceptionClass(12345)


def test_handles_are_opaque_ctypes_pointers(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    handle = gpu(2)
    assert isinstance(handle, pynvml.c_nvmlDevice_t)
    assert ctypes.cast(handle, ctypes.c_void_p).value == ctypes.cast(gpu(2), ctypes.c_void_p).value
    for bad in (None, 0, pynvml.c_nvmlDevice_t(), "GPU-0"):
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetName(bad)


# ------------------------------------------------------------------- device queries

def test_seed_003_devices(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    assert pynvml.nvmlSystemGetDriverVersion() == "535.129.03"
    assert pynvml.nvmlSystemGetNVMLVersion() == "12.535.129.03"
    assert pynvml.nvmlSystemGetCudaDriverVersion() == 12020
    assert pynvml.nvmlDeviceGetCount() == 4
    names = [pynvml.nvmlDeviceGetName(gpu(i)) for i in range(4)]
    assert names == ["NVIDIA A100 80GB PCIe"] * 4
    assert [pynvml.nvmlDeviceGetPciInfo(gpu(i)).busId for i in range(4)] == [
        "00000000:17:00.0", "00000000:65:00.0", "00000000:CA:00.0", "00000000:E3:00.0"]
    pci = pynvml.nvmlDeviceGetPciInfo(gpu(3))
    assert (pci.busIdLegacy, pci.bus, pci.device, pci.domain, pci.pciDeviceId) == ("0000:E3:00.0", 0xE3, 0, 0, 0x20B510DE)
    assert [pynvml.nvmlDeviceGetMigMode(gpu(i)) for i in range(4)] == [[0, 0], [0, 0], [1, 1], [1, 1]]
    assert [pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu(i)) for i in range(4)] == [0, 0, 7, 7]
    assert [pynvml.nvmlDeviceGetMinorNumber(gpu(i)) for i in range(4)] == [0, 1, 2, 3]
    assert [pynvml.nvmlDeviceGetIndex(gpu(i)) for i in range(4)] == [0, 1, 2, 3]
    assert pynvml.nvmlDeviceGetArchitecture(gpu(0)) == pynvml.NVML_DEVICE_ARCH_AMPERE
    assert pynvml.nvmlDeviceGetCudaComputeCapability(gpu(0)) == (8, 0)
    memory = pynvml.nvmlDeviceGetMemoryInfo(gpu(0))
    assert (memory.total, memory.used) == (81920 << 20, 4 << 20)
    memory = pynvml.nvmlDeviceGetMemoryInfo(gpu(2), version=pynvml.nvmlMemory_v2)
    # version 2 reports the driver's reservation apart from what is used (a real H200 with nothing running: used 0)
    assert (memory.version, memory.reserved, memory.used) == (pynvml.nvmlMemory_v2, 87 << 20, 0)
    with pytest.raises(pynvml.NVMLError_ArgumentVersionMismatch):
        pynvml.nvmlDeviceGetMemoryInfo(gpu(0), version=5)
    uuid = pynvml.nvmlDeviceGetUUID(gpu(1))
    assert uuid.startswith("GPU-") and pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(uuid)) == 1
    assert pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByUUID(uuid.encode())) == 1
    assert pynvml.nvmlDeviceGetIndex(pynvml.nvmlDeviceGetHandleByPciBusId("0000:ca:00.0")) == 2
    assert pynvml.nvmlDeviceGetSerial(gpu(0)) == "1652000000001"
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetHandleByPciBusId("00000000:01:00.0")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetHandleByIndex(4)


def test_cpu_and_numa_affinity(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    mask = pynvml.nvmlDeviceGetCpuAffinity(gpu(2), 2)
    assert list(mask) == [0xFFFF0000 | 0xFFFF000000000000, 0]
    assert list(pynvml.nvmlDeviceGetCpuAffinity(gpu(0), 1)) == [0x0000FFFF0000FFFF]
    assert list(pynvml.nvmlDeviceGetCpuAffinityWithinScope(gpu(0), 1, pynvml.NVML_AFFINITY_SCOPE_NODE)) == [0x0000FFFF0000FFFF]
    assert list(pynvml.nvmlDeviceGetMemoryAffinity(gpu(3), 1, pynvml.NVML_AFFINITY_SCOPE_NODE)) == [0b10]
    assert [pynvml.nvmlDeviceGetNumaNodeId(gpu(i)) for i in range(4)] == [0, 0, 1, 1]
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetCpuAffinityWithinScope(gpu(0), 1, 7)


# ------------------------------------------------------------------- MIG queries

def test_seed_003_mig_devices_and_instances(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    assert gi_ids(gpu(2)) == [7, 8, 9, 10, 11, 12, 13]
    assert gi_ids(gpu(3)) == [7, 8, 9, 11, 12, 13, 14]
    migs = [pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(3), i) for i in range(7)]
    assert [(pynvml.nvmlDeviceGetGpuInstanceId(m), pynvml.nvmlDeviceGetComputeInstanceId(m)) for m in migs] == [
        (7, 0), (8, 0), (9, 0), (11, 0), (12, 0), (13, 0), (14, 0)]
    mig = migs[3]
    assert pynvml.nvmlDeviceIsMigDeviceHandle(mig) and not pynvml.nvmlDeviceIsMigDeviceHandle(gpu(3))
    assert pynvml.nvmlDeviceGetName(mig) == "NVIDIA A100 80GB PCIe MIG 1g.10gb"
    assert pynvml.nvmlDeviceGetMemoryInfo(mig).total == 9728 << 20
    mig_uuid = pynvml.nvmlDeviceGetUUID(mig)
    assert mig_uuid.startswith("MIG-")
    again = pynvml.nvmlDeviceGetHandleByUUID(mig_uuid)
    assert pynvml.nvmlDeviceGetGpuInstanceId(again) == 11
    parent = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
    assert pynvml.nvmlDeviceGetUUID(parent) == pynvml.nvmlDeviceGetUUID(gpu(3))
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(2), 7)
    # MIG off on GPU 0: no MIG devices (NOT_FOUND, as a real H200 answers); a GPU handle has no
    # GPU-instance or compute-instance id (INVALID_ARGUMENT, as on the real H200)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(0), 0)
    for func in (pynvml.nvmlDeviceGetGpuInstanceId, pynvml.nvmlDeviceGetComputeInstanceId):
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            func(gpu(3))
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(gpu(3))
    for func in (pynvml.nvmlDeviceGetMinorNumber, pynvml.nvmlDeviceGetIndex):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            func(mig)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetMigMode(mig)


def test_mig_device_index_not_found(node):
    node.create("seed-003")
    node.edit(lambda s: s["gpus"][2]["gpu_instances"][6]["compute_instances"].clear())
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceGetGpuInstanceId(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(2), 5)) == 12
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(2), 6)


def test_profile_info_structures(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(2), pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
    assert isinstance(info, pynvml.c_nvmlGpuInstanceProfileInfo_v2_t)
    assert (info.version, info.id, info.name, info.instanceCount, info.memorySizeMB, info.sliceCount) == (
        pynvml.nvmlGpuInstanceProfileInfo_v2, 19, "MIG 1g.10gb", 7, 9728, 1)
    assert "name: MIG 1g.10gb" in str(info)
    old = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(2), pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE, version=1)
    assert isinstance(old, pynvml.c_nvmlGpuInstanceProfileInfo_t) and (old.id, old.memorySizeMB) == (0, 80896)
    assert pynvml.nvmlDeviceGetGpuInstanceProfileInfoV(gpu(2), pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2).name == "MIG 1g.20gb"
    assert pynvml.nvmlDeviceGetGpuInstanceProfileInfoById(gpu(2), 14).name == "MIG 2g.20gb"
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(2), 0, version=3)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(2), pynvml.NVML_GPU_INSTANCE_PROFILE_8_SLICE)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(2), pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT)
    # MIG disabled on GPU 0: the profiles are listed all the same (as a real H200 lists them)
    assert pynvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu(0), 0).id == 19
    gi = gis(gpu(2), 19)[0]
    ci_info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    assert (ci_info.version, ci_info.id, ci_info.sliceCount, ci_info.multiprocessorCount, ci_info.name) == (
        pynvml.nvmlComputeInstanceProfileInfo_v2, 0, 1, 14, "MIG 1g.10gb")
    assert pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, 0, version=1).instanceCount == 1
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 1, 0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, 1)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, 0, 0, version=0)


def test_possible_placements_argument_forms(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    count = c_uint()
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 15, None, byref(count))
    assert count.value == 4
    placements = (pynvml.c_nvmlGpuInstancePlacement_t * count.value)()
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 15, placements, byref(count))
    assert [(p.start, p.size) for p in placements] == [(0, 2), (2, 2), (4, 2), (6, 2)]
    other = (pynvml.c_nvmlGpuInstancePlacement_t * 7)()
    pointer_count = ctypes.pointer(c_uint())
    assert pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 19, byref(other), pointer_count) == pynvml.NVML_SUCCESS
    assert pointer_count.contents.value == 7 and other[6].start == 6
    small = (pynvml.c_nvmlGpuInstancePlacement_t * 2)()
    with pytest.raises(pynvml.NVMLError_InsufficientSize):
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 19, small, byref(count))
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 19, [1, 2], byref(count))
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 19, None, None)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 3, None, byref(count))
    gi = gis(gpu(2), 19)[0]
    pynvml.nvmlGpuInstanceGetComputeInstancePossiblePlacements(gi, 0, None, byref(count))
    assert count.value == 1
    assert pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu(2), 19) == 0
    assert pynvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, 0) == 0


def test_instances_by_id(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    gi = pynvml.nvmlDeviceGetGpuInstanceById(gpu(3), 14)
    info = pynvml.nvmlGpuInstanceGetInfo(gi)
    assert (info.id, info.profileId, info.placement.start, info.placement.size) == (14, 19, 3, 1)
    assert pynvml.nvmlDeviceGetUUID(info.device) == pynvml.nvmlDeviceGetUUID(gpu(3))
    ci = pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 0)
    ci_info = pynvml.nvmlComputeInstanceGetInfo(ci)
    assert (ci_info.id, ci_info.profileId, ci_info.placement.start, ci_info.placement.size) == (0, 0, 0, 1)
    assert pynvml.nvmlGpuInstanceGetInfo(ci_info.gpuInstance).id == 14
    count = c_uint()
    array = (pynvml.c_nvmlComputeInstance_t * 1)()
    pynvml.nvmlGpuInstanceGetComputeInstances(gi, 0, array, byref(count))
    assert count.value == 1 and pynvml.nvmlComputeInstanceGetInfo(array[0]).id == 0
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetGpuInstanceById(gpu(3), 10)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 1)


# ------------------------------------------------------------------- MIG management

def test_full_mig_lifecycle_on_h100(node):
    node.create("h100-80gb-x8")
    pynvml.nvmlInit()
    enable_mig(node, 0)
    handles = [pynvml.nvmlDeviceCreateGpuInstance(gpu(0), 19) for _ in range(7)]
    assert [pynvml.nvmlGpuInstanceGetInfo(h).id for h in handles] == [13, 11, 12, 7, 8, 9, 10]
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlDeviceCreateGpuInstance(gpu(0), 19)
    cis = [pynvml.nvmlGpuInstanceCreateComputeInstance(h, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE) for h in handles]
    caps = node.root / "dev" / "nvidia-caps"
    assert sorted(int(p.name[10:]) for p in caps.iterdir()) == [1, 2] + sorted(
        m for gi in range(7, 14) for m in (3 + 9 * gi, 4 + 9 * gi))
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlGpuInstanceCreateComputeInstance(handles[0], 0)
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(handles[0])
    node.cli("process", "add", "--gpu", "0", "--pid", "4242", "--name", "python3", "--used-mib", "512", "--gi", "13", "--ci", "0")
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlComputeInstanceDestroy(cis[0])
    node.cli("process", "remove", "--pid", "4242")
    assert pynvml.nvmlComputeInstanceDestroy(cis[0]) == pynvml.NVML_SUCCESS
    assert pynvml.nvmlGpuInstanceDestroy(handles[0]) == pynvml.NVML_SUCCESS
    assert not (caps / "nvidia-cap120").exists() and not (caps / "nvidia-cap121").exists()  # GI 13: 3 + 9*13
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # handle of a destroyed instance
        pynvml.nvmlGpuInstanceGetInfo(handles[0])
    placement = pynvml.c_nvmlGpuInstancePlacement_t()
    placement.start, placement.size = 6, 1
    again = pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu(0), 19, byref(placement))
    assert pynvml.nvmlGpuInstanceGetInfo(again).id == 13
    placement.start = 5
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu(0), 19, placement)
    placement.start, placement.size = 7, 1
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu(0), 19, ctypes.pointer(placement))
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(gpu(0), 19, (6, 1))


def test_compute_instance_with_placement(node):
    node.create("h100-80gb-x8")
    pynvml.nvmlInit()
    enable_mig(node, 1)
    gi = pynvml.nvmlDeviceCreateGpuInstance(gpu(1), 0)
    placement = pynvml.c_nvmlComputeInstancePlacement_t()
    placement.start, placement.size = 4, 3
    ci = pynvml.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, 2, placement)
    info = pynvml.nvmlComputeInstanceGetInfo_v2(ci)
    assert (info.id, info.placement.start, info.placement.size) == (0, 4, 3)
    placement.size = 2
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gi, 2, placement)
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu(1), 0)
    assert pynvml.nvmlDeviceGetName(mig) == "NVIDIA H100 80GB HBM3 MIG 3c.7g.80gb"


def test_mig_mode_pending_while_in_use_then_reboot(node):
    node.create("a100-80gb-pcie-x4")
    node.cli("process", "add", "--gpu", "1", "--pid", "900", "--name", "dcgm")
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceSetMigMode(gpu(1), 1) == pynvml.NVML_ERROR_IN_USE
    assert pynvml.nvmlDeviceGetMigMode(gpu(1)) == [0, 1]
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceCreateGpuInstance(gpu(1), 19)
    node.cli("reboot")
    assert pynvml.nvmlDeviceGetMigMode(gpu(1)) == [1, 1]
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(gpu(1)) == []


def test_auto_reset_node(node):
    node.create("a100-80gb-pcie-x4", "--auto-reset")
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceSetMigMode(gpu(0), 1) == pynvml.NVML_SUCCESS
    assert pynvml.nvmlDeviceGetMigMode(gpu(0)) == [1, 1]
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceSetMigMode(gpu(0), 3)


NON_MIG_CALLS = [
    ("nvmlDeviceGetMigMode", ()),
    ("nvmlDeviceSetMigMode", (1,)),
    ("nvmlDeviceGetGpuInstanceProfileInfo", (0,)),
    ("nvmlDeviceGetGpuInstanceProfileInfoById", (19,)),
    ("nvmlDeviceGetGpuInstancePossiblePlacements", (19, None, byref(c_uint()))),
    ("nvmlDeviceGetGpuInstanceRemainingCapacity", (19,)),
    ("nvmlDeviceCreateGpuInstance", (19,)),
    ("nvmlDeviceCreateGpuInstanceWithPlacement", (19, pynvml.c_nvmlGpuInstancePlacement_t())),
    ("nvmlDeviceGetGpuInstances", (19, (pynvml.c_nvmlGpuInstance_t * 7)(), byref(c_uint()))),
    ("nvmlDeviceGetGpuInstanceById", (7,)),
    ("nvmlDeviceGetMigDeviceHandleByIndex", (0,)),
]


@pytest.mark.parametrize("name, args", NON_MIG_CALLS, ids=[c[0] for c in NON_MIG_CALLS])
def test_mig_calls_on_a_gpu_without_mig_are_not_supported(node, name, args):
    node.create("l40s-x4")
    pynvml.nvmlInit()
    with pytest.raises(pynvml.NVMLError_NotSupported):
        getattr(pynvml, name)(gpu(0), *args)
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(gpu(0)) == 0
    assert pynvml.nvmlDeviceGetArchitecture(gpu(0)) == pynvml.NVML_DEVICE_ARCH_ADA


# ------------------------------------------------------------------- processes, live state

def test_processes_v3_and_live_state(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    handle = gpu(3)
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(handle) == []
    node.cli("process", "add", "--gpu", "3", "--pid", "4242", "--name", "train.py", "--used-mib", "2048", "--gi", "11", "--ci", "0")
    node.cli("process", "add", "--gpu", "0", "--pid", "77", "--name", "bench", "--used-mib", "100")
    procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    assert [(p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId) for p in procs] == [(4242, 2048 << 20, 11, 0)]
    assert isinstance(procs[0], pynvml.nvmlFriendlyObject)
    assert pynvml.nvmlDeviceGetComputeRunningProcesses_v2(handle)[0].pid == 4242
    whole = pynvml.nvmlDeviceGetComputeRunningProcesses_v3(gpu(0))[0]
    assert (whole.gpuInstanceId, whole.computeInstanceId) == (0xFFFFFFFF, 0xFFFFFFFF)
    mig11 = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, 3)
    mig12 = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, 4)
    assert [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(mig11)] == [4242]
    assert pynvml.nvmlDeviceGetComputeRunningProcesses(mig12) == []
    assert pynvml.nvmlDeviceGetMemoryInfo(mig11).used == (12 + 2048) << 20
    assert pynvml.nvmlSystemGetProcessName(4242) == "train.py"
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlSystemGetProcessName(1)
    assert pynvml.nvmlDeviceGetGraphicsRunningProcesses(handle) == []


def test_handles_survive_cli_changes_and_see_them(node):
    node.create("seed-003")
    pynvml.nvmlInit()
    handle = gpu(2)
    node.cli("reboot")
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(handle) == 7
    assert gi_ids(handle) == []
    node.create("l40s-x4", "--force")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # that GPU is gone
        pynvml.nvmlDeviceGetName(handle)


# ------------------------------------------------------------------- fault injection

def test_injected_fault_fires_once_after_n_calls(node):
    node.create("seed-003")
    node.cli("inject", "--call", "nvmlGpuInstanceCreateComputeInstance", "--error", "NVML_ERROR_INSUFFICIENT_RESOURCES", "--after", "1")
    node.cli("reboot")
    pynvml.nvmlInit()
    first, second = (pynvml.nvmlDeviceCreateGpuInstance(gpu(2), 9) for _ in range(2))
    pynvml.nvmlGpuInstanceCreateComputeInstance(first, 2)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlGpuInstanceCreateComputeInstance(second, 2)
    pynvml.nvmlGpuInstanceCreateComputeInstance(second, 2)
    assert node.state["faults"] == []


@pytest.mark.parametrize("call, used", [
    ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetComputeRunningProcesses"),
    ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses"),
    ("nvmlComputeInstanceGetInfo", "nvmlComputeInstanceGetInfo_v2"),
    ("nvmlDeviceGetPciInfo", "nvmlDeviceGetPciInfo_v3"),
])
def test_injected_fault_matches_versioned_and_unversioned_names(node, call, used):
    node.create("seed-003")
    node.cli("inject", "--call", call, "--error", "19", "--count", "0")
    pynvml.nvmlInit()
    arg = gpu(2) if "Device" in used else pynvml.nvmlGpuInstanceGetComputeInstanceById(pynvml.nvmlDeviceGetGpuInstanceById(gpu(2), 7), 0)
    for _ in range(2):  # count 0: every call
        with pytest.raises(pynvml.NVMLError_InUse):
            getattr(pynvml, used)(arg)
    node.cli("inject", "--clear")
    getattr(pynvml, used)(arg)


def test_injected_init_failure(node):
    node.create("seed-003")
    node.cli("inject", "--call", "nvmlInit", "--error", "DRIVER_NOT_LOADED")
    with pytest.raises(pynvml.NVMLError_DriverNotLoaded):
        pynvml.nvmlInit()
    pynvml.nvmlInit()


def test_debug_explains_failures(node, monkeypatch, capsys):
    node.create("seed-003")
    monkeypatch.setenv("NVMLSIM_DEBUG", "1")
    pynvml.nvmlInit()
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlDeviceCreateGpuInstance(gpu(2), 19)
    assert "nvmlsim: nvmlDeviceCreateGpuInstance: GPU 2 already has 7 of at most 7 1g.10gb instances" in capsys.readouterr().err
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetName(None)
    assert "not a valid gpu/mig handle: None" in capsys.readouterr().err


@pytest.mark.parametrize("preset, last_gpu, caps", [("h200-x8", 7, True), ("l40s-x4", 3, False)])
def test_mig_config_caps_exist_only_with_mig_capable_gpus(node, preset, last_gpu, caps):
    node.create(preset)
    dev = node.root / "dev"
    assert stat.S_ISCHR(os.stat(dev / ("nvidia%d" % last_gpu)).st_mode)
    assert (dev / "nvidia-caps" / "nvidia-cap1").exists() is caps


def test_concurrent_writers_lose_no_update(node):
    node.create("h100-80gb-x8", "--auto-reset")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    script = ("from nvmlsim import api as pynvml; pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); "
              "gi = pynvml.nvmlDeviceCreateGpuInstance(h, 19); pynvml.nvmlGpuInstanceCreateComputeInstance(gi, 0)")
    pynvml.nvmlInit()
    assert pynvml.nvmlDeviceSetMigMode(gpu(0), 1) == pynvml.NVML_SUCCESS
    env = dict(os.environ, PYTHONPATH=src)
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env) for _ in range(7)]
    assert [p.wait() for p in procs] == [0] * 7
    assert sorted(gi_ids(gpu(0))) == [7, 8, 9, 10, 11, 12, 13]
    assert len(list((node.root / "dev" / "nvidia-caps").iterdir())) == 2 + 14


def test_instance_lists_take_no_null_array(node):
    """nvml.h: a NULL gpuInstances/computeInstances array is INVALID_ARGUMENT (only the placement queries count with NULL)."""
    node.create("seed-003")
    pynvml.nvmlInit()
    count = c_uint(0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstances(gpu(2), 19, None, byref(count))
    gi = pynvml.nvmlDeviceGetGpuInstanceById(gpu(2), 7)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstances(gi, 0, None, byref(count))
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(gpu(2), 19, None, byref(count))
    assert count.value == 7
