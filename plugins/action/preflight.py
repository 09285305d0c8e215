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

from ansible.errors import AnsibleError, AnsibleUndefinedVariable
from ansible.plugins.action import ActionBase

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as preflight
from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _site as site
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_conf import preflight_errors
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_checks import controller_file
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_spec import role_value_problems, task_option_problems
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_template import (
    Skip as _Skip,
    first_line as _first_line,
    has_template as _has_template,
    lookup_file_problem as _lookup_file_problem,
    plain as _plain,
    template_key as _template_key,
)

# plugins/action/preflight.py -> the collection root
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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

    def _controller_file(self, role, path):
        """``''`` when ``path``, a file ``role`` reads on the controller, is a readable file; else why not."""
        try:
            search_path = list(self._task.get_search_path() or [])
        except (AttributeError, TypeError):
            search_path = []
        return controller_file(role, path, search_path, COLLECTION_ROOT)

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
        bad, args = task_option_problems(preflight.ARGUMENT_SPEC, _plain(self._task.args))
        bad = bad or preflight.argument_problems(args, _plain(groups))
        if bad:
            result.update(changed=False, failed=True, problems=bad, skipped_values=[], checked_values=0,
                          msg=preflight.options_failure_message(bad))
            return result
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
                found.extend(role_value_problems(role, host, options, values, groups, functools.partial(self._controller_file, role),
                                                 self.__dict__.setdefault('_preflight_validated', {})))
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
