# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that expose the slurm.conf model of module_utils to the slurm and munge roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_conf as conf
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as slurm_version
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_upgrade as slurm_upgrade
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_upgrade_dir as slurm_upgrade_dir
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_large as slurm_large
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as slurm_packages
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._sacctmgr import accounting_tres
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_hooks import hook_files, task_prolog_needs


def _wrap(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc))
    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def slurm_parse_slurmd_c(text):
    """``slurmd -C`` output -> ``{'NodeName': ..., 'CPUs': ..., ...}``."""
    return conf.parse_slurmd_c(text)


def _node_entries(nodes):
    if not isinstance(nodes, list):
        raise ValueError('nodes %r must be a list of {name, hardware, gres, params, memory_reserve_mb}' % (nodes,))
    entries = []
    for node in nodes:
        if not isinstance(node, dict) or 'name' not in node or 'hardware' not in node:
            raise ValueError('node entry %r needs "name" and "hardware" (the slurmd -C facts)' % (node,))
        # (a node kept from the controller's slurm.conf, slurm_conf_kept_nodes: its line's pairs as they are)
        entries.append({'name': node['name'], 'params': conf.entry_params(node)})
    return entries


def slurm_conf_lines(nodes, settings, overrides=None, partitions=None, extra_gres_types=(), contributions=None):
    """Every line of slurm.conf after the header: settings, node lines, partition lines.

    The merge: ``settings`` (the role's defaults), then each dictionary of
    ``contributions`` (the keys other roles contribute) in order, then
    ``overrides`` (the admin's). A contributed ``AccountingStorageTRES`` is
    extended by the GRES names and types the nodes have. ``GresTypes`` is
    computed from the nodes' ``Gres=`` values unless a key sets it.
    """
    entries = _node_entries(nodes)
    settings = dict(settings or {})
    gres = [n.get('gres') or '' for n in nodes]
    types = conf.gres_types(gres, extra_gres_types)
    if types and not any(key.lower() == 'grestypes' for key in settings):
        settings['GresTypes'] = types
    contributed = conf.combine_settings([] if contributions is None else contributions)
    for key in [k for k in contributed if str(k).lower() == 'accountingstoragetres']:
        value = contributed[key]
        contributed[key] = accounting_tres([g for g in gres if g], list(value) if isinstance(value, (list, tuple)) else [value or ''])
    overrides = overrides or {}
    if isinstance(overrides, dict):  # (else merge_settings names the bad overrides)
        overrides = conf.combine_settings([contributed, overrides])
    lines = conf.render_pairs(conf.merge_settings(settings, overrides))
    lines.append('')
    lines.extend(conf.node_lines(entries))
    lines.append('')
    lines.extend(conf.partition_lines(partitions or [{'name': 'batch', 'nodes': 'ALL', 'default': True}],
                                      [e['name'] for e in entries]))
    return lines


def slurm_settings_lines(settings, overrides=None):
    """``KEY=value`` lines of a flat Slurm config file (cgroup.conf): settings updated with overrides."""
    return conf.render_pairs(conf.merge_settings(settings, overrides or {}))


def slurm_settings(settings, overrides=None):
    """Settings updated with overrides (keys case-insensitive, null removes) as a dictionary, in the settings' spelling."""
    return conf.settings_dict(settings, overrides or {})


def slurm_task_prolog_needs(hosts, hostvars, gpu_hosts, defaults):
    """The compute nodes that need the TaskProlog and why (``[[host, reason]]``): each node's inventory values of
    slurm_task_prolog_uuids, slurm_gres_autodetect, slurm_gres_sharing and slurm_hooks_shipped, else ``defaults``
    (the role's values on the host that writes slurm.conf), and its mig_layout (GPU nodes of ``gpu_hosts``)."""
    table = {}
    for host in hosts or []:
        own = hostvars[host] if host in hostvars else {}
        table[host] = dict((name, defaults.get(name) if own.get(name) is None else own.get(name)) for name in defaults)
        table[host]['mig_layout'] = (own.get('mig_layout') or '') if host in (gpu_hosts or []) else ''
    return [list(need) for need in task_prolog_needs(table)]


