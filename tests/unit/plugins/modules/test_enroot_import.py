# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot_import, run the way Ansible runs it, with NVIDIA's real enroot against real registries.

* ``enroot`` is NVIDIA's enroot 4.1.2 from the package scripts/lib/enroot-build.sh builds (tests/unit/realenroot.py,
  unpacked under .build/enroot, built on first use), behind a recorder that logs each call's argv. No enroot stand-in.
* The registries are Debian's ``docker-registry`` (Distribution 2.8) on 127.0.0.1 (molecule/default/tests/testimage.py):
  one plain HTTP; one over TLS with a CA made for the test and htpasswd users (alice); one whose token server is
  down. The image is testimage's real two-layer BusyBox image, pushed with ``skopeo copy`` as Docker v2 schema 2
  (and once as OCI).
* Where a server must misbehave on purpose, the server is a STAND-IN (tests/unit/standins/stand_in_registry.py): a proxy in
  front of the real registry that stops in the middle of a blob (interrupted, timed-out and SIGKILLed imports), a
  token server that never answers. The enroot talking to them is the real one.
* The module runs as Ansible runs it: main() over the task's arguments. A test that signals it (interrupted and
  SIGKILLed imports) or runs it as another user starts it as its own process (``python -m ...enroot_import ARGS.json``);
  the others run it in the test's process with the environment the test gives it, so that a mutation run sees which
  tests reach its code. Timeouts and the atomic rename are real in both.

Needs the Debian packages docker-registry, skopeo, squashfs-tools, curl, jq, parallel, zstd and openssl
(scripts/test.sh deps installs them); a missing one fails the tests (it is not skipped).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time

import pytest

from ansible_collections.gpucluster.bringup.plugins.modules import enroot_import
from ansible_collections.gpucluster.bringup.tests.unit import enroot_role
from ansible_collections.gpucluster.bringup.tests.unit import realenroot
from ansible_collections.gpucluster.bringup.tests.unit.plugins.modules import modrun
from ansible_collections.gpucluster.bringup.tests.unit.standins import stand_in_registry

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))
COLLECTIONS = os.path.join(ROOT, '.build', 'collections')
MODULE = 'ansible_collections.gpucluster.bringup.plugins.modules.enroot_import'
REQUIRED = {'docker-registry': 'docker-registry', 'skopeo': 'skopeo', 'mksquashfs': 'squashfs-tools',
            'unsquashfs': 'squashfs-tools', 'curl': 'curl', 'jq': 'jq', 'openssl': 'openssl'}
ALICE = ('alice', 'alice-registry-password')

_spec = importlib.util.spec_from_file_location('testimage', os.path.join(ROOT, 'molecule', 'default', 'tests', 'testimage.py'))
testimage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(testimage)


@pytest.fixture(scope='module')
def registries(tmp_path_factory):
    missing = sorted(set(pkg for cmd, pkg in REQUIRED.items() if shutil.which(cmd) is None))
    if missing:
        pytest.fail('these tests need the Debian packages %s (apt-get install -y %s)' % (', '.join(missing), ' '.join(missing)))
    work = tmp_path_factory.mktemp('registry')
    layout = str(work / 'layout')
    testimage.build_layout(layout, '1.0', release=b'release 1.0\n')
    testimage.build_layout(layout, '2.0', release=b'release 2.0\n')
    plain = testimage.Registry(work / 'plain', '127.0.0.1')
    plain.push(layout, '1.0', 'test/v2img')
    plain.push(layout, '1.0', 'test/ociimg', fmt='oci')
    testimage.build_layout(layout, 'nowhiteout', release=b'release 1.0\n', whiteout=False)
    plain.push(layout, 'nowhiteout', 'test/nowhiteout', as_tag='1.0')
    ca, cert, key = testimage.make_ca(work / 'pki', '127.0.0.1')
    (work / 'htpasswd').write_text(testimage.htpasswd_line(*ALICE))
    tls = testimage.Registry(work / 'tls', '127.0.0.1', tls=(cert, key), htpasswd=str(work / 'htpasswd'), http2=False)
    tls.push(layout, '1.0', 'private/img', credentials=ALICE)
    # the same with HTTP/2, as docker-registry offers it over TLS by default: enroot 4.1.2 cannot log in there
    tls_h2 = testimage.Registry(work / 'tls-h2', '127.0.0.1', tls=(cert, key), htpasswd=str(work / 'htpasswd'))
    tls_h2.push(layout, '1.0', 'private/img', credentials=ALICE)
    # a registry that sends clients to a token server on port 1, where nothing listens
    token_down = testimage.Registry(work / 'token-down', '127.0.0.1', token_realm='http://127.0.0.1:1/token')
    silent = stand_in_registry.SilentServer()
    token_silent = testimage.Registry(work / 'token-silent', '127.0.0.1', token_realm='http://%s/token' % silent.host)
    yield {'plain': plain, 'tls': tls, 'tls_h2': tls_h2, 'ca': ca, 'layout': layout, 'token_down': token_down, 'token_silent': token_silent}
    for server in (plain, tls, tls_h2, token_down, token_silent, silent):
        server.stop()


