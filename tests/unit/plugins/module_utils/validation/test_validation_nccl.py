# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NCCL stage's run plan and gating (_validation_nccl) on the recorded nccl-tests fixtures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _busbw as bb
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_nccl as vn

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'fixtures', 'nccl')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def single_node_lines():
    return fixture('v2.13-era_h100_single_node.txt').splitlines(True)


def part(first, last):
    """Lines ``first``..``last`` (0-based, inclusive) of the recorded single-node run: 0 the '# nThread' head,
    3-10 the '# Rank' lines, 12-14 the column header, 15-20 the result rows, 21-22 the footer."""
    return ''.join(single_node_lines()[first:last + 1])


@pytest.mark.parametrize('model, gpus, topology', [
    ('NVIDIA H100 80GB HBM3', 8, 'h100-nvlink-8'),
    ('NVIDIA A100-SXM4-40GB', 8, 'a100-nvlink-8'),
    ('NVIDIA H200', 8, 'h200-nvlink-8'),
    ('NVIDIA H100 80GB HBM3', 4, None),
    # PCIe platforms (conservative estimates): the PCIe cards before the SXM ones of the same GPU
    ('NVIDIA L40S', 8, 'l40s-pcie'),
    ('NVIDIA L40S', 4, 'l40s-pcie'),
    ('NVIDIA L40S', 2, None),
    ('NVIDIA A100-PCIE-40GB', 8, 'a100-pcie'),
    ('NVIDIA A100 80GB PCIe', 4, 'a100-pcie'),
    ('NVIDIA A100-SXM4-80GB', 4, None),
    ('NVIDIA H100 PCIe', 8, 'h100-pcie'),
    ('NVIDIA H100 NVL', 8, 'h100-pcie'),
    ('NVIDIA H100 NVL', 4, 'h100-pcie'),
    ('NVIDIA L4', 8, None),
    (None, 8, None),
])
def test_node_topology(model, gpus, topology):
    assert vn.node_topology(model, gpus) == topology


@pytest.mark.parametrize('nodes, rounds', [
    ([], []),
    (['a'], []),
    (['a', 'b'], [[('a', 'b')]]),
    (['a', 'b', 'c'], [[('a', 'b')], [('b', 'c')], [('c', 'a')]]),
    (['a', 'b', 'c', 'd'], [[('a', 'b'), ('c', 'd')], [('b', 'c'), ('d', 'a')]]),
    (['a', 'b', 'c', 'd', 'e'], [[('a', 'b'), ('c', 'd')], [('b', 'c'), ('d', 'e')], [('e', 'a')]]),
])
def test_pair_rounds(nodes, rounds):
    got = vn.pair_rounds(nodes)
    assert got == rounds
    for current in got:
        members = [n for pair in current for n in pair]
        assert len(members) == len(set(members))


def test_srun_argv_per_node_and_fabric():
    assert vn.srun_argv('/opt/nccl-tests/build/all_reduce_perf', ['gpu-01'], 8, False, 'pmix', {'NCCL_DEBUG': 'INFO'}) == [
        'srun', '--nodes=1', '--nodelist=gpu-01', '--gres=gpu:8', '--exclusive', '--time=10', '--export=ALL,NCCL_DEBUG=INFO', '--label',
        '--ntasks-per-node=1', '/opt/nccl-tests/build/all_reduce_perf', '-b', '8', '-e', '8G', '-f', '2', '-g', '8']
    assert vn.srun_argv('arp', ['gpu-01', 'gpu-02'], 8, True, 'pmix', {'NCCL_DEBUG': 'INFO', 'NCCL_ALGO': 'Ring'}, args=['-b', '1G']) == [
        'srun', '--nodes=2', '--nodelist=gpu-01,gpu-02', '--gres=gpu:8', '--exclusive', '--time=10',
        '--export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO', '--label', '--ntasks-per-node=8', '--mpi=pmix', 'arp', '-b', '1G', '-g', '1']


@pytest.mark.parametrize('args, message', [
    (dict(nodes=[]), 'an NCCL run needs at least one node'),
    (dict(gpus_per_node=0), 'gpus_per_node is 0, expected a whole number of at least 1'),
    (dict(env={'BAD KEY': '1'}), "environment variable name 'BAD KEY' is not valid (letters, digits and _)"),
    (dict(binary='-x'), 'binary is \'-x\', expected the path of all_reduce_perf on the nodes (one word: no spaces, not starting with "-")'),
    (dict(srun='s run'), 'srun is \'s run\', expected the srun command or its path (one word: no spaces, not starting with "-")'),
])
def test_srun_argv_errors(args, message):
    call = dict(binary='arp', nodes=['a'], gpus_per_node=8, per_gpu_tasks=False, mpi=None, env={})
    call.update(args)
    with pytest.raises(ValueError) as err:
        vn.srun_argv(**call)
    assert str(err.value) == message


def statuses(records):
    return dict((r['check'], r['status']) for r in records)


def test_evaluate_run_single_node_passes_with_series():
    expect = vn.expect_for(topology='h100-nvlink-8')
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-01'], expect)
    got = statuses(records)
    assert got['wrong'] == got['busbw'] == got['complete'] == 'pass'
    assert all(r['stage'] == 'nccl' and r['node'] == 'gpu-01' and r['hosts'] == ['gpu-01'] for r in records)
    assert series[0]['label'] == 'gpu-01' and series[0]['points'][-1] == [4294967296, 475.065]


def test_evaluate_run_wrong_fails():
    records, dummy = vn.evaluate_run('fabric', {'rc': 1, 'stdout': fixture('v2.17.8_gh200_two_nodes_wrong.txt')}, ['gpu-01', 'gpu-02'], {})
    wrong = [r for r in records if r['check'] == 'wrong'][0]
    assert wrong['status'] == 'fail'
    assert wrong['reason'] == '#wrong > 0 in 2 of 50 results: 1048576 B float out-of-place: 96, 1048576 B float in-place: 32'
    assert 'exit' not in statuses(records)


