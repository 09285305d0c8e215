# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The distributions the roles are written for: their Slurm release, archive components, and whether it is tested here.

One table (:data:`DISTRIBUTIONS`) that the messages take their words from, so that a Ubuntu node is never told to
enable Debian's ``contrib``:

* Debian puts Slurm (``slurm-wlm``) in ``main`` and the packages that need NVIDIA's non-free driver library -
  Slurm's NVML plugin ``slurm-wlm-nvml-plugin`` and nvidia-ml-py's ``python3-pynvml`` - in ``contrib``;
* Ubuntu takes Debian's packages: ``main`` ones into ``universe`` (Slurm), ``contrib`` and ``non-free`` ones into
  ``multiverse`` (where it carries them);
* ``tested`` says whether this project's tests run on that release: Debian 12 and 13 are; Ubuntu 22.04 and 24.04
  are not (no Ubuntu archive is reachable from this project's machines), nor is the RHEL family. Ubuntu's rows are
  the archive's published versions, not read here.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DISTRIBUTIONS = (
    {'id': 'debian', 'version': '12', 'codename': 'bookworm', 'name': 'Debian 12 (bookworm)', 'slurm': '22.05.8',
     'slurm_component': 'main', 'contrib': 'contrib', 'tested': True,
     'enable': 'Components: main contrib in /etc/apt/sources.list.d/debian.sources, or contrib on the deb lines of /etc/apt/sources.list'},
    {'id': 'debian', 'version': '13', 'codename': 'trixie', 'name': 'Debian 13 (trixie)', 'slurm': '24.11.5',
     'slurm_component': 'main', 'contrib': 'contrib', 'tested': True,
     'enable': 'Components: main contrib in /etc/apt/sources.list.d/debian.sources, or contrib on the deb lines of /etc/apt/sources.list'},
    {'id': 'ubuntu', 'version': '22.04', 'codename': 'jammy', 'name': 'Ubuntu 22.04 (jammy)', 'slurm': '21.08.5',
     'slurm_component': 'universe', 'contrib': 'multiverse', 'tested': False,
     'enable': 'add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list'},
    {'id': 'ubuntu', 'version': '24.04', 'codename': 'noble', 'name': 'Ubuntu 24.04 (noble)', 'slurm': '23.11.4',
     'slurm_component': 'universe', 'contrib': 'multiverse', 'tested': False,
     'enable': 'add-apt-repository multiverse, or Components: main restricted universe multiverse in '
               '/etc/apt/sources.list.d/ubuntu.sources'},
)
# How the other Debian-family distributions are told to enable the component of a contrib package
GENERIC = {'id': '', 'version': '', 'codename': '', 'name': '', 'slurm': '', 'slurm_component': '', 'contrib': '', 'tested': False,
           'enable': ''}


def find(name, version=None):
    """The row of a distribution: ``name`` as os-release's ID or Ansible's ``distribution`` (``debian``, ``Ubuntu``),
    ``version`` as VERSION_ID or Ansible's ``distribution_version``/``distribution_major_version`` (``12``, ``24.04``,
    ``24``); :data:`GENERIC` (empty words) when the table has no such release."""
    key = str(name or '').strip().lower()
    wanted = str(version or '').strip()
    for row in DISTRIBUTIONS:
        if row['id'] != key:
            continue
        if wanted in (row['version'], row['version'].split('.', maxsplit=1)[0], row['codename']) or wanted.startswith(row['version'] + '.'):
            return row
    if key in ('debian', 'ubuntu'):
        return dict(GENERIC, id=key, contrib='contrib' if key == 'debian' else 'multiverse')
    return GENERIC


def contrib_words(row, package):
    """``(why, choice)``: where the distribution of ``row`` keeps ``package`` (a package of Debian's contrib) and how to
    enable that component; generic words for a distribution the table does not know."""
    if row['id'] == 'ubuntu':
        why = ("Ubuntu carries Debian's contrib packages, where it has them, in its multiverse component, which the apt sources "
               'of this node do not enable (or its package lists are out of date)')
        choice = 'enable multiverse (%s), run apt-get update and run again' % (
            row['enable'] or 'add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list')
    elif row['id'] == 'debian':
        why = 'Debian ships it in the contrib component, which the apt sources of this node do not enable (or its package lists are out of date)'
        choice = 'enable contrib (%s), run apt-get update and run again' % (
            row['enable'] or DISTRIBUTIONS[1]['enable'])
    else:
        why = ("Debian ships it in the contrib component (Ubuntu in multiverse), which the apt sources of this node do not enable "
               '(or its package lists are out of date)')
        choice = ('enable the component that carries %s (Debian: contrib; Ubuntu: multiverse), run apt-get update and run again'
                  % package)
    return why, choice
