# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Edges of _sacctmgr: whole error messages, boundaries, each branch of plan/expected_state/problems/removals.

The states are the real Slurm 22.05.8 outputs of test_sacctmgr (``REAL``,
``EMPTY``), sometimes with one line added.  Every call into the module is made
inside a test (never in a parametrize table), and errors are compared whole.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.slurm.test_sacctmgr import (
    AF, EMPTY, QF, REAL, SPEC, commands, desired, spec_with, state)

UF = dict((f.name, f) for f in acct.USER_FIELDS)
ACF = dict((f.name, f) for f in acct.ACCOUNT_FIELDS)
FIELDS = {'qos': QF, 'assoc': AF, 'user': UF, 'account': ACF}

CLEAR = '-1 (or UNLIMITED) to remove the limit'
TIMES = 'a time as MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS'
FLAG_LIST = ('DenyOnLimit, EnforceUsageThreshold, NoReserve, PartitionMaxNodes, PartitionMinNodes, OverPartQOS, '
             'PartitionTimeLimit, RequiresReservation, NoDecay, UsageFactorSafe')
TRES_VALID = ('valid: billing, cpu, energy, mem, node, pages, vmem, or TYPE/NAME with TYPE one of bb, fs, gres, ic, license '
              '(gres/gpu, gres/gpu:TYPE, license/NAME, ...)')
NAME_RULES = 'is not valid: use letters, digits, "_", ".", "@" and "-" (not first), no spaces, commas, "=" or "|"'
MAX_TRES = '9223372036854775807'
REAL_TRES = 'billing, cpu, energy, fs/disk, gres/gpu, gres/gpu:1g.10gb, gres/gpu:h100, mem, node, pages, vmem'
RESTART = ('slurmctld registers the TRES of AccountingStorageTRES when it starts, so add them there and restart slurmctld '
           'before setting limits on them')


