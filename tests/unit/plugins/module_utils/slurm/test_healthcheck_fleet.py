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
    return [dict({'link': n, 'active': n not in down, 'replay': 0, 'recovery': 0, 'crc_flit': 0, 'crc_data': 0},
                 **(counters if n == 0 else {})) for n in range(18)]


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


# --- the exact details an admin reads in the drain reason and the status file ----------------------------------

def test_xid_failures_name_every_code_the_last_one_and_its_action():
    xids = [{'pci': '0000:1b:00', 'code': 79, 'text': 'GPU has fallen off the bus.'},
            {'pci': '0000:1B:00', 'code': 48, 'text': 'D' * 100},
            {'pci': '0000:99:00', 'code': 74, 'text': 'NVLink: fatal error'},
            {'pci': '0000:98:00', 'code': 200, 'text': 'a newer Xid'},
            {'pci': '0000:1b:00', 'code': 13, 'text': 'an application fault'}]
    # a GPU NVML reports without its PCI address cannot be matched: the Xid names the address
    gpus = [gpu(0, '1B'), {'index': 5, 'name': 'NVIDIA H100 80GB HBM3'}]
    assert fleet.xid_failures(xids, gpus, [48, 74, 79, 200]) == [
        ('xid', 0, 'GPU 0 (00000000:1B:00.0) had Xid 48, 79 since boot (last: 48, %s); reset the GPU' % ('D' * 80)),
        ('xid', None, 'the GPU at PCI 0000:98:00 had Xid 200 since boot (last: 200, a newer Xid); reset the GPU'),
        ('xid', None, 'the GPU at PCI 0000:99:00 had Xid 74 since boot (last: 74, NVLink: fatal error); reset the GPU and check the NVLink')]
    assert fleet.xid_failures(xids, gpus, []) == []


@pytest.mark.parametrize('code, action', sorted(fleet.XID_ACTION.items()))
def test_xid_failures_say_the_action_of_the_code(code, action):
    (failure,) = fleet.xid_failures([{'pci': '0000:1b:00', 'code': code, 'text': 'x'}], [gpu(2, '1B')], fleet.XID_DRAIN)
    assert failure == ('xid', 2, 'GPU 2 (00000000:1B:00.0) had Xid %d since boot (last: %d, x); %s' % (code, code, action))


@pytest.mark.parametrize('text, expected', [
    # the 535 form, the 570 form, a PCI address with a function and an 8-digit domain, a line without pid
    ('kernel: NVRM: Xid (PCI:0000:1B:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has fallen off the bus.  ',
     [{'pci': '0000:1b:00', 'code': 79, 'text': 'GPU has fallen off the bus.'}]),
    ('NVRM: Xid (PCI:00000000:61:00.0): 48, pid=1234, An uncorrectable double bit error (DBE)',
     [{'pci': '00000000:61:00', 'code': 48, 'text': 'An uncorrectable double bit error (DBE)'}]),
    ('NVRM: Xid (0000:61:00): 154,GPU recovery action changed', [{'pci': '0000:61:00', 'code': 154, 'text': 'GPU recovery action changed'}]),
    ('NVRM: GPU at PCI:0000:61:00: GPU-1234\nNVRM: Xid (PCI:61:00): 79, lost', []),
    (None, []),
])
def test_parse_xids_forms(text, expected):
    assert fleet.parse_xids(text) == expected


def test_pci_key():
    assert fleet.pci_key('00000000:1B:00.0') == fleet.pci_key('0000:1b:00') == (0, '1b', '00')
    assert fleet.pci_key('0001:C1:1F.3') == (1, 'c1', '1f')
    with pytest.raises(ValueError) as info:
        fleet.pci_key('1b:00.0')
    assert str(info.value) == '\'1b:00.0\' is not a PCI bus id such as "00000000:1B:00.0"'


@pytest.mark.parametrize('version, models, override, expected', [
    ('525.60.12', ['NVIDIA H100 80GB HBM3'], None,
     [('driver', None, 'NVIDIA driver 525.60.12 is older than 525.60.13 (the oldest that supports NVIDIA H100 80GB HBM3); install '
                       '525.60.13 or newer')]),
    ('535.0.0', ['Tesla T4'], '550.54.14', [('driver', None, 'NVIDIA driver 535.0.0 is older than 550.54.14 (driver_min); install '
                                                             '550.54.14 or newer')]),
    ('r570', ['NVIDIA H100 80GB HBM3'], None, [('driver', None, "NVML reports driver version 'r570', which is not a version number")]),
    ('550.54.14', ['Tesla T4'], '550.54.14', []),
    ('r570', ['Tesla T4'], None, []),  # no known minimum: nothing to compare with
])
def test_driver_failure_details(version, models, override, expected):
    assert fleet.driver_failures(version, models, override) == expected


