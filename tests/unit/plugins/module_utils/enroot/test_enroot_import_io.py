# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/module_utils/enroot/_enroot_import_io.py with a stand-in module and enroot: the whole messages, results and
files the manager produces (the real enroot and registries: tests/unit/plugins/modules/test_enroot_import.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import stat
import subprocess

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_import_io as io_mod
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.enroot.import_io_fakes import (
    DIGEST_A, DIGEST_B, URI, FakeRun, failure, manager)


# ---- check_input ------------------------------------------------------------------------------------------


def test_every_problem_in_one_message_and_the_first_kind(tmp_path):
    result = failure(manager, tmp_path, uri='', name='-x', retries=-1)
    assert result == {
        'msg': 'uri: invalid image URI "": it is empty; valid forms are %s; name: invalid container name "-x": use letters, digits, '
               '"_", "." and "-", starting with a letter or digit; retries must be 0 or more (transfer retries), got -1' % _enroot.VALID_FORMS,
        'error_kind': 'invalid_uri'}


def test_a_bad_name_alone_is_invalid_name(tmp_path):
    assert failure(manager, tmp_path, name='a b')['error_kind'] == 'invalid_name'


def test_dest_ending_in_a_slash_must_be_a_directory(tmp_path):
    value = str(tmp_path / 'missing') + '/'
    assert failure(manager, tmp_path, dest=value) == {
        'msg': 'dest %s: the directory %s does not exist; create it first, or give the image file name' % (value, tmp_path / 'missing'),
        'error_kind': 'bad_dest'}


def test_dest_directory_gets_enroots_own_file_name(tmp_path):
    assert manager(tmp_path, dest=str(tmp_path) + '/').dest == str(tmp_path / 'test+img+1.0.sqsh')
    assert manager(tmp_path, dest=str(tmp_path)).dest == str(tmp_path / 'test+img+1.0.sqsh')


def test_dest_directory_with_a_bad_uri_is_not_a_regular_file(tmp_path):
    result = failure(manager, tmp_path, uri='docker://', dest=str(tmp_path))
    assert result['msg'].endswith('; dest %s exists and is not a regular file' % tmp_path)
    assert result['error_kind'] == 'invalid_uri'


def test_dest_that_is_a_dangling_link_is_not_a_regular_file(tmp_path):
    os.symlink(str(tmp_path / 'nowhere'), str(tmp_path / 'img.sqsh'))
    assert failure(manager, tmp_path) == {'msg': 'dest %s exists and is not a regular file' % (tmp_path / 'img.sqsh'),
                                          'error_kind': 'bad_dest'}


def test_dest_in_a_missing_directory(tmp_path):
    value = str(tmp_path / 'no' / 'img.sqsh')
    assert failure(manager, tmp_path, dest=value) == {
        'msg': 'dest %s: the directory %s does not exist; create it first' % (value, tmp_path / 'no'), 'error_kind': 'bad_dest'}


def test_an_image_in_a_directory_it_cannot_write_to_is_kept_as_the_write_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(io_mod._Probe, 'writable', staticmethod(lambda path: False))
    problem = ('dest {0}/img.sqsh: the user the module runs as (uid {1}) cannot create files in {0}; use a directory it can '
               'write to, or become its owner'.format(tmp_path, os.getuid()))
    assert failure(manager, tmp_path) == {'msg': problem, 'error_kind': 'bad_dest'}
    (tmp_path / 'img.sqsh').write_bytes(b'old')
    found = manager(tmp_path)
    assert found.write_problem == problem
    # it must be imported again (it has no record, but force is set): the write problem fails the task then
    found.module.params['force'] = True
    assert failure(found.run) == {'msg': '%s (%s is there, but must be imported again: force is set)' % (problem, found.dest),
                                  'error_kind': 'bad_dest'}


def test_container_record_dir_is_checked_only_with_a_name(tmp_path, monkeypatch):
    (tmp_path / 'home').write_text('a file')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    record_dir = str(tmp_path / 'home' / '.local' / 'state' / 'gpucluster.bringup' / 'enroot')
    assert manager(tmp_path).container is None
    assert failure(manager, tmp_path, name='job') == {
        'msg': 'container_record_dir %s: %s is a file, not a directory, so nothing can be created under it; use a path under a '
               'directory' % (record_dir, tmp_path / 'home'), 'error_kind': 'bad_option'}
    # a relative one is reported once, by the option check
    assert failure(manager, tmp_path, name='job', container_record_dir='rel') == {
        'msg': 'container_record_dir must be an absolute path, got "rel"', 'error_kind': 'bad_option'}
    assert manager(tmp_path, name='job', container_record_dir=str(tmp_path / 'new' / 'dir')).container == 'pyxis_job'


def test_warnings_of_the_uri_and_the_environment(tmp_path):
    found = manager(tmp_path, uri='docker://localhost/img', retries=2, connect_timeout=7)
    assert found.module.warnings == _enroot.uri_warnings(found.ref) and len(found.module.warnings) == 1
    assert found.env == {'ENROOT_TRANSFER_RETRIES': '2', 'ENROOT_CONNECT_TIMEOUT': '7'}
    assert (found.directory, found.actions) == (str(tmp_path), [])


# ---- _find_enroot -----------------------------------------------------------------------------------------


def test_an_executable_path_must_be_an_executable_file(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    plain = tmp_path / 'enroot'
    plain.write_text('#!/bin/sh\n')
    for path in (str(plain), str(tmp_path)):
        assert failure(manager, tmp_path, executable=path) == {
            'msg': 'the enroot command "%s" was not found (PATH=/usr/bin:/bin); install enroot (role gpucluster.bringup.enroot) '
                   'or set executable to its path' % path, 'error_kind': 'missing_enroot'}
    os.chmod(str(plain), 0o755)
    assert manager(tmp_path, executable=str(plain)).enroot == str(plain)


def test_a_command_name_is_looked_up_in_path(tmp_path, monkeypatch):
    found = manager(tmp_path, executable='enroot', bin_path='/opt/enroot/bin/enroot')
    assert (found.enroot, found.module.bin_asked) == ('/opt/enroot/bin/enroot', ['enroot'])
    monkeypatch.delenv('PATH')
    assert failure(manager, tmp_path, executable='enroot')['msg'].startswith('the enroot command "enroot" was not found (PATH=); ')


# ---- the registry: digest, bounded runs --------------------------------------------------------------------


def test_current_digest_asks_enroot_within_timeout(tmp_path, monkeypatch):
    run = FakeRun(digest=(0, 'noise\n  %s  \n' % DIGEST_A, ''))
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    monkeypatch.setenv('GPUCLUSTER_MARK', 'kept')
    found = manager(tmp_path, arch='aarch64', timeout=9, retries=1)
    assert found.current_digest() == DIGEST_A
    (argv, env, timeout), = run.calls
    assert (argv, timeout) == (['/bin/sh', 'digest', '--arch', 'aarch64', '--', URI], 9)
    assert (env['GPUCLUSTER_MARK'], env['ENROOT_TRANSFER_RETRIES']) == ('kept', '1')
    assert found.module.warnings == []


@pytest.mark.parametrize('uri, expected', [('dockerd://img:1', None), ('docker://127.0.0.1:5000/t/i@' + DIGEST_B, DIGEST_B)])
def test_current_digest_without_asking(tmp_path, monkeypatch, uri, expected):
    run = FakeRun()
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    assert manager(tmp_path, uri=uri).current_digest() == expected
    assert run.calls == []


@pytest.mark.parametrize('answer, warning', [
    ((0, 'Usage: enroot COMMAND\n', ''), None),
    ((1, 'out line\n', 'first\n[ERROR] last line\n'), '[ERROR] last line'),
    ((2, 'one\ntwo\n', ''), 'two'),
    ((3, '', None), 'no output'),
])
def test_current_digest_unknown(tmp_path, monkeypatch, answer, warning):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=answer))
    found = manager(tmp_path)
    assert found.current_digest() is None
    assert found.module.warnings == ([] if warning is None else [
        'could not get the digest of %s (enroot digest exited %d: %s)' % (URI, answer[0], warning)])


