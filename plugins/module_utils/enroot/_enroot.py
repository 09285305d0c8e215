# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""enroot image references, command lines, import records and error messages.

Facts taken from NVIDIA enroot's sources (``src/docker.sh``, ``src/runtime.sh``,
``src/common.sh``, ``conf/enroot.conf.in``, ``doc/cmd/import.md``), enroot 4.x:

* ``enroot import [--arch A] [--output FILE] [--] URI`` with the schemes ``docker://``,
  ``dockerd://IMAGE[:TAG]`` and ``podman://IMAGE[:TAG]``; it refuses an existing output
  ("File already exists: FILE") and writes the squashfs straight to FILE (an interrupted
  import leaves a partial file, which is why the module imports into a temporary directory
  and renames);
* ``docker://`` references (``docker::_parse_uri``), tried in this order, each with an
  optional ``USER@`` in front:
  ``FIRST/IMAGE:TAG@DIGEST``, ``FIRST/IMAGE@DIGEST``, ``FIRST/IMAGE[:TAG]`` (FIRST is the
  registry when it holds a ``.`` or a ``:``, otherwise a Docker Hub namespace: ``localhost``
  alone is a namespace), ``NAME:TAG@DIGEST``, ``NAME@DIGEST``, ``NAME[:TAG]`` (Docker Hub
  ``library/NAME``), then the enroot form ``REGISTRY#IMAGE:TAG@DIGEST``,
  ``REGISTRY#IMAGE@DIGEST``, ``REGISTRY#IMAGE[:TAG]``. Docker Hub is
  ``registry-1.docker.io``; a digest replaces the tag (the tag next to it is ignored); no
  tag means ``latest``;
* without ``--output`` the file is ``IMAGE.sqsh`` with ``/`` turned into ``+``,
  ``library/`` dropped for Docker Hub and ``+TAG`` appended (``+sha256:HEX`` for a digest,
  ``+latest`` when neither is given); for ``dockerd://``/``podman://`` ``:`` and ``/``
  become ``+``;
* ``enroot digest URI`` prints the manifest digest (``sha256:...``) without importing;
  versions without that command print the usage text and exit 0;
* ``enroot create --name NAME IMAGE`` unpacks into ``$ENROOT_DATA_PATH/NAME``, ``enroot
  list`` prints one container name a line, ``enroot remove --force NAME`` deletes one;
* errors go to stderr as ``[ERROR] message``; a failed HTTP request reads
  ``[ERROR] URL <url> returned error code: <status>``; connection problems are curl's own
  ``curl: (N) ...`` lines; without ``ENROOT_ALLOW_HTTP`` every request is HTTPS, so a
  plain-HTTP registry answers with curl's "(35) ... wrong version number";
* the ``--arch`` values enroot converts (``common::debarch``): ``x86_64``, ``aarch64``,
  ``ppc64le``;
* release assets: ``enroot_<version>-<release>_<debarch>.deb`` and
  ``enroot+caps_<version>-<release>_<debarch>.deb`` (``doc/installation.md``).

Where enroot's parser lets through a part that no registry accepts, :func:`parse_uri`
rejects it with the reason instead of letting the import fail at the registry: a digest
that is not ``sha256:`` and 64 lower-case hex digits, an image or Docker Hub name with
characters other than enroot's own image characters (lower-case letters, digits, ``.``,
``_``, ``-``, ``/``), a tag outside Docker's tag grammar, a registry that is not
``host[:port]``.  Only ASCII is accepted.

Pure functions, standard library only.  Bad input raises ``ValueError`` naming the bad value.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os.path
import re

VALID_FORMS = ('docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST] (REGISTRY with a "." or a ":port"), '
               'docker://[USER@]REGISTRY#IMAGE[:TAG][@sha256:DIGEST], the same without docker:// (as srun --container-image takes it), '
               'dockerd://IMAGE[:TAG] or podman://IMAGE[:TAG] '
               '(for example docker://nvcr.io/nvidia/pytorch:24.01-py3, nvcr.io/nvidia/pytorch:24.01-py3 or docker://nvcr.io#nvidia/pytorch:24.01-py3)')

DOCKER_HUB = 'registry-1.docker.io'

