# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_preflight edge cases: conversions, the value rendering, secrets in nested options, each role rule's branches.

test_preflight.py checks the roles' real specs and defaults end to end; these
tables pin the boundaries and the messages of each branch (exact lines).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
GROUPS = {'all': ['ctl', 'gpu-01', 'gpu-02'], 'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'],
          'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}
NOT_SHOWN = '(the value is not shown)'


def _load(role, path):
    with open(os.path.join(ROOT, 'roles', role, path)) as handle:
        return yaml.safe_load(handle) or {}


def problems(role, host='gpu-02', groups=None, **changes):
    """The problems of ``role`` on ``host`` with the role's spec and defaults (untemplated ones) plus ``changes``."""
    options = _load(role, 'meta/argument_specs.yml')['argument_specs']['main']['options']
    values = dict((k, v) for k, v in _load(role, 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    values.update(changes)
    return pf.role_problems(role, host, options, values, GROUPS if groups is None else groups)


# --- convert ---------------------------------------------------------------------------

@pytest.mark.parametrize('value, wanted, expected', [
    # str and path: scalars become text, containers do not
    (7, 'path', ('7', True)),
    (True, 'str', ('True', True)),
    (1.5, 'str', ('1.5', True)),
    ({'a': 1}, 'path', ({'a': 1}, False)),
    (['a'], 'str', (['a'], False)),
    # bool
    (' TRUE ', 'bool', (True, True)),
    (0, 'bool', (False, True)),
    (0.0, 'bool', (False, True)),
    (2, 'bool', (2, False)),
    (None, 'bool', (None, False)),
    # int: a boolean is 0 or 1, a whole float its number, a string of digits with a sign and spaces
    (True, 'int', (1, True)),
    (False, 'int', (0, True)),
    (-4, 'int', (-4, True)),
    (' +12 ', 'int', (12, True)),
    ('1e3', 'int', ('1e3', False)),
    (['1'], 'int', (['1'], False)),
    # float: numbers and numeric strings, not booleans
    (3, 'float', (3.0, True)),
    (2.5, 'float', (2.5, True)),
    ('-0.5', 'float', (-0.5, True)),
    ('half', 'float', ('half', False)),
    (True, 'float', (True, False)),
    ([1.0], 'float', ([1.0], False)),
    # list: a string splits on commas, a number is wrapped, a boolean or a dict is not a list
    ('gpu', 'list', (['gpu'], True)),
    (5, 'list', ([5], True)),
    (0.5, 'list', ([0.5], True)),
    (True, 'list', (True, False)),
    ([], 'list', ([], True)),
    # dict
    ({}, 'dict', ({}, True)),
    (['a'], 'dict', (['a'], False)),
    # no type or raw: as given; a type Ansible has and this module does not model: accepted as given
    ({'a': 1}, None, ({'a': 1}, True)),
    ('x', 'raw', ('x', True)),
    ('{"a": 1}', 'jsonarg', ('{"a": 1}', True)),
    (b'x', 'bytes', (b'x', True)),
])
def test_convert(value, wanted, expected):
    assert pf.convert(value, wanted) == expected


# --- show -------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    (True, 'true'),
    (False, 'false'),
    (None, 'null'),
    (0, '0'),
    ('', "''"),
    (['a', 1], "['a', 1]"),
    ('x' * 78, "'" + 'x' * 78 + "'"),                  # 80 characters: shown whole
    ('x' * 79, "'" + 'x' * 76 + '...'),                # 81 characters: cut to 80
    (list(range(100)), repr(list(range(100)))[:77] + '...'),
])
def test_show(value, expected):
    assert pf.show(value) == expected
    assert len(pf.show(value)) <= 80


# --- check_option: types, required, nulls, choices ------------------------------------------

STR_OPTIONS = {'name': {'type': 'str', 'required': True}, 'port': {'type': 'int'}}


