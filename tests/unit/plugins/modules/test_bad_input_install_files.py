# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""install_files refuses a bad set whole, before its first write; a failure while applying says what was applied.

The module runs in-process (modrun) with its arguments in the shape of the
action plugin's second call: each file entry with its ``checksum`` (SHA-1),
``contents`` with the base64 of every file, so a check that is missing would
let the module write.  Every set starts with a valid file entry (and most with
a valid directory entry), so a set applied half-way is caught too.  Each case
asserts: failed, the message names the entry (``files[N] (dest)``), the option,
the bad value and what is valid, and nothing under the test directory changed
(every path, hidden temporary files included, with its mode and content hash).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import errno
import hashlib
import os
import shutil

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import install_files
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, run_module, snapshot

NEW = b'new content\n'


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def fentry(dest, data=NEW, mode='0644', **extra):
    return dict({'dest': dest, 'state': 'file', 'checksum': sha1(data), 'mode': mode}, **extra)


def args_for(files, data=NEW, **extra):
    """The module's arguments as the action's second call has them: the base64 of every file entry's content."""
    contents = dict((entry['dest'].rstrip('/'), base64.b64encode(data).decode()) for entry in files
                    if isinstance(entry, dict) and entry.get('state', 'file') == 'file' and isinstance(entry.get('dest'), str) and
                    entry.get('checksum') == sha1(data))
    return dict({'files': files, 'contents': contents}, **extra)


def good(n):
    """The valid entries every bad set starts with: a new directory and a new file in it."""
    return [{'dest': n + '/made', 'state': 'directory', 'mode': '0755'}, fentry(n + '/made/first.conf')]


def case(files, **extra):
    return lambda n: args_for(good(n) + files(n), **dict((key, value(n) if callable(value) else value) for key, value in extra.items()))


def n_pending(n):
    return n + '/pending'


