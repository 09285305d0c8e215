"""GPU models and their MIG profile tables.

Every MIG table below comes from the NVIDIA Multi-Instance GPU User Guide
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/, version for
driver R580), chapter "Supported MIG Profiles"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html):

* profile names, number of instances, fraction of memory (-> memory slices),
  fraction of SMs (-> compute slices), NVDEC/JPEG/OFA and copy engines: the
  table of each product ("GPU Instance Profiles on A100", "... on H100",
  "... on H200");
* profile ids and placements: chapter "Getting Started with MIG", sections
  "List GPU Instance Profiles" (``nvidia-smi mig -lgip``) and the placement
  listing (``nvidia-smi mig -lgipp``), which prints for every 8-memory-slice
  GPU (A100, H100, H200)::

      GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
      GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1
      GPU  0 Profile ID 15 Placements: {0,2,4,6}:2
      GPU  0 Profile ID 14 Placements: {0,2,4}:2
      GPU  0 Profile ID  9 Placements: {0,4}:4
      GPU  0 Profile ID  5 Placement : {0}:4
      GPU  0 Profile ID  0 Placement : {0}:8

  (start indices on the memory-slice axis, then the size in memory slices).

The guide gives memory as a fraction; the MiB figures (``memorySizeMB``) and
SM counts are the ``Memory GiB`` and ``SM`` columns of real
``nvidia-smi mig -lgip`` transcripts (GiB x 1024): A100-SXM4-40GB from the
guide's own examples, A100 80GB from public transcripts (9.50 GiB for
1g.10gb matches the 9728MiB MIG devices in seed ``003_...``), H100 80GB HBM3
from the guide (R580 example) and public transcripts, H200 from real NVML
on an H200 (driver 580.159.04, recorded in
``nvml_sim/tests/data/real-h200-580.159.04``; ``tests/test_real_h200.py``
holds the simulator to it).

Compute-instance profiles inside a GPU instance follow the guide's
``nvidia-smi mig -lcip`` listings: a GI of N compute slices offers CIs of
1, 2, 3, 4 and 7 slices that fit in N (3g: 1c x3, 2c x1, 3c x1; 4g: 1c x4,
2c x2, 4c x1; 7g: 1c x7, 2c x3, 3c x2, 4c x1, 7c x1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# NVML enum values (nvml.h, "Multi Instance GPU Management").
GI_PROFILE_1_SLICE = 0x0
GI_PROFILE_2_SLICE = 0x1
GI_PROFILE_3_SLICE = 0x2
GI_PROFILE_4_SLICE = 0x3
GI_PROFILE_7_SLICE = 0x4
GI_PROFILE_8_SLICE = 0x5
GI_PROFILE_6_SLICE = 0x6
GI_PROFILE_1_SLICE_REV1 = 0x7
GI_PROFILE_2_SLICE_REV1 = 0x8
GI_PROFILE_1_SLICE_REV2 = 0x9

CI_PROFILE_1_SLICE = 0x0
CI_PROFILE_2_SLICE = 0x1
CI_PROFILE_3_SLICE = 0x2
CI_PROFILE_4_SLICE = 0x3
CI_PROFILE_7_SLICE = 0x4

ARCH_AMPERE = 7
ARCH_ADA = 8
ARCH_HOPPER = 9
ARCH_BLACKWELL = 10

MEMORY_SLICES = 8   # memory-slice axis of A100 / H100 / H200
COMPUTE_SLICES = 7  # compute slices of A100 / H100 / H200
MAX_GI_ID = 14      # mig-minors lists gi0..gi14
MAX_CI_ID = 7       # and ci0..ci7

GUIDE = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html"


@dataclass(frozen=True)
class GpuInstanceProfile:  # pylint: disable=too-many-instance-attributes
    """One row of a model's GPU-instance profile table."""

    name: str            # "1g.10gb"
    enum: int            # NVML_GPU_INSTANCE_PROFILE_* accepted by nvmlDeviceGetGpuInstanceProfileInfo
    profile_id: int      # the id nvidia-smi -lgip prints and -cgi takes
    slices: int          # compute slices (sliceCount)
    mem_slices: int      # memory slices = placement size
    instances: int       # instanceCount
    sms: int             # multiprocessorCount
    copy_engines: int
    decoders: int
    encoders: int
    jpegs: int
    ofas: int
    memory_mib: int      # memorySizeMB
    starts: Tuple[int, ...]  # valid placement starts on the memory-slice axis
    estimated: bool = False  # memory figure not taken from a transcript

    @property
    def nvml_name(self) -> str:
        """The name NVML reports in the v2 profile structures."""
        return "MIG " + self.name


