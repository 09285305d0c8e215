# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_install_files_io called directly over a temporary node directory: whole messages, diffs, restarts and limits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import grp
import hashlib
import os
import pwd

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _install_files_io as io

ROOT_USER, ROOT_GROUP = pwd.getpwuid(0).pw_name, grp.getgrgid(0).gr_name


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def error(call, *args, **kwargs):
    with pytest.raises(ValueError) as err:
        call(*args, **kwargs)
    return str(err.value)


def test_native_and_bytes():
    assert io._native(b'caf\xc3\xa9 \xff') == 'caf\u00e9 \udcff'
    assert io._native('text') == 'text'
    assert io._native(OSError(2, 'gone')) == '[Errno 2] gone'
    assert io._bytes(b'\x00') == b'\x00'
    assert io._bytes('\udcff\u00e9') == b'\xff\xc3\xa9'
    assert io._bytes(12) == b'12'


def test_name_falls_back_to_the_number():
    assert io._name(pwd.getpwuid, 0) == ROOT_USER
    assert io._name(pwd.getpwuid, 4000000) == '4000000'


def test_sha1_of_a_file_of_several_blocks(tmp_path):
    data = bytes(range(256)) * 700   # 179200 bytes: three reads of 64 KiB
    (tmp_path / 'f').write_bytes(data)
    assert io.sha1_of(str(tmp_path / 'f')) == sha1(data)


def test_read_current(tmp_path):
    (tmp_path / 'f').write_bytes(b'abc')
    os.chmod(str(tmp_path / 'f'), 0o640)
    os.symlink('f', str(tmp_path / 'l'))
    os.mkfifo(str(tmp_path / 'p'))
    assert io.read_current(str(tmp_path / 'f')) == {'type': 'file', 'mode': 0o640, 'checksum': sha1(b'abc'),
                                                    'owner': pwd.getpwuid(os.getuid()).pw_name, 'group': grp.getgrgid(os.getgid()).gr_name}
    assert io.read_current(str(tmp_path / 'l')) == {'type': 'link', 'target': 'f'}
    assert io.read_current(str(tmp_path / 'p'))['type'] == 'other'
    assert io.read_current(str(tmp_path / 'p'))['checksum'] is None
    assert io.read_current(str(tmp_path))['type'] == 'directory'
    assert io.read_current(str(tmp_path / 'none')) is None
    assert io.read_current(str(tmp_path / 'f' / 'below')) is None


def test_check_names_whole_messages():
    io.check_names({'owner': ROOT_USER, 'group': ROOT_GROUP}, [{'dest': '/x', 'owner': ROOT_USER, 'group': ROOT_GROUP}])
    assert error(io.check_names, {'owner': 'no-such-user-x'}, []) == "owner is 'no-such-user-x', expected a user that exists on this node"
    assert error(io.check_names, {'group': 'no-such-group-x'}, []) == "group is 'no-such-group-x', expected a group that exists on this node"
    assert error(io.check_names, {}, [{'dest': '/a'}, {'dest': '/b', 'group': 'no-such-group-x'}]) == (
        "files[1] (/b): group is 'no-such-group-x', expected a group that exists on this node")


def test_kind_now(tmp_path):
    os.symlink('nowhere', str(tmp_path / 'dangling'))
    os.symlink(str(tmp_path), str(tmp_path / 'todir'))
    (tmp_path / 'f').write_text('')
    os.mkfifo(str(tmp_path / 'p'))
    assert [io._kind_now(str(tmp_path / name)) for name in ('dangling', 'todir', 'f', 'p', 'none', 'f/x')] == [
        'link', 'directory', 'file', 'other', None, None]


def test_read_only_and_writable(tmp_path, monkeypatch):
    assert io._read_only(str(tmp_path)) is False
    assert io._read_only(str(tmp_path / 'none')) is False
    (tmp_path / 'plain').write_text('')
    os.chmod(str(tmp_path / 'plain'), 0o600)
    assert io._writable(str(tmp_path)) is True
    assert io._writable(str(tmp_path / 'plain')) is False   # no search (x) bit, even for root
    asked = []
    monkeypatch.setattr(os, 'access', lambda path, mode, effective_ids=False: asked.append((mode, effective_ids)) or True)
    assert io._writable('/srv') is True
    assert asked == [(os.W_OK | os.X_OK, os.access in os.supports_effective_ids)]

    class Flags(object):
        f_flag = os.ST_RDONLY | os.ST_NOEXEC
    monkeypatch.setattr(os, 'statvfs', lambda path: Flags())
    assert io._read_only('/srv') is True