# (id, arguments (a function of the node directory n), fragments of the message (n filled in), fault to arrange)
CASES = [
    ('files-empty', lambda n: {'files': []}, ['files is [], expected a non-empty list of entries'], None),
    ('files-not-dicts', lambda n: {'files': ['/etc/x']}, ["Elements value for option 'files' is of type str", 'convert to dict'], None),
    ('dest-relative', case(lambda n: [fentry('etc/x')]), ["files[2] (etc/x): dest is 'etc/x', expected an absolute path"], None),
    ('dest-empty', case(lambda n: [fentry('')]), ["files[2]: dest is '', expected an absolute path"], None),
    ('dest-missing', case(lambda n: [{'state': 'absent'}]), ['files[2]: dest is None, expected an absolute path'], None),
    ('dest-nul', case(lambda n: [fentry(n + '/a\x00b')]), ["files[2]: dest is '{n}/a\\x00b'", 'without NUL'], None),
    ('dest-root', case(lambda n: [{'dest': '/', 'state': 'directory', 'mode': '0755'}]),
     ["files[2] (/): dest is '/', expected an absolute path below /"], None),
    ('dest-dotdot', case(lambda n: [fentry(n + '/made/../x')]), ['dest is', 'expected a normalised absolute path'], None),
    ('dest-proc', case(lambda n: [fentry('/proc/gpucluster-test-x')]),
     ["files[2] (/proc/gpucluster-test-x): dest is '/proc/gpucluster-test-x', expected a path on a real file system, not under /proc"],
     None),
    ('dest-sys', case(lambda n: [{'dest': '/sys/kernel/x', 'state': 'absent'}]), ["dest is '/sys/kernel/x'", 'not under /sys'], None),
    ('dest-long-name', case(lambda n: [fentry(n + '/' + 'x' * 300)]), ['files[2]', 'names have at most 255 bytes'], None),
    ('dest-twice', case(lambda n: [fentry(n + '/made/first.conf/')]),
     ["files[2] ({n}/made/first.conf/): dest is '{n}/made/first.conf', expected each path once, but files[1] names it"], None),
    ('dest-under-a-file-entry', case(lambda n: [fentry(n + '/made/first.conf/x')]),
     ["files[2] ({n}/made/first.conf/x)", 'expected a path whose parents are directories, but files[1] makes {n}/made/first.conf a file'],
     None),
    ('state-bad', case(lambda n: [{'dest': n + '/x', 'state': 'touch'}]),
     ["files[2] ({n}/x): state is 'touch', expected one of file, directory, link, absent"], None),
    ('key-unknown', case(lambda n: [fentry(n + '/x', backup=True)]),
     ['files[2] ({n}/x): backup is set, expected only dest, state, checksum, mode, owner, group, secret, restarts with state file'], None),
    ('content-on-the-node', case(lambda n: [{'dest': n + '/x', 'content': 'x', 'mode': '0644'}]),
     ['files[2] ({n}/x): content is set, expected only dest, state, checksum'], None),
    ('mode-missing-file', case(lambda n: [{'dest': n + '/x', 'checksum': sha1(NEW)}]),
     ['files[2] ({n}/x): mode is not set, expected a quoted octal string', 'for a file'], None),
    ('mode-missing-directory', case(lambda n: [{'dest': n + '/d', 'state': 'directory'}]),
     ['files[2] ({n}/d): mode is not set', 'for a directory'], None),
    ('mode-not-octal', case(lambda n: [fentry(n + '/x', mode='0999')]),
     ["files[2] ({n}/x): mode is '0999', expected a quoted octal string of 3 or 4 digits 0-7"], None),
    ('mode-number', case(lambda n: [fentry(n + '/x', mode=644)]), ['files[2] ({n}/x): mode is 644, expected a quoted octal string', 'not a number'],
     None),
    ('mode-out-of-range', case(lambda n: [fentry(n + '/x', mode='77777')]), ["mode is '77777', expected a quoted octal string"], None),
    ('mode-symbolic', case(lambda n: [{'dest': n + '/d', 'state': 'directory', 'mode': 'u=rwx'}]), ["files[2] ({n}/d): mode is 'u=rwx'"], None),
    ('owner-unknown', case(lambda n: [fentry(n + '/x', owner='no-such-user-x')]),
     ["files[2] ({n}/x): owner is 'no-such-user-x', expected a user that exists on this node"], None),
    ('group-unknown', case(lambda n: [{'dest': n + '/d', 'state': 'directory', 'mode': '0755', 'group': 'no-such-group-x'}]),
     ["files[2] ({n}/d): group is 'no-such-group-x', expected a group that exists on this node"], None),
    ('owner-not-a-name', case(lambda n: [fentry(n + '/x', owner='root root')]), ["owner is 'root root', expected a user name"], None),
    ('group-empty', case(lambda n: [fentry(n + '/x', group='')]), ["files[2] ({n}/x): group is '', expected a group name"], None),
    ('default-owner-unknown', case(lambda n: [], owner='no-such-user-x'),
     ["owner is 'no-such-user-x', expected a user that exists on this node"], None),
    ('default-group-empty', case(lambda n: [], group=''), ["group is '', expected a group name"], None),
    ('default-owner-option', case(lambda n: [], owner='-Hroot@host'), ["owner is '-Hroot@host', expected a user name"], None),
    ('secret-not-bool', case(lambda n: [fentry(n + '/x', secret='maybe')]), ["files[2] ({n}/x): secret is 'maybe', expected true or false"], None),
    ('checksum-bad', case(lambda n: [fentry(n + '/x', checksum='xyz')]),
     ["files[2] ({n}/x): checksum is 'xyz', expected the SHA-1 of the content in hex"], None),
    ('link-target-empty', case(lambda n: [{'dest': n + '/made/l', 'state': 'link', 'target': ''}]),
     ["files[2] ({n}/made/l): target is '', expected the path the link points to"], None),
    ('link-target-missing', case(lambda n: [{'dest': n + '/made/l', 'state': 'link'}]), ['files[2] ({n}/made/l): target is None, expected'],
     None),
    ('link-with-mode', case(lambda n: [{'dest': n + '/made/l', 'state': 'link', 'target': 'x', 'mode': '0644'}]),
     ['files[2] ({n}/made/l): mode is set, expected only dest, state, target, restarts with state link'], None),
    ('directory-on-a-file', case(lambda n: [{'dest': n + '/afile', 'state': 'directory', 'mode': '0755'}]),
     ["files[2] ({n}/afile): state is 'directory', but {n}/afile is a file; expected a directory or nothing there"], None),
    ('absent-on-a-directory', case(lambda n: [{'dest': n + '/adir', 'state': 'absent'}]),
     ["files[2] ({n}/adir): state is 'absent', but {n}/adir is a directory; expected a file, a link or nothing there"], None),
    ('file-on-a-directory', case(lambda n: [fentry(n + '/adir')]),
     ["files[2] ({n}/adir): state is 'file', but {n}/adir is a directory", 'move the directory away first'], None),
    ('link-on-a-directory', case(lambda n: [{'dest': n + '/adir', 'state': 'link', 'target': 'x'}]),
     ["state is 'link', but {n}/adir is a directory"], None),
    ('file-in-the-middle-directory', case(lambda n: [{'dest': n + '/afile/sub/d', 'state': 'directory', 'mode': '0755'}]),
     ["files[2] ({n}/afile/sub/d): dest is '{n}/afile/sub/d', but {n}/afile is a file, not a directory; "
      'expected a path whose parents are directories'], None),
    ('file-in-the-middle-file', case(lambda n: [fentry(n + '/afile/x')]), ['but {n}/afile is a file, not a directory'], None),
    ('file-in-the-middle-link', case(lambda n: [{'dest': n + '/dangling/x', 'state': 'link', 'target': 'y'}]),
     ['but {n}/dangling is a link, not a directory'], None),
    ('directory-missing', case(lambda n: [fentry(n + '/nodir/x')]),
     ["files[2] ({n}/nodir/x): dest is '{n}/nodir/x', but its directory {n}/nodir does not exist; expected its directory to exist or an "
      'earlier entry to make it'], None),
    ('directory-not-writable', case(lambda n: [fentry(n + '/locked/x')]),
     ["files[2] ({n}/locked/x): dest is '{n}/locked/x', but this process may not create or remove entries in {n}/locked; "
      'expected a path in a directory this process may write'], 'no-write'),
    ('absent-in-a-directory-not-writable', case(lambda n: [{'dest': n + '/locked/old', 'state': 'absent'}]),
     ['files[2] ({n}/locked/old)', 'may not create or remove entries in {n}/locked'], 'no-write'),
    ('directory-read-only', case(lambda n: [fentry(n + '/locked/x')]),
     ["files[2] ({n}/locked/x): dest is '{n}/locked/x', but {n}/locked is on a read-only file system; expected a path on a writable "
      'file system'], 'read-only'),
    ('mode-change-read-only', case(lambda n: [fentry(n + '/locked/old', data=b'old\n', mode='0600')]),
     ["files[2] ({n}/locked/old): dest is '{n}/locked/old', but it is on a read-only file system"], 'read-only'),
    ('not-root-mode-of-another-users-file', case(lambda n: [fentry(n + '/locked/old', data=b'old\n', mode='0600')]),
     ["files[2] ({n}/locked/old): mode is '0600', but the path is owned by uid %d and this process runs as uid 4242; "
      'expected to run as root or as the owner (become: true)' % os.getuid()], 'not-root'),
    ('not-root-owner', case(lambda n: [fentry(n + '/x', owner='root')]),
     ["files[2] ({n}/x): owner is 'root', but only root may give a path to another user and this process runs as uid 4242; "
      'expected to run as root (become: true)'], 'not-root'),
    ('dest-cannot-be-read', case(lambda n: [fentry(n + '/locked/hidden')]),
     ["files[2] ({n}/locked/hidden): dest is '{n}/locked/hidden', but it cannot be read: Permission denied; "
      'expected a path this process can look at'], 'no-lstat'),
    ('contents-not-base64', lambda n: dict(args_for(good(n)), contents={n + '/made/first.conf': 'not base64!'}),
     ["contents[{n}/made/first.conf] is 'not base64!', expected base64 text"], None),
    ('contents-wrong-bytes', lambda n: dict(args_for(good(n)), contents={n + '/made/first.conf': base64.b64encode(b'other').decode()}),
     ['contents[{n}/made/first.conf] has SHA-1 %s, expected the content of files[1] ({n}/made/first.conf)' % sha1(b'other')], None),
    ('contents-unknown-path', lambda n: dict(args_for(good(n)), contents={n + '/elsewhere': base64.b64encode(NEW).decode()}),
     ["contents has '{n}/elsewhere', expected only the dest of a file entry of files"], None),
    # restarts (pending-restart markers): checked with the whole set, before any marker or file is written
    ('restarts-not-list', case(lambda n: [fentry(n + '/x', restarts='slurmd')], pending_dir=n_pending),
     ["files[2] ({n}/x): restarts is 'slurmd', expected a list of {daemon"], None),
    ('restarts-daemon-option', case(lambda n: [fentry(n + '/x', restarts=['--user'])], pending_dir=n_pending),
     ["files[2] ({n}/x): restarts[0].daemon is '--user'", 'systemd unit name'], None),
    ('restarts-action', case(lambda n: [fentry(n + '/x', restarts=[{'daemon': 'slurmd', 'action': 'kill'}])], pending_dir=n_pending),
     ["restarts[0].action is 'kill', expected one of restart, reconfigure"], None),
    ('restarts-unknown-key', case(lambda n: [fentry(n + '/x', restarts=[{'daemon': 'slurmd', 'signal': 9}])], pending_dir=n_pending),
     ["restarts[0] has the key 'signal', expected only daemon, action and reason"], None),
    ('restarts-reason-lines', case(lambda n: [fentry(n + '/x', restarts=[{'daemon': 'slurmd', 'reason': 'a\nb'}])], pending_dir=n_pending),
     ['restarts[0].reason is', 'one line of text'], None),
    ('restarts-on-directory', case(lambda n: [{'dest': n + '/d', 'state': 'directory', 'mode': '0755', 'restarts': ['slurmd']}]),
     ['files[2] ({n}/d): restarts is set, expected only dest, state, mode, owner, group with state directory'], None),
    ('pending-dir-relative', case(lambda n: [fentry(n + '/x', restarts=['slurmd'])], pending_dir='var/pending'),
     ["pending_dir is 'var/pending', expected an absolute path"], None),
    ('pending-dir-nul', case(lambda n: [fentry(n + '/x', restarts=['slurmd'])], pending_dir='/var/p\x00'),
     ["pending_dir is '/var/p\\x00'", 'without control characters'], None),
]


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node directory: a file, a directory, a dangling link, and ``locked`` (made unwritable or read-only by a case)."""
    top = tmp_path / 'node'
    (top / 'adir').mkdir(parents=True)
    (top / 'afile').write_text('a file\n')
    (top / 'locked').mkdir()
    (top / 'locked' / 'old').write_bytes(b'old\n')
    os.chmod(str(top / 'locked' / 'old'), 0o644)
    os.symlink(str(tmp_path / 'nowhere'), str(top / 'dangling'))
    return str(top)


def arrange(fault, n, monkeypatch):
    """The fault a case needs: ``n/locked`` not writable by this process (as root too) or on a read-only file system, or not root."""
    locked = os.path.join(n, 'locked')
    if fault == 'no-write':
        os.chmod(locked, 0o555)
        real_access = os.access

        def access(path, mode, **kwargs):
            if os.path.abspath(path) == locked and mode & os.W_OK:
                return False
            return real_access(path, mode, **kwargs)
        monkeypatch.setattr(os, 'access', access)
    elif fault == 'no-lstat':
        real_lstat = os.lstat

        def lstat(path, *args, **kwargs):
            if os.path.abspath(path) == os.path.join(locked, 'hidden'):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), path)
            return real_lstat(path, *args, **kwargs)
        monkeypatch.setattr(os, 'lstat', lstat)
    elif fault == 'not-root':
        monkeypatch.setattr(os, 'geteuid', lambda: 4242)
    elif fault == 'read-only':
        real_statvfs = os.statvfs

        class ReadOnly(object):
            def __init__(self, real):
                self.f_flag = real.f_flag | os.ST_RDONLY

        def statvfs(path):
            real = real_statvfs(path)
            return ReadOnly(real) if os.path.abspath(path).startswith(locked) else real
        monkeypatch.setattr(os, 'statvfs', statvfs)


@pytest.fixture
def no_commands(monkeypatch):
    return forbid_commands(monkeypatch)


@pytest.mark.parametrize('make_args, fragments, fault', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(node, tmp_path, monkeypatch, no_commands, make_args, fragments, fault):
    arrange(fault, node, monkeypatch)
    args = make_args(node)
    before = snapshot(str(tmp_path))
    outcome = bad_input(install_files.main, args, *[fragment.replace('{n}', node) for fragment in fragments])
    assert 'nothing was changed' in outcome.msg or not outcome.msg.startswith('install_files:'), outcome.msg
    assert not outcome.result.get('changed'), outcome.result
    assert snapshot(str(tmp_path)) == before, 'the module changed files on bad input'
    assert not os.path.exists(os.path.join(node, 'made')), 'the valid first entries were applied'
    assert no_commands == []


def test_there_are_enough_cases():
    assert len(CASES) >= 25


def test_check_mode_judges_the_places_too(node, tmp_path):
    """--check reports a file in the middle of a path as a run would (only unknown owners are let through)."""
    args = args_for(good(node) + [fentry(node + '/afile/x', owner='no-such-user-x')])
    before = snapshot(str(tmp_path))
    bad_input(install_files.main, args, 'but %s/afile is a file, not a directory' % node, check_mode=True)
    assert snapshot(str(tmp_path)) == before


def test_check_mode_lets_a_missing_directory_through_a_run_does_not(node, tmp_path):
    """A dry run of a fresh node (issue 44): /etc/slurm is made by the Slurm packages the same run would install, so in
    check mode a file in a directory that is not there yet is reported as a change; a real run still refuses it whole."""
    args = args_for([fentry(node + '/nodir/sub/x.conf'), {'dest': node + '/nodir/link', 'state': 'link', 'target': 'sub/x.conf'}])
    before = snapshot(str(tmp_path))
    checked = run_module(install_files.main, args, check_mode=True, diff=True)
    assert not checked.failed and checked.result['changed'] is True, checked.result
    assert [entry['dest'] for entry in checked.result['files'] if entry['changed']] == [node + '/nodir/sub/x.conf', node + '/nodir/link']
    assert snapshot(str(tmp_path)) == before
    bad_input(install_files.main, args, "files[0] (%s/nodir/sub/x.conf): dest is '%s/nodir/sub/x.conf', but its directory %s/nodir/sub "
              "does not exist" % (node, node, node), 'nothing was changed')
    assert snapshot(str(tmp_path)) == before


def test_a_valid_entry_then_one_under_proc_writes_nothing(node):
    """The issue's case: the first entry was written, the second failed with changed false."""
    args = args_for([fentry(node + '/first.conf'), fentry('/proc/gpucluster-test-x')])
    outcome = bad_input(install_files.main, args, 'files[1] (/proc/gpucluster-test-x)', 'nothing was changed')
    assert not outcome.result.get('changed')
    assert not os.path.exists(node + '/first.conf')


