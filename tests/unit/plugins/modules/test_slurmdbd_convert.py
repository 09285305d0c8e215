# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmdbd_convert against STAND-IN slurmdbd programs (shell scripts printing what the real one prints).

The real slurmdbd converting a real database runs in scripts/upgrade-test.sh (docs/slurm-upgrade.md);
here the module's process handling is checked: it stops the program once it says it started, reports
the error lines of a program that exits, and kills one that runs past the timeout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import subprocess
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurmdbd_run import check_params
from ansible_collections.gpucluster.bringup.plugins.modules import slurmdbd_convert
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, run_module

USER = pwd.getpwuid(os.getuid()).pw_name


def _standin(tmp_path, body):
    path = tmp_path / 'slurmdbd'
    path.write_text('#!/bin/sh\n' + body)
    path.chmod(0o755)
    return str(path)


def _marker():
    # a sleep with a duration no other process has: found again with pgrep
    return '%d.%06d' % (300 + os.getpid() % 100, int(time.time() * 1e6) % 1000000)


def _running(marker):
    return subprocess.run(['pgrep', '-f', 'sleep %s' % marker], stdout=subprocess.PIPE, check=False).returncode == 0


def test_ready_stops_the_program_and_reports_the_conversion(tmp_path):
    marker = _marker()
    exe = _standin(tmp_path, 'echo "slurmdbd: accounting_storage/as_mysql: pre-converting job table for gpucluster"\n'
                             'echo "slurmdbd: Conversion done: success!" >&2\n'
                             'echo "slurmdbd: slurmdbd version 26.05.5 started"\n'
                             'exec sleep %s\n' % marker)
    outcome = run_module(slurmdbd_convert.main, {'executable': exe, 'user': USER, 'timeout': 60})
    assert not outcome.failed, outcome.result
    assert outcome.result['changed'] is True
    assert outcome.msg == 'slurmdbd changed the database schema (2 lines of output about it) and started'
    assert outcome.result['conversion'] == ['slurmdbd: accounting_storage/as_mysql: pre-converting job table for gpucluster',
                                            'slurmdbd: Conversion done: success!']
    assert outcome.result['output'][-1] == 'slurmdbd: slurmdbd version 26.05.5 started'
    time.sleep(0.2)
    assert not _running(marker), 'the foreground slurmdbd was left running'


def test_exit_before_ready_fails_naming_the_errors(tmp_path):
    exe = _standin(tmp_path, 'echo "slurmdbd: error: Database schema is too old for this version of Slurm to upgrade."\n'
                             'echo "slurmdbd: fatal: Unable to initialize accounting_storage/as_mysql accounting storage plugin"\n'
                             'exit 1\n')
    outcome = run_module(slurmdbd_convert.main, {'executable': exe, 'user': USER, 'timeout': 60})
    assert outcome.failed
    assert outcome.msg.startswith('slurmdbd exited with code 1 before it was ready: error: Database schema is too old')
    assert len(outcome.result['errors']) == 2


def test_timeout_kills_the_program(tmp_path):
    marker = _marker()
    exe = _standin(tmp_path, 'echo "slurmdbd: pre-converting job table"\nexec sleep %s\n' % marker)
    start = time.monotonic()
    outcome = run_module(slurmdbd_convert.main, {'executable': exe, 'user': USER, 'timeout': 2})
    assert outcome.failed
    assert 'did not finish' in outcome.msg
    assert time.monotonic() - start < 30
    time.sleep(0.2)
    assert not _running(marker)


def test_check_mode_runs_nothing(tmp_path):
    flag = tmp_path / 'ran'
    exe = _standin(tmp_path, 'touch %s\n' % flag)
    outcome = run_module(slurmdbd_convert.main, {'executable': exe, 'user': USER}, check_mode=True)
    assert outcome.result['changed'] is True
    assert not flag.exists()


def test_bad_input(tmp_path):
    bad_input(slurmdbd_convert.main, {'executable': '/nonexistent/slurmdbd', 'user': USER},
              "executable is '/nonexistent/slurmdbd', which does not exist: install slurmdbd, or name it here")
    bad_input(slurmdbd_convert.main, {'user': 'no-such-user-zz'}, "user is 'no-such-user-zz', which does not exist on this host")
    bad_input(slurmdbd_convert.main, {'timeout': 0, 'user': USER}, 'timeout is 0, expected a whole number of seconds between 1 and 86400')


def test_a_file_the_kernel_cannot_run_is_a_clear_failure(tmp_path):
    """Executable bits on a file that is no program (no "#!", not ELF): the start fails, named, never a traceback."""
    path = tmp_path / 'slurmdbd'
    path.write_bytes(b'\x00\x01not a program\n')
    path.chmod(0o755)
    outcome = run_module(slurmdbd_convert.main, {'executable': str(path), 'user': USER, 'timeout': 5})
    assert outcome.failed and 'output' not in outcome.result
    assert outcome.msg.startswith('executable %s could not be started as %s: ' % (path, USER)), outcome.msg
    assert outcome.msg.endswith('; expected the slurmdbd program')


def test_only_root_switches_to_another_user(tmp_path):
    exe = _standin(tmp_path, 'exit 0\n')
    other = 'root' if os.getuid() != 0 else 'nobody'
    args = {'executable': exe, 'user': other, 'timeout': 60, 'output_lines': 60}
    with pytest.raises(InputError, match=r"^user is '%s', but this module runs as uid 4242 and cannot switch to that user" % other):
        check_params(args, euid=4242)
    assert check_params(dict(args, user=USER), euid=os.getuid())['user'] == USER


@pytest.mark.skipif(os.getuid() != 0, reason='needs root: the file is root\'s and the other user is nobody')
@pytest.mark.parametrize('mode, user, runs', [
    (0o700, 'root', True),    # root may run a file with any execute bit
    (0o610, 'root', True),
    (0o601, 'root', True),
    (0o644, 'root', False),   # and none without one
    (0o750, 'nobody', False),  # another user, not in root's group: the "other" bit decides
    (0o701, 'nobody', True),
    (0o710, 'nobody', False),
])
def test_the_program_must_be_executable_by_the_user_that_runs_it(tmp_path, mode, user, runs):
    path = tmp_path / 'slurmdbd'
    path.write_text('#!/bin/sh\nexit 0\n')
    path.chmod(mode)
    args = {'executable': str(path), 'user': user, 'timeout': 60, 'output_lines': 60}
    if runs:
        assert check_params(args, euid=0)['executable'] == str(path)
        return
    with pytest.raises(InputError) as err:
        check_params(args, euid=0)
    assert str(err.value) == ("executable is '%s', which is not executable: user '%s' may not execute it; expected the absolute "
                              "path of the slurmdbd program (an executable regular file)" % (path, user))
