# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade import (
    apt_policy_versions,
    dbd_line_state,
    dbd_outcome,
    plan_from_hostvars,
    process_start,
    program_replaced,
    show_config,
    slurm_packages,
    systemctl_main_pids,
    upgrade_pins,
    upgrade_plan,
)

T11, F05, B05 = '24.11.5-4+deb13u1', '26.05.5-1', '22.05.8-4+deb12u3'


def _host(groups, installed, candidate):
    daemons = {'slurmdbd': 'slurmdbd', 'slurm_controller': 'slurmctld', 'slurm_compute': 'slurmd', 'slurm_login': 'slurm-client'}
    return {'groups': groups,
            'installed': {daemons[g]: installed for g in groups if g in daemons},
            'candidate': {daemons[g]: candidate for g in groups if g in daemons}}


def _cluster(ctl=(T11, F05), n1=(T11, F05), n2=(T11, F05)):
    return {
        'ctl': _host(['slurmdbd', 'slurm_controller'], *ctl),
        'n1': _host(['slurm_compute', 'gpu_nodes'], *n1),
        'n2': _host(['slurm_compute', 'gpu_nodes'], *n2),
    }


def test_plan_24_11_to_26_05_touches_every_daemon_in_order():
    plan = upgrade_plan(_cluster())
    assert plan['problems'] == []
    assert plan['needed'] is True
    assert (plan['from'], plan['to'], plan['from_release'], plan['to_release']) == ('24.11.5', '26.05.5', '24.11', '26.05')
    assert plan['steps'] == {'slurmdbd': ['ctl'], 'slurmctld': ['ctl'], 'slurmd': ['n1', 'n2'], 'login': []}
    assert plan['path'] == ['24.11', '26.05']
    assert plan['versions']['n1'] == {'slurmd': [T11, F05]}


def test_plan_upgrades_the_login_nodes_last_and_names_them():
    hosts = dict(_cluster(), **{'login-01': _host(['slurm_login'], T11, F05)})
    plan = upgrade_plan(hosts)
    assert plan['problems'] == []
    assert plan['steps'] == {'slurmdbd': ['ctl'], 'slurmctld': ['ctl'], 'slurmd': ['n1', 'n2'], 'login': ['login-01']}
    assert plan['summary'] == ('Slurm 24.11.5 -> 26.05.5: slurmdbd on ctl, then slurmctld on ctl, then slurmd on n1, n2, then the '
                               'login nodes on login-01')
    # done already: nothing more to do there, and the summary still names the group
    hosts['login-01'] = _host(['slurm_login'], F05, F05)
    plan = upgrade_plan(hosts)
    assert plan['steps']['login'] == [] and plan['summary'].endswith('then the login nodes on no host')


@pytest.mark.parametrize('login, fragment', [
    (('', F05), 'login-01 (group slurm_login) has no slurm-client installed: bring the cluster up with site.yml first'),
    ((T11, ''), 'login-01: the package manager offers no slurm-client to install'),
    (('26.11.1-1', F05), 'login-01: slurm-client 26.11.1 is newer than the 26.05.5 the package manager offers: Slurm is never downgraded '
                         '(restore the backup taken before the upgrade instead)'),
])
def test_plan_refuses_a_login_node_it_cannot_upgrade(login, fragment):
    plan = upgrade_plan(dict(_cluster(), **{'login-01': _host(['slurm_login'], *login)}))
    assert plan['needed'] is False
    assert [p for p in plan['problems'] if fragment in p], plan['problems']


def test_plan_nothing_to_do_when_every_daemon_is_at_the_candidate():
    plan = upgrade_plan(_cluster(ctl=(F05, F05), n1=(F05, F05), n2=(F05, F05)))
    assert plan['problems'] == []
    assert plan['needed'] is False
    assert plan['steps'] == {'slurmdbd': [], 'slurmctld': [], 'slurmd': [], 'login': []}


def test_plan_resumes_an_interrupted_upgrade():
    # slurmdbd, slurmctld and n1 were done when the last run stopped
    plan = upgrade_plan(_cluster(ctl=(F05, F05), n1=(F05, F05)))
    assert plan['problems'] == []
    assert plan['steps'] == {'slurmdbd': [], 'slurmctld': [], 'slurmd': ['n2'], 'login': []}
    assert plan['from'] == '24.11.5'


