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


A100S = ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-PCIE-40GB', 'NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe', 'NVIDIA A100-PCIE-80GB']


@pytest.mark.parametrize('text, extra, found', [
    (' h100 ', (), {'kind': 'mig', 'name': 'NVIDIA H100 80GB HBM3', 'names': ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe']}),
    # two MIG tables (40 and 80 GB): MIG, but which table is not known
    ('A100', (), {'kind': 'mig-unknown', 'name': 'NVIDIA A100-SXM4-40GB', 'names': A100S}),
    ('A100-SXM4-40GB', (), {'kind': 'mig', 'name': 'NVIDIA A100-SXM4-40GB', 'names': ['NVIDIA A100-SXM4-40GB']}),
    # MIG without a table here
    ('GH200', (), {'kind': 'mig-unknown', 'name': None, 'names': ['NVIDIA GH200 480GB', 'NVIDIA GH200 144G HBM3e']}),
    ('Tesla V100-SXM2', (), {'kind': 'no-mig', 'name': 'Tesla V100-SXM2-16GB', 'names': ['Tesla V100-SXM2-16GB', 'Tesla V100-SXM2-32GB']}),
    ('RTX A', (), {'kind': 'no-mig', 'name': 'NVIDIA RTX A6000', 'names': ['NVIDIA RTX A6000', 'NVIDIA RTX A5000', 'NVIDIA RTX A4000']}),
    # models with MIG (no table) and without it: those with MIG first
    ('RTX', (), {'kind': 'mig-unknown', 'name': None, 'names': [
        'NVIDIA RTX PRO 6000 Blackwell Server Edition', 'NVIDIA RTX A6000', 'NVIDIA RTX A5000', 'NVIDIA RTX A4000',
        'NVIDIA RTX 6000 Ada Generation', 'NVIDIA RTX 5000 Ada Generation', 'NVIDIA RTX 4000 Ada Generation']}),
    ('x9', ['NVIDIA X9000', 5], {'kind': 'extra', 'name': None, 'names': []}),
    ('x9', [5, 'NVIDIA Y1'], {'kind': 'unknown', 'name': None, 'names': []}),
])
def test_models_resolve_to_kind_name_and_names(text, extra, found):
    assert site.resolve_model(text, extra) == found


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


ONE_1G = {'profile': '1g.10gb', 'count': 7}
ENTRY = "mig_layouts_custom['l'][%d]"
UNCOVERED = ("mig_layout 'l' (mig_layouts_custom['l']) selects none of GPUs %s of the %d the node has (gpucluster_node_type.gpu_count %d); "
             'expected an entry for each GPU ({gpu: "%s", mig: false} leaves one whole) or mig_require_all_gpus: false')
TWICE = ENTRY + ' selects GPU 1, already selected by ' + ENTRY + '; select each GPU once (gpu: all selects every GPU the model filter lets through)'


def mig_values(entries, model='H100', count=2, require=True):
    return {'gpucluster_node_type': {'gpu_model': model, 'gpu_count': count}, 'mig_layout': 'l', 'mig_layouts_custom': {'l': entries},
            'mig_require_all_gpus': require}


@pytest.mark.parametrize('values, problems, devices', [
    (mig_values([{'gpu': '1', 'instances': [ONE_1G]}], count=1),
     [ENTRY % 0 + '.gpu is 1, but gpucluster_node_type.gpu_count says the node has 1 GPU; expected a GPU index from 0 to 0 (or fix '
      'gpucluster_node_type.gpu_count)', UNCOVERED % ('0', 1, 1, '0')], None),
    (mig_values([{'gpu': 2, 'instances': [ONE_1G]}, {'gpu': '1', 'mig': False}, {'gpu': '0', 'mig': False}]),
     [ENTRY % 0 + '.gpu is 2, but gpucluster_node_type.gpu_count says the node has 2 GPUs; expected a GPU index from 0 to 1 (or fix '
      'gpucluster_node_type.gpu_count)'], None),
    (mig_values([{'gpu': '0', 'instances': [ONE_1G]}, {'gpu': ' 0', 'mig': False}, {'gpu': '1', 'mig': False}]),
     [ENTRY % 1 + '.gpu is 0, already selected by ' + ENTRY % 0 + '; select each GPU once'], None),
    (mig_values([{'gpu': 'all', 'instances': [ONE_1G]}, {'gpu': '1', 'mig': False}]), [TWICE % (1, 0)], None),
    (mig_values([{'gpu': '1', 'mig': False}, {'gpu': 'all', 'instances': [ONE_1G]}]), [TWICE % (1, 0)], None),
    (mig_values([{'gpu': '0', 'model': 'A100', 'instances': [ONE_1G]}, {'gpu': '1', 'mig': False}]),
     [ENTRY % 0 + ".model is 'A100', but gpucluster_node_type.gpu_model says GPU 0 is NVIDIA H100 80GB HBM3; expected part of that name, "
      'or leave model out', UNCOVERED % ('0', 2, 2, '0')], None),
    (mig_values([{'gpu': 'all', 'instances': [ONE_1G]}], model='L40S'),
     [ENTRY % 0 + " (mig_layout 'l') asks for MIG on GPU 0, but gpucluster_node_type.gpu_model says the node's GPUs are 'L40S' "
      '(NVIDIA L40S), which have no MIG; expected no mig_layout on this node (or entries with mig: false)', UNCOVERED % ('1', 2, 2, '1')],
     None),
    (mig_values([{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 8}]}]),
     [ENTRY % 0 + " (mig_layout 'l'): GPU 0 (NVIDIA H100 80GB HBM3, as gpucluster_node_type.gpu_model 'H100' declares): too many 1g.10gb "
      'instances: 8 wanted, this GPU allows at most 7', UNCOVERED % ('1', 2, 2, '1')], None),
    (mig_values([{'gpu': '0', 'instances': [ONE_1G]}], count=3), [UNCOVERED % ('1, 2', 3, 3, '1')], None),
    (mig_values([{'gpu': '0', 'instances': [ONE_1G]}], count=3, require=False), [], {'1g.10gb': 7, 'h100': 2}),
    (mig_values([{'gpu': '1', 'instances': [ONE_1G]}], count=2, require=False), [], {'1g.10gb': 7, 'h100': 1}),
    (mig_values([{'gpu': 'all', 'instances': [{'profile': 7, 'count': 1}]}]),
     [ENTRY % 0 + " (mig_layout 'l'): " + ENTRY % 0 + '.instances[0].profile is 7, expected a MIG profile name such as 1g.10gb or 3g.40gb '
      '(no spaces)'], None),
    (mig_values([{'gpu': 'all', 'instances': [{'profile': '1g.10gb', 'count': 1, 'compute_instances': ['1c.1g.10gb']}]}]),
     [], None),
    (mig_values([{'gpu': '3', 'instances': [ONE_1G]}], count=None), [], None),
])
def test_mig_layout_problems_on_the_declared_gpus(values, problems, devices):
    assert site.mig_layout_problems('h', values, []) == ([('h', 'mig', message) for message in problems], devices)


