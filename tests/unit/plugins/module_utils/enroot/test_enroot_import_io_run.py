# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugins/module_utils/enroot/_enroot_import_io.py: the import, its record, the container and run()'s whole result,
with a stand-in module and enroot (import_io_fakes)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_import_io as io_mod
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run
from ansible_collections.gpucluster.bringup.tests.unit.plugins.module_utils.enroot.import_io_fakes import (
    DIGEST_A, DIGEST_B, URI, Exited, FakeRun, HTTPErrorLike, NoCode, OpenURL, Response, failure, manager)

MANIFEST = 'http://127.0.0.1:5000/v2/test/img/manifests/1.0'
NOT_FOUND = '[ERROR] URL %s returned error code: 404 Not Found\n' % MANIFEST


def result_of(found):
    with pytest.raises(Exited) as caught:
        found.run()
    return caught.value.result


# ---- do_import ----------------------------------------------------------------------------------------------


def test_import_into_a_temporary_directory_then_rename(tmp_path, monkeypatch):
    run = FakeRun(image=b'squashfs image')
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    monkeypatch.setenv('GPUCLUSTER_MARK', 'kept')
    found = manager(tmp_path, timeout=11, connect_timeout=4, arch='x86_64')
    found.do_import()
    assert (tmp_path / 'img.sqsh').read_bytes() == b'squashfs image'
    assert os.listdir(str(tmp_path)) == ['img.sqsh']
    (argv, env, timeout), = run.calls
    output = argv[3]
    tmpdir = os.path.dirname(output)
    assert argv == ['/bin/sh', 'import', '--output', output, '--arch', 'x86_64', '--', URI]
    assert (os.path.dirname(tmpdir), os.path.basename(output)) == (str(tmp_path), 'img.sqsh')
    assert os.path.basename(tmpdir).startswith(_enroot.temp_prefix('img.sqsh', io_mod.socket.gethostname(), os.getpid()))
    assert (timeout, env['GPUCLUSTER_MARK'], env['ENROOT_CONNECT_TIMEOUT']) == (11, 'kept', '4')


@pytest.mark.parametrize('run, expected', [
    (FakeRun(image=None, out='done', err='warn'),
     {'msg': 'enroot import of %s exited 0 but wrote no image file' % URI, 'stdout': 'done', 'stderr': 'warn', 'error_kind': 'unknown'}),
    (FakeRun(image=b''),
     {'msg': 'enroot import of %s exited 0 but wrote no image file' % URI, 'stdout': '', 'stderr': '', 'error_kind': 'unknown'}),
    (FakeRun(rc=1, out='o', err='[ERROR] Checksum mismatch: sha256:x\n'),
     {'msg': 'a layer of %s failed its checksum (sha256:x); the download was corrupted, retry' % URI, 'rc': 1, 'stdout': 'o',
      'stderr': '[ERROR] Checksum mismatch: sha256:x\n', 'error_kind': 'checksum'}),
    (FakeRun(exc=_enroot_run.TimedOut(3)),
     {'msg': 'enroot import of %s did not finish within timeout=3 seconds; stopped it and removed its partial output' % URI,
      'stderr': '', 'error_kind': 'timeout'}),
    (FakeRun(exc=_enroot_run.Interrupted(2)),
     {'msg': 'enroot import of %s was interrupted by signal 2; stopped it and removed its partial output' % URI,
      'stderr': '', 'error_kind': 'interrupted'}),
])
def test_failed_import_leaves_nothing_behind(tmp_path, monkeypatch, run, expected):
    if run.exc is not None:
        run.exc.stderr = ''
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    found = manager(tmp_path, timeout=3)
    on_disk = []
    found.module.on_fail = lambda: on_disk.append(os.listdir(str(tmp_path)))
    assert failure(found.do_import) == expected
    # the partial output is gone when the failure is reported, not only when the module exits
    assert on_disk == [[]] and os.listdir(str(tmp_path)) == []


def test_stopped_import_names_its_last_step(tmp_path, monkeypatch):
    exc = _enroot_run.TimedOut(3)
    exc.stderr = '[INFO] Downloading 2 missing layers...\n'
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(exc=exc))
    assert failure(manager(tmp_path).do_import)['msg'] == (
        'enroot import of %s did not finish within timeout=3 seconds (its last step: Downloading 2 missing layers...); stopped it '
        'and removed its partial output' % URI)


