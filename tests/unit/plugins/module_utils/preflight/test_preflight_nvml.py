# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_preflight's rules for Slurm's NVML plugin (slurm role, slurm_gres_autodetect: nvml).

apt's answers recorded against the real Debian 12 and 13 archives
(tests/unit/fixtures/apt/README.md) and apt's other known forms (apt 3's
"Error:", arch-qualified names, removals, an installed version) -> the exact
message of each node, or none; the plugin file after the install, per OS
family and install source; the fact-free rule of the role's preflight.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.gpucluster.bringup.plugins.module_utils.preflight import _roles as pf
from ansible_collections.gpucluster.bringup.plugins.plugin_utils._preflight_spec import role_value_problems

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'apt')
GROUPS = {'all': ['ctl', 'gpu-01', 'gpu-02'], 'slurm_controller': ['ctl'], 'slurm_compute': ['gpu-01', 'gpu-02'],
          'gpu_nodes': ['gpu-01', 'gpu-02'], 'slurmdbd': ['ctl']}
PLUGIN = 'slurm-wlm-nvml-plugin'

HEAD = ("gpu-01: slurm_gres_autodetect is nvml, but apt cannot install slurm-wlm-nvml-plugin (Slurm's NVML plugin, gpu_nvml.so) on "
        'this node; nothing was changed. Why: ')
OFF = ("keep slurm_gres_autodetect: 'off' (the default: the collection's slurm_gres_facts writes the GPU lines of gres.conf from NVML "
       'itself, with the same Gres= in slurm.conf)')
CONTRIB = ('apt has no installation candidate for slurm-wlm-nvml-plugin: Debian ships it in the contrib component, which the apt '
           'sources of this node do not enable (or its package lists are out of date)')
ENABLE = ('enable contrib (Components: main contrib in /etc/apt/sources.list.d/debian.sources, or contrib on the deb lines of '
          '/etc/apt/sources.list), run apt-get update and run again')
MULTIVERSE = ("apt has no installation candidate for slurm-wlm-nvml-plugin: Ubuntu carries Debian's contrib packages, where it has "
              'them, in its multiverse component, which the apt sources of this node do not enable (or its package lists are out of date)')
ENABLE_NOBLE = ('enable multiverse (add-apt-repository multiverse, or Components: main restricted universe multiverse in '
                '/etc/apt/sources.list.d/ubuntu.sources), run apt-get update and run again')
DEB12_NOTE = " (Debian 12's plugin then still needs Slurm held at the plugin's own version: see docs/slurm-gres-autodetect.md)"
NVML_LIB = ("slurm-wlm-nvml-plugin 22.05.8-4+deb12u2 depends on libnvidia-ml1 (>= 450) | libnvidia-ml.so.1 (>= 450), which no package "
            "of this node provides and apt cannot install: the NVIDIA driver's NVML library is not installed from a package apt knows")
NVML_LIB_CHOICE = ("install the driver's NVML library as a package (NVIDIA's CUDA repository for Debian, or libnvidia-ml1 from Debian's "
                   "non-free component where the node runs Debian's own driver; a driver from NVIDIA's .run installer is not known to dpkg)")
PIN = ('slurm-wlm-nvml-plugin 22.05.8-4+deb12u2 depends on slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2), but slurm-wlm-basic-plugins '
       '22.05.8-4+deb12u3 is what apt would install')
PIN_CHOICE = ("pin Slurm to the plugin's version: hold every Slurm package (slurm-wlm-basic-plugins, slurmd, slurmctld, slurm-client and "
              'the other slurm-wlm packages) at 22.05.8-4+deb12u2 with an apt preferences file (Pin: version 22.05.8-4+deb12u2) from a '
              'mirror that still carries it, such as snapshot.debian.org, or install those package files with slurm_install_source: '
              'local; that gives up what 22.05.8-4+deb12u3 fixed')