# The character classes of enroot's docker::_parse_uri (ASCII).  enroot's user class ends in
# the range ",-@", so a user may hold "/", ":" and "@" too; the longest user that leaves a
# valid rest is taken, as bash's POSIX regex does.
_U = r"(?:(?P<user>[A-Za-z0-9_.!~*\\'()%;:&=+$,-@]+)@)?"
_I = r'[a-z0-9/._-]+'
_T = r'[A-Za-z0-9._:-]+'
_D = r'sha256:[A-Za-z0-9]+'
# (name, pattern, how the first part is read) in enroot's order.
_DOCKER_FORMS = (
    ('slash', re.compile(r'^docker://%s(?P<first>[^/#]+)/(?P<image>%s):(?P<tag>%s)@(?P<digest>%s)$' % (_U, _I, _T, _D))),
    ('slash', re.compile(r'^docker://%s(?P<first>[^/#]+)/(?P<image>%s)@(?P<digest>%s)$' % (_U, _I, _D))),
    ('slash', re.compile(r'^docker://%s(?P<first>[^/#]+)/(?P<image>%s)(?::(?P<tag>%s))?$' % (_U, _I, _T))),
    ('hub', re.compile(r'^docker://%s(?P<image>[^/@#:]+):(?P<tag>%s)@(?P<digest>%s)$' % (_U, _T, _D))),
    ('hub', re.compile(r'^docker://%s(?P<image>[^/@#:]+)@(?P<digest>%s)$' % (_U, _D))),
    ('hub', re.compile(r'^docker://%s(?P<image>[^/@#:]+)(?::(?P<tag>%s))?$' % (_U, _T))),
    ('hash', re.compile(r'^docker://%s(?P<registry>[^#/@]+)#(?P<image>%s):(?P<tag>%s)@(?P<digest>%s)$' % (_U, _I, _T, _D))),
    ('hash', re.compile(r'^docker://%s(?P<registry>[^#/@]+)#(?P<image>%s)@(?P<digest>%s)$' % (_U, _I, _D))),
    ('hash', re.compile(r'^docker://%s(?P<registry>[^#/@]+)#(?P<image>%s)(?::(?P<tag>%s))?$' % (_U, _I, _T))),
)
_USER_RE = re.compile(r"^[A-Za-z0-9_.!~*\\'()%;:&=+$,-@]+$")
_IMAGE_RE = re.compile(r'^[a-z0-9/._-]+$')
_NAME_RE = re.compile(r'^[a-z0-9._-]+$')
# Docker's tag grammar (what a registry accepts).
_TAG_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$')
_REGISTRY_RE = re.compile(r'^(?:[A-Za-z0-9][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$')
_DAEMON_RE = re.compile(r'^(?P<scheme>dockerd|podman)://(?P<image>[A-Za-z0-9._/-]+)(?::(?P<tag>%s))?$' % _TAG_RE.pattern[1:-1])
_DIGEST_RE = re.compile(r'^sha256:[0-9a-f]{64}$')
CONTAINER_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*\Z')

PYXIS_PREFIX = 'pyxis_'
RECORD_FORMAT = 1
RECORD_SUFFIX = '.import.json'


class ImageRef(object):
    """A parsed enroot image URI, split as enroot splits it (``given``: the reference as written, when it had no scheme).

    For ``docker://``: ``registry`` is the registry enroot talks to (``registry-1.docker.io``
    for Docker Hub), ``image`` the repository path there (``library/ubuntu``), ``tag`` the tag
    (``latest`` when neither a tag nor a digest is given, ``None`` for ``IMAGE@DIGEST``),
    ``digest`` the pinned digest or ``None``.  For ``dockerd://``/``podman://`` ``image`` and
    ``tag`` are as written.
    """

    def __init__(self, uri, scheme, image, tag=None, user=None, registry=None, digest=None):
        self.uri = uri
        # the reference as written when it had no scheme (``uri`` is then ``docker://`` + it), else None
        self.given = None
        self.scheme = scheme
        self.image = image
        self.tag = tag
        self.user = user
        self.registry = registry
        self.digest = digest

    @property
    def from_registry(self):
        """True for ``docker://``: the image comes from a registry and has a digest there."""
        return self.scheme == 'docker'

    @property
    def reference(self):
        """What enroot asks the registry for: the digest when one is pinned, else the tag."""
        return self.digest or self.tag

    def as_dict(self):
        return {'uri': self.uri, 'scheme': self.scheme, 'image': self.image, 'tag': self.tag,
                'user': self.user, 'registry': self.registry, 'digest': self.digest}


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
        return _schemeless(uri)
    if scheme not in ('docker', 'dockerd', 'podman'):
        raise _bad_uri(uri, 'scheme "%s" is not one enroot imports from' % scheme)
    if scheme != 'docker':
        match = _DAEMON_RE.match(uri)
        if not match:
            raise _bad_uri(uri, 'the image part "%s" is not IMAGE[:TAG]' % rest)
        return ImageRef(uri, scheme, match.group('image'), match.group('tag'))
    for form, pattern in _DOCKER_FORMS:
        match = pattern.match(uri)
        if match:
            return _docker_ref(uri, form, match)
    raise _bad_uri(uri, _docker_reason(rest))