def test_a_valid_entry_then_a_directory_below_a_file_writes_nothing(node):
    args = args_for([fentry(node + '/first.conf'), {'dest': node + '/first.conf.d', 'state': 'directory', 'mode': '0755'},
                     {'dest': node + '/afile/d', 'state': 'directory', 'mode': '0755'}])
    bad_input(install_files.main, args, 'files[2] (%s/afile/d)' % node, 'nothing was changed')
    assert sorted(os.listdir(node)) == ['adir', 'afile', 'dangling', 'locked']


def test_a_file_that_an_earlier_entry_replaces_cannot_hold_a_directory(node):
    """A path an earlier entry makes a link is no directory for a later one, whatever it is now."""
    args = args_for([{'dest': node + '/adir2', 'state': 'link', 'target': 'adir'},
                     {'dest': node + '/adir2/sub', 'state': 'directory', 'mode': '0755'}])
    bad_input(install_files.main, args, 'files[1] (%s/adir2/sub)' % node, 'but %s/adir2 is a link (files[0] makes it one), not a directory' % node)
    assert not os.path.lexists(node + '/adir2')


def test_an_earlier_directory_entry_makes_the_directory(node):
    args = args_for([{'dest': node + '/a/b/c', 'state': 'directory', 'mode': '0700'}, fentry(node + '/a/b/x'), fentry(node + '/a/b/c/y'),
                     {'dest': node + '/a/b/c/l', 'state': 'link', 'target': 'y'}])
    outcome = run_module(install_files.main, args)
    assert not outcome.failed and outcome.result['changed'], outcome.result
    assert open(node + '/a/b/c/y', 'rb').read() == NEW and os.readlink(node + '/a/b/c/l') == 'y'