DEBIAN13 = ('move the GPU nodes to Debian 13, whose slurm-wlm-nvml-plugin (24.11.5) accepts any Slurm 24.11.5 '
            '(slurm-wlm-basic-plugins >= 24.11.5, << 24.11.6)')


def recorded(name):
    with open(os.path.join(FIXTURES, name + '.json')) as handle:
        result = json.load(handle)
    result['failed'] = False  # registered with failed_when: false
    return result


def node(apt, major='12', distribution='Debian', **more):
    found = dict(host='gpu-01', package=PLUGIN, os_family='Debian', distribution=distribution, distribution_major_version=major,
                 install_source='distro', apt=apt)
    found.update(more)
    return found


def message(reasons, choices):
    return HEAD + '; '.join(reasons) + '. Choose one: ' + '; or '.join([OFF] + choices)


# --- apt's recorded answers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize('fixture, expected', [
    pytest.param('debian12-main-only', message([CONTRIB], [ENABLE + DEB12_NOTE]), id='debian12-no-contrib'),
    pytest.param('debian12-contrib', message([NVML_LIB, PIN], [NVML_LIB_CHOICE, PIN_CHOICE, DEBIAN13]), id='debian12-contrib'),
    pytest.param('debian12-contrib-nonfree', message([PIN], [PIN_CHOICE, DEBIAN13]), id='debian12-contrib-nonfree-the-pin'),
    pytest.param('debian13-contrib', '', id='debian13-installs'),
])
def test_recorded_apt_answers(fixture, expected):
    major = fixture[6:8]
    assert pf.nvml_plugin_problem(node(recorded(fixture), major=major)) == expected


def test_recorded_answers_parse():
    found = pf.parse_apt_simulation(**dict((k, v) for k, v in recorded('debian12-contrib').items() if k in ('stdout', 'stderr', 'msg')))
    assert found['missing'] == [] and found['installs'] == {} and found['removes'] == []
    assert found['requested'] == {'slurmd': '22.05.8-4+deb12u3', 'libpmix-dev': '4.2.2-1+deb12u1', PLUGIN: '22.05.8-4+deb12u2'}
    assert found['errors'] == ['E: Unable to correct problems, you have held broken packages.']
    assert found['unmet'] == [
        {'package': PLUGIN, 'kind': 'Depends', 'alternatives': [
            {'name': 'libnvidia-ml1', 'op': '>=', 'version': '450', 'why': 'it is not installable', 'have': None, 'state': None},
            {'name': 'libnvidia-ml.so.1', 'op': '>=', 'version': '450', 'why': 'it is not installable', 'have': None, 'state': None}],
         'text': 'slurm-wlm-nvml-plugin : Depends: libnvidia-ml1 (>= 450) but it is not installable or '
                 'libnvidia-ml.so.1 (>= 450) but it is not installable'},
        {'package': PLUGIN, 'kind': 'Depends', 'alternatives': [
            {'name': 'slurm-wlm-basic-plugins', 'op': '=', 'version': '22.05.8-4+deb12u2', 'why': '22.05.8-4+deb12u3 is to be installed',
             'have': '22.05.8-4+deb12u3', 'state': 'to be installed'}],
         'text': 'slurm-wlm-nvml-plugin : Depends: slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2) but 22.05.8-4+deb12u3 is to be installed'},
    ]
    found = pf.parse_apt_simulation(recorded('debian13-contrib')['stdout'])
    assert found['installs'][PLUGIN] == '24.11.5-2'
    assert found['installs']['slurm-wlm-basic-plugins'] == '24.11.5-4+deb13u1'
    assert found['unmet'] == [] and found['removes'] == [] and found['errors'] == []


# --- other forms of apt's answer ------------------------------------------------------------------------------------

UNMET = 'The following packages have unmet dependencies:\n'