@pytest.fixture
def env(tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    (tmp_path / 'enroot-tmp').mkdir()
    log = tmp_path / 'enroot-argv.log'
    log.write_text('')
    # records each call (argv) and runs NVIDIA's enroot
    real = realenroot.recorder(tmp_path / 'recorder', 'GPUCLUSTER_ENROOT_ARGV_LOG')
    return {
        'PATH': real['PATH'],
        'ENROOT_LIBRARY_PATH': real['ENROOT_LIBRARY_PATH'],
        'HOME': str(home),
        'ENROOT_ALLOW_HTTP': 'yes',
        'ENROOT_TEMP_PATH': str(tmp_path / 'enroot-tmp'),
        'GPUCLUSTER_ENROOT_ARGV_LOG': str(log),
        'PYTHONPATH': COLLECTIONS,
        'LANG': 'C.UTF-8',
    }


STARTED = []


@pytest.fixture(autouse=True)
def no_process_left(env):
    """Whatever a test asserts, leave no module or enroot process behind it."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    for pid in enroot_processes(env):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def enroot_processes(env):
    """PIDs of the processes (enroot and its curl, parallel, zstd...) running with this test's HOME, from /proc."""
    mark = ('HOME=%s' % env['HOME']).encode()
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open('/proc/%s/environ' % entry, 'rb') as handle:
                if mark in handle.read().split(b'\0'):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def start_module(tmp_path, env, check=False, diff=True, user=None, **args):
    # another user reads its arguments in its own home (pytest's tmp_path is root's, mode 0700)
    argsfile = os.path.join(str(tmp_path) if user is None else env['HOME'], 'args-%d.json' % time.time_ns())
    payload = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with open(argsfile, 'w') as handle:
        handle.write(json.dumps({'ANSIBLE_MODULE_ARGS': payload}))
    extra, python = {}, sys.executable
    if user is not None:
        os.chmod(argsfile, 0o644)
        extra = {'user': user, 'group': user, 'extra_groups': []}
        # the venv's python may live under root's home (pyenv): the system's python3 with the venv's packages
        python = '/usr/bin/python3'
        env = dict(env, PYTHONPATH=os.pathsep.join([COLLECTIONS, sysconfig.get_paths()['purelib']]))
    proc = subprocess.Popen([python, '-m', MODULE, argsfile], env=env, cwd='/',
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, **extra)
    STARTED.append(proc)
    return proc


def run_module(tmp_path, env, check=False, user=None, **args):
    """The module's result. As root it runs in this process (main() as Ansible's module runner calls it, with env as
    the whole environment and / as the working directory), so that a mutation run sees which tests reach its code;
    another user's run, and every run a test signals (start_module), is a process of its own."""
    if user is None:
        return run_in_process(env, dict(args, _ansible_check_mode=check, _ansible_diff=True))
    proc = start_module(tmp_path, env, check=check, user=user, **args)
    out, err = proc.communicate(timeout=180)
    try:
        return json.loads(out)
    except ValueError:
        raise AssertionError('module printed no JSON (rc %s): %s %s' % (proc.returncode, out, err))


def run_in_process(env, payload):
    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir('/')
    try:
        return modrun.run_module(enroot_import.main, payload).result
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)


def enroot_calls(env):
    with open(env['GPUCLUSTER_ENROOT_ARGV_LOG']) as handle:
        return [line.split()[1] for line in handle if line.strip()]


def leftovers(directory):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(str(directory), '.*enroot-import*')))


def enroot_litter(env):
    """What enroot itself leaves when it is stopped without its cleanup: its work directories in ENROOT_TEMP_PATH and
    partly downloaded layers (``<digest>.XXXXXXXXXX``) in its cache."""
    cache = os.path.join(env['HOME'], '.cache', 'enroot')
    partial = [name for name in (os.listdir(cache) if os.path.isdir(cache) else []) if re.match(r'^[0-9a-f]{64}\.\w{10}$', name)]
    return sorted(os.listdir(env['ENROOT_TEMP_PATH'])) + partial


def is_squashfs(path):
    with open(path, 'rb') as handle:
        return handle.read(4) == b'hsqs'


def release_in(path):
    """/etc/test-release of an imported image (testimage: layer 2 replaces layer 1's, so both layers were applied)."""
    return subprocess.run(['unsquashfs', '-cat', str(path), 'etc/test-release'], stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout


def snapshot(directory):
    """Every path under ``directory`` with its size and content hash (files) - what "nothing written" compares."""
    found = {}
    for base, dirs, files in os.walk(str(directory)):
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, 'rb') as handle:
                    found[os.path.relpath(path, str(directory))] = hashlib.sha256(handle.read()).hexdigest()
            else:
                found[os.path.relpath(path, str(directory))] = 'dir' if os.path.isdir(path) else 'other'
    return found


def tls_env(env, ca):
    """``env`` for the TLS registry: HTTPS only (no ENROOT_ALLOW_HTTP), ``ca`` (a file) the CA enroot's curl trusts, None
    for the system's."""
    found = dict((k, v) for k, v in env.items() if k != 'ENROOT_ALLOW_HTTP')
    if ca:
        found['SSL_CERT_FILE'] = ca
    return found


def credentials(env, text):
    config = os.path.join(env['HOME'], '.config', 'enroot')
    os.makedirs(config, exist_ok=True)
    with open(os.path.join(config, '.credentials'), 'w') as handle:
        handle.write(text)


# ---- imports that work ------------------------------------------------------------------------------------------


def test_import_then_idempotent(registries, env, tmp_path):
    reg = registries['plain']
    dest = tmp_path / 'v2img.sqsh'
    uri = 'docker://%s#test/v2img:1.0' % reg.host
    first = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert first['changed'] is True, first
    assert first['imported'] is True
    assert first['actions'] == ['import %s' % uri]
    assert is_squashfs(str(dest))
    assert release_in(dest) == 'release 1.0\n'
    record = json.loads((tmp_path / 'v2img.sqsh.import.json').read_text())
    assert record == {'format': 1, 'uri': uri, 'digest': reg.digest('test/v2img', '1.0'), 'size': dest.stat().st_size}
    assert first['digest'] == record['digest']
    assert leftovers(tmp_path) == [] and enroot_litter(env) == []
    mtime = dest.stat().st_mtime_ns

    second = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert second['changed'] is False, second
    assert second['reason'] == 'the image file holds digest %s, the one the registry serves' % record['digest']
    assert dest.stat().st_mtime_ns == mtime
    assert enroot_calls(env) == ['digest', 'import', 'digest']