# slurm.conf's PartitionName keys the preflight names, in the man page's spelling (Nodes and Default have their own fields)
PARTITION_KEYS = ('AllocNodes, AllowAccounts, AllowGroups, AllowQos, Alternate, CpuBind, DefaultTime, DefCpuPerGPU, DefMemPerCPU, '
                  'DefMemPerGPU, DefMemPerNode, DenyAccounts, DenyQos, DisableRootJobs, Exclusive, ExclusiveTopo, ExclusiveUser, GraceTime, '
                  'Hidden, LLN, MaxCPUsPerNode, MaxCPUsPerSocket, MaxMemPerCPU, MaxMemPerNode, MaxNodes, MaxTime, MinNodes, OverSubscribe, '
                  'OverTimeLimit, PowerDownOnIdle, PreemptMode, Priority, PriorityJobFactor, PriorityTier, QOS, ReqResv, ResumeTimeout, '
                  'RootOnly, SelectTypeParameters, Shared, State, SuspendTime, SuspendTimeout, Topology, TRESBillingWeights')
OPT = 'slurm_partitions[0].options.'


@pytest.mark.parametrize('options, problem', [
    ({'State': 'up'}, None),
    ({'State': 'BUSY'}, "State is 'BUSY'; valid values: UP, DOWN, DRAIN, INACTIVE (partition dgx)"),
    ({'State': False}, 'State is false; valid values: UP, DOWN, DRAIN, INACTIVE (partition dgx)'),
    # a value is shown up to 80 characters
    ({'State': 'x' * 78}, "State is '%s'; valid values: UP, DOWN, DRAIN, INACTIVE (partition dgx)" % ('x' * 78)),
    ({'State': 'x' * 79}, "State is '%s...; valid values: UP, DOWN, DRAIN, INACTIVE (partition dgx)" % ('x' * 76)),
    ({'Hidden': 3}, 'Hidden is 3; expected YES or NO (partition dgx)'),
    ({'Hidden': 'maybe'}, "Hidden is 'maybe'; expected YES or NO (partition dgx)"),
    ({'hidden': True, 'LLN': 'no'}, None),
    ({'Priority': '65533'}, None),
    ({'Priority': '65534'}, "Priority is '65534'; expected a whole number from 0 to 65533 (partition dgx)"),
    ({'MaxMemPerNode': 'UNLIMITED', 'MaxMemPerCPU': 'infinite', 'DefMemPerGPU': 'Unlimited', 'DefMemPerCPU': 'INFINITE',
      'DefMemPerNode': 'unlimited'}, None),
    ({'GraceTime': 'UNLIMITED'}, "GraceTime is 'UNLIMITED'; expected a whole number from 0 to 4294967293 (partition dgx)"),
    ({'MaxCPUsPerNode': '4294967293'}, None),
    ({'MaxCPUsPerNode': '4294967294'}, "MaxCPUsPerNode is '4294967294'; expected a whole number from 0 to 4294967293 (partition dgx)"),
    ({'MaxNodes': 'UNLIMITED'}, None),
    ({'MaxNodes': 'infinite'}, None),
    ({'MaxNodes': '12'}, None),
    ({'MaxNodes': 'x'}, "MaxNodes is 'x'; expected a whole number or UNLIMITED (partition dgx)"),
    ({'MaxTime': ['a']}, "MaxTime is ['a']; expected a single value (partition dgx)"),
    ({'Nodes': 'x'}, "Nodes is 'x' (partition dgx): give the nodes of a partition as slurm_partitions[0].nodes (ALL, a hostlist or a list), "
                     'not among its options'),
    ({'Default': 'YES'}, "Default is 'YES' (partition dgx): mark the default partition with slurm_partitions[0].default: true, not among "
                         'its options'),
    ({'PartitionName': 'p'}, "PartitionName is 'p' (partition dgx): the name is slurm_partitions[0].name"),
    ({'name': 'p'}, "name is 'p' (partition dgx): the name is slurm_partitions[0].name"),
    ({'Gres': 'gpu:1'}, "Gres is 'gpu:1' (partition dgx): Gres is a key of a node (NodeName line), not of a partition; set it per node in "
                        "slurm_node_params (the GPU Gres is written from the nodes' GPUs), valid partition keys: " + PARTITION_KEYS),
    ({'Bogus': 1}, "Bogus (partition dgx): 'Bogus' is not a PartitionName option of slurm.conf (slurmctld would refuse the file); valid "
                   'keys: ' + PARTITION_KEYS),
    ({'AllowAccounts': 'ALL,research,physics'}, "AllowAccounts is 'ALL,research,physics' (partition dgx): physics is not an account of "
                                                'slurmdbd_accounts; expected accounts the associations define (research, root)'),
    ({'DenyAccounts': 'a, ,b'}, "DenyAccounts is 'a, ,b' (partition dgx): a, b are not an account of slurmdbd_accounts; expected accounts "
                                'the associations define (research, root)'),
    ({'AllowQos': 'all,gpu,fast'}, "AllowQos is 'all,gpu,fast' (partition dgx): QOS fast is not defined; expected a QOS of slurmdbd_qos or "
                                   'normal (gpu, normal)'),
    ({'QOS': 'x,y'}, "QOS is 'x,y' (partition dgx): QOS x, y are not defined; expected a QOS of slurmdbd_qos or normal (gpu, normal)"),
    ({'DenyQos': 'Normal'}, None),
])
def test_partition_options(options, problem):
    data = values()
    data['ctl']['slurm_partitions'] = [dict(PARTS[0], options=options), PARTS[1]]
    assert check(data) == ([] if problem is None else [('ctl', 'slurm', OPT + problem)], [])


