# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_atomic_write.write_atomic: the file replaced whole, synced, with its mode and owner; nothing left on failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _atomic_write


@pytest.fixture
def calls(monkeypatch):
    """Record fsync (with the size the file has then), chown and replace, and still do them."""
    seen = []
    real_fsync, real_chown, real_replace = os.fsync, os.chown, os.replace

    def fsync(fd):
        seen.append(('fsync', os.fstat(fd).st_size))
        return real_fsync(fd)

    def chown(path, uid, gid):
        seen.append(('chown', os.path.dirname(path), uid, gid))
        return real_chown(path, uid, gid)

    def replace(src, dst):
        seen.append(('replace', os.path.dirname(src), os.path.basename(src).startswith('.conf.'), dst))
        return real_replace(src, dst)
    monkeypatch.setattr(os, 'fsync', fsync)
    monkeypatch.setattr(os, 'chown', chown)
    monkeypatch.setattr(os, 'replace', replace)
    return seen


def test_replaces_the_file_whole_synced_with_its_mode(tmp_path, calls):
    path = str(tmp_path / 'conf')
    (tmp_path / 'conf').write_bytes(b'old content')
    _atomic_write.write_atomic(path, b'new\n', 0o640)
    assert (tmp_path / 'conf').read_bytes() == b'new\n'
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(str(tmp_path)) == ['conf']
    # written and flushed before the sync; no chown without uid or gid; renamed from beside it
    assert calls == [('fsync', 4), ('replace', str(tmp_path), True, path)]


@pytest.mark.parametrize('uid, gid', [('me', -1), (-1, 'me'), ('me', 'me')])
def test_owner_set_when_given(tmp_path, calls, uid, gid):
    uid, gid = os.getuid() if uid == 'me' else uid, os.getgid() if gid == 'me' else gid
    path = str(tmp_path / 'conf')
    _atomic_write.write_atomic(path, b'x', 0o600, uid=uid, gid=gid)
    assert calls[1] == ('chown', str(tmp_path), uid, gid)
    assert (os.stat(path).st_uid, os.stat(path).st_gid) == (os.getuid(), os.getgid())


def test_a_failure_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / 'conf')
    (tmp_path / 'conf').write_bytes(b'old')

    def refused(path, mode):
        raise PermissionError(1, 'Operation not permitted')
    monkeypatch.setattr(os, 'chmod', refused)
    with pytest.raises(PermissionError):
        _atomic_write.write_atomic(path, b'new', 0o644)
    assert os.listdir(str(tmp_path)) == ['conf']
    assert (tmp_path / 'conf').read_bytes() == b'old'


def test_the_first_error_is_raised_even_when_the_temporary_cannot_be_removed(tmp_path, monkeypatch):
    removed = []
    real_unlink = os.unlink

    def unlink(path):
        removed.append(path)
        real_unlink(path)
        raise OSError(16, 'Device or resource busy')

    def interrupted(src, dst):
        raise KeyboardInterrupt()
    monkeypatch.setattr(os, 'unlink', unlink)
    monkeypatch.setattr(os, 'replace', interrupted)
    with pytest.raises(KeyboardInterrupt):
        _atomic_write.write_atomic(str(tmp_path / 'conf'), b'new', 0o644)
    assert len(removed) == 1 and os.listdir(str(tmp_path)) == []
