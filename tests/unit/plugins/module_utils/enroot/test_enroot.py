# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tables for plugins/module_utils/enroot/_enroot.py (URIs, names, argv, records, plans, errors)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.tests.unit import realenroot

DIGEST_A = 'sha256:' + 'a' * 64
DIGEST_B = 'sha256:' + 'b' * 64


HEX = '0123456789abcdef' * 4
PIN = 'sha256:' + HEX
HUB = 'registry-1.docker.io'

# (uri, (scheme, user, registry, image, tag, digest), default output name): enroot 4.x's split
# (src/docker.sh docker::_parse_uri) and the file name enroot import gives it without --output.
VALID = [
    ('docker://ubuntu', ('docker', None, HUB, 'library/ubuntu', 'latest', None), 'ubuntu+latest.sqsh'),
    ('docker://ubuntu:22.04', ('docker', None, HUB, 'library/ubuntu', '22.04', None), 'ubuntu+22.04.sqsh'),
    ('docker://library/ubuntu:22.04', ('docker', None, HUB, 'library/ubuntu', '22.04', None), 'ubuntu+22.04.sqsh'),
    ('docker://nvidia/cuda:12.0', ('docker', None, HUB, 'nvidia/cuda', '12.0', None), 'nvidia+cuda+12.0.sqsh'),
    ('docker://registry-1.docker.io/library/ubuntu', ('docker', None, HUB, 'library/ubuntu', 'latest', None), 'ubuntu+latest.sqsh'),
    # The slash form: the first part is the registry when it holds a "." or a ":".
    ('docker://127.0.0.1:5000/test/tiny:1.0', ('docker', None, '127.0.0.1:5000', 'test/tiny', '1.0', None), 'test+tiny+1.0.sqsh'),
    ('docker://nvcr.io/nvidia/pytorch:24.01-py3', ('docker', None, 'nvcr.io', 'nvidia/pytorch', '24.01-py3', None),
     'nvidia+pytorch+24.01-py3.sqsh'),
    ('docker://localhost:5000/img', ('docker', None, 'localhost:5000', 'img', 'latest', None), 'img+latest.sqsh'),
    ('docker://docker.io/library/ubuntu', ('docker', None, 'docker.io', 'library/ubuntu', 'latest', None), 'library+ubuntu+latest.sqsh'),
    # localhost alone has neither: enroot reads a Docker Hub name (uri_warnings says so).
    ('docker://localhost/img', ('docker', None, HUB, 'localhost/img', 'latest', None), 'localhost+img+latest.sqsh'),
    ('docker://user@nvcr.io/nvidia/pytorch:1', ('docker', 'user', 'nvcr.io', 'nvidia/pytorch', '1', None), 'nvidia+pytorch+1.sqsh'),
    # The enroot form with "#".
    ('docker://nvcr.io#nvidia/pytorch:24.01-py3', ('docker', None, 'nvcr.io', 'nvidia/pytorch', '24.01-py3', None),
     'nvidia+pytorch+24.01-py3.sqsh'),
    ('docker://$oauthtoken@nvcr.io#nvidia/tensorflow:19.01-py3', ('docker', '$oauthtoken', 'nvcr.io', 'nvidia/tensorflow', '19.01-py3', None),
     'nvidia+tensorflow+19.01-py3.sqsh'),
    ('docker://127.0.0.1:5000#test/v2img:1.0', ('docker', None, '127.0.0.1:5000', 'test/v2img', '1.0', None), 'test+v2img+1.0.sqsh'),
    ('docker://alice@registry.local:5000#a/b/c', ('docker', 'alice', 'registry.local:5000', 'a/b/c', 'latest', None), 'a+b+c+latest.sqsh'),
    ('docker://reg:5000#library/base:1', ('docker', None, 'reg:5000', 'library/base', '1', None), 'library+base+1.sqsh'),
    # Digest-pinned: the digest is what is fetched and names the file; a tag next to it is kept but ignored.
    ('docker://ubuntu@' + PIN, ('docker', None, HUB, 'library/ubuntu', None, PIN), 'ubuntu+%s.sqsh' % PIN),
    ('docker://ubuntu:22.04@' + PIN, ('docker', None, HUB, 'library/ubuntu', '22.04', PIN), 'ubuntu+%s.sqsh' % PIN),
    ('docker://nvidia/cuda@' + PIN, ('docker', None, HUB, 'nvidia/cuda', None, PIN), 'nvidia+cuda+%s.sqsh' % PIN),
    ('docker://127.0.0.1:5000/test/tiny@' + PIN, ('docker', None, '127.0.0.1:5000', 'test/tiny', None, PIN), 'test+tiny+%s.sqsh' % PIN),
    ('docker://127.0.0.1:5000/test/tiny:1.0@' + PIN, ('docker', None, '127.0.0.1:5000', 'test/tiny', '1.0', PIN), 'test+tiny+%s.sqsh' % PIN),
    ('docker://127.0.0.1:5000#test/tiny@' + PIN, ('docker', None, '127.0.0.1:5000', 'test/tiny', None, PIN), 'test+tiny+%s.sqsh' % PIN),
    ('docker://127.0.0.1:5000#test/tiny:1.0@' + PIN, ('docker', None, '127.0.0.1:5000', 'test/tiny', '1.0', PIN), 'test+tiny+%s.sqsh' % PIN),
    ('docker://bot@nvcr.io/nvidia/pytorch@' + PIN, ('docker', 'bot', 'nvcr.io', 'nvidia/pytorch', None, PIN), 'nvidia+pytorch+%s.sqsh' % PIN),
    # enroot's user class ends in the range ",-@": the longest user that leaves a valid rest is taken.
    ('docker://a@b@c.io/x:1', ('docker', 'a@b', 'c.io', 'x', '1', None), 'x+1.sqsh'),
    ('docker://u:p@reg.io/x', ('docker', 'u:p', 'reg.io', 'x', 'latest', None), 'x+latest.sqsh'),
    # Not a digest: enroot reads user "ubuntu", Docker Hub image md5, tag abc.
    ('docker://ubuntu@md5:abc', ('docker', 'ubuntu', HUB, 'library/md5', 'abc', None), 'md5+abc.sqsh'),
    ('dockerd://myimage:dev', ('dockerd', None, None, 'myimage', 'dev', None), 'myimage+dev.sqsh'),
    ('podman://localhost/myimage', ('podman', None, None, 'localhost/myimage', None, None), 'localhost+myimage.sqsh'),
]