def test_evaluate_run_low_busbw_fails_against_an_override():
    expect = vn.expect_for(topology='a100-nvlink-8', thresholds={'a100-nvlink-8': 500})
    records, dummy = vn.evaluate_run('gpu-02', {'rc': 0, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-02'], expect)
    busbw = [r for r in records if r['check'] == 'busbw'][0]
    assert busbw['status'] == 'fail' and busbw['threshold'] == 500.0
    assert busbw['reason'] == 'mean busbw 469.7 GB/s over rows >= 1 GiB (1 GiB..4 GiB) is below 500.0 GB/s (a100-nvlink-8)'


def test_evaluate_run_socket_fallback():
    expect = vn.expect_for(expect_transport='ib')
    records, dummy = vn.evaluate_run('fabric', {'rc': 0, 'stdout': fixture('composed_h100_two_nodes_socket_fallback.txt')}, ['a', 'b'], expect)
    transport = [r for r in records if r['check'] == 'transport'][0]
    assert transport['status'] == 'fail'
    assert transport['reason'].startswith('NCCL fell back to NET/Socket (TCP) while InfiniBand was expected')


@pytest.mark.parametrize('first, rows, complete', [
    ('   536870912', 4, 'fail'),     # a paste that starts at a data row: the rows are gated, the head is missing
    ('# Out of bounds', 0, 'fail'),  # only the footer: gated too (no result rows), not called "no output"
])
def test_evaluate_run_of_an_output_whose_head_is_missing(first, rows, complete):
    lines = fixture('v2.13-era_h100_single_node.txt').splitlines(True)
    start = [i for i, line in enumerate(lines) if line.startswith(first)][0]
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': ''.join(lines[start:])}, ['gpu-01'], vn.expect_for(topology='h100-nvlink-8'))
    got = dict((r['check'], r) for r in records)
    assert got['complete']['status'] == complete
    assert got['complete']['reason'].startswith('output is incomplete: the head of the output is missing')
    assert got['single_run']['status'] == 'skip'
    assert got['busbw']['status'] == ('pass' if rows else 'fail')
    assert len(series[0]['points'] if series else []) == rows


def test_evaluate_run_nonzero_exit_with_clean_output_fails():
    records, dummy = vn.evaluate_run('gpu-01', {'rc': 3, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-01'], {})
    assert [r['reason'] for r in records if r['status'] == 'fail'] == ['all_reduce_perf exited with rc 3']


@pytest.mark.parametrize('result, reason', [
    ({'rc': 1, 'stdout': '', 'stderr': 'srun: error: Unable to allocate resources: Invalid generic resource (gres) specification'},
     'all_reduce_perf printed no results (rc 1): srun: error: Unable to allocate resources: Invalid generic resource (gres) specification'),
    ({'rc': None, 'stdout': '', 'timed_out': True, 'timeout': 600}, 'all_reduce_perf timed out after 600s'),
    ({'rc': 127, 'stdout': '', 'stderr': 'slurmstepd: error: execve(): /opt/nccl-tests/build/all_reduce_perf: No such file or directory'},
     'all_reduce_perf printed no results (rc 127): slurmstepd: error: execve(): /opt/nccl-tests/build/all_reduce_perf: No such file or directory'),
    # output that is not nccl-tests output, or a -J report that cannot be read (formerly test_evaluate_run_without_nccl_tests_results)
    # the column header alone holds no result: the run printed nothing to gate
    ({'rc': 0, 'stdout': part(12, 14)},
     'all_reduce_perf printed no results (rc 0): # out-of-place in-place # size count type redop root time algbw busbw #wrong time algbw busbw '
     '#wrong # (B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s)'),
    ({'rc': 0, 'stdout': ''}, 'all_reduce_perf printed no results (rc 0): no output'),
    ({'rc': 2, 'stdout': '   ', 'stderr': None}, 'all_reduce_perf printed no results (rc 2): no output'),
    # only the last 240 characters of what it printed
    ({'rc': 1, 'stdout': '', 'stderr': 'a' * 100 + 'b' * 240}, 'all_reduce_perf printed no results (rc 1): ' + 'b' * 240),
    ({'rc': 1, 'stdout': 'hello world\n', 'stderr': 'srun: error'},
     "all_reduce_perf output is not nccl-tests output (line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' "
     "header found; first line: 'hello world'); rc 1: srun: error hello world"),
    ({'rc': 1, 'stdout': 'hello world\n', 'stderr': 'e' * 300},
     "all_reduce_perf output is not nccl-tests output (line 1: not nccl-tests output: no '# nThread N nGpus N minBytes N maxBytes N ...' "
     "header found; first line: 'hello world'); rc 1: " + 'e' * 228 + ' hello world'),
    ({'rc': 0, 'stdout': '', 'json': '{'},
     "all_reduce_perf's -J JSON report cannot be read and it printed no text report (nccl-tests JSON is not valid JSON at line 1 column 2: "
     "Expecting property name enclosed in double quotes (the file ends early: the run was probably killed while writing it)); rc 0: no output"),
])
def test_evaluate_run_without_output(result, reason):
    records, series = vn.evaluate_run('gpu-01', result, ['gpu-01'], {})
    assert records == [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'all_reduce', 'status': 'fail', 'reason': reason, 'hosts': ['gpu-01']}]
    assert series == []


def test_evaluate_run_busy_failure_names_the_cuda_error():
    records, series = vn.evaluate_run('fabric', {'rc': 1, 'stdout': fixture('v2.17.8_gh200_busy_failure.txt')}, ['a', 'b'], {})
    assert records == [{'stage': 'nccl', 'node': 'fabric', 'check': 'all_reduce', 'status': 'fail', 'hosts': ['a', 'b'], 'reason':
                        "all_reduce_perf stopped before its first result (rc 1): gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable "
                        "device(s) is/are busy or unavailable' (and 11 more): the GPUs are held by another process or set to an exclusive "
                        "compute mode; no bandwidth was measured"}]
    assert series == []


@pytest.mark.parametrize('kwargs, message', [
    (dict(topology='b300-nvlink-8'), "unknown topology 'b300-nvlink-8'; valid topologies: a100-nvlink-8, a100-pcie, h100-nvlink-8, h100-pcie, "
                                     "h200-nvlink-8, ib-hdr-200, ib-ndr-400, ib-xdr-800, l40s-pcie, or a platform or a curve id of the catalogue, "
     "<platform>/node/<nvls|ring|pcie> or <platform>/rack/nvls, such as h100-nvswitch/node/nvls (platforms: a100-nvswitch, a100-pcie, "
     "b200-nvswitch, b300-nvswitch, gb200-nvl72, gb300-nvl72, h100-nvswitch, h100-pcie, h200-nvl, h200-nvswitch, l40s-pcie, rtx-pro-6000-pcie)"),
    (dict(min_busbw_gbps=-1), 'min_busbw_gbps is -1, expected a number of GB/s above 0'),
    (dict(expect_transport='roce'), "expect_transport is 'roce'; valid values: ib (or leave it unset)"),
])
def test_expect_for_errors(kwargs, message):
    with pytest.raises(ValueError) as err:
        vn.expect_for(**kwargs)
    assert str(err.value) == message


def test_skip_record_and_known_topologies():
    assert vn.skip_record('cluster', 'no CUDA/nccl-tests on this cluster', ['a']) == {
        'stage': 'nccl', 'node': 'cluster', 'check': 'all_reduce', 'status': 'skip', 'reason': 'no CUDA/nccl-tests on this cluster', 'hosts': ['a']}
    assert 'gb200-nvl72' in vn.known_topologies({'gb200-nvl72': 700})


NODES = [{'name': 'gpu-01', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}, {'name': 'gpu-02', 'gpus': 8, 'model': 'NVIDIA A100-SXM4-40GB'},
         {'name': 'ctl', 'gpus': 0, 'model': None}]


def test_plan_jobs_rounds_and_expectations():
    same = [dict(NODES[0]), dict(NODES[1], model='NVIDIA H100 80GB HBM3'), NODES[2]]
    jobs = vn.plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': same, 'env': {'NCCL_DEBUG': 'INFO'}, 'fabric': True,
                         'mpi': '{mpi}', 'fabric_topology': 'ib-ndr-400', 'fabric_nics': 8, 'expect_transport': 'ib'})
    assert [(j['name'], j['kind'], j.get('round')) for j in jobs] == [
        ('gpu-01', 'nccl', 0), ('gpu-02', 'nccl', 0), ('ctl', 'skip', None), ('fabric', 'nccl', 1)]
    # no topology set: the catalogue picks the H100 platform's curve; the env sets no NCCL_ALGO, so NCCL runs NVLS on one node
    assert jobs[0]['expect']['topology'] is None and jobs[0]['expect']['platform'] == 'h100-nvswitch'
    assert [vn.run_curve(job['expect'])['id'] for job in jobs if job['kind'] == 'nccl'] == [
        'h100-nvswitch/node/nvls', 'h100-nvswitch/node/nvls', 'h100-nvswitch/ib-ndr-400x8/ring']
    assert jobs[0]['argv'][-2:] == ['-g', '8'] and '--mpi={mpi}' not in jobs[0]['argv']
    assert jobs[3]['hosts'] == ['gpu-01', 'gpu-02'] and '--mpi={mpi}' in jobs[3]['argv'] and jobs[3]['argv'][-2:] == ['-g', '1']
    assert jobs[3]['expect']['nics'] == 8 and jobs[3]['expect']['expect_transport'] == 'ib'
    assert jobs[2]['reason'] == 'no GPU GRES on ctl'
    assert 'group' not in jobs[3]


def test_plan_jobs_two_gpu_models_are_two_fabric_groups_never_one_run():
    """gpu-01 H100, gpu-02 A100 (the simulated cluster): no run and no gate over both; each group says why it has no run."""
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': NODES, 'fabric': True, 'pairwise': True, 'fabric_topology': 'ib-ndr-400'})
    assert [(j['name'], j['kind']) for j in jobs] == [
        ('gpu-01', 'nccl'), ('gpu-02', 'nccl'), ('ctl', 'skip'), ('fabric:h100-80gb-hbm3', 'skip'), ('fabric:a100-sxm4-40gb', 'skip')]
    assert jobs[3]['hosts'] == ['gpu-01'] and jobs[4]['hosts'] == ['gpu-02']
    assert jobs[3]['reason'].startswith('a fabric run needs at least 2 GPU nodes of one type, fabric group h100-80gb-hbm3 has 1 (gpu-01)')
    assert 'validate_nccl_multinode.group' in jobs[3]['reason']


DGX = [{'name': 'dgx-%02d' % i, 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'} for i in range(1, 5)]
L40S = [{'name': 'l40s-%02d' % i, 'gpus': 8, 'model': 'NVIDIA L40S'} for i in range(1, 3)]


@pytest.mark.parametrize('nodes, plan, want', [
    # (the site) 4 DGX H100 and 2 L40S: one fabric run per type, each over its own nodes with its own gate
    (DGX + L40S, {}, [('fabric:h100-80gb-hbm3', [n['name'] for n in DGX]), ('fabric:l40s', ['l40s-01', 'l40s-02'])]),
    # interleaved in the inventory: the groups keep the order first met, each its nodes in order
    ([DGX[0], L40S[0], DGX[1], L40S[1]], {}, [('fabric:h100-80gb-hbm3', ['dgx-01', 'dgx-02']), ('fabric:l40s', ['l40s-01', 'l40s-02'])]),
    # one type: the run keeps its name
    (DGX, {}, [('fabric', [n['name'] for n in DGX])]),
    # validate_nccl_multinode.group puts nodes of two models in one group on purpose (one run, named fabric)
    ([dict(n, fabric_group='all') for n in DGX[:2] + L40S], {}, [('fabric', ['dgx-01', 'dgx-02', 'l40s-01', 'l40s-02'])]),
    # ... or splits one model over two fabrics (two rails, two IB islands)
    ([dict(DGX[0], fabric_group='isle-a'), dict(DGX[1], fabric_group='isle-a'), dict(DGX[2], fabric_group='isle-b'),
      dict(DGX[3], fabric_group='isle-b')], {}, [('fabric:isle-a', ['dgx-01', 'dgx-02']), ('fabric:isle-b', ['dgx-03', 'dgx-04'])]),
])
def test_fabric_runs_per_node_type(nodes, plan, want):
    jobs = vn.plan_jobs(dict({'binary': 'arp', 'nodes': nodes, 'fabric': True}, **plan))
    assert [(j['name'], j['hosts']) for j in jobs if j.get('round') == 1] == want


def test_each_fabric_group_has_its_own_gate():
    nodes = [dict(n, fabric_topology='ib-ndr-400', fabric_nics=8) for n in DGX] + [dict(n, fabric_min_busbw_gbps=5.0) for n in L40S]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'fabric': True, 'fabric_nics': 1})
    fabric = dict((j['name'], j['expect']) for j in jobs if j.get('round') == 1)
    assert (fabric['fabric:h100-80gb-hbm3']['topology'], fabric['fabric:h100-80gb-hbm3']['nics']) == ('ib-ndr-400', 8)
    assert fabric['fabric:h100-80gb-hbm3']['min_busbw_gbps'] is None
    assert (fabric['fabric:l40s']['topology'], fabric['fabric:l40s']['min_busbw_gbps'], fabric['fabric:l40s']['nics']) == (None, 5.0, 1)
    # the per-node runs: the L40S nodes get the PCIe curve, the DGX the NVLink one
    assert [vn.run_curve(j['expect'])['id'] for j in jobs if j.get('round') == 0] == ['h100-nvswitch/node/nvls'] * 4 + ['l40s-pcie/node/pcie'] * 2
    assert vn.run_curve(fabric['fabric:h100-80gb-hbm3'])['id'] == 'h100-nvswitch/ib-ndr-400x8/ring'
    assert vn.run_curve(fabric['fabric:l40s'])['id'] == 'min_busbw_gbps'


def test_pairs_stay_inside_their_group_and_the_isolation_runs_only_the_failed_groups():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': DGX + L40S, 'fabric': True, 'pairwise': True})
    pairs = [(j['name'], j['group']) for j in jobs if j.get('round', 0) >= 2]
    assert pairs == [('dgx-01+dgx-02', 'h100-80gb-hbm3'), ('dgx-03+dgx-04', 'h100-80gb-hbm3'), ('dgx-02+dgx-03', 'h100-80gb-hbm3'),
                     ('dgx-04+dgx-01', 'h100-80gb-hbm3')]  # (two L40S: their fabric run is their one pair)
    follow = vn.plan_jobs({'binary': 'arp', 'nodes': DGX + L40S, 'fabric': True, 'pairs_only': True, 'pairs_groups': ['l40s']})
    assert [j['name'] for j in follow] == ['l40s-01+l40s-02']
    every = vn.plan_jobs({'binary': 'arp', 'nodes': DGX + L40S, 'fabric': True, 'pairs_only': True, 'pairs_groups': ['']})
    assert len(every) == 5
    # one group: pairs_groups [''] (the failed run named fabric) runs its pairs
    one = vn.plan_jobs({'binary': 'arp', 'nodes': DGX, 'fabric': True, 'pairs_only': True, 'pairs_groups': ['']})
    assert len(one) == 4 and all('group' not in j for j in one)


@pytest.mark.parametrize('nodes, message', [
    ([dict(DGX[0], fabric_topology='ib-ndr-400'), dict(DGX[1], fabric_topology='ib-hdr-200')],
     "fabric group h100-80gb-hbm3: validate_nccl_multinode.topology is 'ib-ndr-400' on dgx-01 but 'ib-hdr-200' on dgx-02; expected one value"),
    ([dict(DGX[0], fabric_nics=8), dict(DGX[1], fabric_nics=4)],
     "fabric group h100-80gb-hbm3: validate_nccl_multinode.nics is 8 on dgx-01 but 4 on dgx-02"),
    ([dict(DGX[0], fabric_group='isle a'), DGX[1]], "nodes[0].fabric_group is 'isle a', expected a fabric group name"),
])
def test_fabric_group_input_is_refused_naming_nodes_and_variable(nodes, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'fabric': True})
    assert message in str(err.value)


