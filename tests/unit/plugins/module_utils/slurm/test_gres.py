# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for the GRES model, the gres.conf renderer and the slurmd -G parser.

The seed 003 node: 4x NVIDIA A100 80GB PCIe, two sockets of 16 cores with two
threads each (CPUs 0-15 and 32-47 on socket 0), GPUs 0 and 1 whole, GPUs 2
and 3 in MIG mode with seven 1g.10gb instances each (GPU 3 has no GI 10).

The SLURMD_G_* samples are real output of Debian 12's slurmd 22.05.8-4+deb12u3
(``slurmd -G``), run on the gres.conf and slurm.conf ``Gres=`` that these
facts render, with the device files created by mknod in a private /dev and a
two-socket hwloc topology (``HWLOC_XMLFILE``).  Long lines are split only to
stay within 160 columns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._gres import (
    DEFAULT_TYPE_MAP,
    build_gres,
    check_options,
    compare_gres,
    cores_of_cpus,
    cpu_list_from_mask,
    gpu_type,
    merge_type_map,
    mig_profile_name,
    parse_slurmd_gres,
    render_uuid_map,
    slurm_autodetect_type,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_minors import parse_mig_minors
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_hooks import parse_uuid_map

SEED_003_CI_CAPS = [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]
SEED_003_GI_CAPS = [336, 345, 354, 363, 372, 381, 390, 471, 480, 489, 507, 516, 525, 534]
SEED_003_GIS = {2: [7, 8, 9, 10, 11, 12, 13], 3: [7, 8, 9, 11, 12, 13, 14]}
SOCKET0 = list(range(0, 16)) + list(range(32, 48))
SOCKET1 = list(range(16, 32)) + list(range(48, 64))
MIG_MINORS = '\n'.join(['config 1', 'monitor 2'] + [
    'gpu%d/gi%d/access %d\ngpu%d/gi%d/ci0/access %d' % (gpu, gi, gi_minor, gpu, gi, ci_minor)
    for gpu, gi, gi_minor, ci_minor in zip([2] * 7 + [3] * 7, SEED_003_GIS[2] + SEED_003_GIS[3], SEED_003_GI_CAPS, SEED_003_CI_CAPS)])


def seed_003_node():
    gpus = []
    for index in range(4):
        gpus.append({
            'index': index, 'minor': index, 'name': 'NVIDIA A100 80GB PCIe', 'uuid': 'GPU-0000000%d' % index,
            'cpus': SOCKET0 if index < 2 else SOCKET1, 'mig_current': index >= 2, 'mig_pending': index >= 2,
            'mig_devices': [{'index': mig_index, 'uuid': 'MIG-%d-%02d' % (index, gi), 'gi_id': gi, 'ci_id': 0,
                             'slice_count': 1, 'memory_mb': 9728}
                            for mig_index, gi in enumerate(SEED_003_GIS.get(index, []))],
        })
    return {
        'gpus': gpus,
        'mig_minors': parse_mig_minors(MIG_MINORS),
        'cpu_topology': dict((cpu, ((cpu % 32) // 16, cpu % 16)) for cpu in range(64)),
    }


SEED_003_MULTIPLE_LINES = [
    'Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15',
    'Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-15',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap345,/dev/nvidia-caps/nvidia-cap346 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap354,/dev/nvidia-caps/nvidia-cap355 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap363,/dev/nvidia-caps/nvidia-cap364 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap372,/dev/nvidia-caps/nvidia-cap373 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap381,/dev/nvidia-caps/nvidia-cap382 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap390,/dev/nvidia-caps/nvidia-cap391 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap471,/dev/nvidia-caps/nvidia-cap472 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap480,/dev/nvidia-caps/nvidia-cap481 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap489,/dev/nvidia-caps/nvidia-cap490 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap507,/dev/nvidia-caps/nvidia-cap508 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap516,/dev/nvidia-caps/nvidia-cap517 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap525,/dev/nvidia-caps/nvidia-cap526 Cores=16-31',
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap534,/dev/nvidia-caps/nvidia-cap535 Cores=16-31',
]

# The seed's own line, with Cores= added.
SEED_003_CI_ONLY_LINES = [
    'Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-15',
    'Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-15',
    'Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[337,346,355,364,373,382,391,472,481,490,508,517,526,535] Cores=16-31',
]

SLURMD_G_MULTIPLE = (
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=337 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap336,/dev/nvidia-caps/nvidia-cap337 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=346 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap345,/dev/nvidia-caps/nvidia-cap346 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=355 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap354,/dev/nvidia-caps/nvidia-cap355 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=364 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap363,/dev/nvidia-caps/nvidia-cap364 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=373 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap372,/dev/nvidia-caps/nvidia-cap373 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=382 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap381,/dev/nvidia-caps/nvidia-cap382 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=391 ID=7696487 File=/dev/nvidia2,/dev/nvidia-caps/nvidia-c'
    'ap390,/dev/nvidia-caps/nvidia-cap391 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=472 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap471,/dev/nvidia-caps/nvidia-cap472 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=481 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap480,/dev/nvidia-caps/nvidia-cap481 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=490 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap489,/dev/nvidia-caps/nvidia-cap490 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=508 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap507,/dev/nvidia-caps/nvidia-cap508 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=517 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap516,/dev/nvidia-caps/nvidia-cap517 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=526 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap525,/dev/nvidia-caps/nvidia-cap526 Cores=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=535 ID=7696487 File=/dev/nvidia3,/dev/nvidia-caps/nvidia-c'
    'ap534,/dev/nvidia-caps/nvidia-cap535 Cores=16-31 CoreCnt=64 (null)\n'
)


SLURMD_G_CI_ONLY = (
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=14 Index=0 ID=7696487 File=/dev/nvidia-caps/nvidia-cap[337,346,355'
    ',364,373,382,391,472,481,490,508,517,526,535] Cores=16-31 CoreCnt=64 (null)\n'
)


SLURMD_G_CI_ONLY_SHARD = (
    'slurmd-vm: Gres Name=shard Type=a100 Count=8 Index=0 ID=1918986455 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (nu'
    'll)\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=a100 Count=8 Index=1 ID=1918986455 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (nu'
    'll)\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=337 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap337 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=337 ID=7696487 File=/dev/nvidia-caps/nvidia-cap337 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=346 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap346 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=346 ID=7696487 File=/dev/nvidia-caps/nvidia-cap346 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=355 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap355 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=355 ID=7696487 File=/dev/nvidia-caps/nvidia-cap355 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=364 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap364 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=364 ID=7696487 File=/dev/nvidia-caps/nvidia-cap364 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=373 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap373 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=373 ID=7696487 File=/dev/nvidia-caps/nvidia-cap373 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=382 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap382 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=382 ID=7696487 File=/dev/nvidia-caps/nvidia-cap382 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=391 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap391 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=391 ID=7696487 File=/dev/nvidia-caps/nvidia-cap391 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=472 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap472 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=472 ID=7696487 File=/dev/nvidia-caps/nvidia-cap472 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=481 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap481 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=481 ID=7696487 File=/dev/nvidia-caps/nvidia-cap481 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=490 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap490 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=490 ID=7696487 File=/dev/nvidia-caps/nvidia-cap490 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=508 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap508 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=508 ID=7696487 File=/dev/nvidia-caps/nvidia-cap508 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=517 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap517 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=517 ID=7696487 File=/dev/nvidia-caps/nvidia-cap517 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=526 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap526 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=526 ID=7696487 File=/dev/nvidia-caps/nvidia-cap526 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=shard Type=1g.10gb Count=0 Index=535 ID=1918986455 File=/dev/nvidia-caps/nvidia-cap535 Co'
    'res=16-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=535 ID=7696487 File=/dev/nvidia-caps/nvidia-cap535 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
)


SLURMD_G_MPS_MULTIPLE_HEAD = (
    'slurmd-vm: Gres Name=mps Type=a100 Count=100 Index=0 ID=7565421 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)'
    '\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=mps Type=a100 Count=100 Index=1 ID=7565421 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (null)'
    '\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=mps Type=1g.10gb Count=0 Index=2 ID=7565421 File=/dev/nvidia2 Cores=16-31 CoreCnt=64 (nul'
    'l)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=2 ID=7696487 File=/dev/nvidia2 Cores=16-31 CoreCnt=64 (nul'
    'l)\n'
    'slurmd-vm: Gres Name=mps Type=1g.10gb Count=0 Index=336 ID=7565421 File=/dev/nvidia-caps/nvidia-cap336 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=336 ID=7696487 File=/dev/nvidia-caps/nvidia-cap336 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=mps Type=1g.10gb Count=0 Index=337 ID=7565421 File=/dev/nvidia-caps/nvidia-cap337 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=337 ID=7696487 File=/dev/nvidia-caps/nvidia-cap337 Cores=1'
    '6-31 CoreCnt=64 (null)\n'
    'slurmd-vm: Gres Name=mps Type=1g.10gb Count=0 Index=2 ID=7565421 File=/dev/nvidia2 Cores=16-31 CoreCnt=64 (nul'
    'l)\n'
    'slurmd-vm: Gres Name=gpu Type=1g.10gb Count=1 Index=2 ID=7696487 File=/dev/nvidia2 Cores=16-31 CoreCnt=64 (nul'
    'l)\n'
)


SLURMD_G_SMALL_NODE_HEAD = (
    'slurmd-vm: error: xcpuinfo_abs_to_mac: failed\n'
    'slurmd-vm: error: Invalid GRES data for gpu, Cores=16-31\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-15 CoreCnt=32 (null)\n'
    'slurmd-vm: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-15 CoreCnt=32 (null)\n'
)


# --- building the facts for seed 003 ------------------------------------------

def test_seed_003_multiple_files():
    checked = []
    facts, warnings = build_gres(seed_003_node(), file_exists=lambda path: checked.append(path) or True)
    assert len(checked) == 2 + 2 + 28
    assert warnings == []
    assert facts['gres_conf_lines'] == SEED_003_MULTIPLE_LINES
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14'
    assert facts['gres_types'] == 'gpu'
    gpus = [e for e in facts['entries'] if e['name'] == 'gpu']
    assert [e['type'] for e in gpus] == ['a100'] * 2 + ['1g.10gb'] * 14
    assert [e['mig']['ci_minor'] for e in gpus if e['mig']] == SEED_003_CI_CAPS
    assert [e['mig']['gi_minor'] for e in gpus if e['mig']] == SEED_003_GI_CAPS
    assert [e['index'] for e in gpus] == list(range(16))
    assert [e['count'] for e in gpus] == [1] * 16
    assert gpus[2]['files'] == ['/dev/nvidia2', '/dev/nvidia-caps/nvidia-cap336', '/dev/nvidia-caps/nvidia-cap337']
    assert gpus[2]['mig'] == {'mig_index': 0, 'gi_id': 7, 'ci_id': 0, 'gi_minor': 336, 'ci_minor': 337, 'profile': '1g.10gb'}
    assert gpus[12]['mig']['gi_id'] == 11 and gpus[12]['gpu_index'] == 3
    assert facts['uuid_map']['0'] == 'GPU-00000000'
    assert facts['uuid_map']['2'] == 'MIG-2-07'
    assert facts['uuid_map']['15'] == 'MIG-3-14'
    assert len(facts['uuid_map']) == 16


def test_seed_003_ci_only_is_the_seed_line():
    facts, _warnings = build_gres(seed_003_node(), mig_device_files='ci_only')
    assert facts['gres_conf_lines'] == SEED_003_CI_ONLY_LINES
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14'
    mig = [e for e in facts['entries'] if e['mig']]
    assert [e['files'] for e in mig] == [['/dev/nvidia-caps/nvidia-cap%d' % minor] for minor in SEED_003_CI_CAPS]


def test_uuid_map_file_round_trip():
    facts, _warnings = build_gres(seed_003_node())
    content = facts['uuid_map_content']
    assert content.startswith('# GRES index -> device UUID')
    assert '\n0 a100 GPU-00000000\n' in content
    assert '\n9 1g.10gb MIG-3-07\n' in content
    parsed = parse_uuid_map(content)  # the reader of the file: the TaskProlog hook runner
    assert parsed[2] == 'MIG-2-07'
    assert dict((str(k), v) for k, v in parsed.items()) == facts['uuid_map']
    gpus = [e for e in facts['entries'] if e['name'] == 'gpu']
    assert render_uuid_map(gpus) == content


def test_types_ordered_by_first_appearance():
    node = seed_003_node()
    # GPU 0 in MIG mode with the instances of GPU 2, GPU 2 whole: MIG types come first.
    node['gpus'][0]['mig_current'] = node['gpus'][0]['mig_pending'] = True
    node['gpus'][0]['mig_devices'] = node['gpus'][2]['mig_devices'][:2]
    node['mig_minors'] = parse_mig_minors('gpu0/gi7/access 3\ngpu0/gi7/ci0/access 4\ngpu0/gi8/access 12\ngpu0/gi8/ci0/access 13\n' + MIG_MINORS)
    node['gpus'][2]['mig_current'] = node['gpus'][2]['mig_pending'] = False
    facts, _warnings = build_gres(node)
    assert facts['node_gres'] == 'gpu:1g.10gb:9,gpu:a100:2'
    gpus = [e for e in facts['entries'] if e['name'] == 'gpu']
    assert [(e['index'], e['gpu_index'], e['type']) for e in gpus][:3] == [(0, 0, '1g.10gb'), (1, 0, '1g.10gb'), (2, 3, '1g.10gb')]
    assert [(e['index'], e['gpu_index']) for e in gpus if e['type'] == 'a100'] == [(9, 1), (10, 2)]
    assert facts['gres_conf_lines'][0] == ('Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap3,'
                                           '/dev/nvidia-caps/nvidia-cap4 Cores=0-15')
    assert facts['gres_conf_lines'][-2:] == ['Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-15', 'Name=gpu Type=a100 File=/dev/nvidia2 Cores=16-31']


def test_ci_only_splits_runs_with_different_cores():
    node = seed_003_node()
    node['gpus'][3]['cpus'] = SOCKET0
    facts, _warnings = build_gres(node, mig_device_files='ci_only')
    assert facts['gres_conf_lines'][2:] == [
        'Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[337,346,355,364,373,382,391] Cores=16-31',
        'Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[472,481,490,508,517,526,535] Cores=0-15',
    ]


def test_cores_left_out():
    facts, _warnings = build_gres(seed_003_node(), cores=False)
    assert facts['gres_conf_lines'][0] == 'Name=gpu Type=a100 File=/dev/nvidia0'
    assert all('Cores=' not in line for line in facts['gres_conf_lines'])
    node = seed_003_node()
    for gpu in node['gpus']:
        gpu['cpus'] = None  # NVML gave no affinity
    facts, _warnings = build_gres(node)
    assert facts['gres_conf_lines'][0] == 'Name=gpu Type=a100 File=/dev/nvidia0'


@pytest.mark.parametrize('sharing, count, lines, node_gres, gres_types', [
    ('mps', {'mps_count': 100}, ['Name=mps Count=100 File=/dev/nvidia0', 'Name=mps Count=100 File=/dev/nvidia1'],
     'gpu:a100:2,gpu:1g.10gb:14,mps:200', 'gpu,mps'),
    ('mps', {'mps_count': 50}, ['Name=mps Count=50 File=/dev/nvidia0', 'Name=mps Count=50 File=/dev/nvidia1'],
     'gpu:a100:2,gpu:1g.10gb:14,mps:100', 'gpu,mps'),
    ('shard', {'shard_count': 8}, ['Name=shard Count=8 File=/dev/nvidia0', 'Name=shard Count=8 File=/dev/nvidia1'],
     'gpu:a100:2,gpu:1g.10gb:14,shard:16', 'gpu,shard'),
])
def test_sharing(sharing, count, lines, node_gres, gres_types):
    facts, _warnings = build_gres(seed_003_node(), mig_device_files='ci_only', sharing=sharing, **count)
    assert facts['gres_conf_lines'] == SEED_003_CI_ONLY_LINES + lines
    assert facts['node_gres'] == node_gres
    assert facts['gres_types'] == gres_types
    shared = [e for e in facts['entries'] if e['name'] == sharing]
    assert [(e['gpu_index'], e['files'], e['index']) for e in shared] == [(0, ['/dev/nvidia0'], None), (1, ['/dev/nvidia1'], None)]
    assert len(facts['uuid_map']) == 16


def test_sharing_without_mig():
    node = seed_003_node()
    for gpu in node['gpus']:
        gpu['mig_current'] = gpu['mig_pending'] = False
    facts, _warnings = build_gres(node, sharing='mps')
    assert facts['node_gres'] == 'gpu:a100:4,mps:400'
    assert facts['gres_conf_lines'][4:] == ['Name=mps Count=100 File=/dev/nvidia%d' % i for i in range(4)]


def test_autodetect_nvml():
    facts, _warnings = build_gres(seed_003_node(), autodetect='nvml', nvml_plugin='/usr/lib64/slurm/gpu_nvml.so', sharing='shard',
                                  shard_count=4, mig_device_files='ci_only')
    assert facts['gres_conf_lines'] == ['AutoDetect=nvml', 'Name=shard Count=4 File=/dev/nvidia0', 'Name=shard Count=4 File=/dev/nvidia1']
    assert facts['node_gres'] == 'gpu:a100:2,gpu:1g.10gb:14,shard:8'
    assert facts['uuid_map'] == {}
    assert facts['uuid_map_content'] == ''
    assert all(e['index'] is None for e in facts['entries'])
    assert facts['nvml_plugin'] == '/usr/lib64/slurm/gpu_nvml.so'
    comments = facts['gres_conf_comments']
    assert comments[1] == '/usr/lib64/slurm/gpu_nvml.so; slurm.conf declares Gres=gpu:a100:2,gpu:1g.10gb:14,shard:8.'
    assert len(comments) == 4 + 16   # the header, then one line per GPU entry (2 whole GPUs, 14 MIG instances)
    assert comments[4] == '  a100 /dev/nvidia0 0-15'
    assert comments[-1].startswith('  1g.10gb /dev/nvidia-caps/nvidia-cap')


def test_autodetect_off_has_no_comments():
    facts, _warnings = build_gres(seed_003_node())
    assert facts['gres_conf_comments'] == []


def test_no_gpus():
    facts, warnings = build_gres({'gpus': [], 'mig_minors': None, 'cpu_topology': None})
    assert (facts['entries'], facts['gres_conf_lines'], facts['node_gres'], facts['gres_types']) == ([], [], '', '')
    assert warnings == []


@pytest.mark.parametrize('current, pending, message', [
    (True, False, 'GPU 2 (NVIDIA A100 80GB PCIe, /dev/nvidia2) has a MIG mode change pending (now enabled, after reset disabled); '
                  'the facts describe the current mode'),
    (False, True, 'GPU 2 (NVIDIA A100 80GB PCIe, /dev/nvidia2) has a MIG mode change pending (now disabled, after reset enabled); '
                  'the facts describe the current mode'),
])
def test_pending_mig_mode_warns(current, pending, message):
    node = seed_003_node()
    node['gpus'][2]['mig_current'], node['gpus'][2]['mig_pending'] = current, pending
    facts, warnings = build_gres(node)
    assert warnings == [message]
    assert ('gpu:a100:3' in facts['node_gres']) == (not current)


def _mutate(change):
    node = seed_003_node()
    change(node)
    return node


def _set(path_value):
    def change(node):
        target = node
        for key in path_value[:-2]:
            target = target[key]
        target[path_value[-2]] = path_value[-1]
    return change


@pytest.mark.parametrize('change, kwargs, message', [
    (None, {'autodetect': 'nvml', 'plugin_dirs': ['/usr/lib/x86_64-linux-gnu/slurm-wlm', '/usr/lib64/slurm']},
     'autodetect nvml needs the Slurm gpu/nvml plugin (gpu_nvml.so), which is not in any of: /usr/lib/x86_64-linux-gnu/slurm-wlm, '
     '/usr/lib64/slurm; install it (Debian: the package slurm-wlm-nvml-plugin, in the contrib component; Ubuntu: the same package, '
     'in multiverse; SchedMD\'s slurm-smd packages: in slurm-smd when built with nvml.h present; the RHEL family: a Slurm built with NVML) '
     'or use autodetect: off'),
    (None, {'type_map': {'A100': 'a 100'}},
     'type_map value \'a 100\' for "A100" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-" (e.g. "a100")'),
    (None, {'sharing': 'mps'},
     'sharing mps cannot be combined with MIG instances written as MultipleFiles: with mps or shard configured, Slurm 22.05 splits '
     'every MultipleFiles record into one GPU per file (three per MIG instance); use mig_device_files: ci_only, or sharing: none'),
    (_set(['gpus', 2, 'mig_devices', []]), {},
     'GPU 2 (NVIDIA A100 80GB PCIe, /dev/nvidia2) is in MIG mode but has no MIG instances; create instances first or disable MIG mode'),
    (_set(['mig_minors', None]), {'mig_minors_source': '/proc/driver/nvidia-caps/mig-minors'},
     'GPU 2 (NVIDIA A100 80GB PCIe, /dev/nvidia2) is in MIG mode but no mig-minors table was read (/proc/driver/nvidia-caps/mig-minors)'),
    (_set(['gpus', 3, 'mig_devices', 6, 'ci_id', 1]), {'mig_minors_source': '/tmp/mm'},
     'MIG instance gpu3/gi14/ci1 has no compute-instance minor in /tmp/mm: no line "gpu3/gi14/ci1/access <minor>"'),
    (_set(['gpus', 3, 'minor', 5]), {},
     'MIG instance gpu5/gi7/ci0 has no GPU-instance minor in mig-minors: no line "gpu5/gi7/access <minor>"'),
    (_set(['gpus', 1, 'name', 'NVIDIA Quadro P400']), {},
     'GPU model "NVIDIA Quadro P400" matches no key of type_map (keys: A10, A100, A30, A40, B200, B300, GB200, GB300, GH200, H100, H200, L4, L40, L40S, '
     'RTX PRO 6000, T4, V100); add one, e.g. type_map: {"NVIDIA Quadro P400": "<short type>"}'),
    (_set(['gpus', 2, 'mig_devices', 0, 'memory_mb', 0]), {}, 'MIG device reports 1 slices and 0 MB of memory; both must be positive'),
    (None, {'file_exists': lambda path: path not in ('/dev/nvidia1', '/dev/nvidia2', '/dev/nvidia-caps/nvidia-cap337')},
     'device files named by the GRES entries do not exist: /dev/nvidia1, /dev/nvidia2, /dev/nvidia-caps/nvidia-cap337'),
    (_set(['cpu_topology', None]), {},
     'cannot map the CPUs of GPU 0 (NVIDIA A100 80GB PCIe, /dev/nvidia0) to cores: no CPU topology was read; set cores: false to leave Cores= out'),
    (_set(['gpus', 0, 'cpus', [0, 64]]), {},
     'GPU 0 (NVIDIA A100 80GB PCIe, /dev/nvidia0) is local to CPU 64, which the CPU topology does not list (known CPUs: 0-63); '
     'set cores: false to leave Cores= out'),
    (_set(['gpus', 1, 'name', 'NVIDIA A100-SXM4-40GB']),
     {'autodetect': 'nvml', 'nvml_plugin': '/usr/lib64/slurm/gpu_nvml.so', 'type_map': {'SXM4': 'sxm4-a100'}},
     'with autodetect nvml the type "sxm4-a100" of GPU 1 (NVIDIA A100-SXM4-40GB, /dev/nvidia1) must be part of the name Slurm detects '
     '("nvidia_a100-sxm4-40gb"); change type_map'),
])
def test_build_errors(change, kwargs, message):
    node = _mutate(change) if change else seed_003_node()
    with pytest.raises(ValueError) as err:
        build_gres(node, **kwargs)
    assert str(err.value) == message


def test_sharing_needs_a_whole_gpu():
    node = seed_003_node()
    node['gpus'] = node['gpus'][2:]
    with pytest.raises(ValueError) as err:
        build_gres(node, sharing='shard', shard_count=2, mig_device_files='ci_only')
    assert str(err.value) == 'sharing shard needs a GPU outside MIG mode, but every GPU of this node is in MIG mode'


@pytest.mark.parametrize('sharing', ['mps', 'shard'])
def test_sharing_on_a_node_with_mig_instances_warns_that_the_instances_are_not_shared(sharing):
    facts, warnings = build_gres(seed_003_node(), sharing=sharing, shard_count=2, mig_device_files='ci_only')
    assert warnings == ['sharing %s applies to the GPUs outside MIG mode only; the MIG instances of GPU 2, 3 are scheduled '
                        'whole (gpu:<profile>), not shared' % sharing]
    assert [e['gpu_index'] for e in facts['entries'] if e['name'] == sharing] == [0, 1]
    assert build_gres(seed_003_node(), mig_device_files='ci_only')[1] == []


def test_build_does_not_change_its_input():
    node = seed_003_node()
    before = copy.deepcopy(node)
    build_gres(node, mig_device_files='ci_only', sharing='mps')
    assert node == before


# --- small pure helpers ---------------------------------------------------

@pytest.mark.parametrize('model, overrides, expected', [
    ('NVIDIA A100 80GB PCIe', None, 'a100'),
    ('NVIDIA A100-SXM4-40GB', None, 'a100'),
    ('NVIDIA A10', None, 'a10'),
    ('NVIDIA H100 80GB HBM3', None, 'h100'),
    ('NVIDIA H200', None, 'h200'),
    ('NVIDIA GH200 480GB', None, 'gh200'),
    ('NVIDIA L40S', None, 'l40s'),
    ('NVIDIA L4', None, 'l4'),
    ('Tesla V100-SXM2-32GB', None, 'v100'),
    ('nvidia a100 80gb pcie', None, 'a100'),
    ('NVIDIA A100 80GB PCIe', {'A100 80GB': 'a100-80g'}, 'a100-80g'),
    ('NVIDIA A100-SXM4-40GB', {'A100 80GB': 'a100-80g'}, 'a100'),
    ('NVIDIA RTX 6000 Ada Generation', {'RTX 6000 Ada': 'rtx6000ada'}, 'rtx6000ada'),
])
def test_gpu_type(model, overrides, expected):
    assert gpu_type(model, merge_type_map(overrides)) == expected


def test_merge_type_map_keeps_defaults():
    merged = merge_type_map({'A100': 'ampere'})
    assert merged['A100'] == 'ampere'
    assert merged['H100'] == 'h100'
    assert DEFAULT_TYPE_MAP['A100'] == 'a100'


@pytest.mark.parametrize('overrides, message', [
    ({'': 'x'}, "type_map key '' must be a non-empty model-name substring such as \"A100\""),
    ({'A100': ''}, 'type_map value \'\' for "A100" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-" (e.g. "a100")'),
    ({'A100': 'a:100'}, 'type_map value \'a:100\' for "A100" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-" (e.g. "a100")'),
    ({'A100': 7}, 'type_map value 7 for "A100" is not a valid Slurm GRES type: use letters, digits, ".", "_", "+", "-" (e.g. "a100")'),
])
def test_merge_type_map_errors(overrides, message):
    with pytest.raises(ValueError) as err:
        merge_type_map(overrides)
    assert str(err.value) == message


@pytest.mark.parametrize('slices, memory_mb, name', [
    (1, 9728, '1g.10gb'),     # A100 80GB (seed 003 nvidia-smi: 9728MiB)
    (1, 4864, '1g.5gb'),      # A100 40GB
    (2, 9728, '2g.10gb'),
    (3, 40192, '3g.39gb'),    # what Slurm's rule gives for 39.25 GB
    (7, 81408, '7g.80gb'),
    (1, 1536, '1g.2gb'),      # 1.5 rounds half away from zero, like roundl()
    (1, 2560, '1g.3gb'),
])
def test_mig_profile_name(slices, memory_mb, name):
    assert mig_profile_name(slices, memory_mb) == name


@pytest.mark.parametrize('model, detected', [
    ('NVIDIA A100 80GB PCIe', 'nvidia_a100_80gb_pcie'),
    ('NVIDIA H100 80GB HBM3', 'nvidia_h100_80gb_hbm3'),
])
def test_slurm_autodetect_type(model, detected):
    assert slurm_autodetect_type(model) == detected


@pytest.mark.parametrize('words, cpus', [
    ([0x3, 0x3], [0, 1, 64, 65]),
    ([0xFFFF0000FFFF, 0], SOCKET0),
    ([0xFFFF0000FFFF0000, 0], SOCKET1),
    ([0], []),
    ([1 << 63], [63]),
])
def test_cpu_list_from_mask(words, cpus):
    assert cpu_list_from_mask(words) == cpus


@pytest.mark.parametrize('cpus, topology, cores', [
    (SOCKET0, dict((cpu, ((cpu % 32) // 16, cpu % 16)) for cpu in range(64)), list(range(16))),
    (SOCKET1, dict((cpu, ((cpu % 32) // 16, cpu % 16)) for cpu in range(64)), list(range(16, 32))),
    ([0, 1], {0: (0, 0), 1: (0, 0), 2: (0, 4), 3: (0, 4)}, [0]),
    ([2, 3], {0: (0, 0), 1: (0, 0), 2: (0, 4), 3: (0, 4)}, [1]),
    ([8], {0: (0, 0), 4: (0, 1), 8: (1, 0), 12: (1, 1)}, [2]),
])
def test_cores_of_cpus(cpus, topology, cores):
    assert cores_of_cpus(cpus, topology) == cores


# --- slurmd -G --------------------------------------------------------------

# Slurm 22.05 print_gres_conf() format (the "GRES[...]" form slurmd logs with
# debug flags and for autodetected GPUs; format string from libslurmfull.so).
GRES_BRACKET_SAMPLE = (
    '[2024-07-05T10:00:00.000] debug2:     GRES[gpu] Type:a100 Count:1 Cores(64):0-15  Links:(null) '
    'Flags:HAS_FILE,HAS_TYPE,ENV_NVML File:/dev/nvidia0 UniqueId:(null)\n'
    '    GRES[gpu] Type:1g.10gb Count:1 Cores(64):16-31  Links:0,-1,0,0,0,0,0 Flags:HAS_FILE,ENV_NVML '
    'File:/dev/nvidia2,/dev/nvidia-caps/nvidia-cap345,/dev/nvidia-caps/nvidia-cap346 UniqueId:MIG-2-08\n'
    '    GRES[mps] Type:(null) Count:100 Cores(64):(null)  Links:(null) Flags:HAS_FILE File:/dev/nvidia0\n'
)


def test_parse_gres_name_lines():
    parsed = parse_slurmd_gres(SLURMD_G_MULTIPLE)
    assert parsed['errors'] == [] and parsed['warnings'] == []
    records = parsed['records']
    assert len(records) == 16
    assert records[0] == {'name': 'gpu', 'type': 'a100', 'count': 1, 'file': '/dev/nvidia0', 'files': ['/dev/nvidia0'],
                          'cores': '0-15', 'links': None, 'flags': None, 'unique_id': None}
    assert records[2]['files'] == ['/dev/nvidia2', '/dev/nvidia-caps/nvidia-cap336', '/dev/nvidia-caps/nvidia-cap337']
    assert records[15]['cores'] == '16-31'
    # the key=value form with every field slurmd may print (a MIG instance's UniqueId, Links, Flags)
    line = ('slurmd: Gres Name=gpu Type=1g.10gb Count=1 Index=337 ID=7696487 File=/dev/nvidia2 Cores=16-31 CoreCnt=64 '
            'Links=-1,0 Flags=HAS_FILE,HAS_TYPE,ENV_NVML UniqueId=MIG-2-08\n')
    (record,) = parse_slurmd_gres(line)['records']
    assert (record['links'], record['flags'], record['unique_id']) == ('-1,0', 'HAS_FILE,HAS_TYPE,ENV_NVML', 'MIG-2-08')


def test_parse_seed_style_record():
    records = parse_slurmd_gres(SLURMD_G_CI_ONLY)['records']
    assert [(r['type'], r['count']) for r in records] == [('a100', 1), ('a100', 1), ('1g.10gb', 14)]
    assert records[2]['files'] == ['/dev/nvidia-caps/nvidia-cap%d' % minor for minor in SEED_003_CI_CAPS]


def test_parse_bracket_lines():
    records = parse_slurmd_gres(GRES_BRACKET_SAMPLE)['records']
    assert [(r['name'], r['type'], r['count'], r['cores'], r['unique_id']) for r in records] == [
        ('gpu', 'a100', 1, '0-15', None), ('gpu', '1g.10gb', 1, '16-31', 'MIG-2-08'), ('mps', None, 100, None, None)]
    assert records[0]['flags'] == 'HAS_FILE,HAS_TYPE,ENV_NVML'
    assert records[1]['links'] == '0,-1,0,0,0,0,0'
    assert records[1]['files'][1] == '/dev/nvidia-caps/nvidia-cap345'


def test_parse_collects_errors_and_warnings():
    parsed = parse_slurmd_gres(SLURMD_G_SMALL_NODE_HEAD + 'slurmd: WARNING: A line in gres.conf for GRES gpu:a100 has 1 more configured '
                                                          'than expected in slurm.conf. Ignoring extra GRES.\n'
                                                          'slurmd: Gres Name=gpu Type=a100 Index=0\n')
    assert parsed['errors'] == ['slurmd-vm: error: xcpuinfo_abs_to_mac: failed', 'slurmd-vm: error: Invalid GRES data for gpu, Cores=16-31',
                                'slurmd: Gres Name=gpu Type=a100 Index=0']
    assert parsed['warnings'] == ['slurmd: WARNING: A line in gres.conf for GRES gpu:a100 has 1 more configured than expected in slurm.conf. '
                                  'Ignoring extra GRES.']
    assert len(parsed['records']) == 2


@pytest.mark.parametrize('kwargs, output', [
    ({}, SLURMD_G_MULTIPLE),
    ({'mig_device_files': 'ci_only'}, SLURMD_G_CI_ONLY),
    ({'mig_device_files': 'ci_only', 'sharing': 'shard', 'shard_count': 8}, SLURMD_G_CI_ONLY_SHARD),
])
def test_compare_with_real_slurmd(kwargs, output):
    facts, _warnings = build_gres(seed_003_node(), **kwargs)
    result = compare_gres(facts['entries'], output)
    assert result == {'equal': True, 'order_equal': True, 'missing': [], 'unexpected': [], 'errors': []}


def test_compare_detects_split_multiple_files():
    # Real slurmd output for MultipleFiles together with mps: each file became a GPU.
    facts, _warnings = build_gres(seed_003_node())
    result = compare_gres(facts['entries'], SLURMD_G_MPS_MULTIPLE_HEAD)
    assert result['equal'] is False
    assert 'gpu:1g.10gb files=/dev/nvidia2 cores=16-31' in result['unexpected']
    assert 'gpu:1g.10gb files=/dev/nvidia-caps/nvidia-cap336 cores=16-31' in result['unexpected']
    assert 'mps files=/dev/nvidia0 count=100' in result['unexpected']
    assert 'gpu:1g.10gb files=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 cores=16-31' in result['missing']


def test_compare_reports_slurmd_errors():
    facts, _warnings = build_gres(seed_003_node())
    result = compare_gres(facts['entries'][:2], SLURMD_G_SMALL_NODE_HEAD)
    assert result['equal'] is False
    assert result['missing'] == [] and result['unexpected'] == [] and result['order_equal'] is True
    assert result['errors'] == ['slurmd-vm: error: xcpuinfo_abs_to_mac: failed', 'slurmd-vm: error: Invalid GRES data for gpu, Cores=16-31']


def test_compare_detects_order_and_content():
    facts, _warnings = build_gres(seed_003_node())
    lines = SLURMD_G_MULTIPLE.splitlines(True)
    swapped = ''.join([lines[1], lines[0]] + lines[2:])
    result = compare_gres(facts['entries'], swapped)
    assert (result['equal'], result['order_equal'], result['missing'], result['unexpected']) == (False, False, [], [])
    result = compare_gres(facts['entries'], ''.join(lines[:15]))
    assert result['missing'] == ['gpu:1g.10gb files=/dev/nvidia3,/dev/nvidia-caps/nvidia-cap534,/dev/nvidia-caps/nvidia-cap535 cores=16-31']
    result = compare_gres(facts['entries'], SLURMD_G_MULTIPLE.replace('Cores=0-15', 'Cores=0-7'))
    assert result['unexpected'] == ['gpu:a100 files=/dev/nvidia0 cores=0-7', 'gpu:a100 files=/dev/nvidia1 cores=0-7']
    result = compare_gres(facts['entries'], parse_slurmd_gres(SLURMD_G_MULTIPLE.replace('Type=a100', 'Type=A100')))
    assert result['missing'][0] == 'gpu:a100 files=/dev/nvidia0 cores=0-15'


# --- a GPU instance with several compute instances -------------------------
# One A100 with GPU instance 1 (3 slices, 40 GB) split into compute instances
# 0, 1 and 2, and GPU instance 2 (one CI).  The driver gives gi1 minor 12 and
# its CIs 13, 14, 15; the "shuffled" table gives the same names minors with
# no arithmetic relation, so only a lookup by name passes both.
MULTI_CI_TABLES = {
    'driver': ('gpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi1/ci1/access 14\ngpu0/gi1/ci2/access 15\n'
               'gpu0/gi2/access 21\ngpu0/gi2/ci0/access 22\n', 12, [13, 14, 15], 21, 22),
    'shuffled': ('gpu0/gi1/access 300\ngpu0/gi1/ci0/access 41\ngpu0/gi1/ci1/access 7\ngpu0/gi1/ci2/access 299\n'
                 'gpu0/gi2/access 23\ngpu0/gi2/ci0/access 22\n', 300, [41, 7, 299], 23, 22),
}


def multi_ci_node(table):
    devices = [{'index': i, 'uuid': 'MIG-1-%d' % ci, 'gi_id': 1, 'ci_id': ci, 'slice_count': 3, 'memory_mb': 40960}
               for i, ci in enumerate([0, 1, 2])]
    devices.append({'index': 3, 'uuid': 'MIG-2-0', 'gi_id': 2, 'ci_id': 0, 'slice_count': 1, 'memory_mb': 9728})
    return {'gpus': [{'index': 0, 'minor': 0, 'name': 'NVIDIA A100 80GB PCIe', 'uuid': 'GPU-0', 'cpus': None,
                      'mig_current': True, 'mig_pending': True, 'mig_devices': devices}],
            'mig_minors': parse_mig_minors(table), 'cpu_topology': None}


@pytest.mark.parametrize('name', sorted(MULTI_CI_TABLES))
def test_several_compute_instances_of_one_gpu_instance(name):
    table, gi1, ci1, gi2, ci2 = MULTI_CI_TABLES[name]
    facts, _warnings = build_gres(multi_ci_node(table))
    cap = '/dev/nvidia-caps/nvidia-cap%d'
    assert [e['files'] for e in facts['entries']] == [['/dev/nvidia0', cap % gi1, cap % ci] for ci in ci1] + [
        ['/dev/nvidia0', cap % gi2, cap % ci2]]
    assert [(e['mig']['gi_id'], e['mig']['ci_id'], e['mig']['gi_minor'], e['mig']['ci_minor']) for e in facts['entries']] == [
        (1, 0, gi1, ci1[0]), (1, 1, gi1, ci1[1]), (1, 2, gi1, ci1[2]), (2, 0, gi2, ci2)]
    assert facts['node_gres'] == 'gpu:3g.40gb:3,gpu:1g.10gb:1'
    assert facts['gres_conf_lines'][:3] == ['Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia0,%s,%s' % (cap % gi1, cap % ci) for ci in ci1]


@pytest.mark.parametrize('name', sorted(MULTI_CI_TABLES))
def test_several_compute_instances_ci_only(name):
    table, _gi1, ci1, _gi2, ci2 = MULTI_CI_TABLES[name]
    facts, _warnings = build_gres(multi_ci_node(table), mig_device_files='ci_only')
    assert [e['files'] for e in facts['entries']] == [['/dev/nvidia-caps/nvidia-cap%d' % ci] for ci in ci1 + [ci2]]


GOOD_OPTIONS = {'mig_minors_path': '/proc/driver/nvidia-caps/mig-minors', 'type_map': {}, 'mig_device_files': 'multiple',
                'sharing': 'none', 'mps_count': 100, 'shard_count': None, 'autodetect': 'off',
                'slurm_plugin_dirs': ['/usr/lib64/slurm'], 'cores': True, 'device_root': '/'}


@pytest.mark.parametrize('change, message', [
    ({'mps_count': 0}, 'mps_count 0 must be a whole number from 1 to 4294967295 (Count= of each Name=mps line, shares of one GPU)'),
    ({'mps_count': -5}, 'mps_count -5 must be a whole number from 1 to 4294967295'),
    ({'mps_count': 4294967296}, 'mps_count 4294967296 must be a whole number from 1 to 4294967295'),
    ({'mps_count': True}, 'mps_count True must be a whole number'),
    ({'shard_count': 0}, 'shard_count 0 must be a whole number from 1 to 4294967295 (Count= of each Name=shard line)'),
    ({'type_map': {'A100': 'x', 'a100': 'y'}}, 'type_map keys "A100" and "a100" differ only in case (matching ignores case); keep one'),
    ({'type_map': {'A100': 100}}, 'type_map value 100 for "A100" is not a valid Slurm GRES type'),
    ({'type_map': {'A100': 'a100:80g'}}, 'type_map value \'a100:80g\' for "A100" is not a valid Slurm GRES type'),
    ({'type_map': {' ': 'x'}}, 'type_map key \' \' must be a non-empty model-name substring such as "A100"'),
    ({'mig_minors_path': 'mig-minors'}, 'mig_minors_path \'mig-minors\' must be an absolute path (starting with "/")'),
    ({'device_root': ''}, 'device_root \'\' must be an absolute path'),
    ({'slurm_plugin_dirs': ['lib/slurm']}, 'slurm_plugin_dirs entry \'lib/slurm\' must be an absolute path'),
    ({'slurm_plugin_dirs': [], 'autodetect': 'nvml'}, 'autodetect nvml needs slurm_plugin_dirs, the directories to look for gpu_nvml.so in'),
])
def test_check_options_errors(change, message):
    with pytest.raises(ValueError) as err:
        check_options(dict(GOOD_OPTIONS, **change))
    assert str(err.value).startswith(message)


def test_check_options_accepts_the_defaults():
    assert check_options(GOOD_OPTIONS) is None
    assert check_options(dict(GOOD_OPTIONS, sharing='shard', shard_count=8, type_map={'RTX 6000 Ada': 'rtx6000ada'})) is None


@pytest.mark.parametrize('line, record', [
    # the bracket form with every field (null) or empty: None, as if not printed
    ('GRES[gpu] Type:(null) Count:2 Cores(-1):(null)  Links:(null) Flags: File:(null)',
     {'name': 'gpu', 'type': None, 'count': 2, 'file': None, 'files': [], 'cores': None, 'links': None, 'flags': None, 'unique_id': None}),
    ('    GRES[shard] Type:a100 Count:8 Cores(64):0-15  Links:-1 Flags:HAS_FILE File:/dev/nvidia[0-1] UniqueId:GPU-1',
     {'name': 'shard', 'type': 'a100', 'count': 8, 'file': '/dev/nvidia[0-1]', 'files': ['/dev/nvidia0', '/dev/nvidia1'], 'cores': '0-15',
      'links': '-1', 'flags': 'HAS_FILE', 'unique_id': 'GPU-1'}),
    # the key=value form: (null) and missing fields alike
    ('slurmd: Gres Name=gpu Type=a100 Count=2 File=/dev/nvidia[0-1] Cores=(null) Links=(null) Flags= UniqueId=GPU-1',
     {'name': 'gpu', 'type': 'a100', 'count': 2, 'file': '/dev/nvidia[0-1]', 'files': ['/dev/nvidia0', '/dev/nvidia1'], 'cores': None,
      'links': None, 'flags': None, 'unique_id': 'GPU-1'}),
    ('Gres Name=mps Count=100', {'name': 'mps', 'type': None, 'count': 100, 'file': None, 'files': [], 'cores': None, 'links': None,
                                 'flags': None, 'unique_id': None}),
    ('slurmd: Gres Name=gpu Type=(null) Count=1 File=(null) UniqueId=(null)',
     {'name': 'gpu', 'type': None, 'count': 1, 'file': None, 'files': [], 'cores': None, 'links': None, 'flags': None, 'unique_id': None}),
])
def test_parse_one_record_whole(line, record):
    assert parse_slurmd_gres(line + '\n') == {'records': [record], 'errors': [], 'warnings': []}


def test_parse_sorts_the_other_lines():
    text = ('slurmd: fatal: Invalid GRES\nslurmd: ERROR: upper case\nslurmd: Warning: low memory\nslurmd: debug: nothing\n'
            'slurmd: Gres Name=gpu Type=a100\n')
    assert parse_slurmd_gres(text) == {'records': [], 'errors': ['slurmd: fatal: Invalid GRES', 'slurmd: ERROR: upper case',
                                                                 'slurmd: Gres Name=gpu Type=a100'],
                                       'warnings': ['slurmd: Warning: low memory']}


def test_compare_names_what_differs_in_slurms_words():
    entries = [{'name': 'gpu', 'type': 'a100', 'files': ['/dev/nvidia0'], 'cores': None, 'count': 1},
               {'name': 'mps', 'type': None, 'files': ['/dev/nvidia0'], 'cores': '0-3', 'count': 100},
               {'name': 'gpu', 'type': None, 'files': ['/dev/nvidia1'], 'cores': '0-3', 'count': 2}]
    slurmd = ('slurmd: Gres Name=gpu Type=a100 Count=0 File=/dev/nvidia0\n'
              'slurmd: Gres Name=gpu Type=a100 Count=2 File=/dev/nvidia[3-5] Cores=0-1\n'
              'slurmd: Gres Name=gpu Type=a100 Count=2 File=/dev/nvidia[6-7]\n'
              'slurmd: Gres Name=shard Count=4 File=/dev/nvidia0 Cores=0-3\n'
              'slurmd: Gres Name=gpu Type=h100 Count=3\n')
    assert compare_gres(entries, slurmd) == {
        'equal': False, 'order_equal': False,
        'missing': ['gpu:a100 files=/dev/nvidia0', 'mps files=/dev/nvidia0 count=100', 'gpu files=/dev/nvidia1 cores=0-3 count=2'],
        # a record of as many files as its count is one GPU per file; a zero count (a MIG shadow) is no device
        'unexpected': ['gpu:a100 files=/dev/nvidia3,/dev/nvidia4,/dev/nvidia5 cores=0-1 count=2', 'gpu:a100 files=/dev/nvidia6',
                       'gpu:a100 files=/dev/nvidia7', 'shard files=/dev/nvidia0 count=4', 'gpu:h100 files= count=3'],
        'errors': []}


def test_compare_equal_with_a_parsed_result():
    entries = [{'name': 'gpu', 'type': 'a100', 'files': ['/dev/nvidia0'], 'cores': '0-15', 'count': 1},
               {'name': 'gpu', 'type': 'a100', 'files': ['/dev/nvidia1'], 'cores': '0-15', 'count': 1}]
    parsed = parse_slurmd_gres('slurmd: Gres Name=gpu Type=a100 Count=2 File=/dev/nvidia[0-1] Cores=0-15\n')
    assert compare_gres(entries, parsed) == {'equal': True, 'order_equal': True, 'missing': [], 'unexpected': [], 'errors': []}
    swapped = [entries[1], entries[0]]
    assert compare_gres(swapped, parsed)['order_equal'] is False and compare_gres(swapped, parsed)['missing'] == []


@pytest.mark.parametrize('change, message', [
    ({'mps_count': 0}, 'mps_count 0 must be a whole number from 1 to 4294967295 (Count= of each Name=mps line, shares of one GPU)'),
    ({'mps_count': 4294967296}, 'mps_count 4294967296 must be a whole number from 1 to 4294967295 (Count= of each Name=mps line, shares of '
                                'one GPU)'),
    ({'shard_count': False}, 'shard_count False must be a whole number from 1 to 4294967295 (Count= of each Name=shard line)'),
    ({'mig_minors_path': '/proc/x\0y'}, 'mig_minors_path \'/proc/x\\x00y\' must be an absolute path (starting with "/")'),
    ({'device_root': '/dev\n'}, 'device_root \'/dev\\n\' must be an absolute path (starting with "/")'),
    ({'slurm_plugin_dirs': ['/usr/lib64/slurm', 'slurm']}, 'slurm_plugin_dirs entry \'slurm\' must be an absolute path (starting with "/")'),
    ({'slurm_plugin_dirs': [], 'autodetect': 'nvml'},
     'autodetect nvml needs slurm_plugin_dirs, the directories to look for gpu_nvml.so in; the list is empty'),
])
def test_check_options_messages(change, message):
    with pytest.raises(ValueError) as err:
        check_options(dict(GOOD_OPTIONS, **change))
    assert str(err.value) == message


@pytest.mark.parametrize('change', [
    {'mps_count': 1}, {'mps_count': 4294967295}, {'mps_count': None}, {'shard_count': 1}, {'slurm_plugin_dirs': []},
])
def test_check_options_accepts_the_limits(change):
    assert check_options(dict(GOOD_OPTIONS, **change)) is None


def test_autodetect_nvml_without_plugin_directories():
    with pytest.raises(ValueError) as err:
        build_gres({'gpus': []}, autodetect='nvml')
    assert str(err.value).startswith('autodetect nvml needs the Slurm gpu/nvml plugin (gpu_nvml.so), which is not in any of: '
                                     '(no directories given); install it ')


@pytest.mark.parametrize('slices, memory_mb', [(0, 9728), (1, 0), (-1, 9728)])
def test_mig_profile_name_refuses_nothing(slices, memory_mb):
    with pytest.raises(ValueError) as err:
        mig_profile_name(slices, memory_mb)
    assert str(err.value) == 'MIG device reports %d slices and %d MB of memory; both must be positive' % (slices, memory_mb)


def test_cpu_list_from_mask_of_other_word_sizes():
    assert cpu_list_from_mask([0b101, '3'], word_bits=32) == [0, 2, 32, 33]
    assert cpu_list_from_mask([]) == []


def test_gpu_type_of_keys_of_equal_length_takes_the_last():
    assert gpu_type('NVIDIA ABCD', {'AB': 'first', 'CD': 'last'}) == 'last'
    assert gpu_type('NVIDIA ABCD', {'ABC': 'longer', 'CD': 'last'}) == 'longer'


def test_autodetect_comments_whole():
    facts, _warnings = build_gres(seed_003_node(), autodetect='nvml', nvml_plugin='/usr/lib64/slurm/gpu_nvml.so', cores=False)
    assert facts['gres_conf_comments'][:6] == [
        'AutoDetect=nvml (slurm_gres_autodetect): slurmd finds the GPUs itself when it starts, through',
        '/usr/lib64/slurm/gpu_nvml.so; slurm.conf declares Gres=gpu:a100:2,gpu:1g.10gb:14.',
        'What NVML shows now (type, device files, cores); when this list changes the role restarts slurmd,',
        'which then detects them again:',
        '  a100 /dev/nvidia0',
        '  a100 /dev/nvidia1']


@pytest.mark.parametrize('cpus, topology, message', [
    ([0], {}, 'cannot map the CPUs of GPU to cores: no CPU topology was read; set cores: false to leave Cores= out'),
    ([0, 5], {0: (0, 0), 1: (0, 1), 3: (0, 2)}, 'GPU is local to CPU 5, which the CPU topology does not list (known CPUs: 0-1,3); set cores: '
                                                'false to leave Cores= out'),
])
def test_cores_of_cpus_errors_name_the_gpu(cpus, topology, message):
    with pytest.raises(ValueError) as err:
        cores_of_cpus(cpus, topology)
    assert str(err.value) == message
