# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module, run as Ansible runs it, over malformed argument sets: never a Python traceback.

For each module (every file of ``plugins/modules/``) the argument sets are
made from its DOCUMENTATION: a base of harmless valid arguments, then one set
per option and bad value: a wrong shape for its type (a dict for a string,
text for a number, a string for a list or dict, a list of non-dicts, unknown
sub-keys) and odd values of the right type (empty, blank, a leading ``-``, a
NUL byte, a huge or negative number, a directory or a kernel file where a
path goes, an empty or odd list), and one set with an unknown option.

Two passes:

- each set runs ``main()`` in its own forked process (traceback_runner.py):
  fails on any ``Traceback`` in its output, on output that is not one JSON
  result, and on a run that succeeded although ``failed`` was expected of a
  wrong type;
- through the real ``ansible-playbook`` (local connection): every set of the
  modules that have an action plugin (it runs on the controller first), and
  for the others the unknown option and, per option, one odd
  value of its type (SAMPLE) (a full pass costs minutes of CPU: the forked
  pass covers them all), where ansible-core 2.19
  shows an exception that escaped a module only as ``Module failed: <text>``
  with no traceback and no ``exception`` text: such a result, a result that
  is not JSON (``MODULE FAILURE``, ``module_stderr``) or a missing result
  fails the test.

No real tool runs: PATH names no directory, the NVML simulator has no node,
every path written is in a temporary directory.
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

# Wrong shapes for each option type (the first ones Ansible itself rejects, the later ones reach the module),
# then odd values of the right type that only the module can judge. No value names a real file a module could
# write (no /dev/null, nothing under /sys): a module that wrongly accepts one must not harm the test machine.
WRONG = {
    'str': [{'not': 'a string'}, '', '   ', '-Hroot@evil', 'a\x00b', 'x' * 5000],
    'path': [{'not': 'a path'}, '/proc/1/no/such/dir/x', '', 'relative/path', '-x', '/proc', '/proc/cpuinfo', '@TMPDIR@',
             'a\x00b'],
    'int': ['twelve', -5, 10 ** 30, 0, -(10 ** 20)],
    'float': ['fast', -1.5, 0.0, 1e308],
    'bool': ['maybe', 2],
    'list': [{'not': 'a list'}, [None], [['nested']], [{'unknown_key_zz': 1}], [], [''], ['-x'], ['a b'], [{}]],
    'dict': ['notadict', ['a', 'list'], {'unknown_key_zz': {'deep': [1]}}, {}, {'': ''}],
    'raw': [None, {'a': [1, {'b': None}]}],
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
        'node_preflight': {'packages': ['slurmd'], 'gpus': False, 'os_release': os.path.join(tmp, 'os-release')},
        'install_files': {'files': [{'dest': os.path.join(tmp, 'gone'), 'state': 'absent'}]},
        'slurm_assoc': {'cluster': 'probe', 'executable': '/nonexistent/sacctmgr'},
        'slurm_daemons': {'daemons': ['slurmd']},
        'slurmdbd_convert': {'executable': '/nonexistent/slurmdbd', 'user': 'root'},
        'slurm_gres_facts': {'mig_minors_path': os.path.join(tmp, 'mig-minors'), 'device_root': tmp},
        'validation_jobs': {'jobs': [], 'srun': '/nonexistent/srun'},
        'validation_report': {'records': [], 'dest': os.path.join(tmp, 'report')},
        'validation_resume': {'names': []},
        'validation_munge': {'node': 'ctl', 'unmunge': '/nonexistent/unmunge'},
        'health_deep': {'names': [], 'program': '/nonexistent/gpucluster-healthcheck'},
        'slurm_topology': {'nodes': ['gpu-01'], 'dest': os.path.join(tmp, 'topology.conf')},
        'slurm_node': {'action': 'query', 'node': 'gpu-01'},
    }.get(name, {})


def _value(value, tmp):
    """A WRONG value with ``@TMPDIR@`` (an existing directory where a path goes) made real."""
    return tmp if value == '@TMPDIR@' else value


