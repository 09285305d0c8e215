"""The driver's kernel side: ``/proc/driver/nvidia/version`` and the loaded modules (``/sys/module``).

* ``/proc/driver/nvidia/version`` -- the NVIDIA kernel module's procfs file
  (``nv_procfs_read_version`` in NVIDIA/open-gpu-kernel-modules,
  ``kernel-open/nvidia/nv-procfs.c``: ``"NVRM version: %s\\n"`` of
  ``pNVRM_ID``, then ``"GCC version:  %s\\n"`` of ``NV_COMPILER``).  Two
  flavours of ``pNVRM_ID``::

      NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  <build date>
      NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build  (dvs-builder@...)  <build date>

  The simulator writes the text to ``$NVMLSIM_ROOT/var/lib/nvmlsim/proc-driver-nvidia-version``;
  on a simulated node ``nvmlsim-driver-proc`` links ``/proc/driver/nvidia/version`` to it.
  The file exists while the ``nvidia`` module is loaded (as the real ``/proc/driver/nvidia``).
* ``/sys/module/<name>/`` -- one directory per loaded module with ``refcnt``
  (``0``), ``initstate`` (``live``) and ``version`` (the driver's version:
  the modules declare ``MODULE_VERSION(NV_VERSION_STRING)``).  ``/sys`` cannot be written in a container,
  so the tree is ``$NVMLSIM_ROOT/var/lib/nvmlsim/sys/module``; code under
  test takes the root as a parameter (default ``/sys/module``).

State keys (optional): ``"kernel_module": "open"|"proprietary"`` (absent: the
preset's), ``"modules": [name, ...]`` (absent: the preset's default list).
"""
from __future__ import annotations

import os
import shutil
from typing import List

from . import devfiles
from . import errors as E
from .errors import SimError

FLAVOURS = ("open", "proprietary")
# what `modprobe`/`rmmod` may be asked for here: the driver's five modules (kernel names, with underscores)
KNOWN_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem")
BASE_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset")

# Assumed: one build date for every driver version (the real one is NVIDIA's build time of that release),
# NVIDIA's build host as two public 555.58.02 transcripts show it, and Debian 12's gcc (the node's kernel compiler;
# `gcc -v` ends its last line with a space, which NV_COMPILER keeps).
BUILD_DATE = "Tue Mar 18 00:00:00 UTC 2025"
BUILD_HOST = "dvs-builder@U16-I3-B03-4-3"
GCC_LINE = "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) "


def version_path() -> str:
    """``$NVMLSIM_ROOT/var/lib/nvmlsim/proc-driver-nvidia-version``."""
    return os.path.join(devfiles.root_dir(), "var/lib/nvmlsim/proc-driver-nvidia-version")


def module_root() -> str:
    """``$NVMLSIM_ROOT/var/lib/nvmlsim/sys/module``."""
    return os.path.join(devfiles.root_dir(), "var/lib/nvmlsim/sys/module")


def _preset(state: dict):
    from . import presets  # pylint: disable=import-outside-toplevel
    return presets.PRESETS.get(state.get("preset"))


def flavour(state: dict) -> str:
    """``open`` or ``proprietary``: the state's ``kernel_module``, else the preset's."""
    if state.get("kernel_module") in FLAVOURS:
        return state["kernel_module"]
    preset = _preset(state)
    return preset.kernel_module if preset else "proprietary"


def default_modules(state: dict) -> List[str]:
    """nvidia, nvidia_uvm, nvidia_modeset; nvidia_peermem too where the node has InfiniBand HCAs."""
    from . import ib  # pylint: disable=import-outside-toplevel
    return list(BASE_MODULES) + (["nvidia_peermem"] if ib.fabric(state).hcas else [])


def loaded(state: dict) -> List[str]:
    """The loaded modules, in KNOWN_MODULES order."""
    names = state["modules"] if isinstance(state.get("modules"), list) else default_modules(state)
    return [name for name in KNOWN_MODULES if name in names]


def _known(name: str) -> str:
    if name not in KNOWN_MODULES:
        raise SimError(E.INVALID_ARGUMENT, "unknown module %r; valid: %s" % (name, ", ".join(KNOWN_MODULES)))
    return name


def load(state: dict, name: str) -> List[str]:
    """``modprobe NAME`` (no dependencies are pulled in: a test breaks one thing at a time)."""
    current = loaded(state)
    if _known(name) not in current:
        current.append(name)
    state["modules"] = [n for n in KNOWN_MODULES if n in current]
    return state["modules"]


def unload(state: dict, name: str) -> List[str]:
    """``rmmod NAME`` (no use counts are checked)."""
    state["modules"] = [n for n in loaded(state) if n != _known(name)]
    return state["modules"]


def set_flavour(state: dict, name: str) -> None:
    """``open`` or ``proprietary`` kernel modules."""
    if name not in FLAVOURS:
        raise SimError(E.INVALID_ARGUMENT, "kernel module flavour %r; valid: %s" % (name, ", ".join(FLAVOURS)))
    state["kernel_module"] = name


def version_text(state: dict) -> str:
    """What ``/proc/driver/nvidia/version`` holds for the node's driver and flavour."""
    version = state["driver_version"]
    if flavour(state) == "open":
        ident = "NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (%s)  %s" % (version, BUILD_HOST, BUILD_DATE)
    else:
        ident = "NVIDIA UNIX x86_64 Kernel Module  %s  %s" % (version, BUILD_DATE)
    return "NVRM version: %s\n%s\n" % (ident, GCC_LINE)


def sync(state: dict) -> List[str]:
    """Write the version file and the module tree from the state (idempotent); returns the loaded modules.

    A known module that is not loaded loses its directory; other directories
    under the root are left alone.  Without ``nvidia`` there is no version file.
    """
    names = loaded(state)
    if "nvidia" in names:
        devfiles.write_text(version_path(), version_text(state))
    elif os.path.lexists(version_path()):
        os.unlink(version_path())
    base = module_root()
    os.makedirs(base, exist_ok=True)
    for name in KNOWN_MODULES:
        path = os.path.join(base, name)
        if name not in names and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
    for name in names:
        devfiles.write_text(os.path.join(base, name, "refcnt"), "0\n")
        devfiles.write_text(os.path.join(base, name, "initstate"), "live\n")
        devfiles.write_text(os.path.join(base, name, "version"), state["driver_version"] + "\n")
    return names