@pytest.mark.parametrize('apt, more, expected', [
    pytest.param({'rc': 100, 'stdout': '', 'stderr': 'E: Unable to locate package slurm-wlm-nvml-plugin\n'}, {},
                 message([CONTRIB], [ENABLE + DEB12_NOTE]), id='apt-get-unable-to-locate'),
    pytest.param({'msg': 'no available installation candidate for slurm-wlm-nvml-plugin'}, {'major': '13'},
                 message([CONTRIB], [ENABLE]), id='module-no-candidate-debian13-no-note'),
    pytest.param({'rc': 100, 'stdout': "Package slurm-wlm-nvml-plugin is not available, but is referred to by another package.\n",
                  'stderr': "E: Package 'slurm-wlm-nvml-plugin' has no installation candidate\n"}, {},
                 message([CONTRIB], [ENABLE + DEB12_NOTE]), id='apt-get-no-candidate'),
    pytest.param({'rc': 100, 'stderr': 'Error: Unable to locate package slurm-wlm-nvml-plugin\nError: Unable to locate package slurmd\n'},
                 {'distribution': 'Ubuntu', 'major': '24'},
                 message([MULTIVERSE, 'apt has no installation candidate for slurmd either, which the role installs with it (are the '
                                      'package lists out of date?)'], [ENABLE_NOBLE]), id='apt3-errors-and-another-missing-ubuntu'),
    pytest.param({'msg': "No package matching 'slurmd' is available"}, {},
                 message(['apt has no installation candidate for slurmd, which the role installs with it (are the package lists out of '
                          'date?)'], []), id='only-slurm-missing'),
    pytest.param({'rc': 100, 'stdout': UNMET + ' slurm-wlm-nvml-plugin : Depends: slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2) but '
                  '22.05.8-4+deb12u3 is installed\n'}, {},
                 message(['slurm-wlm-nvml-plugin depends on slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2), but '
                          'slurm-wlm-basic-plugins 22.05.8-4+deb12u3 is installed'],
                         [PIN_CHOICE, DEBIAN13]),
                 id='installed-version'),
    pytest.param({'rc': 100, 'stdout': UNMET + ' slurm-wlm-nvml-plugin:arm64 : Depends: slurm-wlm-basic-plugins:arm64 (>= 24.11.5) but '
                  '24.11.4-1 is to be installed\n'}, {'major': '13'},
                 message(['slurm-wlm-nvml-plugin:arm64 depends on slurm-wlm-basic-plugins:arm64 (>= 24.11.5), but '
                          'slurm-wlm-basic-plugins:arm64 24.11.4-1 is what apt would install'],
                         ['hold Slurm at a version that satisfies slurm-wlm-basic-plugins:arm64 (>= 24.11.5) (an apt preferences file, or '
                          'package files with slurm_install_source: local)']), id='arch-qualified-range-debian13'),
    pytest.param({'rc': 100, 'stdout': UNMET + ' slurm-wlm-nvml-plugin : Depends: libfoo1 but it is not going to be installed\n'}, {},
                 message(['apt says: slurm-wlm-nvml-plugin : Depends: libfoo1 but it is not going to be installed'], []),
                 id='other-unmet-quoted'),
    pytest.param({'rc': 100, 'stdout': UNMET + ' slurm-wlm-nvml-plugin : Depends: libfoo1 but it is not installable\n'}, {},
                 message(['slurm-wlm-nvml-plugin depends on libfoo1, which apt cannot install'], []), id='other-not-installable'),
    pytest.param({'changed': True, 'stdout': 'Remv slurm-wlm-torque [22.05.8-4+deb12u3]\nInst slurm-wlm-nvml-plugin (22.05.8-4+deb12u2 '
                  'Debian:12/stable [amd64])\n'}, {},
                 message(['apt would remove slurm-wlm-torque to install it'], []), id='would-remove'),
    pytest.param({'msg': 'Failed to lock apt for exclusive operation: Failed to lock directory /var/lib/apt/lists/: E:Could not get lock'},
                 {}, message(['apt failed: Failed to lock apt for exclusive operation: Failed to lock directory /var/lib/apt/lists/: '
                              'E:Could not get lock'], []), id='lock'),
    pytest.param({'rc': 1, 'stdout': 'something\n', 'stderr': ''}, {}, message(['apt failed (exit 1): something'], []), id='unknown-exit'),
    pytest.param({'msg': 'python3-apt must be installed to use check mode. If run normally this module can auto-install it.'}, {},
                 message(['apt could not be asked: python3-apt is not installed here, and ansible.builtin.apt needs it for a dry run'],
                         ["install python3-apt on the node (apt-get install python3-apt; site.yml's earlier roles install it with their "
                          'first package) and run again']), id='no-python-apt'),
    pytest.param({'changed': False}, {}, '', id='already-installed'),
    pytest.param({'changed': True, 'stdout': 'Inst slurm-wlm-nvml-plugin (22.05.8-4+deb12u2 local [amd64])\n'}, {}, '', id='pinned-installs'),
])
def test_apt_answers(apt, more, expected):
    assert pf.nvml_plugin_problem(node(apt, **more)) == expected