def test_import_that_cannot_be_moved_into_place(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun())
    found = manager(tmp_path)
    os.mkdir(found.dest)
    (tmp_path / 'img.sqsh' / 'in-the-way').write_text('')
    on_disk = []
    found.module.on_fail = lambda: on_disk.append(os.listdir(str(tmp_path)))
    assert failure(found.do_import) == {
        'msg': 'dest %s: cannot move the imported image into place: Is a directory' % found.dest, 'error_kind': 'bad_dest'}
    assert on_disk == [['img.sqsh']] and os.listdir(str(tmp_path)) == ['img.sqsh']


def test_import_without_a_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun())
    found = manager(tmp_path)

    def full(prefix, dir):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(io_mod.tempfile, 'mkdtemp', full)
    assert failure(found.do_import) == {
        'msg': 'dest %s: cannot create the temporary import directory in %s: No space left on device' % (found.dest, tmp_path),
        'error_kind': 'bad_dest'}


def test_import_out_of_space_says_where_and_how_much(tmp_path, monkeypatch):
    err = 'mksquashfs: Write failed because No space left on device\n'
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(rc=1, err=err))
    monkeypatch.setattr(io_mod, '_free_text', lambda directory: '42 KiB in %s' % directory)
    assert failure(manager(tmp_path).do_import)['msg'] == (
        'no space left on a device while enroot imported %s (mksquashfs: Write failed because No space left on device); the image '
        'is written to %s (in a hidden temporary directory there, then renamed), which has 42 KiB in %s free now; enroot also '
        'unpacks the layers in its ENROOT_TEMP_PATH and keeps them in its ENROOT_CACHE_PATH: make room or choose a dest with more '
        'space' % (URI, tmp_path, tmp_path))


# ---- the OCI-only probe -------------------------------------------------------------------------------------

OCI_BODY = ('{"errors":[{"code":"MANIFEST_UNKNOWN","message":"%s"}]}' % _enroot.OCI_ONLY_TEXT).encode()


@pytest.mark.parametrize('answer, oci_only', [
    (HTTPErrorLike(404, OCI_BODY), True),
    (HTTPErrorLike(404, b'\xff\xfe' + OCI_BODY), True),  # not UTF-8: read with replacement characters
    (HTTPErrorLike(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}'), False),
    (HTTPErrorLike(404, unreadable=True), False),
    (HTTPErrorLike(401, OCI_BODY), False),
    (Response(OCI_BODY, 404), True),
    (Response(OCI_BODY.decode(), 404), True),
    (Response(b'{}', 200), False),
    (OSError('connection refused'), False),
    (NoCode(OCI_BODY), False),
])
def test_not_found_is_probed_for_an_oci_only_manifest(tmp_path, monkeypatch, answer, oci_only):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(rc=1, err=NOT_FOUND))
    open_url = OpenURL(answer)
    result = failure(manager(tmp_path, open_url=open_url).do_import)
    assert open_url.calls == [(MANIFEST, {'headers': {'Accept': 'application/vnd.docker.distribution.manifest.v2+json'},
                                          'timeout': 30, 'validate_certs': True})]
    kind = 'oci_manifest' if oci_only else 'not_found'
    assert result == {'msg': _enroot.error_message(kind, MANIFEST, URI, 1, NOT_FOUND, oci_only=oci_only), 'rc': 1, 'stdout': '',
                      'stderr': NOT_FOUND, 'error_kind': kind}
    assert result['msg'].startswith('the registry serves only an OCI image manifest' if oci_only else 'the registry 127.0.0.1:5000 has no tag')


def test_the_probe_waits_connect_timeout_and_skips_what_is_no_manifest_url(tmp_path):
    open_url = OpenURL(HTTPErrorLike(404, OCI_BODY))
    found = manager(tmp_path, open_url=open_url, connect_timeout=5)
    assert found._probe_oci_only(MANIFEST) is True
    assert open_url.calls[0][1]['timeout'] == 5
    assert found._probe_oci_only('http://127.0.0.1:5000/v2/test/img/blobs/sha256:x') is False
    assert len(open_url.calls) == 1