def slurm_gres_errors(nodes):
    """For ``[{name, gres, params, gres_conf_lines}]``: GRES in slurm.conf missing from the node's gres.conf.

    A ``Gres`` key in ``params`` (the node's ``slurm_node_params``) replaces ``gres``, as it does in slurm.conf.
    """
    errors = []
    for node in nodes or []:
        gres = node.get('gres') or ''
        for key, value in (node.get('params') or {}).items():
            if key.lower() == 'gres':
                gres = value or ''
        errors.extend(conf.check_gres_consistency(node['name'], gres, node.get('gres_conf_lines') or []))
    return errors


def slurm_change_actions(old_text, new_text, reconfigure_restarts=False):
    """Which daemons a slurm.conf change restarts, and whether scontrol reconfigure is needed."""
    return conf.change_actions(old_text, new_text, reconfigure_restarts=bool(reconfigure_restarts))


def slurm_gres_conf_lines(nodes, node_names=False):
    """The lines of gres.conf: a node's own, or (``node_names``) every node's with ``NodeName=`` for configless Slurm."""
    return conf.gres_conf_file_lines(nodes, node_names=bool(node_names))


def slurm_version_behaviour(text, read=True):
    """What the Slurm release ``text`` (``slurmctld -V``, ``sinfo --version`` or a package version) does where releases differ.

    ``read`` false (the command that prints the version failed: check mode before Slurm is installed): the oldest
    release's rules with an empty version, whatever ``text`` is.
    """
    if not read:
        return slurm_version.unread_behaviour()
    return slurm_version.behaviour(slurm_version.parse_version(text))


def slurm_conf_release_problems(text, version):
    """What in the slurm.conf ``text`` the Slurm release ``version`` (a version text) does not take: a list of messages.

    Today HealthCheckNodeState (the values of each release, ``_slurm_version.healthcheck_node_state_problem``).
    """
    settings = conf.parse_conf(text or '')['settings']
    release = slurm_version.parse_version(version)
    problems = []
    if 'healthchecknodestate' in settings:
        problem = slurm_version.healthcheck_node_state_problem(settings['healthchecknodestate'], release)
        if problem:
            problems.append(problem)
    return problems


def slurm_upgrade_problem(installed, target):
    """Why Slurm ``installed`` cannot be upgraded to ``target`` in one step (both version texts), or ``''``."""
    return slurm_version.upgrade_problem(slurm_version.parse_version(installed), slurm_version.parse_version(target))


def slurm_upgrade_plan(hosts, hostvars, register, force=False, replaced=''):
    """The plan of a Slurm major upgrade from each host's registered ``apt-cache policy`` (see ``_slurm_upgrade``)."""
    return slurm_upgrade.plan_from_hostvars(list(hosts), hostvars, register, force=bool(force), replaced=replaced)


def slurm_upgrade_plan_files(hosts, hostvars, register, files, force=False, replaced=''):
    """The plan of a Slurm major upgrade to the package ``files`` of slurm_upgrade_package_dir, from each host's registered
    ``dpkg-query`` output (see ``_slurm_upgrade_dir``); the directory's mistakes are the plan's problems."""
    if not isinstance(files, (list, tuple)):
        raise AnsibleFilterError('slurm_upgrade_plan_files needs a list of package files, got %r' % (files,))
    return slurm_upgrade_dir.plan_from_files(list(hosts), hostvars, register, list(files), force=bool(force), replaced=replaced)


