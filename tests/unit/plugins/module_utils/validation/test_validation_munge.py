# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""munge across nodes (_validation_munge): each pair's record, the cause of a failed decode, and bad input."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _validation_munge as vm

CRED = 'MUNGE:AwQFAAB1Ze1rRv0tR4sFOGLQUx8Kj3eB0rVgU0gQ4b3o=:'
DECODED = ('STATUS:          Success (0)\nENCODE_HOST:     gpu-01 (10.89.43.11)\nENCODE_TIME:     2025-01-31 08:00:00 +0000 (1738310400)\n'
           'DECODE_TIME:     2025-01-31 08:00:00 +0000 (1738310400)\nTTL:             300\nCIPHER:          aes128 (4)\nMAC:             sha256 (5)\n'
           'ZIP:             none (0)\nUID:             root (0)\nGID:             root (0)\nLENGTH:          0\n')


@pytest.mark.parametrize('result, status, fragments', [
    ({'rc': 0, 'stdout': DECODED, 'stderr': ''}, 'pass', ['a credential made on gpu-01 (ENCODE_HOST gpu-01) decodes on ctl', 'share one munge key']),
    # another key on the decoder: unmunge says Invalid credential
    ({'rc': 6, 'stdout': '', 'stderr': 'unmunge: Error: Invalid credential\n'}, 'fail',
     ['a credential made on gpu-01 does not decode on ctl: unmunge rc 6: unmunge: Error: Invalid credential',
      'do not share one munge key', 'munge_key_src']),
    ({'rc': 15, 'stdout': 'STATUS:          Expired credential (15)\n', 'stderr': ''}, 'fail',
     ['unmunge rc 15: Expired credential', 'clocks of the two nodes differ', 'NTP']),
    ({'rc': 16, 'stdout': '', 'stderr': 'unmunge: Error: Rewound credential\n'}, 'fail', ["the maker's clock is ahead"]),
    ({'rc': 1, 'stdout': '', 'stderr': 'unmunge: Error: Failed to access "/run/munge/munge.socket.2": No such file or directory\n'}, 'fail',
     ['munged does not answer on the decoding node']),
    ({'rc': None, 'stdout': '', 'stderr': "[Errno 2] No such file or directory: b'unmunge'"}, 'fail', ['unmunge rc None', 'unmunge is not installed']),
    # rc 0 but a status other than Success: not a pass
    ({'rc': 0, 'stdout': 'STATUS:          Replayed credential (17)\n', 'stderr': ''}, 'fail', ['Replayed credential', 'decoded on this node before']),
    ({'rc': 3, 'stdout': '', 'stderr': ''}, 'fail', ['unmunge rc 3: no output']),
])
def test_cross_record(result, status, fragments):
    record = vm.cross_record('gpu-01', 'ctl', result)
    assert (record['stage'], record['node'], record['check'], record['status'], record['hosts']) == (
        'node', 'gpu-01->ctl', 'munge_cross', status, ['gpu-01', 'ctl'])
    for fragment in fragments:
        assert fragment in record['reason'], (fragment, record['reason'])


@pytest.mark.parametrize('item, problem', [
    ({'node': 'gpu-01', 'credential': CRED, 'rc': 0}, None),
    ({'node': 'gpu-01', 'credential': CRED + '\n', 'rc': '0'}, None),
    ({'node': 'gpu-01', 'credential': '', 'rc': 1, 'error': 'munge: Error: Unable to access "/run/munge/munge.socket.2"'},
     'munge -n failed on gpu-01 (rc 1): munge: Error: Unable to access "/run/munge/munge.socket.2"'),
    ({'node': 'gpu-01', 'credential': '', 'rc': 0}, 'munge -n on gpu-01 printed no credential'),
    ({'node': 'gpu-01', 'credential': None}, 'munge -n on gpu-01 printed no credential'),
    ({'node': 'gpu-01', 'credential': 'hello', 'rc': 0}, "munge -n on gpu-01 printed 'hello', not a credential (MUNGE:...:)"),
])
def test_made_problem(item, problem):
    assert vm.made_problem(item) == problem


def test_made_record_names_the_maker():
    record = vm.made_record('gpu-01', 'ctl', 'munge -n failed on gpu-01 (rc 1): x')
    assert record['hosts'] == ['gpu-01'] and record['status'] == 'fail' and record['reason'].endswith('so ctl could not decode it')


@pytest.mark.parametrize('params, fragments', [
    ({'node': 'gpu 01', 'unmunge': 'unmunge', 'credentials': []}, ["node is 'gpu 01'", 'the Slurm node name of this host']),
    ({'node': 'ctl', 'unmunge': '-x', 'credentials': []}, ["unmunge is '-x'", 'the unmunge command or its path']),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': ['MUNGE:x:']}, ["credentials[0] is 'MUNGE:x:'", 'a dict with keys node, credential, rc, error']),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': [{'credential': CRED}]}, ['credentials[0]', 'node']),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': [{'node': 'gpu-01', 'cred': CRED}]}, ['credentials[0]', 'cred']),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': [{'node': 'gpu-01', 'credential': 5}]}, ['credentials[0].credential is 5', 'a string']),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': [{'node': 'gpu-01', 'credential': CRED, 'rc': 'zero'}]},
     ["credentials[0].rc is 'zero', expected the exit code of munge -n (a whole number) or null"]),
    ({'node': 'ctl', 'unmunge': 'unmunge', 'credentials': [{'node': 'gpu-01', 'credential': CRED, 'rc': True}]}, ['credentials[0].rc is True']),
])
def test_check_munge_input(params, fragments):
    with pytest.raises(InputError) as err:
        vm.check_munge_input(params)
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))
