# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import (
    change_actions,
    check_gres_consistency,
    cluster_gres_lines,
    combine_settings,
    gres_conf_file_lines,
    gres_types,
    merge_settings,
    node_lines,
    node_params,
    parse_conf,
    parse_gres_conf_types,
    settings_dict,
    parse_gres_value,
    parse_slurmd_c,
    partition_lines,
    preflight_errors,
    render_pairs,
    validate_node_name,
)

SLURMD_C = ('NodeName=gpu-01 CPUs=64 Boards=1 SocketsPerBoard=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000\n'
            'UpTime=12-03:04:05\n')
HW = {'NodeName': 'gpu-01', 'CPUs': 64, 'Boards': 1, 'SocketsPerBoard': 2, 'CoresPerSocket': 16, 'ThreadsPerCore': 2,
      'RealMemory': 515000}


@pytest.mark.parametrize('text, expected', [
    (SLURMD_C, HW),
    ('NodeName=ctl CPUs=2 RealMemory=24000', {'NodeName': 'ctl', 'CPUs': 2, 'RealMemory': 24000}),
    ('slurmd: debug: x\nNodeName=n1 CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=100 MemSpecLimit=5\n',
     {'NodeName': 'n1', 'CPUs': 4, 'Boards': 1, 'SocketsPerBoard': 1, 'CoresPerSocket': 4, 'ThreadsPerCore': 1, 'RealMemory': 100}),
])
def test_parse_slurmd_c(text, expected):
    assert parse_slurmd_c(text) == expected


@pytest.mark.parametrize('text, message', [
    ('', 'slurmd -C printed nothing; expected a line like "NodeName=gpu-01 CPUs=64 ... RealMemory=515000"'),
    (None, 'slurmd -C printed nothing'),
    ('slurmd: fatal: bad', 'slurmd -C output has no "NodeName=" line: \'slurmd: fatal: bad\''),
    ('NodeName=a CPUs=x RealMemory=1', 'slurmd -C reports CPUs=x; expected a whole number'),
    ('NodeName=a CPUs=2 junk RealMemory=1', 'slurmd -C line has "junk", which is not KEY=VALUE'),
    ('NodeName=a CPUs=2', 'slurmd -C line lacks RealMemory=: \'NodeName=a CPUs=2\''),
])
def test_parse_slurmd_c_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_slurmd_c(text)
    assert message in str(err.value)


@pytest.mark.parametrize('name', ['gpu-01', 'n1', 'dgx.a100', 'gpu-01.cluster.example', 'A'])
def test_valid_node_names(name):
    assert validate_node_name(name) == name


@pytest.mark.parametrize('name, message', [
    ('gpu 01', "node name 'gpu 01' is not one Slurm accepts"),
    ('gpu[01]', "node name 'gpu[01]' is not one Slurm accepts"),
    ('a,b', "node name 'a,b' is not one Slurm accepts"),
    ('-gpu', "node name '-gpu' is not one Slurm accepts"),
    ('gpu-', "node name 'gpu-' is not one Slurm accepts"),
    ('node_7', "node name 'node_7' is not one Slurm accepts"),
    ('a..b', "node name 'a..b' is not one Slurm accepts"),
    ('', "node name '' is not one Slurm accepts: a host name of letters, digits and \"-\""),
    (None, 'node name None is not one Slurm accepts'),
    ('ALL', 'node name "ALL" is reserved by Slurm (ALL and DEFAULT cannot be node names)'),
    ('default', 'node name "default" is reserved by Slurm'),
])
def test_invalid_node_names(name, message):
    with pytest.raises(ValueError) as err:
        validate_node_name(name)
    assert message in str(err.value)


@pytest.mark.parametrize('controllers, compute, names, expected', [
    (['ctl'], ['gpu-01'], None, []),
    ([], ['gpu-01'], None, ['the controller group is empty: put exactly one host in it (slurmctld runs there)']),
    (['c1', 'c2'], ['gpu-01'], None,
     ['the controller group has 2 hosts (c1, c2): exactly one is supported until slurmctld HA is']),
    (['ctl'], [], None, ['the compute group is empty: put at least one host in it (slurmd runs there)']),
    (['ctl'], ['gpu-01', 'bad host'], None,
     ["node name 'bad host' is not one Slurm accepts: a host name of letters, digits and \"-\" (not first or last in a label), "
      "labels joined with \".\", no \"_\", spaces, brackets, commas, \"=\" or \"#\" (e.g. \"gpu-01\")"]),
    (['ctl'], ['h1'], ['ALL'], ['node name "ALL" is reserved by Slurm (ALL and DEFAULT cannot be node names)']),
])
def test_preflight_errors(controllers, compute, names, expected):
    assert preflight_errors(controllers, compute, names) == expected


@pytest.mark.parametrize('hardware, gres, extra, reserve, expected', [
    (HW, None, None, 0, [('CPUs', '64'), ('Boards', '1'), ('SocketsPerBoard', '2'), ('CoresPerSocket', '16'),
                         ('ThreadsPerCore', '2'), ('RealMemory', '515000')]),
    ({'CPUs': 2, 'RealMemory': 1000}, 'gpu:h100:8', {'Features': 'h100'}, 100,
     [('CPUs', '2'), ('RealMemory', '900'), ('Gres', 'gpu:h100:8'), ('Features', 'h100')]),
    ({'CPUs': 2, 'RealMemory': 1000}, None, {'realmemory': 500, 'Weight': 10}, 0,
     [('CPUs', '2'), ('realmemory', '500'), ('Weight', '10')]),
    ({'CPUs': 2, 'RealMemory': 1000}, None, {'CPUs': None}, 0, [('RealMemory', '1000')]),
])
def test_node_params(hardware, gres, extra, reserve, expected):
    assert node_params(hardware, gres, extra, reserve) == expected


