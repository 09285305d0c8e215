# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight of site.yml: every role's inputs, checked before the first change.

The action plugin ``gpucluster.bringup.preflight`` reads each role's
``meta/argument_specs.yml`` and ``defaults/main.yml``, takes for every host a
role runs on the host's value of each variable (inventory or extra vars, else
the role default), templates it, and hands plain data to this module:

* :func:`check_option` checks one value against its argument spec entry
  (type, choices, elements, required, sub-options, unknown keys) the way
  Ansible's role argument validation converts values, and says what is wrong
  in one plain line per problem;
* :func:`role_problems` adds the checks each role makes in its own preflight
  that need no facts (the MIG layout is in the catalogue, the package source
  has its location, the database password rules ...);
* :func:`report` groups the problems of all hosts: identical problems of
  several hosts become one line naming the hosts as a hostlist.

Secrets (options with ``no_log``, or named like a password, key, secret,
token or credentials) are named, never shown.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._hostlist import compress
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_munge import munge_key_errors

COLLECTION = 'gpucluster.bringup'

# The roles of site.yml and the inventory groups each runs on (the playbooks
# slurm_munge.yml, nvml.yml, mig_layout.yml, accounting.yml, slurm_cluster.yml, enroot.yml).
SITE_ROLES = (
    ('munge', ('slurm_controller', 'slurm_compute', 'slurmdbd')),
    ('nvml', ('gpu_nodes',)),
    ('mig', ('gpu_nodes',)),
    ('slurmdbd', ('slurmdbd',)),
    ('slurm_healthcheck', ('slurm_compute',)),
    ('slurm', ('slurm_controller', 'slurm_compute')),
    ('enroot', ('slurm_controller', 'slurm_compute')),
    ('pyxis', ('slurm_controller', 'slurm_compute')),
)

_SECRET_WORDS = ('pass', 'key', 'secret', 'token', 'credential')
# names that hold where or who, never the secret itself (munge_key_path, munge_key_source_group)
_NOT_SECRET_SUFFIXES = ('_path', '_group', '_dir', '_user')
_BOOL_TRUE = frozenset(['y', 'yes', 'on', '1', 'true', 't', '1.0'])
_BOOL_FALSE = frozenset(['n', 'no', 'off', '0', 'false', 'f', '0.0'])
_TYPE_WORDS = {
    'str': 'a string', 'path': 'a path (string)', 'int': 'a whole number', 'float': 'a number', 'bool': 'a boolean (true/false)',
    'list': 'a list', 'dict': 'a dictionary', 'raw': 'any value',
}
_MAX_SHOWN = 80
_DB_NAME = re.compile(r'^[A-Za-z0-9_]+$')
_DB_HOST = re.compile(r'^[A-Za-z0-9_.:%-]+$')
_PARTITION_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')
_ENROOT_KEY = re.compile(r'^ENROOT_[A-Z_]+$')
_HOOK_NAME = re.compile(r'^[0-9]{2}-[A-Za-z0-9]+-[A-Za-z0-9._-]+$')


def is_secret(name, spec=None):
    """True when the value of option ``name`` must never be shown."""
    if spec and spec.get('no_log'):
        return True
    lowered = name.lower()
    if lowered.endswith(_NOT_SECRET_SUFFIXES):
        return False
    return any(word in lowered for word in _SECRET_WORDS)


def show(value):
    """A short, plain rendering of a value: strings quoted, long values cut."""
    if isinstance(value, bool):
        text = 'true' if value else 'false'
    elif value is None:
        text = 'null'
    else:
        text = repr(value)
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN - 3] + '...'
    return text


def _kind(value):
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, int):
        return 'a number'
    if isinstance(value, float):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'a list'
    if isinstance(value, dict):
        return 'a dictionary'
    if value is None:
        return 'null'
    return 'a %s' % type(value).__name__


