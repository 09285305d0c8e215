# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validate role's per-stage settings: each stage's dict variable merged over its defaults (pure logic).

A site sets only the keys it changes (``validate_mpi_settings: {nodes: 4}``); every other key takes its default from
``STAGE_DEFAULTS``, the one place the defaults are written (roles/validate/defaults/main.yml gives each stage
variable ``{}``; meta/argument_specs.yml checks each key's type and choices). A key the stage does not know is
refused naming the variable, the key and the valid keys.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

# The node program's deep tier settings a site sets in validate_deep_settings, None for the program's own default
# (health/_deep_tier.DEFAULTS, the one place of those); the role gives the others: all_reduce_perf, nccl_args, nccl_env,
# nccl_thresholds and nccl_gate_curves from validate_nccl_settings, dcgm_level from validate_deep_dcgm_level.
DEEP_TIER_KEYS = ('checks', 'dcgmi', 'dcgm_timeout', 'nccl_topology', 'nccl_min_busbw_gbps', 'nccl_timeout', 'nvbandwidth',
                  'nvbandwidth_testcases', 'nvbandwidth_timeout', 'pcie_min_fraction', 'peer_min_fraction', 'ib_write_bw',
                  'ib_sysfs_root', 'ib_min_fraction', 'ib_duration', 'ib_tcp_port', 'ib_timeout')

STAGE_DEFAULTS = {
    # Stage 1, the node checks (besides the GPU expectations); pyxis expected also enables the container jobs
    'validate_node': {
        'pyxis': True,
        'enroot': True,
        'enroot_conf_path': '/etc/enroot/enroot.conf',
        'container_gpu': True,
        'munge_cross': True,
    },
    # Every validation job of the Slurm and MPI stages
    'validate_jobs': {
        'partition': '',
        'time_limit': 2,
        'timeout': 180,
        'container_image': '',
        'env': {},
    },
    # Stage 3, the MPI launch paths (validate_mpi switches the stage on or off)
    'validate_mpi_settings': {
        'install_packages': False,
        'packages': ['openmpi-bin', 'libopenmpi-dev'],
        'plugin': 'auto',
        'required_paths': [],
        'no_pmi_path': False,
        'nodes': 2,
        'container_image': '',
        'mpirun_args': ['--mca', 'btl_base_warn_component_unused', '0'],
        'work_dir': '/var/lib/gpucluster-validate',
    },
    # Stage 4, NCCL (validate_nccl switches the stage on or off, validate_nccl_pairwise runs the node pairs): the controller's value
    'validate_nccl_settings': {
        'tests_path': '/opt/nccl-tests/build',
        'container_image': '',
        'srun_args': [],
        'mpi_plugin': '',
        'args': ['-b', '8', '-e', '8G', '-f', '2'],
        # auto: ask all_reduce_perf for its -J JSON report where the role builds a version that writes one (2.18.3 and later)
        'json': 'auto',
        # No NCCL_ALGO: NCCL picks its algorithm, and the gate curve is that algorithm's; a run over two nodes gets NCCL_ALGO=Ring.
        'env': {'NCCL_DEBUG': 'INFO'},
        'fabric': True,
        'expect_ib': False,
        'thresholds': {},
        'gate_curves': {},
        'isolate': True,
        'leaf_of': {},
        'time_limit': 15,
        'timeout': 1200,
        'dispatch': 'auto',
        'dispatch_min_nodes': 64,
        'allocation_wait': 60,
    },
    # Per host or group: the gate of the node's own run
    'validate_nccl_node': {
        'topology': '',
        'min_busbw_gbps': None,
    },
    # Per host or group (a node type's group_vars): the node type (fabric group) its multi-node runs go with, and their gate
    'validate_nccl_multinode': {
        'group': '',
        'topology': '',
        'nics': 1,
        'min_busbw_gbps': None,
    },
    # Building the pinned nccl-tests once per node type; None: derived (derived_defaults)
    'validate_nccl_build': {
        'enabled': False,
        'version': '2.19.6',
        'source_url': None,
        # empty: the checksum the role knows for the pinned version (vars/main.yml), none for another version
        'source_checksum': '',
        'source_local': '',
        'build_dir': '/opt/nccl-tests-src',
        'make_args': ['MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi', 'CUDA_HOME=/usr/local/cuda'],
        'mpi': True,
        'make_jobs': 4,
        'packages': None,
        'fetch_dir': None,
    },
    # Stage 5, the deep tier (validate_deep switches it on; the nodes, DCGM level, drained nodes taken and batch size are
    # variables of their own, set per run): the role's keys, then the node program's (DEEP_TIER_KEYS)
    'validate_deep_settings': dict([
        ('reservation', 'gpucluster-deep-health'),
        ('time_limit', 60),
        ('resume_passes', 1),
        # None: slurm_healthcheck_program / slurm_healthcheck_reason_prefix where set, else the health_deep module's default
        ('program', None),
        ('prefix', None),
        ('report_title', 'Deep health check'),
    ] + [(key, None) for key in DEEP_TIER_KEYS]),
    # Resume (playbooks/resume.yml; the nodes and whether admin drains are undone are variables of their own, set per run)
    'validate_resume_settings': {
        'probe': True,
        'start_slurmd': True,
        'reservation': 'gpucluster-resume',
    },
}

NCCL_TESTS_URL = 'https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v%s.tar.gz'


def _nccl_build_derived(merged, mpi_packages=(), cwd=''):
    """The keys of ``validate_nccl_build`` whose default follows from others: the release archive's URL, the packages the
    building node needs (make and g++, with the MPI packages when built with MPI), the controller's directory for the
    binaries."""
    return {
        'source_url': NCCL_TESTS_URL % merged['version'],
        'packages': ['make', 'g++'] + (list(mpi_packages or []) if merged['mpi'] else []),
        'fetch_dir': '%s/nccl-tests-build' % (cwd or '.'),
    }


def _deep_derived(merged, program=None, prefix=None):
    """The health check program and its drain prefix: the slurm_healthcheck role's where the inventory sets them."""
    return {'program': program, 'prefix': prefix}


DERIVED = {'validate_nccl_build': _nccl_build_derived, 'validate_deep_settings': _deep_derived}


def deep_tier_settings(deep, nccl, dcgm_level):
    """The node program's deep tier settings (``--deep-config``): the NCCL run as the validation's (``nccl``, the merged
    ``validate_nccl_settings``), the DCGM level, and the keys of ``deep`` (the merged ``validate_deep_settings``) the site
    set; the program gives the others their defaults."""
    settings = {
        'all_reduce_perf': '%s/all_reduce_perf' % nccl['tests_path'],
        'nccl_args': nccl['args'],
        'nccl_env': nccl['env'],
        'nccl_thresholds': nccl['thresholds'],
        'nccl_gate_curves': nccl['gate_curves'],
        'dcgm_level': dcgm_level,
    }
    settings.update((key, deep[key]) for key in DEEP_TIER_KEYS if deep.get(key) is not None)
    return settings


def stage_settings(variable, given, **context):
    """``given`` (the site's dict for ``variable``; None or ``{}`` for none) merged over the stage's defaults.

    ``context`` is what a derived default needs (``DERIVED``): for ``validate_nccl_build``, ``mpi_packages`` and ``cwd``;
    for ``validate_deep_settings``, ``program`` and ``prefix``.
    Raises ``ValueError`` for a variable that is not a stage's, a value that is not a dict and a key the stage does not
    know (naming the variable, the key and the valid keys).
    """
    if variable not in STAGE_DEFAULTS:
        raise ValueError('%s is not a stage settings variable of the validate role; those are %s' % (variable, ', '.join(sorted(STAGE_DEFAULTS))))
    defaults = STAGE_DEFAULTS[variable]
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError('%s must be a dict of settings (keys %s), not %r' % (variable, ', '.join(sorted(defaults)), given))
    unknown = sorted(str(key) for key in given if key not in defaults)
    if unknown:
        raise ValueError('%s: unknown key%s %s; the valid keys are %s'
                         % (variable, 's' if len(unknown) > 1 else '', ', '.join(unknown), ', '.join(sorted(defaults))))
    merged = copy.deepcopy(defaults)
    merged.update(given)
    if variable in DERIVED:
        derived = DERIVED[variable](merged, **context)
        for key, value in derived.items():
            if merged[key] is None:
                merged[key] = value
    return merged
