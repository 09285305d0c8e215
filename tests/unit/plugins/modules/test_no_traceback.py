# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module, run as Ansible runs it, over malformed argument sets: never a Python traceback.

For each module the argument sets are made from its DOCUMENTATION: a base of
harmless valid arguments, then one set per option with a value of a wrong
shape for its type (a dict for a string, text for a number, a negative
number, a string for a list or dict, a list of non-dicts, unknown sub-keys),
and one set with an unknown option. Each set runs in its own process
(traceback_runner.py); the test fails on any ``Traceback`` in its output, on
output that is not one JSON result, and on a run that succeeded although
``failed`` was expected of a wrong type. No real tool runs: PATH names no
directory, the NVML simulator has no node, every path is in a temporary
directory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, 'plugins', 'modules', '*.py')))
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'traceback_runner.py')

# Wrong shapes for each option type (the first ones Ansible itself rejects, the later ones reach the module).
WRONG = {
    'str': [{'not': 'a string'}],
    'path': [{'not': 'a path'}, '/proc/1/no/such/dir/x'],
    'int': ['twelve', -5, 10 ** 30],
    'float': ['fast', -1.5],
    'bool': ['maybe'],
    'list': [{'not': 'a list'}, [None], [['nested']], [{'unknown_key_zz': 1}]],
    'dict': ['notadict', ['a', 'list'], {'unknown_key_zz': {'deep': [1]}}],
    'raw': [],
}


def _documentation(name):
    with open(os.path.join(ROOT, 'plugins', 'modules', name + '.py')) as handle:
        source = handle.read()
    match = re.search(r"DOCUMENTATION = r?'''(.*?)'''", source, re.S) or re.search(r'DOCUMENTATION = r?"""(.*?)"""', source, re.S)
    return yaml.safe_load(match.group(1))


def _base(name, tmp):
    """Valid, harmless arguments: the required options, paths in tmp, tools that do not exist."""
    return {
        'enroot_import': {'uri': 'docker://ubuntu:22.04', 'dest': os.path.join(tmp, 'img.sqsh'), 'executable': '/nonexistent/enroot'},
        'node_check': {'gres_conf_path': os.path.join(tmp, 'gres.conf'), 'enroot_conf_path': os.path.join(tmp, 'enroot.conf'),
                       'munge_key_path': os.path.join(tmp, 'munge', 'munge.key')},
        'nvidia_mig': {'gpus': [{'gpu': 'all', 'mig': False}]},
        'gpu_baseline': {'ib_sysfs_root': os.path.join(tmp, 'ib'), 'module_root': os.path.join(tmp, 'module'),
                         'driver_proc': os.path.join(tmp, 'version')},
        'preflight': {'roles': [{'name': 'munge', 'groups': ['slurm_controller']}]},
        'install_files': {'files': [{'dest': os.path.join(tmp, 'gone'), 'state': 'absent'}]},
        'slurm_assoc': {'cluster': 'probe', 'executable': '/nonexistent/sacctmgr'},
        'slurm_daemons': {'daemons': ['slurmd']},
        'slurmdbd_convert': {'executable': '/nonexistent/slurmdbd', 'user': 'root'},
        'slurm_gres_facts': {'mig_minors_path': os.path.join(tmp, 'mig-minors'), 'device_root': tmp},
        'validation_jobs': {'jobs': [], 'srun': '/nonexistent/srun'},
        'validation_report': {'records': [], 'dest': os.path.join(tmp, 'report')},
        'validation_resume': {'names': []},
        'health_deep': {'names': [], 'program': '/nonexistent/gpucluster-healthcheck'},
        'slurm_topology': {'nodes': ['gpu-01'], 'dest': os.path.join(tmp, 'topology.conf')},
    }.get(name, {})


def cases(name, tmp):
    """[(label, kind, args)]: kind is 'unknown', 'type' (Ansible must refuse it) or 'shape' (the module judges it)."""
    base = _base(name, tmp)
    sets = [('unknown option', 'unknown', dict(base, bogus_option_zz=1))]
    for option, spec in sorted((_documentation(name).get('options') or {}).items()):
        for position, value in enumerate(WRONG.get(spec.get('type', 'str'), [])):
            # Ansible turns anything into text for str/path options (with a warning): only the module can judge those
            refused = position == 0 and spec.get('type', 'str') not in ('str', 'path')
            sets.append(('%s=%r' % (option, value), 'type' if refused else 'shape', dict(base, **{option: value})))
    return sets


def test_every_module_is_covered():
    assert MODULES and all(_base(name, '/tmp') for name in MODULES if name != 'node_check'), MODULES


@pytest.mark.parametrize('name', MODULES)
def test_malformed_arguments_never_give_a_traceback(name, tmp_path):
    work = str(tmp_path / 'work')
    os.makedirs(work)
    labelled = cases(name, work)
    assert len(labelled) >= 4, labelled
    cases_file = tmp_path / 'cases.json'
    cases_file.write_text(json.dumps([args for _label, _kind, args in labelled]))
    outdir = tmp_path / 'out'
    outdir.mkdir()
    env = {'PATH': '/nonexistent', 'LANG': 'C.UTF-8', 'HOME': str(tmp_path),
           'PYTHONPATH': os.pathsep.join([os.path.join(ROOT, '.build', 'collections'), os.environ['GPUCLUSTER_TEST_PYNVML_DIR']]),
           'NVMLSIM_STATE': str(tmp_path / 'no-node' / 'state.json'), 'NVMLSIM_ROOT': str(tmp_path / 'no-node')}
    run = subprocess.run([sys.executable, RUNNER, name, str(cases_file), str(outdir)], env=env, cwd=str(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout
    problems = []
    for index, (label, kind, _args) in enumerate(labelled):
        out = (outdir / ('%d.out' % index)).read_text()
        err = (outdir / ('%d.err' % index)).read_text()
        if 'Traceback' in out + err:
            problems.append('%s: traceback\n%s%s' % (label, out, err))
            continue
        try:
            result = json.loads(out)
        except ValueError:
            problems.append('%s: output is not one JSON result: %r %r' % (label, out[-500:], err[-500:]))
            continue
        if kind in ('type', 'unknown') and not result.get('failed'):
            problems.append('%s: a value of the wrong type was accepted: %r' % (label, result))
        if kind == 'unknown' and 'bogus_option_zz' not in result.get('msg', ''):
            problems.append('%s: the unknown option is not named: %r' % (label, result))
    assert not problems, '\n'.join(problems)
