# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""slurm_healthcheck_settings and slurm_healthcheck_loop merged over the programs' defaults (issue 43, one place for them)."""

from __future__ import absolute_import, division, print_function

import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.filter.node_loop import FilterModule
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _role_settings as rs
from ansible_collections.gpucluster.bringup.plugins.module_utils.health._node_loop import load_settings
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._healthcheck import DEFAULTS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
FILTERS = FilterModule().filters()


def _main_options():
    with open(os.path.join(ROOT, 'roles', 'slurm_healthcheck', 'meta', 'argument_specs.yml')) as handle:
        return yaml.safe_load(handle)['argument_specs']['main']['options']


def test_the_role_writes_the_keys_it_wrote_before():
    # the settings, with the keys the role fills in itself, are the program's keys less its own internals
    written = set(rs.healthcheck_settings({})) | {'gpu_count', 'gpu_models', 'ib_hcas', 'reason_prefix', 'state_file', 'events_file'}
    assert written == set(DEFAULTS) - {'dev_root', 'scontrol', 'status_file', 'systemctl', 'fabric_manager_bin'}


def test_an_empty_dict_is_the_programs_defaults_with_the_budgets_as_seconds():
    merged = rs.healthcheck_settings({})
    assert merged == dict((k, DEFAULTS[k]) for k in rs.SETTING_KEYS)
    assert (merged['prolog_budget'], merged['periodic_budget']) == (3.0, 30.0)
    assert rs.healthcheck_settings(None) == merged


@pytest.mark.parametrize('given, inherited, key, value', [
    ({'xid_source': '/var/log/kern.log'}, None, 'xid_source', '/var/log/kern.log'),
    ({}, {'ib_sysfs_root': '/var/lib/nvmlsim/sys/class/infiniband'}, 'ib_sysfs_root', '/var/lib/nvmlsim/sys/class/infiniband'),
    # the site's key wins over the value taken from another role
    ({'ib_sysfs_root': '/site'}, {'ib_sysfs_root': '/nvml'}, 'ib_sysfs_root', '/site'),
    ({'prolog_budget': 5}, None, 'prolog_budget', 5.0),
    ({'munge_key_path': ''}, {'munge_key_path': '/etc/munge/munge.key'}, 'munge_key_path', ''),
    ({'ib_rate_gbps': 400}, None, 'ib_rate_gbps', 400),
])
def test_given_over_inherited_over_defaults(given, inherited, key, value):
    merged = rs.healthcheck_settings(given, inherited)
    assert merged[key] == value
    assert isinstance(merged[key], type(value))


def test_merging_leaves_the_programs_defaults_alone():
    merged = rs.healthcheck_settings({})
    merged['disabled_checks'].append('xid')
    assert DEFAULTS['disabled_checks'] == []


@pytest.mark.parametrize('given, fragments', [
    ({'xid_sources': 'dmesg'}, ['slurm_healthcheck_settings has unknown key(s) xid_sources', 'valid keys: auto_resume']),
    # the role's own keys are not settings
    ({'gpu_count': 8}, ['unknown key(s) gpu_count']),
    ({'resume_after_passes': 0}, ['slurm_healthcheck_settings: resume_after_passes 0 must be a whole number of passing runs (1 or more)']),
    ({'xid_source': 'kern.log'}, ['slurm_healthcheck_settings: xid_source', 'journal']),
    ({'disabled_checks': ['thermals']}, ['slurm_healthcheck_settings: disabled_checks', 'valid: nvml']),
    (['xid'], ['slurm_healthcheck_settings is', 'expected a mapping of settings']),
])
def test_bad_settings_name_the_variable_and_key(given, fragments):
    with pytest.raises(ValueError) as raised:
        rs.healthcheck_settings(given)
    for fragment in fragments:
        assert fragment in str(raised.value)


def test_the_filter_fails_with_the_message():
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match='slurm_healthcheck_settings has unknown key'):
        FILTERS['healthcheck_settings']({'nope': 1})
    with pytest.raises(AnsibleFilterError, match='slurm_healthcheck_loop has unknown key'):
        FILTERS['healthcheck_loop']({'reboot_windows': 1})


def test_argument_specs_show_the_programs_defaults():
    # the defaults documented per key (ansible-doc, the README) are the merged ones: they cannot drift from the Python
    options = _main_options()
    for variable, merged in (('slurm_healthcheck_settings', rs.healthcheck_settings({})), ('slurm_healthcheck_loop', rs.loop_settings({}))):
        documented = dict((key, spec.get('default')) for key, spec in options[variable]['options'].items())
        assert documented == merged, variable


