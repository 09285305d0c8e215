# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpucluster-node-loop: the closed loop for bad GPU nodes, one pass (issue 48).

Installed on the Slurm controller by the role gpucluster.bringup.slurm_healthcheck when
slurm_healthcheck_loop_enabled is true, run by the systemd timer gpucluster-node-loop.timer.
Each pass:

1. reads what Slurm says of every node (scontrol -o show node) and the running jobs (squeue);
2. per node, asks the state machine (module_utils health/_node_loop.py) what to do: the health check's drains
   (gpuhc:<tier>:<check>: ...) are looked up in the table of conditions (health/_conditions.py) and turned into
   a GPU reset (drained with gpuloop:reset:..., its jobs requeued; the reset runs once the node is idle), a reboot
   through Slurm (scontrol reboot ASAP reason=gpuloop:reboot:...), a service drain, or
   left to the health check; hits of comment-mode conditions in a node's Comment quarantine it and, after M
   within the window, drain it; an admin's drain is never touched;
3. runs those scontrol commands, appends each transition as one JSON line to the events file and writes the
   state file after each node (a crash leaves every node derivable from its tag in Slurm);
4. runs the deep tier on the nodes back from their reboot (and, after their GPU reset in the same job, on the idle
   nodes waiting for one: nvidia-smi --gpu-reset -i <gpu>, the mig boot unit restarted, health/_loop_deep.py
   with_reset; a failed reset or deep tier there asks for a reboot): the health check program's --tier deep in a
   maintenance reservation (the same program and argv as playbooks/health_deep.yml), from deep_dispatch_min_nodes
   nodes in a pass on as steps of one allocation per node type (health/_loop_deep.py), else one job per node; a
   pass resumes the node, a failure sends it to service;
5. writes the Prometheus text-file metrics and POSTs the pass's events to the webhook, if any.

    gpucluster-node-loop [--config /etc/gpucluster/node-loop.json] [--dry-run] [--history NODE]

Exit status: 0 the pass ran, 1 a Slurm command failed (the pass went on; the node is retried), 2 it could not
run (bad configuration, scontrol failing).
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import subprocess
import sys
import syslog
import threading
import time

LIB_DIR = os.environ.get('GPUCLUSTER_HEALTHCHECK_LIB', '/usr/local/lib/gpucluster-healthcheck')
if os.path.isdir(LIB_DIR) and LIB_DIR not in sys.path:
    sys.path.insert(0, LIB_DIR)

from ansible_collections.gpucluster.bringup.plugins.module_utils import _hostlist as hostlist  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils._validate_input import InputError  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _loop_deep as loop_deep  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _loop_events as events_mod  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _node_loop as loop  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _nodes as slurm_nodes  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_controller as deep_jobs  # noqa: E402
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_resume import reservation_argv  # noqa: E402

DEFAULT_CONFIG = '/etc/gpucluster/node-loop.json'


def run(argv, timeout=60):
    """``(rc, stdout, stderr)``; rc None when the command could not start or ran out of time."""
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout,
                                check=False, errors='replace')
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, '', str(exc)
    return result.returncode, result.stdout, result.stderr


def log(level, text):
    syslog.openlog('gpucluster-node-loop', syslog.LOG_PID, syslog.LOG_DAEMON)
    syslog.syslog(level, text)
    print(text)


def read_state(path):
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        return {'nodes': {}, 'counts': {}}
    if not isinstance(data, dict) or not isinstance(data.get('nodes'), dict):
        return {'nodes': {}, 'counts': {}}
    data.setdefault('counts', {})
    return data


def write_atomic(path, text):
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = '%s.tmp.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


def append_events(path, events):
    if not events:
        return
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    with open(path, 'a') as handle:
        for event in events:
            handle.write(events_mod.event_line(event) + '\n')
    for event in events:
        level = syslog.LOG_WARNING if event['event'] in ('service', 'deep_failed', 'promoted', 'reset_failed') else syslog.LOG_INFO
        reason = ': %s' % event['reason'] if event.get('reason') else ''
        fields = (event['event'], event['node'], event.get('from'), event.get('to'), event.get('condition') or '-', reason)
        text = '%s %s: %s -> %s (%s)%s' % fields
        log(level, text)


