# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_deep_tier's verdicts compared whole at their edges (issue 43): both sides of each floor, the cuts of long
texts, readings that are no number, the defaults of its small helpers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'fixtures')


def fixture(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


def test_tail_strips_and_cuts():
    assert hd._tail('  x \n') == 'x'
    assert hd._tail(None) == ''
    assert hd._tail(' ' + 'a' * 10 + 'b' * 5 + ' ', 5) == '...bbbbb'
    assert hd._tail('abcde', 5) == 'abcde'


def test_ran_out_and_not_installed_whole():
    assert hd.ran_out('dcgm', 60.0) == {'check': 'dcgm', 'status': 'error', 'detail': 'dcgmi (NVIDIA DCGM) did not finish within 60s'}
    assert hd.ran_out('ib-bw', 1.5)['detail'] == "perftest's ib_write_bw did not finish within 1.5s"
    assert hd.not_installed('nvbandwidth', '/x') == {'check': 'nvbandwidth', 'status': 'skip',
                                                     'detail': 'nvbandwidth is not installed on this node (/x)'}


def test_cuda_visible_without_mig():
    assert hd.cuda_visible_without_mig(None) is None
    assert hd.cuda_visible_without_mig('') == ''
    assert hd.cuda_visible_without_mig('0, MIG-a,,1, ') == '0,1'


def test_bus_of_a_pci_address():
    assert hd._bus('00000000:1B:00.0') == '1b:00'
    assert hd._bus('1B:00') == '1b:00'
    assert hd._bus('1b') == ''
    assert hd._bus(None) == ''


def test_gpu_links_by_bus_order_and_device_addresses():
    gpus = [{'index': 0, 'pci_bus_id': '00000000:AA:00.0', 'fleet': {'pcie': {'max_gen': 5, 'max_width': 16}}},
            {'index': 1, 'pci_bus_id': '00000000:1b:00.0', 'fleet': None},
            {'index': 2, 'pci_bus_id': None, 'error': 'lost'}]
    # bus order is by the lower-case address: 1b before aa
    assert hd._gpu_links(gpus) == {0: (1, None, None), 1: (0, 5, 16)}
    upper = [dict(gpus[0], pci_bus_id='00000000:BB:00.0'), dict(gpus[1], pci_bus_id='00000000:aa:00.0')]
    assert hd._gpu_links(upper) == {0: (1, None, None), 1: (0, 5, 16)}
    assert hd._gpu_links(gpus, None) == hd._gpu_links(gpus, [])
    devices = [{'index': 0, 'pci': '00000000:aa:00'}, {'index': '1', 'pci': '00000000:1b:00'}, {'index': 5, 'pci': 'ff:00'}]
    assert hd._gpu_links(gpus, devices) == {0: (0, 5, 16), 1: (0, 5, 16)}


def test_median_and_pcie_edges():
    assert hd._median([3, 1, 2]) == 2
    assert hd._median([4, 1, 2, 3]) == 2.5
    assert hd.pcie_gbps(5, 16) == 63.0
    assert hd.pcie_gbps(3, 1) == 1.0
    assert [hd.pcie_gbps(g, w) for g, w in ((0, 16), (5, 0), (7, 16), (None, None))] == [None] * 4


# ---------------------------------------------------------------- nccl

NCCL = fixture('nccl', 'v2.13-era_h100_single_node.txt')
H100 = 'NVIDIA H100 80GB HBM3'


def test_nccl_values_that_are_no_measurement_whole():
    stdout = NCCL.replace('382.99', 'nan', 1).replace('412.35', 'inf', 1)
    item = hd.judge_nccl(0, stdout, '', hd.load_config({}), H100, 8)
    assert item == {'check': 'nccl', 'status': 'error', 'evidence': hd._tail(stdout),
                    'detail': 'all_reduce_perf printed values that are no measurement (rc 0): 134217728 B out-of-place busbw nan, '
                              '268435456 B out-of-place busbw inf'}


def test_nccl_more_than_five_values_that_are_no_measurement_are_cut():
    lines = NCCL.splitlines()
    rows = [i for i, line in enumerate(lines) if line.strip()[:1].isdigit() and len(line.split()) == 13]
    for i in rows:
        fields = lines[i].split()
        fields[5:8] = ['nan', 'nan', 'nan']
        lines[i] = ' '.join(fields)
    item = hd.judge_nccl(0, '\n'.join(lines) + '\n', '', hd.load_config({}), H100, 8)
    first, second = int(lines[rows[0]].split()[0]), int(lines[rows[1]].split()[0])
    assert item == {'check': 'nccl', 'status': 'error', 'evidence': hd._tail('\n'.join(lines) + '\n'),
                    'detail': 'all_reduce_perf printed values that are no measurement (rc 0): %d B out-of-place time nan, '
                              '%d B out-of-place algbw nan, %d B out-of-place busbw nan, %d B out-of-place time nan, '
                              '%d B out-of-place algbw nan' % (first, first, first, second, second)}


def test_nccl_exit_status_none_passes_and_the_threshold_is_kept():
    item = hd.judge_nccl(None, NCCL, '', hd.load_config({'nccl_min_busbw_gbps': 1}), H100, 8)
    assert item['status'] == 'pass' and item['threshold'] == 1 and item['value'] > 1


def test_nccl_pass_whole_with_the_gates_value():
    item = hd.judge_nccl(0, NCCL, '', hd.load_config({}), H100, 8)
    assert item == {'check': 'nccl', 'status': 'pass', 'value': 475.06, 'threshold': 293.7,
                    'detail': 'all_reduce_perf on 8 GPUs: busbw reaches the h100-nvswitch/node/ring gate curve at all 6 sizes gated '
                              '(128 MiB..4 GiB); closest at 4 GiB: 475.1 GB/s >= 293.7 GB/s required'}


# ---------------------------------------------------------------- nvbandwidth

H2D, D2H, D2D = hd.NVBANDWIDTH_TESTCASES
GPUS = [{'index': i, 'pci_bus_id': '00000000:%02X:00.0' % (0x1b + i), 'fleet': {'pcie': {'max_gen': 5, 'max_width': 16}}} for i in range(4)]


def nvbw(*entries):
    devices = ['%d: NVIDIA H100 80GB HBM3 (00000000:%02x:00)' % (i, 0x1b + i) for i in range(4)]
    return json.dumps({'nvbandwidth': {'version': 'v0.8', 'GPU Device list': devices, 'testcases': list(entries)}})


def case(name, cells, status='Passed'):
    return {'name': name, 'status': status, 'bandwidth_description': 'bandwidth (GB/s)', 'bandwidth_matrix': cells}


def peer(values):
    return [['N/A' if i == j else str(min(values[i], values[j])) for j in range(len(values))] for i in range(len(values))]


def test_peer_mean_at_the_floor_passes():
    # GPU 0's mean 100, the others' 150: the median 150 is the floor at fraction 1; GPU 1 and 2 sit on it
    config = hd.load_config({'nvbandwidth_testcases': [D2D], 'peer_min_fraction': 1})
    item = hd.judge_nvbandwidth(0, nvbw(case(D2D, peer([100, 200, 200]))), '', config, GPUS[:3])
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'value': None,
                    'detail': 'nvbandwidth: GPU 0 device_to_device_memcpy_read_ce 100.0 GB/s, below 150.0 (100% of the node median)'}


