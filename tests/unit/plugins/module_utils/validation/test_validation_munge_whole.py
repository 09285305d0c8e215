# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""munge across nodes (_validation_munge), compared whole: each record, each problem of a maker, every limit of the input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import decimal

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_munge as vm

CRED = 'MUNGE:AwQFAAB1Ze1rRv0tR4sFOGLQUx8Kj3eB0rVgU0gQ4b3o=:'
PARAMS = {'node': 'ctl', 'unmunge': 'unmunge'}


def record(status, reason, hosts=('gpu-01', 'ctl')):
    return {'stage': 'node', 'node': 'gpu-01->ctl', 'check': 'munge_cross', 'status': status, 'hosts': list(hosts), 'reason': reason}


@pytest.mark.parametrize('rc', [None, '', 0, 1, '0', '-1', -1])
def test_check_munge_input_takes_an_exit_code(rc):
    items = [{'node': 'gpu-01', 'credential': CRED, 'rc': rc}]
    assert vm.check_munge_input(dict(PARAMS, credentials=items)) is items


@pytest.mark.parametrize('rc, shown', [(True, 'True'), (False, 'False'), (1.0, '1.0'), (decimal.Decimal('5'), "Decimal('5')"), ('1-', "'1-'"),
                                       ([0], '[0]')])
def test_check_munge_input_refuses_what_is_no_exit_code(rc, shown):
    with pytest.raises(InputError) as err:
        vm.check_munge_input(dict(PARAMS, credentials=[{'node': 'gpu-01', 'rc': rc}]))
    assert str(err.value) == 'credentials[0].rc is %s, expected the exit code of munge -n (a whole number) or null' % shown


def test_check_munge_input_without_credentials():
    assert vm.check_munge_input(dict(PARAMS, credentials=None)) == []


@pytest.mark.parametrize('text, meaning', [
    ('UNMUNGE: ERROR: INVALID CREDENTIAL', vm.HINTS[0][1]),
    ('Socket communication error', vm.HINTS[5][1]),
    (None, None),
    ('', None),
])
def test_hint(text, meaning):
    assert vm.hint(text) == meaning


@pytest.mark.parametrize('item, problem', [
    # a failed munge -n: its error clipped to 240 characters, else "no output"
    ({'node': 'gpu-01', 'rc': 2, 'error': 'e' * 240}, 'munge -n failed on gpu-01 (rc 2): ' + 'e' * 240),
    ({'node': 'gpu-01', 'rc': 2, 'error': 'e' * 241}, 'munge -n failed on gpu-01 (rc 2): ' + 'e' * 237 + '...'),
    ({'node': 'gpu-01', 'rc': '2', 'error': ' \n'}, 'munge -n failed on gpu-01 (rc 2): no output'),
    ({'node': 'gpu-01', 'rc': 2}, 'munge -n failed on gpu-01 (rc 2): no output'),
    # no exit code given: the credential decides
    ({'node': 'gpu-01', 'rc': '', 'credential': ' \n'}, 'munge -n on gpu-01 printed no credential'),
    ({'node': 'gpu-01', 'rc': '', 'credential': CRED}, None),
    ({'node': 'gpu-01', 'rc': 0, 'credential': '', 'error': 'munge:  busy'}, 'munge -n on gpu-01 printed no credential: munge: busy'),
    # what is not a credential: shown clipped to 60 characters
    ({'node': 'gpu-01', 'rc': 0, 'credential': 'x' * 60}, "munge -n on gpu-01 printed '%s', not a credential (MUNGE:...:)" % ('x' * 60)),
    ({'node': 'gpu-01', 'rc': 0, 'credential': 'x' * 61}, "munge -n on gpu-01 printed '%s...', not a credential (MUNGE:...:)" % ('x' * 57)),
    ({'node': 'gpu-01', 'rc': 0, 'credential': ' ' + CRED + ' '}, None),
])
def test_made_problem_whole(item, problem):
    assert vm.made_problem(item) == problem


@pytest.mark.parametrize('result, expected', [
    ({'rc': 0, 'stdout': 'STATUS: success (0)\n', 'stderr': ''},
     record('pass', 'a credential made on gpu-01 decodes on ctl: the two share one munge key')),
    ({'rc': 0, 'stdout': 'STATUS:          Success (0)\n', 'stderr': ''},
     record('pass', 'a credential made on gpu-01 decodes on ctl: the two share one munge key')),
    ({'rc': 0, 'stdout': 'ENCODE_HOST: gpu-01.lan (10.0.0.1)\n'},
     record('pass', 'a credential made on gpu-01 (ENCODE_HOST gpu-01.lan) decodes on ctl: the two share one munge key')),
    # rc 0 with a status other than success: a failure, said with the status
    ({'rc': 0, 'stdout': 'STATUS: Unauthorized credential (19)\n'},
     record('fail', 'a credential made on gpu-01 does not decode on ctl: unmunge rc 0: Unauthorized credential; '
                    'the credential is restricted to another user or group')),
    # a non-zero rc even with a status of success
    ({'rc': 1, 'stdout': 'STATUS: Success (0)\n'},
     record('fail', 'a credential made on gpu-01 does not decode on ctl: unmunge rc 1: Success')),
    # no status: standard error, else standard output, whitespace collapsed; no cause known: none named
    ({'rc': 7, 'stdout': 'out', 'stderr': 'unmunge:  odd\n failure'},
     record('fail', 'a credential made on gpu-01 does not decode on ctl: unmunge rc 7: unmunge: odd failure')),
    ({'rc': 7, 'stdout': 'only  stdout', 'stderr': None},
     record('fail', 'a credential made on gpu-01 does not decode on ctl: unmunge rc 7: only stdout')),
    ({'rc': 7}, record('fail', 'a credential made on gpu-01 does not decode on ctl: unmunge rc 7: no output')),
])
def test_cross_record_whole(result, expected):
    assert vm.cross_record('gpu-01', 'ctl', result) == expected


def test_made_record_whole():
    assert vm.made_record('gpu-01', 'ctl', 'munge -n on gpu-01 printed no credential') == record(
        'fail', 'munge -n on gpu-01 printed no credential, so ctl could not decode it', hosts=['gpu-01'])
    assert vm.pair_name('a', 'b') == 'a->b'
