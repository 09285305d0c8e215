# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action of gpucluster.bringup.preflight: the inventory and every role's inputs, on the controller.

Contacts no host: the inventory groups and each host's variables come from
``task_vars`` (``groups``, ``hostvars``), the roles' argument specs and
defaults from the collection's own ``roles/`` directory.  The checks and the
messages are in ``module_utils/preflight/_roles.py``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os
import re

import jinja2
from jinja2 import nodes as jinja2_nodes

from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as preflight
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _site as site
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import preflight_errors

try:  # ansible-core >= 2.19: a string is a template only when trusted as one
    from ansible.template import is_trusted_as_template as _trusted_as_template
except ImportError:  # earlier: every string is (an unsafe one has a type of its own, which the key names)
    def _trusted_as_template(value):  # pylint: disable=unused-argument
        return None

# plugins/action/preflight.py -> the collection root
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROLE_NAMES = [name for name, groups in preflight.SITE_ROLES]

ARGUMENT_SPEC = dict(
    controller_group=dict(type='str', default='slurm_controller'),
    compute_group=dict(type='str', default='slurm_compute'),
    gpu_group=dict(type='str', default='gpu_nodes'),
    roles=dict(type='list', elements='dict', options=dict(
        name=dict(type='str', required=True, choices=ROLE_NAMES),
        groups=dict(type='list', elements='str', required=True),
    )),
    hosts=dict(type='list', elements='str'),
    inventory=dict(type='bool', default=True),
)


class _Skip(Exception):
    """A value that cannot be templated before the facts are gathered."""


def _plain(value):
    """``value`` as plain Python data (resolving lazily templated containers)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict) or hasattr(value, 'keys'):
        return dict((_plain(k), _plain(value[k])) for k in value.keys())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _has_template(value, depth=0):
    """Whether ``value`` (plain data) holds a string Jinja would read as a template (or is too deep to tell quickly)."""
    if isinstance(value, str):
        return '{{' in value or '{%' in value or '{#' in value
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return False
    if depth > 20:
        return True
    if isinstance(value, dict):
        return any(_has_template(k, depth + 1) or _has_template(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_template(v, depth + 1) for v in value)
    return True


# Templating the same default with the same inputs gives the same value on every host; Jinja compiling each role
# default's template again for every host was most of the preflight's time over a large inventory. So a templated
# value is kept per run under a key of everything it depends on: the value itself and, found from the templates'
# syntax, the variables it names, and theirs in turn (each by type, trust and content). Anything the key cannot
# capture is templated per host as before: a lookup, query, now() or vars (files, time, any variable), a filter
# that draws at random or reads the clock, an include or import, a "#jinja2:" header, a value of a type not known
# to be plain data.
_UNKEYED_NAMES = frozenset(('lookup', 'query', 'q', 'now', 'vars', 'varnames', 'lipsum'))
_UNKEYED_FILTERS = frozenset(('random', 'shuffle', 'random_mac', 'password_hash', 'strftime', 'vault', 'unvault'))
_UNKEYED_NODES = (jinja2_nodes.Include, jinja2_nodes.Import, jinja2_nodes.FromImport, jinja2_nodes.Extends)
# plain data: the built-in types and the tagged (not lazily templated) copies of them ansible-core's loaders give
_PLAIN_SCALARS = frozenset((str, int, float, bool, type(None)))
_PLAIN_TAGGED = frozenset(('_AnsibleTaggedStr', '_AnsibleTaggedInt', '_AnsibleTaggedFloat', '_AnsibleTaggedDict',
                           '_AnsibleTaggedList', '_AnsibleTaggedTuple', 'AnsibleUnicode', 'AnsibleMapping', 'AnsibleSequence',
                           'AnsibleUnsafeText'))
_JINJA = jinja2.Environment()


class _Unkeyed(Exception):
    """A value whose templated result a key cannot capture."""


def _template_strings(value, found, depth=0):
    """Add to ``found`` every string of ``value`` (keys too) that holds a Jinja marker."""
    if depth > 20:
        raise _Unkeyed()
    if isinstance(value, str):
        if '{{' in value or '{%' in value or '{#' in value:
            found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _template_strings(key, found, depth + 1)
            _template_strings(item, found, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _template_strings(item, found, depth + 1)


def _template_names(text, memo):
    """The variables the template ``text`` names (a frozenset); ``_Unkeyed`` when its result may depend on more."""
    text = str(text)
    if text not in memo:
        names = None
        if not text.lstrip().startswith('#jinja2:'):
            try:
                tree = _JINJA.parse(text)
            except jinja2.TemplateSyntaxError:
                tree = None
            if tree is not None and not any(True for dummy in tree.find_all(_UNKEYED_NODES)):
                filters = set(n.name.rsplit('.', 1)[-1] for n in tree.find_all(jinja2_nodes.Filter))
                # every name the template reads or sets (a loop's or a set's own names too: more names in the key than
                # needed only makes it rarer to share)
                names = frozenset(n.name for n in tree.find_all(jinja2_nodes.Name))
                if filters & _UNKEYED_FILTERS or names & _UNKEYED_NAMES:
                    names = None
        memo[text] = names
    if memo[text] is None:
        raise _Unkeyed()
    return memo[text]


def _value_key(value, memo, depth=0):
    """A hashable key of ``value``'s type, trust and content; ``_Unkeyed`` for anything but plain data."""
    kind = type(value)
    if kind not in _PLAIN_SCALARS and kind not in (dict, list, tuple):
        if kind.__name__ not in _PLAIN_TAGGED or not kind.__module__.startswith('ansible.'):
            raise _Unkeyed()
    if depth > 20:
        raise _Unkeyed()
    if isinstance(value, str):
        return (kind.__name__, str(value), _trusted_as_template(value))
    if isinstance(value, (bool, int, float)) or value is None:
        return (kind.__name__, value)
    if isinstance(value, (dict, list, tuple)):
        # a large container (the inventory's groups) is keyed once a run
        known = memo.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if isinstance(value, dict):
            key = (kind.__name__, tuple((_value_key(k, memo, depth + 1), _value_key(v, memo, depth + 1)) for k, v in value.items()))
        else:
            key = (kind.__name__, tuple(_value_key(v, memo, depth + 1) for v in value))
        memo[id(value)] = (value, key)
        return key
    raise _Unkeyed()


