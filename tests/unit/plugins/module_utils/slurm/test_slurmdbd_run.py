# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurmdbd_run on its own: who may execute the program, each refusal of check_params word for word, and
run_foreground against stand-in programs (what it returns for each way a run ends, how it reads the output).

test_slurmdbd_convert.py runs the module around it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import os
import pwd
import stat
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurmdbd_run as run

USER = pwd.getpwuid(os.getuid()).pw_name
PROGRAM = 'expected the absolute path of the slurmdbd program (an executable regular file)'
Info = collections.namedtuple('Info', 'st_mode st_uid st_gid')
Entry = collections.namedtuple('Entry', 'pw_name pw_uid pw_gid')


def _standin(directory, body, name='slurmdbd'):
    path = os.path.join(str(directory), name)
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\n' + body)
    os.chmod(path, 0o755)
    return path


@pytest.mark.parametrize('mode, uid, gid, entry, expected', [
    # root: any one execute bit
    (0o100, 5, 5, Entry('root', 0, 0), True),
    (0o010, 5, 5, Entry('root', 0, 0), True),
    (0o001, 5, 5, Entry('root', 0, 0), True),
    (0o666, 5, 5, Entry('root', 0, 0), False),
    # the owner: only the owner's bit counts
    (0o100, 4242, 5, Entry('nosuchuser-zz', 4242, 4243), True),
    (0o011, 4242, 5, Entry('nosuchuser-zz', 4242, 4243), False),
    # a member of the file's group (its primary group): only the group's bit
    (0o010, 5, 4243, Entry('nosuchuser-zz', 4242, 4243), True),
    (0o101, 5, 4243, Entry('nosuchuser-zz', 4242, 4243), False),
    # anyone else: only the others' bit
    (0o001, 5, 5, Entry('nosuchuser-zz', 4242, 4243), True),
    (0o110, 5, 5, Entry('nosuchuser-zz', 4242, 4243), False),
])
def test_may_execute_takes_the_bit_of_the_class_the_user_is_in(mode, uid, gid, entry, expected):
    assert run._may_execute(Info(stat.S_IFREG | mode, uid, gid), entry) is expected


@pytest.mark.parametrize('error', [OSError, AttributeError])
def test_may_execute_without_a_group_list_takes_the_primary_group(monkeypatch, error):
    def fail(name, gid):
        raise error('no group list')
    monkeypatch.setattr(os, 'getgrouplist', fail)
    entry = Entry('nosuchuser-zz', 4242, 4243)
    assert run._may_execute(Info(stat.S_IFREG | 0o010, 5, 4243), entry) is True
    assert run._may_execute(Info(stat.S_IFREG | 0o001, 5, 4243), entry) is False
    assert run._may_execute(Info(stat.S_IFREG | 0o001, 5, 6), entry) is True


def test_may_execute_reads_the_supplementary_groups(monkeypatch):
    monkeypatch.setattr(os, 'getgrouplist', lambda name, gid: [gid, 777])
    entry = Entry('nosuchuser-zz', 4242, 4243)
    assert run._may_execute(Info(stat.S_IFREG | 0o010, 5, 777), entry) is True
    assert run._may_execute(Info(stat.S_IFREG | 0o001, 5, 777), entry) is False


def test_check_params_returns_the_options_converted(tmp_path):
    exe = _standin(tmp_path, 'exit 0\n')
    params = {'executable': str(tmp_path) + '//sub/../slurmdbd', 'user': USER, 'timeout': '30', 'output_lines': '0', 'other': 'kept'}
    (tmp_path / 'sub').mkdir()
    assert run.check_params(params, euid=os.geteuid()) == {'executable': exe, 'user': USER, 'timeout': 30, 'output_lines': 0,
                                                           'other': 'kept'}


def test_check_params_takes_the_process_euid_by_default(tmp_path):
    exe = _standin(tmp_path, 'exit 0\n')
    params = {'executable': exe, 'user': USER, 'timeout': 86400, 'output_lines': 100000}
    assert run.check_params(params) == params