@pytest.mark.parametrize('path, value, spec, expected', [
    # required and null
    ('slurm_cluster_name', None, {'type': 'str', 'required': True}, ['slurm_cluster_name is required and is not set']),
    ('slurm_cluster_name', None, {'type': 'str'}, []),
    ('slurm_cluster_name', None, None, []),
    # no type: a string is expected
    ('slurm_cluster_name', {'a': 1}, {}, ["slurm_cluster_name is {'a': 1}; expected a string"]),
    ('slurm_cluster_name', {'a': 1}, None, ["slurm_cluster_name is {'a': 1}; expected a string"]),
    ('slurm_cluster_name', 5, {}, []),
    ('slurm_conf_dir', ['/etc'], {'type': 'path'}, ["slurm_conf_dir is ['/etc']; expected a path (string)"]),
    ('ratio', 'half', {'type': 'float'}, ["ratio is 'half'; expected a number"]),
    ('ratio', True, {'type': 'float'}, ['ratio is true; expected a number']),
    ('opaque', {'a': [1]}, {'type': 'jsonarg'}, []),
    ('opaque', {'a': [1]}, {'type': 'raw'}, []),
    # lists: null items, each bad item (all of them, not only the first)
    ('hosts', ['a', None, None], {'type': 'list'}, ['hosts[1] is null; expected any value', 'hosts[2] is null; expected any value']),
    ('hosts', [None], {'type': 'list', 'elements': 'str'}, ['hosts[0] is null; expected a string']),
    ('hosts', [None], {'type': 'list', 'elements': 'jsonarg'}, ['hosts[0] is null; expected jsonarg']),
    ('ports', ['1', 'x', [2]], {'type': 'list', 'elements': 'int'},
     ["ports[1] is 'x'; expected a whole number", 'ports[2] is [2]; expected a whole number']),
    ('modes', ['a', None, 'z'], {'type': 'list', 'elements': 'str', 'choices': ['a', 'b']},
     ['modes[1] is null; expected a string', "modes[2] is 'z'; valid values: a, b"]),
    ('modes', ['b', 'y', 'z'], {'type': 'list', 'choices': ['a', 'b']},
     ["modes[1] is 'y'; valid values: a, b", "modes[2] is 'z'; valid values: a, b"]),
    # a YAML boolean where a word was meant: the hint names the word for true and for false
    ('mode', True, {'type': 'str', 'choices': ['on', 'off', 'auto']},
     ["mode is true; valid values: on, off, auto (quote it: 'on'; YAML reads an unquoted on as true)"]),
    ('mode', False, {'type': 'str', 'choices': ['on', 'off', 'auto']},
     ["mode is false; valid values: on, off, auto (quote it: 'off'; YAML reads an unquoted off as false)"]),
    ('mode', True, {'type': 'str', 'choices': ['auto', 'never']}, ['mode is true; valid values: auto, never']),
    ('level', 3, {'type': 'int', 'choices': [1, 2]}, ['level is 3; valid values: 1, 2']),
    ('level', '2', {'type': 'int', 'choices': [1, 2]}, []),
    # a dictionary with sub-options: unknown keys (one, several), required keys, each key's own checks
    ('site', {'name': 'a', 'extra': 1}, {'type': 'dict', 'options': STR_OPTIONS},
     ["site has the unknown key 'extra'; valid keys: name, port"]),
    ('site', {'name': 'a', 'zeta': 1, 'extra': 2, 'more': 3}, {'type': 'dict', 'options': STR_OPTIONS},
     ["site has the unknown keys 'extra', 'more', 'zeta'; valid keys: name, port"]),
    ('site', {'port': 'x'}, {'type': 'dict', 'options': STR_OPTIONS},
     ['site lacks name (required)', "site.port is 'x'; expected a whole number"]),
    ('site', {'name': None, 'port': None}, {'type': 'dict', 'options': STR_OPTIONS}, ['site lacks name (required)']),
    ('site', {'name': 'a', 'port': '80'}, {'type': 'dict', 'options': STR_OPTIONS}, []),
    ('site', {'anything': 1}, {'type': 'dict'}, []),
    ('site', {'anything': 1}, {'type': 'dict', 'options': {}}, []),
    ('sites', [{'name': 'a', 'x': 1, 'y': 2}, {'port': 1}], {'type': 'list', 'elements': 'dict', 'options': STR_OPTIONS},
     ["sites[0] has the unknown keys 'x', 'y'; valid keys: name, port", 'sites[1] lacks name (required)']),
])
def test_check_option(path, value, spec, expected):
    assert pf.check_option(path, value, spec) == expected


# --- secrets: named, never shown, also in lists and sub-options -----------------------------

