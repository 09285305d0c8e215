# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for plugins/module_utils/_enroot.py (URIs, names, argv, records, plans, errors)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _enroot

DIGEST_A = 'sha256:' + 'a' * 64
DIGEST_B = 'sha256:' + 'b' * 64


@pytest.mark.parametrize('uri, expected', [
    ('docker://ubuntu', ('docker', None, None, 'ubuntu', None)),
    ('docker://ubuntu:22.04', ('docker', None, None, 'ubuntu', '22.04')),
    ('docker://nvcr.io#nvidia/pytorch:24.01-py3', ('docker', None, 'nvcr.io', 'nvidia/pytorch', '24.01-py3')),
    ('docker://$oauthtoken@nvcr.io#nvidia/tensorflow:19.01-py3', ('docker', '$oauthtoken', 'nvcr.io', 'nvidia/tensorflow', '19.01-py3')),
    ('docker://127.0.0.1:5000#test/v2img:1.0', ('docker', None, '127.0.0.1:5000', 'test/v2img', '1.0')),
    ('docker://alice@registry.local:5000#a/b/c', ('docker', 'alice', 'registry.local:5000', 'a/b/c', None)),
    ('docker://library/ubuntu:latest', ('docker', None, None, 'library/ubuntu', 'latest')),
    ('dockerd://myimage:dev', ('dockerd', None, None, 'myimage', 'dev')),
    ('podman://localhost/myimage', ('podman', None, None, 'localhost/myimage', None)),
])
def test_parse_uri_valid(uri, expected):
    ref = _enroot.parse_uri(uri)
    assert (ref.scheme, ref.user, ref.registry, ref.image, ref.tag) == expected
    assert ref.uri == uri
    assert ref.from_registry == (expected[0] == 'docker')
    assert ref.as_dict()['image'] == expected[3]


@pytest.mark.parametrize('uri, reason', [
    ('', 'it is empty'),
    (None, 'it is empty'),
    (' docker://ubuntu', 'it has leading or trailing blanks'),
    ('ubuntu:22.04', 'it has no scheme'),
    ('http://ubuntu', 'scheme "http" is not one enroot imports from'),
    ('docker://', 'the image is missing'),
    ('docker://Ubuntu', 'the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://nvcr.io#', 'the image is missing'),
    ('docker://#nvidia/pytorch', 'the registry "" is not a host[:port]'),
    ('docker://ubuntu:bad tag', 'the tag "bad tag" is not a valid tag'),
    ('docker://ubuntu:', 'the tag "" is not a valid tag'),
    ('docker://us er@nvcr.io#nvidia/pytorch', 'the user "us er" has characters enroot does not accept'),
    ('docker://nvcr.io/nvidia/pytorch:24.01-py3',
     '"nvcr.io" looks like a registry; enroot separates the registry with "#": docker://nvcr.io#nvidia/pytorch:24.01-py3'),
    ('docker://127.0.0.1:5000/test/img', 'the tag "5000/test/img" is not a valid tag'),
    ('docker://localhost/test/img', '"localhost" looks like a registry; enroot separates the registry with "#": docker://localhost#test/img'),
    ('dockerd://', 'the image part "" is not IMAGE[:TAG]'),
    ('podman://my image', 'the image part "my image" is not IMAGE[:TAG]'),
])
def test_parse_uri_invalid(uri, reason):
    with pytest.raises(ValueError) as err:
        _enroot.parse_uri(uri)
    assert str(err.value) == 'invalid image URI "%s": %s; valid forms are %s' % (uri, reason, _enroot.VALID_FORMS)


