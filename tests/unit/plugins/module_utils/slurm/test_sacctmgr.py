# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _sacctmgr: parsing, normalisation, desired state, plans.

The sacctmgr outputs below were captured from Debian 12's Slurm 22.05.8
(slurmdbd + MariaDB 10.11) running the read commands of ``read_commands``;
the plans were run against that same slurmdbd and a second read planned
nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct

# Real output, Slurm 22.05.8, after a few hand-made QOS/accounts/users.
REAL = {
    'cluster': 'probe\n',
    'tres': 'cpu|\nmem|\nenergy|\nnode|\nbilling|\nfs|disk\nvmem|\npages|\ngres|gpu\ngres|gpu:h100\ngres|gpu:1g.10gb\n',
    'qos': (
        'normal|Normal QOS default||00:00:00||cluster|1.000000|||||||||||||||||||0\n'
        'gpu8|eight gpus per user||00:00:00||cluster|1.000000||gres/gpu=4|||||||||||||||||10\n'
        'interactive|interactive|DenyOnLimit|00:00:00||cluster|1.000000|||||||||||||||gres/gpu=2,mem=64G|||04:00:00|0\n'
        'q2|q2|DenyOnLimit,OverPartQOS|00:02:00|gpu8|requeue|0.500000||||7||4||cpu=1|gres/gpu:h100=16|cpu=1000||20|30|'
        '2-00:00:00|billing=3,cpu=8,mem=1500M,node=2|gres/gpu=4|cpu=600||0\n'),
    'account': 'ml|ml|lab\nresearch|research|lab\nroot|default root account|root\nupperacct|upperacct|upperacct\n',
    'user': 'alice|ml|Operator\ncarol|ml|Operator\nroot|root|Administrator\n',
    'assoc': (
        'root||||1|normal||||||||||||||\n'
        'root|root|||1|normal||||||||||||||\n'
        'research|||root|10|gpu8,interactive,normal||||||||||||||\n'
        'research|alice|||3|gpu8,normal|normal|||||||||||||\n'
        'ml|||research|5|gpu8,interactive,normal||12||gres/gpu=16||||||||||\n'
        'ml|alice|||1|gpu8,normal|normal|12||||||||||||\n'
        'ml|carol|||1|gpu8,interactive,normal||12||||||||||||\n'
        'ml|carol|gpu||1|normal||||||||||||||\n'
        'upperacct|||root|1|normal||||||||||||||\n'),
}

# The inventory that produced REAL (run twice: the second run changed nothing).
SPEC = {
    'qos': [
        {'name': 'gpu8', 'MaxTRESPerUser': 'gres/gpu=4', 'Priority': 10},
        {'name': 'interactive', 'MaxWall': '4:00:00', 'MaxTRESPerJob': {'gres/gpu': 2, 'mem': '64G'}, 'Flags': ['DenyOnLimit']},
    ],
    'accounts': [
        {'name': 'research', 'description': 'Research', 'Fairshare': 10, 'QOS': ['normal', 'gpu8', 'interactive']},
        {'name': 'ml', 'parent': 'research', 'GrpTRES': 'gres/gpu=16'},
    ],
    'users': [
        {'name': 'alice', 'accounts': ['ml', {'name': 'research', 'Fairshare': 3}], 'QOS': ['normal', 'gpu8'], 'DefaultQOS': 'normal'},
        {'name': 'carol', 'accounts': ['ml'], 'admin_level': 'operator'},
    ],
}


def spec_with(**changes):
    """A copy of SPEC with some keys replaced."""
    spec = copy.deepcopy(SPEC)
    spec.update(changes)
    return spec


EMPTY = {'cluster': '', 'tres': 'cpu|\nmem|\nnode|\nbilling|\ngres|gpu\n', 'qos': 'normal|Normal QOS default||00:00:00||cluster|1.000000|||||||||||||||||||0\n',
         'account': 'root|default root account|root\n', 'user': 'root|root|Administrator\n', 'assoc': ''}


def state(outputs=None, cluster='probe'):
    return acct.parse_state(cluster, REAL if outputs is None else outputs)


def desired(**spec):
    return acct.desired_state(spec.pop('cluster', 'probe'), spec.get('qos'), spec.get('accounts'), spec.get('users'))


def commands(actions):
    return [' '.join(a.argv) for a in actions]


# ------------------------------------------------------------------ parsing

@pytest.mark.parametrize('text,fields,expected', [
    ('a|b\n', ('X', 'Y'), [{'X': 'a', 'Y': 'b'}]),
    ('a|\n\n|b\n', ('X', 'Y'), [{'X': 'a', 'Y': ''}, {'X': '', 'Y': 'b'}]),
    ('', ('X',), []),
    (None, ('X',), []),
])
def test_parse_parsable2(text, fields, expected):
    assert acct.parse_parsable2(text, fields) == expected


