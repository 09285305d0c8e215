# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _deep_tier: its settings and their messages, the tools' command lines, each check's exact verdict and
the report the orchestrator reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..')
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')
VALID = ', '.join(sorted(hd.DEFAULTS))


def fixture(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


# ---------------------------------------------------------------- settings

def test_no_settings_are_the_defaults_with_the_dcgm_timeout_of_the_level():
    config = hd.load_config(None)
    assert config == dict(hd.DEFAULTS, dcgm_timeout=900)
    assert hd.load_config({}) == config


@pytest.mark.parametrize('level, timeout', [(1, 300), (2, 900), (3, 3600), (4, 14400)])
def test_the_dcgm_timeout_follows_the_level_unless_given(level, timeout):
    assert hd.load_config({'dcgm_level': level})['dcgm_timeout'] == timeout
    assert hd.load_config({'dcgm_level': level, 'dcgm_timeout': 5})['dcgm_timeout'] == 5


@pytest.mark.parametrize('data, message', [
    ([1], 'the deep tier settings are [1], expected a JSON object with keys %s' % VALID),
    ({'colour': 1, 7: 2}, 'unknown deep tier setting(s) 7, colour; valid settings: %s' % VALID),
    ({'checks': 'dcgm'}, "checks is 'dcgm', expected a list of dcgm, nccl, nvbandwidth, ib-bw"),
    ({'checks': ['dcgm', 'gpu-burn']}, "checks is ['dcgm', 'gpu-burn'], expected a list of dcgm, nccl, nvbandwidth, ib-bw"),
    ({'dcgmi': 'dcgmi'}, "dcgmi is 'dcgmi', expected an absolute path"),
    ({'all_reduce_perf': 3}, 'all_reduce_perf is 3, expected an absolute path'),
    ({'nvbandwidth': '/opt/nv bandwidth'}, "nvbandwidth is '/opt/nv bandwidth', expected an absolute path"),
    ({'ib_write_bw': '-x'}, "ib_write_bw is '-x', expected an absolute path"),
    ({'ib_sysfs_root': ''}, "ib_sysfs_root is '', expected an absolute path"),
    ({'dcgm_level': 0}, 'dcgm_level is 0, expected one of 1, 2, 3, 4'),
    ({'dcgm_level': 5}, 'dcgm_level is 5, expected one of 1, 2, 3, 4'),
    ({'dcgm_level': True}, 'dcgm_level is True, expected one of 1, 2, 3, 4'),
    ({'dcgm_level': 2.0}, 'dcgm_level is 2.0, expected one of 1, 2, 3, 4'),
    ({'dcgm_timeout': 0}, 'dcgm_timeout is 0, expected a number of seconds above 0 and at most 86400'),
    ({'dcgm_timeout': 86401}, 'dcgm_timeout is 86401, expected a number of seconds above 0 and at most 86400'),
    ({'nccl_timeout': -1}, 'nccl_timeout is -1, expected a number of seconds above 0 and at most 86400'),
    ({'nvbandwidth_timeout': float('inf')}, 'nvbandwidth_timeout is inf, expected a number of seconds above 0 and at most 86400'),
    ({'ib_timeout': float('nan')}, 'ib_timeout is nan, expected a number of seconds above 0 and at most 86400'),
    ({'ib_duration': True}, 'ib_duration is True, expected a number of seconds above 0 and at most 86400'),
    ({'ib_duration': '5'}, "ib_duration is '5', expected a number of seconds above 0 and at most 86400"),
    ({'pcie_min_fraction': 0}, 'pcie_min_fraction is 0, expected a fraction above 0 and at most 1'),
    ({'peer_min_fraction': 1.01}, 'peer_min_fraction is 1.01, expected a fraction above 0 and at most 1'),
    ({'ib_min_fraction': '0.8'}, "ib_min_fraction is '0.8', expected a fraction above 0 and at most 1"),
    ({'ib_tcp_port': 1023}, 'ib_tcp_port is 1023, expected a TCP port from 1024 to 65000'),
    ({'ib_tcp_port': 65001}, 'ib_tcp_port is 65001, expected a TCP port from 1024 to 65000'),
    ({'ib_tcp_port': True}, 'ib_tcp_port is True, expected a TCP port from 1024 to 65000'),
    ({'ib_tcp_port': 2000.0}, 'ib_tcp_port is 2000.0, expected a TCP port from 1024 to 65000'),
    ({'nccl_args': '-b 8'}, "nccl_args is '-b 8', expected a list of strings"),
    ({'nccl_args': ['-b', 8]}, "nccl_args is ['-b', 8], expected a list of strings"),
    ({'nccl_args': ['-b\x00']}, "nccl_args is ['-b\\x00'], expected a list of strings"),
    ({'nccl_env': ['NCCL_DEBUG']}, "nccl_env is ['NCCL_DEBUG'], expected a mapping of environment variable names to values"),
    ({'nccl_env': {'1X': 'a'}}, "nccl_env is {'1X': 'a'}, expected a mapping of environment variable names to values"),
    ({'nccl_env': {'X-Y': 'a'}}, "nccl_env is {'X-Y': 'a'}, expected a mapping of environment variable names to values"),
    ({'nccl_env': {'X': None}}, "nccl_env is {'X': None}, expected a mapping of environment variable names to values"),
    ({'nccl_env': {'X': 'a\x00'}}, "nccl_env is {'X': 'a\\x00'}, expected a mapping of environment variable names to values"),
    ({'nccl_env': {3: 'a'}}, "nccl_env is {3: 'a'}, expected a mapping of environment variable names to values"),
    ({'nvbandwidth_testcases': []}, 'nvbandwidth_testcases is [], expected a non-empty list of nvbandwidth testcase names'),
    ({'nvbandwidth_testcases': 'all'}, "nvbandwidth_testcases is 'all', expected a non-empty list of nvbandwidth testcase names"),
    ({'nvbandwidth_testcases': ['Host-To-Device']},
     "nvbandwidth_testcases is ['Host-To-Device'], expected a non-empty list of nvbandwidth testcase names"),
    ({'nvbandwidth_testcases': [7]}, 'nvbandwidth_testcases is [7], expected a non-empty list of nvbandwidth testcase names'),
    ({'nccl_topology': 8}, 'nccl_topology is 8, expected a topology name such as "h100-nvlink-8", or null for the default'),
])
def test_a_bad_setting_is_named_with_what_is_valid(data, message):
    with pytest.raises(ValueError) as info:
        hd.load_config(data)
    assert str(info.value) == message


@pytest.mark.parametrize('data', [
    {'dcgm_timeout': 86400, 'nccl_timeout': 0.5, 'ib_duration': 1},
    {'pcie_min_fraction': 1, 'peer_min_fraction': 0.01, 'ib_min_fraction': 1.0},
    {'ib_tcp_port': 1024}, {'ib_tcp_port': 65000},
    {'nccl_env': {'NCCL_DEBUG': 'INFO', '_X1': 3, 'Y': 0.5}, 'nccl_args': []},
    {'nvbandwidth_testcases': ['host_to_device_memcpy_ce'], 'checks': []},
    {'nccl_topology': 'h100-nvlink-8', 'dcgmi': '/'},
])
def test_the_bounds_of_the_settings_are_accepted(data):
    config = hd.load_config(data)
    for key, value in data.items():
        assert config[key] == value


# ---------------------------------------------------------------- results and command lines

def test_a_result_carries_its_extra_fields_and_refuses_unknown_checks_and_statuses():
    assert hd.result('nccl', 'pass', 'fine', value=3.5) == {'check': 'nccl', 'status': 'pass', 'detail': 'fine', 'value': 3.5}
    for check, status in (('gpu-burn', 'pass'), ('nccl', 'ok')):
        with pytest.raises(ValueError) as info:
            hd.result(check, status, 'x')
        assert str(info.value) == 'bad deep tier result %r/%r' % (check, status)


@pytest.mark.parametrize('check, tool', [
    ('dcgm', 'dcgmi (NVIDIA DCGM)'), ('nccl', "nccl-tests' all_reduce_perf"), ('nvbandwidth', 'nvbandwidth'), ('ib-bw', "perftest's ib_write_bw"),
])
def test_each_check_names_its_tool_when_it_is_missing_or_too_slow(check, tool):
    assert hd.check_tool(check) == tool
    assert hd.not_installed(check, '/x/y') == {'check': check, 'status': 'skip', 'detail': '%s is not installed on this node (/x/y)' % tool}
    assert hd.ran_out(check, 2.5) == {'check': check, 'status': 'error', 'detail': '%s did not finish within 2.5s' % tool}


def test_the_tools_command_lines():
    config = hd.load_config({'dcgm_level': 3, 'nccl_env': {'NCCL_DEBUG': 'WARN', 'N': 2}})
    assert hd.dcgm_argv(config) == ['/usr/bin/dcgmi', 'diag', '-r', '3', '-j']
    assert hd.nccl_argv(config, 4) == ['/opt/nccl-tests/build/all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '4']
    assert hd.nccl_env(config) == {'NCCL_DEBUG': 'WARN', 'N': '2'}
    assert hd.nvbandwidth_argv(config) == ['/usr/local/bin/nvbandwidth', '-t', 'host_to_device_memcpy_ce', '-t', 'device_to_host_memcpy_ce',
                                           '-t', 'device_to_device_memcpy_read_ce', '-j']


def test_whole_gpus_leave_out_unreadable_and_mig_gpus():
    gpus = [{'index': 0}, {'index': 1, 'error': 'lost'}, {'index': 2, 'mig_current': True}, {'index': 3, 'mig_current': False, 'error': ''}]
    assert [g['index'] for g in hd.whole_gpus(gpus)] == [0, 3]


@pytest.mark.parametrize('value, expected', [
    (None, None), ('', ''), ('0,1', '0,1'), ('MIG-abc,0, MIG-def ,1,,', '0,1'), ('MIG-abc', ''),
])
def test_cuda_visible_devices_without_the_mig_instances(value, expected):
    assert hd.cuda_visible_without_mig(value) == expected


@pytest.mark.parametrize('gen, width, gbps', [
    (1, 16, 4.0), (2, 8, 4.0), (3, 16, 15.8), (4, 16, 31.5), (5, 16, 63.0), (6, 16, 121.0), (5, 1, 3.9),
    (0, 16, None), (5, 0, None), (None, 16, None), (5, None, None), (7, 16, None),
])
def test_what_a_pcie_link_carries(gen, width, gbps):
    assert hd.pcie_gbps(gen, width) == gbps


# ---------------------------------------------------------------- dcgm

def diag(*results):
    return json.dumps({'DCGM GPU Diagnostic': {'test_categories': [{'category': 'Hardware', 'tests': [
        {'name': 'Memory', 'results': list(results)}]}]}, 'version': '3.3.5'})


def test_dcgm_passes_with_a_tally_of_its_tests():
    item = hd.judge_dcgm(0, diag({'gpu_id': '0', 'status': 'Pass'}, {'gpu_id': '1', 'status': 'Pass'}, {'gpu_id': '2', 'status': 'Skip'}), '', 2)
    assert item == {'check': 'dcgm', 'status': 'pass', 'detail': 'dcgmi diag -r 2: 2 pass, 1 skip'}


def test_dcgm_fails_naming_the_test_and_gpu_with_the_tally_as_evidence():
    item = hd.judge_dcgm(226, diag({'gpu_id': '0', 'status': 'Pass'}, {'gpu_id': '3', 'status': 'Fail',
                                                                       'warnings': [{'warning': 'row remap failure', 'error_id': 28}]}), '', 3)
    assert item['status'] == 'fail' and item['evidence'] == '1 pass, 1 fail'
    assert item['detail'].startswith('dcgmi diag -r 3: ') and 'Memory on GPU 3: row remap failure' in item['detail']
    assert set(item) == {'check', 'status', 'detail', 'evidence'}


def test_dcgm_without_a_test_is_an_error_with_its_output():
    stdout = json.dumps({'DCGM GPU Diagnostic': {'test_categories': [{'category': 'Hardware', 'tests': [{'name': 'Memory', 'results': []}]}]}})
    item = hd.judge_dcgm(0, stdout, '', 1)
    assert item == {'check': 'dcgm', 'status': 'error', 'detail': 'dcgmi diag -r 1 reported no test (rc 0)', 'evidence': stdout}


def test_dcgm_output_that_does_not_parse_is_an_error_naming_what_it_printed():
    item = hd.judge_dcgm(5, 'garbage\n', 'host engine\n  down', 2)
    assert item['status'] == 'error' and item['evidence'] == 'garbage\nhost engine\n  down'
    assert item['detail'].startswith('dcgmi diag -r 2 gave no result (rc 5): ')
    assert item['detail'].endswith('; output: host engine down garbage')
    assert not hd.judge_dcgm(5, '', None, 2)['detail'].endswith('; output: ')


# ---------------------------------------------------------------- nccl

NCCL = fixture('nccl', 'v2.13-era_h100_single_node.txt')
H100 = 'NVIDIA H100 80GB HBM3'


def test_nccl_passes_with_the_bandwidth_and_its_threshold():
    item = hd.judge_nccl(0, NCCL, '', hd.load_config({}), H100, 8)
    assert item['status'] == 'pass' and item['detail'].startswith('all_reduce_perf on 8 GPUs: ')
    assert set(item) == {'check', 'status', 'detail', 'value', 'threshold'}
    assert item['value'] >= item['threshold'] > 0


def test_nccl_below_its_threshold_fails_naming_the_gate():
    item = hd.judge_nccl(0, NCCL, '', hd.load_config({'nccl_min_busbw_gbps': 900}), H100, 8)
    assert item['status'] == 'fail' and item['threshold'] == 900 and item['detail'].startswith('all_reduce_perf on 8 GPUs: busbw: ')


def test_nccl_exiting_non_zero_after_a_good_table_fails_with_its_stderr():
    item = hd.judge_nccl(3, NCCL, 'x' * 300, hd.load_config({}), H100, 8)
    assert item['status'] == 'fail' and item['detail'] == 'all_reduce_perf on 8 GPUs exited 3: ...' + 'x' * 200


def test_nccl_without_output_is_an_error_with_what_it_printed():
    item = hd.judge_nccl(1, '', 'boom', hd.load_config({}), H100, 8)
    assert item == {'check': 'nccl', 'status': 'error', 'detail': 'all_reduce_perf gave no result (rc 1): nccl-tests output is empty: no line to parse',
                    'evidence': 'boom'}


# ---------------------------------------------------------------- nvbandwidth

H2D, D2H, D2D = hd.NVBANDWIDTH_TESTCASES
GPUS = [{'index': i, 'pci_bus_id': '00000000:%02X:00.0' % (0x1b + i), 'fleet': {'pcie': {'max_gen': 5, 'max_width': 16}}} for i in range(4)]


def nvbw(*entries, **extra):
    devices = ['%d: NVIDIA H100 80GB HBM3 (00000000:%02x:00)' % (i, 0x1b + i) for i in range(4)]
    data = {'nvbandwidth': dict({'version': 'v0.8', 'GPU Device list': devices, 'testcases': list(entries)}, **extra)}
    return json.dumps(data)


def case(name, cells, status='Passed'):
    return {'name': name, 'status': status, 'bandwidth_description': 'bandwidth (GB/s)', 'bandwidth_matrix': cells}


def peer(values):
    """A device-to-device matrix whose GPU i copies at values[i] to and from every other GPU."""
    return [['N/A' if i == j else str(min(values[i], values[j])) for j in range(len(values))] for i in range(len(values))]


def test_nvbandwidth_within_bounds_passes_with_the_lowest_host_copy():
    config = hd.load_config({'nvbandwidth_testcases': [H2D, D2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['55.1', '54.0', '56', '55']]), case(D2D, peer([300, 300, 300, 300]))), '', config, GPUS)
    assert item == {'check': 'nvbandwidth', 'status': 'pass', 'detail': 'nvbandwidth: host_to_device_memcpy_ce, device_to_device_memcpy_read_ce within bounds',
                    'value': 54.0}


def test_a_slow_host_copy_fails_against_its_pcie_link():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['55.1', '25.0', '44.1', '44.0']])), '', config, GPUS)
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'value': 25.0, 'detail': (
        'nvbandwidth: GPU 1 host_to_device_memcpy_ce 25.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s); '
        'GPU 3 host_to_device_memcpy_ce 44.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s)')}


