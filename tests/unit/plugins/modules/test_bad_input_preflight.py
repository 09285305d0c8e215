# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight: every bad option and every bad role input is refused, in one line naming host(s), variable, value and what is valid.

The real entry point is the action plugin (plugins/action/preflight.py: it runs on the Ansible controller, reads the
inventory from ``task_vars`` and the roles' specs from ``roles/``; the module file only documents it). Each case runs
the action in-process, as ansible-playbook would, with an inventory of one controller (also slurmdbd) and two GPU
compute nodes, and asserts: the task failed, its message holds every fragment, no node was contacted (no module
executed, no command run, the connection unused) and the test's tmp tree is unchanged (the preflight writes nothing).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from unittest import mock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext
from ansible.plugins.action import ActionBase
from ansible.template import Templar

from ansible_collections.gpucluster.bringup.plugins.action import preflight as action
from ansible_collections.gpucluster.bringup.plugins.modules import preflight as module
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import run_module, snapshot

GROUPS = {'all': ['ctl', 'gpu-01', 'gpu-02'], 'ungrouped': [], 'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'],
          'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}
ROLE = ' (role gpucluster.bringup.%s)'
SLURM = ROLE % 'slurm'
FABRIC = 'FABRIC'  # replaced by a missing file under the test's tmp_path
FABRIC_DIR = 'FABRIC_DIR'  # replaced by a directory there


@pytest.fixture
def no_contact(monkeypatch):
    """Record every way an action could reach a node; each one fails the test."""
    calls = []

    def record(name):
        def called(self, *args, **kwargs):
            calls.append((name, args))
            raise AssertionError('the preflight tried %s on bad input' % name)
        return called
    for name in ('_execute_module', '_low_level_execute_command', '_make_tmp_path', '_transfer_data', '_transfer_file',
                 '_remote_file_exists', '_execute_remote_stat'):
        monkeypatch.setattr(ActionBase, name, record(name))
    return calls


def run_action(args, host_vars=None, groups=None, this_host='localhost', search_path=()):
    """The action's result for task ``args``; ``host_vars``: variables per inventory host."""
    groups = GROUPS if groups is None else groups
    hostvars = dict((host, dict((host_vars or {}).get(host) or {})) for host in groups['all'])
    task = mock.MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = False
    task.diff = False
    task.get_play.return_value.strategy = 'linear'
    task.get_search_path.return_value = list(search_path)
    connection = mock.MagicMock()
    loader = DataLoader()
    plugin = action.ActionModule(task, connection, PlayContext(), loader, Templar(loader=loader, variables={}), None)
    task_vars = dict(groups=groups, hostvars=hostvars, inventory_hostname=this_host, ansible_play_hosts_all=['localhost'] + groups['all'])
    try:
        result = plugin.run(task_vars=task_vars)
    except AnsibleActionFail as exc:  # what the task executor makes of it
        result = dict(exc.result)
    return result, connection


def all_hosts(**values):
    return dict((host, dict(values)) for host in GROUPS['all'])


def compute(**values):
    return dict((host, dict(values)) for host in GROUPS['slurm_compute'])


SLURM_ONLY = {'roles': [{'name': 'slurm', 'groups': ['slurm_controller', 'slurm_compute']}]}
HOSTLIST = 'expected ALL, a hostlist (gpu-[01-04]) or a list of node names'

# (id, task args, host vars, fragments of the failure message)
CASES = [
    # --- the preflight's own options ------------------------------------------------------------------------------------
    ('role-without-groups', {'roles': [{'name': 'slurm', 'groups': []}]}, None,
     ['roles[0].groups is []', 'expected one or more inventory groups', 'role slurm']),
    ('role-group-empty-name', {'roles': [{'name': 'munge', 'groups': ['slurm_controller', '']}]}, None,
     ["roles[0].groups[1] is ''", 'expected an inventory group name']),
    ('role-group-with-space', {'roles': [{'name': 'munge', 'groups': ['slurm compute']}]}, None,
     ["roles[0].groups[0] is 'slurm compute'", 'expected an inventory group name']),
    ('role-group-not-a-string', {'roles': [{'name': 'munge', 'groups': [['slurm_compute']]}]}, None,
     ["roles[0].groups[0] is ['slurm_compute']", 'expected a string']),
    ('role-name-typo', {'roles': [{'name': 'slurmx', 'groups': ['all']}]}, None,
     ["roles[0].name is 'slurmx'", 'valid values: munge, nvml, mig, slurmdbd, slurm_healthcheck, slurm, enroot, pyxis']),
    ('role-without-name', {'roles': [{'groups': ['all']}]}, None, ['roles[0] lacks name (required)']),
    ('role-without-groups-key', {'roles': [{'name': 'slurm'}]}, None, ['roles[0] lacks groups (required)']),
    ('role-unknown-key', {'roles': [{'name': 'slurm', 'groups': ['all'], 'group': 'x'}]}, None,
     ["roles[0] has the unknown key 'group'", 'valid keys: groups, name']),
    # (Ansible reads a string as a comma-separated list: its one item is not a {name, groups} dictionary)
    ('roles-a-string', {'roles': 'slurm'}, None, ["roles[0] is 'slurm'", 'expected a dictionary']),
    ('role-not-a-dict', {'roles': ['slurm']}, None, ["roles[0] is 'slurm'", 'expected a dictionary']),
    ('role-given-twice', {'roles': [{'name': 'slurm', 'groups': ['slurm_controller']}, {'name': 'slurm', 'groups': ['slurm_compute']}]},
     None, ["roles[1].name is 'slurm'", 'given twice', 'roles[0]']),
    ('hosts-empty', {'hosts': []}, None, ['hosts is []', 'expected one or more inventory hosts']),
    ('host-not-in-inventory', {'hosts': ['gpu-99']}, None,
     ["hosts[0] is 'gpu-99'", 'not a host of the inventory', 'ctl,gpu-[01-02]']),
    ('host-not-in-inventory-comma-text', {'hosts': 'gpu-01,gpu-9'}, None, ["hosts[1] is 'gpu-9'", 'not a host of the inventory']),
    ('host-empty-name', {'hosts': ['gpu-01', '']}, None, ["hosts[1] is ''", 'not a host of the inventory']),
    ('hosts-a-dict', {'hosts': {'gpu-01': 1}}, None, ["hosts is {'gpu-01': 1}", 'expected a list']),
    ('controller-group-empty', {'controller_group': ''}, None, ["controller_group is ''", 'expected an inventory group name']),
    ('compute-group-a-list', {'compute_group': ['slurm_compute']}, None,
     ["compute_group is ['slurm_compute']", 'expected a string']),
    ('gpu-group-with-space', {'gpu_group': 'gpu nodes'}, None, ["gpu_group is 'gpu nodes'", 'expected an inventory group name']),
    ('inventory-not-a-bool', {'inventory': 'maybe'}, None, ["inventory is 'maybe'", 'expected a boolean (true/false)']),
    ('unknown-option', {'role': 'slurm'}, None,
     ["unknown option 'role'", 'valid options: compute_group, controller_group, gpu_group, hosts, inventory, roles']),
    # --- role inputs: partitions must parse as the slurm role parses them ------------------------------------------------
    ('partition-unterminated-hostlist', SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': 'gpu-[01-'}]),
     ["gpu-[01-02]: slurm_partitions[0].nodes is 'gpu-[01-'", 'partition gpu', '"[" without a matching "]"', HOSTLIST, SLURM]),
    ('partition-hostlist-backwards', SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': 'gpu-[02-01]'}]),
     ["slurm_partitions[0].nodes is 'gpu-[02-01]'", 'partition gpu', 'runs backwards', HOSTLIST]),
    ('partition-hostlist-letters', SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': 'gpu-[a-b]'}]),
     ["slurm_partitions[0].nodes is 'gpu-[a-b]'", 'may hold only numbers', HOSTLIST]),
    ('partition-hostlist-empty-item', SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': 'gpu-01,,gpu-02'}]),
     ["slurm_partitions[0].nodes is 'gpu-01,,gpu-02'", 'empty item', HOSTLIST]),
    ('partition-all-lower-case', SLURM_ONLY, compute(slurm_partitions=[{'name': 'batch', 'nodes': 'all'}]),
     ["slurm_partitions[0].nodes is 'all'", 'expected ALL (upper case']),
    ('partition-list-holds-a-hostlist', SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': ['gpu-01', 'gpu-[02-03]']}]),
     ["slurm_partitions[0].nodes[1] is 'gpu-[02-03]'", 'partition gpu', 'a node name']),
    # --- role inputs: numbers in the range the roles can use -------------------------------------------------------------
    ('large-system-min-nodes-negative', SLURM_ONLY, {'ctl': {'slurm_large_system_min_nodes': -1}},
     ['ctl: slurm_large_system_min_nodes is -1', 'expected a whole number, 1 or more', SLURM]),
    ('large-system-min-nodes-zero-text', SLURM_ONLY, all_hosts(slurm_large_system_min_nodes='0'),
     # (the number as Ansible's argument validation converts it)
     ["ctl,gpu-[01-02]: slurm_large_system_min_nodes is 0;", '1 or more']),
    ('restart-batch-size-zero', SLURM_ONLY, {'ctl': {'slurm_restart_batch_size': 0}}, ['slurm_restart_batch_size is 0', '1 or more']),
    ('shard-count-zero', SLURM_ONLY, compute(slurm_gres_shard_count=0), ['gpu-[01-02]: slurm_gres_shard_count is 0', '1 or more']),
    ('mps-count-negative', SLURM_ONLY, {'gpu-02': {'slurm_gres_mps_count': -100}}, ['gpu-02: slurm_gres_mps_count is -100', '1 or more']),
    ('hooks-timeout-zero', SLURM_ONLY, {'gpu-01': {'slurm_hooks_settings': {'timeout': 0}}}, ['gpu-01: slurm_hooks_settings.timeout is 0', '1 or more']),
    ('memory-reserve-negative', SLURM_ONLY, {'gpu-01': {'slurm_memory_reserve_mb': -512}},
     ['gpu-01: slurm_memory_reserve_mb is -512', '0 or more']),
    ('block-size-negative', SLURM_ONLY, {'ctl': {'slurm_topology': 'block', 'slurm_topology_settings': {'block_sizes': [-18]}}},
     ['ctl: slurm_topology_settings.block_sizes[0] is -18', 'expected a whole number, 1 or more (nodes in a block', 'e.g. [18, 36, 72]']),
    ('slurmdbd-port-too-high', {'roles': [{'name': 'slurmdbd', 'groups': ['slurmdbd']}]}, {'ctl': {'slurmdbd_port': 70000}},
     ['ctl: slurmdbd_port is 70000', 'from 1 to 65535', ROLE % 'slurmdbd']),
    ('slurmdbd-storage-port-zero', {'roles': [{'name': 'slurmdbd', 'groups': ['slurmdbd']}]}, {'ctl': {'slurmdbd_conf': {'StoragePort': 0}}},
     ['ctl: slurmdbd_conf.StoragePort is 0', 'from 1 to 65535']),
    ('mig-drain-poll-zero', {'roles': [{'name': 'mig', 'groups': ['gpu_nodes']}]}, {'gpu-01': {'mig_slurm_wait': {'drain_poll': 0}}},
     ['gpu-01: mig_slurm_wait.drain_poll is 0', '1 or more', ROLE % 'mig']),
    ('mig-drain-timeout-negative', {'roles': [{'name': 'mig', 'groups': ['gpu_nodes']}]}, {'gpu-02': {'mig_slurm_wait': {'drain_timeout': -1}}},
     ['gpu-02: mig_slurm_wait.drain_timeout is -1', '0 or more']),
    ('healthcheck-passes-zero', {'roles': [{'name': 'slurm_healthcheck', 'groups': ['slurm_compute']}]},
     compute(slurm_healthcheck_settings={'resume_after_passes': 0}), ['gpu-[01-02]: slurm_healthcheck_settings.resume_after_passes is 0', '1 or more']),
    ('healthcheck-budget-zero', {'roles': [{'name': 'slurm_healthcheck', 'groups': ['slurm_compute']}]},
     compute(slurm_healthcheck_settings={'prolog_budget': 0}), ['slurm_healthcheck_settings.prolog_budget is 0', 'a number of seconds above 0']),
    ('healthcheck-xid-negative', {'roles': [{'name': 'slurm_healthcheck', 'groups': ['slurm_compute']}]},
     {'gpu-01': {'slurm_healthcheck_settings': {'xid_drain': [48, -79]}}}, ['gpu-01: slurm_healthcheck_settings.xid_drain[1] is -79', '1 or more']),
    ('enroot-retries-negative', {'roles': [{'name': 'enroot', 'groups': ['slurm_compute']}]}, compute(enroot_conf={'ENROOT_TRANSFER_RETRIES': -1}),
     ['gpu-[01-02]: enroot_conf.ENROOT_TRANSFER_RETRIES is -1', '0 or more', ROLE % 'enroot']),
    # --- role inputs: the fabric source and other names ------------------------------------------------------------------
    ('ibnetdiscover-src-missing', SLURM_ONLY, {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_src': FABRIC}}},
     ['ctl: slurm_topology_settings.ibnetdiscover_src is', 'fabric.txt', 'a file on the Ansible controller', 'no such file']),
    ('ibnetdiscover-src-a-directory', SLURM_ONLY, {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_src': FABRIC_DIR}}},
     ['ctl: slurm_topology_settings.ibnetdiscover_src is', 'a file on the Ansible controller', 'a directory']),
    ('ibnetdiscover-relative-missing', SLURM_ONLY, {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_src': 'dumps/fabric.txt'}}},
     ["ctl: slurm_topology_settings.ibnetdiscover_src is 'dumps/fabric.txt'", 'no such file']),
    ('munge-key-path-outside-a-munge-directory', {'roles': [{'name': 'munge', 'groups': ['slurm_controller', 'slurm_compute']}]},
     all_hosts(munge_key_path='/etc/munge.key'),
     ["munge_key_path is '/etc/munge.key'", "in a directory of munge's own", '/etc/munge/site.key', ROLE % 'munge']),
    ('munge-key-src-missing', {'roles': [{'name': 'munge', 'groups': ['slurm_controller', 'slurm_compute']}]},
     all_hosts(munge_key_src=FABRIC), ["munge_key_src is '", 'fabric.txt', "a file on the Ansible controller holding the cluster's munge key"]),
    ('munge-key-both-sources', {'roles': [{'name': 'munge', 'groups': ['slurm_controller', 'slurm_compute']}]},
     all_hosts(munge_key_src='site.key', munge_key_b64='c2VjcmV0' * 8),
     ['munge_key_b64 and munge_key_src are both set (the key is not shown)']),
    ('node-name-map-src-missing', SLURM_ONLY,
     {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_host': 'gpu-01', 'node_name_map_src': FABRIC}}},
     ['ctl: slurm_topology_settings.node_name_map_src is', 'fabric.txt', "in ibnetdiscover's --node-name-map format", 'no such file']),
    ('node-name-map-src-a-directory', SLURM_ONLY,
     {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_host': 'gpu-01', 'node_name_map_src': FABRIC_DIR}}},
     ['ctl: slurm_topology_settings.node_name_map_src is', 'a file on the Ansible controller', 'a directory']),
    ('ibnetdiscover-command-empty', SLURM_ONLY,
     {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_host': 'gpu-01', 'ibnetdiscover_command': []}}},
     ['ctl: slurm_topology_settings.ibnetdiscover_command is []', 'expected the command (argv) to run on gpu-01']),
    ('cluster-name-empty', SLURM_ONLY, all_hosts(slurm_cluster_name=''),
     ["ctl,gpu-[01-02]: slurm_cluster_name is ''", 'expected the name of the cluster']),
]


@pytest.mark.parametrize('args, host_vars, fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, no_contact, args, host_vars, fragments):
    fabric = str(tmp_path / 'fabric' / 'fabric.txt')
    os.mkdir(str(tmp_path / 'fabric'))
    for values in (host_vars or {}).values():
        for where, key in ((values.get('slurm_topology_settings'), 'ibnetdiscover_src'),
                           (values.get('slurm_topology_settings'), 'node_name_map_src'), (values, 'munge_key_src')):
            if isinstance(where, dict) and isinstance(where.get(key), str):
                where[key] = where[key].replace(FABRIC_DIR, os.path.dirname(fabric)).replace(FABRIC, fabric)
    before = snapshot(tmp_path)
    result, connection = run_action(args, host_vars, search_path=[str(tmp_path)])
    assert result.get('failed') is True, result
    assert result.get('changed') is not True, result
    for fragment in fragments:
        assert fragment in result['msg'], 'message %r lacks %r' % (result['msg'], fragment)
    assert 'Traceback' not in result['msg']
    # nothing contacted, nothing written
    assert no_contact == []
    assert connection.mock_calls == []
    assert snapshot(tmp_path) == before


def test_each_problem_is_one_line_grouped_by_host_set(no_contact):
    """The same bad value on several hosts is one line naming them as a hostlist; a different value is its own line."""
    result, dummy = run_action(SLURM_ONLY, dict(compute(slurm_large_system_min_nodes=-1), ctl={'slurm_large_system_min_nodes': -2}))
    # (problems in the order the hosts are checked: the play's hosts, ctl first; same problem, same line)
    assert result['failed'] is True
    assert result['problems'] == [
        'ctl: slurm_large_system_min_nodes is -2; expected a whole number, 1 or more (the compute host count from which the '
        'large-cluster settings apply)' + SLURM,
        'gpu-[01-02]: slurm_large_system_min_nodes is -1; expected a whole number, 1 or more (the compute host count from which the '
        'large-cluster settings apply)' + SLURM,
    ], result['problems']
    assert no_contact == []


def test_bad_options_stop_before_any_role_is_checked(no_contact):
    result, dummy = run_action({'hosts': ['gpu-99'], 'roles': [{'name': 'slurm', 'groups': []}]}, compute(slurm_gres_sharing='shards'))
    assert result['failed'] is True
    assert result['msg'].startswith('the preflight task has 2 bad options, nothing was checked or changed:\n'), result['msg']
    assert 'slurm_gres_sharing' not in result['msg']


@pytest.mark.parametrize('args, host_vars', [
    pytest.param({}, None, id='defaults'),
    pytest.param({'roles': []}, None, id='inventory-only'),
    pytest.param({'inventory': False, 'roles': [{'name': 'slurm', 'groups': ['all']}], 'hosts': ['gpu-01']}, None, id='a-role-on-its-host'),
    pytest.param({'hosts': 'ctl,gpu-01'}, None, id='hosts-as-comma-text'),
    pytest.param(SLURM_ONLY, compute(slurm_partitions=[{'name': 'gpu', 'nodes': 'gpu-[01-02]', 'default': True},
                                                       {'name': 'one', 'nodes': ['gpu-01']}, {'name': 'all', 'nodes': 'ALL'}]),
                 id='partition-hostlists'),
    pytest.param(SLURM_ONLY, all_hosts(slurm_large_system_min_nodes='1', slurm_memory_reserve_mb=0), id='range-edges'),
    pytest.param(SLURM_ONLY, {'ctl': {'slurm_topology': 'tree', 'slurm_topology_settings': {'ibnetdiscover_src': 'FOUND'}}}, id='fabric-file-found'),
])
def test_good_input_passes(tmp_path, no_contact, args, host_vars):
    (tmp_path / 'files').mkdir()
    (tmp_path / 'files' / 'fabric.txt').write_text('# ibnetdiscover\n')
    for values in (host_vars or {}).values():
        settings = values.get('slurm_topology_settings') or {}
        if settings.get('ibnetdiscover_src') == 'FOUND':
            settings['ibnetdiscover_src'] = 'fabric.txt'   # relative: the playbook's files/ directory
    result, connection = run_action(args, host_vars, search_path=[str(tmp_path)])
    assert not result.get('failed'), result
    assert result['msg'].startswith('the inventory describes one Slurm cluster'), result['msg']
    assert no_contact == [] and connection.mock_calls == []


def test_the_module_documents_every_role_the_action_takes():
    """The module file (documentation, argument spec) names the same roles as the action (nvml was missing)."""
    found = run_module(module.main, {'roles': [{'name': 'nvml', 'groups': ['gpu_nodes']}]})
    assert found.failed and 'runs on the Ansible controller through its action plugin' in found.msg, found.result
    assert 'choices: [munge, nvml, mig, slurmdbd, slurm_healthcheck, slurm, enroot, pyxis]' in module.DOCUMENTATION
