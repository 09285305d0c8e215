# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Slurm major upgrade to a directory of package files (``slurm_upgrade_package_dir``), the flavour switch included.

The apt path of ``playbooks/slurm_upgrade.yml`` asks ``apt-cache policy`` which version each host would get. A site
that builds SchedMD's ``slurm-smd`` packages from the release tarball (``playbooks/slurm_build_packages.yml``) has them
in a directory instead, and its cluster may run Debian's own packages of the older release: the upgrade then also
switches the flavour (Debian's ``slurmd`` becomes ``slurm-smd-slurmd``, ...). This module decides that plan from the
same inputs :func:`_slurm_upgrade.upgrade_plan` reads - every host's installed Slurm packages (either flavour, from
``dpkg-query``) against the one version the directory holds - and picks each host's files: the same files the slurm
role's ``slurm_install_source: local`` installs on such a host (``_slurm_packages.host_files``), so a later
``site.yml`` run with that directory changes nothing.

The directory's own mistakes (both flavours, several releases, 21.08, a daemon's package missing) are the plan's
problems, named with the option, before any host changes. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as packages
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_upgrade as upgrade

OPTION = 'slurm_upgrade_package_dir'
# The part of Slurm each step's package holds (upgrade.PLAN_PACKAGES are Debian's names; the plan reads them by those)
STEP_PARTS = dict((name, part) for part, name in packages.PACKAGES['debian'].items() if name in upgrade.PLAN_PACKAGES)
# The parts a host of each inventory group runs
GROUP_PARTS = {'slurmdbd': ('slurmdbd',), 'slurm_controller': ('slurmctld', 'client'), 'slurm_compute': ('slurmd', 'client'),
               'slurm_login': ('client',)}
_DAEMON_AND_CLIENT = ('slurmctld', 'slurmd', 'slurmdbd', 'client', 'sackd')
_FLAVOUR_NAMES = {'debian': "Debian's packages", 'smd': "SchedMD's slurm-smd packages"}


def installed_packages(text):
    """``{package: version}`` of the installed Slurm packages of either flavour, from ``dpkg-query -W -f
    '${db:Status-Abbrev} ${Package} ${Version}\\n'`` (packages only configured, removed or half-installed are left out)."""
    found = {}
    for line in (text or '').splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0] != 'ii':
            continue
        name = fields[1].split(':')[0]
        if packages.flavour_of(name):
            found[name] = fields[2]
    return found


def _parts_of(name):
    parts = []
    for flavour in packages.FLAVOURS:
        parts.extend(part for part, package in sorted(packages.PACKAGES[flavour].items()) if package == name)
    return parts


def host_parts(groups, installed):
    """The parts of Slurm a host needs after the upgrade: its groups' daemons and client, and every part it has now."""
    parts = []
    for group in groups or []:
        parts.extend(GROUP_PARTS.get(group, ()))
    for name in sorted(installed or {}):
        parts.extend(_parts_of(name))
    return sorted(set(part for part in parts if part != 'common'))


def installed_flavour(installed):
    """The flavour of a host's installed daemon and client packages: ``'debian'``, ``'smd'``, ``'both'`` or ``''``."""
    seen = set(packages.flavour_of(name) for name in installed or {} if set(_parts_of(name)) & set(_DAEMON_AND_CLIENT))
    seen.discard(None)
    return '' if not seen else seen.pop() if len(seen) == 1 else 'both'


def host_report(groups, installed, directory, option=OPTION):
    """One host's report for :func:`_slurm_upgrade.upgrade_plan`: its step packages' installed versions (either
    flavour, under Debian's names the plan reads) and the directory's version where it holds that part's package."""
    report = {'groups': list(groups or []), 'installed': {}, 'candidate': {}, 'error': ''}
    flavour = directory['flavour']
    offered = dict((entry['name'], entry['version']) for entry in directory['packages'].values())
    for step_package, part in STEP_PARTS.items():
        for name in (packages.PACKAGES['debian'][part], packages.PACKAGES['smd'][part]):
            if (installed or {}).get(name):
                report['installed'][step_package] = installed[name]
        report['candidate'][step_package] = offered.get(packages.PACKAGES[flavour][part], '')
    report['error'] = packages.missing(directory, host_parts(groups, {}), option)
    return report


def plan_from_files(hosts, hostvars, register, files, force=False, replaced='', option=OPTION):
    """:func:`_slurm_upgrade.upgrade_plan` of ``hosts`` (their ``dpkg-query`` output registered as ``register``) with
    the package ``files`` of ``option`` as the target, plus ``flavour`` (the directory's), ``switch`` (the hosts that
    change flavour) and the switch named in ``summary``."""
    try:
        directory = packages.read_directory(list(files or []), option)
    except ValueError as exc:
        return _refused(str(exc))
    if directory['flavour'] is None:
        return _refused('%s holds no Slurm package file of the Debian family (name_version_arch.deb), expected the packages '
                        "of one Slurm release: SchedMD's slurm-smd packages (playbooks/slurm_build_packages.yml) or Debian's"
                        % option)
    reports, switch = {}, []
    for host in hosts:
        facts = hostvars[host]
        result = facts.get(register) or {}
        installed = installed_packages(result.get('stdout', ''))
        report = host_report(facts.get('group_names') or [], installed, directory, option)
        if result.get('rc', 0) != 0:
            report['error'] = 'dpkg-query failed: %s' % ((result.get('stderr') or '').strip() or 'exit code %s' % result.get('rc'))
        report['replaced'] = list((facts.get(replaced) or {}).get('replaced') or []) if replaced else []
        reports[host] = report
        if installed_flavour(installed) not in ('', directory['flavour']):
            switch.append(host)
    plan = upgrade.upgrade_plan(reports, force=force)
    plan.update(flavour=directory['flavour'], switch=sorted(switch))
    if plan['needed'] and switch:
        plan['summary'] += '; %s replace %s on %s' % (
            _FLAVOUR_NAMES[directory['flavour']], _FLAVOUR_NAMES['smd' if directory['flavour'] == 'debian' else 'debian'], ', '.join(plan['switch']))
    return plan


def _refused(problem):
    plan = upgrade.upgrade_plan({})
    plan['problems'] = [problem]
    plan.update(flavour=None, switch=[])
    return plan


def host_files(groups, dpkg_text, files, option=OPTION):
    """``{files, problem}``: the package files a host installs in its upgrade step, all at once (they require each
    other's exact version, and each of SchedMD's conflicts with Debian's package of the same part, which apt removes
    in the same step); the same choice as the slurm role's local install for the host's parts."""
    installed = installed_packages(dpkg_text)
    parts = host_parts(groups, installed)
    try:
        chosen = packages.host_files(list(files or []), parts, 'Debian', option)
    except ValueError as exc:
        return {'files': [], 'problem': str(exc)}
    return {'files': chosen['files'], 'problem': chosen['problem']}


def restore_pins(dpkg_text):
    """``package=version`` of the host's installed Slurm packages: what a restore installs again (Debian's from its
    archive; SchedMD's from the package files of that version)."""
    return ['%s=%s' % item for item in sorted(installed_packages(dpkg_text).items())]