def test_new_digest_reimports(registries, env, tmp_path):
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/moving')
    dest = tmp_path / 'moving.sqsh'
    uri = 'docker://%s#test/moving:1.0' % reg.host
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['changed'] is True
    old = json.loads((tmp_path / 'moving.sqsh.import.json').read_text())['digest']
    # The same tag now points at other content (2.0's layer), as after a rebuild and push.
    reg.push(registries['layout'], '2.0', 'test/moving', as_tag='1.0')
    new = reg.digest('test/moving', '1.0')
    assert new != old
    result = run_module(tmp_path, env, uri=uri, dest=str(dest))
    assert result['changed'] is True
    assert result['reason'] == 'the registry now serves %s, the file holds %s' % (new, old)
    assert json.loads((tmp_path / 'moving.sqsh.import.json').read_text())['digest'] == new
    assert release_in(dest) == 'release 2.0\n'
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['changed'] is False


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
    with open(os.path.join(data, 'pyxis_pytorch', 'etc', 'test-release')) as handle:
        assert handle.read() == 'release 1.0\n'
    # layer 2's whiteout removed layer 1's file: enroot converted it
    assert not os.path.exists(os.path.join(data, 'pyxis_pytorch', 'etc', 'removed-by-layer-2'))
    second = run_module(tmp_path, env, uri=uri, dest=str(dest), name='pytorch')
    assert second['changed'] is False and second['created'] is False
    third = run_module(tmp_path, env, uri=uri, dest=str(dest), name='pytorch', force=True)
    assert third['changed'] is True
    assert third['actions'] == ['import %s' % uri, 'remove and recreate pyxis_pytorch']
    assert enroot_calls(env) == ['digest', 'list', 'import', 'create', 'digest', 'list', 'digest', 'list', 'import', 'remove', 'create']


def test_shared_image_reimported_elsewhere_recreates_container(registries, env, tmp_path):
    """Node B unpacks a file that node A imports to shared storage; A re-imports; B recreates."""
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/shared')
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
    reg.push(registries['layout'], '2.0', 'test/shared', as_tag='1.0')
    assert run_module(tmp_path, env, uri=uri, dest=str(dest))['imported'] is True
    later = run_module(tmp_path, env_b, uri=uri, dest=str(dest), name='shared')
    assert (later['imported'], later['created']) == (False, True)
    assert later['container_reason'] == 'the image file changed since the container was created'
    with open(str(home_b / '.local' / 'share' / 'enroot' / 'pyxis_shared' / 'etc' / 'test-release')) as handle:
        assert handle.read() == 'release 2.0\n'


@pytest.fixture
def users():
    """Two unprivileged users (uids without a passwd entry, as the kernel allows) and a directory tree they can reach
    (pytest's tmp_path is root's, mode 0700)."""
    if os.getuid() != 0:
        pytest.skip('running the module as other users needs root (this run is uid %d)' % os.getuid())
    top = tempfile.mkdtemp(prefix='gpucluster-enroot-users.')
    os.chmod(top, 0o755)
    found = {}
    for name, uid in (('alice', 42421), ('bob', 42422)):
        home = os.path.join(top, name)
        os.mkdir(home, 0o700)
        os.chown(home, uid, uid)
        found[name] = (uid, home)
    yield top, found
    shutil.rmtree(top)


def _as(env, home, caps=True):
    """The environment of another user: its HOME, the real enroot (with enroot+caps' file capabilities, as the role
    installs it by default) without the recorder (in root's tmp_path)."""
    real = realenroot.env({'PATH': '/usr/bin:/bin'}, caps=caps)
    return dict(env, HOME=home, ENROOT_TEMP_PATH=home, PATH=real['PATH'])


def test_per_user_and_shared_staging(registries, env, tmp_path, users):
    """Per user: alice imports into her own directory; enroot stages in her cache and temp only. Shared: root imports into
    a directory users only read; bob makes his named container from that file, in his own data path, without an import."""
    top, found = users
    reg = registries['plain']
    uri = 'docker://%s/test/v2img:1.0' % reg.host
    (alice, alice_home), (bob, bob_home) = found['alice'], found['bob']
    alice_env = _as(env, alice_home)
    mine = os.path.join(alice_home, 'images')
    os.mkdir(mine)
    os.chown(mine, alice, alice)
    result = run_module(tmp_path, alice_env, user=alice, uri=uri, dest=mine)
    assert result['changed'] is True, result
    dest = os.path.join(mine, 'test+v2img+1.0.sqsh')
    assert result['dest'] == dest and is_squashfs(dest)
    for path in (dest, dest + '.import.json', os.path.join(alice_home, '.cache', 'enroot')):
        assert os.stat(path).st_uid == alice, path
    cached = os.listdir(os.path.join(alice_home, '.cache', 'enroot'))
    assert len([name for name in cached if re.match(r'^[0-9a-f]{64}$', name)]) == 3  # config and two layers
    assert not os.path.exists(os.path.join(env['HOME'], '.cache', 'enroot')), 'root\'s enroot cache was used'
    assert [name for name in os.listdir(alice_home) if name.startswith('enroot.')] == []  # enroot's work directory is gone
    # the enroot package without enroot+caps: a user's import fails clearly, nothing written
    before = snapshot(mine)
    # (an image without whiteouts: enroot-aufs2ovlfs asks for its capabilities on every layer)
    plain_uri = 'docker://%s/test/nowhiteout:1.0' % reg.host
    failed = run_module(tmp_path, _as(env, alice_home, caps=False), user=alice, uri=plain_uri, dest=mine)
    assert failed['error_kind'] == 'capabilities', failed
    assert failed['msg'] == ("enroot import of %s must convert the whiteouts (deleted files) of the image's layers, which "
                             'enroot-aufs2ovlfs does for a user other than root only with the file capabilities of the enroot+caps '
                             'package (failed to set capabilities: Operation not permitted): install it (enroot_install_caps: true '
                             'of the role gpucluster.bringup.enroot), or import as root' % plain_uri)
    assert snapshot(mine) == before

    shared = os.path.join(top, 'shared-images')
    os.mkdir(shared, 0o755)
    shared_dest = os.path.join(shared, 'v2img.sqsh')
    assert run_module(tmp_path, env, uri=uri, dest=shared_dest)['imported'] is True
    bob_env = _as(env, bob_home)
    first = run_module(tmp_path, bob_env, user=bob, uri=uri, dest=shared_dest, name='v2img')
    assert (first['changed'], first['imported'], first['created']) == (True, False, True), first
    with open(os.path.join(bob_home, '.local', 'share', 'enroot', 'pyxis_v2img', 'etc', 'test-release')) as handle:
        assert handle.read() == 'release 1.0\n'
    assert run_module(tmp_path, bob_env, user=bob, uri=uri, dest=shared_dest, name='v2img')['changed'] is False
    # the image must be imported again (another tag): bob cannot write there, one clear error, the file untouched
    before = snapshot(shared)
    other = run_module(tmp_path, bob_env, user=bob, uri='docker://%s/test/v2img:2.0' % reg.host, dest=shared_dest)
    assert other['error_kind'] == 'bad_dest'
    assert other['msg'].startswith('dest %s: the user the module runs as (uid %d) cannot create files in %s' % (shared_dest, bob, shared))
    assert 'is there, but must be imported again: the image file was imported from %s' % uri in other['msg']
    assert snapshot(shared) == before


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


