# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where the validate role builds nccl-tests: once per node type (_nccl_build.build_plan, the nccl_build_plan filter)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.nccl_build import nccl_build_plan
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._nccl_build import build_plan

H100 = 'NVIDIA H100 80GB HBM3'
A100 = 'NVIDIA A100-SXM4-80GB'
ARGS = ['CUDA_HOME=/usr/local/cuda', 'NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90']


def node(host, model=H100, fabric_group=None, **settings):
    entry = {'host': host, 'model': model, 'fabric_group': fabric_group, 'version': '2.19.6', 'source_checksum': 'sha256:85c6',
             'mpi': True, 'make_args': list(ARGS)}
    entry.update(settings)
    return entry


@pytest.mark.parametrize('nodes, builders, types', [
    # one type: its first node builds, the others get its binaries
    ([node('gpu-01'), node('gpu-02'), node('gpu-03')], ['gpu-01'], {'h100-80gb-hbm3': ['gpu-01', 'gpu-02', 'gpu-03']}),
    # two GPU models: one build each, by the first node of each in inventory order
    ([node('gpu-01', A100, mpi=False), node('gpu-02'), node('gpu-03', A100, mpi=False), node('gpu-04')], ['gpu-01', 'gpu-02'],
     {'a100-sxm4-80gb': ['gpu-01', 'gpu-03'], 'h100-80gb-hbm3': ['gpu-02', 'gpu-04']}),
    # validate_nccl_multinode.group names the type: the same model in two groups is built twice (other make arguments)
    ([node('gpu-01', fabric_group='rack-a'), node('gpu-02', fabric_group='rack-b', make_args=['CUDA_HOME=/opt/cuda']),
      node('gpu-03', fabric_group='rack-a')], ['gpu-01', 'gpu-02'], {'rack-a': ['gpu-01', 'gpu-03'], 'rack-b': ['gpu-02']}),
    # ... and two models in one group are one type
    ([node('gpu-01', fabric_group='pool'), node('gpu-02', A100, fabric_group='pool')], ['gpu-01'], {'pool': ['gpu-01', 'gpu-02']}),
    # "" is no group; a node whose GPUs NVML could not name is of type unknown
    ([node('gpu-01', fabric_group=''), node('gpu-02', model='')], ['gpu-01', 'gpu-02'],
     {'h100-80gb-hbm3': ['gpu-01'], 'unknown': ['gpu-02']}),
    # the checksum empty or None alike; the booleans as Ansible writes them
    ([node('gpu-01', source_checksum=''), node('gpu-02', source_checksum=None, mpi='yes')], ['gpu-01'], {'h100-80gb-hbm3': ['gpu-01', 'gpu-02']}),
    ([], [], {}),
])
def test_one_build_per_node_type(nodes, builders, types):
    plan = build_plan(nodes)
    assert plan['builders'] == builders
    assert dict((t, v['hosts']) for t, v in plan['types'].items()) == types
    assert all(plan['types'][t]['builder'] == hosts[0] for t, hosts in types.items())
    assert plan['type_of'] == dict((h, t) for t, hosts in types.items() for h in hosts)
    assert nccl_build_plan(nodes) == plan


@pytest.mark.parametrize('nodes, message', [
    ([node('gpu-01'), node('gpu-02', make_args=['CUDA_HOME=/usr/local/cuda', 'NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80'])],
     "node type h100-80gb-hbm3: validate_nccl_build.make_args is ['CUDA_HOME=/usr/local/cuda', "
     "'NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90'] on gpu-01 but ['CUDA_HOME=/usr/local/cuda', "
     "'NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80'] on gpu-02; expected one value for the nodes of one type (nccl-tests is "
     "built once per node type, on gpu-01, and its binaries copied to the others: set it in the group_vars of the node type, or "
     "give the nodes different types with validate_nccl_multinode.group)"),
    ([node('gpu-01'), node('gpu-02'), node('gpu-03', mpi=False)],
     "node type h100-80gb-hbm3: validate_nccl_build.mpi is True on gpu-01 but False on gpu-03;"),
    ([node('gpu-01'), node('gpu-02', version='2.18.3')], "validate_nccl_build.version is '2.19.6' on gpu-01 but '2.18.3' on gpu-02;"),
    ([node('gpu-01'), node('gpu-02', source_checksum='sha256:0000')],
     "validate_nccl_build.source_checksum is 'sha256:85c6' on gpu-01 but 'sha256:0000' on gpu-02;"),
    ([node('gpu-01'), node('gpu-01')], "nodes[1].host is 'gpu-01', expected each host once (it is also nodes[0])"),
    ([node('gpu-01', fabric_group='../x')],
     "validate_nccl_multinode.group of gpu-01 is '../x', expected a node type name (letters, digits, \"_\", \".\", \"+\", \"-\"; "
     "starting with a letter or digit)"),
    ([node('gpu-01', mpi='maybe')], "validate_nccl_build.mpi of gpu-01 is 'maybe', expected true or false"),
    ([node('gpu-01', make_args='MPI_HOME=/usr')], "validate_nccl_build.make_args of gpu-01 is 'MPI_HOME=/usr', expected a list"),
    ([node('gpu-01', make_args=['A=1', 7])], "validate_nccl_build.make_args[1] of gpu-01 is 7, expected a non-empty string"),
    ([node('gpu-01', version='')], "validate_nccl_build.version of gpu-01 is '', expected a non-empty string"),
    ([dict((k, v) for k, v in node('gpu-01').items() if k != 'mpi')], 'nodes[0] lacks the key(s) mpi'),
    ([dict(node('gpu-01'), gpus=8)], 'nodes[0] has unknown key(s) gpus; valid keys: host, model, fabric_group, version'),
    (['gpu-01'], "nodes[0] is 'gpu-01', expected a dict with keys host, model"),
    ('gpu-01', "nodes is 'gpu-01', expected a list"),
])
def test_bad_build_plans_are_refused_naming_the_nodes(nodes, message):
    with pytest.raises(InputError) as err:
        build_plan(nodes)
    assert message in str(err.value)
    with pytest.raises(AnsibleFilterError) as err:
        nccl_build_plan(nodes)
    assert str(err.value).startswith('nccl_build_plan: ') and message in str(err.value)