def test_a_slow_peer_gpu_is_named_against_the_node_median():
    config = hd.load_config({'nvbandwidth_testcases': [D2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(D2D, peer([300, 300, 300, 100]))), '', config, GPUS)
    # GPU 3 copies at 100 with each of the others: its mean 100, the others' (300 + 300 + 100) / 3
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'value': None,
                    'detail': 'nvbandwidth: GPU 3 device_to_device_memcpy_read_ce 100.0 GB/s, below 186.7 (80% of the node median)'}


def test_peer_bandwidth_of_a_single_gpu_is_not_judged():
    config = hd.load_config({'nvbandwidth_testcases': [D2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(D2D, [['N/A', '10'], ['N/A', 'N/A']])), '', config, GPUS[:2])
    assert item['status'] == 'pass'


def test_testcases_that_did_not_run_or_failed_are_named_and_more_than_four_problems_counted():
    config = hd.load_config({'nvbandwidth_testcases': [H2D, D2H, D2D]})
    stdout = nvbw(case(H2D, [['10', '10', '10', '10']]), dict(case(D2H, []), status='Error'))
    item = hd.judge_nvbandwidth(0, stdout, '', config, GPUS)
    assert item['status'] == 'fail' and item['value'] == 10.0
    assert item['detail'] == ('nvbandwidth: GPU 0 host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s); '
                              'GPU 1 host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s); '
                              'GPU 2 host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s); '
                              'GPU 3 host_to_device_memcpy_ce 10.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s) (+2 more)')


def test_a_testcase_that_did_not_run_fails():
    config = hd.load_config({'nvbandwidth_testcases': [H2D, D2H]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['50', '50', '50', '50']])), '', config, GPUS)
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'value': 50.0, 'detail': 'nvbandwidth: device_to_host_memcpy_ce did not run'}