def test_dest_directory_gets_enroot_default_name(registries, env, tmp_path):
    images = tmp_path / 'images'
    images.mkdir()
    uri = 'docker://%s#test/v2img:1.0' % registries['plain'].host
    result = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert result['changed'] is True
    assert result['dest'] == str(images / 'test+v2img+1.0.sqsh')
    assert is_squashfs(str(images / 'test+v2img+1.0.sqsh'))
    assert run_module(tmp_path, env, uri=uri, dest=str(images))['changed'] is False


# Every reference form enroot 4.1 reads (src/docker.sh docker::_parse_uri), and the ones without a scheme that pyxis
# turns into docker:// (srun --container-image=HOST:PORT/IMAGE:TAG): (form, the file name enroot gives it). {pin} is the
# digest the registry serves for test/v2img:1.0.
FORMS = [
    ('docker://{host}/test/v2img:1.0', 'test+v2img+1.0.sqsh'),
    ('docker://{host}#test/v2img:1.0', 'test+v2img+1.0.sqsh'),
    ('{host}/test/v2img:1.0', 'test+v2img+1.0.sqsh'),
    ('{host}#test/v2img:1.0', 'test+v2img+1.0.sqsh'),
    ('docker://{host}/test/v2img@{pin}', 'test+v2img+{pin}.sqsh'),
    ('docker://{host}/test/v2img:1.0@{pin}', 'test+v2img+{pin}.sqsh'),
    ('docker://{host}#test/v2img@{pin}', 'test+v2img+{pin}.sqsh'),
    ('docker://{host}#test/v2img:1.0@{pin}', 'test+v2img+{pin}.sqsh'),
    ('{host}/test/v2img@{pin}', 'test+v2img+{pin}.sqsh'),
]


@pytest.mark.parametrize('form, name', FORMS)
def test_reference_forms_import_the_same_image(registries, env, tmp_path, form, name):
    reg = registries['plain']
    pin = reg.digest('test/v2img', '1.0')
    given = form.format(host=reg.host, pin=pin)
    uri = given if given.startswith('docker://') else 'docker://' + given
    images = tmp_path / 'images'
    images.mkdir()
    result = run_module(tmp_path, env, uri=given, dest=str(images))
    assert result['changed'] is True, result
    assert result['uri'] == uri
    assert result['dest'] == str(images / name.format(pin=pin))
    assert result['digest'] == pin
    assert release_in(result['dest']) == 'release 1.0\n'
    assert json.loads((images / (os.path.basename(result['dest']) + '.import.json')).read_text())['uri'] == uri
    again = run_module(tmp_path, env, uri=given, dest=str(images))
    assert again['changed'] is False, again


def test_user_form_with_credentials_over_tls(registries, env, tmp_path):
    """docker://USER@REGISTRY#IMAGE:TAG from the TLS registry with htpasswd: the user's line of .credentials, the site CA."""
    reg = registries['tls']
    credentials(env, 'machine 127.0.0.1 login %s password %s\n' % ALICE)
    env = tls_env(env, registries['ca'])
    for uri in ('docker://alice@%s#private/img:1.0' % reg.host, 'docker://%s/private/img:1.0' % reg.host):
        dest = tmp_path / ('%d.sqsh' % len(uri))
        result = run_module(tmp_path, env, uri=uri, dest=str(dest))
        assert result['changed'] is True, result
        assert result['digest'] == reg.digest('private/img', '1.0', ca=registries['ca'], credentials=ALICE)
        assert release_in(dest) == 'release 1.0\n'
        assert run_module(tmp_path, env, uri=uri, dest=str(dest))['changed'] is False


def _enroot_with_sysconf(tmp_path, conf, ca):
    """The real enroot 4.1.2 script with its compiled-in /etc/enroot replaced by tmp_path/etc-enroot, holding the role's
    rendered enroot.conf (its /etc/enroot paths moved there too) and registry-ca.pem."""
    sysconf = tmp_path / 'etc-enroot'
    sysconf.mkdir()
    (sysconf / 'enroot.conf').write_text(conf.replace('/etc/enroot/', '%s/' % sysconf))
    if ca:
        (sysconf / 'registry-ca.pem').write_text(ca)
    with open(os.path.join(realenroot.root(), 'usr', 'bin', 'enroot')) as handle:
        script = handle.read()
    assert script.count('"/etc/enroot') == 3  # config::init, ENROOT_SYSCONF_PATH, the info line
    enroot = tmp_path / 'enroot-with-site-conf'
    enroot.write_text(script.replace('"/etc/enroot', '"%s' % sysconf))
    enroot.chmod(0o755)
    return str(enroot)


