# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.slurm import FilterModule

FILTERS = FilterModule().filters()

HW = {'NodeName': 'gpu-01', 'CPUs': 2, 'Boards': 1, 'SocketsPerBoard': 1, 'CoresPerSocket': 2, 'ThreadsPerCore': 1, 'RealMemory': 24000}


def test_filter_names():
    assert sorted(FILTERS) == ['slurm_change_actions', 'slurm_conf_kept_nodes', 'slurm_conf_lines', 'slurm_conf_release_problems',
                               'slurm_conf_settings', 'slurm_gres_conf_lines',
                               'slurm_gres_errors',
                               'slurm_hook_files', 'slurm_large_system', 'slurm_large_system_files', 'slurm_large_system_warnings',
                               'slurm_local_package_files', 'slurm_parse_slurmd_c', 'slurm_running_config',
                               'slurm_settings', 'slurm_settings_lines', 'slurm_show_config',
                               'slurm_task_prolog_needs', 'slurm_unreachable_nodes', 'slurm_upgrade_host_files', 'slurm_upgrade_packages',
                               'slurm_upgrade_pins', 'slurm_upgrade_plan', 'slurm_upgrade_plan_files', 'slurm_upgrade_problem', 'slurm_version_behaviour']


def test_upgrade_filters_take_lists_and_say_so():
    with pytest.raises(AnsibleFilterError, match='slurm_upgrade_plan_files needs a list of package files'):
        FILTERS['slurm_upgrade_plan_files'](['ctl'], {}, '_dpkg', '/srv/debs')
    with pytest.raises(AnsibleFilterError, match='slurm_upgrade_host_files needs a list of groups'):
        FILTERS['slurm_upgrade_host_files']('', 'slurm_compute', [])
    chosen = FILTERS['slurm_upgrade_host_files']('ii slurmd 24.11.5-4\n', ['slurm_compute'], ['/d/slurm-smd_26.05.3-1_amd64.deb'])
    assert chosen['restore'] == ['slurmd=24.11.5-4'] and 'but not slurm-smd-client, slurm-smd-slurmd' in chosen['problem']


def test_local_package_files_filter_returns_the_problem_as_text():
    mixed = ['/d/slurmd_24.11.5-4_amd64.deb', '/d/slurm-smd_26.05.3-1_amd64.deb']
    found = FILTERS['slurm_local_package_files'](mixed, ['slurmd', 'client'], 'Debian')
    assert found['files'] == [] and found['flavour'] is None
    assert found['problem'].startswith("slurm_local_package_dir holds both Debian's Slurm packages (slurmd_24.11.5-4_amd64.deb)")
    smd = ['/d/slurm-smd_26.05.3-1_amd64.deb', '/d/slurm-smd-client_26.05.3-1_amd64.deb', '/d/slurm-smd-slurmd_26.05.3-1_amd64.deb',
           '/d/slurm-smd-slurmctld_26.05.3-1_amd64.deb']
    assert FILTERS['slurm_local_package_files'](smd, ['slurmd', 'client']) == {'flavour': 'smd', 'files': smd[:3], 'problem': ''}
    with pytest.raises(AnsibleFilterError, match='slurm_local_package_files needs a list of package files, a list of parts and an OS family'):
        FILTERS['slurm_local_package_files']('/d', ['slurmd'])
    # the old third argument, a list of package names: the OS family now names them
    with pytest.raises(AnsibleFilterError, match=r"an OS family \(Debian, RedHat\), got .*\['slurmctld'\]"):
        FILTERS['slurm_local_package_files'](smd, ['slurmd', 'client'], ['slurmctld'])


def test_conf_settings_filter_uses_the_slurm_conf_parser_with_lower_case_keys():
    conf = '# managed\nClusterName=gpucluster\nStateSaveLocation=/var/lib/slurm/slurmctld  # state\nNodeName=gpu-01 Gres=gpu:h100:7\n'
    assert FILTERS['slurm_conf_settings'](conf) == {'clustername': 'gpucluster', 'statesavelocation': '/var/lib/slurm/slurmctld'}


