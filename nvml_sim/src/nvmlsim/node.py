"""The simulated driver: operations on a node's state (a plain dict).

Every function takes the state dict (as read from the state file), checks
the request the way the NVIDIA driver does, and either changes the dict or
raises :class:`SimError` with the NVML return code the real library gives.
Nothing here touches files; :mod:`nvmlsim.store` persists the dict and
:mod:`nvmlsim.devfiles` mirrors it into device files.

State layout (JSON)::

    {"format": "nvmlsim/1", "preset": ..., "driver_version": ..., "nvml_version": ...,
     "cuda_driver_version": 12020, "mig_minors_path": ..., "caps_major": 238,
     "auto_reset": false, "device_files": {...}, "faults": [...],
     "gpus": [{"index": 0, "minor": 0, "model": "a100-pcie-80gb", "uuid": "GPU-...",
               "serial": ..., "pci_bus_id": "00000000:17:00.0", "numa_node": 0,
               "cpus": "0-15,32-47", "mig_current": 0, "mig_pending": 0, "mem_slice_xor": 0,
               "gpu_instances": [{"id": 7, "profile_id": 19, "start": 0, "size": 1,
                                  "compute_instances": [{"id": 0, "profile_id": 0, "start": 0,
                                                         "size": 1, "uuid": "MIG-..."}]}],
               "processes": [{"pid": 4242, "name": "python3", "used_mib": 1024,
                              "gi": 7, "ci": 0}]}]}

``mem_slice_xor`` (absent = 0) is the board's fixed XOR between the memory
slices of a placement (what NVML reports) and the physical slices whose tree
index is the GI id (:func:`nvmlsim.models.gi_id_for_placement`): 0 on most
GPUs, 4 (memory halves swapped) on those that number 7 x 1g as GI 7, 8, 9,
11, 12, 13, 14.  Reset, reboot, create and destroy leave it alone.
"""
from __future__ import annotations

import uuid
from typing import Dict, List, Optional, Tuple

from . import errors as E
from .errors import SimError
from .models import (COMPUTE_SLICES, MAX_CI_ID, MAX_GI_ID, MODELS, ComputeInstanceProfile, GpuInstanceProfile,
                     GpuModel, ci_profile, ci_profiles, gi_id_for_placement)

STATE_FORMAT = "nvmlsim/1"
MIG_DISABLE = 0
MIG_ENABLE = 1
# Memory the driver keeps on a GPU with nobody using it, as nvidia-smi shows
# in seed 003: 4MiB on a full GPU, 87MiB on a GPU in MIG mode, 12MiB per MIG device.
BASE_USED_MIB = 4
BASE_USED_MIG_MIB = 87
BASE_USED_MIG_DEVICE_MIB = 12
_UUID_NS = uuid.UUID("6f1c8a52-3b0e-4b8e-9a51-6e766d6c7369")


def gpu_uuid_for(preset: str, index: int) -> str:
    """Deterministic GPU UUID of GPU ``index`` of a node made from ``preset``."""
    return "GPU-%s" % uuid.uuid5(_UUID_NS, "gpu/%s/%d" % (preset, index))


def mig_uuid_for(gpu_uuid: str, gi_id: int, ci_id: int) -> str:
    """Deterministic MIG device UUID (current driver form ``MIG-<uuid>``)."""
    return "MIG-%s" % uuid.uuid5(_UUID_NS, "mig/%s/%d/%d" % (gpu_uuid, gi_id, ci_id))


