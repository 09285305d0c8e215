# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU catalogue: its entries, its lookups, the consumers that read it, the simulated NVML that proves its MIG tables
(through the real nvidia-ml-py), and a scan of plugins/ and roles/ for a second copy of its facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

import pynvml

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _site as site
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus as catalogue
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig import _mig_nvml
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import MigPlanError, plan_node
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _gres, _healthcheck_fleet
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl
from ansible_collections.gpucluster.bringup.tests.unit.simnode import node  # noqa: F401  pylint: disable=unused-import

# pylint: disable=redefined-outer-name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
NAMES = [name for model in catalogue.MODELS for name in model.names]
PROFILE_NAME = re.compile(r'^(\d)g\.(\d+)gb(\+me|\+gfx|-me|\+me\.all)?$')


# ------------------------------------------------------------------ the entries

@pytest.mark.parametrize('model', catalogue.MODELS, ids=lambda model: model.key)
def test_every_model_has_a_source_names_and_known_values(model):
    assert model.source.strip(), model.key
    assert model.names and all(re.match(r'^(NVIDIA|Tesla) \S', name) for name in model.names)
    assert model.fabric in catalogue.FABRICS + (None,)
    assert model.busbw in catalogue.BUSBW_PLATFORMS + (None,)
    assert (model.busbw is None) == (not model.gpus_per_node) or model.busbw is None
    assert model.driver_min is None or re.match(r'^\d{3}\.\d+\.\d+$', model.driver_min)
    assert model.gres is None or (model.gres[0] in ' '.join(model.names) and re.match(r'^[a-z0-9_]+$', model.gres[1]))
    assert model.mig or not model.profiles


def test_keys_and_names_are_unique_and_every_platform_has_a_model():
    keys = [model.key for model in catalogue.MODELS]
    assert len(keys) == len(set(keys))
    assert len(NAMES) == len(set(NAMES))
    assert sorted(set(model.busbw for model in catalogue.MODELS if model.busbw)) == sorted(catalogue.BUSBW_PLATFORMS)


@pytest.mark.parametrize('model', [model for model in catalogue.MODELS if model.profiles], ids=lambda model: model.key)
def test_mig_tables_are_consistent(model):
    ids = [prof.id for prof in model.profiles]
    assert len(ids) == len(set(ids)) and len(model.profiles) == len(set(prof.name for prof in model.profiles))
    memory_slices = max(prof.mem_slices for prof in model.profiles)
    compute_slices = max(prof.slices for prof in model.profiles)
    for prof in model.profiles:
        match = PROFILE_NAME.match(prof.name)
        assert match and int(match.group(1)) == prof.slices, prof
        assert all(start % prof.mem_slices == 0 and start + prof.mem_slices <= memory_slices for start in prof.starts)
        assert len(prof.starts) >= prof.instances >= 1
        # memory in the name grows with the memory slices: the whole-GPU profile has the most
        assert int(match.group(2)) <= int(PROFILE_NAME.match(model.profiles[-1].name).group(2))
    assert [prof.name for prof in model.profiles if prof.name.endswith('+me')] == [model.profiles[0].name + '+me']
    assert (compute_slices, memory_slices) == (7, 8)


def test_the_new_models_tables():
    assert [prof.name for prof in catalogue.model_for('NVIDIA B200').profiles] == [
        '1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb', '7g.180gb']
    assert catalogue.model_for('NVIDIA GB300').profiles[-1] == catalogue.Profile('7g.278gb', 0, 7, 8, 1, (0,))
    assert catalogue.model_for('NVIDIA B300 SXM6 AC').profiles[0] == catalogue.Profile('1g.34gb', 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6))
    assert catalogue.model_for('NVIDIA GB200').profiles[2] == catalogue.Profile('1g.47gb', 15, 1, 2, 4, (0, 2, 4, 6))
    assert catalogue.mig_profiles('NVIDIA H200 NVL') == catalogue.mig_profiles('NVIDIA H200')
    rtx = catalogue.model_for('NVIDIA RTX PRO 6000 Blackwell Server Edition')
    assert rtx.mig and rtx.profiles is None and rtx.busbw == 'rtx-pro-6000-pcie'