def _template_strings_of(value, memo):
    """The strings of ``value`` that hold a Jinja marker; those of a container found once a run (the inventory's groups)."""
    if not isinstance(value, (dict, list, tuple)):
        found = []
        _template_strings(value, found)
        return found
    known = memo.get(id(value))
    if known is None or known[0] is not value:
        found = []
        _template_strings(value, found)
        known = memo[id(value)] = (value, found)
    return known[1]


def _template_key(value, variables, constants, memos):
    """The key of ``value`` templated with ``variables``: ``value`` and every variable it depends on, in turn; None
    when a key cannot capture what the result depends on (then the value is templated for each host).

    ``constants``: the objects of the run (the role's context: its vars, ``groups``, ``hostvars``), keyed by identity
    while a host's variable is that very object. ``memos``: ``(template names, value keys, template strings)`` kept for
    the run.
    """
    names_memo, keys_memo, strings_memo = memos
    try:
        parts = {}
        pending = []
        for text in _template_strings_of(value, strings_memo):
            pending.extend(_template_names(text, names_memo))
        while pending:
            name = pending.pop()
            if name in parts:
                continue
            if name not in variables:
                parts[name] = None
                continue
            item = variables[name]
            if name in constants and item is constants[name]:
                # the run's own object (kept by the role's cache while the run lasts, so its id names it); a template
                # in it may still name a variable of the host, followed below
                parts[name] = ('constant', id(item))
            else:
                parts[name] = _value_key(item, keys_memo)
            for text in _template_strings_of(item, strings_memo):
                pending.extend(_template_names(text, names_memo))
        return (_value_key(value, keys_memo), tuple((name, parts[name]) for name in sorted(parts)))
    except (_Unkeyed, TypeError, ValueError, RecursionError):
        return None


