# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks on a munge key given as base64 (for the role gpucluster.bringup.munge).

Messages never contain the key or any part of it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

# munge(7)/mungekey(8): keys shorter than 32 bytes are rejected by munged.
MIN_KEY_BYTES = 32
MAX_KEY_BYTES = 1024 * 1024


def munge_key_errors(key_b64):
    """A list of problems with ``key_b64`` (empty when it is usable, or when no key is given)."""
    if key_b64 is None or key_b64 == '':
        return []
    if not isinstance(key_b64, str):
        return ['munge_key_b64 must be a base64 string (e.g. the output of "base64 -w0 /etc/munge/munge.key"), not a %s'
                % type(key_b64).__name__]
    text = ''.join(key_b64.split())
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return ['munge_key_b64 is not valid base64 (%d characters); create one with "base64 -w0 /etc/munge/munge.key"' % len(text)]
    if len(raw) < MIN_KEY_BYTES:
        return ['munge_key_b64 decodes to %d bytes; munged needs at least %d (mungekey --create makes 1024)' % (len(raw), MIN_KEY_BYTES)]
    if len(raw) > MAX_KEY_BYTES:
        return ['munge_key_b64 decodes to %d bytes; at most %d are accepted here' % (len(raw), MAX_KEY_BYTES)]
    return []
