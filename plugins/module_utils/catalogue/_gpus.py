# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU catalogue: one entry per GPU model, every fact the collection keeps about a model.

Per model: the names NVML reports (``nvmlDeviceGetName``, exactly as the driver prints them), whether it has MIG and
its MIG profile table (name, GPU-instance profile id, compute slices, memory slices, most instances, placement
starts), the default Slurm GRES type (a case-insensitive substring of the name and the type it gives), the oldest
driver that supports it, the GPUs a node of it has and how they are connected (``nvswitch``, ``nvl72``, ``pcie``,
``nvlink-bridge``), and the busbw platform whose gate curves (``catalogue._busbw``) apply to such a node.

The MIG planner, the GRES map, the health check's driver minimum, the preflight and the NCCL validation read these
entries; none of them keeps a table of its own.  On a node, NVML's own profile answers win over the table here (the
planner plans with what the GPU reports); the table serves the controller, which has no GPU, and a GPU whose MIG mode
is still off (NVML reports no profiles then).  Adding a GPU model = one entry below, one simulator preset
(``nvml_sim``) and its tests.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import re

GUIDE = 'https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html'
GUIDE_GPUS = 'https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html'
MIG_PARTED = 'https://github.com/NVIDIA/mig-parted/blob/main/deployments/systemd/config-default.yaml'

# a driver version: numbers separated by dots (version_key)
_VERSION = re.compile(r'^\d+(\.\d+)*$')

FABRICS = ('nvswitch', 'nvl72', 'pcie', 'nvlink-bridge')
# The busbw platforms (keys of catalogue._busbw's gate curves).
BUSBW_PLATFORMS = ('a100-nvswitch', 'a100-pcie', 'h100-nvswitch', 'h100-pcie', 'h200-nvswitch', 'h200-nvl', 'b200-nvswitch',
                   'b300-nvswitch', 'gb200-nvl72', 'gb300-nvl72', 'l40s-pcie', 'rtx-pro-6000-pcie')

Profile = collections.namedtuple('Profile', 'name id slices mem_slices instances starts')
Gpu = collections.namedtuple('Gpu', 'key names mig profiles gres driver_min fabric gpus_per_node busbw source')

