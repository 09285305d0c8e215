# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Readings of tool output fail closed: what a parser does not recognise is an error naming the tool, the field
and the text -- never a pass, never a skip.

Tables of unknown, empty and garbled values for every field the deep tier and the health check read: dcgmi's
JSON (and DCGM's MIG refusals, the only runtime errors that skip), nvbandwidth's matrices, ib_write_bw's result
table, all_reduce_perf's rows and ``scontrol -o show node``'s State=.  (The nvidia-smi readings of the hooks:
tests/unit/hooks/test_gpu_hooks_fail_closed.py.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _healthcheck as hc
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _dcgm

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..')
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')


def fixture(*path):
    with open(os.path.join(FIXTURES, *path)) as handle:
        return handle.read()


# ---------------------------------------------------------------- dcgmi diag -j

def runtime_error(text, root='DCGM GPU Diagnostic'):
    return json.dumps({root: {'runtime_error': text, 'version': '3.3.5'}}, indent=3) + '\n'


def diag(result, name='Memory', category='Hardware'):
    return json.dumps({'DCGM GPU Diagnostic': {'test_categories': [{'category': category, 'tests': [
        {'name': name, 'results': [result]}]}]}, 'version': '3.3.5'})


# DCGM's MIG refusals, as nvvs/src/NvidiaValidationSuite.cpp BuildCommonGpusList() words them, bare (DCGM 3.x
# dcgmi) or as DCGM 4.x's dcgmi wraps its system errors ("Error: ..." / "Error: Unable to complete ... Return:")
REFUSALS = [
    "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU.",
    'Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled, yet GPU 0 is MIG enabled and the '
    'diagnostic is attempting to run on 8 GPUs.',
    'Error: Cannot run diagnostic: MIG is enabled, but no compute instances are configured. CUDA needs to execute on a '
    'compute instance if MIG is enabled.',
    'Error: Unable to complete diagnostic. Return: (-45) : NVVS error\nCannot run diagnostic: CUDA does not support enumerating '
    'GPUs when one more GPUs has MIG mode enabled and one or more GPUs has MIG mode disabled.',
]


@pytest.mark.parametrize('text', REFUSALS)
def test_only_dcgms_own_mig_refusals_skip(text):
    item = hd.judge_dcgm(226, runtime_error(text), '', 2)
    assert item['status'] == 'skip', item
    assert item['detail'].startswith('dcgmi diag -r 2 does not run on this node: ') and _dcgm.mig_refusal(text) in item['detail']


@pytest.mark.parametrize('stdout, fragments', [
    # runtime errors that mention MIG and are none of DCGM's refusals (the first is a host engine log line)
    (runtime_error('MIG mode is currently enabled; DCGM must be run as root if MIG mode is enabled.'), ['must be run as root']),
    (runtime_error('Error: Unable to complete diagnostic. Return: (-1) : MIG reconfiguration in progress'), ['MIG reconfiguration']),
    (runtime_error("GPU 2's MIG configuration is incompatible"), ["GPU 2's MIG configuration is incompatible"]),
    # parse errors whose text mentions MIG: an unknown status, a GPU id that is no index, text that is not JSON
    (diag({'gpu_id': '0', 'status': 'MIG'}), ["status 'MIG'", "'Memory'"]),
    (diag({'gpu_id': 'MIG-0', 'status': 'Pass'}), ["GPU id 'MIG-0'"]),
    ('MIG', ["first line: 'MIG'"]),
    # unknown, empty and garbled values of each field read
    (diag({'gpu_id': '0', 'status': 'Maybe'}), ["status 'Maybe' is not one of"]),
    (diag({'gpu_id': '0', 'status': ''}), ["status '' is not one of"]),
    (diag({'gpu_id': '0', 'status': 7}), ['status 7 is not one of']),
    (diag({'gpu_id': '0'}), ['status None is not one of']),
    (diag({'gpu_id': '', 'status': 'Pass'}), ["GPU id '' is not a GPU index"]),
    (diag({'gpu_id': 'zero', 'status': 'Pass'}), ["GPU id 'zero' is not a GPU index"]),
    (diag({'gpu_id': '0', 'status': 'Pass', 'warnings': [7]}), ['a warning is int']),
    (diag({'gpu_id': '0', 'status': 'Fail', 'warnings': [{'warning': 'x', 'error_id': 'abc'}]}), ["error_id 'abc' is not a number"]),
    (json.dumps({'DCGM GPU Diagnostic': {'test_categories': 'Hardware'}}), ['test_categories is str']),
    (json.dumps({'DCGM GPU Diagnostic': {'test_categories': [{'category': 'Hardware', 'tests': [{'results': []}]}]}}), ['a test has no name']),
    (json.dumps({'DCGM GPU Diagnostic': {'test_categories': []}}), ['reported no test']),
    (json.dumps({'something': 'else'}), ['its keys: something']),
    ('', ['no JSON document']),
    ('{"DCGM GPU Diagnostic": {"test_categ', ['no JSON document']),
])
def test_an_unrecognised_dcgmi_output_is_an_error_naming_it(stdout, fragments):
    item = hd.judge_dcgm(0, stdout, '', 2)
    assert item['status'] == 'error', item
    assert item['detail'].startswith('dcgmi diag -r 2 '), item
    for fragment in fragments:
        assert fragment in item['detail'], (fragment, item)


def test_a_failed_test_still_fails():
    item = hd.judge_dcgm(0, diag({'gpu_id': '3', 'status': 'Fail', 'warnings': [{'warning': 'row remap failure', 'error_id': 28}]}), '', 2)
    assert item['status'] == 'fail' and 'Memory on GPU 3: row remap failure' in item['detail'], item


# ---------------------------------------------------------------- nvbandwidth

H2D, D2D = 'host_to_device_memcpy_ce', 'device_to_device_memcpy_read_ce'
GPUS = [{'index': i, 'pci_bus_id': '00000000:%02X:00.0' % (0x1b + i), 'fleet': {'pcie': {'max_gen': 5, 'max_width': 16}}} for i in range(2)]


def nvbw(cells, case=H2D, status='Passed', matrix=True):
    entry = {'name': case, 'status': status, 'bandwidth_description': 'memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)'}
    if matrix:
        entry['bandwidth_matrix'] = cells
    devices = ['0: NVIDIA H100 80GB HBM3 (00000000:1b:00)', '1: NVIDIA H100 80GB HBM3 (00000000:1c:00)']
    return json.dumps({'nvbandwidth': {'version': 'v0.8', 'GPU Device list': devices,
                                       'testcases': [entry]}})


def test_nvbandwidth_healthy_values_pass():
    item = hd.judge_nvbandwidth(0, nvbw([['55.1', '55.3']]), '', hd.load_config({'nvbandwidth_testcases': [H2D]}), GPUS)
    assert item['status'] == 'pass', item


@pytest.mark.parametrize('stdout, case, fragments', [
    # values nvbandwidth's parser takes as numbers that are no bandwidth, and N/A where every GPU is measured
    (nvbw([['55.1', 'nan']]), H2D, [H2D + ' GPU 1: nan']),
    (nvbw([['inf', '55.1']]), H2D, [H2D + ' GPU 0: inf']),
    (nvbw([['55.1', 'N/A']]), H2D, [H2D + ' GPU 1: N/A']),
    (nvbw([['N/A', 'nan'], ['55.0', 'N/A']], case=D2D), D2D, [D2D + ' GPU 0 -> GPU 1: nan']),
    # a passed testcase without its matrix, or with an empty one
    (nvbw(None, matrix=False), H2D, [H2D + ': per_gpu(): the testcase has 0 rows']),
    (nvbw([]), H2D, [H2D + ': per_gpu(): the testcase has 0 rows']),
    # unknown, empty and garbled cells and statuses (the parser's errors)
    (nvbw([['55.1', 'fast']]), H2D, ["'fast' is not a number or N/A"]),
    (nvbw([['55.1', '']]), H2D, ["'' is not a number or N/A"]),
    (nvbw([['55.1', None]]), H2D, ['None is not a number']),
    (nvbw([['55.1', '55.1']], status='Maybe'), H2D, ["status 'Maybe' is not one of"]),
    (nvbw([['55.1', '55.1']], status=''), H2D, ["status '' is not one of"]),
    ('', H2D, ['neither nvbandwidth text output nor its -j JSON']),
    ('{"nvbandwidth": ', H2D, ['not valid JSON']),
    ('nvbandwidth Version: v0.8\nRunning host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n'
     '           0         1\n 0     55.10\n', H2D, ['1 values for 2 columns']),
])
def test_an_unrecognised_nvbandwidth_value_is_an_error_naming_it(stdout, case, fragments):
    item = hd.judge_nvbandwidth(0, stdout, '', hd.load_config({'nvbandwidth_testcases': [case]}), GPUS)
    assert item['status'] == 'error', item
    assert item['detail'].startswith('nvbandwidth '), item
    for fragment in fragments:
        assert fragment in item['detail'], (fragment, item)


# ---------------------------------------------------------------- ib_write_bw

PAIR = ({'hca': 'mlx5_0', 'port': 1, 'rate_gbps': 400.0}, {'hca': 'mlx5_1', 'port': 1, 'rate_gbps': 400.0})
LABEL = 'mlx5_0/1<->mlx5_1/1'
CLIENT = fixture('deep', 'perftest', '24.07_client_report_gbits.txt')
ROW = ' 65536      5000             390.76             388.12 \t\t   0.740280'
SERVER = (0, '', '')


def client_with(row):
    assert ROW in CLIENT
    return CLIENT.replace(ROW, row)


def test_a_good_pair_passes():
    assert hd.judge_ib_pair(PAIR, SERVER, (0, CLIENT, ''), hd.load_config({})) == (True, '%s 388.1 Gb/s' % LABEL, 388.12)


@pytest.mark.parametrize('client, fragments', [
    ((0, client_with(' 65536      5000             390.76             nan \t\t   0.740280'), ''), ["'nan' where a number belongs"]),
    ((0, client_with(' 65536      5000             390.76             inf \t\t   0.740280'), ''), ["'inf' where a number belongs"]),
    ((0, client_with(' 65536      5000             390.76             fast \t\t   0.740280'), ''), ["'fast' where a number belongs"]),
    ((0, client_with(' 65536      5000             390.76             \t\t   0.740280'), ''), ['has 4 fields, its header 5']),
    ((0, client_with(' 65536      lots             390.76             388.12 \t\t   0.740280'), ''), ["'lots' where a whole number"]),
    ((0, client_with(''), ''), ['without a result row and without an error message']),
    ((0, CLIENT.replace('BW average[Gb/sec]', 'BW mean[Gb/sec]'), ''), ['no \'#bytes #iterations']),
    ((0, CLIENT.replace('Gb/sec', 'Tb/sec'), ''), ['no \'#bytes #iterations']),
    ((0, '', ''), ['not a perftest result']),
    ((0, 'Segmentation fault', ''), ['not a perftest result']),
    # a client that exits non-zero after its table gave no verdict to trust
    ((1, CLIENT, ''), ['exited 1 after its result table']),
])
def test_an_unrecognised_ib_write_bw_output_fails_its_pair_naming_it(client, fragments):
    ok, text, gbps = hd.judge_ib_pair(PAIR, SERVER, client, hd.load_config({}))
    assert ok is False and gbps is None, text
    assert text.startswith('client %s ' % LABEL), text
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    assert hd.judge_ib([(ok, text, gbps)])['status'] == 'fail'


# ---------------------------------------------------------------- all_reduce_perf

NCCL = fixture('nccl', 'v2.13-era_h100_single_node.txt')
LAST = '  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0'


def nccl_with(row):
    assert LAST in NCCL
    return NCCL.replace(LAST, row)


def test_a_good_all_reduce_perf_run_passes():
    item = hd.judge_nccl(0, NCCL, '', hd.load_config({}), 'NVIDIA H100 80GB HBM3', 8)
    assert item['status'] == 'pass', item


@pytest.mark.parametrize('stdout, status, fragments', [
    # numbers the parser takes that are no measurement: an inf passed the gate, a nan was dropped
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63  inf      0    15773  272.30  inf      0'),
     'error', ['4294967296 B out-of-place busbw inf', '4294967296 B in-place busbw inf']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63  nan      0    15773  272.30  476.53      0'),
     'error', ['4294967296 B out-of-place busbw nan']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    nan  270.63  473.60      0    15773  272.30  476.53      0'),
     'error', ['4294967296 B out-of-place time nan']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  -inf  473.60      0    15773  272.30  476.53      0'),
     'error', ['4294967296 B out-of-place algbw -inf']),
    # garbled, empty and unknown values: a row that does not parse (the last one: the output is incomplete)
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63  fast      0    15773  272.30  476.53      0'),
     'fail', ['complete: output is incomplete']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63        0    15773  272.30  476.53      0'),
     'fail', ['complete: output is incomplete']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63  473.60  nan    15773  272.30  476.53      0'),
     'fail', ['complete: output is incomplete']),
    (nccl_with('  4294967296    1073741824     float     sum      -1    15870  270.63  473.60  some    15773  272.30  476.53      0')
     .replace('#  Avg bus bandwidth', '# Avg bus bandwidth'), 'fail', ['complete: output is incomplete']),
    ('', 'error', ['all_reduce_perf gave no result (rc 0): nccl-tests output is empty']),
    ('Segmentation fault (core dumped)\n', 'error', ["not nccl-tests output", "'Segmentation fault (core dumped)'"]),
])
def test_an_unrecognised_all_reduce_perf_value_never_passes(stdout, status, fragments):
    item = hd.judge_nccl(0, stdout, '', hd.load_config({}), 'NVIDIA H100 80GB HBM3', 8)
    assert item['status'] == status, item
    assert item['detail'].startswith('all_reduce_perf '), item
    for fragment in fragments:
        assert fragment in item['detail'], (fragment, item)


