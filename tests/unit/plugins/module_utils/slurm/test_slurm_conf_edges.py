# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_conf edge cases: the exact error messages, boundaries, the inventory group names of the preflight, parsing details.

test_slurm_conf.py covers the main paths; these tables pin each message whole
(``==``, not ``in``) and the values at the edges.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import (
    change_actions,
    check_gres_consistency,
    combine_settings,
    gres_types,
    merge_settings,
    node_lines,
    node_params,
    parse_conf,
    parse_gres_conf_types,
    parse_gres_value,
    parse_slurmd_c,
    partition_lines,
    preflight_errors,
    render_pairs,
)

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

NAMES = ['gpu-01', 'gpu-02', 'cpu-1']


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

OLD = """ClusterName=sim
SchedulerType=sched/backfill
Prolog=/p
NodeName=gpu-[01-02] CPUs=2 RealMemory=1000
PartitionName=batch Nodes=ALL Default=YES
"""


def _edit(old, new):
    return OLD.replace(old, new)


@pytest.mark.parametrize('new, expected', [
    (_edit('Prolog=/p', 'Prolog=/q'),
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True, 'reasons': ['prolog changed: scontrol reconfigure']}),
    (_edit('sched/backfill', 'sched/builtin'),
     {'restart_slurmctld': True, 'restart_slurmd': False, 'reconfigure': False, 'reasons': ['schedulertype changed: restart slurmctld']}),
    (_edit('sched/backfill\nProlog=/p', 'sched/builtin\nProlog=/q'),
     {'restart_slurmctld': True, 'restart_slurmd': False, 'reconfigure': True,
      'reasons': ['prolog changed: scontrol reconfigure', 'schedulertype changed: restart slurmctld']}),
    (_edit('ClusterName=sim', 'ClusterName=other'),
     {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False,
      'reasons': ['clustername changed: restart slurmctld and slurmd']}),
    (_edit('Prolog=/p\n', '') + 'PartitionName=debug Nodes=gpu-01\n',
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': True,
      'reasons': ['prolog changed: scontrol reconfigure', 'partitions or other lines changed: scontrol reconfigure']}),
    # nodes added, removed and changed at once: every kind named; both daemons restart, no reconfigure
    (_edit('NodeName=gpu-[01-02] CPUs=2 RealMemory=1000', 'NodeName=gpu-01 CPUs=4 RealMemory=1000\nNodeName=gpu-[03-04] CPUs=2')
     .replace('Prolog=/p', 'Prolog=/q'),
     {'restart_slurmctld': True, 'restart_slurmd': True, 'reconfigure': False,
      'reasons': ['prolog changed: scontrol reconfigure',
                  'node definitions changed (added gpu-[03-04]; removed gpu-02; changed gpu-01): restart slurmctld and slurmd']}),
    (_edit('ClusterName=sim', '# a comment\nClusterName=sim   '),
     {'restart_slurmctld': False, 'restart_slurmd': False, 'reconfigure': False, 'reasons': ['only comments or layout changed: nothing to do']}),
])
def test_change_actions_whole_result(new, expected):
    assert change_actions(OLD, new) == expected


def test_render_pairs():
    assert render_pairs([]) == []
    assert render_pairs([('A', '1'), ('b', 'x=y')]) == ['A=1', 'b=x=y']
