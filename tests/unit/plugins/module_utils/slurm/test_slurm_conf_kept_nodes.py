# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A compute node outside --limit that cannot be read keeps its last known definition (issue 50, item 4).

The NodeName lines of the controller's slurm.conf (and, configless, its gres.conf lines) become the node's entry;
rendered again by slurm_conf_lines, the node's line is the controller's, pair for pair, so no restart follows.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.slurm import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import (
    change_actions,
    entry_params,
    gres_conf_file_lines,
    gres_conf_node_lines,
    kept_node_record,
    kept_nodes,
    node_name_candidates,
    parse_node_definitions,
)

FILTERS = FilterModule().filters()
HW = 'CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=2 RealMemory=7000'
HW_PAIRS = [('CPUs', '4'), ('Boards', '1'), ('SocketsPerBoard', '1'), ('CoresPerSocket', '2'), ('ThreadsPerCore', '2'),
            ('RealMemory', '7000')]


# --- parse_node_definitions: the NodeName lines, per node ------------------------------------------------------------

@pytest.mark.parametrize('text, nodes', [
    pytest.param('NodeName=gpu-01 %s\n' % HW, {'gpu-01': HW_PAIRS}, id='one-node'),
    pytest.param('NodeName=gpu-[01-02] CPUs=4 Gres=gpu:a100:1\n',
                 {'gpu-01': [('CPUs', '4'), ('Gres', 'gpu:a100:1')], 'gpu-02': [('CPUs', '4'), ('Gres', 'gpu:a100:1')]},
                 id='hostlist'),
    pytest.param('NodeName=a,b[1-2] CPUs=2\n', {'a': [('CPUs', '2')], 'b1': [('CPUs', '2')], 'b2': [('CPUs', '2')]},
                 id='comma-list-and-brackets'),
    pytest.param('nodename=gpu-01 cpus=4\n', {'gpu-01': [('cpus', '4')]}, id='keys-in-any-case-kept-as-written'),
    pytest.param('# NodeName=gpu-09 CPUs=1\nNodeName=gpu-01 CPUs=4  # four\n', {'gpu-01': [('CPUs', '4')]},
                 id='comments-left-out'),
    pytest.param('NodeName=gpu-01 CPUs=4 \\\n    RealMemory=7000 \\\n    Gres=gpu:1\n',
                 {'gpu-01': [('CPUs', '4'), ('RealMemory', '7000'), ('Gres', 'gpu:1')]}, id='continuation-lines'),
    pytest.param('NodeName=gpu-01 CPUs=4 # note \\\nNodeName=gpu-02 CPUs=8\n',
                 {'gpu-01': [('CPUs', '4')], 'gpu-02': [('CPUs', '8')]}, id='backslash-in-a-comment-continues-nothing'),
    pytest.param('NodeName=gpu-01 Features=a\\#b\n', {'gpu-01': [('Features', 'a#b')]}, id='escaped-hash'),
    pytest.param('NodeName=gpu-01 Features="big mem" CPUs=4\n', {'gpu-01': [('Features', '"big mem"'), ('CPUs', '4')]},
                 id='quoted-value-with-a-space'),
    pytest.param('NodeName=DEFAULT CPUs=4 RealMemory=7000\nNodeName=gpu-01 RealMemory=6000 Weight=2\nNodeName=DEFAULT CPUs=8\n'
                 'NodeName=gpu-02\n',
                 {'gpu-01': [('CPUs', '4'), ('RealMemory', '6000'), ('Weight', '2')],
                  'gpu-02': [('CPUs', '8'), ('RealMemory', '7000')]},
                 id='default-lines-apply-below-them'),
    pytest.param('NodeName=gpu-[01-02] NodeAddr=10.0.0.[1-2] NodeHostname=n1,n2 CPUs=4\n',
                 {'gpu-01': [('NodeAddr', '10.0.0.1'), ('NodeHostname', 'n1'), ('CPUs', '4')],
                  'gpu-02': [('NodeAddr', '10.0.0.2'), ('NodeHostname', 'n2'), ('CPUs', '4')]},
                 id='nodeaddr-one-per-node'),
    pytest.param('NodeName=gpu-[01-02] NodeAddr=10.0.0.9 CPUs=4\n',
                 {'gpu-01': [('NodeAddr', '10.0.0.9'), ('CPUs', '4')], 'gpu-02': [('NodeAddr', '10.0.0.9'), ('CPUs', '4')]},
                 id='nodeaddr-one-for-all-kept'),
    pytest.param('ClusterName=x\nPartitionName=batch Nodes=ALL\nDownNodes=gpu-01 State=DOWN\nNodeSet=ns Nodes=gpu-01\n'
                 'SlurmctldHost=ctl\n', {}, id='other-lines-ignored'),
    pytest.param('', {}, id='empty'),
])
def test_parse_node_definitions(text, nodes):
    parsed = parse_node_definitions(text)
    assert parsed['nodes'] == nodes
    assert parsed['problems'] == []


