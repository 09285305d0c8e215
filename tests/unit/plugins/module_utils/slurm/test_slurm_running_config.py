# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validation check running_config (issue 50): slurm.conf against what ``scontrol show config`` says slurmctld runs.

The texts are real: tests/unit/fixtures/slurm/ (README there) holds ``scontrol show config`` recorded from a
Slurm 22.05.8 slurmctld and the slurm.conf it ran, the simulated cluster's slurm.conf as the slurm role's
template makes it, and an edited file with the output after ``scontrol reconfigure``. A healthy cluster must
give no false alarm; a key that cannot be read for certain is skipped and named, never failed.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os
import re

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import (
    compare_running_config,
    parse_show_config,
    running_config_from_results,
    running_config_record,
)
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_checks import drain_reasons
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_report import build_report, failure_message

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'slurm')
PATH = '/etc/slurm/slurm.conf'


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


CONF = fixture('slurm.conf.22.05.8')
SHOW = fixture('show_config.22.05.8.txt')
SIMULATED = fixture('slurm.conf.simulated')


def set_conf(text, key, value):
    """``text`` with ``key``'s line set to ``key=value`` (appended when absent)."""
    pattern = re.compile(r'^%s=.*$' % key, re.M)
    if pattern.search(text):
        return pattern.sub('%s=%s' % (key, value), text)
    return text.replace('\n\nNodeName=', '\n%s=%s\n\nNodeName=' % (key, value), 1)


def set_show(text, key, value):
    """``text`` with ``key``'s line printed as ``value`` (scontrol's ``%-23s = %s``)."""
    pattern = re.compile(r'^%s\s*=.*$' % re.escape(key), re.M)
    assert pattern.search(text), key
    return pattern.sub(lambda _m: '%-23s = %s' % (key, value), text, count=1)


def simulated_show():
    """The recording as slurmctld of the simulated cluster prints it: its host name, and the slurmdbd accounting keys
    that the recording host (no slurmdbd) ran without, as config_info.c prints them."""
    text = SHOW.replace('= vm\n', '= ctl\n')
    text = set_show(text, 'AccountingStorageType', 'accounting_storage/slurmdbd')
    text = set_show(text, 'AccountingStorageEnforce', 'associations,limits,qos,safe')
    return set_show(text, 'AccountingStorageTRES', 'cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu,gres/gpu:1g.10gb,gres/gpu:a100')


def later_release_show(text):
    """A recording as Slurm 26.05 prints it (config_info.c and read_config.c of 26.05.3): Prolog[0]/Epilog[0], (null) for
    the none plugins and MpiDefault=none, topology/flat for no TopologyPlugin, lower-case booleans."""
    text = re.sub(r'^Prolog {18}=', 'Prolog[0]               =', text, flags=re.M)
    text = re.sub(r'^Epilog {18}=', 'Epilog[0]               =', text, flags=re.M)
    for key in ('MpiDefault', 'JobCompType', 'AccountingStorageType'):
        if re.search(r'^%s\s*= \S+/none$|^%s\s*= none$' % (key, key), text, re.M):
            text = set_show(text, key, '(null)')
    text = set_show(text, 'TopologyPlugin', 'topology/flat')
    text = re.sub(r'= (Yes|No)$', lambda m: '= ' + m.group(1).lower(), text, flags=re.M)
    return set_show(text, 'SLURM_VERSION', '26.05.3')


def names(skipped):
    return [key for key, _why in skipped]


# --- a healthy cluster: no false alarm ----------------------------------------------------------

HEALTHY_SKIPPED = ['AccountingStorageType', 'JobCompType', 'PrologFlags', 'HealthCheckNodeState', 'PriorityDecayHalfLife', 'PriorityMaxAge']


@pytest.mark.parametrize('conf, show, compared, skipped', [
    pytest.param(CONF, SHOW, 43, HEALTHY_SKIPPED, id='recorded-22.05.8'),
    # the simulated cluster's file with the template's defaults: 44 keys compared, 7 skipped
    pytest.param(SIMULATED, simulated_show(), 44, ['JobCompType', 'PrologFlags', 'AccountingStorageEnforce', 'HealthCheckNodeState',
                                                   'AccountingStorageTRES', 'PriorityDecayHalfLife', 'PriorityMaxAge'], id='simulated-cluster'),
    # 26.05 prints Prolog[0], (null) for MpiDefault=none: MpiDefault is skipped, the Prolog/Epilog paths are still compared
    pytest.param(CONF, later_release_show(SHOW), 42, ['MpiDefault'] + HEALTHY_SKIPPED, id='as-26.05-prints-it'),
])
def test_a_healthy_configuration_passes(conf, show, compared, skipped):
    result = compare_running_config(conf, show)
    assert result['differ'] == []
    assert len(result['compared']) == compared, result['compared']
    assert sorted(names(result['skipped'])) == sorted(skipped), result['skipped']
    record = running_config_record('ctl', PATH, conf, show)
    assert record['status'] == 'pass', record
    assert record['reason'].startswith('slurmctld on ctl runs /etc/slurm/slurm.conf: compared %d keys, all equal; %d not comparable: '
                                       % (compared, len(skipped))), record['reason']
    for key in skipped:
        assert key in record['reason']


