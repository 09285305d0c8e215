"""Device files and the mig-minors table that mirror a node's state.

What the NVIDIA driver (with ``nvidia-modprobe``) leaves on a host, and what
this module writes under ``$NVMLSIM_ROOT``:

* ``/dev/nvidia<minor>``: character device 195:<minor>, one per GPU;
* ``/dev/nvidiactl``: 195:255; ``/dev/nvidia-uvm`` and ``/dev/nvidia-uvm-tools``
  on the dynamic ``nvidia-uvm`` major, minors 0 and 1;
* ``/dev/nvidia-caps/nvidia-cap1`` (mig config, mode 0400) and
  ``nvidia-cap2`` (mig monitor, 0444), and one ``nvidia-cap<minor>`` (0444)
  for every existing GPU instance and compute instance, on the dynamic
  ``nvidia-caps`` major (the MIG User Guide, "Device Nodes and
  Capabilities", shows 238 in its example; we use that);
* the mig-minors table, in the format of ``/proc/driver/nvidia-caps/mig-minors``:
  ``config 1``, ``monitor 2``, then for every GPU minor 0-31, GI 0-14 and CI
  0-7 the lines ``gpu<N>/gi<G>/access <m>`` and ``gpu<N>/gi<G>/ci<C>/access <m>``
  -- the static table of every possible capability (the guide prints it from
  ``gpu0/gi0/access 3`` to ``gpu31/gi14/ci7/access 4322``), so minors are
  ``3 + 135*N + 9*G`` for a GI and that ``+ 1 + C`` for a CI (seed 003: GPU 2
  GI 7 is 336, its CI 0 is 337).  ``/proc`` cannot be written in a container,
  so the table goes to the path stored in the state (``mig_minors_path``);
* ``var/lib/nvmlsim/devices``: the ``/proc/devices`` lines of the majors used.

Production code must read the table, never compute minors; the simulator
computes them because it *is* the driver.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Dict, List, Tuple

NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255
DEFAULT_CAPS_MAJOR = 238
DEFAULT_UVM_MAJOR = 510
CONFIG_MINOR = 1
MONITOR_MINOR = 2
TABLE_GPUS = 32
TABLE_GIS = 15
TABLE_CIS = 8
_GI_STRIDE = 1 + TABLE_CIS               # 9
_GPU_STRIDE = TABLE_GIS * _GI_STRIDE     # 135


def gi_minor(gpu_minor: int, gi_id: int) -> int:
    """Capability minor of ``gpu<gpu_minor>/gi<gi_id>/access``."""
    return 3 + gpu_minor * _GPU_STRIDE + gi_id * _GI_STRIDE


def ci_minor(gpu_minor: int, gi_id: int, ci_id: int) -> int:
    """Capability minor of ``gpu<gpu_minor>/gi<gi_id>/ci<ci_id>/access``."""
    return gi_minor(gpu_minor, gi_id) + 1 + ci_id


def mig_minors_text() -> str:
    """The full mig-minors table, as the driver prints it."""
    lines = ["config %d" % CONFIG_MINOR, "monitor %d" % MONITOR_MINOR]
    for gpu in range(TABLE_GPUS):
        for gi in range(TABLE_GIS):
            lines.append("gpu%d/gi%d/access %d" % (gpu, gi, gi_minor(gpu, gi)))
            for ci in range(TABLE_CIS):
                lines.append("gpu%d/gi%d/ci%d/access %d" % (gpu, gi, ci, ci_minor(gpu, gi, ci)))
    return "\n".join(lines) + "\n"


def root_dir() -> str:
    """``$NVMLSIM_ROOT`` (default ``/``): where ``dev/`` and ``var/lib/nvmlsim`` live."""
    return os.environ.get("NVMLSIM_ROOT") or "/"


def _under_root(path: str) -> str:
    return os.path.join(root_dir(), path.lstrip("/"))


def wanted_nodes(state: dict) -> Dict[str, Tuple[int, int, int]]:
    """Device path (absolute, as seen on the node) -> (major, minor, mode)."""
    caps = state.get("caps_major", DEFAULT_CAPS_MAJOR)
    uvm = state.get("uvm_major", DEFAULT_UVM_MAJOR)
    nodes = {
        "/dev/nvidiactl": (NVIDIA_MAJOR, NVIDIACTL_MINOR, 0o666),
        "/dev/nvidia-uvm": (uvm, 0, 0o666),
        "/dev/nvidia-uvm-tools": (uvm, 1, 0o666),
    }
    if any(g.get("mig_current") is not None for g in state["gpus"]):
        nodes["/dev/nvidia-caps/nvidia-cap%d" % CONFIG_MINOR] = (caps, CONFIG_MINOR, 0o400)
        nodes["/dev/nvidia-caps/nvidia-cap%d" % MONITOR_MINOR] = (caps, MONITOR_MINOR, 0o444)
    for gpu in state["gpus"]:
        nodes["/dev/nvidia%d" % gpu["minor"]] = (NVIDIA_MAJOR, gpu["minor"], 0o666)
        for gi in gpu["gpu_instances"]:
            minor = gi_minor(gpu["minor"], gi["id"])
            nodes["/dev/nvidia-caps/nvidia-cap%d" % minor] = (caps, minor, 0o444)
            for ci in gi["compute_instances"]:
                minor = ci_minor(gpu["minor"], gi["id"], ci["id"])
                nodes["/dev/nvidia-caps/nvidia-cap%d" % minor] = (caps, minor, 0o444)
    return nodes


def _is_node(path: str, major: int, minor: int) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISCHR(st.st_mode):
        return os.major(st.st_rdev) == major and os.minor(st.st_rdev) == minor
    if stat.S_ISREG(st.st_mode):
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip() == "c %d:%d" % (major, minor)
    return False


def _make_node(path: str, major: int, minor: int, mode: int) -> bool:
    """Create a char device; fall back to a regular file. Returns True for a real node."""
    if os.path.lexists(path):
        os.unlink(path)
    try:
        os.mknod(path, stat.S_IFCHR | mode, os.makedev(major, minor))
        os.chmod(path, mode)
        return True
    except PermissionError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EACCES):
            raise
    with open(path, "w", encoding="ascii") as handle:
        handle.write("c %d:%d\n" % (major, minor))
    os.chmod(path, mode)
    return False


def _managed(path: str) -> bool:
    """Paths this module owns (so stale ones may be removed)."""
    name = os.path.basename(path)
    if os.path.dirname(path).endswith("/dev/nvidia-caps"):
        return name.startswith("nvidia-cap") and name[len("nvidia-cap"):].isdigit()
    return name.startswith("nvidia") and name[len("nvidia"):].isdigit()


def sync(state: dict) -> Dict[str, object]:
    """Make the device files and tables under ``$NVMLSIM_ROOT`` match ``state``.

    Creates missing or wrong nodes, removes nodes of GPUs and instances that
    no longer exist, writes the mig-minors table and the devices list.
    Returns a summary for the state's ``device_files`` entry.
    """
    wanted = {_under_root(path): spec for path, spec in wanted_nodes(state).items()}
    os.makedirs(_under_root("/dev/nvidia-caps"), exist_ok=True)
    regular: List[str] = []
    for path, (major, minor, mode) in sorted(wanted.items()):
        if _is_node(path, major, minor):
            if not stat.S_ISCHR(os.lstat(path).st_mode):
                regular.append(path)
            continue
        if not _make_node(path, major, minor, mode):
            regular.append(path)
    for directory in (_under_root("/dev"), _under_root("/dev/nvidia-caps")):
        for name in os.listdir(directory):
            path = os.path.join(directory, name)
            if path not in wanted and _managed(path):
                os.unlink(path)
    write_text(state.get("mig_minors_path") or _under_root("/var/lib/nvmlsim/mig-minors"), mig_minors_text())
    write_text(_under_root("/var/lib/nvmlsim/devices"), "Character devices:\n%d nvidia-frontend\n%d nvidia-uvm\n%d nvidia-caps\n" % (
        NVIDIA_MAJOR, state.get("uvm_major", DEFAULT_UVM_MAJOR), state.get("caps_major", DEFAULT_CAPS_MAJOR)))
    if regular:
        return {"kind": "regular", "count": len(wanted),
                "note": "mknod not permitted here: %d device paths are regular files holding 'c MAJOR:MINOR'" % len(regular)}
    return {"kind": "char", "count": len(wanted)}


def write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        with open(path, encoding="ascii") as handle:
            if handle.read() == text:
                return
    except FileNotFoundError:
        pass
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="ascii") as handle:
        handle.write(text)
    os.replace(tmp, path)