@pytest.mark.parametrize('model, group', [
    ('NVIDIA H100 80GB HBM3', 'h100-80gb-hbm3'), ('NVIDIA A100-SXM4-40GB', 'a100-sxm4-40gb'), ('NVIDIA L40S', 'l40s'),
    ('NVIDIA A100 80GB PCIe', 'a100-80gb-pcie'), ('', 'unknown'), (None, 'unknown'), ('Tesla V100-SXM2-32GB', 'tesla-v100-sxm2-32gb'),
    ('(H100) ', 'h100'), ('--', 'unknown'),
])
def test_model_group(model, group):
    assert vn.model_group(model) == group


@pytest.mark.parametrize('types, node_gres, fabric_gres', [
    (('h100', 'a100'), ['--gres=gpu:h100:7', '--gres=gpu:a100:8'], '--gres=gpu:7'),   # mixed types: the fabric run asks for any GPU
    (('h100', 'h100'), ['--gres=gpu:h100:7', '--gres=gpu:h100:8'], '--gres=gpu:h100:7'),
    (('', ''), ['--gres=gpu:7', '--gres=gpu:8'], '--gres=gpu:7'),                       # untyped GRES
])
def test_plan_jobs_ask_for_whole_gpus_by_type(types, node_gres, fabric_gres):
    # gpu-01 has 7 whole GPUs (and MIG instances, not counted): asked for by type so Slurm gives no MIG instance
    nodes = [{'name': 'gpu-01', 'gpus': 7, 'model': 'm', 'gres_type': types[0]}, {'name': 'gpu-02', 'gpus': 8, 'model': 'm', 'gres_type': types[1]}]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'fabric': True})
    assert [[a for a in j['argv'] if a.startswith('--gres=')] for j in jobs] == [[node_gres[0]], [node_gres[1]], [fabric_gres]]