@pytest.mark.parametrize('path, value, spec, expected', [
    # no_log makes any name secret
    ('motd', ['hunter2'], {'type': 'str', 'no_log': True}, ['motd is a list; expected a string (the value is not shown)']),
    # the name that counts is the last part of the path, without its index
    ('site.api_token', ['hunter2'], {'type': 'str'}, ['site.api_token is a list; expected a string (the value is not shown)']),
    ('site.api_token.ttl', ['hunter2'], {'type': 'str'}, ["site.api_token.ttl is ['hunter2']; expected a string"]),
    ('ssh_key_path[0][1]', ['hunter2'], {'type': 'str'}, ["ssh_key_path[0][1] is ['hunter2']; expected a string"]),
    ('api_tokens[0]', ['hunter2'], {'type': 'str'}, ['api_tokens[0] is a list; expected a string (the value is not shown)']),
    # list items of a secret list
    ('api_tokens', ['ok', ['hunter2'], 'hunter2'], {'type': 'list', 'elements': 'str', 'choices': ['ok']},
     ['api_tokens[1] is a list (the value is not shown); expected a string',
      'api_tokens[2] is not one of the valid values: ok (the value is not shown)']),
    ('api_tokens', ('hunter2',), {'type': 'list'}, ['api_tokens is a tuple; expected a list (the value is not shown)']),
    ('api_tokens', [('hunter2',)], {'type': 'list', 'elements': 'str'},
     ['api_tokens[0] is a tuple (the value is not shown); expected a string']),
    ('api_tokens', [1.5, True, 7], {'type': 'list', 'elements': 'dict'},
     ['api_tokens[0] is a number (the value is not shown); expected a dictionary',
      'api_tokens[1] is a boolean (the value is not shown); expected a dictionary',
      'api_tokens[2] is a number (the value is not shown); expected a dictionary']),
    ('api_token', {'a': 'hunter2'}, {'type': 'int'}, ['api_token is a dictionary; expected a whole number (the value is not shown)']),
    ('api_token', 'hunter2', {'type': 'int'}, ['api_token is a string; expected a whole number (the value is not shown)']),
    # the keys of a secret dictionary are secret too, whatever their names
    ('site_secret', {'motd': ['hunter2']}, {'type': 'dict', 'options': {'motd': {'type': 'str'}}},
     ['site_secret.motd is a list; expected a string (the value is not shown)']),
    ('site', {'motd': ['hunter2']}, {'type': 'dict', 'options': {'motd': {'type': 'str', 'no_log': True}}},
     ['site.motd is a list; expected a string (the value is not shown)']),
    ('site', {'motd': ['x']}, {'type': 'dict', 'options': {'motd': {'type': 'str'}}}, ["site.motd is ['x']; expected a string"]),
])
def test_secret_values_are_not_shown(path, value, spec, expected):
    found = pf.check_option(path, value, spec)
    assert found == expected
    assert not any('hunter2' in line for line in found if NOT_SHOWN in line)


def test_secret_flag_of_the_caller_wins():
    assert pf.check_option('motd', ['hunter2'], {'type': 'str'}, secret=True) == ['motd is a list; expected a string (the value is not shown)']


# --- check_values ---------------------------------------------------------------------------

def test_check_values_sorted_by_option_and_only_given_ones():
    options = {'b_opt': {'type': 'int'}, 'a_opt': {'type': 'bool'}, 'c_opt': None, 'd_opt': {'required': True}}
    assert pf.check_values(options, {'b_opt': 'x', 'a_opt': 'maybe', 'c_opt': ['l'], 'z_opt': 'not an option'}) == [
        "a_opt is 'maybe'; expected a boolean (true/false)",
        "b_opt is 'x'; expected a whole number",
        "c_opt is ['l']; expected a string",
    ]


# --- role rules through the roles' real specs -------------------------------------------------