def test_upgrade_plan_filter_reads_hostvars_and_a_bad_report_is_one_filter_error():
    policy = ('slurmd:\n  Installed: 24.11.5-4+deb13u1\n  Candidate: 26.05.5-1\n')
    hostvars = {'n1': {'group_names': ['slurm_compute'], '_p': {'stdout': policy}}}
    plan = FILTERS['slurm_upgrade_plan'](['n1'], hostvars, '_p')
    assert plan['steps']['slurmd'] == ['n1'] and plan['problems'] == []
    with pytest.raises(AnsibleFilterError, match='which must be'):
        FILTERS['slurm_upgrade_pins'](policy, 'latest')


@pytest.mark.parametrize('text, release, restarts', [
    ('slurm-wlm 24.11.5', '24.11', True), ('slurm 22.05.8', '22.05', False), ('22.05.8-4+deb12u3', '22.05', False),
])
def test_version_behaviour_filter(text, release, restarts):
    found = FILTERS['slurm_version_behaviour'](text)
    assert (found['release'], found['reconfigure_restarts']) == (release, restarts)


@pytest.mark.parametrize('text', ['', 'slurmctld: command not found', 'slurm 24.11.5'])
def test_version_behaviour_filter_when_nothing_was_read_is_the_oldest_release_unnamed(text):
    # (what roles/slurm/tasks/version.yml used to write out: the 22.05 rules, no version; the text is not read)
    found = FILTERS['slurm_version_behaviour'](text, False)
    assert {key: found[key] for key in ('version', 'release', 'reconfigure_restarts', 'upgrade_window', 'topology_block')} == {
        'version': '', 'release': '', 'reconfigure_restarts': False, 'upgrade_window': 2, 'topology_block': False}
    assert found['topology_file'] == 'topology.conf'
    assert dict(found, version='22.05.0', release='22.05') == FILTERS['slurm_version_behaviour']('slurm 22.05.0')


def test_version_filters_name_bad_input():
    with pytest.raises(AnsibleFilterError, match="'slurm' is not a Slurm version"):
        FILTERS['slurm_version_behaviour']('slurm')
    assert 'upgrade through 22.05 -> 23.11 -> 24.11' in FILTERS['slurm_upgrade_problem']('slurm 22.05.8', 'slurm-wlm 24.11.5')
    assert FILTERS['slurm_upgrade_problem']('slurm-wlm 24.11.5', '26.05.5-1') == ''


def test_change_actions_filter_follows_the_release():
    old = 'ClusterName=sim\nNodeName=gpu-01 CPUs=2\n'
    new = 'ClusterName=sim\nNodeName=gpu-01 CPUs=4\n'
    assert FILTERS['slurm_change_actions'](old, new)['restart_slurmd'] is True
    assert FILTERS['slurm_change_actions'](old, new, True)['reconfigure'] is True
    assert FILTERS['slurm_change_actions'](old, new, True)['restart_slurmd'] is False


def test_conf_lines_merges_nodes_and_computes_gres_types():
    nodes = [
        {'name': 'gpu-01', 'hardware': HW, 'gres': 'gpu:1g.10gb:14,gpu:h100:6', 'memory_reserve_mb': 1000},
        {'name': 'gpu-02', 'hardware': HW, 'gres': 'gpu:a100:8'},
        {'name': 'gpu-03', 'hardware': HW, 'gres': 'gpu:a100:8', 'params': {'Features': 'a100'}},
        {'name': 'gpu-04', 'hardware': HW, 'gres': 'gpu:a100:8'},
    ]
    lines = FILTERS['slurm_conf_lines'](nodes, {'ClusterName': 'sim', 'SelectType': 'select/cons_tres'}, {'ReturnToService': 2})
    assert lines == [
        'ClusterName=sim', 'SelectType=select/cons_tres', 'GresTypes=gpu', 'ReturnToService=2', '',
        'NodeName=gpu-01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=23000 Gres=gpu:1g.10gb:14,gpu:h100:6',
        'NodeName=gpu-[02,04] CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24000 Gres=gpu:a100:8',
        'NodeName=gpu-03 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24000 Gres=gpu:a100:8 Features=a100',
        '',
        'PartitionName=batch Nodes=ALL Default=YES',
    ]