# ---- records ------------------------------------------------------------------------------------------------


def test_write_record_next_to_the_image(tmp_path):
    found = manager(tmp_path)
    (tmp_path / 'img.sqsh').write_bytes(b'1234567')
    os.umask(os.umask(0o077))
    found.write_record(DIGEST_A)
    path = str(tmp_path / 'img.sqsh.import.json')
    with open(path) as handle:
        assert handle.read() == _enroot.make_record(found.ref, DIGEST_A, 7)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    (src, dst), = found.module.moves
    assert (os.path.dirname(src), os.path.basename(src).startswith('.img.sqsh.import.json.'), dst) == (str(tmp_path), True, path)


def test_write_record_that_cannot_be_written(tmp_path):
    found = manager(tmp_path)
    (tmp_path / 'img.sqsh').write_bytes(b'1')
    found.directory = str(tmp_path / 'gone')
    assert failure(found.write_record, None) == {
        'msg': 'dest %s: cannot write the import record %s.import.json: No such file or directory' % (found.dest, found.dest),
        'error_kind': 'bad_dest'}


def test_record_dir(tmp_path, monkeypatch):
    assert manager(tmp_path, container_record_dir='/srv/records').record_dir() == '/srv/records'
    monkeypatch.setenv('HOME', '/home/alice')
    assert manager(tmp_path).record_dir() == '/home/alice/.local/state/gpucluster.bringup/enroot'
    monkeypatch.setenv('HOME', '')
    home = io_mod.pwd.getpwuid(os.getuid()).pw_dir
    assert manager(tmp_path).record_dir() == os.path.join(home, '.local/state/gpucluster.bringup/enroot')


def test_container_identity_saved_and_read_back(tmp_path):
    records = tmp_path / 'records' / 'deep'
    found = manager(tmp_path, name='job', container_record_dir=str(records))
    assert found.saved_container_identity() is None
    identity = _enroot.image_identity(found.dest, 3, 99, DIGEST_A)
    found.save_container_identity(identity)
    assert stat.S_IMODE(os.stat(str(records)).st_mode) == 0o700
    assert (records / 'pyxis_job.json').read_text() == json.dumps(identity, sort_keys=True) + '\n'
    assert os.path.basename(found.module.moves[0][0]).startswith('.pyxis_job.')
    assert found.saved_container_identity() == identity
    (records / 'pyxis_job.json').write_text('{"format": 1}')
    assert found.saved_container_identity() is None


def test_container_identity_that_cannot_be_saved(tmp_path):
    (tmp_path / 'file').write_text('')
    found = manager(tmp_path, name='job', container_record_dir=str(tmp_path / 'records'))
    found.module.params['container_record_dir'] = str(tmp_path / 'file' / 'records')
    assert failure(found.save_container_identity, {}) == {
        'msg': 'container_record_dir %s/file/records: cannot write the record of pyxis_job: Not a directory' % tmp_path,
        'error_kind': 'bad_option'}


def test_image_identity_of_the_file(tmp_path):
    found = manager(tmp_path)
    (tmp_path / 'img.sqsh').write_bytes(b'abc')
    os.utime(found.dest, ns=(5, 123456789012))
    assert found.image_identity(DIGEST_B) == {'format': 1, 'image': found.dest, 'size': 3, 'mtime_ns': 123456789012, 'digest': DIGEST_B}


# ---- create_container ---------------------------------------------------------------------------------------


def test_create_container_removes_the_old_one_first(tmp_path):
    found = manager(tmp_path, name='job')
    found.create_container(True)
    assert [argv for argv, _env in found.module.commands] == [
        ['/bin/sh', 'remove', '--force', '--', 'pyxis_job'], ['/bin/sh', 'create', '--name', 'pyxis_job', '--', found.dest]]
    found.module.commands = []
    found.create_container(False)
    assert [argv[1] for argv, _env in found.module.commands] == ['create']