# The entries are built when the catalogue is imported; the two builders are called here again, so that a fault in them
# shows in a test and not only as a wrong table (a new entry is written with them).
@pytest.mark.parametrize('args, kwargs, expected', [
    (('k', ['A', 'B']), {}, catalogue.Gpu('k', ('A', 'B'), False, None, None, None, None, (), None, '')),
    (('k', ['A']), {'mig': True}, catalogue.Gpu('k', ('A',), True, None, None, None, None, (), None, '')),
    (('k', ['A']), {'profiles': ('p',), 'gres': ('G', 'g'), 'driver_min': '1.2', 'fabric': 'pcie', 'gpus_per_node': [4, 8],
                    'busbw': 'x', 'source': 'S'},
     catalogue.Gpu('k', ('A',), True, ('p',), ('G', 'g'), '1.2', 'pcie', (4, 8), 'x', 'S')),
])
def test_an_entry_is_built_from_its_fields(args, kwargs, expected):
    built = catalogue._gpu(*args, **kwargs)  # pylint: disable=protected-access
    assert built == expected and isinstance(built.names, tuple) and isinstance(built.gpus_per_node, tuple)


def test_an_eight_slice_table_is_built_from_seven_names():
    table = catalogue._eight_slices('a b c d e f g')  # pylint: disable=protected-access
    assert table == (
        catalogue.Profile('a', 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)), catalogue.Profile('b', 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        catalogue.Profile('c', 15, 1, 2, 4, (0, 2, 4, 6)), catalogue.Profile('d', 14, 2, 2, 3, (0, 2, 4)),
        catalogue.Profile('e', 9, 3, 4, 2, (0, 4)), catalogue.Profile('f', 5, 4, 4, 1, (0,)), catalogue.Profile('g', 0, 7, 8, 1, (0,)))


# ------------------------------------------------------------------ lookups

@pytest.mark.parametrize('name, key', [
    ('NVIDIA H100 80GB HBM3', 'h100-sxm5-80gb'), ('nvidia h100 80gb hbm3', 'h100-sxm5-80gb'), (' NVIDIA B200 ', 'b200'),
    ('NVIDIA A100-PCIE-80GB', 'a100-pcie-80gb'), ('Tesla T4', 't4'), ('NVIDIA H100', None), ('', None), (None, None),
])
def test_model_for(name, key):
    found = catalogue.model_for(name)
    assert (found.key if found else None) == key


@pytest.mark.parametrize('text, names', [
    ('B200', ['NVIDIA B200']),
    ('b300', ['NVIDIA B300 SXM6 AC']),
    ('GB300', ['NVIDIA GB300']),
    ('H200', ['NVIDIA H200']),
    ('H200 NVL', ['NVIDIA H200 NVL']),
    ('H100', ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe', 'NVIDIA H100 NVL']),
    ('A10', ['NVIDIA A10']),
    ('T4', ['Tesla T4']),
    ('80GB', ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe', 'NVIDIA A100-PCIE-80GB', 'NVIDIA H100 80GB HBM3', 'NVIDIA A800-SXM4-80GB',
              'NVIDIA A800 80GB PCIe', 'NVIDIA GH200 480GB']),
    ('X9000', []),
])
def test_models_matching(text, names):
    assert [name for name, _model in catalogue.models_matching(text)] == names


@pytest.mark.parametrize('name, gres', [
    ('NVIDIA A100 80GB PCIe', 'a100'), ('NVIDIA A10G', 'a10'), ('NVIDIA GB200', 'gb200'), ('NVIDIA B200', 'b200'),
    ('NVIDIA B300 SXM6 AC', 'b300'), ('NVIDIA GB300', 'gb300'), ('NVIDIA GH200 480GB', 'gh200'), ('NVIDIA H200 NVL', 'h200'),
    ('NVIDIA L40S', 'l40s'), ('NVIDIA L40', 'l40'), ('NVIDIA RTX PRO 6000 Blackwell Server Edition', 'rtx_pro_6000'),
    ('NVIDIA RTX A6000', None), ('NVIDIA Quadro P400', None),
])
def test_gres_type(name, gres):
    assert catalogue.gres_type(name) == gres