def test_conf_lines_gres_types_override():
    lines = FILTERS['slurm_conf_lines']([{'name': 'n1', 'hardware': HW, 'gres': 'gpu:a100:1'}], {'GresTypes': 'gpu,mps'}, {},
                                        [{'name': 'p', 'nodes': ['n1']}])
    assert lines[0] == 'GresTypes=gpu,mps'
    assert lines[-1] == 'PartitionName=p Nodes=n1'


# The one merge: the role's defaults, then the contributions of other roles in order, then the admin's overrides;
# a later key replaces an earlier one in any case; keys new to the defaults come sorted, from all of them together.
@pytest.mark.parametrize('contributions, overrides, settings', [
    ([], {}, ['ClusterName=sim', 'KillWait=30']),
    ([{'HealthCheckInterval': 300}], {}, ['ClusterName=sim', 'KillWait=30', 'HealthCheckInterval=300']),
    # contributions and overrides' new keys sorted together
    ([{'PriorityType': 'priority/multifactor'}], {'Bkey': 1}, ['ClusterName=sim', 'KillWait=30', 'Bkey=1', 'PriorityType=priority/multifactor']),
    # a later contribution wins over an earlier one, the overrides over both, in any case
    ([{'KillWait': 10}, {'killwait': 20}], {}, ['ClusterName=sim', 'killwait=20']),
    ([{'KillWait': 10}], {'KILLWAIT': 40}, ['ClusterName=sim', 'KILLWAIT=40']),
    # the overrides remove a contributed key (null)
    ([{'HealthCheckInterval': 300}], {'healthcheckinterval': None}, ['ClusterName=sim', 'KillWait=30']),
    # a contributed AccountingStorageTRES gets the GRES names and types of the nodes
    ([{'AccountingStorageTRES': 'gres/gpu'}], {}, ['ClusterName=sim', 'KillWait=30', 'AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/shard']),
    ([{'AccountingStorageTRES': ['license/x']}], {}, ['ClusterName=sim', 'KillWait=30',
                                                      'AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/shard,license/x']),
    ([{'AccountingStorageTRES': ''}], {}, ['ClusterName=sim', 'KillWait=30', 'AccountingStorageTRES=gres/gpu,gres/gpu:a100,gres/shard']),
    # ... but the admin's own value is written as given
    ([{'AccountingStorageTRES': 'gres/gpu'}], {'AccountingStorageTRES': 'gres/gpu'}, ['ClusterName=sim', 'KillWait=30', 'AccountingStorageTRES=gres/gpu']),
])
def test_conf_lines_merge_order(contributions, overrides, settings):
    nodes = [{'name': 'n1', 'hardware': HW, 'gres': 'gpu:a100:1,shard:4'}, {'name': 'n2', 'hardware': HW, 'gres': ''}]
    lines = FILTERS['slurm_conf_lines'](nodes, {'ClusterName': 'sim', 'KillWait': 30, 'GresTypes': None}, overrides,
                                        contributions=contributions)
    assert lines[:lines.index('')] == settings


@pytest.mark.parametrize('contributions, message', [
    ('x', "slurm.conf contributions 'x' must be a list of dictionaries of KEY: value"),
    ([{'A': 1}, 'x'], "slurm.conf contribution 'x' must be a dictionary of KEY: value"),
    ([{'AccountingStorageTRES': 'gres gpu'}], "AccountingStorageTRES entry 'gres gpu' is not a TRES name"),
    ([{'bad key': 1}], "slurm.conf setting key 'bad key' is not a slurm.conf key"),
])
def test_conf_lines_bad_contributions(contributions, message):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_conf_lines']([{'name': 'n1', 'hardware': HW}], {}, {}, contributions=contributions)
    assert message in str(err.value)


