# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot_import refuses bad input with one message, before anything runs.

Each case runs the module in-process (modrun) with NVIDIA's real enroot (tests/unit/realenroot.py)
first in PATH behind a recorder that logs each call's argv, and asserts: the module failed, the message names the option, the bad
value and what is valid, enroot was never run, and nothing under the test directory (the
image directory, HOME with its container record directory) changed - no temporary import
directory, no record, no file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import enroot_import
from ansible_collections.gpucluster.bringup.tests.unit import realenroot
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
URI = 'docker://127.0.0.1:5000/test/tiny:1.0'
HEX = '0123456789abcdef' * 4
FORMS = 'valid forms are docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST]'

# (id, arguments ({tmp} is the test directory; dest defaults to {tmp}/images/x.sqsh), fragments of the message)
CASES = [
    # uri
    ('uri-empty', {'uri': ''}, ['uri: invalid image URI "": it is empty', FORMS]),
    ('uri-an-option', {'uri': '--uid=0'}, ['uri: invalid image URI "--uid=0": it starts with "-"', FORMS]),
    ('uri-scheme', {'uri': 'oras://x'}, ['uri: invalid image URI "oras://x": scheme "oras" is not one enroot imports from', FORMS]),
    ('uri-upper-case', {'uri': 'docker://Ubuntu'},
     ['uri: invalid image URI "docker://Ubuntu": the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/"']),
    ('uri-short-digest', {'uri': 'docker://ubuntu@sha256:abc'},
     ['"docker://ubuntu@sha256:abc": the digest "sha256:abc" must be "sha256:" and 64 lower-case hexadecimal digits']),
    ('uri-upper-digest', {'uri': 'docker://nvcr.io/nvidia/pytorch@sha256:' + HEX.upper()},
     ['the digest "sha256:%s" must be "sha256:" and 64 lower-case hexadecimal digits' % HEX.upper()]),
    ('uri-no-image', {'uri': 'docker://nvcr.io#'}, ['uri: invalid image URI "docker://nvcr.io#": the image is missing']),
    ('uri-bad-port', {'uri': 'docker://reg.io:abc/x'}, ['the registry "reg.io:abc" is not a host[:port]']),
    ('uri-tag-blank', {'uri': 'docker://ubuntu:bad tag'}, ['the tag "bad tag" is not a valid tag']),
    ('uri-user-blank', {'uri': 'docker://us er@nvcr.io#nvidia/pytorch'}, ['the user "us er" has characters enroot does not accept']),
    ('uri-daemon-blank', {'uri': 'dockerd://my image'}, ['uri: invalid image URI "dockerd://my image": the image part "my image" is not IMAGE[:TAG]']),
    # dest
    ('dest-relative', {'dest': 'images/x.sqsh'}, ['dest must be an absolute path, got "images/x.sqsh"']),
    ('dest-empty', {'dest': ''}, ['dest must be an absolute path, got ""']),
    ('dest-proc', {'dest': '/proc/x.sqsh'},
     ['dest /proc/x.sqsh: /proc is on a proc file system (a kernel pseudo file system), which cannot hold files written there; '
      'use a directory on a local disk or a shared file system']),
    ('dest-proc-dir', {'dest': '/proc'}, ['dest /proc: /proc is on a proc file system']),
    ('dest-sys', {'dest': '/sys/kernel/x.sqsh'}, ['dest /sys/kernel/x.sqsh: /sys/kernel is on a sysfs file system']),
    ('dest-sys-missing', {'dest': '/sys/nothere/x.sqsh'}, ['dest /sys/nothere/x.sqsh: /sys is on a sysfs file system']),
    ('dest-parent-file', {'dest': '{tmp}/images/afile/x.sqsh'},
     ['dest {tmp}/images/afile/x.sqsh: {tmp}/images/afile is a file, not a directory, so nothing can be created under it']),
    ('dest-grandparent-file', {'dest': '{tmp}/images/afile/sub/x.sqsh'}, ['{tmp}/images/afile is a file, not a directory']),
    ('dest-missing-parent', {'dest': '{tmp}/images/nodir/x.sqsh'},
     ['dest {tmp}/images/nodir/x.sqsh: the directory {tmp}/images/nodir does not exist; create it first']),
    ('dest-missing-parents', {'dest': '{tmp}/images/a/b/x.sqsh'}, ['the directory {tmp}/images/a/b does not exist; create it first']),
    ('dest-missing-dir-slash', {'dest': '{tmp}/images/nodir/'},
     ['dest {tmp}/images/nodir/: the directory {tmp}/images/nodir does not exist; create it first, or give the image file name']),
    ('dest-dangling-link', {'dest': '{tmp}/images/dangling.sqsh'}, ['dest {tmp}/images/dangling.sqsh exists and is not a regular file']),
    ('dest-fifo', {'dest': '{tmp}/images/fifo.sqsh'}, ['dest {tmp}/images/fifo.sqsh exists and is not a regular file']),
    # name
    ('name-slash', {'name': 'a/b'}, ['name: invalid container name "a/b": use letters, digits, "_", "." and "-", starting with a letter or digit']),
    ('name-empty', {'name': ''}, ['name: invalid container name "": use letters, digits']),
    ('name-dash', {'name': '-x'}, ['name: invalid container name "-x"']),
    ('name-space', {'name': 'has space'}, ['name: invalid container name "has space"']),
    # ranges and shapes
    ('retries-negative', {'retries': -1}, ['retries must be 0 or more (transfer retries), got -1']),
    ('connect-timeout-negative', {'connect_timeout': -5}, ['connect_timeout must be 0 or more (seconds), got -5']),
    ('timeout-negative', {'timeout': -1}, ['timeout must be 0 or more (seconds, 0 for no limit), got -1']),
    ('retries-not-int', {'retries': 'many'}, ["argument 'retries' is of type", 'many', 'int']),
    ('timeout-float', {'timeout': 1.5}, ["argument 'timeout' is of type", 'int']),
    ('force-not-bool', {'force': 'maybe'}, ["argument 'force' is of type", 'maybe', 'bool']),
    ('arch-debian-name', {'arch': 'amd64'},
     ['arch must be one of x86_64, aarch64, ppc64le, the architectures enroot imports for, got "amd64" (amd64 is written x86_64 here']),
    ('arch-unknown', {'arch': 'riscv64'}, ['arch must be one of x86_64, aarch64, ppc64le', 'got "riscv64"']),
    ('arch-empty', {'arch': ''}, ['arch must be one of x86_64, aarch64, ppc64le', 'got ""']),
    ('executable-empty', {'executable': ''}, ['executable must be a command name looked up in PATH or an absolute path, got ""']),
    ('executable-relative', {'executable': 'bin/enroot'}, ['executable must be a command name looked up in PATH or an absolute path, got "bin/enroot"']),
    ('executable-missing', {'executable': '/opt/none/enroot'}, ['the enroot command "/opt/none/enroot" was not found']),
    ('executable-not-in-path', {'executable': 'enroot-nothere'}, ['the enroot command "enroot-nothere" was not found']),
    ('record-dir-relative', {'name': 'pytorch', 'container_record_dir': 'state/enroot'},
     ['container_record_dir must be an absolute path, got "state/enroot"']),
    ('record-dir-under-file', {'name': 'pytorch', 'container_record_dir': '{tmp}/images/afile/state'},
     ['container_record_dir {tmp}/images/afile/state: {tmp}/images/afile is a file, not a directory']),
    ('record-dir-proc', {'name': 'pytorch', 'container_record_dir': '/proc/enroot'},
     ['container_record_dir /proc/enroot: /proc is on a proc file system']),
    ('record-dir-default-under-file', {'name': 'pytorch', '_home': '{tmp}/images/afile'},
     ['container_record_dir {tmp}/images/afile/.local/state/gpucluster.bringup/enroot: {tmp}/images/afile is a file, not a directory']),
    # the argument spec
    ('unknown-option', {'registry': 'x'}, ['Unsupported parameters', 'registry', 'Supported parameters include']),
    ('uri-missing', {'uri': None}, ['missing required arguments: uri']),
    ('dest-missing', {'dest': None}, ['missing required arguments: dest']),
    # several at once: every problem in the one message
    ('several', {'uri': 'docker://Ubuntu', 'timeout': -1, 'name': 'a/b'},
     ['uri: invalid image URI "docker://Ubuntu"', 'name: invalid container name "a/b"', 'timeout must be 0 or more']),
]


