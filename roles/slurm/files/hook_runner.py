# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Slurm Prolog / Epilog runner installed by gpucluster.bringup.slurm.

Installed as <dir>/hook_runner.py and started by the sh wrapper
<dir>/hook-runner through the links <dir>/prolog and <dir>/epilog
(slurm.conf Prolog= and Epilog= point at the links; the name says which
phase).  Runs every hook of prolog.d or epilog.d in name order, each with a
timeout, logs name, exit code and duration to syslog, skips hooks whose
"# requires:" tools are missing, and when a hook fails drains the node with a
reason that names the hook (or the one the hook asked for with a last output
line "drain-reason: <text>", as the GPU health check's prolog tier does), then
exits 1 so that Slurm fails the job (a batch job is requeued).

Usage outside Slurm (tests): <dir>/prolog [--conf FILE], <dir>/epilog [--conf FILE]
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import syslog
import time

HERE = os.path.dirname(os.path.realpath(__file__))
# the collection's module_utils, installed by the role under lib/ (the node_library filter)
sys.path.insert(0, os.path.join(HERE, 'lib'))

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_hooks as logic  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm._slurm_cli import (  # noqa: E402  pylint: disable=wrong-import-position
    SlurmCli, SlurmError, run_process)

SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
HEADER_BYTES = 4096
OUTPUT_LIMIT = 400


def log(priority, message):
    syslog.syslog(priority, message)
    if os.environ.get('GPUCLUSTER_HOOKS_STDERR'):
        sys.stderr.write(message + '\n')


def read_header(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read(HEADER_BYTES).decode('utf-8', 'replace')
    except OSError:
        return ''


def command_output(argv, timeout=15):
    rc, out, _err = run_process(argv, timeout=timeout)
    return out if rc == 0 else None


def job_facts(needed, phase, env, node):
    facts = {'exclusive': None, 'last_user_job': None}
    job_id = env.get('SLURM_JOB_ID') or env.get('SLURM_JOBID')
    argv = logic.job_show_argv(job_id)
    if 'exclusive' in needed and argv:
        text = command_output(argv)
        if text is not None:
            facts['exclusive'] = logic.is_exclusive(logic.parse_scontrol_job(text))
    user = env.get('SLURM_JOB_USER') or env.get('SLURM_JOB_UID')
    argv = logic.user_jobs_argv(node, user)
    if 'last_user_job' in needed and job_id and argv:
        text = command_output(argv)
        if text is not None:
            facts['last_user_job'] = logic.is_last_user_job(text, job_id)
    return facts


def tool_present(tool, path):
    if '/' in tool:
        return os.path.isfile(tool) and os.access(tool, os.X_OK)
    return shutil.which(tool, path=path) is not None


def run_hook(path, timeout, env):
    start = time.monotonic()
    try:
        proc = subprocess.Popen([path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, cwd='/')
    except OSError as exc:
        return 126, False, time.monotonic() - start, str(exc)
    timed_out = False
    try:
        output, _unused = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        output, _unused = proc.communicate()
    return proc.returncode, timed_out, time.monotonic() - start, output.decode('utf-8', 'replace').strip()


def drain(node, reason):
    """Drain ``node`` with ``reason`` through the collection's Slurm client (scontrol, 30 s at most), unless it is
    drained already: the reason there stays (an admin's, the health check's, the closed loop's reboot tag)."""
    cli = SlurmCli(run=lambda argv, env=None, data=None: run_process(argv, env, data, timeout=30))
    try:
        held = logic.held_drain(cli.show_node(node))
    except SlurmError:
        held = None  # unread: drain, as before
    if held:
        log(syslog.LOG_ERR, '%s is drained already ("%s"): that reason stays, not replaced by: %s' % (node, held, reason))
        return False
    try:
        error = cli.drain(node, reason)
    except SlurmError as exc:
        error = str(exc)
    if error:
        log(syslog.LOG_ERR, 'could not drain %s: %s' % (node, error))
        return False
    return True


def main(argv):
    args = list(argv[1:])
    conf_path = os.path.join(HERE, 'hooks.json')
    if '--conf' in args:
        position = args.index('--conf')
        conf_path = args[position + 1]
        del args[position:position + 2]
    try:
        phase = logic.phase_from_program(args[0] if args else argv[0])
        with open(conf_path) as handle:
            conf = json.load(handle)
    except (ValueError, OSError) as exc:
        syslog.openlog('slurm-hooks', syslog.LOG_PID, syslog.LOG_DAEMON)
        log(syslog.LOG_ERR, 'hook runner cannot start: %s' % exc)
        return 1
    syslog.openlog(str(conf.get('syslog_ident', 'slurm-hooks')), syslog.LOG_PID, syslog.LOG_DAEMON)

    env = dict(os.environ)
    env['PATH'] = (env['PATH'] + ':' + SAFE_PATH) if env.get('PATH') else SAFE_PATH
    env['GPUCLUSTER_HOOK_PHASE'] = phase
    env['GPUCLUSTER_HOOKS_DIR'] = HERE
    env['GPUCLUSTER_UUID_MAP'] = str(conf.get('uuid_map', ''))
    if conf.get('mps_dir'):
        env['GPUCLUSTER_MPS_DIR'] = str(conf['mps_dir'])
    node = env.get('SLURMD_NODENAME') or socket.gethostname().split('.')[0]
    job_id = env.get('SLURM_JOB_ID') or env.get('SLURM_JOBID')
    directory = conf['%s_dir' % phase]

    try:
        names = sorted(os.listdir(directory))
    except OSError:
        names = []
    hooks = []
    for name in names:
        path = os.path.join(directory, name)
        if not os.path.isfile(path) or logic.is_ignored(name):
            continue
        try:
            header = logic.parse_header(read_header(path))
        except ValueError as exc:
            log(syslog.LOG_ERR, logic.log_line(phase, job_id, name, None, 0, 'skipped: bad header: %s' % exc))
            continue
        hooks.append({'name': name, 'executable': os.access(path, os.X_OK), 'header': header})

    needed = logic.needed_job_facts([h['name'] for h in hooks], phase)
    facts = job_facts(needed, phase, env, node)
    tools = set(tool for h in hooks for tool in h['header']['requires'])
    present = dict((tool, tool_present(tool, env['PATH'])) for tool in tools)
    steps = logic.plan(hooks, phase, facts, present, int(conf.get('default_timeout', 60)))

    failed = None
    for step in steps:
        if not step['run']:
            log(syslog.LOG_INFO, logic.log_line(phase, job_id, step['name'], None, 0, step['reason']))
            continue
        rc, timed_out, seconds, full_output = run_hook(os.path.join(directory, step['name']), step['timeout'], env)
        output = full_output.replace('\n', ' | ')[-OUTPUT_LIMIT:]
        ok = rc == 0 and not timed_out
        status = 'ok' if ok else ('timed out after %ss' % step['timeout'] if timed_out else 'failed')
        log(syslog.LOG_INFO if ok else syslog.LOG_ERR, logic.log_line(phase, job_id, step['name'], rc, seconds, status))
        if output and not ok:
            log(syslog.LOG_ERR, '%s hook %s output: %s' % (phase, step['name'], output))
        if not ok and failed is None:
            failed = logic.drain_reason(phase, step['name'], rc, timed_out, step['timeout'], logic.asked_reason(full_output))
            if phase == 'prolog':
                break
    if failed is None:
        return 0
    if conf.get('drain_on_failure', True):
        if drain(node, failed):
            log(syslog.LOG_ERR, 'drained %s: %s' % (node, failed))
    return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
