"""A STAND-IN for ``nvidia-smi`` on simulated nodes (never on a host with a GPU).

``python3 -m nvmlsim.smi ARGS`` (installed on simulated GPU nodes as
``/usr/local/bin/nvidia-smi`` by ``scripts/lib/node-prepare.sh``; from a
checkout ``nvml_sim/bin/nvidia-smi``) answers through the simulated
``pynvml``, so it reports whatever the simulator's state holds.  It supports
exactly what this collection's hooks, roles and tests run, in real
nvidia-smi's output format:

* ``-L`` / ``--list-gpus``: ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)``
  and, on a GPU in MIG mode, ``  MIG 1g.10gb     Device  0: (UUID: MIG-...)``;
* ``--query-gpu=FIELDS --format=csv[,noheader][,nounits]`` (see
  :data:`GPU_FIELDS`);
* ``--query-compute-apps=FIELDS --format=...`` (see :data:`APP_FIELDS`);
* ``-i`` / ``--id=`` (comma-separated indices, UUIDs or PCI bus ids);
* ``--gpu-reset -i N`` (``mig_gpu_reset_command``'s default): the simulated
  reset of ``nvmlsim reset``;
* ``-h`` / ``--help``.

Anything else gets real nvidia-smi's error text and exit status: an unknown
option ``ERROR: Option X is not recognized. Please run 'nvidia-smi -h' for
help.`` (2), an unknown field ``Field "X" is not a valid field to query.`` (2),
no ``--format`` (2), ``No devices were found`` (6), no driver (no state file)
``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
driver. ...`` (9).  Like nvidia-smi, everything goes to stdout.
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import api as pynvml
from . import errors as E
from . import node, store
from .errors import SimError, StateError

HELP_HINT = "Please run 'nvidia-smi -h' for help."
DRIVER_MISSING = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                  "Make sure that the latest NVIDIA driver is installed and running.")
NO_DEVICES = "No devices were found"
RC_OK, RC_BAD_ARGUMENT, RC_NOT_FOUND, RC_DRIVER, RC_OTHER = 0, 2, 6, 9, 255
RC_GPU_IS_LOST = 15       # nvidia-smi exits with the NVML error of a GPU it could not open
GPU_LOST = "GPU is lost.  Reboot the system to recover this GPU"
USAGE = """NVIDIA System Management Interface -- STAND-IN on the NVML simulator (nvml_sim), not NVIDIA's program.

It answers from the simulated GPUs ($NVMLSIM_STATE) and supports only:

    -L, --list-gpus                  list GPUs and MIG devices with their UUIDs
    -i, --id=ID[,ID...]              restrict to GPUs by index, UUID or PCI bus id
    --query-gpu=FIELDS               fields: %s
    --query-compute-apps=FIELDS      fields: %s
    --format=csv[,noheader][,nounits]
    -r, --gpu-reset -i ID            reset an idle GPU (applies a pending MIG mode)
    -h, --help                       this text
