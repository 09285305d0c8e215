"""``nv-fabricmanager`` STAND-IN: NVIDIA Fabric Manager on a simulated NVSwitch node.

The real Fabric Manager programs the NVSwitches of an HGX/DGX board and
registers the GPUs with the NVLink fabric; it needs NVSwitch hardware (and its
kernel driver), which a simulated node does not have.  This stand-in does the
one thing a health check can see: while it runs, NVML's GPU fabric state is
COMPLETED (the simulator's ``fabric_manager`` key is ``running``); once it
stops, NOT_STARTED.

    nv-fabricmanager --version | -v      "Fabric Manager version is : 570.133.20"
    nv-fabricmanager [-c CONFIG]         the service: start, stay in the foreground until SIGTERM/SIGINT

Started, it refuses (exit 1, with the real Fabric Manager's log line) when
its version is not the driver's, or on a node without NVSwitches; otherwise
it sets the fabric state ``running`` and waits.  On SIGTERM (``systemctl
stop``) it sets ``stopped`` and exits 0.  Should the node be rebooted under it
(``nvmlsim reboot``) while its version no longer matches the driver, it exits 1
as the real one would fail at the next boot.

Its version is the state key ``fabric_manager_version``; absent, the
driver's (``nvmlsim fabric-manager --version V`` / ``--version driver``).
"""
from __future__ import annotations

import signal
import sys
from typing import List, Optional, Tuple

from . import errors as E
from . import node, store
from .errors import SimError, StateError

# the real Fabric Manager's texts (see nvml_sim/README.md, "Fabric Manager STAND-IN")
VERSION_LINE = "Fabric Manager version is : %s"
MISMATCH = ("fabric manager NVIDIA GPU driver interface version %s don't match with driver version %s. "
            "Please update with matching NVIDIA driver package.")
NO_NVSWITCH = ("request to query NVSwitch device information from NVSwitch driver failed with error:"
               "WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]")
POLL_SECONDS = 1.0
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def version(state: dict) -> str:
    """The stand-in's version: ``fabric_manager_version``, else the driver's."""
    return state.get("fabric_manager_version") or state["driver_version"]


def matches_driver(state: dict) -> bool:
    return version(state) == state["driver_version"]


def set_version(state: dict, text: str) -> str:
    """``V`` (NNN.NN[.NN]) installs that Fabric Manager; ``driver`` one that follows the driver again."""
    if not state.get("nvswitch"):
        raise SimError(E.INVALID_ARGUMENT, "this node (%s) has no NVSwitch: no fabric manager" % state.get("preset"))
    if text == "driver":
        state.pop("fabric_manager_version", None)
    else:
        state["fabric_manager_version"] = node.check_driver_version(text, "fabric manager version")
    return version(state)


def state_at_boot(state: dict) -> None:
    """After a (simulated) reboot: what the enabled service makes the fabric state.

    The service starts at boot and succeeds when its version is the driver's
    (``running``: COMPLETED) and refuses otherwise (``stopped``: NOT_STARTED).
    """
    if state.get("nvswitch"):
        state["fabric_manager"] = "running" if matches_driver(state) else "stopped"


def _say(text: str) -> None:
    sys.stderr.write("nv-fabricmanager: %s\n" % text)
    sys.stderr.flush()


def _start() -> Tuple[bool, Optional[float]]:
    """Check and start: ``(started, the node's boot time)``; a refusal is logged."""
    with store.transaction() as state:
        if not state.get("nvswitch"):
            _say(NO_NVSWITCH)
            return False, None
        if not matches_driver(state):
            state["fabric_manager"] = "stopped"
            _say(MISMATCH % (version(state), state["driver_version"]))
            return False, None
        state["fabric_manager"] = "running"
    _say("STAND-IN of NVIDIA Fabric Manager %s started: GPU fabric state COMPLETED (simulated node: no NVSwitch "
         "is programmed)" % version(state))
    return True, state.get("boot_time")


def _rebooted_into_mismatch(boot: Optional[float]) -> Optional[float]:
    """Poll: after a reboot with a version that no longer matches, the service would not have come up."""
    state = store.load()
    if state.get("boot_time") == boot:
        return boot
    if not matches_driver(state):
        _say("node rebooted: " + MISMATCH % (version(state), state["driver_version"]))
        raise SystemExit(1)
    return state.get("boot_time")


def serve() -> int:
    """The service: start, wait for SIGTERM/SIGINT, stop."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        started, boot = _start()
    except StateError as exc:
        _say(str(exc))
        return 1
    if not started:
        return 1
    while True:
        received = signal.sigtimedwait(STOP_SIGNALS, POLL_SECONDS)
        if received is not None:
            break
        try:
            boot = _rebooted_into_mismatch(boot)
        except StateError:
            continue
    try:
        with store.transaction() as state:
            state["fabric_manager"] = "stopped"
    except StateError as exc:
        _say("stopping: %s" % exc)
    _say("stopped on signal %d: GPU fabric state NOT_STARTED" % received.si_signo)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-v", "--version"):
        try:
            print(VERSION_LINE % version(store.load()))
        except StateError as exc:
            _say(str(exc))
            return 1
        return 0
    rest = list(argv)
    while rest and rest[0] in ("-c", "--config") and len(rest) >= 2:   # the real unit passes -c <config>; ignored
        rest = rest[2:]
    if rest:
        _say("unknown option %r (the STAND-IN takes --version, or -c CONFIG)" % rest[0])
        return 2
    return serve()


if __name__ == "__main__":
    sys.exit(main())
