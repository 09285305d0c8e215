# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The upgrade to a directory of package files (slurm_upgrade_package_dir): the plan, the flavour switch, each host's files."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_upgrade_dir import (
    host_files,
    installed_flavour,
    installed_packages,
    plan_from_files,
    restore_pins,
)

SMD = ['/srv/debs/%s_26.05.3-1_amd64.deb' % name for name in (
    'slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-slurmctld', 'slurm-smd-slurmd', 'slurm-smd-slurmdbd', 'slurm-smd-sackd',
    'slurm-smd-libpam-slurm-adopt', 'slurm-smd-slurmrestd', 'slurm-smd-sview')]
T11 = '24.11.5-4+deb13u1'
DEBIAN_CTL = ['slurm-wlm-basic-plugins', 'slurmctld', 'slurmdbd', 'slurm-client', 'libslurm-dev', 'slurm-wlm-mysql-plugin', 'libslurm42t64']
DEBIAN_GPU = ['slurm-wlm-basic-plugins', 'slurmd', 'slurm-client', 'libslurm-dev', 'slurm-wlm-nvml-plugin', 'libslurm42t64']
DEBIAN_LOGIN = ['slurm-wlm-basic-plugins', 'slurm-client', 'libslurm-dev', 'libslurm42t64']
SMD_GPU = ['slurm-smd', 'slurm-smd-slurmd', 'slurm-smd-client', 'slurm-smd-dev']


def _dpkg(names, version=T11, status='ii'):
    return '\n'.join('%s %s %s' % (status, name, version) for name in names) + '\nii munge 0.5.16-1\nii libpmix-dev 5.0.7-1\n'


def _hostvars(**hosts):
    groups = {'ctl': ['slurmdbd', 'slurm_controller'], 'gpu-01': ['slurm_compute', 'gpu_nodes'], 'gpu-02': ['slurm_compute', 'gpu_nodes'],
              'login': ['slurm_login']}
    return dict((host, {'group_names': groups[host], '_dpkg': {'rc': 0, 'stdout': text}}) for host, text in hosts.items())


def _debian_cluster():
    return _hostvars(ctl=_dpkg(DEBIAN_CTL), **{'gpu-01': _dpkg(DEBIAN_GPU), 'gpu-02': _dpkg(DEBIAN_GPU), 'login': _dpkg(DEBIAN_LOGIN)})


def _plan(hostvars, files=SMD, **kwargs):
    return plan_from_files(sorted(hostvars), hostvars, '_dpkg', files, **kwargs)


def test_installed_packages_reads_both_flavours_and_only_installed_ones():
    text = _dpkg(['slurmd', 'slurm-smd-client']) + 'rc slurmctld 24.11.5-4\niU slurm-smd 26.05.3-1\n'
    assert installed_packages(text) == {'slurmd': T11, 'slurm-smd-client': T11}


@pytest.mark.parametrize('names, flavour', [
    (DEBIAN_GPU, 'debian'),
    (SMD_GPU, 'smd'),
    (['slurm-smd', 'slurmd'], 'debian'),       # slurm-smd alone names no daemon or client
    (['slurm-smd-slurmd', 'slurm-client'], 'both'),
    (['munge'], ''),
])
def test_installed_flavour(names, flavour):
    assert installed_flavour(installed_packages(_dpkg(names))) == flavour


def test_debian_24_11_to_smd_26_05_switches_every_host_in_schedmds_order():
    plan = _plan(_debian_cluster())
    assert plan['problems'] == []
    assert (plan['needed'], plan['from'], plan['to'], plan['flavour']) == (True, '24.11.5', '26.05.3', 'smd')
    assert plan['steps'] == {'slurmdbd': ['ctl'], 'slurmctld': ['ctl'], 'slurmd': ['gpu-01', 'gpu-02'], 'login': ['login']}
    assert plan['switch'] == ['ctl', 'gpu-01', 'gpu-02', 'login']
    assert plan['summary'] == ("Slurm 24.11.5 -> 26.05.3: slurmdbd on ctl, then slurmctld on ctl, then slurmd on gpu-01, gpu-02, then the login "
                               "nodes on login; SchedMD's slurm-smd packages replace Debian's packages on ctl, gpu-01, gpu-02, login")