def test_apt3_unsatisfied_block():
    stdout = ('Unsatisfied dependencies:\n'
              ' slurm-wlm-nvml-plugin : Depends: slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2) but 22.05.8-4+deb12u3 is to be installed\n')
    found = pf.parse_apt_simulation(stdout, 'Error: Unable to correct problems, you have held broken packages.\n')
    assert [(u['package'], u['alternatives'][0]['have']) for u in found['unmet']] == [(PLUGIN, '22.05.8-4+deb12u3')]
    assert found['errors'] == ['Error: Unable to correct problems, you have held broken packages.']


BASIC = 'slurm-wlm-basic-plugins'


@pytest.mark.parametrize('kind, words, pins', [
    ('Depends', 'depends on', True),
    ('PreDepends', 'pre-depends on', True),
    ('Pre-Depends', 'pre-depends on', True),
    ('Breaks', 'breaks', False),
    ('Conflicts', 'conflicts with', False),
    ('Recommends', 'recommends', False),
])
def test_apt_relation_kinds(kind, words, pins):
    """Every relation apt names is read with its kind; only a dependency (Depends, apt's two spellings of Pre-Depends) asks for a pin."""
    line = '%s : %s: %s (= 22.05.8-4+deb12u2) but 22.05.8-4+deb12u3 is to be installed' % (PLUGIN, kind, BASIC)
    found = pf.parse_apt_simulation(UNMET + ' ' + line + '\n')
    assert found['unmet'] == [{'package': PLUGIN, 'kind': kind, 'text': line, 'alternatives': [
        {'name': BASIC, 'op': '=', 'version': '22.05.8-4+deb12u2', 'why': '22.05.8-4+deb12u3 is to be installed',
         'have': '22.05.8-4+deb12u3', 'state': 'to be installed'}]}]
    reason = ('slurm-wlm-nvml-plugin %s slurm-wlm-basic-plugins (= 22.05.8-4+deb12u2), but slurm-wlm-basic-plugins 22.05.8-4+deb12u3 '
              'is what apt would install' % words)
    expected = message([reason], [PIN_CHOICE, DEBIAN13] if pins else [])
    assert pf.nvml_plugin_problem(node({'rc': 100, 'stdout': UNMET + ' ' + line + '\n'})) == expected


