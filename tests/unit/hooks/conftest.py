# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of hookenv.py (the tests import the helpers from hookenv, a name no other conftest takes)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hookenv import node, runner  # noqa: F401  pylint: disable=unused-import