def _schemeless(given):
    """A reference without a scheme, as pyxis takes it (``--container-image=nvcr.io/nvidia/pytorch:24.01-py3``): read as
    ``docker://`` + it, as pyxis 0.24 hands it to enroot (pyxis_slurmstepd.c enroot_container_create); a path is refused."""
    if given.startswith('-'):
        raise _bad_uri(given, 'it starts with "-", which enroot would read as one of its options, not an image')
    if given.startswith(('/', '.', '~')):
        raise _bad_uri(given, 'it is a file path, not an image in a registry (a squashfs file needs no import: srun '
                              '--container-image=%s uses it as it is)' % given)
    uri = 'docker://' + given
    for form, pattern in _DOCKER_FORMS:
        match = pattern.match(uri)
        if match:
            ref = _docker_ref(uri, form, match, given)
            ref.given = given
            return ref
    raise _bad_uri(given, '%s (read as %s, as pyxis reads an image without a scheme)' % (_docker_reason(given), uri))


def _docker_ref(uri, form, match, shown=None):
    parts = match.groupdict()
    image = parts['image']
    if form == 'slash':
        first = parts['first']
        if '.' in first or ':' in first:
            registry = first
        else:
            registry, image = DOCKER_HUB, '%s/%s' % (first, image)
    elif form == 'hub':
        registry, image = DOCKER_HUB, 'library/' + image
    else:
        registry = parts['registry']
    digest, tag = parts.get('digest'), parts.get('tag')
    why = _registry_reason(registry, image, tag, digest)
    if why:
        raise _bad_uri(shown or uri, why if shown is None else '%s (read as %s, as pyxis reads an image without a scheme)' % (why, uri))
    return ImageRef(uri, 'docker', image, tag if tag or digest else 'latest', parts['user'], registry, digest)


def _registry_reason(registry, image, tag, digest):
    """Why a part that enroot's parser lets through cannot be served by a registry, or None."""
    if registry != DOCKER_HUB and not _REGISTRY_RE.match(registry):
        return 'the registry "%s" is not a host[:port]' % registry
    if not _IMAGE_RE.match(image) or '//' in image or image.endswith('/'):
        return 'the image "%s" must be lower-case letters, digits, ".", "_", "-" and "/"' % _strip_library(registry, image)
    if tag is not None and not _TAG_RE.match(tag):
        return ('the tag "%s" is not a valid tag (letters, digits, "_", "." and "-", at most 128, not starting with "." or "-")'
                % tag)
    if digest is not None and not _DIGEST_RE.match(digest):
        return 'the digest "%s" must be "sha256:" and 64 lower-case hexadecimal digits' % digest
    return None


def _strip_library(registry, image):
    if registry == DOCKER_HUB and image.startswith('library/'):
        return image[len('library/'):]
    return image


def _docker_reason(rest):
    """Say which part of a ``docker://`` reference is wrong (the reference matched none of enroot's forms)."""
    if not rest:
        return 'the image is missing'
    body = rest
    head = re.split('[/#]', body, 1)[0]
    if '@' in head and not head.rsplit('@', 1)[1].startswith('sha256:'):
        user, body = body.split('@', 1)
        if not _USER_RE.match(user):
            return 'the user "%s" has characters enroot does not accept' % user
    registry = None
    if '#' in body:
        registry, body = body.split('#', 1)
    elif '/' in body and re.search('[.:]', body.split('/', 1)[0]):
        registry, body = body.split('/', 1)
    if registry is not None and not _REGISTRY_RE.match(registry):
        return 'the registry "%s" is not a host[:port]' % registry
    if '#' in body:
        return 'it has more than one "#"'
    body, at, digest = body.partition('@')
    if at and not _DIGEST_RE.match(digest):
        return 'the digest "%s" must be "sha256:" and 64 lower-case hexadecimal digits' % digest
    image, colon, tag = body.partition(':')
    if not image or image.endswith('/'):
        return 'the image is missing'
    if not _IMAGE_RE.match(image):
        return 'the image "%s" must be lower-case letters, digits, ".", "_", "-" and "/"' % image
    if colon:
        return 'the tag "%s" is not a valid tag' % tag
    return 'it is none of the forms enroot reads'


