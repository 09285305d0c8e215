# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""validation_munge: bad input fails before unmunge runs, naming the option, the value and what is valid; good input decodes
each credential once (one record per pair) and a missing unmunge gives a failed record, not a crash."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import validation_munge
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, run_module, snapshot

CRED = 'MUNGE:AwQFAAB1Ze1rRv0tR4sFOGLQUx8Kj3eB0rVgU0gQ4b3o=:'

CASES = [
    ({'node': 'gpu 01'}, ["node is 'gpu 01'", 'the Slurm node name of this host']),
    ({'node': '-ctl'}, ["node is '-ctl'", 'the Slurm node name of this host']),
    ({'node': None}, ['node']),
    ({'unmunge': '/usr/bin/un munge'}, ["unmunge is '/usr/bin/un munge'", 'one word']),
    ({'credentials': ['MUNGE:x:']}, ["option 'credentials' is of type str", 'convert to dict']),
    ({'credentials': [{'credential': CRED}]}, ['credentials[0]', 'node']),
    ({'credentials': [{'node': 'gpu-01', 'credential': CRED, 'extra': 1}]}, ['credentials[0]', 'extra', 'node, credential, rc, error']),
    ({'credentials': [{'node': 'gpu 01', 'credential': CRED}]}, ["credentials[0].node is 'gpu 01'"]),
    ({'credentials': [{'node': 'gpu-01', 'credential': ['x']}]}, ["credentials[0].credential is ['x']", 'a string']),
    ({'credentials': [{'node': 'gpu-01', 'credential': CRED, 'rc': 'zero'}]}, ["credentials[0].rc is 'zero'", 'a whole number']),
    ({'credentials': [{'node': 'gpu-01', 'credential': CRED, 'rc': [0]}]}, ['credentials[0].rc is [0]']),
    ({'credentials': [{'node': 'gpu-01', 'credential': CRED, 'error': {'a': 1}}]}, ["credentials[0].error is {'a': 1}", 'a string']),
    # a bad entry after a good one: nothing is decoded
    ({'credentials': [{'node': 'gpu-01', 'credential': CRED}, {'node': '', 'credential': CRED}]}, ["credentials[1].node is ''"]),
]


@pytest.mark.parametrize('args, fragments', CASES)
def test_bad_input_runs_nothing(args, fragments, monkeypatch, tmp_path):
    calls = forbid_commands(monkeypatch)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    outcome = bad_input(validation_munge.main, dict({'node': 'ctl'}, **args), *fragments)
    assert outcome.failed and calls == []
    assert snapshot(tmp_path) == before


def test_decodes_each_credential_once_and_names_both_nodes(monkeypatch):
    calls = []

    def run_command(self, args, data=None, **kwargs):
        calls.append((args, data))
        if 'BwQ' in data:
            return 6, '', 'unmunge: Error: Invalid credential\n'
        return 0, 'STATUS:          Success (0)\nENCODE_HOST:     gpu-01 (10.0.0.1)\n', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    good, bad = CRED, CRED.replace('AwQ', 'BwQ')
    outcome = run_module(validation_munge.main, {'node': 'ctl', 'credentials': [
        {'node': 'gpu-01', 'credential': good, 'rc': 0}, {'node': 'gpu-02', 'credential': bad, 'rc': 0},
        {'node': 'gpu-03', 'credential': '', 'rc': 1, 'error': 'munge: Error: socket'}]}, check_mode=True)
    assert not outcome.failed and outcome.result['changed'] is False
    assert calls == [(['unmunge'], good), (['unmunge'], bad)]  # (in check mode too: reads only; gpu-03 made none)
    records = outcome.result['records']
    assert [(r['node'], r['status'], r['hosts']) for r in records] == [
        ('gpu-01->ctl', 'pass', ['gpu-01', 'ctl']), ('gpu-02->ctl', 'fail', ['gpu-02', 'ctl']), ('gpu-03->ctl', 'fail', ['gpu-03'])]
    assert 'do not share one munge key' in records[1]['reason']
    assert records[2]['reason'].startswith('munge -n failed on gpu-03 (rc 1): munge: Error: socket')


def test_a_missing_unmunge_is_a_failed_record_not_a_crash(monkeypatch):
    def run_command(self, args, **kwargs):
        raise OSError(2, 'No such file or directory')
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    outcome = run_module(validation_munge.main, {'node': 'ctl', 'credentials': [{'node': 'gpu-01', 'credential': CRED, 'rc': 0}]})
    assert not outcome.failed
    assert outcome.result['records'][0]['status'] == 'fail' and 'unmunge is not installed' in outcome.result['records'][0]['reason']