def test_a_waived_testcase_is_left_out_and_a_gpu_without_a_known_link_not_judged():
    config = hd.load_config({'nvbandwidth_testcases': [H2D, D2D]})
    gpus = [dict(g, fleet={}) for g in GPUS]
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['1', '1', '1', '1']]), case(D2D, [], status='Waived')), '', config, gpus)
    assert item == {'check': 'nvbandwidth', 'status': 'pass', 'value': None,
                    'detail': 'nvbandwidth: host_to_device_memcpy_ce, device_to_device_memcpy_read_ce within bounds'}


def test_nvbandwidth_exiting_non_zero_after_good_values_fails():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(2, nvbw(case(H2D, [['50', '50', '50', '50']])), 'oops', config, GPUS)
    assert item == {'check': 'nvbandwidth', 'status': 'fail', 'detail': 'nvbandwidth exited 2: oops'}


def test_nvbandwidth_that_gave_no_result_is_an_error_with_its_output():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(1, '{"nvbandwidth": ', 'died', config, GPUS)
    assert item['status'] == 'error' and item['evidence'] == '{"nvbandwidth": died'
    assert item['detail'].startswith('nvbandwidth gave no result (rc 1): ')


def test_the_cuda_devices_are_matched_to_nvml_gpus_by_pci_address():
    # nvbandwidth's device 0 is the GPU at 1c:00 (NVML index 1, a gen 3 link), device 1 the one at 1b:00 (gen 5)
    gpus = [dict(GPUS[0]), dict(GPUS[1], fleet={'pcie': {'max_gen': 3, 'max_width': 16}})]
    stdout = json.dumps({'nvbandwidth': {'version': 'v0.8', 'testcases': [case(H2D, [['12.0', '40.0']])], 'GPU Device list': [
        '0: NVIDIA H100 80GB HBM3 (00000000:1c:00)', '1: NVIDIA H100 80GB HBM3 (00000000:1b:00)']}})
    item = hd.judge_nvbandwidth(0, stdout, '', hd.load_config({'nvbandwidth_testcases': [H2D]}), gpus)
    # in PCI bus order device 0 would be the gen 5 GPU and 12.0 GB/s too slow for it
    assert item['detail'] == 'nvbandwidth: GPU 1 host_to_device_memcpy_ce 40.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s)'