def test_plan_jobs_multi_node_run_without_exclusive_when_untyped_on_a_mixed_node():
    mixed = [{'name': 'gpu-01', 'gpus': 7, 'gres_type': 'h100', 'gres_types': 2}, {'name': 'gpu-02', 'gpus': 8, 'gres_type': 'a100', 'gres_types': 1}]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': mixed, 'fabric': True})
    assert ['--exclusive' in j['argv'] for j in jobs] == [True, True, False]
    same = [dict(n, gres_type='h100') for n in mixed]
    assert ['--exclusive' in j['argv'] for j in vn.plan_jobs({'binary': 'arp', 'nodes': same, 'fabric': True})] == [True, True, True]
    plain = [dict(n, gres_types=1) for n in mixed]
    assert ['--exclusive' in j['argv'] for j in vn.plan_jobs({'binary': 'arp', 'nodes': plain, 'fabric': True})] == [True, True, True]


def test_plan_jobs_per_node_gates_over_the_plans():
    nodes = [{'name': 'a', 'gpus': 7, 'model': 'NVIDIA H100 80GB HBM3', 'min_busbw_gbps': 300},
             {'name': 'b', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'},
             {'name': 'c', 'gpus': 8, 'model': 'x', 'topology': 'a100-nvlink-8'}]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'node_min_busbw_gbps': 100})
    assert [(j['expect']['topology'], j['expect']['min_busbw_gbps'], j['expect'].get('platform')) for j in jobs] == [
        (None, 300.0, None), (None, 100.0, 'h100-nvswitch'), ('a100-nvlink-8', 100.0, 'a100-nvswitch')]


