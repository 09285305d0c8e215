# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The installed Slurm's version, and what differs between its releases.

The roles read the version on the node (``slurmd -V``, ``slurmctld -V``,
``slurmdbd -V`` or the package version), never from the distribution's name,
and decide from :func:`behaviour` what that release does:

* ``reconfigure_restarts`` - since 23.11 ``scontrol reconfigure`` makes
  slurmctld and every slurmd start a new process of themselves with the new
  files (the old one keeps running when the new one fails to start), so
  node definitions, plugins and most keys change with a reconfigure; before
  23.11 those needed the daemons restarted (slurm.conf(5) of 22.05 and of
  24.11, "unless otherwise noted").
* ``upgrade_window`` - how many major releases ahead an upgrade may go in
  one step: two before 24.11, three since (SchedMD's upgrade guide; the
  accounting database of 24.x converts from 23.02 on, ``MIN_CONVERT_VERSION``
  13 in ``as_mysql_convert.c``, and says "Database schema is too old for
  this version of Slurm to upgrade" otherwise).
* ``topology_block`` - the topology/block plugin (``BlockName=`` lines,
  NVLink domains) exists from 23.11 on (its release notes, topology.conf(5)).
* ``topology_file`` - the file the role writes the topology into: ``topology.yaml``
  from 25.05 on (CHANGELOG 25.05 "multiple topology plugins via the new
  topology.yaml"), ``topology.conf`` before.  Slurm 26.05 still reads
  topology.conf, but only when there is no topology.yaml: ``topology_g_init()``
  (src/interfaces/topology.c) parses topology.yaml first and falls back to
  slurm.conf's TopologyPlugin and topology.conf only when the file is absent
  (topology.yaml(5): "If this file exists, topology.conf will be ignored"); the
  plugin then comes from topology.yaml, so the role sets no TopologyPlugin.
* ``gres_gpus_exclusive`` - from 26.05 sbatch, srun and salloc refuse
  ``--gres=gpu:N`` together with ``--gpus-per-node`` (CHANGELOG 26.05 "Make
  --gres=gpu:N and --gpus-per-node mutually exclusive");
  :func:`gpu_request_problem` checks a generated argv.
* ``healthcheck_node_states`` - the values slurm.conf's HealthCheckNodeState
  takes (:data:`HEALTHCHECK_NODE_STATES`: NONDRAINED_IDLE since 23.02,
  START_ONLY since 25.11, REBOOT_ONLY since 26.05; the ``*_ONLY`` ones alone);
  :func:`healthcheck_node_state_problem` checks a value.
* ``cgroup_v1_deprecated`` - from 25.05 the cgroup/v1 plugin gets no new
  features and "will not be supported in future Slurm versions" (cgroups.html
  and cgroup.conf(5) of 26.05): the node preflight warns on a cgroup v1 node.
* ``configless_task_prolog`` - from 25.11 configless slurmctld also sends
  TaskProlog/TaskEpilog when they sit in slurm.conf's directory (CHANGELOG
  25.11); the role keeps its hooks in ``slurm_hooks_settings.dir`` on every node
  (docs/slurm-configless.md says why).

It also holds the collection's one version policy (issue 46), which the node
preflight and ``docs/slurm-versions.md`` (checked by a unit test) take from here:

* :data:`OLDEST` - the oldest release the collection runs (22.05): the slurm
  role writes ``MultipleFiles=`` lines in gres.conf (MIG instances) and
  ``CgroupPlugin=autodetect`` in cgroup.conf, which slurmd before 22.05
  refuses, so it would not start (:data:`TOO_OLD_WHY`);
* :func:`support` - SchedMD's support window of each major release: a
  release is named for its month (``24.11``: November 2024) and supported for
  :data:`SUPPORT_MONTHS` (18) months, so that since the six-monthly releases of
  23.11 the three latest are supported (24.11 left support in May 2026, when
  26.05 came; 25.05, 25.11 and 26.05 are the current ones);
  :func:`support_warnings` says when a release is past it, naming the month,
  or misses a security release (:data:`SECURITY_RELEASES`); the day is a
  parameter (``today``), so that nothing here changes with the calendar;
* :func:`skew_problem` - SchedMD's rules between the daemons: slurmdbd >=
  slurmctld >= slurmd and the client commands, each at most
  :func:`upgrade_window` releases apart.

Standard library only; bad input raises ``ValueError`` naming the value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

# Major releases, oldest first.  Since 23.11 SchedMD releases every six
# months (YY.05, YY.11); later ones are computed by :func:`major_releases`.
_KNOWN_RELEASES = ((20, 2), (20, 11), (21, 8), (22, 5), (23, 2), (23, 11), (24, 5), (24, 11), (25, 5), (25, 11), (26, 5))
# The newest release this collection knows (its behaviour, its support window); a newer one is taken as this one
NEWEST_KNOWN = _KNOWN_RELEASES[-1]
# The oldest release the collection runs, and why
OLDEST = (22, 5)
TOO_OLD_WHY = ('the slurm role writes gres.conf MultipleFiles= lines (MIG instances) and cgroup.conf CgroupPlugin=autodetect, '
               'which a slurmd before 22.05 does not take: it would not start')
# SchedMD supports a major release for 18 months from its release month (the release's name: 24.11 is November 2024)
SUPPORT_MONTHS = 18
# SchedMD's security releases: the month, what they fixed, the first fixed version of each release still supported
SECURITY_RELEASES = (
    {'month': (2026, 9), 'fixes': 'eight CVEs', 'versions': ((25, 5, 9), (25, 11, 8), (26, 5, 4))},
)
# Where a site gets SchedMD's own packages of a current release (issue 46): the release tarball and its debian/ packaging
SMD_BUILD = ("SchedMD's slurm-smd packages built from the release tarball (https://download.schedmd.com/slurm/, e.g. "
             'slurm-26.05.4.tar.bz2: mk-build-deps -i debian/control; debuild -b -uc -us) and installed with '
             'slurm_install_source: local and slurm_local_package_dir')
_MONTHS = ('January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November',
           'December')

# "slurm 22.05.8", "slurm-wlm 24.11.5", "24.11.5-4+deb13u1", "22.05.8-4+deb12u3",
# "slurm 25.05.0-0rc1": major.minor.micro (the minor with or without its 0).
_VERSION = re.compile(r'(?:^|[\s:])(\d{2})\.(\d{1,2})\.(\d+)')


def parse_version(text):
    """``(major, minor, micro)`` from a Slurm version string.

    Takes what ``slurmd -V`` (``slurm 22.05.8``), Debian's build
    (``slurm-wlm 24.11.5``) or a package version (``24.11.5-4+deb13u1``,
    ``1:24.11.5-1``) prints.
    """
    if not isinstance(text, str):
        raise ValueError('a Slurm version must be a string, got %r' % (text,))
    match = _VERSION.search(text.strip())
    if not match:
        raise ValueError("'%s' is not a Slurm version: expected e.g. 'slurm 24.11.5' or '24.11.5-4+deb13u1'" % text.strip())
    major, minor, micro = (int(part) for part in match.groups())
    if (major, minor) not in major_releases((major, minor)):
        raise ValueError("'%s' names Slurm %d.%02d, which is not a Slurm release; releases: %s"
                         % (text.strip(), major, minor, ', '.join(release_name(r) for r in major_releases((major, minor)))))
    return (major, minor, micro)


def release_name(version):
    """``'24.11'`` for ``(24, 11, 5)`` or ``(24, 11)``."""
    return '%d.%02d' % (version[0], version[1])


def version_name(version):
    """``'24.11.5'`` for ``(24, 11, 5)``."""
    return '%d.%02d.%d' % tuple(version[:3])


def major_releases(upto):
    """Every major release from 20.02 up to ``upto`` (a (major, minor) pair)."""
    releases = list(_KNOWN_RELEASES)
    year, month = releases[-1]
    while (year, month) < tuple(upto[:2]):
        year, month = (year, 11) if month == 5 else (year + 1, 5)
        releases.append((year, month))
    return [r for r in releases if r <= tuple(upto[:2])] or releases[:1]


def releases_ahead(installed, target):
    """How many major releases ``target`` is after ``installed`` (0: the same)."""
    old, new = tuple(installed[:2]), tuple(target[:2])
    releases = major_releases(max(old, new))
    for version in (old, new):
        if version not in releases:
            raise ValueError('%s is not a Slurm major release' % release_name(version))
    return releases.index(new) - releases.index(old)


def upgrade_window(target):
    """How many major releases an upgrade to ``target`` may cross: 3 since 24.11, 2 before."""
    return 3 if tuple(target[:2]) >= (24, 11) else 2


def upgrade_problem(installed, target):
    """Why ``installed`` cannot be upgraded to ``target`` in one step, or ``''``.

    A downgrade across major releases is refused (state files and the
    database are not converted back); a jump past :func:`upgrade_window`
    names the releases to go through.
    """
    ahead = releases_ahead(installed, target)
    if ahead < 0:
        return ('Slurm %s cannot be downgraded to %s: state files and the accounting database are only converted '
                'forward; restore the backup taken before the upgrade instead' % (version_name(installed), version_name(target)))
    window = upgrade_window(target)
    if ahead > window:
        return ('Slurm %s cannot be upgraded to %s in one step: %s is %d major releases ahead and %s upgrades from at most %d '
                'releases back (SchedMD; its slurmdbd refuses an older database: "Database schema is too old"); '
                'upgrade through %s' % (version_name(installed), version_name(target), release_name(target), ahead,
                                        release_name(target), window, ' -> '.join(upgrade_path(installed, target))))
    return ''


def upgrade_path(installed, target):
    """The major releases from ``installed`` to ``target``, each step as far as its window allows."""
    releases = major_releases(max(tuple(installed[:2]), tuple(target[:2])))
    at, end = releases.index(tuple(installed[:2])), releases.index(tuple(target[:2]))
    path = [release_name(releases[at])]
    while at < end:
        # the furthest release this step may reach: j - at <= upgrade_window(releases[j])
        at = max(j for j in range(at + 1, end + 1) if j - at <= upgrade_window(releases[j]))
        path.append(release_name(releases[at]))
    return path


# slurm.conf HealthCheckNodeState: each value and the release that brought it (slurm.conf(5) of 22.05 and 26.05;
# CHANGELOG 23.02 NONDRAINED_IDLE, 25.11 START_ONLY, 26.05 REBOOT_ONLY).  The *_ONLY values stand alone.
HEALTHCHECK_NODE_STATES = (('ALLOC', (22, 5)), ('ANY', (22, 5)), ('CYCLE', (22, 5)), ('IDLE', (22, 5)), ('MIXED', (22, 5)),
                           ('NONDRAINED_IDLE', (23, 2)), ('START_ONLY', (25, 11)), ('REBOOT_ONLY', (26, 5)))
# The release from which each behaviour below holds (the module's text)
TOPOLOGY_YAML_FROM = (25, 5)
GRES_GPUS_EXCLUSIVE_FROM = (26, 5)
CGROUP_V1_DEPRECATED_FROM = (25, 5)
CONFIGLESS_TASK_PROLOG_FROM = (25, 11)


def healthcheck_node_states(version):
    """The HealthCheckNodeState values Slurm ``version`` takes, in slurm.conf(5)'s order."""
    return [name for name, since in HEALTHCHECK_NODE_STATES if tuple(version[:2]) >= since]


def healthcheck_node_state_problem(value, version):
    """Why slurm.conf ``HealthCheckNodeState=value`` is wrong for Slurm ``version``, or ``''``.

    Comma-separated, case-insensitive, no blanks, as slurmctld reads it (``_health_node_state()`` in read_config.c of
    26.05: ``strtok`` on ","; ``xstrcasecmp``).  slurmctld logs "Invalid HealthCheckNodeState value X ignored" for a
    word it does not know and runs the check in ANY state then, a silent change; it refuses to start on a ``*_ONLY``
    value combined with another.  Here both are refused, naming the valid values of that release.
    """
    valid = healthcheck_node_states(version)
    text = value if isinstance(value, str) else ''
    names = [part.upper() for part in text.split(',')]
    expected = ('expected a comma-separated list of %s (Slurm %s), %s alone'
                % (', '.join(v for v in valid if not v.endswith('_ONLY')), release_name(version),
                   ' or '.join(v for v in valid if v.endswith('_ONLY')))) \
        if any(v.endswith('_ONLY') for v in valid) else \
        'expected a comma-separated list of %s (Slurm %s)' % (', '.join(valid), release_name(version))
    if not isinstance(value, str) or not all(names):
        return 'HealthCheckNodeState is %s, %s' % (value if isinstance(value, str) and value else repr(value), expected)
    unknown = [name for name in names if name not in valid]
    if unknown:
        later = ['%s (Slurm %s on)' % (name, release_name(since)) for name, since in HEALTHCHECK_NODE_STATES if name in unknown]
        return 'HealthCheckNodeState is %s, %s%s (slurmctld ignores %s)' % (
            value, expected, '; %s' % ', '.join(later) if later else '', ', '.join(repr(name) for name in unknown))
    if len(names) > 1 and any(name.endswith('_ONLY') for name in names):
        return 'HealthCheckNodeState is %s, %s: a *_ONLY state cannot be combined with another' % (value, expected)
    return ''


# The environment variable each command reads --gpus-per-node from (src/{srun,sbatch,salloc}/opt.c of 26.05)
GPUS_PER_NODE_ENV = {'srun': 'SLURM_GPUS_PER_NODE', 'sbatch': 'SBATCH_GPUS_PER_NODE', 'salloc': 'SALLOC_GPUS_PER_NODE'}


def gpu_request_problem(argv, version, env=None):
    """Why the srun/sbatch/salloc ``argv`` is refused by Slurm ``version`` for its GPU request, or ``''``.

    From 26.05 ``--gres=gpu...`` and ``--gpus-per-node`` are mutually exclusive (CHANGELOG 26.05); before, Slurm took
    both.  Every word of ``argv`` is looked at (``--gres=gpu:8``, ``--gres gpu:8``, ``--gpus-per-node=8``): the
    collection's generated commands carry no such word after the program.  ``env``: the command's environment, where
    slurmctld's clients also take --gpus-per-node from (``SLURM_GPUS_PER_NODE`` for srun, set in the job of an
    ``sbatch --gpus-per-node``; ``SBATCH_``/``SALLOC_GPUS_PER_NODE``): ``_validate_gres_vs_gpus_per_node()`` in
    src/common/slurm_opt.c refuses that too ("--gpus-per-node and --gres=gpu are mutually exclusive.").
    """
    if tuple(version[:2]) < GRES_GPUS_EXCLUSIVE_FROM:
        return ''
    gres = per_node = None
    words = [str(word) for word in argv]
    for index, word in enumerate(words[1:], 1):
        name, equal, value = word.partition('=')
        if name not in ('--gres', '--gpus-per-node'):
            continue
        if not equal:
            value = words[index + 1] if index + 1 < len(words) else ''
            word = '%s %s' % (word, value)
        if name == '--gres' and any(part.strip().split(':')[0] == 'gpu' for part in value.split(',')):
            gres = word
        elif name == '--gpus-per-node':
            per_node = word
    variable = GPUS_PER_NODE_ENV.get(words[0].rsplit('/', 1)[-1] if words else '')
    if per_node is None and variable and (env or {}).get(variable) not in (None, ''):
        per_node = '%s=%s in its environment' % (variable, env[variable])
    if gres and per_node:
        return ('%s combines %s and %s, which Slurm %s refuses (mutually exclusive since 26.05): expected one of them'
                % (argv[0], gres, per_node, release_name(version)))
    return ''


def behaviour(version):
    """What the release ``version`` does where releases differ (see the module's text)."""
    release = tuple(version[:2])
    return {
        'version': version_name(version),
        'release': release_name(version),
        'reconfigure_restarts': release >= (23, 11),
        # topology/block (NVLink domains, topology.conf BlockName=) came with 23.11
        'topology_block': release >= (23, 11),
        'topology_file': 'topology.yaml' if release >= TOPOLOGY_YAML_FROM else 'topology.conf',
        'gres_gpus_exclusive': release >= GRES_GPUS_EXCLUSIVE_FROM,
        'healthcheck_node_states': healthcheck_node_states(version),
        'cgroup_v1_deprecated': release >= CGROUP_V1_DEPRECATED_FROM,
        'configless_task_prolog': release >= CONFIGLESS_TASK_PROLOG_FROM,
        'upgrade_window': upgrade_window(version),
    }


def unread_behaviour():
    """What the role assumes when the controller's Slurm cannot be read (check mode before Slurm is installed).

    The oldest release's rules (:data:`OLDEST`, 22.05), which restart more and take the fewest settings, with an empty
    ``version`` and ``release`` (nothing was read).
    """
    found = behaviour(OLDEST + (0,))
    found.update(version='', release='')
    return found


# The behaviour table of docs/slurm-versions.md (checked by a unit test): one row per release
BEHAVIOUR_HEADER = ('release', 'topology file the role writes', '--gres=gpu:N with --gpus-per-node', 'HealthCheckNodeState values',
                    'cgroup v1 node', 'configless sends TaskProlog/TaskEpilog')


def behaviour_table(first=OLDEST, last=NEWEST_KNOWN):
    """The per-release behaviour table (Markdown) of ``docs/slurm-versions.md``."""
    lines = ['| %s |' % ' | '.join(BEHAVIOUR_HEADER), '|%s' % ('---|' * len(BEHAVIOUR_HEADER))]
    for release in major_releases(last):
        if release < tuple(first):
            continue
        found = behaviour(release + (0,))
        lines.append('| %s |' % ' | '.join([
            found['release'], found['topology_file'],
            'refused (mutually exclusive)' if found['gres_gpus_exclusive'] else 'taken',
            ', '.join(found['healthcheck_node_states']),
            'deprecated: the node preflight warns' if found['cgroup_v1_deprecated'] else 'supported',
            'yes (from slurm.conf\'s directory)' if found['configless_task_prolog'] else 'no']))
    return '\n'.join(lines)


# --------------------------------------------------------------------------------------------- the version policy

def month_name(month):
    """``'May 2026'`` for ``(2026, 5)``."""
    return '%s %d' % (_MONTHS[month[1] - 1], month[0])


def _add_months(month, count):
    index = month[0] * 12 + month[1] - 1 + count
    return (index // 12, index % 12 + 1)


def as_date(today=None):
    """``today`` as a :class:`datetime.date`: None is the calendar's today, a date stays, ``'2026-09-30'`` is read."""
    if today is None:
        return datetime.date.today()
    if isinstance(today, datetime.date):
        return today
    if isinstance(today, str):
        try:
            return datetime.datetime.strptime(today.strip(), '%Y-%m-%d').date()
        except ValueError:
            pass
    raise ValueError("today is %r, expected a date such as '2026-09-30'" % (today,))


def support(release):
    """SchedMD's support window of a major release: ``{release, released, ends, known}``.

    ``released`` and ``ends`` are ``(year, month)``: the release month (the release's name) and the month
    :data:`SUPPORT_MONTHS` later, from which SchedMD no longer supports it; ``known`` is False for a release after
    :data:`NEWEST_KNOWN`.
    """
    release = tuple(release[:2])
    if release not in major_releases(release):
        raise ValueError('%d.%02d is not a Slurm major release' % release)
    released = (2000 + release[0], release[1])
    return {'release': release_name(release), 'released': released, 'ends': _add_months(released, SUPPORT_MONTHS),
            'known': release <= NEWEST_KNOWN}


def supported_releases(today=None):
    """The major releases SchedMD supports on ``today``, oldest first, of those this collection knows (up to
    :data:`NEWEST_KNOWN`: a later one is not named before the collection has learnt it)."""
    day = as_date(today)
    now = (day.year, day.month)
    return [r for r in major_releases(NEWEST_KNOWN) if support(r)['released'] <= now < support(r)['ends']]


def support_warnings(version, today=None):
    """What SchedMD's policy says of the installed ``version`` on ``today``: a list of texts, empty when nothing.

    A release past its support window (naming the month it ended, the releases supported now and how far one upgrade
    goes), a release newer than this collection knows, a version older than the security release of its major.
    """
    day = as_date(today)
    now = (day.year, day.month)
    release = tuple(version[:2])
    found = support(release)
    warnings = []
    if not found['known']:
        warnings.append('Slurm %s is newer than the releases this collection knows (up to %s): its behaviour is taken as %s\'s'
                        % (version_name(version), release_name(NEWEST_KNOWN), release_name(NEWEST_KNOWN)))
    elif now >= found['ends']:
        current = supported_releases(day)
        reach = [r for r in current if 0 < releases_ahead(release, r) <= upgrade_window(r)]
        warnings.append('Slurm %s is past SchedMD\'s support: %s (released %s) was supported until %s; SchedMD supports %s on %s '
                        '(of the releases this collection knows) and fixes security problems only there; %s'
                        % (version_name(version), found['release'], month_name(found['released']), month_name(found['ends']),
                           ', '.join(release_name(r) for r in current) or 'no release known here', day.isoformat(),
                           ('an upgrade from %s reaches %s in one step' % (found['release'], release_name(reach[-1]))) if reach
                           else 'upgrade through %s' % ' -> '.join(upgrade_path(release, current[-1])) if current else
                           'upgrade to a current release'))
    for security in SECURITY_RELEASES:
        if now < security['month']:
            continue
        for fixed in security['versions']:
            if tuple(fixed[:2]) == release and tuple(version[:3]) < tuple(fixed):
                warnings.append('Slurm %s lacks the fixes of %s (%s, %s): upgrade to %s or later'
                                % (version_name(version), version_name(fixed), security['fixes'], month_name(security['month']),
                                   version_name(fixed)))
    return warnings


def too_old(version):
    """True when the collection refuses ``version`` (older than :data:`OLDEST`)."""
    return tuple(version[:2]) < OLDEST


def skew_problem(daemon, version, ctl_version):
    """How ``daemon`` (``slurmdbd``, ``slurmd``, ``sackd`` or ``client``) of ``version`` breaks SchedMD's rules against
    slurmctld ``ctl_version``: ``''``, or the rule and what would be valid.

    slurmdbd >= slurmctld >= slurmd, sackd (a login node's auth/config daemon) and the client commands; slurmdbd talks to a slurmctld of at most
    ``upgrade_window(slurmdbd)`` releases back, slurmctld to slurmd and the commands of at most
    ``upgrade_window(slurmctld)`` releases back.
    """
    rule = "Slurm's version rules: slurmdbd >= slurmctld >= slurmd and the client commands"
    if daemon == 'slurmdbd':
        ahead = releases_ahead(ctl_version, version)
        if ahead < 0:
            return '%s; expected slurmdbd of release %s or newer' % (rule, release_name(ctl_version))
        if ahead > upgrade_window(version):
            return ('%d releases after it, and slurmdbd %s talks to slurmctld of at most %d releases back (SchedMD\'s upgrade rules); '
                    'expected the same release on both' % (ahead, release_name(version), upgrade_window(version)))
        return ''
    if daemon not in ('slurmd', 'sackd', 'client'):
        raise ValueError("daemon is %r, expected slurmdbd, slurmd, sackd or client" % (daemon,))
    what = daemon if daemon != 'client' else 'the client commands'
    behind = releases_ahead(version, ctl_version)
    window = upgrade_window(ctl_version)
    if behind < 0:
        return '%s; expected release %s or older for %s' % (rule, release_name(ctl_version), what)
    if behind > window:
        return ('%d releases before it, and slurmctld %s talks to at most %d releases back (SchedMD\'s upgrade rules); expected release '
                '%s or at most %d before it' % (behind, release_name(ctl_version), window, release_name(ctl_version), window))
    return ''


def policy_rows(first=(21, 8), last=NEWEST_KNOWN):
    """The policy table of ``docs/slurm-versions.md``: one row of cells per major release from ``first`` to ``last``."""
    rows = []
    for release in major_releases(last):
        if release < tuple(first):
            continue
        found = support(release)
        fixes = ['%s (%s, %s)' % (version_name(fixed), security['fixes'], month_name(security['month']))
                 for security in SECURITY_RELEASES for fixed in security['versions'] if tuple(fixed[:2]) == release]
        rows.append([found['release'], month_name(found['released']), month_name(found['ends']),
                     'refused: ' + TOO_OLD_WHY if too_old(release) else 'runs',
                     str(upgrade_window(release)), '; '.join(fixes) or '-'])
    return rows


POLICY_HEADER = ('release', 'released', "SchedMD's support ends", 'the collection', 'upgrade from at most (releases back)',
                 'security releases')


def policy_table(first=(21, 8), last=NEWEST_KNOWN):
    """:func:`policy_rows` as the Markdown table the docs carry."""
    lines = ['| %s |' % ' | '.join(POLICY_HEADER), '|%s' % ('---|' * len(POLICY_HEADER))]
    lines += ['| %s |' % ' | '.join(row) for row in policy_rows(first, last)]
    return '\n'.join(lines)
