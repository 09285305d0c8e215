# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way node programs get the collection's module_utils: _node_library (the node_library filter)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucluster.bringup.plugins.filter.node_library import node_library
from ansible_collections.gpucluster.bringup.plugins.module_utils import _node_library as lib
from ansible_collections.gpucluster.bringup.tests.unit.nodelib import MODULE_UTILS, ROOT, install_library

TREE = 'ansible_collections/gpucluster/bringup/plugins/module_utils'


@pytest.mark.parametrize('names, files', [
    (['mig/_mig_nvml.py'], ['_nvml.py', '_validate_input.py', 'catalogue/_gpus.py', 'mig/_mig_nvml.py', 'mig/_mig_plan.py']),
    (['slurm/_slurm_hooks.py'], ['_validate_input.py', 'slurm/_drain_tag.py', 'slurm/_slurm_hooks.py']),
    (['_nvml.py'], ['_nvml.py']),
    (['slurm/_healthcheck.py'],
     ['_gpu_baseline.py', '_validate_input.py', 'catalogue/_gpus.py', 'mig/_mig_minors.py', 'slurm/_drain_tag.py', 'slurm/_healthcheck.py',
      'slurm/_healthcheck_fleet.py', 'slurm/_munge_key.py', 'slurm/_nodes.py']),
    (['mig/_mig_nvml.py', '_nvml.py'], ['_nvml.py', '_validate_input.py', 'catalogue/_gpus.py', 'mig/_mig_nvml.py', 'mig/_mig_plan.py']),
])
def test_closure_follows_the_imports(names, files):
    assert lib.closure(MODULE_UTILS, names) == files


@pytest.mark.parametrize('source, found', [
    ('from ansible_collections.gpucluster.bringup.plugins.module_utils.mig._mig_plan import (\n    a, b)\n', {'mig/_mig_plan.py'}),
    ('from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _gres, _healthcheck as hc  # noqa\n',
     {'slurm/_gres.py', 'slurm/_healthcheck.py'}),
    ('from ansible_collections.gpucluster.bringup.plugins.module_utils import _nvml as nvml\nimport os\n', {'_nvml.py'}),
    ('from ansible_collections.gpucluster.bringup.plugins.module_utils import (\n    _nvml,\n    _file_set,\n)\n',
     {'_nvml.py', '_file_set.py'}),
    ('import os\nfrom ansible.module_utils.basic import AnsibleModule\n', set()),
])
def test_imports(tmp_path, source, found):
    (tmp_path / 'probe.py').write_text(source)
    for rel in ('mig/_mig_plan.py', 'slurm/_gres.py', 'slurm/_healthcheck.py', '_nvml.py', '_file_set.py'):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('')
    assert lib.imports(str(tmp_path), 'probe.py') == found


@pytest.mark.parametrize('name', ['mig/_nothing.py', '/etc/passwd', '../module_utils/_nvml.py', 'mig', 'mig/_mig_plan', 7])
def test_closure_of_a_bad_name(name):
    with pytest.raises(ValueError, match=r'is not a module_utils file of the collection \(such as "mig/_mig_nvml.py"\)'):
        lib.closure(MODULE_UTILS, [name])