# ---------------------------------------------------------------- ib-bw

def port(hca, number=1, state='4: ACTIVE', rate=400.0, link='InfiniBand'):
    return {'hca': hca, 'port': number, 'state': state, 'rate_gbps': rate, 'link_layer': link}


@pytest.mark.parametrize('ports, pairs', [
    ([], []),
    ([port('mlx5_0')], []),
    ([port('mlx5_1'), port('mlx5_0')], [('mlx5_0', 'mlx5_1')]),
    ([port('mlx5_0'), port('mlx5_1'), port('mlx5_2')], [('mlx5_0', 'mlx5_1'), ('mlx5_2', 'mlx5_0')]),
    ([port('mlx5_%d' % i) for i in range(4)], [('mlx5_0', 'mlx5_1'), ('mlx5_2', 'mlx5_3')]),
    ([port('mlx5_0'), port('mlx5_1', state='1: DOWN'), port('mlx5_2', link='Ethernet'), port('mlx5_3')], [('mlx5_0', 'mlx5_3')]),
    ([port('mlx5_0', state='active'), dict(port('mlx5_1'), link_layer=None), {'hca': 'mlx5_2', 'port': 1, 'state': 'ACTIVE'}],
     [('mlx5_0', 'mlx5_2')]),
])
def test_the_active_infiniband_ports_are_paired(ports, pairs):
    assert [(a['hca'], b['hca']) for a, b in hd.ib_pairs(ports)] == pairs