def test_apt_continuation_lines_alternatives_and_further_relations():
    stdout = (UNMET
              + ' slurm-wlm-nvml-plugin : Depends: libnvidia-ml1 (>= 450) but it is not installable or\n'
              + '                         libnvidia-ml.so.1 (>= 450) but it is not installable\n'
              + '                         PreDepends: slurm-wlm-basic-plugins (>= 24.11.5) but 24.11.4-1 is installed\n'
              + ' slurmd : Breaks: slurm-client (<< 24.11) but 23.02.1 is to be installed\n'
              + 'E: Unable to correct problems, you have held broken packages.\n'
              + '                         Depends: libgone1 but it is not installable\n')
    found = pf.parse_apt_simulation(stdout)
    assert found == {'missing': [], 'requested': {}, 'installs': {}, 'removes': [],
                     'errors': ['E: Unable to correct problems, you have held broken packages.'], 'unmet': [
        {'package': PLUGIN, 'kind': 'Depends', 'alternatives': [
            {'name': 'libnvidia-ml1', 'op': '>=', 'version': '450', 'why': 'it is not installable', 'have': None, 'state': None},
            {'name': 'libnvidia-ml.so.1', 'op': '>=', 'version': '450', 'why': 'it is not installable', 'have': None, 'state': None}],
         'text': 'slurm-wlm-nvml-plugin : Depends: libnvidia-ml1 (>= 450) but it is not installable or '
                 'libnvidia-ml.so.1 (>= 450) but it is not installable'},
        {'package': PLUGIN, 'kind': 'PreDepends', 'alternatives': [
            {'name': BASIC, 'op': '>=', 'version': '24.11.5', 'why': '24.11.4-1 is installed', 'have': '24.11.4-1', 'state': 'installed'}],
         'text': 'slurm-wlm-nvml-plugin : PreDepends: slurm-wlm-basic-plugins (>= 24.11.5) but 24.11.4-1 is installed'},
        {'package': 'slurmd', 'kind': 'Breaks', 'alternatives': [
            {'name': 'slurm-client', 'op': '<<', 'version': '24.11', 'why': '23.02.1 is to be installed', 'have': '23.02.1',
             'state': 'to be installed'}],
         'text': 'slurmd : Breaks: slurm-client (<< 24.11) but 23.02.1 is to be installed'}]}
    # a line that is no relation ends the entry: what follows it is no continuation
    found = pf.parse_apt_simulation(UNMET + ' slurmd : Depends: libfoo1 but it is not installable\nsomething else\n'
                                    '                         Depends: libbar1 but it is not installable\n')
    assert [(u['package'], u['kind'], [a['name'] for a in u['alternatives']]) for u in found['unmet']] == [('slurmd', 'Depends', ['libfoo1'])]


@pytest.mark.parametrize('major, distribution, tail', [
    ('12', 'Debian', [DEBIAN13]),
    ('13', 'Debian', []),
    ('', 'Debian', []),
    ('12', 'Ubuntu', []),
])
def test_apt_range_pin_and_the_move_to_debian13(major, distribution, tail):
    line = ' %s : Pre-Depends: %s (>= 24.11.5) but 24.11.4-1 is installed\n' % (PLUGIN, BASIC)
    reason = 'slurm-wlm-nvml-plugin pre-depends on slurm-wlm-basic-plugins (>= 24.11.5), but slurm-wlm-basic-plugins 24.11.4-1 is installed'
    hold = ('hold Slurm at a version that satisfies slurm-wlm-basic-plugins (>= 24.11.5) (an apt preferences file, or package files with '
            'slurm_install_source: local)')
    found = pf.nvml_plugin_problem(node({'rc': 100, 'stdout': UNMET + line}, major=major, distribution=distribution))
    assert found == message([reason], [hold] + tail)


def test_apt_the_first_dependency_names_the_pin():
    stdout = (UNMET + ' %s : Breaks: slurmd (<< 24.11.5) but 24.11.4-1 is installed\n' % PLUGIN
              + ' %s : Depends: %s (= 24.11.5-1) but 24.11.6-1 is to be installed\n' % (PLUGIN, BASIC)
              + ' %s : Depends: slurm-client (>= 24.11.5) but 24.11.4-1 is installed\n' % PLUGIN)
    found = pf.nvml_plugin_problem(node({'rc': 100, 'stdout': stdout}, major='13'))
    assert found == message([
        'slurm-wlm-nvml-plugin breaks slurmd (<< 24.11.5), but slurmd 24.11.4-1 is installed',
        'slurm-wlm-nvml-plugin depends on slurm-wlm-basic-plugins (= 24.11.5-1), but slurm-wlm-basic-plugins 24.11.6-1 is what apt would install',
        'slurm-wlm-nvml-plugin depends on slurm-client (>= 24.11.5), but slurm-client 24.11.4-1 is installed'],
        ["pin Slurm to the plugin's version: hold every Slurm package (slurm-wlm-basic-plugins, slurmd, slurmctld, slurm-client and the "
         'other slurm-wlm packages) at 24.11.5-1 with an apt preferences file (Pin: version 24.11.5-1) from a mirror that still carries '
         'it, such as snapshot.debian.org, or install those package files with slurm_install_source: local; that gives up what 24.11.6-1 '
         'fixed'])