def test_parse_parsable2_rejects_shifted_fields():
    with pytest.raises(ValueError, match=r"sacctmgr output line 2 has 3 fields, expected 2 \(X,Y\): 'a\|b\|c'"):
        acct.parse_parsable2('x|y\na|b|c\n', ('X', 'Y'))


@pytest.mark.parametrize('value,expected', [
    ('gres/gpu=8', {'gres/gpu': 8}),
    ('cpu=4,gres/gpu=8', {'cpu': 4, 'gres/gpu': 8}),
    ('GRES/GPU=8, CPU=4', {'cpu': 4, 'gres/gpu': 8}),
    ('gres/gpu:H100=2', {'gres/gpu:H100': 2}),
    ('gres/gpu:1g.10gb=14', {'gres/gpu:1g.10gb': 14}),
    ('mem=100G', {'mem': 102400}),
    ('mem=1500', {'mem': 1500}),
    ('mem=1500M', {'mem': 1500}),
    ('mem=1T', {'mem': 1048576}),
    ('mem=512K', {'mem': 0.5}),
    ({'gres/gpu': 2, 'mem': '64G'}, {'gres/gpu': 2, 'mem': 65536}),
    ('gres/gpu=-1', {'gres/gpu': -1}),
    ('cpu=unlimited', {'cpu': -1}),
    ('', {}),
    ('-1', {}),
    (None, {}),
    ('fs/disk=10', {'fs/disk': 10}),
])
def test_parse_tres(value, expected):
    assert acct.parse_tres(value) == expected


@pytest.mark.parametrize('value,message', [
    ('gres/gpu', r'TRES \'gres/gpu\': "gres/gpu" is not NAME=COUNT \(e.g. "gres/gpu=8,cpu=64"\)'),
    ('gpu count=8', r'"gpu count" is not a TRES name \(cpu, mem, node, billing, energy, gres/gpu, gres/gpu:TYPE, ...\)'),
    ('gres/gpu=eight', r'the count of gres/gpu is "eight", expected a whole number \(or -1 to remove it\)'),
    ('gres/gpu=1.5', r'the count of gres/gpu is "1.5", expected a whole number'),
    ('mem=lots', r"memory 'lots' is not a size such as 1500, 100G or 1T"),
])
def test_parse_tres_errors(value, message):
    with pytest.raises(ValueError, match=message):
        acct.parse_tres(value)


@pytest.mark.parametrize('tres,expected', [
    ({'gres/gpu': 8, 'cpu': 4}, 'cpu=4,gres/gpu=8'),
    ({'mem': 65536}, 'mem=65536M'),
    ({'mem': -1, 'cpu': 2}, 'cpu=2,mem=-1'),
])
def test_format_tres(tres, expected):
    assert acct.format_tres(tres) == expected


@pytest.mark.parametrize('value,bare,expected', [
    ('90', 'minutes', 5400),
    (90, 'minutes', 5400),
    ('30:00', 'minutes', 1800),
    ('2:30:00', 'minutes', 9000),
    ('01:30:00', 'minutes', 5400),
    ('1-12', 'minutes', 129600),
    ('1-12:30', 'minutes', 131400),
    ('2-00:00:00', 'minutes', 172800),
    # D-HH:MM:SS with every part non-zero: days, hours, minutes and seconds all count
    ('1-02:03:04', 'minutes', 93784),
    ('3-00:00:59', 'minutes', 259259),
    ('0-00:00:07', 'seconds', 7),
    ('1-12:30:01', 'seconds', 131401),
    ('120', 'seconds', 120),
    (120, 'seconds', 120),
    ('00:02:00', 'seconds', 120),
    ('-1', 'minutes', None),
    (-1, 'minutes', None),
    ('UNLIMITED', 'minutes', None),
    ('', 'minutes', None),
    (None, 'minutes', None),
])
def test_parse_duration(value, bare, expected):
    assert acct.parse_duration(value, bare) == expected


@pytest.mark.parametrize('value', ['4h', '1:2:3:4', 'soon', True])
def test_parse_duration_errors(value):
    with pytest.raises(ValueError, match=r'MaxWall %r is not a time such as 90, 2:30:00 or 1-12:00:00' % (value,)):
        acct.parse_duration(value, what='MaxWall')


@pytest.mark.parametrize('seconds,text', [(5400, '01:30:00'), (172800, '2-00:00:00'), (0, '00:00:00'), (129600 + 61, '1-12:01:01')])
def test_format_duration(seconds, text):
    assert acct.format_duration(seconds) == text


@pytest.mark.parametrize('name', ['has space', 'a,b', 'x=y', '-lead', '', 'pipe|name', None])
def test_check_name_errors(name):
    with pytest.raises(ValueError, match=r'user name %s is not valid: use letters, digits, "_", ".", "@" and "-" \(not first\), '
                                         r'no spaces, commas, "=" or "\|"' % __import__('re').escape(repr(name))):
        acct.check_name(name, 'user')


