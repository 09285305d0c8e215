"""Read-only NVML survey, printed as JSON, for comparing the simulator with a real GPU.

    python3 -m nvmlsim.parity            # or: python3 nvml_sim/parity.py

Runs the same queries against whatever ``pynvml`` is importable (the
simulator or nvidia-ml-py on a real GPU node) and prints one JSON document.
It only calls getters: no MIG mode change, no instance creation or
destruction, no reset -- safe on a production GPU.  A query that fails is
recorded as ``{"error": "NVML_ERROR_..."}`` so the two outputs keep the same
keys.  ``shape()`` reduces a document to its keys and value types for a
structural comparison.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any, Callable, Dict, List

CPU_SET_WORDS = 16   # 1024 CPUs
GI_PROFILE_ENUMS = range(0, 10)
CI_PROFILE_ENUMS = range(0, 9)


def _error_name(nvml, exc) -> str:
    for name in dir(nvml):
        if name.startswith("NVML_ERROR_") and getattr(nvml, name) == getattr(exc, "value", None):
            return name
    return "NVML_ERROR_%s" % getattr(exc, "value", "?")


def _query(nvml, func: Callable, *args) -> Any:
    try:
        return func(*args)
    except nvml.NVMLError as exc:
        return {"error": _error_name(nvml, exc)}


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _cpulist(mask) -> str:
    cpus = [word * 64 + bit for word, value in enumerate(mask) for bit in range(64) if value >> bit & 1]
    ranges: List[str] = []
    for cpu in cpus:
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1] = (ranges[-1][0], cpu)
        else:
            ranges.append((cpu, cpu))
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in ranges)


def _struct(obj, fields) -> Dict[str, Any]:
    return {name: _text(getattr(obj, name)) for name in fields}


def _gi_profiles(nvml, handle) -> Dict[str, Any]:
    fields = ("id", "isP2pSupported", "sliceCount", "instanceCount", "multiprocessorCount", "copyEngineCount",
              "decoderCount", "encoderCount", "jpegCount", "ofaCount", "memorySizeMB", "name")
    profiles = {}
    for enum in GI_PROFILE_ENUMS:
        info = _query(nvml, nvml.nvmlDeviceGetGpuInstanceProfileInfo, handle, enum)
        if isinstance(info, dict):
            profiles[str(enum)] = info
            continue
        entry = _struct(info, fields)
        count = ctypes.c_uint()
        placements = (nvml.c_nvmlGpuInstancePlacement_t * 16)()
        result = _query(nvml, nvml.nvmlDeviceGetGpuInstancePossiblePlacements, handle, info.id, placements, ctypes.byref(count))
        entry["placements"] = result if isinstance(result, dict) else [
            [placements[i].start, placements[i].size] for i in range(count.value)]
        entry["remaining"] = _query(nvml, nvml.nvmlDeviceGetGpuInstanceRemainingCapacity, handle, info.id)
        entry["instances"] = _gpu_instances(nvml, handle, info.id)
        profiles[str(enum)] = entry
    return profiles


def _gpu_instances(nvml, handle, profile_id) -> Any:
    count = ctypes.c_uint()
    array = (nvml.c_nvmlGpuInstance_t * 16)()
    result = _query(nvml, nvml.nvmlDeviceGetGpuInstances, handle, profile_id, array, ctypes.byref(count))
    if isinstance(result, dict):
        return result
    instances = []
    for i in range(count.value):
        info = nvml.nvmlGpuInstanceGetInfo(array[i])
        instances.append({"id": info.id, "profileId": info.profileId,
                          "placement": [info.placement.start, info.placement.size],
                          "computeInstances": _compute_instances(nvml, array[i])})
    return instances


def _compute_instances(nvml, gi_handle) -> Dict[str, Any]:
    fields = ("id", "sliceCount", "instanceCount", "multiprocessorCount", "sharedCopyEngineCount",
              "sharedDecoderCount", "sharedEncoderCount", "sharedJpegCount", "sharedOfaCount", "name")
    result = {}
    for enum in CI_PROFILE_ENUMS:
        info = _query(nvml, nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo, gi_handle, enum,
                      nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        if isinstance(info, dict):
            result[str(enum)] = info
            continue
        entry = _struct(info, fields)
        count = ctypes.c_uint()
        array = (nvml.c_nvmlComputeInstance_t * 16)()
        listed = _query(nvml, nvml.nvmlGpuInstanceGetComputeInstances, gi_handle, info.id, array, ctypes.byref(count))
        if isinstance(listed, dict):
            entry["instances"] = listed
        else:
            entry["instances"] = []
            for i in range(count.value):
                ci = nvml.nvmlComputeInstanceGetInfo(array[i])
                entry["instances"].append({"id": ci.id, "profileId": ci.profileId,
                                           "placement": [ci.placement.start, ci.placement.size]})
        result[str(enum)] = entry
    return result


def _mig_devices(nvml, handle) -> Any:
    maximum = _query(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle)
    if isinstance(maximum, dict):
        return maximum
    devices = []
    for index in range(maximum):
        mig = _query(nvml, nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index)
        if isinstance(mig, dict):
            continue
        memory = _query(nvml, nvml.nvmlDeviceGetMemoryInfo, mig)
        devices.append({
            "index": index,
            "uuid": _text(nvml.nvmlDeviceGetUUID(mig)),
            "name": _text(_query(nvml, nvml.nvmlDeviceGetName, mig)),
            "isMigDeviceHandle": int(bool(nvml.nvmlDeviceIsMigDeviceHandle(mig))),
            "gpuInstanceId": _query(nvml, nvml.nvmlDeviceGetGpuInstanceId, mig),
            "computeInstanceId": _query(nvml, nvml.nvmlDeviceGetComputeInstanceId, mig),
            "memoryTotal": memory if isinstance(memory, dict) else memory.total,
        })
    return devices


def _device(nvml, index: int) -> Dict[str, Any]:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = nvml.nvmlDeviceGetPciInfo(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    affinity = _query(nvml, nvml.nvmlDeviceGetCpuAffinity, handle, CPU_SET_WORDS)
    numa = getattr(nvml, "nvmlDeviceGetNumaNodeId", None)
    entry = {
        "index": index,
        "name": _text(nvml.nvmlDeviceGetName(handle)),
        "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        "minorNumber": _query(nvml, nvml.nvmlDeviceGetMinorNumber, handle),
        "pci": _struct(pci, ("busId", "busIdLegacy", "domain", "bus", "device", "pciDeviceId", "pciSubSystemId")),
        "memory": {"total": memory.total, "free": memory.free, "used": memory.used},
        "architecture": _query(nvml, nvml.nvmlDeviceGetArchitecture, handle),
        "cudaComputeCapability": _query(nvml, nvml.nvmlDeviceGetCudaComputeCapability, handle),
        "cpuAffinity": affinity if isinstance(affinity, dict) else _cpulist(affinity),
        "numaNodeId": _query(nvml, numa, handle) if numa else {"error": "not in this pynvml"},
        "migMode": _query(nvml, nvml.nvmlDeviceGetMigMode, handle),
        "maxMigDeviceCount": _query(nvml, nvml.nvmlDeviceGetMaxMigDeviceCount, handle),
        "isMigDeviceHandle": int(bool(nvml.nvmlDeviceIsMigDeviceHandle(handle))),
        "processes": [{"pid": p.pid, "usedGpuMemory": p.usedGpuMemory, "gpuInstanceId": p.gpuInstanceId,
                       "computeInstanceId": p.computeInstanceId}
                      for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)],
    }
    if isinstance(entry["cudaComputeCapability"], tuple):
        entry["cudaComputeCapability"] = list(entry["cudaComputeCapability"])
    mode = entry["migMode"]
    if isinstance(mode, list) and mode[0] == nvml.NVML_DEVICE_MIG_ENABLE:
        entry["gpuInstanceProfiles"] = _gi_profiles(nvml, handle)
        entry["migDevices"] = _mig_devices(nvml, handle)
    return entry


def survey(nvml) -> Dict[str, Any]:
    """All read-only facts the simulator models, from the ``nvml`` module given."""
    nvml.nvmlInit()
    try:
        count = nvml.nvmlDeviceGetCount()
        return {
            "driverVersion": _text(nvml.nvmlSystemGetDriverVersion()),
            "nvmlVersion": _text(nvml.nvmlSystemGetNVMLVersion()),
            "cudaDriverVersion": _query(nvml, nvml.nvmlSystemGetCudaDriverVersion),
            "deviceCount": count,
            "devices": [_device(nvml, index) for index in range(count)],
        }
    finally:
        nvml.nvmlShutdown()


def shape(value: Any) -> Any:
    """Keys and value types of a survey, for comparing structure without values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [shape(item) for item in value[:1]]
    return type(value).__name__


def main(argv=None) -> int:
    """Print the survey (``--shape`` prints only its structure)."""
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("NVMLSIM_PARITY_USE_SIM"):
        from nvmlsim import api as pynvml  # pylint: disable=import-outside-toplevel
    else:
        import pynvml  # pylint: disable=import-outside-toplevel
    try:
        result = survey(pynvml)
    except pynvml.NVMLError as exc:
        sys.stderr.write("parity: NVML failed: %s (%s)\n" % (exc, _error_name(pynvml, exc)))
        return 1
    print(json.dumps(shape(result) if "--shape" in argv else result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
