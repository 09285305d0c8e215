# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plan of a Slurm major upgrade, and what slurmdbd says while it converts.

:func:`upgrade_plan` takes what every host of the cluster reports (its
inventory groups, the installed version of its Slurm daemon packages and the
version the package manager would install) and decides, before anything
changes, whether the upgrade can be made and which hosts each step touches,
in SchedMD's order: slurmdbd, then slurmctld, then slurmd.  Every problem of
every host is returned at once.

:func:`dbd_line_state` and :func:`dbd_outcome` read the output of
``slurmdbd -D -v`` run in the foreground for the schema conversion.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as slurm_version

# The inventory group of each step, in SchedMD's order, and the step's name (the Debian/RPM package that carries its
# daemon). Login nodes come last: their client commands (and sackd) may lag slurmctld within its window, never lead it.
DAEMONS = (
    ('slurmdbd', 'slurmdbd'),
    ('slurm_controller', 'slurmctld'),
    ('slurm_compute', 'slurmd'),
    ('slurm_login', 'login'),
)
# The package a step is read by, where it is not the step's own name: a login node by its client commands.
STEP_PACKAGE = {'login': 'slurm-client'}
# Every package the plan asks apt about.
PLAN_PACKAGES = tuple(STEP_PACKAGE.get(daemon, daemon) for _group, daemon in DAEMONS)

# "slurmdbd version 24.11.5 started" - slurmdbd listens from here on (slurmdbd.c).
_DBD_READY = re.compile(r'slurmdbd version (\S+) started')
# "error: ..." and "fatal: ..." lines, after the optional "slurmdbd: " and timestamp prefixes.
_DBD_ERROR = re.compile(r'(?:^|\s|: )(error|fatal):\s*(.*)$')
# What slurmdbd prints while it changes the schema: its conversion steps ("pre-converting job table",
# "Conversion done") and the table changes of as_mysql's create_table ("adding key archive_delete
# (deleted) to table txn_table", "alter table txn_table modify ...", seen with 26.05 on a 24.11 database).
_DBD_CONVERT = re.compile(r'convert|conversion|adding (key|column)|dropping (key|column)|changing column|alter table', re.IGNORECASE)


def _release(text):
    return slurm_version.release_name(slurm_version.parse_version(text))


def _read_host(host, report, groups, problems, versions, installed_all, targets):
    """Read one host's report of its daemons' packages into problems, versions, installed_all and targets."""
    installed = report.get('installed') or {}
    candidate = report.get('candidate') or {}
    for group, daemon in DAEMONS:
        if group not in groups:
            continue
        package = STEP_PACKAGE.get(daemon, daemon)
        have, want = installed.get(package) or '', candidate.get(package) or ''
        versions.setdefault(host, {})[daemon] = [have, want]
        if not have:
            problems.append('%s (group %s) has no %s installed: bring the cluster up with site.yml first'
                            % (host, group, package))
            continue
        if not want:
            problems.append('%s: the package manager offers no %s to install (add the repository of the new Slurm, '
                            'or name its release in slurm_upgrade_apt_default_release)' % (host, package))
            continue
        try:
            have_v, want_v = slurm_version.parse_version(have), slurm_version.parse_version(want)
        except ValueError as exc:
            problems.append('%s: %s: %s' % (host, daemon, exc))
            continue
        if daemon in (report.get('replaced') or []) and have_v == want_v:
            # the package is new, the running daemon is not: count it at the oldest installed release
            have_v = None
        installed_all.append((have_v, host, daemon))
        targets.setdefault(want_v, []).append('%s:%s' % (host, daemon))