@pytest.mark.parametrize('role, host, groups, changes, expected', [
    # munge
    ('munge', 'gpu-02', None, dict(munge_key_b64=''), []),
    # mig: the catalogue, its entries, the controller for the Slurm integration
    ('mig', 'gpu-02', None, dict(mig_layout='x', mig_layouts={}, mig_layouts_custom={}),
     ['mig_layout is \'x\', not a layout of mig_layouts or mig_layouts_custom; valid layouts: none (or "" to leave MIG alone)']),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts={}, mig_layouts_custom={'site': [{'gpu': 0}, 'all-1g', 3]}),
     ["layout 'site' entry 1 is 'all-1g'; expected a dictionary {gpu, model, mig, instances}",
      "layout 'site' entry 2 is 3; expected a dictionary {gpu, model, mig, instances}"]),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts={'site': None}, mig_layouts_custom={}),
     ["layout 'site' is null; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of "
      'gpucluster.bringup.nvidia_mig)']),
    ('mig', 'gpu-02', None, dict(mig_layout='site', mig_layouts={'site': [{'gpu': 0}]}, mig_layouts_custom={}), []),
    ('mig', 'ctl', dict(GROUPS, slurm_controller=[]), dict(mig_layout='site', mig_layouts={'site': [{'gpu': 0}]}), []),
    ('mig', 'gpu-02', dict(GROUPS, slurm_controller=[]),
     dict(mig_layout='site', mig_layouts={'site': [{'gpu': 0}]}, mig_slurm_integration='no'), []),
    # slurmdbd: the group, the password length (8 is enough), the names, the entries of qos/accounts/users
    ('slurmdbd', 'ctl', dict(GROUPS, slurmdbd=[]), {},
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    ('slurmdbd', 'ctl', {'all': ['ctl']}, {},
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefgh'), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefg'),
     ['slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, at '
      "least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_pass='abcdefgh#'),
     ['slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, at '
      "least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); the value is not shown"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_conf={'storageuser': 'slurm-user', 'StorageLoc': 'acct_2'}),
     ["slurmdbd_conf.storageuser is 'slurm-user'; use letters, digits and '_'"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_storage_user_host='10.0.0.%'), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_accounting={'jobacctgatherfrequency': -1, 'PriorityWeightAge': -1}),
     ["slurmdbd_accounting.jobacctgatherfrequency is -1; expected a whole number, 0 or more (seconds; 0 turns the sampling off)"]),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_accounting={'JobAcctGatherFrequency': 0, 'PriorityType': None}), []),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_conf={'storagepass': 'x', 'DebugLevel': 'info'}),
     ['slurmdbd_conf.storagepass: set the database password with slurmdbd_storage_pass (the value is not shown)']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_qos=[{'name': 'normal'}, {'priority': 10}], slurmdbd_accounts=[{'name': ''}],
                                   slurmdbd_users=[{'name': 'alice'}, {'name': 7}]),
     ['slurmdbd_qos[1] lacks name (required)', 'slurmdbd_accounts[0] lacks name (required)', 'slurmdbd_users[1] lacks name (required)']),
    ('slurmdbd', 'ctl', None, dict(slurmdbd_qos=[{'name': 'normal'}], slurmdbd_accounts=[{'name': 'ml'}], slurmdbd_users=[{'name': 'alice'}]),
     []),
    # slurm: partition nodes of the wrong kind or empty, a hook name of the right form
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': 5}, {'name': 'b', 'nodes': {'x': 1}}]),
     ['slurm_partitions[0].nodes is 5; expected ALL, a hostlist (gpu-[01-04]) or a list of node names',
      "slurm_partitions[1].nodes is {'x': 1}; expected ALL, a hostlist (gpu-[01-04]) or a list of node names"]),
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': ''}]),
     ['slurm_partitions[0].nodes is empty; name ALL, a hostlist or a list of node names']),
    ('slurm', 'gpu-02', None, dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu-[01-02]', 'default': True}, {'name': 'b', 'nodes': ['gpu-01']}]),
     []),
    ('slurm', 'gpu-02', None, dict(slurm_hooks_extra=[{'src': 'x', 'phase': 'prolog', 'name': '60-all-site-check'},
                                                      {'src': 'y', 'phase': 'epilog', 'name': '6-all-x'}]),
     ["slurm_hooks_extra[1].name is '6-all-x'; expected NN-class-name (e.g. 60-all-site-check)"]),
    # enroot: each package source needs its location
    ('enroot', 'gpu-02', None, dict(enroot_package_source='url', enroot_release_url=''),
     ["enroot_package_source is 'url' but enroot_release_url is empty; set it (the base URL of the release assets)"]),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='mirror', enroot_mirror_url=''),
     ["enroot_package_source is 'mirror' but enroot_mirror_url is empty; set it (the base URL of a web server holding the release .deb files)"]),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='mirror', enroot_mirror_url='http://mirror/enroot', enroot_release_url=''), []),
    ('enroot', 'gpu-02', None, dict(enroot_package_source='url', enroot_release_url='https://x', enroot_mirror_url=''), []),
    ('enroot', 'gpu-02', None, dict(enroot_conf={'zstd': 1, 'ENROOT_SQUASH_OPTIONS': '-comp lz4 -exit-on-error', 'Enroot_x': 2}),
     ['enroot_conf keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: zstd, Enroot_x']),
    # enroot credentials: complete entries pass, the machine is named or <missing>
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': '$oauthtoken', 'password': 'hunter2'}]), []),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'password': 'hunter2'}]),
     ['enroot_credentials[0] (machine nvcr.io) needs the keys machine, login and password, all non-empty']),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'login': 'bot', 'password': 'hunter2'}]),
     ['enroot_credentials[0] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': 'bot', 'password': 'hunter2'},
                                                        {'machine': '', 'login': 'bot', 'password': 'hunter2'}]),
     ['enroot_credentials[1] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    # a key that is not secret by name is still hidden inside the secret list (enroot_credentials has no_log)
    ('enroot', 'gpu-02', None, dict(enroot_credentials=[{'machine': 'nvcr.io', 'login': ['hunter2'], 'password': 'x'}]),
     ['enroot_credentials[0].login is a list; expected a string (the value is not shown)']),
    ('enroot', 'gpu-02', None, dict(enroot_shared_dir_mode='0755'), []),
    # pyxis: an absolute importer is fine
    ('pyxis', 'gpu-02', None, dict(pyxis_conf=dict(importer='/usr/local/bin/importer', runtime_path='/run/pyxis')), []),
    ('pyxis', 'gpu-02', None, dict(pyxis_conf=dict(runtime_path='run/pyxis')),
     ["pyxis_conf.runtime_path must be an absolute path without spaces, got 'run/pyxis'"]),
])
def test_role_rules(role, host, groups, changes, expected):
    assert problems(role, host=host, groups=groups, **changes) == expected


