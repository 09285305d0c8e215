# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The STAND-INs the enroot and pyxis roles are tested with (tests/standins/).

* the stand-in .deb packages are built, named and described as stand-ins;
* the stand-in pyxis source archive builds a real SPANK plugin against the installed
  Slurm's spank.h, and the real Slurm 22.05 srun/sbatch of this machine load it only
  through plugstack.conf, list its options, and refuse an unknown plugstack option the
  way pyxis does (sbatch fails, srun only registers options).

Needs the Debian packages slurm-client, libslurm-dev, gcc, make and dpkg-dev tools;
a missing one fails the tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import tarfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
STANDINS = os.path.join(ROOT, 'tests', 'standins')
REQUIRED = {'srun': 'slurm-client', 'sbatch': 'slurm-client', 'gcc': 'gcc', 'make': 'make', 'dpkg-deb': 'dpkg'}


def _require():
    missing = sorted(set(pkg for cmd, pkg in REQUIRED.items() if shutil.which(cmd) is None))
    if not os.path.exists('/usr/include/slurm/spank.h'):
        missing.append('libslurm-dev')
    if missing:
        pytest.fail('these tests need the Debian packages %s (apt-get install -y %s)' % (', '.join(missing), ' '.join(missing)))


def test_standin_debs(tmp_path):
    _require()
    out = str(tmp_path / 'debs')
    subprocess.run(['bash', os.path.join(STANDINS, 'build-standin-debs.sh'), out], check=True, stdout=subprocess.PIPE)
    arch = subprocess.run(['dpkg', '--print-architecture'], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    for package in ('enroot', 'enroot+caps'):
        deb = os.path.join(out, '%s_0.0.0~standin-1_%s.deb' % (package, arch))
        fields = subprocess.run(['dpkg-deb', '-f', deb, 'Package', 'Version', 'Description'], stdout=subprocess.PIPE,
                                universal_newlines=True, check=True).stdout
        assert 'Package: %s\n' % package in fields
        assert 'Version: 0.0.0~standin-1\n' in fields
        assert 'STAND-IN' in fields and 'NOT enroot' in fields
    listing = subprocess.run(['dpkg-deb', '-c', os.path.join(out, 'enroot_0.0.0~standin-1_%s.deb' % arch)], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
    for path in ('./usr/bin/enroot', './etc/enroot/enroot.conf', './etc/enroot/hooks.d/',
                 './usr/share/enroot/hooks.d/50-slurm-pmi.sh', './usr/share/enroot/hooks.d/50-slurm-pytorch.sh'):
        assert path in listing


@pytest.mark.parametrize('argv, rc, first_line', [
    (['version'], 0, '0.0.0~standin'),
    (['no-such-command'], 0, 'Usage: enroot COMMAND [ARG...]'),
    (['digest'], 0, 'Usage: enroot COMMAND [ARG...]'),
])
def test_standin_enroot_cli(tmp_path, argv, rc, first_line):
    env = dict(os.environ, HOME=str(tmp_path), ENROOT_SYSCONF_PATH=str(tmp_path))
    proc = subprocess.run([os.path.join(STANDINS, 'enroot-standin', 'enroot')] + argv, stdout=subprocess.PIPE,
                          universal_newlines=True, env=env, check=False)
    assert proc.returncode == rc
    assert proc.stdout.splitlines()[0] == first_line


@pytest.fixture(scope='module')
def plugin(tmp_path_factory):
    """The stand-in plugin built from its source archive, as the pyxis role builds pyxis."""
    _require()
    work = tmp_path_factory.mktemp('pyxis')
    archive = subprocess.run(['bash', os.path.join(STANDINS, 'build-standin-pyxis-archive.sh'), str(work)], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert sorted(names) == ['pyxis-0.0.0-standin', 'pyxis-0.0.0-standin/Makefile',
                                 'pyxis-0.0.0-standin/spank_pyxis_standin.c']
        tar.extractall(str(work))
    src = str(work / 'pyxis-0.0.0-standin')
    subprocess.run(['make', '-s', 'prefix=/usr/local'], cwd=src, check=True)
    subprocess.run(['make', '-s', 'install', 'prefix=/usr/local', 'DESTDIR=%s' % (work / 'root')], cwd=src, check=True)
    path = str(work / 'root' / 'usr' / 'local' / 'lib' / 'slurm' / 'spank_pyxis.so')
    assert os.path.isfile(path)
    with open(str(work / 'root' / 'usr' / 'local' / 'share' / 'pyxis' / 'pyxis.conf')) as handle:
        assert handle.read() == 'required /usr/local/lib/slurm/spank_pyxis.so\n'
    return path


def _slurm(tmp_path, plugin, line, include=True):
    """srun --help and sbatch --help with a slurm.conf whose plugstack.conf includes a drop-in directory."""
    dropins = tmp_path / 'plugstack.conf.d'
    dropins.mkdir()
    if line is not None:
        (dropins / 'pyxis.conf').write_text(line.replace('PLUGIN', plugin) + '\n')
    plugstack = tmp_path / 'plugstack.conf'
    plugstack.write_text(('include %s/*.conf\n' % dropins) if include else '# nothing\n')
    conf = tmp_path / 'slurm.conf'
    conf.write_text('ClusterName=standin\nSlurmctldHost=localhost\nPlugStackConfig=%s\n' % plugstack)
    env = dict(os.environ, SLURM_CONF=str(conf))
    results = {}
    for cmd in ('srun', 'sbatch'):
        proc = subprocess.run([cmd, '--help'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                              check=False)
        results[cmd] = (proc.returncode, proc.stdout, proc.stderr)
    return results


def test_loaded_through_plugstack_lists_options(tmp_path, plugin):
    res = _slurm(tmp_path, plugin, 'required PLUGIN runtime_path=/run/pyxis execute_entrypoint=0 container_scope=global sbatch_support=1')
    for cmd in ('srun', 'sbatch'):
        rc, out, err = res[cmd]
        assert rc == 0, err
        assert '--container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH' in out
        assert '[pyxis STAND-IN]' in out
        for option in ('--container-mounts', '--container-name', '--no-container-mount-home', '--container-env'):
            assert option in out


@pytest.mark.parametrize('line, include', [(None, True), ('required PLUGIN', False)])
def test_not_loaded_without_plugstack(tmp_path, plugin, line, include):
    res = _slurm(tmp_path, plugin, line, include=include)
    assert res['srun'][0] == 0
    assert '--container-image' not in res['srun'][1]


@pytest.mark.parametrize('option, error', [
    ('remap_root=1', 'pyxis: unknown configuration option: remap_root=1'),
    ('container_scope=node', 'pyxis: container_scope: invalid value: node'),
    ('sbatch_support=maybe', 'pyxis: sbatch_support: invalid value: maybe'),
])
def test_bad_plugstack_option_fails_like_pyxis(tmp_path, plugin, option, error):
    res = _slurm(tmp_path, plugin, 'required PLUGIN ' + option)
    rc, _out, err = res['sbatch']
    assert rc != 0
    assert 'sbatch: error: %s' % error in err
    assert 'sbatch: error: spank: required plugin spank_pyxis.so: init() failed with rc=-1' in err
    # pyxis does not parse its configuration in srun's context: the options are still listed.
    assert '--container-image' in res['srun'][1]


def test_sbatch_support_off_hides_sbatch_options(tmp_path, plugin):
    res = _slurm(tmp_path, plugin, 'required PLUGIN sbatch_support=0 use_enroot_load=1 importer=/usr/bin/true use_squashfuse=0')
    assert res['sbatch'][0] == 0 and '--container-image' not in res['sbatch'][1]
    assert '--container-image' in res['srun'][1]


def _role_verify(tmp_path, conf):
    """Run the pyxis role's verify tasks on this machine against the slurm.conf ``conf``."""
    import json
    import sys
    play = [{'name': 'verify', 'hosts': 'localhost', 'gather_facts': False, 'environment': {'SLURM_CONF': str(conf)},
             'tasks': [{'name': 'pyxis verify', 'ansible.builtin.include_role': {'name': 'gpucluster.bringup.pyxis', 'tasks_from': 'verify'},
                        'vars': {'__pyxis_build_needed': False, 'pyxis_plugstack_conf': str(tmp_path / 'plugstack.conf')}}]}]
    (tmp_path / 'verify.yml').write_text(json.dumps(play))
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANSIBLE_')}
    env.update(ANSIBLE_NOCOLOR='1', ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                           '-e', 'ansible_python_interpreter=%s' % sys.executable, str(tmp_path / 'verify.yml')],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    report = json.loads(proc.stdout)
    msgs = [host.get('msg') for play in report['plays'] for task in play['tasks'] for host in task['hosts'].values() if host.get('failed')]
    return proc.returncode, msgs


def test_role_verify_passes_when_loaded(tmp_path, plugin):
    _slurm(tmp_path, plugin, 'required PLUGIN runtime_path=/run/pyxis container_scope=global sbatch_support=1')
    assert _role_verify(tmp_path, tmp_path / 'slurm.conf') == (0, [])


def test_role_verify_fails_when_not_loaded(tmp_path, plugin):
    _slurm(tmp_path, plugin, None)
    rc, msgs = _role_verify(tmp_path, tmp_path / 'slurm.conf')
    assert rc != 0
    assert msgs == ['srun --help on localhost does not list --container-image (rc 0), so Slurm did not load '
                    '/usr/local/lib/slurm/spank_pyxis.so through %s; srun said: nothing on stderr' % (tmp_path / 'plugstack.conf')]


def test_role_verify_fails_when_options_rejected(tmp_path, plugin):
    _slurm(tmp_path, plugin, 'required PLUGIN remap_root=1')
    rc, msgs = _role_verify(tmp_path, tmp_path / 'slurm.conf')
    assert rc != 0
    assert msgs == ["sbatch --help on localhost fails or does not list --container-image (rc 1); pyxis rejected its plugstack line "
                    "'runtime_path=/run/pyxis execute_entrypoint=0 container_scope=global sbatch_support=1'; sbatch said: "
                    "sbatch: error: pyxis: unknown configuration option: remap_root=1 sbatch: error: pyxis: failed to parse "
                    "configuration sbatch: error: spank: required plugin spank_pyxis.so: init() failed with rc=-1 "
                    "sbatch: error: Failed to initialize plugin stack"]