@pytest.mark.parametrize('with_ca', [True, False])
def test_site_ca_from_the_roles_enroot_conf(registries, env, tmp_path, with_ca):
    """enroot_registry_ca_certificates of the role: its enroot.conf (SSL_CERT_FILE) and CA file, rendered as the role
    writes them, read by the real enroot: the TLS+htpasswd registry with alice's credentials imports; without the CA it
    is refused, clearly. Nothing in the environment names a CA (SSL_CERT_FILE, CURL_CA_BUNDLE)."""
    with open(registries['ca']) as handle:
        pem = handle.read()
    paths = tmp_path / 'paths'
    conf, ca = enroot_role.enroot_conf(enroot_registry_ca_certificates=pem if with_ca else '',
                                       enroot_conf={'ENROOT_RUNTIME_PATH': '%s/run/user-$(id -u)' % paths, 'ENROOT_CACHE_PATH': '%s/cache' % paths,
                                                    'ENROOT_DATA_PATH': '%s/data' % paths, 'ENROOT_TEMP_PATH': env['ENROOT_TEMP_PATH']})
    assert ('SSL_CERT_FILE /etc/enroot/registry-ca.pem' in conf.splitlines()) is with_ca and bool(ca) is with_ca
    executable = _enroot_with_sysconf(tmp_path, conf, ca)
    credentials(env, 'machine 127.0.0.1 login %s password %s\n' % ALICE)
    env = tls_env(env, None)
    assert not [k for k in env if k in ('SSL_CERT_FILE', 'SSL_CERT_DIR', 'CURL_CA_BUNDLE') or k.startswith('ENROOT_')
                and k not in ('ENROOT_LIBRARY_PATH', 'ENROOT_TEMP_PATH')]
    uri = 'docker://%s/private/img:1.0' % registries['tls'].host
    if with_ca:
        dest = tmp_path / 'private.sqsh'
        result = run_module(tmp_path, env, uri=uri, dest=str(dest), executable=executable)
        assert result['changed'] is True, result
        assert release_in(dest) == 'release 1.0\n'
        assert os.listdir(str(paths / 'cache'))  # the role's ENROOT_CACHE_PATH was read from the same file
    else:
        result = _no_change(tmp_path, env, 'tls', 'the registry of %s presents a TLS certificate this host does not trust' % uri,
                            uri=uri, executable=executable, retries=0)


@pytest.mark.parametrize('task_retries, expected_requests', [(None, 3), (0, 1)])
def test_retries_of_the_roles_enroot_conf_stay_in_force(env, tmp_path, task_retries, expected_requests):
    """enroot_conf.ENROOT_TRANSFER_RETRIES of the role (2, in its rendered enroot.conf) is what the real enroot uses when the task
    sets no retries: its curl asks the registry (a STAND-IN answering 503 to everything) once and retries twice. A task's
    retries=0 overrides it for that import only (one request)."""
    unavailable = stand_in_registry.UnavailableServer()
    try:
        paths = tmp_path / 'paths'
        conf, ca = enroot_role.enroot_conf(enroot_conf={'ENROOT_TRANSFER_RETRIES': 2, 'ENROOT_RUNTIME_PATH': '%s/run/user-$(id -u)' % paths,
                                                        'ENROOT_CACHE_PATH': '%s/cache' % paths, 'ENROOT_DATA_PATH': '%s/data' % paths,
                                                        'ENROOT_TEMP_PATH': env['ENROOT_TEMP_PATH']})
        assert 'ENROOT_TRANSFER_RETRIES 2' in conf.splitlines()
        executable = _enroot_with_sysconf(tmp_path, conf, ca)
        uri = 'docker://%s/test/v2img@sha256:%s' % (unavailable.host, '0' * 64)  # pinned: the import itself asks
        args = {} if task_retries is None else {'retries': task_retries}
        result = _no_change(tmp_path, env, 'registry_error', '503 Service Unavailable', uri=uri, executable=executable, **args)
        assert result['failed'] is True
        assert len(unavailable.requests) == expected_requests, unavailable.requests
    finally:
        unavailable.stop()


def test_digest_pinned_import_needs_no_registry_call_when_current(registries, env, tmp_path):
    reg = registries['plain']
    reg.push(registries['layout'], '1.0', 'test/pinned')
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
    reg.push(registries['layout'], '2.0', 'test/pinned', as_tag='1.0')
    assert reg.digest('test/pinned', '1.0') != pinned
    second = run_module(tmp_path, env, uri=uri, dest=str(images))
    assert second['changed'] is False, second
    assert second['reason'] == 'the image file holds digest %s, the one pinned in the URI' % pinned
    assert enroot_calls(env) == ['import'], 'a digest-pinned URI needs no enroot digest call'
    assert release_in(dest) == 'release 1.0\n'


# ---- bad input: one clear error, nothing written ----------------------------------------------------------------

def _no_change(tmp_path, env, expect_kind, *fragments, **args):
    """Run the module on dest tmp_path/images/x.sqsh; assert it failed with ``expect_kind`` and each fragment in its
    message, and that the image directory and enroot's own directories are as before."""
    images = tmp_path / 'images'
    images.mkdir(exist_ok=True)
    (images / 'other.sqsh').write_bytes(b'another image, left alone')
    before = snapshot(images)
    result = run_module(tmp_path, env, dest=str(images / 'x.sqsh'), **args)
    assert result.get('failed') is True, result
    assert result['error_kind'] == expect_kind, result
    for fragment in fragments:
        if hasattr(fragment, 'search'):
            assert fragment.search(result['msg']), (fragment.pattern, result['msg'])
        else:
            assert fragment in result['msg'], (fragment, result['msg'])
    assert snapshot(images) == before
    assert enroot_litter(env) == []
    return result


