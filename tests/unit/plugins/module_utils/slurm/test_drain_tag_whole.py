# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The drain tag's refusals and read-backs compared whole (issue 43): every ``ValueError`` as the user reads it, the
length limit on both sides, empty details, the defaults of ``format_tag``/``parse_tag``/``owner``/``is_ours``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as tag


def test_the_tables_words():
    assert (tag.OWNERS, tag.HEALTH_TIERS, tag.HOOK_PHASES, tag.LOOP_STEPS) == (
        ('healthcheck', 'loop', 'validate', 'mig', 'hook'), ('prolog', 'periodic', 'deep'), ('prolog', 'epilog'),
        ('reset', 'reboot', 'drain', 'service'))
    assert (tag.DEFAULT_PREFIX, tag.LEGACY_PREFIXES, tag.MIG_OWNER, tag.VALIDATE_OWNER, tag.DEFAULT_LOOP_PREFIX, tag.MAX_REASON) == (
        'gpuhc', ('healthcheck',), 'gpucluster.bringup.mig:', 'validate:', 'gpuloop', 200)


@pytest.mark.parametrize('text, limit, cleaned', [
    ('a' * 200, None, 'a' * 200),                  # at the limit: kept
    ('a' * 201, None, 'a' * 197 + '...'),          # one past it: cut to the limit
    ('abcdef', 6, 'abcdef'),
    ('abcdefg', 6, 'abc...'),
    ('  say "hi"\n\tthere  ', None, "say 'hi' there"),
    (42, None, '42'),
])
def test_clean_both_sides_of_the_limit(text, limit, cleaned):
    assert (tag.clean(text) if limit is None else tag.clean(text, limit)) == cleaned


@pytest.mark.parametrize('args, kwargs, message', [
    (('admin', 'x', 'y'), {}, "owner is 'admin', expected one of healthcheck, loop, validate, mig, hook"),
    (('healthcheck', 'xid', 'y'), {'scope': 'periodic', 'prefix': 'gpu hc'},
     "prefix is 'gpu hc', expected a word such as \"gpuhc\" (letters, digits, \"-\", \"_\")"),
    (('healthcheck', 'xid', 'y'), {'scope': 'periodic', 'prefix': 7},
     "prefix is 7, expected a word such as \"gpuhc\" (letters, digits, \"-\", \"_\")"),
    (('healthcheck', 'xid', 'y'), {'scope': 'hourly'}, "tier is 'hourly', expected one of prolog, periodic, deep"),
    (('healthcheck', 'Xid', 'y'), {'scope': 'periodic'}, "check is 'Xid', expected lower-case letters and \"-\" such as \"xid\""),
    (('healthcheck', None, 'y'), {'scope': 'periodic'}, "check is None, expected lower-case letters and \"-\" such as \"xid\""),
    (('loop', 'xid-79', 'y'), {'prefix': 'gpu hc', 'scope': 'reboot'},
     "prefix is 'gpu hc', expected a word such as \"gpuloop\" (letters, digits, \"-\", \"_\")"),
    (('loop', 'xid-79', 'y'), {'prefix': None, 'scope': 'reboot'},
     "prefix is None, expected a word such as \"gpuloop\" (letters, digits, \"-\", \"_\")"),
    (('loop', 'xid-79', 'y'), {'scope': 'restart'}, "step is 'restart', expected one of reset, reboot, drain, service"),
    (('loop', 'Xid 79', 'y'), {'scope': 'reboot'},
     "condition is 'Xid 79', expected lower-case letters, digits and \"-\" such as \"xid-79\""),
    (('loop', 79, 'y'), {'scope': 'reboot'}, "condition is 79, expected lower-case letters, digits and \"-\" such as \"xid-79\""),
    (('validate', 'x', 'y'), {'scope': 'no de'}, "stage is 'no de', expected a word such as \"node\""),
    (('validate', 'x', 'y'), {'scope': None}, "stage is None, expected a word such as \"node\""),
    (('validate', 'gres conf', 'y'), {'scope': 'node'}, "check is 'gres conf', expected a word such as \"gres_conf\""),
    (('validate', None, 'y'), {'scope': 'node'}, "check is None, expected a word such as \"gres_conf\""),
    (('hook', 'h', 'exploded'), {'scope': 'prolog'},
     "hook detail is 'exploded', expected \"failed (exit N)\", \"timed out after Ns\" or \"killed by signal N\""),
    (('hook', 'h', 'failed (exit 1)'), {'scope': 'task'}, "phase is 'task', expected prolog or epilog"),
    (('hook', 'a b', 'failed (exit 1)'), {'scope': 'prolog'}, "hook is 'a b', expected a hook name without spaces"),
    (('hook', None, 'failed (exit 1)'), {'scope': 'prolog'}, "hook is None, expected a hook name without spaces"),
])
def test_every_refusal_whole(args, kwargs, message):
    with pytest.raises(ValueError) as err:
        tag.format_tag(*args, **kwargs)
    assert str(err.value) == message