def test_a_cluster_already_on_the_directorys_packages_has_nothing_to_do():
    smd = _dpkg(SMD_GPU, '26.05.3-1')
    hostvars = _hostvars(ctl=_dpkg(['slurm-smd', 'slurm-smd-slurmctld', 'slurm-smd-slurmdbd', 'slurm-smd-client'], '26.05.3-1'),
                         **{'gpu-01': smd, 'gpu-02': smd})
    plan = _plan(hostvars)
    assert (plan['needed'], plan['problems'], plan['switch']) == (False, [], [])
    assert plan['summary'] == 'Every Slurm daemon runs 26.05.3: nothing to upgrade'


def test_a_half_done_switch_goes_on_where_it_stopped():
    """The run stopped after the controller: ctl has SchedMD's 26.05.3, the compute nodes Debian's 24.11."""
    hostvars = _debian_cluster()
    hostvars['ctl']['_dpkg']['stdout'] = _dpkg(['slurm-smd', 'slurm-smd-slurmctld', 'slurm-smd-slurmdbd', 'slurm-smd-client'], '26.05.3-1')
    plan = _plan(hostvars)
    assert plan['problems'] == [] and plan['steps']['slurmctld'] == [] and plan['steps']['slurmd'] == ['gpu-01', 'gpu-02']
    assert plan['switch'] == ['gpu-01', 'gpu-02', 'login']


@pytest.mark.parametrize('files, fragments', [
    (SMD + ['/srv/debs/slurmd_24.11.5-4_amd64.deb'],
     ["slurm_upgrade_package_dir holds both Debian's Slurm packages (slurmd_24.11.5-4_amd64.deb) and SchedMD's slurm-smd packages"]),
    ([f for f in SMD if 'slurmctld' not in f] + ['/srv/debs/slurm-smd-slurmctld_26.05.4-1_amd64.deb'],
     ['slurm_upgrade_package_dir holds Slurm packages of 2 versions']),
    (['/srv/debs/README', '/srv/debs/munge_0.5.16-1_amd64.deb'],
     ['slurm_upgrade_package_dir holds no Slurm package file of the Debian family']),
    (['/srv/debs/%s_21.08.5-2ubuntu1_amd64.deb' % n for n in ('slurmd', 'slurmctld', 'slurm-client', 'slurmdbd', 'slurm-wlm-basic-plugins')],
     ['slurm_upgrade_package_dir holds Slurm 21.08.5', 'expected Slurm 22.05 or newer']),
])
def test_a_directory_the_upgrade_cannot_use_is_one_problem_naming_the_option(files, fragments):
    plan = _plan(_debian_cluster(), files)
    assert plan['needed'] is False and len(plan['problems']) == 1, plan['problems']
    for fragment in fragments:
        assert fragment in plan['problems'][0]


def test_a_directory_lacking_a_daemons_package_names_each_host_that_runs_it():
    plan = _plan(_debian_cluster(), [f for f in SMD if 'slurm-smd-slurmd_' not in f])
    assert [p.split(':')[0] for p in plan['problems']] == ['gpu-01', 'gpu-02']
    assert "slurm_upgrade_package_dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd-slurmd" in plan['problems'][0]


def test_a_target_past_schedmds_window_is_refused():
    hostvars = _hostvars(ctl=_dpkg(DEBIAN_CTL, '22.05.8-4+deb12u3'), **{'gpu-01': _dpkg(DEBIAN_GPU, '22.05.8-4+deb12u3')})
    plan = _plan(hostvars)
    assert plan['needed'] is False and plan['problems'] and '22.05' in plan['problems'][0]


