# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The enroot_import module's manager: its file system, enroot and registry I/O (the decisions are in _enroot).

``EnrootImport(module, open_url).run()``: ``module`` is the AnsibleModule (params, run_command, fail_json,
atomic_move, exit_json), ``open_url`` the HTTP client the registry probe uses (ansible.module_utils.urls.open_url);
both come from the module, so this file needs the standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import pwd
import shutil
import socket
import tempfile

from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot
from ansible_collections.gpucluster.bringup.plugins.module_utils.enroot import _enroot_run

# Seconds the module's own manifest query waits for the registry when the task sets no connect_timeout.
PROBE_TIMEOUT = 30


class EnrootImport(object):
    """Import one image into dest (and create its container), as the module's options say; run() exits the module."""

    def __init__(self, module, open_url):
        self.module = module
        self.open_url = open_url
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
        # enroot.conf - enroot_conf.ENROOT_TRANSFER_TIMEOUT of the role - stays in force; the environment would override it)
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
            response = self.open_url(url, headers={'Accept': 'application/vnd.docker.distribution.manifest.v2+json'},
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
