"""plugin_utils/_preflight_spec: the preflight's values judged by Ansible's own ArgumentSpecValidator, in the preflight's words.

Each table gives a value, its argument spec entry and the exact lines the preflight prints; the conversions are
Ansible's (the values the roles' own checks then read).
"""
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf
from ansible_collections.gpucluster.bringup.plugins.plugin_utils import _preflight_spec as spec
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_spec import (option_problems, spec_problems,
                                                                                         task_option_problems)

GROUPS = {'all': ['ctl', 'gpu-01', 'gpu-02'], 'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'],
          'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}
NOT_SHOWN = '(the value is not shown)'


# --- the conversions: Ansible's, except where the role would read a value it cannot use ----------------------

@pytest.mark.parametrize('value, wanted, expected', [
    ('yes', 'bool', True),
    ('Off', 'bool', False),
    (1, 'bool', True),
    (' TRUE ', 'bool', True),
    ('12', 'int', 12),
    (3.0, 'int', 3),
    (' +12 ', 'int', 12),
    ('1.5', 'float', 1.5),
    ('a,b', 'list', ['a', 'b']),
    (5, 'list', ['5']),
    ([1], 'raw', [1]),
    ({'a': 1}, 'jsonarg', '{"a": 1}'),
    # strings and paths: as given (a path is not expanded on the controller: the role expands it on the node)
    (7, 'str', 7),
    ('~/x', 'path', '~/x'),
])
def test_converted_as_ansible_converts(value, wanted, expected):
    assert spec_problems({'o': {'type': wanted}}, {'o': value}) == ([], {'o': expected})


@pytest.mark.parametrize('value, wanted, expected', [
    (2, 'bool', 'o is 2; expected a boolean (true/false)'),
    ('half', 'float', "o is 'half'; expected a number"),
    ({'a': 1}, 'list', "o is {'a': 1}; expected a list"),
    # stricter than Ansible: a container is not a string or a path, a string is not a dictionary
    (['a'], 'str', "o is ['a']; expected a string"),
    ({'a': 1}, 'path', "o is {'a': 1}; expected a path (string)"),
    ('a=1', 'dict', "o is 'a=1'; expected a dictionary"),
    ('{"a": 1}', 'dict', 'o is \'{"a": 1}\'; expected a dictionary'),
    (['a'], 'dict', "o is ['a']; expected a dictionary"),
])
def test_refused(value, wanted, expected):
    assert spec_problems({'o': {'type': wanted}}, {'o': value}) == ([expected], {})


def test_long_values_are_cut():
    found = option_problems('slurm_cluster_name', ['x' * 200], {'type': 'str'})
    assert len(found) == 1 and found[0].endswith("...; expected a string") and len(found[0]) < 140


def test_secret_choice_is_not_shown():
    assert option_problems('vault_token', 'abc', {'type': 'str', 'choices': ['x', 'y']}) == [
        'vault_token is not one of the valid values: x, y (the value is not shown)']


# --- one value against its spec: types, required, nulls, choices ------------------------------------------

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
    # (Ansible reads a boolean as the number 1 or 0)
    ('ratio', True, {'type': 'float'}, []),
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
def test_option_problems(path, value, spec, expected):
    assert option_problems(path, value, spec) == expected


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
     ['api_tokens[1] is a list; expected a string (the value is not shown)',
      'api_tokens[2] is not one of the valid values: ok (the value is not shown)']),
    ('api_tokens', ('hunter2',), {'type': 'list'}, ['api_tokens is a tuple; expected a list (the value is not shown)']),
    ('api_tokens', [('hunter2',)], {'type': 'list', 'elements': 'str'},
     ['api_tokens[0] is a tuple; expected a string (the value is not shown)']),
    ('api_tokens', [1.5, True, 7], {'type': 'list', 'elements': 'dict'},
     ['api_tokens[0] is a number; expected a dictionary (the value is not shown)',
      'api_tokens[1] is a boolean; expected a dictionary (the value is not shown)',
      'api_tokens[2] is a number; expected a dictionary (the value is not shown)']),
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
    found = option_problems(path, value, spec)
    assert found == expected
    assert not any('hunter2' in line for line in found if NOT_SHOWN in line)


def test_secret_flag_of_the_caller_wins():
    assert option_problems('motd', ['hunter2'], {'type': 'str'}, secret=True) == ['motd is a list; expected a string (the value is not shown)']


# --- spec_problems: every option given, in name order; the values converted -----------------

def test_spec_problems_sorted_by_option_and_only_given_ones():
    options = {'b_opt': {'type': 'int'}, 'a_opt': {'type': 'bool'}, 'c_opt': None, 'd_opt': {'required': True}, 'e_opt': {'type': 'int'}}
    found, converted = spec_problems(options, {'b_opt': 'x', 'a_opt': 'maybe', 'c_opt': ['l'], 'z_opt': 'not an option', 'e_opt': '3'})
    assert found == [
        "a_opt is 'maybe'; expected a boolean (true/false)",
        "b_opt is 'x'; expected a whole number",
        "c_opt is ['l']; expected a string",
    ]
    # the values with a problem are left out; the others as Ansible converts them
    assert converted == {'e_opt': 3}


