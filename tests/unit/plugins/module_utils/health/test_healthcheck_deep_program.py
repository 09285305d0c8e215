# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``gpucluster-healthcheck --tier deep`` against the NVML simulator and the tools' STAND-INs.

The program runs as the deep tier's Slurm job runs it; the tools it starts are the STAND-INs of
tests/standins/ (dcgmi, nvbandwidth, ib_write_bw, all_reduce_perf), laid out under a temporary /opt as
scripts/lib/node-prepare.sh installs them, and answering from the simulated node (GPU models, PCIe links, lost
GPUs, the InfiniBand tree).  Each fault is injected with the ``nvmlsim`` command line; what is checked is the
program's report line (what the orchestrator reads), its exit status and that it never calls scontrol.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import socket
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as hd
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.slurm.test_healthcheck_program import ROOT, Node

STANDINS = os.path.join(ROOT, 'tests', 'standins')
LAYOUT = {'dcgmi': ('dcgmi-standin', 'dcgm-STANDIN/bin/dcgmi'), 'nvbandwidth': ('nvbandwidth-standin', 'nvbandwidth-STANDIN/nvbandwidth'),
          'ib_write_bw': ('ib_write_bw-standin', 'perftest-STANDIN/bin/ib_write_bw'),
          'all_reduce_perf': ('all_reduce_perf-standin', 'nccl-tests-STANDIN/build/all_reduce_perf')}


def free_port_base():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return min(sock.getsockname()[1], 64000)


class DeepNode(Node):
    def install(self, *tools):
        """The STAND-INs under <tmp>/opt as on a simulated node (run by this Python); the deep settings pointing at them."""
        opt = self.tmp / 'opt'
        self.settings = {'ib_tcp_port': free_port_base(), 'ib_duration': 1}
        for tool in tools or LAYOUT:
            source, dest = LAYOUT[tool]
            path = opt / dest
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(os.path.join(STANDINS, source)) as handle:
                lines = handle.read().split('\n', 1)
            path.write_text('#!%s\n%s' % (sys.executable, lines[1]))
            path.chmod(0o755)
            self.settings[tool] = str(path)
        return self

    def deep(self, capsys, **settings):
        config = dict(self.settings, **settings)
        rc, out, err = self.run(capsys, '--tier', 'deep', '--deep-config', json.dumps(config))
        report = hd.read_report(out) if rc in (0, 1) or 'gpucluster-healthcheck deep:' in out else None
        return rc, report, out + err

    def result(self, report, check):
        return [r for r in report['results'] if r['check'] == check][0]


@pytest.fixture
def node(tmp_path, monkeypatch):
    # the recordings the all_reduce_perf STAND-IN prints (a node has them in /opt/nccl-tests-STANDIN/fixtures)
    monkeypatch.setenv('ALL_REDUCE_PERF_STANDIN_DIR', os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'nccl'))
    return DeepNode(tmp_path, monkeypatch)


H100 = {'gpu_count': 8, 'gpu_models': ['H100'], 'mig_layout': {}}
A100 = {'gpu_count': 8, 'gpu_models': ['A100'], 'mig_layout': {}}


@pytest.mark.parametrize('preset, config, ib_floor', [('h100-80gb-x8', H100, 320.0), ('a100-40gb-x8', A100, 160.0)])
def test_a_healthy_node_passes_every_deep_check_and_never_calls_scontrol(node, capsys, preset, config, ib_floor):
    node.create(preset, **config).install()
    rc, report, out = node.deep(capsys)
    assert rc == 0, out
    assert [(r['check'], r['status']) for r in report['results']] == [(c, 'pass') for c in hd.CHECKS], out
    assert report['reason'] is None and report['node'] == 'gpu-01'
    assert node.result(report, 'ib-bw')['value'] >= ib_floor
    assert node.result(report, 'nccl')['value'] >= node.result(report, 'nccl')['threshold']
    assert 'ib_write_bw: mlx5_0/1<->mlx5_1/1' in node.result(report, 'ib-bw')['detail']
    assert node.updates() == []


