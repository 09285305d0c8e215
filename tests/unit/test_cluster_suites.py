# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Debian releases of the simulated cluster (scripts/lib/common.sh, images.sh): which suites are valid,
which hosts can boot them, and that each suite gets node images of its own (hash and tag)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bash(script, suite=None, fs_type=None):
    """Run ``script`` after sourcing common.sh and images.sh; ``fs_type`` stands in for what stat says of /sys/fs/cgroup."""
    prelude = ''
    if fs_type:
        # shadow stat for /sys/fs/cgroup only: the host's own cgroup version must not decide the test
        prelude = 'stat() { if [ "${!#}" = /sys/fs/cgroup ]; then echo %s; else command stat "$@"; fi; }\n' % fs_type
    env = {'PATH': '/usr/bin:/bin', 'HOME': '/nonexistent'}
    if suite is not None:
        env['GPUCLUSTER_SIM_SUITE'] = suite
    return subprocess.run(['bash', '-c', prelude + '. scripts/lib/common.sh && . scripts/lib/images.sh && ' + script],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, check=False)


def test_the_default_suite_is_trixie():
    assert _bash('echo $GPUCLUSTER_SIM_SUITE').stdout.strip() == 'trixie'


@pytest.mark.parametrize('suite', ['jessie', 'Trixie', 'trixie-backports', ''])
def test_an_unknown_suite_is_refused_naming_the_valid_ones(suite):
    result = _bash('echo reached', suite=suite) if suite else _bash('echo reached', suite='  ')
    assert result.returncode == 1
    assert 'reached' not in result.stdout
    assert 'is not a release the simulated cluster is built from; valid: trixie bookworm forky' in result.stderr


@pytest.mark.parametrize('suite, fs_type, problem', [
    ('trixie', 'tmpfs', ''),
    ('trixie', 'cgroup2fs', ''),
    ('bookworm', 'tmpfs', ''),
    ('forky', 'cgroup2fs', ''),
    ('forky', 'tmpfs', 'Debian forky boots systemd 258 or later, which has no cgroup v1 support, and this host mounts '
                       'cgroup v1 (/sys/fs/cgroup is tmpfs): its nodes cannot boot here'),
])
def test_which_host_can_boot_which_release(suite, fs_type, problem):
    result = _bash('suite_host_problem "$GPUCLUSTER_SIM_SUITE"; echo "cgroup v$(host_cgroup_version)"', suite=suite, fs_type=fs_type)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == 'cgroup v%d' % (2 if fs_type == 'cgroup2fs' else 1)
    if problem:
        assert problem in lines[0]
    else:
        assert lines == [lines[-1]]


def test_images_refuse_a_release_the_host_cannot_boot_before_building_anything():
    result = _bash('pm() { echo "podman $*"; }; ensure_images', suite='forky', fs_type='tmpfs')
    assert result.returncode == 1
    assert 'podman' not in result.stdout
    assert 'its nodes cannot boot here' in result.stderr


def test_each_suite_has_images_of_its_own():
    names = dict((suite, _bash('base_image; node_image', suite=suite).stdout.split()) for suite in ('trixie', 'bookworm'))
    assert names['trixie'][0] != names['bookworm'][0]
    assert names['trixie'][1] != names['bookworm'][1]
    assert all(name.startswith('localhost/gpucluster-sim-') for pair in names.values() for name in pair)