def error(call, *args, **kwargs):
    """The whole message of the ValueError that ``call`` raises."""
    with pytest.raises(ValueError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


def assoc_line(account, user='', parent='', share='1', qos=''):
    """One line of ``sacctmgr show assoc format=<ASSOC_FORMAT>`` with the limits unset."""
    return '|'.join([account, user, '', parent, share, qos] + [''] * 14) + '\n'


def state_with_assocs(*lines):
    return state(dict(REAL, assoc=REAL['assoc'] + ''.join(lines)))


def plan_dicts(actions):
    return [(' '.join(a.argv), a.summary) for a in actions]


# ------------------------------------------------------------------ Field, parse_duration, display, argument

def test_a_field_keeps_its_name_show_kind_and_aliases():
    field = acct.Field('MaxJobs', 'MaxJobsShown', acct.INT, ['MJ'])
    assert (field.name, field.show, field.kind, field.aliases) == ('MaxJobs', 'MaxJobsShown', acct.INT, ('MJ',))
    assert acct.lookup_field('mj', [field], 'QOS x') is field
    assert acct.normalize(field, ' 5 ', 'QOS x') == 5


@pytest.mark.parametrize('value,expected', [('90', 5400), (90, 5400), ('1:30', 90), ('2-0', 172800)])
def test_parse_duration_bare_numbers_are_minutes_by_default(value, expected):
    assert acct.parse_duration(value) == expected


@pytest.mark.parametrize('value,message', [
    ('4h', "duration '4h' is not a time such as 90, 2:30:00 or 1-12:00:00"),
    (True, 'duration True is not a time such as 90, 2:30:00 or 1-12:00:00'),
    ('1:2:3:4', "duration '1:2:3:4' is not a time such as 90, 2:30:00 or 1-12:00:00"),
])
def test_parse_duration_errors_name_a_duration_by_default(value, message):
    assert error(acct.parse_duration, value) == message


@pytest.mark.parametrize('kind,name,value,expected', [
    ('qos', 'Priority', None, ''),
    ('qos', 'Flags', frozenset(['nodecay', 'denyonlimit']), 'DenyOnLimit,NoDecay'),
    ('qos', 'MaxWall', 5400, '01:30:00'),
    ('qos', 'GraceTime', 120, '00:02:00'),
    ('assoc', 'QOS', frozenset(['normal', 'gpu8']), 'gpu8,normal'),
    ('qos', 'MaxTRESPerJob', (('mem', 1024), ('cpu', 2)), 'cpu=2,mem=1024M'),
    ('assoc', 'Fairshare', 'parent', 'parent'),
])
def test_display(kind, name, value, expected):
    assert acct.display(FIELDS[kind][name], value) == expected


@pytest.mark.parametrize('kind,name,want,have,expected', [
    ('assoc', 'QOS', frozenset(), frozenset(['gpu8']), "QOS=''"),
    ('qos', 'Preempt', frozenset(), None, "Preempt=''"),
    ('qos', 'Flags', frozenset(), frozenset(['nodecay']), 'Flags=-1'),
    ('assoc', 'DefaultQOS', '', 'normal', 'DefaultQOS=-1'),
    ('qos', 'UsageFactor', 0.5, None, 'UsageFactor=0.5'),
    ('user', 'AdminLevel', 'operator', 'none', 'AdminLevel=operator'),
])
def test_argument_empty_lists_and_plain_values(kind, name, want, have, expected):
    assert acct.argument(FIELDS[kind][name], want, have) == expected


# ------------------------------------------------------------------ parse_tres

@pytest.mark.parametrize('value,expected', [
    ('unlimited', {}),
    (' INFINITE ', {}),
    ('mem=100g', {'mem': 102400}),
    ('mem=2gb', {'mem': 2048}),
    ('mem=1.5G', {'mem': 1536}),
    ('mem=64', {'mem': 64}),
])
def test_parse_tres_limits_and_memory_units(value, expected):
    assert acct.parse_tres(value) == expected


@pytest.mark.parametrize('value,what,message', [
    ('gpu', 'TRES', 'TRES \'gpu\': "gpu" is not NAME=COUNT (e.g. "gres/gpu=8,cpu=64")'),
    ('cpu=1=2', 'TRES', 'TRES \'cpu=1=2\': the count of cpu is "1=2", expected a whole number (or -1 to remove it)'),
    ('cpu=many', 'QOS x MaxTRES', 'QOS x MaxTRES \'cpu=many\': the count of cpu is "many", expected a whole number (or -1 to remove it)'),
    ('9x=1', 'TRES', 'TRES \'9x=1\': "9x" is not a TRES name (cpu, mem, node, billing, energy, gres/gpu, gres/gpu:TYPE, ...)'),
    ('mem=lots', 'QOS x MaxTRES', "QOS x MaxTRES 'mem=lots': memory 'lots' is not a size such as 1500, 100G or 1T"),
])
def test_parse_tres_error_messages(value, what, message):
    assert error(acct.parse_tres, value, what) == message


# ------------------------------------------------------------------ normalize

@pytest.mark.parametrize('kind,name,value,expected', [
    ('qos', 'Priority', 'unlimited', None),
    ('qos', 'Priority', 'INFINITE', None),
    ('qos', 'Priority', ' 7 ', 7),
    ('qos', 'UsageFactor', '0.1234567', 0.123457),
    ('qos', 'GraceTime', '90', 90),
    ('qos', 'GraceTime', '1:30', 90),
    ('qos', 'MaxWall', '89:01', 5400),
    ('assoc', 'QOS', None, frozenset()),
    ('assoc', 'QOS', 'gpu8,,normal', frozenset(['gpu8', 'normal'])),
    ('assoc', 'QOS', ['', ' Normal ', 'gpu8'], frozenset(['gpu8', 'normal'])),
    ('qos', 'Flags', ',NoDecay', frozenset(['nodecay'])),
    ('qos', 'Flags', ['-1', 'nodecay'], frozenset(['nodecay'])),
    ('qos', 'Flags', None, frozenset()),
    ('assoc', 'DefaultQOS', None, ''),
    ('qos', 'Description', None, ''),
    ('qos', 'PreemptMode', None, ''),
    ('user', 'AdminLevel', ' Operator ', 'operator'),
])
def test_normalize_edges(kind, name, value, expected):
    assert acct.normalize(FIELDS[kind][name], value, 'QOS x') == expected


@pytest.mark.parametrize('kind,name,value,message', [
    ('qos', 'MaxTRESPerUser', 'gpu', 'QOS x MaxTRESPerUser \'gpu\': "gpu" is not NAME=COUNT (e.g. "gres/gpu=8,cpu=64")'),
    ('qos', 'MaxWall', '4h', "QOS x MaxWall '4h' is not a time such as 90, 2:30:00 or 1-12:00:00"),
    ('qos', 'GraceTime', '2m', "QOS x GraceTime '2m' is not a time such as 90, 2:30:00 or 1-12:00:00"),
    ('qos', 'Priority', 'high', "QOS x Priority='high': expected a whole number (or -1 for no limit)"),
    ('qos', 'UsageFactor', 'half', "QOS x UsageFactor='half': expected a number such as 0.5"),
    ('qos', 'Preempt', 'gpu8,a b', "QOS x Preempt name 'a b' " + NAME_RULES),
    ('qos', 'Flags', 'NoSuchFlag', "QOS x Flags: unknown QOS flag 'NoSuchFlag'; valid flags: " + FLAG_LIST),
    ('qos', 'Description', 'a|b', 'QOS x Description=\'a|b\': text must be one line without "|" or quotes'),
    ('qos', 'Description', 'a\nb', 'QOS x Description=\'a\\nb\': text must be one line without "|" or quotes'),
    ('qos', 'Description', 'say "hi"', 'QOS x Description=\'say "hi"\': text must be one line without "|" or quotes'),
    ('qos', 'Description', "it's", 'QOS x Description="it\'s": text must be one line without "|" or quotes'),
    ('qos', 'PreemptMode', 'kill', "QOS x PreemptMode='kill': expected one of cluster, off, cancel, requeue, suspend, gang, within"),
    ('assoc', 'Fairshare', '0', 'QOS x Fairshare=\'0\': expected a positive whole number or "parent"'),
    ('assoc', 'Fairshare', None, 'QOS x Fairshare=None: expected a positive whole number or "parent"'),
])
def test_normalize_error_messages(kind, name, value, message):
    assert error(acct.normalize, FIELDS[kind][name], value, 'QOS x') == message


def test_normalize_unknown_kind():
    assert error(acct.normalize, acct.Field('X', 'X', 'odd'), '1', 'QOS x') == "unknown field kind 'odd'"


# ------------------------------------------------------------------ inventory_value

@pytest.mark.parametrize('kind,name,value,expected', [
    ('qos', 'MaxWall', 4294967293, 4294967293 * 60),
    ('qos', 'MaxWall', '4294967293', 4294967293 * 60),
    ('qos', 'GraceTime', 4294967293, 4294967293),
    ('qos', 'GraceTime', '4294967293', 4294967293),
    ('qos', 'MaxTRESPerJob', {'cpu': 0}, (('cpu', 0),)),
    ('qos', 'MaxTRESPerJob', 'cpu=' + MAX_TRES, (('cpu', int(MAX_TRES)),)),
    ('qos', 'MaxTRESPerJob', {'mem': '1.5G', 'cpu': '4'}, (('cpu', 4), ('mem', 1536))),
    ('qos', 'UsageFactor', '0.1234567', 0.123457),
    ('qos', 'Flags', '', frozenset()),
    ('qos', 'Flags', 'DenyOnLimit,NoDecay', frozenset(['denyonlimit', 'nodecay'])),
    ('qos', 'Preempt', 'gpu8,normal', frozenset(['gpu8', 'normal'])),
    ('qos', 'Preempt', '', frozenset()),
    ('qos', 'Description', '', ''),
    ('qos', 'Description', ' Eight GPUs ', 'eight gpus'),
])
def test_inventory_value_boundaries(kind, name, value, expected):
    assert acct.inventory_value(FIELDS[kind][name], value, 'QOS x') == expected


@pytest.mark.parametrize('kind,name,value,message', [
    ('qos', 'MaxJobsPerUser', 'lots', "QOS x MaxJobsPerUser='lots': expected a whole number from 0 to 4294967293, or " + CLEAR),
    ('qos', 'MaxJobsPerUser', 4294967294,
     'QOS x MaxJobsPerUser=4294967294: 4294967294 is out of range; expected a whole number from 0 to 4294967293, or ' + CLEAR),
    ('qos', 'UsageFactor', True, 'QOS x UsageFactor=True: expected a number of 0 or more such as 0.5, or -1 to reset it'),
    ('qos', 'UsageFactor', 'half', "QOS x UsageFactor='half': expected a number of 0 or more such as 0.5, or -1 to reset it"),
    ('qos', 'UsageFactor', -0.5, 'QOS x UsageFactor=-0.5: out of range; expected a number of 0 or more such as 0.5, or -1 to reset it'),
    ('qos', 'UsageThreshold', 1.5, 'QOS x UsageThreshold=1.5: out of range; expected a number from 0 to 1 such as 0.1, or -1 to reset it'),
    ('qos', 'MaxWall', True, 'QOS x MaxWall=True: expected %s, a whole number of minutes, or %s' % (TIMES, CLEAR)),
    ('qos', 'MaxWall', -5, 'QOS x MaxWall=-5: a negative time; expected %s, a whole number of minutes, or %s' % (TIMES, CLEAR)),
    ('qos', 'MaxWall', '-5', "QOS x MaxWall='-5': a negative time; expected %s, a whole number of minutes, or %s" % (TIMES, CLEAR)),
    ('qos', 'MaxWall', '4h', "QOS x MaxWall='4h': expected %s, a whole number of minutes, or %s" % (TIMES, CLEAR)),
    ('qos', 'MaxWall', 4294967294, 'QOS x MaxWall=4294967294: out of range; expected at most 4294967293 minutes, or ' + CLEAR),
    ('qos', 'MaxWall', '4294967294', "QOS x MaxWall='4294967294': out of range; expected at most 4294967293 minutes, or " + CLEAR),
    ('qos', 'GraceTime', '4294967294', "QOS x GraceTime='4294967294': out of range; expected at most 4294967293 seconds, or " + CLEAR),
    ('qos', 'GraceTime', True, 'QOS x GraceTime=True: expected %s, a whole number of seconds, or %s' % (TIMES, CLEAR)),
    ('qos', 'MaxTRESPerJob', {}, 'QOS x MaxTRESPerJob {}: an empty mapping; give NAME: COUNT pairs, or ' + CLEAR),
    ('qos', 'MaxTRESPerJob', 'gpu', 'QOS x MaxTRESPerJob \'gpu\': "gpu" is not NAME=COUNT (e.g. "gres/gpu=8,cpu=64"); give ' + CLEAR),
    ('qos', 'MaxTRESPerJob', 8,
     'QOS x MaxTRESPerJob=8: expected NAME=COUNT pairs such as "gres/gpu=8,cpu=64" or a mapping {gres/gpu: 8}, or ' + CLEAR),
    ('qos', 'MaxTRESPerJob', '',
     'QOS x MaxTRESPerJob=\'\': expected NAME=COUNT pairs such as "gres/gpu=8,cpu=64" or a mapping {gres/gpu: 8}, or ' + CLEAR),
    ('qos', 'MaxTRESPerJob', 'cpu=1,CPU=2', "QOS x MaxTRESPerJob 'cpu=1,CPU=2': TRES cpu is given twice"),
    ('qos', 'MaxTRESPerJob', {'cpu': -2},
     "QOS x MaxTRESPerJob {'cpu': -2}: the count of cpu is -2; to remove cpu from this limit leave it out (the list replaces "
     'the whole limit), or give ' + CLEAR),
    ('qos', 'MaxTRESPerJob', {'cpu': True}, "QOS x MaxTRESPerJob {'cpu': True}: the count of cpu is True, expected a whole number"),
    ('qos', 'MaxTRESPerJob', {'mem': 1.5}, "QOS x MaxTRESPerJob {'mem': 1.5}: the count of mem is 1.5, expected a whole number"),
    ('qos', 'MaxTRESPerJob', 'cpu=1=2',
     "QOS x MaxTRESPerJob 'cpu=1=2': the count of cpu is '1=2', expected a whole number from 0 to " + MAX_TRES),
    ('qos', 'MaxTRESPerJob', 'cpu=9223372036854775808',
     "QOS x MaxTRESPerJob 'cpu=9223372036854775808': the count of cpu is '9223372036854775808', expected a whole number from 0 to "
     + MAX_TRES),
    ('qos', 'MaxTRESPerJob', {5: 1}, 'QOS x MaxTRESPerJob {5: 1}: TRES name 5 is not a string such as cpu, mem or gres/gpu'),
    ('qos', 'MaxTRESPerJob', ' =1', "QOS x MaxTRESPerJob ' =1': TRES name ' ' is not a string such as cpu, mem or gres/gpu"),
    ('qos', 'MaxTRESPerJob', 'gpu:h100=1',
     'QOS x MaxTRESPerJob \'gpu:h100=1\': "gpu:h100" is not a TRES name (did you mean gres/gpu:h100?); ' + TRES_VALID),
    ('qos', 'MaxTRESPerJob', 'cpu:x=1', 'QOS x MaxTRESPerJob \'cpu:x=1\': "cpu:x" is not a TRES name; ' + TRES_VALID),
    ('qos', 'MaxTRESPerJob', 'bogus/x=1', 'QOS x MaxTRESPerJob \'bogus/x=1\': "bogus/x" is not a TRES name; ' + TRES_VALID),
    ('qos', 'MaxTRESPerJob', 'license/matlab:x=1',
     'QOS x MaxTRESPerJob \'license/matlab:x=1\': "license/matlab:x" is not a TRES name; ' + TRES_VALID),
    ('qos', 'MaxTRESPerJob', 'gres/gpu:=1', 'QOS x MaxTRESPerJob \'gres/gpu:=1\': "gres/gpu:" is not a TRES name; ' + TRES_VALID),
    ('qos', 'Preempt', 5, 'QOS x Preempt=5: expected a list of QOS names such as [normal, gpu8] (an empty list clears it)'),
    ('qos', 'Preempt', [5], 'QOS x Preempt: 5 is not a QOS name (expected a list of names such as [normal, gpu8])'),
    ('qos', 'Preempt', ['gpu8', ' gpu8'], 'QOS x Preempt: QOS gpu8 is listed twice'),
    ('qos', 'Flags', 5, 'QOS x Flags=5: expected a list of QOS flags (an empty list clears them); valid flags: ' + FLAG_LIST),
    ('qos', 'Flags', [5], 'QOS x Flags: 5 is not a QOS flag; valid flags: ' + FLAG_LIST),
    ('qos', 'Flags', ['NoDecay', ''], "QOS x Flags: '' is not a QOS flag; valid flags: " + FLAG_LIST),
    ('qos', 'Flags', 'NoDecay,,DenyOnLimit', "QOS x Flags: '' is not a QOS flag; valid flags: " + FLAG_LIST),
    ('assoc', 'DefaultQOS', 5, 'QOS x DefaultQOS=5: expected a QOS name such as normal, or -1 to clear it'),
    ('assoc', 'DefaultQOS', 'Normal',
     "QOS x DefaultQOS name 'Normal' has upper-case letters: Slurm keeps names in lower case, so write 'normal'"),
    ('qos', 'Description', 5, 'QOS x Description=5: expected a string'),
    ('qos', 'PreemptMode', 5, 'QOS x PreemptMode=5: expected a string; expected one of cluster, off, cancel, requeue, suspend, gang, within'),
    ('qos', 'PreemptMode', '  ',
     "QOS x PreemptMode='  ': expected a string; expected one of cluster, off, cancel, requeue, suspend, gang, within"),
    ('user', 'AdminLevel', 5, 'QOS x AdminLevel=5: expected a string; expected one of none, operator, administrator'),
])
def test_inventory_value_error_messages(kind, name, value, message):
    assert error(acct.inventory_value, FIELDS[kind][name], value, 'QOS x') == message


# ------------------------------------------------------------------ desired_state

@pytest.mark.parametrize('spec,message', [
    ({'qos': [{'name': 'a'}, {'name': 'a'}]}, 'QOS a is listed twice'),
    ({'qos': [{'name': 'A'}]}, "QOS name 'A' has upper-case letters: Slurm keeps names in lower case, so write 'a'"),
    ({'qos': [{'state': 'absent'}]}, "each item of qos must be a dictionary with a name, got {'state': 'absent'}"),
    ({'qos': [{'name': 'a', 5: 1}]}, 'QOS a: setting name 5 is not a string'),
    ({'qos': [{'name': 'a', 'MaxTRES': 'cpu=1', 'MaxTRESPerJob': 'cpu=2'}]},
     "QOS a: setting MaxTRESPerJob is given twice (as 'MaxTRESPerJob' and another spelling)"),
    ({'accounts': {'name': 'a'}}, "accounts must be a list, got {'name': 'a'}"),
    ({'accounts': ['a']}, "each item of accounts must be a dictionary with a name, got 'a'"),
    ({'accounts': [{'name': 'a'}, {'name': 'a'}]}, 'account a is listed twice'),
    ({'accounts': [{'name': 'a', 'state': 'gone'}]}, "account a: state 'gone' must be present or absent"),
    ({'accounts': [{'name': 'a', 'parent': 'a'}]}, 'account a has itself as parent'),
    ({'accounts': [{'name': 'a', 'parent': 'b'}, {'name': 'b', 'parent': 'c'}, {'name': 'c', 'parent': 'a'}]},
     'accounts a -> b -> c -> a form a parent loop'),
    ({'users': 'alice'}, "users must be a list, got 'alice'"),
    ({'users': [{'accounts': ['a']}]}, "each item of users must be a dictionary with a name, got {'accounts': ['a']}"),
    ({'users': [{'name': 'u', 'accounts': ['a']}, {'name': 'u', 'accounts': ['a']}]}, 'user u is listed twice'),
    ({'users': [{'name': 'u', 'state': 'gone', 'accounts': ['a']}]}, "user u: state 'gone' must be present or absent"),
    ({'users': [{'name': 'u', 'accounts': 'ml'}]},
     "user u: accounts must be a list of account names (or dictionaries with a name), got 'ml'"),
    ({'users': [{'name': 'u', 'accounts': [{'Fairshare': 2}]}]},
     "user u: each of its accounts must be a name or a dictionary with a name, got {'Fairshare': 2}"),
    ({'users': [{'name': 'u', 'accounts': ['ML']}]},
     "user u account name 'ML' has upper-case letters: Slurm keeps names in lower case, so write 'ml'"),
    ({'users': [{'name': 'u', 'accounts': ['a', {'name': 'a'}]}]}, 'user u: account a is listed twice in its accounts'),
    ({'users': [{'name': 'u', 'accounts': []}]},
     'user u has no accounts: list at least one in its accounts (a user exists only through an association)'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'default_account': 'ML'}]},
     "user u default_account name 'ML' has upper-case letters: Slurm keeps names in lower case, so write 'ml'"),
    ({'users': [{'name': 'u', 'accounts': ['a', 'b'], 'default_account': 'c'}]}, 'user u: default_account c is not one of its accounts (a, b)'),
    ({'accounts': [{'name': 'a', 'state': 'absent'}], 'users': [{'name': 'u', 'accounts': ['a']}]}, 'user u is in account a, which has state absent'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'MaxGPUs': 8}]},
     "user u: unknown setting 'MaxGPUs'; valid settings: DefaultQOS, Fairshare, GrpJobs, GrpSubmitJobs, GrpTRES, GrpTRESMins, "
     'GrpTRESRunMins, GrpWall, MaxJobs, MaxSubmitJobs, MaxTRESMinsPerJob, MaxTRESPerJob, MaxTRESPerNode, MaxWall, Priority, QOS, '
     'accounts, admin_level, default_account, name, state'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'QOS': [], 'DefaultQOS': 'normal'}]},
     'user u: DefaultQOS normal is not in its QOS list (empty); add it to QOS or choose one of them'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'QOS': ['normal', 'gpu8'], 'DefaultQOS': 'q2'}]},
     'user u: DefaultQOS q2 is not in its QOS list (gpu8, normal); add it to QOS or choose one of them'),
    ({'users': [{'name': 'u', 'accounts': [{'name': 'ml', 'DefaultQOS': 'gpu8'}], 'QOS': ['normal']}]},
     'user u account ml: DefaultQOS gpu8 is not in its QOS list (normal); add it to QOS or choose one of them'),
])
def test_desired_state_error_messages(spec, message):
    assert error(desired, **spec) == message