@pytest.mark.parametrize('uri, name', [
    ('docker://ubuntu', 'ubuntu+latest.sqsh'),
    ('docker://library/ubuntu:22.04', 'ubuntu+22.04.sqsh'),
    ('docker://nvcr.io#nvidia/pytorch:24.01-py3', 'nvidia+pytorch+24.01-py3.sqsh'),
    ('docker://reg:5000#library/base:1', 'library+base+1.sqsh'),
    ('dockerd://myimage:dev', 'myimage+dev.sqsh'),
    ('podman://localhost/myimage', 'localhost+myimage.sqsh'),
])
def test_default_output_name(uri, name):
    assert _enroot.default_output_name(_enroot.parse_uri(uri)) == name


@pytest.mark.parametrize('name, expected', [('pytorch', 'pyxis_pytorch'), ('nccl-tests_2.19', 'pyxis_nccl-tests_2.19')])
def test_container_name(name, expected):
    assert _enroot.container_name(name) == expected


@pytest.mark.parametrize('name', ['', 'a/b', '-x', 'has space', None])
def test_container_name_invalid(name):
    with pytest.raises(ValueError) as err:
        _enroot.container_name(name)
    assert str(err.value) == ('invalid container name "%s": use letters, digits, "_", "." and "-", starting with a letter or digit'
                              % (name,))


@pytest.mark.parametrize('func, args, expected', [
    (_enroot.import_argv, ('enroot', 'docker://ubuntu', '/d/x.sqsh'), ['enroot', 'import', '--output', '/d/x.sqsh', '--', 'docker://ubuntu']),
    (_enroot.import_argv, ('/usr/bin/enroot', 'docker://ubuntu', '/d/x.sqsh', 'arm64'),
     ['/usr/bin/enroot', 'import', '--output', '/d/x.sqsh', '--arch', 'arm64', '--', 'docker://ubuntu']),
    (_enroot.digest_argv, ('enroot', 'docker://ubuntu'), ['enroot', 'digest', '--', 'docker://ubuntu']),
    (_enroot.digest_argv, ('enroot', 'docker://ubuntu', 'x86_64'), ['enroot', 'digest', '--arch', 'x86_64', '--', 'docker://ubuntu']),
    (_enroot.create_argv, ('enroot', 'pyxis_a', '/d/x.sqsh'), ['enroot', 'create', '--name', 'pyxis_a', '--', '/d/x.sqsh']),
    (_enroot.remove_argv, ('enroot', 'pyxis_a'), ['enroot', 'remove', '--force', '--', 'pyxis_a']),
    (_enroot.list_argv, ('enroot',), ['enroot', 'list']),
])
def test_argv(func, args, expected):
    assert func(*args) == expected


@pytest.mark.parametrize('kwargs, expected', [
    ({}, {}),
    ({'retries': 3}, {'ENROOT_TRANSFER_RETRIES': '3'}),
    ({'retries': 0, 'connect_timeout': 10, 'transfer_timeout': 600},
     {'ENROOT_TRANSFER_RETRIES': '0', 'ENROOT_CONNECT_TIMEOUT': '10', 'ENROOT_TRANSFER_TIMEOUT': '600'}),
])
def test_import_environment(kwargs, expected):
    assert _enroot.import_environment(**kwargs) == expected


@pytest.mark.parametrize('stdout, expected', [
    (DIGEST_A + '\n', DIGEST_A),
    ('[INFO] x\n' + DIGEST_B, DIGEST_B),
    ('Usage: enroot COMMAND [ARG...]\n\n Commands:\n   import ...\n', None),
    ('sha256:abc\n', None),
    ('', None),
    (None, None),
])
def test_parse_digest_output(stdout, expected):
    assert _enroot.parse_digest_output(stdout) == expected


def test_parse_list_output():
    assert _enroot.parse_list_output('pyxis_a\n\npyxis_b  \n') == ['pyxis_a', 'pyxis_b']
    assert _enroot.parse_list_output('') == []


