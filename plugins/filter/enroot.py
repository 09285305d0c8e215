# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the roles gpucluster.bringup.enroot and pyxis (the logic is module_utils/enroot/_enroot.py's and _pyxis.py's)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_conf
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _pyxis


def enroot_ca_bundle(text):
    """``enroot_registry_ca_certificates | enroot_ca_bundle`` -> the CA file's content ('' when empty)."""
    try:
        return _enroot.ca_bundle(text)
    except ValueError as exc:
        raise AnsibleFilterError('enroot_registry_ca_certificates %s' % exc)


def _checked(function, *args):
    """``function(*args)``, its ValueError as the filter's error."""
    try:
        return function(*args)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def enroot_conf(given):
    """``enroot_conf | enroot_conf`` -> every enroot.conf setting the role writes, its defaults filled in, checked."""
    return _checked(_enroot_conf.settings, given)


def enroot_conf_lines(given, ca_path=''):
    """``enroot_conf | enroot_conf_lines(ca_path)`` -> the ``KEY VALUE`` lines of enroot.conf."""
    return _checked(_enroot_conf.conf_lines, given, ca_path)


def pyxis_options(conf):
    """``pyxis_conf | pyxis_options`` -> the options of pyxis' plugstack line (pyxis' defaults where not given)."""
    return _checked(_pyxis.plugstack_options, conf)


def pyxis_conf(conf):
    """``pyxis_conf | pyxis_conf`` -> every pyxis option, pyxis' defaults filled in."""
    return _checked(_pyxis.merged, _pyxis.CONF, conf, _pyxis.CONF_DEFAULTS)


def pyxis_build(build):
    """``pyxis_build | pyxis_build`` -> every key of it, the defaults filled in."""
    return _checked(_pyxis.merged, _pyxis.BUILD, build, _pyxis.BUILD_DEFAULTS)


class FilterModule(object):
    """enroot and pyxis settings."""

    def filters(self):
        return {'enroot_ca_bundle': enroot_ca_bundle, 'enroot_conf': enroot_conf, 'enroot_conf_lines': enroot_conf_lines,
                'pyxis_options': pyxis_options, 'pyxis_conf': pyxis_conf,
                'pyxis_build': pyxis_build}