@pytest.mark.parametrize('reserve, extra, message', [
    (2000, None, 'memory reserve 2000 MB leaves no memory on a node with RealMemory=1000'),
    (-1, None, 'memory reserve -1 must be a non-negative number of MB'),
    (0, {'Bad Key': 1}, "node parameter key 'Bad Key' is not a slurm.conf key"),
    (0, {'Features': 'a b'}, "node parameter Features='a b' contains spaces"),
    (0, {'Features': ''}, "node parameter Features='': the value must be non-empty, on one line and without \"#\""),
    (0, ['x'], "node parameter overrides ['x'] must be a dictionary of KEY: value"),
])
def test_node_params_errors(reserve, extra, message):
    with pytest.raises(ValueError) as err:
        node_params({'CPUs': 2, 'RealMemory': 1000}, None, extra, reserve)
    assert message in str(err.value)


def _node(name, cpus=2, gres=None):
    return {'name': name, 'params': node_params({'CPUs': cpus, 'RealMemory': 1000}, gres)}


@pytest.mark.parametrize('nodes, expected', [
    ([_node('gpu-01'), _node('gpu-02')], ['NodeName=gpu-[01-02] CPUs=2 RealMemory=1000']),
    ([_node('gpu-%02d' % i, gres='gpu:h100:8') for i in range(1, 65)],
     ['NodeName=gpu-[01-64] CPUs=2 RealMemory=1000 Gres=gpu:h100:8']),
    ([_node('gpu-01', gres='gpu:h100:8'), _node('gpu-02', gres='gpu:1g.10gb:14,gpu:a100:6'), _node('gpu-03', gres='gpu:h100:8')],
     ['NodeName=gpu-[01,03] CPUs=2 RealMemory=1000 Gres=gpu:h100:8',
      'NodeName=gpu-02 CPUs=2 RealMemory=1000 Gres=gpu:1g.10gb:14,gpu:a100:6']),
    ([_node('a1', cpus=4), _node('b1'), _node('a2', cpus=4)], ['NodeName=a[1-2] CPUs=4 RealMemory=1000', 'NodeName=b1 CPUs=2 RealMemory=1000']),
    ([{'name': 'x'}], ['NodeName=x']),
])
def test_node_lines(nodes, expected):
    assert node_lines(nodes) == expected


@pytest.mark.parametrize('nodes, message', [
    ([_node('a'), _node('a')], 'node "a" is listed twice; each node needs exactly one NodeName entry'),
    ([_node('a b')], "node name 'a b' is not one Slurm accepts"),
])
def test_node_lines_errors(nodes, message):
    with pytest.raises(ValueError) as err:
        node_lines(nodes)
    assert message in str(err.value)


@pytest.mark.parametrize('defaults, overrides, expected', [
    ({'SelectType': 'select/cons_tres', 'ReturnToService': 2}, None, ['SelectType=select/cons_tres', 'ReturnToService=2']),
    ({'SelectType': 'select/cons_tres', 'ReturnToService': 2}, {'selecttype': 'select/linear'},
     ['selecttype=select/linear', 'ReturnToService=2']),
    ({'A': 1, 'B': 2}, {'A': None, 'C': 'x'}, ['B=2', 'C=x']),
    ({'AllowSpecResourcesUsage': True, 'X': False}, {}, ['AllowSpecResourcesUsage=YES', 'X=NO']),
    ({'PrologFlags': ['Alloc', 'Contain']}, {}, ['PrologFlags=Alloc,Contain']),
    ({'Reason': '"two words"'}, {}, ['Reason="two words"']),
    # new keys in sorted order, whatever the order of the overrides (an AWX inventory script sorts them)
    ({'Z': 1, 'A': 2}, {'PriorityWeightQOS': 3, 'PriorityDecayHalfLife': '7-0', 'Z': 4},
     ['Z=4', 'A=2', 'PriorityDecayHalfLife=7-0', 'PriorityWeightQOS=3']),
    ({'Z': 1, 'A': 2}, {'PriorityDecayHalfLife': '7-0', 'PriorityWeightQOS': 3, 'Z': 4},
     ['Z=4', 'A=2', 'PriorityDecayHalfLife=7-0', 'PriorityWeightQOS=3']),
])
def test_merge_settings(defaults, overrides, expected):
    assert render_pairs(merge_settings(defaults, overrides)) == expected


@pytest.mark.parametrize('defaults, overrides, message', [
    ('x', None, "slurm.conf defaults 'x' must be a dictionary of KEY: value"),
    ({'A': 1}, {'B': 'a\nb'}, "slurm.conf setting B='a\\nb': the value must be non-empty, on one line and without \"#\""),
    ({'A': 1}, {'B': 'x#y'}, 'the value must be non-empty, on one line and without "#"'),
    ({'A': 1}, {'1x': 'y'}, "slurm.conf setting key '1x' is not a slurm.conf key (letters and digits, e.g. \"SchedulerType\")"),
])
def test_merge_settings_errors(defaults, overrides, message):
    with pytest.raises(ValueError) as err:
        merge_settings(defaults, overrides)
    assert message in str(err.value)


