# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_build: the slurm_packages_build role's options, stamp, expected .debs and refusals (issue 46 item 2).

The package list is checked against SchedMD's debian/control of the vendored 26.05.3 tarball where the local mirror
has it (../shared/vendor/slurm-26.05.3.tar.bz2)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import tarfile

import pytest

from ansible_collections.gpucluster.bringup.plugins.filter import slurm_build as filters
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_build as sb

SHA = 'd51a0896d270dda7480b41626a102a5490c66d2fb8a7426f1358a3543e947bf0'
OTHER = 'e' * 64
URL = 'https://download.schedmd.com/slurm/slurm-26.05.3.tar.bz2'
GOOD = {'tarball': URL, 'sha256': SHA, 'nvml': True, 'nvml_include': '', 'jobs': 0, 'output_dir': '/srv/debs',
        'build_dir': '/var/tmp/build'}
ROOT = os.path.dirname(os.path.abspath(__file__))
for _ in range(5):
    ROOT = os.path.dirname(ROOT)


def _vendor_dir():
    """The local mirror of upstream sources as scripts/lib/vendor.sh finds it: GPUCLUSTER_VENDOR_DIR, ../shared/vendor
    beside the checkout, or beside the repository it was cloned from."""
    if os.environ.get('GPUCLUSTER_VENDOR_DIR'):
        return os.environ['GPUCLUSTER_VENDOR_DIR']
    beside = os.path.join(os.path.dirname(ROOT), 'shared', 'vendor')
    if os.path.isdir(beside):
        return beside
    try:
        with open(os.path.join(ROOT, '.git', 'config'), encoding='utf-8') as handle:
            origin = re.search(r'^\s*url\s*=\s*(?:file://)?(/\S+)', handle.read(), re.M)
    except (IOError, OSError):
        origin = None
    return os.path.join(os.path.dirname(origin.group(1).rstrip('/')), 'shared', 'vendor') if origin else beside


VENDORED = os.path.join(_vendor_dir(), 'slurm-26.05.3.tar.bz2')


def opts(**changes):
    options = dict(GOOD)
    options.update(changes)
    return options


def debs(version='26.05.3-1', arch='amd64', leave=()):
    return ['/srv/debs/%s_%s_%s.deb' % (name, version, 'all' if name in sb.ARCH_ALL else arch)
            for name in sb.SMD_PACKAGES if name not in leave]


@pytest.mark.parametrize('changes, key, value', [
    ({}, 'url', True),
    ({}, 'file', 'slurm-26.05.3.tar.bz2'),
    ({}, 'version', (26, 5, 3)),
    ({}, 'release', '26.05.3'),
    ({'tarball': '/srv/src/slurm-25.11.8.tar.bz2'}, 'url', False),
    ({'tarball': '/srv/src/slurm-25.11.8.tar.bz2'}, 'release', '25.11.8'),
    ({'tarball': 'http://mirror.example/slurm/slurm-23.11.10.tar.bz2'}, 'version', (23, 11, 10)),
    ({'sha256': 'sha256:' + SHA.upper()}, 'sha256', SHA),
    ({'nvml': 'false'}, 'nvml', False),
    ({'nvml': False, 'nvml_include': '/usr/local/cuda/include'}, 'nvml_include', ''),
    ({'nvml': False}, 'nvml_header', ''),
    ({}, 'nvml_header', 'package'),
    ({'nvml_include': '/usr/local/cuda/include'}, 'nvml_header', 'directory'),
    ({'jobs': '8'}, 'jobs', 8),
    ({'output_dir': '/srv/debs/'}, 'output_dir', '/srv/debs'),
])
def test_check_options(changes, key, value):
    assert sb.check_options(opts(**changes))[key] == value


