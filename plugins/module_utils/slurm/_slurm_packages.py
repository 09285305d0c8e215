# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm's Debian package flavours: which package holds each daemon, client and plugin, and which flavour a directory of
package files is (issue 46 item 1, the pure part).

Two flavours of the same Slurm on the Debian family:

* ``debian`` - Debian's own packaging (source ``slurm-wlm``; Ubuntu takes it): ``slurmctld``, ``slurmd``,
  ``slurmdbd``, ``slurm-client``, ``sackd``, ``libslurm-dev``, ``libpam-slurm-adopt``, the plugins in
  ``slurm-wlm-basic-plugins`` (``slurm-wlm-mysql-plugin`` for slurmdbd's MariaDB), Slurm's NVML plugin
  ``slurm-wlm-nvml-plugin`` (source ``slurm-wlm-contrib``, in contrib); PluginDir ``/usr/lib/<triplet>/slurm-wlm``;
  the packages create the ``slurm`` system user.
* ``smd`` - SchedMD's ``debian/`` of the release tarball (``mk-build-deps -i debian/control; debuild -b -uc -us``):
  ``slurm-smd`` (libslurm and every plugin: the MySQL one, and ``gpu_nvml.so`` when NVIDIA's ``nvml.h`` was present at
  build time), ``slurm-smd-slurmctld``, ``slurm-smd-slurmd`` (with slurmstepd), ``slurm-smd-slurmdbd``,
  ``slurm-smd-client``, ``slurm-smd-sackd``, ``slurm-smd-dev``, ``slurm-smd-libpam-slurm-adopt``, ...; every package
  depends on ``slurm-smd (= the same version)``; PluginDir ``/usr/lib/<triplet>/slurm`` (debhelper's libdir); no
  maintainer script creates a user (SlurmUser must exist before the daemons start). Each conflicts with Debian's
  package of the same part (``slurm-smd`` with ``slurm-wlm-basic-plugins``, ...), so one host holds one flavour.

:func:`read_directory` decides the flavour of a directory's package files (their file names, or their control fields
where the caller read them) and refuses, in one message naming the option and the files, what cannot install: a
directory mixing the flavours, Slurm packages of several releases, a release the collection does not run (21.08).
:func:`missing` names the packages of a flavour a host's parts need that the directory lacks; :func:`host_files` picks
the files a host installs. Standard library only; bad input raises ``InputError`` (a ``ValueError``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _distro_packages as distro
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv

FLAVOURS = ('debian', 'smd')
# The parts of Slurm a host may need
PARTS = ('common', 'slurmctld', 'slurmd', 'slurmdbd', 'client', 'sackd', 'dev', 'pam_slurm_adopt', 'nvml', 'mysql')
PACKAGES = {
    'debian': {'common': 'slurm-wlm-basic-plugins', 'slurmctld': 'slurmctld', 'slurmd': 'slurmd', 'slurmdbd': 'slurmdbd',
               'client': 'slurm-client', 'sackd': 'sackd', 'dev': 'libslurm-dev', 'pam_slurm_adopt': 'libpam-slurm-adopt',
               'nvml': 'slurm-wlm-nvml-plugin', 'mysql': 'slurm-wlm-mysql-plugin'},
    'smd': {'common': 'slurm-smd', 'slurmctld': 'slurm-smd-slurmctld', 'slurmd': 'slurm-smd-slurmd', 'slurmdbd': 'slurm-smd-slurmdbd',
            'client': 'slurm-smd-client', 'sackd': 'slurm-smd-sackd', 'dev': 'slurm-smd-dev',
            'pam_slurm_adopt': 'slurm-smd-libpam-slurm-adopt', 'nvml': 'slurm-smd', 'mysql': 'slurm-smd'},
}
# The directory Slurm looks for its plugins in ({triplet}: the node's multiarch triplet, x86_64-linux-gnu)
PLUGIN_DIRS = {'debian': '/usr/lib/{triplet}/slurm-wlm', 'smd': '/usr/lib/{triplet}/slurm'}
# Whether the flavour's packages create the slurm system user (SlurmUser)
CREATES_SLURM_USER = {'debian': True, 'smd': False}
# Where a part is not a package of its own, or only under a condition
NOTES = {
    ('smd', 'nvml'): 'gpu_nvml.so is in slurm-smd only when NVIDIA\'s nvml.h was present when it was built (libnvidia-ml-dev)',
    ('smd', 'mysql'): 'accounting_storage_mysql is in slurm-smd',
}
# Debian's other Slurm packages (source slurm-wlm and slurm-wlm-contrib), which name the flavour too
_DEBIAN_OTHERS = re.compile(r'^(slurm-wlm(-.+)?|libslurm[0-9]+(t64)?|libslurm-perl|libslurmdb-perl|libpmi0|libpmi2-0|slurmrestd|sview|'
                            r'slurm-client-emulator|libnss-slurm|libpam-slurm|slurm-wlm-torque)$')
# Daemons a host that does not run them must not get: their packages start a service when installed
_DAEMON_PARTS = ('slurmctld', 'slurmd', 'slurmdbd', 'sackd')
# SchedMD's packages that are no part of a node the roles set up: a REST daemon, the GUI, the compatibility wrappers
_SMD_LEFT_OUT = ('slurm-smd-slurmrestd', 'slurm-smd-sview', 'slurm-smd-torque', 'slurm-smd-openlava')
# The part of an OS family's archive (_distro_packages.PARTS) each host part is, for the archive-named files of a directory
_DISTRO_PART = {'slurmctld': 'controller', 'slurmd': 'compute', 'slurmdbd': 'slurmdbd', 'sackd': 'sackd', 'nvml': 'nvml', 'client': 'login'}
# name_version_arch.deb (Debian policy)
_DEB_FILE = re.compile(r'^(?P<name>[a-z0-9][a-z0-9.+-]*)_(?P<version>[0-9][A-Za-z0-9.+~:-]*)_(?P<arch>[a-z0-9-]+)\.deb$')
_OPTION = 'slurm_local_package_dir'


def package_of(flavour, part):
    """The package of ``flavour`` that holds ``part`` (one of :data:`PARTS`)."""
    if flavour not in PACKAGES:
        raise InputError('flavour is %r, expected one of: %s' % (flavour, ', '.join(FLAVOURS)))
    if part not in PARTS:
        raise InputError('part is %r, expected one of: %s' % (part, ', '.join(PARTS)))
    return PACKAGES[flavour][part]


def plugin_dir(flavour, triplet='x86_64-linux-gnu'):
    """Slurm's PluginDir of ``flavour`` on a node of multiarch ``triplet``."""
    package_of(flavour, 'common')
    return PLUGIN_DIRS[flavour].format(triplet=triplet)


def flavour_of(name):
    """``'smd'``, ``'debian'`` or None (not a Slurm package: libpmix-dev, ...) for a package name."""
    name = str(name or '')
    if name == 'slurm-smd' or name.startswith('slurm-smd-'):
        return 'smd'
    if name in PACKAGES['debian'].values() or _DEBIAN_OTHERS.match(name):
        return 'debian'
    return None


def deb_file(path):
    """``{'file', 'name', 'version'}`` of a ``name_version_arch.deb`` path, or None."""
    base = str(path).rsplit('/', 1)[-1]
    match = _DEB_FILE.match(base)
    if not match:
        return None
    return {'file': base, 'name': match.group('name'), 'version': match.group('version')}


def _files_text(entries, limit=6):
    names = sorted(entry['file'] for entry in entries)
    return ', '.join(names[:limit]) + (' and %d more' % (len(names) - limit) if len(names) > limit else '')


def read_directory(entries, option=_OPTION):
    """The flavour and Slurm release of a directory of package files.

    ``entries``: paths (the file names decide) or ``{file, name, version}`` (``name``/``version`` from the package's
    control fields, ``dpkg-deb -f``, where read; they win over the file name). Returns ``{flavour, version, release,
    packages}``: ``flavour`` None when no file is a Slurm package of the Debian family (an RPM directory, none at all),
    ``version`` the Slurm version ``(major, minor, micro)``, ``packages`` Slurm package name -> entry. Raises
    :class:`InputError` naming ``option`` and the files: both flavours in one directory, Slurm packages of several
    releases, a release older than the collection runs.
    """
    read = []
    for item in entries or []:
        entry = deb_file(item) if isinstance(item, str) else dict(item) if isinstance(item, dict) else None
        if entry is None:
            continue
        from_name = deb_file(entry.get('file') or '') or {}
        entry['name'] = entry.get('name') or from_name.get('name')
        entry['version'] = entry.get('version') or from_name.get('version')
        if entry['name']:
            read.append(entry)
    slurm = [entry for entry in read if flavour_of(entry['name'])]
    if not slurm:
        return {'flavour': None, 'version': None, 'release': None, 'packages': {}}
    flavours = sorted(set(flavour_of(entry['name']) for entry in slurm))
    if len(flavours) > 1:
        by = dict((f, [e for e in slurm if flavour_of(e['name']) == f]) for f in flavours)
        raise InputError("%s holds both Debian's Slurm packages (%s) and SchedMD's slurm-smd packages (%s), expected one flavour: "
                         "SchedMD's packages conflict with Debian's of the same part, and every host gets the same flavour; keep "
                         'one of them in the directory' % (option, _files_text(by['debian']), _files_text(by['smd'])))
    flavour = flavours[0]
    versions = {}
    for entry in slurm:
        try:
            version = sv.parse_version(str(entry['version'] or ''))
        except ValueError:
            raise InputError('%s holds %s, whose version %r names no Slurm release, expected a Slurm package of one release'
                             % (option, entry['file'], entry['version']))
        versions.setdefault(version, []).append(entry)
    if len(versions) > 1:
        raise InputError('%s holds Slurm packages of %d versions (%s), expected the packages of one Slurm version (every package '
                         'depends on the others of its own version)'
                         % (option, len(versions), '; '.join('%s: %s' % (sv.version_name(v), _files_text(versions[v])) for v in sorted(versions))))
    version = list(versions)[0]
    if sv.too_old(version):
        raise InputError('%s holds Slurm %s (%s), expected Slurm %s or newer: %s; use %s instead'
                         % (option, sv.version_name(version), _files_text(slurm), sv.release_name(sv.OLDEST), sv.TOO_OLD_WHY,
                            sv.SMD_BUILD.replace(' and installed with slurm_install_source: local and slurm_local_package_dir', '')))
    return {'flavour': flavour, 'version': version, 'release': sv.release_name(version),
            'packages': dict((entry['name'], entry) for entry in slurm)}


def missing(directory, parts, option=_OPTION):
    """The packages of the directory's flavour that ``parts`` (of :data:`PARTS`) need and it lacks, as one message, or
    ``''``. ``directory`` is :func:`read_directory`'s result. Debian's own flavour is asked only for the daemons and
    the client commands (the distribution's archive may give the rest); SchedMD's for ``slurm-smd`` too, which no
    archive has."""
    flavour = directory.get('flavour')
    if flavour is None:
        return ''
    wanted = [p for p in parts if p in ('slurmctld', 'slurmd', 'slurmdbd', 'client', 'sackd')]
    if flavour == 'smd':
        wanted = ['common'] + wanted
    lacking = []
    for part in wanted:
        name = PACKAGES[flavour][part]
        if name not in directory['packages'] and name not in lacking:
            lacking.append(name)
    if not lacking:
        return ''
    return ('%s holds %s packages of Slurm %s but not %s, which this host needs (%s), expected %s beside the others (%s)'
            % (option, "SchedMD's slurm-smd" if flavour == 'smd' else "Debian's", sv.version_name(directory['version']),
               ', '.join(lacking), ', '.join(p for p in wanted if PACKAGES[flavour][p] in lacking),
               ' and '.join('%s_%s*.deb' % (name, sv.version_name(directory['version'])) for name in lacking),
               'build every package of debian/control' if flavour == 'smd' else 'the same Slurm version'))


def not_here(family, parts):
    """The archive packages of the OS family ``family`` that a host needing ``parts`` must not install from a package
    directory named like the archive's: those of the daemons (and the NVML plugin) it does not run, less those of the parts
    it does (``slurm-client`` is a controller's package and a login node's).  A part the table does not know is ignored."""
    mine, theirs = set(), set()
    for part, distro_part in _DISTRO_PART.items():
        (mine if part in parts else theirs).update(distro.packages(family, distro_part))
    return sorted(theirs - mine)


def host_files(entries, parts, family='Debian', option=_OPTION):
    """``{flavour, files, problem}``: the files of ``entries`` (paths) a host needing ``parts`` installs.

    Debian's flavour, or a directory without Slurm packages of the Debian family (RPMs): every file except the packages
    :func:`not_here` names for the OS family ``family`` (the daemons this host does not run). SchedMD's flavour: every
    file except the daemons the host does not run (their packages start a service when installed), the REST daemon, the
    GUI and the compatibility wrappers, and ``problem`` is :func:`missing`'s message (Debian's flavour: ``''``).
    Raises :class:`InputError` as :func:`read_directory`.
    """
    paths = [str(path) for path in entries or []]
    directory = read_directory(paths, option)
    if directory['flavour'] != 'smd':
        drop = not_here(family, parts)
        # as the role's regex did: the package name, then _ or - and a digit (name_version_arch.deb, name-version.arch.rpm)
        pattern = re.compile(r'/(%s)[_-][0-9][^/]*$' % '|'.join(re.escape(name) for name in sorted(drop))) if drop else None
        files = [path for path in paths if pattern is None or not pattern.search(path)]
        return {'flavour': directory['flavour'], 'files': files, 'problem': ''}
    leave = set(PACKAGES['smd'][part] for part in _DAEMON_PARTS if part not in parts) | set(_SMD_LEFT_OUT)
    files = [path for path in paths if (deb_file(path) or {}).get('name') not in leave]
    # slurm-smd first: the role installs the files one by one, and every other package depends on it (by name order
    # slurm-smd-client_* comes before slurm-smd_*, and apt finds slurm-smd in no archive)
    files.sort(key=lambda path: 0 if (deb_file(path) or {}).get('name') == PACKAGES['smd']['common'] else 1)
    return {'flavour': 'smd', 'files': files, 'problem': missing(directory, parts, option)}
