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


# === edge cases (formerly test_sacctmgr_edges.py): Edges of _sacctmgr: whole error messages, boundaries, each branch of plan/expected_state/problems/removals.

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
    ({'accounts': [{'name': 'a'}, {'name': 'a'}]}, 'account a is listed twice'),
    ({'accounts': [{'name': 'a', 'state': 'gone'}]}, "account a: state 'gone' must be present or absent"),
    ({'accounts': [{'name': 'a', 'parent': 'a'}]}, 'account a has itself as parent'),
    ({'accounts': [{'name': 'a', 'parent': 'b'}, {'name': 'b', 'parent': 'c'}, {'name': 'c', 'parent': 'a'}]},
     'accounts a -> b -> c -> a form a parent loop'),
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
