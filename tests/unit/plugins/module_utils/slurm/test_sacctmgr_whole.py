# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""More of _sacctmgr, whole: the read commands, values with blanks around them, tuples and sets, whole refusals,
what parse_state skips, that expected_state leaves the read state alone, absent entries in problems, AccountingStorageTRES.

The sacctmgr outputs are test_sacctmgr.py's (Slurm 22.05.8).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.slurm.test_sacctmgr import EMPTY, REAL, SPEC

QF = dict((f.name, f) for f in acct.QOS_FIELDS)
AF = dict((f.name, f) for f in acct.ASSOC_FIELDS)
FLAG_LIST = ('DenyOnLimit, EnforceUsageThreshold, NoReserve, PartitionMaxNodes, PartitionMinNodes, OverPartQOS, '
             'PartitionTimeLimit, RequiresReservation, NoDecay, UsageFactorSafe')
TRES_VALID = ('valid: billing, cpu, energy, mem, node, pages, vmem, or TYPE/NAME with TYPE one of bb, fs, gres, ic, license '
              '(gres/gpu, gres/gpu:TYPE, license/NAME, ...)')
CLEAR = '-1 (or UNLIMITED) to remove the limit'


def error(call, *args):
    with pytest.raises(ValueError) as caught:
        call(*args)
    return str(caught.value)


def desired(spec, cluster='probe'):
    return acct.desired_state(cluster, spec.get('qos'), spec.get('accounts'), spec.get('users'))


def test_read_commands_in_full():
    show = ['--parsable2', '--noheader', 'show']
    assert acct.read_commands('gpu1') == {
        'cluster': show + ['cluster', 'format=Cluster'],
        'tres': show + ['tres', 'format=Type,Name'],
        'qos': show + ['qos', 'format=Name,Description,Flags,GraceTime,Preempt,PreemptMode,UsageFactor,UsageThres,MaxTRESPU,MaxJobsPU,'
                              'MaxSubmitPU,MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,'
                              'GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,Priority'],
        'account': show + ['account', 'format=Account,Description,Organization'],
        'user': show + ['user', 'where', 'cluster=gpu1', 'format=User,DefaultAccount,AdminLevel'],
        'assoc': show + ['assoc', 'where', 'cluster=gpu1', 'format=Account,User,Partition,ParentName,Share,QOS,DefaultQOS,MaxJobs,'
                                                           'MaxSubmit,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,GrpWall,MaxTRES,'
                                                           'MaxTRESPerNode,MaxTRESMins,MaxWall,Priority'],
    }


# ------------------------------------------------------------------ parsing and normalize

def test_parse_parsable2_skips_lines_of_blanks():
    assert acct.parse_parsable2('a|b\n  \n\t\nc|d\n', ('X', 'Y')) == [{'X': 'a', 'Y': 'b'}, {'X': 'c', 'Y': 'd'}]


def test_parse_tres_reads_counts_with_blanks_and_refuses_a_key_that_is_no_name():
    assert acct.parse_tres({'cpu': ' 8 ', 'gres/gpu': 2}) == {'cpu': 8, 'gres/gpu': 2}
    assert acct.parse_tres('cpu= 8 ') == {'cpu': 8}
    assert error(acct.parse_tres, {5: 1}) == 'TRES {5: 1}: "5" is not a TRES name (cpu, mem, node, billing, energy, gres/gpu, gres/gpu:TYPE, ...)'


@pytest.mark.parametrize('field, value, expected', [
    (AF['QOS'], {'Normal', 'gpu8'}, frozenset(['normal', 'gpu8'])),
    (AF['QOS'], frozenset(['gpu8']), frozenset(['gpu8'])),
    (QF['Priority'], None, None),
    (QF['Flags'], ('NoDecay', ' denyonlimit '), frozenset(['nodecay', 'denyonlimit'])),
    (AF['Fairshare'], ' 5 ', 5),
    (AF['Fairshare'], ' Parent ', 'parent'),
])
def test_normalize_of_sets_tuples_and_blanks(field, value, expected):
    assert acct.normalize(field, value, 'QOS x') == expected


# ------------------------------------------------------------------ inventory_value

