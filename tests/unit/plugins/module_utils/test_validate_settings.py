# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validate role's stage settings (_settings.stage_settings, the validate_settings filter) and their argument spec."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpucluster.bringup.plugins.filter.validate import validate_deep_tier, validate_settings
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._settings import DEEP_TIER_KEYS, STAGE_DEFAULTS, stage_settings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def role_file(path):
    with open(os.path.join(ROOT, 'roles', 'validate', path)) as handle:
        return yaml.safe_load(handle)


SPEC = role_file('meta/argument_specs.yml')['argument_specs']['main']['options']
STAGES = sorted(STAGE_DEFAULTS)


@pytest.mark.parametrize('given, expected', [
    (None, STAGE_DEFAULTS['validate_mpi_settings']),
    ({}, STAGE_DEFAULTS['validate_mpi_settings']),
    ({'nodes': 4}, dict(STAGE_DEFAULTS['validate_mpi_settings'], nodes=4)),
    ({'nodes': 4, 'packages': []}, dict(STAGE_DEFAULTS['validate_mpi_settings'], nodes=4, packages=[])),
])
def test_the_sites_keys_win_over_the_defaults(given, expected):
    assert stage_settings('validate_mpi_settings', given) == expected


def test_the_defaults_are_not_shared_with_the_result():
    merged = stage_settings('validate_mpi_settings', {})
    merged['packages'].append('x')
    assert 'x' not in stage_settings('validate_mpi_settings', {})['packages']


@pytest.mark.parametrize('variable, given, message', [
    ('validate_mpi_settings', {'node': 4}, 'validate_mpi_settings: unknown key node; the valid keys are container_image, install_packages, '
                                           'mpirun_args, no_pmi_path, nodes, packages, plugin, required_paths, work_dir'),
    ('validate_jobs', {'b': 1, 'a': 2}, 'validate_jobs: unknown keys a, b; the valid keys are container_image, env, partition, time_limit, timeout'),
    ('validate_jobs', 'partition=gpu', "validate_jobs must be a dict of settings (keys container_image, env, partition, time_limit, timeout), "
                                       "not 'partition=gpu'"),
    ('validate_nope', {}, 'validate_nope is not a stage settings variable of the validate role; those are '),
])
def test_refused(variable, given, message):
    with pytest.raises(ValueError) as err:
        stage_settings(variable, given)
    assert str(err.value).startswith(message)
    with pytest.raises(AnsibleFilterError) as err:
        validate_settings(given, variable)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize('variable', STAGES)
def test_each_stage_is_a_dict_variable_defaulting_to_empty(variable):
    assert role_file('defaults/main.yml')[variable] == {}
    assert SPEC[variable]['type'] == 'dict' and SPEC[variable]['default'] == {}


@pytest.mark.parametrize('variable', STAGES)
def test_the_argument_spec_knows_the_keys_the_defaults_have(variable):
    assert sorted(SPEC[variable]['options']) == sorted(STAGE_DEFAULTS[variable])


@pytest.mark.parametrize('variable', STAGES)
def test_the_defaults_pass_the_argument_spec(variable):
    # the spec's types and choices accept every default (no key of the spec gives a default of its own)
    options = SPEC[variable]['options']
    assert [key for key, option in options.items() if 'default' in option] == []
    # (None: unset, the key's default derived or the program's own)
    given = dict((key, value) for key, value in STAGE_DEFAULTS[variable].items() if value is not None)
    result = ArgumentSpecValidator({variable: SPEC[variable]}).validate({variable: given})
    assert [str(e) for e in result.error_messages] == []
    assert result.validated_parameters[variable] == dict((key, given.get(key)) for key in STAGE_DEFAULTS[variable])


def test_the_argument_spec_refuses_an_unknown_key():
    result = ArgumentSpecValidator({'validate_mpi_settings': SPEC['validate_mpi_settings']}).validate({'validate_mpi_settings': {'node': 4}})
    assert [str(e) for e in result.error_messages] == [
        'validate_mpi_settings.node. Supported parameters include: container_image, install_packages, mpirun_args, no_pmi_path, nodes, '
        'packages, plugin, required_paths, work_dir.']


