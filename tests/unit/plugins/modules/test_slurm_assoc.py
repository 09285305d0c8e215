# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_assoc as Ansible runs it, against a transcript of real sacctmgr answers.

The module's ``run_command`` answers from a table: the read commands return
output captured from Slurm 22.05.8's sacctmgr (the REAL fixture of
test_sacctmgr.py), and every write command must be exactly the one listed,
in order, with the rc and text the real sacctmgr gave.  A command that is
not in the table fails the test.  The end-to-end runs against a real
slurmdbd are in molecule/accounting.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _sacctmgr as acct
from ansible_collections.gpucluster.bringup.plugins.modules import slurm_assoc

from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.slurm.test_sacctmgr import REAL, SPEC, spec_with

SACCTMGR = '/usr/bin/sacctmgr'
READS = dict((tuple(argv), name) for name, argv in acct.read_commands('probe').items())


class Transcript(object):
    """run_command answers: reads from ``self.outputs``, writes from the ``writes`` list, in order."""

    def __init__(self, writes=(), outputs=None, after=None, fail_read=None):
        self.outputs = dict(outputs or REAL)
        self.after = after
        self.writes = list(writes)
        self.fail_read = fail_read
        self.ran = []

    def __call__(self, module, args, **kwargs):
        assert args[0] == SACCTMGR, args
        argv = tuple(args[1:])
        if argv in READS:
            name = READS[argv]
            if name == self.fail_read:
                return 1, '', 'sacctmgr: error: Problem talking to the database: Connection refused'
            return 0, self.outputs[name], ''
        self.ran.append(list(argv))
        assert self.writes, 'unexpected command %r' % (argv,)
        expected, rc, out, err = self.writes.pop(0)
        assert list(argv) == ['-i'] + expected.split(' ') if isinstance(expected, str) else expected, argv
        if not self.writes and self.after is not None:
            self.outputs.update(self.after)
        return rc, out, err


def run(monkeypatch, capsys, transcript, check_mode=False, diff=False, **args):
    def run_command(module, command, **kwargs):
        return transcript(module, command, **kwargs)

    monkeypatch.setattr(AnsibleModule, 'run_command', run_command)
    args.setdefault('cluster', 'probe')
    args.setdefault('executable', SACCTMGR)
    if check_mode:
        args['_ansible_check_mode'] = True
    if diff:
        args['_ansible_diff'] = True
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            slurm_assoc.main()
    return json.loads(capsys.readouterr().out)


def test_the_inventory_already_applied_changes_nothing(monkeypatch, capsys):
    transcript = Transcript()
    result = run(monkeypatch, capsys, transcript, **SPEC)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    assert result['actions'] == []
    assert transcript.ran == []
    assert result['accounting']['qos']['gpu8']['MaxTRESPerUser'] == 'gres/gpu=4'


def test_a_changed_limit_is_applied_then_read_back(monkeypatch, capsys):
    after_qos = REAL['qos'].replace('gpu8|eight gpus per user||00:00:00||cluster|1.000000||gres/gpu=4|',
                                    'gpu8|eight gpus per user||00:00:00||cluster|1.000000||gres/gpu=8|')
    transcript = Transcript(writes=[('modify qos where name=gpu8 set MaxTRESPerUser=gres/gpu=8', 0, ' Modified qos...\n  gpu8\n', '')],
                            after={'qos': after_qos})
    spec = spec_with(qos=[{'name': 'gpu8', 'MaxTRESPerUser': 'gres/gpu=8', 'Priority': 10}])
    result = run(monkeypatch, capsys, transcript, diff=True, **spec)
    assert result.get('failed') is not True, result
    assert result['changed'] is True
    assert result['actions'] == [{'command': ['sacctmgr', '-i', 'modify', 'qos', 'where', 'name=gpu8', 'set', 'MaxTRESPerUser=gres/gpu=8'],
                                  'summary': 'modify QOS gpu8: MaxTRESPerUser gres/gpu=4 -> gres/gpu=8'}]
    assert result['diff']['before']['qos']['gpu8']['MaxTRESPerUser'] == 'gres/gpu=4'
    assert result['diff']['after']['qos']['gpu8']['MaxTRESPerUser'] == 'gres/gpu=8'
    assert transcript.writes == []


def test_check_mode_runs_no_write(monkeypatch, capsys):
    transcript = Transcript()
    result = run(monkeypatch, capsys, transcript, check_mode=True, diff=True,
                 users=[{'name': 'dave', 'accounts': ['ml']}], qos=[{'name': 'gpu8', 'state': 'absent'}])
    assert result['changed'] is True
    assert [a['summary'] for a in result['actions']] == ['add user dave to account ml', 'remove QOS gpu8']
    assert transcript.ran == []
    assert 'gpu8' not in result['diff']['after']['qos']
    assert result['diff']['after']['users']['dave']['DefaultAccount'] == 'ml'


def test_module_level_state_absent_removes_the_listed(monkeypatch, capsys):
    transcript = Transcript(writes=[('delete user where name=carol cluster=probe', 0, ' Deleting users...\n  carol\n', '')],
                            after={'assoc': '\n'.join(l for l in REAL['assoc'].splitlines() if '|carol|' not in l) + '\n',
                                   'user': 'alice|ml|Operator\nroot|root|Administrator\n'})
    result = run(monkeypatch, capsys, transcript, state='absent', users=[{'name': 'carol'}])
    assert result.get('failed') is not True, result
    assert result['changed'] is True
    assert 'carol' not in result['accounting']['users']