@pytest.mark.parametrize('users,name,default', [
    ([{'name': 'u', 'accounts': [{'name': 'ml', 'MaxJobs': 2}, 'research']}], 'u', 'ml'),
    ([{'name': 'u', 'accounts': ['research', {'name': 'ml'}]}], 'u', 'research'),
    ([{'name': 'gone', 'state': 'absent'}], 'gone', ''),
])
def test_default_account_is_the_first_account(users, name, default):
    assert desired(users=users)['users'][name]['default_account'] == default


# ------------------------------------------------------------------ plan

def test_plan_on_an_empty_database_says_what_each_command_does():
    spec = {'qos': [{'name': 'gpu9', 'Priority': 9}, {'name': 'gpu8', 'MaxTRESPerUser': 'gres/gpu=8'}],
            'accounts': [{'name': 'research', 'description': 'Research'}],
            'users': [{'name': 'dave', 'accounts': ['research']}]}
    assert plan_dicts(acct.plan(desired(**spec), state(EMPTY))) == [
        ('add cluster probe', 'add cluster probe'),
        ('add qos gpu8 MaxTRESPerUser=gres/gpu=8', 'add QOS gpu8'),
        ('add qos gpu9 Priority=9', 'add QOS gpu9'),
        ('add account research Cluster=probe Parent=root Description=research', 'add account research under root'),
        ('add user dave Account=research Cluster=probe DefaultAccount=research', 'add user dave to account research'),
    ]


