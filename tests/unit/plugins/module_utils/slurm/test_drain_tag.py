# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one drain tag: every owner's reason round-trips; the forms older releases wrote are read; an admin's never is ours."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _drain_tag as tag
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes
from ansible_collections.gpucluster.bringup.plugins.modules import slurm_node

# (owner, scope, check, detail, prefix) -> the reason written, as earlier releases wrote it
ROUND_TRIP = [
    ('healthcheck', 'periodic', 'xid', 'GPU 3 (00000000:61:00.0) had Xid 79', 'gpuhc',
     'gpuhc:periodic:xid: GPU 3 (00000000:61:00.0) had Xid 79'),
    ('healthcheck', 'prolog', 'gpu-count', 'NVML sees 7 GPUs, expected 8', 'gpuhc', 'gpuhc:prolog:gpu-count: NVML sees 7 GPUs, expected 8'),
    ('healthcheck', 'deep', 'ib-bw', 'mlx5_0 42 Gb/s, expected >= 360', 'site_hc', 'site_hc:deep:ib-bw: mlx5_0 42 Gb/s, expected >= 360'),
    ('loop', 'reboot', 'xid-79', 'GPU 3 had Xid 79', 'gpuhc', 'gpuloop:reboot:xid-79: GPU 3 had Xid 79'),
    ('loop', 'reset', 'xid-48', 'GPU 2 had Xid 48', 'gpuhc', 'gpuloop:reset:xid-48: GPU 2 had Xid 48'),
    ('loop', 'service', 'xid-79', '3 reboots in 86400s', 'siteloop', 'siteloop:service:xid-79: 3 reboots in 86400s'),
    ('loop', 'drain', 'nvlink-errors', '5 of 5 hits in 3600s', 'gpuhc', 'gpuloop:drain:nvlink-errors: 5 of 5 hits in 3600s'),
    ('validate', 'node', 'gres_conf', 'gres.conf has gpu:h100:7, expected 8', 'gpuhc',
     'validate: node/gres_conf: gres.conf has gpu:h100:7, expected 8'),
    ('validate', 'nccl', 'all_reduce', 'busbw 120 GB/s < 360 GB/s', 'gpuhc', 'validate: nccl/all_reduce: busbw 120 GB/s < 360 GB/s'),
    ('mig', None, None, 'applying layout all-1g; if this stays, fix the cause, then run gpucluster.bringup.mig_change --limit gpu-01 '
     '-e mig_layout=all-1g', 'gpuhc', 'gpucluster.bringup.mig: applying layout all-1g; if this stays, fix the cause, then run '
     'gpucluster.bringup.mig_change --limit gpu-01 -e mig_layout=all-1g'),
    ('mig', None, None, 'layout balanced failed, fix the cause', 'gpuhc', 'gpucluster.bringup.mig: layout balanced failed, fix the cause'),
    ('hook', 'prolog', '50-all-x', 'failed (exit 1)', 'gpuhc', 'prolog hook 50-all-x failed (exit 1)'),
    ('hook', 'epilog', '90-all-mps-stop', 'timed out after 30s', 'gpuhc', 'epilog hook 90-all-mps-stop timed out after 30s'),
    ('hook', 'prolog', '10-all-a', 'killed by signal 9', 'gpuhc', 'prolog hook 10-all-a killed by signal 9'),
]


@pytest.mark.parametrize('owner, scope, check, detail, prefix, written', ROUND_TRIP)
def test_every_owner_round_trips(owner, scope, check, detail, prefix, written):
    reason = tag.format_tag(owner, check, detail, scope=scope, prefix=prefix)
    assert reason == written
    loop = prefix if owner == 'loop' and prefix != tag.DEFAULT_PREFIX else tag.DEFAULT_LOOP_PREFIX
    assert tag.parse_tag(reason, prefix, loop) == {'owner': owner, 'scope': scope, 'check': check, 'detail': detail}
    assert tag.owner(reason, prefix, loop) == owner and tag.is_ours(reason, prefix, loop)


@pytest.mark.parametrize('owner, scope, check, detail, prefix, written', ROUND_TRIP)
def test_every_owner_round_trips_through_scontrol(owner, scope, check, detail, prefix, written):
    """What Slurm prints back (``Reason=<tag> [user@time]``, a Comment= after it) is the same tag."""
    line = 'NodeName=gpu-01 State=IDLE+DRAIN Partitions=gpu Reason=%s [root@2026-11-21T06:12:01] Comment=x=y z' % written
    node = _nodes.parse_node_line(line)
    loop = prefix if owner == 'loop' and prefix != tag.DEFAULT_PREFIX else tag.DEFAULT_LOOP_PREFIX
    assert tag.parse_tag(node['reason'], prefix, loop) == {'owner': owner, 'scope': scope, 'check': check, 'detail': detail}