# --- role rules on values of the wrong kind (the argument spec reports those; here without a spec) ---

@pytest.mark.parametrize('role, values, groups, expected', [
    # the inventory groups may be missing altogether
    ('munge', {}, None, ['inventory group slurm_controller has no hosts; its first host holds the munge key']),
    ('slurmdbd', {}, [],
     ['inventory group slurmdbd must hold exactly one host (where slurmdbd runs), it holds 0']),
    # the MIG rule needs both catalogues (the action leaves out what it cannot template)
    ('mig', {'mig_layout': 'x', 'mig_layouts': {}}, GROUPS, []),
    ('mig', {'mig_layout': 'x', 'mig_layouts_custom': {}}, GROUPS, []),
    ('mig', {'mig_layout': 'x', 'mig_layouts': ['x'], 'mig_layouts_custom': {'x': [{'gpu': 0}]}}, GROUPS, []),
    # entries that are not dictionaries are skipped, the following ones still checked
    ('slurm', {'slurm_partitions': ['batch', {'name': 'DEFAULT', 'nodes': 'ALL'}]}, GROUPS,
     ['slurm_partitions[1].name is \'DEFAULT\'; use letters, digits, ".", "_", "-" (and not DEFAULT)']),
    ('slurm', {'slurm_partitions': [{'nodes': 'ALL'}, {'name': 'a', 'nodes': None}]}, GROUPS, []),
    ('slurm', {'slurm_hooks_extra': ['60-all-x', {'src': 'x'}, {'name': 60}, {'name': 'bad'}]}, GROUPS,
     ["slurm_hooks_extra[3].name is 'bad'; expected NN-class-name (e.g. 60-all-site-check)"]),
    ('slurmdbd', {'slurmdbd_qos': ['normal', {'name': 'high'}], 'slurmdbd_users': [['alice'], {}]}, GROUPS,
     ['slurmdbd_users[1] lacks name (required)']),
    ('enroot', {'enroot_credentials': ['nvcr.io', {'machine': 7, 'login': 'bot', 'password': 'x'}]}, GROUPS,
     ['enroot_credentials[1] (machine <missing>) needs the keys machine, login and password, all non-empty']),
    ('enroot', {'enroot_package_source': 'url'}, GROUPS, []),
    ('pyxis', {'pyxis_conf': {'importer': ''}}, GROUPS, []),
    ('slurm_healthcheck', {'anything': 'at all'}, GROUPS, []),
])
def test_role_rules_skip_values_of_the_wrong_kind(role, values, groups, expected):
    assert pf.role_problems(role, 'ctl', {}, values, groups) == expected


