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
import re

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


DEFAULT_KEY_PATH = '/etc/munge/munge.key'
# munged gets a path other than the default as --key-file in a systemd unit line: no spaces, quotes, '$', '%' or '\'
_KEY_PATH_PART = re.compile(r'\A[A-Za-z0-9._+@:=,-]+\Z')


def munge_key_path_errors(path):
    """Problems with ``munge_key_path`` (empty when usable), in the role's own words (roles/munge/tasks/preflight.yml).

    The role makes the key's directory ``0700 munge:munge``, so it must be a directory of munge's own (its name holds
    ``munge``): ``/etc/munge.key`` would make ``/etc`` private to munge.
    """
    parts = path.split('/')[1:] if isinstance(path, str) and path.startswith('/') else []
    if parts and all(_KEY_PATH_PART.match(part) and part not in ('.', '..') for part in parts) \
            and len(parts) >= 2 and 'munge' in parts[-2]:
        return []
    shown = "'%s'" % path if isinstance(path, str) else repr(path)
    return ["munge_key_path is %s, expected an absolute path of letters, digits and ._+@:=,- (no '.' or '..' parts) in a directory "
            "of munge's own, whose name holds 'munge', as /etc/munge/site.key: the role makes that directory 0700 munge:munge and "
            "gives munged the path as --key-file in a systemd unit" % shown]


def munge_key_source_errors(key_b64, key_src):
    """The one problem when both key sources are set (empty otherwise); the key is never shown."""
    if isinstance(key_b64, str) and key_b64 and isinstance(key_src, str) and key_src:
        return ['munge_key_b64 and munge_key_src are both set (the key is not shown), expected one of them: munge_key_src, a file on '
                'the Ansible controller holding the key, or munge_key_b64, the key as base64; both empty uses the key of the source host']
    return []


def munge_key_file_errors(key_src, problem=None, size=None):
    """Problems with the controller file ``key_src`` (munge_key_src): ``problem`` is why it cannot be used (the preflight
    action's ``controller_file(path)``: ``''`` for a readable file), ``size`` its size in bytes when known."""
    if not isinstance(key_src, str) or not key_src:
        return []
    if not problem and size is not None:
        if size < MIN_KEY_BYTES:
            problem = '%s holds %d bytes; munged needs at least %d (mungekey --create makes 1024)' % (key_src, size, MIN_KEY_BYTES)
        elif size > MAX_KEY_BYTES:
            problem = '%s holds %d bytes; at most %d are accepted here' % (key_src, size, MAX_KEY_BYTES)
    if not problem:
        return []
    return ["munge_key_src is '%s', expected a file on the Ansible controller holding the cluster's munge key (32 bytes to 1 MiB, "
            "as a node's /etc/munge/munge.key): %s" % (key_src, problem)]
