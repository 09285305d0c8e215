# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm/_pending_restart_io compared whole (issue 43): the directory is synced after each write and removal (and a
directory that cannot be synced is no error), a process's start on the boot clock from its stat line, the boot id's
line end, a marker of another boot not carried over."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io

# /proc/PID/stat of a process named "a) b" that started 123456 ticks after boot (field 22)
STAT = '4242 (a) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0\n'


def _opener(files):
    real = open

    def fake(path, *args, **kwargs):
        if path in files:
            return io.StringIO(files[path])
        return real(path, *args, **kwargs)
    return fake


def test_process_started_reads_field_22_in_clock_ticks(monkeypatch):
    monkeypatch.setattr(pending_io, 'open', _opener({'/proc/4242/stat': STAT}), raising=False)
    monkeypatch.setattr(pending_io.os, 'sysconf', lambda name: {'SC_CLK_TCK': 100}[name])
    assert pending_io.process_started(4242) == 1234.56


def test_process_started_of_a_garbled_stat_is_none(monkeypatch):
    monkeypatch.setattr(pending_io, 'open', _opener({'/proc/7/stat': '7 (x) S 1 2\n', '/proc/8/stat': '8 x S\n'}), raising=False)
    assert pending_io.process_started(7) is None
    assert pending_io.process_started(8) is None


def test_boot_id_without_its_line_end(monkeypatch):
    monkeypatch.setattr(pending_io, 'open', _opener({'/proc/sys/kernel/random/boot_id': ' 6f1c-boot \n'}), raising=False)
    assert pending_io.boot_id() == '6f1c-boot'


def test_the_uptime_clock_reads_the_first_number(monkeypatch):
    monkeypatch.delattr(pending_io.time, 'CLOCK_BOOTTIME')
    monkeypatch.setattr(pending_io, 'open', _opener({'/proc/uptime': '350735.47 234388.90\n'}), raising=False)
    assert pending_io.boot_clock() == 350735.47


def test_writes_and_removals_sync_the_directory(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(pending_io, '_sync_dir', synced.append)
    directory = str(tmp_path)
    assert pending_io.write_markers(directory, [{'daemon': 'slurmd', 'action': 'restart', 'reason': None},
                                                {'daemon': 'munge', 'action': 'restart'}]) == ['slurmd', 'munge']
    assert synced == [directory]
    assert json.loads((tmp_path / 'slurmd.json').read_text())['reasons'] == []
    assert pending_io.remove_marker(directory, 'slurmd') is True
    assert synced == [directory, directory]
    assert pending_io.remove_marker(directory, 'slurmd') is False
    assert synced == [directory, directory]


def test_sync_dir_opens_syncs_and_closes(tmp_path, monkeypatch):
    calls = []
    real_open, real_close = os.open, os.close

    def fake_open(path, flags):
        calls.append(('open', path, flags))
        return real_open(path, flags)

    def fake_fsync(fd):
        calls.append(('fsync', fd))
        raise OSError(22, 'Invalid argument')

    def fake_close(fd):
        calls.append(('close', fd))
        real_close(fd)
    monkeypatch.setattr(pending_io.os, 'open', fake_open)
    monkeypatch.setattr(pending_io.os, 'fsync', fake_fsync)
    monkeypatch.setattr(pending_io.os, 'close', fake_close)
    pending_io._sync_dir(str(tmp_path))          # an fsync that fails is no error
    fd = calls[1][1]
    assert calls == [('open', str(tmp_path), os.O_RDONLY), ('fsync', fd), ('close', fd)]
    del calls[:]
    pending_io._sync_dir(str(tmp_path / 'gone'))  # a directory that cannot be opened: nothing to sync
    assert calls == [('open', str(tmp_path / 'gone'), os.O_RDONLY)]


def test_a_marker_of_another_boot_is_not_carried_over(tmp_path, monkeypatch):
    monkeypatch.setattr(pending_io, 'boot_id', lambda: 'this-boot')
    old = {'daemon': 'slurmd', 'action': 'restart', 'reasons': ['old'], 'boot_id': 'last-boot', 'since': 1.0, 'written': 1.0}
    (tmp_path / 'slurmd.json').write_text(json.dumps(old))
    pending_io.write_markers(str(tmp_path), [{'daemon': 'slurmd', 'action': 'reconfigure', 'reason': 'new'}])
    marker = json.loads((tmp_path / 'slurmd.json').read_text())
    assert (marker['action'], marker['reasons'], marker['boot_id']) == ('reconfigure', ['new'], 'this-boot')