def test_plan_refuses_22_05_to_24_11_naming_the_path():
    plan = upgrade_plan(_cluster(ctl=(B05, T11), n1=(B05, T11), n2=(B05, T11)))
    assert plan['needed'] is False
    assert len(plan['problems']) == 1
    assert 'Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step' in plan['problems'][0]
    assert '22.05 -> 23.11 -> 24.11' in plan['problems'][0]


def test_plan_forced_past_the_window_keeps_the_problem_as_a_warning():
    plan = upgrade_plan(_cluster(ctl=(B05, T11), n1=(B05, T11), n2=(B05, T11)), force=True)
    assert plan['problems'] == []
    assert plan['needed'] is True
    assert 'cannot be upgraded to 24.11.5 in one step' in plan['forced']


@pytest.mark.parametrize('hosts, expected', [
    (_cluster(n2=(T11, '')), ['n2: the package manager offers no slurmd to install']),
    (_cluster(n2=('', F05)), ['n2 (group slurm_compute) has no slurmd installed']),
    (_cluster(n2=(T11, T11)), ['the package manager offers different Slurm versions, one target is needed for the whole '
                               'cluster: 24.11.5 on n2:slurmd; 26.05.5 on ctl:slurmdbd, ctl:slurmctld, n1:slurmd']),
    (_cluster(n1=(F05, T11), ctl=(T11, T11), n2=(T11, T11)),
     ['n1: slurmd 26.05.5 is newer than the 24.11.5 the package manager offers']),
    (_cluster(n1=(T11, 'garbage'), n2=(T11, '')),
     ["n1: slurmd: 'garbage' is not a Slurm version", 'n2: the package manager offers no slurmd']),
    ({}, ['no host of the groups slurmdbd, slurm_controller, slurm_compute, slurm_login is in this run']),
])
def test_plan_problems_name_the_host_and_what_is_wrong(hosts, expected):
    plan = upgrade_plan(hosts)
    assert plan['needed'] is False
    assert len(plan['problems']) == len(expected)
    for problem, text in zip(plan['problems'], expected):
        assert text in problem


def test_plan_rejects_a_host_report_that_is_not_a_dict():
    with pytest.raises(ValueError, match='hosts must be a dict'):
        upgrade_plan(['ctl'])


@pytest.mark.parametrize('line, state', [
    ('slurmdbd: slurmdbd version 26.05.5 started', 'ready'),
    ('[2026-11-26T13:00:00.123] slurmdbd version 24.11.5 started', 'ready'),
    ('slurmdbd: error: Database schema is too old for this version of Slurm to upgrade.', 'error'),
    ('slurmdbd: fatal: Unable to initialize accounting_storage/as_mysql accounting storage plugin', 'error'),
    ('slurmdbd: accounting_storage/as_mysql: as_mysql_convert_tables_pre_create: pre-converting job table', ''),
    ('slurmdbd: debug:  Log file re-opened', ''),
])
def test_dbd_line_state(line, state):
    assert dbd_line_state(line) == state


def test_dbd_outcome_ready_after_conversion():
    out = dbd_outcome(['slurmdbd: accounting_storage/as_mysql: pre-converting job table for gpucluster',
                       'slurmdbd: Conversion done: success!',
                       'slurmdbd: slurmdbd version 26.05.5 started'], None)
    assert out['ok'] and out['ready']
    assert out['message'] == 'slurmdbd changed the database schema (2 lines of output about it) and started'
    assert len(out['conversion']) == 2


def test_dbd_outcome_counts_the_table_changes_of_26_05():
    out = dbd_outcome(['[2026-11-26T13:40:31.863] adding key archive_delete (deleted) to table txn_table',
                       'alter table txn_table modify `deleted` tinyint default 0 not null, add key archive_delete (deleted);',
                       '[2026-11-26T13:40:31.900] slurmdbd version 26.05.5 started'], None)
    assert out['ok'] and len(out['conversion']) == 2


def test_dbd_outcome_ready_without_conversion():
    out = dbd_outcome(['slurmdbd: slurmdbd version 26.05.5 started'], None)
    assert out['ok']
    assert out['message'] == 'slurmdbd started; it printed no schema change'