@pytest.mark.parametrize('uri, expected, name', VALID)
def test_parse_uri_valid(uri, expected, name):
    ref = _enroot.parse_uri(uri)
    assert (ref.scheme, ref.user, ref.registry, ref.image, ref.tag, ref.digest) == expected
    assert ref.uri == uri
    assert ref.from_registry == (expected[0] == 'docker')
    assert ref.reference == (expected[5] or expected[4])
    assert ref.as_dict() == dict(zip(('scheme', 'user', 'registry', 'image', 'tag', 'digest'), expected), uri=uri)
    assert _enroot.default_output_name(ref) == name


# References without a scheme, as srun --container-image takes them: pyxis 0.24 hands enroot "docker://" + the reference
# (pyxis_slurmstepd.c enroot_container_create); so does parse_uri. (given, the docker:// URI it stands for)
SCHEMELESS = [
    ('127.0.0.1:5000/test/tiny:1.0', 'docker://127.0.0.1:5000/test/tiny:1.0'),
    ('nvcr.io/nvidia/pytorch:24.01-py3', 'docker://nvcr.io/nvidia/pytorch:24.01-py3'),
    ('nvcr.io#nvidia/pytorch:24.01-py3', 'docker://nvcr.io#nvidia/pytorch:24.01-py3'),
    ('ubuntu:22.04', 'docker://ubuntu:22.04'),
    ('ubuntu', 'docker://ubuntu'),
    ('alice@registry.local:5000#a/b:1', 'docker://alice@registry.local:5000#a/b:1'),
    ('registry.local:5000/a/b@' + PIN, 'docker://registry.local:5000/a/b@' + PIN),
]


@pytest.mark.parametrize('given, uri', SCHEMELESS)
def test_parse_uri_without_scheme_reads_docker(given, uri):
    ref, docker = _enroot.parse_uri(given), _enroot.parse_uri(uri)
    assert ref.uri == uri and ref.given == given and docker.given is None
    assert ref.as_dict() == docker.as_dict()
    assert _enroot.default_output_name(ref) == _enroot.default_output_name(docker)


@pytest.mark.parametrize('given, reason', [
    ('/shared/images/x.sqsh', 'it is a file path, not an image in a registry (a squashfs file needs no import: srun '
                              '--container-image=/shared/images/x.sqsh uses it as it is)'),
    ('./x.sqsh', 'it is a file path, not an image in a registry (a squashfs file needs no import: srun --container-image=./x.sqsh '
                 'uses it as it is)'),
    ('Ubuntu:22.04', 'the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/" (read as docker://Ubuntu:22.04, '
                     'as pyxis reads an image without a scheme)'),
    ('reg.io:abc/x', 'the registry "reg.io:abc" is not a host[:port] (read as docker://reg.io:abc/x, as pyxis reads an image '
                     'without a scheme)'),
    ('ubuntu@sha256:abc', 'the digest "sha256:abc" must be "sha256:" and 64 lower-case hexadecimal digits (read as '
                          'docker://ubuntu@sha256:abc, as pyxis reads an image without a scheme)'),
])
def test_parse_uri_without_scheme_invalid(given, reason):
    with pytest.raises(ValueError) as err:
        _enroot.parse_uri(given)
    assert str(err.value) == 'invalid image URI "%s": %s; valid forms are %s' % (given, reason, _enroot.VALID_FORMS)