def test_plan_jobs_pairwise_and_small_clusters():
    four = [{'name': 'n%d' % i, 'gpus': 4, 'model': 'x'} for i in range(4)]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': four, 'pairwise': True, 'fabric': True})
    assert [(j['name'], j['round']) for j in jobs if j['round'] >= 2] == [('n0+n1', 2), ('n2+n3', 2), ('n1+n2', 3), ('n3+n0', 3)]
    one = vn.plan_jobs({'binary': 'arp', 'nodes': four[:1], 'fabric': True})
    assert one[-1] == {'name': 'fabric', 'kind': 'skip', 'check': 'all_reduce', 'reason': 'a fabric run needs at least 2 GPU nodes, there are 1'}


@pytest.mark.parametrize('plan, message', [
    ([], 'the NCCL plan must be a dict with keys binary, nodes, env'),
    ({'binary': 'x', 'gpus': 8}, 'unknown NCCL plan key(s) gpus; valid keys: binary, nodes, env'),
    ({'nodes': []}, 'the NCCL plan needs binary: the path of all_reduce_perf on the nodes'),
    ({'binary': 'x', 'nodes': ['gpu-01']}, "NCCL plan nodes must be a list of {name, gpus, model}, got ['gpu-01']"),
    ({'binary': 'x', 'nodes': NODES[:1], 'node_topology': 'h900'}, "unknown topology 'h900'; valid topologies: "),
])
def test_plan_jobs_errors(plan, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs(plan)
    assert str(err.value).startswith(message)


def test_plan_jobs_missing_binary():
    nodes = [dict(NODES[0], present=False), dict(NODES[1], present=False)]
    assert vn.plan_jobs({'binary': '/opt/nccl-tests/build/all_reduce_perf', 'nodes': nodes, 'fabric': True}) == [
        {'name': 'cluster', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['gpu-01', 'gpu-02'],
         'reason': 'no CUDA/nccl-tests on this cluster: /opt/nccl-tests/build/all_reduce_perf not found on gpu-01, gpu-02'}]
    some = vn.plan_jobs({'binary': 'arp', 'nodes': [NODES[0], dict(NODES[1], present=False)], 'fabric': True,
                         'srun_extra': ['--container-image=nccl.sqsh']})
    assert some[0] == {'name': 'gpu-02', 'kind': 'skip', 'status': 'fail', 'check': 'all_reduce', 'hosts': ['gpu-02'],
                       'reason': 'arp not found on gpu-02 (other nodes have it)'}
    assert some[1]['argv'][-10:-8] == ['--container-image=nccl.sqsh', 'arp']
    assert some[2] == {'name': 'fabric', 'kind': 'skip', 'check': 'all_reduce', 'reason': 'a fabric run needs at least 2 GPU nodes, there are 1'}


def test_plan_jobs_unusable_nodes_are_skipped():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [dict(NODES[0], usable=False), NODES[1]], 'fabric': True})
    assert [(j['name'], j['kind']) for j in jobs] == [('gpu-01', 'skip'), ('gpu-02', 'nccl'), ('fabric', 'skip')]
    assert jobs[0]['reason'] == 'not run: gpu-01 cannot take jobs (see its node_state check)'


def test_pairs_are_isolated_per_fabric_group():
    """A slow L40S pair is judged against L40S pairs only: the DGX pairs' busbw (ten times more) makes no L40S pair slow."""
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_jobs import judge_pairs
    jobs = [{'name': 'dgx-01+dgx-02', 'kind': 'nccl', 'round': 2, 'hosts': ['dgx-01', 'dgx-02'], 'group': 'h100-80gb-hbm3'},
            {'name': 'l40s-01+l40s-02', 'kind': 'nccl', 'round': 2, 'hosts': ['l40s-01', 'l40s-02'], 'group': 'l40s'}]
    records = [{'stage': 'nccl', 'node': 'dgx-01+dgx-02', 'check': 'busbw', 'status': 'pass', 'value': 300.0, 'hosts': ['dgx-01', 'dgx-02']},
               {'stage': 'nccl', 'node': 'l40s-01+l40s-02', 'check': 'busbw', 'status': 'pass', 'value': 20.0, 'hosts': ['l40s-01', 'l40s-02']}]
    found = judge_pairs(jobs, records, {'nccl': {}})
    assert [(r['node'], r['status']) for r in found] == [('pairs:h100-80gb-hbm3', 'pass'), ('pairs:l40s', 'pass')]
    assert found[1]['reason'].endswith('(fabric group l40s)')


# === edge cases (formerly test_validation_nccl_edges.py): The NCCL stage's whole job plan, its defaults and boundaries, and runs whose output is partial or
# not nccl-tests output (_validation_nccl).


# ------------------------------------------------------------------ evaluate_run


@pytest.mark.parametrize('stdout, expected', [
    # any one part of nccl-tests output is gated (its 'complete' check says what is missing), not called "no results"
    (part(0, 0), {'complete': 'fail', 'single_run': 'pass', 'wrong': 'skip'}),         # only the '# nThread' head
    (part(3, 10), {'complete': 'fail', 'single_run': 'skip', 'wrong': 'skip'}),        # only the '# Rank' lines
    (part(15, 20), {'complete': 'fail', 'single_run': 'skip', 'wrong': 'pass'}),       # only result rows
])
def test_evaluate_run_gates_any_part_of_the_output(stdout, expected):
    records, dummy = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': stdout}, ['gpu-01'], {})
    got = statuses(records)
    assert dict((check, got[check]) for check in expected) == expected
    assert 'all_reduce' not in got