def test_unknown_registry_nothing_listening(registries, env, tmp_path):
    # Port 1 (tcpmux) has no listener on these machines: the connection is refused.
    uri = 'docker://127.0.0.1:1#test/v2img:1.0'
    result = _no_change(tmp_path, env, 'unreachable', uri=uri, retries=0, connect_timeout=5)
    assert re.match(r"^cannot reach the registry of %s: Failed to connect to 127.0.0.1 port 1 after \d+ ms: Couldn't connect to "
                    r'server \(check the registry name, DNS, proxy and firewall\)$' % re.escape(uri), result['msg']), result['msg']


def test_unknown_registry_name(registries, env, tmp_path):
    uri = 'docker://registry.gpucluster.invalid/test/v2img:1.0'
    result = _no_change(tmp_path, env, 'unreachable', uri=uri, retries=0, connect_timeout=5)
    assert result['msg'] == ('cannot reach the registry of %s: Could not resolve host: registry.gpucluster.invalid (check the '
                             'registry name, DNS, proxy and firewall)' % uri)


@pytest.mark.parametrize('image, tag', [('test/v2img', '9.9'), ('test/nothere', '1.0')])
def test_tag_or_image_that_does_not_exist(registries, env, tmp_path, image, tag):
    host = registries['plain'].host
    uri = 'docker://%s/%s:%s' % (host, image, tag)
    url = 'http://%s/v2/%s/manifests/%s' % (host, image, tag)
    result = _no_change(tmp_path, env, 'not_found', uri=uri)
    assert result['msg'] == ('the registry %s has no tag %s of the image %s (%s returned 404, for %s): check the image name and '
                             'tag, or the registry may hold only an OCI manifest for it' % (host, tag, image, url, uri))


def test_pinned_digest_that_does_not_match(registries, env, tmp_path):
    host = registries['plain'].host
    wrong = 'sha256:' + hashlib.sha256(b'no such manifest').hexdigest()
    uri = 'docker://%s/test/v2img:1.0@%s' % (host, wrong)
    result = _no_change(tmp_path, env, 'not_found', uri=uri)
    assert result['msg'] == ('the registry %s has no manifest with the pinned digest %s for test/v2img (http://%s/v2/test/v2img/'
                             'manifests/%s returned 404): the digest matches no image there; check it (enroot digest '
                             'docker://%s#test/v2img:TAG prints the digest a tag has now)' % (host, wrong, host, wrong, host))


def test_wrong_credentials(registries, env, tmp_path):
    reg = registries['tls']
    credentials(env, 'machine 127.0.0.1 login alice password not-her-password\n')
    env = tls_env(env, registries['ca'])
    uri = 'docker://%s/private/img:1.0' % reg.host
    creds = os.path.join(env['HOME'], '.config', 'enroot', '.credentials')
    result = _no_change(tmp_path, env, 'auth', uri=uri)
    assert result['msg'] == ('the registry refused the credentials of user alice for %s (from %s): check the password of that '
                             "user's line in $ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com "
                             "lines); if the password is right: enroot 4.1.2 cannot send Basic credentials to a registry that "
                             'speaks HTTP/2 (docker-registry with htpasswd over TLS offers it by default), turn HTTP/2 off there '
                             '(http.http2.disabled) - README of the role gpucluster.bringup.enroot' % (uri, creds))


def test_basic_auth_over_http2_fails(registries, env, tmp_path):
    """A fact of enroot 4.1.2, kept so that a later enroot that fixes it shows here: Basic credentials that are right are
    refused by a registry that speaks HTTP/2 (curl traces the header as "authorization: Basic", enroot greps
    "Authorization: Basic"); the same registry with HTTP/2 off takes them (test_user_form_with_credentials_over_tls)."""
    reg = registries['tls_h2']
    credentials(env, 'machine 127.0.0.1 login %s password %s\n' % ALICE)
    # the registry itself takes these credentials (over HTTP/1.1 from Python)
    assert reg.digest('private/img', '1.0', ca=registries['ca'], credentials=ALICE).startswith('sha256:')
    uri = 'docker://%s/private/img:1.0' % reg.host
    result = _no_change(tmp_path, tls_env(env, registries['ca']), 'auth', 'the registry refused the credentials of user alice',
                        'enroot 4.1.2 cannot send Basic credentials to a registry that speaks HTTP/2', uri=uri)
    assert 'Authorization' not in result['stderr']


def test_missing_credentials(registries, env, tmp_path):
    reg = registries['tls']
    env = tls_env(env, registries['ca'])
    uri = 'docker://%s/private/img:1.0' % reg.host
    result = _no_change(tmp_path, env, 'auth', uri=uri)
    assert result['msg'] == ('the registry asks for credentials for %s and enroot had '
                             'none: add the line "machine HOST login USER password PASSWORD" for the registry host to '
                             '$ENROOT_CONFIG_PATH/.credentials of the user who imports (netrc format; the role '
                             'gpucluster.bringup.enroot writes it from enroot_credentials; NGC needs nvcr.io and authn.nvidia.com '
                             'lines)' % uri)


def test_tls_registry_without_the_site_ca(registries, env, tmp_path):
    reg = registries['tls']
    credentials(env, 'machine 127.0.0.1 login %s password %s\n' % ALICE)
    uri = 'docker://%s/private/img:1.0' % reg.host
    result = _no_change(tmp_path, tls_env(env, None), 'tls', uri=uri, retries=0)
    assert result['msg'] == ('the registry of %s presents a TLS certificate this host does not trust (curl: SSL certificate '
                             'problem: unable to get local issuer certificate): give the nodes the CA that signed it with '
                             'enroot_registry_ca_certificates of the role gpucluster.bringup.enroot (SSL_CERT_FILE in '
                             '/etc/enroot/enroot.conf, which pyxis jobs read too), or install it in the system CA store' % uri)


def test_token_server_down(registries, env, tmp_path):
    uri = 'docker://%s/test/v2img:1.0' % registries['token_down'].host
    result = _no_change(tmp_path, env, 'unreachable', uri=uri, retries=0)
    assert re.match(r"^the registry of %s sent enroot to its token server, which cannot be reached: Failed to connect to 127.0.0.1 "
                    r"port 1 after \d+ ms: Couldn't connect to server \(check the registry's token service \(the realm of its "
                    r'WWW-Authenticate answer\), DNS, proxy and firewall\)$' % re.escape(uri), result['msg']), result['msg']


