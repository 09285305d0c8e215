# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the validation must have tested (``validate_require``): a required stage that could not run fails (pure logic).

A stage (or the container job) is *run* when at least one of its records is ``pass`` or ``fail``; a stage whose every
record is ``skip`` (no nccl-tests on the nodes, no container image) or that left no record (switched off) did not run.
Each required one that did not run gets one ``fail`` record (node ``cluster``, check ``required``; ``container_required``
for the container job, a check of stage ``slurm``) naming the stage, why it could not run (its skip reasons with their
nodes) and the variable that provides it. Its node is no Slurm node: ``validate_drain_failed`` drains nothing for it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress

# name -> (stage of its records, the checks that count (None: every check of the stage), record check, what provides it)
REQUIREMENTS = {
    'node': ('node', None, 'required',
             'the node checks run on every host of groups slurm_controller and slurm_compute that answers'),
    'slurm': ('slurm', ('srun', 'gres_job'), 'required',
              'the Slurm jobs run on the nodes of group slurm_compute that can take jobs (validate_jobs.partition names the partition)'),
    'mpi': ('mpi', None, 'required', 'set validate_mpi: true (and validate_mpi_settings.install_packages: true, or install Open MPI on the nodes)'),
    'nccl': ('nccl', None, 'required',
             'set validate_nccl_settings.tests_path to the directory of all_reduce_perf on the GPU nodes, or validate_nccl_build.enabled: true, or '
             'validate_nccl_settings.container_image; and validate_nccl: true'),
    'container': ('slurm', ('container_job',), 'container_required',
                  'set validate_jobs.container_image to an image the nodes can import (such as docker://ubuntu:22.04), with validate_node.pyxis: true'),
    'deep': ('deep', None, 'required', 'set validate_deep: true and install the deep tier\'s tools (validate_deep_settings.checks)'),
}
NODE = 'cluster'
# skip reasons named in a requirement's failure, at the most (the others counted)
REASONS_MAX = 3


def _matching(records, stage, checks):
    return [rec for rec in records if isinstance(rec, dict) and rec.get('stage') == stage and (checks is None or rec.get('check') in checks)
            and not (rec.get('node') == NODE and rec.get('check') in ('required', 'container_required'))]


def why_not_run(records):
    """Why the (skipped) ``records`` did not run: each distinct reason once, with the nodes that gave it."""
    reasons, order = {}, []
    for rec in records:
        reason = ' '.join(str(rec.get('reason') or 'skipped').split())
        if reason not in reasons:
            reasons[reason] = []
            order.append(reason)
        hosts = rec.get('hosts') if isinstance(rec.get('hosts'), list) else None
        for host in hosts or [rec.get('node')]:
            # (an empty name is never added: '' is in every reason)
            if isinstance(host, str) and host not in reasons[reason] and host not in reason:
                reasons[reason].append(host)
    parts = []
    for reason in order[:REASONS_MAX]:
        nodes = reasons[reason]
        parts.append('%s (%s)' % (reason, compress(nodes)) if nodes else reason)
    if len(order) > REASONS_MAX:
        parts.append('and %d other reason(s)' % (len(order) - REASONS_MAX))
    return '; '.join(parts)


def require_records(records, require):
    """One ``fail`` record per name of ``require`` (names of ``REQUIREMENTS``, as the module's argument spec lets through;
    a repeated name counts once) whose stage (or check) did not run in ``records``; ``[]`` when all ran."""
    out = []
    for name in sorted(set(require), key=require.index):
        stage, checks, check, provides = REQUIREMENTS[name]
        found = _matching(records, stage, checks)
        if any(rec.get('status') in ('pass', 'fail') for rec in found):
            continue
        if found:
            why = why_not_run(found)
        elif name == 'container':
            why = 'no container job was run'
        else:
            why = 'no %s check was run' % stage
        reason = '%s is required (validate_require) but could not run: %s (%s, or remove %s from validate_require)' % (
            'stage %s' % name if name != 'container' else 'the container job', why, provides, name)
        out.append({'stage': stage, 'node': NODE, 'check': check, 'status': 'fail', 'reason': reason})
    return out


def required_message(records):
    """The reasons of the requirement records among ``records``, one sentence each (for the playbook's failure)."""
    return [rec['reason'] for rec in records if rec.get('node') == NODE and rec.get('check') in ('required', 'container_required')
            and rec.get('status') == 'fail']