def test_evaluate_run_of_rows_only_has_their_series():
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': part(15, 20)}, ['gpu-01'], {})
    assert [point[0] for point in series[0]['points']] == [2 ** k for k in range(27, 33)]


def test_evaluate_run_without_result_rows_has_no_series():
    records, series = vn.evaluate_run('gpu-01', {'rc': 0, 'stdout': part(21, 22)}, ['gpu-01'], {})
    assert statuses(records)['out_of_bounds'] == 'pass'
    assert series == []


def test_evaluate_run_of_a_json_report_without_stdout():
    result = {'rc': 0, 'stdout': '', 'json': fixture('v2.18.3_h200_two_nodes.json')}
    records, series = vn.evaluate_run('fabric', result, ['a', 'b'], {})
    assert statuses(records) == {'complete': 'pass', 'single_run': 'pass', 'test_errors': 'pass', 'wrong': 'pass', 'out_of_bounds': 'pass',
                                 'busbw': 'skip', 'transport': 'skip'}
    assert [r['reason'] for r in records if r['check'] == 'single_run'] == ['one run of 16 rank(s)']
    assert series[0]['label'] == 'fabric' and series[0]['points'][-1] == [17179869184, 485.59] and len(series[0]['points']) == 25


@pytest.mark.parametrize('rc, exit_record', [
    (3, [{'stage': 'nccl', 'node': 'gpu-01', 'check': 'exit', 'status': 'fail', 'reason': 'all_reduce_perf exited with rc 3', 'hosts': ['gpu-01'],
          'curve': vn.run_curve({})}]),
    (0, []),
    (None, []),
])
def test_evaluate_run_exit_code_of_a_clean_run(rc, exit_record):
    records, dummy = vn.evaluate_run('gpu-01', {'rc': rc, 'stdout': fixture('v2.13-era_h100_single_node.txt')}, ['gpu-01'], {})
    assert [r for r in records if r['status'] == 'fail'] == exit_record


# ------------------------------------------------------------------ expect_for, srun_argv


@pytest.mark.parametrize('kwargs, expect', [
    ({}, {'topology': None, 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 1, 'expect_transport': None}),
    ({'large_size_bytes': 2 ** 30, 'topology': 'ib-ndr-400', 'nics': 8},
     {'topology': 'ib-ndr-400', 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 8, 'expect_transport': None, 'large_size_bytes': 2 ** 30}),
])
def test_expect_for(kwargs, expect):
    assert vn.expect_for(**kwargs) == expect


@pytest.mark.parametrize('gpus, message', [
    (True, 'gpus_per_node is True, expected a whole number of at least 1'),
    (8.0, 'gpus_per_node is 8.0, expected a whole number of at least 1'),
    ('8', "gpus_per_node is '8', expected a whole number of at least 1"),
    (-1, 'gpus_per_node is -1, expected a whole number of at least 1'),
])
def test_srun_argv_gpus_per_node_errors(gpus, message):
    with pytest.raises(ValueError) as err:
        vn.srun_argv('arp', ['a'], gpus, False, None, {})
    assert str(err.value) == message


def test_srun_argv_one_gpu():
    assert vn.srun_argv('arp', ['a'], 1, False, None, {}, args=[], exclusive=False) == [
        'srun', '--nodes=1', '--nodelist=a', '--gres=gpu:1', '--time=10', '--export=ALL', '--label', '--ntasks-per-node=1', 'arp', '-g', '1']


# ------------------------------------------------------------------ plan_jobs


def argv_text(job):
    return ' '.join(job['argv']) if 'argv' in job else None


def test_plan_jobs_whole_plan():
    """Every plan option set; node z has no GPU, c lacks the binary, d cannot take jobs; a, b, e share the GRES type h100."""
    # (a, b and e: one GPU model, so one fabric group)
    nodes = [{'name': 'a', 'gpus': '2', 'model': 'm', 'gres_type': 'h100'}, {'name': 'z', 'gpus': 0},
             {'name': 'b', 'gpus': 4, 'model': 'm', 'gres_type': 'h100'}, {'name': 'c', 'gpus': 4, 'present': 'no'},
             {'name': 'd', 'gpus': 2, 'usable': False}, {'name': 'e', 'gpus': 2, 'model': 'm', 'gres_type': 'h100'}]
    plan = {'binary': 'arp', 'nodes': nodes, 'fabric': True, 'pairwise': True, 'args': ['-b', '1M'], 'srun': '/usr/bin/srun', 'timeout': 900,
            'time_limit': '5', 'env': {'NCCL_DEBUG': 'WARN'}, 'srun_extra': ['--container-image=x'], 'mpi': 'pmix', 'thresholds': {'t1': 50.0},
            'node_topology': 't1', 'fabric_topology': 't2', 'fabric_nics': 2, 'fabric_min_busbw_gbps': 40, 'expect_transport': 'ib'}
    plan['thresholds']['t2'] = 60.0
    jobs = vn.plan_jobs(plan)
    node_expect = {'topology': 't1', 'min_busbw_gbps': None, 'thresholds': {'t1': 50.0, 't2': 60.0}, 'nics': 1, 'expect_transport': None}
    multi_expect = {'topology': 't2', 'min_busbw_gbps': 40, 'thresholds': {'t1': 50.0, 't2': 60.0}, 'nics': 2, 'expect_transport': 'ib'}
    # each multi-node run's expectation carries its node count; the two-node (pair) runs are given NCCL_ALGO=Ring
    fabric_expect, pair_expect = dict(multi_expect, nodes=3), dict(multi_expect, nodes=2)
    head = '/usr/bin/srun --nodes=%d --nodelist=%s --gres=gpu:h100:%d --exclusive --time=5 --export=ALL,%sNCCL_DEBUG=WARN --label'
    node_run = head + ' --ntasks-per-node=1 --container-image=x arp -b 1M -g %d'
    multi_run = head + ' --ntasks-per-node=2 --mpi=pmix --container-image=x arp -b 1M -g 1'
    assert [(j['name'], j['kind'], j.get('round'), j.get('hosts'), j.get('timeout'), j.get('expect'), argv_text(j)) for j in jobs] == [
        ('d', 'skip', None, ['d'], None, None, None),
        ('c', 'skip', None, ['c'], None, None, None),
        ('a', 'nccl', 0, ['a'], 900, node_expect, node_run % (1, 'a', 2, '', 2)),
        ('z', 'skip', None, ['z'], None, None, None),
        ('b', 'nccl', 0, ['b'], 900, node_expect, node_run % (1, 'b', 4, '', 4)),
        ('e', 'nccl', 0, ['e'], 900, node_expect, node_run % (1, 'e', 2, '', 2)),
        ('fabric', 'nccl', 1, ['a', 'b', 'e'], 900, fabric_expect, multi_run % (3, 'a,b,e', 2, '')),
        ('a+b', 'nccl', 2, ['a', 'b'], 900, pair_expect, multi_run % (2, 'a,b', 2, 'NCCL_ALGO=Ring,')),
        ('b+e', 'nccl', 3, ['b', 'e'], 900, pair_expect, multi_run % (2, 'b,e', 2, 'NCCL_ALGO=Ring,')),
        ('e+a', 'nccl', 4, ['e', 'a'], 900, pair_expect, multi_run % (2, 'e,a', 2, 'NCCL_ALGO=Ring,')),
    ]
    skips = [j for j in jobs if j['kind'] == 'skip']
    assert skips == [
        {'name': 'd', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['d'], 'reason': 'not run: d cannot take jobs (see its node_state check)'},
        {'name': 'c', 'kind': 'skip', 'status': 'fail', 'check': 'all_reduce', 'hosts': ['c'], 'reason': 'arp not found on c (other nodes have it)'},
        {'name': 'z', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['z'], 'reason': 'no GPU GRES on z'},
    ]


