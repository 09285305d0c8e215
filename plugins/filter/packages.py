# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which of a role's packages the package manager must be asked for."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def missing_packages(names, site_packages=None):
    """The names (a name or a list) that site.yml's ``package_facts`` result does not list; all of them without one.

    ``site_packages`` is the registered result of this run's ``package_facts``
    (``_site_packages``): a fact cache's older list is never trusted, so a role
    run outside site.yml gets every name back and asks the package manager.
    """
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) and name for name in names):
        raise AnsibleFilterError('missing_packages: %r is not a package name or a list of them' % (names,))
    installed = ((site_packages or {}).get('ansible_facts') or {}).get('packages') if isinstance(site_packages, dict) else None
    if not isinstance(installed, dict):
        return list(names)
    return [name for name in names if name not in installed]


class FilterModule(object):
    """Package filters."""

    def filters(self):
        return {'missing_packages': missing_packages}
