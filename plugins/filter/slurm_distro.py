# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm packages of each OS family's archive; the table is in module_utils/slurm/_distro_packages.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _distro_packages


def slurm_distribution_packages(family, part):
    """The packages of ``part`` (controller, compute, login, sackd, slurmdbd, nvml, mps) in the archive of ``family``."""
    try:
        return _distro_packages.packages(family, part)
    except ValueError as exc:
        raise AnsibleFilterError('slurm_distribution_packages: %s' % exc)


def slurm_host_packages(family, roles, configless=False):
    """The Slurm packages a host of ``roles`` (controller, compute, slurmdbd, login) installs from the archive of ``family``."""
    try:
        return _distro_packages.host_packages(family, list(roles or []), bool(configless))
    except ValueError as exc:
        raise AnsibleFilterError('slurm_host_packages: %s' % exc)


def slurm_local_package_pattern(family):
    """The file-name pattern of ``family``'s package files (``*.deb``, ``*.rpm``)."""
    return _distro_packages.local_package_pattern(family)


class FilterModule(object):
    """gpucluster.bringup filters of the distributions' Slurm packages."""

    def filters(self):
        return {'slurm_distribution_packages': slurm_distribution_packages, 'slurm_host_packages': slurm_host_packages,
                'slurm_local_package_pattern': slurm_local_package_pattern}