@pytest.mark.parametrize('change,expected', [
    # an absent QOS or user sorted before a present one does not hide it
    ({'qos': [{'name': 'aaa', 'state': 'absent'}, {'name': 'gpu8', 'Priority': 5}]},
     [('modify qos where name=gpu8 set Priority=5', 'modify QOS gpu8: Priority 10 -> 5')]),
    ({'qos': [{'name': 'gpu8', 'Priority': -1, 'GrpJobs': 5}]},
     [('modify qos where name=gpu8 set GrpJobs=5 Priority=-1', 'modify QOS gpu8: GrpJobs (none) -> 5, Priority 10 -> (none)')]),
    ({'accounts': [{'name': 'research', 'description': 'Research groups'}]},
     [('modify account where name=research set Description=research groups',
       'modify account research: Description research -> research groups')]),
    ({'accounts': [{'name': 'research', 'Fairshare': 20}]},
     [('modify account where name=research cluster=probe set Fairshare=20', 'modify account research: Fairshare 10 -> 20')]),
    ({'accounts': [{'name': 'ml', 'parent': 'research', 'GrpTRES': 'cpu=4'}]},
     [('modify account where name=ml cluster=probe set GrpTRES=cpu=4,gres/gpu=-1', 'modify account ml: GrpTRES gres/gpu=16 -> cpu=4')]),
    ({'accounts': [{'name': 'ml', 'parent': 'root', 'GrpTRES': 'cpu=4', 'MaxJobs': 3}]},
     [('modify account where name=ml cluster=probe set Parent=root MaxJobs=3 GrpTRES=cpu=4,gres/gpu=-1',
       'modify account ml: parent research -> root, MaxJobs 12 -> 3, GrpTRES gres/gpu=16 -> cpu=4')]),
    ({'accounts': [{'name': 'ml', 'parent': 'root', 'GrpTRES': 'gres/gpu=16'}]},
     [('modify account where name=ml cluster=probe set Parent=root', 'modify account ml: parent research -> root')]),
    # root keeps its place whatever parent the inventory gives it
    ({'accounts': [{'name': 'root', 'parent': 'upperacct', 'Fairshare': 5}]},
     [('modify account where name=root cluster=probe set Fairshare=5', 'modify account root: Fairshare 1 -> 5')]),
    ({'users': [{'name': 'alice', 'accounts': ['ml', 'research'], 'QOS': ['normal']}]},
     [('modify user where name=alice account=ml cluster=probe set QOS=normal', 'modify user alice in account ml: QOS gpu8,normal -> normal'),
      ('modify user where name=alice account=research cluster=probe set QOS=normal',
       'modify user alice in account research: QOS gpu8,normal -> normal')]),
    ({'users': [{'name': 'aaron', 'state': 'absent'}, {'name': 'dave', 'accounts': ['ml']}]},
     [('add user dave Account=ml Cluster=probe DefaultAccount=ml', 'add user dave to account ml')]),
    # the default account is added first, with the user's own settings
    ({'users': [{'name': 'dave', 'accounts': ['ml', 'research'], 'default_account': 'research', 'admin_level': 'operator'}]},
     [('add user dave Account=research Cluster=probe DefaultAccount=research AdminLevel=operator', 'add user dave to account research'),
      ('add user dave Account=ml Cluster=probe', 'add user dave to account ml')]),
    ({'users': [{'name': 'carol', 'accounts': ['ml'], 'admin_level': 'administrator'}]},
     [('modify user where name=carol cluster=probe set AdminLevel=administrator',
       'modify user carol: AdminLevel operator -> administrator')]),
])
def test_plan_commands_and_summaries(change, expected):
    assert plan_dicts(acct.plan(desired(**change), state())) == expected


