"""execution-environment.yml and meta/execution-environment.yml with ansible-builder 3, offline."""
import os
import shutil
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
VENV_BIN = os.path.dirname(sys.executable)
NVML_PIN = 'nvidia-ml-py==13.615.71'


def run(cmd, **kwargs):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=300, **kwargs)
    assert proc.returncode == 0, '%s\n%s' % (' '.join(cmd), proc.stdout[-3000:])
    return proc.stdout


def load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope='module')
def tarball(tmp_path_factory):
    dist = tmp_path_factory.mktemp('dist')
    run([os.path.join(VENV_BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(dist), ROOT], cwd=ROOT)
    (built,) = [p for p in dist.iterdir() if p.name.startswith('gpucluster-bringup-')]
    return built


@pytest.fixture(scope='module')
def context(tmp_path_factory, tarball):
    """The EE definition with the files it names, at the same relative paths, and the context ansible-builder creates from it."""
    ee = load('execution-environment.yml')
    src = tmp_path_factory.mktemp('ee-src')
    shutil.copy(os.path.join(ROOT, 'execution-environment.yml'), src)
    for key in ('galaxy', 'python', 'system'):
        path = ee['dependencies'][key]
        (src / os.path.dirname(path)).mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), src / path)
    (entry,) = ee['additional_build_files']
    (src / os.path.dirname(entry['src'])).mkdir(parents=True, exist_ok=True)
    shutil.copy(str(tarball), src / entry['src'])
    ctx = tmp_path_factory.mktemp('ee-ctx')
    started = time.monotonic()
    run([os.path.join(VENV_BIN, 'ansible-builder'), 'create', '-f', str(src / 'execution-environment.yml'), '--context', str(ctx),
         '--output-filename', 'Containerfile'], env=dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get('PATH', '')))
    print('ansible-builder create took %.2f s' % (time.monotonic() - started))
    return ctx


def test_ee_definition_pins_what_the_test_tool_chain_pins():
    ee = load('execution-environment.yml')
    assert ee['version'] == 3
    assert ee['images']['base_image']['name']
    with open(os.path.join(ROOT, 'requirements-dev.txt')) as handle:
        pins = dict(line.strip().split('==') for line in handle if '==' in line and not line.startswith('#'))
    assert ee['dependencies']['ansible_core']['package_pip'] == 'ansible-core==' + pins['ansible-core']
    assert ee['dependencies']['ansible_runner']['package_pip'] == 'ansible-runner==' + pins['ansible-runner']
    with open(os.path.join(ROOT, 'scripts', 'test.sh')) as handle:
        assert 'NVML_REF_VERSION=%s\n' % NVML_PIN.split('==')[1] in handle.read()


def test_galaxy_requirement_is_where_the_build_file_lands():
    ee = load('execution-environment.yml')
    (entry,) = ee['additional_build_files']
    wanted = os.path.join(entry['dest'], os.path.basename(entry['src']))
    (collection,) = load(ee['dependencies']['galaxy'])['collections']
    assert collection == {'name': wanted, 'type': 'file'}


def test_context_has_containerfile_requirements_and_the_collection(context):
    containerfile = (context / 'Containerfile').read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % load('execution-environment.yml')['images']['base_image']['name'] in containerfile
    assert 'ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml' in containerfile
    build = context / '_build'
    assert NVML_PIN in (build / 'requirements.txt').read_text().split('\n')
    bindep = (build / 'bindep.txt').read_text()
    assert 'openssh-clients [platform:rpm]' in bindep
    assert yaml.safe_load((build / 'requirements.yml').read_text())['collections'][0]['type'] == 'file'
    with tarfile.open(str(build / 'collections' / 'gpucluster-bringup.tar.gz')) as tar:
        names = tar.getnames()
        manifest = tar.extractfile('MANIFEST.json').read().decode()
    assert '"namespace": "gpucluster"' in manifest and '"name": "bringup"' in manifest
    assert 'meta/execution-environment.yml' in names and 'roles/validate/tasks/main.yml' in names
    assert not [n for n in names if n.startswith(('.venv/', 'molecule/', '.build/'))]


def test_installed_collection_declares_its_requirements_to_ansible_builder(tmp_path, tarball):
    colls = tmp_path / 'colls'
    run([os.path.join(VENV_BIN, 'ansible-galaxy'), 'collection', 'install', '--offline', '--no-deps', '--force', '-p', str(colls), str(tarball)],
        env=dict(os.environ, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='False'))
    data = yaml.safe_load(run([os.path.join(VENV_BIN, 'ansible-builder'), 'introspect', '--sanitize', str(colls)]).split('\n', 1)[1])
    assert data['python'] == ['%s  # from collection gpucluster.bringup' % NVML_PIN]
    assert data['system'] == ['openssh-clients [platform:rpm]  # from collection gpucluster.bringup',
                              'openssh-client [platform:dpkg]  # from collection gpucluster.bringup']
