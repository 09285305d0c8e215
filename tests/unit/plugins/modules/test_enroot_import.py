# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot_import, run the way Ansible runs it, against a real registry and NVIDIA's real enroot.

* The registry is Debian's ``docker-registry`` (Distribution 2.8) on 127.0.0.1, holding the
  stand-in test image pushed with ``skopeo copy`` as Docker v2 schema 2 and as OCI.
* ``enroot`` is NVIDIA's enroot 4.1.2 from the package scripts/lib/enroot-build.sh builds
  (tests/unit/realenroot.py), behind a recorder that logs each call's argv. Four cases still
  run the STAND-IN of ``tests/standins/enroot-standin/enroot`` (``standin``): an import hanging
  mid-write (interrupt, timeout, SIGKILL) and a registry whose token server does not answer.
* The module runs as its own process (``python -m ...enroot_import ARGS.json``), so signals,
  timeouts and the atomic rename are exercised for real.

Needs the Debian packages docker-registry, skopeo, squashfs-tools, curl and jq; a missing one
fails the tests (it is not skipped).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.gpucluster.bringup.tests.unit import realenroot

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
STANDIN_DIR = os.path.join(ROOT, 'tests', 'standins', 'enroot-standin')
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
MODULE = 'ansible_collections.gpucluster.bringup.plugins.modules.enroot_import'
REQUIRED = {'docker-registry': 'docker-registry', 'skopeo': 'skopeo', 'mksquashfs': 'squashfs-tools',
            'unsquashfs': 'squashfs-tools', 'curl': 'curl', 'jq': 'jq'}
V2_ACCEPT = 'application/vnd.docker.distribution.manifest.v2+json'

_spec = importlib.util.spec_from_file_location('standin_image', os.path.join(ROOT, 'tests', 'standins', 'standin_image.py'))
standin_image = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin_image)


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Registry(object):
    """A real docker-registry process on 127.0.0.1."""

    def __init__(self, workdir, storage, auth=None):
        self.port = _free_port()
        self.host = '127.0.0.1:%d' % self.port
        config = os.path.join(workdir, 'registry-%d.yml' % self.port)
        lines = ['version: 0.1', 'storage:', '  filesystem:', '    rootdirectory: %s' % storage,
                 'http:', '  addr: %s' % self.host]
        if auth == 'silly':
            lines += ['auth:', '  silly:', '    realm: http://127.0.0.1:1/token', '    service: standin']
        with open(config, 'w') as handle:
            handle.write('\n'.join(lines) + '\n')
        self.log = open(os.path.join(workdir, 'registry-%d.log' % self.port), 'w')
        self.proc = subprocess.Popen(['docker-registry', 'serve', config], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                urllib.request.urlopen('http://%s/v2/' % self.host, timeout=1)
                return
            except urllib.error.HTTPError:
                return  # 401 from the auth-protected one: it is up
            except OSError:
                time.sleep(0.1)
        raise RuntimeError('docker-registry did not start on %s' % self.host)

    def push(self, layout, tag, repo, fmt):
        subprocess.run(['skopeo', 'copy', '--quiet', '--dest-tls-verify=false', '--format', fmt,
                        'oci:%s:%s' % (layout, tag), 'docker://%s/%s:%s' % (self.host, repo, tag)], check=True)

    def digest(self, repo, tag):
        """The Docker-Content-Digest of the v2 manifest, asked for independently of enroot."""
        req = urllib.request.Request('http://%s/v2/%s/manifests/%s' % (self.host, repo, tag), method='HEAD',
                                     headers={'Accept': V2_ACCEPT})
        return urllib.request.urlopen(req, timeout=5).headers['Docker-Content-Digest']

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope='module')
def registries(tmp_path_factory):
    missing = sorted(set(pkg for cmd, pkg in REQUIRED.items() if shutil.which(cmd) is None))
    if missing:
        pytest.fail('these tests need the Debian packages %s (apt-get install -y %s)' % (', '.join(missing), ' '.join(missing)))
    work = str(tmp_path_factory.mktemp('registry'))
    storage = os.path.join(work, 'storage')
    layout = os.path.join(work, 'layout')
    standin_image.build_layout(layout, '1.0', {'etc/os-release': b'PRETTY_NAME="gpucluster stand-in test image 1.0"\n'})
    standin_image.build_layout(layout, '2.0', {'etc/os-release': b'PRETTY_NAME="gpucluster stand-in test image 2.0"\n'})
    plain = Registry(work, storage)
    plain.push(layout, '1.0', 'test/v2img', 'v2s2')
    plain.push(layout, '1.0', 'test/ociimg', 'oci')
    silly = Registry(work, storage, auth='silly')
    yield {'plain': plain, 'auth': silly, 'layout': layout}
    plain.stop()
    silly.stop()