def test_dbd_outcome_exit_names_the_errors():
    out = dbd_outcome(['slurmdbd: error: Database schema is too old for this version of Slurm to upgrade.',
                       'slurmdbd: fatal: Unable to initialize accounting_storage/as_mysql accounting storage plugin'], 1)
    assert not out['ok']
    assert out['message'] == ('slurmdbd exited with code 1 before it was ready: error: Database schema is too old for this '
                              'version of Slurm to upgrade.; fatal: Unable to initialize accounting_storage/as_mysql '
                              'accounting storage plugin')


def test_dbd_outcome_killed_by_a_signal():
    out = dbd_outcome(['slurmdbd: error: mysql_query failed: 1142 ALTER command denied to user'], -11)
    assert out['message'] == ('slurmdbd was killed by signal 11 before it was ready: '
                              'error: mysql_query failed: 1142 ALTER command denied to user')


def test_plan_an_apt_cache_failure_is_a_problem_naming_the_host():
    hostvars = {'n1': {'group_names': ['slurm_compute'],
                       '_p': {'rc': 100, 'stdout': '', 'stderr': "E: The value 'forky' is invalid for APT::Default-Release\n"}}}
    plan = plan_from_hostvars(['n1'], hostvars, '_p')
    assert plan['problems'] == ["n1: apt-cache policy failed (E: The value 'forky' is invalid for APT::Default-Release): "
                                'name a release apt has package lists for']


def test_dbd_outcome_timeout():
    out = dbd_outcome(['slurmdbd: pre-converting job table'], None, timed_out=True)
    assert not out['ok']
    assert 'did not finish' in out['message']


def test_plan_a_daemon_running_a_replaced_program_is_still_to_upgrade():
    # the slurmdbd step upgraded every Slurm package of ctl; its slurmctld still runs 24.11
    hosts = _cluster(ctl=(F05, F05))
    hosts['ctl']['replaced'] = ['slurmctld']
    plan = upgrade_plan(hosts)
    assert plan['problems'] == []
    assert plan['steps'] == {'slurmdbd': [], 'slurmctld': ['ctl'], 'slurmd': ['n1', 'n2'], 'login': []}
    assert plan['summary'] == 'Slurm 24.11.5 -> 26.05.5: slurmdbd on no host, then slurmctld on ctl, then slurmd on n1, n2'


def test_plan_a_replaced_program_of_the_last_daemon_is_restarted():
    hosts = _cluster(ctl=(F05, F05), n1=(F05, F05), n2=(F05, F05))
    hosts['n2']['replaced'] = ['slurmd']
    plan = upgrade_plan(hosts)
    assert plan['steps'] == {'slurmdbd': [], 'slurmctld': [], 'slurmd': ['n2'], 'login': []}
    assert plan['needed'] is True


def test_plan_summary_when_nothing_is_to_do():
    plan = upgrade_plan(_cluster(ctl=(F05, F05), n1=(F05, F05), n2=(F05, F05)))
    assert plan['summary'] == 'Every Slurm daemon runs 26.05.5: nothing to upgrade'


POLICY = """slurmdbd:
  Installed: 24.11.5-4+deb13u1
  Candidate: 26.05.5-1
  Version table:
     26.05.5-1 990
        100 http://deb.debian.org/debian forky/main amd64 Packages
 *** 24.11.5-4+deb13u1 500
        500 http://deb.debian.org/debian trixie/main amd64 Packages
        100 /var/lib/dpkg/status
slurmctld:
  Installed: (none)
  Candidate: 26.05.5-1
  Version table:
slurmd:
  Installed: (none)
  Candidate: (none)
  Version table:
"""


def test_apt_policy_versions():
    assert apt_policy_versions(POLICY) == {
        'slurmdbd': {'installed': '24.11.5-4+deb13u1', 'candidate': '26.05.5-1'},
        'slurmctld': {'installed': '', 'candidate': '26.05.5-1'},
        'slurmd': {'installed': '', 'candidate': ''},
    }
    assert apt_policy_versions('') == {}