def enroot_split(uri, tmp_path):
    """How NVIDIA's enroot 4.1.2 (src/docker.sh docker::_parse_uri, from the real package) reads uri, or None when it rejects it."""
    return realenroot.split_uri(uri, tmp_path)


@pytest.mark.parametrize('uri, expected, name', [case for case in VALID if case[1][0] == 'docker'])
def test_parse_uri_agrees_with_enroot(uri, expected, name, tmp_path):
    ref = _enroot.parse_uri(uri)
    assert enroot_split(uri, tmp_path) == (ref.user, ref.registry, ref.image, ref.reference)


@pytest.mark.parametrize('uri, warnings', [
    ('docker://localhost/img', ['docker://localhost/img names the Docker Hub repository localhost/img: enroot reads the first part '
                                'as a registry only when it holds a "." or a ":port"; for a registry on this host write '
                                'docker://localhost:PORT/img']),
    ('docker://localhost:5000/img', []),
    ('docker://registry-1.docker.io/localhost/img', []),
    ('docker://ubuntu', []),
    ('docker://bot@localhost/img', ['docker://bot@localhost/img names the Docker Hub repository localhost/img: enroot reads the first '
                                    'part as a registry only when it holds a "." or a ":port"; for a registry on this host write '
                                    'docker://localhost:PORT/img']),
])
def test_uri_warnings(uri, warnings):
    assert _enroot.uri_warnings(_enroot.parse_uri(uri)) == warnings


@pytest.mark.parametrize('uri, reason', [
    ('', 'it is empty'),
    (None, 'it is empty'),
    (' docker://ubuntu', 'it has leading or trailing blanks'),
    ('http://ubuntu', 'scheme "http" is not one enroot imports from'),
    ('docker://', 'the image is missing'),
    ('docker://Ubuntu', 'the image "Ubuntu" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://x.io/Foo', 'the image "Foo" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://Nvidia/cuda', 'the image "Nvidia/cuda" must be lower-case letters, digits, ".", "_", "-" and "/"'),
    ('docker://nvcr.io#', 'the image is missing'),
    ('docker://#nvidia/pytorch', 'the registry "" is not a host[:port]'),
    ('docker://reg.io:abc/x', 'the registry "reg.io:abc" is not a host[:port]'),
    ('docker://a#b#c', 'it has more than one "#"'),
    ('docker://ubuntu:bad tag', 'the tag "bad tag" is not a valid tag'),
    ('docker://ubuntu:', 'the tag "" is not a valid tag'),
    ('docker://ubuntu:22.04:x', 'the tag "22.04:x" is not a valid tag (letters, digits, "_", "." and "-", at most 128, not starting with '
                                '"." or "-")'),
    ('docker://us er@nvcr.io#nvidia/pytorch', 'the user "us er" has characters enroot does not accept'),
    ('docker://ubuntu@sha256:abc', 'the digest "sha256:abc" must be "sha256:" and 64 lower-case hexadecimal digits'),
    ('docker://ubuntu@sha256:' + HEX.upper(), 'the digest "sha256:%s" must be "sha256:" and 64 lower-case hexadecimal digits' % HEX.upper()),
    ('docker://nvcr.io/nvidia/pytorch@sha256:', 'the digest "sha256:" must be "sha256:" and 64 lower-case hexadecimal digits'),
    ('dockerd://', 'the image part "" is not IMAGE[:TAG]'),
    ('podman://my image', 'the image part "my image" is not IMAGE[:TAG]'),
])
def test_parse_uri_invalid(uri, reason):
    with pytest.raises(ValueError) as err:
        _enroot.parse_uri(uri)
    assert str(err.value) == 'invalid image URI "%s": %s; valid forms are %s' % (uri, reason, _enroot.VALID_FORMS)


# Parts enroot's parser lets through but no registry serves: parse_uri names them before anything runs.
@pytest.mark.parametrize('uri', ['docker://Ubuntu', 'docker://ubuntu:22.04:x', 'docker://ubuntu@sha256:abc', 'docker://reg.io:abc/x',
                                 'docker://Nvidia/cuda'])
def test_rejected_parts_enroot_would_pass_on(uri, tmp_path):
    assert enroot_split(uri, tmp_path) is not None
    with pytest.raises(ValueError):
        _enroot.parse_uri(uri)


@pytest.mark.parametrize('uri', ['docker://', 'docker://nvcr.io#', 'docker://#nvidia/pytorch', 'docker://us er@nvcr.io#nvidia/pytorch',
                                 'docker://x.io/Foo', 'docker://a#b#c'])
def test_rejected_by_enroot_too(uri, tmp_path):
    assert enroot_split(uri, tmp_path) is None
    with pytest.raises(ValueError):
        _enroot.parse_uri(uri)


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
    ({'retries': 0, 'connect_timeout': 10},
     {'ENROOT_TRANSFER_RETRIES': '0', 'ENROOT_CONNECT_TIMEOUT': '10'}),
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


