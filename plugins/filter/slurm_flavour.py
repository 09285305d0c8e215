# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The package of a Slurm part in a package flavour (plugins/module_utils/slurm/_slurm_packages.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as sp


def slurm_package_of(flavour, part):
    """The package of ``flavour`` (``debian`` or ``smd``; empty or none is ``debian``, the distribution's) that holds
    ``part`` (``slurmdbd``, ``client``, ``dev``, ``pam_slurm_adopt``, ...)."""
    try:
        return sp.package_of(flavour or 'debian', part)
    except ValueError as exc:
        raise AnsibleFilterError('slurm_package_of: %s' % exc)


def slurm_packages_of(packages, flavour):
    """``packages`` with each of Debian's Slurm package names replaced by ``flavour``'s package of the same part
    (``libslurm-dev`` -> ``slurm-smd-dev``), the others kept, each once."""
    debian = dict((name, part) for part, name in sp.PACKAGES['debian'].items())
    out = []
    for name in packages or []:
        name = str(name)
        mapped = slurm_package_of(flavour, debian[name]) if name in debian else name
        if mapped not in out:
            out.append(mapped)
    return out


def slurm_package_directory(files, option='slurm_local_package_dir'):
    """``{flavour, version, release, problem}`` of a directory of Slurm package files (``_slurm_packages.read_directory``):
    ``version`` ``X.Y.Z``, ``release`` ``X.Y``, empty when no file is a Slurm .deb; ``problem`` its one message."""
    try:
        directory = sp.read_directory([str(path) for path in files or []], option)
    except ValueError as exc:
        return {'flavour': None, 'version': '', 'release': '', 'problem': str(exc)}
    version = directory['version']
    return {'flavour': directory['flavour'], 'version': '.'.join('%02d' % part if i == 1 else str(part) for i, part in enumerate(version))
            if version else '', 'release': directory['release'] or '', 'problem': ''}


class FilterModule(object):
    """Slurm package flavours."""

    def filters(self):
        return {'slurm_package_of': slurm_package_of, 'slurm_packages_of': slurm_packages_of,
                'slurm_package_directory': slurm_package_directory}
