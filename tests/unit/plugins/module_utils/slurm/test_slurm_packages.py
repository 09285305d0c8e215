# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_slurm_packages: Slurm's package flavours (Debian's, SchedMD's slurm-smd) and a local package directory's flavour.

The slurm-smd file names are those SchedMD's debian/control of 26.05.3 builds (../shared/vendor/slurm-26.05.3.tar.bz2,
debian/control: every Package: stanza, Architecture any -> amd64, all -> all; version 26.05.3-1 of its changelog);
Debian's are Debian 13's (slurm-wlm 24.11.5-4+deb13u1, slurm-wlm-contrib 24.11.5-2).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as sp

SMD_ANY = ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-slurmctld', 'slurm-smd-slurmd', 'slurm-smd-slurmdbd',
           'slurm-smd-slurmrestd', 'slurm-smd-sackd', 'slurm-smd-sview', 'slurm-smd-libnss-slurm', 'slurm-smd-libpam-slurm-adopt',
           'slurm-smd-libpmi0', 'slurm-smd-libpmi2-0', 'slurm-smd-libslurm-perl']
SMD_ALL = ['slurm-smd-doc', 'slurm-smd-openlava', 'slurm-smd-torque']


def smd_dir(version='26.05.3-1', leave=(), base='/srv/debs'):
    return sorted(['%s/%s_%s_amd64.deb' % (base, n, version) for n in SMD_ANY if n not in leave]
                  + ['%s/%s_%s_all.deb' % (base, n, version) for n in SMD_ALL if n not in leave])


DEB13 = '24.11.5-4+deb13u1'
DEBIAN_DIR = sorted('/srv/debs/%s_%s_amd64.deb' % (n, v) for n, v in (
    ('slurmctld', DEB13), ('slurmd', DEB13), ('slurm-client', DEB13), ('slurm-wlm-basic-plugins', DEB13), ('sackd', DEB13),
    ('libslurm42t64', DEB13), ('slurm-wlm-nvml-plugin', '24.11.5-2'), ('libpmix-dev', '5.0.7-1')))


@pytest.mark.parametrize('flavour, part, package', [
    ('debian', 'slurmctld', 'slurmctld'), ('debian', 'slurmd', 'slurmd'), ('debian', 'slurmdbd', 'slurmdbd'),
    ('debian', 'client', 'slurm-client'), ('debian', 'dev', 'libslurm-dev'), ('debian', 'pam_slurm_adopt', 'libpam-slurm-adopt'),
    ('debian', 'nvml', 'slurm-wlm-nvml-plugin'), ('debian', 'mysql', 'slurm-wlm-mysql-plugin'), ('debian', 'sackd', 'sackd'),
    ('smd', 'slurmctld', 'slurm-smd-slurmctld'), ('smd', 'slurmd', 'slurm-smd-slurmd'), ('smd', 'slurmdbd', 'slurm-smd-slurmdbd'),
    ('smd', 'client', 'slurm-smd-client'), ('smd', 'dev', 'slurm-smd-dev'), ('smd', 'pam_slurm_adopt', 'slurm-smd-libpam-slurm-adopt'),
    # the NVML plugin and the MySQL plugin are inside slurm-smd
    ('smd', 'nvml', 'slurm-smd'), ('smd', 'mysql', 'slurm-smd'), ('smd', 'common', 'slurm-smd'), ('smd', 'sackd', 'slurm-smd-sackd'),
])
def test_package_of(flavour, part, package):
    assert sp.package_of(flavour, part) == package


def test_every_smd_package_is_one_of_schedmds():
    """Each package the map names for slurm-smd is a Package: of SchedMD's debian/control (26.05.3)."""
    assert set(sp.PACKAGES['smd'].values()) <= set(SMD_ANY + SMD_ALL)


@pytest.mark.parametrize('args, message', [
    (('rpm', 'slurmd'), "flavour is 'rpm', expected one of: debian, smd"),
    (('smd', 'slurmrestd'), "part is 'slurmrestd', expected one of: common, slurmctld, slurmd"),
])
def test_package_of_bad_input(args, message):
    with pytest.raises(InputError, match=message):
        sp.package_of(*args)


@pytest.mark.parametrize('flavour, triplet, path, user', [
    ('debian', 'x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu/slurm-wlm', True),
    ('smd', 'x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu/slurm', False),
    ('smd', 'aarch64-linux-gnu', '/usr/lib/aarch64-linux-gnu/slurm', False),
])
def test_plugin_dir_and_user(flavour, triplet, path, user):
    assert sp.plugin_dir(flavour, triplet) == path
    assert sp.CREATES_SLURM_USER[flavour] is user


