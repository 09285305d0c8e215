#!/usr/bin/env python3
"""Read-only record of a real GPU node's NVML answers, for the simulator to be checked against.

    python3 nvml_sim/real_probe.py OUTDIR

Run it on a node with a real NVIDIA driver and nvidia-ml-py (never on a
simulated node: it would record the simulator).  It only reads: NVML getters,
``nvidia-smi`` queries (``-q``, ``-L``, ``--query-*``, ``mig -lgip``/``-lgipp``/
``-lgi``, ``topo -m``) and files under /proc and /dev.  It never changes MIG
mode, never creates or destroys MIG instances, never resets the GPU.

It writes into OUTDIR:

- ``parity.json``   the survey of nvmlsim.parity (what the simulator models);
- ``calls.json``    one entry per NVML call tried here: its arguments and
                    its value, or the NVML error it returned (the real
                    driver's error codes for MIG calls on a GPU with MIG
                    off, bad indices, bad UUIDs, before nvmlInit, ...), and
                    ``nvmlErrorString`` for every return code;
- ``symbols.txt``   the entry points libnvidia-ml.so.1 exports (read from its
                    ELF dynamic symbol table);
- ``smi.txt``       each nvidia-smi command, its exit status and its output;
- ``smi-q.xml``     ``nvidia-smi -q -x``;
- ``env.txt``       driver files, device nodes, nvidia-ml-py's version;
- with ``--with-process``: ``processes.json`` and ``smi-processes.txt``, what
  NVML and nvidia-smi show while a CUDA process of the probe's own (PyTorch,
  1 GiB on GPU 0, killed after) runs -- it uses the GPU, it changes nothing.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "src"))   # nvmlsim.parity; the real pynvml stays first

if "--allow-sim" in sys.argv:   # the simulator's own Python API, without the C library (its tests)
    from nvmlsim import api as pynvml  # noqa: E402  pylint: disable=wrong-import-position
else:
    import pynvml  # noqa: E402  pylint: disable=wrong-import-position


def error_name(exc) -> str:
    for name in dir(pynvml):
        if name.startswith("NVML_ERROR_") and getattr(pynvml, name) == getattr(exc, "value", None):
            return name
    return "NVML_ERROR_%s" % getattr(exc, "value", "?")


def plain(value):
    """A JSON-able copy of an NVML answer (structures as dicts, arrays as lists)."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, ctypes.Structure):
        return {name: plain(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array):
        return [plain(item) for item in value]
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (int, float, str)) or value is None:
        return value
    if hasattr(value, "value"):
        return plain(value.value)
    if type(value).__name__ == "nvmlFriendlyObject":   # nvidia-ml-py's wrapper of a structure
        return {name: plain(item) for name, item in vars(value).items()}
    return repr(value)


CALLS = []


def argument(value):
    """How an argument is recorded: handles and out-buffers by kind, the rest as values."""
    if isinstance(value, ctypes._Pointer):  # pylint: disable=protected-access
        return "<handle>"
    if isinstance(value, ctypes.Array):
        return "<array of %d>" % len(value)
    if isinstance(value, (bytes, str, int, float)):
        return plain(value)
    return "<%s>" % type(value).__name__


def call(name, *args, label=None):
    """Call pynvml.NAME(*args); record the value or the error; return the value or None."""
    entry = {"call": label or name, "args": [argument(a) for a in args]}
    func = getattr(pynvml, name, None)
    if func is None:
        entry["error"] = "not in this nvidia-ml-py"
        CALLS.append(entry)
        return None
    try:
        value = func(*args)
    except pynvml.NVMLError as exc:
        entry["error"] = error_name(exc)
        entry["message"] = str(exc)
        CALLS.append(entry)
        return None
    except Exception as exc:  # pylint: disable=broad-except  -- recorded, not hidden
        entry["exception"] = "%s: %s" % (type(exc).__name__, exc)
        CALLS.append(entry)
        return None
    entry["value"] = plain(value)
    CALLS.append(entry)
    return value


