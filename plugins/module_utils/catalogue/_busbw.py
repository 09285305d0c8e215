# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NCCL ``all_reduce_perf`` busbw gate curves per platform and topology (pure logic, standard library only).

A gate curve is size -> the lowest busbw (GB/s) a healthy system reaches at that size. The catalogue holds, per
PLATFORM (the GPU catalogue's ``busbw_platform``: how a node's GPUs are joined), the busbw reported at the largest
sizes for one node by NCCL algorithm (NVLS where the platform has NVLink SHARP, Ring, PCIe), for an NVLink domain of
several nodes (NVL72), per InfiniBand NIC across nodes (HDR 200, NDR 400, XDR 800, times the rails of a node) and a
few published multi-node figures; each with its source, or "CONSERVATIVE ESTIMATE" and its reasoning. A curve's
figure at 8 GiB is ``BUSBW_FRACTION`` of the reported figure; smaller sizes follow ``GATE_SIZE_RULE``.

``curve_for(platform, gpus_per_node, nodes, rails, nic, algorithm)`` picks the curve of a run; ``resolve(key, ...)``
does the same from a key a user can set (a curve id, a NIC key such as ``ib-ndr-400`` or one of the topology keys of
earlier releases, ``LEGACY_KEYS``). Curves are dicts ``{id, points, reported, floor, source, estimate, half_bytes, scale}``
(``scale``: the factor its sizes were stretched by for a run over more than two nodes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MIB = 1024 ** 2
GIB = 1024 ** 3

# A healthy system lands within a few percent of a reported large-message figure, a broken link or a socket fallback
# far below (2x to 10x): the gate is 80 % of it, which separates the two without flagging run-to-run noise.
BUSBW_FRACTION = 0.8
# The size rule: busbw(S) = busbw(8 GiB) x [S / (S + H)] / [8 GiB / (8 GiB + H)], the shape of
# time = latency + size / bandwidth (NVIDIA/nccl-tests doc/PERFORMANCE.md), H the size at half the bandwidth.
# H = 64 MiB for one node and two nodes: fitted to the two public busbw-by-size tables of such runs at hand, a two-node
# 8 x H200 run (tests/unit/fixtures/nccl/v2.18.3_h200_two_nodes.txt: 56 % of its 8 GiB figure at 64 MiB, a half size
# of 50 to 62 MiB) and the one-node 8 x H100 run of NVIDIA/nccl-tests#290 (81 % of its 4 GiB figure at 128 MiB, a half
# size of 21 to 52 MiB); the larger half size is the lenient one. An NVL72 rack (72 GPUs) reaches its bandwidth later:
# H = 256 MiB, fitted to the full-rack GB200 run of coreweave/nccl-tests#43 (70 % of its 8 GiB figure at 512 MiB, 84 %
# at 1 GiB, 91 % at 2 GiB: a half size of 200 to 230 MiB; 256 MiB the lenient round figure).
GATE_HALF_BYTES = 64 * MIB
RACK_HALF_BYTES = 256 * MIB
GATE_REFERENCE_BYTES = 8 * GIB
GATE_SIZES = tuple((64 * MIB) << i for i in range(8))
GATE_SIZE_RULE = ("busbw(S) = busbw(8 GiB) x [S/(S + H)] / [8 GiB/(8 GiB + H)], H = 64 MiB fitted to the busbw-by-size tables "
                  "of a two-node 8 x H200 run (tests/unit/fixtures/nccl/v2.18.3_h200_two_nodes.txt) and of "
                  "https://github.com/NVIDIA/nccl-tests/issues/290 (8 x H100, one node); H = 256 MiB for an NVL72 rack, fitted to "
                  "https://github.com/coreweave/nccl-tests/pull/43 (72 x GB200)")
# A multi-node curve over InfiniBand is stated for two nodes; a run over N nodes is gated at N/2 times each size: a
# ring of n ranks takes 2(n-1) steps, so the size at which it reaches a given share of its bandwidth grows with them.
GATE_CURVE_NODES = 2
ESTIMATE = "CONSERVATIVE ESTIMATE"

# Platforms: how a node's GPUs are joined. link: nvswitch (all GPUs of the node through NVSwitch), nvl72 (the GPUs of
# up to ``domain_nodes`` nodes through the rack's NVSwitch trays), pcie (PCIe only for a ring over all the node's GPUs;
# NVLink bridges, where present, join pairs or quads only). gpus: the node sizes the one-node figures are for.
PLATFORMS = {
    "a100-nvswitch": {"link": "nvswitch", "gpus": (8,), "nvls": False, "text": "A100 SXM, 8 GPUs, NVLink 3 through NVSwitch"},
    "a100-pcie": {"link": "pcie", "gpus": (4, 8), "nvls": False, "text": "A100 PCIe, PCIe Gen4 x16"},
    "h100-nvswitch": {"link": "nvswitch", "gpus": (8,), "nvls": True, "text": "H100 SXM, 8 GPUs, NVLink 4 through NVSwitch"},
    "h100-pcie": {"link": "pcie", "gpus": (4, 8), "nvls": False, "text": "H100 PCIe and H100 NVL, PCIe Gen5 x16"},
    "h200-nvswitch": {"link": "nvswitch", "gpus": (8,), "nvls": True, "text": "H200 SXM, 8 GPUs, NVLink 4 through NVSwitch"},
    "h200-nvl": {"link": "pcie", "gpus": (4, 8), "nvls": False, "text": "H200 NVL, PCIe Gen5 x16, NVLink bridges of 2 or 4"},
    "b200-nvswitch": {"link": "nvswitch", "gpus": (8,), "nvls": True, "text": "B200, 8 GPUs, NVLink 5 through NVSwitch"},
    "b300-nvswitch": {"link": "nvswitch", "gpus": (8,), "nvls": True, "text": "B300, 8 GPUs, NVLink 5 through NVSwitch"},
    "gb200-nvl72": {"link": "nvl72", "gpus": (4,), "nvls": True, "domain_nodes": 18,
                    "text": "GB200 NVL72, 4 GPUs a compute tray, 18 trays in one NVLink 5 domain"},
    "gb300-nvl72": {"link": "nvl72", "gpus": (4,), "nvls": True, "domain_nodes": 18,
                    "text": "GB300 NVL72, 4 GPUs a compute tray, 18 trays in one NVLink 5 domain"},
    "l40s-pcie": {"link": "pcie", "gpus": (4, 8), "nvls": False, "text": "L40S, PCIe Gen4 x16, no NVLink"},
    "rtx-pro-6000-pcie": {"link": "pcie", "gpus": (4, 8), "nvls": False, "text": "RTX PRO 6000 Blackwell Server Edition, PCIe Gen5 x16, no NVLink"},
}

_PCIE_NOTE = ("a PCIe ring's busbw depends on the server's PCIe layout (switches, sockets, ACS/IOMMU): \"On PCI systems, the performance "
              "you get is usually determined by the bandwidth your CPU and memory can deliver\" (sjeaugey, "
              "https://github.com/NVIDIA/nccl/issues/1639, where 8 PCIe Gen5 GPUs behind switches gave 28 GB/s and 4 of them 35 GB/s); "
              "the figure is below what a healthy node reaches, so that a broken or down-trained link (x8, Gen3, a socket fallback: "
              "2x to 10x less) fails")
_B200_RING = ("%s, no published Ring figure: 830 GB/s (the B200's NVLS figure) x 370/480 (the H100's Ring share of its NVLS figure, "
              "https://github.com/NVIDIA/nccl-tests/issues/212) = 640" % ESTIMATE)

# One node (``node``) and one NVLink domain (``rack``): (platform, scope, algorithm) -> (reported GB/s at 4-8 GiB, source).
NODE_FIGURES = {
    ("a100-nvswitch", "node", "ring"): (
        230.0, "DGX A100, 8 GPUs, one node (NVIDIA/nccl and nccl-tests threads; Azure's node health check gates 228 GB/s at 4 GiB, "
               "https://github.com/Azure/azurehpc-health-checks conf/nd96amsr_a100_v4.conf)"),
    ("h100-nvswitch", "node", "ring"): (
        370.0, "H100 SXM, 8 GPUs, one node, NCCL_ALGO=Ring (sjeaugey, https://github.com/NVIDIA/nccl-tests/issues/212: ~370 GB/s with "
               "Ring, ~480 GB/s with NVLink SHARP)"),
    ("h100-nvswitch", "node", "nvls"): (
        480.0, "H100 SXM, 8 GPUs, one node, NVLink SHARP (sjeaugey, https://github.com/NVIDIA/nccl-tests/issues/212: ~480 GB/s; "
               "480 GB/s on one HGX H100 in https://github.com/NVIDIA/nccl-tests/issues/309)"),
    ("h200-nvswitch", "node", "ring"): (
        370.0, "H200 SXM, 8 GPUs, one node, Ring: the H100's NVLink 4 (900 GB/s), so the H100's Ring figure "
               "(https://github.com/NVIDIA/nccl-tests/issues/212)"),
    ("h200-nvswitch", "node", "nvls"): (
        479.98, "H200 SXM, 8 GPUs, one node, NVLink SHARP: 479.98 GB/s at 8 GB on Azure ND H200 v5 (the published figure collected in "
                "issue 47); ~475 GB/s in https://github.com/NVIDIA/nccl-tests/issues/272"),
    ("b200-nvswitch", "node", "nvls"): (
        830.0, "B200, 8 GPUs, one node, NVLink SHARP over NVLink 5 (1.8 TB/s a GPU): 830+ GB/s (the published figure collected in issue 47)"),
    ("b200-nvswitch", "node", "ring"): (640.0, _B200_RING),
    ("b300-nvswitch", "node", "nvls"): (
        830.0, "%s, no published figure: the B200's 830 GB/s, the B300 has the same NVLink 5 (1.8 TB/s a GPU) and NVSwitch" % ESTIMATE),
    ("b300-nvswitch", "node", "ring"): (640.0, "%s, as for B300's NVLS: the B200's Ring estimate; %s" % (ESTIMATE, _B200_RING)),
    ("gb200-nvl72", "node", "nvls"): (
        640.0, "%s, no published figure for the 4 GPUs of one tray: the B200's Ring estimate (the same NVLink 5 a GPU), below the "
               "rack's 835 GB/s (https://github.com/coreweave/nccl-tests/pull/43); %s" % (ESTIMATE, _B200_RING)),
    ("gb200-nvl72", "node", "ring"): (640.0, "%s: the B200's Ring estimate (the same NVLink 5 a GPU); %s" % (ESTIMATE, _B200_RING)),
    ("gb200-nvl72", "rack", "nvls"): (
        835.0, "GB200 NVL72, 72 GPUs of one rack over NVLink: 835-847 GB/s at 4-8 GiB (https://github.com/coreweave/nccl-tests/pull/43)"),
    ("gb300-nvl72", "node", "nvls"): (640.0, "%s, no published figure: the GB200 tray's estimate (the same NVLink 5); %s" % (ESTIMATE, _B200_RING)),
    ("gb300-nvl72", "node", "ring"): (640.0, "%s, no published figure: the GB200 tray's estimate (the same NVLink 5); %s" % (ESTIMATE, _B200_RING)),
    ("gb300-nvl72", "rack", "nvls"): (
        835.0, "%s, no published figure: the GB200 NVL72 rack's 835 GB/s (the same NVLink 5 switch trays; "
               "https://github.com/coreweave/nccl-tests/pull/43)" % ESTIMATE),
    ("a100-pcie", "node", "pcie"): (
        20.0, "%s, no published figure: A100 PCIe (4 or 8), PCIe Gen4 x16 (~25 GB/s a direction), NVLink bridges join pairs only "
              "(https://github.com/NVIDIA/nccl/issues/841 asks what 8 x A100 PCIe should reach); %s" % (ESTIMATE, _PCIE_NOTE)),
    ("h100-pcie", "node", "pcie"): (
        25.0, "%s, no published figure: H100 PCIe and H100 NVL (4 or 8), PCIe Gen5 x16 (~50 GB/s a direction), NVLink bridges join pairs "
              "only (2 bridged H100 PCIe: ~116 GB/s, https://github.com/NVIDIA/nccl-tests/issues/194); %s" % (ESTIMATE, _PCIE_NOTE)),
    ("h200-nvl", "node", "pcie"): (
        25.0, "%s, no published figure: H200 NVL (4 or 8), PCIe Gen5 x16 as the H100 NVL, NVLink bridges join 2 or 4 GPUs only, so a "
              "ring over the node runs over PCIe: the H100 PCIe figure; %s" % (ESTIMATE, _PCIE_NOTE)),
    ("l40s-pcie", "node", "pcie"): (
        20.0, "%s, no published figure: L40S (4 or 8), PCIe Gen4 x16 (~25 GB/s a direction), no NVLink; %s" % (ESTIMATE, _PCIE_NOTE)),
    ("rtx-pro-6000-pcie", "node", "pcie"): (
        25.0, "%s, no published figure: RTX PRO 6000 Blackwell Server Edition (4 or 8), PCIe Gen5 x16, no NVLink: the H100 PCIe "
              "figure; %s" % (ESTIMATE, _PCIE_NOTE)),
}

# Across nodes over InfiniBand, per NIC (rail) of a node, NCCL_ALGO=Ring on two nodes (Tree and NVLS-Tree reduce inside
# each node first and report more than the NICs carry, sjeaugey https://github.com/NVIDIA/nccl-tests/issues/196).
NICS = ("hdr-200", "ndr-400", "xdr-800")
NIC_FIGURES = {
    "hdr-200": (24.0, "per 200G HDR NIC (sjeaugey, https://github.com/NVIDIA/nccl-tests/issues/119: \"24GB/s is the peak performance per "
                      "200G NIC\"; ~190 GB/s for 8 x HDR)"),
    "ndr-400": (47.0, "per 400G NDR NIC (AddyLaddy, https://github.com/NVIDIA/nccl-tests/issues/290: 46-48 GB/s; "
                      "https://github.com/NVIDIA/nccl-tests/issues/319: ~48 GB/s a ConnectX-7, ~396 GB/s with Ring over 8)"),
    "xdr-800": (94.0, "%s, no published figure: per 800G XDR NIC, twice the NDR NIC's 47 GB/s (XDR doubles NDR's line rate; "
                      "https://github.com/NVIDIA/nccl-tests/issues/290 for NDR)" % ESTIMATE),
}
# Published two-node figures with NCCL's own algorithm (NVLS-Tree): (platform, nic, rails) -> (GB/s, source). They
# exceed what the NICs carry (the reduction inside each node first), so they gate a two-node run only when the run's
# environment sets an algorithm other than Ring (the role gives two-node runs NCCL_ALGO=Ring otherwise).
TWO_NODE_FIGURES = {
    ("h100-nvswitch", "ndr-400", 8): (440.0, "2 x 8 H100 over 8 x 400G NDR a node, NVLS-Tree: 440-470 GB/s (470 GB/s on 2 HGX hosts, "
                                             "https://github.com/NVIDIA/nccl-tests/issues/309; the low end of the published 440-470)"),
    ("h200-nvswitch", "ndr-400", 8): (440.0, "%s: the H100's two-node figure (the same NVLink 4 and NICs; 440-470 GB/s, "
                                             "https://github.com/NVIDIA/nccl-tests/issues/309); the recorded two-node H200 run of "
                                             "tests/unit/fixtures/nccl/v2.18.3_h200_two_nodes.txt reports 485" % ESTIMATE),
    ("b200-nvswitch", "ndr-400", 8): (690.0, "2 x 8 B200 over 8 x 400G NDR a node: 690 GB/s (the published figure collected in issue 47; "
                                             "the thread of such a pair is https://github.com/NVIDIA/nccl-tests/issues/389)"),
}

# Algorithms a curve is stated for, and what a run's NCCL_ALGO reads as (``algorithm_of``).
CURVE_ALGORITHMS = ("nvls", "ring", "pcie")
ALGORITHMS = ("auto", "nvls", "ring", "tree", "other")
# The topology keys of earlier releases (role variables validate_nccl_node.topology, validate_nccl_multinode.topology, the
# health check's nccl_topology, keys of validate_nccl_settings.gate_curves/validate_nccl_settings.thresholds): still accepted. A one-node
# key names the curve it meant (the nvlink-8 keys were Ring curves); an ib-* key is the per-NIC network curve.
LEGACY_KEYS = {
    "a100-nvlink-8": ("a100-nvswitch", "node", "ring"),
    "h100-nvlink-8": ("h100-nvswitch", "node", "ring"),
    "h200-nvlink-8": ("h200-nvswitch", "node", "ring"),
    "l40s-pcie": ("l40s-pcie", "node", "pcie"),
    "a100-pcie": ("a100-pcie", "node", "pcie"),
    "h100-pcie": ("h100-pcie", "node", "pcie"),
}
NIC_PREFIX = "ib-"


def nic_key(nic):
    """``ib-ndr-400`` for ``ndr-400``: the key under which a NIC's per-NIC curve is named (and set by users)."""
    return NIC_PREFIX + nic


def size_share(size, half_bytes=GATE_HALF_BYTES):
    """busbw at ``size`` as a share of busbw at ``GATE_REFERENCE_BYTES`` (the size rule)."""
    reference = GATE_REFERENCE_BYTES / (GATE_REFERENCE_BYTES + half_bytes)
    return (size / (size + half_bytes)) / reference


def _curve(curve_id, reported, source, half_bytes=GATE_HALF_BYTES, scale=1.0):
    floor = round(reported * BUSBW_FRACTION, 1)
    points = [(int(round(size * scale)), round(floor * size_share(size, half_bytes), 1)) for size in GATE_SIZES]
    text = "%d %% of %s GB/s at 8 GiB: %s; smaller sizes by the size rule (H = %d MiB)" % (
        BUSBW_FRACTION * 100, ("%.2f" % reported).rstrip("0").rstrip("."), source, half_bytes // MIB)
    return {"id": curve_id, "points": points, "reported": reported, "floor": floor, "source": text,
            "estimate": ESTIMATE in source, "half_bytes": half_bytes, "scale": scale}


def curve_id(platform, scope, algorithm):
    return "%s/%s/%s" % (platform, scope, algorithm)


def _node_curve(platform, scope, algorithm):
    reported, source = NODE_FIGURES[(platform, scope, algorithm)]
    half = RACK_HALF_BYTES if scope == "rack" else GATE_HALF_BYTES
    return _curve(curve_id(platform, scope, algorithm), reported, source, half)


# Every one-node and NVLink-domain curve by its id (keys users can name, e.g. validate_nccl_node.topology: h100-nvswitch/node/nvls).
CURVES = dict((curve_id(*key), _node_curve(*key)) for key in NODE_FIGURES)


def check_platform(platform, name="platform"):
    if platform not in PLATFORMS:
        raise ValueError("%s is %r, expected one of %s" % (name, platform, ", ".join(sorted(PLATFORMS))))
    return platform


def check_nic(nic, name="nic"):
    value = nic[len(NIC_PREFIX):] if isinstance(nic, str) and nic.startswith(NIC_PREFIX) else nic
    if value not in NIC_FIGURES:
        raise ValueError("%s is %r, expected one of %s" % (name, nic, ", ".join(nic_key(key) for key in NICS)))
    return value


def algorithm_of(nccl_algo):
    """What a run's ``NCCL_ALGO`` (None: unset) reads as for choosing a curve: ``auto`` (unset: NCCL picks; NVLS on
    a platform that has it), ``ring``, ``nvls`` (NVLS or NVLSTree allowed), ``tree``, ``other`` (CollNet, PAT, an
    exclusion list such as ``^NVLS``)."""
    text = str(nccl_algo if nccl_algo is not None else "").strip().lower()
    if not text:
        return "auto"
    if text.startswith("^"):
        return "other"
    names = [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
    if names == ["ring"]:
        return "ring"
    if any(name in ("nvls", "nvlstree") for name in names):
        return "nvls"
    if names == ["tree"]:
        return "tree"
    return "other"


def _one_node(platform, gpus, algorithm):
    info = PLATFORMS[platform]
    if gpus is not None and gpus not in info["gpus"]:
        return None
    if info["link"] == "pcie":
        return CURVES[curve_id(platform, "node", "pcie")]
    if algorithm in ("auto", "nvls") and info["nvls"]:
        return CURVES[curve_id(platform, "node", "nvls")]
    curve = CURVES[curve_id(platform, "node", "ring")]
    if algorithm in ("tree", "other"):
        curve = dict(curve, source=curve["source"] + "; the run's NCCL_ALGO (%s) has no curve of its own: judged by the Ring curve" % algorithm)
    return curve


def _network(platform, gpus, nodes, rails, nic, algorithm):
    """The curve of a run over ``nodes`` nodes joined by ``rails`` NICs ``nic`` each (Ring: rails x the per-NIC figure,
    capped by the node's own Ring/PCIe figure; a published two-node figure for another algorithm where there is one)."""
    scale = max(1.0, nodes / float(GATE_CURVE_NODES))
    stretch = "; sizes x %g for %d nodes (stated for %d)" % (scale, nodes, GATE_CURVE_NODES) if scale > 1 else ""
    prefix = "%s/" % platform if platform else ""
    if platform and algorithm in ("nvls", "tree", "other") and nodes == GATE_CURVE_NODES and (platform, nic, rails) in TWO_NODE_FIGURES:
        reported, source = TWO_NODE_FIGURES[(platform, nic, rails)]
        return _curve("%s2-node/%sx%d/nvls" % (prefix, nic_key(nic), rails), reported, source)
    per_nic, nic_source = NIC_FIGURES[nic]
    source = "%d x %s GB/s %s" % (rails, ("%.1f" % per_nic).rstrip("0").rstrip("."), nic_source)
    if algorithm != "ring":
        source += "; NCCL_ALGO %s: judged by the Ring curve, a floor for NCCL's other algorithms across nodes" % algorithm
    node = _one_node(platform, gpus, "ring") if platform else None
    if node is not None and node["reported"] < per_nic * rails:
        reported, node_source = NODE_FIGURES[tuple(node["id"].split("/"))]
        source = "the node's own Ring/PCIe figure (%s), below the %d NICs' %g GB/s: %s" % (node["id"], rails, per_nic * rails, node_source)
        return _curve("%s%sx%d/ring" % (prefix, nic_key(nic), rails), reported, source + stretch, scale=scale)
    # per NIC, then times the rails (the figures of the per-NIC curve, as a user's per-NIC curve is multiplied)
    curve = _curve("%s%sx%d/ring" % (prefix, nic_key(nic), rails), per_nic, source + stretch, scale=scale)
    figure = ("%.1f" % per_nic).rstrip("0").rstrip(".")
    curve["source"] = curve["source"].replace("%d %% of %s GB/s at 8 GiB" % (BUSBW_FRACTION * 100, figure),
                                              "%d x (%d %% of %s GB/s) at 8 GiB" % (rails, BUSBW_FRACTION * 100, figure), 1)
    curve.update(points=[(size, round(gbps * rails, 2)) for size, gbps in curve["points"]], reported=per_nic * rails,
                 floor=round(curve["floor"] * rails, 2))
    return curve


def curve_for(platform, gpus_per_node=None, nodes=1, rails=None, nic=None, algorithm="auto"):
    """The built-in gate curve of a run, or None where the catalogue has none.

    ``platform``: a key of ``PLATFORMS`` (None: unknown; only a network curve without the node's cap can be given);
    ``gpus_per_node``: the GPUs of each node in the run (None: not checked); ``nodes``: nodes in the run; ``rails``:
    InfiniBand NICs a node (default 1); ``nic``: ``hdr-200``, ``ndr-400``, ``xdr-800`` (or ``ib-...``), None for no
    network; ``algorithm``: ``algorithm_of(NCCL_ALGO)``.

    One node: the PCIe curve on a PCIe platform; else NVLS for ``auto``/``nvls`` where the platform has it, Ring
    otherwise. Several nodes with a NIC: ``rails`` x the per-NIC Ring figure (sizes stretched for more than two nodes),
    capped by the node's own figure; with an algorithm other than Ring on two nodes, a published two-node figure of
    the platform, NIC and rails where there is one. Several NVL72 trays without a NIC, up to a rack: the rack curve (NVLS;
    the tray's Ring curve for another algorithm, e.g. the Ring two-node runs are given).
    """
    if platform is not None:
        check_platform(platform)
    if algorithm not in ALGORITHMS:
        raise ValueError("algorithm is %r, expected one of %s" % (algorithm, ", ".join(ALGORITHMS)))
    rails = 1 if rails is None else rails
    for name, value in (("nodes", nodes), ("rails", rails)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("%s is %r, expected a whole number of at least 1" % (name, value))
    if gpus_per_node is not None and (isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1):
        raise ValueError("gpus_per_node is %r, expected a whole number of at least 1" % (gpus_per_node,))
    if nic is not None:
        nic = check_nic(nic)
    if nodes == 1:
        return _one_node(platform, gpus_per_node, algorithm) if platform else None
    if nic is not None:
        return _network(platform, gpus_per_node, nodes, rails, nic, algorithm)
    info = PLATFORMS.get(platform) or {}
    if info.get("link") == "nvl72" and nodes <= info["domain_nodes"] and (gpus_per_node is None or gpus_per_node in info["gpus"]):
        if algorithm in ("auto", "nvls"):
            return CURVES[curve_id(platform, "rack", "nvls")]
        ring = CURVES[curve_id(platform, "node", "ring")]
        return dict(ring, source=ring["source"] + "; over %d trays of one NVLink domain with NCCL_ALGO %s: the tray's Ring figure" % (nodes, algorithm))
    return None


def platform_of(key):
    """The platform a key names: a platform itself, a legacy topology key (``h100-nvlink-8``) or a curve id; else None."""
    if key in PLATFORMS:
        return key
    if key in LEGACY_KEYS:
        return LEGACY_KEYS[key][0]
    if key in CURVES:
        return key.split("/")[0]
    return None


def is_key(key):
    """Whether ``key`` names a built-in curve (``resolve`` can read it)."""
    return (key in CURVES or key in LEGACY_KEYS or key in PLATFORMS
            or (isinstance(key, str) and key.startswith(NIC_PREFIX) and key[len(NIC_PREFIX):] in NIC_FIGURES))


def known_keys():
    """Every key ``resolve`` reads: the curve ids, the NIC keys, the legacy topology keys and the platforms."""
    return sorted(set(CURVES) | set(LEGACY_KEYS) | set(nic_key(nic) for nic in NICS) | set(PLATFORMS))


def resolve(key, platform=None, gpus_per_node=None, nodes=1, nics=1, algorithm="auto"):
    """The built-in curve for a run gated by ``key`` (None: chosen from ``platform`` and the run), or None.

    A curve id or legacy key names its curve (whatever the run); a NIC key (``ib-ndr-400``) the network curve with
    ``nics`` rails; a platform (``h100-nvswitch``, as the GPU catalogue names a node's) the curve ``curve_for`` picks for it."""
    if key is None:
        return curve_for(platform, gpus_per_node, nodes, None, None, algorithm) if platform else None
    if key in CURVES:
        return CURVES[key]
    if key in LEGACY_KEYS:
        curve = CURVES[curve_id(*LEGACY_KEYS[key])]
        return dict(curve, source="%s (the topology key %s of earlier releases)" % (curve["source"], key))
    if isinstance(key, str) and key.startswith(NIC_PREFIX) and key[len(NIC_PREFIX):] in NIC_FIGURES:
        return curve_for(platform, gpus_per_node, max(nodes, GATE_CURVE_NODES), nics, key, algorithm)
    if key in PLATFORMS:
        return curve_for(key, gpus_per_node, nodes, None, None, algorithm)
    return None