def test_plan_names_an_account_without_parent_as_none():
    current = state()
    current['account_assocs']['ml']['Parent'] = ''
    assert plan_dicts(acct.plan(desired(accounts=[{'name': 'ml', 'parent': 'research'}]), current)) == [
        ('modify account where name=ml cluster=probe set Parent=research', 'modify account ml: parent (none) -> research')]


def test_plan_removes_a_tres_a_user_association_no_longer_lists():
    before = acct.expected_state(desired(users=[{'name': 'carol', 'accounts': ['ml'], 'MaxTRESPerJob': 'gres/gpu=2'}]), state())
    assert commands(acct.plan(desired(users=[{'name': 'carol', 'accounts': ['ml'], 'MaxTRESPerJob': 'cpu=4'}]), before)) == [
        'modify user where name=carol account=ml cluster=probe set MaxTRESPerJob=cpu=4,gres/gpu=-1']


def test_purge_says_what_each_removal_does():
    spec = spec_with(users=[{'name': 'alice', 'accounts': ['ml'], 'QOS': ['normal', 'gpu8'], 'DefaultQOS': 'normal'}])
    assert plan_dicts(acct.plan(desired(**spec), state(), purge=True)) == [
        ('delete user where name=carol cluster=probe', 'remove user carol'),
        ('delete user where name=alice account=research cluster=probe', 'remove user alice from account research'),
        ('delete account where name=upperacct cluster=probe', 'remove account upperacct'),
        ('delete qos where name=q2', 'remove QOS q2'),
    ]