@pytest.mark.parametrize('args, kwargs, written', [
    (('healthcheck', 'xid'), {'scope': 'periodic'}, 'gpuhc:periodic:xid:'),         # the detail's default: empty
    (('healthcheck', 'xid', None), {'scope': 'deep'}, 'gpuhc:deep:xid:'),
    (('mig',), {}, 'gpucluster.bringup.mig:'),
    (('mig', None, '  two\n words '), {}, 'gpucluster.bringup.mig: two words'),
    (('loop', 'xid-79', 'x'), {'scope': 'drain', 'prefix': 'gpuhc'}, 'gpuloop:drain:xid-79: x'),
    (('loop', 'xid-79', 'x'), {'scope': 'drain', 'prefix': 'site-loop_2'}, 'site-loop_2:drain:xid-79: x'),
    (('validate', 'a.b-c_d', 'x'), {'scope': 'N0.de-x_y'}, 'validate: N0.de-x_y/a.b-c_d: x'),
    (('hook', '10-all-a', 'failed (exit -1)'), {'scope': 'epilog'}, 'epilog hook 10-all-a failed (exit -1)'),
    (('healthcheck', 'xid', 'abcdefghij'), {'scope': 'periodic', 'limit': 25}, 'gpuhc:periodic:xid: ab...'),
    (('healthcheck', 'xid', 'abcde'), {'scope': 'periodic', 'limit': 25}, 'gpuhc:periodic:xid: abcde'),
])
def test_format_tag_defaults_and_edges(args, kwargs, written):
    assert tag.format_tag(*args, **kwargs) == written


@pytest.mark.parametrize('reason, kwargs, parsed', [
    (None, {}, None),
    ('  gpuloop:reboot:xid-79: GPU 3  ', {}, {'owner': 'loop', 'scope': 'reboot', 'check': 'xid-79', 'detail': 'GPU 3'}),
    ('gpuloop:reboot:xid-79:', {}, {'owner': 'loop', 'scope': 'reboot', 'check': 'xid-79', 'detail': ''}),
    ('gpuloop:reboot:xid-79: x', {'loop_prefix': 'site'}, None),
    ('site.loop:reboot:xid-79: x', {'loop_prefix': 'site.loop'}, {'owner': 'loop', 'scope': 'reboot', 'check': 'xid-79', 'detail': 'x'}),
    ('siteXloop:reboot:xid-79: x', {'loop_prefix': 'site.loop'}, None),          # the prefix is a literal, not a pattern
    ('gpuloop:restart:xid-79: x', {}, None),
    ('gpuhc:deep:ib-bw: slow', {}, {'owner': 'healthcheck', 'scope': 'deep', 'check': 'ib-bw', 'detail': 'slow'}),
    ('gpuhc:ecc:', {}, {'owner': 'healthcheck', 'scope': 'periodic', 'check': 'ecc', 'detail': ''}),
    ('healthcheck:prolog:xid: x', {'prefix': 'site'}, {'owner': 'healthcheck', 'scope': 'prolog', 'check': 'xid', 'detail': 'x'}),
    ('site:prolog:xid: x', {'prefix': 'site'}, {'owner': 'healthcheck', 'scope': 'prolog', 'check': 'xid', 'detail': 'x'}),
    ('gpuhc:prolog:xid:x', {}, None),                                                # no space after the check
    ('validate: node/gres_conf:', {}, {'owner': 'validate', 'scope': 'node', 'check': 'gres_conf', 'detail': ''}),
    ('validate:   by hand  ', {}, {'owner': 'validate', 'scope': None, 'check': None, 'detail': 'by hand'}),
    ('validate:', {}, {'owner': 'validate', 'scope': None, 'check': None, 'detail': ''}),
    ('gpucluster.bringup.mig:   layout x  ', {}, {'owner': 'mig', 'scope': None, 'check': None, 'detail': 'layout x'}),
    ('epilog hook 9-all-z killed by signal 15', {}, {'owner': 'hook', 'scope': 'epilog', 'check': '9-all-z', 'detail': 'killed by signal 15'}),
    ('prolog hook 9-all-z timed out after 30s', {}, {'owner': 'hook', 'scope': 'prolog', 'check': '9-all-z', 'detail': 'timed out after 30s'}),
])
def test_parse_tag_whole(reason, kwargs, parsed):
    assert tag.parse_tag(reason, **kwargs) == parsed
    assert tag.owner(reason, **kwargs) == (parsed['owner'] if parsed else None)
    assert tag.is_ours(reason, **kwargs) is (parsed is not None)