def test_token_server_that_never_answers(registries, env, tmp_path):
    """The token server (a STAND-IN that takes the connection and never answers) hangs the import: timeout stops it."""
    uri = 'docker://%s/test/v2img:1.0' % registries['token_silent'].host
    result = _no_change(tmp_path, env, 'timeout', uri=uri, timeout=4)
    # the digest query before the import meets the token server first: it has the same limit
    assert result['msg'] == ('enroot digest of %s did not finish within timeout=4 seconds (its last step: Authenticating with user: '
                             '<anonymous>); stopped it' % uri)
    assert enroot_processes(env) == []
    pinned = uri.replace(':1.0', '@sha256:' + '0' * 64)  # no digest query: the import itself meets the silent token server
    result = _no_change(tmp_path, env, 'timeout', uri=pinned, timeout=4)
    assert result['msg'] == ('enroot import of %s did not finish within timeout=4 seconds (its last step: Authenticating with user: '
                             '<anonymous>); stopped it and removed its partial output' % pinned)
    assert enroot_processes(env) == []


@pytest.mark.parametrize('uri', ['docker://#nvidia/pytorch', 'docker://a#b#c', 'docker://x.io/Foo', '/shared/images/x.sqsh'])
def test_reference_enroot_refuses(env, tmp_path, uri):
    """References NVIDIA's enroot refuses (its own parser, run here) are refused by the module first, naming the reference."""
    if uri.startswith('docker://'):
        assert realenroot.split_uri(uri, tmp_path) is None
    result = _no_change(tmp_path, env, 'invalid_uri', 'uri: invalid image URI "%s": ' % uri, uri=uri)
    if not uri.startswith('docker://'):
        assert 'it is a file path, not an image in a registry' in result['msg']
    assert enroot_calls(env) == []


def test_full_disk_for_the_image_directory(registries, env, tmp_path):
    if os.getuid() != 0:
        pytest.skip('mounting a small tmpfs for the image directory needs root (this run is uid %d)' % os.getuid())
    images = tmp_path / 'images'
    images.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=256k', 'gpucluster-test-full', str(images)], check=True)
    try:
        uri = 'docker://%s/test/v2img:1.0' % registries['plain'].host
        result = _no_change(tmp_path, env, 'no_space', 'no space left on a device while enroot imported %s (' % uri,
                            re.compile(r'; the image is written to %s \(in a hidden temporary directory there, then renamed\), which '
                                       r'has \d+ KiB free now; ' % re.escape(str(images))), uri=uri)
        assert 'No space left on device' in result['stderr']
        assert leftovers(images) == []
    finally:
        subprocess.run(['umount', str(images)], check=True)


def test_oci_only_manifest_is_named(registries, env, tmp_path):
    host = registries['plain'].host
    uri = 'docker://%s#test/ociimg:1.0' % host
    result = _no_change(tmp_path, env, 'oci_manifest', uri=uri)
    assert result['msg'] == (
        'the registry serves only an OCI image manifest for %s (http://%s/v2/test/ociimg/manifests/1.0 answers 404 "OCI manifest '
        'found, but accept header does not support OCI manifests" to a request that does not list OCI in its Accept header, as '
        "enroot's requests do); push the image as Docker v2 schema 2 (skopeo copy --format v2s2, docker push, buildah push "
        '--format docker)' % (uri, host))
    assert '[ERROR] URL http://%s/v2/test/ociimg/manifests/1.0 returned error code: 404' % host in result['stderr']


def test_plain_http_registry_without_allow_http(registries, env, tmp_path):
    env = dict(env)
    del env['ENROOT_ALLOW_HTTP']
    uri = 'docker://%s/test/v2img:1.0' % registries['plain'].host
    result = _no_change(tmp_path, env, 'plain_http', uri=uri, retries=0)
    assert result['msg'].startswith('the registry of %s answers plain HTTP, and enroot speaks HTTPS unless ENROOT_ALLOW_HTTP is set '
                                    '(curl: ' % uri)
    assert 'wrong version number' in result['msg']


