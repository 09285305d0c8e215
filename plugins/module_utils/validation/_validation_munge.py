# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""munge across nodes: a credential made on one node (``munge -n``) decoded on another (``unmunge``) (pure logic).

The node checks' ``munge`` check is a round trip on one node: it passes on a node whose key differs from every other
node's. Here each node's credential is decoded on its neighbour in a ring of the validated hosts and on the controller
(one credential per node, about two decodes per node). Each (maker, decoder) pair is one record of stage ``node``,
check ``munge_cross``, node ``<maker>-><decoder>``, ``hosts`` both nodes (a failure names both; no single node is
drained for it). A failed decode says what its status means: another key, clocks apart, munged not running.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import (
    InputError, require_dict, require_str, require_word, show)

STAGE = 'node'
CHECK = 'munge_cross'
CREDENTIAL_KEYS = ('node', 'credential', 'rc', 'error')
_STATUS = re.compile(r'^STATUS:\s*(.+?)\s*(?:\((\d+)\))?\s*$', re.M)
_ENCODE_HOST = re.compile(r'^ENCODE_HOST:\s*(\S+)', re.M)
_CREDENTIAL = re.compile(r'^MUNGE:[A-Za-z0-9+/=]+:$')
# what a failed decode means (the text unmunge gives, lower case) -> the likely cause and its fix
HINTS = (
    ('invalid credential', 'the two nodes do not share one munge key: give every node the same key (roles/munge: munge_key_src, '
                           'munge_key_path), then restart munge'),
    ('expired credential', 'the clocks of the two nodes differ by more than the credential\'s lifetime (300 s): run NTP (chrony) on every node'),
    ('rewound credential', 'the maker\'s clock is ahead of the decoder\'s: run NTP (chrony) on every node'),
    ('replayed credential', 'this credential was decoded on this node before (a replay)'),
    ('unauthorized credential', 'the credential is restricted to another user or group'),
    ('socket communication error', 'munged does not answer on the decoding node (systemctl status munge)'),
    ('failed to access', 'munged does not answer on the decoding node (systemctl status munge)'),
    ('no such file', 'unmunge is not installed on the decoding node'),
)


def pair_name(maker, decoder):
    return '%s->%s' % (maker, decoder)


def check_munge_input(params):
    """``validation_munge``'s options: ``node`` one word, ``credentials`` a list of {node, credential, rc, error}, ``unmunge``
    one word. Raises ``InputError`` naming the option, its value and what is valid."""
    require_word('node', params.get('node'), 'the Slurm node name of this host (no spaces)')
    require_word('unmunge', params.get('unmunge'), 'the unmunge command or its path (one word, not starting with "-")')
    items = params.get('credentials') or []
    for index, item in enumerate(items):
        name = 'credentials[%d]' % index
        require_dict(name, item, allowed=CREDENTIAL_KEYS, required=('node',))
        require_word('%s.node' % name, item['node'], 'the node name of the credential\'s maker (no spaces)')
        require_str('%s.credential' % name, item.get('credential'), allow_none=True, allow_empty=True)
        require_str('%s.error' % name, item.get('error'), allow_none=True, allow_empty=True)
        rc = item.get('rc')
        # (a boolean is refused too: str() gives True/False, not digits)
        if rc not in (None, '') and (not isinstance(rc, (int, str)) or not str(rc).lstrip('-').isdigit()):
            raise InputError('%s.rc is %s, expected the exit code of munge -n (a whole number) or null' % (name, show(rc)))
    return items


def _clip(text, limit=240):
    text = ' '.join(str(text or '').split())
    return text if len(text) <= limit else text[:limit - 3] + '...'


def hint(text):
    """The likely cause of a failed decode whose output is ``text``, or None."""
    low = str(text or '').lower()
    for needle, meaning in HINTS:
        if needle in low:
            return meaning
    return None


def made_problem(item):
    """Why ``item`` (the maker's ``munge -n``) gave no credential to decode, or None."""
    rc = item.get('rc')
    credential = (item.get('credential') or '').strip()
    if rc not in (None, '') and int(rc) != 0:
        return 'munge -n failed on %s (rc %s): %s' % (item['node'], rc, _clip(item.get('error')) or 'no output')
    if not credential:
        return 'munge -n on %s printed no credential%s' % (item['node'], (': %s' % _clip(item.get('error'))) if item.get('error') else '')
    if not _CREDENTIAL.match(credential):
        return 'munge -n on %s printed %s, not a credential (MUNGE:...:)' % (item['node'], show(_clip(credential, 60)))
    return None


def cross_record(maker, decoder, result):
    """The record of the credential made on ``maker`` decoded on ``decoder``; ``result``: {rc, stdout, stderr} of unmunge."""
    hosts = [maker, decoder]
    output = '%s\n%s' % (result.get('stdout') or '', result.get('stderr') or '')
    status = _STATUS.search(output)
    state = status.group(1) if status else None
    rc = result.get('rc')
    if rc == 0 and (state is None or state.lower() == 'success'):
        encoded = _ENCODE_HOST.search(output)
        where = ' (ENCODE_HOST %s)' % encoded.group(1) if encoded else ''
        return {'stage': STAGE, 'node': pair_name(maker, decoder), 'check': CHECK, 'status': 'pass', 'hosts': hosts,
                'reason': 'a credential made on %s%s decodes on %s: the two share one munge key' % (maker, where, decoder)}
    what = state or _clip(result.get('stderr') or result.get('stdout')) or 'no output'
    cause = hint(output)
    reason = 'a credential made on %s does not decode on %s: unmunge rc %s: %s%s' % (
        maker, decoder, rc, what, ('; %s' % cause) if cause else '')
    return {'stage': STAGE, 'node': pair_name(maker, decoder), 'check': CHECK, 'status': 'fail', 'hosts': hosts, 'reason': reason}


def made_record(maker, decoder, problem):
    """The record of a pair whose maker gave no credential: it fails naming the maker (``hosts``: the maker only)."""
    return {'stage': STAGE, 'node': pair_name(maker, decoder), 'check': CHECK, 'status': 'fail', 'hosts': [maker],
            'reason': '%s, so %s could not decode it' % (problem, decoder)}