# ---------------------------------------------------------------- scontrol -o show node

@pytest.mark.parametrize('state', ['IDLE', 'IDLE+DRAIN', 'MIXED+COMPLETING', 'DOWN+NOT_RESPONDING', 'IDLE*+DRAIN', 'MIXED~',
                                   'DOWN$+NOT_RESPONDING', 'IDLE+DRAIN+DYNAMIC_NORM'])
def test_slurm_states_are_read(state):
    node = hc.parse_scontrol_node('NodeName=gpu-01 Arch=x86_64 State=%s ThreadsPerCore=2\n' % state)
    # the base state without sinfo's marks (DOWN$ is DOWN), the flags sorted, each once
    assert (node['name'], node['state'], node['flags']) == ('gpu-01', state.split('+')[0].rstrip('*~$'), sorted(set(state.split('+')[1:])))


@pytest.mark.parametrize('line, fragments', [
    ('NodeName=gpu-01 State=idle Reason=x', ['State=idle, expected Slurm state words']),
    ('NodeName=gpu-01 State=IDLE+ Reason=x', ['State=IDLE+, expected']),
    ('NodeName=gpu-01 State=+DRAIN', ['State=+DRAIN, expected']),
    ('NodeName=gpu-01 State=12', ['State=12, expected']),
    ('NodeName=gpu-01 State=IDLE+drain', ['State=IDLE+drain, expected']),
    ('NodeName=gpu-01 State=IDLE++DRAIN', ['State=IDLE++DRAIN, expected']),
    ('NodeName=gpu-01 State=', ['has no State=']),
    ('NodeName= State=IDLE', ['empty NodeName=']),
    ('', ['no "NodeName=" line']),
    ('slurm_load_node error: Invalid node name specified', ['no "NodeName=" line', 'Invalid node name']),
])
def test_an_unrecognised_scontrol_line_is_an_error_naming_it(line, fragments):
    with pytest.raises(ValueError) as err:
        hc.parse_scontrol_node(line + '\n')
    assert str(err.value).startswith('scontrol '), err.value
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, err.value)
