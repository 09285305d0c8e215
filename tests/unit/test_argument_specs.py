"""Every role: defaults/main.yml and meta/argument_specs.yml name the same variables, agree, and the README lists them.

docs/development.md: a role's variables are in defaults/ and in argument_specs.yml with the same keys;
internals (``_<role>_*``) live in vars/, so no key of defaults/main.yml is exempt. The one exception is the other way
round: ``CLUSTER_VARIABLES``, the inventory's declarations that several roles read (``gpucluster_node_type``), are in
the argument_specs.yml of each role that reads it (so the role checks it) and in no defaults/main.yml (no default, no
role prefix); their description is the same in every role.
"""
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
CLUSTER_VARIABLES = ('gpucluster_node_type',)
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(p))) for p in glob.glob(os.path.join(ROOT, 'roles', '*', 'defaults', 'main.yml')))


def load(role, path):
    with open(os.path.join(ROOT, 'roles', role, path)) as handle:
        return yaml.safe_load(handle)


def defaults(role):
    return load(role, 'defaults/main.yml') or {}


def entry_points(role):
    return load(role, 'meta/argument_specs.yml')['argument_specs']


def test_roles_found():
    assert {'munge', 'mig', 'slurm', 'validate'} <= set(ROLES)


@pytest.mark.parametrize('role', ROLES)
def test_defaults_and_main_argument_spec_have_the_same_keys(role):
    keys = set(defaults(role))
    options = set(entry_points(role)['main'].get('options') or {}) - set(CLUSTER_VARIABLES)
    assert sorted(keys - options) == [], 'in defaults/main.yml, missing from argument_specs.yml main'
    assert sorted(options - keys) == [], 'in argument_specs.yml main, missing from defaults/main.yml'


@pytest.mark.parametrize('name', CLUSTER_VARIABLES)
def test_cluster_variables_are_declared_alike_without_a_default(name):
    declared = dict((role, entry_points(role)['main']['options'][name]) for role in ROLES
                    if name in (entry_points(role)['main'].get('options') or {}))
    assert len(declared) >= 2, declared
    for role, spec in declared.items():
        assert 'default' not in spec and name not in defaults(role), role
        with open(os.path.join(ROOT, 'roles', role, 'README.md')) as handle:
            assert name in handle.read(), 'roles/%s/README.md does not name %s' % (role, name)
    first = sorted(declared)[0]
    for role, spec in declared.items():
        assert spec == declared[first], 'roles/%s declares %s unlike roles/%s' % (role, name, first)


@pytest.mark.parametrize('role', ROLES)
def test_other_entry_points_use_role_variables(role):
    keys = set(defaults(role)) | set(CLUSTER_VARIABLES)
    for name, entry in entry_points(role).items():
        assert sorted(set(entry.get('options') or {}) - keys) == [], 'entry point %s has options that are not role variables' % name


@pytest.mark.parametrize('role', ROLES)
def test_argument_spec_defaults_are_the_defaults(role):
    values = defaults(role)
    for name, option in (entry_points(role)['main'].get('options') or {}).items():
        if 'default' in option:
            assert option['default'] == values[name], '%s: argument_specs.yml default %r, defaults/main.yml %r' % (name, option['default'], values[name])


@pytest.mark.parametrize('role', ROLES)
def test_defaults_pass_the_role_argument_spec(role):
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    spec = entry_points(role)['main'].get('options') or {}
    # templated values are only known at run time
    values = dict((k, v) for k, v in defaults(role).items() if not (isinstance(v, str) and '{{' in v))
    result = ArgumentSpecValidator(dict((k, v) for k, v in spec.items() if k in values)).validate(values)
    assert [str(e) for e in result.error_messages] == []


@pytest.mark.parametrize('role', ROLES)
def test_readme_lists_every_variable(role):
    path = os.path.join(ROOT, 'roles', role, 'README.md')
    assert os.path.isfile(path), 'roles/%s has no README.md' % role
    with open(path) as handle:
        text = handle.read()
    missing = [name for name in sorted(defaults(role)) if not re.search(r'\b%s\b' % re.escape(name), text)]
    assert missing == [], 'roles/%s/README.md does not list %s' % (role, ', '.join(missing))
