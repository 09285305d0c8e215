# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the role gpucluster.bringup.enroot (the logic is module_utils/enroot/_enroot.py's)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot


def enroot_ca_bundle(text):
    """``enroot_registry_ca_certificates | enroot_ca_bundle`` -> the CA file's content ('' when empty)."""
    try:
        return _enroot.ca_bundle(text)
    except ValueError as exc:
        raise AnsibleFilterError('enroot_registry_ca_certificates %s' % exc)


class FilterModule(object):
    """enroot settings."""

    def filters(self):
        return {'enroot_ca_bundle': enroot_ca_bundle}