PINNED = _enroot.parse_uri('docker://reg:5000/test/img@' + DIGEST_A)
PREC = {'uri': PINNED.uri, 'digest': DIGEST_A, 'size': 100}


# A digest-pinned URI: the pinned digest decides; what the registry serves (current) is not asked for.
@pytest.mark.parametrize('exists, record, current, expected', [
    (False, None, None, (True, 'the image file does not exist')),
    (True, PREC, None, (False, 'the image file holds digest %s, the one pinned in the URI' % DIGEST_A)),
    (True, PREC, DIGEST_B, (False, 'the image file holds digest %s, the one pinned in the URI' % DIGEST_A)),
    (True, dict(PREC, digest=DIGEST_B), None, (True, 'the URI pins %s, the file holds %s' % (DIGEST_A, DIGEST_B))),
    (True, dict(PREC, digest=None), None, (True, 'the URI pins %s, the file holds None' % DIGEST_A)),
    (True, dict(PREC, uri='docker://reg:5000/test/img:1'), None,
     (True, 'the image file was imported from docker://reg:5000/test/img:1, not %s' % PINNED.uri)),
])
def test_plan_import_pinned(exists, record, current, expected):
    assert _enroot.plan_import(PINNED, exists, 100, record, current, False) == expected


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
    # HTTPS to a plain-HTTP registry (no ENROOT_ALLOW_HTTP), as curl 7.88 with OpenSSL 3 and curl 8 print it.
    ('[INFO] Querying registry for permission grant\ncurl: (35) OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number\n',
     'plain_http', 'OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number'),
    ('curl: (35) error:0A00010B:SSL routines::wrong version number\n', 'plain_http', 'error:0A00010B:SSL routines::wrong version number'),
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
    ('[INFO] Creating squashfs filesystem...\nWrite failed because No space left on device\nFATAL ERROR: failed to write\n',
     'no_space', 'Write failed because No space left on device'),
    ('enroot-aufs2ovlfs: failed to set capabilities: Operation not permitted\n', 'capabilities',
     'failed to set capabilities: Operation not permitted'),
    ('curl: (60) SSL certificate problem: unable to get local issuer certificate\n', 'tls',
     'SSL certificate problem: unable to get local issuer certificate'),
    ('curl: (77) error setting certificate file: /etc/enroot/none.pem\n', 'tls', 'error setting certificate file: /etc/enroot/none.pem'),
    # Basic authentication: curl's 401 goes into enroot's pipe, enroot stops after its last [INFO] line without an error
    ('[INFO] Querying registry for permission grant\n[INFO] Authenticating with user: <anonymous>\n', 'auth', ''),
    ('[INFO] Authenticating with user: alice\n[INFO] Using credentials from file: /h/.credentials\n', 'auth', ''),
    ('[INFO] Fetching image manifest\n', 'unknown', '[INFO] Fetching image manifest'),
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
    ('plain_http', 'error:0A00010B:SSL routines::wrong version number',
     'the registry of %s answers plain HTTP, and enroot speaks HTTPS unless ENROOT_ALLOW_HTTP is set (curl: error:0A00010B:SSL '
     'routines::wrong version number); set enroot_conf.ENROOT_ALLOW_HTTP: true for the role gpucluster.bringup.enroot, which writes '
     'ENROOT_ALLOW_HTTP to /etc/enroot/enroot.conf: pyxis jobs (srun --container-image) read only enroot.conf, an environment: '
     'on an Ansible task does not reach them; or serve the registry over HTTPS' % U),
    ('unreachable', 'Could not resolve host: reg',
     'cannot reach the registry of %s: Could not resolve host: reg (check the registry name, DNS, proxy and firewall)' % U),
    ('auth', 'https://reg/v2/a/manifests/1',
     'the registry refused access to %s (https://reg/v2/a/manifests/1): check the credentials in $ENROOT_CONFIG_PATH/.credentials '
     '(netrc format; NGC needs nvcr.io and authn.nvidia.com lines)' % U),
    ('not_found', 'https://reg/v2/a/manifests/1',
     'the registry reg has no tag 1 of the image a (https://reg/v2/a/manifests/1 returned 404, for %s): check the image name and '
     'tag, or the registry may hold only an OCI manifest for it' % U),
    ('not_found', 'https://reg/odd',
     'the registry has no manifest for %s (https://reg/odd returned 404): check the image name and tag, or the registry may hold '
     'only an OCI manifest for it' % U),
    ('registry_error', 'x', 'the registry failed while serving %s: l2 l3 l4' % U),
    ('bad_manifest', 'https://reg/v2/a/manifests/1',
     'enroot could not read the image manifest of %s at https://reg/v2/a/manifests/1 (unsupported manifest type)' % U),
    ('checksum', 'abcd', 'a layer of %s failed its checksum (abcd); the download was corrupted, retry' % U),
    ('unknown', 'x', 'enroot import of %s failed with exit code 3: l2 l3 l4' % U),
])
def test_error_message(kind, detail, expected):
    assert _enroot.error_message(kind, detail, U, 3, 'l1\nl2\nl3\nl4\n') == expected