@pytest.mark.parametrize('name, flavour', [
    ('slurm-smd', 'smd'), ('slurm-smd-slurmd', 'smd'), ('slurm-smd-libpam-slurm-adopt', 'smd'),
    ('slurmd', 'debian'), ('slurm-client', 'debian'), ('slurm-wlm-basic-plugins', 'debian'), ('slurm-wlm-nvml-plugin', 'debian'),
    ('libslurm42t64', 'debian'), ('slurm-wlm', 'debian'), ('libpam-slurm-adopt', 'debian'),
    ('libpmix-dev', None), ('munge', None), ('slurm', None), ('slurm-smdx', None), ('', None),
])
def test_flavour_of(name, flavour):
    assert sp.flavour_of(name) == flavour


@pytest.mark.parametrize('entries, flavour, release', [
    (smd_dir(), 'smd', '26.05'),
    (DEBIAN_DIR, 'debian', '24.11'),       # the plugin's 24.11.5-2 and Slurm's 24.11.5-4+deb13u1: one Slurm version
    (['/srv/rpms/slurm-26.05.3-1.el9.x86_64.rpm', '/srv/rpms/slurm-slurmd-26.05.3-1.el9.x86_64.rpm'], None, None),
    (['/srv/debs/libpmix-dev_5.0.7-1_amd64.deb', '/srv/debs/README'], None, None),
    ([], None, None),
    # control fields win over a file name that says nothing (a renamed file)
    ([{'file': 'slurmd.deb', 'name': 'slurm-smd-slurmd', 'version': '26.05.3-1'}], 'smd', '26.05'),
])
def test_read_directory(entries, flavour, release):
    found = sp.read_directory(entries)
    assert (found['flavour'], found['release']) == (flavour, release)


@pytest.mark.parametrize('entries, fragments', [
    pytest.param(smd_dir()[:3] + DEBIAN_DIR[2:4], [
        "slurm_local_package_dir holds both Debian's Slurm packages (sackd_24.11.5-4+deb13u1_amd64.deb, "
        'slurm-client_24.11.5-4+deb13u1_amd64.deb) and SchedMD\'s slurm-smd packages (slurm-smd-client_26.05.3-1_amd64.deb, '
        'slurm-smd-dev_26.05.3-1_amd64.deb, slurm-smd-doc_26.05.3-1_all.deb), expected one flavour'], id='mixed-flavours'),
    pytest.param(smd_dir() + ['/srv/debs/slurm-smd-slurmd_26.05.4-1_amd64.deb'], [
        'slurm_local_package_dir holds Slurm packages of 2 versions (26.05.3: ', 'and 11 more; 26.05.4: slurm-smd-slurmd_26.05.4-1_amd64.deb)',
        'expected the packages of one Slurm version'], id='two-versions'),
    pytest.param(['/srv/debs/slurmd_21.08.5-2ubuntu1_amd64.deb', '/srv/debs/slurm-client_21.08.5-2ubuntu1_amd64.deb'], [
        'slurm_local_package_dir holds Slurm 21.08.5 (slurm-client_21.08.5-2ubuntu1_amd64.deb, slurmd_21.08.5-2ubuntu1_amd64.deb), '
        'expected Slurm 22.05 or newer: the slurm role writes gres.conf MultipleFiles=', "use SchedMD's slurm-smd packages built from "
        'the release tarball'], id='ubuntu-2108'),
    pytest.param(smd_dir('21.08.8-1'), ['holds Slurm 21.08.8 (slurm-smd-client_21.08.8-1_amd64.deb', 'expected Slurm 22.05 or newer'],
                 id='smd-2108'),
    pytest.param([{'file': 'x.deb', 'name': 'slurm-smd', 'version': 'abc'}],
                 ["slurm_local_package_dir holds x.deb, whose version 'abc' names no Slurm release"], id='no-version'),
])
def test_read_directory_refuses(entries, fragments):
    with pytest.raises(InputError) as raised:
        sp.read_directory(entries)
    for fragment in fragments:
        assert fragment in str(raised.value), str(raised.value)


