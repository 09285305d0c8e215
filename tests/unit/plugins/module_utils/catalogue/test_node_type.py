"""catalogue/_node_type: the one node-type declaration (gpucluster_node_type), normalised and checked."""
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _node_type as node_type

H100 = {'name': 'dgx-h100', 'gpu_model': 'H100', 'gpu_count': 8, 'hcas': ['mlx5_0', 'mlx5_1'], 'nvlink_domain': ''}


@pytest.mark.parametrize('value,expected', [
    pytest.param(H100, dict(H100), id='full'),
    pytest.param({'gpu_model': 'A100-SXM4-40GB', 'gpu_count': 8},
                 {'name': '', 'gpu_model': 'A100-SXM4-40GB', 'gpu_count': 8, 'hcas': [], 'nvlink_domain': ''}, id='defaults'),
    pytest.param({'gpu_model': 'l40s', 'gpu_count': 4}, dict(node_type.DEFAULTS, gpu_model='l40s', gpu_count=4), id='case-ignored'),
    pytest.param({'gpu_count': 0}, dict(node_type.DEFAULTS, gpu_count=0), id='no-gpus'),
    pytest.param({'gpu_model': 'NVIDIA GB200', 'gpu_count': 4, 'nvlink_domain': 'rack-1'},
                 dict(node_type.DEFAULTS, gpu_model='NVIDIA GB200', gpu_count=4, nvlink_domain='rack-1'), id='full-nvml-name'),
    pytest.param({'gpu_model': 'H100', 'gpu_count': '8'}, dict(node_type.DEFAULTS, gpu_model='H100', gpu_count=8), id='count-as-text'),
    pytest.param({'gpu_model': 'H100', 'gpu_count': 8.0}, dict(node_type.DEFAULTS, gpu_model='H100', gpu_count=8), id='count-as-float'),
    pytest.param({'gpu_count': 2, 'gpu_model': 'L4', 'hcas': 'mlx5_0,mlx5_1'},
                 dict(node_type.DEFAULTS, gpu_model='L4', gpu_count=2, hcas=['mlx5_0', 'mlx5_1']), id='hcas-as-text'),
    pytest.param(None, None, id='not-declared'),
])
def test_normalise(value, expected):
    assert node_type.normalise(value) == expected


@pytest.mark.parametrize('value,extra,messages', [
    pytest.param(dict(H100, gpu_model='H10O'), (),
                 ["gpucluster_node_type.gpu_model is 'H10O', which is part of no GPU name the catalogue knows; expected part of one of: "
                  "A100-SXM4-40GB, "], id='model-typo'),
    pytest.param(dict(H100, gpu_model='Radeon'), ['AMD Radeon Instinct MI300X'], [], id='model-added-by-inventory'),
    pytest.param(dict(H100, gpu_model='H10O'), None, [], id='model-not-checked'),
    pytest.param(dict(H100, gpu_model=''), (), ["gpucluster_node_type.gpu_model is '' but gpu_count is 8; expected the GPUs' model"],
                 id='model-empty-with-gpus'),
    pytest.param(dict(H100, gpu_model=['H100']), (), ["gpucluster_node_type.gpu_model is ['H100']; expected part of a GPU name"],
                 id='model-a-list'),
    pytest.param(dict(H100, gpu_count=-8), (), ['gpucluster_node_type.gpu_count is -8; expected the number of GPUs'], id='count-negative'),
    pytest.param(dict(H100, gpu_count=True), (), ['gpucluster_node_type.gpu_count is true; expected'], id='count-bool'),
    pytest.param(dict(H100, gpu_count='eight'), (), ["gpucluster_node_type.gpu_count is 'eight'; expected"], id='count-str'),
    pytest.param(dict(H100, gpu_count=8.5), (), ['gpucluster_node_type.gpu_count is 8.5; expected'], id='count-fraction'),
    pytest.param({'gpu_model': 'H100'}, (), ['gpucluster_node_type lacks gpu_count'], id='count-missing'),
    pytest.param(dict(H100, gpus=8), (), ["gpucluster_node_type has the unknown key 'gpus'; valid keys: gpu_count, gpu_model, hcas, name, "
                                          "nvlink_domain"], id='unknown-key'),
    pytest.param(dict(H100, hcas={'mlx5_0': 1}), (), ["gpucluster_node_type.hcas is {'mlx5_0': 1}; expected a list"], id='hcas-not-a-list'),
    pytest.param(dict(H100, hcas='mlx5_0,mlx5 1'), (), ["gpucluster_node_type.hcas[1] is 'mlx5 1'; expected"], id='hcas-as-text'),
    pytest.param(dict(H100, hcas=['mlx5_0', 'mlx5 1', '']), (), ["gpucluster_node_type.hcas[1] is 'mlx5 1'; expected an InfiniBand device",
                                                                 "gpucluster_node_type.hcas[2] is ''; expected"], id='hca-names'),
    pytest.param(dict(H100, nvlink_domain=1), (), ['gpucluster_node_type.nvlink_domain is 1; expected a string'], id='domain-not-str'),
    pytest.param('dgx-h100', (), ["gpucluster_node_type is 'dgx-h100'; expected a dictionary"], id='not-a-dict'),
])
def test_problems(value, extra, messages):
    found = node_type.problems(value, extra)
    assert len(found) == len(messages), found
    for line, start in zip(found, messages):
        assert line.startswith(start), line