def test_a_failed_dpkg_query_is_the_hosts_problem():
    hostvars = _debian_cluster()
    hostvars['gpu-02']['_dpkg'] = {'rc': 2, 'stdout': '', 'stderr': 'dpkg-query: error: cannot access archive'}
    assert _plan(hostvars)['problems'] == ['gpu-02: dpkg-query failed: dpkg-query: error: cannot access archive']


@pytest.mark.parametrize('groups, names, wanted', [
    # a GPU node: slurm-smd first, its daemon, client, headers (pyxis), PAM; not the controller's or database's daemon,
    # the REST daemon or the GUI
    (['slurm_compute'], DEBIAN_GPU, ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-libpam-slurm-adopt', 'slurm-smd-slurmd']),
    (['slurmdbd', 'slurm_controller'], DEBIAN_CTL,
     ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-libpam-slurm-adopt', 'slurm-smd-slurmctld', 'slurm-smd-slurmdbd']),
    (['slurm_login'], DEBIAN_LOGIN, ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-libpam-slurm-adopt']),
    # a login node running Debian's sackd (slurm_configless) keeps one
    (['slurm_login'], DEBIAN_LOGIN + ['sackd'],
     ['slurm-smd', 'slurm-smd-client', 'slurm-smd-dev', 'slurm-smd-libpam-slurm-adopt', 'slurm-smd-sackd']),
])
def test_each_host_gets_the_files_of_its_parts_slurm_smd_first(groups, names, wanted):
    chosen = host_files(groups, _dpkg(names), SMD)
    assert chosen['problem'] == ''
    assert chosen['files'][0] == '/srv/debs/slurm-smd_26.05.3-1_amd64.deb'
    assert sorted(f.rsplit('/', 1)[1].split('_')[0] for f in chosen['files']) == wanted


def test_host_files_of_a_mixed_directory_is_its_problem():
    chosen = host_files(['slurm_compute'], _dpkg(DEBIAN_GPU), SMD + ['/srv/debs/slurmd_24.11.5-4_amd64.deb'])
    assert chosen['files'] == [] and 'holds both' in chosen['problem']


def test_restore_pins_are_the_installed_slurm_packages():
    assert restore_pins(_dpkg(['slurmd', 'slurm-client'])) == ['slurm-client=' + T11, 'slurmd=' + T11]


# --- the parts, one host's report, hosts without a result -----------------------------------------------------------

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_packages as packages  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_upgrade_dir as updir  # noqa: E402


def test_installed_packages_drops_the_architecture_of_a_name():
    assert installed_packages('ii slurmd:amd64 %s\nii libslurm42t64:arm64 %s\n' % (T11, T11)) == {'slurmd': T11, 'libslurm42t64': T11}
    assert installed_packages(None) == {}


@pytest.mark.parametrize('groups, installed, parts', [
    (None, None, []),
    (['slurm_compute', 'gpu_nodes'], {}, ['client', 'slurmd']),
    # slurm-smd holds the NVML and MySQL plugins; "common" is every host's and never a part of its own
    (['slurm_compute'], {'slurm-smd': '26.05.3-1', 'slurm-wlm-basic-plugins': T11}, ['client', 'mysql', 'nvml', 'slurmd']),
    (['slurmdbd', 'slurm_controller'], {'libpam-slurm-adopt': T11}, ['client', 'pam_slurm_adopt', 'slurmctld', 'slurmdbd']),
    (['slurm_login'], {'sackd': T11}, ['client', 'sackd']),
])
def test_host_parts(groups, installed, parts):
    assert updir.host_parts(groups, installed) == parts


def test_installed_flavour_of_nothing():
    assert installed_flavour(None) == ''
    assert installed_flavour({'slurm-smd': '26.05.3-1', 'libslurm42t64': T11}) == ''


def test_host_report_in_full():
    """The directory's version for each step package it holds ('' where it lacks one), the installed ones under Debian's
    names, and the packages the host's groups need (not those it has besides) that the directory lacks."""
    directory = packages.read_directory([f for f in SMD if 'slurmdbd' not in f and 'sackd' not in f])
    report = updir.host_report(['slurm_login'], {'slurm-client': T11, 'sackd': T11, 'slurm-smd-slurmd': '26.05.2-1'}, directory)
    assert report == {'groups': ['slurm_login'], 'error': '',
                      'installed': {'slurm-client': T11, 'slurmd': '26.05.2-1'},
                      'candidate': {'slurmdbd': '', 'slurmctld': '26.05.3-1', 'slurmd': '26.05.3-1', 'slurm-client': '26.05.3-1'}}
    report = updir.host_report(('slurmdbd',), None, directory)
    assert report == {'groups': ['slurmdbd'], 'installed': {},
                      'candidate': {'slurmdbd': '', 'slurmctld': '26.05.3-1', 'slurmd': '26.05.3-1', 'slurm-client': '26.05.3-1'},
                      'error': "slurm_upgrade_package_dir holds SchedMD's slurm-smd packages of Slurm 26.05.3 but not slurm-smd-slurmdbd, "
                               'which this host needs (slurmdbd), expected slurm-smd-slurmdbd_26.05.3*.deb beside the others (build every '
                               'package of debian/control)'}
    assert updir.host_report(['slurmdbd'], {}, directory, option='dir')['error'].startswith("dir holds SchedMD's")


def test_a_host_without_a_registered_result_has_nothing_installed():
    hostvars = _hostvars(**{'gpu-01': _dpkg(DEBIAN_GPU)})
    hostvars['gpu-02'] = {'group_names': ['slurm_compute']}
    hostvars['gpu-01']['_dpkg'] = {'stdout': _dpkg(DEBIAN_GPU)}     # no rc: taken as 0
    plan = _plan(hostvars)
    assert plan['problems'] == ['gpu-02 (group slurm_compute) has no slurmd installed: bring the cluster up with site.yml first']


def test_a_failed_dpkg_query_without_stderr_names_its_exit_code():
    hostvars = _debian_cluster()
    hostvars['gpu-02']['_dpkg'] = {'rc': 2, 'stdout': '', 'stderr': ' \n'}
    assert _plan(hostvars)['problems'] == ['gpu-02: dpkg-query failed: exit code 2']


def test_the_replaced_programs_are_read_from_the_named_result():
    hostvars = _debian_cluster()
    smd = _dpkg(['slurm-smd', 'slurm-smd-slurmctld', 'slurm-smd-slurmdbd', 'slurm-smd-client', 'slurm-smd-slurmd'], '26.05.3-1')
    for host in hostvars:
        hostvars[host]['_dpkg']['stdout'] = smd
        hostvars[host]['_daemons'] = {'replaced': ['slurmd'] if host == 'gpu-02' else []}
    assert _plan(hostvars)['needed'] is False
    plan = _plan(hostvars, replaced='_daemons')
    assert (plan['needed'], plan['steps']['slurmd'], plan['switch']) == (True, ['gpu-02'], [])
    assert plan['summary'] == ('Slurm 26.05.3 -> 26.05.3: slurmdbd on no host, then slurmctld on no host, then slurmd on gpu-02, then the '
                               'login nodes on no host')


def test_a_flavour_switch_alone_is_no_upgrade():
    """Debian's packages of the directory's very version: nothing to upgrade, so the summary names no switch."""
    hostvars = _hostvars(**{'gpu-01': _dpkg(DEBIAN_GPU, '26.05.3-1')})
    plan = _plan(hostvars)
    assert (plan['needed'], plan['switch'], plan['problems']) == (False, ['gpu-01'], [])
    assert plan['summary'] == 'Every Slurm daemon runs 26.05.3: nothing to upgrade'