def test_gres_type_map():
    assert catalogue.gres_type_map() == {
        'A10': 'a10', 'A100': 'a100', 'A30': 'a30', 'A40': 'a40', 'B200': 'b200', 'B300': 'b300', 'GB200': 'gb200', 'GB300': 'gb300',
        'GH200': 'gh200', 'H100': 'h100', 'H200': 'h200', 'L4': 'l4', 'L40': 'l40', 'L40S': 'l40s', 'RTX PRO 6000': 'rtx_pro_6000',
        'T4': 't4', 'V100': 'v100'}
    # one family, one type
    for key, value in catalogue.gres_type_map().items():
        assert set(model.gres[1] for model in catalogue.MODELS if model.gres and model.gres[0] == key) == {value}


@pytest.mark.parametrize('name, version', [
    ('NVIDIA A100-SXM4-40GB', '450.80.02'), ('NVIDIA H100 80GB HBM3', '525.60.13'), ('NVIDIA H100 NVL', '525.60.13'),
    ('NVIDIA H200', '550.54.14'), ('NVIDIA H200 NVL', '550.54.14'), ('NVIDIA L40S', '535.54.03'), ('NVIDIA B200', '570.133.20'),
    ('NVIDIA GB200', '570.133.20'), ('NVIDIA B300 SXM6 AC', '580.82.07'), ('NVIDIA GB300', '580.82.07'),
    # a name the catalogue does not list: its GRES family's minimum when the family agrees on one
    ('NVIDIA H100 SXM5 94GB', '525.60.13'), ('NVIDIA A100X', '450.80.02'),
    ('NVIDIA GH200 480GB', None), ('NVIDIA L4', None), ('NVIDIA Quadro P400', None), (None, None),
])
def test_driver_minimum(name, version):
    assert catalogue.driver_minimum(name) == version


@pytest.mark.parametrize('name, gpus, platform', [
    ('NVIDIA H100 80GB HBM3', 8, 'h100-nvswitch'), ('NVIDIA H100 80GB HBM3', 4, None), ('NVIDIA H100 NVL', 4, 'h100-pcie'),
    ('NVIDIA H100 PCIe', 8, 'h100-pcie'), ('NVIDIA A100-SXM4-40GB', 8, 'a100-nvswitch'), ('NVIDIA A100 80GB PCIe', 4, 'a100-pcie'),
    ('NVIDIA H200', 8, 'h200-nvswitch'), ('NVIDIA H200 NVL', 8, 'h200-nvl'), ('NVIDIA B200', 8, 'b200-nvswitch'),
    ('NVIDIA B300 SXM6 AC', 8, 'b300-nvswitch'), ('NVIDIA GB200', 4, 'gb200-nvl72'), ('NVIDIA GB300', 4, 'gb300-nvl72'),
    ('NVIDIA GB200', 8, None), ('NVIDIA L40S', 4, 'l40s-pcie'), ('NVIDIA L40S', 2, None),
    ('NVIDIA RTX PRO 6000 Blackwell Server Edition', 8, 'rtx-pro-6000-pcie'), ('NVIDIA A30', 4, None), ('NVIDIA L4', 8, None),
    (None, 8, None),
])
def test_busbw_platform(name, gpus, platform):
    assert catalogue.busbw_platform(name, gpus) == platform


# ------------------------------------------------------------------ every consumer reads it

def test_the_gres_map_is_the_catalogues():
    assert _gres.DEFAULT_TYPE_MAP == catalogue.gres_type_map()
    assert _gres.gpu_type('NVIDIA GB200', _gres.merge_type_map({})) == 'gb200'


