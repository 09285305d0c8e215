# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot image references, command lines, import records and error messages.

Facts taken from NVIDIA enroot's sources (``src/docker.sh``, ``src/runtime.sh``,
``src/common.sh``, ``doc/cmd/import.md``):

* ``enroot import [--arch A] [--output FILE] [--] URI`` with the schemes
  ``docker://[USER@][REGISTRY#]IMAGE[:TAG]``, ``dockerd://IMAGE[:TAG]`` and
  ``podman://IMAGE[:TAG]``; it refuses an existing output ("File already exists: FILE")
  and writes the squashfs straight to FILE (an interrupted import leaves a partial file,
  which is why the module imports into a temporary directory and renames);
* without ``--output`` the file is ``IMAGE.sqsh`` with ``/`` turned into ``+``, the
  registry and Docker Hub's ``library/`` dropped and ``+TAG`` appended (``latest`` when
  no tag is given); for ``dockerd://``/``podman://`` ``:`` and ``/`` become ``+``;
* ``enroot digest URI`` prints the manifest digest (``sha256:...``) without importing;
  versions without that command print the usage text and exit 0;
* ``enroot create --name NAME IMAGE`` unpacks into ``$ENROOT_DATA_PATH/NAME``, ``enroot
  list`` prints one container name a line, ``enroot remove --force NAME`` deletes one;
* errors go to stderr as ``[ERROR] message``; a failed HTTP request reads
  ``[ERROR] URL <url> returned error code: <status>``; connection problems are curl's own
  ``curl: (N) ...`` lines.

Pure functions, standard library only.  Bad input raises ``ValueError`` naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

VALID_FORMS = ('docker://[USER@][REGISTRY#]IMAGE[:TAG], dockerd://IMAGE[:TAG] or podman://IMAGE[:TAG] '
               '(for example docker://nvcr.io#nvidia/pytorch:24.01-py3)')

# The character classes of enroot's docker::_parse_uri, without the ones that would make
# the parts ambiguous ('@', '#' and '/' never belong to a user or a registry).
_USER = r"[A-Za-z0-9_.!~*'()%;:&=+$,-]+"
_REGISTRY = r'[^#@/\s]+'
_IMAGE = r'[a-z0-9._-]+(?:/[a-z0-9._-]+)*'
_TAG = r'[A-Za-z0-9_][A-Za-z0-9._-]{0,127}'
_DOCKER_RE = re.compile(r'^docker://(?:(?P<user>%s)@)?(?:(?P<registry>%s)#)?(?P<image>%s)(?::(?P<tag>%s))?$'
                        % (_USER, _REGISTRY, _IMAGE, _TAG))
_DAEMON_RE = re.compile(r'^(?P<scheme>dockerd|podman)://(?P<image>[A-Za-z0-9._/-]+)(?::(?P<tag>%s))?$' % _TAG)
_DIGEST_RE = re.compile(r'^sha256:[0-9a-f]{64}$')
CONTAINER_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')

PYXIS_PREFIX = 'pyxis_'
RECORD_FORMAT = 1
RECORD_SUFFIX = '.import.json'


class ImageRef(object):
    """A parsed enroot image URI."""

    def __init__(self, uri, scheme, image, tag=None, user=None, registry=None):
        self.uri = uri
        self.scheme = scheme
        self.image = image
        self.tag = tag
        self.user = user
        self.registry = registry

    @property
    def from_registry(self):
        """True for ``docker://``: the image comes from a registry and has a digest there."""
        return self.scheme == 'docker'

    def as_dict(self):
        return {'uri': self.uri, 'scheme': self.scheme, 'image': self.image, 'tag': self.tag,
                'user': self.user, 'registry': self.registry}


def _bad_uri(uri, why):
    return ValueError('invalid image URI "%s": %s; valid forms are %s' % (uri, why, VALID_FORMS))