def snapshot(top):
    """Every path under top with its type, size and mtime."""
    found = {}
    for base, dirs, files in os.walk(top):
        for entry in dirs + files:
            path = os.path.join(base, entry)
            stat = os.lstat(path)
            found[path] = (stat.st_mode, stat.st_size, stat.st_mtime_ns)
    return found


@pytest.fixture
def world(tmp_path, monkeypatch):
    images = tmp_path / 'images'
    images.mkdir()
    (images / 'afile').write_text('a file, not a directory\n')
    (images / 'kept.sqsh').write_bytes(b'hsqs an image that stays')
    os.symlink(str(tmp_path / 'nowhere'), str(images / 'dangling.sqsh'))
    os.mkfifo(str(images / 'fifo.sqsh'))
    home = tmp_path / 'home'
    home.mkdir()
    log = tmp_path / 'enroot-argv.log'
    log.write_text('')
    for key, value in realenroot.recorder(tmp_path / 'recorder', 'ENROOT_CALLS_LOG').items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.setenv('ENROOT_CALLS_LOG', str(log))
    monkeypatch.setenv('ENROOT_ALLOW_HTTP', 'yes')
    monkeypatch.setenv('ENROOT_SYSCONF_PATH', str(tmp_path / 'no-sysconf'))
    return tmp_path


