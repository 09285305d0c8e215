# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for _munge_key: the munge key's mode and owner, and its directory's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import stat

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _munge_key as mk

FILE, DIR = stat.S_IFREG, stat.S_IFDIR
MUNGE = 103
KEY = '/etc/munge/munge.key'


def seen(key_mode=0o400, key_uid=MUNGE, dir_mode=0o700, dir_uid=MUNGE, uid=MUNGE, key_type=FILE, dir_type=DIR, key=None, folder=None):
    return {'path': KEY, 'user': 'munge', 'uid': uid,
            'key': key if key is not None else {'mode': key_type | key_mode, 'uid': key_uid, 'owner': 'root' if key_uid == 0 else None},
            'dir': folder if folder is not None else {'mode': dir_type | dir_mode, 'uid': dir_uid}}


@pytest.mark.parametrize('observed, expected', [
    (seen(), []),
    (seen(key_mode=0o600), []),
    (seen(key_mode=0o644), ["munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: "
                            "whoever reads the key can forge any user's credentials)"]),
    (seen(key_mode=0o440), ['munge key /etc/munge/munge.key has mode 0440, expected 0400 or 0600 (no group or other access: '
                            "whoever reads the key can forge any user's credentials)"]),
    (seen(key_mode=0o404), ['munge key /etc/munge/munge.key has mode 0404, expected 0400 or 0600 (no group or other access: '
                            "whoever reads the key can forge any user's credentials)"]),
    (seen(key_mode=0o700), ['munge key /etc/munge/munge.key has mode 0700, expected 0400 or 0600 (no group or other access: '
                            "whoever reads the key can forge any user's credentials)"]),
    (seen(key_mode=0o4600), ['munge key /etc/munge/munge.key has mode 4600, expected 0400 or 0600 (no group or other access: '
                             "whoever reads the key can forge any user's credentials)"]),
    (seen(key_mode=0o000), ['munge key /etc/munge/munge.key has mode 0000, expected 0400 or 0600 (no group or other access: '
                            "whoever reads the key can forge any user's credentials)"]),
    (seen(key_uid=0), ['munge key /etc/munge/munge.key is owned by uid 0 (root), expected munge (uid 103)']),
    (seen(key_uid=1000), ['munge key /etc/munge/munge.key is owned by uid 1000, expected munge (uid 103)']),
    (seen(key_type=DIR), ['munge key /etc/munge/munge.key is not a regular file; expected a file of mode 0400 or 0600 owned by munge']),
    (seen(key={'error': 'No such file or directory'}),
     ['munge key /etc/munge/munge.key cannot be read: No such file or directory; expected a file of mode 0400 or 0600 owned by munge']),
    (seen(dir_mode=0o755), ['munge key directory /etc/munge has mode 0755, expected 0700']),
    (seen(dir_mode=0o750), ['munge key directory /etc/munge has mode 0750, expected 0700']),
    (seen(dir_mode=0o500), ['munge key directory /etc/munge has mode 0500, expected 0700']),
    (seen(dir_uid=0), ['munge key directory /etc/munge is owned by uid 0, expected munge (uid 103)']),
    (seen(dir_type=FILE), ['munge key directory /etc/munge is not a directory']),
    (seen(folder={'error': 'Permission denied'}),
     ['munge key directory /etc/munge cannot be read: Permission denied; expected a directory of mode 0700 owned by munge']),
    (seen(uid=None), ['there is no user munge to own the munge key /etc/munge/munge.key (munged runs as that user)']),
    (seen(key_mode=0o644, key_uid=0, dir_mode=0o777), [
        "munge key /etc/munge/munge.key has mode 0644, expected 0400 or 0600 (no group or other access: "
        "whoever reads the key can forge any user's credentials)",
        'munge key /etc/munge/munge.key is owned by uid 0 (root), expected munge (uid 103)',
        'munge key directory /etc/munge has mode 0777, expected 0700']),
])
def test_problems(observed, expected):
    assert mk.problems(observed) == expected


@pytest.mark.parametrize('observed', [None, {}, {'path': KEY}, {'path': KEY, 'key': {}, 'dir': None}, 'x'])
def test_problems_refuses_a_malformed_observation(observed):
    with pytest.raises(ValueError, match='munge key observation'):
        mk.problems(observed)


ME = pwd.getpwuid(os.getuid()).pw_name


@pytest.mark.parametrize('key_mode, dir_mode, count', [(0o400, 0o700, 0), (0o600, 0o700, 0), (0o644, 0o700, 1), (0o600, 0o711, 1), (0o666, 0o755, 2)])
def test_observe_real_files(tmp_path, key_mode, dir_mode, count):
    folder = tmp_path / 'munge'
    folder.mkdir()
    key = folder / 'munge.key'
    key.write_bytes(b'x' * 32)
    os.chmod(str(key), key_mode)
    os.chmod(str(folder), dir_mode)
    observed = mk.observe(str(key), ME)
    assert observed['uid'] == os.getuid()
    assert stat.S_IMODE(observed['key']['mode']) == key_mode and observed['key']['owner'] == ME
    assert len(mk.problems(observed)) == count