@pytest.mark.parametrize('text, problems, unusable, nodes', [
    pytest.param('NodeName=gpu-01 CPUs=4\nNodeName=gpu-[01-02] CPUs=8\n',
                 ['line 2: node gpu-01 is already defined on line 1'],
                 {'gpu-01': 'named by two NodeName lines (lines 1 and 2)'}, {'gpu-02': [('CPUs', '8')]},
                 id='node-defined-twice'),
    pytest.param('NodeName=gpu-01 CPUs=4 junk\nNodeName=gpu-02 CPUs=8\n',
                 ['line 1: "junk" is not KEY=VALUE'], {'gpu-01': 'line 1: "junk" is not KEY=VALUE'}, {'gpu-02': [('CPUs', '8')]},
                 id='word-without-equals'),
    pytest.param('NodeName=gpu-01 =4\n', ['line 1: "=4" is not KEY=VALUE'], {'gpu-01': 'line 1: "=4" is not KEY=VALUE'}, {},
                 id='empty-key'),
    pytest.param('NodeName=gpu-[02-01] CPUs=4\n',
                 ['line 1: NodeName=gpu-[02-01] is not a hostlist (hostlist "gpu-[02-01]": range "02-01" runs backwards)'], {}, {},
                 id='bad-hostlist'),
    pytest.param('NodeName=gpu-01 CPUs=4 x\nNodeName=gpu-01 CPUs=8\n',
                 ['line 1: "x" is not KEY=VALUE'], {'gpu-01': 'line 1: "x" is not KEY=VALUE'}, {},
                 id='bad-line-then-a-good-one-stays-unusable'),
])
def test_parse_node_definitions_reports_lines_it_cannot_use(text, problems, unusable, nodes):
    parsed = parse_node_definitions(text)
    assert parsed['problems'] == problems
    assert parsed['unusable'] == unusable
    assert parsed['nodes'] == nodes


def test_parse_node_definitions_lists_include_lines_and_line_numbers():
    parsed = parse_node_definitions('ClusterName=x\nInclude /etc/slurm/nodes.conf\ninclude  /etc/slurm/more.conf\n\n'
                                    'NodeName=gpu-01 \\\n CPUs=4\n')
    assert parsed['includes'] == ['/etc/slurm/nodes.conf', '/etc/slurm/more.conf']
    assert parsed['lines'] == {'gpu-01': 5}


@pytest.mark.parametrize('text', [None, b'NodeName=gpu-01', ['NodeName=gpu-01']])
def test_parse_node_definitions_refuses_what_is_not_text(text):
    with pytest.raises(ValueError, match=r'^slurm.conf text is .*, expected the text of a slurm.conf$'):
        parse_node_definitions(text)


# --- gres_conf_node_lines: a node's lines of the configless gres.conf ------------------------------------------------

GRES_CONF = """# Managed by gpucluster.bringup.slurm from slurm_gres_facts; local changes are overwritten.
# gpu-[01-02]: GPU 0 is MIG
NodeName=gpu-[01-02] Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21
NodeName=gpu-[01-02] Name=gpu Type=a100 File=/dev/nvidia1
NodeName=gpu-03 Name=gpu Type=h100 File=/dev/nvidia0  # own
Name=mps Count=100
"""


@pytest.mark.parametrize('name, lines, comments', [
    ('gpu-02', ['Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21', 'Name=gpu Type=a100 File=/dev/nvidia1'],
     ['GPU 0 is MIG']),
    ('gpu-03', ['Name=gpu Type=h100 File=/dev/nvidia0'], []),
    ('gpu-09', [], []),
])
def test_gres_conf_node_lines(name, lines, comments):
    assert gres_conf_node_lines(GRES_CONF, name) == (lines, comments)