QF = dict((f.name, f) for f in acct.QOS_FIELDS)
AF = dict((f.name, f) for f in acct.ASSOC_FIELDS)


@pytest.mark.parametrize('field,value,expected', [
    (QF['MaxTRESPerUser'], 'gres/gpu=8', (('gres/gpu', 8),)),
    (QF['MaxTRESPerUser'], '', ()),
    (QF['MaxWall'], '4:00:00', 14400),
    (QF['GraceTime'], '00:02:00', 120),
    (QF['Priority'], '10', 10),
    (QF['Priority'], 10, 10),
    (QF['Priority'], '', None),
    (QF['Priority'], -1, None),
    (QF['UsageFactor'], '0.500000', 0.5),
    (QF['UsageFactor'], 0.5, 0.5),
    (QF['UsageFactor'], '', None),
    (QF['Flags'], 'DenyOnLimit,OverPartQOS', frozenset(['denyonlimit', 'overpartqos'])),
    (QF['Flags'], ['denyonlimit'], frozenset(['denyonlimit'])),
    (QF['Flags'], '', frozenset()),
    (QF['Flags'], '-1', frozenset()),
    (QF['Preempt'], 'gpu8,Low', frozenset(['gpu8', 'low'])),
    (QF['PreemptMode'], 'REQUEUE', 'requeue'),
    (QF['Description'], 'Eight GPUs', 'eight gpus'),
    (AF['Fairshare'], '10', 10),
    (AF['Fairshare'], 'parent', 'parent'),
    (AF['Fairshare'], 'Parent', 'parent'),
    (AF['QOS'], ['normal', 'GPU8'], frozenset(['normal', 'gpu8'])),
    (AF['QOS'], 'gpu8,normal', frozenset(['normal', 'gpu8'])),
    (AF['DefaultQOS'], 'Normal', 'normal'),
    (AF['DefaultQOS'], '', ''),
    (acct.USER_FIELDS[1], 'Administrator', 'administrator'),
])
def test_normalize(field, value, expected):
    assert acct.normalize(field, value, 'QOS x') == expected


@pytest.mark.parametrize('field,value,message', [
    (QF['Priority'], 'high', r"QOS x Priority='high': expected a whole number \(or -1 for no limit\)"),
    (QF['Priority'], True, r'QOS x Priority=True: expected a whole number'),
    (QF['UsageFactor'], 'half', r"QOS x UsageFactor='half': expected a number such as 0.5"),
    (QF['Flags'], 'DenyOnLimits', r"QOS x Flags: unknown QOS flag 'DenyOnLimits'; valid flags: DenyOnLimit, EnforceUsageThreshold, "),
    (QF['Description'], 'a|b', r"QOS x Description='a\|b': text must be one line without \"\|\" or quotes"),
    (QF['PreemptMode'], 'kill', r"QOS x PreemptMode='kill': expected one of cluster, off, cancel, requeue, suspend, gang, within"),
    (acct.USER_FIELDS[1], 'root', r"QOS x AdminLevel='root': expected one of none, operator, administrator"),
    (AF['Fairshare'], '0', r"QOS x Fairshare='0': expected a positive whole number or \"parent\""),
    (AF['Fairshare'], 'lots', r"QOS x Fairshare='lots': expected a positive whole number"),
    (AF['DefaultQOS'], 'a b', r"QOS x DefaultQOS name 'a b' is not valid"),
    (acct.Field('X', 'X', 'odd'), '1', r"unknown field kind 'odd'"),
])
def test_normalize_errors(field, value, message):
    with pytest.raises(ValueError, match=message):
        acct.normalize(field, value, 'QOS x')


@pytest.mark.parametrize('field,want,have,expected', [
    (QF['MaxTRESPerUser'], (('gres/gpu', 8),), (('cpu', 4), ('gres/gpu', 4)), 'MaxTRESPerUser=cpu=-1,gres/gpu=8'),
    (QF['MaxTRESPerUser'], (), (('gres/gpu', 4),), 'MaxTRESPerUser=gres/gpu=-1'),
    (QF['MaxTRESPerUser'], (), None, 'MaxTRESPerUser=-1'),
    (QF['MaxWall'], 14400, None, 'MaxWall=04:00:00'),
    (QF['MaxWall'], None, 14400, 'MaxWall=-1'),
    (QF['GraceTime'], 120, None, 'GraceTime=120'),
    (QF['Priority'], None, 5, 'Priority=-1'),
    (QF['Flags'], frozenset(['nodecay', 'denyonlimit']), None, 'Flags=DenyOnLimit,NoDecay'),
    (QF['Flags'], frozenset(), None, 'Flags=-1'),
    (AF['QOS'], frozenset(['normal', 'gpu8']), None, 'QOS=gpu8,normal'),
    (AF['Fairshare'], 'parent', 1, 'Fairshare=parent'),
    (AF['DefaultQOS'], 'normal', '', 'DefaultQOS=normal'),
])
def test_argument(field, want, have, expected):
    assert acct.argument(field, want, have) == expected


