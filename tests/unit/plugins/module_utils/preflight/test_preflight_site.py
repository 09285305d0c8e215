"""_preflight_site: the checks of the inventory as a whole, on plain data (the action's values)."""
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _site as site

GROUPS = {'slurm_controller': ['ctl'], 'slurm_compute': ['dgx-01', 'l40s-01'], 'gpu_nodes': ['dgx-01', 'l40s-01'], 'slurmdbd': ['ctl']}
LAYOUT = [{'gpu': str(i), 'instances': [{'profile': '1g.10gb', 'count': 7}]} for i in range(4)] + [{'gpu': str(i), 'mig': False} for i in range(4, 8)]
PARTS = [{'name': 'dgx', 'nodes': 'dgx-01', 'default': True, 'options': {'State': 'UP'}},
         {'name': 'l40s', 'nodes': ['l40s-01'], 'options': {'MaxTime': '1-00:00:00'}}]


def values():
    return {
        'ctl': {'slurm_partitions': PARTS, 'slurmdbd_qos': [{'name': 'gpu', 'MaxJobsPerUser': 4}],
                'slurmdbd_accounts': [{'name': 'research', 'QOS': ['normal', 'gpu']}], 'slurmdbd_users': [{'name': 'alice', 'accounts': ['research']}]},
        'dgx-01': {'gpucluster_node_type': {'name': 'dgx-h100', 'gpu_model': 'H100', 'gpu_count': 8}, 'mig_layout': 'half',
                   'mig_layouts_custom': {'half': LAYOUT}, 'mig_require_all_gpus': True,
                   'slurm_node_params': {'Gres': 'gpu:1g.10gb:28,gpu:h100:4'}},
        'l40s-01': {'gpucluster_node_type': {'gpu_model': 'l40s', 'gpu_count': 4, 'hcas': ['mlx5_0']}},
    }


def check(data):
    return site.site_problems(data, GROUPS, 'ctl', ['ctl', 'dgx-01', 'l40s-01'])


def test_a_consistent_site_passes():
    assert check(values()) == ([], [])


@pytest.mark.parametrize('text, kind, name', [
    ('H100', 'mig', 'NVIDIA H100 80GB HBM3'), ('h200', 'mig', 'NVIDIA H200'), ('A100', 'mig-unknown', 'NVIDIA A100-SXM4-40GB'),
    ('L40S', 'no-mig', 'NVIDIA L40S'), ('H10O', 'unknown', None),
    # a name that is the model's own NVML name ("NVIDIA B200") beats the longer ones holding it ("NVIDIA GB200")
    ('B200', 'mig', 'NVIDIA B200'), ('GB200', 'mig', 'NVIDIA GB200'), ('B300', 'mig', 'NVIDIA B300 SXM6 AC'),
    ('RTX PRO 6000', 'mig-unknown', None), ('A30', 'mig-unknown', None),
    ('RTX', 'mig-unknown', None),  # models with MIG but no table here and models without MIG: it may have MIG
])
def test_models_resolve_against_the_catalogue(text, kind, name):
    found = site.resolve_model(text)
    assert (found['kind'], found['name']) == (kind, name)


def test_an_extra_model_is_known():
    assert site.resolve_model('X9000', ['NVIDIA X9000'])['kind'] == 'extra'


def test_every_problem_of_the_associations_at_once():
    data = values()
    data['ctl']['slurmdbd_accounts'] = [{'name': 'research', 'Fairshare': -1.5, 'MaxJobs': -7, 'parent': 'physics'}]
    data['ctl']['slurmdbd_users'] = [{'name': 'alice', 'accounts': ['reserch'], 'MaxSubmitJobs': -2}]
    problems, warnings = check(data)
    lines = [message for host, role, message in problems]
    assert all(host == 'ctl' and role == 'slurmdbd' for host, role, message in problems)
    assert [line.split(' ', 1)[0] for line in lines] == ['slurmdbd_accounts[0].Fairshare', 'slurmdbd_accounts[0].MaxJobs',
                                                         'slurmdbd_accounts[0].parent', 'slurmdbd_users[0].MaxSubmitJobs',
                                                         'slurmdbd_users[0].accounts[0]'], lines
    assert warnings == []