def parse_uri(uri):
    """Parse an enroot image URI into an :class:`ImageRef`; ``ValueError`` when malformed."""
    if not isinstance(uri, str) or not uri.strip():
        raise _bad_uri(uri, 'it is empty')
    if uri != uri.strip():
        raise _bad_uri(uri, 'it has leading or trailing blanks')
    scheme, sep, rest = uri.partition('://')
    if not sep:
        raise _bad_uri(uri, 'it has no scheme')
    if scheme not in ('docker', 'dockerd', 'podman'):
        raise _bad_uri(uri, 'scheme "%s" is not one enroot imports from' % scheme)
    if scheme == 'docker':
        match = _DOCKER_RE.match(uri)
        if not match:
            raise _bad_uri(uri, _docker_reason(rest))
        image = match.group('image')
        registry = match.group('registry')
        first = image.split('/', 1)[0]
        if registry is None and '/' in image and ('.' in first or ':' in first or first == 'localhost'):
            raise _bad_uri(uri, '"%s" looks like a registry; enroot separates the registry with "#": docker://%s#%s%s'
                           % (first, first, image.split('/', 1)[1], (':' + match.group('tag')) if match.group('tag') else ''))
        return ImageRef(uri, scheme, image, match.group('tag'), match.group('user'), registry)
    match = _DAEMON_RE.match(uri)
    if not match:
        raise _bad_uri(uri, 'the image part "%s" is not IMAGE[:TAG]' % rest)
    return ImageRef(uri, scheme, match.group('image'), match.group('tag'))


def _docker_reason(rest):
    """Say which part of a ``docker://`` reference is wrong."""
    if not rest:
        return 'the image is missing'
    body = rest
    if '@' in body.split('#', 1)[0]:
        user, body = body.split('@', 1)
        if not re.match('^%s$' % _USER, user):
            return 'the user "%s" has characters enroot does not accept' % user
    if '#' in body:
        registry, body = body.split('#', 1)
        if not registry or not re.match('^%s$' % _REGISTRY, registry):
            return 'the registry "%s" is not a host[:port]' % registry
    image, _sep, tag = body.partition(':')
    if not image:
        return 'the image is missing'
    if not re.match('^%s$' % _IMAGE, image):
        return 'the image "%s" must be lower-case letters, digits, ".", "_", "-" and "/"' % image
    return 'the tag "%s" is not a valid tag' % tag


def default_output_name(ref):
    """The file name ``enroot import`` picks when no ``--output`` is given."""
    if ref.scheme == 'docker':
        image = ref.image
        if ref.registry is None and image.startswith('library/'):
            image = image[len('library/'):]
        return '%s+%s.sqsh' % (image.replace('/', '+'), ref.tag or 'latest')
    name = ref.image + ((':' + ref.tag) if ref.tag else '')
    return name.replace(':', '+').replace('/', '+') + '.sqsh'


def container_name(name):
    """The enroot container that ``srun --container-name=NAME`` uses: ``pyxis_NAME``."""
    if not isinstance(name, str) or not CONTAINER_NAME_RE.match(name):
        raise ValueError('invalid container name "%s": use letters, digits, "_", "." and "-", starting with a letter or digit'
                         % (name,))
    return PYXIS_PREFIX + name


def import_argv(enroot, uri, output, arch=None):
    """``enroot import`` command line; ``--`` keeps a URI from being read as an option."""
    argv = [enroot, 'import', '--output', output]
    if arch:
        argv.extend(['--arch', arch])
    argv.extend(['--', uri])
    return argv


def digest_argv(enroot, uri, arch=None):
    argv = [enroot, 'digest']
    if arch:
        argv.extend(['--arch', arch])
    argv.extend(['--', uri])
    return argv


def create_argv(enroot, name, image):
    return [enroot, 'create', '--name', name, '--', image]


def remove_argv(enroot, name):
    return [enroot, 'remove', '--force', '--', name]


def list_argv(enroot):
    return [enroot, 'list']


def import_environment(retries=None, connect_timeout=None, transfer_timeout=None):
    """Environment for enroot: its settings are read from the environment first, then enroot.conf."""
    env = {}
    if retries is not None:
        env['ENROOT_TRANSFER_RETRIES'] = str(int(retries))
    if connect_timeout is not None:
        env['ENROOT_CONNECT_TIMEOUT'] = str(int(connect_timeout))
    if transfer_timeout is not None:
        env['ENROOT_TRANSFER_TIMEOUT'] = str(int(transfer_timeout))
    return env


def parse_digest_output(stdout):
    """The digest ``enroot digest`` printed, or ``None`` when this enroot has no such command."""
    for line in (stdout or '').splitlines():
        line = line.strip()
        if _DIGEST_RE.match(line):
            return line
    return None