@pytest.fixture
def env(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    log = tmp_path / 'enroot-argv.log'
    log.write_text('')
    # records each call (argv) and runs NVIDIA's enroot
    real = realenroot.recorder(tmp_path / 'recorder', 'ENROOT_STANDIN_LOG')
    return {
        'PATH': real['PATH'],
        'ENROOT_LIBRARY_PATH': real['ENROOT_LIBRARY_PATH'],
        'HOME': str(home),
        'ENROOT_ALLOW_HTTP': 'yes',
        'ENROOT_SYSCONF_PATH': str(tmp_path / 'no-sysconf'),
        'ENROOT_STANDIN_LOG': str(log),
        'PYTHONPATH': COLLECTIONS,
        'LANG': 'C.UTF-8',
    }


def standin(env):
    """The STAND-IN enroot (tests/standins/enroot-standin) instead of the real one, for the cases the real enroot cannot be
    made to show here yet: an import hanging mid-write (ENROOT_STANDIN_HANG) and a registry whose token server refuses."""
    return dict(env, PATH=STANDIN_DIR + os.pathsep + env['PATH'])


STARTED = []


@pytest.fixture(autouse=True)
def no_process_left(tmp_path):
    """Whatever a test asserts, leave no module or stand-in process behind it."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    for pid in _standin_processes(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_module(tmp_path, env, check=False, diff=True, **args):
    argsfile = tmp_path / ('args-%d.json' % time.time_ns())
    payload = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    argsfile.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': payload}))
    proc = subprocess.Popen([sys.executable, '-m', MODULE, str(argsfile)], env=env, cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    STARTED.append(proc)
    return proc


def run_module(tmp_path, env, check=False, **args):
    proc = start_module(tmp_path, env, check=check, **args)
    out, err = proc.communicate(timeout=120)
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError('module printed no JSON (rc %s): %s %s' % (proc.returncode, out, err))


def enroot_calls(env):
    with open(env['ENROOT_STANDIN_LOG']) as handle:
        return [line.split()[1] for line in handle if line.strip()]


def leftovers(directory):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(str(directory), '.*enroot-import*')))


def is_squashfs(path):
    with open(path, 'rb') as handle:
        return handle.read(4) == b'hsqs'


def test_import_then_idempotent(registries, env, tmp_path):
    reg = registries['plain']
    dest = tmp_path / 'v2img.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % reg.host
    first = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert first['changed'] is True, first
    assert first['imported'] is True
    assert first['actions'] == ['import %s' % uri]
    assert is_squashfs(str(dest))
    record = json.loads((tmp_path / 'v2img.sqsh.import.json').read_text())
    assert record == {'format': 1, 'uri': uri, 'digest': reg.digest('test/v2img', '1.0'), 'size': dest.stat().st_size}
    assert first['digest'] == record['digest']
    assert leftovers(tmp_path) == []
    mtime = dest.stat().st_mtime_ns

    second = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert second['changed'] is False, second
    assert second['reason'] == 'the image file holds digest %s, the one the registry serves' % record['digest']
    assert dest.stat().st_mtime_ns == mtime
    assert enroot_calls(env) == ['digest', 'import', 'digest']


def test_new_digest_reimports(registries, env, tmp_path):
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/moving', 'v2s2')
    dest = tmp_path / 'moving.sqsh'
    uri = 'docker://%s#test/moving:1.0' % reg.host
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['changed'] is True
    old = json.loads((tmp_path / 'moving.sqsh.import.json').read_text())['digest']
    # The same tag now points at other content (2.0's layer), as after a rebuild and push.
    subprocess.run(['skopeo', 'copy', '--quiet', '--dest-tls-verify=false', '--format', 'v2s2',
                    'oci:%s:2.0' % registries['layout'], 'docker://%s/test/moving:1.0' % reg.host], check=True)
    new = reg.digest('test/moving', '1.0')
    assert new != old
    result = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert result['changed'] is True
    assert result['reason'] == 'the registry now serves %s, the file holds %s' % (new, old)
    assert json.loads((tmp_path / 'moving.sqsh.import.json').read_text())['digest'] == new
    listing = subprocess.run(['unsquashfs', '-cat', str(dest), 'etc/os-release'], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
    assert 'test image 2.0' in listing


def test_check_mode_and_diff_write_nothing(registries, env, tmp_path):
    reg = registries['plain']
    dest = tmp_path / 'check.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % reg.host
    result = run_module(tmp_path, env, check=True, uri=uri, dest=str(dest), name='checked')
    assert result['changed'] is True
    assert result['diff'] == {
        'before': {'path': str(dest), 'exists': False, 'uri': None, 'digest': None, 'container': None},
        'after': {'path': str(dest), 'exists': True, 'uri': uri, 'digest': reg.digest('test/v2img', '1.0'), 'container': 'pyxis_checked'},
    }
    assert result['actions'] == ['import %s' % uri, 'create pyxis_checked']
    assert not dest.exists()
    assert not (tmp_path / 'check.sqsh.import.json').exists()
    assert 'import' not in enroot_calls(env) and 'create' not in enroot_calls(env)


def test_named_container_created_once_and_recreated_on_force(registries, env, tmp_path):
    reg = registries['plain']
    dest = tmp_path / 'named.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % reg.host
    data = os.path.join(env['HOME'], '.local', 'share', 'enroot')
    first = run_module(tmp_path, env, uri=uri, dest=str(dest), name='pytorch')
    assert first['changed'] is True and first['created'] is True and first['container'] == 'pyxis_pytorch'
    with open(os.path.join(data, 'pyxis_pytorch', 'etc', 'os-release')) as handle:
        assert 'test image 1.0' in handle.read()
    second = run_module(tmp_path, env, uri=uri, dest=str(dest), name='pytorch')
    assert second['changed'] is False and second['created'] is False
    third = run_module(tmp_path, env, uri=uri, dest=str(dest), name='pytorch', force=True)
    assert third['changed'] is True
    assert third['actions'] == ['import %s' % uri, 'remove and recreate pyxis_pytorch']
    assert enroot_calls(env) == ['digest', 'list', 'import', 'create', 'digest', 'list', 'digest', 'list', 'import', 'remove', 'create']


def test_shared_image_reimported_elsewhere_recreates_container(registries, env, tmp_path):
    """Node B unpacks a file that node A imports to shared storage; A re-imports; B recreates."""
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/shared', 'v2s2')
    shared = tmp_path / 'shared'
    shared.mkdir()
    dest = shared / 'img.sqsh'
    uri = 'docker://%s#test/shared:1.0' % reg.host
    home_b = tmp_path / 'node-b'
    home_b.mkdir()
    env_b = dict(env, HOME=str(home_b))
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['imported'] is True
    first = run_module(tmp_path, env_b, uri=uri, dest=str(dest), name='shared')
    assert (first['imported'], first['created']) == (False, True)
    assert first['container_reason'] == 'the container does not exist'
    again = run_module(tmp_path, env_b, uri=uri, dest=str(dest), name='shared')
    assert again['changed'] is False
    assert again['container_reason'] == 'the container was created from the current image file'
    subprocess.run(['skopeo', 'copy', '--quiet', '--dest-tls-verify=false', '--format', 'v2s2',
                    'oci:%s:2.0' % registries['layout'], 'docker://%s/test/shared:1.0' % reg.host], check=True)
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['imported'] is True
    later = run_module(tmp_path, env_b, uri=uri, dest=str(dest), name='shared')
    assert (later['imported'], later['created']) == (False, True)
    assert later['container_reason'] == 'the image file changed since the container was created'
    with open(str(home_b / '.local' / 'share' / 'enroot' / 'pyxis_shared' / 'etc' / 'os-release')) as handle:
        assert 'test image 2.0' in handle.read()


def test_existing_file_without_record_is_kept_unless_forced(registries, env, tmp_path):
    reg = registries['plain']
    dest = tmp_path / 'foreign.sqsh'
    dest.write_bytes(b'made by someone else')
    uri = 'docker://%s#test/v2img:1.0' % reg.host
    kept = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert kept['changed'] is False
    assert kept['reason'] == 'the image file exists and has no import record; kept as it is (use force to replace it)'
    assert dest.read_bytes() == b'made by someone else'
    forced = run_module(tmp_path, env, uri=uri, dest=str(dest), force=True)
    assert forced['changed'] is True and is_squashfs(str(dest))


def test_failed_import_leaves_nothing(registries, env, tmp_path):
    dest = tmp_path / 'missing.sqsh'
    uri = 'docker://%s#test/nothere:1.0' % registries['plain'].host
    result = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert result['failed'] is True
    assert result['error_kind'] == 'not_found'
    url = 'http://%s/v2/test/nothere/manifests/1.0' % registries['plain'].host
    assert result['msg'] == ('the registry has no manifest for %s (%s returned 404): check the image name and tag, or the '
                             'registry may hold only an OCI manifest for it' % (uri, url))
    assert not dest.exists() and leftovers(tmp_path) == []


def test_oci_only_manifest_is_named(registries, env, tmp_path):
    dest = tmp_path / 'oci.sqsh'
    host = registries['plain'].host
    uri = 'docker://%s#test/ociimg:1.0' % host
    result = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert result['error_kind'] == 'oci_manifest'
    assert result['msg'] == (
        'the registry serves only an OCI image manifest for %s (http://%s/v2/test/ociimg/manifests/1.0 answers 404 "OCI manifest '
        'found, but accept header does not support OCI manifests" to a request that does not list OCI in its Accept header, as '
        "enroot's requests do); push the image as Docker v2 schema 2 (skopeo copy --format v2s2, docker push, buildah push "
        '--format docker)' % (uri, host))
    assert '[ERROR] URL http://%s/v2/test/ociimg/manifests/1.0 returned error code: 404' % host in result['stderr']
    assert not dest.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize('registry, detail', [
    # Port 1 (tcpmux) has no listener on these machines: the connection is refused.
    ('127.0.0.1:1', r"Failed to connect to 127.0.0.1 port 1 after \d+ ms: Couldn't connect to server"),
    ('registry.gpucluster.invalid', 'Could not resolve host: registry.gpucluster.invalid'),
])
def test_unreachable_registry(registries, env, tmp_path, registry, detail):
    import re
    uri = 'docker://%s#test/v2img:1.0' % registry
    result = run_module(tmp_path, env, uri=uri, dest=str(tmp_path / 'x.sqsh'), retries=0, connect_timeout=5)
    assert result['error_kind'] == 'unreachable'
    assert re.match(r'^cannot reach the registry of %s: %s \(check the registry name, DNS, proxy and firewall\)$'
                    % (re.escape(uri), detail), result['msg']), result['msg']
    assert not (tmp_path / 'x.sqsh').exists() and leftovers(tmp_path) == []


def test_registry_asking_for_credentials(registries, env, tmp_path):
    host = registries['auth'].host
    uri = 'docker://%s#test/v2img:1.0' % host
    result = run_module(tmp_path, standin(env), uri=uri, dest=str(tmp_path / 'auth.sqsh'))
    assert result['error_kind'] == 'auth'
    assert result['msg'] == ('the registry refused access to %s (http://%s/v2/test/v2img/manifests/1.0): check the credentials in '
                             '$ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com lines)'
                             % (uri, host))


@pytest.mark.parametrize('uri, reason', [
    ('docker://ubuntu@sha256:abc', 'the digest "sha256:abc" must be "sha256:" and 64 lower-case hexadecimal digits'),
    ('docker://Ubuntu', 'the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('oras://x', 'scheme "oras" is not one enroot imports from'),
])
def test_malformed_uri(env, tmp_path, uri, reason):
    result = run_module(tmp_path, env, uri=uri, dest=str(tmp_path / 'x.sqsh'))
    assert result['error_kind'] == 'invalid_uri'
    assert result['msg'] == 'uri: invalid image URI "%s": %s; valid forms are %s' % (
        uri, reason, 'docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST] (REGISTRY with a "." or a ":port"), '
        'docker://[USER@]REGISTRY#IMAGE[:TAG][@sha256:DIGEST], dockerd://IMAGE[:TAG] or podman://IMAGE[:TAG] '
        '(for example docker://nvcr.io/nvidia/pytorch:24.01-py3 or docker://nvcr.io#nvidia/pytorch:24.01-py3)')
    assert enroot_calls(env) == []


def test_bad_container_name(env, tmp_path):
    result = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'x.sqsh'), name='a/b')
    assert result['error_kind'] == 'invalid_name'
    assert result['msg'] == 'name: invalid container name "a/b": use letters, digits, "_", "." and "-", starting with a letter or digit'


def test_missing_enroot(env, tmp_path):
    env = dict(env, PATH='/usr/bin:/bin')
    result = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'x.sqsh'))
    assert result['error_kind'] == 'missing_enroot'
    assert result['msg'].startswith('the enroot command "enroot" was not found (PATH=/usr/bin:/bin')
    assert result['msg'].endswith('); install enroot (role gpucluster.bringup.enroot) or set executable to its path')
    other = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'x.sqsh'), executable='/opt/none/enroot')
    assert other['msg'].startswith('the enroot command "/opt/none/enroot" was not found')


def test_dest_directory_must_exist(env, tmp_path):
    dest = tmp_path / 'nodir' / 'x.sqsh'
    result = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(dest))
    assert result['error_kind'] == 'bad_dest'
    assert result['msg'] == 'dest %s: the directory %s does not exist; create it first' % (dest, dest.parent)
    os.symlink(str(tmp_path / 'nowhere'), str(tmp_path / 'dangling.sqsh'))
    other = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'dangling.sqsh'))
    assert other['msg'] == 'dest %s exists and is not a regular file' % (tmp_path / 'dangling.sqsh')


def test_dest_directory_gets_enroot_default_name(registries, env, tmp_path):
    images = tmp_path / 'images'
    images.mkdir()
    uri = 'docker://%s#test/v2img:1.0' % registries['plain'].host
    result = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert result['changed'] is True
    assert result['dest'] == str(images / 'test+v2img+1.0.sqsh')
    assert is_squashfs(str(images / 'test+v2img+1.0.sqsh'))
    assert run_module(tmp_path, env, uri=uri, dest=str(images))['changed'] is False


def test_negative_timeout(env, tmp_path):
    result = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'x.sqsh'), timeout=-1)
    assert result['msg'] == 'timeout must be 0 or more (seconds, 0 for no limit), got -1'


@pytest.mark.parametrize('form', ['docker://{host}/test/v2img:1.0', 'docker://{host}#test/v2img:1.0'])
def test_slash_and_hash_forms_import_the_same_image(registries, env, tmp_path, form):
    reg = registries['plain']
    uri = form.format(host=reg.host)
    images = tmp_path / 'images'
    images.mkdir()
    result = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert result['changed'] is True, result
    assert result['dest'] == str(images / 'test+v2img+1.0.sqsh')
    assert result['digest'] == reg.digest('test/v2img', '1.0')
    assert is_squashfs(result['dest'])


def test_digest_pinned_import_needs_no_registry_call_when_current(registries, env, tmp_path):
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/pinned', 'v2s2')
    pinned = reg.digest('test/pinned', '1.0')
    uri = 'docker://%s/test/pinned:1.0@%s' % (reg.host, pinned)
    images = tmp_path / 'images'
    images.mkdir()
    first = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert first['changed'] is True, first
    # enroot names the file after the digest, which replaces the tag.
    dest = images / ('test+pinned+%s.sqsh' % pinned)
    assert first['dest'] == str(dest) and is_squashfs(str(dest))
    record = json.loads((images / (dest.name + '.import.json')).read_text())
    assert record['digest'] == pinned and record['uri'] == uri
    # The tag now points at other content: the pinned file is still what the URI names.
    subprocess.run(['skopeo', 'copy', '--quiet', '--dest-tls-verify=false', '--format', 'v2s2',
                    'oci:%s:2.0' % registries['layout'], 'docker://%s/test/pinned:1.0' % reg.host], check=True)
    assert reg.digest('test/pinned', '1.0') != pinned
    second = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert second['changed'] is False, second
    assert second['reason'] == 'the image file holds digest %s, the one pinned in the URI' % pinned
    assert enroot_calls(env) == ['import'], 'a digest-pinned URI needs no enroot digest call'
    listing = subprocess.run(['unsquashfs', '-cat', str(dest), 'etc/os-release'], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
    assert 'test image 1.0' in listing


def test_plain_http_registry_without_allow_http(registries, env, tmp_path):
    env = dict(env)
    del env['ENROOT_ALLOW_HTTP']
    uri = 'docker://%s/test/v2img:1.0' % registries['plain'].host
    result = run_module(tmp_path, env, uri=uri, dest=str(tmp_path / 'x.sqsh'), retries=0)
    assert result['error_kind'] == 'plain_http', result
    assert result['msg'].startswith('the registry of %s answers plain HTTP, and enroot speaks HTTPS unless ENROOT_ALLOW_HTTP is set '
                                    '(curl: ' % uri)
    assert 'wrong version number' in result['msg']
    assert result['msg'].endswith('set enroot_allow_http: true for the role gpucluster.bringup.enroot, which writes ENROOT_ALLOW_HTTP to '
                                  '/etc/enroot/enroot.conf: pyxis jobs (srun --container-image) read only enroot.conf, an environment: '
                                  'on an Ansible task does not reach them; or serve the registry over HTTPS')
    assert not (tmp_path / 'x.sqsh').exists() and leftovers(tmp_path) == []


def _wait_for_partial(tmp_path, proc, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        partial = [p for p in glob.glob(str(tmp_path / '.*enroot-import*' / '*')) if os.path.getsize(p) >= 65536]
        if partial:
            return partial[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError('the stand-in never started writing')


def _standin_processes(tmp_path):
    """PIDs of stand-in enroot imports (and their children) still writing under tmp_path, from /proc."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                argv = handle.read().split(b'\0')
        except OSError:
            continue
        text = b' '.join(argv).decode('utf-8', 'replace')
        if 'enroot-standin/enroot' in text and str(tmp_path) in text:
            found.append(int(entry))
    return found


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_interrupted_import_leaves_no_partial_file(registries, env, tmp_path, signum):
    dest = tmp_path / 'interrupted.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % registries['plain'].host
    proc = start_module(tmp_path, dict(standin(env), ENROOT_STANDIN_HANG='yes'), uri=uri, dest=str(dest))
    partial = _wait_for_partial(tmp_path, proc)
    assert os.path.getsize(partial) == 65536  # the stand-in really left a partial squashfs there
    proc.send_signal(signum)
    out, _err = proc.communicate(timeout=30)
    result = json.loads(out)
    assert result['error_kind'] == 'interrupted'
    assert result['msg'] == ('enroot import of %s was interrupted by signal %d; stopped it and removed its partial output'
                             % (uri, signum))
    assert not dest.exists()
    assert leftovers(tmp_path) == []
    assert _standin_processes(tmp_path) == []


def test_timeout_stops_and_cleans(registries, env, tmp_path):
    dest = tmp_path / 'slow.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % registries['plain'].host
    result = run_module(tmp_path, dict(standin(env), ENROOT_STANDIN_HANG='yes'), uri=uri, dest=str(dest), timeout=3)
    assert result['error_kind'] == 'timeout'
    assert result['msg'] == ('enroot import of %s did not finish within timeout=3 seconds; stopped it and removed its partial output'
                             % uri)
    assert not dest.exists() and leftovers(tmp_path) == []
    assert _standin_processes(tmp_path) == []


def test_killed_import_leftover_is_removed_by_next_run(registries, env, tmp_path):
    dest = tmp_path / 'killed.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % registries['plain'].host
    proc = start_module(tmp_path, dict(standin(env), ENROOT_STANDIN_HANG='yes'), uri=uri, dest=str(dest))
    _wait_for_partial(tmp_path, proc)
    proc.kill()  # SIGKILL: the module cannot clean up; the partial file stays in its hidden directory
    proc.wait()
    survivors = _standin_processes(tmp_path)
    assert survivors, 'SIGKILL of the module cannot stop enroot; the stand-in should still run'
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not dest.exists()
    assert len(leftovers(tmp_path)) == 1
    # An import of the same file by another node of a shared file system, with a pid that is not alive here.
    other_node = tmp_path / '.killed.sqsh.enroot-import.some-other-node.999999999.abcd'
    other_node.mkdir()
    result = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert result['changed'] is True and is_squashfs(str(dest))
    assert leftovers(tmp_path) == [other_node.name]