def test_container(tmp_path):
    base = str(tmp_path)
    (tmp_path / 'f').write_text('')
    assert io._container('p', base + '/new', {}, False) == (base, None)
    assert error(io._container, 'p', base + '/a/b/new', {}, False) == (
        "p: dest is '%s/a/b/new', but its directory %s/a/b does not exist; expected its directory to exist or an earlier entry to make "
        'it (add it as a directory entry before this one)' % (base, base))
    assert io._container('p', base + '/a/b/new', {}, True) == (base, None)
    assert io._container('p', base + '/a/b/new', {}, False, check_mode=True) == (base, None)
    assert io._container('p', base + '/a/new', {base + '/a': ('directory', 2)}, False) == (base + '/a', 2)
    assert error(io._container, 'p', base + '/f/new', {}, True) == (
        "p: dest is '%s/f/new', but %s/f is a file, not a directory; expected a path whose parents are directories" % (base, base))
    assert error(io._container, 'p', base + '/a/new', {base + '/a': ('link', 4)}, True) == (
        "p: dest is '%s/a/new', but %s/a is a link (files[4] makes it one), not a directory; expected a path whose parents are "
        'directories' % (base, base))
    # a path an earlier entry removes holds nothing: its parent is the container
    assert io._container('p', base + '/f/new', {base + '/f': (None, 1)}, True) == (base, None)


class Info(object):
    st_uid = 0


def test_owner_changes_without_root():
    steps = [('mode', 0o644), ('owner', ROOT_USER), ('group', ROOT_GROUP)]
    assert io._check_owner_change('p', {}, steps, Info(), 0) is None
    theirs = Info()
    theirs.st_uid = 1000
    assert io._check_owner_change('p', {}, steps + [('owner', 'no-such-user-x')], theirs, 0) is None   # root may do all
    assert error(io._check_owner_change, 'p', {}, [('mode', 0o644)], Info(), 1000) == (
        "p: mode is '0644', but the path is owned by uid 0 and this process runs as uid 1000; expected to run as root or as the owner "
        '(become: true)')
    io._check_owner_change('p', {}, [('mode', 0o644)], None, 1000)
    mine = Info()
    mine.st_uid = 1000
    io._check_owner_change('p', {}, [('mode', 0o644)], mine, 1000)
    assert error(io._check_owner_change, 'p', {}, [('owner', ROOT_USER)], None, 1000) == (
        "p: owner is '%s', but only root may give a path to another user and this process runs as uid 1000; expected to run as root "
        '(become: true)' % ROOT_USER)
    io._check_owner_change('p', {}, [('owner', 'no-such-user-x'), ('group', 'no-such-group-x')], None, 1000)


def test_group_change_needs_a_group_of_ours(monkeypatch):
    gid = grp.getgrnam(ROOT_GROUP).gr_gid
    monkeypatch.setattr(os, 'getgroups', lambda: [])
    monkeypatch.setattr(os, 'getegid', lambda: gid + 1)
    assert error(io._check_owner_change, 'p', {}, [('group', ROOT_GROUP)], None, 1000) == (
        "p: group is '%s', but this process (uid 1000) is not in that group; expected to run as root (become: true)" % ROOT_GROUP)
    monkeypatch.setattr(os, 'getegid', lambda: gid)
    io._check_owner_change('p', {}, [('group', ROOT_GROUP)], None, 1000)
    monkeypatch.setattr(os, 'getgroups', lambda: [gid])
    monkeypatch.setattr(os, 'getegid', lambda: gid + 1)
    io._check_owner_change('p', {}, [('group', ROOT_GROUP)], None, 1000)


def test_decode_contents_whole_messages():
    entries = [{'dest': '/d', 'state': 'directory'}, {'dest': '/f', 'state': 'file', 'checksum': sha1(b'data')}]
    assert io.decode_contents({'/f': base64.b64encode(b'data').decode()}, entries) == {'/f': b'data'}
    assert io.decode_contents({'/f': base64.b64encode(b'data')}, entries) == {'/f': b'data'}
    assert error(io.decode_contents, {'/d': ''}, entries) == "contents has '/d', expected only the dest of a file entry of files"
    assert error(io.decode_contents, {'/f': 'no base64!' * 10}, entries) == (
        "contents[/f] is %s..., expected base64 text (the action plugin sends the files it reads that way)" % repr('no base64!' * 10)[:57])
    assert error(io.decode_contents, {'/f': base64.b64encode(b'other').decode()}, entries) == (
        'contents[/f] has SHA-1 %s, expected the content of files[1] (/f) (checksum %s)' % (sha1(b'other'), sha1(b'data')))