def test_the_ib_write_bw_command_lines_of_a_pair():
    config = hd.load_config({'ib_duration': 3, 'ib_tcp_port': 20000})
    server, client = hd.ib_argvs(config, (port('mlx5_0', 1), port('mlx5_3', 2)), 2)
    assert server == ['/usr/bin/ib_write_bw', '-d', 'mlx5_0', '-i', '1', '-F', '--report_gbits', '-D', '3', '-p', '20002']
    assert client == ['/usr/bin/ib_write_bw', '-d', 'mlx5_3', '-i', '2', '-F', '--report_gbits', '-D', '3', '-p', '20002', 'localhost']


@pytest.mark.parametrize('ports, recorded, want', [
    ([port('a', rate=200.0), port('b', rate=400.0), port('c', rate=100.0)], None, 400.0),
    ([port('a', rate=200.0)], '100', 100.0),
    ([port('a', rate=200.0)], 0, 200.0),
    ([{'rate_gbps': 300.0}], None, 300.0),
])
def test_the_rate_to_reach_is_the_recorded_one_else_the_fastest_infiniband_port(ports, recorded, want):
    rate = hd.expected_ib_rate(ports, recorded)
    assert rate == want and isinstance(rate, float)


PAIR = (port('mlx5_0'), port('mlx5_1'))
LABEL = 'mlx5_0/1<->mlx5_1/1'
CLIENT = fixture('deep', 'perftest', '24.07_client_report_gbits.txt')
SERVER = (0, '', '')


