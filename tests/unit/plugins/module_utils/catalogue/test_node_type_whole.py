# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""catalogue/_node_type: every message whole, both sides of each limit, the names the catalogue offers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus
from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type as node_type

H100 = {'name': 'dgx-h100', 'gpu_model': 'H100', 'gpu_count': 8, 'hcas': ['mlx5_0', 'mlx5_1'], 'nvlink_domain': ''}
V = 'gpucluster_node_type'
COUNT = 'expected the number of GPUs of this node type (a whole number, 0 or more)'


def test_model_names_are_the_catalogues_names_without_the_nvidia_prefix_each_once():
    names = node_type.model_names()
    assert names[:3] == ['A100-SXM4-40GB', 'A100-PCIE-40GB', 'A100-SXM4-80GB']
    assert 'H100 80GB HBM3' in names and 'Tesla T4' in names
    assert len(names) == len(set(names))
    assert not [name for name in names if name.startswith('NVIDIA')]
    every = set(name for model in _gpus.MODELS for name in model.names)
    assert set(names) == set(name[len('NVIDIA '):] if name.startswith('NVIDIA ') else name for name in every)


@pytest.mark.parametrize('value, messages', [
    pytest.param(dict(H100, gpu_count=-1), ['%s.gpu_count is -1; %s' % (V, COUNT)], id='count-minus-one'),
    pytest.param(dict(H100, gpu_count=0, gpu_model=''), [], id='count-zero'),
    pytest.param(dict(H100, gpu_count=' 8 '), [], id='count-text-with-blanks'),
    pytest.param(dict(H100, gpu_count='-2'), ["%s.gpu_count is '-2'; %s" % (V, COUNT)], id='count-negative-text'),
    pytest.param(dict(H100, gpu_count=False), ['%s.gpu_count is false; %s' % (V, COUNT)], id='count-false'),
    pytest.param(dict(H100, gpu_count=None), ['%s lacks gpu_count; %s' % (V, COUNT)], id='count-none'),
    pytest.param(dict(H100, gpu_count=8.0), [], id='count-whole-float'),
    pytest.param(dict(H100, gpu_count=8.5), ['%s.gpu_count is 8.5; %s' % (V, COUNT)], id='count-fraction'),
    pytest.param(dict(H100, gpu_count=[8]), ['%s.gpu_count is [8]; %s' % (V, COUNT)], id='count-list'),
    pytest.param(dict(H100, gpus=1, other=2), ["%s has the unknown keys 'gpus', 'other'; valid keys: gpu_count, gpu_model, hcas, name, "
                                               "nvlink_domain" % V], id='two-unknown-keys'),
    pytest.param(dict(H100, gpus=1), ["%s has the unknown key 'gpus'; valid keys: gpu_count, gpu_model, hcas, name, nvlink_domain" % V],
                 id='one-unknown-key'),
    pytest.param(dict(H100, gpu_model=''), ["%s.gpu_model is '' but gpu_count is 8; expected the GPUs' model (part of a GPU name the "
                                            "catalogue knows: %s)" % (V, ', '.join(node_type.model_names()))], id='no-model'),
    pytest.param(dict(H100, gpu_model='  ', gpu_count=0), [], id='blank-model-without-gpus'),
    pytest.param(dict(H100, gpu_model='', gpu_count=1), ["%s.gpu_model is '' but gpu_count is 1; expected the GPUs' model (part of a GPU "
                                                         "name the catalogue knows: %s)" % (V, ', '.join(node_type.model_names()))],
                 id='no-model-one-gpu'),
    pytest.param(dict(H100, gpu_model=None), ['%s.gpu_model is None; expected part of a GPU name, such as H100' % V], id='model-none'),
    pytest.param(dict(H100, hcas='mlx5/0'), ["%s.hcas[0] is 'mlx5/0'; expected an InfiniBand device name, such as mlx5_0" % V],
                 id='hca-slash'),
    pytest.param(dict(H100, hcas=[5]), ['%s.hcas[0] is 5; expected an InfiniBand device name, such as mlx5_0' % V], id='hca-number'),
    pytest.param(dict(H100, hcas=''), [], id='hcas-empty-text'),
    pytest.param(dict(H100, hcas=3), ['%s.hcas is 3; expected a list of InfiniBand device names, such as [mlx5_0, mlx5_1]' % V],
                 id='hcas-number'),
    pytest.param(dict(H100, name=7), ['%s.name is 7; expected a string' % V], id='name-not-str'),
    pytest.param(dict(H100, nvlink_domain='rack_a.07-x'), [], id='domain-every-character'),
    pytest.param(dict(H100, nvlink_domain='rack-a07\n'),
                 ['%s.nvlink_domain is \'rack-a07\\n\'; expected a block name of letters, digits, ".", "_" or "-", such as rack-a07, '
                  'or "" for none' % V], id='domain-newline'),
    pytest.param('x' * 78, ["%s is '%s'; expected a dictionary {name, gpu_model, gpu_count, hcas, nvlink_domain}" % (V, 'x' * 78)],
                 id='shown-80'),
    pytest.param('x' * 79, ["%s is '%s...; expected a dictionary {name, gpu_model, gpu_count, hcas, nvlink_domain}" % (V, 'x' * 76)],
                 id='shown-81'),
    pytest.param(True, ['%s is true; expected a dictionary {name, gpu_model, gpu_count, hcas, nvlink_domain}' % V], id='true'),
])
def test_problems_whole(value, messages):
    assert node_type.problems(value) == messages