def cases(name, tmp):
    """[(label, kind, args)]: kind is 'unknown', 'type' (Ansible must refuse it) or 'shape' (the module judges it)."""
    base = _base(name, tmp)
    sets = [('unknown option', 'unknown', dict(base, bogus_option_zz=1))]
    for option, spec in sorted((_documentation(name).get('options') or {}).items()):
        for position, value in enumerate(WRONG.get(spec.get('type', 'str'), [])):
            # Ansible turns anything into text for str/path options (with a warning): only the module can judge those
            refused = position == 0 and spec.get('type', 'str') not in ('str', 'path', 'raw')
            sets.append(('%s=%r' % (option, value if len(repr(value)) < 60 else repr(value)[:57] + '...'),
                         'type' if refused else 'shape', dict(base, **{option: _value(value, tmp)})))
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


ACTIONS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, 'plugins', 'action', '*.py')) if '__' not in p)


# The value per option type of the sampled ansible-playbook pass: the odd values most likely to reach an unguarded call.
SAMPLE = {'str': '-Hroot@evil', 'path': '@TMPDIR@', 'int': 0, 'float': 0.0, 'bool': 2, 'list': [''], 'dict': {}, 'raw': None}


def ansible_cases(name, tmp):
    """The sets of the ansible-playbook pass: all of a module with an action plugin, else a sample (one value per type)."""
    every = cases(name, tmp)
    if name in ACTIONS:
        return every
    options = _documentation(name).get('options') or {}
    chosen = [every[0]]
    for label, kind, args in every[1:]:
        option = label.split('=', 1)[0]
        sample = SAMPLE.get(options.get(option, {}).get('type', 'str'))
        if args.get(option) == _value(sample, tmp):
            chosen.append((label, kind, args))
    return chosen


def _ansible_problem(label, kind, result):
    """What is wrong with one task result of the ansible-playbook pass, or None."""
    if not isinstance(result, dict):
        return '%s: no result' % label
    text = json.dumps(result)
    msg = str(result.get('msg', ''))
    # ansible-core 2.19: an exception that escaped main() is 'Task failed: Module failed: <text>', no traceback shown
    for sign in ('Module failed:', 'Traceback', 'MODULE FAILURE', 'module_stderr', 'Module result deserialization failed',
                 'Unexpected failure during module execution', 'Action failed:'):
        if sign in text:
            return '%s: %s\n%s' % (label, sign, text[-1500:])
    if kind in ('type', 'unknown') and not result.get('failed'):
        return '%s: a value of the wrong type was accepted: %s' % (label, text[-500:])
    if kind == 'unknown' and 'bogus_option_zz' not in msg:
        return '%s: the unknown option is not named: %s' % (label, msg)
    return None


@pytest.mark.parametrize('name', MODULES)
def test_malformed_arguments_through_ansible_playbook(name, tmp_path):
    """The same sets through the real ansible-playbook (action plugins included): no 'Module failed:' of 2.19."""
    work = str(tmp_path / 'work')
    os.makedirs(work)
    labelled = ansible_cases(name, work)
    env_module = {'PATH': '/nonexistent', 'LANG': 'C.UTF-8', 'HOME': str(tmp_path),
                  'PYTHONPATH': os.environ['GPUCLUSTER_TEST_PYNVML_DIR'],
                  'NVMLSIM_STATE': str(tmp_path / 'no-node' / 'state.json'), 'NVMLSIM_ROOT': str(tmp_path / 'no-node')}
    tasks = [{'name': 'case %d' % index, 'gpucluster.bringup.%s' % name: args, 'ignore_errors': True}
             for index, (_label, _kind, args) in enumerate(labelled)]
    play = [{'hosts': 'localhost', 'gather_facts': False, 'environment': env_module, 'tasks': tasks}]
    playbook = tmp_path / 'play.json'
    playbook.write_text(json.dumps(play))
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_')}
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_DEPRECATION_WARNINGS='0',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'ansible-local'), ANSIBLE_REMOTE_TEMP=str(tmp_path / 'ansible-remote'))
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                          str(playbook)], env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=900, check=False)
    try:
        report = json.loads(run.stdout)
        results = [task['hosts'].get('localhost') for task in report['plays'][0]['tasks']]
    except (ValueError, KeyError, IndexError, TypeError):
        raise AssertionError('ansible-playbook printed no JSON report (rc %d):\n%s\n%s' % (run.returncode, run.stdout[-3000:], run.stderr[-3000:]))
    assert len(results) == len(labelled), (len(results), len(labelled), run.stderr[-3000:])
    problems = [p for p in (_ansible_problem(label, kind, result) for (label, kind, _args), result in zip(labelled, results)) if p]
    assert not problems, '\n'.join(problems)