# --- report and failure_message -----------------------------------------------------------------

@pytest.mark.parametrize('inventory, found, expected', [
    ([], [], []),
    (['inventory group slurmdbd is empty'], [], ['inventory group slurmdbd is empty']),
    # natural order: gpu-2 before gpu-10
    ([], [('gpu-10', 'slurm', 'm'), ('gpu-2', 'slurm', 'm'), ('gpu-1', 'slurm', 'm')], ['gpu-[1-2,10]: m (role gpucluster.bringup.slurm)']),
    # names a hostlist cannot hold: listed with commas
    ([], [('node b', 'mig', 'm'), ('node a', 'mig', 'm'), ('c', 'mig', 'm')], ['c, node a, node b: m (role gpucluster.bringup.mig)']),
    # the same message of two roles: two lines, in order of first appearance
    ([], [('b', 'slurm', 'm'), ('a', 'enroot', 'm'), ('a', 'slurm', 'm')],
     ['a,b: m (role gpucluster.bringup.slurm)', 'a: m (role gpucluster.bringup.enroot)']),
])
def test_report(inventory, found, expected):
    assert pf.report(inventory, found) == expected


@pytest.mark.parametrize('lines, expected', [
    (['one'], 'the inventory has 1 problem, nothing was changed:\none'),
    (['one', 'two'], 'the inventory has 2 problems, nothing was changed:\none\ntwo'),
    ([], 'the inventory has 0 problems, nothing was changed:\n'),
])
def test_failure_message(lines, expected):
    assert pf.failure_message(lines) == expected


@pytest.mark.parametrize('strategy, bad', [
    ('linear', False),
    ('ansible.builtin.linear', False),
    ('debug', False),
    ('mitogen_linear', False),
    ('my_site_strategy', False),
    ('', False),
    (None, False),
    ('free', True),
    ('ansible.builtin.free', True),
    ('host_pinned', True),
    ('ansible.builtin.host_pinned', True),
    ('mitogen_free', True),
    ('mitogen_host_pinned', True),
    ('freely', False),
])
def test_strategy_problem(strategy, bad):
    problem = pf.strategy_problem(strategy)
    if not bad:
        assert problem is None
        return
    assert problem.startswith("the play's strategy is %r" % strategy)
    assert 'linear, or mitogen_linear' in problem
    assert 'any_errors_fatal' in problem


# --- the task's own options (argument_problems) -------------------------------------------------------------------

ROLE_NAMES = [name for name, groups in pf.SITE_ROLES]
GROUP_WORDS = "expected an inventory group name (letters, digits, '_', '-', '.'; e.g. slurm_compute)"


