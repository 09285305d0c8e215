# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpucluster_mig_slurm.py: drain, wait for, check and resume one Slurm node around a MIG change.

Internal to the role gpucluster.bringup.mig, which runs it on the Slurm
controller with ansible.builtin.script (roles in a collection cannot carry
modules). It reads ``scontrol show node --oneliner`` and ``squeue`` and
parses them here, in Python.

    gpucluster_mig_slurm.py query      --node N
    gpucluster_mig_slurm.py drained    --node N --reason "gpucluster.bringup.mig: ..."
    gpucluster_mig_slurm.py jobs_done  --node N [--timeout S] [--poll S]
    gpucluster_mig_slurm.py registered --node N [--gres VALUE] [--restarted-since TIME] [--timeout S] [--poll S]
    gpucluster_mig_slurm.py resumed    --node N

- drained: drains the node with the reason unless it is drained already. A
  drain whose reason starts with --owner is this role's own (this run's, or
  one a failed run left); any other drain is left as it is and the result
  says "owned": false, so that the role never resumes a node somebody else
  drained.
- jobs_done: waits until no job (running, suspended, completing) is on the
  node, at most --timeout seconds.
- registered: waits until the node is registered again after a slurmd
  restart (not DOWN, NOT_RESPONDING, INVALID_REG, UNKNOWN ...), with
  --restarted-since until its SlurmdStartTime differs from the one before
  the restart (slurmctld keeps a node's last state until slurmd registers
  again), and, with --gres, shows that Gres= (order and socket bindings
  ignored).
- resumed: resumes the node if it is drained with a reason that starts with
  --owner; otherwise changes nothing.

Prints one JSON object: changed, owned, node {name, state, reason, gres, slurmd_start},
jobs, and msg when it fails. Exit status 0, or 1 on failure.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import re
import subprocess
import sys
import time

OWNER = 'gpucluster.bringup.mig:'

# A key of "scontrol show node --oneliner": a space, then Key= (values such as OS= hold spaces).
_KEY = re.compile(r' (?=[A-Za-z][A-Za-z0-9_]*=)')
_REASON_SUFFIX = re.compile(r'\s*\[[^\]]*@[^\]]*\]\s*$')
# Reason= is free text (it may hold "a=b"): it runs up to its "[user@time]" suffix.
_REASON = re.compile(r'(?:^| )Reason=(.*?\[[^\]@ ]*@[^\] ]*\])')
# A Slurm node name as this helper puts it on the scontrol and squeue command lines: scontrol reads options anywhere
# on its line (getopt without "+"), so a name with a leading "-" would be one of its options (-M cluster, -u user ...).
NODE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z')
NOT_REGISTERED = ('DOWN', 'NOT_RESPONDING', 'INVALID_REG', 'INVAL', 'UNKNOWN', 'FAIL', 'FUTURE', 'POWERED_DOWN', 'POWERING_UP')


def parse_show_node(text):
    """``scontrol show node NAME --oneliner`` -> dict of Key -> value (first record)."""
    line = ''
    for raw in text.splitlines():
        if raw.startswith('NodeName='):
            line = raw.strip()
            break
    if not line:
        raise ValueError('scontrol printed no NodeName= record: %r' % text.strip()[:200])
    fields = {}
    reason = _REASON.search(line)
    if reason:
        fields['Reason'] = reason.group(1)
        line = line[:reason.start()] + line[reason.end():]
    for token in _KEY.split(line):
        key, sep, value = token.partition('=')
        if sep and key not in fields:
            fields[key] = value.strip()
    return fields


def node_view(fields):
    """The parts of a node record the role uses."""
    state = [flag for flag in (fields.get('State') or '').replace('*', '').split('+') if flag]
    reason = fields.get('Reason')
    if reason in (None, '', '(null)', 'none'):
        reason = None
    else:
        reason = _REASON_SUFFIX.sub('', reason)
    gres = fields.get('Gres')
    return {'name': fields.get('NodeName'), 'state': state, 'reason': reason,
            'gres': None if gres in (None, '(null)') else gres, 'slurmd_start': fields.get('SlurmdStartTime')}