@pytest.mark.parametrize('entries, parts, expected', [
    (smd_dir(), ['slurmd', 'client', 'nvml'], ''),
    (smd_dir(leave=('slurm-smd-slurmd',)), ['slurmd', 'client'],
     "slurm_local_package_dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd-slurmd, which this host needs "
     '(slurmd), expected slurm-smd-slurmd_26.05.3*.deb beside the others (build every package of debian/control)'),
    (smd_dir(leave=('slurm-smd', 'slurm-smd-slurmctld')), ['slurmctld', 'client'],
     "slurm_local_package_dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd, slurm-smd-slurmctld, which this "
     'host needs (common, slurmctld), expected slurm-smd_26.05.3*.deb and slurm-smd-slurmctld_26.05.3*.deb beside the others'),
    (smd_dir(leave=('slurm-smd-sackd',)), ['sackd', 'client'], 'but not slurm-smd-sackd, which this host needs (sackd)'),
    (smd_dir(leave=('slurm-smd-sackd',)), ['client'], ''),
    # Debian's flavour: asked for the daemons and the client commands only
    (DEBIAN_DIR, ['slurmdbd', 'client'], "slurm_local_package_dir holds Debian's packages of Slurm 24.11.5 but not slurmdbd"),
    (DEBIAN_DIR, ['slurmd', 'client', 'nvml'], ''),
    (['/srv/rpms/slurm-26.05.3-1.el9.x86_64.rpm'], ['slurmd'], ''),
])
def test_missing(entries, parts, expected):
    found = sp.missing(sp.read_directory(entries), parts)
    assert (found == '') if expected == '' else (expected in found), found


def _names(files):
    return sorted(sp.deb_file(f)['name'] for f in files)


@pytest.mark.parametrize('parts, left_out', [
    (['slurmd', 'client', 'nvml'], ['slurm-smd-openlava', 'slurm-smd-sackd', 'slurm-smd-slurmctld', 'slurm-smd-slurmdbd',
                                    'slurm-smd-slurmrestd', 'slurm-smd-sview', 'slurm-smd-torque']),
    (['slurmctld', 'client'], ['slurm-smd-openlava', 'slurm-smd-sackd', 'slurm-smd-slurmd', 'slurm-smd-slurmdbd', 'slurm-smd-slurmrestd',
                               'slurm-smd-sview', 'slurm-smd-torque']),
    (['sackd', 'client'], ['slurm-smd-openlava', 'slurm-smd-slurmctld', 'slurm-smd-slurmd', 'slurm-smd-slurmdbd', 'slurm-smd-slurmrestd',
                           'slurm-smd-sview', 'slurm-smd-torque']),
])
def test_host_files_smd(parts, left_out):
    found = sp.host_files(smd_dir(), parts, 'Debian')
    assert found['flavour'] == 'smd' and found['problem'] == ''
    assert sorted(set(_names(smd_dir())) - set(_names(found['files']))) == left_out


# --- Debian's flavour: the files the role chose before this module, exactly --------------------------------------

# install.yml's expression before the flavours (commit d5ed911), verbatim
OLD = ("{{ __slurm_all_files | reject('search', __slurm_not_here_re) | list if __slurm_not_here | length > 0 else __slurm_all_files }}")
OLD_RE = "{{ '/(' ~ (__slurm_not_here | map('regex_escape') | join('|')) ~ ')[_-][0-9][^/]*$' }}"
RPMS = ['/srv/rpms/slurm-24.11.5-1.el9.x86_64.rpm', '/srv/rpms/slurm-slurmctld-24.11.5-1.el9.x86_64.rpm',
        '/srv/rpms/slurm-slurmd-24.11.5-1.el9.x86_64.rpm', '/srv/rpms/pmix-4.2.9-1.el9.x86_64.rpm']


def old_choice(files, not_here):
    templar = Templar(loader=DataLoader(), variables={'__slurm_all_files': files, '__slurm_not_here': not_here})
    regex = templar.template(trust_as_template(OLD_RE))
    templar = Templar(loader=DataLoader(), variables={'__slurm_all_files': files, '__slurm_not_here': not_here, '__slurm_not_here_re': regex})
    return templar.template(trust_as_template(OLD))