@pytest.mark.parametrize('changes, fragments', [
    ({'tarball': ''}, ["slurm_packages_build_tarball is ''", 'expected the path on the controller or the http(s) URL']),
    ({'tarball': 'ftp://host/slurm-26.05.3.tar.bz2'}, ["slurm_packages_build_tarball is 'ftp://host/", 'http:// or https:// URL']),
    ({'tarball': 'slurm-26.05.3.tar.bz2'}, ["slurm_packages_build_tarball is 'slurm-26.05.3.tar.bz2'", 'absolute path on the controller']),
    ({'tarball': '/srv/src/slurm.tar.bz2'}, ["slurm_packages_build_tarball is '/srv/src/slurm.tar.bz2'", 'slurm-X.Y.Z.tar.bz2']),
    ({'tarball': '/srv/src/slurm-26.05.tar.bz2'}, ['slurm-X.Y.Z.tar.bz2']),
    ({'tarball': '/srv/src/slurm-23.02.7.tar.bz2'}, ['(Slurm 23.02.7)', 'expected Slurm 23.11 or newer', 'debian/ packaging']),
    ({'tarball': '/srv/src/slurm-21.08.8.tar.bz2'}, ['expected Slurm 23.11 or newer']),
    ({'sha256': ''}, ["slurm_packages_build_sha256 is ''", '64 hexadecimal digits']),
    ({'sha256': SHA[:-1]}, ['slurm_packages_build_sha256 is', '64 hexadecimal digits']),
    ({'sha256': 'md5:abc'}, ["slurm_packages_build_sha256 is 'md5:abc'"]),
    ({'nvml': 'maybe'}, ["slurm_packages_build_nvml is 'maybe', expected true or false"]),
    ({'nvml_include': 'cuda/include'}, ["slurm_packages_build_nvml_include is 'cuda/include'", 'absolute directory on the build host']),
    ({'jobs': -1}, ['slurm_packages_build_jobs is -1', 'from 1 to 1024']),
    ({'jobs': 'many'}, ["slurm_packages_build_jobs is 'many'"]),
    ({'jobs': True}, ['slurm_packages_build_jobs is True']),
    ({'jobs': 5000}, ['slurm_packages_build_jobs is 5000']),
    ({'output_dir': ''}, ["slurm_packages_build_output_dir is ''", "slurm role's slurm_local_package_dir"]),
    ({'output_dir': 'debs'}, ["slurm_packages_build_output_dir is 'debs'"]),
    ({'build_dir': '/'}, ["slurm_packages_build_dir is '/'", 'not /']),
    ({'build_dir': 'build'}, ["slurm_packages_build_dir is 'build'"]),
])
def test_check_options_bad_input(changes, fragments):
    with pytest.raises(InputError) as info:
        sb.check_options(opts(**changes))
    for fragment in fragments:
        assert fragment in str(info.value)
    # the message begins with the variable at fault (an admin reads the first words)
    assert str(info.value).startswith('slurm_packages_build_'), str(info.value)
    # and the filter gives the same message as its problem, no plan
    result = filters.slurm_build_plan(opts(**changes), 'Debian trixie', 'amd64', '', [])
    assert result['problem'] == str(info.value)
    assert result['plan'] == {} and result['cached'] is False


def _stamp(**changes):
    return sb.stamp(sb.check_options(opts(**changes)), 'Debian trixie', 'amd64')


def test_stamp_names_what_was_built():
    doc = json.loads(_stamp())
    assert doc['sha256'] == SHA and doc['version'] == '26.05.3' and doc['nvml'] is True
    assert doc['distribution'] == 'Debian trixie' and doc['arch'] == 'amd64'
    assert re.match(r'^[0-9a-f]{64}$', doc['hash'])


@pytest.mark.parametrize('changes', [
    {'sha256': OTHER},
    {'nvml': False},
    {'nvml_include': '/usr/local/cuda/include'},
    {'tarball': '/srv/src/slurm-26.05.4.tar.bz2'},
])
def test_stamp_changes_with_what_changes_the_build(changes):
    assert json.loads(_stamp(**changes))['hash'] != json.loads(_stamp())['hash']


@pytest.mark.parametrize('changes', [
    {'jobs': 16},
    {'build_dir': '/srv/build'},
    {'output_dir': '/srv/other'},
    # the same tarball from the controller or SchedMD's URL
    {'tarball': '/srv/src/slurm-26.05.3.tar.bz2'},
])
def test_stamp_ignores_what_does_not_change_the_build(changes):
    assert _stamp(**changes) == _stamp()


def test_stamp_changes_with_the_build_host():
    plan = sb.check_options(opts())
    assert sb.stamp(plan, 'Debian trixie', 'amd64') != sb.stamp(plan, 'Ubuntu noble', 'amd64')
    assert sb.stamp(plan, 'Debian trixie', 'amd64') != sb.stamp(plan, 'Debian trixie', 'arm64')