@pytest.mark.parametrize('change, message', [
    ({'timeout': 86401}, 'timeout is 86401, expected a whole number of seconds between 1 and 86400'),
    ({'timeout': None}, 'timeout is None, expected a whole number of seconds between 1 and 86400'),
    ({'output_lines': -1}, 'output_lines is -1, expected a whole number between 0 and 100000'),
    ({'output_lines': 100001}, 'output_lines is 100001, expected a whole number between 0 and 100000'),
    ({'user': ''}, "user is '', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': None}, 'user is None, expected the name of an existing user (the SlurmUser of slurmdbd.conf)'),
    ({'user': '  '}, "user is '  ', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': ' root'}, "user is ' root', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': 'root '}, "user is 'root ', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': '-root'}, "user is '-root', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': 'ro\x00ot'}, "user is 'ro\\x00ot', expected the name of an existing user (the SlurmUser of slurmdbd.conf)"),
    ({'user': 'no-such-user-zz'}, "user is 'no-such-user-zz', which does not exist on this host; expected the name of an existing "
                                  "user (the SlurmUser of slurmdbd.conf)"),
    ({'executable': None}, 'executable is None, ' + PROGRAM),
    ({'executable': 'slurmdbd'}, "executable is 'slurmdbd', " + PROGRAM),
    ({'executable': '/usr/sbin/slurm\x00dbd'}, "executable is '/usr/sbin/slurm\\x00dbd', " + PROGRAM),
    ({'executable': '/proc'}, "executable is '/proc', which is under /proc, a kernel file system; " + PROGRAM),
    ({'executable': '/proc/self/exe'}, "executable is '/proc/self/exe', which is under /proc, a kernel file system; " + PROGRAM),
    ({'executable': '/sys/x/../kernel'}, "executable is '/sys/x/../kernel', which is under /sys, a kernel file system; " + PROGRAM),
    ({'executable': '/procfs-zz/slurmdbd'}, "executable is '/procfs-zz/slurmdbd', which does not exist: install slurmdbd, "
                                            "or name it here; " + PROGRAM),
    ({'executable': '/'}, "executable is '/', which is a directory; " + PROGRAM),
    ({'executable': '/dev/null'}, "executable is '/dev/null', which is not a regular file; " + PROGRAM),
    ({'executable': '/nonexistent-zz/slurmdbd'}, "executable is '/nonexistent-zz/slurmdbd', which does not exist: install slurmdbd, "
                                                 "or name it here; " + PROGRAM),
])
def test_check_params_refusals(tmp_path, change, message):
    params = dict({'executable': _standin(tmp_path, 'exit 0\n'), 'user': USER, 'timeout': 60, 'output_lines': 60}, **change)
    with pytest.raises(InputError) as err:
        run.check_params(params, euid=os.geteuid())
    assert str(err.value) == message


def test_only_root_may_name_another_user(tmp_path):
    exe = _standin(tmp_path, 'exit 0\n')
    params = {'executable': exe, 'user': 'root', 'timeout': 60, 'output_lines': 60}
    with pytest.raises(InputError) as err:
        run.check_params(params, euid=1)
    assert str(err.value) == ("user is 'root', but this module runs as uid 1 and cannot switch to that user; expected this user, "
                              "or run the task with become")
    assert run.check_params(dict(params, user='nobody'), euid=0)['user'] == 'nobody'


def test_check_params_names_a_path_it_cannot_stat(tmp_path):
    """A link that loops exists (lexists) but cannot be read: the reason is named."""
    link = tmp_path / 'slurmdbd'
    link.symlink_to(link)
    with pytest.raises(InputError) as err:
        run.check_params({'executable': str(link), 'user': USER, 'timeout': 60, 'output_lines': 60}, euid=os.geteuid())
    assert str(err.value) == ("executable is '%s', which cannot be read (Too many levels of symbolic links); " % link) + PROGRAM


def test_check_params_refuses_a_program_nobody_may_execute(tmp_path):
    exe = _standin(tmp_path, 'exit 0\n')
    os.chmod(exe, 0o644)
    if os.geteuid() != 0:
        pytest.skip('root runs files with any execute bit; others need their own bit')
    with pytest.raises(InputError) as err:
        run.check_params({'executable': exe, 'user': USER, 'timeout': 60, 'output_lines': 60}, euid=0)
    assert str(err.value) == "executable is '%s', which is not executable: user '%s' may not execute it; %s" % (exe, USER, PROGRAM)


def test_run_foreground_stops_the_program_once_ready(tmp_path):
    exe = _standin(tmp_path, 'echo "slurmdbd: converting  "\necho "slurmdbd: slurmdbd version 24.11.5 started"\nexec sleep 30\n')
    lines, code, timed_out, seconds = run.run_foreground(exe, USER, 20)
    assert (lines, code, timed_out) == (['slurmdbd: converting', 'slurmdbd: slurmdbd version 24.11.5 started'], None, False)
    assert 0 <= seconds < 10


def test_run_foreground_returns_the_exit_code_and_every_line(tmp_path):
    """Bytes that are no UTF-8 are replaced, never an error; the last line needs no newline; trailing blanks go."""
    exe = _standin(tmp_path, 'printf "one \\377\\r\\nwhere: "; pwd; echo "error: on stderr" >&2; printf "stdin: "; cat; '
                             'printf "last \\376 \\t"; exit 3\n')
    # the program reads nothing of this process's standard input
    read_end, write_end = os.pipe()
    os.write(write_end, b'leaked\n')
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        lines, code, timed_out, seconds = run.run_foreground(exe, USER, 20)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert (lines, code, timed_out) == (['one \ufffd', 'where: /', 'error: on stderr', 'stdin: last \ufffd'], 3, False)
    assert seconds >= 0


def test_run_foreground_reports_a_timeout_and_stops_the_program(tmp_path):
    exe = _standin(tmp_path, 'echo "slurmdbd: pre-converting job table"\nexec sleep 30\n')
    lines, code, timed_out, seconds = run.run_foreground(exe, USER, 0.5)
    assert (lines, code, timed_out) == (['slurmdbd: pre-converting job table'], None, True)
    assert 0.5 <= seconds < 5


def test_run_foreground_that_cannot_switch_user_raises_oserror(tmp_path, monkeypatch):
    def demote(user):
        def fail():
            raise OSError('no switch')
        return fail
    monkeypatch.setattr(run, '_demote', demote)
    exe = _standin(tmp_path, 'exit 0\n')
    with pytest.raises(OSError) as err:
        run.run_foreground(exe, 'someone', 5)
    assert str(err.value) == 'cannot start %s as someone: Exception occurred in preexec_fn.' % exe


@pytest.mark.skipif(os.geteuid() != 0, reason='needs root to switch to nobody')
def test_run_foreground_runs_the_program_as_the_user():
    nobody = pwd.getpwnam('nobody')
    directory = tempfile.mkdtemp(dir='/tmp')
    try:
        os.chmod(directory, 0o755)
        exe = _standin(directory, 'echo "$(id -u) $(id -g) $(id -G)"\n')
        lines, code, timed_out, seconds = run.run_foreground(exe, 'nobody', 20)
        groups = sorted(set(os.getgrouplist('nobody', nobody.pw_gid)))
        assert (lines, code, timed_out) == (['%d %d %s' % (nobody.pw_uid, nobody.pw_gid, ' '.join(str(g) for g in groups))], 0, False)
    finally:
        os.remove(os.path.join(directory, 'slurmdbd'))
        os.rmdir(directory)


def test_stop_kills_a_program_that_ignores_sigterm(tmp_path):
    exe = _standin(tmp_path, 'trap "" TERM\necho up\nwhile :; do sleep 0.05; done\n')
    proc = subprocess.Popen([exe], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b'up\n'
    run._stop(proc, wait=0.1)
    assert proc.returncode == -9
    proc.stdout.close()


def test_stop_ends_a_program_with_sigterm_and_leaves_an_ended_one(tmp_path):
    exe = _standin(tmp_path, 'echo up\nexec sleep 30\n')
    proc = subprocess.Popen([exe], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b'up\n'
    run._stop(proc)
    assert proc.returncode == -15
    run._stop(proc)
    assert proc.returncode == -15
    proc.stdout.close()
    done = subprocess.Popen([sys.executable, '-c', 'pass'])
    done.wait()
    run._stop(done)
    assert done.returncode == 0