@pytest.mark.parametrize('case, changes, fragments', CASES, ids=[case[0] for case in CASES])
def test_bad_input(world, monkeypatch, case, changes, fragments):
    tmp = str(world)
    args = {'uri': URI, 'dest': os.path.join(tmp, 'images', 'x.sqsh')}
    for key, value in changes.items():
        if key == '_home':
            monkeypatch.setenv('HOME', value.format(tmp=tmp))
        elif value is None:
            args.pop(key)
        else:
            args[key] = value.format(tmp=tmp) if isinstance(value, str) else value
    before = snapshot(tmp)
    outcome = bad_input(enroot_import.main, args, *[fragment.format(tmp=tmp) for fragment in fragments])
    assert outcome.result.get('changed') is not True
    assert snapshot(tmp) == before, 'the module changed files on bad input'
    with open(os.path.join(tmp, 'enroot-argv.log')) as handle:
        assert handle.read() == '', 'enroot ran on bad input'


@pytest.mark.parametrize('case, changes, fragments', CASES[:3], ids=[case[0] for case in CASES[:3]])
def test_bad_input_in_check_mode(world, case, changes, fragments):
    """Check mode gives the same refusal."""
    tmp = str(world)
    args = dict({'uri': URI, 'dest': os.path.join(tmp, 'images', 'x.sqsh')}, **changes)
    before = snapshot(tmp)
    bad_input(enroot_import.main, args, *fragments, check_mode=True)
    assert snapshot(tmp) == before


def test_error_kinds(world):
    """The first problem's class is the error_kind."""
    tmp = str(world)
    dest = os.path.join(tmp, 'images', 'x.sqsh')
    assert bad_input(enroot_import.main, {'uri': 'docker://Ubuntu', 'dest': dest}).result['error_kind'] == 'invalid_uri'
    assert bad_input(enroot_import.main, {'uri': URI, 'dest': dest, 'name': 'a/b'}).result['error_kind'] == 'invalid_name'
    assert bad_input(enroot_import.main, {'uri': URI, 'dest': '/proc/x.sqsh'}).result['error_kind'] == 'bad_dest'
    assert bad_input(enroot_import.main, {'uri': URI, 'dest': dest, 'timeout': -1}).result['error_kind'] == 'bad_option'
