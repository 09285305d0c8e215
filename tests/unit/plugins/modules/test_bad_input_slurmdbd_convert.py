# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurmdbd_convert refuses bad input with one message, in a real run and in check mode, before slurmdbd starts.

Each case asserts: the module failed, the message names the option, the bad value and what is valid,
no process was started (the foreground runner, subprocess.Popen and run_command are recorded), and
nothing under the test directory (the stand-in program and its decoys) changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import subprocess

import pytest

from ansible.module_utils import basic

from ansible_collections.gpucluster.bringup.plugins.modules import slurmdbd_convert
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, run_module, snapshot

USER = pwd.getpwuid(os.getuid()).pw_name
PROGRAM = 'the absolute path of the slurmdbd program (an executable regular file)'
SECONDS = 'a whole number of seconds between 1 and 86400'

# (id, arguments ({tmp} is the test directory; executable defaults to the stand-in {tmp}/slurmdbd), fragments)
CASES = [
    # executable
    ('exe-directory', {'executable': '{tmp}'}, ["executable is '{tmp}'", 'a directory', PROGRAM]),
    ('exe-proc', {'executable': '/proc'}, ["executable is '/proc'", 'under /proc', PROGRAM]),
    ('exe-proc-self', {'executable': '/proc/self/exe'}, ["executable is '/proc/self/exe'", 'under /proc', PROGRAM]),
    ('exe-sys', {'executable': '/sys/kernel'}, ["executable is '/sys/kernel'", 'under /sys']),
    ('exe-relative', {'executable': 'slurmdbd'}, ["executable is 'slurmdbd'", PROGRAM]),
    ('exe-empty', {'executable': ''}, ["executable is ''", PROGRAM]),
    ('exe-missing', {'executable': '{tmp}/sbin/slurmdbd'}, ["executable is '{tmp}/sbin/slurmdbd'", 'does not exist', 'install slurmdbd']),
    ('exe-not-executable', {'executable': '{tmp}/plain'}, ["executable is '{tmp}/plain'", 'not executable', PROGRAM]),
    ('exe-fifo', {'executable': '{tmp}/fifo'}, ["executable is '{tmp}/fifo'", 'not a regular file', PROGRAM]),
    ('exe-device', {'executable': '/dev/null'}, ["executable is '/dev/null'", 'not a regular file', PROGRAM]),
    ('exe-nul', {'executable': '{tmp}/slurm\x00dbd'}, ['executable is', PROGRAM]),
    # user
    ('user-empty', {'user': ''}, ["user is ''", 'the name of an existing user']),
    ('user-blank', {'user': '  '}, ["user is '  '", 'the name of an existing user']),
    ('user-unknown', {'user': 'no-such-user-zz'}, ["user is 'no-such-user-zz'", 'does not exist on this host', 'SlurmUser']),
    ('user-nul', {'user': 'slurm\x00'}, ["user is 'slurm\\x00'", 'the name of an existing user']),
    ('user-option', {'user': '-slurm'}, ["user is '-slurm'", 'the name of an existing user']),
    # timeout
    ('timeout-zero', {'timeout': 0}, ['timeout is 0', SECONDS]),
    ('timeout-negative', {'timeout': -5}, ['timeout is -5', SECONDS]),
    ('timeout-huge', {'timeout': 10 ** 20}, ['timeout is 100000000000000000000', SECONDS]),
    ('timeout-over-a-day', {'timeout': 86401}, ['timeout is 86401', SECONDS]),
    ('timeout-text', {'timeout': 'soon'}, ["argument 'timeout' is of type", 'soon', 'int']),
    # output_lines
    ('output-negative', {'output_lines': -1}, ['output_lines is -1', 'a whole number between 0 and 100000']),
    ('output-huge', {'output_lines': 10 ** 9}, ['output_lines is 1000000000', 'a whole number between 0 and 100000']),
]


@pytest.fixture
def host(tmp_path, monkeypatch):
    tmp = tmp_path / 'host'
    tmp.mkdir()
    flag = tmp_path / 'ran'
    (tmp / 'slurmdbd').write_text('#!/bin/sh\ntouch %s\necho "slurmdbd: slurmdbd version 26.05.5 started"\n' % flag)
    (tmp / 'slurmdbd').chmod(0o755)
    (tmp / 'plain').write_text('#!/bin/sh\ntouch %s\n' % flag)
    (tmp / 'plain').chmod(0o644)
    os.mkfifo(str(tmp / 'fifo'))
    started = []

    def record(*args, **kwargs):
        started.append(args)
        raise AssertionError('slurmdbd_convert started %r on bad input' % (args,))
    monkeypatch.setattr(slurmdbd_convert, 'run_foreground', record)
    monkeypatch.setattr(subprocess, 'Popen', record)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda self, args, **kwargs: record(args))
    return {'tmp': str(tmp), 'started': started, 'flag': flag}


def _fill(value, tmp):
    return value.replace('{tmp}', tmp) if isinstance(value, str) else value


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check'])
@pytest.mark.parametrize('options, fragments', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error(host, options, fragments, check_mode):
    tmp = host['tmp']
    args = {'executable': tmp + '/slurmdbd', 'user': USER, 'timeout': 60}
    args.update(dict((key, _fill(value, tmp)) for key, value in options.items()))
    before = snapshot(tmp)
    outcome = bad_input(slurmdbd_convert.main, args, *[_fill(f, tmp) for f in fragments], check_mode=check_mode)
    assert not outcome.result.get('changed') and 'output' not in outcome.result, outcome.result
    assert host['started'] == []
    assert not host['flag'].exists()
    assert snapshot(tmp) == before


def test_the_defaults_of_the_cases_are_valid(host):
    """With the cases' defaults (and the limits of the ranges) check mode passes: the cases fail for their one bad value."""
    for extra in ({'timeout': 1, 'output_lines': 100000}, {'timeout': 86400, 'output_lines': 0}):
        args = dict({'executable': host['tmp'] + '/slurmdbd', 'user': USER}, **extra)
        outcome = run_module(slurmdbd_convert.main, args, check_mode=True)
        assert not outcome.failed and outcome.result['changed'] is True, outcome.result
    assert host['started'] == [] and not host['flag'].exists()


@pytest.mark.skipif(os.getuid() != 0, reason='only root can switch to another user')
def test_a_program_the_user_cannot_execute_is_refused(host):
    exe = os.path.join(host['tmp'], 'slurmdbd')
    os.chmod(exe, 0o700)
    before = snapshot(host['tmp'])
    bad_input(slurmdbd_convert.main, {'executable': exe, 'user': 'nobody'},
              "executable is '%s'" % exe, "user 'nobody' may not execute it", PROGRAM)
    assert host['started'] == [] and snapshot(host['tmp']) == before


@pytest.mark.skipif(os.getuid() == 0, reason='root may switch to any user')
def test_another_user_needs_root(host):
    bad_input(slurmdbd_convert.main, {'executable': os.path.join(host['tmp'], 'slurmdbd'), 'user': 'root'},
              "user is 'root'", 'cannot switch to that user')
    assert host['started'] == []


def test_there_are_enough_cases():
    assert len(CASES) >= 15
    assert len(set(c[0] for c in CASES)) == len(CASES)
