"""The simulator behind the simulated ``libnvidia-ml.so.1`` (``nvml_sim/libnvml/``).

The C library starts this program at the first ``nvmlInit`` of a process
(``python3 -m nvmlsim.libserver``, its stdin and stdout two pipes) and stops
it at the last ``nvmlShutdown``.  Each NVML call of the process becomes one
request line; the answer is computed by the simulator's own NVML API
(:mod:`nvmlsim.api`) -- the one implementation of MIG semantics, placements, processes,
ECC and injected faults -- on a fresh read of the node's state file, so an
``nvmlsim`` command is visible to every client at its next call.

Wire format, one line each way, fields separated by TAB, ``\\``, TAB and
newline escaped as ``\\\\``, ``\\t``, ``\\n``::

    request:  NAME <TAB> ARG ...            (handles as keys: gpu|UUID, mig|UUID|GI|CI, gi|UUID|GI, ci|UUID|GI|CI)
    answer:   RC <TAB> FIELD ...            (RC the nvmlReturn_t; FIELDs only when RC is 0)

``HANDLERS`` lists each call, its arguments and the fields it answers, in
the order the C side reads them.
"""
from __future__ import annotations

import ctypes
import os
import sys
import traceback
from typing import Callable, Dict, List

from nvmlsim import api as sim

UNKNOWN = 999
KINDS = {"gpu": sim.c_nvmlDevice_t, "mig": sim.c_nvmlDevice_t, "gi": sim.c_nvmlGpuInstance_t,
         "ci": sim.c_nvmlComputeInstance_t}


class BadRequest(Exception):
    """A request the C side should never send: answered INVALID_ARGUMENT, logged with NVMLSIM_DEBUG."""


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def handle(key: str):
    """The simulator's handle for a key the C side holds."""
    parts = key.split("|")
    if parts[0] not in KINDS or len(parts) != {"gpu": 2, "mig": 4, "gi": 3, "ci": 4}[parts[0]]:
        raise BadRequest("not a handle key: %r" % key)
    ident = tuple([parts[0], parts[1]] + [int(p) for p in parts[2:]])
    return sim._handles.make(KINDS[parts[0]], ident)  # pylint: disable=protected-access


def key_of(value) -> str:
    """The key of a handle the simulator returned."""
    ident = sim._handles.key(value, tuple(KINDS))  # pylint: disable=protected-access
    return "|".join(str(part) for part in ident)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest("not a number: %r" % text) from None


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _count_list(func, *args, kind=None) -> List:
    """Call an NVML list getter with a 64-entry array; the entries it filled."""
    count = ctypes.c_uint(0)
    array = (kind * 64)()
    func(*args, array, ctypes.byref(count))
    return [array[i] for i in range(count.value)]


# ----------------------------------------------------------------- handlers
# Each takes the request's argument strings and returns the answer's fields.

def _gi_profile_fields(info) -> List:
    return [info.id, info.isP2pSupported, info.sliceCount, info.instanceCount, info.multiprocessorCount,
            info.copyEngineCount, info.decoderCount, info.encoderCount, info.jpegCount, info.ofaCount,
            info.memorySizeMB, _s(info.name)]


def _gi_profile(a):
    return _gi_profile_fields(sim.nvmlDeviceGetGpuInstanceProfileInfo(handle(a[0]), _int(a[1]), version=2))


def _gi_profile_by_id(a):
    return _gi_profile_fields(sim.nvmlDeviceGetGpuInstanceProfileInfoById(handle(a[0]), _int(a[1])))


def _ci_profile(a):
    info = sim.nvmlGpuInstanceGetComputeInstanceProfileInfo(handle(a[0]), _int(a[1]), _int(a[2]), version=2)
    return [info.id, info.sliceCount, info.instanceCount, info.multiprocessorCount, info.sharedCopyEngineCount,
            info.sharedDecoderCount, info.sharedEncoderCount, info.sharedJpegCount, info.sharedOfaCount, _s(info.name)]


def _placements(func, placement_type):
    """A placement query (GPU or compute instances): the count, then start and size of each."""
    def run(a):
        places = _count_list(func, handle(a[0]), _int(a[1]), kind=placement_type)
        return [len(places)] + [field for p in places for field in (p.start, p.size)]
    return run


def _create_placed(func, placement_type):
    """nvml...WithPlacement(handle, profileId, &placement): the new instance's handle."""
    def run(a):
        if len(a) != 4:
            raise BadRequest("%s takes 4 arguments, got %d" % (func.__name__, len(a)))
        placement = placement_type()
        placement.start, placement.size = _int(a[2]), _int(a[3])
        return [key_of(func(handle(a[0]), _int(a[1]), ctypes.byref(placement)))]
    return run