# ------------------------------------------------------------------ removals

def test_purge_deletes_the_deepest_accounts_first():
    tree = desired(accounts=[{'name': 'a1'}, {'name': 'b1', 'parent': 'a1'}, {'name': 'c1', 'parent': 'b1'}, {'name': 'z'}])
    current = acct.expected_state(tree, state())
    assert acct.removals(desired(), current, True)['accounts'] == ['c1', 'b1', 'ml', 'a1', 'research', 'upperacct', 'z']


def test_removals_survive_a_parent_loop_in_the_read_state():
    current = state()
    current['account_assocs']['ml']['Parent'] = 'upperacct'
    current['account_assocs']['upperacct']['Parent'] = 'ml'
    assert acct.removals(desired(), current, True)['accounts'] == ['ml', 'research', 'upperacct']


@pytest.mark.parametrize('lines,spec,expected', [
    # root sorts before users that come after it
    ([assoc_line('ml', 'zed')], {}, {'users': ['alice', 'carol', 'zed'], 'user_assocs': [],
                                     'accounts': ['ml', 'research', 'upperacct'], 'qos': ['gpu8', 'interactive', 'q2']}),
    # an association in an account that goes is removed with the account
    ([assoc_line('upperacct', 'alice')], dict(SPEC, accounts=SPEC['accounts'] + [{'name': 'upperacct', 'state': 'absent'}]),
     {'users': [], 'user_assocs': [], 'accounts': ['upperacct'], 'qos': ['q2']}),
    # root listed in the inventory keeps its own association
    ([], dict(SPEC, users=SPEC['users'] + [{'name': 'root', 'accounts': ['ml']}]),
     {'users': [], 'user_assocs': [], 'accounts': ['upperacct'], 'qos': ['q2']}),
    # an absent user goes as a whole, not account by account
    ([], dict(SPEC, users=[SPEC['users'][0], {'name': 'carol', 'state': 'absent'}]),
     {'users': ['carol'], 'user_assocs': [], 'accounts': ['upperacct'], 'qos': ['q2']}),
    # a listed user loses the accounts it no longer lists, also after a user that goes
    ([], dict(SPEC, users=[{'name': 'alice', 'state': 'absent'}, {'name': 'carol', 'accounts': ['research']}]),
     {'users': ['alice'], 'user_assocs': [('carol', 'ml')], 'accounts': ['upperacct'], 'qos': ['q2']}),
])
def test_removals_with_purge(lines, spec, expected):
    assert acct.removals(desired(**spec), state_with_assocs(*lines), True) == expected