def upgrade_plan(hosts, force=False):
    """Decide the upgrade from what each host reports.

    ``hosts`` maps a host name to ``{'groups': [...], 'installed': {package:
    version text or ''}, 'candidate': {package: version text or ''},
    'replaced': [daemon, ...]}``; only the daemons of the host's groups are
    read (see :data:`DAEMONS`).  A daemon in ``replaced`` runs a program whose
    file an upgraded package replaced (``/proc/PID/exe`` "(deleted)"): its
    step is still to do although the package is at the target - the
    slurmctld of a host whose slurmdbd step upgraded all its Slurm packages.

    ``force`` lets an upgrade past SchedMD's window through (the conversion
    then fails in slurmdbd itself: for testing that the play stops safely).

    Returns ``{'needed', 'from', 'to', 'from_release', 'to_release',
    'path', 'problems', 'forced', 'steps': {daemon: [hosts]},
    'versions': {host: {daemon: [installed, candidate]}}}``.
    """
    if not isinstance(hosts, dict):
        raise ValueError('hosts must be a dict of host name to its report, got %r' % (hosts,))
    problems = []
    versions = {}
    installed_all = []
    targets = {}
    for host in sorted(hosts):
        report = hosts[host] or {}
        groups = report.get('groups') or []
        if report.get('error'):
            problems.append('%s: %s' % (host, report['error']))
            continue
        _read_host(host, report, groups, problems, versions, installed_all, targets)
    plan = {'needed': False, 'from': '', 'to': '', 'from_release': '', 'to_release': '', 'path': [],
            'problems': problems, 'forced': '', 'summary': '', 'steps': {daemon: [] for _group, daemon in DAEMONS},
            'versions': versions}
    if not versions:
        if not problems:
            problems.append('no host of the groups %s is in this run' % ', '.join(g for g, _d in DAEMONS))
        return plan
    if len(targets) > 1:
        problems.append('the package manager offers different Slurm versions, one target is needed for the whole cluster: %s'
                        % '; '.join('%s on %s' % (slurm_version.version_name(v), ', '.join(targets[v]))
                                    for v in sorted(targets)))
    if problems:
        return plan
    target = list(targets)[0]
    known = [item[0] for item in installed_all if item[0] is not None]
    oldest = min(known) if known else target
    plan.update({'from': slurm_version.version_name(oldest), 'to': slurm_version.version_name(target),
                 'from_release': slurm_version.release_name(oldest), 'to_release': slurm_version.release_name(target)})
    for have_v, host, daemon in sorted(installed_all, key=lambda item: item[1]):
        # (sorted by host only: have_v may be None)
        if have_v is None:
            plan['steps'][daemon].append(host)
        elif have_v > target:
            problems.append('%s: %s %s is newer than the %s the package manager offers: Slurm is never downgraded '
                            '(restore the backup taken before the upgrade instead)'
                            % (host, STEP_PACKAGE.get(daemon, daemon), slurm_version.version_name(have_v),
                               slurm_version.version_name(target)))
        elif have_v < target:
            plan['steps'][daemon].append(host)
    if problems:
        return plan
    problem = slurm_version.upgrade_problem(oldest, target) if oldest < target else ''
    if problem and force:
        plan['forced'] = problem
    elif problem:
        problems.append(problem)
        return plan
    plan['path'] = slurm_version.upgrade_path(oldest, target)
    plan['needed'] = any(plan['steps'].values())
    if plan['needed']:
        # (login nodes are named only where the inventory has them)
        plan['summary'] = 'Slurm %s -> %s: %s' % (plan['from'], plan['to'], ', then '.join(
            '%s on %s' % (daemon if daemon != 'login' else 'the login nodes', ', '.join(plan['steps'][daemon]) or 'no host')
            for group, daemon in DAEMONS if group != 'slurm_login' or any(daemon in v for v in versions.values())))
    else:
        plan['summary'] = 'Every Slurm daemon runs %s: nothing to upgrade' % plan['to']
    return plan


def dbd_line_state(line):
    """``'ready'`` (slurmdbd listens: the conversion is over), ``'error'`` or ``''`` for one output line."""
    if _DBD_READY.search(line):
        return 'ready'
    if _DBD_ERROR.search(line):
        return 'error'
    return ''


def dbd_outcome(lines, returncode, timed_out=False):
    """What a foreground ``slurmdbd -D`` run did, from its output lines.

    ``returncode`` is None while it still runs (it was stopped by the caller
    once ready).  Returns ``{'ok', 'ready', 'errors', 'conversion', 'message'}``.
    """
    ready = any(dbd_line_state(line) == 'ready' for line in lines)
    errors = []
    for line in lines:
        match = _DBD_ERROR.search(line)
        if match:
            errors.append('%s: %s' % match.groups())
    conversion = [line.strip() for line in lines if _DBD_CONVERT.search(line)]
    if ready:
        message = 'slurmdbd changed the database schema (%d lines of output about it) and started' % len(conversion)
        if not conversion:
            message = 'slurmdbd started; it printed no schema change'
    elif timed_out:
        message = 'slurmdbd did not finish its start (the schema conversion) in time and was stopped'
    else:
        if returncode is not None and returncode < 0:
            message = 'slurmdbd was killed by signal %d before it was ready' % -returncode
        else:
            message = 'slurmdbd exited with code %s before it was ready' % (returncode,)
        if errors:
            message += ': ' + '; '.join(errors[-3:])
    return {'ok': ready, 'ready': ready, 'errors': errors, 'conversion': conversion, 'message': message}


