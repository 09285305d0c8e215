# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node's side of pending restarts (slurm/_pending_restart_io): marker files in a temporary directory, this process's clocks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import stat
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _pending_restart_io as pending_io


def _refuse_open(*args, **kwargs):
    raise IOError(errno.EACCES, 'refused')


def test_boot_id_is_the_kernels_uuid_and_empty_when_unreadable(monkeypatch):
    assert re.match(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', pending_io.boot_id())
    monkeypatch.setattr(pending_io, 'open', _refuse_open, raising=False)
    assert pending_io.boot_id() == ''


def test_boot_clock_is_the_boot_time_clock_or_the_uptime():
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    assert before <= pending_io.boot_clock() <= time.clock_gettime(time.CLOCK_BOOTTIME)


def test_boot_clock_without_clock_boottime_reads_proc_uptime(monkeypatch):
    before = time.clock_gettime(time.CLOCK_BOOTTIME)
    monkeypatch.delattr(time, 'CLOCK_BOOTTIME')
    uptime = pending_io.boot_clock()
    monkeypatch.undo()
    assert isinstance(uptime, float) and before - 0.02 <= uptime <= time.clock_gettime(time.CLOCK_BOOTTIME) + 0.02


def test_process_started_of_this_process_and_of_none():
    started = pending_io.process_started(os.getpid())
    assert 0 < started <= pending_io.boot_clock()
    assert pending_io.process_started(2 ** 22 + 1) is None


def test_path_of():
    assert pending_io.path_of('/var/lib/gpucluster/pending', 'slurmd') == '/var/lib/gpucluster/pending/slurmd.json'


def test_read_marker_none_when_absent_the_marker_when_there(tmp_path):
    assert pending_io.read_marker(str(tmp_path), 'slurmd', 'b') is None
    data = {'daemon': 'slurmd', 'action': 'reconfigure', 'reasons': ['x'], 'boot_id': 'b', 'since': 12.5, 'written': 3}
    (tmp_path / 'slurmd.json').write_text(json.dumps(data))
    assert pending_io.read_marker(str(tmp_path), 'slurmd', 'b') == data


def test_an_unreadable_marker_dates_from_its_mtime_on_the_boot_clock(tmp_path):
    path = tmp_path / 'slurmd.json'
    path.write_bytes(b'{\xff')
    os.utime(str(path), (time.time() - 100, time.time() - 100))
    read = pending_io.read_marker(str(tmp_path), 'slurmd', 'b')
    now = pending_io.boot_clock()
    assert read['reasons'] == ["its marker could not be read ('{\ufffd')"]
    assert (read['action'], read['boot_id'], read['written']) == ('restart', 'b', None)
    assert now - 101 <= read['since'] <= now - 99


def test_a_marker_from_the_future_dates_from_now(tmp_path):
    path = tmp_path / 'slurmd.json'
    path.write_text('garbled')
    os.utime(str(path), (time.time() + 1000, time.time() + 1000))
    before = pending_io.boot_clock()
    since = pending_io.read_marker(str(tmp_path), 'slurmd', 'b')['since']
    assert before <= since <= pending_io.boot_clock()


def test_a_marker_over_a_mebibyte_is_not_read_whole(tmp_path):
    data = {'daemon': 'slurmd', 'action': 'reconfigure', 'reasons': ['x' * (1 << 20)], 'boot_id': 'b', 'since': 12.5, 'written': 3}
    (tmp_path / 'slurmd.json').write_text(json.dumps(data))
    read = pending_io.read_marker(str(tmp_path), 'slurmd', 'b')
    assert (read['action'], read['written']) == ('restart', None)
    assert read['reasons'] == ['its marker could not be read (%s)' % pending_io.pending.show(json.dumps(data)[:80])]


def test_read_marker_raises_what_is_not_a_missing_file(tmp_path):
    (tmp_path / 'slurmd.json').mkdir()
    with pytest.raises(OSError) as err:
        pending_io.read_marker(str(tmp_path), 'slurmd', 'b')
    assert err.value.errno == errno.EISDIR


def test_write_markers_of_nothing_makes_nothing(tmp_path):
    assert pending_io.write_markers(str(tmp_path / 'pending'), []) == []
    assert not (tmp_path / 'pending').exists()


def test_write_markers_makes_the_directory_and_merges(tmp_path):
    directory = str(tmp_path / 'a' / 'pending')
    before = pending_io.boot_clock()
    mask = os.umask(0)
    try:
        assert pending_io.write_markers(directory, [{'daemon': 'slurmd', 'action': 'reconfigure', 'reason': 'one'},
                                                    {'daemon': 'munge', 'action': 'restart', 'reason': ''}]) == ['slurmd', 'munge']
    finally:
        os.umask(mask)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o755
    with open(os.path.join(directory, 'slurmd.json')) as handle:
        written = json.load(handle)
    assert sorted(written) == ['action', 'boot_id', 'daemon', 'reasons', 'since', 'written']
    assert (written['daemon'], written['action'], written['reasons'], written['boot_id']) == ('slurmd', 'reconfigure', ['one'], pending_io.boot_id())
    assert sorted(os.listdir(directory)) == ['munge.json', 'slurmd.json']
    assert stat.S_IMODE(os.stat(os.path.join(directory, 'slurmd.json')).st_mode) == 0o644
    munge = pending_io.read_marker(directory, 'munge', pending_io.boot_id())
    assert (munge['action'], munge['reasons'], munge['boot_id']) == ('restart', [], pending_io.boot_id())
    assert pending_io.write_markers(directory, [{'daemon': 'slurmd', 'action': 'restart', 'reason': 'two'}]) == ['slurmd']
    slurmd = pending_io.read_marker(directory, 'slurmd', pending_io.boot_id())
    assert (slurmd['action'], slurmd['reasons']) == ('restart', ['one', 'two'])
    assert before <= slurmd['since'] <= pending_io.boot_clock() and abs(slurmd['written'] - time.time()) < 60


def test_a_garbled_marker_stays_a_restart_when_a_change_is_added(tmp_path):
    (tmp_path / 'slurmd.json').write_text('garbled')
    assert pending_io.write_markers(str(tmp_path), [{'daemon': 'slurmd', 'action': 'reconfigure', 'reason': 'new'}]) == ['slurmd']
    merged = pending_io.read_marker(str(tmp_path), 'slurmd', pending_io.boot_id())
    assert (merged['action'], merged['reasons']) == ('restart', ["its marker could not be read ('garbled')", 'new'])


def test_remove_marker_says_whether_there_was_one(tmp_path):
    pending_io.write_markers(str(tmp_path), [{'daemon': 'slurmd', 'action': 'restart'}])
    assert pending_io.remove_marker(str(tmp_path), 'slurmd') is True
    assert os.listdir(str(tmp_path)) == []
    assert pending_io.remove_marker(str(tmp_path), 'slurmd') is False


def test_remove_marker_raises_what_is_not_a_missing_file(tmp_path):
    (tmp_path / 'file').write_text('')
    with pytest.raises(OSError) as err:
        pending_io.remove_marker(str(tmp_path / 'file'), 'slurmd')
    assert err.value.errno == errno.ENOTDIR