def stopped(exc, stderr):
    exc.stderr = stderr
    return exc


@pytest.mark.parametrize('exc, msg, kind', [
    (stopped(_enroot_run.TimedOut(5), '[INFO] Querying registry\n'),
     'enroot digest of %s did not finish within timeout=5 seconds (its last step: Querying registry); stopped it', 'timeout'),
    (stopped(_enroot_run.Interrupted(15), ''), 'enroot digest of %s was interrupted by signal 15; stopped it', 'interrupted'),
])
def test_bounded_digest_stopped(tmp_path, monkeypatch, exc, msg, kind):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(exc=exc))
    assert failure(manager(tmp_path, timeout=5).current_digest) == {'msg': msg % URI, 'stderr': exc.stderr, 'error_kind': kind}


# ---- local state -------------------------------------------------------------------------------------------


def test_read_state(tmp_path):
    found = manager(tmp_path)
    assert found.read_state() == (False, 0, None)
    (tmp_path / 'img.sqsh').write_bytes(b'12345')
    assert found.read_state() == (True, 5, None)
    (tmp_path / 'img.sqsh.import.json').write_text(_enroot.make_record(found.ref, DIGEST_A, 5))
    assert found.read_state() == (True, 5, {'uri': URI, 'digest': DIGEST_A, 'size': 5})
    os.remove(str(tmp_path / 'img.sqsh'))
    assert found.read_state() == (False, 0, None)
    os.mkdir(str(tmp_path / 'img.sqsh'))
    assert failure(found.read_state) == {'msg': 'dest %s exists and is not a regular file' % found.dest, 'error_kind': 'bad_dest'}