# ---------------------------------------------------------------------------
# A failure while applying: what was applied is reported, no temporary file is left, a second run completes the set

def the_set(n):
    return [{'dest': n + '/etc', 'state': 'directory', 'mode': '0755'}, fentry(n + '/etc/a.conf'), fentry(n + '/etc/b.conf'),
            fentry(n + '/etc/c.conf', mode='0600')]


def _fd_path(fd):
    try:
        return os.readlink('/proc/self/fd/%d' % fd)
    except OSError:
        return ''


def inject(fault, n, monkeypatch):
    """Make writing ``n/etc/b.conf`` fail the way ``fault`` says."""
    target = n + '/etc/b.conf'
    if fault == 'replace':
        real = os.replace

        def replace(src, dst, **kwargs):
            if dst == target:
                raise OSError(errno.EIO, 'Input/output error', dst)
            return real(src, dst, **kwargs)
        monkeypatch.setattr(os, 'replace', replace)
    elif fault == 'disk-full':
        real = os.fsync

        def fsync(fd):
            if os.path.basename(_fd_path(fd)).startswith('.b.conf.'):
                raise OSError(errno.ENOSPC, 'No space left on device')
            return real(fd)
        monkeypatch.setattr(os, 'fsync', fsync)
    elif fault == 'race':
        real = install_files.write_file

        def write_file(dest, content, entry):
            if dest == target:
                shutil.rmtree(n + '/etc')   # another process removes the directory between the check and the write
            return real(dest, content, entry)
        monkeypatch.setattr(install_files, 'write_file', write_file)