@pytest.mark.parametrize('args, expected', [
    ({}, []),
    ({'roles': [], 'controller_group': 'slurm_controller', 'compute_group': 'slurm-compute', 'gpu_group': 'gpu.nodes'}, []),
    ({'roles': [{'name': 'slurm', 'groups': 'slurm_controller,slurm_compute'}], 'hosts': 'ctl', 'inventory': 'no'}, []),
    # a null option is left to its default
    ({'roles': None, 'hosts': None, 'inventory': None, 'controller_group': None}, []),
    ('roles', ["the preflight takes a dictionary of options (compute_group, controller_group, gpu_group, hosts, inventory, roles); "
               "got 'roles'"]),
    ({'role': 1, 'host': 2}, ["unknown options 'host', 'role'; valid options: compute_group, controller_group, gpu_group, hosts, "
                              'inventory, roles']),
    ({'controller_group': 'slurm controller'}, ["controller_group is 'slurm controller'; " + GROUP_WORDS]),
    ({'gpu_group': 5}, ['gpu_group is 5; ' + GROUP_WORDS]),
    ({'inventory': 'perhaps'}, ["inventory is 'perhaps'; expected a boolean (true/false)"]),
    ({'roles': {'name': 'slurm'}}, ["roles is {'name': 'slurm'}; expected a list of {name, groups} "
                                    '(e.g. [{name: slurm, groups: [slurm_controller, slurm_compute]}])']),
    ({'roles': [{'name': 'slurm', 'groups': [], 'x': 1, 'y': 2}]},
     ["roles[0] has the unknown keys 'x', 'y'; valid keys: groups, name",
      'roles[0].groups is []; expected one or more inventory groups whose hosts run role slurm (e.g. [slurm_compute]; [all] for every host)']),
    ({'roles': [{'name': 7, 'groups': {'a': 1}}]},
     ['roles[0].name is 7; valid values: ' + ', '.join(ROLE_NAMES),
      "roles[0].groups is {'a': 1}; expected a list of inventory group names whose hosts run the role"]),
    ({'roles': [{'name': 'mig', 'groups': ['gpu_nodes']}, {'name': 'mig', 'groups': ['all']}, {'name': 'mig', 'groups': ['x']}]},
     ["roles[1].name is 'mig', given twice (also roles[0]); give each role once, with every group it runs on",
      "roles[2].name is 'mig', given twice (also roles[0]); give each role once, with every group it runs on"]),
    ({'roles': [None]}, ['roles[0] is null; expected a dictionary {name, groups}']),
    ({'hosts': []}, ['hosts is []; expected one or more inventory hosts (leave hosts unset for the hosts of the play)']),
    ({'hosts': {'ctl': 1}}, ["hosts is {'ctl': 1}; expected a list of inventory hosts (leave hosts unset for the hosts of the play)"]),
    ({'hosts': ['ctl', 'localhost', 3]},
     ["hosts[1] is 'localhost', which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])",
      'hosts[2] is 3, which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])']),
])
def test_argument_problems(args, expected):
    assert pf.argument_problems(args, ROLE_NAMES, GROUPS) == expected


def test_argument_problems_with_an_empty_or_a_large_inventory():
    assert pf.argument_problems({'hosts': ['a']}, ROLE_NAMES, {}) == [
        "hosts[0] is 'a', which is not a host of the inventory; expected hosts, and the inventory has none"]
    many = {'all': ['n%03d' % i for i in range(0, 400, 2)]}
    found = pf.argument_problems({'hosts': ['x']}, ROLE_NAMES, many)
    assert len(found) == 1 and found[0].endswith('...)') and len(found[0]) < 220, found


def test_options_failure_message():
    assert pf.options_failure_message(['a']) == 'the preflight task has 1 bad option, nothing was checked or changed:\na'
    assert pf.options_failure_message(['a', 'b']) == 'the preflight task has 2 bad options, nothing was checked or changed:\na\nb'


# --- numbers in range, partition nodes, the fabric file -------------------------------------------------------------

