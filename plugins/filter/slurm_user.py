# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SlurmUser with a fixed uid and gid (plugins/module_utils/slurm/_slurm_user.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_user as su


def slurm_user_problem(facts, prefix='slurm_user'):
    """``''`` or one message: the user and group cannot get the uid and gid asked for on this host, or the hosts were
    given different ids. ``facts``: ``{host, user, uid, gid, passwd_by_name, passwd_by_uid, group_by_name, group_by_gid,
    spread}`` (``spread``: host -> ``{uid, gid}`` of every host of the play)."""
    facts = dict(facts or {})
    problem = su.spread_problem(facts.get('spread') or {}, prefix)
    if problem:
        return problem
    return su.host_problem(facts.get('host'), facts.get('user'), facts.get('uid'), facts.get('gid'), facts.get('passwd_by_name'),
                           facts.get('passwd_by_uid'), facts.get('group_by_name'), facts.get('group_by_gid'), prefix)


class FilterModule(object):
    """SlurmUser."""

    def filters(self):
        return {'slurm_user_problem': slurm_user_problem}