def test_gres_conf_node_lines_refuses_what_is_not_text():
    with pytest.raises(ValueError, match=r'^gres.conf text is None, expected the text of a gres.conf$'):
        gres_conf_node_lines(None, 'gpu-01')


# --- node_name_candidates ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize('host, node_name, fact_hostname, names', [
    ('gpu-02', '', '', ['gpu-02']),
    ('gpu-02', 'n17', 'gpu-02', ['n17']),
    ('gpu-02.example.org', '', '', ['gpu-02.example.org', 'gpu-02']),
    ('gpu-02.example.org', '', 'node02', ['node02', 'gpu-02.example.org', 'gpu-02']),
    ('gpu-02', '', 'gpu-02', ['gpu-02']),
])
def test_node_name_candidates(host, node_name, fact_hostname, names):
    assert node_name_candidates(host, node_name, fact_hostname) == names


# --- kept_nodes -------------------------------------------------------------------------------------------------------

CONF = """# Managed by gpucluster.bringup.slurm; local changes are overwritten.
ClusterName=gpucluster
GresTypes=gpu

NodeName=gpu-[01-02] %s Gres=gpu:a100:2 Features=a100 Weight=10
NodeName=n17 CPUs=2 RealMemory=1000

PartitionName=batch Nodes=ALL Default=YES
""" % HW


def test_kept_nodes_takes_the_line_that_names_each_host():
    kept = kept_nodes(CONF, {'gpu-02': ['gpu-02'], 'cpu-17': ['n17']})
    assert kept['missing'] == {}
    assert kept['nodes']['gpu-02'] == {
        'name': 'gpu-02',
        'hardware': {'NodeName': 'gpu-02', 'CPUs': 4, 'Boards': 1, 'SocketsPerBoard': 1, 'CoresPerSocket': 2, 'ThreadsPerCore': 2,
                     'RealMemory': 7000},
        'gres': 'gpu:a100:2', 'gres_conf_lines': [], 'gres_conf_comments': [],
        'params': {'Features': 'a100', 'Weight': '10'}, 'memory_reserve_mb': 0, 'nvlink_domain': None,
        'conf_params': [list(pair) for pair in HW_PAIRS] + [['Gres', 'gpu:a100:2'], ['Features', 'a100'], ['Weight', '10']]}
    assert kept['nodes']['cpu-17']['name'] == 'n17'
    assert kept['nodes']['cpu-17']['gres'] == ''


@pytest.mark.parametrize('text, hosts, missing', [
    pytest.param(CONF, ['gpu-03'], {'gpu-03': 'no NodeName line names gpu-03'}, id='no-line'),
    pytest.param(CONF, {'gpu-03.x': ['node3', 'gpu-03.x', 'gpu-03']}, {'gpu-03.x': 'no NodeName line names node3/gpu-03.x/gpu-03'},
                 id='no-line-under-any-name'),
    pytest.param('', ['gpu-01'], {'gpu-01': 'no NodeName line names gpu-01'}, id='empty-file'),
    pytest.param('Include /etc/slurm/nodes.conf\n', ['gpu-01'],
                 {'gpu-01': 'no NodeName line names gpu-01 (Include lines are not read: /etc/slurm/nodes.conf)'}, id='include'),
    pytest.param('NodeName=gpu-[0x] CPUs=4\n', ['gpu-01'],
                 {'gpu-01': 'no NodeName line names gpu-01 (lines not understood: line 1: NodeName=gpu-[0x] is not a hostlist '
                            '(hostlist "gpu-[0x]": "[0x]" may hold only numbers, "-" and ","))'}, id='bad-hostlist'),
    pytest.param('NodeName=gpu-01 CPUs=4\nNodeName=gpu-01 CPUs=8\n', ['gpu-01'],
                 {'gpu-01': 'its definition cannot be used: named by two NodeName lines (lines 1 and 2)'}, id='twice'),
    pytest.param('NodeName=gpu-01 CPUs=4 junk\n', ['gpu-01'],
                 {'gpu-01': 'its definition cannot be used: line 1: "junk" is not KEY=VALUE'}, id='bad-word'),
    pytest.param('NodeName=DEFAULT CPUs=4\n', ['DEFAULT', 'gpu-01'],
                 {'DEFAULT': 'no NodeName line names DEFAULT', 'gpu-01': 'no NodeName line names gpu-01'}, id='default-is-no-node'),
])
def test_kept_nodes_names_what_is_missing(text, hosts, missing):
    kept = kept_nodes(text, hosts)
    assert kept['missing'] == missing
    assert kept['nodes'] == {}