def slurm_upgrade_host_files(dpkg_text, groups, files):
    """``{files, problem, restore}``: the package files of slurm_upgrade_package_dir a host installs in its upgrade step,
    and ``package=version`` of its Slurm packages now (what a restore goes back to)."""
    if not isinstance(groups, (list, tuple)) or not isinstance(files, (list, tuple)):
        raise AnsibleFilterError('slurm_upgrade_host_files needs a list of groups and a list of package files, got %r and %r' % (groups, files))
    chosen = slurm_upgrade_dir.host_files(list(groups), dpkg_text, list(files))
    chosen['restore'] = slurm_upgrade_dir.restore_pins(dpkg_text)
    return chosen


def slurm_conf_settings(text):
    """The ``Key=Value`` settings of a slurm.conf, keys in lower case (Slurm's are case-insensitive)."""
    return conf.parse_conf(text)['settings']


def slurm_upgrade_packages(text):
    """The installed packages built from Slurm's sources, from ``dpkg-query`` output."""
    return slurm_upgrade.slurm_packages(text)


def slurm_upgrade_pins(text, which='candidate'):
    """``package=version`` of the packages ``apt-cache policy`` output says an upgrade changes."""
    return slurm_upgrade.upgrade_pins(text, which)


def slurm_show_config(text):
    """``scontrol show config`` as a dict."""
    return slurm_upgrade.show_config(text)


def slurm_conf_kept_nodes(conf_text, hosts, hostvars=None, gres_conf_text=None, default_node_name=''):
    """The last known slurm.conf entry of each of ``hosts`` (compute hosts a run cannot read), from the controller's slurm.conf.

    Each host is looked up under its ``slurm_node_name`` (``hostvars``; ``default_node_name`` when unset), else
    the host name its cached facts reported, its inventory name and that name's first label. Returns
    ``{'nodes': {host: entry}, 'missing': {host: why}}`` (see ``_slurm_conf.kept_nodes``).
    """
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(host, str) for host in hosts):
        raise ValueError('hosts is %r, expected a list of inventory host names' % (hosts,))
    candidates = {}
    for host in hosts:
        own = hostvars[host] if hostvars is not None and host in hostvars else {}
        facts = own.get('ansible_facts') or {}
        candidates[host] = conf.node_name_candidates(host, own.get('slurm_node_name') or default_node_name or '',
                                                     facts.get('hostname') if isinstance(facts, dict) else '')
    return conf.kept_nodes(conf_text, candidates, gres_conf_text)


def slurm_unreachable_nodes(hosts, hostvars, register):
    """``host: why`` for each host whose registered fact-gathering result (``register``) did not reach it.

    A result counts when it is ``unreachable`` (ssh could not connect) or ``failed`` (the connection ran
    nothing, as the podman connection reports a stopped container).  The reason is the first sentence of
    the result's ``msg`` and the first line of the module's stderr, when there is one.
    """
    down = []
    for host in hosts or []:
        result = hostvars[host].get(register) if host in hostvars else None
        if not isinstance(result, dict) or not (result.get('unreachable') or result.get('failed')):
            continue
        why = ' '.join(str(result.get('msg') or 'no answer').split())
        # Ansible's wrapping and advice aside: "Task failed: Failed to create temporary directory. In some ..."
        if why.startswith('Task failed: '):
            why = why[len('Task failed: '):]
        why = why.split('. ', 1)[0].rstrip('.')
        stderr = (result.get('module_stderr') or '').strip().splitlines()
        if stderr:
            why += ' (%s)' % stderr[0].strip()
        down.append('%s: %s' % (host, why))
    return down


def slurm_hook_files(shipped, table, extra, conf_dir, old=()):
    """install_files entries of the shipped hooks (wanted ones installed, the others and ``old`` removed) and site hooks."""
    return hook_files(shipped, table, extra, conf_dir, old)