@pytest.mark.parametrize('key,expected', [
    ('MaxTRESPerUser', 'MaxTRESPerUser'), ('maxtrespu', 'MaxTRESPerUser'), ('MaxTRES', 'MaxTRESPerJob'),
    ('MaxWallDurationPerJob', 'MaxWall'), ('GrpSubmit', 'GrpSubmitJobs'), ('usagethres', 'UsageThreshold'),
])
def test_lookup_field(key, expected):
    assert acct.lookup_field(key, acct.QOS_FIELDS, 'QOS x').name == expected


def test_lookup_field_unknown_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"account ml: unknown setting 'MaxTRESPerUser'; valid settings: DefaultQOS, Fairshare, GrpJobs, "):
        acct.lookup_field('MaxTRESPerUser', acct.ASSOC_FIELDS, 'account ml')


# ------------------------------------------------------------------ state

def test_parse_state_of_real_output():
    current = state()
    assert current['cluster_exists'] is True
    assert current['tres'] == set(['cpu', 'mem', 'energy', 'node', 'billing', 'fs/disk', 'vmem', 'pages',
                                   'gres/gpu', 'gres/gpu:h100', 'gres/gpu:1g.10gb'])
    assert current['qos']['gpu8']['MaxTRESPerUser'] == (('gres/gpu', 4),)
    assert current['qos']['gpu8']['Priority'] == 10
    assert current['qos']['interactive']['MaxTRESPerJob'] == (('gres/gpu', 2), ('mem', 65536))
    assert current['qos']['interactive']['MaxWall'] == 14400
    assert current['qos']['q2']['Flags'] == frozenset(['denyonlimit', 'overpartqos'])
    assert current['qos']['q2']['GraceTime'] == 120
    assert current['qos']['q2']['GrpWall'] == 172800
    assert current['qos']['q2']['MaxTRESPerJob'] == (('billing', 3), ('cpu', 8), ('mem', 1500), ('node', 2))
    assert current['account_assocs']['ml']['Parent'] == 'research'
    assert current['account_assocs']['ml']['GrpTRES'] == (('gres/gpu', 16),)
    assert current['account_assocs']['root']['Parent'] == ''
    assert current['user_assocs'][('alice', 'research')]['Fairshare'] == 3
    assert current['user_assocs'][('alice', 'ml')]['DefaultQOS'] == 'normal'
    assert ('carol', 'ml') in current['user_assocs']
    assert current['users']['carol'] == {'DefaultAccount': 'ml', 'AdminLevel': 'operator'}
    assert current['accounts']['research'] == {'Description': 'research', 'Organization': 'lab'}


def test_parse_state_other_cluster_does_not_exist():
    assert state(dict(REAL, cluster='other\n'))['cluster_exists'] is False


def test_summarize_prints_values_as_sacctmgr_does():
    view = acct.summarize(state())
    assert view['qos']['interactive'] == {'Description': 'interactive', 'Flags': 'DenyOnLimit', 'GraceTime': '00:00:00',
                                          'PreemptMode': 'cluster', 'UsageFactor': 1.0, 'MaxTRESPerJob': 'gres/gpu=2,mem=65536M',
                                          'MaxWall': '04:00:00', 'Priority': 0}
    assert view['accounts']['ml']['parent'] == 'research'
    assert view['users']['alice']['accounts']['research'] == {'Fairshare': 3, 'QOS': 'gpu8,normal', 'DefaultQOS': 'normal'}


# ------------------------------------------------------------------ desired

def test_desired_state_normalises():
    want = desired(**SPEC)
    assert want['qos']['interactive']['settings'] == {'MaxWall': 14400, 'MaxTRESPerJob': (('gres/gpu', 2), ('mem', 65536)),
                                                      'Flags': frozenset(['denyonlimit'])}
    assert want['accounts']['ml'] == {'state': 'present', 'parent': 'research', 'entity': {},
                                      'assoc': {'GrpTRES': (('gres/gpu', 16),)}}
    assert want['accounts']['research']['entity'] == {'Description': 'research'}
    alice = want['users']['alice']
    assert alice['default_account'] == 'ml'
    assert alice['assocs']['research'] == {'Fairshare': 3, 'QOS': frozenset(['normal', 'gpu8']), 'DefaultQOS': 'normal'}
    assert alice['assocs']['ml'] == {'QOS': frozenset(['normal', 'gpu8']), 'DefaultQOS': 'normal'}
    assert want['users']['carol']['admin_level'] == 'operator'


