# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The named MIG layouts the collection ships, and a site's own merged over them (the inventory's ``mig_layouts_custom``).

A layout is a list of entries in the ``gpus`` format of ``gpucluster.bringup.nvidia_mig``: ``{gpu, model, mig,
instances}`` or ``{gpu, shape}``.  Names follow NVIDIA's mig-parted (all-disabled, all-enabled, all-1g.10gb,
all-balanced, ...).  The shipped layouts name shapes, not profiles: each GPU computes its instances from its own MIG
profile table (``_gpus.shape_instances``, one of ``_gpus.SHAPES`` or a profile name: NVML's table on the node, the catalogue's while MIG mode is off), so one
layout fits every GPU model: all-1g ... all-7g are as many instances of the model's profile of that size as fit,
all-balanced one 3g, one 2g and two 1g (one 2g and two 1g on a 4-slice GPU), all-<profile> as many of that profile as
the GPU allows (valid on the models that have it; the planner names the valid profiles of any other GPU).

The mig role (what it applies), the validate role (what it compares with) and the node preflight (what it checks
against the node's GPUs) all read :func:`layouts`, through the ``gpucluster.bringup.mig_layouts`` filter; the
controller's preflight reads it directly.  Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpucluster.bringup.plugins.module_utils.catalogue import _gpus

# The inventory variable with a site's layouts (the same name replaces a shipped layout)
CUSTOM = 'mig_layouts_custom'
# How a message names the shipped layouts (the filter that gives them): gpucluster.bringup.mig_layouts['all-1g'][0]
SHIPPED = 'gpucluster.bringup.mig_layouts'
# The shapes of _gpus.SHAPES as layouts: all-<shape>, in the order the AWX survey lists them
_SHAPE_LAYOUTS = ('balanced', '1g', '2g', '3g', '4g', '7g')
# mig-parted's profile-named layouts: all-<profile> (the profile names are the catalogue's)
_PROFILE_LAYOUTS = _gpus.MIG_PARTED_PROFILES

LAYOUTS = dict(
    [('all-disabled', [{'gpu': 'all', 'mig': False}]),
     ('all-enabled', [{'gpu': 'all', 'mig': True, 'instances': []}])]
    + [('all-%s' % shape, [{'gpu': 'all', 'shape': shape}]) for shape in _SHAPE_LAYOUTS]
    + [('all-%s' % profile, [{'gpu': 'all', 'shape': profile}]) for profile in _PROFILE_LAYOUTS])


def layouts(custom=None):
    """Every layout a host may name: the shipped ones with ``custom`` (a dict, or None for none) merged over them.

    A copy: the caller may change it.  ``custom`` that is not a dict raises ``ValueError`` naming ``mig_layouts_custom``.
    """
    if custom is None:
        custom = {}
    if not isinstance(custom, dict):
        raise ValueError('%s is %r; expected a dictionary of layout name to a list of GPU entries' % (CUSTOM, custom))
    merged = copy.deepcopy(LAYOUTS)
    merged.update(copy.deepcopy(custom))
    return merged


def source(name, custom=None):
    """The variable (or, for a shipped layout, :data:`SHIPPED`) a message names for the layout ``name``."""
    return CUSTOM if isinstance(custom, dict) and name in custom else SHIPPED