@pytest.mark.parametrize('data, text', [
    (None, None), (b'', ''), (b'a' * 65536, 'a' * 65536), (b'a' * 65537, None), (b'\xff', None), (b'caf\xc3\xa9', 'caf\u00e9')])
def test_text_or_none(data, text):
    assert io._text_or_none(data) == text


def header(path):
    return {'before_header': path, 'after_header': path}


def test_diff_of_a_changed_file_and_its_attributes(tmp_path):
    path = str(tmp_path / 'f')
    (tmp_path / 'f').write_bytes(b'old\n')
    current = {'type': 'file', 'mode': 0o600, 'owner': 'root', 'group': 'root', 'checksum': sha1(b'old\n')}
    steps = [('content', None), ('mode', 0o644), ('owner', 'slurm'), ('group', 'slurm')]
    assert io.diff_of({'dest': path, 'state': 'file'}, current, steps, b'new\n') == [
        dict(header(path), before={'path': path, 'state': 'file', 'mode': '0600', 'owner': 'root', 'group': 'root'},
             after={'path': path, 'state': 'file', 'mode': '0644', 'owner': 'slurm', 'group': 'slurm'}),
        dict(header(path), before='old\n', after='new\n')]


def test_diff_of_content_that_cannot_be_shown(tmp_path):
    path = str(tmp_path / 'f')
    (tmp_path / 'f').write_bytes(b'a' * 65537)
    current = {'type': 'file', 'mode': 0o644}
    large = dict(header(path), before='binary or large content', after='binary or large content (changed)\n')
    assert io.diff_of({'dest': path, 'state': 'file'}, current, [('content', None)], b'small\n')[1] == large
    (tmp_path / 'f').write_bytes(b'a' * 65536)
    assert io.diff_of({'dest': path, 'state': 'file'}, current, [('content', None)], b'small\n')[1] == dict(
        header(path), before='a' * 65536, after='small\n')
    assert io.diff_of({'dest': path, 'state': 'file'}, current, [('content', None)], b'\xff')[1] == large
    os.remove(path)   # gone since it was read: shown as large, not as new
    assert io.diff_of({'dest': path, 'state': 'file'}, current, [('content', None)], b'small\n')[1] == large
    # a link replaced by a file: there was no content before
    assert io.diff_of({'dest': path, 'state': 'file'}, {'type': 'link', 'target': 'x'}, [('remove', 'link'), ('create', 'file')],
                      b'new\n')[1] == dict(header(path), before='', after='new\n')


def test_diff_of_a_new_secret_and_a_link():
    assert io.diff_of({'dest': '/s', 'state': 'file', 'secret': True}, None, [('create', 'file'), ('mode', 0o400)], b'key') == [
        dict(header('/s'), before={'path': '/s', 'state': 'absent', 'mode': None}, after={'path': '/s', 'state': 'file', 'mode': '0400'}),
        dict(header('/s'), before='', after='the content is secret (changed)\n')]
    assert io.diff_of({'dest': '/l', 'state': 'link', 'target': 'b'}, None, [('create', 'link')], None) == [
        dict(header('/l'), before={'path': '/l', 'state': 'absent', 'target': None}, after={'path': '/l', 'state': 'link', 'target': 'b'})]
    assert io.diff_of({'dest': '/d', 'state': 'directory'}, {'type': 'directory'}, [('mode', 0o755)], None) == [
        dict(header('/d'), before={'path': '/d', 'state': 'directory', 'mode': None}, after={'path': '/d', 'state': 'directory', 'mode': '0755'})]