@pytest.mark.parametrize('spec,message', [
    ({'cluster': 'my cluster'}, r"cluster name 'my cluster' is not valid"),
    ({'qos': {'name': 'x'}}, r"qos must be a list, got \{'name': 'x'\}"),
    ({'qos': ['gpu8']}, r"each item of qos must be a dictionary with a name, got 'gpu8'"),
    ({'qos': [{'name': 'a'}, {'name': 'a'}]}, r'QOS a is listed twice'),
    ({'qos': [{'name': 'A'}]}, r"QOS name 'A' has upper-case letters: Slurm keeps names in lower case, so write 'a'"),
    ({'qos': [{'name': 'a', 'state': 'gone'}]}, r"QOS a: state 'gone' must be present or absent"),
    ({'qos': [{'name': 'a', 'MaxGPUs': 8}]}, r"QOS a: unknown setting 'MaxGPUs'; valid settings: Description, Flags, "),
    ({'qos': [{'name': 'a', 'MaxTRES': 'cpu=1', 'MaxTRESPerJob': 'cpu=2'}]},
     r'QOS a: setting MaxTRESPerJob is given twice \(as \'MaxTRESPerJob\' and another spelling\)'),
    ({'qos': [{'name': 'a', 'MaxTRESPerUser': 'gpu'}]}, r"QOS a MaxTRESPerUser 'gpu': \"gpu\" is not NAME=COUNT"),
    ({'accounts': [{'name': 'a'}, {'name': 'a'}]}, r'account a is listed twice'),
    ({'accounts': [{'name': 'a', 'MaxTRESPerUser': 'gres/gpu=8'}]}, r"account a: unknown setting 'MaxTRESPerUser'; valid settings: "),
    ({'accounts': [{'name': 'a', 'parent': 'b'}, {'name': 'b', 'parent': 'a'}]}, r'accounts a -> b -> a form a parent loop'),
    ({'accounts': [{'name': 'a', 'parent': 'bad parent'}]}, r"account a parent name 'bad parent' is not valid"),
    ({'users': [{'name': 'u', 'accounts': ['a']}, {'name': 'u', 'accounts': ['a']}]}, r'user u is listed twice'),
    ({'users': [{'name': 'u'}]}, r'user u has no accounts: list at least one in its accounts'),
    ({'users': [{'name': 'u', 'accounts': [7]}]}, r'user u: each of its accounts must be a name or a dictionary with a name, got 7'),
    ({'users': [{'name': 'u', 'accounts': ['a', 'b'], 'default_account': 'c'}]}, r'user u: default_account c is not one of its accounts \(a, b\)'),
    ({'users': [{'name': 'u', 'accounts': [{'name': 'a', 'Fairshare': 0}]}]},
     r"user u account a Fairshare=0: 0 is out of range; expected a whole number from 1 to 2147483646, or \"parent\""),
    ({'users': [{'name': 'u', 'accounts': ['a'], 'admin_level': 'god'}]}, r"user u AdminLevel='god': expected one of none, operator, administrator"),
    ({'accounts': [{'name': 'a', 'state': 'absent'}], 'users': [{'name': 'u', 'accounts': ['a']}]}, r'user u is in account a, which has state absent'),
])
def test_desired_state_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        desired(**spec)


def test_absent_user_needs_no_accounts():
    assert desired(users=[{'name': 'gone', 'state': 'absent'}])['users']['gone']['state'] == 'absent'


# ------------------------------------------------------------------ plans

def test_the_inventory_that_made_real_plans_nothing():
    assert commands(acct.plan(desired(**SPEC), state())) == []
    assert acct.problems(desired(**SPEC), state()) == []


def test_an_empty_database_gets_everything_in_order():
    current = state(EMPTY)
    spec = spec_with(qos=[{'name': 'gpu8', 'MaxTRESPerUser': 'gres/gpu=8'}],
                     accounts=[{'name': 'ml', 'parent': 'research', 'GrpTRES': 'gres/gpu=16'},
                               {'name': 'research', 'description': 'Research groups', 'Fairshare': 10, 'QOS': ['normal', 'gpu8']}],
                     users=[{'name': 'alice', 'accounts': ['research', 'ml'], 'default_account': 'ml', 'QOS': ['normal', 'gpu8']}])
    assert commands(acct.plan(desired(**spec), current)) == [
        'add cluster probe',
        'add qos gpu8 MaxTRESPerUser=gres/gpu=8',
        'add account research Cluster=probe Parent=root Description=research groups Fairshare=10 QOS=gpu8,normal',
        'add account ml Cluster=probe Parent=research GrpTRES=gres/gpu=16',
        'add user alice Account=ml Cluster=probe DefaultAccount=ml QOS=gpu8,normal',
        'add user alice Account=research Cluster=probe QOS=gpu8,normal',
    ]