@dataclass(frozen=True)
class ComputeInstanceProfile:
    """A compute-instance profile inside a GPU instance of a given profile."""

    enum: int
    slices: int
    instances: int
    sms: int
    starts: Tuple[int, ...]
    size: int            # placement size on the GI's compute-slice axis
    name: str

    @property
    def profile_id(self) -> int:
        """CI profile ids equal their enum value (``-cci 0`` creates a 1c CI)."""
        return self.enum


@dataclass(frozen=True)
class GpuModel:  # pylint: disable=too-many-instance-attributes
    """A GPU product as NVML reports it."""

    key: str
    name: str                 # nvmlDeviceGetName
    memory_mib: int           # nvmlDeviceGetMemoryInfo total
    pci_device_id: int        # combined device/vendor id
    pci_subsystem_id: int
    architecture: int         # NVML_DEVICE_ARCH_*
    cuda_cc: Tuple[int, int]
    sms: int
    profiles: Tuple[GpuInstanceProfile, ...] = field(default_factory=tuple)
    source: str = ""
    # Memory errors: A100 and later remap rows instead of retiring pages
    # (NVIDIA, "A100 GPU Memory Error Management"); on them
    # nvmlDeviceGetRetiredPagesPendingStatus is NOT_SUPPORTED and
    # nvmlDeviceGetRemappedRows answers (seen on a real H200, driver 580.159.04).
    row_remapping: bool = True
    # What the health checks read (nvml_sim/README.md "Health"): see HEALTH below.
    health: "Health" = None  # type: ignore[assignment]

    @property
    def page_retirement(self) -> bool:
        """Whether the driver reports retired pages (nvmlDeviceGetRetiredPages*): only before row remapping."""
        return not self.row_remapping

    @property
    def mig_capable(self) -> bool:
        """True when the model has a MIG table."""
        return bool(self.profiles)

    def profile_by_id(self, profile_id: int) -> Optional[GpuInstanceProfile]:
        """The profile with this GPU-instance profile id, if any."""
        for prof in self.profiles:
            if prof.profile_id == profile_id:
                return prof
        return None

    def profile_by_enum(self, enum: int) -> Optional[GpuInstanceProfile]:
        """The profile NVML returns for NVML_GPU_INSTANCE_PROFILE_<enum>."""
        for prof in self.profiles:
            if prof.enum == enum:
                return prof
        return None

    def profile_by_name(self, name: str) -> Optional[GpuInstanceProfile]:
        """The profile called ``name`` (``1g.10gb`` or ``MIG 1g.10gb``)."""
        wanted = name[4:] if name.startswith("MIG ") else name
        for prof in self.profiles:
            if prof.name == wanted:
                return prof
        return None


def _row(name, enum, profile_id, slices, mem_slices, instances, sms, engines, memory_mib,  # pylint: disable=too-many-arguments,too-many-positional-arguments
         estimated=False):
    """Build a profile row; ``engines`` is (CE, NVDEC, NVENC, JPEG, OFA)."""
    copy_engines, decoders, encoders, jpegs, ofas = engines
    return GpuInstanceProfile(
        name=name, enum=enum, profile_id=profile_id, slices=slices, mem_slices=mem_slices,
        instances=instances, sms=sms, copy_engines=copy_engines, decoders=decoders,
        encoders=encoders, jpegs=jpegs, ofas=ofas, memory_mib=memory_mib,
        starts=PLACEMENT_STARTS[profile_id], estimated=estimated)


# ``nvidia-smi mig -lgipp`` (MIG User Guide, "Getting Started with MIG"),
# identical for A100 40GB/80GB, H100 80GB and H200 141GB: profile id -> starts.
PLACEMENT_STARTS: Dict[int, Tuple[int, ...]] = {
    19: (0, 1, 2, 3, 4, 5, 6),
    20: (0, 1, 2, 3, 4, 5, 6),
    15: (0, 2, 4, 6),
    14: (0, 2, 4),
    9: (0, 4),
    5: (0,),
    0: (0,),
}

