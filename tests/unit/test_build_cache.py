# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The machine's build cache of scripts/lib/enroot-build.sh (GPUCLUSTER_BUILD_CACHE).

A fresh clone on a machine where another clone built the enroot packages copies them from the cache
instead of building (CI runs on a fresh clone); a cache entry that is not the packages it is named for is
not used; an empty GPUCLUSTER_BUILD_CACHE turns the cache off. The script runs for real from a copy of
scripts/lib, over a vendor folder holding a small tarball of its own (with its SHA256SUMS line): the
packages in the cache are real .deb files made by dpkg-deb, and a build, where one is asked for, fails
at once on that tarball (it holds no enroot), which shows that the cache was not used.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import os
import shutil
import subprocess
import tarfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
VERSION = '4.1.2'
TARBALL = 'enroot-%s-with-submodules.tar.gz' % VERSION


def _arch():
    return subprocess.run(['dpkg', '--print-architecture'], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()


def _deb(folder, package, version):
    tree = os.path.join(folder, 'tree-' + package)
    os.makedirs(os.path.join(tree, 'DEBIAN'))
    with open(os.path.join(tree, 'DEBIAN', 'control'), 'w') as handle:
        handle.write('Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: test <t@example.com>\nDescription: test\n'
                     % (package, version, _arch()))
    path = os.path.join(folder, '%s_%s-1_%s.deb' % (package, VERSION, _arch()))
    subprocess.run(['dpkg-deb', '--build', '-Zgzip', tree, path], stdout=subprocess.PIPE, check=True)
    shutil.rmtree(tree)
    return path


@pytest.fixture
def site(tmp_path):
    """A checkout with scripts/lib only, a vendor folder with a tarball of its own, and the cache key of that pair."""
    checkout = tmp_path / 'checkout'
    shutil.copytree(os.path.join(ROOT, 'scripts', 'lib'), str(checkout / 'scripts' / 'lib'))
    vendor = tmp_path / 'vendor'
    vendor.mkdir()
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w:gz') as tar:
        info = tarfile.TarInfo('enroot-%s/README' % VERSION)
        info.size = 3
        tar.addfile(info, io.BytesIO(b'no\n'))
    (vendor / TARBALL).write_bytes(data.getvalue())
    tar_sum = hashlib.sha256(data.getvalue()).hexdigest()
    (vendor / 'SHA256SUMS').write_text('%s  %s\n' % (tar_sum, TARBALL))
    with open(os.path.join(ROOT, 'scripts', 'lib', 'enroot-build.sh'), 'rb') as handle:
        script_sum = hashlib.sha256(handle.read()).hexdigest()
    # the script's key: sha256 of `sha256sum <tarball` and `sha256sum <script` output lines, 16 hex digits
    key = hashlib.sha256(('%s  -\n%s  -\n' % (tar_sum, script_sum)).encode()).hexdigest()[:16]
    return {'checkout': checkout, 'vendor': vendor, 'cache': tmp_path / 'cache', 'key': key}


def _run(site, cache):
    env = dict(os.environ, GPUCLUSTER_VENDOR_DIR=str(site['vendor']), GPUCLUSTER_BUILD_CACHE=cache, HOME=str(site['checkout']))
    return subprocess.run(['bash', str(site['checkout'] / 'scripts' / 'lib' / 'enroot-build.sh')], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300, check=False)


def _cached(site, version='%s-1' % VERSION):
    entry = site['cache'] / 'enroot' / ('build-' + site['key'])
    entry.mkdir(parents=True)
    debs = [_deb(str(entry), package, version) for package in ('enroot', 'enroot+caps')]
    (entry / 'BUILD-INFO').write_text('built by another clone\n')
    return debs


def test_a_fresh_clone_copies_the_packages_another_clone_built(site):
    debs = _cached(site)
    run = _run(site, str(site['cache']))
    assert run.returncode == 0, run.stderr
    assert 'copied from the build cache' in run.stderr, run.stderr
    out = run.stdout.strip()
    assert out == str(site['checkout'] / '.build' / 'enroot' / 'debs'), out
    for path in debs:
        with open(path, 'rb') as want, open(os.path.join(out, os.path.basename(path)), 'rb') as have:
            assert have.read() == want.read(), path
    assert os.path.realpath(out) == str(site['checkout'] / '.build' / 'enroot' / ('build-' + site['key']))
    # a second run finds its own copy, not the cache's
    shutil.rmtree(str(site['cache']))
    again = _run(site, str(site['cache']))
    assert again.returncode == 0 and 'copied' not in again.stderr, again.stderr


@pytest.mark.parametrize('version, cache', [
    ('4.0.0-1', None),  # a cache entry that holds another version is not the packages its name says: built instead
    ('%s-1' % VERSION, ''),  # GPUCLUSTER_BUILD_CACHE empty: no cache, built
])
def test_the_cache_is_not_used_when_it_is_wrong_or_off(site, version, cache):
    _cached(site, version)
    run = _run(site, str(site['cache']) if cache is None else cache)
    # the build starts (and fails on the test tarball, which holds no enroot): the cache was not used
    assert run.returncode != 0, run.stdout
    assert 'copied' not in run.stderr, run.stderr
    assert 'building enroot %s' % VERSION in run.stderr, run.stderr
    assert not (site['checkout'] / '.build' / 'enroot' / 'debs').exists()