def test_every_setting_of_the_simulated_file_is_compared_or_named():
    result = compare_running_config(SIMULATED, simulated_show())
    settings = [line.split('=', 1)[0] for line in SIMULATED.splitlines()
                if '=' in line and not line.startswith(('#', 'NodeName=', 'PartitionName='))]
    assert sorted(result['compared'] + names(result['skipped'])) == sorted(settings)
    assert len(settings) == 51
    for key in ('ClusterName', 'SlurmctldHost', 'SlurmUser', 'SelectTypeParameters', 'TaskPlugin', 'Prolog', 'Epilog',
                'SlurmdTimeout', 'Waittime', 'PriorityWeightFairshare', 'PriorityFavorSmall', 'SchedulerParameters', 'GresTypes',
                'AccountingStorageType', 'AccountingStorageHost', 'HealthCheckProgram', 'JobAcctGatherFrequency'):
        assert key in result['compared'], key
    assert 'MaxJobCount' not in result['compared']  # the template does not set it


# --- a difference fails, naming the daemon, the host, the key, both values and the fix ----------

@pytest.mark.parametrize('version, fix', [
    ('22.05.8', 'Apply the file: sudo systemctl restart slurmctld on ctl (MaxJobCount needs a restart on Slurm 22.05.8, '
                'a reconfigure is not enough)'),
    ('24.11.5', 'Apply the file: sudo scontrol reconfigure on ctl;'),
])
def test_one_number_differs(version, fix):
    conf = set_conf(CONF, 'MaxJobCount', '20000')
    show = set_show(SHOW, 'SLURM_VERSION', version)
    result = compare_running_config(conf, show)
    assert result['differ'] == [{'key': 'MaxJobCount', 'file': '20000', 'running': '10000'}]
    record = running_config_record('ctl', PATH, conf, show)
    assert (record['stage'], record['node'], record['check'], record['status']) == ('slurm', 'slurmctld@ctl', 'running_config', 'fail')
    assert record['reason'].startswith('slurmctld on ctl does not run /etc/slurm/slurm.conf: MaxJobCount is 20000 in the file, '
                                       '10000 in slurmctld. '), record['reason']
    assert fix in record['reason']
    assert "or run ansible-playbook gpucluster.bringup.site (the collection's way). Compared 44 keys, 1 differs; 6 not comparable: " in record['reason']


def test_a_key_every_daemon_reads_at_start_asks_for_every_daemon():
    record = running_config_record('ctl', PATH, set_conf(CONF, 'AuthType', 'auth/slurm'), set_show(SHOW, 'SLURM_VERSION', '24.11.5'))
    assert 'AuthType is auth/slurm in the file, auth/munge in slurmctld' in record['reason']
    assert ('sudo systemctl restart slurmctld on ctl, then slurmd on every node (AuthType needs every daemon restarted on Slurm 24.11.5)'
            in record['reason'])


def test_without_a_release_the_restart_rules_of_22_05_hold():
    show = '\n'.join(line for line in SHOW.splitlines() if not line.startswith('SLURM_VERSION'))
    record = running_config_record('ctl', PATH, set_conf(CONF, 'SchedulerType', 'sched/builtin'), show)
    assert 'sudo systemctl restart slurmctld on ctl (SchedulerType needs a restart on an unknown Slurm release' in record['reason']


def test_several_keys_differ_each_with_both_values():
    conf = set_conf(set_conf(CONF, 'KillWait', '60'), 'SchedulerParameters', 'bf_interval=60')
    record = running_config_record('ctl', PATH, conf, set_show(SHOW, 'SLURM_VERSION', '24.11.5'))
    assert ('KillWait is 60 in the file, 30 sec in slurmctld; SchedulerParameters is bf_interval=60 in the file, nohold_on_prolog_fail '
            'in slurmctld. Apply the file: sudo scontrol reconfigure on ctl;') in record['reason']
    assert ', 2 differ; ' in record['reason']


def test_the_recorded_reconfigure_that_needed_a_restart():
    """The edited file after scontrol reconfigure on 22.05.8: SelectTypeParameters did not change (it needs a restart);
    MaxJobCount, TaskPlugin, SchedulerParameters, PriorityFavorSmall=0 did; the values Slurm reads its own way are skipped."""
    conf, show = fixture('slurm.conf.22.05.8.edited'), fixture('show_config.22.05.8.edited.txt')
    result = compare_running_config(conf, show)
    assert result['differ'] == [{'key': 'SelectTypeParameters', 'file': 'cr_core_memory,CR_PACK_NODES', 'running': 'CR_CORE_MEMORY'}]
    for key in ('MaxJobCount', 'TaskPlugin', 'SchedulerParameters', 'PriorityFavorSmall'):
        assert key in result['compared'], key
    why = dict(result['skipped'])
    assert why['MessageTimeout'] == 'not a plain number on both sides'  # 010: Slurm reads octal 8
    assert why['MinJobAge'] == 'Slurm raises MinJobAge below 2 to 2'
    assert why['SlurmctldDebug'] == 'not a level name in the file'  # 3 is printed as info
    assert why['PrologFlags'] == why['HealthCheckNodeState'] == 'scontrol prints the flags Slurm derives, implied ones added'
    record = running_config_record('ctl', PATH, conf, show)
    assert record['status'] == 'fail'
    assert 'sudo systemctl restart slurmctld on ctl (SelectTypeParameters needs a restart on Slurm 22.05.8' in record['reason']


# --- the forms scontrol prints -------------------------------------------------------------------