@pytest.mark.parametrize('change,expected', [
    ({'qos': [{'name': 'gpu8', 'MaxTRESPerUser': 'gres/gpu=8', 'Priority': 10}]},
     ['modify qos where name=gpu8 set MaxTRESPerUser=gres/gpu=8']),
    ({'qos': [{'name': 'gpu8', 'MaxTRESPerUser': 'cpu=4,gres/gpu=4'}]},
     ['modify qos where name=gpu8 set MaxTRESPerUser=cpu=4,gres/gpu=4']),
    ({'qos': [{'name': 'interactive', 'MaxTRESPerJob': 'gres/gpu=2'}]},
     ['modify qos where name=interactive set MaxTRESPerJob=gres/gpu=2,mem=-1']),
    ({'qos': [{'name': 'interactive', 'MaxTRESPerJob': 'mem=65536,gres/gpu=2', 'MaxWall': 240, 'Flags': 'denyonlimit'}]}, []),
    ({'qos': [{'name': 'interactive', 'MaxWall': -1, 'Flags': []}]},
     ['modify qos where name=interactive set Flags=-1 MaxWall=-1']),
    ({'qos': [{'name': 'q2', 'GraceTime': 120, 'UsageFactor': '0.5', 'Preempt': ['gpu8'], 'PreemptMode': 'REQUEUE',
               'GrpWall': '2-0'}]}, []),
    ({'accounts': [{'name': 'ml', 'parent': 'root', 'GrpTRES': 'gres/gpu=16'}]},
     ['modify account where name=ml cluster=probe set Parent=root']),
    ({'accounts': [{'name': 'research', 'description': 'Research Groups', 'organization': 'Lab'}]},
     ['modify account where name=research set Description=research groups']),
    ({'accounts': [{'name': 'research', 'Fairshare': 20, 'MaxJobs': 100}]},
     ['modify account where name=research cluster=probe set Fairshare=20 MaxJobs=100']),
    ({'users': [{'name': 'alice', 'accounts': ['ml', 'research'], 'QOS': ['normal']}]},
     ['modify user where name=alice account=ml cluster=probe set QOS=normal',
      'modify user where name=alice account=research cluster=probe set QOS=normal']),
    ({'users': [{'name': 'alice', 'accounts': ['research', 'ml']}]},
     ['modify user where name=alice cluster=probe set DefaultAccount=research']),
    ({'users': [{'name': 'carol', 'accounts': ['ml'], 'admin_level': 'none'}]},
     ['modify user where name=carol cluster=probe set AdminLevel=none']),
    ({'users': [{'name': 'carol', 'accounts': ['ml', 'research']}]},
     ['add user carol Account=research Cluster=probe']),
    ({'users': [{'name': 'dave', 'accounts': ['ml'], 'admin_level': 'operator', 'MaxJobs': 4}]},
     ['add user dave Account=ml Cluster=probe DefaultAccount=ml AdminLevel=operator MaxJobs=4']),
    ({'users': [{'name': 'carol', 'state': 'absent'}]}, ['delete user where name=carol cluster=probe']),
    ({'users': [{'name': 'nobody', 'state': 'absent'}]}, []),
    ({'users': [{'name': 'root', 'state': 'absent'}]}, []),
    ({'accounts': [{'name': 'upperacct', 'state': 'absent'}]}, ['delete account where name=upperacct cluster=probe']),
    ({'qos': [{'name': 'q2', 'state': 'absent'}, {'name': 'normal', 'state': 'absent'}]}, ['delete qos where name=q2']),
])
def test_plan_changes_only_what_differs(change, expected):
    assert commands(acct.plan(desired(**change), state())) == expected


