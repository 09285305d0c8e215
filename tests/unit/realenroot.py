# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA's real enroot and pyxis for the unit tests, from the release sources the simulated cluster uses.

* ``debs()``: the ``enroot`` and ``enroot+caps`` .deb packages that ``scripts/lib/enroot-build.sh`` builds
  (cached under ``.build/enroot``; the first call on a machine builds them, about a minute);
* ``root()``: the ``enroot`` package unpacked (``dpkg-deb -x``) under ``.build/enroot/root-<hash of the .deb>``;
  ``env()`` runs that enroot from there (``PATH``, ``ENROOT_LIBRARY_PATH``), as the package installs it;
* ``pyxis_archive()``: the pyxis release archive of ``scripts/lib/pyxis-source.sh`` (checked against its checksum).

A build or download that fails fails the test that asked (never a skip).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ENROOT_VERSION = '4.1.2'
PYXIS_VERSION = '0.24.0'
# What the real enroot runs (its package's Depends that a test machine may lack), Debian package by command.
RUNTIME = {'curl': 'curl', 'jq': 'jq', 'parallel': 'parallel', 'mksquashfs': 'squashfs-tools', 'unsquashfs': 'squashfs-tools',
           'zstd': 'zstd'}


def _script(name):
    proc = subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'lib', name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        pytest.fail('scripts/lib/%s failed (rc %d): %s' % (name, proc.returncode, proc.stderr.strip()))
    return proc.stdout.strip()


def debs():
    """The directory holding enroot_<version>-1_<arch>.deb and enroot+caps_<version>-1_<arch>.deb."""
    return _script('enroot-build.sh')


def arch():
    return subprocess.run(['dpkg', '--print-architecture'], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()


def deb(package='enroot'):
    return os.path.join(debs(), '%s_%s-1_%s.deb' % (package, ENROOT_VERSION, arch()))


def root():
    """The enroot package unpacked: <root>/usr/bin/enroot, <root>/usr/lib/enroot, <root>/etc/enroot."""
    path = deb()
    with open(path, 'rb') as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()[:16]
    base = os.path.join(ROOT, '.build', 'enroot')
    target = os.path.join(base, 'root-' + digest)
    with open(os.path.join(base, '.root.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(target, 'usr', 'bin', 'enroot')):
            work = tempfile.mkdtemp(prefix='.root.', dir=base)
            subprocess.run(['dpkg-deb', '-x', path, work], check=True)
            shutil.rmtree(target, ignore_errors=True)
            os.rename(work, target)
    return target


def caps_root():
    """root() with what the ``enroot+caps`` package adds: its postinst's ``setcap`` on enroot-mksquashovlfs and
    enroot-aufs2ovlfs (which a user other than root needs to import), applied to a copy under .build/enroot (root only:
    setcap needs CAP_SETFCAP)."""
    top = root()
    target = top + '-caps'
    work = tempfile.mkdtemp(prefix='.ctl.', dir=os.path.dirname(top))
    try:
        subprocess.run(['dpkg-deb', '-e', deb('enroot+caps'), os.path.join(work, 'ctl')], check=True)
        with open(os.path.join(work, 'ctl', 'postinst')) as handle:
            lines = [line.strip() for line in handle if line.strip().startswith('setcap ')]
    finally:
        shutil.rmtree(work)
    # setcap CAPS "$(command -v PROGRAM)"
    wanted = [(line.split()[1], line.rsplit('command -v ', 1)[1].rstrip(')"')) for line in lines]
    assert [program for _caps, program in wanted] == ['enroot-mksquashovlfs', 'enroot-aufs2ovlfs'], lines
    with open(os.path.join(os.path.dirname(top), '.root.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(target, 'usr', 'bin', 'enroot')):
            copy = tempfile.mkdtemp(prefix='.caps.', dir=os.path.dirname(top))
            os.chmod(copy, 0o755)
            shutil.rmtree(copy)
            shutil.copytree(top, copy, symlinks=True)
            for caps, program in wanted:
                subprocess.run(['setcap', caps, os.path.join(copy, 'usr', 'bin', program)], check=True)
            os.rename(copy, target)
    return target


def require_runtime():
    missing = sorted(set(pkg for cmd, pkg in RUNTIME.items() if shutil.which(cmd) is None))
    if missing:
        pytest.fail('the real enroot needs the Debian packages %s (apt-get install -y %s)' % (', '.join(missing), ' '.join(missing)))


def env(base, caps=False):
    """``base`` (a dict of environment variables) with the real enroot first in PATH (``caps``: with enroot+caps)."""
    require_runtime()
    top = caps_root() if caps else root()
    return dict(base, PATH=os.path.join(top, 'usr', 'bin') + os.pathsep + base.get('PATH', os.environ['PATH']),
                ENROOT_LIBRARY_PATH=os.path.join(top, 'usr', 'lib', 'enroot'))


def split_uri(uri, tmp_path):
    """How the real enroot's parser (src/docker.sh docker::_parse_uri) reads uri: (user, registry, image, tag or digest), or None."""
    top = root()
    env_ = {'PATH': os.environ['PATH'], 'HOME': str(tmp_path), 'ENROOT_LIBRARY_PATH': os.path.join(top, 'usr', 'lib', 'enroot'),
            'ENROOT_CONFIG_PATH': str(tmp_path / 'none'), 'ENROOT_CACHE_PATH': str(tmp_path / 'none'),
            'ENROOT_TRANSFER_RETRIES': '0', 'ENROOT_CONNECT_TIMEOUT': '30', 'ENROOT_TRANSFER_TIMEOUT': '0'}
    program = ('set -euo pipefail; shopt -s lastpipe; source "$ENROOT_LIBRARY_PATH/common.sh"; '
               'source "$ENROOT_LIBRARY_PATH/docker.sh"; docker::_parse_uri "$1"')
    proc = subprocess.run(['bash', '-c', program, 'enroot', uri], env=env_, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        assert proc.stderr == '[ERROR] Invalid image reference: %s\n' % uri
        return None
    user, registry, image, reference = proc.stdout.split('\n')[:4]
    return (user or None, registry, image, reference)


def pyxis_archive():
    """The pyxis <version> release archive (checked against the mirror's SHA256SUMS or the role's GitHub checksum)."""
    return _script('pyxis-source.sh')


def recorder(directory, log_variable):
    """Write ``directory``/enroot: appends ``enroot ARGV`` to the file named by $``log_variable``, then runs the real enroot.

    Returns the environment to put it first in PATH (PATH, ENROOT_LIBRARY_PATH)."""
    real = env({'PATH': os.environ['PATH']})
    os.makedirs(str(directory), exist_ok=True)
    path = os.path.join(str(directory), 'enroot')
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\nprintf "enroot %%s\\n" "$*" >> "$%s"\nexec %s "$@"\n'
                     % (log_variable, os.path.join(root(), 'usr', 'bin', 'enroot')))
    os.chmod(path, 0o755)
    return {'PATH': str(directory) + os.pathsep + real['PATH'], 'ENROOT_LIBRARY_PATH': real['ENROOT_LIBRARY_PATH']}