def test_entries():
    result = lib.entries('/opt/x/', MODULE_UTILS, ['mig/_mig_plan.py'])
    assert result == [
        {'dest': '/opt/x', 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/ansible_collections', 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/ansible_collections/gpucluster', 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/ansible_collections/gpucluster/bringup', 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/ansible_collections/gpucluster/bringup/plugins', 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/' + TREE, 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/%s/catalogue' % TREE, 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/%s/mig' % TREE, 'state': 'directory', 'mode': '0755'},
        {'dest': '/opt/x/%s/catalogue/_gpus.py' % TREE, 'src': os.path.join(MODULE_UTILS, 'catalogue/_gpus.py'), 'mode': '0644'},
        {'dest': '/opt/x/%s/mig/_mig_plan.py' % TREE, 'src': os.path.join(MODULE_UTILS, 'mig/_mig_plan.py'), 'mode': '0644'},
    ]


@pytest.mark.parametrize('names, lib_dir, message', [
    ([], '/x', r"node_library: \[\] is not a non-empty list of module_utils files"),
    ('mig/_mig_nvml.py', '/x', r"node_library: 'mig/_mig_nvml.py' is not a non-empty list"),
    (['mig/_mig_nvml.py'], 'x', r"node_library: the library directory 'x' is not an absolute path"),
    (['mig/_nope.py'], '/x', r"node_library: 'mig/_nope.py' is not a module_utils file of the collection"),
])
def test_filter_errors(names, lib_dir, message):
    with pytest.raises(AnsibleFilterError, match=message):
        node_library(names, lib_dir)


def _role_var(role, name):
    with open(os.path.join(ROOT, 'roles', role, 'vars', 'main.yml')) as handle:
        return yaml.safe_load(handle)[name]


def _listed(expression, lib_var):
    match = re.match(r"^\{\{ (\[.*\]) \| gpucluster\.bringup\.node_library\(%s\) \}\}$" % re.escape(lib_var), expression.strip())
    assert match, expression
    return ast.literal_eval(match.group(1))


# Each node program, the module_utils files its role hands to node_library, and how it runs there.
PROGRAMS = [
    ('roles/mig/files/gpucluster_mig_boot.py', lambda: _listed(_role_var('mig', '_mig_boot_library'), '_mig_boot_lib_dir'),
     'GPUCLUSTER_MIG_LIB', 'from_env'),
    ('roles/slurm_healthcheck/files/gpucluster_healthcheck.py', lambda: _role_var('slurm_healthcheck', '_slurm_healthcheck_module_utils'),
     'GPUCLUSTER_HEALTHCHECK_LIB', 'from_env'),
    ('roles/slurm/files/hook_runner.py', lambda: _listed(_role_var('slurm', '_slurm_hook_library'), "_slurm_hooks.dir ~ '/lib'"),
     None, 'next_to'),
    ('roles/slurm/files/task_prolog.py', lambda: _listed(_role_var('slurm', '_slurm_hook_library'), "_slurm_hooks.dir ~ '/lib'"),
     None, 'next_to'),
]


@pytest.mark.parametrize('program, names, lib_env, where', PROGRAMS, ids=[p[0].rsplit('/', 1)[1] for p in PROGRAMS])
def test_every_node_program_imports_from_what_its_role_installs(tmp_path, program, names, lib_env, where):
    """Each program, installed with exactly its role's node library, loads all its imports in an isolated Python without Ansible."""
    directory = tmp_path / 'programs'
    directory.mkdir()
    lib_dir = tmp_path / 'lib' if where == 'from_env' else directory / 'lib'
    install_library(lib_dir, names())
    with open(os.path.join(ROOT, program)) as source:
        (directory / 'program.py').write_text(source.read())
    env = dict(os.environ)
    if lib_env:
        env[lib_env] = str(lib_dir)
    # -I: no PYTHONPATH, no user site, not the script's directory; -S: no site-packages (no Ansible, no bindings)
    # the program's own imports, then every installed module (some are loaded only when needed)
    modules = ['ansible_collections.gpucluster.bringup.plugins.module_utils.' + rel[:-3].replace('/', '.')
               for rel in lib.closure(MODULE_UTILS, names())]
    code = ('import importlib, runpy, sys; sys.argv = [sys.argv[0], "--help"]\n'
            'try:\n    runpy.run_path(%r, run_name="not_main")\nexcept SystemExit:\n    pass\n'
            'for name in %r:\n    importlib.import_module(name)\nprint("imported")\n'
            % (str(directory / 'program.py'), modules))
    done = subprocess.run([sys.executable, '-I', '-S', '-c', code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == 'imported', done.stderr
    again = subprocess.run([sys.executable, '-I', '-S', '-c', code], env=dict(env, **({lib_env: str(tmp_path / 'none')} if lib_env else {})),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if lib_env:  # without the library the program cannot load (the test can fail)
        assert again.returncode != 0 and 'ansible_collections' in again.stderr, again.stderr


@pytest.mark.parametrize('name', ['mig/_nothing.py', 7, None])
def test_closure_of_a_bad_name_says_so_in_full(name):
    with pytest.raises(ValueError) as err:
        lib.closure(MODULE_UTILS, ['_nvml.py', name])
    assert str(err.value) == '%r is not a module_utils file of the collection (such as "mig/_mig_nvml.py")' % (name,)


def test_closure_takes_a_name_given_twice_once_and_goes_on():
    assert lib.closure(MODULE_UTILS, ['mig/_mig_plan.py', '_nvml.py', '_nvml.py']) == ['_nvml.py', 'catalogue/_gpus.py', 'mig/_mig_plan.py']
    assert lib.closure(MODULE_UTILS, []) == []


def test_imports_reads_every_import_line(tmp_path):
    package = 'ansible_collections.gpucluster.bringup.plugins.module_utils'
    (tmp_path / 'probe.py').write_text('from %s.mig._mig_plan import a\nfrom %s import _nvml, slurm\nfrom %s.slurm import _gres as g, ,\n'
                                       % (package, package, package))
    for rel in ('mig/_mig_plan.py', 'slurm/_gres.py', '_nvml.py'):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('')
    assert lib.imports(str(tmp_path), 'probe.py') == {'mig/_mig_plan.py', '_nvml.py', 'slurm/_gres.py'}


def test_entries_with_a_mode_of_their_own():
    result = lib.entries('/opt/x', MODULE_UTILS, ['_nvml.py'], mode='0600')
    assert result[-1] == {'dest': '/opt/x/%s/_nvml.py' % TREE, 'src': os.path.join(MODULE_UTILS, '_nvml.py'), 'mode': '0600'}
    assert [entry['dest'] for entry in result[:-1]] == ['/opt/x', '/opt/x/ansible_collections', '/opt/x/ansible_collections/gpucluster',
                                                        '/opt/x/ansible_collections/gpucluster/bringup',
                                                        '/opt/x/ansible_collections/gpucluster/bringup/plugins', '/opt/x/' + TREE]