@pytest.mark.parametrize('family, parts, not_here', [
    ('Debian', ['slurmd', 'client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmctld', 'slurmdbd']),    # a compute node without nvml
    ('Debian', ['slurmd', 'client', 'nvml'], ['sackd', 'slurmctld', 'slurmdbd']),                      # a GPU node with nvml
    ('Debian', ['slurmctld', 'client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmd', 'slurmdbd']),     # the controller
    ('Debian', ['sackd', 'client'], ['slurm-wlm-nvml-plugin', 'slurmctld', 'slurmd', 'slurmdbd']),     # a login node with configless
    ('Debian', ['client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmctld', 'slurmd', 'slurmdbd']),     # a login node
    # the slurmdbd role: what vars/Debian.yml listed by hand before
    ('Debian', ['slurmdbd', 'client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmctld', 'slurmd']),
    ('Debian', ['slurmctld', 'slurmd', 'slurmdbd', 'sackd', 'client', 'nvml'], []),
    # RedHat: slurm (libslurm and the commands) is every host's, pmix too
    ('RedHat', ['slurmd', 'client'], ['slurm-sackd', 'slurm-slurmctld', 'slurm-slurmdbd']),
    ('RedHat', ['slurmctld', 'client'], ['slurm-sackd', 'slurm-slurmd', 'slurm-slurmdbd']),
    ('Gentoo', ['slurmd', 'client'], []),
])
def test_not_here_is_the_archive_packages_of_the_daemons_a_host_does_not_run(family, parts, not_here):
    assert sp.not_here(family, parts) == not_here


@pytest.mark.parametrize('files, family, parts', [
    (DEBIAN_DIR, 'Debian', ['slurmd', 'client']),
    (DEBIAN_DIR, 'Debian', ['slurmctld', 'client']),
    (DEBIAN_DIR, 'Debian', ['sackd', 'client']),
    (DEBIAN_DIR + ['/srv/debs/slurmdbd_%s_amd64.deb' % DEB13], 'Debian', ['slurmdbd', 'client']),
    (DEBIAN_DIR, 'Debian', ['slurmctld', 'slurmd', 'slurmdbd', 'sackd', 'client', 'nvml']),
    (DEBIAN_DIR + ['/srv/debs/slurmd-dbg_24.11.5-4+deb13u1_amd64.deb', '/srv/debs/notes.txt'], 'Debian', ['slurmctld', 'client']),
    (RPMS, 'RedHat', ['slurmd', 'client']),
    (RPMS, 'RedHat', ['slurmctld', 'client']),
    ([], 'Debian', ['slurmd', 'client']),
])
def test_debian_and_rpm_directories_choose_what_the_role_chose(files, family, parts):
    """The role's regex before this module, over the packages the host does not run."""
    found = sp.host_files(files, parts, family)
    assert found['problem'] == ''
    assert found['files'] == old_choice(files, sp.not_here(family, parts))


@pytest.mark.parametrize('parts, left_out', [
    (['slurmd', 'client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmctld', 'slurmdbd']),
    (['slurmd', 'client', 'nvml'], ['sackd', 'slurmctld', 'slurmdbd']),
    (['slurmdbd', 'client'], ['sackd', 'slurm-wlm-nvml-plugin', 'slurmctld', 'slurmd']),
])
def test_a_debian_directory_leaves_out_the_daemons_the_host_does_not_run(parts, left_out):
    directory = DEBIAN_DIR + ['/srv/debs/slurmdbd_%s_amd64.deb' % DEB13]
    found = sp.host_files(directory, parts, 'Debian')
    assert found['flavour'] == 'debian' and found['problem'] == ''
    assert sorted(set(_names(directory)) - set(_names(found['files']))) == left_out


def test_host_files_smd_installs_slurm_smd_first():
    """install.yml installs the files one by one (apt deb=): slurm-smd, which every other package depends on, first,
    though slurm-smd-client_* sorts before it by name."""
    files = sp.host_files(smd_dir(), ['slurmd', 'client'], 'Debian')['files']
    assert files[0].endswith('/slurm-smd_26.05.3-1_amd64.deb')
    assert sorted(files[1:]) == files[1:]


# --- whole messages, defaults and edges ----------------------------------------------------------------------------

def test_package_of_and_plugin_dir_name_every_valid_value():
    with pytest.raises(InputError) as err:
        sp.package_of('smd', 'slurmrestd')
    assert str(err.value) == "part is 'slurmrestd', expected one of: common, slurmctld, slurmd, slurmdbd, client, sackd, dev, pam_slurm_adopt, nvml, mysql"
    with pytest.raises(InputError) as err:
        sp.plugin_dir('rpm')
    assert str(err.value) == "flavour is 'rpm', expected one of: debian, smd"
    assert sp.plugin_dir('debian') == '/usr/lib/x86_64-linux-gnu/slurm-wlm'