def test_plan_jobs_defaults():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'a', 'gpus': '8'}, {'name': 'b', 'gpus': 8}], 'fabric': True})
    expect = {'topology': None, 'min_busbw_gbps': None, 'thresholds': {}, 'nics': 1, 'expect_transport': None}
    assert [(j['name'], j['round'], j['timeout'], j['expect'], argv_text(j)) for j in jobs] == [
        ('a', 0, 600, expect, 'srun --nodes=1 --nodelist=a --gres=gpu:8 --exclusive --time=10 --export=ALL --label --ntasks-per-node=1 '
                              'arp -b 8 -e 8G -f 2 -g 8'),
        ('b', 0, 600, expect, 'srun --nodes=1 --nodelist=b --gres=gpu:8 --exclusive --time=10 --export=ALL --label --ntasks-per-node=1 '
                              'arp -b 8 -e 8G -f 2 -g 8'),
        # a fabric run over two nodes: NCCL_ALGO=Ring (the plan's env has none) and its node count
        ('fabric', 1, 600, dict(expect, nodes=2), 'srun --nodes=2 --nodelist=a,b --gres=gpu:8 --exclusive --time=10 --export=ALL,NCCL_ALGO=Ring '
                                                  '--label --ntasks-per-node=8 arp -b 8 -e 8G -f 2 -g 1'),
    ]


def test_plan_jobs_a_node_with_one_gpu_is_a_gpu_node():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'a', 'gpus': 1}, {'name': 'b', 'gpus': 8}], 'fabric': True})
    assert [(j['name'], j['kind'], j['hosts']) for j in jobs] == [('a', 'nccl', ['a']), ('b', 'nccl', ['b']), ('fabric', 'nccl', ['a', 'b'])]
    assert [job['argv'][-1] for job in jobs] == ['1', '8', '1']
    assert '--ntasks-per-node=1' in jobs[2]['argv']


def test_plan_jobs_without_gpu_nodes():
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': [{'name': 'ctl', 'gpus': None}, {'name': 'login'}], 'fabric': True, 'pairwise': True})
    assert jobs == [
        {'name': 'ctl', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['ctl'], 'reason': 'no GPU GRES on ctl'},
        {'name': 'login', 'kind': 'skip', 'check': 'all_reduce', 'hosts': ['login'], 'reason': 'no GPU GRES on login'},
        {'name': 'fabric', 'kind': 'skip', 'check': 'all_reduce', 'reason': 'a fabric run needs at least 2 GPU nodes, there are 0'},
    ]


@pytest.mark.parametrize('count, pairs', [
    (2, []),                                                       # two nodes: the fabric run is their pair
    (3, [('n0+n1', 2), ('n1+n2', 3), ('n2+n0', 4)]),
])
def test_plan_jobs_pairwise_needs_three_nodes(count, pairs):
    nodes = [{'name': 'n%d' % i, 'gpus': 8} for i in range(count)]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'pairwise': True})
    assert [(j['name'], j['round']) for j in jobs if j['round'] >= 2] == pairs


def test_plan_jobs_pairs_on_mixed_untyped_nodes_go_without_exclusive():
    nodes = [{'name': 'n0', 'gpus': 7, 'gres_types': 2}, {'name': 'n1', 'gpus': 8}, {'name': 'n2', 'gpus': 8, 'gres_types': '1'}]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'pairwise': True, 'fabric': True})
    assert [(j['name'], '--exclusive' in j['argv'], [a for a in j['argv'] if a.startswith('--gres')]) for j in jobs] == [
        ('n0', True, ['--gres=gpu:7']), ('n1', True, ['--gres=gpu:8']), ('n2', True, ['--gres=gpu:8']),
        ('fabric', False, ['--gres=gpu:7']), ('n0+n1', False, ['--gres=gpu:7']), ('n1+n2', False, ['--gres=gpu:7']), ('n2+n0', False, ['--gres=gpu:7'])]