class Pass(object):
    """One pass of the loop over every node."""

    def __init__(self, settings, dry_run=False, now=None):
        self.settings = settings
        self.policy = settings['policy']
        self.dry_run = dry_run
        self.now = int(now if now is not None else time.time())
        self.state = read_state(settings['state_file'])
        self.events = []
        self.failed = False
        self.allocations = []
        self.dirty = False

    def save(self, record_name=None, record=None, new_events=(), before=None, new=False):
        """``record`` as the node's, the events appended; the state file written now when the node's record changed
        (``before``: its JSON before the step) or there are events, else, for a node ``new`` to the file, once at the end
        of the pass (``flush``); an unchanged record is not written: at 1,024 nodes a write (and fsync) per node took
        94 % of a pass (benchmarks/closed_loop.py)."""
        if record_name is not None:
            self.state['nodes'][record_name] = record
        self.state['counts'] = events_mod.count(self.state.get('counts'), new_events)
        self.events.extend(new_events)
        if self.dry_run:
            return
        if not new_events and before is not None and before == json.dumps(record, sort_keys=True):
            self.dirty = self.dirty or new  # nothing to lose in a crash: derived again from Slurm's view
            return
        append_events(self.settings['events_file'], new_events)
        write_atomic(self.settings['state_file'], json.dumps(self.state, sort_keys=True, indent=1) + '\n')
        self.dirty = False

    def flush(self):
        if self.dirty and not self.dry_run:
            write_atomic(self.settings['state_file'], json.dumps(self.state, sort_keys=True, indent=1) + '\n')
            self.dirty = False

    def carry_out(self, actions):
        """Runs the scontrol argv lists in order; False at the first that fails (the rest is not run)."""
        for argv in actions:
            if self.dry_run:
                print('would run: %s' % ' '.join(argv))
                continue
            rc, out, err = run(argv)
            if rc != 0:
                log(syslog.LOG_ERR, '%s failed (rc=%s): %s' % (' '.join(argv), rc, (err or out).strip()[:300]))
                self.failed = True
                return False
        return True

    def show_nodes(self, names=()):
        argv = [self.policy['scontrol'], '-o', 'show', 'node'] + ([','.join(names)] if names else [])
        rc, out, err = run(argv)
        if rc != 0:
            raise RuntimeError('%s failed (rc=%s): %s' % (' '.join(argv), rc, (err or out).strip()[:300]))
        return out

    def jobs(self):
        rc, out, err = run([self.settings['squeue'], '-h', '-t', 'RUNNING,COMPLETING', '-o', '%i %N'])
        if rc != 0:
            log(syslog.LOG_ERR, 'squeue failed (rc=%s): %s; no job is requeued this pass' % (rc, (err or out).strip()[:300]))
            return {}
        return loop.running_jobs(out, hostlist.expand)

    def run(self):
        text = self.show_nodes()
        nodes = loop.parse_nodes(text)
        jobs = self.jobs()
        back = []
        for node in nodes:
            node['jobs'] = jobs.get(node['name'], [])
            known = self.state['nodes'].get(node['name'])
            before = json.dumps(known, sort_keys=True) if known is not None else json.dumps(loop.new_record(self.now), sort_keys=True)
            result = loop.step(known, node, self.policy, self.now)
            if not self.carry_out(result.actions):
                continue  # the record stays as it was: the node is taken up again next pass
            self.save(node['name'], result.record, result.events, before, new=known is None)
            if result.deep:
                node['reset'] = result.reset
                back.append(node)
        self.flush()
        if back:
            self.deep(back, deep_jobs.node_extras(slurm_nodes.parse_nodes(text)))
        return self.finish()

    def deep(self, nodes, extras):
        """The deep tier on the nodes back from their reboot, in one maintenance reservation."""
        try:
            deep_settings = deep.load_config(self.settings['deep_settings'])
        except ValueError as exc:
            log(syslog.LOG_ERR, 'bad deep_settings: %s; the deep tier does not run' % exc)
            self.failed = True
            return
        names = [n['name'] for n in nodes]
        reservation = self.settings['deep_reservation']
        if self.dry_run:
            print('would run the deep tier on %s in the reservation %s' % (','.join(names), reservation))
            return
        if not self.reserve(reservation, names):
            return
        results = {}
        resets = {}
        for node in nodes:
            # remembered before the resume: a pass cut short here runs the deep tier again, it never returns the node without it
            self.save(node['name'], dict(self.state['nodes'][node['name']], deep_started=True))
        try:
            for node in nodes:
                # a drained node takes no job, not even in a reservation: resumed into it, drained again if no verdict
                run([self.policy['scontrol'], 'update', 'nodename=' + node['name'], 'state=resume'])
            jobs = self.deep_jobs(nodes, extras, reservation, deep_settings)
            wanted = dict((n['name'], n.get('reset')) for n in nodes)
            for job in jobs:
                if wanted.get(job['name']) is not None:
                    # the GPU reset first, in the same job (step) as the deep tier
                    loop_deep.with_reset(job, self.settings['deep_program'], wanted[job['name']])
            self.run_deep_jobs(jobs, results, resets)
        finally:
            self.settle(nodes, results, resets)
            run([self.policy['scontrol'], 'delete', 'ReservationName=' + reservation])

    def reserve(self, reservation, names):
        """The maintenance reservation over ``names``; False (logged) when Slurm refuses it."""
        minutes = deep_jobs.reservation_minutes(self.settings['deep_time_limit'])
        rc, out, err = run(reservation_argv(self.policy['scontrol'], reservation, names, minutes))
        if rc != 0:
            # the loop's own reservation left by a pass that was killed (the timer runs one pass at a time): removed, asked again
            run([self.policy['scontrol'], 'delete', 'ReservationName=' + reservation])
            rc, out, err = run(reservation_argv(self.policy['scontrol'], reservation, names, minutes))
        if rc != 0:
            log(syslog.LOG_ERR, 'could not create the reservation %s on %s: %s; the deep tier waits for the next pass'
                % (reservation, ','.join(names), (err or out).strip()[:300]))
            return False
        return True

    def run_deep_jobs(self, jobs, results, resets):
        """Each deep run (with its GPU reset first where asked) at once; ``results`` and ``resets`` get its verdicts."""
        granted = []
        try:
            self.allocate(jobs, granted)

            def one(job):
                rc, out, err = run(job['argv'], timeout=self.settings['deep_time_limit'] * 60 + 180)
                if 'reset' in job:
                    resets[job['name']] = loop_deep.read_reset((out or '') + '\n' + (err or ''))
                    if resets[job['name']] is not None and not resets[job['name']]['ok']:
                        results[job['name']] = None  # no deep tier after a failed reset
                        return
                try:
                    results[job['name']] = deep.read_report(out)
                except ValueError as exc:
                    log(syslog.LOG_ERR, 'deep tier on %s gave no verdict (rc=%s, %s): %s %s'
                        % (job['name'], rc, job.get('dispatch') or 'own job', exc, (err or '').strip()[:200]))
                    results[job['name']] = None

            threads = [threading.Thread(target=one, args=(job,)) for job in jobs]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            for release, job_id in granted:
                run(list(release) + [job_id])

    def settle(self, nodes, results, resets):
        """Each node after its deep run: returned, sent on, or (no verdict yet) drained again for the next pass."""
        for node in nodes:
            record = self.state['nodes'][node['name']]
            result = loop.settle_deep(record, node, results.get(node['name']), self.policy, int(time.time()), resumed=True,
                                      reset=resets.get(node['name']))
            actions = result.actions
            if result.record['state'] in ('back', 'reset-asked') and result.record.get('via') == 'reset' and self.health_drained(node):
                # the health check's prolog tier drained it at the deep job's start (a fault it checks, before the reset):
                # its drain stays, the next pass takes the node to a reboot
                actions = []
            elif result.record['state'] in ('back', 'reset-asked'):
                # no verdict yet: its reboot (or reset) drain back on, the deep tier (and the reset) run again next pass
                actions = [[self.policy['scontrol'], 'update', 'nodename=' + node['name'], 'state=drain',
                            'reason=' + (record.get('reason') or node['reason'])]]
            if self.carry_out(actions):
                self.save(node['name'], result.record, result.events)

    def health_drained(self, node):
        """Whether Slurm now shows ``node`` drained by the health check (False when scontrol fails)."""
        try:
            now = loop.parse_nodes(self.show_nodes([node['name']]))
        except (RuntimeError, ValueError):
            return False
        return bool(now) and loop.owner(now[0], self.policy) == 'health'

    def deep_jobs(self, nodes, extras, reservation, deep_settings):
        """The deep runs of ``nodes``: steps of one allocation per node type, or jobs of their own (health/_loop_deep.py)."""
        candidates = [{'name': n['name'], 'gpus': extras.get(n['name'], {}).get('gpus', 0),
                       'partition': (extras.get(n['name'], {}).get('partitions') or [None])[0]} for n in nodes]
        jobs, self.allocations = loop_deep.plan(candidates, reservation, self.settings['deep_program'], deep_settings,
                                                self.settings['deep_time_limit'], srun=self.settings['srun'],
                                                dispatch=self.settings['deep_dispatch'], min_nodes=self.settings['deep_dispatch_min_nodes'],
                                                wait=self.settings['deep_allocation_wait'])
        return jobs

    def allocate(self, jobs, granted):
        """One ``salloc --no-shell`` per allocation; ``granted`` gets ``(release argv, job id)`` of each granted one. One not
        granted is asked again for its idle nodes only; the other nodes' runs (or all, when none is granted) go as jobs of
        their own."""
        for allocation in self.allocations:
            members = loop_deep.members(jobs, allocation)
            why = self._allocate(allocation, members, granted)
            if why is None:
                continue
            rc, out, _err = run(allocation['idle'])
            idle = loop_deep.idle_names(rc, out)
            free = [job for job in members if job['name'] in idle]
            busy = [job for job in members if job['name'] not in idle]
            if free and busy:
                loop_deep.use_own_jobs(busy, '%s; not idle: %s' % (why, hostlist.compress([job['name'] for job in busy])))
                narrow = loop_deep.narrowed(allocation, [job['name'] for job in free])
                members = free
                why = self._allocate(narrow, members, granted)
            if why is not None:
                loop_deep.use_own_jobs(members, 'the allocation was not granted: %s' % why)
        log(syslog.LOG_INFO, 'deep tier on %d node(s): %s' % (len(jobs), ', '.join(
            '%s %s' % (job['name'], job.get('dispatch') or 'own job') for job in jobs)))

    def _allocate(self, allocation, members, granted):
        """Asks for one allocation; its jobs become its steps. None when granted, else why not."""
        rc, out, err = run(allocation['argv'], timeout=allocation['timeout'])
        job_id = loop_deep.granted_job((err or '') + '\n' + (out or ''))
        if job_id:
            granted.append((allocation['release'], job_id))
            loop_deep.use_allocation(members, job_id, allocation['name'])
            return None
        return loop_deep.refusal(rc, (err or '') + '\n' + (out or ''))

    def finish(self):
        if self.settings['metrics_file'] and not self.dry_run:
            try:
                write_atomic(self.settings['metrics_file'],
                             events_mod.metrics(self.state['nodes'], self.state['counts'], int(time.time()), self.policy))
            except (IOError, OSError) as exc:
                log(syslog.LOG_ERR, 'cannot write the metrics %s: %s' % (self.settings['metrics_file'], exc))
        if self.settings['webhook'] and self.events and not self.dry_run:
            post(self.settings['webhook'], events_mod.webhook_body(self.events))
        return 1 if self.failed else 0