def test_spec_problems_judges_each_value_once_a_run():
    cache = {}
    options = {'port': {'type': 'int'}}
    assert spec_problems(options, {'port': 'x'}, cache, 'slurm')[0] == ["port is 'x'; expected a whole number"]
    assert list(cache) == [('slurm', 'port', "'x'")]
    # the cached answer is the one given (a poisoned entry shows it is read, not recomputed)
    cache[('slurm', 'port', "'x'")] = (['cached'], spec.BAD)
    assert spec_problems(options, {'port': 'x'}, cache, 'slurm') == (['cached'], {})
    assert spec_problems(options, {'port': 'x'}, cache, 'slurmdbd')[0] == ["port is 'x'; expected a whole number"]


# --- the task's own options (task_option_problems, then _roles.argument_problems) -------------------------------------------------------------------

ROLE_NAMES = [name for name, groups in pf.SITE_ROLES]


def task_problems(args, groups=None):
    """As the action: Ansible's validator on the task's own options, then what the spec cannot say."""
    found, converted = task_option_problems(pf.ARGUMENT_SPEC, args)
    return found or pf.argument_problems(converted, GROUPS if groups is None else groups)


GROUP_WORDS = "expected an inventory group name (letters, digits, '_', '-', '.'; e.g. slurm_compute)"


@pytest.mark.parametrize('args, expected', [
    ({}, []),
    ({'roles': [], 'controller_group': 'slurm_controller', 'compute_group': 'slurm-compute', 'gpu_group': 'gpu.nodes'}, []),
    ({'roles': [{'name': 'slurm', 'groups': 'slurm_controller,slurm_compute'}], 'hosts': 'ctl', 'inventory': 'no'}, []),
    # a null option is left to its default
    ({'roles': None, 'hosts': None, 'inventory': None, 'controller_group': None}, []),
    ('roles', ["the task takes a dictionary of options (compute_group, controller_group, gpu_group, hosts, inventory, roles); "
               "got 'roles'"]),
    ({'role': 1, 'host': 2}, ["unknown options 'host', 'role'; valid options: compute_group, controller_group, gpu_group, hosts, "
                              'inventory, roles']),
    ({'controller_group': 'slurm controller'}, ["controller_group is 'slurm controller'; " + GROUP_WORDS]),
    ({'gpu_group': 5}, ['gpu_group is 5; ' + GROUP_WORDS]),
    ({'inventory': 'perhaps'}, ["inventory is 'perhaps'; expected a boolean (true/false)"]),
    ({'roles': {'name': 'slurm'}}, ["roles is {'name': 'slurm'}; expected a list"]),
    ({'roles': [{'name': 'slurm', 'groups': [], 'x': 1, 'y': 2}]},
     ["roles[0] has the unknown keys 'x', 'y'; valid keys: groups, name"]),
    # what the spec cannot say, once the spec passes
    ({'roles': [{'name': 'slurm', 'groups': []}]},
     ['roles[0].groups is []; expected one or more inventory groups whose hosts run role slurm (e.g. [slurm_compute]; [all] for every host)']),
    ({'roles': [{'name': 7, 'groups': {'a': 1}}]},
     ["roles[0].groups is {'a': 1}; expected a list", 'roles[0].name is 7; valid values: ' + ', '.join(ROLE_NAMES)]),
    ({'roles': [{'name': 'mig', 'groups': ['gpu_nodes']}, {'name': 'mig', 'groups': ['all']}, {'name': 'mig', 'groups': ['x']}]},
     ["roles[1].name is 'mig', given twice (also roles[0]); give each role once, with every group it runs on",
      "roles[2].name is 'mig', given twice (also roles[0]); give each role once, with every group it runs on"]),
    ({'roles': [None]}, ['roles[0] is null; expected a dictionary']),
    ({'hosts': []}, ['hosts is []; expected one or more inventory hosts (leave hosts unset for the hosts of the play)']),
    ({'hosts': {'ctl': 1}}, ["hosts is {'ctl': 1}; expected a list"]),
    ({'hosts': ['ctl', 'localhost', 3]},
     ["hosts[1] is 'localhost', which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])",
      'hosts[2] is 3, which is not a host of the inventory; expected hosts of the inventory (ctl,gpu-[01-02])']),
])
def test_task_option_problems(args, expected):
    assert task_problems(args) == expected


def test_task_options_with_an_empty_or_a_large_inventory():
    assert task_problems({'hosts': ['a']}, {}) == [
        "hosts[0] is 'a', which is not a host of the inventory; expected hosts, and the inventory has none"]
    many = {'all': ['n%03d' % i for i in range(0, 400, 2)]}
    found = task_problems({'hosts': ['x']}, many)
    assert len(found) == 1 and found[0].endswith('...)') and len(found[0]) < 220, found