def test_kept_nodes_takes_the_first_name_found():
    kept = kept_nodes(CONF, {'x': ['gpu-09', 'n17', 'gpu-01']})
    assert kept['nodes']['x']['name'] == 'n17'


def test_kept_nodes_gives_the_configless_gres_conf_lines():
    kept = kept_nodes(CONF, ['gpu-02'], GRES_CONF)
    node = kept['nodes']['gpu-02']
    assert node['gres_conf_lines'] == ['Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21',
                                       'Name=gpu Type=a100 File=/dev/nvidia1']
    assert node['gres_conf_comments'] == ['GPU 0 is MIG']


@pytest.mark.parametrize('hosts, message', [
    ('gpu-01', r"^hosts is 'gpu-01', expected a list of host names or a dict host -> \[node names\]$"),
    ({'gpu-01': []}, r'^the node names of host gpu-01 are \[\], expected a list of names$'),
    ({'gpu-01': [None]}, r'^the node names of host gpu-01 are \[None\], expected a list of names$'),
])
def test_kept_nodes_refuses_bad_hosts(hosts, message):
    with pytest.raises(ValueError, match=message):
        kept_nodes(CONF, hosts)


# --- the property that matters: the kept node's line is the controller's, so nothing restarts ------------------------

def _facts_node(name, cpus=4, gres='gpu:a100:2', params=None, reserve=0, gres_lines=(), comments=()):
    return {'name': name, 'gres': gres, 'params': params if params is not None else {'Features': 'a100', 'Weight': 10},
            'memory_reserve_mb': reserve, 'gres_conf_lines': list(gres_lines), 'gres_conf_comments': list(comments),
            'hardware': {'NodeName': name, 'CPUs': cpus, 'Boards': 1, 'SocketsPerBoard': 1, 'CoresPerSocket': 2, 'ThreadsPerCore': 2,
                         'RealMemory': 7000}}


def _conf(nodes, partitions=None):
    lines = FILTERS['slurm_conf_lines'](nodes, {'ClusterName': 'gpucluster', 'SlurmctldHost': 'ctl'}, {}, partitions)
    return '\n'.join(lines) + '\n'


@pytest.mark.parametrize('nodes, partitions', [
    pytest.param([_facts_node('gpu-01'), _facts_node('gpu-02'), _facts_node('gpu-03')], None, id='one-line-for-all'),
    pytest.param([_facts_node('gpu-01'), _facts_node('gpu-02', cpus=8, reserve=500), _facts_node('gpu-03')], None,
                 id='own-line-with-memory-reserve'),
    pytest.param([_facts_node('gpu-01'), _facts_node('gpu-02', gres='', params={'Features': 'big', 'Gres': 'gpu:1', 'RealMemory': 6000,
                                                                                'CPUs': None}),
                  _facts_node('gpu-03')], None, id='params-replace-remove-and-add-keys'),
    pytest.param([_facts_node('gpu-01'), _facts_node('gpu-02', params={}), _facts_node('gpu-03')],
                 [{'name': 'batch', 'nodes': 'gpu-[01-02]', 'default': True}, {'name': 'big', 'nodes': ['gpu-02', 'gpu-03']}],
                 id='partition-membership'),
])
def test_a_kept_node_renders_the_controllers_line_and_restarts_nothing(nodes, partitions):
    before = _conf(nodes, partitions)
    kept = FILTERS['slurm_conf_kept_nodes'](before, ['gpu-02'])
    assert kept['missing'] == {}
    after = _conf([n if n['name'] != 'gpu-02' else kept['nodes']['gpu-02'] for n in nodes], partitions)
    assert after == before
    assert change_actions(before, after, reconfigure_restarts=False)['reasons'] == []


def test_a_kept_node_keeps_its_configless_gres_conf_lines():
    nodes = [_facts_node('gpu-01', gres_lines=['Name=gpu Type=a100 File=/dev/nvidia0'], comments=['GPU 0']),
             _facts_node('gpu-02', gres_lines=['Name=gpu Type=a100 File=/dev/nvidia0'], comments=['GPU 0']),
             _facts_node('gpu-03', gres_lines=['Name=gpu Type=h100 File=/dev/nvidia1'])]
    gres_before = '\n'.join(gres_conf_file_lines(nodes, node_names=True)) + '\n'
    kept = FILTERS['slurm_conf_kept_nodes'](_conf(nodes), ['gpu-02'], None, gres_before)
    gres_after = '\n'.join(gres_conf_file_lines([n if n['name'] != 'gpu-02' else kept['nodes']['gpu-02'] for n in nodes],
                                                node_names=True)) + '\n'
    assert gres_after == gres_before