@pytest.mark.parametrize('change,expected', [
    # -1 (or UNLIMITED) is the one way to remove a limit; a cleared UsageFactor/Fairshare reads back as 1
    ({'qos': [{'name': 'gpu8', 'Priority': -1, 'MaxTRESPerUser': -1}]}, ['modify qos where name=gpu8 set MaxTRESPerUser=gres/gpu=-1 Priority=-1']),
    ({'qos': [{'name': 'gpu8', 'Priority': 'UNLIMITED', 'MaxTRESPerUser': 'unlimited'}]},
     ['modify qos where name=gpu8 set MaxTRESPerUser=gres/gpu=-1 Priority=-1']),
    ({'qos': [{'name': 'q2', 'UsageFactor': -1, 'GrpWall': '-1', 'GraceTime': 'INFINITE'}]},
     ['modify qos where name=q2 set GraceTime=-1 UsageFactor=1.0 GrpWall=-1']),
    ({'qos': [{'name': 'q2', 'UsageThreshold': -1, 'MaxJobsPerUser': -1}]}, []),
    ({'accounts': [{'name': 'research', 'Fairshare': -1}]}, ['modify account where name=research cluster=probe set Fairshare=1']),
    ({'users': [{'name': 'alice', 'accounts': ['ml', 'research'], 'DefaultQOS': -1}]},
     ['modify user where name=alice account=ml cluster=probe set DefaultQOS=-1',
      'modify user where name=alice account=research cluster=probe set DefaultQOS=-1']),
    # MaxWall is kept in minutes, seconds rounded up as sacctmgr does (time_str2mins)
    ({'qos': [{'name': 'interactive', 'MaxWall': '3:59:30'}]}, []),
    ({'qos': [{'name': 'interactive', 'MaxWall': '1-00:00:30'}]}, ['modify qos where name=interactive set MaxWall=1-00:01:00']),
    ({'qos': [{'name': 'interactive', 'MaxWall': '1-02:03:04'}]}, ['modify qos where name=interactive set MaxWall=1-02:04:00']),
    ({'qos': [{'name': 'interactive', 'MaxWall': '239:01'}]}, []),
    ({'qos': [{'name': 'q2', 'GraceTime': '0:02:01'}]}, ['modify qos where name=q2 set GraceTime=121']),
    ({'qos': [{'name': 'interactive', 'MaxTRESPerJob': {'GRES/GPU': '2', 'mem': '64G'}}]}, []),
    ({'qos': [{'name': 'gpu8', 'MaxTRESPerUser': 'license/matlab=2,fs/disk=10,billing=100'}]},
     ['modify qos where name=gpu8 set MaxTRESPerUser=billing=100,fs/disk=10,gres/gpu=-1,license/matlab=2']),
])
def test_clearing_and_rounding(change, expected):
    assert commands(acct.plan(desired(**change), state())) == expected


@pytest.mark.parametrize('field,value,expected', [
    (QF['MaxJobsPerUser'], 0, 0),
    (QF['MaxJobsPerUser'], '4294967293', 4294967293),
    (QF['MaxJobsPerUser'], -1, None),
    (QF['UsageFactor'], 0, 0.0),
    (QF['UsageFactor'], '2.5', 2.5),
    (QF['UsageThreshold'], 1, 1.0),
    (QF['UsageThreshold'], '-1', None),
    (QF['MaxWall'], 0, 0),
    (QF['MaxWall'], '90', 5400),
    (QF['MaxWall'], '1-12', 129600),
    (QF['GraceTime'], 30, 30),
    (QF['Flags'], '-1', frozenset()),
    (QF['Flags'], [], frozenset()),
    (QF['Preempt'], [], frozenset()),
    (QF['Preempt'], "''", frozenset()),
    (AF['Fairshare'], 'Parent', 'parent'),
    (AF['Fairshare'], 2147483646, 2147483646),
    (AF['DefaultQOS'], 'normal', 'normal'),
    (AF['DefaultQOS'], '-1', ''),
    (QF['MaxTRESPerJob'], 'gres/gpu:H100=2,gres/shard=8,cpu=0', (('cpu', 0), ('gres/gpu:H100', 2), ('gres/shard', 8))),
])
def test_inventory_value(field, value, expected):
    assert acct.inventory_value(field, value, 'QOS x') == expected


def test_nothing_unlisted_is_removed_without_purge():
    assert commands(acct.plan(desired(qos=[{'name': 'gpu8'}]), state())) == []


def test_purge_removes_the_unlisted_children_first():
    spec = spec_with(users=[{'name': 'alice', 'accounts': ['ml'], 'QOS': ['normal', 'gpu8'], 'DefaultQOS': 'normal'}])
    assert commands(acct.plan(desired(**spec), state(), purge=True)) == [
        'delete user where name=carol cluster=probe',
        'delete user where name=alice account=research cluster=probe',
        'delete account where name=upperacct cluster=probe',
        'delete qos where name=q2',
    ]


def test_purge_of_a_parent_and_child_deletes_the_child_first():
    current = state()
    assert commands(acct.plan(desired(), current, purge=True)) == [
        'delete user where name=alice cluster=probe',
        'delete user where name=carol cluster=probe',
        'delete account where name=ml cluster=probe',
        'delete account where name=research cluster=probe',
        'delete account where name=upperacct cluster=probe',
        'delete qos where name=gpu8',
        'delete qos where name=interactive',
        'delete qos where name=q2',
    ]


def test_second_plan_after_expected_state_is_empty():
    spec = spec_with(qos=SPEC['qos'] + [{'name': 'new', 'MaxTRESPerUser': 'gres/gpu=1'}],
                     users=SPEC['users'] + [{'name': 'erin', 'accounts': ['research'], 'admin_level': 'operator'}])
    want = desired(**spec)
    after = acct.expected_state(want, state())
    assert commands(acct.plan(want, after)) == []
    assert after['qos']['new']['MaxTRESPerUser'] == (('gres/gpu', 1),)
    assert after['users']['erin'] == {'DefaultAccount': 'research', 'AdminLevel': 'operator'}