def uri_warnings(ref):
    """Warnings for references that enroot reads differently from what they may be meant as."""
    warnings = []
    written = ref.uri[len('docker://'):]
    if ref.user is not None:
        written = written[len(ref.user) + 1:]
    if ref.scheme == 'docker' and ref.registry == DOCKER_HUB and written.startswith('localhost/'):
        warnings.append('%s names the Docker Hub repository %s: enroot reads the first part as a registry only when it '
                        'holds a "." or a ":port"; for a registry on this host write docker://localhost:PORT/%s'
                        % (ref.uri, ref.image, ref.image.split('/', 1)[1]))
    return warnings


def default_output_name(ref):
    """The file name ``enroot import`` picks when no ``--output`` is given."""
    if ref.scheme == 'docker':
        image = _strip_library(ref.registry, ref.image)
        return '%s+%s.sqsh' % (image.replace('/', '+'), ref.reference or 'latest')
    name = ref.image + ((':' + ref.tag) if ref.tag else '')
    return name.replace(':', '+').replace('/', '+') + '.sqsh'


def container_name(name):
    """The enroot container that ``srun --container-name=NAME`` uses: ``pyxis_NAME``."""
    if not isinstance(name, str) or not CONTAINER_NAME_RE.match(name):
        raise ValueError('invalid container name "%s": use letters, digits, "_", "." and "-", starting with a letter or digit'
                         % (name,))
    return PYXIS_PREFIX + name


# enroot's subcommands read their options in a bash loop (enroot.in, 4.1.2): "--" ends the options; the word after
# --output, --arch and --name is taken as the option's value whatever it looks like. So the URI, the image and the
# container name go after "--"; the output path and the container name given to options are checked here once more
# (the module checked them; --arch is one of ARCHES there).


def _option_value(option, value, valid, what):
    if not isinstance(value, str) or not valid(value):
        raise ValueError('%s %r is not %s' % (option, value, what))
    return value


def _absolute(option, path):
    return _option_value(option, path, lambda v: v.startswith('/') and '\x00' not in v, 'an absolute path')


def _container(name):
    return _option_value('--name', name, CONTAINER_NAME_RE.match, 'a container name (letters, digits, "_", "." and "-", '
                                                                  'starting with a letter or digit)')


def import_argv(enroot, uri, output, arch=None):
    """``enroot import`` command line; ``--`` keeps a URI from being read as an option."""
    argv = [enroot, 'import', '--output', _absolute('--output', output)]
    if arch:
        argv.extend(['--arch', arch])
    argv.extend(['--', uri])
    return argv


def digest_argv(enroot, uri, arch=None):
    """``enroot digest [--arch A] -- URI``."""
    argv = [enroot, 'digest']
    if arch:
        argv.extend(['--arch', arch])
    argv.extend(['--', uri])
    return argv


def create_argv(enroot, name, image):
    """``enroot create --name NAME -- IMAGE``."""
    return [enroot, 'create', '--name', _container(name), '--', image]


def remove_argv(enroot, name):
    """``enroot remove --force -- NAME``."""
    return [enroot, 'remove', '--force', '--', _container(name)]


def list_argv(enroot):
    return [enroot, 'list']


