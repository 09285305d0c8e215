# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one client of Slurm's commands (I/O): scontrol, sinfo, squeue, sacct, srun, salloc, reservations.

Modules build it with :meth:`SlurmCli.for_module` (``run_command``, ``get_bin_path``, ``warn``); the node
programs (the health check, the hook runner) with :func:`run_process`, which needs no Ansible.  What the
commands print is read by the pure ``slurm._nodes`` (one node parser); drain reasons are ``slurm._drain_tag``'s.

Time-outs, the project's convention: a job (``srun``, ``salloc``, a probe) runs under coreutils ``timeout``
(SIGTERM at the limit, SIGKILL ``KILL_AFTER`` seconds later) and its result says ``timed_out`` (then ``rc`` is
None); a query or an update from a node program may take ``QUERY_TIMEOUT`` seconds (rc 124 past it); a
command that cannot start is rc 127.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import time

from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import SLURM_NAME_TEXT, is_slurm_name
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._nodes import parse_node, parse_nodes, parse_squeue

SLURM_COMMANDS = ('scontrol', 'sinfo', 'squeue', 'sacct', 'srun', 'salloc', 'sbatch', 'scancel')
KILL_AFTER = 10
QUERY_TIMEOUT = 60
TIMED_OUT = (124, 137)
JOB_FORMAT = '%i|%T|%u|%j'


class SlurmError(Exception):
    """A Slurm command failed, printed what no parser reads, or was asked about a name that is no Slurm name."""


def timeout_argv(argv, seconds):
    """``argv`` under coreutils ``timeout`` (SIGTERM after ``seconds``, SIGKILL ``KILL_AFTER`` seconds later)."""
    return ['timeout', '--kill-after=%d' % KILL_AFTER, str(seconds)] + list(argv)


def run_process(argv, env=None, data=None, timeout=QUERY_TIMEOUT):
    """``(rc, stdout, stderr)`` of ``argv`` without Ansible: rc 127 when it cannot start, 124 when it ran past ``timeout``."""
    try:
        proc = subprocess.run(list(argv), input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=timeout, check=False, env=env)
    except OSError as exc:
        return 127, '', '%s: %s' % (argv[0], exc.strerror or exc)
    except subprocess.TimeoutExpired:
        return 124, '', '%s timed out after %ss' % (' '.join(argv), timeout)
    return proc.returncode, proc.stdout, proc.stderr


def checked_names(names, what='node name'):
    """``names`` (one name or a list) as the list of Slurm names (node or reservation: ``what``); SlurmError before any
    command when one is not."""
    names = [names] if isinstance(names, str) else list(names)
    bad = [name for name in names if not is_slurm_name(name)]
    if bad or not names:
        raise SlurmError('%s is %r, expected a Slurm %s (%s); nothing was run' % (what, bad[0] if bad else names, what, SLURM_NAME_TEXT))
    return names