@pytest.mark.parametrize('step, msg', [
    ('remove', 'enroot remove pyxis_job failed with exit code 5: busy'),
    ('create', 'enroot create --name pyxis_job {dest} failed with exit code 5: busy'),
])
def test_create_container_fails(tmp_path, step, msg):
    found = manager(tmp_path, name='job', answers={step: (5, 'out', ' busy\n')})
    assert failure(found.create_container, True) == {'msg': msg.format(dest=found.dest), 'rc': 5, 'stdout': 'out', 'stderr': ' busy\n',
                                                     'error_kind': 'unknown'}


# ---- run(): the whole result --------------------------------------------------------------------------------


def image_with_record(tmp_path, digest, uri=URI, data=b'image'):
    (tmp_path / 'img.sqsh').write_bytes(data)
    (tmp_path / 'img.sqsh.import.json').write_text(json.dumps({'format': 1, 'uri': uri, 'digest': digest, 'size': len(data)}))


def side(path, exists, uri, digest, **extra):
    return dict({'path': path, 'exists': exists, 'uri': uri, 'digest': digest}, **extra)


@pytest.mark.parametrize('check_mode', [False, True])
def test_run_imports_a_missing_image(tmp_path, monkeypatch, check_mode):
    run = FakeRun(digest=(0, DIGEST_A + '\n', ''), image=b'new image')
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    found = manager(tmp_path, check_mode=check_mode)
    dest = found.dest
    assert result_of(found) == {
        'dest': dest, 'uri': URI, 'imported': True, 'reason': 'the image file does not exist', 'digest': DIGEST_A, 'changed': True,
        'actions': ['import %s' % URI],
        'diff': {'before': side(dest, False, None, None), 'after': side(dest, True, URI, DIGEST_A)}}
    if check_mode:
        assert [argv[1] for argv, _env, _timeout in run.calls] == ['digest'] and os.listdir(str(tmp_path)) == []
    else:
        assert [argv[1] for argv, _env, _timeout in run.calls] == ['digest', 'import']
        assert json.loads((tmp_path / 'img.sqsh.import.json').read_text()) == {'format': 1, 'uri': URI, 'digest': DIGEST_A, 'size': 9}


def test_run_keeps_an_image_whose_digest_is_unknown_and_reports_the_registrys(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=(0, DIGEST_A + '\n', '')))
    image_with_record(tmp_path, None)
    found = manager(tmp_path)
    assert result_of(found) == {
        'dest': found.dest, 'uri': URI, 'imported': False, 'reason': 'the image file exists and the image digest cannot be known',
        'digest': DIGEST_A, 'changed': False, 'actions': [],
        'diff': {'before': side(found.dest, True, URI, None), 'after': side(found.dest, True, URI, None)}}


def test_run_reports_the_recorded_digest_when_the_registry_gives_none(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=(1, '', 'down')))
    image_with_record(tmp_path, DIGEST_B)
    found = manager(tmp_path)
    result = result_of(found)
    assert (result['imported'], result['digest'], result['changed']) == (False, DIGEST_B, False)
    assert found.module.warnings == ['could not get the digest of %s (enroot digest exited 1: down)' % URI]


def test_run_imports_an_image_of_another_uri_without_asking_the_registry(tmp_path, monkeypatch):
    run = FakeRun()
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    other = 'docker://127.0.0.1:5000/test/img:2.0'
    image_with_record(tmp_path, DIGEST_B, uri=other)
    found = manager(tmp_path)
    assert result_of(found) == {
        'dest': found.dest, 'uri': URI, 'imported': True, 'reason': 'the image file was imported from %s, not %s' % (other, URI),
        'digest': None, 'changed': True, 'actions': ['import %s' % URI],
        'diff': {'before': side(found.dest, True, other, DIGEST_B), 'after': side(found.dest, True, URI, None)}}
    assert [argv[1] for argv, _env, _timeout in run.calls] == ['import']


def test_run_keeps_an_image_without_record_without_asking_the_registry(tmp_path, monkeypatch):
    run = FakeRun()
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    (tmp_path / 'img.sqsh').write_bytes(b'mine')
    found = manager(tmp_path)
    assert result_of(found) == {
        'dest': found.dest, 'uri': URI, 'imported': False,
        'reason': 'the image file exists and has no import record; kept as it is (use force to replace it)',
        'digest': None, 'changed': False, 'actions': [],
        'diff': {'before': side(found.dest, True, None, None), 'after': side(found.dest, True, None, None)}}
    assert run.calls == []


