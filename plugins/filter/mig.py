# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The named MIG layouts (the shipped ones and a site's); the table is in module_utils/catalogue/_mig_layouts.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _mig_layouts


def mig_layouts(custom=None):
    """Every layout a host may name: the shipped ones with the site's ``custom`` (``mig_layouts_custom``) merged over them."""
    try:
        return _mig_layouts.layouts(custom)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def mig_layout_source(name, custom=None):
    """What a message calls the layout ``name``: ``mig_layouts_custom`` or the shipped layouts."""
    return _mig_layouts.source(name, custom)


class FilterModule(object):
    """gpucluster.bringup filters of the named MIG layouts."""

    def filters(self):
        return {'mig_layouts': mig_layouts, 'mig_layout_source': mig_layout_source}
