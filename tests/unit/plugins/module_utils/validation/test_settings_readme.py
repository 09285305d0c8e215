# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stage settings' defaults (_settings.STAGE_DEFAULTS) are the ones the role README documents, key by key."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._settings import DEEP_TIER_KEYS, STAGE_DEFAULTS, stage_settings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
ROW = re.compile(r'^\| `(validate_[a-z_]+)\.([a-z_]+)` \| (.+?) \|')


def readme_defaults():
    """``{(variable, key): cell}`` of the README's table rows of the stage settings."""
    with open(os.path.join(ROOT, 'roles', 'validate', 'README.md')) as handle:
        rows = [ROW.match(line) for line in handle]
    return dict(((row.group(1), row.group(2)), row.group(3)) for row in rows if row and row.group(1) in STAGE_DEFAULTS)


def test_every_key_of_every_stage_is_documented():
    documented = readme_defaults()
    wanted = set((variable, key) for variable, defaults in STAGE_DEFAULTS.items() for key in defaults)
    # the deep tier's own keys beyond the four the README names keep the program's defaults (health/_deep_tier.DEFAULTS)
    undocumented = sorted(wanted - set(documented))
    assert [pair for pair in undocumented if not (pair[0] == 'validate_deep_settings' and pair[1] in DEEP_TIER_KEYS)] == []


def test_the_defaults_are_the_documented_values():
    """Each default the README gives as one value (``2``, ``""``, ``["-b", ...]``, ``null``) is the one a stage gets."""
    compared = 0
    for (variable, key), cell in sorted(readme_defaults().items()):
        value = re.match(r'^`([^`]*)`$', cell)
        if value is None or value.group(1).startswith('$'):
            continue  # a derived default, described in words (or as $PWD/...)
        assert stage_settings(variable, {}, **({'mpi_packages': (), 'cwd': ''} if variable == 'validate_nccl_build' else {}))[key] == \
            yaml.safe_load(value.group(1)), (variable, key, cell)
        assert STAGE_DEFAULTS[variable][key] == yaml.safe_load(value.group(1)), (variable, key, cell)
        compared += 1
    assert compared == 58


def test_the_derived_defaults_of_the_nccl_build():
    merged = stage_settings('validate_nccl_build', None, mpi_packages=['openmpi-bin'], cwd='/srv/run')
    assert (merged['source_url'], merged['packages'], merged['fetch_dir']) == (
        'https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v2.19.6.tar.gz', ['make', 'g++', 'openmpi-bin'], '/srv/run/nccl-tests-build')
    assert stage_settings('validate_nccl_build', {'mpi': False}, mpi_packages=['openmpi-bin'])['packages'] == ['make', 'g++']
    assert stage_settings('validate_nccl_build', {})['fetch_dir'] == './nccl-tests-build'