def _refusal(entries, **kwargs):
    with pytest.raises(InputError) as err:
        sp.read_directory(entries, **kwargs)
    return str(err.value)


def test_read_directory_names_up_to_six_files_of_each_flavour():
    six = [f for f in DEBIAN_DIR if 'libpmix' not in f][:6]
    assert _refusal(six + smd_dir()[:7], option='dir') == (
        "dir holds both Debian's Slurm packages (%s) and SchedMD's slurm-smd packages (%s and 1 more), expected one flavour: "
        "SchedMD's packages conflict with Debian's of the same part, and every host gets the same flavour; keep one of them in "
        'the directory' % (', '.join(sorted(f.rsplit('/', 1)[1] for f in six)),
                           ', '.join(sorted(f.rsplit('/', 1)[1] for f in smd_dir()[:7])[:6])))


def test_read_directory_of_two_versions_in_full():
    assert _refusal(['/d/slurm-smd_26.05.3-1_amd64.deb', '/d/slurm-smd-slurmd_26.05.4-1_amd64.deb']) == (
        'slurm_local_package_dir holds Slurm packages of 2 versions (26.05.3: slurm-smd_26.05.3-1_amd64.deb; 26.05.4: '
        'slurm-smd-slurmd_26.05.4-1_amd64.deb), expected the packages of one Slurm version (every package depends on the others '
        'of its own version)')
    assert _refusal([{'file': 'x.deb', 'name': 'slurm-smd', 'version': 'abc'}], option='dir') == (
        "dir holds x.deb, whose version 'abc' names no Slurm release, expected a Slurm package of one release")


def test_read_directory_leaves_the_callers_entries_as_they_are():
    entry = {'file': 'slurm-smd_26.05.3-1_amd64.deb'}
    found = sp.read_directory([entry, 7, None])
    assert entry == {'file': 'slurm-smd_26.05.3-1_amd64.deb'}
    assert found == {'flavour': 'smd', 'version': (26, 5, 3), 'release': '26.05',
                     'packages': {'slurm-smd': {'file': 'slurm-smd_26.05.3-1_amd64.deb', 'name': 'slurm-smd', 'version': '26.05.3-1'}}}


def test_missing_names_a_package_once_though_two_parts_need_it():
    directory = sp.read_directory(smd_dir(leave=('slurm-smd-slurmd',)))
    assert sp.missing(directory, ['slurmd', 'slurmd', 'nvml'], option='dir') == (
        "dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd-slurmd, which this host needs (slurmd, slurmd), "
        'expected slurm-smd-slurmd_26.05.3*.deb beside the others (build every package of debian/control)')
    assert sp.missing(sp.read_directory(DEBIAN_DIR), ['slurmdbd', 'client']) == (
        "slurm_local_package_dir holds Debian's packages of Slurm 24.11.5 but not slurmdbd, which this host needs (slurmdbd), "
        'expected slurmdbd_24.11.5*.deb beside the others (the same Slurm version)')


def test_host_files_reads_debian_names_by_default_and_only_file_names():
    # a folder named like a package of a daemon the host does not run holds packages all the same
    files = ['/srv/slurmctld-2/%s' % f.rsplit('/', 1)[1] for f in DEBIAN_DIR]
    found = sp.host_files(files, ['slurmd', 'client'])
    assert found == {'flavour': 'debian', 'problem': '', 'files': [f for f in files if f.rsplit('/', 1)[1].split('_')[0] not in (
        'sackd', 'slurm-wlm-nvml-plugin', 'slurmctld')]}
    every = ['/srv/debs/-1.txt'] + DEBIAN_DIR
    assert sp.host_files(every, ['slurmctld', 'slurmd', 'slurmdbd', 'sackd', 'client', 'nvml'])['files'] == every


def test_read_directory_of_a_release_too_old_in_full():
    from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_version as sv
    assert _refusal(['/d/slurmd_21.08.5-2ubuntu1_amd64.deb', '/d/slurm-client_21.08.5-2ubuntu1_amd64.deb'], option='dir') == (
        'dir holds Slurm 21.08.5 (slurm-client_21.08.5-2ubuntu1_amd64.deb, slurmd_21.08.5-2ubuntu1_amd64.deb), expected Slurm 22.05 or '
        'newer: %s; use %s instead' % (sv.TOO_OLD_WHY, sv.SMD_BUILD.replace(' and installed with slurm_install_source: local and '
                                                                            'slurm_local_package_dir', '')))