def test_the_path_names_the_variable():
    assert node_type.problems({'gpu_model': 'H100'}, path='hostvars.gpu-01.gpucluster_node_type') == [
        'hostvars.gpu-01.gpucluster_node_type lacks gpu_count; %s' % COUNT]


def test_an_unknown_model_whole():
    assert node_type.problems(dict(H100, gpu_model='H10O')) == [
        "%s.gpu_model is 'H10O', which is part of no GPU name the catalogue knows; expected part of one of: %s (or add the name NVML "
        "reports to preflight_gpu_models)" % (V, ', '.join(node_type.model_names()))]


@pytest.mark.parametrize('text, extra, known', [
    ('h100', (), True),
    ('  ', (), False),
    ('', ['anything'], False),
    ('radeon', ['AMD Radeon Instinct MI300X'], True),
    ('radeon', None, False),
    ('radeon', [None, 3, 'AMD Radeon'], True),
    ('radeon', ['AMD Instinct'], False),
])
def test_known_model(text, extra, known):
    assert node_type.known_model(text, extra) is known


def test_known_model_default_extra():
    assert (node_type.known_model('H100'), node_type.known_model('Radeon')) == (True, False)


def test_normalise_without_a_host_and_with_extra():
    with pytest.raises(node_type.NodeTypeError) as found:
        node_type.normalise({'gpu_model': 'Radeon', 'gpu_count': 1})
    assert str(found.value) == ("%s.gpu_model is 'Radeon', which is part of no GPU name the catalogue knows; expected part of one of: "
                                "%s (or add the name NVML reports to preflight_gpu_models)" % (V, ', '.join(node_type.model_names())))
    assert node_type.normalise({'gpu_model': 'Radeon', 'gpu_count': 1}, extra=['AMD Radeon'])['gpu_model'] == 'Radeon'


def test_expectations_check_the_model_against_extra_and_name_the_host():
    assert node_type.expectations({'gpu_model': 'Radeon', 'gpu_count': 1}, 'gpu-01', ['AMD Radeon']) == {
        'gpu_count': 1, 'gpu_models': ['Radeon'], 'hcas': None}
    with pytest.raises(node_type.NodeTypeError) as found:
        node_type.expectations({'gpu_model': 'Radeon', 'gpu_count': 1}, 'gpu-01')
    assert str(found.value).startswith("gpu-01: %s.gpu_model is 'Radeon', which is part of no GPU name" % V)


def test_expectations_give_a_copy_of_the_hcas():
    value = dict(H100, hcas=['mlx5_0', 'mlx5_1'])
    node_type.expectations(value)['hcas'].append('mlx5_9')
    assert value['hcas'] == ['mlx5_0', 'mlx5_1']


def _gpu(index, name='gpu'):
    return {'name': name, 'type': 'h100', 'gpu_index': index}


@pytest.mark.parametrize('count, entries, host, expected', [
    (1, [_gpu(0)], 'gpu-01', ''),
    (2, [_gpu(0)], 'gpu-01',
     'gpu-01: NVML shows 1 GPU (indices 0) but gpucluster_node_type.gpu_count is 2; gres.conf and slurm.conf are left as they are (slurmd '
     'would register 1 GPU); expected the declared GPUs: look for a GPU NVML lost (nvidia-smi, Xid 79, reseat), or correct '
     'gpucluster_node_type for this node'),
    (1, [], None,
     'NVML shows 0 GPUs (none) but gpucluster_node_type.gpu_count is 1; gres.conf and slurm.conf are left as they are (slurmd '
     'would register 0 GPUs); expected the declared GPUs: look for a GPU NVML lost (nvidia-smi, Xid 79, reseat), or correct '
     'gpucluster_node_type for this node'),
    # what is no GPU entry is not counted: other GRES, no dict, a gpu_index that is no whole number
    (1, [_gpu(0), _gpu(1, 'shard'), 'gpu', {'name': 'gpu', 'gpu_index': '1'}, {'name': 'gpu'}], 'gpu-01', ''),
    (0, None, 'gpu-01', ''),
])
def test_gres_count_problem_whole(count, entries, host, expected):
    assert node_type.gres_count_problem(dict(H100, gpu_count=count), entries, host) == expected


def test_gres_count_problem_default_host_and_a_bad_node_type():
    assert node_type.gres_count_problem(dict(H100, gpu_count=1), []).startswith('NVML shows 0 GPUs')
    with pytest.raises(node_type.NodeTypeError) as found:
        node_type.gres_count_problem({'gpu_model': 'H100'}, [], 'gpu-01')
    assert str(found.value) == 'gpu-01: %s lacks gpu_count; %s' % (V, COUNT)
