# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pyxis build record holds the Slurm version as Slurm prints it (roles/pyxis/tasks/build.yml).

The role's own "Decide whether to build" task is read from build.yml and its expressions are
rendered with Ansible's templar against slurm_version.h texts as Slurm ships them
(SLURM_VERSION_NUMBER 0xMMmmuu and SLURM_VERSION_STRING "MM.mm.u", e.g. 0x160508 and
"22.05.8", the version `srun --version` prints as "slurm 22.05.8").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpucluster.bringup.tests.unit.roles.enroot.test_enroot_role_files import trusted

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def task(path, name):
    with open(os.path.join(ROOT, path)) as handle:
        tasks = yaml.safe_load(handle)
    found = [entry for entry in tasks if entry.get('name') == name]
    assert len(found) == 1, 'no task %r in %s' % (name, path)
    return found[0]


def header(number, string=None):
    text = '#ifndef _SLURM_VERSION_H\n#define SLURM_VERSION_NUMBER %s\n' % number
    if string is not None:
        text += '#define SLURM_VERSION_STRING "%s"\n' % string
    return text + '#endif\n'


def decide(header_text, record=None):
    """Render the task's set_fact: (__pyxis_wanted, __pyxis_built)."""
    entry = task('roles/pyxis/tasks/build.yml', 'Decide whether to build')
    variables = {
        'pyxis_version': '0.24.0', 'pyxis_source_local': '', 'pyxis_source_url': 'https://example/pyxis.tar.gz',
        '_pyxis_plugin': '/usr/local/lib/slurm/spank_pyxis.so',
        '__pyxis_slurm_version_h': {'content': base64.b64encode(header_text.encode()).decode()} if header_text is not None else {},
        '__pyxis_stamp_stat': {'stat': {'exists': record is not None}},
        '__pyxis_stamp': {'content': base64.b64encode(json.dumps(record).encode()).decode()} if record is not None else {},
    }
    variables.update(trusted(entry['vars']))
    templar = Templar(loader=DataLoader(), variables=variables)
    facts = trusted(entry['ansible.builtin.set_fact'])
    return templar.template(facts['__pyxis_wanted']), templar.template(facts['__pyxis_built'])


@pytest.mark.parametrize('text, version', [
    (header('0x160508', '22.05.8'), '22.05.8'),
    (header('0x170b06', '23.11.6'), '23.11.6'),
    (header('0x180500', '24.05.0'), '24.05.0'),
    (header('0x170b00', '23.11.0-0rc1'), '23.11.0-0rc1'),
    # Headers without the string: formatted from the number as Slurm formats it (two-digit minor).
    (header('0x160508'), '22.05.8'),
    (header('0x150812'), '21.08.18'),
    (None, '0.00.0'),
])
def test_slurm_version_as_slurm_prints_it(text, version):
    wanted, built = decide(text)
    assert wanted['slurm_version'] == version
    assert wanted['pyxis_version'] == '0.24.0'
    assert built == {}


WANTED = {'pyxis_version': '0.24.0', 'slurm_version': '22.05.8', 'source': 'https://example/pyxis.tar.gz',
          'plugin': '/usr/local/lib/slurm/spank_pyxis.so'}


@pytest.mark.parametrize('recorded, same_build', [
    ('22.05.8', True),
    # Written by the role before: the same Slurm, read as the same build (no rebuild, the record is rewritten).
    ('22.5.8', True),
    ('22.5.9', False),
    ('23.02.8', False),
])
def test_old_records_are_the_same_build(recorded, same_build):
    wanted, built = decide(header('0x160508', '22.05.8'), dict(WANTED, slurm_version=recorded))
    assert wanted == WANTED
    assert (built == wanted) is same_build


def test_the_record_is_written_whether_or_not_pyxis_was_built():
    """The record task is outside the build block, so an old-format record is rewritten without a rebuild."""
    with open(os.path.join(ROOT, 'roles/pyxis/tasks/build.yml')) as handle:
        tasks = yaml.safe_load(handle)
    top = [entry['name'] for entry in tasks]
    assert 'Record what pyxis was built against' in top
    record = task('roles/pyxis/tasks/build.yml', 'Record what pyxis was built against')
    assert 'when' not in record
    entries = record['gpucluster.bringup.install_files']['files']
    assert entries[-1] == {'dest': '{{ _pyxis_stamp_path }}', 'content': '{{ __pyxis_wanted | to_nice_json }}\n', 'mode': '0644'}