@pytest.mark.parametrize('key, file_value, shown, equal', [
    # units
    ('SlurmdTimeout', '300', '300 sec', True),
    ('SlurmdTimeout', '300', '600 sec', False),
    ('EpilogMsgTime', '2000', '2000 usec', True),
    ('ResumeRate', '300', '300 nodes/min', True),
    ('VSizeFactor', '0', '0 percent', True),
    ('OverTimeLimit', '5', '5 min', True),
    ('MaxJobCount', '10000', '10000', True),
    ('MaxJobCount', '10001', '10000', False),
    # case
    ('ClusterName', 'GPUcluster', 'gpucluster', True),
    ('ClusterName', 'other', 'gpucluster', False),
    ('SelectTypeParameters', 'CR_Core_Memory', 'CR_CORE_MEMORY', True),
    ('SelectTypeParameters', 'CR_Core,CR_Memory', 'CR_CORE_MEMORY', True),
    ('SelectTypeParameters', 'CR_Core', 'CR_CORE_MEMORY', False),
    ('SelectType', 'Select/Cons_Tres', 'select/cons_tres', True),
    ('SelectType', 'select/linear', 'select/cons_tres', False),
    ('MpiDefault', 'PMIx', 'pmix', True),
    ('SlurmctldDebug', 'Verbose', 'verbose', True),
    # booleans as the file may write them, as 22.05 (Yes/No) and later (yes/no) print them
    ('PriorityFavorSmall', 'NO', 'No', True),
    ('PriorityFavorSmall', 'false', 'no', True),
    ('PriorityFavorSmall', '1', 'Yes', True),
    ('PriorityFavorSmall', 'YES', 'no', False),
    # lists as sets, any order and case
    ('SchedulerParameters', 'bf_interval=60,Nohold_on_prolog_fail', 'nohold_on_prolog_fail,bf_interval=60', True),
    ('SchedulerParameters', 'bf_interval=60', 'bf_interval=30', False),
    ('GresTypes', 'gpu,mps', 'mps,gpu', True),
    ('TaskPlugin', 'task/cgroup,task/affinity', 'task/cgroup,task/affinity', True),
    ('TaskPlugin', 'affinity,cgroup', 'task/cgroup,task/affinity', True),  # 26.05 sorts and adds the prefix
    ('TaskPlugin', 'task/cgroup', 'task/cgroup,task/affinity', False),
    # users: name(uid)
    ('SlurmUser', 'slurm', 'slurm(64030)', True),
    ('SlurmUser', 'root', 'slurm(64030)', False),
    # paths as written
    ('StateSaveLocation', '/var/lib/slurm/slurmctld', '/var/lib/slurm/slurmctld', True),
    ('StateSaveLocation', '/srv/slurm', '/var/lib/slurm/slurmctld', False),
])
def test_forms(key, file_value, shown, equal):
    result = compare_running_config(set_conf(CONF, key, file_value), set_show(SHOW, key, shown))
    assert key in result['compared'], result['skipped']
    assert (result['differ'] == []) is equal, result['differ']


@pytest.mark.parametrize('key, file_value, shown, why', [
    ('FooBar', '1', None, 'no certain comparison'),  # a key Slurm does not know: not in the table
    ('PriorityCalcPeriod', '5', '00:05:00', 'scontrol prints its own time format'),
    ('AccountingStorageTRES', 'gres/gpu', None, 'Slurm adds its default TRES'),
    ('MessageTimeout', '010', '8 sec', 'not a plain number on both sides'),  # strtoul base 0: octal
    ('MaxJobCount', '10k', '10240', 'not a plain number on both sides'),
    ('SuspendTime', '600', 'INFINITE', 'not a plain number on both sides'),
    ('MpiDefault', 'none', '(null)', 'scontrol prints (null) (Slurm dropped or defaulted the value)'),
    ('PowerPlugin', 'power/none', None, 'no certain comparison'),
    ('TopologyPlugin', 'topology/none', 'topology/flat', 'a none or default plugin, which Slurm replaces'),
    ('TaskPlugin', 'task/none', '(null)', 'scontrol prints (null) (Slurm dropped or defaulted the value)'),
    ('SlurmUser', '64030', 'slurm(64030)', 'not a user name in the file and name(uid) in scontrol'),
    ('MinJobAge', '1', '2 sec', 'Slurm raises MinJobAge below 2 to 2'),
    ('SchedulerTimeSlice', '2', '30 sec', 'Slurm replaces SchedulerTimeSlice below 5 by its default'),
    ('TreeWidth', '0', '50', 'Slurm replaces 0 by its default'),
    ('HealthCheckInterval', '"300"', '300 sec', 'empty or quoted in the file'),
    ('ReturnToService', '', '2', 'empty or quoted in the file'),
    ('Epilog', '/etc/slurm/epilog.d/*,/usr/local/sbin/epilog', '/etc/slurm/epilog.d/*', 'several values'),  # a path list
])
def test_a_key_that_cannot_be_read_for_certain_is_skipped_and_named(key, file_value, shown, why):
    show = SHOW if shown is None else set_show(SHOW, key, shown)
    result = compare_running_config(set_conf(CONF, key, file_value), show)
    assert result['differ'] == []
    assert dict(result['skipped'])[key] == why
    record = running_config_record('ctl', PATH, set_conf(CONF, key, file_value), show)
    assert record['status'] == 'pass', record
    assert re.search(r'(: |; |, )%s(, [A-Za-z]+)* \(%s\)' % (key, re.escape(why)), record['reason']), record['reason']


def test_a_key_scontrol_does_not_print_is_skipped():
    show = '\n'.join(line for line in SHOW.splitlines() if not line.startswith('PriorityWeightAge'))
    result = compare_running_config(CONF, show)
    assert dict(result['skipped'])['PriorityWeightAge'] == 'not in scontrol show config'
    assert result['differ'] == []