# --- the plugin file after the install ------------------------------------------------------------------------------

MISSING = ("gpu-01: slurm_gres_autodetect is nvml, but Slurm's NVML plugin gpu_nvml.so is not in %s after the install: slurmd would "
           'detect no GPU, register 0 of the Gres= in slurm.conf and the node would go INVALID_REG (drained). %s; or set '
           "slurm_gres_autodetect: 'off'")
DEB_DIR = '/usr/lib/x86_64-linux-gnu/slurm-wlm'


@pytest.mark.parametrize('family, source, package, dirs, hint', [
    ('Debian', 'distro', PLUGIN, [DEB_DIR],
     "Slurm-wlm-nvml-plugin is installed: `dpkg -L slurm-wlm-nvml-plugin` names the directory of its gpu_nvml.so; when that is not "
     "Slurm's PluginDir, set PluginDir in slurm_conf_overrides to it"),
    ('Debian', 'local', PLUGIN, [DEB_DIR],
     'Add the slurm-wlm-nvml-plugin package file (the same version as the other Slurm packages) to slurm_local_package_dir, and to '
     'slurm_local_packages when that lists the files'),
    ('RedHat', 'distro', '', ['/usr/lib64/slurm'],
     "The RHEL family has no separate plugin package: gpu_nvml.so is in the slurm package only when Slurm was built with NVML "
     "(SchedMD's slurm.spec: rpmbuild --with nvml, with NVIDIA's nvml.h present), and this node's was not; build Slurm with NVML and "
     'install its RPMs with slurm_install_source: local'),
    ('RedHat', 'local', '', ['/opt/slurm/lib/slurm', '/usr/lib64/slurm'],
     "The slurm RPM of slurm_local_package_dir was built without NVML: rebuild it with rpmbuild --with nvml (with NVIDIA's nvml.h "
     'present) and run again'),
    ('Suse', 'distro', '', [], 'Install a Slurm built with NVML'),
])
def test_plugin_missing_after_install(family, source, package, dirs, hint):
    problem = pf.nvml_plugin_problem(dict(host='gpu-01', package=package, os_family=family, install_source=source, plugin_dirs=dirs,
                                          found=[]))
    assert problem == MISSING % (', '.join(dirs) or '(no directory)', hint)


def test_plugin_missing_from_schedmds_packages():
    """SchedMD's slurm-smd packages (their PluginDir): the plugin is inside slurm-smd when it was built with nvml.h."""
    smd_dir = '/usr/lib/x86_64-linux-gnu/slurm'
    problem = pf.nvml_plugin_problem(dict(host='gpu-01', package=PLUGIN, os_family='Debian', install_source='local', plugin_dirs=[smd_dir],
                                          found=[], flavour='smd'))
    assert problem == MISSING % (smd_dir, "SchedMD's slurm-smd package of slurm_local_package_dir was built without NVML (gpu_nvml.so is "
                                          "in slurm-smd only when NVIDIA's nvml.h was present at build time): install libnvidia-ml-dev (or "
                                          "the CUDA toolkit's nvml.h) on the build host, rebuild the packages (debuild -b -uc -us) and run "
                                          'again')


def test_plugin_found():
    assert pf.nvml_plugin_problem(dict(host='gpu-01', package=PLUGIN, os_family='Debian', install_source='distro',
                                       plugin_dirs=[DEB_DIR], found=[DEB_DIR + '/gpu_nvml.so'])) == ''