def test_loop_defaults_and_the_configuration_file():
    merged = rs.loop_settings({'reboot_window': 3600, 'interval': 5, 'actions': {'thermal': 'drain'}})
    assert (merged['program'], merged['interval'], merged['reboot_program']) == ('/usr/local/sbin/gpucluster-node-loop', 5, '/usr/sbin/reboot')
    assert (merged['reboot_max'], merged['reboot_timeout'], merged['deep_time_limit']) == (2, 1800, 30)
    config = FILTERS['healthcheck_loop_config'](merged, {'state_file': '/s.json', 'events_file': '/e.jsonl', 'deep_program': '/hc'},
                                                {'prefix': 'gpuhc', 'requeue': True})
    assert config['policy'] == {'prefix': 'gpuhc', 'requeue': True, 'actions': {'thermal': 'drain'}, 'reboot_max': 2,
                                'reboot_window_s': 3600, 'reboot_timeout_s': 1800, 'settle_timeout_s': 3600, 'promote_after': 3, 'promote_window_s': 86400,
                                'deep': True, 'deep_passes': 1}
    assert sorted(config) == ['deep_program', 'deep_settings', 'deep_time_limit', 'events_file', 'metrics_file', 'policy', 'state_file',
                              'webhook']
    # the role-only keys stay out of the program's file, which the program accepts
    assert load_settings(config)['policy']['reboot_window_s'] == 3600


# ---------------------------------------------------------------- whole messages and results (issue 43)

def _refusal(call, *args):
    with pytest.raises(ValueError) as raised:
        call(*args)
    return str(raised.value)


def test_bad_settings_messages_whole():
    keys = ', '.join(sorted(rs.SETTING_KEYS))
    assert _refusal(rs.healthcheck_settings, ['x']) == "slurm_healthcheck_settings is ['x']; expected a mapping of settings (keys: %s)" % keys
    assert _refusal(rs.healthcheck_settings, {'b': 1, 'a': 2, 1: 3}) == \
        'slurm_healthcheck_settings has unknown key(s) 1, a, b; valid keys: %s' % keys
    assert _refusal(rs.healthcheck_settings, {}, {'zz': 1}) == 'the inherited settings has unknown key(s) zz; valid keys: %s' % keys
    loop_keys = ', '.join(sorted(set(rs.LOOP_ROLE_DEFAULTS) | set(rs.LOOP_POLICY_KEYS) | set(rs.LOOP_CONFIG_KEYS)))
    assert _refusal(rs.loop_settings, 5) == 'slurm_healthcheck_loop is 5; expected a mapping of settings (keys: %s)' % loop_keys
    assert _refusal(rs.loop_settings, {'x': 1}) == 'slurm_healthcheck_loop has unknown key(s) x; valid keys: %s' % loop_keys


def test_budgets_become_floats_but_not_booleans_or_floats_given():
    merged = rs.healthcheck_settings({'periodic_budget': 12.5, 'prolog_budget': 4})
    assert (merged['periodic_budget'], merged['prolog_budget']) == (12.5, 4.0)
    assert isinstance(merged['prolog_budget'], float)  # (4, an int, became 4.0)
    with pytest.raises(ValueError) as raised:
        rs.healthcheck_settings({'prolog_budget': True})
    assert str(raised.value).startswith('slurm_healthcheck_settings: ')


def test_inherited_none_and_given_none():
    assert rs.healthcheck_settings(None, None) == rs.healthcheck_settings({}, {})


def test_loop_settings_whole_and_independent_of_the_defaults():
    from ansible_collections.gpucluster.bringup.plugins.module_utils.health._node_loop import POLICY_DEFAULTS, SETTINGS_DEFAULTS
    merged = rs.loop_settings(None)
    expected = dict(rs.LOOP_ROLE_DEFAULTS)
    expected.update((key, POLICY_DEFAULTS[name]) for key, name in rs.LOOP_POLICY_KEYS.items())
    expected.update((key, SETTINGS_DEFAULTS[key]) for key in rs.LOOP_CONFIG_KEYS)
    assert merged == expected
    merged['actions']['new'] = 'drain'
    assert 'new' not in POLICY_DEFAULTS['actions']
    merged['deep_settings']['x'] = 1
    assert 'x' not in SETTINGS_DEFAULTS['deep_settings']


def test_loop_config_whole():
    merged = rs.loop_settings({'promote_after': 5, 'metrics_file': '/m.prom'})
    fixed = {'state_file': '/s'}
    policy_fixed = {'prefix': 'p'}
    config = rs.loop_config(merged, fixed, policy_fixed)
    policy = dict(policy_fixed)
    policy.update((name, merged[key]) for key, name in rs.LOOP_POLICY_KEYS.items())
    expected = {'state_file': '/s', 'policy': policy}
    expected.update((key, merged[key]) for key in rs.LOOP_CONFIG_KEYS)
    assert config == expected and config['policy']['promote_after'] == 5 and config['metrics_file'] == '/m.prom'
    assert fixed == {'state_file': '/s'} and policy_fixed == {'prefix': 'p'}
