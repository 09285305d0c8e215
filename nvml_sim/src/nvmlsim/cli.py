"""``nvmlsim``: create and drive a simulated GPU node.

    nvmlsim create --preset NAME [--mig-minors PATH] [--ib-root PATH] [--auto-reset] [--force] [--fit-cpus | --all-cpus]
    nvmlsim presets
    nvmlsim show [--json]
    nvmlsim process add --gpu N --pid P --name NAME [--used-mib M] [--gi ID --ci ID]
    nvmlsim process remove --pid P [--gpu N]
    nvmlsim ecc --gpu N [--uncorrected K] [--corrected K] [--retired-pages-pending yes|no]
                        [--remap-pending yes|no] [--remap-failure yes|no]
    nvmlsim reset --gpu N
    nvmlsim reboot
    nvmlsim boot
    nvmlsim inject --call NAME --error NVML_ERROR_X [--after N] [--count K]
    nvmlsim inject --clear
    nvmlsim persistence --gpu N --mode on|off
    nvmlsim pcie --gpu N [--gen G] [--width W] [--restore]
    nvmlsim clocks --gpu N --reasons NAME[,NAME...]|none
    nvmlsim temperature --gpu N --celsius T
    nvmlsim nvlink --gpu N --link L [--state up|down] [--replay K] [--recovery K] [--crc-flit K] [--crc-data K]
    nvmlsim fabric-manager [--state running|stopped|starting] [--version V|driver]
    nvmlsim fabric-domain --cluster-uuid UUID --clique N | --clear
    nvmlsim xid --gpu N --code C [--text TEXT] [--pid P [--name NAME]]
    nvmlsim driver --version V [--cuda N] [--kernel-module open|proprietary]
    nvmlsim module --load NAME | --unload NAME
    nvmlsim ib --hca HCA [--port P] [--state active|down|init|armed] [--phys-state linkup|polling|disabled]
               [--rate GBPS] [--width 1X|2X|4X] [--counter NAME=K ...]
    nvmlsim ib --hca HCA [--port P] --restore

The node lives in ``$NVMLSIM_STATE`` (default /var/lib/nvmlsim/state.json);
device files go under ``$NVMLSIM_ROOT`` (default /).  Exit status: 0 on
success, 1 when the simulated driver refuses (GPU in use ...) or there is no
node, 2 on bad input (unknown preset, GPU, pid, call or error name).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import List, Optional

from . import devfiles, fabricmanager, ib, kmod, node, presets, store
from .errors import GPU_IS_LOST, INVALID_ARGUMENT, NAMES, NOT_FOUND, SimError, StateError, code_from_text


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def _mig_text(gpu: dict) -> str:
    current, pending = gpu.get("mig_current"), gpu.get("mig_pending")
    if current is None:
        return "MIG N/A"
    names = {0: "Disabled", 1: "Enabled"}
    text = "MIG " + names[current]
    if pending != current:
        text += " (pending %s until reset)" % names[pending]
    return text


def annotated(state: dict) -> dict:
    """The state plus what the driver derives from it (capability minors, names)."""
    out = json.loads(json.dumps(state))
    out["state_path"] = store.state_path()
    out["root"] = devfiles.root_dir()
    out["infiniband"] = {"root": ib.root(state), "hcas": ib.ports(state)}
    out["kernel_modules"] = {"root": kmod.module_root(), "loaded": kmod.loaded(state), "flavour": kmod.flavour(state)}
    out["driver_version_file"] = {"path": kmod.version_path(),
                                  "text": kmod.version_text(state) if "nvidia" in kmod.loaded(state) else None}
    if state.get("nvswitch"):
        out["fabric_manager_binary"] = {"version": fabricmanager.version(state),
                                        "follows_driver": "fabric_manager_version" not in state}
        out["fabric_domain"] = _fabric_domain_view(state)
    for gpu in out["gpus"]:
        model = node.model_of(gpu)
        gpu["name"] = model.name
        gpu["device_file"] = "/dev/nvidia%d" % gpu["minor"]
        for gi in gpu["gpu_instances"]:
            gi["profile"] = model.profile_by_id(gi["profile_id"]).name
            gi["cap_minor"] = devfiles.gi_minor(gpu["minor"], gi["id"])
            for ci in gi["compute_instances"]:
                ci["profile"] = node.ci_profile_of(gpu, gi, ci).name[4:]
                ci["cap_minor"] = devfiles.ci_minor(gpu["minor"], gi["id"], ci["id"])
    return out


def render(state: dict) -> str:
    """Human-readable node summary."""
    lines = ["node %s: %s" % (state["preset"], state.get("description", "")),
             "driver %s, NVML %s, state %s" % (state["driver_version"], state["nvml_version"], store.state_path()),
             "kernel modules (%s): %s" % (kmod.flavour(state), ", ".join(kmod.loaded(state)) or "none")]
    if state.get("nvswitch"):
        lines.append("fabric manager %s (nv-fabricmanager %s)" % (state.get("fabric_manager", "running"),
                                                                  fabricmanager.version(state)))
        lines.append(_fabric_domain_text(state))
    files = state.get("device_files") or {}
    lines.append("device files under %s: %s%s; mig-minors: %s" % (
        devfiles.root_dir(), files.get("kind", "?"), (" -- " + files["note"]) if files.get("note") else "",
        state.get("mig_minors_path")))
    for gpu in node.gpus(state):
        model = node.model_of(gpu)
        lines.append("GPU %d  %s  %s  %s  minor %d  NUMA %d  CPUs %s  %s%s" % (
            gpu["index"], model.name, gpu["pci_bus_id"], gpu["uuid"], gpu["minor"], gpu["numa_node"],
            gpu["cpus"], _mig_text(gpu), "  LOST (Xid 79; reboot to recover)" if node.lost(gpu) else ""))
        for gi in gpu["gpu_instances"]:
            prof = model.profile_by_id(gi["profile_id"])
            lines.append("    GI %2d  %-10s profile %2d  placement %d:%d  cap %d" % (
                gi["id"], prof.name, gi["profile_id"], gi["start"], gi["size"], devfiles.gi_minor(gpu["minor"], gi["id"])))
            for ci in gi["compute_instances"]:
                lines.append("      CI %d  %-14s profile %d  placement %d:%d  cap %d  %s" % (
                    ci["id"], node.ci_profile_of(gpu, gi, ci).name[4:], ci["profile_id"], ci["start"], ci["size"],
                    devfiles.ci_minor(gpu["minor"], gi["id"], ci["id"]), ci["uuid"]))
        if gpu.get("ecc"):
            lines.append("    " + _ecc_text(gpu["ecc"]))
        for proc in gpu["processes"]:
            where = "" if proc.get("gi") is None else "  gi %d ci %d" % (proc["gi"], proc["ci"])
            lines.append("    process %d %s %d MiB%s" % (proc["pid"], proc["name"], proc["used_mib"], where))
    for hca, hca_ports in ib.ports(state).items():
        for port, files in hca_ports.items():
            errors = ", ".join("%s %d" % item for item in files["counters"].items() if item[1])
            lines.append("IB %s port %s  %s  %s  %s%s" % (hca, port, files["state"], files["phys_state"], files["rate"],
                                                          "  counters: " + errors if errors else ""))
    for fault in state.get("faults", []):
        lines.append("fault: %s -> NVML_ERROR_%s after %d call(s), %s" % (
            fault["call"], NAMES.get(fault["error"], fault["error"]), fault.get("after", 0),
            "every call" if fault.get("count", 1) == 0 else "%d time(s)" % fault.get("count", 1)))
    return "\n".join(lines)


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text) from None
    if value < 0:
        raise argparse.ArgumentTypeError("%d is negative; give 0 or more" % value)
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nvmlsim", description="Simulated NVIDIA GPU node (behind the simulated libnvidia-ml.so.1).")
    sub = parser.add_subparsers(dest="command", required=True)

    create = sub.add_parser("create", help="create the node from a preset")
    create.add_argument("--preset", required=True, help="one of: " + ", ".join(sorted(presets.PRESETS)))
    create.add_argument("--mig-minors", help="where to write the mig-minors table "
                        "(default $NVMLSIM_ROOT/var/lib/nvmlsim/mig-minors)")
    create.add_argument("--ib-root", help="where to write the simulated /sys/class/infiniband tree "
                        "(default $NVMLSIM_ROOT/var/lib/nvmlsim/sys/class/infiniband)")
    create.add_argument("--auto-reset", action="store_true",
                        help="nvmlDeviceSetMigMode resets an idle GPU at once (bare-metal behaviour)")
    create.add_argument("--force", action="store_true", help="replace an existing node")
    cpus = create.add_mutually_exclusive_group()
    cpus.add_argument("--fit-cpus", action="store_true",
                      help="spread the preset's NUMA nodes over the CPUs this process may run on "
                      "(sched_getaffinity), whole cores (with their hyperthreads) per NUMA node, so "
                      "that tools which map the GPUs' CPU affinity onto this machine (slurmd) find those CPUs")
    cpus.add_argument("--all-cpus", action="store_true",
                      help="make every GPU local to every CPU this process may run on (sched_getaffinity): "
                      "for a node whose slurm.conf declares more cores than the machine has, where slurmd's "
                      "NVML plugin maps each GPU's affinity onto this machine (a GPU local to no CPU here "
                      "gets no core, and Slurm never gives it to a job; one local to part of them gets "
                      "cores that do not fill the declared socket, which slurmctld refuses)")

    sub.add_parser("presets", help="list presets")

    show = sub.add_parser("show", help="show the node")
    show.add_argument("--json", action="store_true", help="print the state (with capability minors) as JSON")

    process = sub.add_parser("process", help="add or remove a process using a GPU")
    psub = process.add_subparsers(dest="action", required=True)
    add = psub.add_parser("add")
    add.add_argument("--gpu", type=_nonneg, required=True)
    add.add_argument("--pid", type=_nonneg, required=True)
    add.add_argument("--name", required=True)
    add.add_argument("--used-mib", type=_nonneg, default=0)
    add.add_argument("--gi", type=_nonneg)
    add.add_argument("--ci", type=_nonneg)
    remove = psub.add_parser("remove")
    remove.add_argument("--pid", type=_nonneg, required=True)
    remove.add_argument("--gpu", type=_nonneg)

    ecc = sub.add_parser("ecc", help="record ECC errors / pages pending retirement on a GPU (cleared by reset and reboot)")
    ecc.add_argument("--gpu", type=_nonneg, required=True)
    ecc.add_argument("--uncorrected", type=_nonneg, default=0, help="add this many uncorrected ECC errors")
    ecc.add_argument("--corrected", type=_nonneg, default=0, help="add this many corrected ECC errors")
    ecc.add_argument("--retired-pages-pending", choices=("yes", "no"),
                     help="pages wait for a reset to be retired (GPUs before A100, and L40S)")
    ecc.add_argument("--remap-pending", choices=("yes", "no"),
                     help="a row remapping waits for a reset (A100 and later; counts one more remapped row)")
    ecc.add_argument("--remap-failure", choices=("yes", "no"), help="a row remapping has failed (A100 and later)")

    reset = sub.add_parser("reset", help="simulate nvidia-smi --gpu-reset (applies pending MIG mode)")
    reset.add_argument("--gpu", type=_nonneg, required=True)

    sub.add_parser("reboot", help="simulate a reboot: processes end, MIG instances vanish, pending modes apply")
    sub.add_parser("boot", help="recreate device files and mig-minors from the state (run at container start)")

    inject = sub.add_parser("inject", help="make an NVML call fail")
    inject.add_argument("--call", help="pynvml function name, e.g. nvmlGpuInstanceCreateComputeInstance")
    inject.add_argument("--error", help="NVML_ERROR_* name or number")
    inject.add_argument("--after", type=_nonneg, default=0, help="let this many calls succeed first")
    inject.add_argument("--count", type=_nonneg, default=1, help="fail this many calls (0: every call)")
    inject.add_argument("--clear", action="store_true", help="remove all injected faults")

    pers = sub.add_parser("persistence", help="turn persistence mode on or off (nvmlDeviceGetPersistenceMode)")
    pers.add_argument("--gpu", type=_nonneg, required=True)
    pers.add_argument("--mode", choices=("on", "off"), required=True)

    pcie = sub.add_parser("pcie", help="degrade (or restore) a GPU's current PCIe link")
    pcie.add_argument("--gpu", type=_nonneg, required=True)
    pcie.add_argument("--gen", type=_nonneg, help="current link generation (1 to the model's maximum)")
    pcie.add_argument("--width", type=_nonneg, help="current link width (1, 2, 4, 8, 16; up to the maximum)")
    pcie.add_argument("--restore", action="store_true", help="back to the maximum generation and width")

    clocks = sub.add_parser("clocks", help="set the current clock event (throttle) reasons")
    clocks.add_argument("--gpu", type=_nonneg, required=True)
    clocks.add_argument("--reasons", required=True,
                        help="comma-separated: none, " + ", ".join(node.CLOCKS_EVENT_REASONS))

    temp = sub.add_parser("temperature", help="set the GPU temperature (nvmlDeviceGetTemperature)")
    temp.add_argument("--gpu", type=_nonneg, required=True)
    temp.add_argument("--celsius", type=_nonneg, required=True)

    nvlink = sub.add_parser("nvlink", help="take an NVLink down or up, set its error counters")
    nvlink.add_argument("--gpu", type=_nonneg, required=True)
    nvlink.add_argument("--link", type=_nonneg, required=True)
    nvlink.add_argument("--state", choices=("up", "down"))
    for counter in node.NVLINK_COUNTERS:
        nvlink.add_argument("--" + counter.replace("_", "-"), type=_nonneg, dest=counter,
                            help="set the %s error counter" % counter.replace("_", " "))

    fabric = sub.add_parser("fabric-manager", help="start or stop the simulated nvidia-fabricmanager, set its version "
                            "(NVSwitch presets)")
    fabric.add_argument("--state", choices=tuple(node.FABRIC_STATES))
    fabric.add_argument("--version", help="the nv-fabricmanager STAND-IN's version (NNN.NN.NN), or 'driver': the "
                        "driver's (default)")

    domain = sub.add_parser("fabric-domain", help="put the node in a multi-node NVLink domain (the cluster UUID and "
                            "clique id nvmlDeviceGetGpuFabricInfo reports while the fabric is COMPLETED) or take "
                            "it out (NVSwitch presets, Hopper or newer)")
    domain.add_argument("--cluster-uuid", help="the NVLink domain's cluster UUID, 8-4-4-4-12 hex digits, not all zeros")
    domain.add_argument("--clique", type=_nonneg, help="the clique (NVLink partition) id, 0 to %d" % node.CLIQUE_ID_MAX)
    domain.add_argument("--clear", action="store_true", help="no domain: zeros, as a single-node HGX board reports")

    xid = sub.add_parser("xid", help="record an Xid error and write the driver's kernel-log line")
    xid.add_argument("--gpu", type=_nonneg, required=True)
    xid.add_argument("--code", type=_nonneg, required=True)
    xid.add_argument("--text", help="the message after the code (default: the driver's text for known codes)")
    xid.add_argument("--pid", type=_nonneg, help="the process the driver names (default <unknown>)")
    xid.add_argument("--name", help="that process's name")

    driver = sub.add_parser("driver", help="change the driver version (nvmlSystemGetDriverVersion)")
    driver.add_argument("--version", required=True, help="e.g. 535.104.05")
    driver.add_argument("--cuda", type=_nonneg, help="nvmlSystemGetCudaDriverVersion, 1000 * major + 10 * minor")
    driver.add_argument("--kernel-module", help="the kernel modules' flavour (/proc/driver/nvidia/version): "
                        + " or ".join(kmod.FLAVOURS))

    module = sub.add_parser("module", help="load or unload one of the driver's kernel modules (the simulated /sys/module)")
    module.add_argument("--load", metavar="NAME", help=", ".join(kmod.KNOWN_MODULES))
    module.add_argument("--unload", metavar="NAME", help=", ".join(kmod.KNOWN_MODULES))

    ibp = sub.add_parser("ib", help="change an InfiniBand port of the simulated /sys/class/infiniband tree")
    ibp.add_argument("--hca", required=True, help="e.g. mlx5_0")
    ibp.add_argument("--port", type=_nonneg, default=1, help="port number (default 1)")
    ibp.add_argument("--state", help="logical state: " + ", ".join(ib.PORT_STATES))
    ibp.add_argument("--phys-state", help="physical state: " + ", ".join(ib.PHYS_STATES))
    ibp.add_argument("--rate", type=_nonneg, help="active rate in Gb/s (the port's lane speed times 1, 2 or 4 lanes)")
    ibp.add_argument("--width", help="active width: 1X, 2X or 4X")
    ibp.add_argument("--counter", action="append", default=[], metavar="NAME=K",
                     help="set a counters/ file (repeatable): " + ", ".join(ib.COUNTERS))
    ibp.add_argument("--restore", action="store_true", help="back to the preset's healthy port (counters 0)")
    return parser


def kernel_log_path() -> str:
    """Where ``nvmlsim xid`` appends the driver's kernel-log lines: ``$NVMLSIM_ROOT/var/log/kern.log``."""
    return os.path.join(devfiles.root_dir(), "var/log/kern.log")