@pytest.mark.parametrize('kind, detail, stderr, expected', [
    ('no_space', 'Write failed because No space left on device', '',
     'no space left on a device while enroot imported %s (Write failed because No space left on device)' % U),
    ('capabilities', 'failed to set capabilities: Operation not permitted', '',
     "enroot import of %s must convert the whiteouts (deleted files) of the image's layers, which enroot-aufs2ovlfs does for a "
     'user other than root only with the file capabilities of the enroot+caps package (failed to set capabilities: Operation not '
     'permitted): install it (enroot_install_caps: true of the role gpucluster.bringup.enroot), or import as root' % U),
    ('tls', 'SSL certificate problem: x', '',
     'the registry of %s presents a TLS certificate this host does not trust (curl: SSL certificate problem: x): give the nodes '
     'the CA that signed it with enroot_registry_ca_certificates of the role gpucluster.bringup.enroot (SSL_CERT_FILE in '
     '/etc/enroot/enroot.conf, which pyxis jobs read too), or install it in the system CA store' % U),
    ('unreachable', 'Failed to connect to t port 1', '[INFO] Authenticating with user: <anonymous>\ncurl: (7) x\n',
     "the registry of %s sent enroot to its token server, which cannot be reached: Failed to connect to t port 1 (check the "
     "registry's token service (the realm of its WWW-Authenticate answer), DNS, proxy and firewall)" % U),
    ('auth', '', '[INFO] Authenticating with user: <anonymous>\n',
     'the registry asks for credentials for %s and enroot had none: add the line "machine HOST login USER password PASSWORD" for '
     'the registry host to $ENROOT_CONFIG_PATH/.credentials of the user who imports (netrc format; the role '
     'gpucluster.bringup.enroot writes it from enroot_credentials; NGC needs nvcr.io and authn.nvidia.com lines)' % U),
    ('auth', '', '[INFO] Authenticating with user: bob\n[INFO] Using credentials from file: /h/c\n',
     "the registry refused the credentials of user bob for %s (from /h/c): check the password of that user's line in "
     '$ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com lines)%s' % (U, _enroot.BASIC_HTTP2_HINT)),
    ('auth', 'https://authn/token', '[INFO] Authenticating with user: bob\n[ERROR] URL https://authn/token returned error code: 401\n',
     "the registry refused the credentials of user bob for %s (https://authn/token, given without a .credentials line): check "
     "the password of that user's line in $ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com "
     'lines)' % U),
    ('not_found', 'https://reg:5000/v2/a/b/manifests/1.0', '',
     'the registry reg:5000 has no tag 1.0 of the image a/b (https://reg:5000/v2/a/b/manifests/1.0 returned 404, for %s): check '
     'the image name and tag, or the registry may hold only an OCI manifest for it' % U),
    ('not_found', 'https://reg/v2/a/manifests/' + PIN, '',
     'the registry reg has no manifest with the pinned digest %s for a (https://reg/v2/a/manifests/%s returned 404): the digest '
     'matches no image there; check it (enroot digest docker://reg#a:TAG prints the digest a tag has now)' % (PIN, PIN)),
])
def test_error_message_from_enroots_log(kind, detail, stderr, expected):
    assert _enroot.error_message(kind, detail, U, 1, stderr) == expected


@pytest.mark.parametrize('stderr, expected', [
    ('[INFO] Querying registry for permission grant\n[INFO] Downloading 2 missing layers...\n\n', 'Downloading 2 missing layers...'),
    ('curl: (7) x\n', None),
    ('', None),
])
def test_last_step(stderr, expected):
    assert _enroot.last_step(stderr) == expected


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
    ('.a.sqsh.enroot-import.node01.42.x1.y2', 42),   # a random part with a dot of its own: the pid is the first part
    ('a.sqsh', None),
])
def test_temp_owner_pid(entry, expected):
    assert _enroot.temp_owner_pid(entry, 'a.sqsh', 'node01') == expected


OPTIONS = {'retries': 3, 'connect_timeout': 30, 'timeout': 0, 'arch': None, 'executable': 'enroot', 'dest': '/s/x.sqsh',
           'container_record_dir': None}