"""


class SmiError(Exception):
    """What nvidia-smi prints before exiting with ``rc``."""

    def __init__(self, text: str, rc: int):
        super().__init__(text)
        self.text = text
        self.rc = rc


def _text_of_error(exc: pynvml.NVMLError) -> str:
    """The bracketed value nvidia-smi prints for a field whose NVML call failed."""
    if exc.value == pynvml.NVML_ERROR_NOT_SUPPORTED:
        return "[N/A]"
    if exc.value == pynvml.NVML_ERROR_NO_PERMISSION:
        return "[Insufficient Permissions]"
    if exc.value == pynvml.NVML_ERROR_GPU_IS_LOST:
        return "[GPU is lost]"
    return "[Unknown Error]"


def _mib(value_bytes: int) -> int:
    return int(value_bytes) // (1024 * 1024)


def _yes_no(value: int) -> str:
    return "Yes" if value == pynvml.NVML_FEATURE_ENABLED else "No"


def _mig_mode(handle, which: int) -> str:
    return ("Disabled", "Enabled")[pynvml.nvmlDeviceGetMigMode(handle)[which]]


def _ecc(uncorrected: bool, volatile: bool) -> Callable:
    error_type = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED if uncorrected else pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED
    counter = pynvml.NVML_VOLATILE_ECC if volatile else pynvml.NVML_AGGREGATE_ECC
    return lambda handle, _count: str(pynvml.nvmlDeviceGetTotalEccErrors(handle, error_type, counter))


# name: (header, unit or None, value(handle, gpu_count) -> str); aliases point at a name.
GPU_FIELDS: Dict[str, Tuple[str, Optional[str], Callable]] = {
    "index": ("index", None, lambda h, _c: str(pynvml.nvmlDeviceGetIndex(h))),
    "count": ("count", None, lambda _h, c: str(c)),
    "name": ("name", None, lambda h, _c: pynvml.nvmlDeviceGetName(h)),
    "uuid": ("uuid", None, lambda h, _c: pynvml.nvmlDeviceGetUUID(h)),
    "serial": ("serial", None, lambda h, _c: pynvml.nvmlDeviceGetSerial(h)),
    "pci.bus_id": ("pci.bus_id", None, lambda h, _c: pynvml.nvmlDeviceGetPciInfo(h).busId),
    "driver_version": ("driver_version", None, lambda _h, _c: pynvml.nvmlSystemGetDriverVersion()),
    "compute_cap": ("compute_cap", None, lambda h, _c: "%d.%d" % pynvml.nvmlDeviceGetCudaComputeCapability(h)),
    "memory.total": ("memory.total", "MiB", lambda h, _c: str(_mib(pynvml.nvmlDeviceGetMemoryInfo(h).total))),
    "memory.used": ("memory.used", "MiB", lambda h, _c: str(_mib(pynvml.nvmlDeviceGetMemoryInfo(h).used))),
    "memory.free": ("memory.free", "MiB", lambda h, _c: str(_mib(pynvml.nvmlDeviceGetMemoryInfo(h).free))),
    "mig.mode.current": ("mig.mode.current", None, lambda h, _c: _mig_mode(h, 0)),
    "mig.mode.pending": ("mig.mode.pending", None, lambda h, _c: _mig_mode(h, 1)),
    "ecc.errors.corrected.volatile.total": ("ecc.errors.corrected.volatile.total", None, _ecc(False, True)),
    "ecc.errors.uncorrected.volatile.total": ("ecc.errors.uncorrected.volatile.total", None, _ecc(True, True)),
    "ecc.errors.corrected.aggregate.total": ("ecc.errors.corrected.aggregate.total", None, _ecc(False, False)),
    "ecc.errors.uncorrected.aggregate.total": ("ecc.errors.uncorrected.aggregate.total", None, _ecc(True, False)),
    "retired_pages.pending": ("retired_pages.pending", None,
                              lambda h, _c: _yes_no(pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h))),
    # A100 and later remap rows (retired_pages.* are [N/A] there, as on a real H200)
    "remapped_rows.correctable": ("remapped_rows.correctable", None, lambda h, _c: str(pynvml.nvmlDeviceGetRemappedRows(h)[0])),
    "remapped_rows.uncorrectable": ("remapped_rows.uncorrectable", None,
                                    lambda h, _c: str(pynvml.nvmlDeviceGetRemappedRows(h)[1])),
    "remapped_rows.pending": ("remapped_rows.pending", None,
                              lambda h, _c: "Yes" if pynvml.nvmlDeviceGetRemappedRows(h)[2] else "No"),
    "remapped_rows.failure": ("remapped_rows.failure", None,
                              lambda h, _c: "Yes" if pynvml.nvmlDeviceGetRemappedRows(h)[3] else "No"),
    # what health checks query, in the real 580 nvidia-smi's format (tests/data/real-h100-580.159.04/smi.txt)
    "persistence_mode": ("persistence_mode", None,
                         lambda h, _c: "Enabled" if pynvml.nvmlDeviceGetPersistenceMode(h) else "Disabled"),
    "pcie.link.gen.max": ("pcie.link.gen.max", None, lambda h, _c: str(pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h))),
    "pcie.link.width.max": ("pcie.link.width.max", None, lambda h, _c: str(pynvml.nvmlDeviceGetMaxPcieLinkWidth(h))),
    "pcie.link.gen.current": ("pcie.link.gen.current", None,
                              lambda h, _c: str(pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h))),
    "pcie.link.width.current": ("pcie.link.width.current", None,
                                lambda h, _c: str(pynvml.nvmlDeviceGetCurrPcieLinkWidth(h))),
    "temperature.gpu": ("temperature.gpu", None, lambda h, _c: str(pynvml.nvmlDeviceGetTemperature(h, 0))),
    "clocks_event_reasons.active": ("clocks_event_reasons.active", None,
                                    lambda h, _c: "0x%016X" % pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)),
}
GPU_ALIASES = {"gpu_name": "name", "gpu_uuid": "uuid", "gpu_serial": "serial", "gpu_bus_id": "pci.bus_id"}

# name: (header, unit or None, value(process, gpu handle) -> str)
APP_FIELDS: Dict[str, Tuple[str, Optional[str], Callable]] = {
    "pid": ("pid", None, lambda p, _h: str(p.pid)),
    "process_name": ("process_name", None, lambda p, _h: pynvml.nvmlSystemGetProcessName(p.pid)),
    "used_memory": ("used_gpu_memory", "MiB", lambda p, _h: "[N/A]" if p.usedGpuMemory is None else str(_mib(p.usedGpuMemory))),
    "gpu_uuid": ("gpu_uuid", None, lambda _p, h: pynvml.nvmlDeviceGetUUID(h)),
    "gpu_name": ("gpu_name", None, lambda _p, h: pynvml.nvmlDeviceGetName(h)),
    "gpu_bus_id": ("gpu_bus_id", None, lambda _p, h: pynvml.nvmlDeviceGetPciInfo(h).busId),
    "gpu_serial": ("gpu_serial", None, lambda _p, h: pynvml.nvmlDeviceGetSerial(h)),
}
APP_ALIASES = {"name": "process_name", "used_gpu_memory": "used_memory"}


def _fields(text: str, table: dict, aliases: dict) -> List[str]:
    names = []
    for raw in text.split(","):
        name = raw.strip()
        name = aliases.get(name, name)
        if name not in table:
            raise SmiError('Field "%s" is not a valid field to query.' % raw.strip(), RC_BAD_ARGUMENT)
        names.append(name)
    return names


def _format(text: Optional[str]) -> Tuple[bool, bool]:
    """(header, units) from ``--format=``."""
    if text is None:
        raise SmiError('"--format=" switch is missing. ' + HELP_HINT, RC_BAD_ARGUMENT)
    parts = [p.strip() for p in text.split(",")]
    if "csv" not in parts or any(p not in ("csv", "noheader", "nounits") for p in parts):
        raise SmiError("Invalid combination of input arguments. " + HELP_HINT, RC_BAD_ARGUMENT)
    return "noheader" not in parts, "nounits" not in parts


def parse_args(argv: Sequence[str]) -> dict:
    """The options nvidia-smi was called with; :class:`SmiError` for anything unsupported."""
    opts: Dict[str, Optional[str]] = {"mode": None, "query": None, "format": None, "id": None}
    args = list(argv)
    i = 0

    def value(name: str, inline: Optional[str]) -> str:
        nonlocal i
        if inline is not None:
            return inline
        if i + 1 >= len(args):
            raise SmiError("ERROR: Option %s is missing its value. %s" % (name, HELP_HINT), RC_BAD_ARGUMENT)
        i += 1
        return args[i]

    def set_mode(mode: str) -> None:
        if opts["mode"] not in (None, mode):
            raise SmiError("Invalid combination of input arguments. " + HELP_HINT, RC_BAD_ARGUMENT)
        opts["mode"] = mode

    while i < len(args):
        arg = args[i]
        name, inline = (arg.split("=", 1) + [None])[:2] if arg.startswith("--") else (arg, None)
        if name in ("-h", "--help"):
            set_mode("help")
        elif name in ("-L", "--list-gpus"):
            set_mode("list")
        elif name in ("-r", "--gpu-reset"):
            set_mode("reset")
        elif name in ("--query-gpu", "--query-compute-apps"):
            set_mode(name[2:])
            opts["query"] = value(name, inline)
        elif name == "--format":
            opts["format"] = value(name, inline)
        elif name in ("-i", "--id"):
            opts["id"] = value(name, inline)
        else:
            raise SmiError("ERROR: Option %s is not recognized. %s" % (arg, HELP_HINT), RC_BAD_ARGUMENT)
        i += 1
    if opts["mode"] is None:
        raise SmiError("Invalid combination of input arguments. " + HELP_HINT + " (this STAND-IN has no default "
                       "summary table; use -L, --query-gpu or --query-compute-apps)", RC_BAD_ARGUMENT)
    return opts


def _handles(id_text: Optional[str]) -> List[Tuple[int, object]]:
    """(index, handle) of every GPU, or of those ``-i`` names, in index order.

    A GPU whose handle NVML will not give (GPU_IS_LOST after Xid 79) comes as (index, the
    "Unable to determine the device handle ..." line nvidia-smi prints for it).
    """
    count = pynvml.nvmlDeviceGetCount()
    every = []
    for index in range(count):
        try:
            every.append((index, pynvml.nvmlDeviceGetHandleByIndex(index)))
        except pynvml.NVMLError_GpuIsLost:
            every.append((index, _lost_line(index)))
    if id_text is None:
        chosen = every
    else:
        wanted = [w.strip() for w in id_text.split(",") if w.strip()]
        chosen = []
        for index, handle in every:
            keys = _keys(index, handle)
            if any(w.upper() in keys for w in wanted):
                chosen.append((index, handle))
    if not chosen:
        raise SmiError(NO_DEVICES, RC_NOT_FOUND)
    return chosen


def _bus_id(index: int) -> str:
    """The PCI bus id of GPU ``index`` from the state (what the driver still knows of a lost GPU)."""
    return node.gpu_by_index(store.load(), index)["pci_bus_id"]


def _lost_line(index: int) -> str:
    """nvidia-smi's line for a GPU that fell off the bus: ``... for GPU0000:1B:00.0: GPU is lost.  Reboot ...``."""
    return "Unable to determine the device handle for GPU%s: %s" % (_bus_id(index)[4:], GPU_LOST)