def test_max_job_count_lowered_by_slurm_is_skipped():
    show = set_show(set_show(SHOW, 'MaxJobId', '1000'), 'MaxJobCount', '1000')
    result = compare_running_config(set_conf(CONF, 'MaxJobCount', '20000'), show)
    assert dict(result['skipped'])['MaxJobCount'] == 'Slurm lowers MaxJobCount to MaxJobId - FirstJobId + 1'
    assert result['differ'] == []


def test_keys_printed_with_an_index():
    # SlurmctldHost[0] against SlurmctldHost=vm; with a backup controller (SlurmctldHost[1]) the one line cannot say which
    assert 'SlurmctldHost' in compare_running_config(CONF, SHOW)['compared']
    two = SHOW.replace('SlurmctldHost[0]        = vm\n', 'SlurmctldHost[0]        = vm\nSlurmctldHost[1]        = vm2\n')
    assert dict(compare_running_config(CONF, two)['skipped'])['SlurmctldHost'] == 'scontrol prints several SlurmctldHost entries'
    moved = later_release_show(SHOW)
    assert compare_running_config(set_conf(CONF, 'Prolog', '/srv/prolog'), moved)['differ'] == [
        {'key': 'Prolog', 'file': '/srv/prolog', 'running': '/usr/local/lib/gpucluster-slurm/prolog'}]


def test_odd_lines_of_the_file():
    conf = CONF.replace('MinJobAge=300\n', '').replace('Waittime=0\n', '')
    conf = conf.replace('KillWait=30\n', 'KillWait=30\nKillWait=60\nInclude /etc/slurm/extra.conf\nthis is garbage\n'
                        'MinJobAge=300 Waittime=0\n# MaxJobCount=1\n')
    result = compare_running_config(conf, SHOW)
    why = dict(result['skipped'])
    assert why['KillWait'] == 'set more than once in the file'
    assert why['MinJobAge'] == 'its line holds more than KEY=value'
    assert 'MaxJobCount' not in why and 'MaxJobCount' not in result['compared']
    assert result['differ'] == []


def test_garbled_show_lines_are_ignored():
    garbled = SHOW.replace('KillWait                = 30 sec\n', 'KillWait                = 30 sec\nthis line is garbled\n = 7\n'
                           'Weird Key = 3\n\x00\x01binary\n')
    assert compare_running_config(CONF, garbled) == compare_running_config(CONF, SHOW)


def test_only_the_settings_block_is_read():
    """The sections after the first blank line are other files' settings (cgroup.conf ...): never compared."""
    shown = parse_show_config(SHOW)
    assert shown['maxjobcount'] == ('MaxJobCount', '10000')
    assert shown['powerplugin'] == ('PowerPlugin', '')
    assert 'constraincores' not in shown and 'cgroupplugin' not in shown
    assert 'slurmctld(primary) at vm is up' not in ' '.join(shown)
    without = '\n'.join(line for line in SHOW.splitlines() if not line.startswith('KillWait')) + '\nKillWait = 99 sec\n'
    assert dict(compare_running_config(CONF, without)['skipped'])['KillWait'] == 'not in scontrol show config'


def test_slurmctld_reading_another_file_is_said():
    record = running_config_record('ctl', '/etc/slurm-llnl/slurm.conf', CONF, SHOW)
    assert record['reason'].startswith('slurmctld on ctl runs /etc/slurm-llnl/slurm.conf (slurmctld reads /etc/slurm/slurm.conf): ')


# --- nothing read is never a pass --------------------------------------------------------------

@pytest.mark.parametrize('show', ['', '\n\n', 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)\n',
                                  'Configuration data as of 2026-12-05T07:16:45\n'])
def test_empty_show_config_fails_naming_the_tool(show):
    with pytest.raises(ValueError, match=r'^scontrol show config printed no "Key = value" line \('):
        compare_running_config(CONF, show)
    record = running_config_record('ctl', PATH, CONF, show)
    assert record['status'] == 'fail'
    assert record['reason'].startswith('slurmctld on ctl: scontrol show config printed no "Key = value" line ('), record['reason']
    assert record['reason'].endswith('nothing was read of what slurmctld runs')


def test_a_file_without_settings_fails():
    with pytest.raises(ValueError, match='slurm.conf has no KEY=value setting'):
        compare_running_config('# empty\nNodeName=gpu-01 CPUs=2\n', SHOW)
    assert running_config_record('ctl', PATH, '', SHOW)['status'] == 'fail'