# A100-SXM4-40GB -- MIG User Guide, "A100 MIG Profiles", Table "GPU Instance
# Profiles on A100" (A100-SXM4-40GB): 1g.5gb 1/8 mem 1/7 SM 0 NVDEC CE1 x7;
# 1g.5gb+me 1 NVDEC/1 JPEG/1 OFA x1; 1g.10gb 1 NVDEC x4; 2g.10gb 1 NVDEC CE2 x3;
# 3g.20gb 2 NVDEC CE3 x2; 4g.20gb 2 NVDEC CE4 x1; 7g.40gb 5 NVDEC/1 JPEG/1 OFA CE7 x1.
# Ids, GiB and SMs: the guide's ``nvidia-smi mig -lgip`` example for A100-SXM4-40GB.
A100_40GB_PROFILES = (
    _row("1g.5gb", GI_PROFILE_1_SLICE, 19, 1, 1, 7, 14, (1, 0, 0, 0, 0), 4864),
    _row("1g.5gb+me", GI_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 14, (1, 1, 0, 1, 1), 4864),
    _row("1g.10gb", GI_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 14, (1, 1, 0, 0, 0), 9856),
    _row("2g.10gb", GI_PROFILE_2_SLICE, 14, 2, 2, 3, 28, (2, 1, 0, 0, 0), 9856),
    _row("3g.20gb", GI_PROFILE_3_SLICE, 9, 3, 4, 2, 42, (3, 2, 0, 0, 0), 20096),
    _row("4g.20gb", GI_PROFILE_4_SLICE, 5, 4, 4, 1, 56, (4, 2, 0, 0, 0), 20096),
    _row("7g.40gb", GI_PROFILE_7_SLICE, 0, 7, 8, 1, 98, (7, 5, 0, 1, 1), 40448),
)

# A100 80GB (SXM4 and PCIe) -- same guide table: "For A100-SXM4-80GB, the
# profile names will change according to the memory proportion - 1g.10gb,
# 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb".  GiB column of
# ``nvidia-smi mig -lgip`` on A100 80GB: 9.50 / 9.50 / 19.50 / 19.50 / 39.25 /
# 39.25 / 79.00 (seed 003 shows 9728MiB MIG devices).
A100_80GB_PROFILES = (
    _row("1g.10gb", GI_PROFILE_1_SLICE, 19, 1, 1, 7, 14, (1, 0, 0, 0, 0), 9728),
    _row("1g.10gb+me", GI_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 14, (1, 1, 0, 1, 1), 9728),
    _row("1g.20gb", GI_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 14, (1, 1, 0, 0, 0), 19968),
    _row("2g.20gb", GI_PROFILE_2_SLICE, 14, 2, 2, 3, 28, (2, 1, 0, 0, 0), 19968),
    _row("3g.40gb", GI_PROFILE_3_SLICE, 9, 3, 4, 2, 42, (3, 2, 0, 0, 0), 40192),
    _row("4g.40gb", GI_PROFILE_4_SLICE, 5, 4, 4, 1, 56, (4, 2, 0, 0, 0), 40192),
    _row("7g.80gb", GI_PROFILE_7_SLICE, 0, 7, 8, 1, 98, (7, 5, 0, 1, 1), 80896),
)

# H100 80GB HBM3 (SXM5) -- MIG User Guide, "H100 MIG Profiles", Table "GPU
# Instance Profiles on H100": 1g.10gb 1 NVDEC/1 JPEG x7; 1g.10gb+me +1 OFA x1;
# 1g.20gb 1/4 mem x4; 2g.20gb 2 NVDEC/2 JPEG CE2 x3; 3g.40gb 3/3 CE3 x2;
# 4g.40gb 4/4 CE4 x1; 7g.80gb 7 NVDEC/7 JPEG/1 OFA CE8 x1.  GiB and SMs:
# ``nvidia-smi mig -lgip`` on H100 80GB HBM3 (9.75, 9.75, 19.62, 19.62, 39.50,
# 39.50, 79.25 GiB; 16, 16, 26, 32, 60, 64, 132 SMs); the guide's R580 MPS
# example shows 3g.40gb MIG devices of 40448MiB with 60 SMs.
H100_80GB_PROFILES = (
    _row("1g.10gb", GI_PROFILE_1_SLICE, 19, 1, 1, 7, 16, (1, 1, 0, 1, 0), 9984),
    _row("1g.10gb+me", GI_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 16, (1, 1, 0, 1, 1), 9984),
    _row("1g.20gb", GI_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 26, (1, 1, 0, 1, 0), 20096),
    _row("2g.20gb", GI_PROFILE_2_SLICE, 14, 2, 2, 3, 32, (2, 2, 0, 2, 0), 20096),
    _row("3g.40gb", GI_PROFILE_3_SLICE, 9, 3, 4, 2, 60, (3, 3, 0, 3, 0), 40448),
    _row("4g.40gb", GI_PROFILE_4_SLICE, 5, 4, 4, 1, 64, (4, 4, 0, 4, 0), 40448),
    _row("7g.80gb", GI_PROFILE_7_SLICE, 0, 7, 8, 1, 132, (8, 7, 0, 7, 1), 81152),
)

