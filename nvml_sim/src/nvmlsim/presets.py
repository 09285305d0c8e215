"""Ready-made nodes.

Each preset names the GPU model, PCI bus ids (index order = bus order, as
NVML enumerates), NUMA node and CPU list of every GPU, the driver version,
and optionally a MIG layout.  MIG layouts are built through the same
driver operations the API uses (:mod:`nvmlsim.node`), so a preset that the
real hardware could not hold fails to build.
"""
from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import node
from .models import MODELS


class Driver(NamedTuple):
    """Driver/NVML/CUDA versions a preset reports."""

    version: str
    cuda: int   # nvmlSystemGetCudaDriverVersion: 1000 * major + 10 * minor


R535 = Driver("535.129.03", 12020)   # seed 003: "Driver Version: 535.129.03  CUDA Version: 12.2"
R550 = Driver("550.127.08", 12040)
R570 = Driver("570.133.20", 12080)


class GiSpec(NamedTuple):
    """A GPU instance of a preset: profile id, placement start, pinned id, CI profile ids."""

    profile_id: int
    start: int
    gi_id: int
    ci_profiles: Tuple[int, ...] = (0,)


class Preset(NamedTuple):
    """A node layout."""

    description: str
    model: str
    bus_ids: Tuple[str, ...]
    numa: Tuple[int, ...]
    cpus: Dict[int, str]                 # NUMA node -> cpulist
    driver: Driver
    mig: Optional[Dict[int, Sequence[GiSpec]]] = None  # GPU index -> GIs (MIG enabled on these GPUs)


_DGX_H_BUS = ("1B", "43", "52", "61", "9D", "C3", "D1", "DF")
_DGX_A_BUS = ("07", "0F", "47", "4E", "87", "90", "B7", "BD")
_SEED_BUS = ("17", "65", "CA", "E3")   # seed 003's nvidia-smi listing


def _seven_1g(gi_ids: Sequence[int]) -> List[GiSpec]:
    """7 x 1g (profile 19) on placements 0..6 with the given GI ids, one CI each."""
    return [GiSpec(19, start, gi_id) for start, gi_id in enumerate(gi_ids)]


PRESETS: Dict[str, Preset] = {
    "h100-80gb-x8": Preset(
        "8 x NVIDIA H100 80GB HBM3 (DGX H100 layout), MIG disabled",
        "h100-sxm5-80gb", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R570),
    "h200-x8": Preset(
        "8 x NVIDIA H200 141GB (HGX H200 layout), MIG disabled",
        "h200-sxm5-141gb", _DGX_H_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-55,112-167", 1: "56-111,168-223"}, R570),
    "a100-40gb-x8": Preset(
        "8 x NVIDIA A100-SXM4-40GB (DGX A100 layout), MIG disabled",
        "a100-sxm4-40gb", _DGX_A_BUS, (0, 0, 0, 0, 1, 1, 1, 1),
        {0: "0-63,128-191", 1: "64-127,192-255"}, R535),
    "a100-80gb-pcie-x4": Preset(
        "4 x NVIDIA A100 80GB PCIe, MIG disabled",
        "a100-pcie-80gb", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R535),
    "l40s-x4": Preset(
        "4 x NVIDIA L40S (no MIG)",
        "l40s", ("01", "41", "81", "C1"), (0, 0, 1, 1),
        {0: "0-31,64-95", 1: "32-63,96-127"}, R550),
    "seed-003": Preset(
        "seed 003: 4 x NVIDIA A100 80GB PCIe; GPUs 2 and 3 in MIG mode with 7 x 1g.10gb each "
        "(GPU 2: GI 7-13, GPU 3: GI 7,8,9,11,12,13,14, CI 0 in each)",
        "a100-pcie-80gb", _SEED_BUS, (0, 0, 1, 1),
        {0: "0-15,32-47", 1: "16-31,48-63"}, R535,
        {2: _seven_1g((7, 8, 9, 10, 11, 12, 13)), 3: _seven_1g((7, 8, 9, 11, 12, 13, 14))}),
}


def _gpu_entry(name: str, preset: Preset, index: int) -> dict:
    numa = preset.numa[index]
    mig = None
    if MODELS[preset.model].mig_capable:
        mig = node.MIG_ENABLE if index in (preset.mig or {}) else node.MIG_DISABLE
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
        "faults": [],
        "gpus": [],
    }
    state["gpus"] = [_gpu_entry(name, preset, index) for index in range(len(preset.bus_ids))]
    for index, specs in (preset.mig or {}).items():
        gpu = node.gpu_by_index(state, index)
        for spec in specs:
            node.create_gpu_instance(gpu, spec.profile_id, start=spec.start, gi_id=spec.gi_id)
            for ci_prof in spec.ci_profiles:
                node.create_compute_instance(gpu, spec.gi_id, ci_prof)
    return state
