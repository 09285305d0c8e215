# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_assoc refuses bad inventories with one clear message and runs no write.

Each case runs the module against the transcript of test_slurm_assoc.py: the
read commands answer with real Slurm 22.05 output, and the table of writes
is empty, so any ``sacctmgr -i add|modify|delete`` fails the test.  Each
message must name the entity, the option, the bad value and what is valid.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpucluster.bringup.plugins.modules import slurm_assoc
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.test_slurm_assoc import SACCTMGR, Transcript

INT_RANGE = 'expected a whole number from 0 to 4294967293, or -1 (or UNLIMITED) to remove the limit'
TIMES = 'expected a time as MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, a whole number of minutes, or -1 (or UNLIMITED)'
FAIRSHARE = 'expected a whole number from 1 to 2147483646, or "parent", or -1 to reset it to 1'
TRES_NAMES = 'valid: billing, cpu, energy, mem, node, pages, vmem, or TYPE/NAME with TYPE one of bb, fs, gres, ic, license'
LEAVE_OUT = 'to remove gres/gpu from this limit leave it out (the list replaces the whole limit), or give -1 (or UNLIMITED)'
NAME_RULES = 'is not valid: use letters, digits, "_", ".", "@" and "-" (not first), no spaces, commas, "=" or "|"'


def new_qos(**settings):
    return {'qos': [dict({'name': 'gold'}, **settings)]}


def gpu8(**settings):
    """QOS gpu8 exists in the transcript (MaxTRESPerUser=gres/gpu=4, Priority=10)."""
    return {'qos': [dict({'name': 'gpu8'}, **settings)]}


def account(**settings):
    return {'accounts': [dict({'name': 'ml', 'parent': 'research'}, **settings)]}


def user(**settings):
    return {'users': [dict({'name': 'dave', 'accounts': ['ml']}, **settings)]}