# H200 141GB -- MIG User Guide, "H200 MIG Profiles", Table "GPU Instance
# Profiles on H200": 1g.18gb x7; 1g.18gb+me x1; 1g.35gb 1/4 mem x4; 2g.35gb x3;
# 3g.71gb x2; 4g.71gb x1; 7g.141gb CE8 x1.  Every figure (memorySizeMB, SMs,
# engines, ids, instance counts) as real NVML reported it on an H200 with
# driver 580.159.04 (nvml_sim/tests/data/real-h200-580.159.04/calls.json,
# read 2026-11-26 with nvml_sim/real_probe.py): 1g.18gb 16384 MiB/16 SMs,
# 1g.35gb 33280/26, 2g.35gb 33280/32, 3g.71gb 71424/60, 4g.71gb 71424/64,
# 7g.141gb 143360/132 (the earlier estimate of 66816 MiB for 3g/4g was wrong).
H200_PROFILES = (
    _row("1g.18gb", GI_PROFILE_1_SLICE, 19, 1, 1, 7, 16, (1, 1, 0, 1, 0), 16384),
    _row("1g.18gb+me", GI_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 16, (1, 1, 0, 1, 1), 16384),
    _row("1g.35gb", GI_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 26, (1, 1, 0, 1, 0), 33280),
    _row("2g.35gb", GI_PROFILE_2_SLICE, 14, 2, 2, 3, 32, (2, 2, 0, 2, 0), 33280),
    _row("3g.71gb", GI_PROFILE_3_SLICE, 9, 3, 4, 2, 60, (3, 3, 0, 3, 0), 71424),
    _row("4g.71gb", GI_PROFILE_4_SLICE, 5, 4, 4, 1, 64, (4, 4, 0, 4, 0), 71424),
    _row("7g.141gb", GI_PROFILE_7_SLICE, 0, 7, 8, 1, 132, (8, 7, 0, 7, 1), 143360),
)

# B200 -- MIG User Guide, "B200 MIG Profiles" (names, instance counts; the
# catalogue's table); every figure (SMs, memorySizeMB, engines CE/NVDEC/NVENC/
# JPEG/OFA) from NVIDIA's own NVML mock of a B200 (github.com/NVIDIA/go-nvml,
# pkg/nvml/mock/shared/gpus/b200.go, b200_180gb_GpuInstanceProfiles), not from
# a transcript of a real B200 (hence estimated).  Ids and placements: the
# 8-memory-slice table above (the mock's placements count compute slices and
# are not NVML's).
B200_PROFILES = (
    _row("1g.23gb", GI_PROFILE_1_SLICE, 19, 1, 1, 7, 18, (1, 1, 0, 0, 0), 23552, estimated=True),
    _row("1g.23gb+me", GI_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 18, (1, 1, 1, 1, 1), 23552, estimated=True),
    _row("1g.45gb", GI_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 18, (1, 1, 0, 0, 0), 46080, estimated=True),
    _row("2g.45gb", GI_PROFILE_2_SLICE, 14, 2, 2, 3, 36, (2, 2, 1, 1, 1), 46080, estimated=True),
    _row("3g.90gb", GI_PROFILE_3_SLICE, 9, 3, 4, 2, 54, (3, 3, 2, 2, 2), 92160, estimated=True),
    _row("4g.90gb", GI_PROFILE_4_SLICE, 5, 4, 4, 1, 72, (4, 4, 2, 2, 2), 92160, estimated=True),
    _row("7g.180gb", GI_PROFILE_7_SLICE, 0, 7, 8, 1, 126, (7, 7, 4, 4, 4), 184320, estimated=True),
)