@pytest.mark.parametrize('given, context, expected', [
    ({}, {'mpi_packages': ['openmpi-bin'], 'cwd': '/srv/ops'},
     {'source_url': 'https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v2.19.6.tar.gz', 'packages': ['make', 'g++', 'openmpi-bin'],
      'fetch_dir': '/srv/ops/nccl-tests-build'}),
    ({'version': '2.18.3', 'mpi': False}, {'mpi_packages': ['openmpi-bin'], 'cwd': '/srv/ops'},
     {'source_url': 'https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v2.18.3.tar.gz', 'packages': ['make', 'g++'],
      'fetch_dir': '/srv/ops/nccl-tests-build'}),
    ({'source_url': 'https://mirror/x.tgz', 'packages': [], 'fetch_dir': '/tmp/b'}, {},
     {'source_url': 'https://mirror/x.tgz', 'packages': [], 'fetch_dir': '/tmp/b'}),
])
def test_the_nccl_builds_derived_defaults_follow_the_other_keys(given, context, expected):
    merged = validate_settings(given, 'validate_nccl_build', **context)
    assert dict((key, merged[key]) for key in expected) == expected


def test_the_deep_tier_keys_are_the_programs_less_those_the_role_gives():
    from ansible_collections.gpucluster.bringup.plugins.module_utils.health._deep_tier import DEFAULTS
    given_by_the_role = {'all_reduce_perf', 'nccl_args', 'nccl_env', 'nccl_thresholds', 'nccl_gate_curves', 'dcgm_level'}
    assert sorted(DEEP_TIER_KEYS) == sorted(set(DEFAULTS) - given_by_the_role)


NCCL = stage_settings('validate_nccl_settings', {'tests_path': '/opt/n/build', 'args': ['-b', '1G']})


@pytest.mark.parametrize('deep, expected_extra', [
    ({}, {}),
    ({'dcgmi': '/opt/d/dcgmi', 'ib_duration': 2, 'reservation': 'r'}, {'dcgmi': '/opt/d/dcgmi', 'ib_duration': 2}),
    ({'checks': ['dcgm']}, {'checks': ['dcgm']}),
])
def test_the_deep_tier_gets_the_validations_nccl_run_and_the_keys_the_site_set(deep, expected_extra):
    settings = validate_deep_tier(stage_settings('validate_deep_settings', deep), NCCL, '3')
    assert settings == dict({'all_reduce_perf': '/opt/n/build/all_reduce_perf', 'nccl_args': ['-b', '1G'], 'nccl_env': {'NCCL_DEBUG': 'INFO'},
                             'nccl_thresholds': {}, 'nccl_gate_curves': {}, 'dcgm_level': 3}, **expected_extra)


@pytest.mark.parametrize('context, expected', [
    ({}, (None, None)),
    ({'program': '/usr/sbin/hc', 'prefix': 'hc'}, ('/usr/sbin/hc', 'hc')),
])
def test_the_deep_tier_program_and_prefix_are_the_health_checks_where_set(context, expected):
    merged = stage_settings('validate_deep_settings', {}, **context)
    assert (merged['program'], merged['prefix']) == expected
    assert stage_settings('validate_deep_settings', {'program': '/p', 'prefix': 'x'}, **context)['program'] == '/p'


def test_the_deep_tier_with_a_broken_nccl_setting_is_refused():
    with pytest.raises(AnsibleFilterError) as err:
        validate_deep_tier(stage_settings('validate_deep_settings', {}), {}, 2)
    assert str(err.value).startswith('validate_deep_tier: ')


# tasks/node_checks.yml leaves an unset slurm_gres_* to slurm_gres_facts's own default: those must be the slurm role's
GRES_OPTIONS = [('mig_minors_path', 'slurm_gres_mig_minors_path'), ('type_map', 'slurm_gres_type_map'),
                ('mig_device_files', 'slurm_gres_mig_device_files'), ('sharing', 'slurm_gres_sharing'), ('mps_count', 'slurm_gres_mps_count'),
                ('cores', 'slurm_gres_cores'), ('autodetect', 'slurm_gres_autodetect')]


@pytest.mark.parametrize('option, variable', GRES_OPTIONS)
def test_the_gres_facts_module_defaults_are_the_slurm_roles(option, variable):
    from ansible_collections.gpucluster.bringup.plugins.modules import slurm_gres_facts
    with open(os.path.join(ROOT, 'roles', 'slurm', 'defaults', 'main.yml')) as handle:
        slurm_defaults = yaml.safe_load(handle)
    assert yaml.safe_load(slurm_gres_facts.DOCUMENTATION)['options'][option]['default'] == slurm_defaults[variable]
    with open(os.path.join(ROOT, 'roles', 'validate', 'tasks', 'node_checks.yml')) as handle:
        assert '%s: "{{ %s | default(omit) }}"' % (option, variable) in handle.read()