def raw_library_calls(out):
    """Behaviour of the C library itself, below nvidia-ml-py: before nvmlInit, error strings."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as exc:
        out["raw"] = {"error": str(exc)}
        return
    count = ctypes.c_uint(0)
    rc = {}
    rc["nvmlDeviceGetCount_v2 before nvmlInit"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
    rc["nvmlShutdown before nvmlInit"] = lib.nvmlShutdown()
    lib.nvmlErrorString.restype = ctypes.c_char_p
    out["errorStrings"] = {str(code): lib.nvmlErrorString(code).decode() for code in list(range(0, 32)) + [999, 12345]}
    rc["nvmlInit_v2"] = lib.nvmlInit_v2()
    rc["nvmlInit_v2 again"] = lib.nvmlInit_v2()
    rc["nvmlShutdown 1"] = lib.nvmlShutdown()
    rc["nvmlDeviceGetCount_v2 after one of two shutdowns"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
    rc["nvmlShutdown 2"] = lib.nvmlShutdown()
    rc["nvmlDeviceGetCount_v2 after both shutdowns"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
    rc["nvmlShutdown 3 (one too many)"] = lib.nvmlShutdown()
    rc["nvmlInit (v1 name)"] = lib.nvmlInit() if hasattr(lib, "nvmlInit") else "no such symbol"
    handle = ctypes.c_void_p()
    rc["nvmlDeviceGetHandleByIndex_v2(0)"] = lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
    rc["nvmlDeviceGetHandleByIndex_v2(0, NULL)"] = lib.nvmlDeviceGetHandleByIndex_v2(0, None)
    rc["nvmlDeviceGetCount_v2(NULL)"] = lib.nvmlDeviceGetCount_v2(None)
    name = ctypes.create_string_buffer(4)
    rc["nvmlDeviceGetName(buffer of 4)"] = lib.nvmlDeviceGetName(handle, name, 4)
    rc["nvmlDeviceGetName(buffer of 4) wrote"] = name.raw.decode(errors="replace")
    uuid = ctypes.create_string_buffer(96)
    rc["nvmlDeviceGetUUID(buffer of 10)"] = lib.nvmlDeviceGetUUID(handle, uuid, 10)
    rc["nvmlDeviceGetHandleByIndex_v2 with a NULL device pointer"] = rc.pop("nvmlDeviceGetHandleByIndex_v2(0, NULL)")
    rc["nvmlShutdown"] = lib.nvmlShutdown()
    out["raw"] = rc


def elf_symbols(path):
    """Defined dynamic symbols of an ELF64 shared object (no binutils needed)."""
    with open(path, "rb") as handle:
        data = handle.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for sec in sections:
        if sec[1] != 11:   # SHT_DYNSYM
            continue
        strtab = sections[sec[6]]
        for offset in range(sec[4], sec[4] + sec[5], sec[9]):
            st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, offset)
            if st_shndx == 0 or st_info >> 4 == 0:   # undefined, or local
                continue
            start = strtab[4] + st_name
            names.append(data[start:data.index(b"\0", start)].decode())
    return sorted(set(names))


def library_path():
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libnvidia-ml.so" in line:
                return line.split()[-1]
    return None


def device_calls(index):
    handle = call("nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return
    uuid = call("nvmlDeviceGetUUID", handle)
    pci = call("nvmlDeviceGetPciInfo", handle)
    for name in ("nvmlDeviceGetName", "nvmlDeviceGetSerial", "nvmlDeviceGetBoardPartNumber", "nvmlDeviceGetVbiosVersion",
                 "nvmlDeviceGetBoardId", "nvmlDeviceGetIndex", "nvmlDeviceGetMinorNumber", "nvmlDeviceGetBrand",
                 "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceIsMigDeviceHandle",
                 "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
                 "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "nvmlDeviceGetAttributes",
                 "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetComputeMode", "nvmlDeviceGetEccMode",
                 "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetRemappedRows",
                 "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetArchitecture",
                 "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetNumaNodeId",
                 "nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
                 "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
                 "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetCurrentClocksThrottleReasons",
                 "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons",
                 "nvmlDeviceGetPowerUsage", "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPerformanceState",
                 "nvmlDeviceGetSupportedEventTypes", "nvmlDeviceGetDriverModel",
                 "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses",
                 "nvmlDeviceGetMPSComputeRunningProcesses", "nvmlDeviceGetInforomImageVersion",
                 "nvmlDeviceGetDisplayMode", "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetMemoryBusWidth",
                 "nvmlDeviceGetVirtualizationMode", "nvmlDeviceGetHostVgpuMode", "nvmlDeviceGetBusType",
                 "nvmlDeviceGetIrqNum", "nvmlDeviceGetPcieSpeed", "nvmlDeviceGetFanSpeed",
                 "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTotalEnergyConsumption"):
        call(name, handle)
    call("nvmlDeviceGetTemperature", handle, 0)
    call("nvmlDeviceGetMemoryInfo", handle, getattr(pynvml, "nvmlMemory_v2", 0), label="nvmlDeviceGetMemoryInfo_v2")
    for struct_name, func in (("c_nvmlGpuFabricInfo_t", "nvmlDeviceGetGpuFabricInfo"),
                              ("c_nvmlGpuFabricInfo_v2_t", "nvmlDeviceGetGpuFabricInfoV"),
                              ("c_nvmlGpuFabricInfo_v3_t", "nvmlDeviceGetGpuFabricInfoV"),
                              ("c_nvmlGpuFabricInfo_v4_t", "nvmlDeviceGetGpuFabricInfo_v4")):
        cls = getattr(pynvml, struct_name, None)
        if cls is None:
            continue
        info = cls()
        call(func, handle, ctypes.byref(info), label="%s(%s)" % (func, struct_name))
        if "value" in CALLS[-1]:   # the function fills the structure and returns nothing of use
            CALLS[-1]["value"] = plain(info)
    call("nvmlDeviceGetPcieReplayCounter", handle)
    if hasattr(pynvml, "c_nvmlRowRemapperHistogramValues_t"):
        call("nvmlDeviceGetRowRemapperHistogram", handle)
    for threshold in range(0, 8):
        call("nvmlDeviceGetTemperatureThreshold", handle, threshold)
    for error_type in (0, 1):
        for counter in (0, 1):
            call("nvmlDeviceGetTotalEccErrors", handle, error_type, counter)
            for location in range(0, 6):
                call("nvmlDeviceGetMemoryErrorCounter", handle, error_type, counter, location)
    for cause in (0, 1):
        call("nvmlDeviceGetRetiredPages", handle, cause)
    call("nvmlDeviceGetCpuAffinity", handle, 16)
    call("nvmlDeviceGetMemoryAffinity", handle, 4, 0)
    for link in range(0, 19):
        call("nvmlDeviceGetNvLinkState", handle, link)
    for link in (0, 1, 17, 18):
        call("nvmlDeviceGetNvLinkVersion", handle, link)
        call("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        for counter in range(0, 4):
            call("nvmlDeviceGetNvLinkErrorCounter", handle, link, counter)
    # MIG calls on this GPU as it is (MIG off on a lent machine): the driver's own error codes
    for enum in list(range(0, 10)) + [99]:
        call("nvmlDeviceGetGpuInstanceProfileInfo", handle, enum)
        call("nvmlDeviceGetGpuInstanceProfileInfo", handle, enum, 1, label="nvmlDeviceGetGpuInstanceProfileInfo(v1)")
        call("nvmlDeviceGetGpuInstanceProfileInfo", handle, enum, 3, label="nvmlDeviceGetGpuInstanceProfileInfo(v3)")
    for profile_id in (0, 19, 99):
        call("nvmlDeviceGetGpuInstanceProfileInfoById", handle, profile_id)
    for profile_id in (0, 5, 9, 14, 15, 19, 20, 99):
        count = ctypes.c_uint()
        placements = (pynvml.c_nvmlGpuInstancePlacement_t * 16)()
        call("nvmlDeviceGetGpuInstancePossiblePlacements", handle, profile_id, placements, ctypes.byref(count),
             label="nvmlDeviceGetGpuInstancePossiblePlacements(%d)" % profile_id)
        call("nvmlDeviceGetGpuInstanceRemainingCapacity", handle, profile_id)
        array = (pynvml.c_nvmlGpuInstance_t * 16)()
        call("nvmlDeviceGetGpuInstances", handle, profile_id, array, ctypes.byref(count),
             label="nvmlDeviceGetGpuInstances(%d)" % profile_id)
    call("nvmlDeviceGetGpuInstanceById", handle, 1)
    for index in (0, 6, 7):
        call("nvmlDeviceGetMigDeviceHandleByIndex", handle, index)
    # lookups that fail
    call("nvmlDeviceGetHandleByIndex", 99)
    call("nvmlDeviceGetHandleByUUID", "GPU-00000000-0000-0000-0000-000000000000")
    call("nvmlDeviceGetHandleByUUID", "not-a-uuid")
    call("nvmlDeviceGetHandleByUUID", "MIG-00000000-0000-0000-0000-000000000000")
    if uuid:
        call("nvmlDeviceGetHandleByUUID", uuid)
    if pci:
        call("nvmlDeviceGetHandleByPciBusId", pci.busId)
        call("nvmlDeviceGetHandleByPciBusId", pci.busIdLegacy)
    call("nvmlDeviceGetHandleByPciBusId", "0000:FF:00.0")
    call("nvmlDeviceGetHandleByPciBusId", "nonsense")
    call("nvmlDeviceGetHandleBySerial", "0000000000000")


def process_probe(outdir):
    """With a CUDA process of ours on GPU 0 (``--with-process``): what NVML and nvidia-smi show of it."""
    code = ("import time, torch; x = torch.ones(1 << 28, device='cuda'); torch.cuda.synchronize(); "
            "print('ready', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        line = proc.stdout.readline().decode(errors="replace")
        record = {"process": {"pid": proc.pid, "started": line.strip()}}
        del CALLS[:]
        call("nvmlInit")
        handle = call("nvmlDeviceGetHandleByIndex", 0)
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses",
                     "nvmlDeviceGetMPSComputeRunningProcesses", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUtilizationRates"):
            call(name, handle)
        call("nvmlSystemGetProcessName", proc.pid)
        call("nvmlSystemGetProcessName", 999999)
        call("nvmlShutdown")
        record["calls"] = list(CALLS)
        with open(os.path.join(outdir, "processes.json"), "w") as handle_out:
            json.dump(record, handle_out, indent=1, sort_keys=True)
        with open(os.path.join(outdir, "smi-processes.txt"), "w") as out:
            for args in (["--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_name,gpu_bus_id,gpu_serial",
                          "--format=csv"],
                         ["--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,nounits"],
                         ["--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader,nounits"],
                         [], ["-q", "-d", "PIDS"], ["--query-gpu=index,memory.used,utilization.gpu", "--format=csv"]):
                run(["nvidia-smi"] + args, out)
    finally:
        proc.kill()
        proc.wait()


def run(argv, out):
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, check=False)
        out.write("### %s\n### rc=%d\n%s" % (" ".join(argv), proc.returncode, proc.stdout.decode(errors="replace")))
        if proc.stderr:
            out.write("### stderr\n%s" % proc.stderr.decode(errors="replace"))
    except (OSError, subprocess.TimeoutExpired) as exc:
        out.write("### %s\n### failed: %s\n" % (" ".join(argv), exc))
    out.write("\n")


SMI_QUERY = ("index,count,name,uuid,serial,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,"
             "memory.free,mig.mode.current,mig.mode.pending,ecc.errors.corrected.volatile.total,"
             "ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,"
             "ecc.errors.uncorrected.aggregate.total,retired_pages.pending,persistence_mode,pcie.link.gen.max,"
             "pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current,temperature.gpu,"
             "clocks_event_reasons.active,remapped_rows.pending,remapped_rows.failure")


def main(argv):
    args = [arg for arg in argv[1:] if arg not in ("--allow-sim", "--with-process")]
    outdir = args[0] if args else "."
    os.makedirs(outdir, exist_ok=True)
    record = {"nvidia-ml-py": getattr(pynvml, "__version__", None), "pynvml_file": pynvml.__file__}
    raw_library_calls(record)
    call("nvmlInit")
    for name in ("nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion", "nvmlSystemGetCudaDriverVersion",
                 "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount"):
        call(name)
    count = pynvml.nvmlDeviceGetCount()
    for index in range(count):
        device_calls(index)
    call("nvmlShutdown")
    record["calls"] = CALLS
    with open(os.path.join(outdir, "calls.json"), "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)

    from nvmlsim import parity  # pylint: disable=import-outside-toplevel
    with open(os.path.join(outdir, "parity.json"), "w") as handle:
        json.dump(parity.survey(pynvml), handle, indent=1, sort_keys=True)

    path = library_path()
    with open(os.path.join(outdir, "symbols.txt"), "w") as handle:
        handle.write("# %s\n" % path)
        handle.write("\n".join(elf_symbols(path)) + "\n" if path else "")

    with open(os.path.join(outdir, "smi.txt"), "w") as out:
        for args in (["-L"], [], ["-q"], ["--query-gpu=" + SMI_QUERY, "--format=csv"],
                     ["--query-gpu=" + SMI_QUERY, "--format=csv,noheader,nounits"],
                     ["--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_name,gpu_bus_id,gpu_serial",
                      "--format=csv"],
                     ["--query-gpu=bogus_field", "--format=csv"], ["--query-gpu=name"], ["-i", "99", "-L"],
                     ["--bogus-option"], ["mig", "-lgip"], ["mig", "-lgipp"], ["mig", "-lgi"], ["mig", "-lci"],
                     ["topo", "-m"], ["nvlink", "-s"], ["-q", "-d", "ECC,ROW_REMAPPER,PAGE_RETIREMENT"],
                     ["-q", "-d", "PERFORMANCE"], ["--version"]):
            run(["nvidia-smi"] + args, out)
    with open(os.path.join(outdir, "smi-q.xml"), "w") as out:
        try:
            proc = subprocess.run(["nvidia-smi", "-q", "-x"], stdout=subprocess.PIPE, check=False, timeout=60)
            out.write(proc.stdout.decode(errors="replace"))
        except (OSError, subprocess.TimeoutExpired) as exc:
            out.write("<!-- nvidia-smi -q -x failed: %s -->\n" % exc)
    with open(os.path.join(outdir, "env.txt"), "w") as out:
        for args in (["uname", "-a"], ["cat", "/proc/driver/nvidia/version"], ["ls", "-la", "/dev/"],
                     ["ls", "-laR", "/dev/nvidia-caps"], ["ls", "-laR", "/proc/driver/nvidia"],
                     ["cat", "/proc/driver/nvidia-caps/mig-minors"], ["cat", "/proc/devices"],
                     ["sh", "-c", "cat /proc/driver/nvidia/gpus/*/information"],
                     ["sh", "-c", "ls -la " + os.path.dirname(path or "/")],
                     [sys.executable, "-m", "pip", "show", "nvidia-ml-py"]):
            run(args, out)
    if "--with-process" in argv:
        process_probe(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
