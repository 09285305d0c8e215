# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_munge_key compared whole (issue 43): observe's defaults, the pid order in /proc, a command line that is not UTF-8,
the user's default, and which findings stand alone."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import stat

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _munge_key as mk

FILE, DIR = stat.S_IFREG, stat.S_IFDIR


def test_the_defaults():
    assert (mk.KEY_PATH, mk.USER, mk.KEY_MODES, mk.DIR_MODE) == ('/etc/munge/munge.key', 'munge', (0o400, 0o600), 0o700)


class Stat(object):
    def __init__(self, mode, uid):
        self.st_mode, self.st_uid = mode, uid


class Pw(object):
    def __init__(self, name, uid):
        self.pw_name, self.pw_uid = name, uid


def test_observe_looks_at_the_default_key_and_user(monkeypatch):
    looked = []

    def fake_stat(path):
        looked.append(path)
        return Stat(FILE | 0o400, 103) if path.endswith('.key') else Stat(DIR | 0o700, 0)
    users = {103: 'munge', 0: 'root'}

    def getpwuid(uid):
        return Pw(users[uid], uid)

    def getpwnam(name):
        return Pw(name, {'munge': 103}[name])
    monkeypatch.setattr(mk.os, 'stat', fake_stat)
    monkeypatch.setattr(mk.pwd, 'getpwuid', getpwuid)
    monkeypatch.setattr(mk.pwd, 'getpwnam', getpwnam)
    assert mk.observe() == {'path': '/etc/munge/munge.key', 'user': 'munge', 'uid': 103,
                            'key': {'mode': FILE | 0o400, 'uid': 103, 'owner': 'munge'}, 'dir': {'mode': DIR | 0o700, 'uid': 0, 'owner': 'root'}}
    assert looked == ['/etc/munge/munge.key', '/etc/munge']
    assert mk.problems(mk.observe()) == ['munge key directory /etc/munge is owned by uid 0 (root), expected munge (uid 103)']


def _proc(tmp_path, processes):
    for pid, raw in processes.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'cmdline').write_bytes(raw)
    return str(tmp_path)


def test_the_lowest_pid_of_munged_counts(tmp_path):
    proc = _proc(tmp_path, {10: b'/usr/sbin/munged\0--key-file=/etc/munge/ten.key\0',
                            9: b'/usr/sbin/munged\0--key-file=/etc/munge/nine.key\0', 100: b'munged\0'})
    assert mk.running_key_path(proc) == '/etc/munge/nine.key'


def test_a_command_line_that_is_not_utf8(tmp_path):
    proc = _proc(tmp_path, {4: b'/usr/sbin/munged\0--key-file=/etc/munge/k\xff.key\0'})
    assert mk.running_key_path(proc) == '/etc/munge/k\udcff.key'


def test_an_empty_command_line_is_no_munged(tmp_path):
    proc = _proc(tmp_path, {3: b'', 4: b'\0munged\0--key-file=/m/k\0'})
    assert mk.running_key_path(proc) == '/m/k'


def seen(key, folder, uid=103, **extra):
    observed = {'path': '/etc/munge/munge.key', 'uid': uid, 'key': key, 'dir': folder}
    observed.update(extra)
    return observed


@pytest.mark.parametrize('observed, found', [
    # no user: the ownership is not judged, the user's default name is munge
    (seen({'mode': FILE | 0o400, 'uid': 0, 'owner': 'root'}, {'mode': DIR | 0o700, 'uid': 0}, uid=None),
     ['there is no user munge to own the munge key /etc/munge/munge.key (munged runs as that user)']),
    (seen({'mode': FILE | 0o400, 'uid': 103}, {'mode': FILE | 0o755, 'uid': 103}), ['munge key directory /etc/munge is not a directory']),
    (seen({'mode': DIR | 0o644, 'uid': 7}, {'mode': DIR | 0o700, 'uid': 103, 'owner': 'munge'}, user='mungeuser'),
     ['munge key /etc/munge/munge.key is not a regular file; expected a file of mode 0400 or 0600 owned by mungeuser',
      'munge key /etc/munge/munge.key is owned by uid 7, expected mungeuser (uid 103)']),
    (seen({'error': 'Permission denied'}, {'mode': DIR | 0o700, 'uid': 5, 'owner': 'five'}, user=''),
     ['munge key /etc/munge/munge.key cannot be read: Permission denied; expected a file of mode 0400 or 0600 owned by munge',
      'munge key directory /etc/munge is owned by uid 5 (five), expected munge (uid 103)']),
    (seen({'mode': FILE | 0o600, 'uid': 103}, {'error': 'gone'}, path='/m/k'),
     ['munge key directory /m cannot be read: gone; expected a directory of mode 0700 owned by munge']),
])
def test_problems_whole(observed, found):
    assert mk.problems(observed) == found