# ------------------------------------------------------------------ expected_state

def test_expected_state_without_purge_keeps_what_is_not_listed():
    current = state()
    after = acct.expected_state(desired(qos=[{'name': 'gpu8'}]), current)
    assert (after['cluster'], after['cluster_exists'], after['tres']) == ('probe', True, current['tres'])
    assert sorted(after['qos']) == ['gpu8', 'interactive', 'normal', 'q2']
    assert sorted(after['account_assocs']) == ['ml', 'research', 'root', 'upperacct']


def test_expected_state_of_accounts():
    spec = {'accounts': [{'name': 'ghost', 'state': 'absent', 'MaxJobs': 1},
                         {'name': 'new', 'parent': 'research', 'description': 'New one', 'MaxJobs': 3},
                         {'name': 'ml', 'parent': 'root'},
                         {'name': 'research', 'description': 'Research groups'},
                         {'name': 'root', 'parent': 'upperacct', 'Fairshare': 5}]}
    after = acct.expected_state(desired(**spec), state())
    assert 'ghost' not in after['account_assocs'] and 'ghost' not in after['accounts']
    assert after['account_assocs']['new'] == {'MaxJobs': 3, 'Parent': 'research'}
    assert after['accounts']['new'] == {'Description': 'new one'}
    assert after['account_assocs']['ml']['Parent'] == 'root'
    assert after['accounts']['research'] == {'Description': 'research groups', 'Organization': 'lab'}
    assert after['account_assocs']['root']['Parent'] == ''
    assert after['account_assocs']['root']['Fairshare'] == 5


def test_expected_state_of_users():
    after = acct.expected_state(desired(users=[{'name': 'aaron', 'state': 'absent'}, {'name': 'dave', 'accounts': ['ml']},
                                               {'name': 'carol', 'state': 'absent'}]), state())
    assert after['users'] == {'alice': {'DefaultAccount': 'ml', 'AdminLevel': 'operator'},
                              'dave': {'DefaultAccount': 'ml'}, 'root': {'DefaultAccount': 'root', 'AdminLevel': 'administrator'}}
    assert sorted(after['user_assocs']) == [('alice', 'ml'), ('alice', 'research'), ('dave', 'ml'), ('root', 'root')]


@pytest.mark.parametrize('spec,purge,user_assocs,accounts', [
    ({'accounts': [{'name': 'ml', 'state': 'absent'}]}, False, [('alice', 'research'), ('root', 'root')], ['research', 'root', 'upperacct']),
    (spec_with(users=[{'name': 'alice', 'accounts': ['ml']}]), True, [('alice', 'ml'), ('root', 'root')], ['ml', 'research', 'root']),
    # zed has associations but no user record: it goes all the same
    (SPEC, True, [('alice', 'ml'), ('alice', 'research'), ('carol', 'ml'), ('root', 'root')], ['ml', 'research', 'root']),
])
def test_expected_state_drops_associations_that_go(spec, purge, user_assocs, accounts):
    after = acct.expected_state(desired(**spec), state_with_assocs(assoc_line('ml', 'zed')), purge)
    assert sorted(after['user_assocs']) == user_assocs
    assert sorted(after['account_assocs']) == accounts
    assert 'zed' not in after['users']


# ------------------------------------------------------------------ problems

def unknown_tres(names, known=REAL_TRES):
    return 'slurmdbd knows no TRES %s (it knows %s): %s' % (names, known, RESTART)


@pytest.mark.parametrize('spec,expected', [
    # without purge, an account that is not listed stays
    ({'users': [{'name': 'u', 'accounts': ['upperacct']}]}, []),
    ({'accounts': [{'name': 'aaa', 'state': 'absent'}, {'name': 'x', 'parent': 'nowhere'}]},
     ['account x has parent nowhere, which is neither in the inventory nor in the cluster']),
    ({'users': [{'name': 'aaa', 'state': 'absent'}, {'name': 'u', 'accounts': ['nowhere']}]},
     ['user u is in account nowhere, which is neither in the inventory nor in the cluster']),
    ({'users': [{'name': 'u', 'accounts': ['nowhere'], 'DefaultQOS': 'normal'}]},
     ['user u is in account nowhere, which is neither in the inventory nor in the cluster']),
    ({'accounts': [{'name': 'research', 'DefaultQOS': 'q2'}]},
     ['account research: DefaultQOS q2 is not among the QOS it can use (gpu8, interactive, normal); add it to its QOS list']),
    ({'accounts': [{'name': 'research', 'DefaultQOS': 'gpu8'}]}, []),
    ({'users': [{'name': 'alice', 'accounts': ['ml'], 'DefaultQOS': 'interactive'}]},
     ['user alice account ml: DefaultQOS interactive is not among the QOS it can use (gpu8, normal); add it to its QOS list']),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'DefaultQOS': 'q2'}]},
     ['user u account ml: DefaultQOS q2 is not among the QOS it can use (gpu8, interactive, normal); add it to its QOS list']),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'DefaultQOS': 'interactive'}]}, []),
    ({'accounts': [{'name': 'x', 'state': 'absent', 'GrpTRES': 'gres/gpu:a100=8'}]}, []),
    ({'users': [{'name': 'u', 'state': 'absent', 'accounts': ['ml'], 'MaxTRESPerJob': 'gres/gpu:a100=8'}]}, []),
    ({'accounts': [{'name': 'research', 'GrpTRES': 'gres/gpu:a100=8'}]}, [unknown_tres('gres/gpu:a100')]),
    ({'users': [{'name': 'carol', 'accounts': ['ml'], 'MaxTRESPerJob': 'gres/gpu:a100=8,license/matlab=1'}]},
     [unknown_tres('gres/gpu:a100, license/matlab')]),
])
def test_problems_edges(spec, expected):
    assert acct.problems(desired(**spec), state()) == expected