@pytest.mark.parametrize('changes, problems', [
    ({}, []),
    ({'arch': 'aarch64', 'executable': '/usr/bin/enroot', 'container_record_dir': '/var/lib/x', 'retries': 0}, []),
    ({'retries': -1}, ['retries must be 0 or more (transfer retries), got -1']),
    ({'connect_timeout': -5}, ['connect_timeout must be 0 or more (seconds), got -5']),
    ({'timeout': -1}, ['timeout must be 0 or more (seconds, 0 for no limit), got -1']),
    ({'arch': 'amd64'}, ['arch must be one of x86_64, aarch64, ppc64le, the architectures enroot imports for, got "amd64" (amd64 is '
                         'written x86_64 here, as uname -m prints it); leave arch out for the host\'s']),
    ({'arch': 'riscv64'}, ['arch must be one of x86_64, aarch64, ppc64le, the architectures enroot imports for, got "riscv64"; '
                           'leave arch out for the host\'s']),
    ({'arch': ''}, ['arch must be one of x86_64, aarch64, ppc64le, the architectures enroot imports for, got ""; leave arch out for the host\'s']),
    ({'executable': ''}, ['executable must be a command name looked up in PATH or an absolute path, got ""']),
    ({'executable': 'bin/enroot'}, ['executable must be a command name looked up in PATH or an absolute path, got "bin/enroot"']),
    ({'dest': 'x.sqsh'}, ['dest must be an absolute path, got "x.sqsh"']),
    ({'dest': ''}, ['dest must be an absolute path, got ""']),
    ({'container_record_dir': 'state'}, ['container_record_dir must be an absolute path, got "state"']),
    ({'retries': -1, 'timeout': -2}, ['retries must be 0 or more (transfer retries), got -1',
                                      'timeout must be 0 or more (seconds, 0 for no limit), got -2']),
])
def test_option_problems(changes, problems):
    assert _enroot.option_problems(dict(OPTIONS, **changes)) == problems


MOUNTS = """overlay / overlay rw 0 0
proc /proc proc rw,nosuid 0 0
sysfs /sys sysfs ro 0 0
tmpfs /sys/fs/cgroup tmpfs rw 0 0
devtmpfs /dev devtmpfs rw 0 0
server:/export /shared nfs4 rw 0 0
tmpfs /shared tmpfs rw 0 0
/dev/sdb1 /mnt/my\\040disk ext4 rw 0 0
"""


@pytest.mark.parametrize('path, fstype', [
    ('/', 'overlay'), ('/proc', 'proc'), ('/proc/x.sqsh', 'proc'), ('/procfoo', 'overlay'), ('/sys/kernel', 'sysfs'),
    ('/sys/fs/cgroup/x', 'tmpfs'), ('/dev', 'devtmpfs'), ('/shared/images', 'tmpfs'), ('/mnt/my disk/a', 'ext4'), ('/mnt/my', 'overlay'),
])
def test_filesystem_type(path, fstype):
    assert _enroot.filesystem_type(path, MOUNTS) == fstype


def test_filesystem_type_without_mounts():
    assert _enroot.filesystem_type('/x', '') is None


class FakeProbe(object):
    """A file system of directories, files, read-only and unwritable places."""

    def __init__(self, dirs, files=(), read_only=(), unwritable=(), fstypes=None):
        self.dirs, self.files = set(dirs) | {'/'}, set(files)
        self.ro, self.unwritable, self.fstypes = set(read_only), set(unwritable), fstypes or {}

    def exists(self, path):
        return path in self.dirs or path in self.files

    def is_dir(self, path):
        return path in self.dirs

    def fstype(self, path):
        return self.fstypes.get(path, 'ext4')

    def read_only(self, path):
        return path in self.ro

    def writable(self, path):
        return path not in self.unwritable

    @staticmethod
    def uid():
        return 1000


FS = FakeProbe(dirs=['/proc', '/sys', '/sys/kernel', '/srv', '/srv/images', '/ro', '/locked'], files=['/srv/file'],
               read_only=['/ro'], unwritable=['/locked'], fstypes={'/proc': 'proc', '/sys': 'sysfs', '/sys/kernel': 'sysfs'})


@pytest.mark.parametrize('directory, create, problem', [
    ('/srv/images', False, None),
    ('/srv/new', True, None),
    ('/srv/new/deeper', True, None),
    ('/proc', False, 'dest V: /proc is on a proc file system (a kernel pseudo file system), which cannot hold files written there; '
                     'use a directory on a local disk or a shared file system'),
    ('/sys/kernel/x', False, 'dest V: /sys/kernel is on a sysfs file system (a kernel pseudo file system), which cannot hold files written '
                             'there; use a directory on a local disk or a shared file system'),
    ('/srv/file', False, 'dest V: /srv/file is a file, not a directory, so nothing can be created under it; use a path under a directory'),
    ('/srv/file/sub', True, 'dest V: /srv/file is a file, not a directory, so nothing can be created under it; use a path under a directory'),
    ('/srv/missing', False, 'dest V: the directory /srv/missing does not exist; create it first'),
    ('/srv/a/b', False, 'dest V: the directory /srv/a/b does not exist; create it first'),
    ('/ro', False, 'dest V: /ro is on a read-only file system; use a writable directory'),
    ('/ro/new', True, 'dest V: /ro is on a read-only file system; use a writable directory'),
    ('/locked', False, 'dest V: the user the module runs as (uid 1000) cannot create files in /locked; use a directory it can write to, '
                       'or become its owner'),
])
def test_directory_problem(directory, create, problem):
    assert _enroot.directory_problem('dest', 'V', directory, FS, create=create) == problem


