# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Building SchedMD's ``slurm-smd`` packages from a release tarball (issue 46 item 2, the pure part).

The slurm_packages_build role runs SchedMD's own ``debian/`` packaging of the release tarball on a build host
(``mk-build-deps``, ``dpkg-buildpackage -b -uc -us``) and puts the .debs into a directory on the controller that the
slurm role installs from (``slurm_install_source: local``, ``slurm_local_package_dir``). What is decided here:

* :func:`check_options` - the role's options, whole, before anything is touched: the tarball (a controller path or an
  http(s) URL, named ``slurm-X.Y.Z.tar.bz2`` as SchedMD names releases), its sha256, NVML, the build jobs, the output
  directory. One ``InputError`` naming the option, the value and what is valid.
* :func:`stamp` - the text of the stamp file written next to the .debs: the hash of the tarball and of every option that
  changes what is built (NVML, the build host's distribution release and architecture). The role rebuilds only when the
  stamp differs, or when a package the stamp promises is gone (:func:`cached`).
* :func:`expected_packages` / :func:`missing_debs` - the .debs SchedMD's ``debian/control`` of that release builds.
* :func:`checksum_problem` - the refusal of a tarball whose checksum is not the one asked for.

Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as sp
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv

PREFIX = 'slurm_packages_build_'
# SchedMD's release tarballs: slurm-26.05.3.tar.bz2 (release candidates slurm-26.05.0-0rc1.tar.bz2)
_TARBALL = re.compile(r'^slurm-(?P<version>[0-9]+\.[0-9]+\.[0-9]+)(-0rc[0-9]+)?\.tar\.(bz2|gz|xz)$')
_SHA256 = re.compile(r'^[0-9a-f]{64}$')
_URL = re.compile(r'^https?://[^/\s]+/\S+$')
# The first release whose tarball carries SchedMD's debian/ packaging
FIRST_SMD = (23, 11, 0)
# SchedMD's debian/control: every binary package (Architecture any, but the doc, openlava and torque packages: all), 23.11 on
SMD_PACKAGES = ('slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-doc', 'slurm-smd-slurmctld', 'slurm-smd-slurmd',
                'slurm-smd-slurmdbd', 'slurm-smd-slurmrestd', 'slurm-smd-sackd', 'slurm-smd-sview', 'slurm-smd-libnss-slurm',
                'slurm-smd-libpam-slurm-adopt', 'slurm-smd-libpmi0', 'slurm-smd-libpmi2-0', 'slurm-smd-libslurm-perl',
                'slurm-smd-openlava', 'slurm-smd-torque')
ARCH_ALL = ('slurm-smd-doc', 'slurm-smd-openlava', 'slurm-smd-torque')
# What the built slurm-smd must hold (dpkg -c), by option: Slurm's NVML plugin only when asked
NVML_PLUGIN = 'gpu_nvml.so'
ALWAYS_PLUGINS = ('mpi_pmix.so', 'accounting_storage_mysql.so')
NVML_HEADER_SOURCES = ('package', 'directory')
# The stamp's format: a change here rebuilds
STAMP_FORMAT = 1


def _bool(name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', 'yes', 'on', '1'):
        return True
    if text in ('false', 'no', 'off', '0'):
        return False
    raise InputError('%s%s is %r, expected true or false' % (PREFIX, name, value))


def tarball_version(tarball, option=PREFIX + 'tarball'):
    """The Slurm version ``(major, minor, micro)`` a release tarball's file name says (``slurm-26.05.3.tar.bz2``)."""
    base = str(tarball or '').rstrip('/').rsplit('/', 1)[-1].split('?', 1)[0]
    match = _TARBALL.match(base)
    if not match:
        raise InputError('%s is %r, expected a Slurm release tarball named as SchedMD names them (slurm-X.Y.Z.tar.bz2, for '
                         'example https://download.schedmd.com/slurm/slurm-26.05.3.tar.bz2 or a path to that file)' % (option, tarball))
    return sv.parse_version(match.group('version'))


def check_options(options):
    """The role's options (names without the ``slurm_packages_build_`` prefix), checked whole. Returns the plan:
    ``{tarball, url, file, version, release, sha256, nvml, nvml_header, nvml_include, jobs, output_dir, build_dir}``
    (``url`` True for an http(s) address, ``file`` the tarball's file name). Raises :class:`InputError`."""
    options = dict(options or {})
    tarball = str(options.get('tarball') or '').strip()
    if not tarball:
        raise InputError('%starball is %r, expected the path on the controller or the http(s) URL of a Slurm release tarball '
                         '(https://download.schedmd.com/slurm/slurm-X.Y.Z.tar.bz2)' % (PREFIX, options.get('tarball')))
    url = '://' in tarball
    if url and not _URL.match(tarball):
        raise InputError('%starball is %r, expected an http:// or https:// URL or an absolute path on the controller' % (PREFIX, tarball))
    if not url and not tarball.startswith('/'):
        raise InputError('%starball is %r, expected an absolute path on the controller or an http(s) URL' % (PREFIX, tarball))
    version = tarball_version(tarball)
    if version < FIRST_SMD:
        first = sv.release_name(FIRST_SMD)
        raise InputError('%starball is %r (Slurm %s), expected Slurm %s or newer: SchedMD\'s debian/ packaging (the slurm-smd '
                         'packages) is in the release tarballs from %s on' % (PREFIX, tarball, sv.version_name(version), first, first))
    sha256 = str(options.get('sha256') or '').strip().lower()
    if sha256.startswith('sha256:'):
        sha256 = sha256[len('sha256:'):]
    if not _SHA256.match(sha256):
        raise InputError('%ssha256 is %r, expected the tarball\'s SHA-256 checksum as 64 hexadecimal digits (SchedMD publishes '
                         'it beside each release)' % (PREFIX, options.get('sha256')))
    nvml = _bool('nvml', options.get('nvml', True))
    nvml_include = str(options.get('nvml_include') or '').strip()
    if nvml_include and not nvml_include.startswith('/'):
        raise InputError('%snvml_include is %r, expected empty (nvml.h from the distribution\'s libnvidia-ml-dev) or an '
                         'absolute directory on the build host that holds nvml.h' % (PREFIX, nvml_include))
    jobs = options.get('jobs', 0)
    if isinstance(jobs, bool) or not re.match(r'^[0-9]+$', str(jobs).strip()) or int(str(jobs).strip()) > 1024:
        raise InputError('%sjobs is %r, expected 0 (as many as the build host has processors) or a number of parallel build '
                         'jobs from 1 to 1024' % (PREFIX, jobs))
    output_dir = str(options.get('output_dir') or '').strip().rstrip('/')
    if not output_dir.startswith('/'):
        raise InputError('%soutput_dir is %r, expected an absolute directory on the controller for the .debs (the slurm '
                         'role\'s slurm_local_package_dir)' % (PREFIX, options.get('output_dir')))
    build_dir = str(options.get('build_dir') or '').strip().rstrip('/')
    if not build_dir.startswith('/'):
        raise InputError('%sdir is %r, expected an absolute directory on the build host, not /, to unpack and build in'
                         % (PREFIX, options.get('build_dir')))
    return {'tarball': tarball, 'url': url, 'file': tarball.rstrip('/').rsplit('/', 1)[-1].split('?', 1)[0],
            'version': version, 'release': sv.version_name(version), 'sha256': sha256, 'nvml': nvml,
            'nvml_header': ('directory' if nvml_include else 'package') if nvml else '', 'nvml_include': nvml_include if nvml else '',
            'jobs': int(str(jobs).strip()), 'output_dir': output_dir, 'build_dir': build_dir}


def stamp(plan, distribution, arch):
    """The stamp file's text: what the .debs were built from. ``distribution`` the build host's ``<id> <release>``
    (packages built on Debian 13 link Debian 13's libraries), ``arch`` its dpkg architecture. The build jobs and the
    directories are left out: they do not change what is built."""
    inputs = {'format': STAMP_FORMAT, 'sha256': plan['sha256'], 'version': plan['release'], 'nvml': plan['nvml'],
              'nvml_header': plan['nvml_header'], 'nvml_include': plan['nvml_include'],
              'distribution': str(distribution or '').strip(), 'arch': str(arch or '').strip()}
    text = json.dumps(inputs, sort_keys=True)
    inputs['hash'] = hashlib.sha256(text.encode('utf-8')).hexdigest()
    return json.dumps(inputs, sort_keys=True, indent=1) + '\n'


def expected_packages(version):
    """The binary packages SchedMD's debian/control of Slurm ``version`` builds."""
    if tuple(version) < FIRST_SMD:
        raise InputError('Slurm %s has no SchedMD debian/ packaging, expected %s or newer'
                         % (sv.version_name(version), sv.release_name(FIRST_SMD)))
    return list(SMD_PACKAGES)


def missing_debs(plan, files, arch):
    """The expected packages of ``plan`` that ``files`` (paths or names of .debs) lack, as ``name_<version>-*_<arch>.deb``
    patterns; ``[]`` when every one is there."""
    have = set()
    for path in files or []:
        entry = sp.deb_file(path)
        if entry and entry['version'].split('-', 1)[0] == plan['release'] and \
                str(path).endswith('_%s.deb' % ('all' if entry['name'] in ARCH_ALL else arch)):
            have.add(entry['name'])
    return ['%s_%s-*_%s.deb' % (name, plan['release'], 'all' if name in ARCH_ALL else arch)
            for name in expected_packages(plan['version']) if name not in have]


def cached(plan, stamp_text, old_stamp, files, arch):
    """``{'cached': bool, 'why': text}``: whether the output directory's .debs are this build's (its stamp equal to
    :func:`stamp`'s text and every expected .deb there), and if not, why it builds."""
    if not old_stamp:
        return {'cached': False, 'why': 'no stamp file in %s (nothing built there yet)' % plan['output_dir']}
    try:
        old = json.loads(old_stamp)
        new = json.loads(stamp_text)
    except ValueError:
        return {'cached': False, 'why': 'the stamp file in %s is unreadable' % plan['output_dir']}
    if old != new:
        changed = sorted(key for key in set(old) | set(new) if key != 'hash' and old.get(key) != new.get(key))
        return {'cached': False, 'why': 'the build changed since the last one: %s' % ', '.join(changed or ['hash'])}
    lacking = missing_debs(plan, files, arch)
    if lacking:
        return {'cached': False, 'why': '%s lacks %s' % (plan['output_dir'], ', '.join(lacking))}
    return {'cached': True, 'why': 'the .debs in %s were built from this tarball with these options' % plan['output_dir']}


def checksum_problem(plan, actual):
    """``''`` when the tarball's SHA-256 ``actual`` is the one asked for, else the one message refusing it."""
    actual = str(actual or '').strip().lower()
    if actual == plan['sha256']:
        return ''
    return ('%ssha256 is %s, but the tarball %s has SHA-256 %s, expected the two to match: nothing was built; check the '
            'download (a corrupt or substituted file) or the checksum SchedMD published for %s'
            % (PREFIX, plan['sha256'], plan['tarball'], actual or '(unreadable)', plan['file']))


def contents_problem(plan, listing):
    """``''`` when the built slurm-smd holds the plugins asked for, else one message. ``listing``: ``dpkg -c``'s output of
    the slurm-smd .deb (or its file names)."""
    names = set(line.rstrip().rsplit('/', 1)[-1].split(' ', 1)[0] for line in str(listing or '').splitlines())
    wanted = list(ALWAYS_PLUGINS) + ([NVML_PLUGIN] if plan['nvml'] else [])
    lacking = [name for name in wanted if name not in names]
    if not lacking:
        return ''
    why = (' (configure found no nvml.h or no libnvidia-ml to link against: see config.log in %s)' % plan['build_dir']
           if NVML_PLUGIN in lacking else '')
    return ('the built slurm-smd_%s package lacks %s%s, expected %s in it'
            % (plan['release'], ', '.join(lacking), why, ', '.join(wanted)))