CASES = [
    # negative numbers other than -1 (sacctmgr would clear the limit silently)
    ('new QOS negative MaxJobsPerUser', new_qos(MaxJobsPerUser=-5), ['QOS gold MaxJobsPerUser=-5', '-5 is out of range', INT_RANGE]),
    ('existing QOS negative MaxJobsPerUser', gpu8(MaxJobsPerUser=-5), ['QOS gpu8 MaxJobsPerUser=-5', INT_RANGE]),
    ('existing QOS negative GrpJobs', gpu8(GrpJobs=-7), ['QOS gpu8 GrpJobs=-7', '-7 is out of range', INT_RANGE]),
    ('negative GrpJobs as text', gpu8(GrpJobs='-7'), ["QOS gpu8 GrpJobs='-7'", INT_RANGE]),
    ('account negative MaxJobs', account(MaxJobs=-2), ['account ml MaxJobs=-2', INT_RANGE]),
    ('user negative MaxSubmitJobs', user(MaxSubmitJobs=-3), ['user dave MaxSubmitJobs=-3', INT_RANGE]),
    ('count too large', gpu8(MaxJobsPerUser=5000000000), ['QOS gpu8 MaxJobsPerUser=5000000000', 'out of range', INT_RANGE]),
    ('negative UsageFactor', new_qos(UsageFactor=-2),
     ['QOS gold UsageFactor=-2', 'out of range', 'expected a number of 0 or more such as 0.5, or -1 to reset it']),
    ('UsageFactor word', new_qos(UsageFactor='half'), ["QOS gold UsageFactor='half'", 'expected a number of 0 or more']),
    ('UsageFactor nan', new_qos(UsageFactor='nan'), ["QOS gold UsageFactor='nan'", 'out of range']),
    ('UsageThreshold above 1', new_qos(UsageThreshold=1.5), ['QOS gold UsageThreshold=1.5', 'expected a number from 0 to 1']),
    # wrong types
    ('Priority word', new_qos(Priority='high'), ["QOS gold Priority='high'", INT_RANGE]),
    ('Priority boolean', new_qos(Priority=True), ['QOS gold Priority=True', INT_RANGE]),
    ('Priority fraction', new_qos(Priority=1.5), ['QOS gold Priority=1.5', INT_RANGE]),
    ('Priority null', new_qos(Priority=None), ['QOS gold Priority=None', INT_RANGE]),
    ('MaxJobs list', account(MaxJobs=[4]), ['account ml MaxJobs=[4]', INT_RANGE]),
    ('qos a dict', {'qos': {'name': 'gold'}}, ["argument 'qos' is of type dict", 'convert to list']),
    ('accounts of names', {'accounts': ['ml']}, ["Elements value for option 'accounts' is of type str", 'convert to dict']),
    ('QOS without a name', {'qos': [{'Priority': 5}]}, ['each item of qos must be a dictionary with a name', "'Priority': 5"]),
    ('user accounts a string', {'users': [{'name': 'dave', 'accounts': 'ml'}]},
     ["user dave: accounts must be a list of account names (or dictionaries with a name), got 'ml'"]),
    ('QOS list holds a number', user(QOS=[7]), ['user dave QOS: 7 is not a QOS name', 'a list of names such as [normal, gpu8]']),
    ('Flags a number', new_qos(Flags=3), ['QOS gold Flags=3', 'expected a list of QOS flags', 'valid flags: DenyOnLimit, ']),
    ('empty DefaultQOS', user(DefaultQOS=''), ["user dave DefaultQOS='': expected a QOS name such as normal, or -1 to clear it"]),
    # DefaultQOS / DefaultAccount outside the lists they must be in
    ('user DefaultQOS not in its QOS', user(QOS=['normal'], DefaultQOS='gpu8'),
     ['user dave: DefaultQOS gpu8 is not in its QOS list (normal); add it to QOS or choose one of them']),
    ('account DefaultQOS not in its QOS', account(QOS=['normal'], DefaultQOS='gpu8'),
     ['account ml: DefaultQOS gpu8 is not in its QOS list (normal)']),
    ('account entry DefaultQOS not in QOS', {'users': [{'name': 'dave', 'accounts': [{'name': 'ml', 'QOS': ['normal'], 'DefaultQOS': 'q2'}]}]},
     ['user dave account ml: DefaultQOS q2 is not in its QOS list (normal)']),
    ('DefaultQOS not among the current QOS', {'users': [{'name': 'carol', 'accounts': ['ml'], 'DefaultQOS': 'q2'}]},
     ['user carol account ml: DefaultQOS q2 is not among the QOS it can use (gpu8, interactive, normal)']),
    ('default_account not in accounts', user(default_account='research'),
     ['user dave: default_account research is not one of its accounts (ml)']),
    # unknown keys
    ('unknown QOS setting', new_qos(MaxGPUs=8), ["QOS gold: unknown setting 'MaxGPUs'; valid settings: Description, Flags, "]),
    ('QOS-only setting on an account', account(MaxTRESPerUser='gres/gpu=8'), ["account ml: unknown setting 'MaxTRESPerUser'; valid settings: "]),
    ('unknown setting in a user account', {'users': [{'name': 'dave', 'accounts': [{'name': 'ml', 'Shares2': 3}]}]},
     ["user dave account ml: unknown setting 'Shares2'; valid settings: DefaultQOS, Fairshare, "]),
    ('one setting spelled twice', new_qos(MaxTRES='cpu=1', MaxTRESPerJob='cpu=2'), ['QOS gold: setting MaxTRESPerJob is given twice']),
    # names
    ('QOS name with a space', {'qos': [{'name': 'gpu 8'}]}, ["QOS name 'gpu 8' " + NAME_RULES]),
    ('account name with a comma', {'accounts': [{'name': 'ml,dl'}]}, ["account name 'ml,dl' " + NAME_RULES]),
    ('user name in upper case', {'users': [{'name': 'Dave', 'accounts': ['ml']}]},
     ["user name 'Dave' has upper-case letters: Slurm keeps names in lower case, so write 'dave'"]),
    ('cluster name in upper case', {'cluster': 'Probe'}, ["cluster name 'Probe' has upper-case letters", "write 'probe'"]),
    ('QOS list name in upper case', user(QOS=['Normal']), ["user dave QOS name 'Normal' has upper-case letters", "write 'normal'"]),
    ('Preempt name with a space', new_qos(Preempt=['low prio']), ["QOS gold Preempt name 'low prio' " + NAME_RULES]),
    ('account listed twice for a user', {'users': [{'name': 'dave', 'accounts': ['ml', 'ml']}]},
     ['user dave: account ml is listed twice in its accounts']),
    ('account is its own parent', {'accounts': [{'name': 'x', 'parent': 'x'}]}, ['account x has itself as parent']),
    # TRES
    ('TRES count -1', new_qos(MaxTRESPerUser='gres/gpu=-1'), ["QOS gold MaxTRESPerUser 'gres/gpu=-1'", "the count of gres/gpu is '-1'", LEAVE_OUT]),
    ('TRES count unlimited in a mapping', new_qos(MaxTRESPerJob={'gres/gpu': 'unlimited'}),
     ["QOS gold MaxTRESPerJob {'gres/gpu': 'unlimited'}", LEAVE_OUT]),
    ('TRES without its type', new_qos(MaxTRESPerUser='gpu=4'),
     ["QOS gold MaxTRESPerUser 'gpu=4'", '"gpu" is not a TRES name (did you mean gres/gpu?)', TRES_NAMES]),
    ('TRES of an unknown type', new_qos(GrpTRES='bogus/x=1'), ["QOS gold GrpTRES 'bogus/x=1'", '"bogus/x" is not a TRES name', TRES_NAMES]),
    ('TRES fraction', new_qos(MaxTRESPerJob='gres/gpu=1.5'),
     ["QOS gold MaxTRESPerJob 'gres/gpu=1.5'", "the count of gres/gpu is '1.5', expected a whole number from 0 to "]),
    ('TRES without a count', new_qos(GrpTRES='gres/gpu'), ["QOS gold GrpTRES 'gres/gpu'", '"gres/gpu" is not NAME=COUNT']),
    ('TRES memory word', new_qos(MaxTRESPerJob='mem=lots'), ["QOS gold MaxTRESPerJob 'mem=lots'", "memory 'lots' is not a size such as 1500, 100G or 1T"]),
    ('TRES given twice', new_qos(GrpTRES='gres/gpu=1,GRES/GPU=2'), ["QOS gold GrpTRES 'gres/gpu=1,GRES/GPU=2': TRES gres/gpu is given twice"]),
    ('TRES empty', new_qos(GrpTRES=''), ["QOS gold GrpTRES=''", 'expected NAME=COUNT pairs such as "gres/gpu=8,cpu=64"']),
    ('TRES a bare number', new_qos(GrpTRES=8), ['QOS gold GrpTRES=8', 'expected NAME=COUNT pairs']),
    ('TRES slurmdbd does not know', new_qos(MaxTRESPerUser='gres/gpu:a100=8'), ['slurmdbd knows no TRES gres/gpu:a100 (it knows billing, cpu, ']),
    # durations
    ('MaxWall with an h', new_qos(MaxWall='4h'), ["QOS gold MaxWall='4h'", TIMES]),
    ('negative MaxWall', new_qos(MaxWall=-5), ['QOS gold MaxWall=-5: a negative time', TIMES]),
    ('MaxWall with four fields', new_qos(MaxWall='1:2:3:4'), ["QOS gold MaxWall='1:2:3:4'", TIMES]),
    ('negative GraceTime', new_qos(GraceTime='-2'), ["QOS gold GraceTime='-2': a negative time", 'a whole number of seconds']),
    ('GrpWall a fraction', account(GrpWall=1.5), ['account ml GrpWall=1.5', TIMES]),
    # fairshare, flags, keywords
    ('Fairshare zero', account(Fairshare=0), ['account ml Fairshare=0', '0 is out of range', FAIRSHARE]),
    ('Fairshare negative', account(Fairshare=-3), ['account ml Fairshare=-3', FAIRSHARE]),
    ('Fairshare too large', account(Fairshare=3000000000), ['account ml Fairshare=3000000000', FAIRSHARE]),
    ('unknown QOS flag', new_qos(Flags=['DenyOnLimits']),
     ["QOS gold Flags: unknown QOS flag 'DenyOnLimits'; valid flags: DenyOnLimit, EnforceUsageThreshold, "]),
    ('Preempt names an unknown QOS', new_qos(Preempt=['low']), ['QOS gold preempts QOS low, which is neither in the inventory nor in slurmdbd']),
    ('unknown PreemptMode', new_qos(PreemptMode='kill'),
     ["QOS gold PreemptMode='kill': expected one of cluster, off, cancel, requeue, suspend, gang, within"]),
    ('unknown admin_level', user(admin_level='god'), ["user dave AdminLevel='god': expected one of none, operator, administrator"]),
    ('unknown state', new_qos(state='gone'), ["QOS gold: state 'gone' must be present or absent"]),
    ('unknown parent', {'accounts': [{'name': 'x', 'parent': 'nowhere'}]},
     ['account x has parent nowhere, which is neither in the inventory nor in the cluster']),
    ('description with a pipe', account(description='a|b'), ["account ml Description='a|b': text must be one line without \"|\" or quotes"]),
]