def parse_list_output(stdout):
    """Container names from ``enroot list`` (one a line)."""
    return [line.strip() for line in (stdout or '').splitlines() if line.strip()]


def record_path(dest):
    """The import record kept next to the image: ``DEST.import.json``."""
    return dest + RECORD_SUFFIX


def make_record(ref, digest, size):
    """The JSON text recorded next to an imported image."""
    return json.dumps({'format': RECORD_FORMAT, 'uri': ref.uri, 'digest': digest, 'size': int(size)},
                      sort_keys=True, indent=2) + '\n'


def parse_record(text):
    """Read a record written by :func:`make_record`; ``None`` when it is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get('format') != RECORD_FORMAT or not isinstance(data.get('uri'), str):
        return None
    digest = data.get('digest')
    if digest is not None and not (isinstance(digest, str) and _DIGEST_RE.match(digest)):
        return None
    size = data.get('size')
    if not isinstance(size, int):
        return None
    return {'uri': data['uri'], 'digest': digest, 'size': size}


def plan_import(ref, exists, size, record, current_digest, force):
    """Decide whether to import.  Returns ``(import_needed, reason)``.

    ``exists``/``size``: the destination file; ``record``: its parsed import record or
    ``None``; ``current_digest``: what the registry serves now, ``None`` when unknown.
    """
    if force:
        return True, 'force is set'
    if not exists:
        return True, 'the image file does not exist'
    if record is None:
        return False, 'the image file exists and has no import record; kept as it is (use force to replace it)'
    if record['uri'] != ref.uri:
        return True, 'the image file was imported from %s, not %s' % (record['uri'], ref.uri)
    if record['size'] != size:
        return True, 'the image file is %d bytes, the import recorded %d' % (size, record['size'])
    if current_digest is None or record['digest'] is None:
        return False, 'the image file exists and the image digest cannot be known'
    if current_digest != record['digest']:
        return True, 'the registry now serves %s, the file holds %s' % (current_digest, record['digest'])
    return False, 'the image file holds digest %s, the one the registry serves' % current_digest


TEMP_MARK = '.enroot-import.'


def temp_prefix(dest_name, host, pid=None):
    """Name prefix of the temporary import directory next to ``dest_name``.

    ``.NAME.enroot-import.HOST.PID.``: the host keeps one node from judging, by process id,
    the temporary directory of an import running on another node of a shared file system.
    """
    host = re.sub(r'[^A-Za-z0-9-]', '-', host) or 'host'
    prefix = '.%s%s%s.' % (dest_name, TEMP_MARK, host)
    return prefix if pid is None else '%s%d.' % (prefix, pid)


def temp_owner_pid(entry, dest_name, host):
    """The process id in a temporary directory name made on ``host`` for ``dest_name``, else ``None``."""
    prefix = temp_prefix(dest_name, host)
    if not entry.startswith(prefix):
        return None
    pid = entry[len(prefix):].split('.', 1)[0]
    return int(pid) if pid.isdigit() else None


def image_identity(dest, size, mtime_ns, digest):
    """What a named container was created from: the image file, its size and mtime, its digest."""
    return {'format': RECORD_FORMAT, 'image': dest, 'size': int(size), 'mtime_ns': int(mtime_ns), 'digest': digest}


def container_record_path(directory, container):
    """Where the module remembers what ``container`` was created from."""
    return '%s/%s.json' % (directory.rstrip('/'), container)


def plan_container(present, saved, wanted, imported, force):
    """Decide whether to (re)create the named container.  Returns ``(create, reason)``.

    ``saved``: the identity recorded when the container was created (``None`` when unknown);
    ``wanted``: the identity of the image file now (``None`` when it is about to be imported).
    """
    if force:
        return True, 'force is set'
    if not present:
        return True, 'the container does not exist'
    if imported or wanted is None:
        return True, 'the image file is being imported again'
    if saved is None:
        return True, 'the container has no record of the image it was created from'
    if saved != wanted:
        return True, 'the image file changed since the container was created'
    return False, 'the container was created from the current image file'


def parse_container_record(text):
    """Read an identity written from :func:`image_identity`; ``None`` when it is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    keys = {'format', 'image', 'size', 'mtime_ns', 'digest'}
    if not isinstance(data, dict) or set(data) != keys or data['format'] != RECORD_FORMAT:
        return None
    return data