def convert(value, wanted):
    """``(converted, ok)``: ``value`` as Ansible's argument validation converts it to type ``wanted``."""
    if wanted in (None, 'raw'):
        return value, True
    if wanted in ('str', 'path'):
        if isinstance(value, str):
            return value, True
        if isinstance(value, (bool, int, float)):
            return str(value), True
        return value, False
    if wanted == 'bool':
        if isinstance(value, bool):
            return value, True
        if isinstance(value, (str, int, float)):
            text = str(value).strip().lower()
            if text in _BOOL_TRUE:
                return True, True
            if text in _BOOL_FALSE:
                return False, True
        return value, False
    if wanted == 'int':
        if isinstance(value, bool):
            return int(value), True
        if isinstance(value, int):
            return value, True
        if isinstance(value, float) and value.is_integer():
            return int(value), True
        if isinstance(value, str) and re.match(r'^\s*[-+]?[0-9]+\s*$', value):
            return int(value), True
        return value, False
    if wanted == 'float':
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), True
        if isinstance(value, str):
            try:
                return float(value), True
            except ValueError:
                return value, False
        return value, False
    if wanted == 'list':
        if isinstance(value, list):
            return value, True
        if isinstance(value, str):
            return value.split(','), True
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return [value], True
        return value, False
    if wanted == 'dict':
        if isinstance(value, dict):
            return value, True
        return value, False
    return value, True


def _choices_text(choices):
    return ', '.join(str(c) for c in choices)


def check_option(path, value, spec, secret=False):
    """Problems of ``value`` for the option ``spec`` (an argument_specs.yml entry), one plain line each.

    ``path`` names the option in the messages (``slurm_partitions[0].name``);
    with ``secret`` the value is never shown.
    """
    spec = spec or {}
    secret = secret or is_secret(path.rsplit('.', 1)[-1].split('[', 1)[0], spec)
    if value is None:
        return ['%s is required and is not set' % path] if spec.get('required') else []
    wanted = spec.get('type', 'str')
    converted, ok = convert(value, wanted)
    if not ok:
        if secret:
            return ['%s is %s; expected %s (the value is not shown)' % (path, _kind(value), _TYPE_WORDS.get(wanted, wanted))]
        return ['%s is %s; expected %s' % (path, show(value), _TYPE_WORDS.get(wanted, wanted))]
    problems = []
    choices = spec.get('choices')
    if wanted == 'list':
        elements = spec.get('elements')
        for index, item in enumerate(converted):
            item_path = '%s[%d]' % (path, index)
            if item is None:
                problems.append('%s is null; expected %s' % (item_path, _TYPE_WORDS.get(elements or 'raw', elements)))
                continue
            if elements:
                item, item_ok = convert(item, elements)
                if not item_ok:
                    shown = '%s (the value is not shown)' % _kind(item) if secret else show(item)
                    problems.append('%s is %s; expected %s' % (item_path, shown, _TYPE_WORDS.get(elements, elements)))
                    continue
            if choices and item not in choices:
                if secret:
                    problems.append('%s is not one of the valid values: %s (the value is not shown)' % (item_path, _choices_text(choices)))
                else:
                    problems.append('%s is %s; valid values: %s' % (item_path, show(item), _choices_text(choices)))
            if elements == 'dict' and spec.get('options'):
                problems.extend(_check_suboptions(item_path, item, spec['options'], secret))
        return problems
    if choices and converted not in choices:
        if secret:
            return ['%s is not one of the valid values: %s (the value is not shown)' % (path, _choices_text(choices))]
        hint = ''
        if isinstance(value, bool):
            words = [c for c in choices if isinstance(c, str) and c.lower() in (_BOOL_TRUE if value else _BOOL_FALSE)]
            if words:
                hint = " (quote it: '%s'; YAML reads an unquoted %s as %s)" % (words[0], words[0], show(value))
        return ['%s is %s; valid values: %s%s' % (path, show(value), _choices_text(choices), hint)]
    if wanted == 'dict' and spec.get('options'):
        problems.extend(_check_suboptions(path, converted, spec['options'], secret))
    return problems