@pytest.mark.parametrize('role, host, changes, expected', [
    # boundaries: the least value passes, one below does not; a port's most passes, one above does not
    ('slurm', 'gpu-02', dict(slurm_large_system_min_nodes=1, slurm_memory_reserve_mb=0, slurm_restart_batch_size='1'), []),
    ('slurm', 'gpu-02', dict(slurm_large_system_min_nodes=0),
     ['slurm_large_system_min_nodes is 0; expected a whole number, 1 or more (the compute host count from which the large-cluster '
      'settings apply)']),
    ('slurmdbd', 'ctl', dict(slurmdbd_port=65535, slurmdbd_conf={'StoragePort': 1}), []),
    ('slurmdbd', 'ctl', dict(slurmdbd_port=65536, slurmdbd_conf={'StoragePort': '-1'}),
     ['slurmdbd_port is 65536; expected a TCP port, a whole number from 1 to 65535',
      "slurmdbd_conf.StoragePort is '-1'; expected a TCP port, a whole number from 1 to 65535"]),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(periodic_budget=0.01, ib_rate_gbps=None),
                                         slurm_healthcheck_interval=0), []),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(periodic_budget='-1.5', ib_rate_gbps=0)),
     ['slurm_healthcheck_settings.ib_rate_gbps is 0; expected a number of Gb/s above 0',
      "slurm_healthcheck_settings.periodic_budget is '-1.5'; expected a number of seconds above 0"]),
    ('slurm_healthcheck', 'gpu-02', dict(slurm_healthcheck_settings=dict(xid_drain='48,0')),
     ["slurm_healthcheck_settings.xid_drain[1] is '0'; expected a whole number, 1 or more (Xid numbers)"]),
    ('mig', 'gpu-02', dict(mig_slurm_wait={'drain_timeout': 0, 'register_timeout': 0}),
     ['mig_slurm_wait.register_timeout is 0; expected a whole number, 1 or more (seconds to wait for the node to register)']),
    ('enroot', 'gpu-02', dict(enroot_conf.ENROOT_MAX_PROCESSORS=0, enroot_conf.ENROOT_CONNECT_TIMEOUT=-1),
     ['enroot_conf.ENROOT_CONNECT_TIMEOUT is -1; expected a whole number, 0 or more (seconds)']),
    # a value of the wrong type is named by the argument spec only, not ranged too
    ('slurm', 'gpu-02', dict(slurm_hooks_settings={'timeout': 'soon'}), ["slurm_hooks_settings.timeout is 'soon'; expected a whole number"]),
    # partition nodes as the slurm role expands them
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu-[01-'}]),
     ['slurm_partitions[0].nodes is \'gpu-[01-\' (partition a): hostlist "gpu-[01-" has a "[" without a matching "]"; '
      'expected ALL, a hostlist (gpu-[01-04]) or a list of node names']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'gpu_[01-02]'}]),
     ["slurm_partitions[0].nodes is 'gpu_[01-02]' (partition a): node name 'gpu_01' is not one Slurm accepts: a host name of letters, "
      'digits and "-" (not first or last in a label), labels joined with ".", no "_", spaces, brackets, commas, "=" or "#" (e.g. "gpu-01")']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': ' All '}]),
     ["slurm_partitions[0].nodes is ' All ' (partition a); expected ALL (upper case: Slurm reads any other spelling as a node name), "
      'a hostlist (gpu-[01-04]) or a list of node names']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': ['gpu-01', 5, 'gpu-02']}]),
     ['slurm_partitions[0].nodes[1] is 5 (partition a); expected a node name (letters, digits, "-" and "."; no brackets: a list holds '
      'the names themselves, a hostlist such as gpu-[01-04] is given as the whole value of nodes)']),
    ('slurm', 'gpu-02', dict(slurm_partitions=[{'name': 'a', 'nodes': 'ctl,gpu-[01-02]'}, {'name': 'b', 'nodes': ['gpu-01', 'ctl']}]), []),
    # the fabric command when the fabric is read on a host
    ('slurm', 'gpu-02', dict(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_host='gpu-01', ibnetdiscover_command=[''])),
     ["slurm_topology_settings.ibnetdiscover_command is ['']; expected the command (argv) to run on gpu-01, a non-empty list of non-empty words "
      'such as [ibnetdiscover]']),
    # block sizes: a size below 1 is named before the growth rules
    ('slurm', 'gpu-02', dict(slurm_topology='block', slurm_topology_settings=dict(block_sizes=[18, 0])),
     ['slurm_topology_settings.block_sizes[1] is 0; expected a whole number, 1 or more (nodes in a block; the planning base block size first, '
      'e.g. [18, 36, 72])']),
    ('slurm', 'gpu-02', dict(slurm_topology='none', slurm_topology_settings=dict(block_sizes=[-1])), []),
    ('slurm', 'gpu-02', dict(slurm_cluster_name=''),
     ["slurm_cluster_name is ''; expected the name of the cluster (slurm.conf ClusterName, the cluster's name in the accounting "
      'database), e.g. gpucluster']),
])
def test_role_input_ranges_and_forms(role, host, changes, expected):
    assert problems(role, host=host, **changes) == expected


def test_the_fabric_file_is_judged_by_the_callers_controller_file():
    options = _load('slurm', 'meta/argument_specs.yml')['argument_specs']['main']['options']
    values = dict((k, v) for k, v in _load('slurm', 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    values.update(slurm_topology='tree', slurm_topology_settings=dict(ibnetdiscover_src='/srv/fabric.txt'))
    asked = []

    def missing(path):
        asked.append(path)
        return 'there is no such file'
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, missing) == [
        "slurm_topology_settings.ibnetdiscover_src is '/srv/fabric.txt'; expected a file on the Ansible controller holding ibnetdiscover's "
        'output: there is no such file']
    assert asked == ['/srv/fabric.txt']
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, lambda path: '') == []
    # without a judge (the pure rules alone), and when the fabric is not read from a file, nothing is asked
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS) == []
    values.update(slurm_topology='none')
    assert pf.role_problems('slurm', 'ctl', options, values, GROUPS, missing) == [] and asked == ['/srv/fabric.txt']