def _gis(a):
    found = _count_list(sim.nvmlDeviceGetGpuInstances, handle(a[0]), _int(a[1]), kind=sim.c_nvmlGpuInstance_t)
    return [len(found)] + [key_of(h) for h in found]


def _cis(a):
    found = _count_list(sim.nvmlGpuInstanceGetComputeInstances, handle(a[0]), _int(a[1]), kind=sim.c_nvmlComputeInstance_t)
    return [len(found)] + [key_of(h) for h in found]


def _gi_info(a):
    info = sim.nvmlGpuInstanceGetInfo(handle(a[0]))
    return [key_of(info.device), info.id, info.profileId, info.placement.start, info.placement.size]


def _ci_info(a):
    info = sim.nvmlComputeInstanceGetInfo(handle(a[0]))
    return [key_of(info.device), key_of(info.gpuInstance), info.id, info.profileId, info.placement.start,
            info.placement.size]


def _processes(a, getter=None):
    procs = (getter or sim.nvmlDeviceGetComputeRunningProcesses)(handle(a[0]))
    fields = [len(procs)]
    for proc in procs:
        used = proc.usedGpuMemory
        fields += [proc.pid, (1 << 64) - 1 if used is None else used, proc.gpuInstanceId, proc.computeInstanceId]
    return fields


def _pci(a):
    info = sim.nvmlDeviceGetPciInfo(handle(a[0]))
    return [_s(info.busIdLegacy), info.domain, info.bus, info.device, info.pciDeviceId, info.pciSubSystemId, _s(info.busId)]


def _nvlink_remote_pci(a):
    info = sim.nvmlDeviceGetNvLinkRemotePciInfo(handle(a[0]), int(a[1]))
    return [_s(info.busIdLegacy), info.domain, info.bus, info.device, info.pciDeviceId, info.pciSubSystemId, _s(info.busId)]


def _memory(a):
    info = sim.nvmlDeviceGetMemoryInfo(handle(a[0]), version=sim.nvmlMemory_v2)
    return [info.total, info.reserved, info.free, info.used]


def _attributes(a):
    attrs = sim.nvmlDeviceGetAttributes(handle(a[0]))
    return [attrs.multiprocessorCount, attrs.sharedCopyEngineCount, attrs.sharedDecoderCount,
            attrs.sharedEncoderCount, attrs.sharedJpegCount, attrs.sharedOfaCount, attrs.gpuInstanceSliceCount,
            attrs.computeInstanceSliceCount, attrs.memorySizeMB]


def _fabric(a):
    info = sim.c_nvmlGpuFabricInfo_v3_t()
    sim.nvmlDeviceGetGpuFabricInfoV(handle(a[0]), ctypes.byref(info))
    return [info.state, info.status, info.cliqueId, info.healthMask, info.healthSummary] + list(info.clusterUuid)


def _one(func: Callable, *kinds) -> Callable:
    """A handler for a call with handle/int arguments and one plain value."""
    def run(a):
        if len(a) != len(kinds):
            raise BadRequest("%s takes %d arguments, got %d" % (func.__name__, len(kinds), len(a)))
        args = [handle(x) if k == "h" else (_int(x) if k == "i" else unescape(x)) for k, x in zip(kinds, a)]
        value = func(*args)
        if isinstance(value, ctypes.Array):
            value = list(value)
        if isinstance(value, (list, tuple)):
            return [key_of(v) if isinstance(v, ctypes._Pointer) else _s(v) for v in value]  # pylint: disable=protected-access
        if isinstance(value, ctypes._Pointer):  # pylint: disable=protected-access
            return [key_of(value)]
        if hasattr(value, "value") and not isinstance(value, (int, str, bytes)):
            value = value.value
        return [_s(value)]
    return run