def test_slurm_packages_are_the_installed_packages_of_slurms_sources():
    text = '\n'.join([
        'ii  slurmd slurm-wlm',
        'ii  libslurm42t64:amd64 slurm-wlm',
        'ii  slurm-wlm-nvml-plugin slurm-wlm-contrib',
        'ii  libslurm-dev slurm-wlm',
        'rc  slurmctld slurm-wlm',          # removed, configuration left: not upgraded
        'iU  slurmdbd slurm-wlm',           # unpacked, not configured: not counted as installed
        'ii  munge munge',
        'ii  slurm-wlm-torque slurm-wlm-torque',   # another source
        'garbage',
    ])
    assert slurm_packages(text) == ['libslurm-dev', 'libslurm42t64', 'slurm-wlm-nvml-plugin', 'slurmd']


PKG_POLICY = '''slurmd:
  Installed: 24.11.5-4+deb13u1
  Candidate: 26.05.5-1
libslurm42t64:
  Installed: 24.11.5-4+deb13u1
  Candidate: 24.11.5-4+deb13u1
slurm-wlm-nvml-plugin:
  Installed: 24.11.5-1
  Candidate: 26.05.5-1
slurm-wlm-rrd-plugin:
  Installed: 22.05.8-4+deb12u3
  Candidate: (none)
'''


@pytest.mark.parametrize('which, expected', [
    ('candidate', ['slurm-wlm-nvml-plugin=26.05.5-1', 'slurmd=26.05.5-1']),
    ('installed', ['slurm-wlm-nvml-plugin=24.11.5-1', 'slurmd=24.11.5-4+deb13u1']),
])
def test_upgrade_pins(which, expected):
    assert upgrade_pins(PKG_POLICY, which) == expected


def test_upgrade_pins_rejects_an_unknown_choice():
    with pytest.raises(ValueError, match="which must be 'candidate' or 'installed', got 'latest'"):
        upgrade_pins(PKG_POLICY, 'latest')


def test_show_config():
    show = ('Configuration data as of 2026-11-26T13:00:00\nAccountingStorageBackupHost = (null)\n'
            'SLURM_VERSION           = 26.05.5\nStateSaveLocation       = /var/lib/slurm/slurmctld\n')
    assert show_config(show)['SLURM_VERSION'] == '26.05.5'
    assert show_config(show)['StateSaveLocation'] == '/var/lib/slurm/slurmctld'


def test_systemctl_main_pids():
    text = 'MainPID=5113\nId=slurmdbd.service\n\nMainPID=0\nId=slurmd.service\n'
    assert systemctl_main_pids(text) == {'slurmdbd': 5113, 'slurmd': 0}


def test_systemctl_main_pids_of_odd_output_is_no_traceback():
    text = 'Id=slurmdbd.service\nMainPID=\n\nId=slurmd.service\nMainPID=-1\n\nId=munge.service\nMainPID=12x\n\nMainPID=7\n'
    assert systemctl_main_pids(text) == {'slurmdbd': 0, 'slurmd': 0, 'munge': 0}


@pytest.mark.parametrize('exe, started, ctime, replaced', [
    ('/usr/sbin/slurmctld-wlm', None, None, False),
    ('/usr/sbin/slurmctld-wlm (deleted)', None, None, True),
    ('', 1000.0, 1500.0, True),      # link unreadable: the file changed after the start
    ('', 1500.0, 1000.0, False),
    ('', None, 1000.0, False),
])
def test_program_replaced(exe, started, ctime, replaced):
    assert program_replaced(exe, started, ctime) is replaced


def test_process_start_counts_fields_after_the_command_name():
    # field 22 (starttime) is 7082378 ticks; the command name holds a space and a parenthesis
    stat = '3472 (slurm ctld)) S 1 3472 3472 0 -1 4194560 2046 0 0 0 27 31 0 0 20 0 7 0 7082378 400000 2000 18446744073709551615'
    assert process_start(stat, 1795627727, 100) == pytest.approx(1795627727 + 70823.78)