def import_environment(retries=None, connect_timeout=None):
    """Environment for enroot: its settings are read from the environment first, then enroot.conf.

    Only what the task sets goes into the environment; the rest of the node's enroot.conf stays in force.
    """
    env = {}
    if retries is not None:
        env['ENROOT_TRANSFER_RETRIES'] = str(int(retries))
    if connect_timeout is not None:
        env['ENROOT_CONNECT_TIMEOUT'] = str(int(connect_timeout))
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
    ``None``; ``current_digest``: what the registry serves now, ``None`` when unknown.  For a
    digest-pinned ``ref`` the pinned digest is compared with the record and ``current_digest``
    is not used.
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
    if ref.digest is not None:
        # A pinned digest names content that never changes: no registry call is needed.
        if record['digest'] != ref.digest:
            return True, 'the URI pins %s, the file holds %s' % (ref.digest, record['digest'])
        return False, 'the image file holds digest %s, the one pinned in the URI' % ref.digest
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
    ('no_space', re.compile(r'(?P<what>[^\n]*No space left on device[^\n]*)')),
    # an unprivileged user's enroot without the file capabilities of the enroot+caps package, on a layer with whiteouts
    ('capabilities', re.compile(r'enroot-aufs2ovlfs: (?P<what>failed to set capabilities: .+)')),
    ('plain_http', re.compile(r'curl: \(35\) (?P<what>.*wrong version number.*)')),
    # curl 60: the server's certificate is not signed by a CA this host trusts; 77: the CA file cannot be read
    ('tls', re.compile(r'curl: \((?:60|77)\) (?P<what>.+)')),
    ('unreachable', re.compile(r'curl: \(6\) (?P<what>Could not resolve (?:host|proxy): \S+)')),
    ('unreachable', re.compile(r'curl: \((?:7|28|35|52|56)\) (?P<what>.+)')),
    ('auth', re.compile(r'URL (?P<what>\S+) returned error code: (?:401|403)')),
    ('not_found', re.compile(r'URL (?P<what>\S+/manifests/\S+) returned error code: 404')),
    ('registry_error', re.compile(r'URL (?P<what>\S+) returned error code: (?:[45]\d\d)')),
    ('bad_manifest', re.compile(r'Could not parse digest information from (?P<what>\S+)')),
    ('checksum', re.compile(r'Checksum mismatch: (?P<what>\S+)')),
    ('auth', re.compile(r'Could not parse authentication realm from (?P<what>\S+)')),
)

BASIC_HTTP2_HINT = ('; if the password is right: enroot 4.1.2 cannot send Basic credentials to a registry that speaks HTTP/2 '
                    '(docker-registry with htpasswd over TLS offers it by default), turn HTTP/2 off there (http.http2.disabled) - '
                    'README of the role gpucluster.bringup.enroot')

OCI_ONLY_TEXT = 'OCI manifest found, but accept header does not support OCI manifests'


def classify_error(stderr):
    """Return ``(kind, detail)`` for a failed enroot command from its stderr.

    ``kind`` is one of ``invalid_uri``, ``missing_command``, ``exists``, ``no_space``, ``capabilities``, ``plain_http``, ``tls``,
    ``unreachable``, ``auth``, ``not_found``, ``registry_error``, ``bad_manifest``, ``checksum`` or
    ``unknown``; ``detail`` is the matched URL, host, command or file (or the last line).
    """
    text = stderr or ''
    for kind, pattern in _ERROR_PATTERNS:
        match = pattern.search(text)
        if match:
            return kind, match.group('what').strip()
    if _after_authentication(text):
        # Basic authentication (docker::_authenticate): curl's 401 goes into the pipe enroot reads the Authorization
        # header from, so enroot stops there without an error message
        return 'auth', ''
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


_INFO_RE = re.compile(r'^\[INFO\] (?P<step>.+?)\s*$', re.M)
_USER_RE_LOG = re.compile(r'^\[INFO\] Authenticating with user: (?P<user>.+?)\s*$', re.M)
_CREDS_FILE_RE = re.compile(r'^\[INFO\] Using credentials from file: (?P<file>.+?)\s*$', re.M)
_MANIFEST_URL_RE = re.compile(r'^https?://(?P<registry>[^/]+)/v2/(?P<image>.+)/manifests/(?P<reference>[^/]+)$')


def last_step(stderr):
    """The last step enroot announced (its last ``[INFO]`` line) in ``stderr``, or None."""
    steps = _INFO_RE.findall(stderr or '')
    return steps[-1] if steps else None


def _auth_user(stderr):
    """(user, credentials file) enroot authenticated with: user None before authentication, '<anonymous>' without one."""
    users = _USER_RE_LOG.findall(stderr or '')
    files = _CREDS_FILE_RE.findall(stderr or '')
    return (users[-1] if users else None), (files[-1] if files else None)