def test_expected_state_with_purge_drops_what_goes():
    after = acct.expected_state(desired(**SPEC), state(), purge=True)
    assert sorted(after['account_assocs']) == ['ml', 'research', 'root']
    assert sorted(after['qos']) == ['gpu8', 'interactive', 'normal']


@pytest.mark.parametrize('spec,purge,message', [
    ({'qos': [{'name': 'big', 'MaxTRESPerUser': 'gres/gpu:a100=8'}]}, False,
     r'slurmdbd knows no TRES gres/gpu:a100 \(it knows billing, cpu, energy, fs/disk, gres/gpu, gres/gpu:1g.10gb, gres/gpu:h100, '
     r'mem, node, pages, vmem\): slurmctld registers the TRES of AccountingStorageTRES when it starts, so add them there and '
     r'restart slurmctld before setting limits on them'),
    ({'accounts': [{'name': 'x', 'parent': 'nowhere'}]}, False,
     r'account x has parent nowhere, which is neither in the inventory nor in the cluster'),
    ({'accounts': [{'name': 'x', 'QOS': ['gold']}]}, False, r'account x uses QOS gold, which is neither in the inventory nor in slurmdbd'),
    ({'users': [{'name': 'u', 'accounts': ['nowhere']}]}, False,
     r'user u is in account nowhere, which is neither in the inventory nor in the cluster'),
    ({'users': [{'name': 'u', 'accounts': ['ml'], 'DefaultQOS': 'gold'}]}, False,
     r'user u uses QOS gold, which is neither in the inventory nor in slurmdbd'),
    ({'users': [{'name': 'u', 'accounts': ['upperacct']}]}, True,
     r'user u is in account upperacct, which is neither in the inventory nor in the cluster'),
    ({'qos': [{'name': 'hi', 'Preempt': ['low']}]}, False, r'QOS hi preempts QOS low, which is neither in the inventory nor in slurmdbd'),
    ({'qos': [{'name': 'q2', 'state': 'absent'}], 'users': [{'name': 'u', 'accounts': ['ml'], 'QOS': ['q2']}]}, False,
     r'user u uses QOS q2, which is neither in the inventory nor in slurmdbd'),
])
def test_problems(spec, purge, message):
    found = acct.problems(desired(**spec), state(), purge)
    assert len(found) == 1
    assert __import__('re').match(message, found[0]), found


def test_action_as_dict():
    action = acct.plan(desired(qos=[{'name': 'gpu8', 'Priority': 5}]), state())[0]
    assert action.as_dict() == {'command': ['sacctmgr', '-i', 'modify', 'qos', 'where', 'name=gpu8', 'set', 'Priority=5'],
                                'summary': 'modify QOS gpu8: Priority 10 -> 5'}


# ------------------------------------------------------------------ slurm.conf

@pytest.mark.parametrize('gres,extra,expected', [
    (['gpu:h100:8'], (), 'gres/gpu,gres/gpu:h100'),
    (['gpu:h100:8', 'gpu:a100:8'], (), 'gres/gpu,gres/gpu:a100,gres/gpu:h100'),
    (['gpu:a100:2,gpu:1g.10gb:14'], (), 'gres/gpu,gres/gpu:1g.10gb,gres/gpu:a100'),
    (['gpu:a100:8,shard:64'], (), 'gres/gpu,gres/gpu:a100,gres/shard'),
    (['gpu:a100:2,mps:200'], (), 'gres/gpu,gres/gpu:a100,gres/mps'),
    (['gpu:8'], (), 'gres/gpu'),
    (['gpu:8(S:0-1)'], (), 'gres/gpu'),
    (['gpu:h100:8(S:0)'], (), 'gres/gpu,gres/gpu:h100'),
    (['', None, '(null)'], (), ''),
    (['gpu:h100:8', 'gpu:h100:8'], ['gres/gpu', 'License/matlab'], 'gres/gpu,gres/gpu:h100,license/matlab'),
    ([], ['gres/gpu,gres/gpu:H100'], 'gres/gpu,gres/gpu:H100'),
])
def test_accounting_tres(gres, extra, expected):
    assert acct.accounting_tres(gres, extra) == expected


@pytest.mark.parametrize('gres,extra,message', [
    (['gpu h100 8'], (), r"Gres= entry 'gpu h100 8' is not NAME\[:TYPE\]\[:COUNT\] such as gpu:h100:8 or shard:64"),
    ([], ['gpu=8'], r"AccountingStorageTRES entry 'gpu=8' is not a TRES name such as gres/gpu, gres/gpu:a100 or license/matlab"),
])
def test_accounting_tres_errors(gres, extra, message):
    with pytest.raises(ValueError, match=message):
        acct.accounting_tres(gres, extra)