def test_a_hand_written_default_line_gives_the_same_node_values():
    before = 'ClusterName=x\nNodeName=DEFAULT CPUs=4 RealMemory=7000\nNodeName=gpu-[01-02] Gres=gpu:1\n'
    kept = kept_nodes(before, ['gpu-02'])
    assert entry_params(kept['nodes']['gpu-02']) == [('CPUs', '4'), ('RealMemory', '7000'), ('Gres', 'gpu:1')]


# --- entry_params -----------------------------------------------------------------------------------------------------

def test_entry_params_of_a_node_read_from_its_facts_is_node_params():
    node = _facts_node('gpu-01', reserve=1000)
    assert entry_params(node) == HW_PAIRS[:5] + [('RealMemory', '6000'), ('Gres', 'gpu:a100:2'), ('Features', 'a100'), ('Weight', '10')]


def test_entry_params_of_a_kept_node_are_its_pairs_as_they_are():
    node = kept_node_record('gpu-01', [('Weight', '1'), ('cpus', '4'), ('Gres', 'gpu:1')])
    assert entry_params(node) == [('Weight', '1'), ('cpus', '4'), ('Gres', 'gpu:1')]
    assert node['hardware'] == {'NodeName': 'gpu-01', 'CPUs': 4}
    assert node['params'] == {'Weight': '1'}


@pytest.mark.parametrize('conf_params', ['CPUs=4', [['CPUs']], [('CPUs', '4', 'x')], {'CPUs': '4'}])
def test_entry_params_refuses_bad_conf_params(conf_params):
    with pytest.raises(ValueError, match=r'^conf_params of node gpu-01 is .*, expected a list of \[key, value\]$'):
        entry_params({'name': 'gpu-01', 'conf_params': conf_params})


# --- the filter: names from hostvars, errors as AnsibleFilterError ---------------------------------------------------

def test_filter_looks_hosts_up_under_slurm_node_name_and_their_cached_host_name():
    hostvars = {'cpu-17': {'slurm_node_name': 'n17'}, 'gpu-b': {'ansible_facts': {'hostname': 'gpu-02'}}, 'gpu-c': {}}
    kept = FILTERS['slurm_conf_kept_nodes'](CONF, ['cpu-17', 'gpu-b', 'gpu-c'], hostvars)
    assert sorted(kept['nodes']) == ['cpu-17', 'gpu-b']
    assert kept['nodes']['gpu-b']['name'] == 'gpu-02'
    assert kept['missing'] == {'gpu-c': 'no NodeName line names gpu-c'}


def test_filter_uses_the_default_node_name_of_a_host_that_sets_none():
    kept = FILTERS['slurm_conf_kept_nodes'](CONF, ['cpu-17'], {'cpu-17': {'slurm_node_name': ''}}, None, 'n17')
    assert kept['nodes']['cpu-17']['name'] == 'n17'


@pytest.mark.parametrize('text, hosts, message', [
    (None, ['gpu-01'], 'slurm.conf text is None, expected the text of a slurm.conf'),
    (CONF, 'gpu-01', "hosts is 'gpu-01', expected a list of inventory host names"),
    (CONF, [1], 'hosts is [1], expected a list of inventory host names'),
])
def test_filter_refuses_bad_input(text, hosts, message):
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS['slurm_conf_kept_nodes'](text, hosts)
    assert str(info.value) == message


def test_the_address_of_a_node_alone_on_its_line_is_kept_as_written():
    parsed = parse_node_definitions('NodeName=gpu-01 NodeAddr=ib-[01] CPUs=4\nNodeName=gpu-[02-03] NodeAddr=ib-[02-03] CPUs=4\n')
    assert parsed['nodes'] == {'gpu-01': [('NodeAddr', 'ib-[01]'), ('CPUs', '4')], 'gpu-02': [('NodeAddr', 'ib-02'), ('CPUs', '4')],
                               'gpu-03': [('NodeAddr', 'ib-03'), ('CPUs', '4')]}