@pytest.mark.parametrize('name', NAMES)
def test_the_health_check_driver_minimum_is_the_catalogues(name):
    version = catalogue.driver_minimum(name)
    assert _healthcheck_fleet.driver_minimum([name]) == ((version, 'the oldest that supports %s' % name) if version else (None, None))


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('gpus', [1, 2, 4, 8])
def test_the_nccl_node_topology_follows_the_platform(name, gpus):
    platform = catalogue.busbw_platform(name, gpus)
    old_keys = {'a100-nvswitch': 'a100-nvlink-8', 'h100-nvswitch': 'h100-nvlink-8', 'h200-nvswitch': 'h200-nvlink-8'}
    topology = _validation_nccl.node_topology(name, gpus)
    if topology is not None:
        assert old_keys.get(platform, platform) == topology
    else:
        assert platform not in ('a100-nvswitch', 'a100-pcie', 'h100-nvswitch', 'h100-pcie', 'h200-nvswitch', 'l40s-pcie')


@pytest.mark.parametrize('name', [name for name in NAMES if catalogue.model_for(name).profiles])
def test_the_planner_checks_a_mig_off_gpu_with_the_catalogue_table(name):
    gpu = {'index': 0, 'uuid': 'GPU-0', 'name': name, 'mig_capable': True, 'mig_current': False, 'mig_pending': False,
           'profiles': None, 'instances': [], 'processes': []}
    with pytest.raises(MigPlanError) as err:
        plan_node([gpu], [{'gpu': 'all', 'model': None, 'mig': True,
                           'instances': [{'profile': '9g.1gb', 'count': 1, 'placement': None, 'compute_instances': None}]}])
    assert str(err.value).endswith('valid: ' + ', '.join(prof.name for prof in catalogue.model_for(name).profiles))


@pytest.mark.parametrize('name', NAMES)
def test_the_preflight_resolves_every_name(name):
    model = catalogue.model_for(name)
    found = site.resolve_model(name)
    assert found['kind'] == ('mig' if model.profiles else 'mig-unknown' if model.mig else 'no-mig')
    assert found['name'] == (name if model.profiles or not model.mig else None)


# ------------------------------------------------------------------ the simulator's NVML proves every table

SIM_PRESETS = ('a100-40gb-x8', 'a100-80gb-pcie-x4', 'h100-80gb-x8', 'h200-x8', 'h200-nvl-x4', 'b200-x8', 'b300-x8', 'gb200-x4',
               'gb300-x4')


def rows(profiles):
    return sorted((prof['name'], prof['id'], prof['slices'], prof['instance_count'], [list(place) for place in prof['placements']])
                  for prof in profiles)


@pytest.mark.parametrize('preset', SIM_PRESETS)
def test_the_catalogue_table_is_what_nvml_reports(node, preset):
    node(preset, auto_reset=True)
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
        gpu = _mig_nvml.Nvml(pynvml).read_gpu(0)
    finally:
        pynvml.nvmlShutdown()
    assert gpu['mig_current'] is True and catalogue.model_for(gpu['name']) is not None
    assert rows(gpu['profiles']) == rows(catalogue.mig_profiles(gpu['name']))


def test_every_catalogue_table_has_a_preset():
    from nvmlsim import models, presets  # pylint: disable=import-outside-toplevel
    simulated = set(models.MODELS[presets.PRESETS[preset].model].name for preset in SIM_PRESETS)
    tables = set(catalogue.model_for(name).key for name in simulated)
    assert tables == set(model.key for model in catalogue.MODELS if model.profiles) - set(['a100-sxm4-80gb', 'a100-pcie-40gb', 'h100-pcie'])
    # the three without a preset of their own share a table with one that has one
    assert catalogue.mig_profiles('NVIDIA A100-SXM4-80GB') == catalogue.mig_profiles('NVIDIA A100 80GB PCIe')
    assert catalogue.mig_profiles('NVIDIA A100-PCIE-40GB') == catalogue.mig_profiles('NVIDIA A100-SXM4-40GB')
    assert catalogue.mig_profiles('NVIDIA H100 PCIe') == catalogue.mig_profiles('NVIDIA H100 80GB HBM3')


# ------------------------------------------------------------------ no second table in plugins/ or roles/

_ANY_PROFILE = re.compile(r'\b\dg\.\d+gb(?:\+me\.all|\+me|\+gfx|-me)?')
_TABLES = dict((name, set(prof.name for prof in model.profiles)) for model in catalogue.MODELS if model.profiles for name in model.names)