def test_the_nccl_check_gates_with_the_validation_roles_gate_curve(node, capsys):
    """A site's curve for the node's topology (validate_nccl_settings.gate_curves) above what the node gives fails it, naming the size."""
    node.create('h100-80gb-x8', **H100).install()
    rc, report, out = node.deep(capsys, checks=['nccl'], nccl_gate_curves={'h100-nvlink-8': [['64M', 900], ['8G', 900]]})
    nccl = node.result(report, 'nccl')
    assert rc == 1 and nccl['status'] == 'fail' and 'GB/s required' in nccl['detail'] and nccl['threshold'] == 900, out


def test_a_pcie_link_trained_down_is_named_by_dcgm_and_measured_by_nvbandwidth(node, capsys):
    node.create('h100-80gb-x8', **H100).install()
    node.sim('pcie', '--gpu', '2', '--width', '4')
    rc, report, out = node.deep(capsys)
    assert rc == 1, out
    dcgm, nvbw = node.result(report, 'dcgm'), node.result(report, 'nvbandwidth')
    assert dcgm['status'] == 'fail' and 'PCIe on GPU 2' in dcgm['detail'], dcgm
    assert nvbw['status'] == 'fail' and 'GPU 2 host_to_device_memcpy_ce' in nvbw['detail'] and '(70% of PCIe gen 5 x16, 63.0 GB/s)' in nvbw['detail'], nvbw
    assert 'GPU 1 ' not in nvbw['detail']
    assert report['reason'].startswith('gpuhc:deep:dcgm: dcgmi diag -r 2: PCIe on GPU 2') and report['reason'].endswith('(+1 more)')
    assert node.updates() == []


def test_an_infiniband_port_at_half_rate_fails_its_pair(node, capsys):
    node.create('a100-40gb-x8', **A100).install('ib_write_bw')
    node.sim('ib', '--hca', 'mlx5_5', '--rate', '100')
    rc, report, out = node.deep(capsys, checks=['ib-bw'])
    assert rc == 1, out
    ib = node.result(report, 'ib-bw')
    # the bar is the node's rate (200 Gb/s HDR), not the rate the broken port trained down to
    assert ib['status'] == 'fail' and ib['detail'].startswith('ib_write_bw: mlx5_4/1<->mlx5_5/1 9'), ib
    assert ib['detail'].endswith('Gb/s, below 160.0 (80% of 200 Gb/s)'), ib
    assert ib['value'] < 100 and 'mlx5_0' not in ib['detail']


def test_a_port_already_down_is_left_out_of_the_pairs_and_the_others_pass(node, capsys):
    node.create('h100-80gb-x8', **H100).install('ib_write_bw')
    node.sim('ib', '--hca', 'mlx5_0', '--state', 'down')
    rc, report, out = node.deep(capsys, checks=['ib-bw'])
    # a port that is down when the pairs are chosen is not paired (the periodic tier names it); the others still are
    ib = node.result(report, 'ib-bw')
    assert rc == 0 and ib['status'] == 'pass' and 'mlx5_0' not in ib['detail'] and 'mlx5_1/1<->mlx5_2/1' in ib['detail'], ib


def _port_down_for_perftest(node, monkeypatch, hca):
    """The port goes down after the pairs were chosen: ib_write_bw (the STAND-IN, reading its own copy of the tree)
    finds it Down while the deep tier read it ACTIVE."""
    copy = str(node.tmp / 'ib-at-run-time')
    shutil.copytree(node.ib_root, copy)
    with open(os.path.join(copy, hca, 'ports', '1', 'state'), 'w') as handle:
        handle.write('1: DOWN\n')
    monkeypatch.setenv('IB_WRITE_BW_STANDIN_SYSFS', copy)


