# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA's real enroot packages and pyxis plugin, as the simulated cluster installs them (tests/unit/realenroot.py).

* the ``enroot`` and ``enroot+caps`` .deb packages scripts/lib/enroot-build.sh builds from the release source have
  the names, versions and files the enroot role expects (its release file names, the Slurm hooks it links);
* pyxis 0.24.0 from its release archive builds against this machine's Slurm headers with its own ``make``, and the
  real Slurm srun/sbatch of this machine load it only through plugstack.conf, list its options, and refuse an
  unknown or invalid plugstack option (sbatch fails, srun only registers options); the pyxis role's verify tasks
  pass and fail on it.

Needs the Debian packages slurm-client, libslurm-dev, gcc, make and dpkg; a missing one fails the tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import tarfile

import pytest

from ansible_collections.gpucluster.bringup.tests.unit import realenroot

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..'))
REQUIRED = {'srun': 'slurm-client', 'sbatch': 'slurm-client', 'gcc': 'gcc', 'make': 'make', 'dpkg-deb': 'dpkg'}


def _require():
    missing = sorted(set(pkg for cmd, pkg in REQUIRED.items() if shutil.which(cmd) is None))
    if not os.path.exists('/usr/include/slurm/spank.h'):
        missing.append('libslurm-dev')
    if missing:
        pytest.fail('these tests need the Debian packages %s (apt-get install -y %s)' % (', '.join(missing), ' '.join(missing)))


def _fields(deb):
    text = subprocess.run(['dpkg-deb', '-f', deb, 'Package', 'Version', 'Depends', 'Maintainer'], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout
    return dict(line.split(': ', 1) for line in text.splitlines())


def test_enroot_packages_are_the_release():
    _require()
    enroot = _fields(realenroot.deb('enroot'))
    caps = _fields(realenroot.deb('enroot+caps'))
    assert (enroot['Package'], enroot['Version']) == ('enroot', realenroot.ENROOT_VERSION + '-1')
    assert (caps['Package'], caps['Version']) == ('enroot+caps', realenroot.ENROOT_VERSION + '-1')
    assert enroot['Maintainer'] == 'NVIDIA CORPORATION <cudatools@nvidia.com>'
    assert caps['Depends'] == 'enroot (= %s-1), libcap2-bin' % realenroot.ENROOT_VERSION
    for dep in ('curl', 'jq (>= 1.5)', 'parallel', 'squashfs-tools', 'zstd'):
        assert dep in enroot['Depends'].split(', ')
    listing = subprocess.run(['dpkg-deb', '-c', realenroot.deb('enroot')], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout
    for path in ('./usr/bin/enroot', './usr/bin/enroot-mksquashovlfs', './usr/bin/enroot-aufs2ovlfs', './etc/enroot/enroot.conf',
                 './etc/enroot/hooks.d/', './usr/share/enroot/hooks.d/50-slurm-pmi.sh', './usr/share/enroot/hooks.d/50-slurm-pytorch.sh'):
        assert path in listing
    # enroot+caps grants the helpers their capabilities when installed (NVIDIA's postinst)
    control = subprocess.run(['dpkg-deb', '-I', realenroot.deb('enroot+caps'), 'postinst'], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
    assert 'setcap cap_sys_admin+pe "$(command -v enroot-mksquashovlfs)"' in control


def test_enroot_package_names_are_the_roles():
    """The built files are the ones the enroot role installs from enroot_local_dir at its default version."""
    import yaml
    with open(os.path.join(ROOT, 'roles', 'enroot', 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults['enroot_version'] == realenroot.ENROOT_VERSION
    from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
    machine = {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(realenroot.arch(), realenroot.arch())
    expected = _enroot.package_files(defaults['enroot_version'], defaults['enroot_package_release'], machine, True)
    assert sorted(f for f in os.listdir(realenroot.debs()) if f.endswith('.deb')) == sorted(expected)


def test_enroot_runs_from_the_package(tmp_path):
    env = realenroot.env({'PATH': os.environ['PATH'], 'HOME': str(tmp_path), 'ENROOT_SYSCONF_PATH': str(tmp_path / 'none')})
    proc = subprocess.run(['enroot', 'version'], stdout=subprocess.PIPE, universal_newlines=True, env=env, check=True)
    assert proc.stdout.strip() == realenroot.ENROOT_VERSION


@pytest.fixture(scope='module')
def plugin(tmp_path_factory):
    """pyxis built from its release archive with its own Makefile, as the pyxis role builds it on a node."""
    _require()
    work = tmp_path_factory.mktemp('pyxis')
    with tarfile.open(realenroot.pyxis_archive()) as tar:
        top = {name.split('/')[0] for name in tar.getnames()}
        assert top == {'pyxis-%s' % realenroot.PYXIS_VERSION}
        tar.extractall(str(work))
    src = str(work / ('pyxis-%s' % realenroot.PYXIS_VERSION))
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
    conf.write_text('ClusterName=pyxis\nSlurmctldHost=localhost\nPlugStackConfig=%s\n' % plugstack)
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
        assert '[pyxis] the image to use for the container' in out
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
def test_bad_plugstack_option_fails(tmp_path, plugin, option, error):
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
