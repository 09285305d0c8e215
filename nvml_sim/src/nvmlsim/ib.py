"""A simulated InfiniBand sysfs tree: what ``/sys/class/infiniband`` shows on the node.

The kernel's RDMA core (``drivers/infiniband/core/sysfs.c``) gives every HCA
a directory ``<root>/<hca>/`` with ``node_type`` and, per port,
``ports/<port>/`` holding (formats as the kernel prints them):

* ``state`` -- ``state_show``: ``"%d: %s\\n"`` of the logical state,
  ``4: ACTIVE``, ``1: DOWN``, ``2: INIT``, ``3: ARMED``;
* ``phys_state`` -- ``phys_state_show``: ``"%u: %s\\n"``, ``5: LinkUp``,
  ``2: Polling`` (no partner: a pulled cable), ``3: Disabled``;
* ``rate`` -- ``rate_show``: ``"%d%s Gb/sec (%dX%s)\\n"``, the per-lane rate
  (deci-Gb/s: EDR 250, HDR 500, NDR 1000) times the active width, e.g.
  ``400 Gb/sec (4X NDR)``;
* ``link_layer`` -- ``InfiniBand``;
* ``counters/<name>`` -- ``show_pma_counter``: the PortCounters of the
  performance-management MAD, ``"%u\\n"`` (``"%llu\\n"`` for the 64-bit ones).

``/sys`` cannot be written in a container, so the tree goes to the path
stored in the state at create time (``ib_root``, default
``$NVMLSIM_ROOT/var/lib/nvmlsim/sys/class/infiniband``); code under test
takes the root as a parameter, its default being ``/sys/class/infiniband``.

State (optional, absent = the preset's healthy port)::

    "ib": {"<hca>": {"<port>": {"state": "down", "phys_state": "polling", "width": 2,
                                "counters": {"symbol_error": 12}}}}

Reset and reboot leave it alone (a cable is not fixed by a reboot), counters
included; ``nvmlsim ib --hca X --restore`` puts a port back.
"""
from __future__ import annotations

import os
import shutil
from typing import Dict, List, NamedTuple, Optional

from . import devfiles
from . import errors as E
from .errors import SimError

# IB_PORT_* of the kernel's enum ib_port_state, by the names the CLI takes
PORT_STATES = {"down": (1, "DOWN"), "init": (2, "INIT"), "armed": (3, "ARMED"), "active": (4, "ACTIVE")}
# enum ib_port_phys_state, by the names the CLI takes
PHYS_STATES = {"polling": (2, "Polling"), "disabled": (3, "Disabled"), "linkup": (5, "LinkUp")}
# per-lane rate in deci-Gb/s (rate_show)
LANE_RATES = {"EDR": 250, "HDR": 500, "NDR": 1000}
WIDTHS = (1, 2, 4)
# show_pma_counter's files (pma_attrs), in the kernel's order
COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
            "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors",
            "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
            "VL15_dropped", "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")


class Fabric(NamedTuple):
    """The HCAs of a preset: names, ports each, link speed and width of a healthy port, PCI device (hca_type)."""

    hcas: tuple
    ports: int
    speed: str
    width: int
    hca_type: str


# DGX H100 / HGX H200: eight ConnectX-7 (PCI 15b3:1021, hca_type MT4129) single-port NDR 400 Gb/s compute HCAs;
# DGX A100: eight ConnectX-6 (15b3:101b, MT4123) single-port HDR 200 Gb/s.  The PCIe presets have none.
_MLX5_X8 = tuple("mlx5_%d" % i for i in range(8))
FABRICS = {
    "h100-80gb-x8": Fabric(_MLX5_X8, 1, "NDR", 4, "MT4129"),
    "h200-x8": Fabric(_MLX5_X8, 1, "NDR", 4, "MT4129"),
    "a100-40gb-x8": Fabric(_MLX5_X8, 1, "HDR", 4, "MT4123"),
}
NO_FABRIC = Fabric((), 0, "NDR", 4, "")


def fabric(state: dict) -> Fabric:
    """The node's HCAs (none on a preset without InfiniBand)."""
    return FABRICS.get(state.get("preset"), NO_FABRIC)


def default_root() -> str:
    """``$NVMLSIM_ROOT/var/lib/nvmlsim/sys/class/infiniband``."""
    return os.path.join(devfiles.root_dir(), "var/lib/nvmlsim/sys/class/infiniband")


def root(state: dict) -> str:
    """Where the node's tree lives (``ib_root`` in the state, else the default)."""
    return state.get("ib_root") or default_root()