def parse_squeue(text):
    """``squeue -h -o '%i|%T|%u|%j'`` lines -> list of jobs."""
    jobs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split('|', 3)
        if len(parts) != 4:
            raise ValueError('unexpected squeue line %r (expected id|state|user|name)' % line)
        jobs.append({'id': parts[0].strip(), 'state': parts[1].strip(), 'user': parts[2].strip(), 'name': parts[3].strip()})
    return jobs


def jobs_text(jobs):
    return ', '.join('%s (%s, %s, %s)' % (j['id'], j['user'], j['name'], j['state']) for j in jobs)


def gres_set(value):
    """``gpu:h100:8(S:0-1),gpu:1g.10gb:2`` -> set of entries without socket bindings, for comparison."""
    if not value:
        return set()
    return set(re.sub(r'\(S:[^)]*\)', '', item).strip() for item in value.split(',') if item.strip() and item.strip() != '(null)')


def is_drained(view):
    return 'DRAIN' in view['state'] or 'DRAINED' in view['state'] or 'DRAINING' in view['state']


def is_owned(view, owner):
    return bool(is_drained(view) and view['reason'] and view['reason'].startswith(owner))


def registered(view):
    return not any(flag in NOT_REGISTERED for flag in view['state'])


class SlurmError(Exception):
    """A Slurm command failed or printed something unexpected; ``result`` goes into the output."""

    def __init__(self, message, **result):
        super(SlurmError, self).__init__(message)
        self.result = result


def checked_node(name):
    """``name`` if it is a Slurm node name (``NODE_NAME``), else ``SlurmError`` naming it (before any command runs)."""
    if not isinstance(name, str) or not NODE_NAME.match(name):
        raise SlurmError('--node %r is not a Slurm node name: letters, digits, "_", "-" and "." (no spaces, commas or "="), '
                         'starting with a letter or digit, at most 64 characters; nothing was run' % (name,))
    return name


class Slurm(object):
    """The Slurm commands, through ``run(argv) -> (rc, stdout, stderr)``."""

    def __init__(self, run=None):
        self.run = run or _run

    def _call(self, argv):
        rc, out, err = self.run(argv)
        if rc != 0:
            raise SlurmError('%s failed (exit %d): %s' % (' '.join(argv), rc, (err or out).strip()))
        return out

    def node(self, name):
        out = self._call(['scontrol', 'show', 'node', checked_node(name), '--oneliner'])
        try:
            return node_view(parse_show_node(out))
        except ValueError as exc:
            raise SlurmError('cannot read Slurm node %s: %s' % (name, exc))

    def jobs(self, name):
        out = self._call(['squeue', '--noheader', '--nodelist', checked_node(name), '--format', '%i|%T|%u|%j'])
        try:
            return parse_squeue(out)
        except ValueError as exc:
            raise SlurmError('cannot read the jobs of Slurm node %s: %s' % (name, exc))

    def update(self, name, *settings):
        self._call(['scontrol', 'update', 'nodename=%s' % checked_node(name)] + list(settings))


def _run(argv):
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    except OSError as exc:
        return 127, '', '%s: %s' % (argv[0], exc.strerror or exc)
    out, err = proc.communicate()
    return proc.returncode, out, err