def test_the_message_lists_what_is_valid():
    message = node_type.problems(dict(H100, gpu_model='H10O'))[0]
    for name in ('H100 80GB HBM3', 'A100-SXM4-40GB', 'L40S', 'B200', 'Tesla V100-SXM2-16GB'):
        assert name in message


def test_normalise_names_the_host_and_the_first_mistake():
    with pytest.raises(node_type.NodeTypeError, match=r"^gpu-01: gpucluster_node_type.gpu_count is -1; "):
        node_type.normalise(dict(H100, gpu_count=-1, gpu_model='X'), host='gpu-01')


def test_normalise_copies_the_hcas():
    value = dict(H100)
    node_type.normalise(value)['hcas'].append('mlx5_9')
    assert value['hcas'] == ['mlx5_0', 'mlx5_1']


@pytest.mark.parametrize('value,expected', [
    pytest.param(H100, {'gpu_count': 8, 'gpu_models': ['H100'], 'hcas': ['mlx5_0', 'mlx5_1']}, id='gpu-node'),
    pytest.param({'gpu_count': 0, 'gpu_model': ''}, {'gpu_count': 0, 'gpu_models': [], 'hcas': None}, id='cpu-node'),
    pytest.param({'gpu_count': 4, 'gpu_model': ' L40S '}, {'gpu_count': 4, 'gpu_models': ['L40S'], 'hcas': None}, id='model-stripped'),
    # the devices as the argument spec reads them: a comma-separated text is a list
    pytest.param({'gpu_count': 0, 'gpu_model': '', 'hcas': 'mlx5_0,mlx5_2'}, {'gpu_count': 0, 'gpu_models': [], 'hcas': ['mlx5_0', 'mlx5_2']},
                 id='hcas-text'),
    pytest.param(None, {'gpu_count': None, 'gpu_models': None, 'hcas': None}, id='not-declared'),
])
def test_expectations(value, expected):
    assert node_type.expectations(value) == expected


def _entries(indices, mig=()):
    whole = [{'name': 'gpu', 'type': 'h100', 'gpu_index': i, 'mig': None} for i in indices if i not in mig]
    split = [{'name': 'gpu', 'type': '1g.10gb', 'gpu_index': i, 'mig': {'gi': n}} for i in mig for n in range(7)]
    return whole + split + [{'name': 'shard', 'type': None, 'gpu_index': 9}]


@pytest.mark.parametrize('value, entries, expected', [
    pytest.param(H100, _entries(range(8)), '', id='eight-of-eight'),
    pytest.param(H100, _entries(range(8), mig=(0, 1)), '', id='mig-instances-count-once'),
    pytest.param(None, _entries(range(3)), '', id='no-node-type'),
    pytest.param(H100, _entries([0, 1, 2, 4, 5, 6, 7]),
                 'gpu-01: NVML shows 7 GPUs (indices 0, 1, 2, 4, 5, 6, 7) but gpucluster_node_type.gpu_count is 8; gres.conf and '
                 'slurm.conf are left as they are (slurmd would register 7 GPUs)', id='one-lost'),
    pytest.param(dict(H100, gpu_count=1), [], 'gpu-01: NVML shows 0 GPUs (none) but gpucluster_node_type.gpu_count is 1', id='none-seen'),
    pytest.param(dict(H100, gpu_count=4), _entries(range(8)), 'gpu-01: NVML shows 8 GPUs', id='more-than-declared'),
])
def test_gres_count_problem(value, entries, expected):
    found = node_type.gres_count_problem(value, entries, 'gpu-01')
    assert found.startswith(expected) and bool(found) == bool(expected), found


DOMAIN = {'cluster_uuid': '8e1f2a3b-0000-4c1d-9a7e-000000000a01', 'clique_id': 0}


@pytest.mark.parametrize('value, detected, expected', [
    ({'gpu_model': 'GB200', 'gpu_count': 4, 'nvlink_domain': 'rack-a07'}, DOMAIN, dict(DOMAIN, declared='rack-a07')),
    # declared where NVML reports none: the declaration alone
    ({'gpu_model': 'GB200', 'gpu_count': 4, 'nvlink_domain': 'rack-a07'}, None, {'declared': 'rack-a07'}),
    ({'gpu_model': 'H100', 'gpu_count': 8, 'nvlink_domain': ''}, DOMAIN, DOMAIN),
    ({'gpu_model': 'H100', 'gpu_count': 8}, None, None),
    (None, DOMAIN, DOMAIN),
    (None, None, None),
    ('not a node type', DOMAIN, DOMAIN),
])
def test_block_domain(value, detected, expected):
    assert node_type.block_domain(value, detected) == expected


def test_block_domain_leaves_the_detected_domain_as_it_was():
    detected = dict(DOMAIN)
    node_type.block_domain({'gpu_count': 4, 'nvlink_domain': 'rack-a07'}, detected)
    assert detected == DOMAIN


@pytest.mark.parametrize('domain', ['rack a07', 'rack=7', ' rack-a07', 'rack,a07'])
def test_a_declared_nvlink_domain_must_be_a_block_name(domain):
    found = node_type.problems({'gpu_model': 'GB200', 'gpu_count': 4, 'nvlink_domain': domain})
    assert found == ['gpucluster_node_type.nvlink_domain is %r; expected a block name of letters, digits, ".", "_" or "-", '
                     'such as rack-a07, or "" for none' % domain], found