def apt_policy_versions(text):
    """``{package: {'installed': version or '', 'candidate': version or ''}}`` from ``apt-cache policy`` output."""
    versions, package = {}, None
    for line in (text or '').splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(':'):
            package = line.rstrip()[:-1].strip()
            versions[package] = {'installed': '', 'candidate': ''}
            continue
        stripped = line.strip()
        for key, name in (('Installed:', 'installed'), ('Candidate:', 'candidate')):
            if package and stripped.startswith(key):
                value = stripped[len(key):].strip()
                versions[package][name] = '' if value == '(none)' else value
    return versions


def slurm_packages(text):
    """The installed packages built from Slurm's Debian sources, from ``dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${source:Package}\\n'``.

    ``slurm-wlm`` and ``slurm-wlm-contrib`` (the NVML plugin of Debian 13)
    and their ``libslurm``/``libpmi`` packages: they pin each other's exact
    version, so a host upgrades all of them in one step.
    """
    packages = []
    for line in (text or '').splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] != 'ii':
            continue
        package, source = parts[1].split(':')[0], parts[2]
        if re.match(r'^slurm-wlm(-contrib)?$', source) or re.match(r'^slurm(-llnl)?$', source):
            packages.append(package)
    return sorted(set(packages))


def upgrade_pins(policy_text, which='candidate'):
    """``package=version`` of each package ``apt-cache policy`` would change, at its ``candidate`` or ``installed`` version.

    The candidate pins are what the upgrade installs (the same exact version
    on every host); the installed ones are what a restore goes back to.
    Packages with no newer candidate (a library of the old release) are left out.
    """
    if which not in ('candidate', 'installed'):
        raise ValueError("which must be 'candidate' or 'installed', got %r" % (which,))
    pins = []
    for package, entry in sorted(apt_policy_versions(policy_text).items()):
        if entry['installed'] and entry['candidate'] and entry['installed'] != entry['candidate']:
            pins.append('%s=%s' % (package, entry[which]))
    return pins


def show_config(text):
    """``{key: value}`` from ``scontrol show config`` (``Key = value`` lines)."""
    config = {}
    for line in (text or '').splitlines():
        match = re.match(r'^(\w+)\s+=\s?(.*)$', line)
        if match:
            config[match.group(1)] = match.group(2).strip()
    return config


def plan_from_hostvars(hosts, hostvars, register, force=False, replaced=''):
    """:func:`upgrade_plan` of the ``hosts`` whose ``apt-cache policy`` output is registered as ``register``.

    ``replaced`` names the registered result of the ``slurm_daemons`` module on each host (its ``replaced`` list).
    """
    reports = {}
    for host in hosts:
        facts = hostvars[host]
        result = facts.get(register) or {}
        versions = apt_policy_versions(result.get('stdout', ''))
        error = ''
        if result.get('rc', 0) != 0:
            error = 'apt-cache policy failed (%s): name a release apt has package lists for' % (
                (result.get('stderr') or '').strip().splitlines() or ['exit code %s' % result.get('rc')])[0]
        reports[host] = {
            'error': error,
            'groups': list(facts.get('group_names') or []),
            'installed': {package: entry['installed'] for package, entry in versions.items()},
            'candidate': {package: entry['candidate'] for package, entry in versions.items()},
            'replaced': list((facts.get(replaced) or {}).get('replaced') or []) if replaced else [],
        }
    return upgrade_plan(reports, force=force)


def systemctl_main_pids(text):
    """``{unit: main PID}`` from ``systemctl show --property=Id,MainPID -- UNIT...`` (0: not running or not a number)."""
    pids = {}
    for block in re.split(r'\n\s*\n', (text or '').strip()):
        props = dict(line.split('=', 1) for line in block.splitlines() if '=' in line)
        if 'Id' in props:
            unit = props['Id'][:-len('.service')] if props['Id'].endswith('.service') else props['Id']
            pid = props.get('MainPID', '').strip()
            pids[unit] = int(pid) if pid.isdigit() else 0
    return pids


def program_replaced(exe_target, started=None, program_ctime=None):
    """True when the running program's file was replaced (by an upgraded package).

    ``exe_target`` is what ``readlink /proc/PID/exe`` says (`` (deleted)``
    at its end: replaced), or ``''`` where that link cannot be read (a
    container without CAP_SYS_PTRACE); then the program file changed after
    the process ``started`` (both seconds since the epoch).
    """
    if exe_target:
        return exe_target.endswith(' (deleted)')
    if started is None or program_ctime is None:
        return False
    return program_ctime > started


def process_start(stat_text, boot_time, clock_ticks):
    """Seconds since the epoch a process started, from ``/proc/PID/stat``, ``btime`` of ``/proc/stat`` and ``CLK_TCK``."""
    # the command name (field 2) is in parentheses and may hold spaces: count fields after its closing one
    fields = stat_text[stat_text.rindex(')') + 2:].split()
    return boot_time + int(fields[19]) / float(clock_ticks)
