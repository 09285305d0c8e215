# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _healthcheck_fleet: Xid parsing, driver minimums, InfiniBand ports, NVLink, PCIe, thermal, fabric."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue._gpus import version_key
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck_fleet as fleet

# Debian's rsyslog kern.log: a boot, an Xid, a reboot, another Xid (driver 535 and 570 forms)
KERN_LOG = '''Nov 20 09:00:01 gpu-01 kernel: [    0.000000] Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)
Nov 20 10:00:00 gpu-01 kernel: [ 3599.100000] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
Nov 21 08:00:01 gpu-01 kernel: [    0.000000] Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)
Nov 21 08:10:00 gpu-01 kernel: [  599.000000] NVRM: Xid (PCI:0000:52:00): 13, pid=4242, name=python3, Graphics SM Warp Exception
Nov 21 08:20:00 gpu-01 kernel: [ 1199.000000] NVRM: Xid (PCI:0000:61:00): 48, pid=1234, An uncorrectable double bit error (DBE)
'''


def gpu(index, bus, **fleet_info):
    return {'index': index, 'name': 'NVIDIA H100 80GB HBM3', 'pci_bus_id': '00000000:%s:00.0' % bus, 'fleet': fleet_info}


def test_parse_xids_since_the_last_boot():
    assert fleet.parse_xids(KERN_LOG) == [
        {'pci': '0000:52:00', 'code': 13, 'text': 'Graphics SM Warp Exception'},
        {'pci': '0000:61:00', 'code': 48, 'text': 'An uncorrectable double bit error (DBE)'}]
    assert [x['code'] for x in fleet.parse_xids(KERN_LOG, since_last_boot=False)] == [79, 13, 48]
    assert fleet.parse_xids('') == []


def test_xid_failures_only_for_the_drain_codes_and_named_by_gpu():
    gpus = [gpu(2, '52'), gpu(3, '61')]
    failures = fleet.xid_failures(fleet.parse_xids(KERN_LOG), gpus, fleet.XID_DRAIN)
    assert failures == [('xid', 3, 'GPU 3 (00000000:61:00.0) had Xid 48 since boot (last: 48, An uncorrectable double bit error (DBE)); '
                                   'reset the GPU')]
    assert fleet.xid_failures(fleet.parse_xids(KERN_LOG), gpus, [13])[0][:2] == ('xid', 2)


@pytest.mark.parametrize('models, override, expected', [
    (['NVIDIA H100 80GB HBM3'], None, ('525.60.13', 'the oldest that supports NVIDIA H100 80GB HBM3')),
    (['NVIDIA H200'], None, ('550.54.14', 'the oldest that supports NVIDIA H200')),
    (['NVIDIA A100-SXM4-40GB', 'NVIDIA H200'], None, ('550.54.14', 'the oldest that supports NVIDIA H200')),
    (['NVIDIA L40S'], None, ('535.54.03', 'the oldest that supports NVIDIA L40S')),
    (['Tesla T4'], None, (None, None)),
    (['Tesla T4'], '535.129.03', ('535.129.03', 'driver_min')),
])
def test_driver_minimum(models, override, expected):
    assert fleet.driver_minimum(models, override) == expected


@pytest.mark.parametrize('version, models, failing', [
    ('570.133.20', ['NVIDIA H100 80GB HBM3'], False),
    ('525.60.13', ['NVIDIA H100 80GB HBM3'], False),
    ('525.60.12', ['NVIDIA H100 80GB HBM3'], True),
    ('535.129.03', ['NVIDIA H200'], True),
    ('535.129.03', ['NVIDIA A100-SXM4-40GB'], False),
    (None, ['NVIDIA H200'], False),
])
def test_driver_failures(version, models, failing):
    assert bool(fleet.driver_failures(version, models)) == failing


def test_version_key_errors():
    with pytest.raises(ValueError, match=r"'r570' is not a driver version such as \"550.54.14\""):
        version_key('r570')


