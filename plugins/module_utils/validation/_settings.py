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
}


def stage_settings(variable, given):
    """``given`` (the site's dict for ``variable``; None or ``{}`` for none) merged over the stage's defaults.

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
    return merged