@pytest.mark.parametrize('plan, message', [
    ({'binary': 'x', 'gpus': 8, 'cores': 4}, 'unknown NCCL plan key(s) cores, gpus; valid keys: binary, nodes, env, args, timeout, time_limit, srun, '
                                             'srun_extra, node_topology, node_min_busbw_gbps, fabric, fabric_topology, fabric_nics, '
                                             'fabric_min_busbw_gbps, expect_transport, thresholds, pairwise, mpi, pairs_only, leaf_of, gate_curves, '
                                             'dispatch, dispatch_min_nodes, allocation_wait, salloc, scancel, pairs_groups, json, tests_version'),
    ({'binary': 'x', 'nodes': [{'name': 'gpu-01', 'gpus': 'eight'}]}, "node gpu-01: gpus is 'eight', expected a whole number"),
    ({'binary': 'x', 'nodes': [{'name': 'gpu-01', 'gpus': [8]}]}, 'node gpu-01: gpus is [8], expected a whole number'),
    ({'binary': 'x', 'nodes': [{'name': 'gpu-01', 'gpus': 8}], 'srun_extra': '--exclusive'}, "srun_extra is '--exclusive', expected a list"),
])
def test_plan_jobs_error_messages(plan, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs(plan)
    assert str(err.value) == message


H100_PAIR = [{'name': 'gpu-01', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}, {'name': 'gpu-02', 'gpus': 8, 'model': 'NVIDIA H100 80GB HBM3'}]


@pytest.mark.parametrize('extra, message', [
    # checked before any job is made, even where no multi-node run would use it
    ({'pairs_groups': [5]}, 'pairs_groups[0] is 5, expected a string'),
    ({'mpi': 'PMIx!'}, "mpi is 'PMIx!', expected a Slurm MPI plugin type such as pmix, pmi2 or none, or {mpi} (the module picks one)"),
    ({'fabric': True, 'fabric_min_busbw_gbps': -1, 'nodes': [dict(n, fabric_min_busbw_gbps=100) for n in H100_PAIR]},
     'min_busbw_gbps is -1, expected a number of GB/s above 0'),
    ({'tests_version': 2.19}, 'tests_version is 2.19, expected a string'),
    ({'args': ['-b', 5]}, 'args[1] is 5, expected a string'),
    ({'fabric': True, 'fabric_topology': 'h900', 'nodes': [dict(n, fabric_topology='ib-ndr-400') for n in H100_PAIR]},
     "unknown topology 'h900'; valid topologies: a100-nvlink-8, a100-pcie, h100-nvlink-8, h100-pcie, h200-nvlink-8, ib-hdr-200, ib-ndr-400, "
     "ib-xdr-800, l40s-pcie, or a platform or a curve id of the catalogue, <platform>/node/<nvls|ring|pcie> or <platform>/rack/nvls, such as "
     "h100-nvswitch/node/nvls (platforms: " + ", ".join(sorted(bb.PLATFORMS)) + ")"),
])
def test_plan_settings_are_checked_even_where_no_run_uses_them(extra, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs(dict({'binary': 'arp', 'nodes': H100_PAIR}, **extra))
    assert str(err.value) == message


@pytest.mark.parametrize('extra', [{'pairs_groups': ['', 'h100']}, {'tests_version': ''}, {'mpi': 'pmi2'}, {'mpi': '{mpi}'}])
def test_plan_settings_that_are_accepted(extra):
    jobs = vn.plan_jobs(dict({'binary': 'arp', 'nodes': H100_PAIR}, **extra))
    assert [(job['name'], job['kind'], 'json' in job) for job in jobs] == [('gpu-01', 'nccl', False), ('gpu-02', 'nccl', False)]


@pytest.mark.parametrize('value, name, message', [
    ('A b', None, "mpi is 'A b', expected a Slurm MPI plugin type such as pmix, pmi2 or none, or {mpi} (the module picks one)"),
    ('', 'validate_nccl_multinode.mpi', "validate_nccl_multinode.mpi is '', expected a Slurm MPI plugin type such as pmix, pmi2 or none, or {mpi} "
                                        "(the module picks one)"),
])
def test_check_mpi_messages(value, name, message):
    with pytest.raises(ValueError) as err:
        vn.check_mpi(value) if name is None else vn.check_mpi(value, name)
    assert str(err.value) == message


@pytest.mark.parametrize('env, algorithm, curve', [
    ({'NCCL_ALGO': 'Ring'}, 'ring', 'h100-nvswitch/node/ring'), ({}, 'auto', 'h100-nvswitch/node/nvls'), (None, 'auto', 'h100-nvswitch/node/nvls'),
])
def test_a_nodes_own_run_is_gated_by_the_curve_of_its_nccl_algo(env, algorithm, curve):
    job = vn.plan_jobs({'binary': 'arp', 'nodes': H100_PAIR[:1], 'env': env})[0]
    assert (job['expect']['algorithm'], vn.run_curve(job['expect'])['id']) == (algorithm, curve)


NAME_RULE = 'letters, digits, "_", "-" and "." (no spaces, commas or "="), starting with a letter or digit, at most 64 characters'


@pytest.mark.parametrize('nodes, message', [
    ([{'name': 'gpu 01', 'gpus': 8}], "nodes[0].name is 'gpu 01', expected a Slurm node name: " + NAME_RULE),
    ([{'name': 'gpu-01', 'gpus': 8}, {'name': 'a,b', 'gpus': 8}], "nodes[1].name is 'a,b', expected a Slurm node name: " + NAME_RULE),
    ([{'name': 'gpu-01', 'gpus': 8, 'gres_type': 'h 100'}], "nodes[0].gres_type is 'h 100', expected a GRES type such as h100: " + NAME_RULE),
])
def test_node_names_and_gres_types_are_refused_naming_the_node(nodes, message):
    with pytest.raises(ValueError) as err:
        vn.plan_jobs({'binary': 'arp', 'nodes': nodes})
    assert str(err.value) == message


def test_a_fabric_group_takes_its_platform_from_the_nodes_topology_key():
    """Nodes of a GPU model the catalogue does not know, whose topology key names a platform: the fabric curve is capped by that
    platform's own Ring figure, as for nodes the catalogue knows."""
    nodes = [{'name': 'gpu-0%d' % i, 'gpus': 8, 'model': 'Mystery GPU', 'topology': 'h100-nvlink-8'} for i in (1, 2)]
    jobs = vn.plan_jobs({'binary': 'arp', 'nodes': nodes, 'fabric': True, 'fabric_topology': 'ib-ndr-400', 'fabric_nics': 8})
    assert [(job['name'], vn.run_curve(job['expect'])['id']) for job in jobs] == [
        ('gpu-01', 'h100-nvswitch/node/ring'), ('gpu-02', 'h100-nvswitch/node/ring'), ('fabric', 'h100-nvswitch/ib-ndr-400x8/ring')]


def test_known_topologies_add_the_sites_thresholds_and_curves():
    known = vn.known_topologies(thresholds={'site-flat': 10}, gate_curves={'site-curve': [['8G', 1]]})
    assert 'site-flat' in known and 'site-curve' in known and 'h100-nvswitch/node/nvls' in known and known == sorted(known)