LETTERS = [a + b for a in 'ab' for b in 'abcdefghijklmnopqrstuvwxyz']
IN_NO_PARTITION = ("%s: in no partition of slurm_partitions (host ctl): Slurm configures the node%s but no job can run there; add %s to a "
                   "partition's nodes (or ALL)")


@pytest.mark.parametrize('partitions, problems, warning', [
    ([{'name': 'p', 'nodes': 'gpu-[01-02]'}, {'nodes': ['l40s-01', 'x']}, 5, {'name': 'q', 'nodes': 'bad[', 'options': 'x'}],
     ["slurm_partitions[0].nodes is 'gpu-[01-02]' (partition p): gpu-[01-02] are not a compute node of the inventory; expected ALL or "
      'names of hosts of slurm_compute (dgx-01,l40s-01)',
      "slurm_partitions[1].nodes is ['l40s-01', 'x']: x is not a compute node of the inventory; expected ALL or names of hosts of "
      'slurm_compute (dgx-01,l40s-01)'], IN_NO_PARTITION % ('dgx-01', '', 'it')),
    ([{'name': 'p', 'nodes': 'ctl'}],
     ["slurm_partitions[0].nodes is 'ctl' (partition p): ctl is not a compute node of the inventory; expected ALL or names of hosts of "
      'slurm_compute (dgx-01,l40s-01)'], IN_NO_PARTITION % ('dgx-01,l40s-01', 's', 'them')),
    ([{'name': 'p', 'nodes': 'all'}], [], None),
    # the names are listed up to 100 characters: 31 of two letters and two of three make 100
    ([{'name': 'p', 'nodes': ','.join(['dgx-01', 'l40s-01'] + LETTERS[:31] + ['zzy', 'zzz'])}],
     ["slurm_partitions[0].nodes is %s (partition p): %s are not a compute node of the inventory; expected ALL or names of hosts of "
      'slurm_compute (dgx-01,l40s-01)' % (repr(','.join(['dgx-01', 'l40s-01'] + LETTERS[:31] + ['zzy', 'zzz']))[:77] + '...',
                                          ','.join(LETTERS[:31] + ['zzy', 'zzz']))], None),
    ([{'name': 'p', 'nodes': ['dgx-01', 'l40s-01'] + LETTERS[:31] + ['zzx', 'zzy', 'zzz']}],
     ["slurm_partitions[0].nodes is %s (partition p): %s... are not a compute node of the inventory; expected ALL or names of hosts of "
      'slurm_compute (dgx-01,l40s-01)' % (repr(['dgx-01', 'l40s-01'] + LETTERS[:31] + ['zzx', 'zzy', 'zzz'])[:77] + '...',
                                          ','.join(LETTERS[:31] + ['zzx', 'zzy'])[:97])], None),
])
def test_partition_nodes(partitions, problems, warning):
    data = values()
    data['ctl']['slurm_partitions'] = partitions
    assert check(data) == ([('ctl', 'slurm', message) for message in problems], [warning] if warning else [])