def _product_files():
    for top in ('plugins', 'roles'):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in files:
                if name.endswith(('.py', '.yml', '.yaml', '.j2')) or '.' not in name:
                    path = os.path.join(folder, name)
                    if not path.endswith(os.path.join('catalogue', '_gpus.py')):
                        yield os.path.relpath(path, ROOT)


def _read(rel):
    with open(os.path.join(ROOT, rel)) as handle:
        return handle.read()


# A mig-parted profile-named layout ("all-1g.10gb: [{gpu: all, shape: 1g.10gb}]") names a profile and no fact about it.
_PROFILE_LAYOUT = re.compile(r'^\s*all-(\S+): \[\{gpu: all, shape: \1\}\]\s*$', re.M)


def _second_tables(files):
    """Files that list the MIG profiles of more than one table, or 6 or more of one table's names."""
    found = []
    for rel, text in files:
        names = set(_ANY_PROFILE.findall(_PROFILE_LAYOUT.sub('', text))) & set().union(*_TABLES.values())
        if len(names) >= 6 or not any(names <= table for table in _TABLES.values()):
            found.append('%s: %s' % (rel, ', '.join(sorted(names))))
    return found


def _type_maps(files):
    """Files that pair two or more GPU models with their GRES types (``'A100': 'a100'``, ``A100: a100``); one pair is an
    example in a message."""
    pair = re.compile(r"""['"]?\b([A-Z]+\d+[A-Z]*)\b['"]?\s*:\s*['"]?\b([a-z]+\d+[a-z]*)\b""")
    found = []
    for rel, text in files:
        pairs = sorted(set('%s -> %s' % match.groups() for match in pair.finditer(text) if match.group(1).lower() == match.group(2)))
        if len(pairs) > 1:
            found.extend('%s: %s' % (rel, text) for text in pairs)
    return found


def _driver_minimums(files):
    """Files that pair a GPU model with a driver version (``('H100', '525.60.13')``, ``'H100': '525.60.13'``)."""
    families = '|'.join(re.escape(key) for key in sorted(catalogue.gres_type_map(), key=len, reverse=True))
    pair = re.compile(r"""['"](%s)['"]\s*[,:]\s*['"]\d{3}\.\d+\.\d+['"]""" % families)
    return ['%s: %s' % (rel, match.group(0)) for rel, text in files for match in pair.finditer(text)]


def test_the_scan_finds_a_copy():
    # Each scan finds the kind of table it looks for (so an empty result below means something).
    assert _second_tables([('x.yml', 'a: [1g.10gb, 2g.20gb]\nb: [1g.18gb]\n')]) == ['x.yml: 1g.10gb, 1g.18gb, 2g.20gb']
    assert _second_tables([('x.py', "T = ('1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb')")])
    assert _second_tables([('x.py', 'e.g. {"0": ["3g.40gb", "1g.10gb"]}')]) == []
    assert _second_tables([('x.yml', 'all-1g.5gb: [{gpu: all, shape: 1g.5gb}]\nall-1g.18gb: [{gpu: all, shape: 1g.18gb}]\n')]) == []
    assert _second_tables([('x.yml', 'small: [{gpu: all, shape: 1g.5gb}]\nall-x: [{gpu: all, shape: 1g.18gb}]\n')])
    assert _type_maps([('x.py', "DEFAULT = {'A100': 'a100', 'H100': 'h100'}")]) == ['x.py: A100 -> a100', 'x.py: H100 -> h100']
    assert _type_maps([('x.yml', 'map:\n  L40S: l40s\n  T4: t4\n')]) == ['x.yml: L40S -> l40s', 'x.yml: T4 -> t4']
    assert _type_maps([('x.py', 'e.g. {"A100": "a100"}')]) == []
    assert _driver_minimums([('x.py', "DRIVER_MIN = (('H200', '550.54.14'), ('H100', '525.60.13'))")]) == [
        "x.py: 'H200', '550.54.14'", "x.py: 'H100', '525.60.13'"]


def test_no_second_table_of_the_catalogue_in_plugins_or_roles():
    files = [(rel, _read(rel)) for rel in _product_files()]
    assert _second_tables(files) == []
    assert _type_maps(files) == []
    assert _driver_minimums(files) == []