@pytest.mark.parametrize('version, release, machine, caps, files', [
    ('4.1.2', '1', 'x86_64', True, ['enroot_4.1.2-1_amd64.deb', 'enroot+caps_4.1.2-1_amd64.deb']),
    ('4.1.2', '1', 'aarch64', False, ['enroot_4.1.2-1_arm64.deb']),
    ('4.1.2', '2', 'ppc64le', True, ['enroot_4.1.2-2_ppc64el.deb', 'enroot+caps_4.1.2-2_ppc64el.deb']),
    ('4.2.0~rc1', '1', 'x86_64', True, ['enroot_4.2.0~rc1-1_amd64.deb', 'enroot+caps_4.2.0~rc1-1_amd64.deb']),
    ('4.1.2', '1', 'riscv64', False, ['enroot_4.1.2-1_riscv64.deb']),
])
def test_package_files(version, release, machine, caps, files):
    assert _enroot.package_files(version, release, machine, caps) == files


@pytest.mark.parametrize('version, release, msg', [
    ('v4.1.2', '1', 'invalid enroot version "v4.1.2": use the release tag without "v", e.g. 4.1.2'),
    ('', '1', 'invalid enroot version "": use the release tag without "v", e.g. 4.1.2'),
    (4.1, '1', 'invalid enroot version "4.1": use the release tag without "v", e.g. 4.1.2'),
    ('4.1.2', '', 'invalid package release "": the Debian revision, e.g. 1'),
])
def test_package_files_invalid(version, release, msg):
    with pytest.raises(ValueError) as err:
        _enroot.package_files(version, release, 'x86_64')
    assert str(err.value) == msg


# ---- settings of the role gpucluster.bringup.enroot, each message whole ----------------------------

PEM_WHAT = ('the PEM text of one or more CA certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)%s, e.g. what the '
            'ansible.builtin.file lookup reads from a site-ca.pem; a path on the nodes is not read')


def pem(body):
    return '-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----' % body


@pytest.mark.parametrize('text, bundle', [
    (None, ''),
    (' \n', ''),
    (pem('A' * 70 + '=='), '-----BEGIN CERTIFICATE-----\n%s\n%s\n-----END CERTIFICATE-----\n' % ('A' * 64, 'A' * 6 + '==')),
    (pem('A' * 64), '-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n' % ('A' * 64)),
    # blanks inside the base64 text go, each certificate ends in a newline, in the order given
    ('\n' + pem('  AAAA BBBB\n  CCCC') + '\n\n' + pem('DDDD') + '\n',
     '-----BEGIN CERTIFICATE-----\nAAAABBBBCCCC\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nDDDD\n-----END CERTIFICATE-----\n'),
])
def test_ca_bundle(text, bundle):
    assert _enroot.ca_bundle(text) == bundle


@pytest.mark.parametrize('text, message', [
    (5, 'is 5, expected the PEM text of one or more CA certificates'),
    (pem('AAA'), 'holds a certificate whose base64 text is cut (3 characters, not a multiple of 4); expected whole PEM certificates'),
    (pem('AAAA') + '\n' + pem('AAAAA'), 'holds a certificate whose base64 text is cut (5 characters, not a multiple of 4); expected whole PEM certificates'),
    ('/etc/ssl/site-ca.pem', "is '/etc/ssl/site-ca.pem', expected " + PEM_WHAT % ''),
    (' %s \n second line' % ('x' * 70), "is '%s', expected " % ('x' * 60) + PEM_WHAT % ''),
    (pem('AAAA') + '\nextra', "is '-----BEGIN CERTIFICATE-----'..., expected " + PEM_WHAT % ' and nothing else'),
    ('-----BEGIN CERTIFICATE-----\nAAAA', "is '-----BEGIN CERTIFICATE-----'..., expected " + PEM_WHAT % ' and nothing else'),
])
def test_ca_bundle_refused(text, message):
    with pytest.raises(ValueError) as err:
        _enroot.ca_bundle(text)
    assert str(err.value) == message


@pytest.mark.parametrize('value, problem', [
    ('-comp lzo -noD -exit-on-error', None),
    ('-comp xz -Xbcj x86,arm -b 1M -exit-on-error -e a=b+c%:d.e_f', None),
    (None, 'is None, expected mksquashfs options such as "-comp lzo -noD -exit-on-error" (enroot\'s default)'),
    ('  ', "is '  ', expected mksquashfs options such as \"-comp lzo -noD -exit-on-error\" (enroot's default)"),
    ('-comp zstd  -noD', "is '-comp zstd  -noD', expected options that keep -exit-on-error (without it mksquashfs skips a file it cannot read and enroot "
                         "import succeeds with an image that lacks it), e.g. '-comp zstd -noD -exit-on-error'"),
    ('-exit-on-error $(x) `y`', "is '-exit-on-error $(x) `y`', expected mksquashfs options only (enroot passes them unquoted, word by word): "
                                "'$(x)', '`y`' is not one"),
])
def test_squash_options_problem(value, problem):
    assert _enroot.squash_options_problem(value) == problem