def answering(transcript):
    """An AnsibleModule.run_command that answers from the transcript."""
    def run_command(module, command, **kwargs):
        return transcript(module, command, **kwargs)
    return run_command


@pytest.mark.parametrize('args, fragments', [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_fails_before_any_write(monkeypatch, args, fragments):
    transcript = Transcript()  # no write is expected: any write command fails the test
    monkeypatch.setattr(AnsibleModule, 'run_command', answering(transcript))
    outcome = bad_input(slurm_assoc.main, dict({'cluster': 'probe', 'executable': SACCTMGR}, **args), *fragments)
    assert transcript.ran == []
    assert 'actions' not in outcome.result


def test_the_whole_inventory_is_checked_before_the_first_write(monkeypatch):
    """A good new QOS listed before a bad one is not added either."""
    transcript = Transcript()
    monkeypatch.setattr(AnsibleModule, 'run_command', answering(transcript))
    args = {'cluster': 'probe', 'executable': SACCTMGR, 'qos': [{'name': 'gold', 'Priority': 5}, {'name': 'gpu8', 'GrpJobs': -7}],
            'users': [{'name': 'dave', 'accounts': ['ml']}]}
    bad_input(slurm_assoc.main, args, 'QOS gpu8 GrpJobs=-7')
    assert transcript.ran == []


def test_there_are_enough_cases():
    assert len(CASES) >= 35
    assert len(set(c[0] for c in CASES)) == len(CASES)