@pytest.mark.parametrize('files, expected', [
    ({'state': '4: ACTIVE\n', 'phys_state': '5: LinkUp\n', 'rate': '400 Gb/sec (4X NDR)\n', 'link_layer': 'InfiniBand\n',
      'counters': {'link_downed': '3\n', 'symbol_error': 'x'}},
     {'hca': 'mlx5_0', 'port': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '400 Gb/sec (4X NDR)', 'rate_gbps': 400.0,
      'link_layer': 'InfiniBand', 'counters': {'link_downed': 3}}),
    ({'state': '1: DOWN', 'phys_state': '2: Polling', 'rate': '10 Gb/sec (4X SDR)', 'link_layer': 'Ethernet'},
     {'hca': 'mlx5_0', 'port': 1, 'state': 'DOWN', 'phys_state': 'Polling', 'rate': '10 Gb/sec (4X SDR)', 'rate_gbps': 10.0,
      'link_layer': 'Ethernet', 'counters': {}}),
    # no link_layer file (older drivers): InfiniBand, as the kernel's default
    ({'state': '4: ACTIVE', 'phys_state': '5: LinkUp', 'rate': '200 Gb/sec (4X HDR)'},
     {'hca': 'mlx5_0', 'port': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '200 Gb/sec (4X HDR)', 'rate_gbps': 200.0,
      'link_layer': 'InfiniBand', 'counters': {}}),
])
def test_ib_port(files, expected):
    assert fleet.ib_port('mlx5_0', '1', files) == expected


def port(hca, state='ACTIVE', phys='LinkUp', rate='400 Gb/sec (4X NDR)', layer='InfiniBand', **counters):
    return {'hca': hca, 'port': 1, 'state': state, 'phys_state': phys, 'rate': rate, 'rate_gbps': fleet.parse_ib_rate(rate),
            'link_layer': layer, 'counters': counters}


@pytest.mark.parametrize('ports, expected', [
    ([port('mlx5_0'), port('mlx5_1')], []),
    ([port('mlx5_0'), port('mlx5_1', 'DOWN', 'Polling')], ['InfiniBand mlx5_1 port 1 is DOWN (physical Polling), expected ACTIVE/LinkUp']),
    ([port('mlx5_0'), port('mlx5_1', rate='200 Gb/sec (2X NDR)')], ['InfiniBand mlx5_1 port 1 runs at 200 Gb/sec (2X NDR), expected 400 Gb/sec']),
    ([port('mlx5_0')], ['1 InfiniBand ports, expected 2']),
    # a RoCE (Ethernet) port is not one of the InfiniBand ports
    ([port('mlx5_0'), port('mlx5_1', layer='Ethernet')], ['1 InfiniBand ports, expected 2']),
    ([port('mlx5_0', link_downed=11), port('mlx5_1', link_downed=10)], ['InfiniBand mlx5_0 port 1 has 11 link_downed (at most 10)']),
])
def test_ib_failures(ports, expected):
    found = fleet.ib_failures(ports, 2, 400, {'link_downed': 10})
    assert [detail.split('; ')[0] for _check, _gpu, detail in found] == expected


@pytest.mark.parametrize('ports, hcas, expected', [
    # every declared device has an InfiniBand port (a device with two ports counts once)
    ([port('mlx5_0'), port('mlx5_1'), port('mlx5_1')], ['mlx5_0', 'mlx5_1'], []),
    (None, None, []),
    ([port('mlx5_0')], [], []),
    ([port('mlx5_0'), port('mlx5_1')], ['mlx5_0', 'mlx5_3'],
     ['InfiniBand device mlx5_3 of the node type (gpucluster_node_type.hcas) has no port here (the node has: mlx5_0, mlx5_1)']),
    # a device whose port is Ethernet (RoCE) is not the InfiniBand device declared
    ([port('mlx5_0'), port('mlx5_1', layer='Ethernet')], ['mlx5_0', 'mlx5_1', 'mlx5_2'],
     ['InfiniBand devices mlx5_1, mlx5_2 of the node type (gpucluster_node_type.hcas) have no port here (the node has: mlx5_0)']),
    ([], ['mlx5_0'], ['InfiniBand device mlx5_0 of the node type (gpucluster_node_type.hcas) has no port here (the node has: none)']),
])
def test_ib_failures_of_the_declared_devices(ports, hcas, expected):
    found = fleet.ib_failures(ports or [], None, None, {}, hcas)
    assert [detail.split('; ')[0] for _check, _gpu, detail in found] == expected
    assert all(check == 'ib' and gpu is None for check, gpu, _detail in found)