def _keys(index: int, handle) -> set:
    """What ``-i`` may name a GPU by: index, UUID, PCI bus id (with or without its 8-digit domain)."""
    if isinstance(handle, str):
        bus = _bus_id(index).upper()
        return {str(index), bus, bus[4:]}
    bus = pynvml.nvmlDeviceGetPciInfo(handle).busId.upper()
    return {str(index), pynvml.nvmlDeviceGetUUID(handle).upper(), bus, bus[4:]}


def _finish(lines: List[str], handles: List[Tuple[int, object]]) -> List[str]:
    """The lines, or with a lost GPU among ``handles`` the same lines and exit status 15, as nvidia-smi does."""
    if any(isinstance(handle, str) for _index, handle in handles):
        raise SmiError("\n".join(lines), RC_GPU_IS_LOST)
    return lines


def _cell(getter: Callable, unit: Optional[str], units: bool, *args) -> str:
    try:
        text = getter(*args)
    except pynvml.NVMLError as exc:
        return _text_of_error(exc)
    return "%s %s" % (text, unit) if unit and units and not text.startswith("[") else text


def _header(table: dict, names: List[str]) -> str:
    return ", ".join(table[n][0] + (" [%s]" % table[n][1] if table[n][1] else "") for n in names)


def query_gpu(opts: dict) -> List[str]:
    names = _fields(opts["query"], GPU_FIELDS, GPU_ALIASES)
    header, units = _format(opts["format"])
    handles = _handles(opts["id"])
    count = pynvml.nvmlDeviceGetCount()
    lines = [_header(GPU_FIELDS, names)] if header else []
    for _index, handle in handles:
        if isinstance(handle, str):   # a lost GPU: the line, then every field [GPU is lost]
            lines += [handle, ", ".join(["[GPU is lost]"] * len(names))]
            continue
        lines.append(", ".join(_cell(GPU_FIELDS[n][2], GPU_FIELDS[n][1], units, handle, count) for n in names))
    return _finish(lines, handles)