def test_record_round_trip():
    ref = _enroot.parse_uri('docker://nvcr.io#nvidia/pytorch:24.01-py3')
    text = _enroot.make_record(ref, DIGEST_A, 4096)
    assert json.loads(text) == {'format': 1, 'uri': ref.uri, 'digest': DIGEST_A, 'size': 4096}
    assert _enroot.parse_record(text) == {'uri': ref.uri, 'digest': DIGEST_A, 'size': 4096}
    assert _enroot.parse_record(_enroot.make_record(ref, None, 1)) == {'uri': ref.uri, 'digest': None, 'size': 1}
    assert _enroot.record_path('/x/a.sqsh') == '/x/a.sqsh.import.json'


@pytest.mark.parametrize('text', [
    'not json', '[]', '{}', '{"format": 2, "uri": "docker://a", "digest": null, "size": 1}',
    '{"format": 1, "uri": "docker://a", "digest": "sha256:short", "size": 1}',
    '{"format": 1, "uri": "docker://a", "digest": null, "size": "1"}',
    '{"format": 1, "uri": 5, "digest": null, "size": 1}',
])
def test_parse_record_rejects(text):
    assert _enroot.parse_record(text) is None


REF = _enroot.parse_uri('docker://reg:5000#test/img:1')
REC = {'uri': REF.uri, 'digest': DIGEST_A, 'size': 100}


@pytest.mark.parametrize('exists, size, record, digest, force, expected', [
    (False, 0, None, DIGEST_A, False, (True, 'the image file does not exist')),
    (True, 100, REC, DIGEST_A, True, (True, 'force is set')),
    (True, 100, None, DIGEST_A, False,
     (False, 'the image file exists and has no import record; kept as it is (use force to replace it)')),
    (True, 100, dict(REC, uri='docker://reg:5000#test/other:1'), DIGEST_A, False,
     (True, 'the image file was imported from docker://reg:5000#test/other:1, not docker://reg:5000#test/img:1')),
    (True, 50, REC, DIGEST_A, False, (True, 'the image file is 50 bytes, the import recorded 100')),
    (True, 100, REC, None, False, (False, 'the image file exists and the image digest cannot be known')),
    (True, 100, dict(REC, digest=None), DIGEST_A, False, (False, 'the image file exists and the image digest cannot be known')),
    (True, 100, REC, DIGEST_B, False, (True, 'the registry now serves %s, the file holds %s' % (DIGEST_B, DIGEST_A))),
    (True, 100, REC, DIGEST_A, False, (False, 'the image file holds digest %s, the one the registry serves' % DIGEST_A)),
])
def test_plan_import(exists, size, record, digest, force, expected):
    assert _enroot.plan_import(REF, exists, size, record, digest, force) == expected


# stderr as enroot (src/common.sh, src/docker.sh) and curl -S print it.
@pytest.mark.parametrize('stderr, kind, detail', [
    ('[ERROR] Invalid image reference: docker://Bad#x\n', 'invalid_uri', 'docker://Bad#x'),
    ('[ERROR] Command not found: mksquashfs\n', 'missing_command', 'mksquashfs'),
    ('[ERROR] File already exists: /d/x.sqsh\n', 'exists', '/d/x.sqsh'),
    ('[INFO] Querying registry for permission grant\ncurl: (6) Could not resolve host: nosuch.invalid\n',
     'unreachable', 'Could not resolve host: nosuch.invalid'),
    ("curl: (7) Failed to connect to 127.0.0.1 port 5099 after 0 ms: Couldn't connect to server\n",
     'unreachable', "Failed to connect to 127.0.0.1 port 5099 after 0 ms: Couldn't connect to server"),
    ('curl: (28) Connection timed out after 30001 milliseconds\n', 'unreachable', 'Connection timed out after 30001 milliseconds'),
    ('curl: (35) OpenSSL SSL_connect: Connection reset by peer\n', 'unreachable', 'OpenSSL SSL_connect: Connection reset by peer'),
    ('[ERROR] URL https://nvcr.io/v2/nvidia/pytorch/manifests/24.01-py3 returned error code: 401\n',
     'auth', 'https://nvcr.io/v2/nvidia/pytorch/manifests/24.01-py3'),
    ('[ERROR] URL https://r/v2/a/manifests/1 returned error code: 403\n', 'auth', 'https://r/v2/a/manifests/1'),
    ('[ERROR] URL http://127.0.0.1:5055/v2/test/nothere/manifests/1.0 returned error code: 404\n',
     'not_found', 'http://127.0.0.1:5055/v2/test/nothere/manifests/1.0'),
    ('[ERROR] URL https://r/v2/a/blobs/sha256:00 returned error code: 404\n', 'registry_error', 'https://r/v2/a/blobs/sha256:00'),
    ('[ERROR] URL https://r/v2/a/manifests/1 returned error code: 503\n', 'registry_error', 'https://r/v2/a/manifests/1'),
    ('[ERROR] Could not parse digest information from https://r/v2/a/manifests/1\n', 'bad_manifest', 'https://r/v2/a/manifests/1'),
    ('Checksum mismatch: 0123abcd\n', 'checksum', '0123abcd'),
    ('[ERROR] Could not parse authentication realm from https://r/v2/a/manifests/1\n', 'auth', 'https://r/v2/a/manifests/1'),
    ('something odd\nlast words\n', 'unknown', 'last words'),
    ('', 'unknown', ''),
])
def test_classify_error(stderr, kind, detail):
    assert _enroot.classify_error(stderr) == (kind, detail)