HANDLERS: Dict[str, Callable] = {
    "nvmlSystemGetDriverVersion": _one(sim.nvmlSystemGetDriverVersion),
    "nvmlSystemGetNVMLVersion": _one(sim.nvmlSystemGetNVMLVersion),
    "nvmlSystemGetCudaDriverVersion": _one(sim.nvmlSystemGetCudaDriverVersion),
    "nvmlSystemGetProcessName": _one(sim.nvmlSystemGetProcessName, "i"),
    "nvmlDeviceGetCount": _one(sim.nvmlDeviceGetCount),
    "nvmlDeviceGetHandleByIndex": _one(sim.nvmlDeviceGetHandleByIndex, "i"),
    "nvmlDeviceGetHandleByUUID": _one(sim.nvmlDeviceGetHandleByUUID, "s"),
    "nvmlDeviceGetHandleByPciBusId": _one(sim.nvmlDeviceGetHandleByPciBusId, "s"),
    "nvmlDeviceGetHandleBySerial": _one(sim.nvmlDeviceGetHandleBySerial, "s"),
    "nvmlDeviceGetName": _one(sim.nvmlDeviceGetName, "h"),
    "nvmlDeviceGetUUID": _one(sim.nvmlDeviceGetUUID, "h"),
    "nvmlDeviceGetSerial": _one(sim.nvmlDeviceGetSerial, "h"),
    "nvmlDeviceGetIndex": _one(sim.nvmlDeviceGetIndex, "h"),
    "nvmlDeviceGetMinorNumber": _one(sim.nvmlDeviceGetMinorNumber, "h"),
    "nvmlDeviceGetPciInfo": _pci,
    "nvmlDeviceGetMemoryInfo": _memory,
    "nvmlDeviceGetArchitecture": _one(sim.nvmlDeviceGetArchitecture, "h"),
    "nvmlDeviceGetCudaComputeCapability": _one(sim.nvmlDeviceGetCudaComputeCapability, "h"),
    "nvmlDeviceGetCpuAffinity": _one(sim.nvmlDeviceGetCpuAffinity, "h", "i"),
    "nvmlDeviceGetNumaNodeId": _one(sim.nvmlDeviceGetNumaNodeId, "h"),
    "nvmlDeviceGetComputeRunningProcesses": _processes,
    # (a data-center GPU runs no graphics contexts: the real library answers SUCCESS with none, which
    # slurmstepd's GPU accounting asks for every GPU of a job)
    "nvmlDeviceGetGraphicsRunningProcesses": lambda a: _processes(a, sim.nvmlDeviceGetGraphicsRunningProcesses_v3),
    "nvmlDeviceGetTotalEccErrors": _one(sim.nvmlDeviceGetTotalEccErrors, "h", "i", "i"),
    "nvmlDeviceGetRetiredPagesPendingStatus": _one(sim.nvmlDeviceGetRetiredPagesPendingStatus, "h"),
    "nvmlDeviceGetRemappedRows": _one(sim.nvmlDeviceGetRemappedRows, "h"),
    "nvmlDeviceGetPersistenceMode": _one(sim.nvmlDeviceGetPersistenceMode, "h"),
    "nvmlDeviceGetCurrPcieLinkGeneration": _one(sim.nvmlDeviceGetCurrPcieLinkGeneration, "h"),
    "nvmlDeviceGetCurrPcieLinkWidth": _one(sim.nvmlDeviceGetCurrPcieLinkWidth, "h"),
    "nvmlDeviceGetMaxPcieLinkGeneration": _one(sim.nvmlDeviceGetMaxPcieLinkGeneration, "h"),
    "nvmlDeviceGetMaxPcieLinkWidth": _one(sim.nvmlDeviceGetMaxPcieLinkWidth, "h"),
    "nvmlDeviceGetGpuMaxPcieLinkGeneration": _one(sim.nvmlDeviceGetGpuMaxPcieLinkGeneration, "h"),
    "nvmlDeviceGetCurrentClocksEventReasons": _one(sim.nvmlDeviceGetCurrentClocksEventReasons, "h"),
    "nvmlDeviceGetCurrentClocksThrottleReasons": _one(sim.nvmlDeviceGetCurrentClocksThrottleReasons, "h"),
    "nvmlDeviceGetSupportedClocksEventReasons": _one(sim.nvmlDeviceGetSupportedClocksEventReasons, "h"),
    "nvmlDeviceGetSupportedClocksThrottleReasons": _one(sim.nvmlDeviceGetSupportedClocksThrottleReasons, "h"),
    "nvmlDeviceGetTemperature": _one(sim.nvmlDeviceGetTemperature, "h", "i"),
    "nvmlDeviceGetTemperatureThreshold": _one(sim.nvmlDeviceGetTemperatureThreshold, "h", "i"),
    "nvmlDeviceGetNvLinkState": _one(sim.nvmlDeviceGetNvLinkState, "h", "i"),
    "nvmlDeviceGetNvLinkVersion": _one(sim.nvmlDeviceGetNvLinkVersion, "h", "i"),
    "nvmlDeviceGetNvLinkErrorCounter": _one(sim.nvmlDeviceGetNvLinkErrorCounter, "h", "i", "i"),
    "nvmlDeviceGetNvLinkRemotePciInfo": _nvlink_remote_pci,
    "nvmlDeviceGetGpuFabricInfo": _fabric,
    "nvmlDeviceGetMigMode": _one(sim.nvmlDeviceGetMigMode, "h"),
    "nvmlDeviceSetMigMode": _one(sim.nvmlDeviceSetMigMode, "h", "i"),
    "nvmlDeviceIsMigDeviceHandle": _one(sim.nvmlDeviceIsMigDeviceHandle, "h"),
    "nvmlDeviceGetGpuInstanceId": _one(sim.nvmlDeviceGetGpuInstanceId, "h"),
    "nvmlDeviceGetComputeInstanceId": _one(sim.nvmlDeviceGetComputeInstanceId, "h"),
    "nvmlDeviceGetMaxMigDeviceCount": _one(sim.nvmlDeviceGetMaxMigDeviceCount, "h"),
    "nvmlDeviceGetMigDeviceHandleByIndex": _one(sim.nvmlDeviceGetMigDeviceHandleByIndex, "h", "i"),
    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle": _one(sim.nvmlDeviceGetDeviceHandleFromMigDeviceHandle, "h"),
    "nvmlDeviceGetAttributes": _attributes,
    "nvmlDeviceGetGpuInstanceProfileInfo": _gi_profile,
    "nvmlDeviceGetGpuInstanceProfileInfoById": _gi_profile_by_id,
    "nvmlDeviceGetGpuInstanceRemainingCapacity": _one(sim.nvmlDeviceGetGpuInstanceRemainingCapacity, "h", "i"),
    "nvmlDeviceGetGpuInstancePossiblePlacements": _placements(sim.nvmlDeviceGetGpuInstancePossiblePlacements,
                                                              sim.c_nvmlGpuInstancePlacement_t),
    "nvmlDeviceGetGpuInstances": _gis,
    "nvmlDeviceGetGpuInstanceById": _one(sim.nvmlDeviceGetGpuInstanceById, "h", "i"),
    "nvmlGpuInstanceGetInfo": _gi_info,
    "nvmlGpuInstanceGetComputeInstanceProfileInfo": _ci_profile,
    "nvmlGpuInstanceGetComputeInstanceRemainingCapacity": _one(
        sim.nvmlGpuInstanceGetComputeInstanceRemainingCapacity, "h", "i"),
    "nvmlGpuInstanceGetComputeInstances": _cis,
    "nvmlGpuInstanceGetComputeInstanceById": _one(sim.nvmlGpuInstanceGetComputeInstanceById, "h", "i"),
    "nvmlComputeInstanceGetInfo": _ci_info,
    "nvmlDeviceCreateGpuInstance": _one(sim.nvmlDeviceCreateGpuInstance, "h", "i"),
    "nvmlDeviceCreateGpuInstanceWithPlacement": _create_placed(sim.nvmlDeviceCreateGpuInstanceWithPlacement,
                                                               sim.c_nvmlGpuInstancePlacement_t),
    "nvmlGpuInstanceCreateComputeInstanceWithPlacement": _create_placed(sim.nvmlGpuInstanceCreateComputeInstanceWithPlacement,
                                                                        sim.c_nvmlComputeInstancePlacement_t),
    "nvmlGpuInstanceGetComputeInstancePossiblePlacements": _placements(sim.nvmlGpuInstanceGetComputeInstancePossiblePlacements,
                                                                       sim.c_nvmlComputeInstancePlacement_t),
    "nvmlGpuInstanceDestroy": _one(sim.nvmlGpuInstanceDestroy, "h"),
    "nvmlGpuInstanceCreateComputeInstance": _one(sim.nvmlGpuInstanceCreateComputeInstance, "h", "i"),
    "nvmlComputeInstanceDestroy": _one(sim.nvmlComputeInstanceDestroy, "h"),
}