@pytest.mark.parametrize('old, files, is_cached, why', [
    ('same', debs(), True, 'were built from this tarball with these options'),
    ('', debs(), False, 'no stamp file in /srv/debs'),
    ('not json', debs(), False, 'unreadable'),
    ('sha', debs(), False, 'the build changed since the last one: sha256'),
    ('nvml', debs(), False, 'changed since the last one: nvml, nvml_header'),
    ('same', debs(leave=('slurm-smd-slurmd',)), False, '/srv/debs lacks slurm-smd-slurmd_26.05.3-*_amd64.deb'),
    ('same', debs(leave=('slurm-smd-doc',)), False, 'lacks slurm-smd-doc_26.05.3-*_all.deb'),
    # .debs of another release or architecture are not this build's
    ('same', debs(version='26.05.2-1'), False, 'lacks slurm-smd_26.05.3-*_amd64.deb'),
    ('same', debs(arch='arm64'), False, 'lacks slurm-smd_26.05.3-*_amd64.deb'),
    ('same', [], False, 'lacks slurm-smd_26.05.3'),
])
def test_cached(old, files, is_cached, why):
    plan = sb.check_options(opts())
    stamp = sb.stamp(plan, 'Debian trixie', 'amd64')
    old_text = {'same': stamp, '': '', 'not json': '{', 'sha': _stamp(sha256=OTHER), 'nvml': _stamp(nvml=False)}[old]
    result = sb.cached(plan, stamp, old_text, files, 'amd64')
    assert result['cached'] is is_cached
    assert why in result['why']
    through_filter = filters.slurm_build_plan(opts(), 'Debian trixie', 'amd64', old_text, files)
    assert through_filter['cached'] is is_cached and through_filter['stamp'] == stamp and through_filter['problem'] == ''


def test_expected_packages_from_23_11():
    assert 'slurm-smd-libpam-slurm-adopt' in sb.expected_packages((26, 5, 3))
    assert 'slurm-smd-dev' in sb.expected_packages((23, 11, 0))
    with pytest.raises(InputError, match='Slurm 23.02.7 has no SchedMD debian/ packaging, expected 23.11 or newer'):
        sb.expected_packages((23, 2, 7))


@pytest.mark.skipif(not os.path.exists(VENDORED), reason='no local mirror of the Slurm tarball (../shared/vendor)')
def test_expected_packages_are_those_of_schedmds_debian_control():
    with tarfile.open(VENDORED) as archive:
        control = archive.extractfile('slurm-26.05.3/debian/control').read().decode('utf-8')
    arch = {}
    for stanza in control.split('\n\n'):
        fields = dict(re.findall(r'^([A-Za-z-]+): *(\S*)', stanza, re.M))
        if 'Package' in fields:
            arch[fields['Package']] = fields['Architecture']
    assert sorted(arch) == sorted(sb.expected_packages((26, 5, 3)))
    assert sorted(name for name, value in arch.items() if value == 'all') == sorted(sb.ARCH_ALL)


def test_checksum_problem():
    plan = sb.check_options(opts())
    assert sb.checksum_problem(plan, SHA.upper()) == ''
    message = sb.checksum_problem(plan, OTHER)
    assert message.startswith('slurm_packages_build_sha256 is %s, but the tarball %s has SHA-256 %s' % (SHA, URL, OTHER))
    assert 'nothing was built' in message
    assert '(unreadable)' in sb.checksum_problem(plan, None)
    assert filters.slurm_build_checksum_problem(plan, OTHER) == message


LISTING = '\n'.join('-rw-r--r-- root/root 1000 2026-08-13 11:12 ./usr/lib/x86_64-linux-gnu/slurm/%s' % name
                    for name in ('gpu_nvml.so', 'mpi_pmix.so', 'mpi_pmix_v5.so', 'accounting_storage_mysql.so', 'gpu_generic.so'))


@pytest.mark.parametrize('nvml, drop, fragments', [
    (True, (), []),
    (False, ('gpu_nvml.so',), []),
    (True, ('gpu_nvml.so',), ['lacks gpu_nvml.so', 'configure found no nvml.h', 'config.log in /var/tmp/build']),
    (True, ('mpi_pmix.so',), ['lacks mpi_pmix.so, expected']),
    (False, ('accounting_storage_mysql.so',), ['lacks accounting_storage_mysql.so']),
])
def test_contents_problem(nvml, drop, fragments):
    plan = sb.check_options(opts(nvml=nvml))
    listing = '\n'.join(line for line in LISTING.splitlines() if not any(line.endswith('/' + d) for d in drop))
    message = sb.contents_problem(plan, listing)
    if not fragments:
        assert message == ''
    for fragment in fragments:
        assert fragment in message
    assert filters.slurm_build_result_problem(plan, debs(), 'amd64', listing) == message