def _check_suboptions(path, value, options, secret):
    problems = []
    unknown = sorted(str(k) for k in value if k not in options)
    if unknown:
        problems.append('%s has the unknown key%s %s; valid keys: %s'
                        % (path, 's' if len(unknown) > 1 else '', ', '.join(repr(k) for k in unknown), ', '.join(sorted(options))))
    for key in sorted(options):
        sub = options[key] or {}
        if key not in value or value[key] is None:
            if sub.get('required'):
                problems.append('%s lacks %s (required)' % (path, key))
            continue
        problems.extend(check_option('%s.%s' % (path, key), value[key], sub, secret or is_secret(key, sub)))
    return problems


def check_values(options, values):
    """Problems of ``values`` (option name to value, templated) against ``options`` (a role entry point's options).

    Options missing from ``values`` (not templated: they need facts) are not checked.
    """
    problems = []
    for name in sorted(options):
        if name in values:
            problems.extend(check_option(name, values[name], options[name] or {}))
    return problems


def _hosts_of(groups, name):
    hosts = groups.get(name) if isinstance(groups, dict) else None
    return list(hosts or [])


def _flag(value):
    return convert(value, 'bool') == (True, True)


def _munge(host, values, groups):
    problems = []
    group = values.get('munge_key_source_group')
    if isinstance(group, str) and not _hosts_of(groups, group):
        problems.append('munge_key_source_group "%s" has no hosts in the inventory; name a group whose first host holds the munge key '
                        '(usually slurm_controller)' % group)
    if isinstance(values.get('munge_key_b64'), str):
        problems.extend(munge_key_errors(values['munge_key_b64']))
    return problems


def _mig(host, values, groups):
    layout = values.get('mig_layout')
    if not isinstance(layout, str) or not layout:
        return []
    if 'mig_layouts' not in values or 'mig_layouts_custom' not in values:
        return []
    catalogue = {}
    for part in (values['mig_layouts'], values['mig_layouts_custom']):
        if isinstance(part, dict):
            catalogue.update(part)
    if layout not in catalogue:
        return ['mig_layout is %s, not a layout of mig_layouts or mig_layouts_custom; valid layouts: %s (or "" to leave MIG alone)'
                % (show(layout), ', '.join(sorted(str(k) for k in catalogue)) or 'none')]
    gpus = catalogue[layout]
    if not isinstance(gpus, list) or not gpus:
        return ['layout %s is %s; a layout is a non-empty list of GPU entries ({gpu, model, mig, instances}, the gpus option of '
                '%s.nvidia_mig)' % (show(layout), show(gpus), COLLECTION)]
    problems = ['layout %s entry %d is %s; expected a dictionary {gpu, model, mig, instances}' % (show(layout), index, show(entry))
                for index, entry in enumerate(gpus) if not isinstance(entry, dict)]
    integration = values.get('mig_slurm_integration')
    compute = values.get('mig_slurm_compute_group')
    controller = values.get('mig_slurm_controller_group')
    if _flag(integration) and isinstance(compute, str) and isinstance(controller, str):
        if host in _hosts_of(groups, compute) and not _hosts_of(groups, controller):
            problems.append('mig_slurm_integration is on and %s is in %s, but inventory group %s has no host to run scontrol on; '
                            'add the controller or set mig_slurm_integration: false' % (host, compute, controller))
    return problems