def test_ib_baseline():
    assert fleet.ib_baseline([port('mlx5_0'), port('mlx5_1', rate='200 Gb/sec (4X HDR)'), port('mlx5_2', 'DOWN', 'Polling')]) == (3, 200.0)
    assert fleet.ib_baseline([]) == (0, None)


@pytest.mark.parametrize('pcie, reasons, failing', [
    ({'gen': 5, 'width': 16, 'max_gen': 5, 'max_width': 16}, 0x1, False),
    ({'gen': 5, 'width': 8, 'max_gen': 5, 'max_width': 16}, 0x1, True),
    # an idle GPU may lower its link generation to save power
    ({'gen': 1, 'width': 16, 'max_gen': 5, 'max_width': 16}, 0x1, False),
    ({'gen': 3, 'width': 16, 'max_gen': 5, 'max_width': 16}, 0x0, True),
    ({'gen': None, 'width': None, 'max_gen': None, 'max_width': None}, None, False),
])
def test_pcie_failures(pcie, reasons, failing):
    assert bool(fleet.pcie_failures([gpu(0, '1B', pcie=pcie, clock_reasons=reasons)])) == failing


@pytest.mark.parametrize('reasons, temp, margin, failing', [
    (0x1, 38, 0, False), (0x8, 38, 0, True), (0x4, 38, 0, False), (0x1, 89, 0, True), (0x1, 86, 5, True), (0x1, 89, None, False),
])
def test_thermal_failures(reasons, temp, margin, failing):
    gpus = [gpu(0, '1B', clock_reasons=reasons, temperature=temp, temperature_slowdown=89)]
    assert bool(fleet.thermal_failures(gpus, list(fleet.THROTTLE_DRAIN), margin)) == failing


@pytest.mark.parametrize('fabric, failing', [
    ({'state': 3, 'status': 0}, False), ({'state': 0, 'status': 0}, False), (None, False),
    ({'state': 1, 'status': 0}, True), ({'state': 2, 'status': 0}, True), ({'state': 3, 'status': 7}, True),
])
def test_fabric_failures(fabric, failing):
    assert bool(fleet.fabric_failures([gpu(0, '1B', fabric=fabric)])) == failing


def test_fabric_failures_say_once_for_many_gpus():
    found = fleet.fabric_failures([gpu(i, '%02X' % (0x1B + i), fabric={'state': 1, 'status': 0}) for i in range(8)])
    assert [(c, g) for c, g, _d in found] == [('fabric', 0), ('fabric', None)]
    assert found[1][2] == '7 more GPUs with the same fabric state'


def links(down=(), **counters):
    return [dict({'link': l, 'active': l not in down, 'replay': 0, 'recovery': 0, 'crc_flit': 0, 'crc_data': 0},
                 **(counters if l == 0 else {})) for l in range(18)]


@pytest.mark.parametrize('nvlinks, expected, error_max, checks', [
    (links(), {0: 18}, {'recovery': 0}, 0),
    (links(down=(3, 4)), {0: 18}, {'recovery': 0}, 1),
    (links(down=(3,)), None, {'recovery': 0}, 0),
    (links(recovery=1), {0: 18}, {'recovery': 0}, 1),
    (links(replay=500), {0: 18}, {'recovery': 0}, 0),
    (links(replay=500), {0: 18}, {'replay': 100}, 1),
    ([], {0: 18}, {}, 1),
])
def test_nvlink_failures(nvlinks, expected, error_max, checks):
    assert len(fleet.nvlink_failures([gpu(0, '1B', nvlinks=nvlinks)], expected, error_max)) == checks


