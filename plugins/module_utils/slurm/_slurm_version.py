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

Standard library only; bad input raises ``ValueError`` naming the value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Major releases, oldest first.  Since 23.11 SchedMD releases every six
# months (YY.05, YY.11); later ones are computed by :func:`major_releases`.
_KNOWN_RELEASES = ((20, 2), (20, 11), (21, 8), (22, 5), (23, 2), (23, 11), (24, 5), (24, 11))

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


def behaviour(version):
    """What the release ``version`` does where releases differ (see the module's text)."""
    release = tuple(version[:2])
    return {
        'version': version_name(version),
        'release': release_name(version),
        'reconfigure_restarts': release >= (23, 11),
        # topology/block (NVLink domains, topology.conf BlockName=) came with 23.11
        'topology_block': release >= (23, 11),
        'upgrade_window': upgrade_window(version),
    }