def _slurmdbd(host, values, groups):
    problems = []
    group = values.get('slurmdbd_group')
    if isinstance(group, str):
        members = _hosts_of(groups, group)
        if len(members) != 1:
            problems.append('slurmdbd_group "%s" must hold exactly one host (where slurmdbd runs), it holds %d%s'
                            % (group, len(members), (': ' + ', '.join(members)) if members else ''))
        elif host != members[0]:
            problems.append('run %s.slurmdbd on the slurmdbd host %s (group %s), not on %s' % (COLLECTION, members[0], group, host))
    password = values.get('slurmdbd_storage_pass')
    if isinstance(password, str) and password and (len(password) < 8 or re.search(r'[#\s"\'\\]', password)):
        problems.append('slurmdbd_storage_pass must be empty (a password is generated and kept on the slurmdbd host) or, from Ansible Vault, '
                        "at least 8 characters without spaces, quotes, backslashes or '#' (slurmdbd.conf cannot hold them); "
                        'the value is not shown')
    for name in ('slurmdbd_storage_loc', 'slurmdbd_storage_user'):
        value = values.get(name)
        if isinstance(value, str) and not _DB_NAME.match(value):
            problems.append("%s is %s; use letters, digits and '_'" % (name, show(value)))
    value = values.get('slurmdbd_storage_user_host')
    if isinstance(value, str) and not _DB_HOST.match(value):
        problems.append("slurmdbd_storage_user_host is %s; expected a host name, an address or '%%'" % show(value))
    overrides = values.get('slurmdbd_conf_overrides')
    if isinstance(overrides, dict) and any(str(k).lower() == 'storagepass' for k in overrides):
        problems.append('slurmdbd_conf_overrides sets StoragePass; set the database password with slurmdbd_storage_pass (the value is not shown)')
    for name in ('slurmdbd_qos', 'slurmdbd_accounts', 'slurmdbd_users'):
        entries = values.get(name)
        if isinstance(entries, list):
            for index, entry in enumerate(entries):
                if isinstance(entry, dict) and not (isinstance(entry.get('name'), str) and entry['name']):
                    problems.append('%s[%d] lacks name (required)' % (name, index))
    return problems


def _slurm(host, values, groups):
    problems = []
    if _flag(values.get('slurm_pam_slurm_adopt')) and convert(values.get('slurm_cgroup_enabled'), 'bool') == (False, True):
        problems.append('slurm_pam_slurm_adopt needs slurm_cgroup_enabled (proctrack/cgroup and task/cgroup hold the adopted ssh sessions); '
                        '%s has slurm_cgroup_enabled false' % host)
    if values.get('slurm_install_source') == 'local' and values.get('slurm_local_package_dir') == '':
        problems.append('slurm_install_source is "local" but slurm_local_package_dir is empty: '
                        'name the directory (on the Ansible controller) that holds the Slurm package files')
    partitions = values.get('slurm_partitions')
    if isinstance(partitions, list):
        if not partitions:
            problems.append('slurm_partitions is empty; Slurm needs at least one partition ({name, nodes, default, options})')
        seen, defaults = set(), 0
        for index, part in enumerate(partitions):
            if not isinstance(part, dict):
                continue
            name = part.get('name')
            if isinstance(name, str):
                if not _PARTITION_NAME.match(name) or name.lower() == 'default':
                    problems.append('slurm_partitions[%d].name is %s; use letters, digits, ".", "_", "-" (and not DEFAULT)' % (index, show(name)))
                elif name in seen:
                    problems.append('slurm_partitions[%d].name %s is defined twice' % (index, show(name)))
                seen.add(name)
            nodes = part.get('nodes')
            if nodes is not None and not isinstance(nodes, (str, list)):
                problems.append('slurm_partitions[%d].nodes is %s; expected ALL, a hostlist (gpu-[01-04]) or a list of node names'
                                % (index, show(nodes)))
            elif nodes == '' or nodes == []:
                problems.append('slurm_partitions[%d].nodes is empty; name ALL, a hostlist or a list of node names' % index)
            if part.get('default') is True:
                defaults += 1
        if defaults > 1:
            problems.append('slurm_partitions: %d partitions are marked default; at most one may be' % defaults)
    hooks = values.get('slurm_hooks_extra')
    if isinstance(hooks, list):
        for index, hook in enumerate(hooks):
            if isinstance(hook, dict) and isinstance(hook.get('name'), str) and not _HOOK_NAME.match(hook['name']):
                problems.append('slurm_hooks_extra[%d].name is %s; expected NN-class-name (e.g. 60-all-site-check)' % (index, show(hook['name'])))
    return problems