def test_persistence_names_the_gpus():
    found = fleet.persistence_failures([gpu(i, '%02X' % (0x1B + i), persistence=i > 4) for i in range(8)])
    assert found == [('persistence', 0, 'GPU 0 (00000000:1B:00.0), GPU 1 (00000000:1C:00.0) and 3 more persistence mode is off on all of '
                                        'them; run nvidia-persistenced (systemctl enable --now nvidia-persistenced)')]


@pytest.mark.parametrize('data, message', [
    ({'resume_after_passes': 0}, r'resume_after_passes 0 must be a whole number of passing runs \(1 or more\)'),
    ({'prolog_budget': 0}, r'prolog_budget 0 must be a number of seconds above 0'),
    ({'disabled_checks': ['xids']}, r"disabled_checks \['xids'\] must be a list of check names; valid: nvml, gpu-count"),
    ({'xid_source': 'kern.log'}, r"xid_source 'kern.log' must be \"journal\", \"dmesg\" or the absolute path of a kernel log"),
    ({'xid_drain': ['79']}, r"xid_drain \['79'\] must be a list of Xid numbers"),
    ({'driver_min': '5xx'}, r"'5xx' is not a driver version"),
    ({'nvlinks_active': {'gpu0': 18}}, r"nvlinks_active key 'gpu0' is not a GPU index"),
    ({'nvlinks_active': {'0': -1}}, r'nvlinks_active\["0"\] -1 must be a whole number of links'),
    ({'nvlink_error_max': {'ecc': 0}}, r"nvlink_error_max has 'ecc', which is not a counter; valid: replay, recovery, crc_flit, crc_data"),
    ({'ib_counter_max': {'link_downed': -1}}, r'ib_counter_max\["link_downed"\] -1 must be a whole number'),
    ({'throttle_reasons': ['too_hot']}, r"throttle_reasons \['too_hot'\] must be a list of clock event reasons; valid: gpu_idle,"),
    ({'ib_rate_gbps': 0}, r'ib_rate_gbps 0 must be the rate in Gb/sec'),
    ({'ib_ports': 1.5}, r'ib_ports 1.5 must be a whole number of InfiniBand ports'),
    ({'ib_hcas': 'mlx5_0'}, r"ib_hcas 'mlx5_0' must be a list of InfiniBand device names"),
    ({'ib_hcas': ['mlx5_0', '']}, r"ib_hcas \['mlx5_0', ''\] must be a list of InfiniBand device names"),
    ({'ib_hcas': ['../mlx5_0']}, r"ib_hcas \['../mlx5_0'\] must be a list"),
])
def test_fleet_config_errors(data, message):
    with pytest.raises(ValueError, match=message):
        hc.load_config(data)


def test_the_declared_devices_are_checked_by_the_periodic_tier():
    config = hc.load_config({'gpu_count': 0, 'munge_key_path': '', 'check_device_files': False, 'ib_hcas': ['mlx5_0', 'mlx5_1']})
    observed = {'nvml_error': 'NVML Shared Library Not Found', 'ib_ports': [port('mlx5_0')], 'ib_error': None}
    found = hc.find_failures(config, observed, tier='periodic')
    assert [(f.check, f.detail.split('; ')[0]) for f in found] == [
        ('ib', 'InfiniBand device mlx5_1 of the node type (gpucluster_node_type.hcas) has no port here (the node has: mlx5_0)')]
    config['ib_hcas'] = None
    assert hc.find_failures(config, observed, tier='periodic') == []


def test_tiers_run_their_own_checks():
    config = hc.load_config({'gpu_count': 1, 'munge_key_path': '', 'check_device_files': False, 'nvlinks_active': {'0': 18}})
    observed = {'nvml_error': None, 'driver_version': '570.133.20', 'xids': fleet.parse_xids(KERN_LOG.replace('61:00', '1b:00')),
                'gpus': [gpu(0, '1B', persistence=False, nvlinks=links(down=(1,)))]}
    assert [f.check for f in hc.find_failures(config, observed, tier='prolog')] == ['xid']
    assert [f.check for f in hc.find_failures(config, observed, tier='periodic')] == ['xid', 'persistence', 'nvlink']
    with pytest.raises(ValueError, match="tier 'deep' is not one of prolog, periodic"):
        hc.find_failures(config, observed, tier='deep')