def _estimated_rows(names, sms_per_slice):
    """A 7/8-slice Blackwell table of which only names, ids, counts and placements are known (the catalogue's
    sources): memory = the GB of the name x 1024 MiB, SMs and engines as the B200's per slice.  Estimates."""
    rows = []
    for prof, name in zip(B200_PROFILES, names.split()):
        memory = int(name.split(".")[1].split("gb")[0]) * 1024
        rows.append(_row(name, prof.enum, prof.profile_id, prof.slices, prof.mem_slices, prof.instances,
                         sms_per_slice * prof.slices, (prof.copy_engines, prof.decoders, prof.encoders, prof.jpegs, prof.ofas),
                         memory, estimated=True))
    return tuple(rows)


# B300 (HGX B300), GB200, GB300: names and counts as gpucluster's catalogue
# (plugins/module_utils/catalogue/_gpus.py) gives them with their sources;
# ids and placements those of every 7/8-slice GPU; memory and SMs estimated.
B300_PROFILES = _estimated_rows("1g.34gb 1g.34gb+me 1g.67gb 2g.67gb 3g.135gb 4g.135gb 7g.269gb", 18)
GB200_PROFILES = _estimated_rows("1g.24gb 1g.24gb+me 1g.47gb 2g.47gb 3g.95gb 4g.95gb 7g.189gb", 18)
GB300_PROFILES = _estimated_rows("1g.35gb 1g.35gb+me 1g.70gb 2g.70gb 3g.139gb 4g.139gb 7g.278gb", 18)


@dataclass(frozen=True)
class Health:  # pylint: disable=too-many-instance-attributes
    """What a healthy, idle GPU of a model answers to the calls health checks make.

    ``thresholds`` are nvmlDeviceGetTemperatureThreshold's SHUTDOWN, SLOWDOWN,
    MEM_MAX, GPU_MAX (None: NOT_SUPPORTED; the others are NOT_SUPPORTED on
    every model, as on the real H100 and H200).  ``nvlink_version`` is
    nvml.h's nvmlNvlinkVersion_t (NVML_NVLINK_VERSION_3_1 = 5, 4_0 = 6), not
    the NVLink generation.  ``fabric_info``: nvmlDeviceGetGpuFabricInfo is
    supported (nvml.h: Hopper or newer).
    """

    pcie_gen: int
    pcie_width: int
    temperature: int
    thresholds: Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]
    nvlinks: int = 0
    nvlink_version: int = 0
    fabric_info: bool = False
    clocks_event_reasons_supported: int = 0x1FF   # the nine nvmlClocksEventReason* bits
    source: str = ""