@pytest.mark.parametrize('ctl, accounts, qos, problems', [
    ({'slurmdbd_qos': [{'name': 'gpu', 'Preempt': ['low', 'normal']}, {'name': 'old', 'state': 'absent'}],
      'slurmdbd_accounts': [{'name': 'a', 'QOS': ['gpu', 'old'], 'DefaultQOS': 'normal'}]},
     ['a', 'root'], ['gpu', 'normal'],
     ["slurmdbd_accounts[0] uses QOS 'old', which is not in slurmdbd_qos; expected one of gpu, normal",
      "slurmdbd_accounts[0].DefaultQOS is 'normal', not in its QOS list (gpu, old); expected one of them",
      "slurmdbd_qos[0].Preempt names QOS 'low', which is not in slurmdbd_qos; expected one of gpu, normal"]),
    ({'slurmdbd_accounts': [{'name': 'a', 'parent': 'b'}, {'name': 'b', 'parent': 'a'}, {'name': 'c', 'parent': 'c'}, {'name': 'd', 'parent': 5},
                            {'name': 'e', 'description': 5, 'Bogus': 1}]},
     ['a', 'b', 'c', 'd', 'e', 'root'], ['normal'],
     ["slurmdbd_accounts[2].parent is 'c', the account itself; expected another account or root",
      'slurmdbd_accounts[3].parent is 5; expected the name of an account',
      'slurmdbd_accounts[4].description is 5: account e Description=5: expected a string',
      "slurmdbd_accounts[4].Bogus: 'Bogus' is not a setting of account e; valid settings: DefaultQOS, Fairshare, GrpJobs, GrpSubmitJobs, "
      'GrpTRES, GrpTRESMins, GrpTRESRunMins, GrpWall, MaxJobs, MaxSubmitJobs, MaxTRESMinsPerJob, MaxTRESPerJob, MaxTRESPerNode, MaxWall, '
      'Priority, QOS, name, parent, state',
      'slurmdbd_accounts: the parents of a form a loop (a -> b -> a); expected a tree below root',
      'slurmdbd_accounts: the parents of b form a loop (b -> a -> b); expected a tree below root']),
    ({'slurmdbd_accounts': [{'name': 'A'}, {'name': 'a'}, {'name': 'x y'}, 5, {'name': ''}], 'slurmdbd_users': 'x'},
     ['a', 'root'], ['normal'],
     ["slurmdbd_accounts[0].name is 'A': account name 'A' has upper-case letters: Slurm keeps names in lower case, so write 'a'",
      "slurmdbd_accounts[1].name is 'a', also slurmdbd_accounts[0]; give each once",
      'slurmdbd_accounts[2].name is \'x y\': account name \'x y\' is not valid: use letters, digits, "_", ".", "@" and "-" (not first), '
      'no spaces, commas, "=" or "|"']),
    ({'slurmdbd_accounts': [{'name': 'research'}],
      'slurmdbd_users': [{'name': 'alice', 'accounts': []}, {'name': 'bob', 'accounts': 'research'},
                         {'name': 'carol', 'accounts': ['research', 5, {'name': 'nope', 'MaxJobs': -3}], 'default_account': 'other',
                          'admin_level': 'god'},
                         {'name': 'dan', 'state': 'absent', 'accounts': []},
                         {'name': 'eve', 'accounts': [{'name': 'Research', 'QOS': ['fast']}], 'default_account': 'RESEARCH'}]},
     ['research', 'root'], ['normal'],
     ['slurmdbd_users[0].accounts is [] (user alice); expected at least one account (a user exists only through an association)',
      "slurmdbd_users[1].accounts is 'research'; expected a list of account names",
      'slurmdbd_users[2].accounts[1] is 5; expected an account name or {name, <association option>}',
      'slurmdbd_users[2].MaxJobs is -3: user carol account nope MaxJobs=-3: -3 is out of range; expected a whole number from 0 to '
      '4294967293, or -1 (or UNLIMITED) to remove the limit',
      "slurmdbd_users[2].accounts[2] is 'nope' (user carol), which is not an account of slurmdbd_accounts; expected one of research, root",
      "slurmdbd_users[2].default_account is 'other' (user carol); expected one of its accounts: research, nope",
      "slurmdbd_users[2].admin_level is 'god': user carol AdminLevel='god': expected one of none, operator, administrator",
      "slurmdbd_users[4].accounts[0] uses QOS 'fast', which is not in slurmdbd_qos; expected one of normal"]),
    ({'slurmdbd_qos': {'x': 1}, 'slurmdbd_accounts': None}, ['root'], ['normal'], []),
])
def test_association_problems(ctl, accounts, qos, problems):
    found, defined_accounts, defined_qos = site.association_problems('ctl', ctl)
    assert (found, sorted(defined_accounts), sorted(defined_qos)) == ([('ctl', 'slurmdbd', message) for message in problems], accounts, qos)