@pytest.mark.parametrize('field, value, expected', [
    (QF['Priority'], ' UNLIMITED ', None),
    (QF['MaxTRESPerJob'], {' cpu ': 4}, (('cpu', 4),)),
    (QF['MaxTRESPerJob'], 'cpu=4, gres/gpu=2', (('cpu', 4), ('gres/gpu', 2))),
    (AF['QOS'], 'normal, gpu8,', frozenset(['normal', 'gpu8'])),
    (AF['QOS'], ('normal', 'gpu8'), frozenset(['normal', 'gpu8'])),
    (QF['Flags'], ('NoDecay',), frozenset(['nodecay'])),
    (AF['Fairshare'], ' Parent ', 'parent'),
    (AF['DefaultQOS'], ' normal ', 'normal'),
])
def test_inventory_value_of_tuples_and_blanks(field, value, expected):
    assert acct.inventory_value(field, value, 'QOS x') == expected


@pytest.mark.parametrize('field, value, message', [
    (QF['MaxTRESPerJob'], {'cpu': None}, "QOS x MaxTRESPerJob {'cpu': None}: the count of cpu is None, expected a whole number"),
    (QF['MaxTRESPerJob'], {'cpu': {4}}, "QOS x MaxTRESPerJob {'cpu': {4}}: the count of cpu is {4}, expected a whole number"),
    (QF['UsageFactor'], 'nan', "QOS x UsageFactor='nan': out of range; expected a number of 0 or more such as 0.5, or -1 to reset it"),
    (QF['UsageFactor'], 'inf', "QOS x UsageFactor='inf': out of range; expected a number of 0 or more such as 0.5, or -1 to reset it"),
    (QF['MaxWall'], '-5:00', "QOS x MaxWall='-5:00': expected a time as MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, a whole "
                             "number of minutes, or " + CLEAR),
    (QF['MaxTRESPerJob'], 'license/a b=1', 'QOS x MaxTRESPerJob \'license/a b=1\': "license/a b" is not a TRES name; ' + TRES_VALID),
    (QF['MaxTRESPerJob'], {' gpu ': 1}, 'QOS x MaxTRESPerJob {\' gpu \': 1}: " gpu " is not a TRES name (did you mean gres/gpu?); '
                                        + TRES_VALID),
    (QF['Flags'], ['Bogus'], "QOS x Flags: unknown QOS flag 'Bogus'; valid flags: " + FLAG_LIST),
    (AF['DefaultQOS'], '  ', "QOS x DefaultQOS='  ': expected a QOS name such as normal, or -1 to clear it"),
])
def test_inventory_value_refusals_in_full(field, value, message):
    assert error(acct.inventory_value, field, value, 'QOS x') == message


# ------------------------------------------------------------------ parse_state and desired_state

def test_parse_state_skips_partition_associations():
    """ml|carol|gpu is carol's association on partition gpu: it does not replace her association in ml."""
    current = acct.parse_state('probe', REAL)
    assert current['user_assocs'][('carol', 'ml')]['QOS'] == frozenset(['gpu8', 'interactive', 'normal'])
    assert current['user_assocs'][('carol', 'ml')]['MaxJobs'] == 12
    assert sorted(current['user_assocs']) == [('alice', 'ml'), ('alice', 'research'), ('carol', 'ml'), ('root', 'root')]


def test_parse_state_finds_its_cluster_whatever_the_case():
    assert acct.parse_state('Probe', {'cluster': 'other\nPROBE\n'})['cluster_exists'] is True
    assert acct.parse_state('probe', {'cluster': 'other\n'})['cluster_exists'] is False


def test_account_description_and_organization_in_any_case():
    found = desired({'accounts': [{'name': 'ml', 'Description': 'Machine Learning', 'ORGANIZATION': 'Lab', 'Fairshare': 2}]})
    assert found['accounts']['ml'] == {'state': 'present', 'parent': 'root', 'entity': {'Description': 'machine learning', 'Organization': 'lab'},
                                       'assoc': {'Fairshare': 2}}


def test_an_absent_user_may_name_an_absent_account():
    found = desired({'accounts': [{'name': 'old', 'state': 'absent'}], 'users': [{'name': 'bob', 'state': 'absent', 'accounts': ['old']}]})
    assert found['users']['bob'] == {'state': 'absent', 'assocs': {'old': {}}, 'default_account': '', 'admin_level': None}


def test_referenced_tres_leaves_out_what_goes():
    found = desired({'qos': [{'name': 'gone', 'state': 'absent', 'MaxTRESPerJob': 'gres/gpu:a100=1'},
                             {'name': 'kept', 'GrpTRES': 'license/x=1'}],
                     'accounts': [{'name': 'old', 'state': 'absent', 'GrpTRES': 'gres/gpu:b200=1'}],
                     'users': [{'name': 'bob', 'state': 'absent', 'accounts': [{'name': 'old', 'MaxTRESPerJob': 'gres/shard=1'}]}]})
    assert acct.referenced_tres(found) == {'license/x'}