def test_driver_minimum_checks_the_override():
    with pytest.raises(ValueError, match=r"'5xx' is not a driver version"):
        fleet.driver_minimum(['NVIDIA H100 80GB HBM3'], '5xx')
    assert fleet.driver_minimum([]) == (None, None)


PERSISTENCE_FIX = 'run nvidia-persistenced (systemctl enable --now nvidia-persistenced)'


@pytest.mark.parametrize('off, detail', [
    (1, 'GPU 0 (00000000:1B:00.0) persistence mode is off; ' + PERSISTENCE_FIX),
    (2, 'GPU 0 (00000000:1B:00.0), GPU 1 (00000000:1C:00.0) persistence mode is off on all of them; ' + PERSISTENCE_FIX),
    (3, 'GPU 0 (00000000:1B:00.0), GPU 1 (00000000:1C:00.0) and 1 more persistence mode is off on all of them; ' + PERSISTENCE_FIX),
])
def test_persistence_failure_details(off, detail):
    gpus = [gpu(i, '%02X' % (0x1B + i), persistence=i >= off) for i in range(4)]
    assert fleet.persistence_failures(gpus) == [('persistence', 0, detail)]


def test_persistence_of_a_gpu_in_error_or_unknown_is_not_judged():
    gpus = [dict(gpu(0, '1B', persistence=False), error='GPU is lost'), gpu(1, '1C', persistence=None), gpu(2, '1D')]
    assert fleet.persistence_failures(gpus) == []


@pytest.mark.parametrize('fabric, driver, detail', [
    ({'state': 1, 'status': 0}, '570.133.20', "GPU 0 (00000000:1B:00.0) NVLink fabric state NOT_STARTED: nvidia-fabricmanager is not "
                                              "running or has not registered the GPU; systemctl start nvidia-fabricmanager (its version "
                                              "must be the driver's, 570.133.20)"),
    ({'state': 2}, None, "GPU 0 (00000000:1B:00.0) NVLink fabric state IN_PROGRESS: nvidia-fabricmanager is not running or has not "
                         "registered the GPU; systemctl start nvidia-fabricmanager (its version must be the driver's, see nvidia-smi)"),
    ({'state': 3, 'status': 7}, None, 'GPU 0 (00000000:1B:00.0) NVLink fabric registration failed (status 7); see the nvidia-fabricmanager log'),
    ({'state': 3}, None, None),
    ({'state': 9, 'status': 7}, None, None),  # a state nvml.h does not name
])
def test_fabric_failure_details(fabric, driver, detail):
    found = fleet.fabric_failures([gpu(0, '1B', fabric=fabric), dict(gpu(1, '1C', fabric={'state': 1}), error='lost')], driver)
    assert found == ([('fabric', 0, detail)] if detail else [])


def test_fabric_failures_of_two_gpus():
    found = fleet.fabric_failures([gpu(i, '%02X' % (0x1B + i), fabric={'state': 1, 'status': 0}) for i in range(2)])
    assert [(c, g) for c, g, _d in found] == [('fabric', 0), ('fabric', None)]
    assert found[1][2] == '1 more GPUs with the same fabric state'


def test_nvlink_failure_details():
    gpus = [gpu(0, '1B', nvlinks=links(down=(3, 4), recovery=2, replay=5)), dict(gpu(1, '1C', nvlinks=[]), error='lost'), gpu(2, '1D')]
    assert fleet.nvlink_failures(gpus, {0: 18, 1: 18, 2: 18}, {'recovery': 0, 'replay': 1}) == [
        ('nvlink', 0, 'GPU 0 (00000000:1B:00.0) has 16 of 18 NVLinks active (down: 3,4); reset the GPU, then check the NVLink/NVSwitch '
                      '(nvidia-smi nvlink -s)'),
        # one counter per link: the first over its limit
        ('nvlink', 0, 'GPU 0 (00000000:1B:00.0) NVLink 0 has 5 replay errors (at most 1)')]
    assert fleet.nvlink_failures([gpu(0, '1B', nvlinks=[])], {0: 1}, None) == [
        ('nvlink', 0, 'GPU 0 (00000000:1B:00.0) has 0 of 1 NVLinks active (down: none); reset the GPU, then check the NVLink/NVSwitch '
                      '(nvidia-smi nvlink -s)')]


@pytest.mark.parametrize('nvlinks, expected, checks', [
    # as many active as expected, and a counter at its limit: no failure
    (links(crc_flit=3), {0: 18}, 0),
    (links(down=(17,)), {0: 17}, 0),
    (links(crc_flit=4), {0: 18}, 1),
    ([dict(link, crc_data=None) for link in links()], {0: 18}, 0),
])
def test_nvlink_boundaries(nvlinks, expected, checks):
    assert len(fleet.nvlink_failures([gpu(0, '1B', nvlinks=nvlinks)], expected, {'crc_flit': 3, 'crc_data': 0})) == checks