@pytest.mark.parametrize('pair, rate, ok, text', [
    (PAIR, None, True, LABEL + ' 388.1 Gb/s'),
    (PAIR, 485.0, True, LABEL + ' 388.1 Gb/s'),  # floor 388.0
    (PAIR, 486.0, False, LABEL + ' 388.1 Gb/s, below 388.8 (80% of 486 Gb/s)'),
    ((port('mlx5_0', rate=800.0), port('mlx5_1', rate=485.0)), None, True, LABEL + ' 388.1 Gb/s'),  # the lower port's rate
    ((port('mlx5_0', rate=800.0), port('mlx5_1', rate=500.0)), None, False, LABEL + ' 388.1 Gb/s, below 400.0 (80% of 500 Gb/s)'),
    ((port('mlx5_0', rate=None), port('mlx5_1', rate=None)), None, True, LABEL + ' 388.1 Gb/s'),  # no rate: no floor
])
def test_a_pair_is_judged_against_the_rate_it_should_reach(pair, rate, ok, text):
    assert hd.judge_ib_pair(pair, SERVER, (0, CLIENT, ''), hd.load_config({}), rate) == (ok, text, 388.12)


@pytest.mark.parametrize('server, client, text', [
    ((None, '', ''), (None, '', ''), 'client %s did not finish within 120s; server %s did not finish within 120s' % (LABEL, LABEL)),
    ((0, 'IB device mlx5_1 not found\n', ''), (1, '', 'Port number 1 state is Down'),
     'client %s: Port number 1 state is Down; server %s: IB device mlx5_1 not found' % (LABEL, LABEL)),
    ((1, '', ''), (1, 'Segmentation fault', ''), 'client %s printed no result (rc 1): ' % LABEL),
])
def test_a_pair_without_a_result_names_each_side(server, client, text):
    ok, said, gbps = hd.judge_ib_pair(PAIR, server, client, hd.load_config({}))
    assert (ok, gbps) == (False, None) and said.startswith(text), said


def test_a_server_without_a_result_and_a_client_with_one_is_the_clients_verdict():
    assert hd.judge_ib_pair(PAIR, (1, 'Segmentation fault', ''), (0, CLIENT, ''), hd.load_config({})) == (True, LABEL + ' 388.1 Gb/s', 388.12)


def test_a_pair_with_only_a_silent_server_failure_gave_no_result():
    client = (1, '', '')
    ok, text, gbps = hd.judge_ib_pair(PAIR, (1, '', ''), client, hd.load_config({}))
    assert ok is False and gbps is None and text.startswith('client %s printed no result (rc 1): not a perftest result' % LABEL)


@pytest.mark.parametrize('pairs, item', [
    ([], {'check': 'ib-bw', 'status': 'skip', 'detail': 'fewer than two active InfiniBand ports: no pair to test'}),
    ([(True, 'a 390.0 Gb/s', 390.0), (True, 'b 380.0 Gb/s', 380.0)],
     {'check': 'ib-bw', 'status': 'pass', 'detail': 'ib_write_bw: a 390.0 Gb/s, b 380.0 Gb/s', 'value': 380.0}),
    ([(True, 'a 390.0 Gb/s', 390.0), (False, 'b gave no result', None)],
     {'check': 'ib-bw', 'status': 'fail', 'detail': 'ib_write_bw: b gave no result', 'value': 390.0}),
    ([(False, 'a', None), (False, 'b', None), (False, 'c', None)], {'check': 'ib-bw', 'status': 'fail', 'detail': 'ib_write_bw: a; b; c'}),
    ([(False, 'a', None), (False, 'b', None), (False, 'c', None), (False, 'd', 10.0), (False, 'e', None)],
     {'check': 'ib-bw', 'status': 'fail', 'detail': 'ib_write_bw: a; b; c (+2 more)', 'value': 10.0}),
])
def test_the_ib_bw_result_of_its_pairs(pairs, item):
    assert hd.judge_ib(pairs) == item


# ---------------------------------------------------------------- the report

PASS = hd.result('dcgm', 'pass', 'fine')
FAIL = hd.result('nccl', 'fail', 'slow')
ERROR = hd.result('ib-bw', 'error', 'no engine')