def test_container_exists_from_enroot_list(tmp_path):
    found = manager(tmp_path, name='job', retries=3, answers={'list': (0, 'other\n pyxis_job \n', '')})
    assert found.container_exists() is True
    assert found.module.commands == [(['/bin/sh', 'list'], {'ENROOT_TRANSFER_RETRIES': '3'})]
    found.module.answers['list'] = (0, 'pyxis_jobs\njob\n', '')
    assert found.container_exists() is False
    found.module.answers['list'] = (4, 'out', ' no data path \n')
    assert failure(found.container_exists) == {'msg': 'enroot list failed with exit code 4: no data path', 'rc': 4,
                                               'stderr': ' no data path \n', 'error_kind': 'unknown'}


@pytest.fixture
def running():
    """A process that is alive while the test runs."""
    proc = subprocess.Popen(['sleep', '30'])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_remove_stale_temporaries_of_dead_imports_on_this_host_only(tmp_path, running):
    found = manager(tmp_path)
    child = subprocess.Popen(['true'])
    child.wait()
    host = socket.gethostname()
    dead = _enroot.temp_prefix('img.sqsh', host, child.pid) + 'x1'
    alive = _enroot.temp_prefix('img.sqsh', host, running) + 'x2'
    elsewhere = _enroot.temp_prefix('img.sqsh', host + '-other', child.pid) + 'x3'
    other_dest = _enroot.temp_prefix('other.sqsh', host, child.pid) + 'x4'
    for name in (dead, alive, elsewhere, other_dest):
        os.mkdir(str(tmp_path / name))
        (tmp_path / name / 'part').write_text('layer')
    # a file with such a name is no directory to remove: left alone, the import goes on
    dead_file = _enroot.temp_prefix('img.sqsh', host, child.pid) + 'x5'
    (tmp_path / dead_file).write_text('')
    found.remove_stale_temporaries()
    assert sorted(os.listdir(str(tmp_path))) == sorted([alive, elsewhere, other_dest, dead_file])


