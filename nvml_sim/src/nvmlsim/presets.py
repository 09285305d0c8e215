"""Ready-made nodes.

Each preset names the GPU model, PCI bus ids (index order = bus order, as
NVML enumerates), NUMA node and CPU list of every GPU, the driver version,
and optionally a MIG layout.  A MIG layout is a list of driver calls
(create / destroy GPU instance) replayed in order through the same
operations the API uses (:mod:`nvmlsim.node`), so a preset that the real
hardware could not hold fails to build and its ids are the ones the
driver gives.
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Sequence, Tuple, Union

from . import node
from .models import MODELS


class Driver(NamedTuple):
    """Driver/NVML/CUDA versions a preset reports."""

    version: str
    cuda: int   # nvmlSystemGetCudaDriverVersion: 1000 * major + 10 * minor


R535 = Driver("535.129.03", 12020)   # seed 003: "Driver Version: 535.129.03  CUDA Version: 12.2"
R550 = Driver("550.127.08", 12040)
R570 = Driver("570.133.20", 12080)
R580 = Driver("580.126.09", 13000)   # B300 SXM6 AC measurements: "CUDA 13.0 driver (580.126.09)"


class GiSpec(NamedTuple):
    """Create a GPU instance and CIs in it (``nvidia-smi mig -cgi PROFILE -C``).

    ``start`` None lets the driver choose the placement; ``gi_id`` pins the
    id instead of taking the driver's (for a layout whose board is unknown;
    no preset here needs it).
    """

    profile_id: int
    start: Optional[int] = None
    gi_id: Optional[int] = None
    ci_profiles: Tuple[int, ...] = (0,)


class DestroyGi(NamedTuple):
    """Destroy GPU instance ``gi_id`` and its CIs (``nvidia-smi mig -dci -gi ID``, then ``-dgi -gi ID``)."""

    gi_id: int


MigCall = Union[GiSpec, DestroyGi]


class Preset(NamedTuple):
    """A node layout."""

    description: str
    model: str
    bus_ids: Tuple[str, ...]
    numa: Tuple[int, ...]
    cpus: Dict[int, str]                 # NUMA node -> cpulist
    driver: Driver
    # GPU index -> driver calls, replayed in order (MIG enabled on these GPUs)
    mig: Optional[Dict[int, Sequence[MigCall]]] = None
    # GPU index -> the board's memory-slice XOR (0 if absent; see nvmlsim.models.gi_id_for_placement)
    mem_slice_xor: Optional[Dict[int, int]] = None
    # an HGX/DGX board whose GPUs reach each other through NVSwitches (nvidia-fabricmanager runs)
    nvswitch: bool = False
    # the flavour of the driver's kernel modules (/proc/driver/nvidia/version): "open" or "proprietary"
    kernel_module: str = "proprietary"


_DGX_H_BUS = ("1B", "43", "52", "61", "9D", "C3", "D1", "DF")
_DGX_A_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")
_SEED_BUS = ("17", "65", "CA", "E3")   # seed 003's nvidia-smi listing


# nvidia-smi mig -cgi 19,19,19,19,19,19,19 -C: 7 x 1g, the driver's placements, one CI each.
_SEVEN_1G: Tuple[MigCall, ...] = (GiSpec(19),) * 7


PRESETS: Dict[str, Preset] = {
    "h100-80gb-x8": Preset(
        "8 x NVIDIA H100 80GB HBM3 (DGX H100 layout), MIG disabled",
        "h100-sxm5-80gb", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R570, nvswitch=True, kernel_module="open"),
    "h200-x8": Preset(
        "8 x NVIDIA H200 141GB (HGX H200 layout), MIG disabled",
        "h200-sxm5-141gb", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R570, nvswitch=True, kernel_module="open"),
    # Blackwell and H200 NVL nodes (catalogue models with MIG tables); no InfiniBand HCAs.
    "b200-x8": Preset(
        "8 x NVIDIA B200 (HGX B200 layout), MIG disabled",
        "b200", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R570, nvswitch=True, kernel_module="open"),
    "b300-x8": Preset(
        "8 x NVIDIA B300 SXM6 AC (HGX B300 layout), MIG disabled",
        "b300", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R580, nvswitch=True, kernel_module="open"),
    # An NVL72 compute tray: two Grace CPUs with two GPUs each.
    "gb200-x4": Preset(
        "4 x NVIDIA GB200 (one NVL72 compute tray), MIG disabled",
        "gb200", ("01", "02", "03", "04"), (0, 0, 1, 1),
        {0: "0-71", 1: "72-143"}, R570, nvswitch=True, kernel_module="open"),
    "gb300-x4": Preset(
        "4 x NVIDIA GB300 (one NVL72 compute tray), MIG disabled",
        "gb300", ("01", "02", "03", "04"), (0, 0, 1, 1),
        {0: "0-71", 1: "72-143"}, R580, nvswitch=True, kernel_module="open"),
    "h200-nvl-x4": Preset(
        "4 x NVIDIA H200 NVL (PCIe), MIG disabled",
        "h200-nvl", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R570, kernel_module="open"),
    "a100-40gb-x8": Preset(
        "8 x NVIDIA A100-SXM4-40GB (DGX A100 layout), MIG disabled",
        "a100-sxm4-40gb", _DGX_A_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-63,128-191", 1: "64-127,192-255"}, R535, nvswitch=True),
    "a100-80gb-pcie-x4": Preset(
        "4 x NVIDIA A100 80GB PCIe, MIG disabled",
        "a100-pcie-80gb", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R535),
    "l40s-x4": Preset(
        "4 x NVIDIA L40S (no MIG)",
        "l40s", ("01", "41", "81", "C1"), (0, 0, 1, 1),
        {0: "0-31,64-95", 1: "32-63,96-127"}, R550),
    # The seed's own command, nvidia-smi mig -i 2,3 -cgi 19,19,19,19,19,19,19 -C,
    # on two boards: GPU 2 numbers as the tree (GI 13, 11, 12, 7, 8, 9, 10 at
    # 6:1, 4:1, 5:1, 0:1 ... 3:1), GPU 3 has its memory halves swapped
    # (GI 9, 7, 8, 11, 12, 13, 14 at the same placements, GI 14 at 3:1).
    "seed-003": Preset(
        "seed 003: 4 x NVIDIA A100 80GB PCIe; GPUs 2 and 3 in MIG mode with 7 x 1g.10gb each "
        "(GPU 2: GI 7-13, GPU 3: GI 7,8,9,11,12,13,14 as a board with swapped memory halves numbers them, "
        "CI 0 in each)",
        "a100-pcie-80gb", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R535,
        {2: _SEVEN_1G, 3: _SEVEN_1G}, {3: 4}),
    # GI ids with gaps made only by create/destroy calls (no pinned id).
    "a100-gi-gaps": Preset(
        "4 x NVIDIA A100 80GB PCIe; GI ids with gaps left by create/destroy calls: GPU 0 GI 4,7,8,11,12,13; "
        "GPU 1 GI 5,7,10,13; GPU 2 (swapped memory halves) GI 3,9,11,12,13,14; GPU 3 MIG off",
        "a100-pcie-80gb", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R535,
        {
            # 7 x 1g (GI 13, 11, 12, 7, 8, 9, 10); destroy the 1g at 2:1 and 3:1;
            # a 2g.20gb can only go to 2:2 -> GI 4.
            0: _SEVEN_1G + (DestroyGi(9), DestroyGi(10), GiSpec(14, ci_profiles=(1,))),
            # the guide's -cgi 14,19,19,19,19,19 -C (GI 5, 13, 7, 8, 9, 10); destroy GI 8 and 9.
            1: (GiSpec(14, ci_profiles=(1,)),) + (GiSpec(19),) * 5 + (DestroyGi(8), DestroyGi(9)),
            # 7 x 1g on a board with swapped halves (GI 9, 7, 8, 11, 12, 13, 14);
            # destroy the 1g at 4:1 and 5:1; a 1g.20gb goes to 4:2 -> GI 3.
            2: _SEVEN_1G + (DestroyGi(7), DestroyGi(8), GiSpec(15)),
        },
        {2: 4}),
}


def _gpu_entry(name: str, preset: Preset, index: int) -> dict:
    numa = preset.numa[index]
    mig = None
    extra = {}
    if MODELS[preset.model].mig_capable:
        mig = node.MIG_ENABLE if index in (preset.mig or {}) else node.MIG_DISABLE
        extra["mem_slice_xor"] = (preset.mem_slice_xor or {}).get(index, 0)
    return {
        "index": index,
        "minor": index,
        "model": preset.model,
        "uuid": node.gpu_uuid_for(name, index),
        "serial": "1652%09d" % (index + 1),
        "pci_bus_id": "00000000:%s:00.0" % preset.bus_ids[index],
        "numa_node": numa,
        "cpus": preset.cpus[numa],
        "mig_current": mig,
        "mig_pending": mig,
        "gpu_instances": [],
        "processes": [],
        **extra,
    }


def build(name: str, mig_minors_path: str, auto_reset: bool = False) -> dict:
    """A fresh state dict for preset ``name``."""
    if name not in PRESETS:
        raise ValueError("unknown preset %r; valid presets: %s" % (name, ", ".join(sorted(PRESETS))))
    preset = PRESETS[name]
    state = {
        "format": node.STATE_FORMAT,
        "preset": name,
        "description": preset.description,
        "driver_version": preset.driver.version,
        "nvml_version": "%d.%s" % (preset.driver.cuda // 1000, preset.driver.version),
        "cuda_driver_version": preset.driver.cuda,
        "mig_minors_path": mig_minors_path,
        "caps_major": 238,
        "uvm_major": 510,
        "auto_reset": auto_reset,
        "kernel_module": preset.kernel_module,
        "faults": [],
        "gpus": [],
    }
    if preset.nvswitch:
        state["nvswitch"] = True
        state["fabric_manager"] = "running"
    state["gpus"] = [_gpu_entry(name, preset, index) for index in range(len(preset.bus_ids))]
    for index, calls in (preset.mig or {}).items():
        gpu = node.gpu_by_index(state, index)
        for call in calls:
            replay(gpu, call)
    return state


def replay(gpu: dict, call: MigCall) -> Optional[dict]:
    """Apply one preset call to ``gpu`` as the driver would; returns the GI a create made."""
    if isinstance(call, DestroyGi):
        gi = node.gpu_instance(gpu, call.gi_id)
        for ci in list(gi["compute_instances"] if gi else ()):
            node.destroy_compute_instance(gpu, call.gi_id, ci["id"])
        node.destroy_gpu_instance(gpu, call.gi_id)
        return None
    gi = node.create_gpu_instance(gpu, call.profile_id, start=call.start, gi_id=call.gi_id)
    for ci_prof in call.ci_profiles:
        node.create_compute_instance(gpu, gi["id"], ci_prof)
    return gi