@pytest.mark.parametrize('gres', ['gpu:1g.10gb:7,gpu:h100:1', 'gpu:h100:2'])
def test_a_layout_selecting_a_gpu_by_uuid_leaves_the_gres_to_the_node(gres):
    """Which declared GPU the UUID names only the node can tell: no GPU is uncovered, and the Gres is not judged."""
    data = values()
    data['dgx-01'].update({'gpucluster_node_type': {'name': 'dgx', 'gpu_model': 'H100', 'gpu_count': 2}, 'slurm_node_params': {'Gres': gres},
                           'mig_layouts_custom': {'half': [{'gpu': 'GPU-9b3c1a2e-0000-0000-0000-000000000000', 'instances': [ONE_1G]}]}})
    assert check(data) == ([], [])
    assert site.mig_layout_problems('dgx-01', data['dgx-01'], []) == ([], None)


GRES_COUNT = ("slurm_node_params.%s is %s: %d GPU%s, but gpucluster_node_type.gpu_count says the node has 4; slurmd would register 4 and "
              'the node would go INVALID (drained); expected gpu counts adding up to 4, or leave Gres out (the collection writes it from the '
              'GPUs the node has)')


@pytest.mark.parametrize('host, changes, problems', [
    ('l40s-01', {'slurm_node_params': {'gres': 'gpu:l40s:3'}}, [('l40s-01', 'slurm', GRES_COUNT % ('gres', "'gpu:l40s:3'", 3, 's'))]),
    ('l40s-01', {'slurm_node_params': {'Gres': 'gpu:1'}}, [('l40s-01', 'slurm', GRES_COUNT % ('Gres', "'gpu:1'", 1, ''))]),
    ('l40s-01', {'slurm_node_params': {'Gres': 'gpu:l40s:2,gpu:x:2'}}, []),
    # the whole GPUs of a MIG node by the site's GRES type
    ('dgx-01', {'slurm_gres_type_map': {'H100': 'hopper'}},
     [('dgx-01', 'slurm', "slurm_node_params.Gres is 'gpu:1g.10gb:28,gpu:h100:4', but mig_layout 'half' on the GPUs the inventory declares "
                          'yields gpu:1g.10gb:28,gpu:hopper:4; slurmd would register those and the node would go INVALID (drained); expected '
                          'gpu:1g.10gb:28,gpu:hopper:4, or leave Gres out (the collection writes it from the MIG layout)')]),
    ('dgx-01', {'slurm_gres_type_map': {'H100': 'hopper'}, 'slurm_node_params': {'Gres': 'gpu:1g.10gb:28,gpu:hopper:4'}}, []),
    ('l40s-01', {'validate_jobs': {'partition': 'gpu'}},
     [('l40s-01', 'validate', 'validate_jobs.partition is \'gpu\', which is not a partition of slurm_partitions; expected one of dgx, l40s, '
                              'or "" for the default partition')]),
    ('ctl', {'validate_jobs': {'partition': 'dgx'}}, []),
    ('ctl', {'validate_jobs': {'partition': ''}}, []),
])
def test_gres_counts_and_the_validation_partition(host, changes, problems):
    data = values()
    data[host].update(changes)
    assert check(data) == (problems, [])