def act(slurm, args, sleep=None, clock=None):
    """Do what ``args`` asks; returns the result dict, raises SlurmError."""
    sleep = sleep or time.sleep
    clock = clock or time.time
    name, owner, action = checked_node(args.node), args.owner, args.action
    if action in ('drained', 'noted') and not (args.reason or '').startswith(owner):
        raise SlurmError('reason %r must start with %r so that the role can recognise its own drain' % (args.reason, owner))
    view = slurm.node(name)
    result = {'changed': False, 'owned': is_owned(view, owner), 'jobs': []}
    deadline = clock() + max(args.timeout, 0)
    if action == 'drained':
        if not is_drained(view):
            slurm.update(name, 'state=drain', 'reason=%s' % args.reason)
            result['changed'] = result['owned'] = True
            view = slurm.node(name)
    elif action == 'noted':
        # a new reason on a node this role drained: what failed and what to run
        if result['owned'] and view['reason'] != args.reason:
            slurm.update(name, 'state=drain', 'reason=%s' % args.reason)
            result['changed'] = True
            view = slurm.node(name)
    elif action == 'resumed':
        if result['owned']:
            slurm.update(name, 'state=resume')
            result['changed'] = True
            view = slurm.node(name)
    elif action == 'jobs_done':
        jobs = slurm.jobs(name)
        while jobs and clock() < deadline:
            sleep(max(args.poll, 1))
            jobs = slurm.jobs(name)
        if jobs:
            raise SlurmError('Slurm node %s still runs %d job(s) after %d s (mig_drain_timeout): %s; the MIG layout was not changed'
                             % (name, len(jobs), args.timeout, jobs_text(jobs)), node=view, jobs=jobs, owned=result['owned'])
    elif action == 'registered':
        wanted = gres_set(args.gres) if args.gres is not None else None

        def done(view):
            return (registered(view) and (wanted is None or gres_set(view['gres']) == wanted)
                    and (args.restarted_since is None or view['slurmd_start'] != args.restarted_since))
        while clock() < deadline and not done(view):
            sleep(max(args.poll, 1))
            view = slurm.node(name)
        if args.restarted_since is not None and view['slurmd_start'] == args.restarted_since:
            raise SlurmError('slurmd on Slurm node %s was restarted but has not registered again within %d s (SlurmdStartTime=%s): '
                             'look at its slurmd.log' % (name, args.timeout, view['slurmd_start']), node=view, owned=result['owned'])
        if not registered(view):
            raise SlurmError('Slurm node %s did not register within %d s: state %s, reason %r' % (
                name, args.timeout, '+'.join(view['state']), view['reason']), node=view, owned=result['owned'])
        if wanted is not None and gres_set(view['gres']) != wanted:
            raise SlurmError('Slurm node %s shows Gres=%s after %d s, expected %s' % (name, view['gres'], args.timeout, args.gres),
                             node=view, owned=result['owned'])
    else:
        result['jobs'] = slurm.jobs(name)
    result['node'] = view
    return result


def parser():
    parse = argparse.ArgumentParser(prog='gpucluster_mig_slurm.py', description='Drain, wait for, check and resume one Slurm node.')
    parse.add_argument('action', choices=['query', 'drained', 'noted', 'jobs_done', 'registered', 'resumed'])
    parse.add_argument('--node', required=True, help='Slurm node name')
    parse.add_argument('--reason', help='drain reason (drained, noted); must start with --owner')
    parse.add_argument('--owner', default=OWNER, help='prefix of this role\'s drain reasons (default %(default)s)')
    parse.add_argument('--gres', help='Gres= the node must show (registered)')
    parse.add_argument('--restarted-since', help='SlurmdStartTime before slurmd was restarted: wait for a newer registration (registered)')
    parse.add_argument('--timeout', type=int, default=600, help='seconds to wait (jobs_done, registered)')
    parse.add_argument('--poll', type=int, default=5, help='seconds between checks')
    return parse


def main(argv=None, slurm=None):
    args = parser().parse_args(argv)
    try:
        result = act(slurm or Slurm(), args)
    except SlurmError as exc:
        result = dict(exc.result, failed=True, msg=str(exc))
        result.setdefault('changed', False)
    sys.stdout.write(json.dumps(result, sort_keys=True) + '\n')
    return 1 if result.get('failed') else 0


if __name__ == '__main__':
    sys.exit(main())
