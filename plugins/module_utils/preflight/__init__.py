# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflights: each role's input rules (``_roles``), the rules across roles and hosts (``_site``) and the node preflight's judgement (``_node``)."""
