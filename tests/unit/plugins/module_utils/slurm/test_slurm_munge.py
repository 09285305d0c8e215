# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_munge import (
    munge_key_errors, munge_key_file_errors, munge_key_path_errors, munge_key_source_errors)

KEY = base64.b64encode(bytes(range(256)) * 4).decode()


@pytest.mark.parametrize('value, expected', [
    ('', []),
    (None, []),
    (KEY, []),
    (KEY[:40] + '\n' + KEY[40:], []),
    (base64.b64encode(b'x' * 31).decode(), ['munge_key_b64 decodes to 31 bytes; munged needs at least 32 (mungekey --create makes 1024)']),
    ('not base64!', ['munge_key_b64 is not valid base64 (10 characters); create one with "base64 -w0 /etc/munge/munge.key"']),
    (12345, ['munge_key_b64 must be a base64 string (e.g. the output of "base64 -w0 /etc/munge/munge.key"), not a int']),
    (base64.b64encode(b'x' * (1024 * 1024 + 1)).decode(), ['munge_key_b64 decodes to 1048577 bytes; at most 1048576 are accepted here']),
])
def test_munge_key_errors(value, expected):
    assert munge_key_errors(value) == expected


def test_messages_never_contain_the_key():
    short = base64.b64encode(b'secretsecret').decode()
    for message in munge_key_errors(short):
        assert short not in message


# Found by mutation testing (benchmarks/mutation.sh): both size limits are inclusive.
@pytest.mark.parametrize('size', [32, 1024 * 1024])
def test_munge_key_errors_limits_are_inclusive(size):
    assert munge_key_errors(base64.b64encode(b'x' * size).decode()) == []


# --- munge_key_path, munge_key_src: the rules of the role's preflight tasks, for the collection's preflight ---

PATH_MESSAGE = ("munge_key_path is %s, expected an absolute path of letters, digits and ._+@:=,- (no '.' or '..' parts) in a directory "
                "of munge's own, whose name holds 'munge', as /etc/munge/site.key: the role makes that directory 0700 munge:munge and "
                "gives munged the path as --key-file in a systemd unit")


@pytest.mark.parametrize('path', ['/etc/munge/munge.key', '/etc/munge/site.key', '/var/lib/munge/cluster-a.key',
                                  '/secure/munge-keys/k', '/etc/munge/a_b+c@d:e=f,g-h.key'])
def test_munge_key_path_accepted(path):
    assert munge_key_path_errors(path) == []


@pytest.mark.parametrize('path', [
    '/etc/munge.key',             # would make /etc 0700 munge:munge
    '/munge.key',                 # the root directory
    'etc/munge/munge.key',        # relative
    '',
    '/etc/munge/',                # a directory
    '/etc/munge/site key',        # a space ends the unit's word
    '/etc/munge/$KEY',            # systemd expands $
    '/etc/munge/%n.key',          # a systemd specifier
    "/etc/munge/it's.key",
    '/etc/munge/../site.key',
    '/etc/munge/./site.key',
    '/etc//munge/site.key',
    '/etc/munge/k\\ey',
    '/etc/munge/k\ney',
])
def test_munge_key_path_refused(path):
    assert munge_key_path_errors(path) == [PATH_MESSAGE % ("'%s'" % path)]


def test_munge_key_path_refused_not_a_string():
    assert munge_key_path_errors(['/etc/munge/munge.key']) == [PATH_MESSAGE % "['/etc/munge/munge.key']"]


@pytest.mark.parametrize('key_b64, key_src, count', [
    ('', '', 0), (KEY, '', 0), ('', 'files/munge.key', 0), (None, 'x', 0), (KEY, 'files/munge.key', 1),
])
def test_munge_key_source_errors(key_b64, key_src, count):
    found = munge_key_source_errors(key_b64, key_src)
    assert len(found) == count
    for message in found:
        assert KEY not in message and 'munge_key_b64 and munge_key_src are both set' in message


SRC_MESSAGE = ("munge_key_src is '/srv/munge.key', expected a file on the Ansible controller holding the cluster's munge key (32 bytes "
               "to 1 MiB, as a node's /etc/munge/munge.key): %s")


@pytest.mark.parametrize('problem, size, expected', [
    ('', 1024, []),
    ('', 32, []),
    ('', 1024 * 1024, []),
    ('', None, []),
    ('there is no such file', None, [SRC_MESSAGE % 'there is no such file']),
    ('', 31, [SRC_MESSAGE % '/srv/munge.key holds 31 bytes; munged needs at least 32 (mungekey --create makes 1024)']),
    ('', 0, [SRC_MESSAGE % '/srv/munge.key holds 0 bytes; munged needs at least 32 (mungekey --create makes 1024)']),
    ('', 1024 * 1024 + 1, [SRC_MESSAGE % '/srv/munge.key holds 1048577 bytes; at most 1048576 are accepted here']),
])
def test_munge_key_file_errors(problem, size, expected):
    assert munge_key_file_errors('/srv/munge.key', problem, size) == expected


def test_munge_key_file_errors_without_a_source():
    assert munge_key_file_errors('', 'there is no such file') == []