def test_conf_lines_bad_overrides_named_as_overrides():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_conf_lines']([{'name': 'n1', 'hardware': HW}], {}, 'x', contributions=[{'A': 1}])
    assert "slurm.conf setting overrides 'x' must be a dictionary" in str(err.value)


@pytest.mark.parametrize('nodes, message', [
    ('x', "nodes 'x' must be a list of {name, hardware, gres, params, memory_reserve_mb}"),
    ([{'name': 'a'}], "node entry {'name': 'a'} needs \"name\" and \"hardware\" (the slurmd -C facts)"),
    ([{'name': 'a b', 'hardware': HW}], "node name 'a b' is not one Slurm accepts"),
])
def test_conf_lines_errors(nodes, message):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_conf_lines'](nodes, {})
    assert message in str(err.value)


def test_parse_slurmd_c_filter():
    assert FILTERS['slurm_parse_slurmd_c']('NodeName=a CPUs=1 RealMemory=5\nUpTime=0\n') == {'NodeName': 'a', 'CPUs': 1, 'RealMemory': 5}
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_parse_slurmd_c']('')
    assert 'slurmd -C printed nothing' in str(err.value)


def test_gres_errors_filter():
    nodes = [{'name': 'gpu-01', 'gres': 'gpu:1g.10gb:2', 'gres_conf_lines': ['Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[13,22]']},
             {'name': 'gpu-02', 'gres': 'gpu:a100:1', 'gres_conf_lines': []},
             {'name': 'gpu-03', 'gres': 'gpu:a100:1', 'params': {'gres': 'gpu:h100:1'},
              'gres_conf_lines': ['Name=gpu Type=a100 File=/dev/nvidia0']}]
    assert FILTERS['slurm_gres_errors'](nodes) == [
        'node gpu-02: slurm.conf declares Gres=gpu:a100 but its gres.conf has no Name=gpu Type=a100 line (types there: none)',
        'node gpu-03: slurm.conf declares Gres=gpu:h100 but its gres.conf has no Name=gpu Type=h100 line (types there: a100)']


def test_change_filter():
    assert FILTERS['slurm_change_actions']('A=1\n', 'A=2\n')['reconfigure'] is True


def test_settings_lines_filter():
    lines = FILTERS['slurm_settings_lines']({'CgroupPlugin': 'autodetect', 'ConstrainCores': True, 'ConstrainDevices': False},
                                            {'constraindevices': True, 'AllowedRAMSpace': 95})
    assert lines == ['CgroupPlugin=autodetect', 'ConstrainCores=YES', 'constraindevices=YES', 'AllowedRAMSpace=95']
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_settings_lines']({'A': 'x y'})
    assert "slurm.conf setting A='x y' contains spaces" in str(err.value)


