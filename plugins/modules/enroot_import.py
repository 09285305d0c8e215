#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: enroot_import
short_description: Import a container image into an enroot squashfs file, atomically and idempotently
version_added: 0.1.0
description:
  - Runs C(enroot import) to turn a container image into a squashfs file at O(dest), and
    optionally C(enroot create) to unpack it as the named container C(pyxis_<name>), the one
    C(srun --container-name=<name>) uses with pyxis.
  - The import writes into a temporary directory next to O(dest) and renames the finished
    file into place, so a failed, timed-out or interrupted import (SIGTERM, SIGINT, SIGHUP)
    leaves no partial file at O(dest) and no temporary directory behind.
  - Idempotent. Next to O(dest) the module keeps an import record, C(<dest>.import.json), with
    the URI, the image digest (when it can be known) and the file size. A later run leaves
    the file alone when it exists, matches the record and, for C(docker://) images, the
    registry still serves the recorded digest (C(enroot digest)). For a digest-pinned URI
    (C(...@sha256:<hex>)) the pinned digest is recorded and compared, without asking the
    registry. When the digest cannot be known (C(dockerd://), C(podman://), an enroot without
    the C(digest) command, a registry that cannot be reached) an existing file is kept.
  - Every option is checked before anything runs (URI form, O(dest) and its directory, O(name),
    ranges, O(arch), O(executable), O(container_record_dir)); bad input fails with one message
    naming the option, the value and what is valid, and nothing on the host changes.
  - A file at O(dest) that has no import record was not made by this module; it is kept
    unless O(force=true).
author:
  - gpucluster.bringup contributors (@gpucluster)
extends_documentation_fragment:
  - gpucluster.bringup.attributes
attributes:
  check_mode:
    support: full
    details: Queries the registry digest and the container list (read-only), reports what would change, writes nothing.
  diff_mode:
    support: full
    details: Shows the image file, its URI and digest, and the container before and after.
options:
  uri:
    description:
      - The image, as enroot 4.x names it.
      - For a registry, C(docker://[USER@][REGISTRY/]IMAGE[:TAG][@sha256:DIGEST]), where the first
        part is the registry when it holds a C(.) or a C(:port) (C(docker://nvcr.io/nvidia/pytorch:24.01-py3),
        C(docker://127.0.0.1:5000/test/tiny:1.0)) and otherwise a Docker Hub name
        (C(docker://ubuntu), C(docker://nvidia/cuda:12.4.1-base-ubuntu22.04)); or enroot's own
        C(docker://[USER@]REGISTRY#IMAGE[:TAG][@sha256:DIGEST]) (C(docker://nvcr.io#nvidia/pytorch:24.01-py3)).
        A digest pins the image (a tag next to it is ignored, as enroot ignores it).
      - A reference without a scheme, as C(srun --container-image) takes it (C(127.0.0.1:5000/test/tiny:1.0),
        C(nvcr.io#nvidia/pytorch:24.01-py3), C(ubuntu:24.04)), is read as C(docker://) and the reference, as pyxis
        reads it; RV(uri) returns the C(docker://) form. A file path (C(/shared/x.sqsh)) is refused, it needs no import.
      - C(dockerd://IMAGE[:TAG]) for the local Docker daemon, C(podman://IMAGE[:TAG]) for local Podman storage.
      - In an sbatch script C(#SBATCH --container-image=host:5000#img:tag) is cut at the C(#); use the
        C(/) form there.
    type: str
    required: true
  dest:
    description:
      - Absolute path of the squashfs file to write, e.g. C(/shared/images/pytorch+24.01-py3.sqsh).
        Its directory must exist, be writable by the user the module runs as and not be on a
        kernel pseudo file system (C(/proc), C(/sys), C(/dev)) - unless the file is there and current,
        then a user who can only read it (an image root imported into a shared directory) gets the
        container of O(name) from it, and the module fails only if the image must be imported again.
      - An existing directory stands for the file enroot would name by default in it
        (C(nvidia+pytorch+24.01-py3.sqsh) for C(docker://nvcr.io#nvidia/pytorch:24.01-py3));
        RV(dest) returns the file.
    type: path
    required: true
  name:
    description:
      - Also unpack the image as the enroot container C(pyxis_<name>), so that
        C(srun --container-name=<name>) finds it with pyxis' C(container_scope=global).
      - The container is recreated when the image file changes (see O(container_record_dir)).
      - Containers live in the C(ENROOT_DATA_PATH) of the user the module runs as.
    type: str
  force:
    description: Import again (and recreate the container) even when the file and digest are current.
    type: bool
    default: false
  retries:
    description:
      - Transfer retries for each download (C(ENROOT_TRANSFER_RETRIES) for this import only).
      - Left out, the node's C(enroot.conf) stays in force (the enroot role's C(enroot_transfer_retries)).
    type: int
  connect_timeout:
    description:
      - Seconds to wait for a connection to the registry (C(ENROOT_CONNECT_TIMEOUT) for this import only).
      - Left out, the node's C(enroot.conf) stays in force (the enroot role's C(enroot_connect_timeout)); the
        module's own manifest query then waits 30 seconds.
    type: int
  timeout:
    description:
      - Seconds the whole import may take; the import is stopped and cleaned up after that.
        The registry digest query (C(enroot digest)) before it has the same limit of its own.
        V(0) means no limit.
    type: int
    default: 0
  arch:
    description:
      - Image architecture to import (C(enroot import --arch)), as C(uname -m) names it -
        V(x86_64), V(aarch64) or V(ppc64le); the host's by default.
    type: str
  executable:
    description: The enroot command, a name looked up in C(PATH) or an absolute path.
    type: str
    default: enroot
  container_record_dir:
    description:
      - Directory where the module remembers which image file (path, size, mtime, digest) each
        named container was created from, so that a container is recreated when the image file
        changes, also when another host re-imported a file on shared storage.
      - An absolute path; created when missing. Defaults to C(~/.local/state/gpucluster.bringup/enroot)
        of the user the module runs as.
    type: path
notes:
  - enroot reads its settings from the environment first, then C(enroot.conf); registry
    credentials come from C($ENROOT_CONFIG_PATH/.credentials). For an internal plain-HTTP
    registry set C(enroot_allow_http=true) for the role gpucluster.bringup.enroot, which writes
    C(ENROOT_ALLOW_HTTP) to C(/etc/enroot/enroot.conf), the only place pyxis jobs read it from. The
    task's C(environment) keyword reaches this module's enroot only, not the jobs.
  - Some enroot releases cannot import a tag that holds only an OCI image manifest from a
    Distribution 2.8 registry (404 "OCI manifest found, but accept header does not support
    OCI manifests"); the module reports that case in so many words.
seealso:
  - name: enroot import
    description: The enroot command this module runs.
    link: https://github.com/NVIDIA/enroot/blob/master/doc/cmd/import.md
"""

EXAMPLES = r"""
- name: Import PyTorch from NGC to the shared image directory
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io#nvidia/pytorch:24.01-py3
    dest: /shared/images/nvidia+pytorch+24.01-py3.sqsh
    timeout: 3600

- name: Unpack it on every node as the named container srun --container-name=pytorch uses
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io#nvidia/pytorch:24.01-py3
    dest: /shared/images/nvidia+pytorch+24.01-py3.sqsh
    name: pytorch

- name: Import a digest-pinned image (no registry call once the file holds that digest)
  gpucluster.bringup.enroot_import:
    uri: docker://nvcr.io/nvidia/pytorch@sha256:7a982606367a3542274d4dc4fb30de0f0eb6e03ee560f26b4bd00975af405b0a
    dest: /shared/images/

# An internal plain-HTTP registry: set enroot_allow_http: true for the role
# gpucluster.bringup.enroot (enroot.conf, read by pyxis jobs too); the environment
# keyword below reaches this task's enroot only.
- name: Import from an internal plain-HTTP registry
  gpucluster.bringup.enroot_import:
    uri: docker://registry.cluster.internal:5000/ml/base:2024.06
    dest: /shared/images/ml+base+2024.06.sqsh
  environment:
    ENROOT_ALLOW_HTTP: "yes"
"""

RETURN = r"""
dest:
  description: The squashfs file.
  returned: always
  type: str
  sample: /shared/images/nvidia+pytorch+24.01-py3.sqsh
uri:
  description: The image URI, with C(docker://) in front when O(uri) had no scheme.
  returned: always
  type: str
  sample: docker://nvcr.io#nvidia/pytorch:24.01-py3
digest:
  description: The image digest the registry serves (or served at import, or the one pinned in the URI), when it can be known.
  returned: always
  type: str
  sample: sha256:7a982606367a3542274d4dc4fb30de0f0eb6e03ee560f26b4bd00975af405b0a
imported:
  description: Whether the image was (or in check mode would be) imported.
  returned: always
  type: bool
container:
  description: The enroot container name, C(pyxis_<name>), when O(name) is set.
  returned: when O(name) is set
  type: str
  sample: pyxis_pytorch
created:
  description: Whether the container was (or would be) created.
  returned: when O(name) is set
  type: bool
container_reason:
  description: Why the container was or was not (re)created.
  returned: when O(name) is set
  type: str
  sample: the image file changed since the container was created
reason:
  description: Why the image was or was not imported.
  returned: always
  type: str
  sample: the image file holds digest sha256:7a98..., the one the registry serves
actions:
  description: What was done (or would be done in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["import docker://nvcr.io#nvidia/pytorch:24.01-py3", "create pyxis_pytorch"]
error_kind:
  description:
    - On failure, the class of the error - V(invalid_uri), V(invalid_name), V(bad_dest), V(bad_option),
      V(missing_enroot), V(missing_command), V(plain_http), V(tls), V(unreachable), V(auth), V(not_found),
      V(oci_manifest), V(registry_error), V(bad_manifest), V(checksum), V(no_space), V(capabilities), V(timeout), V(interrupted) or V(unknown).
  returned: on failure
  type: str
  sample: oci_manifest
"""

import json
import os
import pwd
import shutil
import socket
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run

# Seconds the module's own manifest query waits for the registry when the task sets no connect_timeout.
PROBE_TIMEOUT = 30


class EnrootImport(object):

    def __init__(self, module):
        self.module = module
        self.ref = self.container = self.dest = self.write_problem = None
        self.check_input()
        for warning in _enroot.uri_warnings(self.ref):
            module.warn(warning)
        self.directory = os.path.dirname(self.dest)
        self.enroot = self._find_enroot(module.params['executable'])
        self.env = _enroot.import_environment(module.params['retries'], module.params['connect_timeout'])
        self.actions = []

    def check_input(self):
        """Check every option before anything runs; fail with all problems in one message."""
        params = self.module.params
        problems = []  # (error_kind, sentence)
        try:
            self.ref = _enroot.parse_uri(params['uri'])
        except ValueError as exc:
            problems.append(('invalid_uri', 'uri: %s' % exc))
        if params['name'] is not None:
            try:
                self.container = _enroot.container_name(params['name'])
            except ValueError as exc:
                problems.append(('invalid_name', 'name: %s' % exc))
        problems.extend(('bad_option', text) for text in _enroot.option_problems(params))
        probe = _Probe()
        value = params['dest']
        if value.startswith('/'):
            self.dest = os.path.abspath(value)
            problem = None
            if value.endswith('/') and not os.path.isdir(self.dest):
                problem = 'dest %s: the directory %s does not exist; create it first, or give the image file name' % (value, self.dest)
            elif os.path.isdir(self.dest) and self.ref is not None:
                # A directory: the file gets the name enroot itself would give it.
                self.dest = os.path.join(self.dest, _enroot.default_output_name(self.ref))
            if problem is None and os.path.lexists(self.dest) and not os.path.isfile(self.dest):
                problem = 'dest %s exists and is not a regular file' % self.dest
            if problem is None:
                problem = _enroot.directory_problem('dest', value, os.path.dirname(self.dest), probe)
                if problem and os.path.isfile(self.dest):
                    # An image already there (imported by root into a directory users only read) is
                    # enough to create a user's container from: the directory matters only for an import.
                    self.write_problem, problem = problem, None
            if problem:
                problems.append(('bad_dest', problem))
        if self.container is not None and (params['container_record_dir'] or '/').startswith('/'):
            problem = _enroot.directory_problem('container_record_dir', self.record_dir(), self.record_dir(), probe, create=True)
            if problem:
                problems.append(('bad_option', problem))
        if problems:
            self.module.fail_json(msg='; '.join(text for _kind, text in problems), error_kind=problems[0][0])

    def _find_enroot(self, executable):
        if os.sep in executable:
            path = executable if os.access(executable, os.X_OK) and os.path.isfile(executable) else None
        else:
            path = self.module.get_bin_path(executable)
        if path is None:
            self.module.fail_json(msg='the enroot command "%s" was not found (PATH=%s); install enroot (role '
                                      'gpucluster.bringup.enroot) or set executable to its path'
                                      % (executable, os.environ.get('PATH', '')), error_kind='missing_enroot')
        return path

    def _run(self, argv):
        return self.module.run_command(argv, environ_update=self.env)

    def _run_bounded(self, argv, what):
        """Run an enroot command that talks to the registry within timeout (a registry or token server that never
        answers would hold run_command forever), stopped cleanly on a stop signal."""
        env = dict(os.environ)
        env.update(self.env)
        try:
            return _enroot_run.run_stoppable(argv, env, self.module.params['timeout'])
        except _enroot_run.TimedOut as exc:
            self.module.fail_json(msg='enroot %s of %s did not finish within timeout=%d seconds%s; stopped it'
                                      % (what, self.ref.uri, exc.timeout, _step(exc.stderr)), stderr=exc.stderr, error_kind='timeout')
        except _enroot_run.Interrupted as exc:
            self.module.fail_json(msg='enroot %s of %s was interrupted by signal %d%s; stopped it'
                                      % (what, self.ref.uri, exc.signum, _step(exc.stderr)), stderr=exc.stderr, error_kind='interrupted')

    def current_digest(self):
        """The digest the registry serves now (the pinned one for a digest-pinned URI), or ``None`` when it cannot be known."""
        if not self.ref.from_registry:
            return None
        if self.ref.digest is not None:
            return self.ref.digest
        rc, out, err = self._run_bounded(_enroot.digest_argv(self.enroot, self.ref.uri, self.module.params['arch']), 'digest')
        digest = _enroot.parse_digest_output(out) if rc == 0 else None
        if digest is None and rc != 0:
            lines = (err or out or '').strip().splitlines()
            self.module.warn('could not get the digest of %s (enroot digest exited %d: %s)'
                             % (self.ref.uri, rc, lines[-1] if lines else 'no output'))
        return digest

    def read_state(self):
        exists = os.path.isfile(self.dest)
        if os.path.lexists(self.dest) and not exists:
            self.module.fail_json(msg='dest %s exists and is not a regular file' % self.dest, error_kind='bad_dest')
        size = os.path.getsize(self.dest) if exists else 0
        record = None
        if exists and os.path.isfile(_enroot.record_path(self.dest)):
            with open(_enroot.record_path(self.dest)) as handle:
                record = _enroot.parse_record(handle.read())
        return exists, size, record

    def container_exists(self):
        rc, out, err = self._run(_enroot.list_argv(self.enroot))
        if rc != 0:
            self.module.fail_json(msg='enroot list failed with exit code %d: %s' % (rc, err.strip()), rc=rc, stderr=err,
                                  error_kind='unknown')
        return self.container in _enroot.parse_list_output(out)

    def remove_stale_temporaries(self):
        """Remove temporary directories that an import killed with SIGKILL on this host left for this dest."""
        name, host = os.path.basename(self.dest), socket.gethostname()
        for entry in os.listdir(self.directory):
            pid = _enroot.temp_owner_pid(entry, name, host)
            if pid is not None and not _pid_alive(pid):
                shutil.rmtree(os.path.join(self.directory, entry), ignore_errors=True)

    def do_import(self):
        """Import into a temporary directory next to dest, then rename; clean up on any failure."""
        self.remove_stale_temporaries()
        try:
            tmpdir = tempfile.mkdtemp(prefix=_enroot.temp_prefix(os.path.basename(self.dest), socket.gethostname(), os.getpid()),
                                      dir=self.directory)
        except OSError as exc:
            self.module.fail_json(msg='dest %s: cannot create the temporary import directory in %s: %s'
                                      % (self.dest, self.directory, exc.strerror or exc), error_kind='bad_dest')
        output = os.path.join(tmpdir, os.path.basename(self.dest))
        argv = _enroot.import_argv(self.enroot, self.ref.uri, output, self.module.params['arch'])
        env = dict(os.environ)
        env.update(self.env)
        # (no ENROOT_TRANSFER_TIMEOUT: timeout bounds the whole import here, and the site's per-transfer limit in
        # enroot.conf - enroot_transfer_timeout of the role - stays in force; the environment would override it)
        try:
            try:
                rc, out, err = _enroot_run.run_stoppable(argv, env, self.module.params['timeout'])
            except _enroot_run.TimedOut as exc:
                self._cleanup(tmpdir)
                self.module.fail_json(msg='enroot import of %s did not finish within timeout=%d seconds%s; stopped it and '
                                          'removed its partial output' % (self.ref.uri, exc.timeout, _step(exc.stderr)),
                                      stderr=exc.stderr, error_kind='timeout')
            except _enroot_run.Interrupted as exc:
                self._cleanup(tmpdir)
                self.module.fail_json(msg='enroot import of %s was interrupted by signal %d%s; stopped it and removed its '
                                          'partial output' % (self.ref.uri, exc.signum, _step(exc.stderr)),
                                      stderr=exc.stderr, error_kind='interrupted')
            if rc != 0:
                self._cleanup(tmpdir)
                self._fail_import(rc, out, err)
            if not os.path.isfile(output) or os.path.getsize(output) == 0:
                self._cleanup(tmpdir)
                self.module.fail_json(msg='enroot import of %s exited 0 but wrote no image file' % self.ref.uri,
                                      stdout=out, stderr=err, error_kind='unknown')
            try:
                os.rename(output, self.dest)
            except OSError as exc:
                self._cleanup(tmpdir)
                self.module.fail_json(msg='dest %s: cannot move the imported image into place: %s' % (self.dest, exc.strerror or exc),
                                      error_kind='bad_dest')
        finally:
            self._cleanup(tmpdir)

    @staticmethod
    def _cleanup(tmpdir):
        shutil.rmtree(tmpdir, ignore_errors=True)

    def _fail_import(self, rc, out, err):
        kind, detail = _enroot.classify_error(err)
        oci_only = False
        if kind == 'not_found':
            oci_only = self._probe_oci_only(detail)
            if oci_only:
                kind = 'oci_manifest'
        msg = _enroot.error_message(kind, detail, self.ref.uri, rc, err, oci_only=oci_only)
        if kind == 'no_space':
            msg += ('; the image is written to %s (in a hidden temporary directory there, then renamed), which has %s free now; '
                    'enroot also unpacks the layers in its ENROOT_TEMP_PATH and keeps them in its ENROOT_CACHE_PATH: make room '
                    'or choose a dest with more space' % (self.directory, _free_text(self.directory)))
        self.module.fail_json(msg=msg, rc=rc, stdout=out, stderr=err, error_kind=kind)

    def _probe_oci_only(self, url):
        """Ask for the manifest with the Docker v2 Accept header only; True when the registry refuses it as OCI-only."""
        url = _enroot.manifest_probe_url(url)
        if url is None:
            return False
        try:
            response = open_url(url, headers={'Accept': 'application/vnd.docker.distribution.manifest.v2+json'},
                                timeout=self.module.params['connect_timeout'] or PROBE_TIMEOUT, validate_certs=True)
            body, status = response.read(), response.getcode()
        except Exception as exc:  # pylint: disable=broad-except  # HTTPError carries the answer we want
            status = getattr(exc, 'code', None)
            try:
                body = exc.read() if hasattr(exc, 'read') else b''
            except Exception:  # pylint: disable=broad-except
                body = b''
        if isinstance(body, bytes):
            body = body.decode('utf-8', 'replace')
        return _enroot.is_oci_only_response(status, body)

    def write_record(self, digest):
        text = _enroot.make_record(self.ref, digest, os.path.getsize(self.dest))
        try:
            handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(_enroot.record_path(self.dest)), dir=self.directory)
            with os.fdopen(handle, 'w') as out:
                out.write(text)
            os.chmod(tmp, 0o644)
        except OSError as exc:
            self.module.fail_json(msg='dest %s: cannot write the import record %s: %s'
                                      % (self.dest, _enroot.record_path(self.dest), exc.strerror or exc), error_kind='bad_dest')
        self.module.atomic_move(tmp, _enroot.record_path(self.dest))

    def record_dir(self):
        if self.module.params['container_record_dir']:
            return self.module.params['container_record_dir']
        home = os.environ.get('HOME') or pwd.getpwuid(os.getuid()).pw_dir
        return os.path.join(home, '.local', 'state', 'gpucluster.bringup', 'enroot')

    def saved_container_identity(self):
        path = _enroot.container_record_path(self.record_dir(), self.container)
        if not os.path.isfile(path):
            return None
        with open(path) as handle:
            return _enroot.parse_container_record(handle.read())

    def image_identity(self, digest):
        stat = os.stat(self.dest)
        return _enroot.image_identity(self.dest, stat.st_size, stat.st_mtime_ns, digest)

    def save_container_identity(self, identity):
        directory = self.record_dir()
        try:
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
            handle, tmp = tempfile.mkstemp(prefix='.%s.' % self.container, dir=directory)
            with os.fdopen(handle, 'w') as out:
                out.write(json.dumps(identity, sort_keys=True) + '\n')
        except OSError as exc:
            self.module.fail_json(msg='container_record_dir %s: cannot write the record of %s: %s' % (directory, self.container, exc.strerror or exc),
                                  error_kind='bad_option')
        self.module.atomic_move(tmp, _enroot.container_record_path(directory, self.container))

    def create_container(self, exists):
        if exists:
            rc, out, err = self._run(_enroot.remove_argv(self.enroot, self.container))
            if rc != 0:
                self.module.fail_json(msg='enroot remove %s failed with exit code %d: %s' % (self.container, rc, err.strip()),
                                      rc=rc, stdout=out, stderr=err, error_kind='unknown')
        rc, out, err = self._run(_enroot.create_argv(self.enroot, self.container, self.dest))
        if rc != 0:
            self.module.fail_json(msg='enroot create --name %s %s failed with exit code %d: %s'
                                      % (self.container, self.dest, rc, err.strip()), rc=rc, stdout=out, stderr=err,
                                  error_kind='unknown')

    def run(self):
        params = self.module.params
        exists, size, record = self.read_state()
        need_digest = self.ref.from_registry and (params['force'] or not exists or
                                                  (record is not None and record['uri'] == self.ref.uri))
        digest = self.current_digest() if need_digest else None
        imported, reason = _enroot.plan_import(self.ref, exists, size, record, digest, params['force'])
        if imported and self.write_problem:
            self.module.fail_json(msg='%s (%s is there, but must be imported again: %s)' % (self.write_problem, self.dest, reason),
                                  error_kind='bad_dest')
        before = {'path': self.dest, 'exists': exists, 'uri': record['uri'] if record else None,
                  'digest': record['digest'] if record else None}
        after = dict(before)
        if imported:
            self.actions.append('import %s' % self.ref.uri)
            after.update({'exists': True, 'uri': self.ref.uri, 'digest': digest})
        result = {'dest': self.dest, 'uri': self.ref.uri, 'imported': imported, 'reason': reason,
                  'digest': digest if imported or digest else (record['digest'] if record else None)}
        create = container_present = False
        if self.container is not None:
            container_present = self.container_exists()
            image_digest = record['digest'] if record else None
            wanted = None if imported or not exists else self.image_identity(image_digest)
            create, container_reason = _enroot.plan_container(container_present, self.saved_container_identity(), wanted,
                                                              imported, params['force'])
            before['container'] = self.container if container_present else None
            after['container'] = self.container
            if create:
                self.actions.append('%screate %s' % ('remove and re' if container_present else '', self.container))
            result.update({'container': self.container, 'created': create, 'container_reason': container_reason})
        if not self.module.check_mode:
            if imported:
                self.do_import()
                self.write_record(digest)
            if create:
                self.create_container(container_present)
                self.save_container_identity(self.image_identity(digest if imported else image_digest))
        result.update({'changed': imported or create, 'actions': self.actions, 'diff': {'before': before, 'after': after}})
        self.module.exit_json(**result)


class _Probe(object):
    """What _enroot.directory_problem asks about the file system."""

    def __init__(self):
        try:
            with open('/proc/self/mounts') as handle:
                self.mounts = handle.read()
        except (IOError, OSError):
            self.mounts = ''

    @staticmethod
    def exists(path):
        return os.path.exists(path)

    @staticmethod
    def is_dir(path):
        return os.path.isdir(path)

    def fstype(self, path):
        return _enroot.filesystem_type(os.path.realpath(path), self.mounts)

    @staticmethod
    def read_only(path):
        try:
            return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
        except OSError:
            return False

    @staticmethod
    def writable(path):
        return os.access(path, os.W_OK | os.X_OK)

    @staticmethod
    def uid():
        return os.getuid()


def _step(stderr):
    step = _enroot.last_step(stderr)
    return ' (its last step: %s)' % step if step else ''


def _free_text(directory):
    try:
        stat = os.statvfs(directory)
    except OSError as exc:
        return 'an unknown amount (%s)' % (exc.strerror or exc)
    return '%d KiB' % (stat.f_bavail * stat.f_frsize // 1024)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            uri=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            name=dict(type='str'),
            force=dict(type='bool', default=False),
            retries=dict(type='int'),
            connect_timeout=dict(type='int'),
            timeout=dict(type='int', default=0),
            arch=dict(type='str'),
            executable=dict(type='str', default='enroot'),
            container_record_dir=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    EnrootImport(module).run()


if __name__ == '__main__':
    main()