_REAL_H100 = "real H100 80GB HBM3, driver 580.159.04 (tests/data/real-h100-580.159.04)"
_REAL_H200 = "real H200, driver 580.159.04 (tests/data/real-h200-580.159.04)"
# PCIe: NVIDIA's product briefs (H100 SXM5/H200 SXM: PCIe Gen5 x16; A100: Gen4 x16; L40S: Gen4 x16),
# the H100 and H200 values also what the real GPUs answered.  NVLink: H100/H200 SXM5 18 links of
# NVLink 4 (NVIDIA H100 Tensor Core GPU Architecture whitepaper; 18 is what `dcgmi diag -p
# pcie.gpu_nvlinks_expected_up=18` expects on H100), A100 SXM4 12 links of NVLink 3 (NVIDIA A100
# Tensor Core GPU Architecture whitepaper); an A100 answers nvmlDeviceGetNvLinkVersion 5
# (open-mpi/hwloc#658).  A100 thresholds 92/89/95/85: what `nvidia-smi -q` prints on A100 SXM4
# (public transcripts; not recorded here).  Idle temperatures of A100 and L40S, and the L40S
# thresholds, are assumed.
HEALTH: Dict[str, Health] = {
    "a100-sxm4": Health(4, 16, 35, (92, 89, 95, 85), nvlinks=12, nvlink_version=5,
                        source="A100 whitepaper; nvidia-smi -q transcripts; hwloc#658"),
    "a100-pcie": Health(4, 16, 35, (92, 89, 95, 85), source="A100 PCIe product brief (no NVLink bridge modelled)"),
    "h100-sxm5": Health(5, 16, 38, (95, 89, 95, 87), nvlinks=18, nvlink_version=6, fabric_info=True, source=_REAL_H100),
    "h200-sxm5": Health(5, 16, 33, (95, 89, 95, 87), nvlinks=18, nvlink_version=6, fabric_info=True, source=_REAL_H200),
    "l40s": Health(4, 16, 35, (94, 91, None, 89), source="L40S product brief (PCIe Gen4 x16); thresholds assumed"),
    # H200 NVL: PCIe Gen5 x16 card; its NVLink bridge is not modelled (as on the A100 PCIe); idle temperature and
    # thresholds assumed equal to the H200's.
    "h200-nvl": Health(5, 16, 33, (95, 89, 95, 87), fabric_info=True, source="H200 NVL product brief; H200 figures assumed"),
    # Blackwell SXM: 18 links of NVLink 5 (nvmlNvlinkVersion_t NVML_NVLINK_VERSION_5_0 = 7); B200 PCIe Gen5 x16
    # (HGX B200), B300 PCIe Gen6 x16 (what a B300 SXM6 AC reports, public measurements); GB200/GB300 reach their
    # Grace over NVLink-C2C, the PCIe figures there are assumed.  Temperatures and thresholds assumed (H200's).
    "b200": Health(5, 16, 33, (95, 89, 95, 87), nvlinks=18, nvlink_version=7, fabric_info=True,
                   source="HGX B200 datasheet (PCIe Gen5, NVLink 5); thresholds assumed"),
    "b300": Health(6, 16, 33, (95, 89, 95, 87), nvlinks=18, nvlink_version=7, fabric_info=True,
                   source="B300 SXM6 AC measurements (PCIe Gen6 x16, NV18); thresholds assumed"),
    "gb200": Health(5, 16, 33, (95, 89, 95, 87), nvlinks=18, nvlink_version=7, fabric_info=True,
                    source="GB200 NVL72 (18 NVLink 5 links per GPU); PCIe and thresholds assumed"),
    "gb300": Health(6, 16, 33, (95, 89, 95, 87), nvlinks=18, nvlink_version=7, fabric_info=True,
                    source="GB300 NVL72 (18 NVLink 5 links per GPU); PCIe and thresholds assumed"),
}

MODELS: Dict[str, GpuModel] = {
    model.key: model for model in (
        GpuModel("a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", 40960, 0x20B010DE, 0x134F10DE,
                 ARCH_AMPERE, (8, 0), 108, A100_40GB_PROFILES, GUIDE + "#a100-mig-profiles",
                 health=HEALTH["a100-sxm4"]),
        GpuModel("a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", 81920, 0x20B210DE, 0x147F10DE,
                 ARCH_AMPERE, (8, 0), 108, A100_80GB_PROFILES, GUIDE + "#a100-mig-profiles",
                 health=HEALTH["a100-sxm4"]),
        GpuModel("a100-pcie-80gb", "NVIDIA A100 80GB PCIe", 81920, 0x20B510DE, 0x153310DE,
                 ARCH_AMPERE, (8, 0), 108, A100_80GB_PROFILES, GUIDE + "#a100-mig-profiles",
                 health=HEALTH["a100-pcie"]),
        GpuModel("h100-sxm5-80gb", "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, 0x16C110DE,
                 ARCH_HOPPER, (9, 0), 132, H100_80GB_PROFILES, GUIDE + "#h100-mig-profiles",
                 health=HEALTH["h100-sxm5"]),
        GpuModel("h200-sxm5-141gb", "NVIDIA H200", 143771, 0x233510DE, 0x18BE10DE,
                 ARCH_HOPPER, (9, 0), 132, H200_PROFILES, GUIDE + "#h200-mig-profiles",
                 health=HEALTH["h200-sxm5"]),
        # H200 NVL: the H200's profile table (same GH100 die and 141 GB; mig-parted gives both device ids the same
        # profiles), not read from a real H200 NVL.  Device ids: mig-parted config-default.yaml device filters
        # (0x233B H200 NVL, 0x2901 B200, 0x2941 GB200); B300/GB300: not known here (vendor id only).
        GpuModel("h200-nvl", "NVIDIA H200 NVL", 143771, 0x233B10DE, 0x000010DE,
                 ARCH_HOPPER, (9, 0), 132, H200_PROFILES, GUIDE + "#h200-mig-profiles", health=HEALTH["h200-nvl"]),
        GpuModel("b200", "NVIDIA B200", 184320, 0x290110DE, 0x000010DE,
                 ARCH_BLACKWELL, (10, 0), 148, B200_PROFILES, GUIDE + "#b200-mig-profiles", health=HEALTH["b200"]),
        GpuModel("b300", "NVIDIA B300 SXM6 AC", 275456, 0x000010DE, 0x000010DE,
                 ARCH_BLACKWELL, (10, 3), 148, B300_PROFILES, "GPU Operator 25.10.0 release notes", health=HEALTH["b300"]),
        GpuModel("gb200", "NVIDIA GB200", 193536, 0x294110DE, 0x000010DE,
                 ARCH_BLACKWELL, (10, 0), 152, GB200_PROFILES, "mig-parted config-default.yaml (0x2941)", health=HEALTH["gb200"]),
        GpuModel("gb300", "NVIDIA GB300", 284672, 0x000010DE, 0x000010DE,
                 ARCH_BLACKWELL, (10, 3), 152, GB300_PROFILES, "NVIDIA DGX Station playbook, MIG on DGX Station",
                 health=HEALTH["gb300"]),
        # L40S: Ada, no MIG (not in the guide's "Supported GPUs" table).
        # Its memory-error reporting is not recorded here: it keeps page
        # retirement (not checked on a real L40S).
        GpuModel("l40s", "NVIDIA L40S", 46068, 0x26B910DE, 0x185110DE,
                 ARCH_ADA, (8, 9), 142, (), "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html",
                 row_remapping=False, health=HEALTH["l40s"]),
    )
}