@pytest.mark.parametrize('results, expected', [
    pytest.param({'n1': {'changed': False, 'failed': False}}, [], id='reached'),
    pytest.param({'n1': {'unreachable': True, 'msg': 'Failed to connect to the host via ssh: Connection refused'}},
                 ['n1: Failed to connect to the host via ssh: Connection refused'], id='ssh-unreachable'),
    pytest.param({'n1': {'failed': True, 'msg': 'MODULE FAILURE\nSee stdout/stderr for the exact error',
                         'module_stderr': 'Error: can only create exec sessions on running containers: container state improper\n'}},
                 ['n1: MODULE FAILURE See stdout/stderr for the exact error'
                  ' (Error: can only create exec sessions on running containers: container state improper)'], id='podman-stopped'),
    pytest.param({'n1': {'unreachable': True, 'msg': 'Task failed: Failed to create temporary directory. In some cases, you may have been'
                                                     ' able to authenticate. Failed command was: ( umask 77 && mkdir -p "~/.ansible/tmp" )'}},
                 ['n1: Failed to create temporary directory'], id='ansible-advice-cut'),
    pytest.param({'n1': {'unreachable': True, 'msg': 'Task failed: Failed to connect to the host via ssh: ssh: connect to host'
                                                     ' 10.0.0.5 port 22: No route to host'}},
                 ['n1: Failed to connect to the host via ssh: ssh: connect to host 10.0.0.5 port 22: No route to host'], id='ssh-prefix-cut'),
    pytest.param({'n1': {'failed': True}, 'n2': {'failed': False}, 'n3': {'unreachable': True, 'msg': 'timed out'}},
                 ['n1: no answer', 'n3: timed out'], id='several-in-order'),
    pytest.param({'n1': None}, [], id='not-registered'),
])
def test_unreachable_nodes(results, expected):
    hostvars = dict((host, {'_site_facts': result} if result is not None else {}) for host, result in results.items())
    assert FILTERS['slurm_unreachable_nodes'](sorted(results), hostvars, '_site_facts') == expected


HOOK_TABLE = {'gpu-cleanup': [{'phase': 'epilog', 'name': '40-all-gpu-cleanup'}],
              'mps': [{'phase': 'prolog', 'name': '30-all-mps-start'}, {'phase': 'epilog', 'name': '30-all-mps-stop'}]}


@pytest.mark.parametrize('shipped, extra, old, expected', [
    (['gpu-cleanup'], [], [], [
        {'dest': '/etc/slurm/epilog.d/40-all-gpu-cleanup', 'src': 'hooks/40-all-gpu-cleanup', 'mode': '0755'},
        {'dest': '/etc/slurm/prolog.d/30-all-mps-start', 'state': 'absent'},
        {'dest': '/etc/slurm/epilog.d/30-all-mps-stop', 'state': 'absent'}]),
    ([], [{'phase': 'prolog', 'name': '60-site', 'src': '/srv/site-hook'}], ['epilog.d/40-old'], [
        {'dest': '/etc/slurm/epilog.d/40-all-gpu-cleanup', 'state': 'absent'},
        {'dest': '/etc/slurm/prolog.d/30-all-mps-start', 'state': 'absent'},
        {'dest': '/etc/slurm/epilog.d/30-all-mps-stop', 'state': 'absent'},
        {'dest': '/etc/slurm/prolog.d/60-site', 'src': '/srv/site-hook', 'mode': '0755'},
        {'dest': '/etc/slurm/epilog.d/40-old', 'state': 'absent'}]),
    (['mps', 'gpu-cleanup'], None, [], [
        {'dest': '/etc/slurm/epilog.d/40-all-gpu-cleanup', 'src': 'hooks/40-all-gpu-cleanup', 'mode': '0755'},
        {'dest': '/etc/slurm/prolog.d/30-all-mps-start', 'src': 'hooks/30-all-mps-start', 'mode': '0755'},
        {'dest': '/etc/slurm/epilog.d/30-all-mps-stop', 'src': 'hooks/30-all-mps-stop', 'mode': '0755'}]),
])
def test_hook_files(shipped, extra, old, expected):
    assert FILTERS['slurm_hook_files'](shipped, HOOK_TABLE, extra, '/etc/slurm', old) == expected


@pytest.mark.parametrize('shipped, table, fragment', [
    (['nope'], HOOK_TABLE, 'slurm_hooks_shipped: nope not shipped; valid: gpu-cleanup, mps'),
    ([], ['x'], 'must be a dict'),
])
def test_hook_files_bad_input(shipped, table, fragment):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS['slurm_hook_files'](shipped, table, [], '/etc/slurm')
    assert fragment in str(err.value)


TASK_PROLOG_DEFAULTS = {'slurm_task_prolog_uuids': 'mig', 'slurm_gres_autodetect': 'off', 'slurm_gres_sharing': 'none',
                        'slurm_hooks_shipped': ['enroot-dirs', 'gpu-healthcheck', 'gpu-cleanup', 'mps']}


