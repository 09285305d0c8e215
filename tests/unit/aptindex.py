# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A STAND-IN apt index for tests that run the real ansible.builtin.apt on this machine without touching its apt.

The index carries Debian's package names, versions and relations, no package files: enough for apt's dry runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import subprocess


def _entry(name, version, depends=None):
    lines = ['Package: %s' % name, 'Version: %s' % version, 'Architecture: all']
    if depends:
        lines.append('Depends: %s' % depends)
    lines += ['Filename: ./%s_%s_all.deb' % (name, version), 'Size: 1',
              'Description: STAND-IN index entry (no package file; Debian\'s name, version and relations)']
    return '\n'.join(lines) + '\n'


def apt_config(base, entries):
    """An apt configuration (APT_CONFIG) whose only source is a local index of ``entries`` ``(name, version, depends)``,
    with an empty dpkg status; its lists are fetched. Returns the configuration file."""
    repo, lists = base / 'repo', base / 'lists'
    for path in (repo, lists / 'partial', base / 'cache' / 'archives' / 'partial', base / 'none'):
        path.mkdir(parents=True, exist_ok=True)
    (base / 'status').write_text('')
    packages = '\n'.join(_entry(*entry) for entry in entries)
    (repo / 'Packages').write_text(packages)
    digest = hashlib.sha256(packages.encode()).hexdigest()
    (repo / 'Release').write_text('Origin: gpucluster-test\nLabel: stand-in\nArchitectures: all amd64 arm64\n'
                                  'Date: Thu, 01 Jan 2026 00:00:00 UTC\nSHA256:\n %s %d Packages\n' % (digest, len(packages.encode())))
    (base / 'sources.list').write_text('deb [trusted=yes] file:%s ./\n' % repo)
    conf = base / 'apt.conf'
    conf.write_text('\n'.join('%s "%s";' % pair for pair in [
        ('Dir::Etc::SourceList', base / 'sources.list'), ('Dir::Etc::SourceParts', base / 'none'),
        ('Dir::Etc::Preferences', base / 'none' / 'preferences'), ('Dir::Etc::PreferencesParts', base / 'none'),
        ('Dir::State::Lists', lists), ('Dir::State::status', base / 'status'), ('Dir::Cache', base / 'cache'),
        ('APT::Sandbox::User', 'root')]) + '\n')
    env = dict(os.environ, APT_CONFIG=str(conf), LC_ALL='C')
    done = subprocess.run(['apt-get', 'update'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout
    return conf