def _enroot(host, values, groups):
    problems = []
    source = values.get('enroot_package_source')
    needs = {'url': 'enroot_release_url', 'mirror': 'enroot_mirror_url', 'local': 'enroot_local_dir'}
    if source in needs and values.get(needs[source]) == '':
        problems.append('enroot_package_source is %s but %s is empty; set it (%s)'
                        % (show(source), needs[source], {'url': 'the base URL of the release assets',
                                                         'mirror': 'the base URL of a web server holding the release .deb files',
                                                         'local': 'a directory on the Ansible controller holding the release .deb files'}[source]))
    extra = values.get('enroot_extra_config')
    if isinstance(extra, dict):
        bad = [str(k) for k in extra if not _ENROOT_KEY.match(str(k))]
        if bad:
            problems.append('enroot_extra_config keys must look like ENROOT_NAME (upper case, enroot reads no other keys), these do not: %s'
                            % ', '.join(bad))
    credentials = values.get('enroot_credentials')
    if isinstance(credentials, list):
        for index, entry in enumerate(credentials):
            if isinstance(entry, dict) and not all(isinstance(entry.get(k), str) and entry[k] for k in ('machine', 'login', 'password')):
                # the role's own message; the machine is a host name, never the secret
                problems.append('enroot_credentials[%d] (machine %s) needs the keys machine, login and password, all non-empty'
                                % (index, entry.get('machine') if isinstance(entry.get('machine'), str) and entry['machine'] else '<missing>'))
    mode = values.get('enroot_shared_dir_mode')
    if isinstance(mode, str) and not re.match(r'^[0-7]{3,4}$', mode):
        problems.append('enroot_shared_dir_mode is %s; expected an octal mode such as "1777"' % show(mode))
    return problems


def _pyxis(host, values, groups):
    problems = []
    importer = values.get('pyxis_importer')
    if isinstance(importer, str) and importer and not importer.startswith('/'):
        problems.append('pyxis_importer must be an absolute path to an executable on the nodes, got %s' % show(importer))
    runtime = values.get('pyxis_runtime_path')
    if isinstance(runtime, str) and not re.match(r'^/[^ ]*$', runtime):
        problems.append('pyxis_runtime_path must be an absolute path without spaces, got %s' % show(runtime))
    return problems


_ROLE_CHECKS = {'munge': _munge, 'mig': _mig, 'slurmdbd': _slurmdbd, 'slurm': _slurm, 'enroot': _enroot, 'pyxis': _pyxis}


def role_problems(role, host, options, values, groups):
    """Problems of one host's values for ``role``: the argument spec, then the role's own fact-free checks.

    ``options`` are the role's main entry point options, ``values`` the
    host's templated values (options that could not be templated left out),
    ``groups`` the inventory groups (name to host list).
    """
    problems = check_values(options, values)
    if problems:
        # the role checks assume values of the right type
        return problems
    check = _ROLE_CHECKS.get(role)
    return check(host, values, groups) if check else []


def _natural(name):
    return [(0, int(part), '') if part.isdigit() else (1, 0, part) for part in re.split(r'([0-9]+)', name)]


def _host_text(hosts):
    hosts = sorted(hosts, key=_natural)
    try:
        return compress(hosts)
    except ValueError:
        return ', '.join(hosts)


def report(inventory_errors, problems):
    """The lines of one failure: inventory problems first, then ``(host, role, message)`` problems grouped.

    The same message of the same role on several hosts is one line naming the
    hosts (as a Slurm hostlist).
    """
    lines = list(inventory_errors)
    grouped = []
    index = {}
    for host, role, message in problems:
        key = (role, message)
        if key not in index:
            index[key] = len(grouped)
            grouped.append((role, message, []))
        hosts = grouped[index[key]][2]
        if host not in hosts:
            hosts.append(host)
    for role, message, hosts in grouped:
        lines.append('%s: %s (role %s.%s)' % (_host_text(hosts), message, COLLECTION, role))
    return lines


def failure_message(lines):
    """The whole failure: a count, then one line per problem."""
    return ('the inventory has %d problem%s, nothing was changed:\n%s'
            % (len(lines), '' if len(lines) == 1 else 's', '\n'.join(lines)))
