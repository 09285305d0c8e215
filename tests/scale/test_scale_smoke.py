# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The emulated large cluster at its smallest benchmark size, as CI's smoke test (issue #23; docs/scale.md).

64 emulated GPU nodes (real slurmd each, its own address and host name) behind a real slurmctld, configured by
the slurm role's own filters (scripts/lib/scale_fleet.py); the collection's controller-side modules run on it
through ansible-playbook (benchmarks/scale/controller.yml): the validation's NCCL stage (all_reduce_perf
STAND-IN on every node at once), the resume of drained nodes, and the pair rounds that name a slow node and a
slow leaf.  What each test asserts is what an admin sees: sinfo, scontrol, the records of the report.

Needs root and podman (CI's machines): ``bash scripts/test.sh scale``; skipped elsewhere unless
GPUCLUSTER_REQUIRE_SCALE=1 (the test command sets it) makes a missing podman a failure.
"""

from __future__ import absolute_import, division, print_function

import importlib.util
import json
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODES = 64

_spec = importlib.util.spec_from_file_location('scale_benchmark', os.path.join(ROOT, 'benchmarks', 'scale.py'))
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)

if not (shutil.which('podman') and os.geteuid() == 0):
    if os.environ.get('GPUCLUSTER_REQUIRE_SCALE') == '1':
        raise RuntimeError('the scale smoke test needs root and podman (bash scripts/cluster.sh deps)')
    pytestmark = pytest.mark.skip(reason='needs root and podman')


@pytest.fixture(scope='module')
def fleet():
    up = scale.sh(['bash', scale.SCALE, 'up', str(NODES)])
    steps = dict((s['step'], s) for s in (json.loads(line) for line in up.stdout.splitlines() if line.startswith('{')))
    with open(os.path.join(scale.OUT, 'fleet.json')) as handle:
        data = json.load(handle)
    data['steps'] = steps
    yield data
    scale.sh(['bash', scale.SCALE, 'down'], check=False)


def test_every_node_registers_with_the_generated_configuration(fleet):
    assert scale.node_count('idle') == NODES
    generation = fleet['steps']['generate']['detail']
    # identical nodes share one NodeName line: three node types, three lines
    assert generation['slurm_conf_node_lines'] == 3
    with open(os.path.join(scale.OUT, 'slurm.conf')) as handle:
        conf = handle.read()
    assert 'NodeName=gpu-[0001-0032] CPUs=224' in conf and 'Gres=gpu:a100:2,gpu:1g.10gb:14' in conf
    # what slurmctld made of it: the MIG node's GRES as slurm_gres_facts found them on the simulated GPUs
    node = scale.ctl('scontrol', 'show', 'node', 'gpu-0064').stdout
    # (with the socket of each GPU's cores, from gres.conf's Cores=)
    assert 'Gres=gpu:a100:2(S:0),gpu:1g.10gb:14(S:1)' in node and 'State=IDLE' in node, node


def test_a_job_on_every_node_sees_its_own_gpus(fleet):
    out = scale.ctl('srun', '-N%d' % NODES, '--ntasks-per-node=1', '--gres=gpu:2', '-l', 'sh', '-c',
                    'echo $(hostname) $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES').stdout
    lines = sorted(line.split(':', 1)[1].split() for line in out.splitlines())
    assert lines == [['gpu-%04d' % i, 'gpu-%04d' % i, '0,1'] for i in range(1, NODES + 1)]


def test_the_validation_runs_all_reduce_perf_on_every_node(fleet):
    scale.playbook('validate', {'scale_nccl_plan': scale.plan(fleet)})
    with open(os.path.join(scale.OUT, 'nccl-results.json')) as handle:
        results = json.load(handle)
    records = results['records']
    # 64 per-node runs: the role's default (auto) makes them steps of one allocation per node type, 3 jobs in all
    assert [(a['name'], a['nodes'], bool(a['job_id'])) for a in results['allocations']] == [
        ('gpu:h100:8 on 32 nodes', 32, True), ('gpu:a100:8 on 16 nodes', 16, True), ('gpu:a100:2 on 16 nodes', 16, True)]
    # what slurmctld holds after the stage: the three jobs, ended (cancelled once their steps were done), none left running
    assert scale.ctl('squeue', '-h', '-o', '%i').stdout.split() == []
    busbw = dict((r['node'], (r['status'], r['reason'][:40])) for r in records if r['check'] == 'busbw')
    # gated: the H100 and A100 SXM nodes; the seed-003 nodes (two whole A100 PCIe GPUs) have no built-in gate
    gated = [n['name'] for n in fleet['nodes'] if n['type'] != 'a100-mig']
    assert len(gated) == 48
    assert busbw == dict((n['name'], ('pass', busbw[n['name']][1]) if n['name'] in gated
                          else ('skip', 'not checked: no busbw threshold (set top')) for n in fleet['nodes'])
    assert [r for r in records if r['status'] == 'fail'] == []


def test_a_busy_node_holds_up_only_its_own_run(fleet):
    # a job holds gpu-0001: its node type's allocation is not granted within allocation_wait, so it is asked again
    # for the 31 idle H100 nodes, and gpu-0001's run goes as a job of its own, which waits until its time-out;
    # every other node's run passes
    blocker = scale.ctl('sbatch', '--parsable', '-w', 'gpu-0001', '--exclusive', '--time=5', '--wrap', 'sleep 300').stdout.strip()
    try:
        scale.wait_for(lambda: 'gpu-0001' in scale.ctl('squeue', '-h', '-t', 'R', '-o', '%N').stdout, 60)
        scale.playbook('validate', {'scale_nccl_plan': dict(scale.plan(fleet), allocation_wait=3, timeout=30)})
    finally:
        scale.ctl('scancel', blocker, check=False)
    with open(os.path.join(scale.OUT, 'nccl-results.json')) as handle:
        results = json.load(handle)
    allocations = results['allocations']
    assert [(a['name'], a['nodes'], bool(a['job_id'])) for a in allocations] == [
        ('gpu:h100:8 on 32 nodes', 32, False), ('gpu:h100:8 on 31 idle nodes', 31, True),
        ('gpu:a100:8 on 16 nodes', 16, True), ('gpu:a100:2 on 16 nodes', 16, True)]
    assert 'Unable to allocate resources' in allocations[0]['refused'], allocations
    failed = [(r['node'], r['check'], r['reason']) for r in results['records'] if r['status'] == 'fail']
    assert failed == [('gpu-0001', 'all_reduce', 'all_reduce_perf timed out after 30s')]
    assert len([r for r in results['records'] if r['check'] == 'busbw' and r['status'] == 'pass']) == 47
    scale.wait_for(lambda: scale.node_count('idle') == NODES, 60)


def test_drained_nodes_are_resumed_with_probes(fleet):
    """The resume decides from the nodes' check records and their drain reasons, not the test: of 16 nodes drained
    with the health check's tag, two whose checks still fail stay drained with their reason; a node an admin drained
    stays drained whatever its checks say; the other 14 are resumed after a probe job each."""
    ours = ['gpu-%04d' % i for i in range(1, 17)]
    failing = {'gpu-0003': 'GPU 2 not found (scale test)', 'gpu-0007': 'Xid 79 on GPU 5 (scale test)'}
    admin, admin_reason = 'gpu-0017', 'PSU swap ticket 4711'
    scale.ctl('scontrol', 'update', 'nodename=gpu-[0001-0016]', 'state=drain', 'reason=' + scale.DRAIN_REASON)
    scale.ctl('scontrol', 'update', 'nodename=' + admin, 'state=drain', 'reason=' + admin_reason)
    assert scale.node_count('drain') == 17
    checks = {}
    for name in ours + [admin]:
        record = {'stage': 'node', 'node': name, 'check': 'nvml', 'status': 'pass'}
        if name in failing:
            record.update(status='fail', reason=failing[name])
        checks[name] = {'name': name, 'records': [record], 'hook_log': ''}
    try:
        scale.playbook('resume', {'scale_resume_checks': checks})
        with open(os.path.join(scale.OUT, 'resume-records.json')) as handle:
            records = json.load(handle)
        resumed = sorted(r['node'] for r in records if r['check'] == 'resume' and r['status'] == 'pass')
        assert resumed == [name for name in ours if name not in failing], records
        kept = scale.ctl('sinfo', '-h', '-N', '-t', 'drain', '-o', '%N|%E').stdout.splitlines()
        assert sorted(set(kept)) == sorted(['%s|%s' % (n, scale.DRAIN_REASON) for n in failing] + ['%s|%s' % (admin, admin_reason)]), kept
        assert scale.node_count('drain') == 3  # (sinfo -t idle lists a drained idle node too)
    finally:
        scale.ctl('scontrol', 'update', 'nodename=' + ','.join(sorted(failing) + [admin]), 'state=resume', check=False)
    scale.wait_for(lambda: scale.node_count('idle') == NODES, 60)


def test_the_pair_rounds_name_the_slow_node_and_the_slow_leaf(fleet):
    result = scale.isolate(NODES, fleet, 0.0, [])
    assert result['rounds'] == 2
    assert result['isolate_node_named'] == fleet['nodes'][NODES // 3]['name']
    assert result['isolate_leaf_named'] == 'leaf:leaf-03'