NAMES = ['gpu-01', 'gpu-02', 'cpu-1']


@pytest.mark.parametrize('partitions, expected', [
    ([{'name': 'batch', 'nodes': 'ALL', 'default': True}], ['PartitionName=batch Nodes=ALL Default=YES']),
    ([{'name': 'gpu', 'nodes': ['gpu-01', 'gpu-02'], 'options': {'MaxTime': 'INFINITE', 'State': 'UP'}},
      {'name': 'cpu', 'nodes': 'cpu-1'}],
     ['PartitionName=gpu Nodes=gpu-[01-02] MaxTime=INFINITE State=UP', 'PartitionName=cpu Nodes=cpu-1']),
    ([{'name': 'g', 'nodes': 'gpu-[01-02]', 'default': True, 'options': {'Default': None}}], ['PartitionName=g Nodes=gpu-[01-02]']),
])
def test_partition_lines(partitions, expected):
    assert partition_lines(partitions, NAMES) == expected


@pytest.mark.parametrize('partitions, message', [
    ([], 'slurm partitions [] must be a non-empty list of {name: ..., nodes: ...}'),
    ([{'nodes': 'ALL'}], "partition {'nodes': 'ALL'} needs at least a \"name\" key"),
    ([{'name': 'a b'}], "partition name 'a b' is not valid"),
    ([{'name': 'DEFAULT'}], "partition name 'DEFAULT' is not valid"),
    ([{'name': 'a'}, {'name': 'a'}], 'partition "a" is defined twice'),
    ([{'name': 'a', 'nodes': ['gpu-09']}], 'partition "a" names nodes that are not configured: gpu-09 (configured: cpu-1, gpu-01, gpu-02)'),
    ([{'name': 'a', 'nodes': []}], 'partition "a" has no nodes'),
    ([{'name': 'a', 'default': True}, {'name': 'b', 'default': True}], '2 partitions are marked default; at most one may be'),
])
def test_partition_lines_errors(partitions, message):
    with pytest.raises(ValueError) as err:
        partition_lines(partitions, NAMES)
    assert message in str(err.value)


@pytest.mark.parametrize('values, extra, expected', [
    (['gpu:h100:8', 'gpu:1g.10gb:14,gpu:a100:2,mps:200', ''], (), 'gpu,mps'),
    (['', ''], (), ''),
    (['gpu:a100:1'], ('shard',), 'gpu,shard'),
])
def test_gres_types(values, extra, expected):
    assert gres_types(values, extra) == expected


def test_parse_gres_value():
    assert parse_gres_value('gpu:1g.10gb:7,gpu:a100:2,mps:200,bandwidth') == [
        ('gpu', '1g.10gb', 7), ('gpu', 'a100', 2), ('mps', None, 200), ('bandwidth', None, 1)]
    with pytest.raises(ValueError) as err:
        parse_gres_value('gpu:a:b:c')
    assert 'Gres item "gpu:a:b:c" is not NAME[:TYPE]:COUNT (e.g. "gpu:a100:2")' in str(err.value)


GRES_CONF = [
    'Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13',
    'Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-15',
    'Name=mps Count=100 File=/dev/nvidia1',
]


@pytest.mark.parametrize('gres, lines, expected', [
    ('gpu:1g.10gb:1,gpu:a100:1,mps:100', GRES_CONF, []),
    ('gpu:2g.20gb:1', GRES_CONF,
     ['node gpu-01: slurm.conf declares Gres=gpu:2g.20gb but its gres.conf has no Name=gpu Type=2g.20gb line (types there: 1g.10gb, a100)']),
    ('shard:8', GRES_CONF, ['node gpu-01: slurm.conf declares Gres=shard but its gres.conf has no Name=shard line']),
    ('gpu:h100:8', [], ['node gpu-01: slurm.conf declares Gres=gpu:h100 but its gres.conf has no Name=gpu Type=h100 line (types there: none)']),
    ('gpu:h100:8', ['AutoDetect=nvml'], []),
    ('', [], []),
])
def test_check_gres_consistency(gres, lines, expected):
    assert check_gres_consistency('gpu-01', gres, lines) == expected


OLD = """# header
ClusterName=sim
SlurmctldHost=ctl
SelectType=select/cons_tres
SchedulerType=sched/backfill
Prolog=/usr/lib/x/prolog
NodeName=gpu-[01-02] CPUs=2 RealMemory=1000 Gres=gpu:h100:8
PartitionName=batch Nodes=ALL Default=YES
"""


def _edit(old, new):
    return OLD.replace(old, new)