def test_result_problem_names_a_missing_deb_first():
    plan = sb.check_options(opts())
    message = filters.slurm_build_result_problem(plan, debs(leave=('slurm-smd-slurmdbd',)), 'amd64', LISTING)
    assert message == ("the build of Slurm 26.05.3 made no slurm-smd-slurmdbd_26.05.3-*_amd64.deb, expected every package "
                       "of SchedMD's debian/control")


TARBALL_NAMES = ('a Slurm release tarball named as SchedMD names them (slurm-X.Y.Z.tar.bz2, for example '
                 'https://download.schedmd.com/slurm/slurm-26.05.3.tar.bz2 or a path to that file)')


@pytest.mark.parametrize('changes, message', [
    ({'tarball': ''}, "slurm_packages_build_tarball is '', expected the path on the controller or the http(s) URL of a Slurm release "
                      "tarball (https://download.schedmd.com/slurm/slurm-X.Y.Z.tar.bz2)"),
    ({'tarball': None}, "slurm_packages_build_tarball is None, expected the path on the controller or the http(s) URL of a Slurm release "
                        "tarball (https://download.schedmd.com/slurm/slurm-X.Y.Z.tar.bz2)"),
    ({'tarball': 'ftp://host/slurm-26.05.3.tar.bz2'},
     "slurm_packages_build_tarball is 'ftp://host/slurm-26.05.3.tar.bz2', expected an http:// or https:// URL or an absolute path on "
     "the controller"),
    ({'tarball': 'https://host'}, "slurm_packages_build_tarball is 'https://host', expected an http:// or https:// URL or an absolute "
                                  "path on the controller"),
    ({'tarball': 'slurm-26.05.3.tar.bz2'},
     "slurm_packages_build_tarball is 'slurm-26.05.3.tar.bz2', expected an absolute path on the controller or an http(s) URL"),
    ({'tarball': '/srv/src/slurm.tar.bz2'}, "slurm_packages_build_tarball is '/srv/src/slurm.tar.bz2', expected " + TARBALL_NAMES),
    ({'tarball': '/srv/src/slurm-26.05.3.tar.zst'}, "slurm_packages_build_tarball is '/srv/src/slurm-26.05.3.tar.zst', expected "
                                                    + TARBALL_NAMES),
    ({'tarball': '/srv/src/slurm-23.02.7.tar.bz2'},
     "slurm_packages_build_tarball is '/srv/src/slurm-23.02.7.tar.bz2' (Slurm 23.02.7), expected Slurm 23.11 or newer: SchedMD's "
     "debian/ packaging (the slurm-smd packages) is in the release tarballs from 23.11 on"),
    ({'sha256': ''}, "slurm_packages_build_sha256 is '', expected the tarball's SHA-256 checksum as 64 hexadecimal digits (SchedMD "
                     "publishes it beside each release)"),
    ({'sha256': None}, "slurm_packages_build_sha256 is None, expected the tarball's SHA-256 checksum as 64 hexadecimal digits (SchedMD "
                       "publishes it beside each release)"),
    ({'sha256': SHA + '0'}, "slurm_packages_build_sha256 is '%s0', expected the tarball's SHA-256 checksum as 64 hexadecimal digits "
                            "(SchedMD publishes it beside each release)" % SHA),
    ({'nvml': 'maybe'}, "slurm_packages_build_nvml is 'maybe', expected true or false"),
    ({'nvml': None}, "slurm_packages_build_nvml is None, expected true or false"),
    ({'nvml_include': 'cuda/include'},
     "slurm_packages_build_nvml_include is 'cuda/include', expected empty (nvml.h from the distribution's libnvidia-ml-dev) or an "
     "absolute directory on the build host that holds nvml.h"),
    ({'jobs': -1}, 'slurm_packages_build_jobs is -1, expected 0 (as many as the build host has processors) or a number of parallel '
                   'build jobs from 1 to 1024'),
    ({'jobs': 1025}, 'slurm_packages_build_jobs is 1025, expected 0 (as many as the build host has processors) or a number of parallel '
                     'build jobs from 1 to 1024'),
    ({'output_dir': None}, "slurm_packages_build_output_dir is None, expected an absolute directory on the controller for the .debs "
                           "(the slurm role's slurm_local_package_dir)"),
    ({'output_dir': 'debs'}, "slurm_packages_build_output_dir is 'debs', expected an absolute directory on the controller for the .debs "
                             "(the slurm role's slurm_local_package_dir)"),
    ({'build_dir': '/'}, "slurm_packages_build_dir is '/', expected an absolute directory on the build host, not /, to unpack and build in"),
    ({'build_dir': '//'}, "slurm_packages_build_dir is '//', expected an absolute directory on the build host, not /, to unpack and build in"),
    ({'build_dir': None}, 'slurm_packages_build_dir is None, expected an absolute directory on the build host, not /, to unpack and build in'),
])
def test_check_options_refusal_messages(changes, message):
    with pytest.raises(InputError) as info:
        sb.check_options(opts(**changes))
    assert str(info.value) == message