def _min_nodes(value):
    """``slurm_large_system_min_nodes`` as a number: extra vars (``-e slurm_large_system_min_nodes=512``) are text."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


def slurm_large_system(node_count, version='', mode='auto', min_nodes=slurm_large.MIN_NODES):
    """SchedMD's large-cluster settings for ``node_count`` compute nodes on the Slurm release ``version`` (see ``_slurm_large``)."""
    return slurm_large.large_system_settings(node_count, version or None, mode, _min_nodes(min_nodes))


def slurm_large_system_warnings(node_count, version='', overrides=None, mode='auto', min_nodes=slurm_large.MIN_NODES):
    """Warnings for the keys of ``slurm_conf_overrides`` that go against SchedMD's large-cluster guide on this cluster."""
    return slurm_large.override_warnings(node_count, version or None, overrides, mode, _min_nodes(min_nodes))


def slurm_large_system_files(settings, daemons, systemd=True, sysctl_now='', units_now=None, paths=None):
    """install_files entries of one host's large-cluster files (or their removal), from what the host has now.

    ``units_now``: ``{daemon: systemctl show output}``, or the registered result of a loop over the daemons
    (``results`` with ``item`` and ``stdout``; skipped items count as not read).
    """
    if not isinstance(settings, dict):
        raise ValueError('settings must be what slurm_large_system returns; got %r' % (settings,))
    units = units_now or {}
    if isinstance(units, dict) and 'results' in units:
        units = dict((r.get('item'), r.get('stdout', '')) for r in units['results'] or [] if isinstance(r, dict) and 'stdout' in r)
    if isinstance(sysctl_now, dict):  # a registered command result
        sysctl_now = sysctl_now.get('stdout', '')
    return slurm_large.large_system_files(settings, list(daemons or []), bool(systemd), sysctl_now or '', units, paths)


def slurm_running_config(show, conf_file, host, conf_path):
    """The validation record ``running_config``: does slurmctld on ``host`` run the settings of its slurm.conf?

    ``show`` is the registered result of ``scontrol show config`` on ``host``, ``conf_file`` that of ``slurp``
    of ``conf_path`` there (see ``_slurm_conf.running_config_record``). A command that failed, did not run, or
    a file not read gives a failed record naming why, never a pass.
    """
    return conf.running_config_from_results(show, conf_file, host, conf_path)


def slurm_local_package_files(files, parts, family='Debian'):
    """The package files of ``files`` a host needing ``parts`` installs: ``{flavour, files, problem}``; a directory the
    role cannot install from (both flavours, several releases, 21.08, a missing slurm-smd package) is ``problem``.
    ``family``: the host's OS family, whose archive names the daemons it does not run (``_distro_packages.py``)."""
    if not isinstance(files, (list, tuple)) or not isinstance(parts, (list, tuple)) or not isinstance(family, str):
        raise AnsibleFilterError('slurm_local_package_files needs a list of package files, a list of parts and an OS family '
                                 '(Debian, RedHat), got %r, %r and %r' % (files, parts, family))
    try:
        return slurm_packages.host_files(list(files), list(parts), family)
    except ValueError as exc:
        return {'flavour': None, 'files': [], 'problem': str(exc)}


class FilterModule(object):
    """gpucluster.bringup slurm filters."""

    def filters(self):
        return dict((func.__name__, _wrap(func)) for func in (
            slurm_parse_slurmd_c, slurm_conf_lines, slurm_settings_lines, slurm_settings, slurm_gres_errors,
            slurm_change_actions, slurm_unreachable_nodes, slurm_conf_kept_nodes, slurm_hook_files, slurm_version_behaviour,
            slurm_upgrade_problem, slurm_gres_conf_lines, slurm_upgrade_plan, slurm_upgrade_packages, slurm_upgrade_plan_files,
            slurm_upgrade_host_files,
            slurm_show_config, slurm_conf_settings, slurm_upgrade_pins, slurm_large_system, slurm_large_system_warnings,
            slurm_large_system_files, slurm_running_config, slurm_task_prolog_needs, slurm_local_package_files,
            slurm_conf_release_problems))