def test_plan_from_hostvars_reads_the_registered_results():
    hostvars = {
        'ctl': {'group_names': ['slurm_controller', 'slurmdbd'],
                '_policy': {'stdout': POLICY.replace('Installed: (none)\n  Candidate: 26.05.5-1',
                                                     'Installed: 24.11.5-4+deb13u1\n  Candidate: 26.05.5-1')},
                '_daemons': {'replaced': []}},
    }
    plan = plan_from_hostvars(['ctl'], hostvars, '_policy', replaced='_daemons')
    assert plan['problems'] == []
    assert plan['steps'] == {'slurmdbd': ['ctl'], 'slurmctld': ['ctl'], 'slurmd': [], 'login': []}


@pytest.mark.parametrize('hosts, problems', [
    (_cluster(n2=(T11, '')), ['n2: the package manager offers no slurmd to install (add the repository of the new Slurm, or name its '
                              'release in slurm_upgrade_apt_default_release)']),
    (_cluster(n2=('', F05)), ['n2 (group slurm_compute) has no slurmd installed: bring the cluster up with site.yml first']),
    (_cluster(n1=(F05, T11), ctl=(T11, T11), n2=(T11, T11)),
     ['n1: slurmd 26.05.5 is newer than the 24.11.5 the package manager offers: Slurm is never downgraded (restore the backup taken '
      'before the upgrade instead)']),
    (dict(_cluster(), **{'login-01': _host(['slurm_login'], '', F05)}),
     ['login-01 (group slurm_login) has no slurm-client installed: bring the cluster up with site.yml first']),
    # a host whose report says it could not be read is named with that, whatever else it reports; a host without a report has nothing
    (dict(_cluster(), ctl=dict(_cluster()['ctl'], error='apt-cache policy failed'), n3=None), ['ctl: apt-cache policy failed']),
    (_cluster(ctl=(B05, T11), n1=(B05, T11), n2=(B05, T11)),
     ['Slurm 22.05.8 cannot be upgraded to 24.11.5 in one step: 24.11 is 4 major releases ahead and 24.11 upgrades from at most 3 '
      'releases back (SchedMD; its slurmdbd refuses an older database: "Database schema is too old"); upgrade through 22.05 -> 23.11 '
      '-> 24.11']),
])
def test_plan_problem_messages(hosts, problems):
    plan = upgrade_plan(hosts)
    assert plan['problems'] == problems
    assert (plan['needed'], plan['path'], plan['summary'], plan['forced']) == (False, [], '', '')


def test_plan_whole():
    assert upgrade_plan(_cluster()) == {
        'needed': True, 'from': '24.11.5', 'to': '26.05.5', 'from_release': '24.11', 'to_release': '26.05', 'path': ['24.11', '26.05'],
        'problems': [], 'forced': '', 'summary': 'Slurm 24.11.5 -> 26.05.5: slurmdbd on ctl, then slurmctld on ctl, then slurmd on n1, n2',
        'steps': {'slurmdbd': ['ctl'], 'slurmctld': ['ctl'], 'slurmd': ['n1', 'n2'], 'login': []},
        'versions': {'ctl': {'slurmdbd': [T11, F05], 'slurmctld': [T11, F05]}, 'n1': {'slurmd': [T11, F05]}, 'n2': {'slurmd': [T11, F05]}}}


def test_plan_forced_whole():
    plan = upgrade_plan(_cluster(ctl=(B05, T11), n1=(B05, T11), n2=(B05, T11)), force=True)
    assert plan['forced'] == upgrade_plan(_cluster(ctl=(B05, T11), n1=(B05, T11), n2=(B05, T11)))['problems'][0]
    assert (plan['from'], plan['to'], plan['from_release'], plan['to_release'], plan['path']) == (
        '22.05.8', '24.11.5', '22.05', '24.11', ['22.05', '23.11', '24.11'])
    assert plan['summary'] == 'Slurm 22.05.8 -> 24.11.5: slurmdbd on ctl, then slurmctld on ctl, then slurmd on n1, n2'


def test_plan_of_hosts_outside_the_slurm_groups():
    plan = upgrade_plan({'web': _host(['webservers'], T11, F05)})
    assert plan['problems'] == ['no host of the groups slurmdbd, slurm_controller, slurm_compute, slurm_login is in this run']
    assert plan['versions'] == {} and plan['steps'] == {'slurmdbd': [], 'slurmctld': [], 'slurmd': [], 'login': []}