# ------------------------------------------------------------------ removals, expected_state, problems

def test_without_purge_a_listed_users_other_associations_stay():
    spec = copy.deepcopy(SPEC)
    spec['users'][0]['accounts'] = ['ml']          # alice no longer lists research
    current = acct.parse_state('probe', REAL)
    assert acct.removals(desired(spec), current, False) == {'users': [], 'user_assocs': [], 'accounts': [], 'qos': []}
    assert acct.removals(desired(spec), current, True)['user_assocs'] == [('alice', 'research')]


def test_expected_state_leaves_the_read_state_as_it_was():
    spec = copy.deepcopy(SPEC)
    spec['qos'][0]['Priority'] = 20
    spec['accounts'][0]['description'] = 'Other'
    spec['accounts'][1]['GrpTRES'] = 'gres/gpu=8'
    spec['users'][0]['QOS'] = ['normal']
    spec['users'][1]['admin_level'] = 'none'
    current = acct.parse_state('probe', REAL)
    before = copy.deepcopy(current)
    after = acct.expected_state(desired(spec), current)
    assert current == before
    assert (after['qos']['gpu8']['Priority'], after['accounts']['research']['Description'], after['account_assocs']['ml']['GrpTRES'],
            after['user_assocs'][('alice', 'ml')]['QOS'], after['users']['carol']['AdminLevel']) == (
        20, 'other', (('gres/gpu', 8),), frozenset(['normal']), 'none')


def test_expected_state_adds_no_absent_qos_and_keeps_roots_parent_empty():
    after = acct.expected_state(desired({'qos': [{'name': 'gone', 'state': 'absent', 'Priority': 3}],
                                         'accounts': [{'name': 'root', 'parent': 'top', 'Fairshare': 5}]}),
                                acct.parse_state('probe', EMPTY))
    assert sorted(after['qos']) == ['normal']
    assert after['account_assocs']['root'] == {'Fairshare': 5, 'Parent': ''}


def test_problems_pass_over_what_goes():
    spec = {'qos': [{'name': 'oldq', 'state': 'absent', 'Preempt': ['nosuch']}],
            'accounts': [{'name': 'gone', 'parent': 'nowhere', 'state': 'absent', 'QOS': ['nosuch']}],
            'users': [{'name': 'zed', 'state': 'absent', 'accounts': [{'name': 'elsewhere', 'QOS': ['nosuch']}]}]}
    assert acct.problems(desired(spec), acct.parse_state('probe', REAL)) == []


# ------------------------------------------------------------------ accounting_tres

@pytest.mark.parametrize('gres, extra, expected', [
    (['gpu:2'], None, 'gres/gpu'),
    (['GPU:h100:8'], (), 'gres/gpu,gres/gpu:h100'),
    (['gpu:2080:4'], (), 'gres/gpu,gres/gpu:2080'),          # a type that is a number, with a count after it
    (['gpu:2,(NULL)', None], (), 'gres/gpu'),
    ([], ['license/matlab, fs/lustre', 'License/x,,'], 'fs/lustre,license/matlab,license/x'),
])
def test_accounting_tres_of_names_written_loosely(gres, extra, expected):
    assert acct.accounting_tres(gres, extra) == expected


def test_problems_of_unknown_qos_in_full():
    found = acct.desired_state('probe', [{'name': 'q1', 'Preempt': ['ghost']}], [{'name': 'acc', 'QOS': ['nope']}],
                               [{'name': 'bob', 'accounts': [{'name': 'acc', 'QOS': ['nope2']}]}])
    assert acct.problems(found, acct.parse_state('probe', REAL)) == [
        'account acc uses QOS nope, which is neither in the inventory nor in slurmdbd',
        'user bob uses QOS nope2, which is neither in the inventory nor in slurmdbd',
        'QOS q1 preempts QOS ghost, which is neither in the inventory nor in slurmdbd']


@pytest.mark.parametrize('call, args, message', [
    (acct.parse_parsable2, ('x|y\na|b|c\n', ('X', 'Y')), "sacctmgr output line 2 has 3 fields, expected 2 (X,Y): 'a|b|c'"),
    (acct.accounting_tres, ([], ['bad name']),
     "AccountingStorageTRES entry 'bad name' is not a TRES name such as gres/gpu, gres/gpu:a100 or license/matlab"),
    (acct.accounting_tres, (['(gpu)'],), "Gres= entry '(gpu)' is not NAME[:TYPE][:COUNT] such as gpu:h100:8 or shard:64"),
])
def test_more_refusals_in_full(call, args, message):
    assert error(call, *args) == message