def test_run_forced_asks_the_registry(tmp_path, monkeypatch):
    run = FakeRun(digest=(0, DIGEST_A, ''))
    monkeypatch.setattr(_enroot_run, 'run_stoppable', run)
    (tmp_path / 'img.sqsh').write_bytes(b'mine')
    result = result_of(manager(tmp_path, force=True, name='job', container_record_dir=str(tmp_path / 'records'),
                               answers={'list': (0, 'pyxis_job\n', '')}))
    assert (result['reason'], result['digest']) == ('force is set', DIGEST_A)
    assert (result['created'], result['container_reason']) == (True, 'force is set')
    assert [argv[1] for argv, _env, _timeout in run.calls] == ['digest', 'import']


def test_run_creates_the_container_of_an_up_to_date_image(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=(0, DIGEST_A, '')))
    image_with_record(tmp_path, DIGEST_A)
    records = tmp_path / 'records'
    found = manager(tmp_path, name='job', container_record_dir=str(records))
    wanted = found.image_identity(DIGEST_A)
    result = result_of(found)
    assert result == {
        'dest': found.dest, 'uri': URI, 'imported': False, 'reason': 'the image file holds digest %s, the one the registry serves' % DIGEST_A,
        'digest': DIGEST_A, 'container': 'pyxis_job', 'created': True, 'container_reason': 'the container does not exist',
        'changed': True, 'actions': ['create pyxis_job'],
        'diff': {'before': side(found.dest, True, URI, DIGEST_A, container=None),
                 'after': side(found.dest, True, URI, DIGEST_A, container='pyxis_job')}}
    assert [argv[1] for argv, _env in found.module.commands] == ['list', 'create']
    assert json.loads((records / 'pyxis_job.json').read_text()) == wanted

    # the same again: the container is there and was created from this file
    again = manager(tmp_path, name='job', container_record_dir=str(records), answers={'list': (0, 'pyxis_job\n', '')})
    result = result_of(again)
    assert (result['created'], result['changed'], result['actions']) == (False, False, [])
    assert result['container_reason'] == 'the container was created from the current image file'
    assert result['diff']['before']['container'] == 'pyxis_job'

    # the file changed under it: removed and created again
    (records / 'pyxis_job.json').write_text(json.dumps(dict(wanted, size=1)))
    again = manager(tmp_path, name='job', container_record_dir=str(records), answers={'list': (0, 'pyxis_job\n', '')})
    result = result_of(again)
    assert (result['created'], result['actions']) == (True, ['remove and recreate pyxis_job'])
    assert [argv[1] for argv, _env in again.module.commands] == ['list', 'remove', 'create']
    assert json.loads((records / 'pyxis_job.json').read_text()) == wanted


def test_run_imports_then_creates_the_container_from_the_new_image(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=(0, DIGEST_B, ''), image=b'fresh'))
    image_with_record(tmp_path, DIGEST_A)
    records = tmp_path / 'records'
    found = manager(tmp_path, name='job', container_record_dir=str(records), answers={'list': (0, 'pyxis_job\n', '')})
    result = result_of(found)
    assert (result['imported'], result['digest'], result['created'], result['container_reason']) == (
        True, DIGEST_B, True, 'the image file is being imported again')
    assert result['actions'] == ['import %s' % URI, 'remove and recreate pyxis_job']
    assert json.loads((records / 'pyxis_job.json').read_text()) == found.image_identity(DIGEST_B)


def test_run_in_check_mode_creates_no_container(tmp_path, monkeypatch):
    monkeypatch.setattr(_enroot_run, 'run_stoppable', FakeRun(digest=(0, DIGEST_A, '')))
    image_with_record(tmp_path, DIGEST_A)
    found = manager(tmp_path, check_mode=True, name='job', container_record_dir=str(tmp_path / 'records'))
    assert result_of(found)['actions'] == ['create pyxis_job']
    assert [argv[1] for argv, _env in found.module.commands] == ['list']
    assert not (tmp_path / 'records').exists()