def _after_authentication(stderr):
    """True when enroot's last step was the token request (a failure then is the token server's, not the registry's)."""
    return (last_step(stderr) or '').startswith(('Authenticating with user', 'Using credentials from file'))


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
    if kind == 'plain_http':
        return ('the registry of %s answers plain HTTP, and enroot speaks HTTPS unless ENROOT_ALLOW_HTTP is set (curl: %s); '
                'set enroot_conf.ENROOT_ALLOW_HTTP: true for the role gpucluster.bringup.enroot, which writes ENROOT_ALLOW_HTTP to '
                '/etc/enroot/enroot.conf: pyxis jobs (srun --container-image) read only enroot.conf, an environment: on an '
                'Ansible task does not reach them; or serve the registry over HTTPS' % (uri, detail))
    if kind == 'no_space':
        return 'no space left on a device while enroot imported %s (%s)' % (uri, detail)
    if kind == 'capabilities':
        return ('enroot import of %s must convert the whiteouts (deleted files) of the image\'s layers, which enroot-aufs2ovlfs '
                'does for a user other than root only with the file capabilities of the enroot+caps package (%s): install it '
                '(enroot_install_caps: true of the role gpucluster.bringup.enroot), or import as root' % (uri, detail))
    if kind == 'tls':
        return ('the registry of %s presents a TLS certificate this host does not trust (curl: %s): give the nodes the CA '
                'that signed it with enroot_registry_ca_certificates of the role gpucluster.bringup.enroot (SSL_CERT_FILE in '
                '/etc/enroot/enroot.conf, which pyxis jobs read too), or install it in the system CA store' % (uri, detail))
    if kind == 'unreachable':
        if _after_authentication(stderr):
            return ('the registry of %s sent enroot to its token server, which cannot be reached: %s (check the registry\'s '
                    'token service (the realm of its WWW-Authenticate answer), DNS, proxy and firewall)' % (uri, detail))
        return 'cannot reach the registry of %s: %s (check the registry name, DNS, proxy and firewall)' % (uri, detail)
    if kind == 'auth':
        user, creds = _auth_user(stderr)
        where = [detail] if detail else []
        if user == '<anonymous>':
            return ('the registry asks for credentials for %s%s and enroot had none: add the line "machine HOST login USER '
                    'password PASSWORD" for the registry host to $ENROOT_CONFIG_PATH/.credentials of the user who imports '
                    '(netrc format; the role gpucluster.bringup.enroot writes it from enroot_credentials; NGC needs nvcr.io '
                    'and authn.nvidia.com lines)' % (uri, ''.join(' (%s)' % w for w in where)))
        if user:
            # Basic authentication: enroot stopped without an error line (wrong password), or logged in with an empty
            # token and the registry refused the manifest (HTTP/2); a refused token request names the token URL instead
            basic = not detail or bool(_MANIFEST_URL_RE.match(detail))
            where.append(('from %s' % creds) if creds else 'given without a .credentials line')
            return ('the registry refused the credentials of user %s for %s (%s): check the password of that user\'s line '
                    'in $ENROOT_CONFIG_PATH/.credentials (netrc format; NGC needs nvcr.io and authn.nvidia.com lines)%s'
                    % (user, uri, ', '.join(where), BASIC_HTTP2_HINT if basic else ''))
        return ('the registry refused access to %s (%s): check the credentials in $ENROOT_CONFIG_PATH/.credentials '
                '(netrc format; NGC needs nvcr.io and authn.nvidia.com lines)' % (uri, detail))
    if kind == 'not_found':
        parts = _MANIFEST_URL_RE.match(detail or '')
        if parts and _DIGEST_RE.match(parts.group('reference')):
            return ('the registry %s has no manifest with the pinned digest %s for %s (%s returned 404): the digest matches '
                    'no image there; check it (enroot digest docker://%s#%s:TAG prints the digest a tag has now)'
                    % (parts.group('registry'), parts.group('reference'), parts.group('image'), detail, parts.group('registry'),
                       parts.group('image')))
        if parts:
            return ('the registry %s has no tag %s of the image %s (%s returned 404, for %s): check the image name and tag, or '
                    'the registry may hold only an OCI manifest for it' % (parts.group('registry'), parts.group('reference'),
                                                                           parts.group('image'), detail, uri))
        return ('the registry has no manifest for %s (%s returned 404): check the image name and tag, or the registry '
                'may hold only an OCI manifest for it' % (uri, detail))
    if kind == 'registry_error':
        return 'the registry failed while serving %s: %s' % (uri, tail)
    if kind == 'bad_manifest':
        return 'enroot could not read the image manifest of %s at %s (unsupported manifest type)' % (uri, detail)
    if kind == 'checksum':
        return 'a layer of %s failed its checksum (%s); the download was corrupted, retry' % (uri, detail)
    return 'enroot import of %s failed with exit code %s: %s' % (uri, rc, tail or 'no error output')


# ---- option checks of the enroot_import module -------------------------------------------

ARCHES = ('x86_64', 'aarch64', 'ppc64le')
_ARCH_ALIASES = {'amd64': 'x86_64', 'arm64': 'aarch64', 'ppc64el': 'ppc64le'}