def test_problems_when_slurmdbd_knows_no_tres():
    spec = {'qos': [{'name': 'big', 'MaxTRESPerUser': 'gres/gpu=8'}]}
    assert acct.problems(desired(**spec), state(dict(EMPTY, tres=''))) == [unknown_tres('gres/gpu', 'none')]


@pytest.mark.parametrize('settings,have,expected', [
    # a DefaultQOS given with its own QOS list was checked by desired_state
    ({'DefaultQOS': 'gpu8', 'QOS': frozenset(['gpu8'])}, {'QOS': frozenset(['normal'])}, []),
    ({'DefaultQOS': 'gpu8'}, {'QOS': frozenset(['normal'])},
     ['user u account ml: DefaultQOS gpu8 is not among the QOS it can use (normal); add it to its QOS list']),
    ({'DefaultQOS': 'gpu8'}, None, []),
    ({'DefaultQOS': 'gpu8'}, {'QOS': frozenset()}, []),
    ({'DefaultQOS': 'gold'}, {'QOS': frozenset(['normal'])}, []),
])
def test_default_qos_problem(settings, have, expected):
    assert acct._default_qos_problem('user u account ml', settings, have, set(['gpu8', 'normal'])) == expected


# ------------------------------------------------------------------ small helpers

def test_differences_with_no_current_record():
    assert acct._differences(acct.ASSOC_FIELDS, {'MaxJobs': 4, 'QOS': frozenset()}, None) == [
        (AF['QOS'], frozenset(), None), (AF['MaxJobs'], 4, None)]


def test_parents_first_breaks_loops_one_account_at_a_time():
    loops = {'a': {'parent': 'x'}, 'x': {'parent': 'a'}, 'b': {'parent': 'c'}, 'c': {'parent': 'b'}}
    assert acct._parents_first(loops) == ['a', 'x', 'b', 'c']


# ------------------------------------------------------------------ parse_state, summarize

def test_parse_state_without_outputs_is_empty():
    assert acct.parse_state('probe', {}) == {'cluster': 'probe', 'cluster_exists': False, 'tres': set(), 'qos': {}, 'accounts': {},
                                             'account_assocs': {}, 'users': {}, 'user_assocs': {}}


@pytest.mark.parametrize('key,text,message', [
    ('qos', 'normal|Normal QOS default||00:00:00||cluster|1.000000|||||||||||||||||||high\n',
     "sacctmgr qos normal Priority='high': expected a whole number (or -1 for no limit)"),
    ('account', 'x|say "hi"|lab\n', 'sacctmgr account Description=\'say "hi"\': text must be one line without "|" or quotes'),
    ('user', 'u|ml|root\n', "sacctmgr user AdminLevel='root': expected one of none, operator, administrator"),
    ('assoc', assoc_line('x', parent='root', share='0'), 'sacctmgr association Fairshare=\'0\': expected a positive whole number or "parent"'),
])
def test_parse_state_names_the_record_of_a_bad_value(key, text, message):
    assert error(acct.parse_state, 'probe', dict(REAL, **{key: text})) == message


def test_summarize_leaves_out_unset_values():
    view = acct.summarize(state())
    assert view['accounts']['root'] == {'Fairshare': 1, 'QOS': 'normal', 'parent': '', 'Description': 'default root account',
                                        'Organization': 'root'}
    assert view['users']['root'] == {'accounts': {'root': {'Fairshare': 1, 'QOS': 'normal'}}, 'DefaultAccount': 'root',
                                     'AdminLevel': 'administrator'}


def test_summarize_associations_without_account_or_user_records():
    view = acct.summarize(state_with_assocs(assoc_line('orphan', parent='root', share='2'), assoc_line('orphan', 'zed')))
    assert view['accounts']['orphan'] == {'Fairshare': 2, 'parent': 'root'}
    assert view['users']['zed'] == {'accounts': {'orphan': {'Fairshare': 1}}}


# ------------------------------------------------------------------ slurm.conf

@pytest.mark.parametrize('gres,expected', [
    (['gpu:a100:2,,shard:8'], 'gres/gpu,gres/gpu:a100,gres/shard'),
    (['gpu'], 'gres/gpu'),
    (['gpu,mps:2K'], 'gres/gpu,gres/mps'),
    (['(null)', 'gpu:h100:4'], 'gres/gpu,gres/gpu:h100'),
])
def test_accounting_tres_edges(gres, expected):
    assert acct.accounting_tres(gres) == expected