def test_sacctmgr_not_found(monkeypatch, capsys):
    monkeypatch.setattr(AnsibleModule, 'get_bin_path', lambda self, name, required=False, opt_dirs=None: None)
    result = run(monkeypatch, capsys, Transcript(), executable='sacctmgr')
    assert result['failed'] is True
    assert result['msg'] == ('the sacctmgr command "sacctmgr" was not found in PATH; install the Slurm client '
                             '(Debian: slurm-client) on this host or set executable')


def test_slurmdbd_unreachable(monkeypatch, capsys):
    result = run(monkeypatch, capsys, Transcript(fail_read='cluster'))
    assert result['failed'] is True
    assert result['msg'] == ('cannot read the accounting database: "sacctmgr --parsable2 --noheader show cluster format=Cluster" '
                             'failed (rc=1): sacctmgr: error: Problem talking to the database: Connection refused; is slurmdbd '
                             'running and reachable (AccountingStorageHost in slurm.conf, munge)?')


def test_unparsable_output(monkeypatch, capsys):
    result = run(monkeypatch, capsys, Transcript(outputs=dict(REAL, account='ml|ml\n')))
    assert result['failed'] is True
    assert result['msg'] == ("cannot parse sacctmgr output: sacctmgr output line 1 has 2 fields, expected 3 "
                             "(Account,Description,Organization): 'ml|ml'")


def test_bad_inventory(monkeypatch, capsys):
    result = run(monkeypatch, capsys, Transcript(), qos=[{'name': 'gpu8', 'MaxGPUs': 8}])
    assert result['failed'] is True
    assert result['msg'].startswith("QOS gpu8: unknown setting 'MaxGPUs'; valid settings: Description, Flags, ")


def test_unknown_tres_stops_before_any_change(monkeypatch, capsys):
    transcript = Transcript()
    result = run(monkeypatch, capsys, transcript, qos=[{'name': 'a100', 'MaxTRESPerUser': 'gres/gpu:a100=8'}],
                 users=[{'name': 'dave', 'accounts': ['ml']}])
    assert result['failed'] is True
    assert result['msg'].startswith('slurmdbd knows no TRES gres/gpu:a100 (it knows billing, cpu, ')
    assert result['problems'] == [result['msg']]
    assert transcript.ran == []


def test_a_failing_command_names_itself_and_what_was_done(monkeypatch, capsys):
    transcript = Transcript(writes=[
        ('add qos gold', 0, ' Adding QOS(s)\n  gold\n', ''),
        ('add user dave Account=ml Cluster=probe DefaultAccount=ml QOS=gold', 1, '',
         "sacctmgr: error: You gave a bad qos 'gold'. Valid QOS's are normal,gpu8,interactive,q2"),
    ])
    result = run(monkeypatch, capsys, transcript, qos=[{'name': 'gold'}], users=[{'name': 'dave', 'accounts': ['ml'], 'QOS': ['gold']}])
    assert result['failed'] is True
    assert result['msg'] == ('"sacctmgr -i add user dave Account=ml Cluster=probe DefaultAccount=ml QOS=gold" failed (rc=1): '
                             "sacctmgr: error: You gave a bad qos 'gold'. Valid QOS's are normal,gpu8,interactive,q2 "
                             'while trying to add user dave to account ml')
    assert [a['summary'] for a in result['actions']] == ['add QOS gold']


def test_a_setting_sacctmgr_ignored_is_reported(monkeypatch, capsys):
    transcript = Transcript(writes=[('modify user where name=carol cluster=probe set AdminLevel=none', 0, ' Modified users...\n', '')],
                            after={})
    result = run(monkeypatch, capsys, transcript, users=[{'name': 'carol', 'accounts': ['ml'], 'admin_level': 'none'}])
    assert result['failed'] is True
    assert result['msg'] == 'sacctmgr accepted the changes but these still differ: modify user carol: AdminLevel operator -> none'


class FailsAfterWriting(Transcript):
    """slurmdbd goes away after the first write."""

    def __call__(self, module, args, **kwargs):
        if self.ran and tuple(args[1:]) in READS:
            return 1, '', 'sacctmgr: error: slurmdbd: Connection refused'
        return Transcript.__call__(self, module, args, **kwargs)


def test_reading_back_fails(monkeypatch, capsys):
    transcript = FailsAfterWriting(writes=[('modify user where name=carol cluster=probe set AdminLevel=none', 0, '', '')])
    result = run(monkeypatch, capsys, transcript, users=[{'name': 'carol', 'accounts': ['ml'], 'admin_level': 'none'}])
    assert result['failed'] is True
    assert result['msg'] == ('the changes were made but reading them back failed: "sacctmgr --parsable2 --noheader show cluster '
                             'format=Cluster" failed (rc=1): sacctmgr: error: slurmdbd: Connection refused')
    assert [a['summary'] for a in result['actions']] == ['modify user carol: AdminLevel operator -> none']
