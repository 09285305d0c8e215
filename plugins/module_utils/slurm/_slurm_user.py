# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SlurmUser as a system user with a fixed uid and gid, the same on every host (issue 46 item 1, the pure part).

SchedMD's slurm-smd packages create no user; Debian's create ``slurm`` with uid and gid 64030 (Debian's allocated
id: slurm-wlm-basic-plugins' postinst runs ``adduser --system --group --uid 64030``, Debian 13 also ships
``sysusers.d`` ``u! slurm 64030``). The slurm and slurmdbd roles create the user before any package, with
``slurm_user_uid``/``slurm_user_gid`` (the slurm and slurmdbd roles), default 64030: a cluster that
switches from Debian's packages to SchedMD's keeps its ids, and a Debian package installed later finds the user there.

:func:`check_ids` checks the values; :func:`host_problem` compares them with a host's passwd and group databases
(``getent``) before anything changes; :func:`spread_problem` refuses hosts given different values. Each raises nothing:
``''`` or one message naming the host, the variable, its value and what would be valid. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError

DEFAULT_ID = 64030
# 0 is root; 65534 is nobody, 65535 and 4294967295 are (uid_t)-1 on 16-bit and 32-bit ids (the latter is past MAX_ID)
_RESERVED = (0, 65534, 65535)
MAX_ID = 4294967294


def _id(option, value):
    text = str(value).strip()     # None, True and False are no digits
    # ASCII digits only: str.isdigit() takes '²', which int() refuses
    if not re.match(r'[0-9]+\Z', text) or int(text) in _RESERVED or int(text) > MAX_ID:
        raise InputError('%s is %r, expected a number from 1 to %d, not 65534 or 65535 (Debian\'s slurm has %d)'
                         % (option, value, MAX_ID, DEFAULT_ID))
    return int(text)


def check_ids(uid, gid, prefix='slurm_user'):
    """``(uid, gid)`` as numbers, or :class:`InputError` naming ``<prefix>_uid``/``<prefix>_gid``."""
    return _id(prefix + '_uid', uid), _id(prefix + '_gid', gid)


def _entry(getent, name=None):
    """The fields of one getent answer ``{name: [fields...]}`` (as ansible.builtin.getent gives them; a key it did not
    find is ``{key: None}``): ``(name, fields)`` or ``(None, None)``."""
    for key, fields in (getent or {}).items():
        if fields is None:
            continue
        if name is None or key == name:
            return key, fields
    return None, None


def host_problem(host, user, uid, gid, passwd_by_name, passwd_by_uid, group_by_name, group_by_gid, prefix='slurm_user'):
    """``''`` when ``user`` can be (or already is) a system user of uid ``uid`` and group ``user`` of gid ``gid`` on
    ``host``, else one message. The getent answers: ``{name: [password, uid, gid, gecos, home, shell]}`` for passwd,
    ``{name: [password, gid, members]}`` for group, empty where none."""
    try:
        uid, gid = check_ids(uid, gid, prefix)
    except InputError as exc:
        return str(exc)
    keep = ('set %s_uid: %%s and %s_gid: %%s for every host to keep the ids it has' % (prefix, prefix))
    _name, fields = _entry(passwd_by_name, user)
    if fields is not None:
        have_uid, have_gid = str(fields[1]), str(fields[2])
        if have_uid != str(uid):
            return ('%s_uid is %d, but on %s the user %s already has uid %s (gid %s), expected %s: %s, or change the user '
                    'there first; nothing was changed' % (prefix, uid, host, user, have_uid, have_gid, have_uid, keep % (have_uid, have_gid)))
        if have_gid != str(gid):
            return ('%s_gid is %d, but on %s the user %s (uid %s) already has the primary group gid %s, expected %s: %s, '
                    'or change the user there first; nothing was changed'
                    % (prefix, gid, host, user, have_uid, have_gid, have_gid, keep % (have_uid, have_gid)))
    else:
        other, _fields = _entry(passwd_by_uid)
        if other is not None and other != user:
            return ('%s_uid is %d, but on %s the uid %d belongs to the user %s, expected a uid no other user has on any Slurm host '
                    '(the %s user gets it on every host); nothing was changed' % (prefix, uid, host, uid, other, user))
    _name, gfields = _entry(group_by_name, user)
    if gfields is not None:
        if str(gfields[1]) != str(gid):
            return ('%s_gid is %d, but on %s the group %s already has gid %s, expected %s: set %s_gid: %s for every host, or '
                    'change the group there first; nothing was changed' % (prefix, gid, host, user, gfields[1], gfields[1], prefix, gfields[1]))
    else:
        other, _fields = _entry(group_by_gid)
        if other is not None and other != user:
            return ('%s_gid is %d, but on %s the gid %d belongs to the group %s, expected a gid no other group has on any Slurm '
                    'host (the %s group gets it on every host); nothing was changed' % (prefix, gid, host, gid, other, user))
    return ''


def spread_problem(values, prefix='slurm_user'):
    """``''`` when every host has the same ``<prefix>_uid`` and ``_gid``, else one message. ``values``: host ->
    ``{'uid': ..., 'gid': ...}``, in inventory order."""
    for key in ('uid', 'gid'):
        seen = {}
        for host, value in (values or {}).items():
            seen.setdefault(str((value or {}).get(key)), []).append(host)
        if len(seen) > 1:
            parts = '; '.join('%s on %s' % (value, ', '.join(hosts)) for value, hosts in seen.items())
            return ('%s_%s differs between the hosts (%s), expected one value for every host: Slurm\'s files (StateSaveLocation, '
                    'spool, logs) and its messages carry the id, and a node with another one cannot read them' % (prefix, key, parts))
    return ''
