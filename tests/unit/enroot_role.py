# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot and pyxis roles' configuration files rendered as a play renders them (the role's defaults and vars, the
collection's filters), for tests that read them back or hand them to the real enroot.

The rendering runs in a process of its own (``python enroot_role.py COLLECTIONS_PATH ROLE TEMPLATE OVERRIDES_JSON``): it
installs Ansible's collection loader, which the unit-test process must not get.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.realpath(__file__)), '..', '..'))


def render(role, template, **overrides):
    """(roles/ROLE/templates/TEMPLATE as the role writes it, _enroot_registry_ca_text for the enroot role else None)."""
    argv = [sys.executable, os.path.realpath(__file__), os.path.join(ROOT, '.build', 'collections'), role, template, json.dumps(overrides)]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise AssertionError('rendering %s failed: %s' % (template, proc.stderr.strip().splitlines()[-1:]))
    found = json.loads(proc.stdout)
    return found['text'], found['ca']


def enroot_conf(**overrides):
    """(templates/enroot.conf.j2 as the enroot role writes it, the CA file's content _enroot_registry_ca_text)."""
    return render('enroot', 'enroot.conf.j2', **overrides)


def trusted(value):
    """``value`` with every string in it marked as a trusted template (what a role's own files are to Ansible)."""
    from ansible.template import trust_as_template  # (after the caller set Ansible up: ansible-core 2.19)
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value


def _render(collections, role, template, overrides):
    import yaml
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=[collections])._install()
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    top = os.path.join(ROOT, 'roles', role)
    variables = {'ansible_managed': 'Ansible managed'}
    for name in ('defaults/main.yml', 'vars/main.yml'):
        if os.path.exists(os.path.join(top, name)):
            with open(os.path.join(top, name)) as handle:
                variables.update(yaml.safe_load(handle) or {})
    variables.update(overrides)
    templar = Templar(loader=DataLoader(), variables=trusted(variables))
    with open(os.path.join(top, 'templates', template)) as handle:
        text = templar.template(trust_as_template(handle.read()))
    ca = templar.template(trust_as_template('{{ _enroot_registry_ca_text }}')) if role == 'enroot' else None
    return {'text': text, 'ca': ca}


if __name__ == '__main__':
    print(json.dumps(_render(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