def _first_line(text):
    lines = str(text).strip().splitlines()
    return lines[0] if lines else str(text)


# what a lookup says of a file it cannot read (ansible-core 2.19: "Unable to access the file '/x': File not found.";
# earlier: "could not locate file in lookup: /x"); the path is named, never the value of a secret
_LOOKUP_FILE = re.compile(r"(?:Unable to access the file '(?P<path>[^']*)'(?P<why>: [^.]*)?|could not locate file in lookup: (?P<path2>\S+))")


def _lookup_file_problem(text):
    found = _LOOKUP_FILE.search(str(text))
    if not found:
        return ''
    path = found.group('path') if found.group('path') is not None else found.group('path2')
    why = (found.group('why') or ': file not found')[2:].strip().lower() if found.group('path') is not None else 'file not found'
    return ("a lookup reads the file '%s' on the Ansible controller: %s (a relative path is looked up in the files/ directories "
            'of the play and the role)' % (path, why))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _load(self, role, name, trusted=False):
        path = os.path.join(COLLECTION_ROOT, 'roles', role, name)
        if not os.path.isfile(path):
            return None
        if trusted:
            try:
                return self._loader.load_from_file(path, cache='none', trusted_as_template=True)
            except TypeError:  # ansible-core < 2.19: every loaded string is a template
                pass
        return self._loader.load_from_file(path, cache='none')

    def _template(self, templar, value):
        try:
            return _plain(templar.template(value))
        except AnsibleUndefinedVariable as exc:
            raise _Skip(str(exc)) from exc
        except AnsibleError as exc:
            if 'undefined' in str(exc).lower():
                raise _Skip(str(exc)) from exc
            raise

    def _host_values(self, raw, options, defaults, context=None):
        """``(values, skipped, problems)`` of one host (its untemplated variables ``raw``) for one role's options.

        ``context``: what else a default may name (the role's own vars, ``groups``, ``hostvars``).
        """
        templar = variables = None
        values, skipped, problems = {}, [], []
        # what was templated this run (see _template_key); a failure other than a skip is not kept
        templated = self.__dict__.setdefault('_preflight_templated', {})
        memos = self.__dict__.setdefault('_preflight_memos', ({}, {}, {}))
        for name in sorted(options):
            if name in raw:
                value = raw[name]
            elif name in defaults:
                value = defaults[name]
            else:
                continue
            if not _has_template(value):
                # plain data (most values): nothing to template, and no templar to make (the preflight of a large
                # inventory spends its time here)
                values[name] = _plain(value)
                continue
            if variables is None:
                variables = dict(context or {})
                variables.update(defaults)
                variables.update(raw)
            key = _template_key(value, variables, context or {}, memos)
            if key is not None and key in templated:
                if templated[key] is _Skip:
                    skipped.append(name)
                else:
                    values[name] = _plain(templated[key])
                continue
            if templar is None:
                templar = self._templar.copy_with_new_env(available_variables=variables)
            try:
                values[name] = self._template(templar, value)
                if key is not None:
                    templated[key] = _plain(values[name])
            except _Skip:
                skipped.append(name)
                if key is not None:
                    templated[key] = _Skip
            except AnsibleError as exc:
                missing = _lookup_file_problem(exc)
                if missing:
                    problems.append('%s cannot be templated: %s%s' % (name, missing, ' (the value is not shown)'
                                                                      if preflight.is_secret(name, options[name]) else ''))
                elif preflight.is_secret(name, options[name]):
                    problems.append('%s cannot be templated (the value is not shown)' % name)
                else:
                    problems.append('%s cannot be templated: %s' % (name, _first_line(exc)))
        return values, skipped, problems

    def _validator_problems(self, options, values, found, role=None):
        """Problems ArgumentSpecValidator finds that the plain checks did not already name.

        The validator's answer depends only on the option and its value: each (role, option, value) is validated once
        a run (the hosts of a node type share their values; a large inventory made this the preflight's main cost).
        """
        problems = []
        named = set()
        cache = self.__dict__.setdefault('_preflight_validated', {})
        for message in found:
            named.add(message.split(' ', 1)[0].split('[', 1)[0].split('.', 1)[0])
        for name in sorted(values):
            if name in named:
                continue
            try:
                key = (role, name, repr(values[name]))
            # (a value without a repr: not cached)
            except Exception:  # pylint: disable=broad-except
                key = None
            errors = cache.get(key) if key is not None else None
            if errors is None:
                result = ArgumentSpecValidator({name: options[name]}).validate({name: values[name]})
                errors = [str(e) for e in result.error_messages]
                if key is not None:
                    cache[key] = errors
            if not errors:
                continue
            if preflight.is_secret(name, options[name]):
                problems.append('%s does not match its argument spec (the value is not shown)' % name)
            else:
                problems.extend('%s: %s' % (name, _first_line(e)) for e in errors)
        return problems

    def _controller_file(self, role, path):
        """``''`` when ``path``, a file ``role`` reads on the controller (the file lookup's way), is a readable file; else why not."""
        try:
            given = os.path.expanduser(path)
            if os.path.isabs(given):
                candidates = [given]
            else:
                bases = []
                try:
                    bases.extend(str(base) for base in self._task.get_search_path() or [])
                except (AttributeError, TypeError):
                    pass
                bases.append(os.path.join(COLLECTION_ROOT, 'roles', role))
                candidates = []
                for base in bases:
                    for candidate in (os.path.join(base, 'files', given), os.path.join(base, given)):
                        if candidate not in candidates:
                            candidates.append(candidate)
            for candidate in candidates:
                if os.path.isfile(candidate):
                    return '' if os.access(candidate, os.R_OK) else '%s cannot be read' % candidate
            for candidate in candidates:
                if os.path.isdir(candidate):
                    return '%s is a directory' % candidate
        except (ValueError, OSError, TypeError) as exc:  # a NUL byte, an odd type ...
            return 'it cannot be used as a path (%s)' % exc
        if len(candidates) == 1:
            return 'there is no such file'
        return ('there is no such file (a relative path is looked up in the files/ directories of the play and the role: %s)'
                % ', '.join(candidates[:4]))

    def _role(self, role, groups, hostvars):
        """``(options, defaults, context)`` of a role's main entry point (loaded once per run)."""
        cache = self.__dict__.setdefault('_preflight_roles', {})
        if role not in cache:
            specs = self._load(role, os.path.join('meta', 'argument_specs.yml')) or {}
            options = ((specs.get('argument_specs') or {}).get('main') or {}).get('options') or {}
            defaults = self._load(role, os.path.join('defaults', 'main.yml'), trusted=True) or {}
            # a default may name the role's internal vars (vars/main.yml), groups and hostvars
            context = dict(self._load(role, os.path.join('vars', 'main.yml'), trusted=True) or {}, groups=groups, hostvars=hostvars)
            cache[role] = (options, defaults, context)
        return cache[role]

    def _site_problems(self, groups, hostvars, play_hosts, this_host, task_vars, raw_vars, site_values, args):
        """The checks of the inventory as a whole (``preflight._site``): every compute host of the run and the controller."""
        controllers = list(groups.get(args['controller_group']) or [])
        controller = controllers[0] if len(controllers) == 1 else None
        compute = list(groups.get(args['compute_group']) or [])
        needed = [h for h in compute if h in play_hosts]
        if controller and controller not in needed:
            needed.append(controller)
        for host in needed:
            if host not in raw_vars:
                try:
                    raw_vars[host] = dict(task_vars if host == this_host else
                                          hostvars.raw_get(host) if hasattr(hostvars, 'raw_get') else hostvars[host])
                except (KeyError, TypeError):
                    continue
            have = site_values.setdefault(host, {})
            for role, names in site.SITE_VARIABLES.items():
                missing = [name for name in names if name not in have]
                if not missing:
                    continue
                options, defaults, context = self._role(role, groups, hostvars)
                wanted = dict((name, options.get(name) or {}) for name in missing if name in options or name in defaults)
                values, dummy, dummy2 = self._host_values(raw_vars[host], wanted, defaults, context)
                have.update(values)
            if site.EXTRA_MODELS_VAR in raw_vars[host]:
                values, dummy, dummy2 = self._host_values(raw_vars[host], {site.EXTRA_MODELS_VAR: {}}, {}, {})
                have.update(values)
        accounting = bool(groups.get('slurmdbd'))
        return site.site_problems(site_values, groups, controller, play_hosts, args['compute_group'], args['gpu_group'], accounting)

    def _play_strategy(self):
        """The strategy of the play running this task (its keyword, else ANSIBLE_STRATEGY / ansible.cfg); None if unknown."""
        try:
            return self._task.get_play().strategy
        except (AttributeError, TypeError):
            return None

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp

        groups = task_vars.get('groups') or {}
        # the task's own options first, in the preflight's words (a role without groups or hosts outside the inventory
        # would otherwise check nothing and pass)
        bad = preflight.argument_problems(_plain(self._task.args), ROLE_NAMES, _plain(groups))
        if bad:
            result.update(changed=False, failed=True, problems=bad, skipped_values=[], checked_values=0,
                          msg=preflight.options_failure_message(bad))
            return result
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars.get('hostvars') or {}
        play_hosts = args['hosts'] if args['hosts'] is not None else list(task_vars.get('ansible_play_hosts_all') or [])
        roles = args['roles']
        if roles is None:
            roles = [dict(name=name, groups=list(role_groups)) for name, role_groups in preflight.SITE_ROLES]

        controllers = groups.get(args['controller_group'])
        compute = groups.get(args['compute_group'])
        gpu_nodes = list(groups.get(args['gpu_group']) or [])
        names = []
        for host in list(controllers or []) + list(compute or []) + gpu_nodes:
            if host not in names:
                names.append(host)
        inventory = []
        if args['inventory']:
            inventory = preflight_errors(controllers, compute, names, gpu_nodes,
                                         dict(controller=args['controller_group'], compute=args['compute_group'], gpu=args['gpu_group']))
            problem = preflight.strategy_problem(self._play_strategy())
            if problem:
                inventory.insert(0, problem)
        this_host = task_vars.get('inventory_hostname')

        problems, skipped, checked, raw_vars, site_values = [], [], 0, {}, {}
        for entry in roles:
            role = entry['name']
            options, defaults, context = self._role(role, groups, hostvars)
            members = set()
            for group in entry['groups']:
                members.update(groups.get(group) or [])
            for host in [h for h in play_hosts if h in members]:
                if host not in raw_vars:
                    # the host running this task: its task's variables (inside a role: the role's params and
                    # vars too); any other host: its inventory and extra vars
                    raw_vars[host] = dict(task_vars if host == this_host else
                                          hostvars.raw_get(host) if hasattr(hostvars, 'raw_get') else hostvars[host])
                values, host_skipped, found = self._host_values(raw_vars[host], options, defaults, context)
                checked += len(values)
                site_values.setdefault(host, {}).update((k, values[k]) for k in site.SITE_VARIABLES.get(role, ()) if k in values)
                skipped.extend('%s: %s (role %s.%s)' % (host, name, preflight.COLLECTION, role) for name in host_skipped)
                found.extend(preflight.role_problems(role, host, options, values, groups,
                                                     functools.partial(self._controller_file, role)))
                found.extend(self._validator_problems(options, values, found, role))
                problems.extend((host, role, message) for message in found)

        warnings = []
        if args['inventory']:
            found, warnings = self._site_problems(groups, hostvars, play_hosts, this_host, task_vars, raw_vars, site_values, args)
            problems.extend(found)
        lines = preflight.report(inventory, problems)
        result.update(changed=False, problems=lines, skipped_values=skipped, checked_values=checked)
        if warnings:
            result['warnings'] = warnings
        if lines:
            result.update(failed=True, msg=preflight.failure_message(lines))
        else:
            result['msg'] = ('the inventory describes one Slurm cluster; %d values checked, %d left for after the facts'
                             % (checked, len(skipped)))
        return result
