# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight's one input check: Ansible's own ArgumentSpecValidator, in the preflight's words (controller side).

Ansible's validator judges every value: its type and the conversions Ansible makes (``'12'`` for an int, ``'a,b'``
for a list, ``'yes'`` for a bool), choices, list elements, required and unknown keys of sub-options. It names a
nested value only by its option and parents (``found in 'slurm_partitions'``, no index, no value), so the walk here
asks it one level at a time and words each answer with the value's path (``slurm_partitions[0].default``) and the
value itself (never a secret's: :func:`~..module_utils.preflight._roles.is_secret`).

Four things Ansible's validator accepts are refused, because the role reads the variable as given, not Ansible's
converted copy, and would get a value it cannot use:

* a list or a dictionary given for a string or a path (Ansible turns it into its ``repr``);
* a string given for a dictionary (Ansible reads JSON or ``k=v`` pairs from it);
* a boolean where the choices are words (YAML reads an unquoted ``off`` as false; Ansible's copy would say ``'off'``);
* a required value set to null (Ansible's copy would be ``''``).

What the specs cannot say (ranges, relations between variables, the inventory's groups) is
``module_utils/preflight/_roles.py``'s, on the values as Ansible converts them (:func:`spec_problems` returns them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.validation import check_type_dict, check_type_str
from ansible.module_utils.errors import UnsupportedError

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as preflight
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight._roles import is_secret, show

# Ansible's type names in words; a type not listed is named as Ansible names it (jsonarg, bytes ...)
TYPE_WORDS = {
    'str': 'a string', 'path': 'a path (string)', 'int': 'a whole number', 'float': 'a number', 'bool': 'a boolean (true/false)',
    'list': 'a list', 'dict': 'a dictionary', 'raw': 'any value',
}
_BOOL_WORDS = {True: ('y', 'yes', 'on', 'true', 't', '1'), False: ('n', 'no', 'off', 'false', 'f', '0')}
# types whose value the role reads as given: Ansible's copy is not handed on (a path would be expanded on the controller)
_AS_GIVEN = ('str', 'path', 'raw')
NOT_SHOWN = '(the value is not shown)'


class _Bad(object):
    """The value of an option with a problem: left out of the values the role's own checks read."""


BAD = _Bad()


def _string(value):
    """Ansible's check_type_str, except that a list or a dictionary is not a string."""
    if isinstance(value, (list, dict, tuple, set)):
        raise TypeError('%s is not a string' % type(value).__name__)
    return check_type_str(value)


def _dictionary(value):
    """Ansible's check_type_dict, except that a string is not a dictionary."""
    if isinstance(value, str):
        raise TypeError('a string is not a dictionary')
    return check_type_dict(value)


# the types whose check is stricter than Ansible's (the module's docstring says why)
_STRICT = {'str': _string, 'path': _string, 'dict': _dictionary}


def _kind(value):
    for types, word in (((bool,), 'a boolean'), ((int, float), 'a number'), ((str,), 'a string'), ((list,), 'a list'),
                        ((dict,), 'a dictionary')):
        if isinstance(value, types):
            return word
    return 'null' if value is None else 'a %s' % type(value).__name__


def _leaf(path):
    return path.rsplit('.', 1)[-1].split('[', 1)[0]


def _words(wanted):
    return TYPE_WORDS.get(wanted, wanted)


def _type_problem(path, value, wanted, secret):
    if secret:
        return '%s is %s; expected %s %s' % (path, _kind(value), _words(wanted), NOT_SHOWN)
    return '%s is %s; expected %s' % (path, show(value), _words(wanted))


def _choice_problem(path, value, choices, secret, hint=''):
    listed = ', '.join(str(c) for c in choices)
    if secret:
        return '%s is not one of the valid values: %s %s' % (path, listed, NOT_SHOWN)
    return '%s is %s; valid values: %s%s' % (path, show(value), listed, hint)


def _judge(wanted, choices, value):
    """Ansible's answer for one value at one level: ``(type_ok, choice_ok, converted)``."""
    level = {'type': _STRICT.get(wanted, wanted)}
    if choices is not None:
        level['choices'] = choices
    result = ArgumentSpecValidator({'value': level}).validate({'value': value})
    errors = result.errors.errors
    if not errors:
        return True, True, result.validated_parameters['value']
    # the type is checked first: a value of the wrong type never reaches the choices
    type_ok = ArgumentSpecValidator({'value': {'type': level['type']}}).validate({'value': value}).errors.errors == []
    return type_ok, False, value


def _bool_for_a_word(value, choices):
    """The choice an unquoted YAML boolean was meant to be, when Ansible would take it for that word; else None."""
    if not isinstance(value, bool) or not choices or any(isinstance(c, bool) for c in choices):
        return None
    words = [c for c in choices if isinstance(c, str) and c.lower() in _BOOL_WORDS[value]]
    return words[0] if words else None


def _walk(path, spec, value, secret, problems):
    """The value as Ansible converts it (the given one for strings and paths), or BAD; problems appended."""
    spec = spec or {}
    secret = secret or is_secret(_leaf(path), spec)
    if value is None:
        if spec.get('required'):
            problems.append('%s is required and is not set' % path)
            return BAD
        return None
    wanted = spec.get('type') or 'str'
    choices = spec.get('choices')
    if wanted == 'list':
        return _walk_list(path, spec, value, secret, problems)
    word = _bool_for_a_word(value, choices)
    if word is not None:
        hint = " (quote it: '%s'; YAML reads an unquoted %s as %s)" % (word, word, show(value))
        problems.append(_choice_problem(path, value, choices, secret, '' if secret else hint))
        return BAD
    type_ok, choice_ok, converted = _judge(wanted, choices, value)
    if not type_ok:
        problems.append(_type_problem(path, value, wanted, secret))
        return BAD
    if not choice_ok:
        problems.append(_choice_problem(path, value, choices, secret))
        return BAD
    if wanted == 'dict' and spec.get('options'):
        return _walk_options(path, spec['options'], converted, secret, problems)
    return value if wanted in _AS_GIVEN else converted


def _walk_list(path, spec, value, secret, problems):
    type_ok, dummy, items = _judge('list', None, value)
    if not type_ok:
        problems.append(_type_problem(path, value, 'list', secret))
        return BAD
    element = dict(type=spec.get('elements') or 'raw', choices=spec.get('choices'), options=spec.get('options'))
    converted, bad = [], False
    for index, item in enumerate(items):
        item_path = '%s[%d]' % (path, index)
        if item is None:
            problems.append('%s is null; expected %s' % (item_path, _words(element['type'])))
            bad = True
            continue
        found = _walk(item_path, element, item, secret, problems)
        bad = bad or found is BAD
        converted.append(found)
    return BAD if bad else converted


def _walk_options(path, options, value, secret, problems):
    """A dictionary with sub-options: Ansible's unknown keys, the required keys missing or null, then each key's own walk."""
    errors = ArgumentSpecValidator(dict((key, {'type': 'raw'}) for key in options)).validate(dict(value)).errors.errors
    before = len(problems)
    if any(isinstance(e, UnsupportedError) for e in errors):
        unknown = sorted(str(k) for k in value if k not in options)
        problems.append('%s has the unknown key%s %s; valid keys: %s'
                        % (path, 's' if len(unknown) > 1 else '', ', '.join(repr(k) for k in unknown), ', '.join(sorted(options))))
    converted = {}
    for key in sorted(options):
        sub = options[key] or {}
        if value.get(key) is None:
            # (a required key set to null is missing too: Ansible's copy would hold '')
            if sub.get('required'):
                problems.append('%s lacks %s (required)' % (path, key))
            elif key in value:
                converted[key] = None
            continue
        converted[key] = _walk('%s.%s' % (path, key), sub, value[key], secret or is_secret(key, sub), problems)
    return BAD if len(problems) > before else converted


def spec_problems(options, values, cache=None, role=None):
    """``(problems, converted)``: ``values`` (option name to value, templated) against ``options`` (argument specs).

    ``converted`` holds the values without a problem, as Ansible converts them (strings and paths as given): what
    the role's own checks read. Options missing from ``values`` (not templated: they need facts) and names without a
    spec are not checked. Each (role, option, value) is judged once a run when ``cache`` (a dict the caller holds)
    is given: the hosts of a node type share their values.
    """
    problems, converted = [], {}
    for name in sorted(values):
        if name not in options:
            continue
        try:
            key = (role, name, repr(values[name]))
        # (a value without a repr: not cached)
        except Exception:  # pylint: disable=broad-except
            key = None
        answer = cache.get(key) if cache is not None and key is not None else None
        if answer is None:
            found = []
            answer = (found, _walk(name, options[name], values[name], False, found))
            if cache is not None and key is not None:
                cache[key] = answer
        problems.extend(answer[0])
        if answer[1] is not BAD:
            converted[name] = answer[1]
    return problems, converted


def task_option_problems(spec, args):
    """``(problems, converted)`` of a task's own options ``args`` against its argument ``spec`` (unknown options named)."""
    if not isinstance(args, dict):
        return ['the task takes a dictionary of options (%s); got %s' % (', '.join(sorted(spec)), show(args))], {}
    problems = []
    unknown = sorted(str(k) for k in args if k not in spec)
    if unknown:
        problems.append('unknown option%s %s; valid options: %s'
                        % ('s' if len(unknown) > 1 else '', ', '.join(repr(k) for k in unknown), ', '.join(sorted(spec))))
    found, converted = spec_problems(spec, args)
    for name in sorted(spec):
        if name not in args or args[name] is None:
            converted[name] = spec[name].get('default')
    return problems + found, converted


def option_problems(path, value, spec, secret=False):
    """The problems of one value for its argument spec entry ``spec``, named by ``path`` (secret: never shown)."""
    problems = []
    _walk(path, spec, value, secret, problems)
    return problems


def role_value_problems(role, host, options, values, groups, controller_file=None, cache=None):
    """One host's problems for ``role``: its values against the argument specs, then (when they pass) the role's own
    checks (``_roles.role_problems``), which read the values as Ansible converts them."""
    problems, converted = spec_problems(options, values, cache, role)
    if problems:
        return problems
    return preflight.role_problems(role, host, options, converted, groups, controller_file)