def test_host_copy_floor_rounded_to_a_tenth():
    # 71 % of 63.0 GB/s is 44.73, the floor 44.7: 44.72 passes
    config = hd.load_config({'nvbandwidth_testcases': [H2D], 'pcie_min_fraction': 0.71})
    item = hd.judge_nvbandwidth(None, nvbw(case(H2D, [['44.72', '50', '50', '44.7']])), 'ignored', config, GPUS)
    assert item == {'check': 'nvbandwidth', 'status': 'pass', 'value': 44.7, 'detail': 'nvbandwidth: host_to_device_memcpy_ce within bounds'}


def test_a_gpu_without_a_known_link_does_not_stop_the_others():
    gpus = [dict(GPUS[0], fleet={})] + GPUS[1:]
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['1', '10', '50', '50']])), '', config, gpus)
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'value': 10.0,
                    'detail': 'nvbandwidth: GPU 1 host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s)'}


def test_four_problems_are_all_named_without_a_count():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['10', '10', '10', '10']])), '', config, GPUS)
    assert item['detail'] == 'nvbandwidth: ' + '; '.join(
        'GPU %d host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70%% of PCIe gen 5 x16, 63.0 GB/s)' % i for i in range(4))


def test_five_unreadable_values_name_four():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    gpus = GPUS + [dict(GPUS[0], index=4)]
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['nan', 'nan', 'nan', 'nan', 'inf']])), '', config, gpus)
    assert item['detail'] == 'nvbandwidth printed values that are no bandwidth (rc 0): ' + '; '.join(
        'host_to_device_memcpy_ce GPU %d: nan' % i for i in range(4))