# The GPU-instance profile table of every GPU with 7 compute and 8 memory slices (A100, H100, H200, B200, B300,
# GB200, GB300): ids, compute slices, memory slices, most instances and placement starts are the same, only the
# names (the memory in them) differ.  MIG User Guide, "Supported MIG Profiles" (fractions of memory and SMs, number
# of instances) and "Getting Started with MIG" (``nvidia-smi mig -lgip`` ids and ``nvidia-smi mig -lgipp``
# placements: ``Profile ID 19 Placements: {0,1,2,3,4,5,6}:1``, 20 the same, ``15 {0,2,4,6}:2``, ``14 {0,2,4}:2``,
# ``9 {0,4}:4``, ``5 {0}:4``, ``0 {0}:8``).  Rows in the order of the names given to _eight_slices:
# 1g, 1g+me, 1g with two memory slices, 2g, 3g, 4g, 7g.
_EIGHT_SLICE_ROWS = (
    # (id, compute slices, memory slices, most instances, starts)
    (19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
    (20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    (15, 1, 2, 4, (0, 2, 4, 6)),
    (14, 2, 2, 3, (0, 2, 4)),
    (9, 3, 4, 2, (0, 4)),
    (5, 4, 4, 1, (0,)),
    (0, 7, 8, 1, (0,)),
)


def _eight_slices(names):
    """A 7-compute/8-memory-slice MIG table from its seven profile names (1g, 1g+me, 1g 2-memory, 2g, 3g, 4g, 7g)."""
    return tuple(Profile(name, *row) for name, row in zip(names.split(), _EIGHT_SLICE_ROWS))


def _gpu(key, names, mig=False, profiles=None, gres=None, driver_min=None, fabric=None, gpus_per_node=(), busbw=None, source=''):
    return Gpu(key, tuple(names), bool(mig or profiles), profiles, gres, driver_min, fabric, tuple(gpus_per_node), busbw, source)


# Profile names: MIG User Guide, "Supported MIG Profiles" (GUIDE): "A100 MIG Profiles" (the 40GB table; "For
# A100-SXM4-80GB, the profile names will change according to the memory proportion - 1g.10gb, 1g.10gb+me, 1g.20gb,
# 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"), "H100 MIG Profiles", "H200 MIG Profiles", "B200 MIG Profiles".
_A100_40GB = _eight_slices('1g.5gb 1g.5gb+me 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb')
_A100_80GB = _eight_slices('1g.10gb 1g.10gb+me 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb')
# H200 (and H200 NVL: mig-parted's config-default.yaml gives both device ids 0x2335 and 0x233B the same
# all-balanced profiles 1g.18gb, 2g.35gb, 3g.71gb); names as a real H200 reported them (driver 580.159.04,
# nvml_sim/tests/data/real-h200-580.159.04).
_H200 = _eight_slices('1g.18gb 1g.18gb+me 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb')
# B200: GUIDE "B200 MIG Profiles"; names also in mig-parted (MIG_PARTED: all-1g.23gb, all-1g.23gb.me, all-balanced
# for device 0x2901 = 1g.23gb x2, 2g.45gb, 3g.90gb) and NVIDIA/go-nvml pkg/nvml/mock/shared/gpus/b200.go (the
# profiles NVML returns per enum: 1_SLICE 1g.23gb x7, 1_SLICE_REV1 1g.23gb+me x1, 1_SLICE_REV2 1g.45gb x4,
# 2_SLICE 2g.45gb x3, 3_SLICE 3g.90gb x2, 4_SLICE 4g.90gb x1, 7_SLICE 7g.180gb x1).
_B200 = _eight_slices('1g.23gb 1g.23gb+me 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb')
# GB200: MIG_PARTED, device 0x2941 ("GB200 HGX"): all-1g.24gb = 1g.24gb x7, all-balanced = 1g.24gb x2, 2g.47gb,
# 3g.95gb; all-1g.47gb x4, all-4g.95gb, all-7g.189gb; the +me profile of every 8-slice Blackwell GPU (GUIDE).
_GB200 = _eight_slices('1g.24gb 1g.24gb+me 1g.47gb 2g.47gb 3g.95gb 4g.95gb 7g.189gb')
# B300 (HGX B300): NVIDIA GPU Operator 25.10.0 release notes, "Added support for new MIG profiles with NVIDIA HGX
# B300": 1g.34gb, 1g.34gb+me, 1g.67gb, 2g.67gb, 3g.135gb, 4g.135gb, 7g.269gb (all-balanced 1g.34gb x2, 2g.67gb,
# 3g.135gb); 7 instances at most (HGX B300 datasheet, MIG).
_B300 = _eight_slices('1g.34gb 1g.34gb+me 1g.67gb 2g.67gb 3g.135gb 4g.135gb 7g.269gb')
# GB300: NVIDIA's DGX Station playbook "MIG on DGX Station" (GB300, 2026-03), ``nvidia-smi mig -lgip``: MIG 1g.35gb
# (ID 19), 1g.35gb+me (20), 1g.70gb (15), 2g.70gb (14), 3g.139gb (9), 4g.139gb (5), 7g.278gb (0), created with
# ``-cgi 19,19,19,19,19,19,19`` (7), ``15`` x4, ``14`` x3, ``9`` x2.
_GB300 = _eight_slices('1g.35gb 1g.35gb+me 1g.70gb 2g.70gb 3g.139gb 4g.139gb 7g.278gb')

# Oldest drivers.  A100: MIG needs R450 >= 450.80.02 (GUIDE_GPUS); H100: R525, 525.60.13 the first production
# release of the branch that supports Hopper with MIG; H200: R550 (550.54.14, the first production release of the
# branch that added H200); L40S: R535 (535.54.03); B200/GB200: R570 >= 570.133.20, B300/GB300: R580 >= 580.82.07
# (GUIDE_GPUS, "Supported GPUs").  H100 NVL and H200 NVL keep the minimum of their GPU (the earlier table matched
# them by "H100"/"H200").  None: no minimum is known here (the health check then checks none).
_A100_DRIVER, _H100_DRIVER, _H200_DRIVER = '450.80.02', '525.60.13', '550.54.14'
_B200_DRIVER, _B300_DRIVER = '570.133.20', '580.82.07'
_PCIE = ('pcie', (4, 8))

MODELS = (
    # ---------------------------------------------------------------- MIG, with the guide's table
    _gpu('a100-sxm4-40gb', ['NVIDIA A100-SXM4-40GB'], profiles=_A100_40GB, gres=('A100', 'a100'), driver_min=_A100_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='a100-nvswitch', source=GUIDE + '#a100-mig-profiles'),
    _gpu('a100-pcie-40gb', ['NVIDIA A100-PCIE-40GB'], profiles=_A100_40GB, gres=('A100', 'a100'), driver_min=_A100_DRIVER,
         fabric=_PCIE[0], gpus_per_node=_PCIE[1], busbw='a100-pcie', source=GUIDE + '#a100-mig-profiles'),
    _gpu('a100-sxm4-80gb', ['NVIDIA A100-SXM4-80GB'], profiles=_A100_80GB, gres=('A100', 'a100'), driver_min=_A100_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='a100-nvswitch', source=GUIDE + '#a100-mig-profiles'),
    _gpu('a100-pcie-80gb', ['NVIDIA A100 80GB PCIe', 'NVIDIA A100-PCIE-80GB'], profiles=_A100_80GB, gres=('A100', 'a100'),
         driver_min=_A100_DRIVER, fabric=_PCIE[0], gpus_per_node=_PCIE[1], busbw='a100-pcie', source=GUIDE + '#a100-mig-profiles'),
    _gpu('h100-sxm5-80gb', ['NVIDIA H100 80GB HBM3'], profiles=_A100_80GB, gres=('H100', 'h100'), driver_min=_H100_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='h100-nvswitch', source=GUIDE + '#h100-mig-profiles'),
    _gpu('h100-pcie', ['NVIDIA H100 PCIe'], profiles=_A100_80GB, gres=('H100', 'h100'), driver_min=_H100_DRIVER,
         fabric=_PCIE[0], gpus_per_node=_PCIE[1], busbw='h100-pcie', source=GUIDE + '#h100-mig-profiles'),
    _gpu('h200-sxm5-141gb', ['NVIDIA H200'], profiles=_H200, gres=('H200', 'h200'), driver_min=_H200_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='h200-nvswitch', source=GUIDE + '#h200-mig-profiles'),
    # H200 NVL: a PCIe card, NVLink bridges of 2 or 4 GPUs.
    _gpu('h200-nvl', ['NVIDIA H200 NVL'], profiles=_H200, gres=('H200', 'h200'), driver_min=_H200_DRIVER,
         fabric='nvlink-bridge', gpus_per_node=(4, 8), busbw='h200-nvl', source=GUIDE + '#h200-mig-profiles; ' + MIG_PARTED),
    _gpu('b200', ['NVIDIA B200'], profiles=_B200, gres=('B200', 'b200'), driver_min=_B200_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='b200-nvswitch', source=GUIDE + '#b200-mig-profiles; ' + MIG_PARTED),
    _gpu('b300', ['NVIDIA B300 SXM6 AC'], profiles=_B300, gres=('B300', 'b300'), driver_min=_B300_DRIVER,
         fabric='nvswitch', gpus_per_node=(8,), busbw='b300-nvswitch',
         source='https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/release-notes.html (25.10.0)'),
    # GB200 / GB300 NVL72: a compute tray (one Slurm node) holds 4 GPUs; the rack's 72 share one NVLink domain.
    _gpu('gb200', ['NVIDIA GB200'], profiles=_GB200, gres=('GB200', 'gb200'), driver_min=_B200_DRIVER,
         fabric='nvl72', gpus_per_node=(4,), busbw='gb200-nvl72', source=MIG_PARTED + ' (device 0x2941)'),
    _gpu('gb300', ['NVIDIA GB300'], profiles=_GB300, gres=('GB300', 'gb300'), driver_min=_B300_DRIVER,
         fabric='nvl72', gpus_per_node=(4,), busbw='gb300-nvl72', source='NVIDIA DGX Station playbook "MIG on DGX Station" (GB300)'),
    # ---------------------------------------------------------------- MIG, no table here (profiles not checked off the node)
    # RTX PRO 6000 Blackwell Server Edition: 4 compute/4 memory slices; its profiles (1g.24gb x4, 1g.24gb+gfx x4,
    # 1g.24gb-me x4, 1g.24gb+me.all x1, 2g.48gb x2, 2g.48gb+gfx x2, 2g.48gb-me x2, 2g.48gb+me.all x1, 4g.96gb,
    # 4g.96gb+gfx: MIG_PARTED, device 0x2BB5) are known by name and count, but no source read here gives their
    # GPU-instance profile ids or placements, so the table is left out rather than guessed.
    _gpu('rtx-pro-6000-bse', ['NVIDIA RTX PRO 6000 Blackwell Server Edition'], mig=True, gres=('RTX PRO 6000', 'rtx_pro_6000'),
         fabric=_PCIE[0], gpus_per_node=_PCIE[1], busbw='rtx-pro-6000-pcie', source=MIG_PARTED + ' (device 0x2BB5)'),
    _gpu('h100-nvl', ['NVIDIA H100 NVL'], mig=True, gres=('H100', 'h100'), driver_min=_H100_DRIVER,
         fabric='nvlink-bridge', gpus_per_node=(4, 8), busbw='h100-pcie', source=GUIDE_GPUS),
    _gpu('a30', ['NVIDIA A30'], mig=True, gres=('A30', 'a30'), fabric='pcie', source=GUIDE + '#a30-mig-profiles'),
    _gpu('a800', ['NVIDIA A800-SXM4-80GB', 'NVIDIA A800 80GB PCIe'], mig=True, source=GUIDE_GPUS),
    _gpu('h800', ['NVIDIA H800', 'NVIDIA H800 PCIe'], mig=True, source=GUIDE_GPUS),
    _gpu('h20', ['NVIDIA H20'], mig=True, source=GUIDE_GPUS),
    _gpu('gh200', ['NVIDIA GH200 480GB', 'NVIDIA GH200 144G HBM3e'], mig=True, gres=('GH200', 'gh200'), source=GUIDE_GPUS),
    # ---------------------------------------------------------------- no MIG (not in GUIDE_GPUS' table)
    _gpu('l40s', ['NVIDIA L40S'], gres=('L40S', 'l40s'), driver_min='535.54.03', fabric=_PCIE[0], gpus_per_node=_PCIE[1],
         busbw='l40s-pcie', source=GUIDE_GPUS),
    _gpu('l40', ['NVIDIA L40'], gres=('L40', 'l40'), fabric='pcie', source=GUIDE_GPUS),
    _gpu('l4', ['NVIDIA L4'], gres=('L4', 'l4'), fabric='pcie', source=GUIDE_GPUS),
    _gpu('l20', ['NVIDIA L20'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('a40', ['NVIDIA A40'], gres=('A40', 'a40'), fabric='pcie', source=GUIDE_GPUS),
    _gpu('a10', ['NVIDIA A10', 'NVIDIA A10G'], gres=('A10', 'a10'), fabric='pcie', source=GUIDE_GPUS),
    _gpu('a16', ['NVIDIA A16'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('a2', ['NVIDIA A2'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('t4', ['Tesla T4'], gres=('T4', 't4'), fabric='pcie', source=GUIDE_GPUS),
    _gpu('v100', ['Tesla V100-SXM2-16GB', 'Tesla V100-SXM2-32GB', 'Tesla V100-PCIE-16GB', 'Tesla V100-PCIE-32GB',
                  'Tesla V100S-PCIE-32GB'], gres=('V100', 'v100'), source=GUIDE_GPUS),
    _gpu('p100', ['Tesla P100-PCIE-16GB'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('p40', ['Tesla P40'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-a6000', ['NVIDIA RTX A6000'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-a5000', ['NVIDIA RTX A5000'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-a4000', ['NVIDIA RTX A4000'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-6000-ada', ['NVIDIA RTX 6000 Ada Generation'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-5000-ada', ['NVIDIA RTX 5000 Ada Generation'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('rtx-4000-ada', ['NVIDIA RTX 4000 Ada Generation'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('geforce-rtx-4090', ['NVIDIA GeForce RTX 4090'], fabric='pcie', source=GUIDE_GPUS),
    _gpu('geforce-rtx-3090', ['NVIDIA GeForce RTX 3090'], fabric='pcie', source=GUIDE_GPUS),
)
_BY_NAME = dict((name, model) for model in MODELS for name in model.names)
_BY_LOWER = dict((name.lower(), model) for model in MODELS for name in model.names)


def model_for(nvml_name):
    """The catalogue entry of the GPU NVML calls ``nvml_name`` (exact name; case ignored when no exact one), or None."""
    name = str(nvml_name or '').strip()
    return _BY_NAME.get(name) or _BY_LOWER.get(name.lower())


def _starts_word(name, wanted):
    """``name`` begins with ``wanted`` (or ``nvidia <wanted>``) followed by the end or a non-alphanumeric character."""
    for head in (wanted, 'nvidia ' + wanted):
        if name.startswith(head) and not name[len(head):len(head) + 1].isalnum():
            return True
    return False


def models_matching(text):
    """``[(nvml name, entry)]`` of the names that hold ``text`` (case ignored), in catalogue order: the names equal to
    ``text`` or ``NVIDIA <text>`` when there are such, else those that begin with it as a word (``B300`` is the
    ``NVIDIA B300 SXM6 AC``, not also the ``NVIDIA GB300``), else every name that holds it."""
    wanted = str(text or '').strip().lower()
    found = [(name, model) for model in MODELS for name in model.names if wanted and wanted in name.lower()]
    exact = [(name, model) for name, model in found if name.lower() in (wanted, 'nvidia ' + wanted)]
    leading = [(name, model) for name, model in found if _starts_word(name.lower(), wanted)]
    return exact or leading or found


def mig_profiles(nvml_name):
    """The MIG profile table of the model (planner format: name, id, slices, instance_count, placements
    ``[[start, memory slices]]``, ci_profiles None), or None when the model is unknown or has no table here."""
    model = model_for(nvml_name)
    if model is None or not model.profiles:
        return None
    return [{'name': prof.name, 'id': prof.id, 'slices': prof.slices, 'instance_count': prof.instances,
             'placements': [[start, prof.mem_slices] for start in prof.starts], 'ci_profiles': None}
            for prof in model.profiles]


def mig_tables():
    """``{nvml name: (profile name, ...)}`` of every name whose model has a MIG table here."""
    return dict((name, tuple(prof.name for prof in model.profiles)) for model in MODELS if model.profiles for name in model.names)


def gres_type_map():
    """The default GRES type map: ``{model-name substring: Slurm GRES type}`` (the longest substring found in a GPU's
    name gives its type; see ``slurm._gres.gpu_type``)."""
    types = {}
    for model in MODELS:
        if model.gres:
            types[model.gres[0]] = model.gres[1]
    return types


def gres_type(nvml_name):
    """The default GRES type of a GPU name (the longest substring of the map in it, case ignored), or None."""
    name, found = str(nvml_name or '').lower(), None
    for key in gres_type_map():
        if key.lower() in name and (found is None or len(key) > len(found)):
            found = key
    return gres_type_map()[found] if found else None


def version_key(text):
    """A driver version as a tuple to compare: ``"535.129.03"`` -> ``(535, 129, 3)``; raises ``ValueError`` for anything else."""
    value = str(text).strip()
    if not _VERSION.match(value):
        raise ValueError('%r is not a driver version such as "550.54.14"' % (text,))
    return tuple(int(part) for part in value.split('.'))


def driver_minimum(nvml_name):
    """The oldest driver that supports the GPU ``nvml_name``, or None when not known.  A name the catalogue does not
    list takes the minimum of the models of its GRES family (its longest GRES substring) when they all agree."""
    model = model_for(nvml_name)
    if model is not None:
        return model.driver_min
    name, family = str(nvml_name or '').lower(), None
    for candidate in MODELS:
        key = candidate.gres[0] if candidate.gres else None
        if key and key.lower() in name and (family is None or len(key) > len(family)):
            family = key
    minimums = set(candidate.driver_min for candidate in MODELS if candidate.gres and candidate.gres[0] == family)
    return minimums.pop() if len(minimums) == 1 else None


def busbw_platform(nvml_name, gpus):
    """The busbw platform (one of BUSBW_PLATFORMS) of a node of ``gpus`` GPUs called ``nvml_name``, or None when the
    model has none or no node of it has that many GPUs."""
    model = model_for(nvml_name)
    if model is None or model.busbw is None or gpus not in model.gpus_per_node:
        return None
    return model.busbw


# Named layout shapes (the mig role's all-1g, all-2g, all-3g, all-4g, all-7g, all-balanced): computed from a GPU's
# profile table, the catalogue's or, on a node, the one NVML reports.  mig-parted's config-default.yaml names the same
# layouts per model: all-balanced = 1 x 3g, 1 x 2g, 2 x the smallest 1g on a 7-slice GPU (A100, H100, H200, B200,
# GB200, ...), 1 x 2g, 2 x 1g on a 4-slice one (A30, RTX PRO 6000); all-<N>g = as many of the N-slice profile as fit.
SHAPES = ('1g', '2g', '3g', '4g', '7g', 'balanced')
# The profiles NVIDIA's mig-parted names a layout after (all-1g.10gb ...; its default config): the collection ships
# the same names (catalogue/_mig_layouts.py), each valid on the models that have that profile.
MIG_PARTED_PROFILES = ('1g.5gb', '1g.10gb', '1g.18gb', '2g.10gb', '2g.20gb', '3g.20gb', '3g.40gb', '7g.40gb', '7g.80gb')


def _plain(profiles, slices):
    """The profile of ``slices`` compute slices without media or graphics variants (``+me``, ``-me``, ``+gfx``), the one
    with the fewest memory slices (``1g.10gb`` before ``1g.20gb``), or None."""
    found = [prof for prof in profiles if prof['slices'] == slices and '+' not in prof['name'] and '-' not in prof['name']]
    found.sort(key=lambda prof: (prof['placements'][0][1] if prof['placements'] else 0, prof['id']))
    return found[0] if found else None


def shape_instances(profiles, shape):
    """The instances (``[{'profile', 'count'}]``) of layout shape ``shape`` on a GPU with the profile table ``profiles``
    (planner format): one of SHAPES, or a profile name (as many instances of it as the GPU allows).  ValueError says
    what the table lacks."""
    names = [prof['name'] for prof in profiles]
    if shape in names:
        prof = profiles[names.index(shape)]
        return [{'profile': prof['name'], 'count': prof['instance_count']}]
    if shape == 'balanced':
        big = _plain(profiles, 3)
        parts = [(big, 1), (_plain(profiles, 2), 1), (_plain(profiles, 1), 2)] if big else [(_plain(profiles, 2), 1), (_plain(profiles, 1), 2)]
        if all(prof for prof, _count in parts):
            return [{'profile': prof['name'], 'count': count} for prof, count in parts]
        raise ValueError('shape balanced needs a 2g and a 1g profile; this GPU has %s' % ', '.join(names))
    if shape in SHAPES:
        prof = _plain(profiles, int(shape[0]))
        if prof:
            return [{'profile': prof['name'], 'count': prof['instance_count']}]
    listed = [prof['name'] for prof in sorted(profiles, key=lambda prof: (
        prof['slices'], prof['placements'][0][1] if prof['placements'] else 0, prof.get('memory_mb', 0), prof['name']))]
    raise ValueError('shape %r is not a MIG profile of this GPU nor one of %s; valid profiles: %s' % (shape, ', '.join(SHAPES), ', '.join(listed)))