# Compute-instance profiles offered by a GI of N compute slices:
# N -> ((CI slices, instance count, placement starts), ...)
_CI_LAYOUT: Dict[int, Tuple[Tuple[int, int, Tuple[int, ...]], ...]] = {
    1: ((1, 1, (0,)),),
    2: ((1, 2, (0, 1)), (2, 1, (0,))),
    3: ((1, 3, (0, 1, 2)), (2, 1, (0,)), (3, 1, (0,))),
    4: ((1, 4, (0, 1, 2, 3)), (2, 2, (0, 2)), (4, 1, (0,))),
    7: ((1, 7, (0, 1, 2, 3, 4, 5, 6)), (2, 3, (0, 2, 4)), (3, 2, (0, 4)), (4, 1, (0,)), (7, 1, (0,))),
}
_CI_ENUM_BY_SLICES = {1: CI_PROFILE_1_SLICE, 2: CI_PROFILE_2_SLICE, 3: CI_PROFILE_3_SLICE,
                      4: CI_PROFILE_4_SLICE, 7: CI_PROFILE_7_SLICE}


def ci_profiles(model: GpuModel, gi_profile: GpuInstanceProfile) -> List[ComputeInstanceProfile]:
    """Compute-instance profiles available in a GI of ``gi_profile``."""
    base_sms = {prof.slices: prof.sms for prof in model.profiles if prof.enum in (
        GI_PROFILE_1_SLICE, GI_PROFILE_2_SLICE, GI_PROFILE_3_SLICE, GI_PROFILE_4_SLICE, GI_PROFILE_7_SLICE)}
    result = []
    for slices, count, starts in _CI_LAYOUT[gi_profile.slices]:
        full = slices == gi_profile.slices
        # A CI that spans the whole GI gets its SMs (and, for 7g, the 8-wide
        # placement the hardware reports); a smaller CI gets the SMs of the
        # GI profile with that many slices.
        sms = gi_profile.sms if full else base_sms[slices]
        size = gi_profile.mem_slices if full and gi_profile.slices == 7 else slices
        name = "MIG " + gi_profile.name if full else "MIG %dc.%s" % (slices, gi_profile.name)
        result.append(ComputeInstanceProfile(_CI_ENUM_BY_SLICES[slices], slices, count, sms, starts, size, name))
    return result


def ci_profile(model: GpuModel, gi_profile: GpuInstanceProfile, enum: int) -> Optional[ComputeInstanceProfile]:
    """The CI profile with enum/id ``enum`` inside a GI of ``gi_profile``."""
    for prof in ci_profiles(model, gi_profile):
        if prof.enum == enum:
            return prof
    return None