def rate_text(speed: str, width: int) -> str:
    """``rate`` as the kernel's rate_show prints it (without the newline)."""
    rate = LANE_RATES[speed] * width
    return "%d%s Gb/sec (%dX %s)" % (rate // 10, ".5" if rate % 10 else "", width, speed)


def _port_of(state: dict, hca: str, port: int) -> dict:
    """The state's overrides of ``hca`` port ``port`` (empty: healthy); SimError for an unknown HCA or port."""
    fab = fabric(state)
    if not fab.hcas:
        raise SimError(E.INVALID_ARGUMENT, "HCA %r: this node (%s) has no InfiniBand HCA" % (hca, state.get("preset")))
    if hca not in fab.hcas:
        raise SimError(E.INVALID_ARGUMENT, "unknown HCA %r; valid: %s" % (hca, ", ".join(fab.hcas)))
    if not 1 <= port <= fab.ports:
        raise SimError(E.INVALID_ARGUMENT, "%s has no port %r; valid: %s" % (
            hca, port, ", ".join(str(p) for p in range(1, fab.ports + 1))))
    return ((state.get("ib") or {}).get(hca) or {}).get(str(port)) or {}


def port_files(state: dict, hca: str, port: int) -> Dict[str, object]:
    """What the port's sysfs files hold (without newlines): state, phys_state, rate, link_layer, counters."""
    fab = fabric(state)
    over = _port_of(state, hca, port)
    logical = PORT_STATES[over.get("state", "active")]
    phys = PHYS_STATES[over.get("phys_state", "linkup")]
    counters = over.get("counters") or {}
    return {"state": "%d: %s" % logical, "phys_state": "%d: %s" % phys,
            "rate": rate_text(fab.speed, int(over.get("width", fab.width))), "link_layer": "InfiniBand",
            "counters": {name: int(counters.get(name, 0)) for name in COUNTERS}}


def ports(state: dict) -> Dict[str, Dict[str, dict]]:
    """Every port of every HCA: ``{hca: {"1": port_files}}``."""
    fab = fabric(state)
    return {hca: {str(p): port_files(state, hca, p) for p in range(1, fab.ports + 1)} for hca in fab.hcas}


def _choice(kind: str, value: str, table: dict) -> str:
    if value not in table:
        raise SimError(E.INVALID_ARGUMENT, "unknown %s %r; valid: %s" % (kind, value, ", ".join(table)))
    return value


def width_for_rate(state: dict, gbps: int) -> int:
    """The active width that gives ``gbps`` at the port's speed (rate = lanes x per-lane rate)."""
    fab = fabric(state)
    valid = {LANE_RATES[fab.speed] * w // 10: w for w in WIDTHS if w <= fab.width}
    if gbps not in valid:
        raise SimError(E.INVALID_ARGUMENT, "rate %r Gb/s: a %s port runs at %s Gb/s (%s)" % (
            gbps, fab.speed, ", ".join(str(r) for r in sorted(valid)),
            ", ".join("%dX" % valid[r] for r in sorted(valid))))
    return valid[gbps]


def set_port(state: dict, hca: str, port: int, logical: Optional[str] = None, phys: Optional[str] = None,
             width: Optional[int] = None, counters: Optional[Dict[str, int]] = None) -> dict:
    """Change one port; everything is checked before anything changes.

    ``logical`` down without ``phys`` gives Polling (a pulled cable: the port
    looks for a partner); init, armed or active without ``phys`` give LinkUp;
    ``phys`` polling or disabled without ``logical`` gives DOWN.  INIT, ARMED
    and ACTIVE need the physical link up.  Counters are set, not added.
    """
    fab = fabric(state)
    current = dict(_port_of(state, hca, port))
    if logical is not None:
        _choice("port state", logical, PORT_STATES)
    if phys is not None:
        _choice("physical state", phys, PHYS_STATES)
    if width is not None and (width not in WIDTHS or width > fab.width):
        raise SimError(E.INVALID_ARGUMENT, "width %rX: valid %s" % (
            width, ", ".join("%dX" % w for w in WIDTHS if w <= fab.width)))
    for name, value in (counters or {}).items():
        if name not in COUNTERS:
            raise SimError(E.INVALID_ARGUMENT, "unknown counter %r; valid: %s" % (name, ", ".join(COUNTERS)))
        if not isinstance(value, int) or value < 0:
            raise SimError(E.INVALID_ARGUMENT, "counter %s=%r: give 0 or more" % (name, value))
    if logical is not None and phys is None:
        phys = "polling" if logical == "down" else "linkup"
    if phys is not None and logical is None and phys != "linkup":
        logical = "down"
    new_logical = logical or current.get("state", "active")
    new_phys = phys or current.get("phys_state", "linkup")
    if new_logical != "down" and new_phys != "linkup":
        raise SimError(E.INVALID_ARGUMENT, "port state %s needs the physical link up (linkup), not %s" % (
            new_logical, new_phys))
    current["state"], current["phys_state"] = new_logical, new_phys
    if width is not None:
        current["width"] = width
    if counters:
        current["counters"] = dict(current.get("counters") or {}, **counters)
    state.setdefault("ib", {}).setdefault(hca, {})[str(port)] = current
    return port_files(state, hca, port)


def restore_port(state: dict, hca: str, port: int) -> dict:
    """Back to the preset's healthy port (ACTIVE, LinkUp, full width, counters 0)."""
    _port_of(state, hca, port)
    hcas = state.get("ib") or {}
    (hcas.get(hca) or {}).pop(str(port), None)
    if hca in hcas and not hcas[hca]:
        del hcas[hca]
    return port_files(state, hca, port)


def sync(state: dict) -> List[str]:
    """Write the tree under the node's root from the state (idempotent); returns the HCAs written.

    The root always exists (empty on a node without InfiniBand); an HCA
    directory that the node no longer has is removed.
    """
    base = root(state)
    os.makedirs(base, exist_ok=True)
    fab = fabric(state)
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if name not in fab.hcas and os.path.isdir(os.path.join(path, "ports")) and not os.path.islink(path):
            shutil.rmtree(path)
    for hca, hca_ports in ports(state).items():
        devfiles.write_text(os.path.join(base, hca, "node_type"), "1: CA\n")
        devfiles.write_text(os.path.join(base, hca, "hca_type"), fab.hca_type + "\n")
        for port, files in hca_ports.items():
            where = os.path.join(base, hca, "ports", port)
            for name in ("state", "phys_state", "rate", "link_layer"):
                devfiles.write_text(os.path.join(where, name), "%s\n" % files[name])
            for name, value in files["counters"].items():
                devfiles.write_text(os.path.join(where, "counters", name), "%d\n" % value)
    return list(fab.hcas)
