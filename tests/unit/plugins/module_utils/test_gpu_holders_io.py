# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_gpu_holders_io: the processes holding a node's GPU device files, read from a /proc tree the test lays out
(real symlinks, cgroup and comm files), compared whole (issue 43)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpucluster.bringup.plugins.module_utils import _gpu_holders_io as hio


def process(proc, pid, fds, comm=None, cgroup=None):
    fd_dir = proc / str(pid) / 'fd'
    fd_dir.mkdir(parents=True)
    for number, target in enumerate(fds):
        os.symlink(target, str(fd_dir / str(number)))
    if comm is not None:
        (proc / str(pid) / 'comm').write_bytes(comm)
    if cgroup is not None:
        (proc / str(pid) / 'cgroup').write_text(cgroup)


def test_holders_whole(tmp_path, monkeypatch):
    # every listing in reverse order: the result's order is the function's own
    listdir = os.listdir
    monkeypatch.setattr(hio.os, 'listdir', lambda path: sorted(listdir(path), reverse=True))
    proc, dev = tmp_path / 'proc', str(tmp_path / 'dev')
    process(proc, 300, [dev + '/nvidia0', dev + '/nvidia2', dev + '/nvidia2'], b'py\xffthon\n', '0::/slurm/uid_1/job_4/step_0\n')
    process(proc, 20, [dev + '/nvidia0', '/dev/null'], b'  \n', '0::/system.slice/dcgm.service\n')
    process(proc, 5, [dev + '/nvidiactl', dev + '/nvidia9'], b'other\n')
    process(proc, 7, [dev + '/nvidia2'])
    process(proc, 'self', [dev + '/nvidia0'])
    (proc / '8').mkdir()
    process(proc, 9, [dev + '/nvidia2'])
    (proc / '9' / 'fd' / 'notalink').write_text('')
    found = hio.holders([(0, 0), (1, None), (2, 2)], str(proc), dev)
    assert found == [
        {'pid': 7, 'name': None, 'unit': None, 'job': False, 'gpu': 2, 'device': dev + '/nvidia2'},
        {'pid': 9, 'name': None, 'unit': None, 'job': False, 'gpu': 2, 'device': dev + '/nvidia2'},
        {'pid': 20, 'name': None, 'unit': 'dcgm.service', 'job': False, 'gpu': 0, 'device': dev + '/nvidia0'},
        {'pid': 300, 'name': 'py\ufffdthon', 'unit': None, 'job': True, 'gpu': 0, 'device': dev + '/nvidia0'},
        {'pid': 300, 'name': 'py\ufffdthon', 'unit': None, 'job': True, 'gpu': 2, 'device': dev + '/nvidia2'}]


def test_holders_defaults_and_an_unreadable_proc(tmp_path):
    assert hio.holders([(0, 0)], str(tmp_path / 'none')) == []
    proc = tmp_path / 'proc'
    process(proc, 1, ['/dev/nvidia0'])
    assert hio.holders([(3, 0)], str(proc)) == [{'pid': 1, 'name': None, 'unit': None, 'job': False, 'gpu': 3, 'device': '/dev/nvidia0'}]
    assert hio.holders([], str(proc)) == []


def test_read_text(tmp_path):
    (tmp_path / 'f').write_bytes(b'a\xffb')
    assert hio.read_text(str(tmp_path / 'f')) == 'a\ufffdb'
    assert hio.read_text(str(tmp_path / 'none')) is None
    assert hio.read_text(str(tmp_path)) is None