@pytest.mark.parametrize('lines, returncode, timed_out, message', [
    (['slurmdbd: pre-converting job table'], None, True, 'slurmdbd did not finish its start (the schema conversion) in time and was stopped'),
    ([], None, False, 'slurmdbd exited with code None before it was ready'),
    ([], 0, False, 'slurmdbd exited with code 0 before it was ready'),
    (['error: a', 'error: b', 'slurmdbd: error: c', 'fatal: d'], 1, False, 'slurmdbd exited with code 1 before it was ready: error: b; error: c; '
                                                                           'fatal: d'),
])
def test_dbd_outcome_messages(lines, returncode, timed_out, message):
    out = dbd_outcome(lines, returncode, timed_out)
    assert out['message'] == message
    assert out['ok'] is False and out['ready'] is False


def test_dbd_outcome_whole():
    lines = ['slurmdbd: error: x', '  Conversion done  ', 'slurmdbd: slurmdbd version 26.05.5 started']
    assert dbd_outcome(lines, None) == {'ok': True, 'ready': True, 'errors': ['error: x'], 'conversion': ['Conversion done'],
                                        'message': 'slurmdbd changed the database schema (1 lines of output about it) and started'}


@pytest.mark.parametrize('result, problem', [
    ({'rc': 100, 'stdout': '', 'stderr': ''}, 'n1: apt-cache policy failed (exit code 100): name a release apt has package lists for'),
    ({'rc': 1, 'stderr': '  E: first\nE: second\n'}, 'n1: apt-cache policy failed (E: first): name a release apt has package lists for'),
])
def test_plan_from_hostvars_names_a_failed_apt_cache(result, problem):
    plan = plan_from_hostvars(['n1'], {'n1': {'group_names': ['slurm_compute'], '_p': result}}, '_p')
    assert plan['problems'] == [problem]


def test_plan_from_hostvars_reads_the_replaced_daemons_only_where_asked():
    same = POLICY.replace('Installed: (none)\n  Candidate: 26.05.5-1', 'Installed: 26.05.5-1\n  Candidate: 26.05.5-1')
    same = same.replace('Installed: 24.11.5-4+deb13u1\n  Candidate: 26.05.5-1', 'Installed: 26.05.5-1\n  Candidate: 26.05.5-1')
    hostvars = {'ctl': {'group_names': ['slurm_controller', 'slurmdbd'], '_policy': {'rc': 0, 'stdout': same},
                        '_daemons': {'replaced': ['slurmctld']}}}
    plan = plan_from_hostvars(['ctl'], hostvars, '_policy', replaced='_daemons')
    assert plan['steps'] == {'slurmdbd': [], 'slurmctld': ['ctl'], 'slurmd': [], 'login': []}
    assert plan['versions'] == {'ctl': {'slurmdbd': ['26.05.5-1', '26.05.5-1'], 'slurmctld': ['26.05.5-1', '26.05.5-1']}}
    assert plan_from_hostvars(['ctl'], hostvars, '_policy')['steps']['slurmctld'] == []
    assert plan_from_hostvars(['ctl'], hostvars, '_policy')['summary'] == 'Every Slurm daemon runs 26.05.5: nothing to upgrade'


def test_slurm_packages_of_the_older_source_names():
    text = 'ii slurm-client:amd64 slurm-llnl\nii slurmd slurm\nii slurm-wlm-basic slurm-wlm-basic\nii  slurmctld\n'
    assert slurm_packages(text) == ['slurm-client', 'slurmd']
    assert slurm_packages(None) == []


def test_show_config_whole():
    show = ('Configuration data as of 2026-11-26T13:00:00\nAccountingStorageBackupHost = (null)\nSLURM_VERSION           =  26.05.5 \n'
            'PowerPlugin             =\nCgroup Support Configuration:\n')
    assert show_config(show) == {'AccountingStorageBackupHost': '(null)', 'SLURM_VERSION': '26.05.5', 'PowerPlugin': ''}
    assert show_config(None) == {}


def test_program_replaced_at_the_same_second_is_not_replaced():
    assert program_replaced('', 1000.0, 1000.0) is False
    assert program_replaced('', 1000.0, None) is False
    assert program_replaced(None, 1000.0, 1000.5) is True


