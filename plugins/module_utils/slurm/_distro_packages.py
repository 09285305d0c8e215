# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Slurm packages of each OS family's own archive, by what a host is: the one table.

The slurm and slurmdbd roles install them (their ``vars/<os_family>.yml`` read this table through the
``gpucluster.bringup.slurm_distribution_packages`` filter) and the node preflight (``playbooks/node_preflight.yml``,
``gpucluster.bringup.slurm_host_packages``) asks each node's package source about the same names before any change.
SchedMD's own packages (``slurm_install_source: local``) are ``_slurm_packages.py``'s flavours.

* ``Debian`` (Ubuntu takes Debian's names: Slurm in universe, the NVML plugin in multiverse; untested): Debian's
  ``slurm-wlm``.  ``libpmix-dev``: Debian's mpi/pmix plugin opens the unversioned ``libpmix.so``, which only
  ``libpmix-dev`` installs (``libpmix2`` has ``libpmix.so.2``); without it slurmd logs "pmi/pmix: can not load PMIx
  library" and ``srun --mpi=pmix`` fails at step launch, the job stuck COMPLETING.  A login node gets the client
  commands (and ``libpmix-dev``: ``srun --mpi=pmix`` from there), with ``slurm_configless`` also ``sackd`` (Debian 13's
  24.11 ships it as a package of its own).  ``nvml``: Slurm's NVML plugin ``gpu_nvml.so`` (``slurm_gres_autodetect:
  nvml``), a package of its own in contrib, for the GPU nodes only.  ``mps``: the CUDA MPS control program
  (``slurm_gres_sharing: mps``), non-free; sites whose driver comes from NVIDIA's repository have it with the driver.
* ``RedHat`` (EPEL / OpenHPC-style names; untested): ``pmix`` is the library the mpi/pmix plugin loads; ``sackd`` is
  SchedMD's ``slurm.spec``'s ``slurm-sackd``; ``nvml`` and ``mps`` are no packages of their own (``gpu_nvml.so`` is in
  the ``slurm`` package of a Slurm built with NVML; ``nvidia-cuda-mps-control`` comes with NVIDIA's driver packages).

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PACKAGES = {
    'Debian': {'controller': ('slurmctld', 'slurm-client', 'libpmix-dev'), 'compute': ('slurmd', 'slurm-client', 'libpmix-dev'),
               'login': ('slurm-client', 'libpmix-dev'), 'sackd': ('sackd',), 'slurmdbd': ('slurmdbd', 'slurm-client'),
               'nvml': ('slurm-wlm-nvml-plugin',), 'mps': ('nvidia-cuda-mps',)},
    'RedHat': {'controller': ('slurm', 'slurm-slurmctld', 'pmix'), 'compute': ('slurm', 'slurm-slurmd', 'pmix'),
               'login': ('slurm', 'pmix'), 'sackd': ('slurm-sackd',), 'slurmdbd': ('slurm-slurmdbd', 'slurm'),
               'nvml': (), 'mps': ()},
}
PARTS = ('controller', 'compute', 'login', 'sackd', 'slurmdbd', 'nvml', 'mps')
# What a host is (the inventory groups slurm_controller, slurm_compute, slurmdbd, slurm_login), in install order
HOST_ROLES = ('controller', 'compute', 'slurmdbd', 'login')
# The file names of the family's package files (slurm_install_source: local)
LOCAL_PACKAGE_PATTERN = {'Debian': '*.deb', 'RedHat': '*.rpm'}
_DEFAULT_PATTERN = '*.deb'


def packages(family, part):
    """The packages of ``part`` (one of :data:`PARTS`) in the archive of the OS family ``family``; ``[]`` for a family the table
    does not have.  ValueError names an unknown part."""
    if part not in PARTS:
        raise ValueError('part is %r, expected one of: %s' % (part, ', '.join(PARTS)))
    return list(PACKAGES.get(family, {}).get(part, ()))


def host_packages(family, roles, configless=False):
    """The Slurm packages a host of ``roles`` (some of :data:`HOST_ROLES`) installs from its OS family's archive, each once.

    A login node gets ``sackd`` too where ``configless`` (it fetches its configuration from the controller).
    ValueError names an unknown role.
    """
    wrong = [role for role in roles if role not in HOST_ROLES]
    if wrong:
        raise ValueError('roles has %s, expected some of: %s' % (', '.join(repr(role) for role in wrong), ', '.join(HOST_ROLES)))
    parts = [role for role in HOST_ROLES if role in roles] + (['sackd'] if configless and 'login' in roles else [])
    found = []
    for part in parts:
        found.extend(name for name in packages(family, part) if name not in found)
    return found


def local_package_pattern(family):
    """The file-name pattern of the OS family's package files (``*.deb``, ``*.rpm``; ``*.deb`` for a family not in the table)."""
    return LOCAL_PACKAGE_PATTERN.get(family, _DEFAULT_PATTERN)