@pytest.mark.parametrize('bad, error', [
    ('gpu-01', "nvml_plugin_problem needs {host, package, os_family, ...} and apt or found; got 'gpu-01'"),
    ({'package': PLUGIN}, "nvml_plugin_problem needs {host, package, os_family, ...} and apt or found; got {'package': 'slurm-wlm-nvml-plugin'}"),
    ({'host': 'gpu-01'}, 'nvml_plugin_problem needs apt (the dry run) or found (the plugin paths) for gpu-01'),
])
def test_bad_input(bad, error):
    with pytest.raises(ValueError) as info:
        pf.nvml_plugin_problem(bad)
    assert str(info.value) == error


# --- the role's fact-free rule (site.yml's preflight) ---------------------------------------------------------------

def _load(role, path):
    with open(os.path.join(ROOT, 'roles', role, path)) as handle:
        return yaml.safe_load(handle) or {}


def problems(host='gpu-02', **changes):
    options = _load('slurm', 'meta/argument_specs.yml')['argument_specs']['main']['options']
    values = dict((k, v) for k, v in _load('slurm', 'defaults/main.yml').items() if not (isinstance(v, str) and '{{' in v))
    values.update(changes)
    return role_value_problems('slurm', host, options, values, GROUPS)


@pytest.mark.parametrize('host, changes, expected', [
    ('gpu-02', {}, []),
    ('gpu-02', {'slurm_gres_autodetect': 'nvml'}, []),
    ('gpu-02', {'slurm_gres_autodetect': 'nvml', 'slurm_gres_enabled': 'no'},
     ["slurm_gres_autodetect is nvml but slurm_gres_enabled is false on this GPU node: the Gres= of its slurm.conf line comes from the GRES facts, "
      "so Slurm would ignore the GPUs AutoDetect finds; set slurm_gres_enabled: true or slurm_gres_autodetect: 'off'"]),
    # the controller reads no GRES: nothing to say there
    ('ctl', {'slurm_gres_autodetect': 'nvml', 'slurm_gres_enabled': False}, []),
    ('gpu-02', {'slurm_gres_autodetect': 'NVML'}, ["slurm_gres_autodetect is 'NVML'; valid values: off, nvml"]),
    ('gpu-02', {'slurm_gres_autodetect': False},
     ["slurm_gres_autodetect is false; valid values: off, nvml (quote it: 'off'; YAML reads an unquoted off as false)"]),
])
def test_role_rule(host, changes, expected):
    assert problems(host, **changes) == expected


# --- the same "no candidate" answer on each distribution: the component it names ------------------------------------

NO_CANDIDATE = {'rc': 100, 'stdout': '', 'stderr': 'E: Unable to locate package slurm-wlm-nvml-plugin\n'}


@pytest.mark.parametrize('distribution, major, reason, choice', [
    ('Debian', '13', CONTRIB, ENABLE),
    ('Debian', '12', CONTRIB, ENABLE + DEB12_NOTE),
    ('Ubuntu', '24', MULTIVERSE, ENABLE_NOBLE),
    ('Ubuntu', '22', MULTIVERSE, 'enable multiverse (add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list), '
                                 'run apt-get update and run again'),
    # an Ubuntu release the table does not have: multiverse all the same
    ('Ubuntu', '26', MULTIVERSE, 'enable multiverse (add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list), '
                                 'run apt-get update and run again'),
    ('Linuxmint', '22', "apt has no installation candidate for slurm-wlm-nvml-plugin: Debian ships it in the contrib component (Ubuntu in "
                        'multiverse), which the apt sources of this node do not enable (or its package lists are out of date)',
     'enable the component that carries slurm-wlm-nvml-plugin (Debian: contrib; Ubuntu: multiverse), run apt-get update and run again'),
])
def test_no_candidate_names_the_component_of_the_distribution(distribution, major, reason, choice):
    problem = pf.nvml_plugin_problem(node(NO_CANDIDATE, major=major, distribution=distribution))
    assert problem == message([reason], [choice])
    if distribution == 'Ubuntu':
        assert 'contrib component, which' not in problem and 'debian.sources' not in problem