def test_pid_alive_only_asks(monkeypatch):
    sent = []
    monkeypatch.setattr(os, 'kill', lambda pid, signum: sent.append((pid, signum)))
    assert io_mod._pid_alive(4321) is True
    assert sent == [(4321, 0)]   # signal 0: asks whether the process is there, sends nothing

    def refused(pid, signum):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'kill', refused)
    assert io_mod._pid_alive(1) is True


def test_pid_alive(running):
    assert io_mod._pid_alive(running) is True
    child = subprocess.Popen(['true'])
    child.wait()
    assert io_mod._pid_alive(child.pid) is False


def test_free_text(tmp_path):
    assert io_mod._free_text(str(tmp_path / 'missing')) == 'an unknown amount (No such file or directory)'
    fs = os.statvfs(str(tmp_path))
    assert io_mod._free_text(str(tmp_path)) == '%d KiB' % (fs.f_bavail * fs.f_frsize // 1024)


def test_step():
    assert io_mod._step('[INFO] Fetching image\n[INFO] Extracting  \n') == ' (its last step: Extracting)'
    assert io_mod._step('') == ''
    assert io_mod._step(None) == ''


# ---- _Probe -------------------------------------------------------------------------------------------------


def test_probe_reads_the_mounts_and_asks_the_file_system(tmp_path, monkeypatch):
    probe = io_mod._Probe()
    with open('/proc/self/mounts') as handle:
        assert probe.mounts == handle.read()
    assert probe.fstype(str(tmp_path)) == _enroot.filesystem_type(os.path.realpath(str(tmp_path)), probe.mounts)
    assert probe.fstype('/proc/self') == 'proc'
    os.symlink('/proc', str(tmp_path / 'link'))
    assert probe.fstype(str(tmp_path / 'link')) == 'proc'  # where the link leads
    assert (probe.exists(str(tmp_path)), probe.exists(str(tmp_path / 'x')), probe.is_dir(str(tmp_path))) == (True, False, True)
    (tmp_path / 'f').write_text('')
    assert probe.is_dir(str(tmp_path / 'f')) is False
    assert probe.uid() == os.getuid()


def test_probe_read_only(tmp_path, monkeypatch):
    assert io_mod._Probe.read_only(str(tmp_path)) is False
    assert io_mod._Probe.read_only(str(tmp_path / 'missing')) is False

    class Flags(object):
        f_flag = os.ST_RDONLY | os.ST_NOSUID
    monkeypatch.setattr(os, 'statvfs', lambda path: Flags())
    assert io_mod._Probe.read_only(str(tmp_path)) is True


def test_probe_writable_needs_write_and_search(tmp_path):
    assert io_mod._Probe.writable(str(tmp_path)) is True
    plain = tmp_path / 'plain'
    plain.write_text('')
    os.chmod(str(plain), stat.S_IRUSR | stat.S_IWUSR)
    # root may write anything, but searches (executes) only what has an x bit
    assert io_mod._Probe.writable(str(plain)) is False
    assert io_mod._Probe.writable(str(tmp_path / 'missing')) is False


def test_probe_writable_asks_for_write_and_search_permission(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(os, 'access', lambda path, mode: asked.append((path, mode)) or mode == os.W_OK | os.X_OK)
    assert io_mod._Probe.writable('/srv/images') is True
    assert asked == [('/srv/images', os.W_OK | os.X_OK)]


def test_probe_without_proc(monkeypatch):
    real_open = open

    def no_proc(path, *args, **kwargs):
        if path == '/proc/self/mounts':
            raise IOError(2, 'No such file or directory')
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr('builtins.open', no_proc)
    assert io_mod._Probe().mounts == ''