def test_upgrade_pins_of_nothing():
    assert upgrade_pins('', 'installed') == []
    assert upgrade_pins(PKG_POLICY) == ['slurm-wlm-nvml-plugin=26.05.5-1', 'slurmd=26.05.5-1']


def test_plan_with_a_problem_is_the_empty_plan_with_the_problem():
    plan = upgrade_plan(_cluster(n2=('', F05)))
    assert plan == {'needed': False, 'from': '', 'to': '', 'from_release': '', 'to_release': '', 'path': [],
                    'problems': ['n2 (group slurm_compute) has no slurmd installed: bring the cluster up with site.yml first'], 'forced': '',
                    'summary': '', 'steps': {'slurmdbd': [], 'slurmctld': [], 'slurmd': [], 'login': []},
                    'versions': {'ctl': {'slurmdbd': [T11, F05], 'slurmctld': [T11, F05]}, 'n1': {'slurmd': [T11, F05]}, 'n2': {'slurmd': ['', F05]}}}


def test_apt_policy_versions_of_a_package_without_its_lines():
    assert apt_policy_versions('slurmd:\n  Candidate: 26.05.5-1\nslurmctld:\n  Installed: 24.11.5-1\n') == {
        'slurmd': {'installed': '', 'candidate': '26.05.5-1'}, 'slurmctld': {'installed': '24.11.5-1', 'candidate': ''}}


def test_plan_a_replaced_program_older_than_the_target_keeps_its_version():
    """Only a package already at the target stands for the oldest release: an older one is read as it is."""
    hosts = {'ctl': _host(['slurm_controller'], T11, F05)}
    hosts['ctl']['replaced'] = ['slurmctld']
    plan = upgrade_plan(hosts)
    assert (plan['from'], plan['to'], plan['steps']['slurmctld'], plan['problems']) == ('24.11.5', '26.05.5', ['ctl'], [])
    hosts['ctl']['replaced'] = None
    assert upgrade_plan(hosts)['from'] == '24.11.5'


@pytest.mark.parametrize('line, state', [
    ('[2026-01-05T10:00:00.123] error: Database settings not recommended', 'error'),
    ('\terror: tab', 'error'),
    ('slurmdbd: fatal: no', 'error'),
    ('noerror: fine', ''),
    ('slurmdbd: slurmdbd version 26.05.5 started', 'ready'),
])
def test_dbd_line_state_after_a_timestamp(line, state):
    assert dbd_line_state(line) == state


def test_slurm_packages_takes_only_lines_of_three_fields():
    text = 'ii slurmd slurm-wlm extra\nii slurmctld slurm-wlm\nii libslurm40 slurm-wlm\n'
    assert slurm_packages(text) == ['libslurm40', 'slurmctld']


def test_apt_policy_versions_of_a_package_line_with_blanks_before_its_colon():
    assert apt_policy_versions('slurmd :\n  Installed: 1.0\n  Candidate: (none)\n') == {'slurmd': {'installed': '1.0', 'candidate': ''}}


def test_systemctl_main_pids_of_blocks_split_by_a_line_of_blanks():
    text = 'Id=slurmd.service\nMainPID=42 \n  \nId=munge.service\nMainPID=x\n'
    assert systemctl_main_pids(text) == {'slurmd': 42, 'munge': 0}


def test_plan_refusals_in_full():
    bad = {'ctl': _host(['slurm_controller'], 'garbage', F05)}
    assert upgrade_plan(bad)['problems'] == ["ctl: slurmctld: 'garbage' is not a Slurm version: expected e.g. 'slurm 24.11.5' or "
                                             "'24.11.5-4+deb13u1'"]
    two = {'a': _host(['slurm_compute'], T11, '26.05.5-1'), 'b': _host(['slurm_compute'], T11, '26.05.4-1')}
    assert upgrade_plan(two)['problems'] == ['the package manager offers different Slurm versions, one target is needed for the whole '
                                             'cluster: 26.05.4 on b:slurmd; 26.05.5 on a:slurmd']
    with pytest.raises(ValueError) as err:
        upgrade_plan([])
    assert str(err.value) == 'hosts must be a dict of host name to its report, got []'