def test_failure_message_whole():
    steps = [('create', 'file'), ('mode', 0o644), ('owner', 'slurm')]
    assert io.failure_message(2, {'dest': '/etc/x'}, steps, [('parent', '/etc'), ('create', 'file')], ['/etc/a'],
                              OSError(1, 'Operation not permitted')) == (
        'install_files: files[2] (/etc/x): mode 0644 failed: Operation not permitted; of this entry, done: made /etc, create file; '
        'applied before it: /etc/a; run again to complete the set', 'Operation not permitted')
    assert io.failure_message(0, {'dest': '/etc/x'}, steps, [], [], ValueError('bad')) == (
        'install_files: files[0] (/etc/x): create file failed: bad; applied before it: nothing; nothing was changed', 'bad')
    assert io.failure_message(0, {'dest': '/etc/x'}, steps[:1], [('create', 'file')], [], OSError('late')) == (
        'install_files: files[0] (/etc/x): create file failed: late; of this entry, done: create file; applied before it: nothing; '
        'run again to complete the set', 'late')
    # every step done, and still an error (the last one's check): the last step failed
    assert io.failure_message(0, {'dest': '/x'}, steps[:2], steps[:2], [], OSError(5, 'I/O error'))[0] == (
        'install_files: files[0] (/x): mode 0644 failed: I/O error; of this entry, done: create file, mode 0644; applied before it: '
        'nothing; run again to complete the set')
    assert io.failure_message(0, {'dest': '/x'}, steps, [('parent', '/a')], [], OSError(5, 'I/O error'))[0] == (
        'install_files: files[0] (/x): create file failed: I/O error; of this entry, done: made /a; applied before it: nothing; '
        'run again to complete the set')


def test_restarts_of():
    restarts = [{'daemon': 'slurmd', 'action': 'restart', 'reason': 'gres'}, {'daemon': 'slurmctld', 'action': 'reconfigure'}]
    entries = [{'dest': '/etc/a', 'restarts': restarts}, {'dest': '/etc/b', 'restarts': restarts}, {'dest': '/etc/c'},
               {'dest': '/etc/d', 'restarts': []}]
    plans = [(None, [('content', None), ('mode', 0o644), ('group', 'slurm'), ('owner', 'slurm')]), (None, [('mode', 0o600)]),
             (None, [('content', None)]), (None, [('content', None)])]
    assert io.restarts_of(entries, plans) == [
        {'daemon': 'slurmd', 'action': 'restart', 'reason': '/etc/a changed (content): gres'},
        {'daemon': 'slurmctld', 'action': 'reconfigure', 'reason': '/etc/a changed (content)'}]


def test_plan_whole(tmp_path):
    base = str(tmp_path)
    (tmp_path / 'd').mkdir()
    entries = [{'dest': base + '/d', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')}]
    assert error(io.plan, entries, False, {}) == (
        "files[0] (%s/d): state is 'file', but %s/d is a directory; expected a file or nothing there (move the directory away first, "
        'it is not removed)' % (base, base))
    assert error(io.plan, [{'dest': base + '/x', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b''), 'owner': 'no-such-user-x'}],
                 False, {}) == "files[0] (%s/x): owner is 'no-such-user-x', expected a user that exists on this node" % base
    # check mode: a user a package of this run would make
    assert io.plan([{'dest': base + '/x', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b''), 'owner': 'no-such-user-x'}],
                   True, {}) == [(None, [('create', 'file'), ('mode', 0o644), ('owner', 'no-such-user-x')])]


def plans_of(entries):
    return [(io.read_current(entry['dest']), io.file_set.plan_entry(entry, io.read_current(entry['dest']))) for entry in entries]


