# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pyxis role's two settings dicts, merged over their defaults (one place for them).

* ``pyxis_conf``: pyxis' own options (plugstack line ``runtime_path=... container_scope=...``), keys named as pyxis
  names them; :func:`plugstack_options` gives the options the role writes;
* ``pyxis_build``: how the role builds pyxis against the node's Slurm (where, with which packages and headers).

A key not given is the default here; an unknown key raises ``ValueError`` naming the variable and the valid keys.
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

CONF = 'pyxis_conf'
BUILD = 'pyxis_build'
CONF_DEFAULTS = {
    'runtime_path': '/run/pyxis',
    'execute_entrypoint': False,
    'container_scope': 'global',
    'sbatch_support': True,
    'use_enroot_load': False,
    'importer': '',
    'use_squashfuse': False,
}
BUILD_DEFAULTS = {
    # the source archive and its build tree
    'dir': '/var/cache/gpucluster/pyxis',
    # make install prefix=: the plugin is <prefix>/lib/slurm/spank_pyxis.so
    'prefix': '/usr/local',
    'packages': ['gcc', 'make', 'libslurm-dev'],
    # the Slurm headers pyxis is built against (slurm_version.h)
    'slurm_include_dir': '/usr/include/slurm',
}


def merged(name, given, defaults):
    """``defaults`` with ``given`` (a dict or None) over them; ``ValueError`` naming ``name`` for a key not in ``defaults``."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ValueError('%s is %r; expected a mapping (keys: %s)' % (name, given, ', '.join(sorted(defaults))))
    unknown = sorted(str(key) for key in given if key not in defaults)
    if unknown:
        raise ValueError('%s has unknown key(s) %s; valid keys: %s' % (name, ', '.join(unknown), ', '.join(sorted(defaults))))
    result = copy.deepcopy(defaults)
    result.update(given)
    return result


def plugstack_options(given):
    """The options of pyxis' plugstack line for ``pyxis_conf``. Options newer than pyxis 0.11 are written only when
    they differ from pyxis' default, so that an older pyxis still loads the line (it refuses an unknown option)."""
    conf = merged(CONF, given, CONF_DEFAULTS)
    options = ['runtime_path=%s' % conf['runtime_path'],
               'execute_entrypoint=%s' % ('1' if conf['execute_entrypoint'] else '0'),
               'container_scope=%s' % conf['container_scope'],
               'sbatch_support=%s' % ('1' if conf['sbatch_support'] else '0')]
    if conf['use_enroot_load']:
        options.append('use_enroot_load=1')
    if conf['importer']:
        options.append('importer=%s' % conf['importer'])
    if conf['use_squashfuse']:
        options.append('use_squashfuse=1')
    return options