def test_a_testcase_that_failed_without_an_error_is_named_by_its_status():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(dict(case(H2D, []), status='Error')), '', config, GPUS)
    error = dict(case(H2D, []), status='Error', error='CUDA_ERROR_OUT_OF_MEMORY')
    other = hd.judge_nvbandwidth(0, nvbw(error), '', config, GPUS)
    assert (item['detail'], other['detail']) == ('nvbandwidth: host_to_device_memcpy_ce: Error',
                                                 'nvbandwidth: host_to_device_memcpy_ce: CUDA_ERROR_OUT_OF_MEMORY')


# ---------------------------------------------------------------- ib-bw

def port(hca, number=1, rate=400.0):
    return {'hca': hca, 'port': number, 'state': '4: ACTIVE', 'rate_gbps': rate, 'link_layer': 'InfiniBand'}


CLIENT = fixture('deep', 'perftest', '24.07_client_report_gbits.txt')
PAIR = (port('mlx5_0'), port('mlx5_1'))
LABEL = 'mlx5_0/1<->mlx5_1/1'


def test_ib_pairs_sort_by_hca_then_port():
    pairs = hd.ib_pairs([port('mlx5_0', 2), port('mlx5_1', 1), port('mlx5_0', 1)])
    assert [('%s/%s' % (a['hca'], a['port']), '%s/%s' % (b['hca'], b['port'])) for a, b in pairs] == [
        ('mlx5_0/1', 'mlx5_0/2'), ('mlx5_1/1', 'mlx5_0/1')]


def test_expected_rate_skips_ports_without_a_rate():
    assert hd.expected_ib_rate([port('a', rate=None), port('b', rate=100.0)]) == 100.0
    assert hd.expected_ib_rate([port('a', rate=None)]) is None


def test_ib_floor_rounded_to_a_tenth():
    # 80 % of 485.186 is 388.1488: the floor 388.1, which 388.12 reaches
    config = hd.load_config({})
    assert hd.judge_ib_pair(PAIR, (0, '', ''), (0, CLIENT, ''), config, 485.186) == (True, LABEL + ' 388.1 Gb/s', 388.12)
    assert hd.judge_ib_pair(PAIR, (0, '', ''), (None, CLIENT, ''), config) == (True, LABEL + ' 388.1 Gb/s', 388.12)
    assert hd.judge_ib_pair(PAIR, (0, '', ''), (2, CLIENT, 'x\n'), config) == (
        False, 'client %s exited 2 after its result table: x' % LABEL, None)


def test_read_report_names_the_stripped_line():
    line = '   gpucluster-healthcheck deep: {"node": "n"}   '
    with pytest.raises(ValueError) as info:
        hd.read_report('x\n' + line + '\n')
    assert str(info.value) == 'the deep tier report has no results list: %r' % line.strip()


def test_ib_error_text_is_cut_at_160():
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _perftest
    text = fixture('deep', 'perftest', 'error_port_down.txt') * 4
    error = _perftest.parse_bw(text)['error']
    assert len(error) > 160
    assert hd.judge_ib_pair(PAIR, (0, '', ''), (1, text, ''), hd.load_config({})) == (False, 'client %s: %s' % (LABEL, error[:160]), None)