BINDINGS_HEAD = ("gpu-01: apt cannot install python3-pynvml (nvidia-ml-py, the Python NVML bindings the collection's modules import); "
                 'nothing was changed. apt has no installation candidate for it: ')
BINDINGS_TAIL = ', or install nvidia-ml-py yourself and set nvml_bindings: none (or nvml_bindings: pip)'
DEBIAN_BINDINGS = ('Debian ships it in the contrib component, which this node\'s apt sources do not enable. Add contrib to them (e.g. '
                   '"Components: main contrib non-free non-free-firmware", where Debian\'s NVIDIA driver packages are too) and run again')


@pytest.mark.parametrize('more, where', [
    ({}, DEBIAN_BINDINGS),      # no distribution given (the filter's old callers): Debian's words, as before
    ({'distribution': 'Debian', 'distribution_major_version': '13'}, DEBIAN_BINDINGS),
    ({'distribution': 'Ubuntu', 'distribution_major_version': '24'},
     "Ubuntu carries it in the multiverse component, which this node's apt sources do not enable. Add multiverse to them "
     '(add-apt-repository multiverse, or Components: main restricted universe multiverse in /etc/apt/sources.list.d/ubuntu.sources) '
     'and run again'),
    ({'distribution': 'Ubuntu', 'distribution_major_version': '22'},
     "Ubuntu carries it in the multiverse component, which this node's apt sources do not enable. Add multiverse to them "
     '(add-apt-repository multiverse, or multiverse on the deb lines of /etc/apt/sources.list) and run again'),
    ({'distribution': 'Pop!_OS', 'distribution_major_version': '22'},
     'Pop!_OS offers no package of that name to this node (Debian ships it in contrib, Ubuntu in multiverse). Enable the component that '
     'carries it and run again'),
])
def test_bindings_message_per_distribution(more, where):
    apt = {'failed': False, 'msg': "No package matching 'python3-pynvml' is available"}
    problem = pf.bindings_package_problem(dict({'host': 'gpu-01', 'package': 'python3-pynvml', 'apt': apt}, **more))
    assert problem == BINDINGS_HEAD + where + BINDINGS_TAIL


# --- the nvml role: can apt install python3-pynvml? ---------------------------------------------------------------

@pytest.mark.parametrize('apt, expected', [
    ({'failed': False, 'changed': True, 'stdout': 'Inst python3-pynvml (11.525.112-1 Debian:12/stable [amd64])'}, ''),
    # registered with failed_when: false, as the role does: "failed" is false whatever apt said
    ({'failed': False, 'msg': "No package matching 'python3-pynvml' is available"},
     'gpu-01: apt cannot install python3-pynvml (nvidia-ml-py, the Python NVML bindings the collection\'s modules import); nothing '
     'was changed. apt has no installation candidate for it: Debian ships it in the contrib component'),
    ({'failed': False, 'msg': "'/usr/bin/apt-get -y install python3-pynvml' failed",
      'stdout': ' python3-pynvml : Depends: libnvidia-ml1 (>= 450) but it is not installable or\n'
                '                  libnvidia-ml.so.1 (>= 450) but it is not installable\n',
      'stderr': 'E: Unable to correct problems, you have held broken packages.'},
     'apt says: python3-pynvml : Depends: libnvidia-ml1 (>= 450) but it is not installable or libnvidia-ml.so.1 (>= 450) but it '
     'is not installable; E: Unable to correct problems, you have held broken packages.'),
    ({'failed': False, 'msg': 'E: dpkg was interrupted, you must manually run \'dpkg --configure -a\' to correct the problem.'},
     "apt says: E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem."),
])
def test_bindings_package_problem(apt, expected):
    problem = pf.bindings_package_problem({'host': 'gpu-01', 'package': 'python3-pynvml', 'apt': apt})
    assert (problem == '') if expected == '' else (expected in problem), problem