# Kernel pseudo file systems: no place for an image file (writes fail or land in memory).
PSEUDO_FILESYSTEMS = frozenset(('proc', 'sysfs', 'devtmpfs', 'devpts', 'cgroup', 'cgroup2', 'debugfs', 'tracefs',
                                'securityfs', 'pstore', 'bpf', 'configfs', 'fusectl', 'efivarfs', 'mqueue',
                                'binfmt_misc', 'autofs', 'nsfs', 'rpc_pipefs', 'hugetlbfs', 'selinuxfs'))


def option_problems(params):
    """Problems of the options that have a range or a shape, one sentence each (empty when all are valid).

    ``params`` holds ``retries``, ``connect_timeout``, ``timeout``, ``arch``, ``executable``,
    ``dest`` and ``container_record_dir`` as the module received them.
    """
    problems = []
    for option, meaning in (('retries', 'transfer retries'), ('connect_timeout', 'seconds'), ('timeout', 'seconds, 0 for no limit')):
        value = params.get(option)
        if value is not None and value < 0:
            problems.append('%s must be 0 or more (%s), got %d' % (option, meaning, value))
    arch = params.get('arch')
    if arch is not None and arch not in ARCHES:
        hint = (' (%s is written %s here, as uname -m prints it)' % (arch, _ARCH_ALIASES[arch])) if arch in _ARCH_ALIASES else ''
        problems.append('arch must be one of %s, the architectures enroot imports for, got "%s"%s; leave arch out for the host\'s'
                        % (', '.join(ARCHES), arch, hint))
    executable = params.get('executable')
    if executable is not None and (not executable.strip() or ('/' in executable and not executable.startswith('/'))):
        problems.append('executable must be a command name looked up in PATH or an absolute path, got "%s"' % executable)
    for option in ('dest', 'container_record_dir'):
        value = params.get(option)
        if value is not None and not value.startswith('/'):
            problems.append('%s must be an absolute path, got "%s"' % (option, value))
    return problems


def unescape_mount_field(field):
    """A mount point as /proc/self/mounts writes it (space, tab, newline, backslash as octal escapes)."""
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def filesystem_type(path, mounts_text):
    """The file system type of ``path`` (absolute, symlinks resolved) from /proc/self/mounts text, or None."""
    best, fstype = -1, None
    for line in (mounts_text or '').splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = unescape_mount_field(fields[1])
        inside = path == point or point == '/' or path.startswith(point.rstrip('/') + '/')
        # The last of several mounts on one point is the visible one.
        if inside and len(point) >= best:
            best, fstype = len(point), fields[2]
    return fstype


def directory_problem(option, value, directory, probe, create=False):
    """Why files cannot be created in ``directory`` (for option ``option`` = ``value``), or None.

    ``probe`` answers about the file system: ``exists(path)``, ``is_dir(path)``, ``fstype(path)``,
    ``read_only(path)``, ``writable(path)`` and ``uid()``.  ``create``: the module creates a
    missing directory (then its nearest existing parent must take new entries).
    """
    existing, missing = directory, []
    while not probe.exists(existing):
        missing.append(existing)
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not probe.is_dir(existing):
        return ('%s %s: %s is a file, not a directory, so nothing can be created under it; use a path under a directory'
                % (option, value, existing))
    fstype = probe.fstype(existing)
    if fstype in PSEUDO_FILESYSTEMS:
        return ('%s %s: %s is on a %s file system (a kernel pseudo file system), which cannot hold files written there; '
                'use a directory on a local disk or a shared file system' % (option, value, existing, fstype))
    if missing and not create:
        return '%s %s: the directory %s does not exist; create it first' % (option, value, directory)
    if probe.read_only(existing):
        return '%s %s: %s is on a read-only file system; use a writable directory' % (option, value, existing)
    if not probe.writable(existing):
        return ('%s %s: the user the module runs as (uid %d) cannot create files in %s; use a directory it can write to, '
                'or become its owner' % (option, value, probe.uid(), existing))
    return None


# ---- settings of the role gpucluster.bringup.enroot ---------------------------------------

_PEM_BLOCK = re.compile(r'-----BEGIN CERTIFICATE-----\s*\n(?P<body>[A-Za-z0-9+/=\s]+?)\n?-----END CERTIFICATE-----')