@pytest.mark.parametrize('fault, error', [('replace', 'Input/output error'), ('disk-full', 'No space left on device'),
                                          ('race', 'No such file or directory')])
def test_a_failure_while_applying_reports_what_was_applied(node, monkeypatch, fault, error):
    etc = node + '/etc'
    with monkeypatch.context() as patch:
        inject(fault, node, patch)
        outcome = run_module(install_files.main, args_for(the_set(node)))
    assert outcome.failed and outcome.result['changed'] is True, outcome.result
    assert outcome.result['applied'] == [etc, etc + '/a.conf'], outcome.result
    assert outcome.result['failed_path'] == etc + '/b.conf'
    assert error in outcome.result['error'] and error in outcome.msg, outcome.result
    assert 'files[2] (%s/b.conf): create file failed' % etc in outcome.msg
    assert 'applied before it: %s, %s/a.conf' % (etc, etc) in outcome.msg and 'run again to complete the set' in outcome.msg
    assert [item['changed'] for item in outcome.result['files']] == [True, True, False]
    if fault != 'race':
        assert sorted(os.listdir(etc)) == ['a.conf'], 'a temporary file was left behind'

    again = run_module(install_files.main, args_for(the_set(node)))
    assert not again.failed and again.result['changed'], again.result
    changed = [item['changed'] for item in again.result['files']]
    assert changed == ([True] * 4 if fault == 'race' else [False, False, True, True]), again.result
    assert sorted(os.listdir(etc)) == ['a.conf', 'b.conf', 'c.conf']
    for name, mode in (('a.conf', 0o644), ('b.conf', 0o644), ('c.conf', 0o600)):
        assert open(os.path.join(etc, name), 'rb').read() == NEW
        assert os.stat(os.path.join(etc, name)).st_mode & 0o7777 == mode
    assert not run_module(install_files.main, args_for(the_set(node))).result['changed']