@pytest.mark.parametrize('hostvars, expected', [
    # the role's defaults and no MIG layout, no MPS: no node needs the TaskProlog (container jobs can run)
    ({'gpu-01': {}, 'gpu-02': {}}, []),
    ({'gpu-01': {'mig_layout': 'all-1g'}, 'gpu-02': {}},
     [['gpu-01', "mig_layout all-1g with hand-written MIG GRES (slurm_task_prolog_uuids 'mig': the MIG UUIDs)"]]),
    ({'gpu-01': {'mig_layout': 'all-1g', 'slurm_gres_autodetect': 'nvml'}, 'gpu-02': {}}, []),
    ({'gpu-01': {}, 'gpu-02': {'slurm_gres_sharing': 'mps'}}, [['gpu-02', "slurm_gres_sharing is 'mps' (the MPS variables of the job)"]]),
    # a CPU node's mig_layout is not a GPU node's
    ({'gpu-01': {}, 'cpu-01': {'mig_layout': 'all-1g'}}, []),
], ids=['none', 'mig', 'mig-nvml', 'mps', 'cpu-node'])
def test_slurm_task_prolog_needs(hostvars, expected):
    slurm_task_prolog_needs = FilterModule().filters()['slurm_task_prolog_needs']
    assert slurm_task_prolog_needs(sorted(hostvars), hostvars, ['gpu-01', 'gpu-02'], TASK_PROLOG_DEFAULTS) == expected


def test_a_contributed_null_removes_the_task_prolog():
    """tasks/conf.yml contributes {TaskProlog: null} when no compute node needs the TaskProlog: no TaskProlog line."""
    nodes = [{'name': 'gpu-01', 'hardware': {'NodeName': 'gpu-01', 'CPUs': 4}}]
    settings = {'ClusterName': 'x', 'TaskProlog': '/usr/local/lib/gpucluster-slurm/task-prolog'}
    removed = FILTERS['slurm_conf_lines'](nodes, settings, {}, None, contributions=[{}, {'TaskProlog': None}])
    kept = FILTERS['slurm_conf_lines'](nodes, settings, {}, None, contributions=[{}, {}])
    assert [line for line in removed if line.startswith('TaskProlog')] == []
    assert [line for line in kept if line.startswith('TaskProlog')] == ['TaskProlog=/usr/local/lib/gpucluster-slurm/task-prolog']


@pytest.mark.parametrize('text, version, expected', [
    ('ClusterName=c\nHealthCheckNodeState=ANY,CYCLE\n', 'slurm 22.05.8', []),
    ('ClusterName=c\n', 'slurm 26.05.3', []),
    ('HealthCheckNodeState=REBOOT_ONLY\n', 'slurm 26.05.3', []),
    ('HealthCheckNodeState=REBOOT_ONLY\n', 'slurm-wlm 24.11.5',
     ['HealthCheckNodeState is REBOOT_ONLY, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE (Slurm 24.11); '
      "REBOOT_ONLY (Slurm 26.05 on) (slurmctld ignores 'REBOOT_ONLY')"]),
    ('HealthCheckNodeState=NONDRAINED_IDLE\n', 'slurm 22.05.8',
     ['HealthCheckNodeState is NONDRAINED_IDLE, expected a comma-separated list of ALLOC, ANY, CYCLE, IDLE, MIXED (Slurm 22.05); '
      "NONDRAINED_IDLE (Slurm 23.02 on) (slurmctld ignores 'NONDRAINED_IDLE')"]),
])
def test_conf_release_problems(text, version, expected):
    assert FILTERS['slurm_conf_release_problems'](text, version) == expected


def test_conf_release_problems_names_a_bad_version():
    with pytest.raises(AnsibleFilterError, match="'nonsense' is not a Slurm version"):
        FILTERS['slurm_conf_release_problems']('HealthCheckNodeState=ANY\n', 'nonsense')