def _uptime(state: dict) -> float:
    """Seconds since the node's simulated boot (``boot_time``); a state without one: the host's uptime."""
    if state.get("boot_time") is not None:
        return max(0.0, time.time() - float(state["boot_time"]))
    try:
        with open("/proc/uptime", encoding="ascii") as handle:
            return float(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return time.monotonic()


# The first line a booting kernel logs, in the form of Debian 12's /proc/version (linux-image-6.1.0-*-amd64).
LINUX_VERSION = ("Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, "
                 "GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)")


def _kernel_log(lines: List[str], uptime: float) -> str:
    """Append kernel messages to the simulated kern.log, as rsyslog writes them (``<stamp> <host> kernel: [s.us] msg``)."""
    path = kernel_log_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    stamp = time.strftime("%b %e %H:%M:%S")
    host = socket.gethostname().split(".")[0]
    with open(path, "a", encoding="utf-8") as log:
        for line in lines:
            log.write("%s %s kernel: [%12.6f] %s\n" % (stamp, host, uptime, line))
    return path


def _log_boot(state: dict, only_first: bool = False) -> None:
    """The node (re)boots now: reset the simulated uptime and log the kernel's first line.

    With ``only_first`` (create) the line is written only when kern.log holds no boot yet.
    """
    state["boot_time"] = time.time()
    if only_first:
        try:
            with open(kernel_log_path(), encoding="utf-8", errors="replace") as log:
                if any("] Linux version " in line for line in log):
                    return
        except FileNotFoundError:
            pass
    _kernel_log([LINUX_VERSION], 0.0)


def _health(args) -> str:  # pylint: disable=too-many-return-statements
    """persistence, pcie, clocks, temperature, nvlink, xid: one GPU's health state."""
    with store.transaction() as state:
        gpu = node.gpu_by_index(state, args.gpu)
        if args.command == "persistence":
            gpu["persistence_mode"] = 1 if args.mode == "on" else 0
            return "GPU %d: persistence mode %s" % (args.gpu, "Enabled" if args.mode == "on" else "Disabled")
        if args.command == "pcie":
            if args.restore:
                gpu.pop("pcie_gen", None)
                gpu.pop("pcie_width", None)
            elif args.gen is None and args.width is None:
                raise UsageError("pcie needs --gen G, --width W or --restore")
            link = node.set_pcie_link(gpu, args.gen, args.width)
            return "GPU %d: PCIe gen %d x%d (max gen %d x%d)" % (
                args.gpu, link["gen"], link["width"], link["max_gen"], link["max_width"])
        if args.command == "clocks":
            gpu["clocks_event_reasons"] = node.reasons_from_names([r.strip() for r in args.reasons.split(",") if r.strip()])
            return "GPU %d: clocks event reasons 0x%x" % (args.gpu, gpu["clocks_event_reasons"])
        if args.command == "temperature":
            gpu["temperature"] = args.celsius
            return "GPU %d: %d C" % (args.gpu, args.celsius)
        if args.command == "nvlink":
            counters = {c: getattr(args, c) for c in node.NVLINK_COUNTERS if getattr(args, c) is not None}
            if args.state is None and not counters:
                raise UsageError("nvlink needs --state up|down or an error counter (--replay K ...)")
            link = node.set_nvlink(gpu, args.link, None if args.state is None else args.state == "up", counters)
            return "GPU %d NVLink %d: %s; errors %s" % (args.gpu, args.link, "down" if args.link in link["down"] else "up",
                                                     json.dumps((link.get("errors") or {}).get(str(args.link), {})))
        line = node.record_xid(gpu, args.code, args.text, args.pid, args.name)
        path = _kernel_log([line], _uptime(state))
    lost = "; the GPU is lost until a reboot" if node.lost(gpu) else ""
    return "GPU %d: %s (appended to %s)%s" % (args.gpu, line, path, lost)


def _create(args) -> str:
    if args.preset not in presets.PRESETS:
        raise UsageError("unknown preset %r; valid presets: %s" % (args.preset, ", ".join(sorted(presets.PRESETS))))
    mig_minors = os.path.abspath(args.mig_minors) if args.mig_minors else os.path.join(
        devfiles.root_dir(), "var/lib/nvmlsim/mig-minors")
    with store.locked() as path:
        if store.exists(path) and not args.force:
            raise UsageError("a simulated node already exists at %s; use --force to replace it" % path)
        state = presets.build(args.preset, mig_minors, auto_reset=args.auto_reset)
        state["ib_root"] = os.path.abspath(args.ib_root) if args.ib_root else ib.default_root()
        fitted = fit_cpus(state) if args.fit_cpus else {"every": all_cpus(state)} if args.all_cpus else None
        _log_boot(state, only_first=True)
        store.save(state, path)
    if fitted and args.all_cpus:
        return "created %s at %s; every GPU local to this machine's CPUs %s" % (args.preset, path, fitted["every"])
    if fitted:
        return "created %s at %s; CPUs fitted to this machine: %s" % (
            args.preset, path, ", ".join("NUMA %d: %s" % item for item in sorted(fitted.items())))
    return "created %s at %s" % (args.preset, path)


def _cpu_core(cpu: int) -> tuple:
    """``(physical_package_id, core_id)`` of a CPU from sysfs; the CPU itself where sysfs has no topology."""
    values = []
    for name in ("physical_package_id", "core_id"):
        try:
            with open("/sys/devices/system/cpu/cpu%d/topology/%s" % (cpu, name), encoding="ascii") as handle:
                values.append(int(handle.read().strip()))
        except (OSError, ValueError):
            return (-1, cpu)
    return tuple(values)


def _cpulist(cpus: List[int]) -> str:
    """Sorted CPU numbers as a Linux cpulist (``0-3,8``)."""
    runs: List[List[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(low) if low == high else "%d-%d" % (low, high) for low, high in runs)


def fit_cpus(state: dict, allowed=None, core_of=None) -> dict:
    """Give the GPUs of ``state`` CPU lists on this machine, keeping the preset's NUMA structure.

    The CPUs in ``allowed`` (default ``os.sched_getaffinity(0)``) are grouped
    into cores (``core_of(cpu)``, default sysfs ``(package, core_id)``), the
    cores split in order into one contiguous share per NUMA node of the
    preset (as even as possible), and every GPU of a NUMA node gets that
    node's share with all its allowed hyperthreads.  With fewer cores than
    NUMA nodes, nodes share cores round-robin.  Returns ``{numa node: cpulist}``.
    """
    allowed = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if not allowed:
        raise UsageError("--fit-cpus: no CPUs to fit the preset onto")
    core_of = core_of or _cpu_core
    cores: dict = {}
    for cpu in allowed:
        cores.setdefault(core_of(cpu), []).append(cpu)
    ordered = [cores[key] for key in sorted(cores)]   # package by package, cores in order
    nodes = sorted({gpu["numa_node"] for gpu in state["gpus"]})
    shares = {}
    for position, numa in enumerate(nodes):
        low, high = position * len(ordered) // len(nodes), (position + 1) * len(ordered) // len(nodes)
        chosen = ordered[low:high] or [ordered[position % len(ordered)]]
        shares[numa] = _cpulist([cpu for core in chosen for cpu in core])
    for gpu in state["gpus"]:
        gpu["cpus"] = shares[gpu["numa_node"]]
    return shares


def all_cpus(state: dict, allowed=None) -> str:
    """Make every GPU of ``state`` local to all the CPUs in ``allowed`` (default ``os.sched_getaffinity(0)``);
    returns that cpulist.  The preset's NUMA nodes stay as they are (``numa_node``)."""
    allowed = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    if not allowed:
        raise UsageError("--all-cpus: no CPUs to make the GPUs local to")
    every = _cpulist(allowed)
    for gpu in state["gpus"]:
        gpu["cpus"] = every
    return every


def _process(args) -> str:
    with store.transaction() as state:
        if args.action == "add":
            node.add_process(state, args.gpu, args.pid, args.name, args.used_mib, args.gi, args.ci)
            return "pid %d now uses GPU %d" % (args.pid, args.gpu)
        count = node.remove_process(state, args.pid, args.gpu)
        return "pid %d removed (%d GPU%s)" % (args.pid, count, "" if count == 1 else "s")


def _reset(args) -> str:
    with store.transaction() as state:
        gpu = node.gpu_by_index(state, args.gpu)
        try:
            node.reset_gpu(gpu)
        except SimError as exc:
            if exc.code == GPU_IS_LOST:
                raise SimError(exc.code, "cannot reset GPU %d: %s (nvmlsim reboot)" % (args.gpu, exc.message)) from None
            pids = " ".join(str(p["pid"]) for p in gpu["processes"])
            raise SimError(exc.code, "cannot reset GPU %d: %s; stop it first (nvmlsim process remove --pid %s)" % (
                args.gpu, exc.message, pids)) from None
        return "GPU %d reset; %s" % (args.gpu, _mig_text(gpu))


def _ecc(args) -> str:
    flags = (args.retired_pages_pending, args.remap_pending, args.remap_failure)
    if not args.uncorrected and not args.corrected and all(flag is None for flag in flags):
        raise UsageError("ecc needs --uncorrected K, --corrected K, --retired-pages-pending yes|no, "
                         "--remap-pending yes|no or --remap-failure yes|no")
    pending, remap_pending, remap_failure = (None if flag is None else flag == "yes" for flag in flags)
    with store.transaction() as state:
        gpu = node.gpu_by_index(state, args.gpu)
        ecc = node.add_memory_errors(gpu, args.corrected, args.uncorrected, pending, remap_pending, remap_failure)
        return "GPU %d: %s" % (args.gpu, _ecc_text(ecc))


def _ecc_text(ecc: dict) -> str:
    text = "ECC errors since reset: %d corrected, %d uncorrected (aggregate %d, %d); " % (
        ecc["corrected_volatile"], ecc["uncorrected_volatile"], ecc["corrected_aggregate"], ecc["uncorrected_aggregate"])
    if ecc.get("remapped_uncorrectable") or ecc.get("remap_pending") or ecc.get("remap_failure"):
        return text + "rows remapped %d correctable, %d uncorrectable; remap pending: %s; remap failure: %s" % (
            ecc.get("remapped_correctable", 0), ecc.get("remapped_uncorrectable", 0),
            "yes" if ecc.get("remap_pending") else "no", "yes" if ecc.get("remap_failure") else "no")
    return text + "retired pages pending: %s" % ("yes" if ecc.get("retired_pages_pending") else "no")


def _ib_counters(items: List[str]) -> dict:
    counters = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise UsageError("--counter %r: give NAME=K with K a whole number, NAME one of %s" % (item, ", ".join(ib.COUNTERS)))
        counters[name.strip()] = int(value)
    return counters


def _ib(args) -> str:
    """nvmlsim ib: one port's state, physical state, width (rate) and counters, or --restore."""
    counters = _ib_counters(args.counter)
    width = None
    if args.width is not None:
        text = args.width.upper().rstrip("X")
        if not text.isdigit():
            raise UsageError("--width %r: give 1X, 2X or 4X" % args.width)
        width = int(text)
    changes = (args.state, args.phys_state, args.rate, width)
    if args.restore and (any(c is not None for c in changes) or counters):
        raise UsageError("ib --restore takes no other change")
    if not args.restore and all(c is None for c in changes) and not counters:
        raise UsageError("ib needs --state, --phys-state, --rate, --width, --counter NAME=K or --restore")
    with store.transaction() as state:
        ib.port_files(state, args.hca, args.port)   # an unknown HCA or port first
        if args.restore:
            files = ib.restore_port(state, args.hca, args.port)
        else:
            if args.rate is not None:
                by_rate = ib.width_for_rate(state, args.rate)
                if width is not None and width != by_rate:
                    raise UsageError("--rate %d and --width %dX disagree: %d Gb/s is %dX" % (args.rate, width, args.rate, by_rate))
                width = by_rate
            files = ib.set_port(state, args.hca, args.port, args.state, args.phys_state, width, counters)
        where = os.path.join(ib.root(state), args.hca, "ports", str(args.port))
    errors = ", ".join("%s=%d" % item for item in files["counters"].items() if item[1]) or "counters 0"
    return "%s: %s, %s, %s; %s" % (where, files["state"], files["phys_state"], files["rate"], errors)


def _fabric_manager(args) -> str:
    """nvmlsim fabric-manager: the fabric state and/or the stand-in's version."""
    if args.state is None and args.version is None:
        raise UsageError("fabric-manager needs --state running|stopped|starting or --version V|driver")
    with store.transaction() as state:
        if args.version is not None:
            fabricmanager.set_version(state, args.version)
        if args.state is not None:
            node.set_fabric_manager(state, args.state)
    return "fabric manager %s, nv-fabricmanager %s (driver %s%s)" % (
        state.get("fabric_manager", "running"), fabricmanager.version(state), state["driver_version"],
        "" if fabricmanager.matches_driver(state) else ": MISMATCH, the service refuses to start")


def _fabric_domain_view(state: dict) -> Optional[dict]:
    """``show --json``'s ``fabric_domain``: the node's domain and whether NVML reports it now (fabric COMPLETED)."""
    domain = state.get("fabric_domain")
    if not domain:
        return None
    return dict(domain, reported=state.get("fabric_manager", "running") == "running")


def _fabric_domain_text(state: dict) -> str:
    domain = state.get("fabric_domain")
    if not domain:
        return "NVLink domain: none (cluster UUID zeros, clique 0)"
    return "NVLink domain: cluster UUID %s, clique %d (%s)" % (
        domain["cluster_uuid"], domain["clique_id"], "reported" if _fabric_domain_view(state)["reported"]
        else "zeros until the fabric manager runs")


def _fabric_domain(args) -> str:
    """nvmlsim fabric-domain --cluster-uuid UUID --clique N | --clear."""
    given = (args.cluster_uuid is not None, args.clique is not None)
    if args.clear == any(given) or (not args.clear and not all(given)):
        raise UsageError("fabric-domain needs --cluster-uuid UUID and --clique N together, or --clear alone")
    with store.transaction() as state:
        node.set_fabric_domain(state, args.cluster_uuid, args.clique)
    return _fabric_domain_text(state)


def _module(args) -> str:
    """nvmlsim module --load NAME | --unload NAME."""
    if (args.load is None) == (args.unload is None):
        raise UsageError("module needs one of --load NAME or --unload NAME (NAME one of %s)" % ", ".join(kmod.KNOWN_MODULES))
    with store.transaction() as state:
        names = kmod.load(state, args.load) if args.load is not None else kmod.unload(state, args.unload)
    return "%s %s; loaded: %s (%s)" % ("loaded" if args.load else "unloaded", args.load or args.unload,
                                       ", ".join(names) or "none", kmod.module_root())


def _inject(args) -> str:
    from . import api as pynvml  # pylint: disable=import-outside-toplevel
    if args.clear:
        with store.transaction() as state:
            state["faults"] = []
        return "faults cleared"
    if not args.call or not args.error:
        raise UsageError("inject needs --call NAME and --error NVML_ERROR_X (or --clear)")
    if args.call not in pynvml.SIMULATED_CALLS:
        raise UsageError("unknown call %r; valid calls: %s" % (args.call, ", ".join(pynvml.SIMULATED_CALLS)))
    try:
        code = code_from_text(args.error)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    call = pynvml.canonical_call(args.call)
    with store.transaction() as state:
        state.setdefault("faults", []).append({"call": call, "error": code, "after": args.after, "count": args.count})
    return "%s will fail with NVML_ERROR_%s" % (call, NAMES[code])


def run(argv: Optional[List[str]] = None) -> str:  # pylint: disable=too-many-return-statements
    """Execute one command; returns what to print.  Raises on failure."""
    args = _parser().parse_args(argv)
    if args.command == "create":
        return _create(args)
    if args.command == "presets":
        return "\n".join("%-18s %s" % (name, p.description) for name, p in sorted(presets.PRESETS.items()))
    if args.command == "show":
        state = store.load()
        return json.dumps(annotated(state), indent=1, sort_keys=True) if args.json else render(state)
    if args.command == "process":
        return _process(args)
    if args.command == "reset":
        return _reset(args)
    if args.command == "ecc":
        return _ecc(args)
    if args.command == "reboot":
        with store.transaction() as state:
            node.reboot(state)
            fabricmanager.state_at_boot(state)
            _log_boot(state)
        fabric = "; fabric manager %s" % state["fabric_manager"] if state.get("nvswitch") else ""
        return "rebooted: processes ended, MIG instances gone, pending MIG modes applied, lost GPUs back; " \
               "InfiniBand faults stay%s; boot logged in %s" % (fabric, kernel_log_path())
    if args.command == "boot":
        with store.transaction() as state:
            pass
        return "device files, mig-minors, the InfiniBand tree (%s), %s and the module tree (%s) recreated (%s)" % (
            ib.root(state), kmod.version_path(), kmod.module_root(), state["device_files"]["kind"])
    if args.command in ("persistence", "pcie", "clocks", "temperature", "nvlink", "xid"):
        return _health(args)
    if args.command == "fabric-manager":
        return _fabric_manager(args)
    if args.command == "fabric-domain":
        return _fabric_domain(args)
    if args.command == "driver":
        with store.transaction() as state:
            if args.kernel_module is not None:
                kmod.set_flavour(state, args.kernel_module)
            node.set_driver_version(state, args.version, args.cuda)
        return "driver %s (%s kernel modules), NVML %s, CUDA %d" % (
            state["driver_version"], kmod.flavour(state), state["nvml_version"], state["cuda_driver_version"])
    if args.command == "module":
        return _module(args)
    if args.command == "inject":
        return _inject(args)
    if args.command == "ib":
        return _ib(args)
    raise UsageError("unknown command %r" % args.command)


def main(argv: Optional[List[str]] = None) -> int:
    """CLI entry point."""
    try:
        output = run(argv)
    except UsageError as exc:
        sys.stderr.write("nvmlsim: error: %s\n" % exc)
        return 2
    except SimError as exc:
        sys.stderr.write("nvmlsim: error: %s\n" % exc)
        return 2 if exc.code in (INVALID_ARGUMENT, NOT_FOUND) else 1
    except StateError as exc:
        sys.stderr.write("nvmlsim: error: %s\n" % exc)
        return 1
    print(output)
    return 0