class SlurmCli(object):
    """Slurm's commands through ``run(argv, env=None, data=None) -> (rc, stdout, stderr)``.

    ``which(name)``: the command's path (found on first use, after the caller checked its input), or None to run it by
    name; ``warn(text)``: a warning for the caller's result."""

    def __init__(self, run=run_process, which=None, warn=None, clock=time.monotonic):
        self._run = run
        self._which = which
        self._warn = warn
        self.clock = clock
        self._paths = {}

    @classmethod
    def for_module(cls, module):
        """The client of an Ansible module: ``run_command``, ``get_bin_path(required=True)``, ``warn``."""
        def run(argv, env=None, data=None):
            return module.run_command(list(argv), environ_update=env, data=data)
        return cls(run, lambda name: module.get_bin_path(name, required=True), module.warn)

    def path(self, name):
        """The path of Slurm command ``name`` (``name`` itself without a ``which``)."""
        if name not in self._paths:
            self._paths[name] = (self._which(name) if self._which else None) or name
        return self._paths[name]

    def run(self, argv, env=None, data=None):
        """``(rc, stdout, stderr)`` of one command as given."""
        return self._run(list(argv), env=env, data=data)

    def command(self, name, *args):
        """``(rc, stdout, stderr)`` of Slurm command ``name`` (found with ``which``) with ``args``."""
        return self.run([self.path(name)] + list(args))

    def scontrol(self, *args):
        return self.command('scontrol', *args)

    def checked(self, name, *args):
        """What Slurm command ``name`` printed; SlurmError naming the command when it failed."""
        rc, out, err = self.command(name, *args)
        if rc != 0:
            raise SlurmError('%s failed (rc %d): %s' % (' '.join((name,) + args), rc, (err or out).strip()))
        return out

    def warn(self, text):
        if self._warn:
            self._warn(text)

    # ------------------------------------------------------------ nodes

    def show_nodes(self, names=()):
        """``{name: node}`` of ``scontrol -o show node [NAME,...]`` (``slurm._nodes``); SlurmError when it fails."""
        args = ['-o', 'show', 'node'] + ([','.join(checked_names(names))] if names else [])
        rc, out, err = self.scontrol(*args)
        if rc != 0:
            raise SlurmError('scontrol -o show node failed (rc %d): %s' % (rc, (err or out).strip()))
        try:
            return parse_nodes(out)
        except ValueError as exc:
            raise SlurmError(str(exc))

    def show_node(self, name):
        """The node ``name`` (``slurm._nodes.parse_node``); SlurmError when scontrol fails or prints no node."""
        out = self.checked('scontrol', '-o', 'show', 'node', checked_names(name)[0])
        try:
            return parse_node(out)
        except ValueError as exc:
            raise SlurmError('cannot read Slurm node %s: %s' % (name, exc))

    def update_nodes(self, names, *settings):
        """``scontrol update NodeName=<names> <settings>``: None, or what scontrol said when it failed."""
        rc, out, err = self.scontrol('update', 'NodeName=%s' % ','.join(checked_names(names)), *settings)
        return None if rc == 0 else (err or out).strip() or 'rc %d' % rc

    def drain(self, name, reason):
        """Drain node ``name`` with ``reason`` (a ``slurm._drain_tag`` reason): None, or scontrol's error."""
        return self.update_nodes(name, 'State=DRAIN', 'Reason=%s' % reason)

    def resume(self, names):
        """Resume nodes ``names``: None, or scontrol's error."""
        return self.update_nodes(names, 'State=RESUME')

    def jobs_on(self, name):
        """The jobs on node ``name`` (``squeue``; running, suspended, completing): ``[{id, state, user, name}]``."""
        out = self.checked('squeue', '--noheader', '--nodelist', checked_names(name)[0], '--format', JOB_FORMAT)
        try:
            return parse_squeue(out)
        except ValueError as exc:
            raise SlurmError('cannot read the jobs of Slurm node %s: %s' % (name, exc))

    # ------------------------------------------------------------ reservations

    def reservation_exists(self, name):
        rc, out, _err = self.scontrol('-o', 'show', 'reservation', checked_names(name, 'reservation')[0])
        return rc == 0 and 'ReservationName=%s ' % name in out + ' '

    def delete_reservation(self, name):
        """End reservation ``name``: None, or scontrol's error."""
        rc, out, err = self.scontrol('delete', 'ReservationName=%s' % checked_names(name, 'reservation')[0])
        return None if rc == 0 else (err or out).strip() or 'rc %d' % rc

    # ------------------------------------------------------------ jobs

    def job(self, argv, timeout, env=None):
        """Run one job (``srun``/``salloc``/``mpirun`` argv) under coreutils ``timeout``: ``{rc, stdout, stderr, timed_out,
        timeout, seconds}``; ``rc`` is None when it ran past ``timeout`` and was stopped, 127 when it could not start."""
        start = self.clock()
        env = dict((str(k), str(v)) for k, v in (env or {}).items()) or None
        try:
            rc, out, err = self._run(timeout_argv(argv, timeout), env=env, data=None)
        except Exception as exc:  # pylint: disable=broad-except
            rc, out, err = 127, '', 'cannot run %s: %s' % (argv[0], exc)
        seconds = round(self.clock() - start, 2)
        timed_out = rc in TIMED_OUT and seconds >= timeout
        return {'rc': None if timed_out else rc, 'stdout': out, 'stderr': err, 'timed_out': timed_out, 'timeout': timeout, 'seconds': seconds}