def answer(line: str) -> str:
    """The answer line for one request line (without the newline)."""
    fields = line.split("\t")
    name, args = fields[0], [unescape(f) for f in fields[1:]]
    handler = HANDLERS.get(name)
    try:
        if handler is None:
            raise BadRequest("no handler for %s" % name)
        values = handler(args)
    except sim.NVMLError as exc:
        return str(exc.value)
    except BadRequest as exc:
        _debug("bad request %r: %s" % (line, exc))
        return str(sim.NVML_ERROR_INVALID_ARGUMENT)
    except Exception:  # pylint: disable=broad-except  -- one broken call must not end the process's NVML
        _debug("call %r failed:\n%s" % (line, traceback.format_exc()))
        return str(UNKNOWN)
    return "\t".join(["0"] + [escape(str(v)) for v in values])


def _debug(message: str) -> None:
    if os.environ.get("NVMLSIM_DEBUG"):
        sys.stderr.write("nvmlsim libserver: %s\n" % message)
        sys.stderr.flush()


def main() -> int:
    """Serve requests on stdin/stdout until stdin closes. The first is nvmlInit, the last nvmlShutdown."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    initialised = False
    for raw in stdin:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if line == "nvmlInit":
            try:
                sim.nvmlInit()
                initialised = True
                reply = "0"
            except sim.NVMLError as exc:
                reply = str(exc.value)
        elif line == "nvmlShutdown":
            if initialised:
                sim.nvmlShutdown()
                initialised = False
            reply = "0"
        else:
            reply = answer(line)
        stdout.write((reply + "\n").encode("utf-8"))
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