def ca_bundle(text):
    """The CA file the role writes for ``enroot_registry_ca_certificates``: each PEM certificate block of ``text``, in
    order, one after the other, ending in a newline; '' for an empty value. ``ValueError`` (the sentence after the
    variable's name) when ``text`` is not only PEM certificates."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return ''
    if not isinstance(text, str):
        raise ValueError('is %r, expected the PEM text of one or more CA certificates' % (text,))
    blocks, rest = [], text
    for match in _PEM_BLOCK.finditer(text):
        body = ''.join(match.group('body').split())
        if len(body) % 4 or not body:
            raise ValueError('holds a certificate whose base64 text is cut (%d characters, not a multiple of 4); expected whole PEM '
                             'certificates' % len(body))
        blocks.append('-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n'
                      % '\n'.join(body[i:i + 64] for i in range(0, len(body), 64)))
        rest = rest.replace(match.group(0), '', 1)
    if not blocks or rest.strip():
        shown = text.strip().splitlines()[0][:60]  # (text is not blank here: a blank one returned '' above)
        what = ('the PEM text of one or more CA certificates (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)%s, '
                'e.g. what the ansible.builtin.file lookup reads from a site-ca.pem; a path on the nodes is not read')
        if blocks or 'BEGIN' in text:
            raise ValueError('is %r..., expected %s' % (shown, what % ' and nothing else'))
        raise ValueError('is %r, expected %s' % (shown, what % ''))
    return ''.join(blocks)


def squash_options_problem(value):
    """Why ``enroot_conf.ENROOT_SQUASH_OPTIONS`` cannot be used (the sentence after its name), or None.

    enroot passes ENROOT_SQUASH_OPTIONS to mksquashfs word by word (unquoted); without ``-exit-on-error`` mksquashfs
    carries on past a file it cannot read and enroot import succeeds with an image that lacks it."""
    if not isinstance(value, str) or not value.split():
        return 'is %r, expected mksquashfs options such as "-comp lzo -noD -exit-on-error" (enroot\'s default)' % (value,)
    words = value.split()
    if '-exit-on-error' not in words:
        return ('is %r, expected options that keep -exit-on-error (without it mksquashfs skips a file it cannot read and enroot '
                'import succeeds with an image that lacks it), e.g. %r' % (value, ' '.join(words + ['-exit-on-error'])))
    bad = [word for word in words if not re.match(r'^[A-Za-z0-9_.,:=+%-]+$', word)]
    if bad:
        return ('is %r, expected mksquashfs options only (enroot passes them unquoted, word by word): %s is not one'
                % (value, ', '.join(repr(word) for word in bad)))
    return None


_ENROOT_PATH_RE = re.compile(r'^(?:/|\$\{?(?:HOME|XDG_[A-Z_]+|TMPDIR)\}?(?:/|$))')


def enroot_path_problem(value):
    """Why an enroot path setting (``enroot_conf.ENROOT_CACHE_PATH``, ``enroot_conf.ENROOT_DATA_PATH``...) cannot be used, or None: enroot expands
    $(...) and ${...} per user, so an absolute path or one starting at $HOME / ${XDG_...} / ${TMPDIR} is needed."""
    if not isinstance(value, str) or not _ENROOT_PATH_RE.match(value) or re.search(r'\s', re.sub(r'\$\([^()]*\)', '', value)):
        return ("is %r, expected an absolute path without blanks (but in $(...)), in which enroot expands $(id -u), $(id -g), ${HOME} per user "
                "(e.g. '/tmp/enroot-data/user-$(id -u)')" % (value,))
    return None


# ---- enroot release packages (role gpucluster.bringup.enroot) ----------------------------

DEB_ARCHES = {'x86_64': 'amd64', 'aarch64': 'arm64', 'ppc64le': 'ppc64el'}


def deb_arch(machine):
    """The Debian architecture of an ``uname -m`` name (as the role's ``_enroot_deb_arch_map``), else the name itself."""
    return DEB_ARCHES.get(machine, machine)


def package_files(version, release, machine, caps=True):
    """The release asset names of enroot ``version``: ``enroot[+caps]_<version>-<release>_<debarch>.deb``."""
    if not isinstance(version, str) or not re.match(r'^[0-9][0-9A-Za-z.+~]*$', version):
        raise ValueError('invalid enroot version "%s": use the release tag without "v", e.g. 4.1.2' % (version,))
    if not isinstance(release, str) or not re.match(r'^[0-9A-Za-z.+~]+$', release):
        raise ValueError('invalid package release "%s": the Debian revision, e.g. 1' % (release,))
    names = ['enroot'] + (['enroot+caps'] if caps else [])
    return ['%s_%s-%s_%s.deb' % (name, version, release, deb_arch(machine)) for name in names]