def test_check_places_as_earlier_entries_leave_the_node(tmp_path):
    base = str(tmp_path)
    (tmp_path / 'old').write_text('')
    entries = [{'dest': base + '/a/b', 'state': 'directory', 'mode': 0o755},
               {'dest': base + '/a/b/f', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')},
               {'dest': base + '/old', 'state': 'absent'},
               {'dest': base + '/old/x', 'state': 'directory', 'mode': 0o755},
               {'dest': base + '/l', 'state': 'link', 'target': 'a'},
               {'dest': base + '/l/y', 'state': 'directory', 'mode': 0o755}]
    assert error(io.check_places, entries, plans_of(entries)) == (
        "files[5] (%s/l/y): dest is '%s/l/y', but %s/l is a link (files[4] makes it one), not a directory; expected a path whose "
        'parents are directories' % (base, base, base))
    # the missing parents of a directory entry are made with it: later entries may go into them
    beside = entries[:5] + [{'dest': base + '/a/g', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')}]
    io.check_places(beside, plans_of(beside))
    # a link already as wanted changes nothing and leaves nothing for later entries to judge by
    os.mkdir(base + '/a')
    os.symlink('a', base + '/l')
    io.check_places(entries, plans_of(entries))


def test_check_places_whole_messages(tmp_path, monkeypatch):
    base = str(tmp_path)
    (tmp_path / 'f').write_text('')
    new = [{'dest': base + '/new', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')}]
    chmod = [{'dest': base + '/f', 'state': 'file', 'mode': 0o600, 'checksum': sha1(b'')}]
    same = [{'dest': base + '/f', 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')}]
    os.chmod(base + '/f', 0o644)
    io.check_places(same, plans_of(same))
    monkeypatch.setattr(io, '_read_only', lambda path: path == base)
    assert error(io.check_places, new, plans_of(new)) == (
        "files[0] (%s/new): dest is '%s/new', but %s is on a read-only file system; expected a path on a writable file system" % (base, base, base))
    io.check_places(chmod, plans_of(chmod))
    monkeypatch.setattr(io, '_read_only', lambda path: True)
    assert error(io.check_places, chmod, plans_of(chmod)) == (
        "files[0] (%s/f): dest is '%s/f', but it is on a read-only file system; expected a path on a writable file system" % (base, base))
    io.check_places(same, plans_of(same))   # nothing to change: nothing to judge
    monkeypatch.setattr(io, '_writable', lambda path: False)
    assert error(io.check_places, new, plans_of(new)) == (
        "files[0] (%s/new): dest is '%s/new', but this process may not create or remove entries in %s; expected a path in a directory "
        'this process may write (become: true?)' % (base, base, base))
    monkeypatch.setattr(io, '_read_only', lambda path: False)
    plans = plans_of(chmod)
    os.remove(base + '/f')   # gone since it was read
    assert error(io.check_places, chmod, plans) == (
        "files[0] (%s/f): dest is '%s/f', but it cannot be checked: No such file or directory; expected a path this process can look "
        'at' % (base, base))


def test_check_mode_takes_a_missing_directory_an_earlier_task_would_make(tmp_path):
    entries = [{'dest': str(tmp_path / 'etc' / 'new'), 'state': 'file', 'mode': 0o644, 'checksum': sha1(b'')}]
    assert io.plan(entries, True, {}) == [(None, [('create', 'file'), ('mode', 0o644)])]
    io.check_places(entries, plans_of(entries), check_mode=True)
    assert error(io.plan, entries, False, {}).startswith("files[0] (%s/etc/new): dest is '%s/etc/new', but its directory %s/etc does not "
                                                         'exist; ' % (tmp_path, tmp_path, tmp_path))


def test_a_mode_change_of_a_path_of_another_user(tmp_path, monkeypatch):
    (tmp_path / 'f').write_text('')
    os.chmod(str(tmp_path / 'f'), 0o644)
    owner = os.stat(str(tmp_path / 'f')).st_uid
    monkeypatch.setattr(os, 'geteuid', lambda: owner + 1)
    entries = [{'dest': str(tmp_path / 'f'), 'state': 'file', 'mode': 0o600, 'checksum': sha1(b'')}]
    assert error(io.check_places, entries, plans_of(entries)) == (
        "files[0] (%s/f): mode is '0600', but the path is owned by uid %d and this process runs as uid %d; expected to run as root or "
        'as the owner (become: true)' % (tmp_path, owner, owner + 1))


def test_a_path_that_cannot_be_read(monkeypatch):
    def refused(path):
        raise PermissionError(13, 'Permission denied')
    monkeypatch.setattr(io, 'read_current', refused)
    assert error(io.plan, [{'dest': '/x', 'state': 'absent'}], True, {}) == (
        "files[0] (/x): dest is '/x', but it cannot be read: Permission denied; expected a path this process can look at")


def test_diff_of_a_changed_link_and_a_changed_secret(tmp_path):
    assert io.diff_of({'dest': '/l', 'state': 'link', 'target': 'b'}, {'type': 'link', 'target': 'a'},
                      [('remove', 'link'), ('create', 'link')], None) == [
        dict(header('/l'), before={'path': '/l', 'state': 'link', 'target': 'a'}, after={'path': '/l', 'state': 'link', 'target': 'b'})]
    assert io.diff_of({'dest': '/s', 'state': 'file', 'secret': True}, {'type': 'file', 'mode': 0o400}, [('content', None)], b'new')[1] == (
        dict(header('/s'), before='the content is secret', after='the content is secret (changed)\n'))