@pytest.mark.parametrize('kwargs, reason', [
    ({'show_text': None, 'show_error': 'scontrol show config exited 1: slurm_load_ctl_conf error: Unable to contact slurm controller '
                                       '(connect failure)', 'conf_text': CONF},
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: scontrol show config '
     'exited 1: slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)'),
    ({'show_text': SHOW, 'conf_text': None, 'conf_error': 'file not found'},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: file not found'),
])
def test_a_read_that_failed_fails(kwargs, reason):
    record = running_config_record('ctl', PATH, **kwargs)
    assert record == {'stage': 'slurm', 'node': 'slurmctld@ctl', 'check': 'running_config', 'status': 'fail', 'reason': reason}


def test_nothing_comparable_is_a_skip_not_a_pass():
    record = running_config_record('ctl', PATH, 'PrologFlags=Contain\nFooBar=1\n', SHOW)
    assert record['status'] == 'skip'
    assert record['reason'] == ('slurmctld on ctl: no key of /etc/slurm/slurm.conf can be compared with scontrol show config: 2 not '
                                'comparable: PrologFlags (scontrol prints the flags Slurm derives, implied ones added); FooBar (no certain '
                                'comparison)')


# --- in the report: never a drain ----------------------------------------------------------------

def test_the_record_never_drains_a_node_and_names_the_daemon_in_the_report():
    """The controller may also be a compute node (its Slurm node name its host name): the record's node is slurmctld@<host>,
    which no Slurm node can be called, so validate_drain_failed never drains for it."""
    record = running_config_record('ctl', PATH, set_conf(CONF, 'MaxJobCount', '20000'), SHOW)
    assert drain_reasons([record], ['ctl', 'gpu-01']) == {}
    report = build_report([record])
    assert report['failed_nodes'] == ['slurmctld@ctl']
    assert failure_message(report) == 'validation failed on slurmctld@ctl: 1 failed check(s) (slurm/running_config)'


# --- from the registered results of the role's tasks ---------------------------------------------

SLURP = {'content': base64.b64encode(CONF.encode()).decode(), 'encoding': 'base64', 'source': PATH, 'changed': False}
CONNECT = 'slurm_load_ctl_conf error: Unable to contact slurm controller (connect failure)'
SHOW_FAILED = 'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: '
CONF_FAILED = 'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: '


def test_registered_results_of_a_healthy_controller_pass():
    record = running_config_from_results({'rc': 0, 'stdout': SHOW, 'stderr': ''}, SLURP, 'ctl', PATH)
    assert record == running_config_record('ctl', PATH, CONF, SHOW)
    assert (record['node'], record['status']) == ('slurmctld@ctl', 'pass')


@pytest.mark.parametrize('show, slurp, reason', [
    # slurmctld stopped (recorded): exit code 1 and what scontrol printed, on stderr or else on stdout
    ({'rc': 1, 'stdout': '', 'stderr': CONNECT}, SLURP, SHOW_FAILED + 'scontrol show config exited 1: ' + CONNECT),
    ({'rc': 1, 'stdout': CONNECT + '\n', 'stderr': ''}, SLURP, SHOW_FAILED + 'scontrol show config exited 1: ' + CONNECT),
    ({'rc': 2, 'stdout': '', 'stderr': '', 'msg': "[Errno 2] No such file or directory: b'scontrol'", 'failed': True}, SLURP,
     SHOW_FAILED + "scontrol show config exited 2: [Errno 2] No such file or directory: b'scontrol'"),
    ({'rc': 3}, SLURP, SHOW_FAILED + 'scontrol show config exited 3'),
    ({'skipped': True, 'changed': False}, SLURP, SHOW_FAILED + 'scontrol did not run'),
    ({'skipped': True, 'rc': 0, 'stdout': SHOW, 'msg': 'Conditional result was False'}, SLURP,
     SHOW_FAILED + 'scontrol did not run: Conditional result was False'),
    (None, SLURP, SHOW_FAILED + 'scontrol did not run'),
    ('rc=0', SLURP, SHOW_FAILED + 'scontrol did not run'),
    ({'unreachable': True, 'msg': 'Failed to connect to the host via ssh'}, SLURP,
     SHOW_FAILED + 'scontrol did not run: Failed to connect to the host via ssh'),
    # exit code 0 and nothing printed: nothing read, never a pass
    ({'rc': 0, 'stdout': '', 'stderr': ''}, SLURP,
     'slurmctld on ctl: scontrol show config printed no "Key = value" line (no output): nothing was read of what slurmctld runs'),
    ({'rc': 0}, SLURP,
     'slurmctld on ctl: scontrol show config printed no "Key = value" line (no output): nothing was read of what slurmctld runs'),
    ({'rc': 0, 'stdout': SHOW}, {'failed': True, 'msg': 'file not found: /etc/slurm/slurm.conf'},
     CONF_FAILED + 'file not found: /etc/slurm/slurm.conf'),
    # a read marked failed is not trusted, whatever content it carries
    ({'rc': 0, 'stdout': SHOW}, dict(SLURP, failed=True, msg='permission denied'), CONF_FAILED + 'permission denied'),
    ({'rc': 0, 'stdout': SHOW}, dict(SLURP, content=None), CONF_FAILED + 'slurp did not read it'),
    ({'rc': 0, 'stdout': SHOW}, {'skipped': True}, CONF_FAILED + 'slurp did not read it'),
    ({'rc': 0, 'stdout': SHOW}, None, CONF_FAILED + 'slurp did not read it'),
    ({'rc': 0, 'stdout': SHOW}, {'content': 'QUJ', 'encoding': 'base64'}, CONF_FAILED + 'its content is not base64 (Incorrect padding)'),
])
def test_registered_results_that_read_nothing_fail_naming_why(show, slurp, reason):
    record = running_config_from_results(show, slurp, 'ctl', PATH)
    assert record == {'stage': 'slurm', 'node': 'slurmctld@ctl', 'check': 'running_config', 'status': 'fail', 'reason': reason}


def test_registered_results_name_the_host_and_path_given():
    record = running_config_from_results({'rc': 0, 'stdout': SHOW}, {'skipped': True}, 7, PATH + '.d')
    assert record['node'] == 'slurmctld@7'
    assert record['reason'] == ('slurmctld on 7: /etc/slurm/slurm.conf.d could not be read to compare with what slurmctld runs: '
                                'slurp did not read it')


# --- each kind of key on a one-setting file: compared equal, compared different, or skipped with why ---------

def show_of(*pairs, **header):
    """An ``scontrol show config`` settings block of ``pairs`` as scontrol prints them (``%-23s = %s``)."""
    return 'Configuration data as of 2026-12-05T07:16:45\n' + ''.join('%-23s = %s\n' % pair for pair in pairs)


NONE_OR_DEFAULT = 'a none or default plugin, which Slurm replaces'
NOT_A_NUMBER = 'not a plain number on both sides'


@pytest.mark.parametrize('key, file_value, shown, outcome', [
    # int: a unit word scontrol prints is dropped, other words are not a plain number; plain decimal only
    ('SlurmdTimeout', '300', '300 min', 'equal'),
    ('SlurmdTimeout', '0', '0 sec', 'equal'),
    ('SlurmdTimeout', '301', '300 sec', 'differ'),
    ('SlurmdTimeout', '300', '300 hours', NOT_A_NUMBER),
    ('SlurmdTimeout', '300', '300 sec extra', NOT_A_NUMBER),
    ('SlurmdTimeout', '00', '0', NOT_A_NUMBER),
    ('SlurmdTimeout', '-1', '0', NOT_A_NUMBER),
    # plugin: type/name on both sides, not none or default
    ('SelectType', 'linear', 'select/linear', NONE_OR_DEFAULT),
    ('SelectType', 'select/linear', 'linear', NONE_OR_DEFAULT),
    ('PreemptType', 'preempt/none', 'preempt/none', NONE_OR_DEFAULT),
    ('AuthType', 'auth/default', 'auth/munge', NONE_OR_DEFAULT),
    ('AuthType', 'Auth/Munge', 'auth/munge', 'equal'),
    # word: one token on both sides
    ('ClusterName', 'ctl', 'ctl(1)', 'not one word on both sides'),
    ('ClusterName', 'ctl', 'ctl other', 'not one word on both sides'),
    ('SlurmctldHost', 'ctl-1.example:6817', 'CTL-1.example:6817', 'equal'),
    # loglevel: a name in the file
    ('SlurmctldDebug', 'Info', 'info', 'equal'),
    ('SlurmdDebug', 'debug5', 'debug4', 'differ'),
    ('SlurmdDebug', '7', 'debug5', 'not a level name in the file'),
    # scontrol printed nothing of it
    ('SlurmctldDebug', 'info', '(null type)', 'scontrol prints (null type) (Slurm dropped or defaulted the value)'),
    ('SlurmctldDebug', 'info', '', 'scontrol prints nothing (Slurm dropped or defaulted the value)'),
    # bool: the words Slurm reads, yes/no printed
    ('DisableRootJobs', 'up', 'yes', 'equal'),
    ('DisableRootJobs', 'Down', 'No', 'equal'),
    ('DisableRootJobs', 'TRUE', 'no', 'differ'),
    ('DisableRootJobs', '0', 'Yes', 'differ'),
    ('DisableRootJobs', 'maybe', 'no', 'not yes or no on both sides'),
    ('DisableRootJobs', 'yes', 'maybe', 'not yes or no on both sides'),
    # user: name(uid) printed, the name compared as written
    ('SlurmUser', 'slurm', 'slurm', 'not a user name in the file and name(uid) in scontrol'),
    ('SlurmUser', 'Slurm', 'slurm(64030)', 'differ'),
    ('SlurmdUser', 'root', 'root(0)', 'equal'),
    # path: as written, case and all
    ('StateSaveLocation', '/A', '/a', 'differ'),
    ('Prolog', '/etc/slurm/prolog', '/etc/slurm/prolog', 'equal'),
    ('HealthCheckProgram', '/a,/b', '/a', 'several values'),
    # list: a set of words in any case; empty items dropped
    ('GresTypes', 'GPU,,mps', 'mps,gpu', 'equal'),
    ('GresTypes', 'gpu', 'gpu,mps', 'differ'),
    # tasks: the task/ prefix is optional
    ('TaskPlugin', 'task/none', 'task/affinity', 'a none plugin, which Slurm drops'),
    ('TaskPlugin', 'Task/Cgroup', 'cgroup', 'equal'),
    ('TaskPlugin', 'cgroup', 'task/affinity', 'differ'),
    # select: the base type in one name or two
    ('SelectTypeParameters', 'CR_Socket_Memory', 'CR_SOCKET,CR_MEMORY', 'equal'),
    ('SelectTypeParameters', 'CR_CPU,CR_Memory', 'CR_CPU_MEMORY', 'equal'),
    ('SelectTypeParameters', 'CR_Core', 'CR_Socket', 'differ'),
    # Slurm's own adjustments of a number, and both sides of each limit
    ('MinJobAge', '1', '2 sec', 'Slurm raises MinJobAge below 2 to 2'),
    ('MinJobAge', '2', '300 sec', 'differ'),
    ('SchedulerTimeSlice', '4', '30 sec', 'Slurm replaces SchedulerTimeSlice below 5 by its default'),
    ('SchedulerTimeSlice', '5', '30 sec', 'differ'),
    ('TreeWidth', '0', '50', 'Slurm replaces 0 by its default'),
    ('TreeWidth', '1', '50', 'differ'),
    ('HealthCheckTimeout', '0', '60 sec', 'Slurm replaces 0 by its default'),
    ('MessageTimeout', '0', '10 sec', 'differ'),
    ('MaxJobId', '67043329', '67043328', 'Slurm lowers MaxJobId to 67043328'),
    ('MaxJobId', '67043328', '1000', 'differ'),
    # an adjustment is said only of a value that differs
    ('MinJobAge', '1', '1 sec', 'equal'),
])
def test_each_kind_of_key(key, file_value, shown, outcome):
    result = compare_running_config('%s=%s\n' % (key, file_value), show_of((key, shown)))
    if outcome in ('equal', 'differ'):
        assert (result['compared'], result['skipped']) == ([key], [])
        assert result['differ'] == ([] if outcome == 'equal' else [{'key': key, 'file': file_value, 'running': shown}])
    else:
        assert result == {'compared': [], 'differ': [], 'skipped': [(key, outcome)], 'version': '', 'slurm_conf': ''}


@pytest.mark.parametrize('file_value, first, last, outcome', [
    # MaxJobCount above the ids MaxJobId - FirstJobId + 1 leaves: Slurm lowers it
    ('1001', '1', '1000', [('MaxJobCount', 'Slurm lowers MaxJobCount to MaxJobId - FirstJobId + 1')]),
    ('1000', '1', '1000', []),
    ('991', '10', '1000 ', []),
    ('992', '10', '1000', [('MaxJobCount', 'Slurm lowers MaxJobCount to MaxJobId - FirstJobId + 1')]),
    ('1001', None, '1000', []),
    ('1001', '1', None, []),
])
def test_max_job_count_against_the_job_ids(file_value, first, last, outcome):
    pairs = [('MaxJobCount', '999')] + ([('FirstJobId', first)] if first else []) + ([('MaxJobId', last)] if last else [])
    result = compare_running_config('MaxJobCount=%s\n' % file_value, show_of(*pairs))
    assert result['skipped'] == outcome
    assert result['differ'] == ([] if outcome else [{'key': 'MaxJobCount', 'file': file_value, 'running': '999'}])


def test_keys_printed_with_an_index_on_a_small_file():
    result = compare_running_config('Prolog=/a\nEpilog=/b\nKillWait=30\nSlurmctldHost=ctl\n',
                                    show_of(('Prolog[0]', '/a'), ('Prolog[1]', '/c'), ('Epilog[0]', '/b'), ('KillWait[0]', '30 sec'),
                                            ('SlurmctldHost[0]', 'ctl2')))
    assert result == {'compared': ['Epilog', 'SlurmctldHost'], 'differ': [{'key': 'SlurmctldHost', 'file': 'ctl', 'running': 'ctl2'}],
                      'skipped': [('Prolog', 'scontrol prints several Prolog entries'), ('KillWait', 'not in scontrol show config')],
                      'version': '', 'slurm_conf': ''}


def test_the_lines_of_the_file_that_are_settings():
    conf = ('# a comment\n'
            '  KillWait=60   # the comment is not the value\n'
            'Include /etc/slurm/extra.conf\n'
            '=5\n'
            'NodeName=gpu-01 CPUs=4\nnodeset=gpus Nodes=gpu-01\nDownNodes=gpu-02\nFrontendName=fe\nPartitionName=batch Nodes=ALL\n'
            'MailProg=/usr/bin/mail \\\n'
            "ClusterName='gpu'\n"
            'TreeWidth=\n'
            'SlurmdTimeout=300\nslurmdtimeout=300\nSLURMDTIMEOUT=600\n')
    result = compare_running_config(conf, show_of(('KillWait', '60 sec'), ('SlurmdTimeout', '300 sec'), ('ClusterName', 'gpu')))
    assert result == {'compared': ['KillWait'], 'differ': [], 'version': '', 'slurm_conf': '', 'skipped': [
        ('MailProg', 'its line holds more than KEY=value'), ('ClusterName', 'empty or quoted in the file'),
        ('TreeWidth', 'empty or quoted in the file'), ('SlurmdTimeout', 'set more than once in the file')]}


def test_a_key_set_twice_is_skipped_whatever_its_first_line_was():
    result = compare_running_config('ClusterName="a"\nClusterName=b\nKillWait=1 2\nkillwait=3\n', show_of(('ClusterName', 'b'), ('KillWait', '3')))
    assert result['skipped'] == [('ClusterName', 'set more than once in the file'), ('KillWait', 'set more than once in the file')]
    assert result['compared'] == []


def test_parse_show_config_reads_the_first_block_only():
    text = ('\n\nConfiguration data as of 2026-12-05T07:16:45\nKillWait=30 sec\nSLURM_VERSION           = 24.11.5\n'
            'MaxJobCount             =   10000  \nKillWait = 99\nnot a setting\n\nCgroup Support Configuration:\nConstrainCores = yes\n')
    assert parse_show_config(text) == {'killwait': ('KillWait', '30 sec'), 'slurm_version': ('SLURM_VERSION', '24.11.5'),
                                       'maxjobcount': ('MaxJobCount', '10000')}
    assert parse_show_config(None) == {}


def test_compare_gives_the_release_and_the_file_slurmctld_read():
    result = compare_running_config('KillWait=30\n', show_of(('SLURM_CONF', '/etc/slurm/slurm.conf'), ('SLURM_VERSION', '24.11.5'),
                                                             ('KillWait', '30 sec')))
    assert result == {'compared': ['KillWait'], 'differ': [], 'skipped': [], 'version': '24.11.5', 'slurm_conf': '/etc/slurm/slurm.conf'}


def test_garbage_from_scontrol_is_quoted_short():
    with pytest.raises(ValueError) as info:
        compare_running_config('KillWait=30\n', 'slurm_load_ctl_conf error:\n  Unable to contact   slurm controller' + ' x' * 200)
    assert str(info.value) == ('scontrol show config printed no "Key = value" line (output: %r): nothing was read of what slurmctld runs'
                               % ('slurm_load_ctl_conf error: Unable to contact slurm controller' + ' x' * 200)[:200])
    with pytest.raises(ValueError) as info:
        compare_running_config('KillWait=30\n', None)
    assert str(info.value) == 'scontrol show config printed no "Key = value" line (no output): nothing was read of what slurmctld runs'


@pytest.mark.parametrize('conf, version, reason', [
    ('KillWait=60\n', '24.11.5',
     'slurmctld on ctl does not run /etc/slurm/slurm.conf: KillWait is 60 in the file, 30 sec in slurmctld. Apply the file: sudo '
     'scontrol reconfigure on ctl; or run ansible-playbook gpucluster.bringup.site (the collection\'s way). Compared 1 key, 1 differs; '
     '0 not comparable'),
    ('KillWait=60\nMaxJobCount=5\nFooBar=1\n', '22.05.8',
     'slurmctld on ctl does not run /etc/slurm/slurm.conf: KillWait is 60 in the file, 30 sec in slurmctld; MaxJobCount is 5 in the '
     'file, 10000 in slurmctld. Apply the file: sudo systemctl restart slurmctld on ctl (KillWait, MaxJobCount need a restart on '
     'Slurm 22.05.8, a reconfigure is not enough); or run ansible-playbook gpucluster.bringup.site (the collection\'s way). Compared 2 '
     'keys, 2 differ; 1 not comparable: FooBar (no certain comparison)'),
    # from 23.11 on a reconfigure restarts the daemons: only the listening settings and AuthType need every daemon restarted
    ('MaxJobCount=5\n', '23.11.0', 'Apply the file: sudo scontrol reconfigure on ctl;'),
    ('MaxJobCount=5\n', '23.02.7', 'Apply the file: sudo systemctl restart slurmctld on ctl (MaxJobCount needs a restart on Slurm 23.02.7, '
                                   'a reconfigure is not enough);'),
    ('SlurmctldPort=6818\n', '23.11.0', 'Apply the file: sudo systemctl restart slurmctld on ctl, then slurmd on every node (SlurmctldPort '
                                        'needs every daemon restarted on Slurm 23.11.0);'),
    ('SlurmctldPort=6818\n', '23.02.7', 'Apply the file: sudo systemctl restart slurmctld on ctl (SlurmctldPort needs a restart on Slurm '
                                        '23.02.7, a reconfigure is not enough);'),
    ('GresTypes=gpu\n', '22.05.8', 'Apply the file: sudo systemctl restart slurmctld on ctl, then slurmd on every node (GresTypes needs '
                                   'every daemon restarted on Slurm 22.05.8);'),
    ('GresTypes=gpu\n', '24.11.5', 'Apply the file: sudo scontrol reconfigure on ctl;'),
    ('GresTypes=gpu\n', '', 'every daemon restarted on an unknown Slurm release);'),
    ('GresTypes=gpu\n', 'unknown', 'every daemon restarted on Slurm unknown);'),
])
def test_the_record_of_a_difference(conf, version, reason):
    show = show_of(('KillWait', '30 sec'), ('MaxJobCount', '10000'), ('SlurmctldPort', '6817'), ('GresTypes', 'gpu,mps'),
                   *([('SLURM_VERSION', version)] if version else []))
    record = running_config_record('ctl', PATH, conf, show)
    assert (record['status'], record['node'], record['check'], record['stage']) == ('fail', 'slurmctld@ctl', 'running_config', 'slurm')
    assert reason in record['reason'], record['reason']


def test_the_record_of_a_pass_names_the_file_slurmctld_read():
    show = show_of(('SLURM_CONF', '/etc/slurm/slurm.conf'), ('KillWait', '30 sec'))
    assert running_config_record('ctl', PATH, 'KillWait=30\n', show, stage='upgrade') == {
        'stage': 'upgrade', 'node': 'slurmctld@ctl', 'check': 'running_config', 'status': 'pass',
        'reason': 'slurmctld on ctl runs /etc/slurm/slurm.conf: compared 1 key, all equal; 0 not comparable'}
    assert running_config_record('ctl', '/srv/slurm.conf', 'KillWait=30\nFooBar=1\nPrologFlags=x\nBarFoo=2\n', show)['reason'] == (
        'slurmctld on ctl runs /srv/slurm.conf (slurmctld reads /etc/slurm/slurm.conf): compared 1 key, all equal; 3 not comparable: '
        'FooBar, BarFoo (no certain comparison); PrologFlags (scontrol prints the flags Slurm derives, implied ones added)')


@pytest.mark.parametrize('kwargs, reason', [
    ({'show_text': None}, 'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: not run'),
    ({'show_text': 'KillWait = 30', 'show_error': 'exit 1:\n  refused\tnow'},
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: exit 1: refused now'),
    ({'show_text': None, 'show_error': 'x' * 400},
     'slurmctld on ctl: scontrol show config failed, so nothing is known of the configuration slurmctld runs: ' + 'x' * 300),
    ({'show_text': 'KillWait = 30', 'conf_text': None},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: not read'),
    ({'show_text': 'KillWait = 30', 'conf_text': 'KillWait=30', 'conf_error': 'no such\nfile  ' + 'y' * 400},
     'slurmctld on ctl: /etc/slurm/slurm.conf could not be read to compare with what slurmctld runs: ' + ('no such file ' + 'y' * 400)[:300]),
])
def test_the_record_of_a_read_that_failed(kwargs, reason):
    assert running_config_record('ctl', PATH, **dict({'conf_text': CONF}, **kwargs)) == {
        'stage': 'slurm', 'node': 'slurmctld@ctl', 'check': 'running_config', 'status': 'fail', 'reason': reason}


def test_a_comment_after_a_setting_is_not_its_value():
    result = compare_running_config('# KillWait=1\nKillWait=60 # was 30\nMaxJobCount=5#no space\n',
                                    show_of(('KillWait', '60 sec'), ('MaxJobCount', '5')))
    assert (result['compared'], result['differ'], result['skipped']) == (['KillWait', 'MaxJobCount'], [], [])