def post(url, body):
    try:
        from urllib.request import Request, urlopen
        urlopen(Request(url, data=body, headers={'Content-Type': 'application/json'}), timeout=10).read()
    except Exception as exc:  # pylint: disable=broad-except
        log(syslog.LOG_ERR, 'webhook %s failed: %s' % (url, exc))


def main(argv=None):
    parser = argparse.ArgumentParser(prog='gpucluster-node-loop', description='The closed loop for bad GPU nodes: one pass.')
    parser.add_argument('--config', default=DEFAULT_CONFIG, help='the loop configuration (JSON), default %(default)s')
    parser.add_argument('--dry-run', action='store_true', help='print what it would run; change nothing')
    parser.add_argument('--history', metavar='NODE', help="print a node's events from the events file and exit")
    args = parser.parse_args(argv)
    try:
        with open(args.config) as handle:
            settings = loop.load_settings(json.load(handle))
    except (IOError, OSError, ValueError, InputError) as exc:
        print('gpucluster-node-loop: cannot use the configuration %s: %s' % (args.config, exc), file=sys.stderr)
        return 2
    if args.history:
        try:
            with open(settings['events_file']) as handle:
                lines = handle.readlines()
        except (IOError, OSError):
            lines = []
        for line in events_mod.history_text(events_mod.history(lines, args.history)):
            print(line)
        return 0
    try:
        return Pass(settings, args.dry_run).run()
    except (RuntimeError, ValueError, InputError, IOError, OSError) as exc:
        print('gpucluster-node-loop: %s' % exc, file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
