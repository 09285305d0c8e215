# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_munge compared whole (issue 43): the two-sources message, the defaults of munge_key_file_errors, a given
problem kept over the size, the path's directory rule on both sides."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_munge as munge

KEY = base64.b64encode(b'k' * 64).decode()
BOTH = ('munge_key_b64 and munge_key_src are both set (the key is not shown), expected one of them: munge_key_src, a file on the '
        'Ansible controller holding the key, or munge_key_b64, the key as base64; both empty uses the key of the source host')


def test_the_limits_and_the_default_path():
    assert (munge.MIN_KEY_BYTES, munge.MAX_KEY_BYTES, munge.DEFAULT_KEY_PATH) == (32, 1048576, '/etc/munge/munge.key')


@pytest.mark.parametrize('value, errors', [
    ('  \n ', ['munge_key_b64 decodes to 0 bytes; munged needs at least 32 (mungekey --create makes 1024)']),
    (' ab c', ['munge_key_b64 is not valid base64 (3 characters); create one with "base64 -w0 /etc/munge/munge.key"']),
    ('', []),
    (KEY + '!', ['munge_key_b64 is not valid base64 (89 characters); create one with "base64 -w0 /etc/munge/munge.key"']),
    (b'abcd', ['munge_key_b64 must be a base64 string (e.g. the output of "base64 -w0 /etc/munge/munge.key"), not a bytes']),
])
def test_munge_key_errors_whole(value, errors):
    assert munge.munge_key_errors(value) == errors


@pytest.mark.parametrize('key_b64, key_src, errors', [
    (KEY, '/srv/munge.key', [BOTH]),
    (KEY, None, []),
    (KEY, ['/srv/munge.key'], []),
    (b'abc', '/srv/munge.key', []),
])
def test_munge_key_source_errors_whole(key_b64, key_src, errors):
    assert munge.munge_key_source_errors(key_b64, key_src) == errors


def test_munge_key_file_errors_defaults_and_a_given_problem():
    assert munge.munge_key_file_errors('/srv/munge.key') == []
    assert munge.munge_key_file_errors(None, 'unreadable', 3) == []
    assert munge.munge_key_file_errors(['/srv/munge.key'], 'unreadable', 3) == []
    assert munge.munge_key_file_errors('/srv/munge.key', 'Permission denied', 3) == [
        "munge_key_src is '/srv/munge.key', expected a file on the Ansible controller holding the cluster's munge key (32 bytes to 1 MiB, "
        "as a node's /etc/munge/munge.key): Permission denied"]
    assert munge.munge_key_file_errors('k', None, 33) == []


@pytest.mark.parametrize('path, ok', [
    ('/munge/k', True), ('/munge', False), ('/a/xmungex/k', True), ('/a/Munge/k', False), ('/a/munge/k/l', False),
    ('/a/munge/..', False), ('/a/munge/.', False), ('/a/munge/...', True), (None, False),
])
def test_munge_key_path_directory_rule(path, ok):
    errors = munge.munge_key_path_errors(path)
    assert errors == [] if ok else (len(errors) == 1 and errors[0].startswith('munge_key_path is %s, expected an absolute path' % (
        "'%s'" % path if path is not None else 'None')))


def test_a_quote_in_the_path_is_shown_as_given():
    assert munge.munge_key_path_errors("/etc/munge/it's") == [
        "munge_key_path is '/etc/munge/it's', expected an absolute path of letters, digits and ._+@:=,- (no '.' or '..' parts) in a "
        "directory of munge's own, whose name holds 'munge', as /etc/munge/site.key: the role makes that directory 0700 munge:munge and "
        "gives munged the path as --key-file in a systemd unit"]