@pytest.mark.parametrize('changes, expected', [
    # the boundaries of what is accepted: 23.11.0, a release candidate, 1024 jobs, booleans as words, a sha256: prefix
    ({'tarball': '/srv/src/slurm-23.11.0.tar.bz2'},
     {'version': (23, 11, 0), 'release': '23.11.0', 'url': False, 'file': 'slurm-23.11.0.tar.bz2'}),
    ({'tarball': 'https://mirror.example/slurm-26.05.0-0rc1.tar.bz2?download=1'},
     {'version': (26, 5, 0), 'url': True, 'file': 'slurm-26.05.0-0rc1.tar.bz2'}),
    ({'tarball': ' /srv/src/slurm-24.11.1.tar.xz '}, {'tarball': '/srv/src/slurm-24.11.1.tar.xz', 'version': (24, 11, 1)}),
    ({'jobs': 1024}, {'jobs': 1024}),
    ({'jobs': ' 1 '}, {'jobs': 1}),
    ({'nvml': 'YES'}, {'nvml': True, 'nvml_header': 'package'}),
    ({'nvml': 'on'}, {'nvml': True}),
    ({'nvml': '1'}, {'nvml': True}),
    ({'nvml': ' Off '}, {'nvml': False, 'nvml_header': ''}),
    ({'nvml': 'no'}, {'nvml': False}),
    ({'nvml': '0'}, {'nvml': False}),
    ({'nvml': 'true', 'nvml_include': ' /opt/cuda/include '}, {'nvml_header': 'directory', 'nvml_include': '/opt/cuda/include'}),
    ({'sha256': ' SHA256:' + SHA.upper() + ' '}, {'sha256': SHA}),
    ({'build_dir': '/srv/build/'}, {'build_dir': '/srv/build'}),
])
def test_check_options_accepts(changes, expected):
    plan = sb.check_options(opts(**changes))
    assert dict((key, plan[key]) for key in expected) == expected


def test_check_options_without_nvml_or_jobs_given():
    options = opts()
    del options['nvml'], options['jobs']
    plan = sb.check_options(options)
    assert plan == {'tarball': URL, 'url': True, 'file': 'slurm-26.05.3.tar.bz2', 'version': (26, 5, 3), 'release': '26.05.3',
                    'sha256': SHA, 'nvml': True, 'nvml_header': 'package', 'nvml_include': '', 'jobs': 0, 'output_dir': '/srv/debs',
                    'build_dir': '/var/tmp/build'}


def test_tarball_version_names_the_option_asked_about():
    assert sb.tarball_version('/srv/slurm-25.11.2.tar.gz/') == (25, 11, 2)
    with pytest.raises(InputError) as info:
        sb.tarball_version('slurm-25.11.tar.gz', option='slurm_tarball')
    assert str(info.value) == "slurm_tarball is 'slurm-25.11.tar.gz', expected " + TARBALL_NAMES


def test_stamp_text():
    plan = sb.check_options(opts())
    # the build host's words as the role reads them, with their whitespace
    assert sb.stamp(plan, ' Debian trixie\n', 'amd64 ') == (
        '{\n "arch": "amd64",\n "distribution": "Debian trixie",\n "format": 1,\n'
        ' "hash": "603550cb47c3275b8d0449d9465c6dbb1bd4da472dba46e899b17b3a8e803acd",\n "nvml": true,\n "nvml_header": "package",\n'
        ' "nvml_include": "",\n "sha256": "%s",\n "version": "26.05.3"\n}\n' % SHA)
    assert json.loads(sb.stamp(plan, None, None))['distribution'] == '' and json.loads(sb.stamp(plan, None, None))['arch'] == ''