def test_the_validation_partition_of_a_site_without_partitions():
    data = values()
    data['ctl'].update(validate_jobs={'partition': 'x'}, slurm_partitions=[])
    assert check(data)[0] == [('ctl', 'validate', 'validate_jobs.partition is \'x\', which is not a partition of slurm_partitions; expected '
                                                  'one of none, or "" for the default partition')]


def test_an_entry_without_gpu_selects_every_gpu():
    # no "gpu" key: gpu all (not a UUID left to the node), and no "mig" key: MIG wanted
    assert site.mig_layout_problems('h', mig_values([{'instances': [ONE_1G]}], model='L40S'), []) == ([
        ('h', 'mig', ENTRY % 0 + " (mig_layout 'l') asks for MIG on GPU 0, but gpucluster_node_type.gpu_model says the node's GPUs are "
         "'L40S' (NVIDIA L40S), which have no MIG; expected no mig_layout on this node (or entries with mig: false)"),
        ('h', 'mig', UNCOVERED % ('1', 2, 2, '1'))], None)
    assert site.mig_layout_problems('h', mig_values([{'instances': [ONE_1G]}], count=2), []) == ([], {'1g.10gb': 14})


@pytest.mark.parametrize('given, names', [
    ('gpu-1', {'gpu-01.example.org', 'gpu-01', 'gpu-1'}),
    ('{{ inventory_hostname_short }}', {'gpu-01.example.org', 'gpu-01'}),   # not templated: not a name
    ('', {'gpu-01.example.org', 'gpu-01'}),
    (5, {'gpu-01.example.org', 'gpu-01'}),
])
def test_node_names_of_a_host(given, names):
    assert site.node_names('gpu-01.example.org', {'slurm_node_name': given}) == names