def query_compute_apps(opts: dict) -> List[str]:
    names = _fields(opts["query"], APP_FIELDS, APP_ALIASES)
    header, units = _format(opts["format"])
    lines = [_header(APP_FIELDS, names)] if header else []
    handles = _handles(opts["id"])
    for _index, handle in handles:
        if isinstance(handle, str):
            lines.append(handle)
            continue
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            lines.append(", ".join(_cell(APP_FIELDS[n][2], APP_FIELDS[n][1], units, proc, handle) for n in names))
    return _finish(lines, handles)


def list_gpus(opts: dict) -> List[str]:
    lines = []
    handles = _handles(opts["id"])
    for index, handle in handles:
        if isinstance(handle, str):
            lines.append(handle)
            continue
        name = pynvml.nvmlDeviceGetName(handle)
        lines.append("GPU %d: %s (UUID: %s)" % (index, name, pynvml.nvmlDeviceGetUUID(handle)))
        try:
            enabled = pynvml.nvmlDeviceGetMigMode(handle)[0] == pynvml.NVML_DEVICE_MIG_ENABLE
        except pynvml.NVMLError:
            enabled = False
        if not enabled:
            continue
        for mig_index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, mig_index)
            except pynvml.NVMLError_NotFound:
                continue
            profile = pynvml.nvmlDeviceGetName(mig)[len(name):].strip()
            lines.append("  %-15s Device %2d: (UUID: %s)" % (profile, mig_index, pynvml.nvmlDeviceGetUUID(mig)))
    return _finish(lines, handles)