def gi_id_for_placement(start: int, size: int, mem_slice_xor: int = 0) -> int:
    """GPU-instance id the driver gives a GI at placement ``start:size``.

    The model (evidence in ``nvml_sim/README.md``, "GPU-instance and
    compute-instance ids"):

    * **The GI id is the driver's swizzId**, a node of a fixed binary tree
      over the 8 physical memory slices: 0 = all, 1-2 = halves, 3-6 =
      quarters, 7-14 = single slices.  NVIDIA's open kernel modules
      (github.com/NVIDIA/open-gpu-kernel-modules,
      ``src/nvidia/src/kernel/gpu/mig_mgr/arch/ampere/kmigmgr_ga100.c``, the
      HAL used for GA100, GH100 and later) map memory size to swizzIds
      ``FULL -> rangeMake(0, 0)``, ``HALF -> rangeMake(1, 2)``,
      ``QUARTER -> rangeMake(3, 6)``, ``EIGHTH -> rangeMake(7, 14)``, and
      ``kmigmgrSwizzIdToSpan_GA100`` gives each swizzId one fixed span
      (``case 7: rangeMake(0, 0)`` ... ``case 14: rangeMake(7, 7)``).
      ``kernel_mig_manager.c`` reports ``queryPartitionInfo[i].swizzId`` as
      the instance id and registers the GI's capability under it
      (``osRmCapRegisterSmcPartition(..., swizzId)``: mig-minors' ``gi0`` ..
      ``gi14``).  So an id names a physical place: it does not depend on
      creation order, and a GI re-created at the same placement gets the
      same id again.
    * **The placement NVML reports is logical**: on some GPUs the memory-slice
      axis is mirrored against the physical one.  Observed: the identity
      (the MIG User Guide's examples, seed 003's GPU 2: 7 x 1g -> GI 7-13)
      and the halves swapped, physical slice = logical slice XOR 4: DCGM
      issue #138 (github.com/NVIDIA/DCGM/issues/138, ``nvidia-smi mig -lgi``
      on two GPUs of one node) lists the same placements with different ids::

          |   0  MIG 1g.10gb         19        9          2:1     |
          |   0  MIG 1g.10gb         19       10          3:1     |
          |   0  MIG 2g.20gb         14        3          0:2     |
          |   0  MIG 3g.40gb          9        2          4:4     |
          |   1  MIG 1g.10gb         19       13          2:1     |
          |   1  MIG 1g.10gb         19       14          3:1     |
          |   1  MIG 2g.20gb         14        5          0:2     |
          |   1  MIG 3g.40gb          9        1          4:4     |

      GPU 0 is the tree as is; GPU 1 is the tree with ``start ^ 4``.  The
      same XOR explains dask-cuda issue #583 (an A100 40GB, profile 1g.5gb, on AWS):
      ``nvidia-smi mig -cgi 19,19,19,19,19,19,19`` printed "Successfully
      created GPU instance ID 9, 7, 8, 11, 12, 13, 14" -- the placements the
      guide's GPU fills in that order (6, 4, 5, 0, 1, 2, 3, GI 13, 11, 12,
      7, 8, 9, 10) XOR 4 -- and seed 003's GPU 3 (GI 7, 8, 9, 11, 12, 13,
      14 from one ``-cgi 19 x7 -C`` on a fresh GPU).

    ``mem_slice_xor`` is that per-GPU constant (0 or 4 observed; other
    values are an assumption the function merely allows).  XOR with a
    constant keeps aligned blocks aligned, so the physical block of
    ``start:size`` starts at ``start ^ (mem_slice_xor & ~(size - 1))``.
    """
    phys_start = start ^ (mem_slice_xor & ~(size - 1) & (MEMORY_SLICES - 1))
    base = {8: 0, 4: 1, 2: 3, 1: 7}[size]
    return base + phys_start // size


def placement_for_gi_id(gi_id: int, mem_slice_xor: int = 0) -> Tuple[int, int]:
    """The placement ``(start, size)`` of GI ``gi_id`` -- the inverse of :func:`gi_id_for_placement`."""
    if not 0 <= gi_id <= MAX_GI_ID:
        raise ValueError("GPU instance id %r is outside 0-%d" % (gi_id, MAX_GI_ID))
    size = MEMORY_SLICES >> ((gi_id + 1).bit_length() - 1)
    phys_start = (gi_id - {8: 0, 4: 1, 2: 3, 1: 7}[size]) * size
    return phys_start ^ (mem_slice_xor & ~(size - 1) & (MEMORY_SLICES - 1)), size