@pytest.mark.parametrize('nodes, expanded', [(' all ', None), ('ALL', None), (None, None), ('gpu-[01-02]', ['gpu-01', 'gpu-02']),
                                             ('gpu-[02-01]', []), ([1, 'b'], ['1', 'b']), (5, [])])
def test_the_nodes_of_a_partition(nodes, expanded):
    assert site._partition_nodes(nodes) == expanded


@pytest.mark.parametrize('key, value, problem', [
    ('Hidden', False, None), ('Hidden', True, None), ('hidden', 'maybe', "p is 'maybe'; expected YES or NO"),
    ('State', ' up ', None), ('State', False, 'p is false; valid values: UP, DOWN, DRAIN, INACTIVE'),
    ('MaxNodes', 'unlimited', None), ('MaxNodes', '-1', "p is '-1'; expected a whole number or UNLIMITED"),
    ('DefMemPerGPU', 'INFINITE', None), ('Priority', 'INFINITE', "p is 'INFINITE'; expected a whole number from 0 to 65533"),
    ('Nodes', ['a'], "p is ['a']; expected a single value"), ('Nodes', None, 'p is None; expected a single value'),
])
def test_partition_option_values(key, value, problem):
    assert site._option_value_problem('p', key, value) == problem


ALL_UUIDS = "%s: slurm_task_prolog_uuids is 'all' (every allocated GPU exported by UUID)"
PROLOG_TAIL = ('. slurmstepd runs it inside pyxis containers, where it cannot run, so every container job of the cluster fails (pyxis '
               'issues 83 and 163); where jobs run in containers set slurm_conf_overrides: {TaskProlog: null} on the controller '
               '(README, Troubleshooting)')


@pytest.mark.parametrize('count, more', [(4, ''), (5, ' and 1 more node(s)')])
def test_the_task_prolog_warning_names_four_nodes(count, more):
    hosts = ['n%d' % number for number in range(1, count + 1)]
    values = dict((host, {'slurm_task_prolog_uuids': 'all'}) for host in hosts)
    assert site._task_prolog_warnings(hosts, set(), values, None) == [
        'TaskProlog: the slurm role configures it for ' + '; '.join(ALL_UUIDS % host for host in hosts[:4]) + more + PROLOG_TAIL]


def test_a_default_qos_of_an_empty_qos_list():
    assert site.association_problems('ctl', {'slurmdbd_accounts': [{'name': 'a', 'QOS': [], 'DefaultQOS': 'normal'}]}) == (
        [('ctl', 'slurmdbd', "slurmdbd_accounts[0].DefaultQOS is 'normal', not in its QOS list (empty); expected one of them")],
        {'a', 'root'}, {'normal'})