def test_a_node_in_no_partition_is_a_warning():
    data = values()
    data['ctl']['slurm_partitions'] = PARTS[:1]
    problems, warnings = check(data)
    assert problems == []
    assert warnings == ['l40s-01: in no partition of slurm_partitions (host ctl): Slurm configures the node but no job can run there; '
                        "add it to a partition's nodes (or ALL)"]


def test_the_gres_of_a_mig_node_is_computed_from_the_layout():
    data = values()
    data['dgx-01']['slurm_node_params'] = {'Gres': 'gpu:1g.10gb:28,gpu:h100:8'}
    problems, warnings = check(data)
    assert [m for h, r, m in problems] == [
        "slurm_node_params.Gres is 'gpu:1g.10gb:28,gpu:h100:8', but mig_layout 'half' on the GPUs the inventory declares yields "
        'gpu:1g.10gb:28,gpu:h100:4; slurmd would register those and the node would go INVALID (drained); expected '
        'gpu:1g.10gb:28,gpu:h100:4, or leave Gres out (the collection writes it from the MIG layout)']


def test_odd_types_are_left_to_the_argument_spec():
    data = values()
    data['dgx-01'].update(mig_layouts_custom={'half': [None, 3]}, gpucluster_node_type={'gpu_model': [None]}, slurm_node_params='x')
    data['ctl'].update(slurm_partitions=[None, {'name': 'x', 'nodes': 5, 'options': ['a']}], slurmdbd_qos='x',
                       slurmdbd_accounts=[3, {'name': None}], slurmdbd_users=[{'name': 'bob', 'accounts': 'x'}])
    problems, warnings = check(data)
    assert all(isinstance(m, str) for h, r, m in problems)


def _prolog(**dgx):
    data = values()
    for host in ('dgx-01', 'l40s-01'):
        data[host].update(slurm_task_prolog_uuids='mig', slurm_gres_autodetect='off', slurm_gres_sharing='none',
                          slurm_hooks_shipped=['enroot-dirs', 'mps'])
    data['dgx-01'].update(dgx)
    if not data['dgx-01']['mig_layout']:
        del data['dgx-01']['slurm_node_params']  # (its Gres is the MIG layout's)
    return data


@pytest.mark.parametrize('dgx, ctl_overrides, reason', [
    ({}, None, "dgx-01: mig_layout half with hand-written MIG GRES (slurm_task_prolog_uuids 'mig': the MIG UUIDs)"),
    ({'slurm_gres_autodetect': 'nvml'}, None, None),
    ({'mig_layout': ''}, None, None),
    ({'slurm_task_prolog_uuids': 'off'}, None, None),
    ({'mig_layout': '', 'slurm_task_prolog_uuids': 'all'}, None, "dgx-01: slurm_task_prolog_uuids is 'all' (every allocated GPU exported by UUID)"),
    ({'mig_layout': '', 'slurm_gres_sharing': 'mps'}, None, "dgx-01: slurm_gres_sharing is 'mps' (the MPS variables of the job)"),
    ({'mig_layout': '', 'slurm_gres_sharing': 'mps', 'slurm_hooks_shipped': ['enroot-dirs']}, None, None),
    ({}, {'taskprolog': None}, None),
    ({}, {'TaskProlog': '/opt/site/task-prolog'}, "dgx-01: mig_layout half"),
], ids=['mig-files', 'mig-nvml', 'no-mig', 'uuids-off', 'uuids-all', 'mps', 'mps-hooks-not-shipped', 'removed-by-override',
        'replaced-by-override'])
def test_a_task_prolog_with_containers_is_a_warning(dgx, ctl_overrides, reason):
    """slurmstepd runs the TaskProlog inside pyxis containers: the nodes that make the role configure it are named,
    unless the controller's slurm_conf_overrides removes it."""
    data = _prolog(**dgx)
    if ctl_overrides is not None:
        data['ctl']['slurm_conf_overrides'] = ctl_overrides
    problems, warnings = check(data)
    assert problems == []
    if reason is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith('TaskProlog: the slurm role configures it for ' + reason), warnings
        assert 'every container job of the cluster fails' in warnings[0] and 'slurm_conf_overrides: {TaskProlog: null}' in warnings[0]