@pytest.mark.parametrize('uri, reason', [
    ('docker://ubuntu@sha256:abc', 'the digest "sha256:abc" must be "sha256:" and 64 lower-case hexadecimal digits'),
    ('docker://Ubuntu', 'the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('oras://x', 'scheme "oras" is not one enroot imports from'),
])
def test_malformed_uri(env, tmp_path, uri, reason):
    result = run_module(tmp_path, env, uri=uri, dest=str(tmp_path / 'x.sqsh'))
    assert result['error_kind'] == 'invalid_uri'
    assert result['msg'] == 'uri: invalid image URI "%s": %s; valid forms are %s' % (uri, reason, (
        'docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST] (REGISTRY with a "." or a ":port"), '
        'docker://[USER@]REGISTRY#IMAGE[:TAG][@sha256:DIGEST], the same without docker:// (as srun --container-image takes it), '
        'dockerd://IMAGE[:TAG] or podman://IMAGE[:TAG] (for example docker://nvcr.io/nvidia/pytorch:24.01-py3, '
        'nvcr.io/nvidia/pytorch:24.01-py3 or docker://nvcr.io#nvidia/pytorch:24.01-py3)'))
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


def test_negative_timeout(env, tmp_path):
    result = run_module(tmp_path, env, uri='docker://ubuntu', dest=str(tmp_path / 'x.sqsh'), timeout=-1)
    assert result['msg'] == 'timeout must be 0 or more (seconds, 0 for no limit), got -1'


# ---- interrupted imports: the real enroot stopped mid-download and mid-write ---------------------------------------

@pytest.fixture
def hanging(registries):
    """A STAND-IN proxy in front of the plain registry that stops in the middle of the image's largest layer."""
    proxy = stand_in_registry.HangingBlobProxy(registries['plain'].host)
    yield proxy
    proxy.stop()


def _wait_mid_blob(proxy, proc, env):
    """Wait until the real enroot is in the middle of a layer: the proxy sent half of it, enroot's curl wrote it to a
    partial file in its cache and its work directory exists."""
    assert proxy.hanging.wait(60), proc.communicate(timeout=5) if proc.poll() is not None else 'the proxy never cut a blob'
    deadline = time.time() + 30
    while time.time() < deadline:
        litter = enroot_litter(env)
        if any(name.startswith('enroot.') for name in litter) and any('.' in name and not name.startswith('enroot.') for name in litter):
            return litter
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError('enroot never started writing the layer: %s' % enroot_litter(env))


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_interrupted_import_leaves_nothing_half_written(registries, env, tmp_path, hanging, signum):
    dest = tmp_path / 'interrupted.sqsh'
    uri = 'docker://%s/test/v2img:1.0' % hanging.host
    proc = start_module(tmp_path, env, uri=uri, dest=str(dest))
    litter = _wait_mid_blob(hanging, proc, env)
    assert len(leftovers(tmp_path)) == 1 and litter  # the module's staging directory and enroot's partial layer are there
    proc.send_signal(signum)
    out, _err = proc.communicate(timeout=30)
    result = json.loads(out)
    assert result['error_kind'] == 'interrupted'
    assert result['msg'] == ('enroot import of %s was interrupted by signal %d (its last step: Downloading 2 missing layers...); '
                             'stopped it and removed its partial output' % (uri, signum))
    assert not dest.exists() and not (tmp_path / 'interrupted.sqsh.import.json').exists()
    assert leftovers(tmp_path) == []
    assert enroot_litter(env) == []
    assert enroot_processes(env) == []


def test_timeout_stops_and_cleans(registries, env, tmp_path, hanging):
    dest = tmp_path / 'slow.sqsh'
    uri = 'docker://%s/test/v2img:1.0' % hanging.host
    result = run_module(tmp_path, env, uri=uri, dest=str(dest), timeout=5)
    assert hanging.hung, 'the import never reached the layer the proxy cuts'
    assert result['error_kind'] == 'timeout'
    assert result['msg'] == ('enroot import of %s did not finish within timeout=5 seconds (its last step: Downloading 2 missing '
                             'layers...); stopped it and removed its partial output' % uri)
    assert not dest.exists() and leftovers(tmp_path) == [] and enroot_litter(env) == []
    assert enroot_processes(env) == []


def test_killed_module_leftover_is_removed_by_next_run(registries, env, tmp_path, hanging):
    dest = tmp_path / 'killed.sqsh'
    uri = 'docker://%s/test/v2img:1.0' % hanging.host
    proc = start_module(tmp_path, env, uri=uri, dest=str(dest))
    _wait_mid_blob(hanging, proc, env)
    proc.kill()  # SIGKILL: the module cannot clean up, and enroot (its own process group) goes on
    proc.wait()
    survivors = enroot_processes(env)
    assert survivors, 'SIGKILL of the module cannot stop enroot; it should still run'
    # the stalled layer ends (the proxy closes it half-sent): enroot fails on its own and removes its own work files
    hanging.release.set()
    deadline = time.time() + 60
    while enroot_processes(env) and time.time() < deadline:
        time.sleep(0.1)
    assert enroot_processes(env) == []
    assert enroot_litter(env) == []
    assert not dest.exists()
    assert len(leftovers(tmp_path)) == 1  # the killed module's staging directory
    # An import of the same file by another node of a shared file system, with a pid that is not alive here.
    other_node = tmp_path / '.killed.sqsh.enroot-import.some-other-node.999999999.abcd'
    other_node.mkdir()
    result = run_module(tmp_path, env, uri='docker://%s/test/v2img:1.0' % registries['plain'].host, dest=str(dest))
    assert result['changed'] is True and is_squashfs(str(dest))
    assert leftovers(tmp_path) == [other_node.name]


def test_import_interrupted_while_writing_the_squashfs(registries, env, tmp_path):
    """The real enroot stopped while its mksquashfs writes the image (a third layer of 12 MB of random data, xz on one
    processor, so the write lasts seconds): the partial squashfs in the staging directory goes, dest stays absent."""
    reg = registries['plain']
    layout = str(tmp_path / 'big-layout')
    noise = os.urandom(12 * 1024 * 1024)
    testimage.build_layout(layout, 'big', extra=[('opt', 'dir', None, 0o755), ('opt/noise', 'file', noise, 0o644)])
    reg.push(layout, 'big', 'test/big')
    dest = tmp_path / 'big.sqsh'
    uri = 'docker://%s/test/big:big' % reg.host
    env = dict(env, ENROOT_SQUASH_OPTIONS='-comp xz -exit-on-error', ENROOT_MAX_PROCESSORS='1')
    proc = start_module(tmp_path, env, uri=uri, dest=str(dest))
    deadline, partial = time.time() + 120, None
    while partial is None and time.time() < deadline:
        found = [p for p in glob.glob(str(tmp_path / '.big.sqsh.enroot-import*' / 'big.sqsh')) if os.path.getsize(p) > 0]
        partial = found[0] if found else None
        assert proc.poll() is None or partial, proc.communicate()
        time.sleep(0.02)
    assert partial, 'mksquashfs never started writing'
    proc.send_signal(signal.SIGTERM)
    result = json.loads(proc.communicate(timeout=30)[0])
    assert result['error_kind'] == 'interrupted', result
    assert result['msg'] == ('enroot import of %s was interrupted by signal 15 (its last step: Creating squashfs filesystem...); '
                             'stopped it and removed its partial output' % uri)
    assert not dest.exists() and leftovers(tmp_path) == [] and enroot_litter(env) == []
    assert enroot_processes(env) == []