def test_observe_missing_key_and_unknown_user(tmp_path):
    observed = mk.observe(str(tmp_path / 'nope' / 'munge.key'), 'no-such-user-gpucluster')
    assert observed['uid'] is None
    assert observed['key'] == {'error': 'No such file or directory'}
    assert mk.problems(observed)[0] == 'there is no user no-such-user-gpucluster to own the munge key %s (munged runs as that user)' % (
        tmp_path / 'nope' / 'munge.key')


# Found by mutation testing (benchmarks/mutation.sh): the exact message, every malformed part on its own,
# and a bare file name whose directory is ".".
@pytest.mark.parametrize('observed', [
    {'key': {'mode': 0o100400, 'uid': 103}, 'dir': {'mode': 0o40700, 'uid': 103}},
    {'path': KEY, 'key': None, 'dir': {'mode': 0o40700, 'uid': 103}},
])
def test_problems_malformed_message(observed):
    with pytest.raises(ValueError) as err:
        mk.problems(observed)
    assert str(err.value) == 'munge key observation %r lacks path, key or dir' % (observed,)


def test_problems_bare_file_name_names_the_current_directory():
    observed = {'path': 'munge.key', 'user': 'munge', 'uid': 103, 'key': {'mode': 0o100400, 'uid': 103}, 'dir': {'error': 'Permission denied'}}
    assert mk.problems(observed) == [
        'munge key directory . cannot be read: Permission denied; expected a directory of mode 0700 owned by munge']


def test_observe_bare_file_name_looks_at_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / 'munge.key').write_bytes(b'x' * 32)
    monkeypatch.chdir(str(tmp_path))
    observed = mk.observe('munge.key', ME)
    assert observed['dir'] == {'mode': os.stat(str(tmp_path)).st_mode, 'uid': os.getuid(), 'owner': ME}


def test_observe_error_without_strerror_is_the_exception_text(monkeypatch):
    def stat_fails(path):
        raise OSError('stat of %s refused' % path)
    monkeypatch.setattr(mk.os, 'stat', stat_fails)
    assert mk.observe('/etc/munge/munge.key', ME)['key'] == {'error': 'stat of /etc/munge/munge.key refused'}


# --- which key munged reads: its command line (the role's drop-in adds --key-file for a munge_key_path not the default) ---

@pytest.mark.parametrize('argv, expected', [
    (['/usr/sbin/munged'], KEY),
    ([], KEY),
    (None, KEY),
    (['/usr/sbin/munged', '--num-threads', '4'], KEY),
    (['/usr/sbin/munged', '--key-file=/etc/munge/site.key'], '/etc/munge/site.key'),
    (['/usr/sbin/munged', '--key-file', '/etc/munge/site.key'], '/etc/munge/site.key'),
    # the drop-in puts its --key-file after the site's OPTIONS: the last one wins, as in munged's getopt loop
    (['/usr/sbin/munged', '--key-file=/etc/munge/old.key', '--num-threads=2', '--key-file=/etc/munge/site.key'], '/etc/munge/site.key'),
    (['/usr/sbin/munged', '--key-file'], KEY),  # no value: munged itself refuses it
    (['/usr/sbin/munged', '--', '--key-file=/x/munge/k'], KEY),
    (['munged', '--key-filex=/etc/munge/site.key'], KEY),
])
def test_key_path_of(argv, expected):
    assert mk.key_path_of(argv) == expected


def _proc(tmp_path, processes):
    for pid, argv in processes.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'cmdline').write_bytes(b'\0'.join(a.encode() for a in argv) + b'\0')
    (tmp_path / 'self').mkdir()
    return str(tmp_path)


def test_running_key_path_reads_munged_command_line(tmp_path):
    proc = _proc(tmp_path, {1: ['/sbin/init'], 77: ['/usr/sbin/munged', '--key-file=/etc/munge/site.key'], 9: ['bash']})
    assert mk.running_key_path(proc) == '/etc/munge/site.key'


@pytest.mark.parametrize('argv, expected', [(['/usr/sbin/munged'], KEY), (['/usr/sbin/slurmd'], None)])
def test_running_key_path_default_and_none(tmp_path, argv, expected):
    assert mk.running_key_path(_proc(tmp_path, {5: argv})) == expected


def test_running_key_path_without_proc(tmp_path):
    assert mk.running_key_path(str(tmp_path / 'no-proc')) is None


def test_running_key_path_skips_a_process_that_went_away(tmp_path):
    proc = _proc(tmp_path, {12: ['/usr/sbin/munged', '--key-file', '/etc/munge/site.key']})
    (tmp_path / '3').mkdir()  # no cmdline: gone between listdir and open
    assert mk.running_key_path(proc) == '/etc/munge/site.key'