U = 'docker://reg#a:1'


@pytest.mark.parametrize('kind, detail, expected', [
    ('invalid_uri', 'docker://Bad', 'enroot rejected the image URI "docker://Bad" as invalid; valid forms are ' + _enroot.VALID_FORMS),
    ('missing_command', 'mksquashfs', 'enroot import of %s needs the command "mksquashfs", which is not installed on this host' % U),
    ('exists', '/d/x', 'enroot refused to overwrite /d/x (File already exists)'),
    ('unreachable', 'Could not resolve host: reg',
     'cannot reach the registry of %s: Could not resolve host: reg (check the registry name, DNS, proxy and firewall)' % U),
    ('auth', 'https://reg/v2/a/manifests/1',
     'the registry refused access to %s (https://reg/v2/a/manifests/1): check the credentials in $ENROOT_CONFIG_PATH/.credentials '
     '(netrc format; NGC needs nvcr.io and authn.nvidia.com lines)' % U),
    ('not_found', 'https://reg/v2/a/manifests/1',
     'the registry has no manifest for %s (https://reg/v2/a/manifests/1 returned 404): check the image name and tag, '
     'or the registry may hold only an OCI manifest for it' % U),
    ('registry_error', 'x', 'the registry failed while serving %s: l2 l3 l4' % U),
    ('bad_manifest', 'https://reg/v2/a/manifests/1',
     'enroot could not read the image manifest of %s at https://reg/v2/a/manifests/1 (unsupported manifest type)' % U),
    ('checksum', 'abcd', 'a layer of %s failed its checksum (abcd); the download was corrupted, retry' % U),
    ('unknown', 'x', 'enroot import of %s failed with exit code 3: l2 l3 l4' % U),
])
def test_error_message(kind, detail, expected):
    assert _enroot.error_message(kind, detail, U, 3, 'l1\nl2\nl3\nl4\n') == expected


def test_error_message_unknown_without_output():
    assert _enroot.error_message('unknown', '', U, 1, '') == 'enroot import of %s failed with exit code 1: no error output' % U


def test_error_message_oci_only():
    msg = _enroot.error_message('not_found', 'http://r/v2/a/manifests/1', U, 1, '', oci_only=True)
    assert msg == ('the registry serves only an OCI image manifest for %s (http://r/v2/a/manifests/1 answers 404 "OCI manifest found, '
                   'but accept header does not support OCI manifests" to a request that does not list OCI in its Accept header, as '
                   "enroot's requests do); push the image as Docker v2 schema 2 (skopeo copy --format v2s2, docker push, buildah push "
                   '--format docker)' % U)