def gpu_reset(opts: dict) -> List[str]:
    """``nvidia-smi --gpu-reset -i N``: the simulator's reset, nvidia-smi's messages."""
    if opts["id"] is None:
        raise SmiError("Invalid combination of input arguments. " + HELP_HINT + " (this STAND-IN resets only with -i ID)",
                       RC_BAD_ARGUMENT)
    handles = _handles(opts["id"])
    lost = [handle for _index, handle in handles if isinstance(handle, str)]
    if lost:
        raise SmiError("\n".join(lost), RC_GPU_IS_LOST)
    indices = [index for index, _handle in handles]
    done, failed = [], []
    with store.transaction() as state:
        for index in indices:
            gpu = node.gpu_by_index(state, index)
            try:
                node.reset_gpu(gpu)
            except SimError as exc:
                failed.append((gpu["pci_bus_id"], "In use by another client" if exc.code == E.IN_USE else exc.message))
            else:
                done.append(gpu["pci_bus_id"])
    if failed:
        lines = ["The following GPUs could not be reset:"] + ["  GPU %s: %s" % item for item in failed]
        lines += ["", "%d device%s currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
                  "application, graphics application such as an X server, or a monitoring application such as another "
                  "instance of nvidia-smi). Please first kill all processes using this device and all compute "
                  "applications running in the system." % (len(failed), " is" if len(failed) == 1 else "s are")]
        raise SmiError("\n".join(lines), RC_OTHER)
    return ["GPU %s was successfully reset." % bus for bus in done] + ["All done."]


def run(argv: Sequence[str]) -> Tuple[int, str]:
    """(exit status, stdout text) of ``nvidia-smi ARGV`` on the simulated node."""
    try:
        opts = parse_args(argv)
        if opts["mode"] == "help":
            return RC_OK, USAGE % (", ".join(sorted(GPU_FIELDS)), ", ".join(sorted(APP_FIELDS)))
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError_DriverNotLoaded:
            raise SmiError(DRIVER_MISSING, RC_DRIVER) from None
        except pynvml.NVMLError as exc:
            raise SmiError("Failed to initialize NVML: %s" % exc, RC_OTHER) from None
        try:
            action = {"list": list_gpus, "query-gpu": query_gpu, "query-compute-apps": query_compute_apps,
                      "reset": gpu_reset}[opts["mode"]]
            lines = action(opts)
        except pynvml.NVMLError as exc:
            raise SmiError("Unable to determine the device handle for GPU: %s" % exc, RC_OTHER) from None
        except StateError as exc:
            raise SmiError("Failed to initialize NVML: Unknown Error (%s)" % exc, RC_OTHER) from None
        finally:
            pynvml.nvmlShutdown()
    except SmiError as exc:
        return exc.rc, exc.text + "\n"
    return RC_OK, "".join(line + "\n" for line in lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Console entry point (``python3 -m nvmlsim.smi``)."""
    rc, text = run(sys.argv[1:] if argv is None else argv)
    sys.stdout.write(text)
    sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