def test_a_failure_inside_an_entry_reports_what_of_it_was_done(node, monkeypatch):
    """A file replaced by a link: the file is removed, then making the link fails - changed, and the message says so."""
    args = args_for([{'dest': node + '/afile', 'state': 'link', 'target': 'adir'}])
    with monkeypatch.context() as patch:
        def symlink(*args, **kwargs):
            raise OSError(errno.ENOSPC, 'No space left on device')
        patch.setattr(os, 'symlink', symlink)
        outcome = run_module(install_files.main, args)
    assert outcome.failed and outcome.result['changed'] is True, outcome.result
    assert outcome.result['applied'] == [] and outcome.result['failed_path'] == node + '/afile'
    assert 'files[0] (%s/afile): create link failed: No space left on device; of this entry, done: remove the file there' % node in outcome.msg
    again = run_module(install_files.main, args)
    assert not again.failed and again.result['changed'] and os.readlink(node + '/afile') == 'adir'


def test_a_failure_before_any_change_says_nothing_was_changed(node, monkeypatch):
    os.mkdir(node + '/etc')
    with monkeypatch.context() as patch:
        inject('replace', node, patch)
        outcome = run_module(install_files.main, args_for([fentry(node + '/etc/b.conf')]))
    assert outcome.failed and outcome.result['changed'] is False, outcome.result
    assert outcome.result['applied'] == [] and 'applied before it: nothing; nothing was changed' in outcome.msg
    assert os.listdir(node + '/etc') == []