UNCOVERED = ("mig_layout 'all-7g' (gpucluster.bringup.mig_layouts['all-7g']) selects none of GPUs 0, 1, 2, 3 of the 4 the node has "
             '(gpucluster_node_type.gpu_count 4); expected an entry for each GPU ({gpu: "0", mig: false} leaves one whole) or mig_require_all_gpus: false')


@pytest.mark.parametrize('model, shape, require_all, result', [
    # a shape takes the declared model's catalogue table
    ('B200', 'balanced', True, ([], {'3g.90gb': 4, '2g.45gb': 4, '1g.23gb': 8})),
    ('NVIDIA H200 NVL', '1g', True, ([], {'1g.18gb': 28})),
    # GPUs without MIG: the shape passes over them (uncovered, as with the earlier per-model entries)
    ('L40S', '7g', False, ([], {'l40s': 4})),
    ('L40S', '7g', True, ([('gpu-01', 'mig', UNCOVERED)], None)),
])
def test_a_shape_layout_against_the_declared_gpus(model, shape, require_all, result):
    # a shipped layout (all-<shape>), and the same shape as a site's layout
    values = {'gpucluster_node_type': {'gpu_model': model, 'gpu_count': 4}, 'mig_layout': 'all-' + shape, 'mig_require_all_gpus': require_all,
              'mig_layouts_custom': {}}
    assert site.mig_layout_problems('gpu-01', values, ()) == result
    values.update(mig_layout='shaped', mig_layouts_custom={'shaped': [{'gpu': 'all', 'shape': shape}]})
    custom = ([(host, role, message.replace("'all-7g' (gpucluster.bringup.mig_layouts['all-7g'])", "'shaped' (mig_layouts_custom['shaped'])"))
               for host, role, message in result[0]], result[1])
    assert site.mig_layout_problems('gpu-01', values, ()) == custom


@pytest.mark.parametrize('node_type, messages', [
    ({'gpu_model': 'H10O', 'gpu_count': 8},
     ["gpucluster_node_type.gpu_model is 'H10O', which is part of no GPU name the catalogue knows; expected part of one of: A100-SXM4-40GB"]),
    # the argument spec and the role's own check name these (on every host the role runs for): not again here
    ({'gpu_model': 'H10O', 'gpu_count': -8}, []),
    ({'gpu_model': 'H100', 'gpu_count': 8, 'gpus': 8}, []),
    ({'gpu_model': 'X9000', 'gpu_count': 8, 'extra': True}, []),
], ids=['unknown-model', 'bad-count-first', 'unknown-key-first', 'added-by-the-inventory'])
def test_the_node_type_model_against_the_catalogue(node_type, messages):
    data = values()
    node_type = dict(node_type)  # (the parametrize dict is kept as it is for a rerun in the same process: mutmut's)
    extra = node_type.pop('extra', False)
    data['dgx-01']['gpucluster_node_type'] = node_type
    del data['dgx-01']['slurm_node_params']
    if extra:
        data['dgx-01']['preflight_gpu_models'] = ['NVIDIA X9000']
    problems, dummy = check(data)
    assert len(problems) == len(messages), problems
    for (host, role, message), start in zip(problems, messages):
        assert (host, role) == ('dgx-01', 'validate') and message.startswith(start), message


@pytest.mark.parametrize('node_type, found', [
    ({'gpu_model': 'H100', 'gpu_count': 8}, (('gpucluster_node_type.gpu_model', ['H100']), ('gpucluster_node_type.gpu_count', 8))),
    ({'gpu_count': 0}, ((None, None), ('gpucluster_node_type.gpu_count', 0))),
    ({'gpu_model': 'H100', 'gpu_count': -1}, ((None, None), (None, None))),
    (None, ((None, None), (None, None))),
])
def test_the_declared_gpus_are_the_node_types(node_type, found):
    values = {'gpucluster_node_type': node_type}
    assert (site.declared_models(values), site.declared_count(values)) == found