@pytest.mark.parametrize('results, status, reason, passes', [
    ([], 0, None, 3),
    ([PASS], 0, None, 3),
    ([PASS, ERROR], 2, None, 2),
    ([ERROR, FAIL], 1, 'gpuhc:deep:nccl: slow', 0),
])
def test_the_report_and_its_exit_status(results, status, reason, passes):
    report, rc = hd.outcome('gpu-01', results, 'gpuhc', previous_passes=2)
    assert rc == status
    assert report == {'node': 'gpu-01', 'tier': 'deep', 'results': results, 'reason': reason, 'status': status, 'passes': passes}


def test_the_report_says_how_long_the_run_took_and_reads_back():
    report, _rc = hd.outcome('gpu-01', [PASS], 'gpuhc', seconds=12.345)
    assert report['seconds'] == 12.3 and report['passes'] == 1
    line = hd.report_line(report)
    assert line == 'gpucluster-healthcheck deep: ' + json.dumps(report, sort_keys=True)
    assert hd.read_report('noise\n  %s  \nmore noise\n' % line) == report
    older = hd.report_line(dict(report, node='old'))
    assert hd.read_report('%s\n%s\n' % (older, line))['node'] == 'gpu-01'


def test_two_failed_checks_give_one_drain_reason():
    assert hd.reason('gpuhc', [FAIL, hd.result('dcgm', 'fail', 'GPU 3')]) == 'gpuhc:deep:nccl: slow (+1 more)'
    assert hd.reason('gpuhc', [PASS, ERROR]) is None


@pytest.mark.parametrize('text, message', [
    (None, 'the job printed no deep tier report (a line starting "gpucluster-healthcheck deep:")'),
    ('all fine\n', 'the job printed no deep tier report (a line starting "gpucluster-healthcheck deep:")'),
    ('gpucluster-healthcheck deep: [1]', "the deep tier report has no results list: 'gpucluster-healthcheck deep: [1]'"),
    ('gpucluster-healthcheck deep: {"results": 3}', 'the deep tier report has no results list: \'gpucluster-healthcheck deep: {"results": 3}\''),
    ('gpucluster-healthcheck deep: {"results": [{"check": "gpu-burn", "status": "pass"}]}',
     "the deep tier report has a malformed result: {'check': 'gpu-burn', 'status': 'pass'}"),
    ('gpucluster-healthcheck deep: {"results": [{"check": "nccl", "status": "ok"}]}',
     "the deep tier report has a malformed result: {'check': 'nccl', 'status': 'ok'}"),
    ('gpucluster-healthcheck deep: {"results": [3]}', 'the deep tier report has a malformed result: 3'),
])
def test_a_missing_or_malformed_report_is_named(text, message):
    with pytest.raises(ValueError) as info:
        hd.read_report(text)
    assert str(info.value) == message


def test_a_report_line_that_is_not_json_is_named():
    with pytest.raises(ValueError, match='^the deep tier report line is not JSON: Expecting value'):
        hd.read_report('gpucluster-healthcheck deep: {"results": [}')


# ---------------------------------------------------------------- long outputs are cut, medians of odd and even counts

def no_test_output(length):
    """dcgmi's JSON of a run without a test, padded to ``length`` characters."""
    data = {'DCGM GPU Diagnostic': {'test_categories': [{'category': 'H', 'tests': [{'name': 'M', 'results': []}]}]}, 'version': ''}
    data['version'] = 'v' * (length - len(json.dumps(data)))
    return json.dumps(data)


@pytest.mark.parametrize('length, cut', [(1500, False), (1501, True)])
def test_the_evidence_keeps_the_last_1500_characters(length, cut):
    stdout = no_test_output(length)
    assert len(stdout) == length
    item = hd.judge_dcgm(0, stdout, '', 2)
    assert item['status'] == 'error' and item['evidence'] == ('...' + stdout[1:] if cut else stdout)


def test_a_long_dcgmi_output_is_cut_in_the_detail():
    item = hd.judge_dcgm(1, 'y' * 500, 'z' * 10, 2)
    assert item['detail'].endswith('; output: ' + ('z' * 10 + ' ' + 'y' * 500)[:200])


@pytest.mark.parametrize('speeds, detail', [
    ([400, 300, 200, 100], 'GPU 3 device_to_device_memcpy_read_ce 100.0 GB/s, below 146.7 (80% of the node median)'),
    ([300, 300, 100], 'GPU 2 device_to_device_memcpy_read_ce 100.0 GB/s, below 160.0 (80% of the node median)'),
])
def test_the_peer_floor_is_a_fraction_of_the_median_of_odd_and_even_counts(speeds, detail):
    config = hd.load_config({'nvbandwidth_testcases': [D2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(D2D, peer(speeds))), '', config, GPUS)
    assert item['detail'] == 'nvbandwidth: ' + detail


def test_the_fraction_in_the_message_is_rounded_to_a_whole_percent():
    config = hd.load_config({'nvbandwidth_testcases': [H2D], 'pcie_min_fraction': 0.756})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['10', '50', '50', '50']])), '', config, GPUS)
    assert item['detail'] == 'nvbandwidth: GPU 0 host_to_device_memcpy_ce 10.0 GB/s, below 47.6 (76% of PCIe gen 5 x16, 63.0 GB/s)'