@pytest.mark.parametrize('breaks, message', [
    # perftest's own words for a port that is not active (ctx_set_link_layer / check_link)
    (lambda node, monkeypatch: _port_down_for_perftest(node, monkeypatch, 'mlx5_1'), 'Port number 1 state is Down'),
    # the link fails mid-test: the client's completion error (the STAND-IN's "abort" mode)
    (lambda node, monkeypatch: monkeypatch.setenv('IB_WRITE_BW_STANDIN_FAIL', 'abort'), 'Completion with error at client'),
])
def test_a_port_down_fails_its_pair_with_perftests_message(node, capsys, monkeypatch, breaks, message):
    node.create('h100-80gb-x8', **H100).install('ib_write_bw')
    breaks(node, monkeypatch)
    rc, report, out = node.deep(capsys, checks=['ib-bw'])
    ib = node.result(report, 'ib-bw')
    assert rc == 1, out
    assert ib['status'] == 'fail' and ib['detail'].startswith('ib_write_bw: ') and message in ib['detail'], ib
    assert 'mlx5_0/1<->mlx5_1/1' in ib['detail'], ib
    assert report['reason'].startswith('gpuhc:deep:ib-bw: ib_write_bw: ') and message in report['reason'], report['reason']
    assert node.updates() == []


def test_a_lost_gpu_fails_dcgm_and_nvbandwidth(node, capsys):
    node.create('h100-80gb-x8', **H100).install('dcgmi', 'nvbandwidth')
    node.sim('xid', '--gpu', '0', '--code', '79')
    rc, report, out = node.deep(capsys, checks=['dcgm', 'nvbandwidth'])
    assert rc == 1, out
    assert node.result(report, 'dcgm')['status'] == 'fail'
    assert node.result(report, 'nvbandwidth')['status'] == 'fail' and 'CUDA_ERROR' in node.result(report, 'nvbandwidth')['detail']


def test_an_active_test_only_failure_a_slow_copy(node, capsys, monkeypatch):
    node.create('h100-80gb-x8', **H100).install('nvbandwidth')
    monkeypatch.setenv('NVBANDWIDTH_STANDIN_FAIL', 'slow')
    rc, report, out = node.deep(capsys, checks=['nvbandwidth'])
    assert rc == 1
    assert report['reason'].startswith('gpuhc:deep:nvbandwidth: nvbandwidth: GPU 0 host_to_device_memcpy_ce'), report['reason']


def test_tools_not_installed_are_skipped_and_say_where_they_were_looked_for(node, capsys):
    node.create('h100-80gb-x8', **H100)
    node.settings = {}
    rc, report, out = node.deep(capsys, dcgmi=str(node.tmp / 'nowhere' / 'dcgmi'), all_reduce_perf=str(node.tmp / 'nowhere' / 'arp'),
                                nvbandwidth=str(node.tmp / 'nowhere' / 'nvbandwidth'), ib_write_bw=str(node.tmp / 'nowhere' / 'ibw'))
    assert rc == 0, out
    assert [r['status'] for r in report['results']] == ['skip'] * 4
    assert node.result(report, 'dcgm')['detail'] == 'dcgmi (NVIDIA DCGM) is not installed on this node (%s)' % (node.tmp / 'nowhere' / 'dcgmi')


def test_dcgm_without_its_host_engine_is_an_error_not_a_drain(node, capsys, monkeypatch):
    node.create('h100-80gb-x8', **H100).install('dcgmi')
    marker = node.tmp / 'no-hostengine'
    marker.write_text('')
    monkeypatch.setenv('DCGMI_STANDIN_NO_HOSTENGINE_FILE', str(marker))
    rc, report, out = node.deep(capsys, checks=['dcgm'])
    assert rc == 2, out
    dcgm = node.result(report, 'dcgm')
    assert dcgm['status'] == 'error' and 'unable to establish a connection' in dcgm['detail'], dcgm
    assert report['reason'] is None