@pytest.mark.parametrize('old, why', [
    ('', 'no stamp file in /srv/debs (nothing built there yet)'),
    ('{', 'the stamp file in /srv/debs is unreadable'),
    ('{"format": 1}', 'the build changed since the last one: arch, distribution, nvml, nvml_header, nvml_include, sha256, version'),
])
def test_cached_says_why_it_builds(old, why):
    plan = sb.check_options(opts())
    assert sb.cached(plan, sb.stamp(plan, 'Debian trixie', 'amd64'), old, debs(), 'amd64') == {'cached': False, 'why': why}


def test_cached_when_only_the_hash_differs():
    plan = sb.check_options(opts())
    stamp = sb.stamp(plan, 'Debian trixie', 'amd64')
    edited = json.dumps(dict(json.loads(stamp), hash='0' * 64))
    assert sb.cached(plan, stamp, edited, debs(), 'amd64') == {'cached': False, 'why': 'the build changed since the last one: hash'}


def test_cached_and_missing_debs_say_every_missing_package():
    plan = sb.check_options(opts())
    stamp = sb.stamp(plan, 'Debian trixie', 'amd64')
    files = debs(leave=('slurm-smd', 'slurm-smd-doc')) + ['/srv/debs/notes.txt', '/srv/debs/slurm-smd_26.05.3-1_all.deb']
    assert sb.missing_debs(plan, files, 'amd64') == ['slurm-smd_26.05.3-*_amd64.deb', 'slurm-smd-doc_26.05.3-*_all.deb']
    assert sb.cached(plan, stamp, stamp, files, 'amd64') == {
        'cached': False, 'why': '/srv/debs lacks slurm-smd_26.05.3-*_amd64.deb, slurm-smd-doc_26.05.3-*_all.deb'}
    assert sb.cached(plan, stamp, stamp, debs(), 'amd64') == {
        'cached': True, 'why': 'the .debs in /srv/debs were built from this tarball with these options'}
    assert sb.missing_debs(plan, None, 'arm64') == ['%s_26.05.3-*_%s.deb' % (name, 'all' if name in sb.ARCH_ALL else 'arm64')
                                                    for name in sb.SMD_PACKAGES]


def test_checksum_problem_message():
    plan = sb.check_options(opts())
    assert sb.checksum_problem(plan, ' %s\n' % SHA) == ''
    assert sb.checksum_problem(plan, OTHER) == (
        'slurm_packages_build_sha256 is %s, but the tarball %s has SHA-256 %s, expected the two to match: nothing was built; check the '
        'download (a corrupt or substituted file) or the checksum SchedMD published for slurm-26.05.3.tar.bz2' % (SHA, URL, OTHER))
    assert sb.checksum_problem(plan, '').startswith('slurm_packages_build_sha256 is %s, but the tarball %s has SHA-256 (unreadable), ' % (SHA, URL))


@pytest.mark.parametrize('nvml, message', [
    (True, 'the built slurm-smd_26.05.3 package lacks mpi_pmix.so, accounting_storage_mysql.so, gpu_nvml.so (configure found no nvml.h '
           'or no libnvidia-ml to link against: see config.log in /var/tmp/build), expected mpi_pmix.so, accounting_storage_mysql.so, '
           'gpu_nvml.so in it'),
    (False, 'the built slurm-smd_26.05.3 package lacks mpi_pmix.so, accounting_storage_mysql.so, expected mpi_pmix.so, '
            'accounting_storage_mysql.so in it'),
])
def test_contents_problem_of_an_empty_package(nvml, message):
    assert sb.contents_problem(sb.check_options(opts(nvml=nvml)), None) == message


def test_contents_problem_reads_file_names():
    plan = sb.check_options(opts())
    assert sb.contents_problem(plan, 'mpi_pmix.so\naccounting_storage_mysql.so  \ngpu_nvml.so -> gpu_nvml.so.0\n') == ''


def test_contents_problem_reads_names_with_trailing_tabs():
    plan = sb.check_options(opts())
    assert sb.contents_problem(plan, 'mpi_pmix.so\t\naccounting_storage_mysql.so\ngpu_nvml.so\t \n') == ''


def test_expected_packages_of_a_release_without_debian_packaging():
    with pytest.raises(InputError) as err:
        sb.expected_packages((23, 2, 1))
    assert str(err.value) == 'Slurm 23.02.1 has no SchedMD debian/ packaging, expected 23.11 or newer'
    assert sb.expected_packages((23, 11, 0)) == list(sb.SMD_PACKAGES)