@pytest.mark.parametrize('pcie, reasons, detail', [
    ({'gen': 5, 'width': 8, 'max_gen': 5, 'max_width': 16}, 0,
     'GPU 0 (00000000:1B:00.0) PCIe link is x8, the GPU and slot do x16; reseat the GPU or check the riser/slot'),
    ({'gen': 3, 'width': 16, 'max_gen': 5, 'max_width': 16}, None,
     'GPU 0 (00000000:1B:00.0) PCIe link runs at gen 3 under load, the GPU and slot do gen 5; check the slot, riser and BIOS PCIe settings'),
    ({'gen': 4, 'width': 16, 'max_gen': 4, 'max_width': 16}, 0, None),
    ({'gen': 3, 'width': 16, 'max_gen': 5, 'max_width': 16}, 0x3, None),
    ({'gen': 3, 'width': 8, 'max_gen': None, 'max_width': None}, 0, None),
])
def test_pcie_failure_details(pcie, reasons, detail):
    found = fleet.pcie_failures([gpu(0, '1B', pcie=pcie, clock_reasons=reasons), dict(gpu(1, '1C', pcie=pcie), error='lost')])
    assert found == ([('pcie', 0, detail)] if detail else [])


@pytest.mark.parametrize('fleet_info, margin, detail', [
    ({'clock_reasons': 0x48, 'temperature': 90, 'temperature_slowdown': 89}, 0,
     'GPU 0 (00000000:1B:00.0) clocks are held down by hw_slowdown, hw_thermal (90 C); check cooling and power'),
    ({'clock_reasons': 0xA0}, 0, 'GPU 0 (00000000:1B:00.0) clocks are held down by sw_thermal, hw_power_brake (? C); check cooling and power'),
    ({'clock_reasons': 0x0, 'temperature': 84, 'temperature_slowdown': 89}, 5,
     'GPU 0 (00000000:1B:00.0) is at 84 C, its slowdown temperature is 89 C; check cooling'),
    ({'clock_reasons': 0x0, 'temperature': 83, 'temperature_slowdown': 89}, 5, None),
    ({'clock_reasons': None, 'temperature': 95, 'temperature_slowdown': None}, 0, None),
    ({'clock_reasons': 0x1, 'temperature': None, 'temperature_slowdown': 89}, 0, None),
])
def test_thermal_failure_details(fleet_info, margin, detail):
    found = fleet.thermal_failures([gpu(0, '1B', **fleet_info), {'index': 1, 'error': 'lost', 'fleet': {'clock_reasons': 0x8}}],
                                   list(fleet.THROTTLE_DRAIN), margin)
    assert found == ([('thermal', 0, detail)] if detail else [])


def test_reason_names_of_every_bit():
    assert fleet.reason_names(0x1FF) == ['gpu_idle', 'applications_clocks_setting', 'sw_power_cap', 'hw_slowdown', 'sync_boost',
                                         'sw_thermal', 'hw_thermal', 'hw_power_brake', 'display_clocks']
    assert fleet.reason_names(0) == []


def test_ib_failure_details():
    ports = [port('mlx5_0', 'DOWN', 'Polling'), port('mlx5_1', rate='200 Gb/sec (4X HDR)'), port('mlx5_2', link_downed=11, symbol_error=99),
             port('mlx5_3', '', ''), port('mlx5_4', 'ACTIVE', 'Polling'), port('mlx5_5', rate='?', link_downed=10)]
    assert fleet.ib_failures(ports, 7, 400, {'link_downed': 10, 'symbol_error': 5}, ['mlx5_0', 'mlx5_8', 'mlx5_9']) == [
        ('ib', None, 'InfiniBand mlx5_0 port 1 is DOWN (physical Polling), expected ACTIVE/LinkUp; check the cable, transceiver and switch port'),
        ('ib', None, 'InfiniBand mlx5_1 port 1 runs at 200 Gb/sec (4X HDR), expected 400 Gb/sec; reseat the cable or replace the transceiver'),
        ('ib', None, 'InfiniBand mlx5_2 port 1 has 99 symbol_error (at most 5); check the link'),
        ('ib', None, 'InfiniBand mlx5_3 port 1 is ? (physical ?), expected ACTIVE/LinkUp; check the cable, transceiver and switch port'),
        ('ib', None, 'InfiniBand mlx5_4 port 1 is ACTIVE (physical Polling), expected ACTIVE/LinkUp; check the cable, transceiver and switch port'),
        ('ib', None, '6 InfiniBand ports, expected 7; check that every HCA is seen (ibstat)'),
        ('ib', None, 'InfiniBand devices mlx5_8, mlx5_9 of the node type (gpucluster_node_type.hcas) have no port here (the node has: mlx5_0, '
                     'mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5); check that every HCA is seen (ibstat), its firmware and its PCIe slot')]