@pytest.mark.parametrize('status, body, expected', [
    (404, '{"errors":[{"code":"MANIFEST_UNKNOWN","message":"OCI manifest found, but accept header does not support OCI manifests"}]}', True),
    (404, '{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}', False),
    (200, 'OCI manifest found, but accept header does not support OCI manifests', False),
    (None, None, False),
])
def test_is_oci_only_response(status, body, expected):
    assert _enroot.is_oci_only_response(status, body) is expected


@pytest.mark.parametrize('url, expected', [
    ('http://127.0.0.1:5055/v2/test/ociimg/manifests/1.0', 'http://127.0.0.1:5055/v2/test/ociimg/manifests/1.0'),
    ('https://nvcr.io/v2/nvidia/pytorch/manifests/24.01-py3', 'https://nvcr.io/v2/nvidia/pytorch/manifests/24.01-py3'),
    ('https://r/v2/a/blobs/sha256:00', None),
    ('file:///etc/passwd', None),
    ('', None),
])
def test_manifest_probe_url(url, expected):
    assert _enroot.manifest_probe_url(url) == expected


IDENT = _enroot.image_identity('/s/a.sqsh', 100, 5, DIGEST_A)


def test_image_identity_and_record():
    assert IDENT == {'format': 1, 'image': '/s/a.sqsh', 'size': 100, 'mtime_ns': 5, 'digest': DIGEST_A}
    assert _enroot.parse_container_record(json.dumps(IDENT)) == IDENT
    assert _enroot.container_record_path('/var/lib/x/', 'pyxis_a') == '/var/lib/x/pyxis_a.json'


@pytest.mark.parametrize('text', ['nope', '[]', json.dumps(dict(IDENT, format=2)), json.dumps(dict(IDENT, extra=1)),
                                  json.dumps({'image': '/s/a.sqsh'})])
def test_parse_container_record_rejects(text):
    assert _enroot.parse_container_record(text) is None


@pytest.mark.parametrize('present, saved, wanted, imported, force, expected', [
    (True, IDENT, IDENT, False, True, (True, 'force is set')),
    (False, IDENT, IDENT, False, False, (True, 'the container does not exist')),
    (True, IDENT, None, True, False, (True, 'the image file is being imported again')),
    (True, IDENT, None, False, False, (True, 'the image file is being imported again')),
    (True, None, IDENT, False, False, (True, 'the container has no record of the image it was created from')),
    (True, IDENT, dict(IDENT, mtime_ns=6), False, False, (True, 'the image file changed since the container was created')),
    (True, IDENT, dict(IDENT), False, False, (False, 'the container was created from the current image file')),
])
def test_plan_container(present, saved, wanted, imported, force, expected):
    assert _enroot.plan_container(present, saved, wanted, imported, force) == expected


@pytest.mark.parametrize('name, host, pid, expected', [
    ('a.sqsh', 'node01', None, '.a.sqsh.enroot-import.node01.'),
    ('a.sqsh', 'node01.cluster', 42, '.a.sqsh.enroot-import.node01-cluster.42.'),
    ('a.sqsh', '', 7, '.a.sqsh.enroot-import.host.7.'),
])
def test_temp_prefix(name, host, pid, expected):
    assert _enroot.temp_prefix(name, host, pid) == expected


@pytest.mark.parametrize('entry, expected', [
    ('.a.sqsh.enroot-import.node01.42.x1y2', 42),
    ('.a.sqsh.enroot-import.node02.42.x1y2', None),   # another node's import: never judged here
    ('.b.sqsh.enroot-import.node01.42.x1y2', None),   # another image
    ('.a.sqsh.enroot-import.node01.abc.x1y2', None),
    ('a.sqsh', None),
])
def test_temp_owner_pid(entry, expected):
    assert _enroot.temp_owner_pid(entry, 'a.sqsh', 'node01') == expected
