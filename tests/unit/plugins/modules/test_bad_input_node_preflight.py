# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_preflight refuses bad input with one message, before any command runs or NVML is opened.

Each case asserts: the module failed, the message names the option, the bad value and what is valid, no command ran,
NVML was never opened and nothing under the test directory changed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import node_preflight
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules.modrun import bad_input, forbid_commands, snapshot

PKG = 'a package name (letters, digits'
FILE = 'a package file name such as slurm-smd-slurmd_24.11.5-1_amd64.deb'

CASES = [
    ('packages-empty', {'packages': []}, ['packages is [], expected at least one', PKG]),
    ('packages-blank', {'packages': ['slurmd', '']}, ["packages[1] is ''", PKG]),
    ('packages-option', {'packages': ['-oDebug::pkgProblemResolver=1']}, ["packages[0] is '-oDebug::pkgProblemResolver=1'", PKG]),
    ('packages-space', {'packages': ['slurmd slurmctld']}, ["packages[0] is 'slurmd slurmctld'", PKG]),
    ('packages-glob', {'packages': ['slurm*']}, ["packages[0] is 'slurm*'", PKG]),
    ('installed-not-list', {'installed': {'slurmd': '22.05.8'}}, ["installed['slurmd'] is '22.05.8'", 'a list of {version: ...}']),
    ('installed-no-version', {'installed': {'slurmd': [{'name': 'slurmd'}]}}, ["installed['slurmd']", 'a list of {version: ...}']),
    ('source-unknown', {'source': 'schedmd'}, ['source', 'schedmd', 'distro, local']),
    ('local-files-not-package', {'source': 'local', 'local_package_files': ['README']}, ["local_package_files[0] is 'README'", FILE]),
    ('local-files-no-version', {'source': 'local', 'local_package_files': ['slurmd.deb']}, ["local_package_files[0] is 'slurmd.deb'", FILE]),
    ('local-files-with-distro', {'local_package_files': ['slurmd_24.11.5-1_amd64.deb']},
     ["local_package_files is given with source 'distro'", 'expected source: local']),
    ('local-dir-with-distro', {'local_package_dir': '{tmp}'}, ["local_package_dir is given with source 'distro'", 'expected source: local']),
    ('local-dir-relative', {'source': 'local', 'local_package_dir': 'pkgs'}, ["local_package_dir is 'pkgs'", 'an absolute path']),
    ('local-dir-missing', {'source': 'local', 'local_package_dir': '{tmp}/nothere'},
     ["local_package_dir is '{tmp}/nothere'", 'not a directory', 'the directory holding the package files']),
    ('local-dir-file', {'source': 'local', 'local_package_dir': '{tmp}/afile'}, ["local_package_dir is '{tmp}/afile'", 'not a directory']),
    ('os-release-relative', {'os_release': 'etc/os-release'}, ["os_release is 'etc/os-release'", 'an absolute path']),
    ('module-root-relative', {'module_root': 'sys/module'}, ["module_root is 'sys/module'", 'an absolute path']),
    ('gpus-not-bool', {'gpus': 'sometimes'}, ['gpus', 'sometimes']),
]


@pytest.mark.parametrize('case', CASES, ids=[c[0] for c in CASES])
def test_bad_input(case, tmp_path, monkeypatch):
    _id, args, fragments = case
    (tmp_path / 'afile').write_text('x')
    args = dict((k, v.replace('{tmp}', str(tmp_path)) if isinstance(v, str) else v) for k, v in args.items())
    fragments = [f.replace('{tmp}', str(tmp_path)) for f in fragments]
    commands = forbid_commands(monkeypatch)
    opened = []
    monkeypatch.setattr(node_preflight.nvml, 'session', opened.append)
    monkeypatch.setattr(node_preflight, 'read_nvml', opened.append)
    before = snapshot(tmp_path)
    bad_input(node_preflight.main, args, *fragments)
    assert commands == [] and opened == []
    assert snapshot(tmp_path) == before