def test_nvbandwidth_values_that_are_no_bandwidth_are_cut_to_four():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(case(H2D, [['nan', 'nan', 'N/A', 'inf']])), '', config, GPUS + [dict(GPUS[0], index=4)])
    assert item['status'] == 'error'
    assert item['detail'] == ('nvbandwidth printed values that are no bandwidth (rc 0): host_to_device_memcpy_ce GPU 0: nan; '
                              'host_to_device_memcpy_ce GPU 1: nan; host_to_device_memcpy_ce GPU 2: N/A; host_to_device_memcpy_ce GPU 3: inf')


def test_a_failed_nvbandwidth_names_its_error():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    stdout = nvbw(case(H2D, [['50', '50', '50', '50']]), error='[CUDA_ERROR_UNKNOWN] ' + 'e' * 400)
    item = hd.judge_nvbandwidth(1, stdout, '', config, GPUS)
    assert item['status'] == 'fail' and item['evidence'] == stdout
    assert item['detail'] == 'nvbandwidth failed (rc 1): ' + ('[CUDA_ERROR_UNKNOWN] ' + 'e' * 400)[:300]


def test_a_testcase_that_failed_names_its_error_else_its_status():
    config = hd.load_config({'nvbandwidth_testcases': [H2D]})
    item = hd.judge_nvbandwidth(0, nvbw(dict(case(H2D, []), status='Error')), '', config, GPUS)
    assert item['status'] == 'fail' and item['detail'].startswith('nvbandwidth: host_to_device_memcpy_ce: ')


def test_without_pci_addresses_the_cuda_devices_are_the_gpus_in_bus_order():
    # NVML lists the gen 3 GPU at 1c:00 first; CUDA device 0 is the GPU at 1b:00 (gen 5), device 1 the gen 3 one
    gpus = [dict(GPUS[1], fleet={'pcie': {'max_gen': 3, 'max_width': 16}}), dict(GPUS[0])]
    stdout = json.dumps({'nvbandwidth': {'version': 'v0.8', 'testcases': [case(H2D, [['12.0', '40.0']])], 'GPU Device list': []}})
    item = hd.judge_nvbandwidth(0, stdout, '', hd.load_config({'nvbandwidth_testcases': [H2D]}), gpus)
    assert item['detail'] == 'nvbandwidth: GPU 0 host_to_device_memcpy_ce 12.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s)'


@pytest.mark.parametrize('gpus', [
    [dict(GPUS[0], error='lost'), GPUS[1]],  # a GPU NVML cannot read is no CUDA device
    [dict(GPUS[0], mig_current=True), GPUS[1]],  # nor is a GPU split into MIG instances
])
def test_the_gpus_cuda_cannot_use_are_not_cuda_devices(gpus):
    stdout = json.dumps({'nvbandwidth': {'version': 'v0.8', 'testcases': [case(H2D, [['12.0']])], 'GPU Device list': []}})
    item = hd.judge_nvbandwidth(0, stdout, '', hd.load_config({'nvbandwidth_testcases': [H2D]}), gpus)
    assert item['detail'] == 'nvbandwidth: GPU 0 host_to_device_memcpy_ce 12.0 GB/s, below 44.1 (70% of PCIe gen 5 x16, 63.0 GB/s)'
    assert hd.judge_nvbandwidth(0, stdout, '', hd.load_config({'nvbandwidth_testcases': [H2D]}), [gpus[0]])['status'] == 'pass'


def test_the_report_of_a_run_of_no_time_says_so():
    report, _rc = hd.outcome('gpu-01', [], 'gpuhc', seconds=0)
    assert report['seconds'] == 0
    assert 'seconds' not in hd.outcome('gpu-01', [], 'gpuhc')[0]


def test_a_report_line_after_other_output_on_its_line_is_read():
    report, _rc = hd.outcome('gpu-01', [PASS], 'gpuhc')
    assert hd.read_report('srun: step 5: ' + hd.report_line(report)) == report


def test_a_long_report_line_without_results_is_cut_in_the_message():
    line = 'gpucluster-healthcheck deep: {"node": "%s"}' % ('n' * 300)
    with pytest.raises(ValueError) as info:
        hd.read_report(line)
    assert str(info.value) == 'the deep tier report has no results list: %r' % line[:200]
