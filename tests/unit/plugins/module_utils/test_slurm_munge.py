# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_munge import munge_key_errors

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