def test_a_tool_past_its_timeout_is_an_error(node, capsys, tmp_path):
    node.create('h100-80gb-x8', **H100)
    slow = tmp_path / 'dcgmi'
    slow.write_text('#!/bin/sh\nsleep 5\n')
    slow.chmod(0o755)
    node.settings = {}
    rc, report, out = node.deep(capsys, checks=['dcgm'], dcgmi=str(slow), dcgm_timeout=1)
    assert rc == 2 and node.result(report, 'dcgm')['detail'] == 'dcgmi (NVIDIA DCGM) did not finish within 1s', out


@pytest.mark.parametrize('config, message', [
    ('{"dcgm_level": 9}', 'bad --deep-config: dcgm_level is 9, expected one of 1, 2, 3, 4'),
    ('[1]', 'bad --deep-config: the deep tier settings are [1], expected a JSON object'),
    ('{not json', 'bad --deep-config: Expecting property name'),
    # the validation role's gate curves reach the deep tier and are checked as there
    ('{"nccl_gate_curves": {"h100-nvlink-8": [["8G", 300], ["1G", 200]]}}', 'bad --deep-config: gate_curves'),
])
def test_bad_settings_are_refused_before_anything_runs(node, capsys, config, message):
    node.create('h100-80gb-x8', **H100)
    rc, out, err = node.run(capsys, '--tier', 'deep', '--deep-config', config)
    assert rc == 2 and message in err, err
    assert 'gpucluster-healthcheck deep:' not in out


def test_a_mig_node_runs_the_cuda_tests_on_its_whole_gpus_and_dcgm_says_why_it_does_not_run(node, capsys, monkeypatch):
    # seed 003: 4 x A100, GPUs 2 and 3 split into 7 x 1g.10gb; Slurm hands a job with every GPU the instances'
    # MIG-<uuid> beside the whole GPUs' UUIDs
    node.create('seed-003', gpu_count=4, gpu_models=['A100'], mig_layout={'2': ['1g.10gb'] * 7, '3': ['1g.10gb'] * 7})
    node.install('dcgmi', 'nvbandwidth', 'all_reduce_perf')
    import pynvml
    pynvml.nvmlInit()
    uuids = [pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in (0, 1)]
    pynvml.nvmlShutdown()
    uuids = [u.decode() if isinstance(u, bytes) else u for u in uuids]
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', ','.join(['MIG-5ff5cc19-eb48-5f6e-b1d1-2227f863d2ff'] + uuids))
    rc, report, out = node.deep(capsys, checks=['dcgm', 'nccl', 'nvbandwidth'])
    assert rc == 0, out
    dcgm = node.result(report, 'dcgm')
    assert dcgm['status'] == 'skip' and "MIG configuration is incompatible with the diagnostic" in dcgm['detail'], dcgm
    assert node.result(report, 'nccl')['detail'].startswith('all_reduce_perf on 2 GPUs'), node.result(report, 'nccl')
    assert node.result(report, 'nvbandwidth')['status'] == 'pass', node.result(report, 'nvbandwidth')


@pytest.mark.parametrize('value, expected', [
    (None, None), ('', ''), ('0,1', '0,1'), ('MIG-aa,GPU-bb,GPU-cc', 'GPU-bb,GPU-cc'), ('MIG-aa', ''), ('GPU-bb, MIG-x', 'GPU-bb'),
])
def test_cuda_visible_without_mig(value, expected):
    assert hd.cuda_visible_without_mig(value) == expected


def test_the_node_counts_deep_runs_that_pass_in_a_row(node, capsys, monkeypatch):
    node.create('h100-80gb-x8', **H100).install('nvbandwidth')
    counts = []
    for slow in ('', '', 'slow', ''):
        monkeypatch.setenv('NVBANDWIDTH_STANDIN_FAIL', slow) if slow else monkeypatch.delenv('NVBANDWIDTH_STANDIN_FAIL', raising=False)
        _rc, report, _out = node.deep(capsys, checks=['nvbandwidth'])
        counts.append(report['passes'])
    assert counts == [1, 2, 0, 1]
    with open(os.path.join(os.path.dirname(node.state_file), 'deep-state.json')) as handle:
        assert json.load(handle) == {'node': 'gpu-01', 'passes': 1}