def test_ib_failures_at_the_expected_count_and_rate():
    ports = [port('mlx5_0', rate='400 Gb/sec (4X NDR)'), port('mlx5_1', layer='infiniband', rate='400.5 Gb/sec')]
    assert fleet.ib_failures(ports, 2, 400, None) == []
    assert fleet.ib_failures(ports, 2, 400.5, None)[0][2].startswith('InfiniBand mlx5_0 port 1 runs at 400 Gb/sec (4X NDR), expected 400.5 Gb/sec;')


@pytest.mark.parametrize('text, rate', [
    ('400 Gb/sec (4X NDR)', 400.0), (' 2.5 Gb/sec (1X SDR)\n', 2.5), ('100Gb/sec', 100.0), ('fast', None), (None, None), ('Gb/sec 400', None),
])
def test_parse_ib_rate(text, rate):
    assert fleet.parse_ib_rate(text) == rate


def test_ib_port_of_unreadable_files():
    assert fleet.ib_port('mlx5_0', 2, {'state': None, 'phys_state': 'LinkUp', 'rate': None, 'link_layer': None, 'counters': None}) == {
        'hca': 'mlx5_0', 'port': 2, 'state': '', 'phys_state': 'LinkUp', 'rate': '', 'rate_gbps': None, 'link_layer': 'InfiniBand',
        'counters': {}}
    assert fleet.ib_port('mlx5_0', '1', {'link_layer': ' Ethernet\n'})['link_layer'] == 'Ethernet'


def test_ib_baseline_counts_only_infiniband_ports():
    assert fleet.ib_baseline([port('mlx5_0', layer='Ethernet', rate='800 Gb/sec'), port('mlx5_1', rate='200 Gb/sec (4X HDR)'),
                              port('mlx5_2', rate='bad')]) == (2, 200.0)
    assert fleet.ib_baseline([port('mlx5_0', 'DOWN', 'Polling')]) == (1, None)


def _write_port(root, hca, number, **files):
    base = root / hca / 'ports' / str(number)
    (base / 'counters').mkdir(parents=True)
    for name, value in files.items():
        if name == 'counters':
            for counter, text in value.items():
                (base / 'counters' / counter).write_text(text)
        else:
            (base / name).write_text(value)


def test_read_ib_ports(tmp_path):
    root = tmp_path / 'infiniband'
    _write_port(root, 'mlx5_1', 1, state='4: ACTIVE\n', phys_state='5: LinkUp\n', rate='200 Gb/sec (4X HDR)\n',
                counters={'link_downed': '2\n', 'not_a_counter': '9\n'})
    _write_port(root, 'mlx5_0', 10, state='1: DOWN\n', link_layer='Ethernet\n')
    _write_port(root, 'mlx5_0', 2, state='4: ACTIVE\n')
    (root / 'mlx5_0' / 'ports' / 'stray').mkdir()
    (root / 'bond0').mkdir()  # a device without ports
    ports, error = fleet.read_ib_ports(str(root))
    assert error is None
    assert [(p['hca'], p['port'], p['state'], p['link_layer']) for p in ports] == [
        ('mlx5_0', 2, 'ACTIVE', 'InfiniBand'), ('mlx5_0', 10, 'DOWN', 'Ethernet'), ('mlx5_1', 1, 'ACTIVE', 'InfiniBand')]
    assert ports[2] == {'hca': 'mlx5_1', 'port': 1, 'state': 'ACTIVE', 'phys_state': 'LinkUp', 'rate': '200 Gb/sec (4X HDR)',
                        'rate_gbps': 200.0, 'link_layer': 'InfiniBand', 'counters': {'link_downed': 2}}
    assert fleet.read_ib_ports(str(tmp_path / 'none')) == ([], None)


def test_read_text(tmp_path):
    (tmp_path / 'state').write_text('4: ACTIVE\n')
    assert fleet.read_text(str(tmp_path / 'state')) == '4: ACTIVE\n'
    assert fleet.read_text(str(tmp_path / 'missing')) is None
    assert fleet.read_text(str(tmp_path)) is None


def test_driver_minimum_of_models_with_the_same_minimum_names_the_first():
    assert fleet.driver_minimum(['NVIDIA H100 PCIe', 'NVIDIA H100 80GB HBM3', 'Tesla T4']) == (
        '525.60.13', 'the oldest that supports NVIDIA H100 PCIe')