@pytest.mark.parametrize('new, expected, reason', [
    (OLD, (False, False, False), None),
    (_edit('# header', '# other header'), (False, False, False), 'only comments or layout changed: nothing to do'),
    (_edit('Prolog=/usr/lib/x/prolog', 'Prolog=/usr/lib/y/prolog'), (False, False, True), 'prolog changed: scontrol reconfigure'),
    (_edit('Default=YES', 'Default=YES MaxTime=10'), (False, False, True), 'partitions or other lines changed: scontrol reconfigure'),
    (_edit('sched/backfill', 'sched/builtin'), (True, False, False), 'schedulertype changed: restart slurmctld'),
    (_edit('sched/backfill\nProlog=/usr/lib/x/prolog', 'sched/builtin\nProlog=/p'), (True, False, True), 'prolog changed: scontrol reconfigure'),
    (_edit('select/cons_tres', 'select/linear'), (True, True, False), 'selecttype changed: restart slurmctld and slurmd'),
    (_edit('gpu:h100:8', 'gpu:h100:7'), (True, True, False),
     'node definitions changed (changed gpu-[01-02]): restart slurmctld and slurmd'),
    (_edit('gpu-[01-02]', 'gpu-[01-03]'), (True, True, False), 'node definitions changed (added gpu-03): restart slurmctld and slurmd'),
    (_edit('gpu-[01-02]', 'gpu-01'), (True, True, False), 'node definitions changed (removed gpu-02): restart slurmctld and slurmd'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nGresTypes=gpu\n'), (True, True, False), 'grestypes changed: restart slurmctld and slurmd'),
])
def test_change_actions(new, expected, reason):
    _check_actions(change_actions(OLD, new), expected, reason)


def _check_actions(result, expected, reason):
    assert (result['restart_slurmctld'], result['restart_slurmd'], result['reconfigure']) == expected
    if reason:
        assert reason in result['reasons']
    else:
        assert result['reasons'] == []


# Slurm 23.11 and later: scontrol reconfigure restarts the daemons itself and takes node changes; only TCP
# listening settings, AuthType and CredType need a restart (slurm.conf(5) of 24.11).
@pytest.mark.parametrize('new, expected, reason', [
    (OLD, (False, False, False), None),
    (_edit('Prolog=/usr/lib/x/prolog', 'Prolog=/usr/lib/y/prolog'), (False, False, True), 'prolog changed: scontrol reconfigure'),
    (_edit('sched/backfill', 'sched/builtin'), (False, False, True), 'schedulertype changed: scontrol reconfigure'),
    (_edit('select/cons_tres', 'select/linear'), (False, False, True), 'selecttype changed: scontrol reconfigure'),
    (_edit('gpu:h100:8', 'gpu:h100:7'), (False, False, True), 'node definitions changed (changed gpu-[01-02]): scontrol reconfigure'),
    (_edit('gpu-[01-02]', 'gpu-[01-03]'), (False, False, True), 'node definitions changed (added gpu-03): scontrol reconfigure'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nGresTypes=gpu\n'), (False, False, True), 'grestypes changed: scontrol reconfigure'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nSlurmdPort=7000\n'), (True, True, False), 'slurmdport changed: restart slurmctld and slurmd'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nSlurmctldPort=7000\n'), (True, True, False),
     'slurmctldport changed: restart slurmctld and slurmd'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nAuthType=auth/slurm\n'), (True, True, False), 'authtype changed: restart slurmctld and slurmd'),
    (_edit('ClusterName=sim\n', 'ClusterName=sim\nCommunicationParameters=NoInAddrAny\n'), (True, True, False),
     'communicationparameters changed: restart slurmctld and slurmd'),
])
def test_change_actions_reconfigure_restarts(new, expected, reason):
    _check_actions(change_actions(OLD, new, reconfigure_restarts=True), expected, reason)


@pytest.mark.parametrize('old', ['', None, '\n'])
@pytest.mark.parametrize('reconfigure_restarts', [False, True])
def test_change_actions_first_install_any_release(old, reconfigure_restarts):
    assert change_actions(old, OLD, reconfigure_restarts=reconfigure_restarts)['restart_slurmctld'] is True


@pytest.mark.parametrize('old', ['', None, '\n'])
def test_change_actions_first_install(old):
    assert change_actions(old, OLD) == {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False,
                                        'reasons': ['no previous slurm.conf']}


def test_parse_conf():
    parsed = parse_conf(OLD + 'Include /etc/slurm/extra.conf\nSchedulerParameters=a=1,b\n')
    assert parsed['settings']['clustername'] == 'sim'
    assert parsed['settings']['schedulerparameters'] == 'a=1,b'
    assert sorted(parsed['nodes']) == ['gpu-01', 'gpu-02']
    assert parsed['nodes']['gpu-01']['gres'] == 'gpu:h100:8'
    assert parsed['partitions'] == {'batch': {'nodes': 'ALL', 'default': 'YES'}}
    assert parsed['other'] == ['Include /etc/slurm/extra.conf']


H100_LINES = ['Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-15', 'Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-15']


@pytest.mark.parametrize('nodes, expected', [
    ([], []),
    ([{'name': 'gpu-01', 'gres_conf_lines': H100_LINES}, {'name': 'gpu-02', 'gres_conf_lines': H100_LINES}],
     ['NodeName=gpu-[01-02] ' + H100_LINES[0], 'NodeName=gpu-[01-02] ' + H100_LINES[1]]),
    ([{'name': 'gpu-01', 'gres_conf_lines': H100_LINES, 'gres_conf_comments': ['NVML shows 2 GPUs']},
      {'name': 'gpu-02', 'gres_conf_lines': ['AutoDetect=nvml']}, {'name': 'cpu-01', 'gres_conf_lines': []},
      {'name': 'gpu-03', 'gres_conf_lines': H100_LINES, 'gres_conf_comments': ['NVML shows 2 GPUs']}],
     ['# gpu-[01,03]: NVML shows 2 GPUs', 'NodeName=gpu-[01,03] ' + H100_LINES[0], 'NodeName=gpu-[01,03] ' + H100_LINES[1],
      'NodeName=gpu-02 AutoDetect=nvml']),
])
def test_cluster_gres_lines(nodes, expected):
    assert cluster_gres_lines(nodes) == expected
    assert gres_conf_file_lines(nodes, node_names=True) == expected


@pytest.mark.parametrize('nodes, message', [
    ([{'name': 'gpu-01', 'gres_conf_lines': ['NodeName=gpu-01 Name=gpu File=/dev/nvidia0']}], 'already names nodes'),
    ([{'name': 'gpu-01'}, {'name': 'gpu-01'}], 'node "gpu-01" is listed twice'),
    (['gpu-01'], 'each node must be a dict'),
    ([{'name': 'bad name'}], 'bad name'),
])
def test_cluster_gres_lines_refuses(nodes, message):
    with pytest.raises(ValueError, match=message):
        cluster_gres_lines(nodes)


def test_a_nodes_own_gres_conf():
    node = {'name': 'gpu-01', 'gres_conf_lines': H100_LINES, 'gres_conf_comments': ['a', 'b']}
    assert gres_conf_file_lines([node]) == ['# a', '# b'] + H100_LINES
    with pytest.raises(ValueError, match='exactly one node'):
        gres_conf_file_lines([node, node])


@pytest.mark.parametrize('defaults, overrides, expected', [
    ({'StorageLoc': 'slurm_acct_db', 'StoragePort': 3306}, {}, {'StorageLoc': 'slurm_acct_db', 'StoragePort': '3306'}),
    # the admin's spelling of a key the defaults have gives way to the defaults'; a new key keeps its own
    ({'StorageLoc': 'slurm_acct_db'}, {'storageloc': 'acct', 'PurgeJobAfter': '12months'},
     {'StorageLoc': 'acct', 'PurgeJobAfter': '12months'}),
    ({'StorageLoc': 'slurm_acct_db', 'DebugLevel': 'info'}, {'debuglevel': None}, {'StorageLoc': 'slurm_acct_db'}),
])
def test_settings_dict(defaults, overrides, expected):
    assert settings_dict(defaults, overrides) == expected


# === edge cases (formerly test_slurm_conf_edges.py): _slurm_conf edge cases: the exact error messages, boundaries, the inventory group names of the
# preflight, parsing details.

SITE_GROUPS = {'controller': 'slurm_controller', 'compute': 'slurm_compute', 'gpu': 'gpu_nodes'}


# --- preflight_errors -------------------------------------------------------------------------

@pytest.mark.parametrize('controllers, compute, gpu_nodes, group_names, expected', [
    # the slurm role: generic group names, an absent group is empty
    (None, None, None, None,
     ['the controller group is empty: put exactly one host in it (slurmctld runs there)',
      'the compute group is empty: put at least one host in it (slurmd runs there)']),
    (['ctl'], ['gpu-01'], ['gpu-01', 'gpu-03', 'gpu-04'], None,
     ['hosts of the GPU group must also be in the compute group (GPUs are scheduled as GRES of compute nodes), these are not: gpu-03, gpu-04']),
    (['ctl'], ['gpu-01', 'gpu-02'], ['gpu-02', 'gpu-01'], None, []),
    (['ctl'], ['gpu-01'], [], None, []),
    # site.yml: the inventory groups by name; a group given as None is missing, an empty one empty
    (None, None, None, SITE_GROUPS,
     ['inventory group slurm_controller is missing: put exactly one host in it (slurmctld runs there)',
      'inventory group slurm_compute is missing: put at least one host in it (slurmd runs there)']),
    ([], [], None, SITE_GROUPS,
     ['inventory group slurm_controller is empty: put exactly one host in it (slurmctld runs there)',
      'inventory group slurm_compute is empty: put at least one host in it (slurmd runs there)']),
    (['c1', 'c2'], ['gpu-01'], ['gpu-02'], SITE_GROUPS,
     ['inventory group slurm_controller has 2 hosts (c1, c2): exactly one is supported until slurmctld HA is',
      'hosts of inventory group gpu_nodes must also be in inventory group slurm_compute (GPUs are scheduled as GRES of compute nodes), '
      'these are not: gpu-02']),
    # only some groups named: the others keep their generic names
    (None, ['gpu-01'], ['gpu-09'], {'gpu': 'gpus'},
     ['the controller group is missing: put exactly one host in it (slurmctld runs there)',
      'hosts of inventory group gpus must also be in the compute group (GPUs are scheduled as GRES of compute nodes), these are not: gpu-09']),
])
def test_preflight_errors_group_names(controllers, compute, gpu_nodes, group_names, expected):
    assert preflight_errors(controllers, compute, gpu_nodes=gpu_nodes, group_names=group_names) == expected


# --- parse_slurmd_c ----------------------------------------------------------------------------

LONG = 'slurmd: error: ' + 'x' * 300


@pytest.mark.parametrize('text, message', [
    ('  \n', 'slurmd -C printed nothing; expected a line like "NodeName=gpu-01 CPUs=64 ... RealMemory=515000"'),
    (5, 'slurmd -C printed nothing; expected a line like "NodeName=gpu-01 CPUs=64 ... RealMemory=515000"'),
    ('slurmd: fatal\n', "slurmd -C output has no \"NodeName=\" line: 'slurmd: fatal'"),
    (LONG, 'slurmd -C output has no "NodeName=" line: %r' % LONG[:200]),
    ('NodeName=a CPUs=2 x RealMemory=1', "slurmd -C line has \"x\", which is not KEY=VALUE: 'NodeName=a CPUs=2 x RealMemory=1'"),
    ('NodeName=a CPUs=2=3 RealMemory=1', 'slurmd -C reports CPUs=2=3; expected a whole number'),
    ('NodeName=a CPUs=-2 RealMemory=1', 'slurmd -C reports CPUs=-2; expected a whole number'),
    ('NodeName=a RealMemory=1', "slurmd -C line lacks CPUs=: 'NodeName=a RealMemory=1'"),
])
def test_parse_slurmd_c_messages(text, message):
    with pytest.raises(ValueError) as err:
        parse_slurmd_c(text)
    assert str(err.value) == message


@pytest.mark.parametrize('text, expected', [
    # the value is everything after the first '='; keys slurmd -C prints that are not hardware are left out
    ('NodeName=a=b CPUs=2 RealMemory=1 Features=x=y', {'NodeName': 'a=b', 'CPUs': 2, 'RealMemory': 1}),
    ('  NodeName=n CPUs=1 RealMemory=1  \nNodeName=other CPUs=9 RealMemory=9', {'NodeName': 'n', 'CPUs': 1, 'RealMemory': 1}),
])
def test_parse_slurmd_c_values(text, expected):
    assert parse_slurmd_c(text) == expected


# --- node_params --------------------------------------------------------------------------------

@pytest.mark.parametrize('args, kwargs, expected', [
    # no reserve by default
    (({'CPUs': 2, 'RealMemory': 1000},), {}, [('CPUs', '2'), ('RealMemory', '1000')]),
    # a reserve may leave exactly 1 MB
    (({'CPUs': 2, 'RealMemory': 1000},), {'memory_reserve_mb': 999}, [('CPUs', '2'), ('RealMemory', '1')]),
    (({'RealMemory': 2},), {'memory_reserve_mb': 1}, [('RealMemory', '1')]),
    (({'CPUs': 2},), {'gres': '', 'extra': {}}, [('CPUs', '2')]),
])
def test_node_params_edges(args, kwargs, expected):
    assert node_params(*args, **kwargs) == expected


@pytest.mark.parametrize('reserve, extra, message', [
    (1000, None, 'memory reserve 1000 MB leaves no memory on a node with RealMemory=1000'),
    (-1, None, 'memory reserve -1 must be a non-negative number of MB'),
    ('8', None, "memory reserve '8' must be a non-negative number of MB"),
    (0, ['Weight=1'], "node parameter overrides ['Weight=1'] must be a dictionary of KEY: value"),
    (0, {'Bad Key': 1}, "node parameter key 'Bad Key' is not a slurm.conf key (letters and digits, e.g. \"SchedulerType\")"),
    (0, {'Features': 'a b'}, "node parameter Features='a b' contains spaces; quote it (\"\\\"...\\\"\") or remove them"),
    (0, {'Features': '"a b'}, "node parameter Features='\"a b' contains spaces; quote it (\"\\\"...\\\"\") or remove them"),
    (0, {'Features': 'a b"'}, "node parameter Features='a b\"' contains spaces; quote it (\"\\\"...\\\"\") or remove them"),
    (0, {'Features': ' '}, "node parameter Features=' ': the value must be non-empty, on one line and without \"#\""),
])
def test_node_params_messages(reserve, extra, message):
    with pytest.raises(ValueError) as err:
        node_params({'CPUs': 2, 'RealMemory': 1000}, None, extra, reserve)
    assert str(err.value) == message


# --- merge_settings and combine_settings ---------------------------------------------------------------

@pytest.mark.parametrize('defaults, overrides, message', [
    (['A=1'], None, "slurm.conf defaults ['A=1'] must be a dictionary of KEY: value"),
    ({'A': 1}, 'B=2', "slurm.conf setting overrides 'B=2' must be a dictionary of KEY: value"),
    ({'A': 1}, {'B': 'x#y'}, "slurm.conf setting B='x#y': the value must be non-empty, on one line and without \"#\""),
    ({'A': 1}, {'B-C': 1}, "slurm.conf setting key 'B-C' is not a slurm.conf key (letters and digits, e.g. \"SchedulerType\")"),
    # a key that is not a string is named, whatever the other keys are
    ({'A': 1}, {'Z': 1, 1: 'x'}, "slurm.conf setting key 1 is not a slurm.conf key (letters and digits, e.g. \"SchedulerType\")"),
])
def test_merge_settings_messages(defaults, overrides, message):
    with pytest.raises(ValueError) as err:
        merge_settings(defaults, overrides)
    assert str(err.value) == message


@pytest.mark.parametrize('dicts, expected', [
    ([], {}),
    (({'A': 1}, {'b': 2}), {'A': 1, 'b': 2}),
    ([{'SelectType': 'x', 'B': 1}, {'selecttype': 'y'}], {'B': 1, 'selecttype': 'y'}),
])
def test_combine_settings(dicts, expected):
    assert combine_settings(dicts) == expected


@pytest.mark.parametrize('dicts, message', [
    ({'A': 1}, "slurm.conf contributions {'A': 1} must be a list of dictionaries of KEY: value"),
    ([{'A': 1}, 'B=2'], "slurm.conf contribution 'B=2' must be a dictionary of KEY: value"),
])
def test_combine_settings_messages(dicts, message):
    with pytest.raises(ValueError) as err:
        combine_settings(dicts)
    assert str(err.value) == message


# --- node_lines ----------------------------------------------------------------------------------

@pytest.mark.parametrize('nodes, expected', [
    (['gpu-01', 'gpu-02'], ['NodeName=gpu-[01-02]']),
    ([{'name': 'gpu-01', 'params': [('CPUs', 2)]}, 'gpu-02'], ['NodeName=gpu-01 CPUs=2', 'NodeName=gpu-02']),
])
def test_node_lines_of_bare_names(nodes, expected):
    assert node_lines(nodes) == expected


@pytest.mark.parametrize('nodes, message', [
    ([{'name': 'a'}, {'name': 'a', 'params': [('CPUs', '2')]}], 'node "a" is listed twice; each node needs exactly one NodeName entry'),
    ([None], 'node name None is not one Slurm accepts: a host name of letters, digits and "-" (not first or last in a label), '
             'labels joined with ".", no "_", spaces, brackets, commas, "=" or "#" (e.g. "gpu-01")'),
    (['a b'], "node name 'a b' is not one Slurm accepts: a host name of letters, digits and \"-\" (not first or last in a label), "
              'labels joined with ".", no "_", spaces, brackets, commas, "=" or "#" (e.g. "gpu-01")'),
])
def test_node_lines_messages(nodes, message):
    with pytest.raises(ValueError) as err:
        node_lines(nodes)
    assert str(err.value) == message


# --- partition_lines ------------------------------------------------------------------------------


@pytest.mark.parametrize('partitions, names, message', [
    ({'name': 'batch'}, NAMES, "slurm partitions {'name': 'batch'} must be a non-empty list of {name: ..., nodes: ...}"),
    ([], NAMES, 'slurm partitions [] must be a non-empty list of {name: ..., nodes: ...}'),
    (['batch'], NAMES, "partition 'batch' needs at least a \"name\" key"),
    ([{'nodes': 'ALL'}], NAMES, "partition {'nodes': 'ALL'} needs at least a \"name\" key"),
    ([{'name': 'default'}], NAMES, "partition name 'default' is not valid: use letters, digits, \".\", \"_\", \"-\" (and not DEFAULT)"),
    ([{'name': 7}], NAMES, "partition name 7 is not valid: use letters, digits, \".\", \"_\", \"-\" (and not DEFAULT)"),
    ([{'name': 'a'}, {'name': 'b'}, {'name': 'a'}], NAMES, 'partition "a" is defined twice'),
    ([{'name': 'a', 'nodes': ()}], NAMES, 'partition "a" has no nodes'),
    ([{'name': 'a', 'nodes': ['gpu-09', 'gpu-01', 'cpu-2']}], NAMES,
     'partition "a" names nodes that are not configured: gpu-09, cpu-2 (configured: cpu-1, gpu-01, gpu-02)'),
    ([{'name': 'a', 'nodes': 'gpu-01'}], [], 'partition "a" names nodes that are not configured: gpu-01 (configured: none)'),
    ([{'name': 'a', 'options': {'Max Time': 1}}], NAMES,
     'partition "a" key \'Max Time\' is not a slurm.conf key (letters and digits, e.g. "SchedulerType")'),
    ([{'name': 'a', 'options': ['MaxTime=1']}], NAMES, 'partition "a" overrides [\'MaxTime=1\'] must be a dictionary of KEY: value'),
    ([{'name': 'a', 'default': True}, {'name': 'b', 'default': 'yes'}, {'name': 'c', 'default': True}], NAMES,
     '3 partitions are marked default; at most one may be'),
])
def test_partition_lines_messages(partitions, names, message):
    with pytest.raises(ValueError) as err:
        partition_lines(partitions, names)
    assert str(err.value) == message


# --- gres_types, parse_gres_value, parse_gres_conf_types, check_gres_consistency ---------------------

@pytest.mark.parametrize('values, extra, expected', [
    (['gpu:a100:1,,mps:100', None], (), 'gpu,mps'),
    ([' gpu:a100:1 , shard:8'], ('mps', 'shard'), 'gpu,shard,mps'),
    ([], ('shard', 'mps'), 'shard,mps'),
    ([], (), ''),
])
def test_gres_types_edges(values, extra, expected):
    assert gres_types(values, extra) == expected


@pytest.mark.parametrize('value, expected', [
    ('gpu:a100:2,,mps:100', [('gpu', 'a100', 2), ('mps', None, 100)]),
    (' gpu , ', [('gpu', None, 1)]),
    (None, []),
])
def test_parse_gres_value_edges(value, expected):
    assert parse_gres_value(value) == expected


@pytest.mark.parametrize('value, message', [
    ('gpu:a100:x', 'Gres item "gpu:a100:x" is not NAME[:TYPE]:COUNT (e.g. "gpu:a100:2")'),
    ('gpu:a100', 'Gres item "gpu:a100" is not NAME[:TYPE]:COUNT (e.g. "gpu:a100:2")'),
])
def test_parse_gres_value_messages(value, message):
    with pytest.raises(ValueError) as err:
        parse_gres_value(value)
    assert str(err.value) == message


@pytest.mark.parametrize('lines, expected', [
    # a comment ends the line at its first '#', whatever follows; blank and comment lines are skipped
    (['Name=gpu # Type=a100 # old', 'Name=mps Count=100'], {('gpu', None), ('mps', None)}),
    (['', '# header', 'Name=gpu Type=1g.10gb File=/dev/nvidia0'], {('gpu', '1g.10gb')}),
    # the value is everything after the first '='; keys in any case
    (['name=gpu type=x=y File=/dev/nvidia0'], {('gpu', 'x=y')}),
    (['File=/dev/nvidia0', 'Name=shard Count=8'], {('shard', None)}),
])
def test_parse_gres_conf_types(lines, expected):
    assert parse_gres_conf_types(lines) == expected


def test_check_gres_consistency_names_only_the_types_of_that_gres():
    lines = ['Name=gpu Type=a100 File=/dev/nvidia0', 'Name=shard Type=big Count=8', 'Name=mps Count=100']
    assert check_gres_consistency('gpu-01', 'gpu:h100:1,mps:100,shard:big:2', lines) == [
        'node gpu-01: slurm.conf declares Gres=gpu:h100 but its gres.conf has no Name=gpu Type=h100 line (types there: a100)']


# --- parse_conf ------------------------------------------------------------------------------------

EMPTY = {'settings': {}, 'nodes': {}, 'partitions': {}, 'other': []}


@pytest.mark.parametrize('text, expected', [
    (None, EMPTY),
    ('', EMPTY),
    ('# only a comment\n\n', EMPTY),
    # comments end at the first '#'
    ('Prolog=/p # run # before\n', dict(EMPTY, settings={'prolog': '/p'})),
    # a value with spaces keeps all of it; a value with '=' keeps all after the first '='
    ('SchedulerParameters=a=1 b=2\n', dict(EMPTY, settings={'schedulerparameters': 'a=1 b=2'})),
    ('SuspendExcParts=a b c\nReturnToService=2\n', dict(EMPTY, settings={'suspendexcparts': 'a b c', 'returntoservice': '2'})),
    # node parameters: every one, lower-case keys, values after the first '='
    ('NodeName=gpu-[01-02] CPUs=2 RealMemory=1000 Features=a=b\n',
     dict(EMPTY, nodes={'gpu-01': {'cpus': '2', 'realmemory': '1000', 'features': 'a=b'},
                        'gpu-02': {'cpus': '2', 'realmemory': '1000', 'features': 'a=b'}})),
    # a node name that is not a hostlist stays as written
    ('NodeName=gpu-[01 CPUs=2\n', dict(EMPTY, nodes={'gpu-[01': {'cpus': '2'}})),
    ('PartitionName=batch Nodes=ALL MaxTime=INFINITE noequals\n',
     dict(EMPTY, partitions={'batch': {'nodes': 'ALL', 'maxtime': 'INFINITE'}})),
    ('include /etc/slurm/extra.conf\n', dict(EMPTY, other=['include /etc/slurm/extra.conf'])),
])
def test_parse_conf_edges(text, expected):
    assert parse_conf(text) == expected


# --- change_actions: the whole result -----------------------------------------------------------------

SMALL_OLD = """ClusterName=sim
SchedulerType=sched/backfill
Prolog=/p
NodeName=gpu-[01-02] CPUs=2 RealMemory=1000
PartitionName=batch Nodes=ALL Default=YES
"""


def _edit_small(old, new):
    return SMALL_OLD.replace(old, new)


@pytest.mark.parametrize('new, expected', [
    (_edit_small('Prolog=/p', 'Prolog=/q'),
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True, 'reasons': ['prolog changed: scontrol reconfigure']}),
    (_edit_small('sched/backfill', 'sched/builtin'),
     {'restart_slurmctld': True, 'restart_slurmd': False, 'reconfigure': False, 'reasons': ['schedulertype changed: restart slurmctld']}),
    (_edit_small('sched/backfill\nProlog=/p', 'sched/builtin\nProlog=/q'),
     {'restart_slurmctld': True, 'restart_slurmd': False, 'reconfigure': True,
      'reasons': ['prolog changed: scontrol reconfigure', 'schedulertype changed: restart slurmctld']}),
    (_edit_small('ClusterName=sim', 'ClusterName=other'),
     {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False,
      'reasons': ['clustername changed: restart slurmctld and slurmd']}),
    (_edit_small('Prolog=/p\n', '') + 'PartitionName=debug Nodes=gpu-01\n',
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True,
      'reasons': ['prolog changed: scontrol reconfigure', 'partitions or other lines changed: scontrol reconfigure']}),
    # nodes added, removed and changed at once: every kind named; both daemons restart, no reconfigure
    (_edit_small('NodeName=gpu-[01-02] CPUs=2 RealMemory=1000', 'NodeName=gpu-01 CPUs=4 RealMemory=1000\nNodeName=gpu-[03-04] CPUs=2')
     .replace('Prolog=/p', 'Prolog=/q'),
     {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False,
      'reasons': ['prolog changed: scontrol reconfigure',
                  'node definitions changed (added gpu-[03-04]; removed gpu-02; changed gpu-01): restart slurmctld and slurmd']}),
    (_edit_small('ClusterName=sim', '# a comment\nClusterName=sim   '),
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': False, 'reasons': ['only comments or layout changed: nothing to do']}),
])
def test_change_actions_whole_result(new, expected):
    assert change_actions(SMALL_OLD, new) == expected


def test_render_pairs():
    assert render_pairs([]) == []
    assert render_pairs([('A', '1'), ('b', 'x=y')]) == ['A=1', 'b=x=y']
