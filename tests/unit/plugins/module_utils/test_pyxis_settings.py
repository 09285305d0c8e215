# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""pyxis_conf and pyxis_build merged over their defaults (issue 43: one place for them), and the plugstack options."""

from __future__ import absolute_import, division, print_function

import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.filter.enroot import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _pyxis

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
FILTERS = FilterModule().filters()


@pytest.mark.parametrize('given, options', [
    # what the role wrote before with its defaults: the four options every pyxis knows, the newer ones left out
    ({}, ['runtime_path=/run/pyxis', 'execute_entrypoint=0', 'container_scope=global', 'sbatch_support=1']),
    (None, ['runtime_path=/run/pyxis', 'execute_entrypoint=0', 'container_scope=global', 'sbatch_support=1']),
    ({'container_scope': 'job', 'sbatch_support': False, 'execute_entrypoint': True},
     ['runtime_path=/run/pyxis', 'execute_entrypoint=1', 'container_scope=job', 'sbatch_support=0']),
    ({'use_enroot_load': True, 'importer': '/usr/libexec/imp', 'use_squashfuse': True},
     ['runtime_path=/run/pyxis', 'execute_entrypoint=0', 'container_scope=global', 'sbatch_support=1', 'use_enroot_load=1',
      'importer=/usr/libexec/imp', 'use_squashfuse=1']),
])
def test_plugstack_options(given, options):
    assert FILTERS['pyxis_options'](given) == options


@pytest.mark.parametrize('name, given, fragment', [
    ('pyxis_options', {'scope': 'job'}, 'pyxis_conf has unknown key(s) scope; valid keys: container_scope'),
    ('pyxis_conf', ['job'], 'pyxis_conf is'),
    ('pyxis_build', {'prefixes': '/opt'}, 'pyxis_build has unknown key(s) prefixes; valid keys: dir, packages, prefix, slurm_include_dir'),
])
def test_unknown_keys_name_the_variable(name, given, fragment):
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError) as raised:
        FILTERS[name](given)
    assert fragment in str(raised.value)


def test_merged_keeps_the_defaults_unchanged():
    build = FILTERS['pyxis_build']({'prefix': '/opt/pyxis'})
    assert build == {'dir': '/var/cache/gpucluster/pyxis', 'prefix': '/opt/pyxis', 'packages': ['gcc', 'make', 'libslurm-dev'],
                     'slurm_include_dir': '/usr/include/slurm'}
    build['packages'].append('x')
    assert _pyxis.BUILD_DEFAULTS['packages'] == ['gcc', 'make', 'libslurm-dev']


def test_argument_specs_show_the_python_defaults():
    with open(os.path.join(ROOT, 'roles', 'pyxis', 'meta', 'argument_specs.yml')) as handle:
        options = yaml.safe_load(handle)['argument_specs']['main']['options']
    for variable, defaults in (('pyxis_conf', _pyxis.CONF_DEFAULTS), ('pyxis_build', _pyxis.BUILD_DEFAULTS)):
        assert dict((k, v.get('default')) for k, v in options[variable]['options'].items()) == defaults, variable
