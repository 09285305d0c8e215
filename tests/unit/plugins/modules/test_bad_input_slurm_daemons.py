# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_daemons refuses daemon names that are not systemd unit names before systemctl runs, and never passes a
name to systemctl where it could be read as an option (``-Hroot@host`` would make systemctl ssh to that host).

Each bad case asserts: the module failed, the message names the option, the item, the value and what is
valid, run_command was never called, and nothing under the test directory changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import slurm_daemons
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, run_module, snapshot

UNIT = 'a systemd unit name such as "slurmd" or "slurmd.service"'

CASES = [
    ('ssh-host-option', ['-Hroot@host'], ["daemons[0] is '-Hroot@host'", UNIT, 'not starting with "-"']),
    ('user-option', ['--user'], ["daemons[0] is '--user'", UNIT]),
    ('option-after-valid', ['slurmd', '--no-pager'], ["daemons[1] is '--no-pager'", UNIT]),
    ('option-with-suffix', ['-Hroot@host.service'], ["daemons[0] is '-Hroot@host.service'", UNIT]),
    ('dash', ['-'], ["daemons[0] is '-'", UNIT]),
    ('empty', [''], ["daemons[0] is ''", UNIT]),
    ('blank', ['  '], ["daemons[0] is '  '", UNIT]),
    ('space', ['slurm d'], ["daemons[0] is 'slurm d'", UNIT]),
    ('trailing-newline', ['slurmd\n'], ["daemons[0] is 'slurmd\\n'", UNIT]),
    ('nul', ['slurmd\x00'], ["daemons[0] is 'slurmd\\x00'", UNIT]),
    ('shell', ['slurmd;reboot'], ["daemons[0] is 'slurmd;reboot'", UNIT]),
    ('command-substitution', ['$(reboot)'], ["daemons[0] is '$(reboot)'", UNIT]),
    ('path', ['../slurmd'], ["daemons[0] is '../slurmd'", UNIT]),
    ('glob', ['slurm*'], ["daemons[0] is 'slurm*'", UNIT]),
    ('only-suffix', ['.service'], ["daemons[0] is '.service'", UNIT]),
    ('leading-at', ['@slurmd'], ["daemons[0] is '@slurmd'", UNIT]),
    ('too-long', ['s' * 300], ["daemons[0] is 'sss", UNIT, 'at most 256 characters']),
    ('comma-string', 'slurmd,--user', ["daemons[1] is '--user'", UNIT]),
    ('no-daemons', [], ['daemons is [], expected at least one', UNIT]),
]


@pytest.fixture
def systemctl(monkeypatch):
    """run_command recorded; it answers ``systemctl show`` for the units after ``--`` (none running)."""
    calls = []

    def run_command(self, args, **kwargs):
        calls.append(list(args))
        units = args[args.index('--') + 1:] if '--' in args else []
        return 0, '\n\n'.join('MainPID=0\nId=%s' % unit for unit in units) + '\n', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check'])
@pytest.mark.parametrize('daemons, fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error(systemctl, tmp_path, monkeypatch, daemons, fragments, check_mode):
    (tmp_path / 'etc').mkdir()
    (tmp_path / 'etc' / 'slurm.conf').write_text('ClusterName=c\n')
    monkeypatch.chdir(str(tmp_path))
    before = snapshot(str(tmp_path))
    outcome = bad_input(slurm_daemons.main, {'daemons': daemons}, *fragments, check_mode=check_mode)
    assert 'daemons' not in outcome.result and 'replaced' not in outcome.result
    assert systemctl == []
    assert snapshot(str(tmp_path)) == before


@pytest.mark.parametrize('name', ['-Hroot@host', '--user', '-M', '--kill-whom=all', '-slurmd.service', '--', '-'])
def test_a_name_starting_with_a_dash_never_reaches_systemctl_as_an_option(systemctl, name):
    for daemons in ([name], ['slurmd', name], [name, 'slurmdbd']):
        outcome = run_module(slurm_daemons.main, {'daemons': daemons})
        assert outcome.failed, outcome.result
    for argv in systemctl:  # none ran; had one run, its only options would be the module's own, the units after "--"
        assert (argv[:argv.index('--')] if '--' in argv else argv) == ['systemctl', 'show', '--property=Id,MainPID'], argv
    assert systemctl == []


def test_the_units_come_after_a_double_dash(systemctl):
    outcome = run_module(slurm_daemons.main, {'daemons': ['slurmdbd', 'slurmctld.service', 'slurmd', 'slurmd.service', 'munge', 'getty@tty1']})
    assert not outcome.failed, outcome.result
    assert systemctl == [['systemctl', 'show', '--property=Id,MainPID', '--',
                          'slurmdbd.service', 'slurmctld.service', 'slurmd.service', 'munge.service', 'getty@tty1.service']]
    assert sorted(outcome.result['daemons']) == ['getty@tty1', 'munge', 'slurmctld', 'slurmd', 'slurmdbd']
    assert outcome.result['replaced'] == []


def test_the_default_daemons(systemctl):
    outcome = run_module(slurm_daemons.main, {})
    assert not outcome.failed, outcome.result
    assert systemctl[0][3:] == ['--', 'slurmdbd.service', 'slurmctld.service', 'slurmd.service']


def test_there_are_enough_cases():
    assert len(CASES) >= 15
    assert len(set(c[0] for c in CASES)) == len(CASES)


# the pending-restart options: checked before systemctl runs or a marker is read or removed
OPTION_CASES = [
    ('dir-relative', {'pending_dir': 'pending'}, ["pending_dir is 'pending'", 'an absolute path']),
    ('dir-nul', {'pending_dir': '/var/lib/x\x00'}, ["pending_dir is '/var/lib/x\\x00'", 'without control characters']),
    ('dir-newline', {'pending_dir': '/var/lib/x\ny'}, ['pending_dir is', 'without control characters']),
    ('dir-dotdot', {'pending_dir': '/var/../etc'}, ["pending_dir is '/var/../etc'", '".."']),
    ('dir-empty', {'pending_dir': ''}, ["pending_dir is ''", 'an absolute path']),
    ('reconfigured-option', {'reconfigured': ['--user']}, ["reconfigured[0] is '--user'", 'a systemd unit name such as "slurmctld"']),
    ('reconfigured-shell', {'reconfigured': ['slurmctld;reboot']}, ["reconfigured[0] is 'slurmctld;reboot'", 'systemd unit name']),
    ('reconfigured-empty', {'reconfigured': ['']}, ["reconfigured[0] is ''", 'systemd unit name']),
]


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check'])
@pytest.mark.parametrize('args, fragments', [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES])
def test_bad_pending_options_are_one_clear_error(systemctl, tmp_path, args, fragments, check_mode):
    (tmp_path / 'pending').mkdir()
    (tmp_path / 'pending' / 'slurmd.json').write_text('{}')
    before = snapshot(str(tmp_path))
    args = dict({'daemons': ['slurmd'], 'settle': True, 'fail_pending': True}, **args)
    outcome = bad_input(slurm_daemons.main, args, *fragments, check_mode=check_mode)
    assert 'pending' not in outcome.result and systemctl == []
    assert snapshot(str(tmp_path)) == before
