# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot role's ``enroot_conf``: enroot.conf settings by enroot's own key names, merged over the role's defaults.

:data:`DEFAULTS` are the settings the role writes when a site sets nothing (one place for them); a site's
``enroot_conf`` overrides any of them and adds any other ``ENROOT_*`` key (enroot reads no other keys).
:func:`conf_lines` gives the lines of enroot.conf (or of the ``keep`` drop-in) in the order the role writes them.
Bad input raises ``ValueError`` naming ``enroot_conf.<KEY>``.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

NAME = 'enroot_conf'
# key -> default, in the order of the file. $(id -u) and ${HOME} are expanded by enroot for each user.
DEFAULTS = (
    ('ENROOT_RUNTIME_PATH', '/run/enroot/user-$(id -u)'),
    ('ENROOT_CACHE_PATH', '/tmp/enroot-cache/group-$(id -g)'),
    ('ENROOT_DATA_PATH', '/tmp/enroot-data/user-$(id -u)'),
    ('ENROOT_TEMP_PATH', '/tmp'),
    ('ENROOT_CONFIG_PATH', '${HOME}/.config/enroot'),
    ('ENROOT_SQUASH_OPTIONS', '-comp lzo -noD -exit-on-error'),
    # 0: the line is left out (enroot's default, all processors)
    ('ENROOT_MAX_PROCESSORS', 0),
    ('ENROOT_MAX_CONNECTIONS', 10),
    ('ENROOT_CONNECT_TIMEOUT', 30),
    ('ENROOT_TRANSFER_TIMEOUT', 0),
    ('ENROOT_TRANSFER_RETRIES', 3),
    ('ENROOT_REMAP_ROOT', False),
    ('ENROOT_MOUNT_HOME', False),
    ('ENROOT_RESTRICT_DEV', True),
    ('ENROOT_ROOTFS_WRITABLE', False),
    ('ENROOT_ALLOW_HTTP', False),
)
PATHS = ('ENROOT_RUNTIME_PATH', 'ENROOT_CACHE_PATH', 'ENROOT_DATA_PATH', 'ENROOT_TEMP_PATH', 'ENROOT_CONFIG_PATH')
_KEY = re.compile(r'^ENROOT_[A-Z_]+$')
# booleans as Ansible reads them from key=value extra vars
_TRUE = ('yes', 'on', 'true', '1')
_FALSE = ('no', 'off', 'false', '0')


def _kind(default):
    return bool if isinstance(default, bool) else int if isinstance(default, int) else str


def bad_keys(given):
    """The keys of ``given`` enroot does not read (not ``ENROOT_NAME``), as strings."""
    return [str(key) for key in (given or {}) if not _KEY.match(str(key))]


def settings(given):
    """Every setting: :data:`DEFAULTS` with ``given`` over them, the other keys of ``given`` after them; checked."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError('%s is %r; expected a mapping of enroot.conf keys (ENROOT_NAME) to values' % (NAME, given))
    bad = bad_keys(given)
    if bad:
        raise ValueError('%s keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: %s'
                         % (NAME, ', '.join(bad)))
    merged = dict(DEFAULTS)
    for key, default in DEFAULTS:
        value = given.get(key, default)
        kind = _kind(default)
        if kind is bool and isinstance(value, str) and value.lower() in _TRUE + _FALSE:
            value = value.lower() in _TRUE
        if kind is bool and not isinstance(value, bool):
            raise ValueError('%s.%s is %r; expected true or false' % (NAME, key, value))
        if kind is int and isinstance(value, str) and re.match(r'^\s*-?[0-9]+\s*$', value):
            value = int(value)
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError('%s.%s is %r; expected a whole number' % (NAME, key, value))
        if kind is str and not isinstance(value, str):
            raise ValueError('%s.%s is %r; expected a string' % (NAME, key, value))
        merged[key] = value
    for key in sorted(given):
        merged.setdefault(key, given[key])
    return merged


def conf_lines(given, ca_path=''):
    """The ``KEY VALUE`` lines of enroot.conf: the role's keys in their order (``ENROOT_MAX_PROCESSORS`` only above 0,
    booleans as yes/no), ``SSL_CERT_FILE`` when ``ca_path`` is set, then the other keys of ``given`` by name."""
    merged = settings(given)
    lines = []
    for key, _default in DEFAULTS:
        value = merged[key]
        if key == 'ENROOT_MAX_PROCESSORS' and value <= 0:
            continue
        lines.append('%s %s' % (key, ('yes' if value else 'no') if isinstance(value, bool) else value))
    if ca_path:
        lines.append('SSL_CERT_FILE %s' % ca_path)
    known = dict(DEFAULTS)
    for key in sorted(merged):
        if key not in known:
            lines.append('%s %s' % (key, merged[key]))
    return lines