@pytest.mark.parametrize('reason, prefix, parsed', [
    # the health check's prefix of earlier releases, and a tag without a tier: periodic
    ('healthcheck: gpu-count: 7 GPUs, expected 8', 'gpuhc', ('healthcheck', 'periodic', 'gpu-count', '7 GPUs, expected 8')),
    ('gpuhc:ecc: 3 uncorrectable', 'gpuhc', ('healthcheck', 'periodic', 'ecc', '3 uncorrectable')),
    ('gpuhc:periodic:xid:', 'gpuhc', ('healthcheck', 'periodic', 'xid', '')),
    # validate's drain without <stage>/<check> (written by hand after the docs)
    ('validate: gres mismatch', 'gpuhc', ('validate', None, None, 'gres mismatch')),
    # a hook failure with more text after it
    ('prolog hook 50-all-x failed (exit 1) in job 12', 'gpuhc', ('hook', 'prolog', '50-all-x', 'failed (exit 1) in job 12')),
])
def test_older_forms_are_read(reason, prefix, parsed):
    got = tag.parse_tag(reason, prefix)
    assert (got['owner'], got['scope'], got['check'], got['detail']) == parsed


@pytest.mark.parametrize('reason, prefix', [
    ('', 'gpuhc'),
    ('bad fan, ticket 123', 'gpuhc'),
    ('maintenance: gpuhc:periodic:xid: copied from the log', 'gpuhc'),
    ('see validate: node/gres_conf', 'gpuhc'),
    ('RMA gpucluster.bringup.mig: later', 'gpuhc'),
    ('prolog hook 50-all-x is flaky, ask Bob', 'gpuhc'),
    ('Not responding', 'gpuhc'),
    ('Kill task failed', 'gpuhc'),
    ('gpuhc:periodic:xid: from another prefix', 'site'),     # another site's prefix
    ('GPUHC:periodic:xid: upper case', 'gpuhc'),
    ('Validate: node/x: y', 'gpuhc'),
])
def test_admin_and_slurm_reasons_are_never_ours(reason, prefix):
    assert tag.parse_tag(reason, prefix) is None
    assert tag.owner(reason, prefix) is None and not tag.is_ours(reason, prefix)


def test_a_long_detail_is_cut_and_quotes_and_newlines_go():
    reason = tag.format_tag('healthcheck', 'xid', 'a "b"\nc ' + 'x' * 300, scope='periodic')
    assert len(reason) == tag.MAX_REASON and reason.endswith('...')
    assert reason.startswith("gpuhc:periodic:xid: a 'b' c x")
    assert tag.owner(reason) == 'healthcheck'


@pytest.mark.parametrize('args, kwargs, fragment', [
    (('admin', 'x', 'y'), {}, "owner is 'admin', expected one of healthcheck, loop, validate, mig, hook"),
    (('healthcheck', 'xid', 'y'), {'scope': 'hourly'}, "tier is 'hourly', expected one of prolog, periodic, deep"),
    (('healthcheck', 'Xid', 'y'), {'scope': 'periodic'}, "check is 'Xid'"),
    (('loop', 'xid-79', 'y'), {'prefix': 'gpu hc', 'scope': 'reboot'}, "prefix is 'gpu hc'"),
    (('loop', 'xid-79', 'y'), {'scope': 'restart'}, "step is 'restart', expected one of reset, reboot, drain, service"),
    (('validate', 'x', 'y'), {'scope': 'no de'}, "stage is 'no de'"),
    (('hook', 'h', 'exploded'), {'scope': 'prolog'}, "hook detail is 'exploded'"),
    (('hook', 'h', 'failed (exit 1)'), {'scope': 'task'}, "phase is 'task', expected prolog or epilog"),
])
def test_a_bad_tag_is_refused(args, kwargs, fragment):
    with pytest.raises(ValueError) as err:
        tag.format_tag(*args, **kwargs)
    assert fragment in str(err.value)


def test_the_roles_write_the_tags_this_module_reads():
    """The words the roles put at the start of their reasons are this module's: the mig role's owner, the health
    check's default prefix, and slurm_node's default owner."""
    root = os.path.dirname(os.path.abspath(tag.__file__)).rsplit(os.sep + 'plugins' + os.sep, 1)[0]
    with open(os.path.join(root, 'roles', 'mig', 'vars', 'main.yml')) as handle:
        mig_vars = yaml.safe_load(handle)
    with open(os.path.join(root, 'roles', 'slurm_healthcheck', 'defaults', 'main.yml')) as handle:
        healthcheck_defaults = yaml.safe_load(handle)
    assert mig_vars['_mig_reason_owner'] == tag.MIG_OWNER
    assert healthcheck_defaults['slurm_healthcheck_reason_prefix'] == tag.DEFAULT_PREFIX
    assert yaml.safe_load(slurm_node.DOCUMENTATION)['options']['owner']['default'] == tag.MIG_OWNER
    # the mig role's reasons, as its vars render them, are mig tags
    for reason in ('%s applying layout all-1g; if this stays, fix the cause' % mig_vars['_mig_reason_owner'],
                   '%s layout all-1g failed, fix the cause: boom' % mig_vars['_mig_reason_owner']):
        assert tag.owner(reason) == 'mig'