# (kind, pattern) in the order they are tried against enroot's stderr.
_ERROR_PATTERNS = (
    ('invalid_uri', re.compile(r'Invalid image reference: (?P<what>\S+)')),
    ('missing_command', re.compile(r'Command not found: (?P<what>\S+)')),
    ('exists', re.compile(r'File already exists: (?P<what>\S+)')),
    ('unreachable', re.compile(r'curl: \(6\) (?P<what>Could not resolve (?:host|proxy): \S+)')),
    ('unreachable', re.compile(r'curl: \((?:7|28|35|52|56)\) (?P<what>.+)')),
    ('auth', re.compile(r'URL (?P<what>\S+) returned error code: (?:401|403)')),
    ('not_found', re.compile(r'URL (?P<what>\S+/manifests/\S+) returned error code: 404')),
    ('registry_error', re.compile(r'URL (?P<what>\S+) returned error code: (?:[45]\d\d)')),
    ('bad_manifest', re.compile(r'Could not parse digest information from (?P<what>\S+)')),
    ('checksum', re.compile(r'Checksum mismatch: (?P<what>\S+)')),
    ('auth', re.compile(r'Could not parse authentication realm from (?P<what>\S+)')),
)

OCI_ONLY_TEXT = 'OCI manifest found, but accept header does not support OCI manifests'


def classify_error(stderr):
    """Return ``(kind, detail)`` for a failed enroot command from its stderr.

    ``kind`` is one of ``invalid_uri``, ``missing_command``, ``exists``, ``unreachable``,
    ``auth``, ``not_found``, ``registry_error``, ``bad_manifest``, ``checksum`` or
    ``unknown``; ``detail`` is the matched URL, host, command or file (or the last line).
    """
    text = stderr or ''
    for kind, pattern in _ERROR_PATTERNS:
        match = pattern.search(text)
        if match:
            return kind, match.group('what').strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return 'unknown', lines[-1] if lines else ''


def is_oci_only_response(status, body):
    """True when a registry answered a Docker-v2-only manifest request with Distribution's OCI refusal."""
    return status == 404 and OCI_ONLY_TEXT in (body or '')


def manifest_probe_url(url):
    """The manifest URL to probe for the OCI refusal, or ``None`` when ``url`` is not one."""
    if re.match(r'^https?://[^/\s]+/v2/.+/manifests/[^/\s]+$', url or ''):
        return url
    return None


def error_message(kind, detail, uri, rc, stderr, oci_only=False):
    """One sentence for a failed import of ``uri``."""
    tail = ' '.join(line.strip() for line in (stderr or '').strip().splitlines()[-3:])
    if oci_only:
        return ('the registry serves only an OCI image manifest for %s (%s answers 404 "%s" to a request that does '
                'not list OCI in its Accept header, as enroot\'s requests do); push the image as Docker v2 schema 2 '
                '(skopeo copy --format v2s2, docker push, buildah push --format docker)' % (uri, detail, OCI_ONLY_TEXT))
    if kind == 'invalid_uri':
        return 'enroot rejected the image URI "%s" as invalid; valid forms are %s' % (detail, VALID_FORMS)
    if kind == 'missing_command':
        return 'enroot import of %s needs the command "%s", which is not installed on this host' % (uri, detail)
    if kind == 'exists':
        return 'enroot refused to overwrite %s (File already exists)' % detail
    if kind == 'unreachable':
        return 'cannot reach the registry of %s: %s (check the registry name, DNS, proxy and firewall)' % (uri, detail)
    if kind == 'auth':
        return ('the registry refused access to %s (%s): check the credentials in $ENROOT_CONFIG_PATH/.credentials '
                '(netrc format; NGC needs nvcr.io and authn.nvidia.com lines)' % (uri, detail))
    if kind == 'not_found':
        return ('the registry has no manifest for %s (%s returned 404): check the image name and tag, or the registry '
                'may hold only an OCI manifest for it' % (uri, detail))
    if kind == 'registry_error':
        return 'the registry failed while serving %s: %s' % (uri, tail)
    if kind == 'bad_manifest':
        return 'enroot could not read the image manifest of %s at %s (unsupported manifest type)' % (uri, detail)
    if kind == 'checksum':
        return 'a layer of %s failed its checksum (%s); the download was corrupted, retry' % (uri, detail)
    return 'enroot import of %s failed with exit code %s: %s' % (uri, rc, tail or 'no error output')
