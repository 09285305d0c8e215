"""The node's state file: where it is, reading it, changing it safely.

One JSON file per node: ``$NVMLSIM_STATE`` or ``/var/lib/nvmlsim/state.json``.
Readers load it fresh on every NVML call (another process -- the CLI -- may
change it between two calls, as the real driver's state changes under a
running program).  Writers take an exclusive ``fcntl`` lock on
``<state>.lock``, re-read, change, write a temporary file and ``os.replace``
it, then bring the device files (and the other files the simulator keeps:
:mod:`nvmlsim.ib`, :mod:`nvmlsim.kmod`) in line, all under the lock.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import Iterator

from . import devfiles, ib, kmod
from .errors import StateError
from .node import STATE_FORMAT

DEFAULT_STATE = "/var/lib/nvmlsim/state.json"


def state_path() -> str:
    """``$NVMLSIM_STATE`` or the default path."""
    return os.environ.get("NVMLSIM_STATE") or DEFAULT_STATE


def exists(path: str = "") -> bool:
    """True when the state file exists."""
    return os.path.exists(path or state_path())


def load(path: str = "") -> dict:
    """Read and check the state file."""
    path = path or state_path()
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except FileNotFoundError:
        raise StateError("no simulated node at %s (create one with: nvmlsim create --preset NAME)" % path) from None
    except (OSError, ValueError) as exc:
        raise StateError("cannot read simulator state %s: %s" % (path, exc)) from None
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise StateError("%s is not an nvmlsim state file (expected format %r)" % (path, STATE_FORMAT))
    return state


def _write(path: str, state: dict) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(path: str = "") -> Iterator[str]:
    """Hold the node's exclusive lock."""
    path = path or state_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def save(state: dict, path: str = "") -> None:
    """Write ``state`` (caller holds the lock) and sync the device files, the InfiniBand tree, the driver's
    version file and the module tree."""
    path = path or state_path()
    state["device_files"] = devfiles.sync(state)
    ib.sync(state)
    kmod.sync(state)
    _write(path, state)


@contextlib.contextmanager
def transaction(path: str = "") -> Iterator[dict]:
    """Lock, load, let the caller change the state, then save it.

    If the body raises, nothing is written.
    """
    with locked(path) as real_path:
        state = load(real_path)
        yield state
        save(state, real_path)