@pytest.mark.parametrize('value', ['/raid/x', '$HOME/x', '${HOME}', '$HOME', '${XDG_DATA_HOME}/enroot', '$TMPDIR/a', '${TMPDIR}', '/a/$(id -u)/b',
                                   '/a/$(id -u x)/b'])
def test_enroot_path_accepted(value):
    assert _enroot.enroot_path_problem(value) is None


@pytest.mark.parametrize('value', ['relative', '$HOMEX/a', '/a b', '/a\tb', '/a/$(id -u) x', '/a/$(a(b) c)', '', None, '${XDG_cache}/x', 'x/$HOME'])
def test_enroot_path_refused(value):
    assert _enroot.enroot_path_problem(value) == (
        "is %r, expected an absolute path without blanks (but in $(...)), in which enroot expands $(id -u), $(id -g), ${HOME} per user "
        "(e.g. '/tmp/enroot-data/user-$(id -u)')" % (value,))


@pytest.mark.parametrize('machine, arch', [('x86_64', 'amd64'), ('aarch64', 'arm64'), ('ppc64le', 'ppc64el'), ('riscv64', 'riscv64')])
def test_deb_arch(machine, arch):
    assert _enroot.deb_arch(machine) == arch


def test_unescape_mount_field():
    assert _enroot.unescape_mount_field('/mnt/a\\040b\\011c\\012d\\134e\\0x\\09') == '/mnt/a b\tc\nd\\e\\0x\\09'


# ---- option values of the command lines, references no form reads, Basic authentication refused ------------------

NAME_WHAT = 'a container name (letters, digits, "_", "." and "-", starting with a letter or digit)'


@pytest.mark.parametrize('call, message', [
    (lambda: _enroot.import_argv('enroot', 'docker://x', 'relative'), "--output 'relative' is not an absolute path"),
    (lambda: _enroot.import_argv('enroot', 'docker://x', None), '--output None is not an absolute path'),
    (lambda: _enroot.import_argv('enroot', 'docker://x', '/a\x00b'), "--output '/a\\x00b' is not an absolute path"),
    (lambda: _enroot.create_argv('enroot', '-x', '/i'), "--name '-x' is not " + NAME_WHAT),
    (lambda: _enroot.create_argv('enroot', None, '/i'), '--name None is not ' + NAME_WHAT),
    (lambda: _enroot.remove_argv('enroot', 'a b'), "--name 'a b' is not " + NAME_WHAT),
])
def test_argv_refuses_a_bad_option_value(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize('uri, reason', [
    ('a#b#c', 'it has more than one "#" (read as docker://a#b#c, as pyxis reads an image without a scheme)'),
    ('x y', 'the image "x y" must be lower-case letters, digits, ".", "_", "-" and "/" (read as docker://x y, as pyxis reads an image '
            'without a scheme)'),
    ('a b@c@reg.io#img', 'the user "a b" has characters enroot does not accept (read as docker://a b@c@reg.io#img, as pyxis reads an '
                         'image without a scheme)'),
    ('docker://a b@c@reg.io#img', 'the user "a b" has characters enroot does not accept'),
])
def test_a_reference_no_form_reads_names_its_first_bad_part(uri, reason):
    with pytest.raises(ValueError) as err:
        _enroot.parse_uri(uri)
    assert str(err.value) == 'invalid image URI "%s": %s; valid forms are %s' % (uri, reason, _enroot.VALID_FORMS)


def test_basic_credentials_refused_at_the_manifest_get_the_http2_hint():
    stderr = '[INFO] Authenticating with user: bob\n[INFO] Using credentials from file: /h/c\n'
    assert _enroot.error_message('auth', 'https://reg/v2/a/manifests/1.0', U, 1, stderr) == (
        "the registry refused the credentials of user bob for %s (https://reg/v2/a/manifests/1.0, from /h/c): check the password of "
        "that user's line in $ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com lines)%s"
        % (U, _enroot.BASIC_HTTP2_HINT))


def test_the_import_record_text_and_the_image_identity_whole():
    assert _enroot.make_record(_enroot.parse_uri('docker://ubuntu:22.04'), DIGEST_A, '5') == (
        '{\n  "digest": "%s",\n  "format": 1,\n  "size": 5,\n  "uri": "docker://ubuntu:22.04"\n}\n' % DIGEST_A)
    assert _enroot.image_identity('/d/x.sqsh', '5', 7.0, DIGEST_A) == {'format': 1, 'image': '/d/x.sqsh', 'size': 5, 'mtime_ns': 7, 'digest': DIGEST_A}
