# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The slurm_packages_build role's decisions (plugins/module_utils/slurm/_slurm_build.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_build as sb


def slurm_build_plan(options, distribution='', arch='', old_stamp='', files=()):
    """``{problem, plan, stamp, cached, why}``: the options checked whole (``problem`` their one message, else ``''``),
    the stamp text of this build and whether the output directory already holds it (``_slurm_build``)."""
    try:
        plan = sb.check_options(options)
    except ValueError as exc:
        return {'problem': str(exc), 'plan': {}, 'stamp': '', 'cached': False, 'why': ''}
    text = sb.stamp(plan, distribution, arch)
    state = sb.cached(plan, text, old_stamp, files, arch)
    return {'problem': '', 'plan': plan, 'stamp': text, 'cached': state['cached'], 'why': state['why']}


def slurm_build_checksum_problem(plan, actual):
    """``''`` or the one message refusing a tarball whose SHA-256 is not the one asked for."""
    return sb.checksum_problem(plan, actual)


def slurm_build_result_problem(plan, files, arch, listing):
    """``''`` or one message: a .deb the build should have made is missing, or slurm-smd lacks a plugin asked for."""
    lacking = sb.missing_debs(plan, files, arch)
    if lacking:
        return 'the build of Slurm %s made no %s, expected every package of SchedMD\'s debian/control' % (plan['release'], ', '.join(lacking))
    return sb.contents_problem(plan, listing)


class FilterModule(object):
    """SchedMD's slurm-smd package build."""

    def filters(self):
        return {'slurm_build_plan': slurm_build_plan, 'slurm_build_checksum_problem': slurm_build_checksum_problem,
                'slurm_build_result_problem': slurm_build_result_problem}