def parse_cpulist(text: str) -> List[int]:
    """Parse a Linux cpulist (``0-15,32-47``) into sorted CPU numbers."""
    cpus = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.update(range(int(low), int(high) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


# ---------------------------------------------------------------- lookups

def model_of(gpu: dict) -> GpuModel:
    """The :class:`GpuModel` of a GPU entry."""
    return MODELS[gpu["model"]]


def gpus(state: dict) -> List[dict]:
    """GPUs in NVML index order."""
    return sorted(state["gpus"], key=lambda g: g["index"])


def gpu_by_index(state: dict, index: int) -> dict:
    """The GPU with NVML index ``index``."""
    for gpu in state["gpus"]:
        if gpu["index"] == index:
            return gpu
    raise SimError(E.INVALID_ARGUMENT, "no GPU with index %s; this node has indices %s"
                   % (index, ", ".join(str(g["index"]) for g in gpus(state)) or "none"))


def gpu_by_uuid(state: dict, gpu_uuid: str) -> Optional[dict]:
    """The GPU with this UUID, or None."""
    for gpu in state["gpus"]:
        if gpu["uuid"] == gpu_uuid:
            return gpu
    return None


def gpu_instance(gpu: dict, gi_id: int) -> Optional[dict]:
    """GI ``gi_id`` of ``gpu``, or None."""
    for gi in gpu["gpu_instances"]:
        if gi["id"] == gi_id:
            return gi
    return None


def compute_instance(gi: dict, ci_id: int) -> Optional[dict]:
    """CI ``ci_id`` of ``gi``, or None."""
    for ci in gi["compute_instances"]:
        if ci["id"] == ci_id:
            return ci
    return None


def gi_profile_of(gpu: dict, gi: dict) -> GpuInstanceProfile:
    """The profile a GI was created with."""
    return model_of(gpu).profile_by_id(gi["profile_id"])


def ci_profile_of(gpu: dict, gi: dict, ci: dict) -> ComputeInstanceProfile:
    """The profile a CI was created with."""
    return ci_profile(model_of(gpu), gi_profile_of(gpu, gi), ci["profile_id"])


def mig_devices(gpu: dict) -> List[Tuple[dict, dict]]:
    """(GI, CI) pairs in MIG device index order (by GI id, then CI id)."""
    pairs = []
    for gi in sorted(gpu["gpu_instances"], key=lambda g: g["id"]):
        for ci in sorted(gi["compute_instances"], key=lambda c: c["id"]):
            pairs.append((gi, ci))
    return pairs


def mig_enabled(gpu: dict) -> bool:
    """True when the GPU is currently in MIG mode."""
    return gpu.get("mig_current") == MIG_ENABLE


def require_mig_capable(gpu: dict) -> GpuModel:
    """NOT_SUPPORTED unless the GPU's model supports MIG."""
    model = model_of(gpu)
    if not model.mig_capable:
        raise SimError(E.NOT_SUPPORTED, "GPU %d (%s) does not support MIG" % (gpu["index"], model.name))
    return model


def require_mig_enabled(gpu: dict) -> GpuModel:
    """NOT_SUPPORTED unless MIG mode is currently enabled."""
    model = require_mig_capable(gpu)
    if not mig_enabled(gpu):
        raise SimError(E.NOT_SUPPORTED, "MIG mode is not enabled on GPU %d" % gpu["index"])
    return model


def gi_profile_by_id(gpu: dict, profile_id: int, enabled: bool = True) -> GpuInstanceProfile:
    """Profile ``profile_id`` of a MIG-enabled GPU (INVALID_ARGUMENT if unknown).

    With ``enabled`` false MIG mode may be off: the profile queries
    (info by id, placements, remaining capacity, the GPU instances of a
    profile) answer on a MIG-capable GPU with MIG off, as a real H200 does.
    """
    model = require_mig_enabled(gpu) if enabled else require_mig_capable(gpu)
    prof = model.profile_by_id(profile_id)
    if prof is None:
        raise SimError(E.INVALID_ARGUMENT, "GPU instance profile id %s is not valid on %s; valid ids: %s" % (
            profile_id, model.name, ", ".join(str(p.profile_id) for p in model.profiles)))
    return prof


# ---------------------------------------------------------------- MIG mode, reset, reboot

def busy_reason(gpu: dict) -> Optional[str]:
    """Why the GPU cannot be reset now (a process holds it), or None."""
    procs = gpu["processes"]
    if not procs:
        return None
    return "in use by another client (pid %s)" % ", ".join(str(p["pid"]) for p in procs)


# Xid 79: the GPU has fallen off the bus; the driver answers GPU_IS_LOST for it until the next boot.
XID_FALLEN_OFF_THE_BUS = 79


def lost(gpu: dict) -> bool:
    """True while the GPU is lost (Xid 79 since the last reboot; state key ``"lost": true``)."""
    return bool(gpu.get("lost"))


def require_present(gpu: dict) -> None:
    """GPU_IS_LOST for a GPU that fell off the bus."""
    if lost(gpu):
        raise SimError(E.GPU_IS_LOST, "GPU %d (%s) is lost: it has fallen off the bus (Xid 79); reboot to recover it" % (
            gpu["index"], gpu["pci_bus_id"]))


def _clear_instances(gpu: dict) -> None:
    gpu["gpu_instances"] = []


def reset_gpu(gpu: dict) -> None:
    """Simulated ``nvidia-smi --gpu-reset``: applies the pending MIG mode.

    MIG instances do not survive a reset.  Fails with IN_USE while any
    process holds the GPU, and with GPU_IS_LOST on a GPU that fell off the
    bus (Xid 79): only a reboot brings it back.
    """
    require_present(gpu)
    reason = busy_reason(gpu)
    if reason:
        raise SimError(E.IN_USE, "GPU %s: %s" % (gpu["pci_bus_id"], reason))
    if model_of(gpu).mig_capable:
        gpu["mig_current"] = gpu["mig_pending"]
    _clear_instances(gpu)
    _clear_volatile_memory_errors(gpu)


def reboot(state: dict) -> None:
    """Simulated reboot: processes end, pending MIG modes apply, instances vanish, lost GPUs are back."""
    for gpu in state["gpus"]:
        gpu.pop("lost", None)
        gpu["processes"] = []
        if model_of(gpu).mig_capable:
            gpu["mig_current"] = gpu["mig_pending"]
        _clear_instances(gpu)
        _clear_volatile_memory_errors(gpu)


def set_mig_mode(state: dict, gpu: dict, mode: int) -> int:
    """nvmlDeviceSetMigMode: record ``mode`` as pending; return activationStatus.

    The mode takes effect at the next GPU reset or reboot.  With the node's
    ``auto_reset`` on, the driver resets an idle GPU at once (what bare-metal
    hosts do) and the status is SUCCESS; otherwise the status is
    RESET_REQUIRED (the pass-through / reset-not-exposed case nvml.h
    documents), or IN_USE while a process holds the GPU.
    """
    require_mig_capable(gpu)
    if mode not in (MIG_DISABLE, MIG_ENABLE):
        raise SimError(E.INVALID_ARGUMENT, "MIG mode %r is not valid; use 0 (disable) or 1 (enable)" % (mode,))
    gpu["mig_pending"] = mode
    if gpu["mig_current"] == mode:
        return E.SUCCESS
    if busy_reason(gpu):
        return E.IN_USE
    if state.get("auto_reset"):
        reset_gpu(gpu)
        return E.SUCCESS
    return E.RESET_REQUIRED


# ---------------------------------------------------------------- GPU instances

def _span(start: int, size: int) -> set:
    return set(range(start, start + size))


def occupied_memory(gpu: dict) -> set:
    """Memory slices used by the GPU's instances."""
    used = set()
    for gi in gpu["gpu_instances"]:
        used |= _span(gi["start"], gi["size"])
    return used


def used_compute_slices(gpu: dict) -> int:
    """Compute slices used by the GPU's instances."""
    return sum(gi_profile_of(gpu, gi).slices for gi in gpu["gpu_instances"])


def free_starts(gpu: dict, prof: GpuInstanceProfile) -> List[int]:
    """Placement starts of ``prof`` that do not overlap existing instances."""
    used = occupied_memory(gpu)
    return [s for s in prof.starts if not _span(s, prof.mem_slices) & used]


def _placements_blocked(model: GpuModel, used: set, start: int, size: int) -> int:
    """How many still-possible placements (of any profile) ``start:size`` would take away."""
    span = _span(start, size)
    count = 0
    for prof in model.profiles:
        for other in prof.starts:
            other_span = _span(other, prof.mem_slices)
            if not other_span & used and other_span & span:
                count += 1
    return count


def choose_placement(gpu: dict, prof: GpuInstanceProfile) -> Optional[int]:
    """The start the driver picks when no placement is given, or None if none fits.

    The driver keeps room for larger profiles: it takes the free placement
    that removes the fewest other possible placements, the lowest start on a
    tie.  This reproduces every sequence in the MIG User Guide and public
    transcripts: 7 x 1g on an empty GPU gives GI 13, 11, 12, 7, 8, 9, 10;
    ``-cgi 9,3g.20gb`` gives GI 2 then 1; ``-cgi 14,19,19,19,19,19`` gives 5,
    13, 7, 8, 9, 10; and ``-cgi 19,19,14,9`` fails on the 3g with
    INSUFFICIENT_RESOURCES (the guide's "known issue").  Placements are the
    logical ones NVML reports, so a board with ``mem_slice_xor`` 4 makes
    the same choices under other ids: 7 x 1g gives GI 9, 7, 8, 11, 12, 13,
    14 (dask-cuda issue #583, an A100 40GB).
    """
    model = model_of(gpu)
    used = occupied_memory(gpu)
    candidates = free_starts(gpu, prof)
    if not candidates:
        return None
    return min(candidates, key=lambda s: (_placements_blocked(model, used, s, prof.mem_slices), s))


def mem_slice_xor(gpu: dict) -> int:
    """The GPU's logical-to-physical memory-slice XOR (0 unless the state says otherwise)."""
    return int(gpu.get("mem_slice_xor") or 0)


def _next_gi_id(gpu: dict, start: int, size: int) -> int:
    """The id the driver gives a GI at ``start:size``: a function of the placement and the board only.

    Creation order and earlier destroys play no part (the id is the
    physical swizzId, see :func:`nvmlsim.models.gi_id_for_placement`), so a
    GI re-created where one was destroyed gets that one's id back.  Only a
    preset's pinned id can already hold it (a real driver never gets here);
    then the lowest free id is used (at most 7 GIs, 15 ids).
    """
    taken = {gi["id"] for gi in gpu["gpu_instances"]}
    natural = gi_id_for_placement(start, size, mem_slice_xor(gpu))
    if natural not in taken:
        return natural
    return min(i for i in range(1, MAX_GI_ID + 1) if i not in taken)


def create_gpu_instance(gpu: dict, profile_id: int, start: Optional[int] = None, size: Optional[int] = None,
                        gi_id: Optional[int] = None) -> dict:
    """nvmlDeviceCreateGpuInstance(WithPlacement); ``gi_id`` pins the id (presets only: the driver takes no id)."""
    prof = gi_profile_by_id(gpu, profile_id)
    existing = sum(1 for gi in gpu["gpu_instances"] if gi["profile_id"] == profile_id)
    if start is not None:
        if size is not None and size != prof.mem_slices or start not in prof.starts:
            raise SimError(E.INVALID_ARGUMENT, "placement %s:%s is not valid for profile %s (%d); valid: %s" % (
                start, prof.mem_slices if size is None else size, prof.name, profile_id,
                ", ".join("%d:%d" % (s, prof.mem_slices) for s in prof.starts)))
    if existing >= prof.instances:
        raise SimError(E.INSUFFICIENT_RESOURCES, "GPU %d already has %d of at most %d %s instances" % (
            gpu["index"], existing, prof.instances, prof.name))
    if used_compute_slices(gpu) + prof.slices > COMPUTE_SLICES:
        raise SimError(E.INSUFFICIENT_RESOURCES, "GPU %d has %d free compute slices; %s needs %d" % (
            gpu["index"], COMPUTE_SLICES - used_compute_slices(gpu), prof.name, prof.slices))
    if start is None:
        start = choose_placement(gpu, prof)
        if start is None:
            raise SimError(E.INSUFFICIENT_RESOURCES, "no free placement for %s on GPU %d (memory slices in use: %s)" % (
                prof.name, gpu["index"], sorted(occupied_memory(gpu))))
    elif start not in free_starts(gpu, prof):
        raise SimError(E.INSUFFICIENT_RESOURCES, "placement %d:%d of %s overlaps an existing GPU instance on GPU %d" % (
            start, prof.mem_slices, prof.name, gpu["index"]))
    if gi_id is None:
        gi_id = _next_gi_id(gpu, start, prof.mem_slices)
    elif gpu_instance(gpu, gi_id) is not None or not 0 <= gi_id <= MAX_GI_ID:
        raise SimError(E.INVALID_ARGUMENT, "GPU instance id %s is taken or outside 0-%d on GPU %d" % (
            gi_id, MAX_GI_ID, gpu["index"]))
    gi = {"id": gi_id, "profile_id": profile_id, "start": start, "size": prof.mem_slices, "compute_instances": []}
    gpu["gpu_instances"].append(gi)
    gpu["gpu_instances"].sort(key=lambda g: g["id"])
    return gi


def remaining_gi_capacity(gpu: dict, prof: GpuInstanceProfile) -> int:
    """How many more ``prof`` instances fit now (nvidia-smi's "Free" count)."""
    room = prof.instances - sum(1 for gi in gpu["gpu_instances"] if gi["profile_id"] == prof.profile_id)
    room = min(room, (COMPUTE_SLICES - used_compute_slices(gpu)) // prof.slices)
    used = set(occupied_memory(gpu))
    fits = 0
    for start in prof.starts:
        span = _span(start, prof.mem_slices)
        if not span & used:
            used |= span
            fits += 1
    return max(0, min(room, fits))


def destroy_gpu_instance(gpu: dict, gi_id: int) -> None:
    """nvmlGpuInstanceDestroy: IN_USE while it has compute instances or processes."""
    require_mig_enabled(gpu)
    gi = gpu_instance(gpu, gi_id)
    if gi is None:
        raise SimError(E.INVALID_ARGUMENT, "GPU %d has no GPU instance %s" % (gpu["index"], gi_id))
    users = [p["pid"] for p in gpu["processes"] if p.get("gi") == gi_id]
    if users:
        raise SimError(E.IN_USE, "GPU instance %d on GPU %d is in use by pid %s" % (
            gi_id, gpu["index"], ", ".join(map(str, users))))
    if gi["compute_instances"]:
        raise SimError(E.IN_USE, "GPU instance %d on GPU %d still has compute instances %s" % (
            gi_id, gpu["index"], ", ".join(str(ci["id"]) for ci in gi["compute_instances"])))
    gpu["gpu_instances"].remove(gi)


# ---------------------------------------------------------------- compute instances

def ci_profile_in(gpu: dict, gi: dict, profile_id: int) -> ComputeInstanceProfile:
    """CI profile ``profile_id`` of GI ``gi`` (NOT_SUPPORTED if the GI does not offer it)."""
    gi_prof = gi_profile_of(gpu, gi)
    if not isinstance(profile_id, int) or not 0 <= profile_id < 9:
        raise SimError(E.INVALID_ARGUMENT, "compute instance profile %r is not valid (0-8)" % (profile_id,))
    prof = ci_profile(model_of(gpu), gi_prof, profile_id)
    if prof is None:
        raise SimError(E.NOT_SUPPORTED, "GPU instance %d (%s) offers no compute instance profile %d; offered: %s" % (
            gi["id"], gi_prof.name, profile_id,
            ", ".join("%d" % p.profile_id for p in ci_profiles(model_of(gpu), gi_prof))))
    return prof


def _ci_used_slices(gi: dict) -> set:
    used = set()
    for ci in gi["compute_instances"]:
        used |= _span(ci["start"], ci["size"])
    return used


def create_compute_instance(gpu: dict, gi_id: int, profile_id: int, start: Optional[int] = None,
                            ci_id: Optional[int] = None) -> dict:
    """nvmlGpuInstanceCreateComputeInstance(WithPlacement)."""
    require_mig_enabled(gpu)
    gi = gpu_instance(gpu, gi_id)
    if gi is None:
        raise SimError(E.INVALID_ARGUMENT, "GPU %d has no GPU instance %s" % (gpu["index"], gi_id))
    prof = ci_profile_in(gpu, gi, profile_id)
    if start is not None and start not in prof.starts:
        raise SimError(E.INVALID_ARGUMENT, "compute placement %s is not valid for %s; valid starts: %s" % (
            start, prof.name, ", ".join(map(str, prof.starts))))
    same = sum(1 for ci in gi["compute_instances"] if ci["profile_id"] == profile_id)
    used = _ci_used_slices(gi)
    total = sum(ci_profile_of(gpu, gi, ci).slices for ci in gi["compute_instances"])
    free = [s for s in prof.starts if not _span(s, prof.size) & used]
    if same >= prof.instances or total + prof.slices > gi_profile_of(gpu, gi).slices or not free:
        raise SimError(E.INSUFFICIENT_RESOURCES, "no room for compute instance %s in GPU instance %d on GPU %d" % (
            prof.name, gi_id, gpu["index"]))
    if start is None:
        start = free[0]
    elif start not in free:
        raise SimError(E.INSUFFICIENT_RESOURCES, "compute placement %d:%d overlaps a compute instance in GPU instance %d" % (
            start, prof.size, gi_id))
    # CI ids are per GI and the lowest free slot from 0, whatever the profile
    # or placement: open-gpu-kernel-modules' kmigmgrCreateComputeInstances_VF
    # gives a new CI the first index whose MIGComputeInstance[] slot is not
    # valid ("index for the pMIGComputeInstance array is same as the compute
    # instance ID"; 8 slots, ids 0-7).
    taken = {ci["id"] for ci in gi["compute_instances"]}
    if ci_id is None:
        ci_id = min(i for i in range(MAX_CI_ID + 1) if i not in taken)
    elif ci_id in taken or not 0 <= ci_id <= MAX_CI_ID:
        raise SimError(E.INVALID_ARGUMENT, "compute instance id %s is taken or outside 0-%d" % (ci_id, MAX_CI_ID))
    ci = {"id": ci_id, "profile_id": profile_id, "start": start, "size": prof.size,
          "uuid": mig_uuid_for(gpu["uuid"], gi_id, ci_id)}
    gi["compute_instances"].append(ci)
    gi["compute_instances"].sort(key=lambda c: c["id"])
    return ci


def remaining_ci_capacity(gpu: dict, gi: dict, prof: ComputeInstanceProfile) -> int:
    """How many more CIs of ``prof`` fit in ``gi``."""
    room = prof.instances - sum(1 for ci in gi["compute_instances"] if ci["profile_id"] == prof.profile_id)
    total = sum(ci_profile_of(gpu, gi, ci).slices for ci in gi["compute_instances"])
    room = min(room, (gi_profile_of(gpu, gi).slices - total) // prof.slices)
    used = set(_ci_used_slices(gi))
    fits = 0
    for start in prof.starts:
        span = _span(start, prof.size)
        if not span & used:
            used |= span
            fits += 1
    return max(0, min(room, fits))


def destroy_compute_instance(gpu: dict, gi_id: int, ci_id: int) -> None:
    """nvmlComputeInstanceDestroy: IN_USE while a process runs on it."""
    gi = gpu_instance(gpu, gi_id)
    ci = compute_instance(gi, ci_id) if gi else None
    if ci is None:
        raise SimError(E.INVALID_ARGUMENT, "GPU %d has no compute instance %s/%s" % (gpu["index"], gi_id, ci_id))
    users = [p["pid"] for p in gpu["processes"] if p.get("gi") == gi_id and p.get("ci") == ci_id]
    if users:
        raise SimError(E.IN_USE, "compute instance %d/%d on GPU %d is in use by pid %s" % (
            gi_id, ci_id, gpu["index"], ", ".join(map(str, users))))
    gi["compute_instances"].remove(ci)


# ---------------------------------------------------------------- processes

def add_process(state: dict, index: int, pid: int, name: str, used_mib: int = 0,  # pylint: disable=too-many-arguments,too-many-positional-arguments
                gi_id: Optional[int] = None, ci_id: Optional[int] = None) -> dict:
    """Record process ``pid`` using GPU ``index`` (optionally MIG device gi/ci)."""
    gpu = gpu_by_index(state, index)
    if pid <= 0:
        raise SimError(E.INVALID_ARGUMENT, "pid %s is not valid; give a positive process id" % pid)
    if used_mib < 0:
        raise SimError(E.INVALID_ARGUMENT, "used memory %s MiB is not valid; give 0 or more" % used_mib)
    if (gi_id is None) != (ci_id is None):
        raise SimError(E.INVALID_ARGUMENT, "give both --gi and --ci (MIG device) or neither (whole GPU)")
    if gi_id is not None:
        if not mig_enabled(gpu):
            raise SimError(E.INVALID_ARGUMENT, "GPU %d is not in MIG mode; --gi/--ci are only valid on a MIG GPU" % index)
        gi = gpu_instance(gpu, gi_id)
        if gi is None or compute_instance(gi, ci_id) is None:
            raise SimError(E.INVALID_ARGUMENT, "GPU %d has no MIG device gi %s ci %s; it has: %s" % (
                index, gi_id, ci_id, ", ".join("%d/%d" % (g["id"], c["id"]) for g, c in mig_devices(gpu)) or "none"))
    if any(p["pid"] == pid for p in gpu["processes"]):
        raise SimError(E.INVALID_ARGUMENT, "pid %d is already recorded on GPU %d" % (pid, index))
    proc = {"pid": pid, "name": name, "used_mib": used_mib, "gi": gi_id, "ci": ci_id}
    gpu["processes"].append(proc)
    return proc


def remove_process(state: dict, pid: int, index: Optional[int] = None) -> int:
    """Forget process ``pid`` (on every GPU, or only on GPU ``index``); returns how many entries went."""
    removed = 0
    for gpu in state["gpus"]:
        if index is not None and gpu["index"] != index:
            continue
        before = len(gpu["processes"])
        gpu["processes"] = [p for p in gpu["processes"] if p["pid"] != pid]
        removed += before - len(gpu["processes"])
    if not removed:
        raise SimError(E.NOT_FOUND, "pid %s is not recorded on %s" % (
            pid, "any GPU" if index is None else "GPU %d" % index))
    return removed


# ---------------------------------------------------------------- memory errors (ECC, page retirement)
#
# Optional per-GPU key ``"ecc"``: ``{"corrected_volatile": n, "uncorrected_volatile": n,
# "corrected_aggregate": n, "uncorrected_aggregate": n, "retired_pages_pending": bool,
# "remapped_correctable": n, "remapped_uncorrectable": n, "remap_pending": bool, "remap_failure": bool}``
# (absent = no errors).  Volatile counters count since the last driver load, so a
# GPU reset or reboot clears them and retires the pending pages; aggregate
# counters persist.

ECC_COUNTERS = ("corrected_volatile", "uncorrected_volatile", "corrected_aggregate", "uncorrected_aggregate")
REMAP_COUNTERS = ("remapped_correctable", "remapped_uncorrectable")


def ecc_count(gpu: dict, uncorrected: bool, volatile: bool) -> int:
    """nvmlDeviceGetTotalEccErrors: the GPU's corrected/uncorrected, volatile/aggregate count."""
    key = "%s_%s" % ("uncorrected" if uncorrected else "corrected", "volatile" if volatile else "aggregate")
    return int((gpu.get("ecc") or {}).get(key, 0))


def retired_pages_pending(gpu: dict) -> bool:
    """nvmlDeviceGetRetiredPagesPendingStatus: pages wait for a reset to be retired (NOT_SUPPORTED on A100 and later)."""
    model = model_of(gpu)
    if not model.page_retirement:
        raise SimError(E.NOT_SUPPORTED, "%s remaps rows instead of retiring pages; ask nvmlDeviceGetRemappedRows" % model.name)
    return bool((gpu.get("ecc") or {}).get("retired_pages_pending", False))


def remapped_rows(gpu: dict) -> Tuple[int, int, bool, bool]:
    """nvmlDeviceGetRemappedRows: (correctable, uncorrectable, pending, failure occurred).

    NOT_SUPPORTED on GPUs without row remapping, and -- as NVML documents --
    on a MIG-enabled GPU with GPU instances.
    """
    model = model_of(gpu)
    if not model.row_remapping:
        raise SimError(E.NOT_SUPPORTED, "%s retires pages; it has no row remapping" % model.name)
    if mig_enabled(gpu) and gpu["gpu_instances"]:
        raise SimError(E.NOT_SUPPORTED, "GPU %d has MIG instances; NVML does not report remapped rows then" % gpu["index"])
    ecc = gpu.get("ecc") or {}
    return (int(ecc.get("remapped_correctable", 0)), int(ecc.get("remapped_uncorrectable", 0)),
            bool(ecc.get("remap_pending", False)), bool(ecc.get("remap_failure", False)))


def add_memory_errors(gpu: dict, corrected: int = 0, uncorrected: int = 0, pending: Optional[bool] = None,
                      remap_pending: Optional[bool] = None, remap_failure: Optional[bool] = None) -> dict:
    """Record ECC errors (volatile and aggregate), the retired-pages-pending flag or a row remapping.

    ``pending`` (retired pages) needs a GPU that retires pages; ``remap_pending``
    and ``remap_failure`` one that remaps rows (A100 and later): asking the
    other is an error naming what the GPU has.  A pending remap counts one
    more row remapped for an uncorrectable error; a reset applies it.
    """
    if corrected < 0 or uncorrected < 0:
        raise SimError(E.INVALID_ARGUMENT, "ECC error counts must be 0 or more, got corrected %s, uncorrected %s" % (
            corrected, uncorrected))
    model = model_of(gpu)
    if pending is not None and not model.page_retirement:
        raise SimError(E.INVALID_ARGUMENT, "GPU %d (%s) remaps rows instead of retiring pages; use --remap-pending" % (
            gpu["index"], model.name))
    if (remap_pending is not None or remap_failure is not None) and not model.row_remapping:
        raise SimError(E.INVALID_ARGUMENT, "GPU %d (%s) retires pages and has no row remapping; use --retired-pages-pending" % (
            gpu["index"], model.name))
    ecc = gpu.setdefault("ecc", {})
    for counter in ECC_COUNTERS + REMAP_COUNTERS:
        ecc.setdefault(counter, 0)
    ecc.setdefault("retired_pages_pending", False)
    ecc.setdefault("remap_pending", False)
    ecc.setdefault("remap_failure", False)
    for scope in ("volatile", "aggregate"):
        ecc["corrected_" + scope] += corrected
        ecc["uncorrected_" + scope] += uncorrected
    if pending is not None:
        ecc["retired_pages_pending"] = bool(pending)
    if remap_pending:
        ecc["remapped_uncorrectable"] += 1
    if remap_pending is not None:
        ecc["remap_pending"] = bool(remap_pending)
    if remap_failure is not None:
        ecc["remap_failure"] = bool(remap_failure)
    return ecc


def _clear_volatile_memory_errors(gpu: dict) -> None:
    ecc = gpu.get("ecc")
    if ecc:
        ecc["corrected_volatile"] = 0
        ecc["uncorrected_volatile"] = 0
        ecc["retired_pages_pending"] = False
        ecc["remap_pending"] = False   # the reset applies the pending remapping; the counts stay


# ---------------------------------------------------------------- memory

def memory_mib(gpu: dict, gi_id: Optional[int] = None) -> Dict[str, int]:
    """total / used / free / reserved in MiB for a GPU or one of its GIs."""
    if gi_id is None:
        total = model_of(gpu).memory_mib
        base = BASE_USED_MIG_MIB if mig_enabled(gpu) else BASE_USED_MIB
        used = base + sum(p["used_mib"] for p in gpu["processes"])
    else:
        gi = gpu_instance(gpu, gi_id)
        total = gi_profile_of(gpu, gi).memory_mib
        base = BASE_USED_MIG_DEVICE_MIB
        used = base + sum(p["used_mib"] for p in gpu["processes"] if p.get("gi") == gi_id)
    used = min(used, total)
    return {"total": total, "used": used, "free": total - used, "reserved": base}


# ---------------------------------------------------------------- health (what health checks read)
#
# Optional per-GPU keys, absent = the model's healthy idle value (nvmlsim.models.HEALTH):
# ``"persistence_mode": 0|1``, ``"pcie_gen": n``, ``"pcie_width": n`` (the current link),
# ``"clocks_event_reasons": bitmask``, ``"temperature": C``,
# ``"nvlink": {"down": [link, ...], "errors": {"<link>": {"replay": n, "recovery": n, "crc_flit": n,
# "crc_data": n}}}``, ``"xids": [{"code": n, "text": ..., "pid": n|null, "name": ...|null}]``,
# ``"lost": true`` (after Xid 79; cleared by a reboot, refuses a reset).
# Node keys: ``"nvswitch": bool`` (an HGX board: NVSwitches and the fabric manager),
# ``"fabric_manager": "running"|"stopped"|"starting"``, absent = running; ``"fabric_manager_version"`` (the
# nv-fabricmanager STAND-IN's version, absent = the driver's; :mod:`nvmlsim.fabricmanager`);
# ``"fabric_domain": {"cluster_uuid": "8-4-4-4-12 hex", "clique_id": n}`` (the node's multi-node NVLink
# domain, absent = none, as on a single-node HGX board: :func:`set_fabric_domain`);
# ``"kernel_module"``, ``"modules"`` (:mod:`nvmlsim.kmod`); ``"ib_root"`` and ``"ib"``
# (the InfiniBand tree, :mod:`nvmlsim.ib`); ``"boot_time"``: when the node last (re)booted (seconds since
# the epoch; the kernel-log stamps count from it).
# None of them except ``lost`` and ``fabric_manager`` changes at a reset or reboot: a fault stays until it is
# changed back; after a reboot the fabric state is what the fabric manager's service makes it at boot
# (:func:`nvmlsim.fabricmanager.state_at_boot`).

# nvml.h nvmlClocksEventReason* bits, by the names the CLI takes
CLOCKS_EVENT_REASONS = {
    "gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80, "display_clocks": 0x100,
}
NVLINK_COUNTERS = ("replay", "recovery", "crc_flit", "crc_data")   # NVML_NVLINK_ERROR_DL_REPLAY .. _CRC_DATA
NVLINK_ECC_DATA = 4                                                # NVML_NVLINK_ERROR_DL_ECC_DATA
NVLINK_ERROR_COUNT = 5
FABRIC_STATES = {"stopped": 1, "starting": 2, "running": 3}      # NVML_GPU_FABRIC_STATE_NOT_STARTED .. COMPLETED
FABRIC_NOT_SUPPORTED = 0
TEMPERATURE_THRESHOLDS = 8      # NVML_TEMPERATURE_THRESHOLD_COUNT of nvml.h 12.x (SHUTDOWN .. GPS_CURR)


def health_of(gpu: dict):
    """The model's :class:`nvmlsim.models.Health`."""
    return model_of(gpu).health


def persistence_mode(gpu: dict) -> int:
    """nvmlDeviceGetPersistenceMode: 1 unless turned off (the real H100 and H200 answered 1)."""
    return int(gpu.get("persistence_mode", 1))


def pcie_link(gpu: dict) -> Dict[str, int]:
    """Current and maximum PCIe generation and width (maximum = the model's; the real H100 and H200: 5, x16)."""
    health = health_of(gpu)
    return {"max_gen": health.pcie_gen, "max_width": health.pcie_width,
            "gen": int(gpu.get("pcie_gen", health.pcie_gen)), "width": int(gpu.get("pcie_width", health.pcie_width))}


def set_pcie_link(gpu: dict, gen: Optional[int] = None, width: Optional[int] = None) -> Dict[str, int]:
    """Degrade (or restore) the current link: 1 <= gen <= max, width one of 1, 2, 4, 8, 16 and <= max."""
    link = pcie_link(gpu)
    if gen is not None:
        if not 1 <= gen <= link["max_gen"]:
            raise SimError(E.INVALID_ARGUMENT, "PCIe generation %d: GPU %d links at gen 1 to %d" % (
                gen, gpu["index"], link["max_gen"]))
        gpu["pcie_gen"] = gen
    if width is not None:
        if width not in (1, 2, 4, 8, 16, 32) or width > link["max_width"]:
            raise SimError(E.INVALID_ARGUMENT, "PCIe width x%d: GPU %d links at x1, x2, x4, x8 up to x%d" % (
                width, gpu["index"], link["max_width"]))
        gpu["pcie_width"] = width
    return pcie_link(gpu)


def clocks_event_reasons(gpu: dict) -> int:
    """nvmlDeviceGetCurrentClocksEventReasons: GpuIdle (1) on an idle GPU, as the real H100 and H200 answered."""
    return int(gpu.get("clocks_event_reasons", CLOCKS_EVENT_REASONS["gpu_idle"]))


def reasons_from_names(names: List[str]) -> int:
    """The bitmask of nvmlClocksEventReason names (``none`` alone: 0)."""
    mask = 0
    for name in names:
        if name == "none":
            continue
        if name not in CLOCKS_EVENT_REASONS:
            raise SimError(E.INVALID_ARGUMENT, "unknown clocks event reason %r; valid: none, %s" % (
                name, ", ".join(CLOCKS_EVENT_REASONS)))
        mask |= CLOCKS_EVENT_REASONS[name]
    return mask


def temperature(gpu: dict) -> int:
    """nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU) in C."""
    return int(gpu.get("temperature", health_of(gpu).temperature))


def temperature_threshold(gpu: dict, kind: int) -> int:
    """nvmlDeviceGetTemperatureThreshold: SHUTDOWN, SLOWDOWN, MEM_MAX, GPU_MAX; the others NOT_SUPPORTED."""
    if not 0 <= kind < TEMPERATURE_THRESHOLDS:
        raise SimError(E.INVALID_ARGUMENT, "temperature threshold %r is not valid" % (kind,))
    thresholds = health_of(gpu).thresholds
    value = thresholds[kind] if kind < len(thresholds) else None
    if value is None:
        raise SimError(E.NOT_SUPPORTED, "%s reports no temperature threshold %d" % (model_of(gpu).name, kind))
    return value


def _nvlink(gpu: dict, link: int) -> dict:
    health = health_of(gpu)
    if not health.nvlinks:
        raise SimError(E.NOT_SUPPORTED, "%s (PCIe board) has no NVLink" % model_of(gpu).name)
    if not 0 <= link < health.nvlinks:
        raise SimError(E.INVALID_ARGUMENT, "NVLink %r: GPU %d has links 0-%d" % (link, gpu["index"], health.nvlinks - 1))
    return gpu.get("nvlink") or {}


def nvlink_state(gpu: dict, link: int) -> int:
    """nvmlDeviceGetNvLinkState: 1 (active) unless taken down."""
    return 0 if link in _nvlink(gpu, link).get("down", []) else 1


# The NVSwitch chips at the other end of an HGX board's GPU links: (count, PCI device id). DGX H100: four
# third-generation NVSwitch chips (10de:22a3), DGX A100: six (10de:1af1), as lspci lists them on those
# systems (public transcripts; not recorded here). Their bus ids are made up, in a range no preset's GPU uses.
NVSWITCHES = {6: (4, 0x22A310DE), 5: (6, 0x1AF110DE)}


def nvlink_remote_pci(state: dict, gpu: dict, link: int) -> dict:
    """nvmlDeviceGetNvLinkRemotePciInfo: the PCI identity of the device at the other end of a link.

    On an HGX board every GPU link ends at an NVSwitch (link L at switch L mod the switch count), never at
    another GPU, so Slurm's NVML plugin, which counts a link only when its remote bus id is another GPU's,
    finds no GPU-to-GPU links, as on a real DGX. A board without NVSwitch: NOT_SUPPORTED (not modelled).
    """
    _nvlink(gpu, link)
    switches = NVSWITCHES.get(health_of(gpu).nvlink_version)
    if not state.get("nvswitch") or switches is None:
        raise SimError(E.NOT_SUPPORTED, "GPU %d: NVLink peers without NVSwitch are not simulated" % gpu["index"])
    count, device_id = switches
    bus = 0xE0 + link % count
    return {"busId": "00000000:%02X:00.0" % bus, "busIdLegacy": "0000:%02X:00.0" % bus, "domain": 0, "bus": bus,
            "device": 0, "pciDeviceId": device_id, "pciSubSystemId": 0}


def nvlink_version(gpu: dict, link: int) -> int:
    """nvmlDeviceGetNvLinkVersion: the model's nvmlNvlinkVersion_t."""
    _nvlink(gpu, link)
    return health_of(gpu).nvlink_version


def nvlink_error_counter(gpu: dict, link: int, counter: int) -> int:
    """nvmlDeviceGetNvLinkErrorCounter: replay, recovery, CRC flit, CRC data (ECC data: 0)."""
    errors = (_nvlink(gpu, link).get("errors") or {}).get(str(link), {})
    if not 0 <= counter < NVLINK_ERROR_COUNT:
        raise SimError(E.INVALID_ARGUMENT, "NVLink error counter %r is not valid (0-%d)" % (counter, NVLINK_ERROR_COUNT - 1))
    if counter == NVLINK_ECC_DATA:
        return 0
    return int(errors.get(NVLINK_COUNTERS[counter], 0))


def set_nvlink(gpu: dict, link: int, up: Optional[bool] = None, counters: Optional[Dict[str, int]] = None) -> dict:
    """Take a link down or up, set (not add) its error counters."""
    _nvlink(gpu, link)
    nvlink = gpu.setdefault("nvlink", {})
    down = set(nvlink.get("down", []))
    if up is not None:
        (down.discard if up else down.add)(link)
    nvlink["down"] = sorted(down)
    for name, value in (counters or {}).items():
        if name not in NVLINK_COUNTERS or value < 0:
            raise SimError(E.INVALID_ARGUMENT, "NVLink counter %s=%r: valid are %s, 0 or more" % (
                name, value, ", ".join(NVLINK_COUNTERS)))
        nvlink.setdefault("errors", {}).setdefault(str(link), {})[name] = value
    return nvlink


def fabric_info(state: dict, gpu: dict) -> Tuple[int, int]:
    """nvmlDeviceGetGpuFabricInfo: (state, status).

    NOT_SUPPORTED (the error) before Hopper (nvml.h); on Hopper without
    NVSwitch state NOT_SUPPORTED (0) with status SUCCESS, as the real H100
    and H200 in a VM answered; on an HGX board COMPLETED (3) while the
    fabric manager runs, NOT_STARTED (1) when it is stopped, IN_PROGRESS (2)
    while it starts (status NOT_READY until it completes: nvml.h
    "status: Fabric probe status, valid only when state is COMPLETED").
    """
    if not health_of(gpu).fabric_info:
        raise SimError(E.NOT_SUPPORTED, "%s has no GPU fabric info (Hopper or newer)" % model_of(gpu).name)
    if not state.get("nvswitch"):
        return FABRIC_NOT_SUPPORTED, E.SUCCESS
    fabric = FABRIC_STATES[state.get("fabric_manager", "running")]
    return fabric, E.SUCCESS if fabric == FABRIC_STATES["running"] else E.NOT_READY


FABRIC_UUID_LEN = 16              # NVML_GPU_FABRIC_UUID_LEN
CLIQUE_ID_MAX = 0xFFFFFFFF         # nvmlGpuFabricInfo_t.cliqueId is an unsigned int


def fabric_domain(state: dict, gpu: dict) -> Tuple[bytes, int]:
    """nvmlGpuFabricInfo_t ``clusterUuid`` (16 bytes) and ``cliqueId`` of ``gpu``.

    What real NVML does (nvml.h, NVML API reference "nvmlGpuFabricInfo_t"): clusterUuid is the "Uuid of the
    cluster to which this GPU belongs", cliqueId the "ID of the fabric clique to which this GPU belongs"; the
    NVLink Subnet Manager / fabric manager of a multi-node NVLink system (GB200 NVL72 ...) assigns them when it
    registers the GPU (state COMPLETED): the cluster UUID names the NVLink domain, the clique its NVLink
    partition, and NVIDIA's consumers (topograph's ``nvidia-smi -q`` ClusterUUID/CliqueId, NCCL's MNNVL
    detection, the k8s ``nvidia.com/gpu.clique`` label) group GPUs by the pair.  A single-node HGX H100 reports
    state COMPLETED, status SUCCESS, CliqueId 0 and ClusterUUID 00000000-0000-0000-0000-000000000000
    (``nvidia-smi -q`` on 8 x H100 SXM5, driver 565.57.01); the lent H100 and H200 in VMs (580.159.04,
    tests/data) answered state NOT_SUPPORTED and zeros.  ASSUMED (nvml.h does not say; the consumers read the
    pair only once the state is COMPLETED): while the fabric manager has not registered the GPU (NOT_STARTED,
    IN_PROGRESS) or without NVSwitch (NOT_SUPPORTED) both are zeros.  So: the node's ``fabric_domain`` when
    :func:`fabric_info` is COMPLETED, else 16 zero bytes and clique 0.
    """
    domain = state.get("fabric_domain")
    if not domain or fabric_info(state, gpu)[0] != FABRIC_STATES["running"]:
        return bytes(FABRIC_UUID_LEN), 0
    return uuid.UUID(domain["cluster_uuid"]).bytes, int(domain["clique_id"])


def set_fabric_domain(state: dict, cluster_uuid: Optional[str], clique_id: Optional[int]) -> Optional[dict]:
    """Put the node in a multi-node NVLink domain (``cluster_uuid``, ``clique_id``), or out of it (both None).

    Only a node with NVSwitch (``state["nvswitch"]``) whose GPUs have GPU fabric info (Hopper or newer) has
    one; the UUID is 32 hex digits in the 8-4-4-4-12 form and not all zeros (zeros is no domain: clear it),
    the clique id an unsigned 32-bit number.  SimError(INVALID_ARGUMENT) naming the value otherwise, with the
    state unchanged.  Returns the domain stored (None after clearing).
    """
    if not state.get("nvswitch"):
        raise SimError(E.INVALID_ARGUMENT, "this node (%s) has no NVSwitch: no NVLink fabric domain (a multi-node "
                       "NVLink domain needs NVSwitch-connected GPUs, Hopper or newer)" % state.get("preset"))
    older = sorted({model_of(gpu).name for gpu in gpus(state) if not health_of(gpu).fabric_info})
    if older:
        raise SimError(E.INVALID_ARGUMENT, "this node's GPUs (%s) report no GPU fabric info (nvmlDeviceGetGpuFabricInfo "
                       "is Hopper or newer): no NVLink fabric domain" % ", ".join(older))
    if cluster_uuid is None and clique_id is None:
        state.pop("fabric_domain", None)
        return None
    text = (cluster_uuid or "").strip()
    parts = text.split("-")
    if ([len(p) for p in parts] != [8, 4, 4, 4, 12]
            or not all(c in "0123456789abcdefABCDEF" for c in text.replace("-", ""))):
        raise SimError(E.INVALID_ARGUMENT, "cluster UUID %r: give the 16 bytes as 32 hex digits in the form "
                       "8-4-4-4-12, e.g. 8e1f2a3b-0000-4c1d-9a7e-000000000a01" % (cluster_uuid,))
    if not text.replace("-", "").strip("0"):
        raise SimError(E.INVALID_ARGUMENT, "cluster UUID %s is all zeros, which NVML reports for no NVLink domain; "
                       "clear the domain instead" % text)
    if isinstance(clique_id, bool) or not isinstance(clique_id, int) or not 0 <= clique_id <= CLIQUE_ID_MAX:
        raise SimError(E.INVALID_ARGUMENT, "clique id %r: give a whole number from 0 to %d (nvmlGpuFabricInfo_t "
                       "cliqueId, an unsigned int)" % (clique_id, CLIQUE_ID_MAX))
    state["fabric_domain"] = {"cluster_uuid": text.lower(), "clique_id": clique_id}
    return state["fabric_domain"]


def set_fabric_manager(state: dict, status: str) -> None:
    """Start, stop or half-start the simulated nvidia-fabricmanager (an HGX node only)."""
    if not state.get("nvswitch"):
        raise SimError(E.INVALID_ARGUMENT, "this node (%s) has no NVSwitch: no fabric manager" % state.get("preset"))
    if status not in FABRIC_STATES:
        raise SimError(E.INVALID_ARGUMENT, "fabric manager state %r: valid are %s" % (status, ", ".join(FABRIC_STATES)))
    state["fabric_manager"] = status


# Xid texts of the driver for the codes health checks look for (NVIDIA "Xid Errors", r580).
XID_TEXTS = {
    13: "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
    31: "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x0_00000000. "
        "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    43: "Ch 00000008",
    45: "Ch 00000008",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "Row Remapper Error: (0x0000000000000000) - All reserved rows for bank are remapped",
    74: "NVLink: fatal error detected on link 0(0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    79: "GPU has fallen off the bus.",
    92: "High single-bit ECC error rate",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
}


def xid_line(gpu: dict, code: int, text: Optional[str] = None, pid: Optional[int] = None,
             name: Optional[str] = None) -> str:
    """The driver's kernel-log message (without the kernel's timestamp) for Xid ``code`` on ``gpu``.

    ``NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.``
    (the form of drivers 525 and later; the PCI address is domain:bus:device, 4 hex digits of domain).
    """
    if code <= 0:
        raise SimError(E.INVALID_ARGUMENT, "Xid %r: give a positive code" % (code,))
    if text is None:
        text = XID_TEXTS.get(code)
        if text is None:
            raise SimError(E.INVALID_ARGUMENT, "no default text for Xid %d; give --text" % code)
    domain, bus, rest = gpu["pci_bus_id"].split(":")
    where = "PCI:%04x:%s:%s" % (int(domain, 16) & 0xFFFF, bus.lower(), rest.split(".")[0].lower())
    who = "pid=%d, name=%s" % (pid, name or "<unknown>") if pid is not None else "pid='<unknown>', name=<unknown>"
    return "NVRM: Xid (%s): %d, %s, %s" % (where, code, who, text)


def record_xid(gpu: dict, code: int, text: Optional[str] = None, pid: Optional[int] = None,
               name: Optional[str] = None) -> str:
    """Record an Xid for ``gpu`` (kept in the state for the event API); returns its kernel-log message.

    Xid 79 also makes the GPU lost, as the driver does: every NVML call on it answers GPU_IS_LOST until
    a reboot.  Other codes change nothing else.
    """
    line = xid_line(gpu, code, text, pid, name)
    gpu.setdefault("xids", []).append({"code": code, "text": XID_TEXTS[code] if text is None else text,
                                       "pid": pid, "name": name})
    if code == XID_FALLEN_OFF_THE_BUS:
        gpu["lost"] = True
    return line


def check_driver_version(version: str, what: str = "driver version") -> str:
    """``NNN.NN`` or ``NNN.NN.NN``; SimError(INVALID_ARGUMENT) otherwise."""
    parts = version.split(".")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise SimError(E.INVALID_ARGUMENT, "%s %r: give NNN.NN or NNN.NN.NN" % (what, version))
    return version


def set_driver_version(state: dict, version: str, cuda: Optional[int] = None) -> None:
    """Change the driver version (and with it NVML's), e.g. to a wrong driver for a health check."""
    check_driver_version(version)
    if cuda is not None:
        if cuda < 1000:
            raise SimError(E.INVALID_ARGUMENT, "CUDA driver version %d: give 1000 * major + 10 * minor (12020)" % cuda)
        state["cuda_driver_version"] = cuda
    state["driver_version"] = version
    state["nvml_version"] = "%d.%s" % (int(state["cuda_driver_version"]) // 1000, version)
