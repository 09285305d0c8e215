# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CUDA MPS daemons for Slurm jobs with the mps GRES, installed by gpucluster.bringup.slurm.

``mps_hook.py start`` (the prolog hook 30-all-mps-start) starts
``nvidia-cuda-mps-control -d`` as the job's user for the job's GPU, unless
that user's daemon for that GPU already answers, and records the job;
``mps_hook.py stop`` (the epilog hook 30-all-mps-stop) removes the job's
record and stops the daemon when no other job uses it.  The decisions are
in the collection's ``slurm/_slurm_mps.py`` (installed under lib/).
Environment: Slurm's (SLURM_JOB_ID, SLURM_JOB_UID, CUDA_VISIBLE_DEVICES,
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and the hook runner's GPUCLUSTER_MPS_DIR.
"""

import fcntl
import os
import pwd
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, 'lib'))

from ansible_collections.gpucluster.bringup.plugins.module_utils.slurm import _slurm_mps as logic  # noqa: E402  pylint: disable=wrong-import-position

CONTROL = 'nvidia-cuda-mps-control'
# what a control daemon leaves in its pipe directory; a dead daemon's copies keep a new one from starting
DAEMON_FILES = ('control', 'control_lock', 'control_privileged', 'log', 'nvidia-cuda-mps-control.pid')
WAIT = 10.0


def base_dir():
    return os.environ.get('GPUCLUSTER_MPS_DIR') or logic.MPS_DIR


def as_user(uid):
    """argv prefix that runs a command as ``uid`` with its groups (nothing when we already are that user)."""
    if uid == os.geteuid():
        return []
    try:
        gid = pwd.getpwuid(uid).pw_gid
    except KeyError:
        raise ValueError('uid %d has no passwd entry on this node' % uid)
    return ['setpriv', '--reuid=%d' % uid, '--regid=%d' % gid, '--init-groups']


def daemon_env(job, paths):
    return {'PATH': os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin'), 'LANG': 'C', 'HOME': '/',
            'CUDA_VISIBLE_DEVICES': job['devices'], 'CUDA_MPS_PIPE_DIRECTORY': paths['pipe'],
            'CUDA_MPS_LOG_DIRECTORY': paths['log']}


def control(prefix, env, command):
    try:
        result = subprocess.run(prefix + [CONTROL], input=command + '\n', stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, timeout=WAIT, check=False, universal_newlines=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return result.returncode, result.stdout.strip()


def answers(prefix, env, paths):
    return os.path.exists(os.path.join(paths['pipe'], 'control')) and control(prefix, env, 'get_server_list')[0] == 0


def locked(directory):
    handle = os.open(os.path.join(directory, '.lock'), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def memory_mib(devices):
    """memory.total of the job's (first) GPU from nvidia-smi, or None."""
    first = devices.split(',')[0]
    try:
        result = subprocess.run(['nvidia-smi', '--query-gpu=memory.total', '--format=csv,noheader,nounits', '-i', first],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=WAIT, check=False,
                                universal_newlines=True)
        return int(result.stdout.strip().splitlines()[0]) if result.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def user_dir(path, uid, gid):
    if not os.path.isdir(path):
        os.mkdir(path, 0o700)
    os.chown(path, uid, gid)
    os.chmod(path, 0o700)


def write_record(path, text):
    temporary = path + '.new'
    with open(temporary, 'w') as handle:
        handle.write(text)
    os.chmod(temporary, 0o644)
    os.rename(temporary, path)


def log_tail(paths, limit=160):
    """The control daemon's last log line, shortened: the hook runner keeps the last 400 characters of our output."""
    try:
        with open(os.path.join(paths['log'], 'control.log')) as handle:
            lines = handle.read().strip().splitlines()
    except OSError:
        return 'no control.log in %s' % paths['log'] if len(paths['log']) < limit else 'no control.log'
    if not lines:
        return 'control.log is empty'
    return 'control.log: ' + (lines[-1] if len(lines[-1]) <= limit else '...' + lines[-1][-limit:])


def start(env):
    job = logic.mps_job(env)
    if job is None:
        return 0
    base = base_dir()
    paths = logic.daemon_paths(base, job['key'])
    prefix = as_user(job['uid'])
    gid = pwd.getpwuid(job['uid']).pw_gid if prefix else os.getegid()
    jobs = os.path.join(base, logic.JOBS)
    for directory in (base, jobs):
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
    record = logic.job_record_path(base, job['job'])
    handle = locked(base)
    try:
        for directory in (paths['root'], paths['pipe'], paths['log']):
            user_dir(directory, job['uid'], gid)
        write_record(record, logic.job_record(job, base, memory_mib(job['devices'])))
        denv = daemon_env(job, paths)
        if answers(prefix, denv, paths):
            return 0
        for name in DAEMON_FILES:  # a daemon that died left these; the new one would refuse to start
            try:
                os.unlink(os.path.join(paths['pipe'], name))
            except OSError:
                pass
        try:
            # the daemon keeps no descriptor of ours: the hook runner waits for our output to end
            result = subprocess.run(prefix + [CONTROL, '-d'], env=denv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=WAIT * 2, check=False, cwd='/')
            code = result.returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            code = str(exc)
        deadline = time.monotonic() + WAIT
        while code == 0 and not answers(prefix, denv, paths):
            if time.monotonic() > deadline:
                code = 'no answer on its control socket within %ds' % WAIT
                break
            time.sleep(0.1)
        if code != 0:
            os.unlink(record)
            sys.stdout.write('%s -d as uid %d for GPU %s failed (%s); %s\n'
                             % (CONTROL, job['uid'], job['devices'], code if isinstance(code, str) else 'exit %s' % code,
                                log_tail(paths)))
            return 1
        return 0
    finally:
        os.close(handle)


def stop(env):
    job_id = env.get('SLURM_JOB_ID') or env.get('SLURM_JOBID') or ''
    if not job_id.isdigit():
        return 0
    base = base_dir()
    record_path = logic.job_record_path(base, job_id)
    if not os.path.exists(record_path):
        return 0  # not an MPS job (or its prolog did not start a daemon)
    handle = locked(base)
    try:
        try:
            with open(record_path) as stream:
                record = logic.parse_job_record(stream.read())
        except ValueError as exc:
            os.unlink(record_path)
            sys.stdout.write('MPS job record %s is broken (%s); removed\n' % (record_path, exc))
            return 0
        os.unlink(record_path)
        jobs = os.path.join(base, logic.JOBS)
        records = {}
        for name in os.listdir(jobs):
            try:
                with open(os.path.join(jobs, name)) as stream:
                    records[name] = stream.read()
            except OSError:
                pass
        if logic.other_users_of(record['key'], records, job_id):
            return 0
        paths = logic.daemon_paths(base, record['key'])
        prefix = as_user(record['uid'])
        denv = daemon_env({'devices': record['devices']}, paths)
        if answers(prefix, denv, paths):
            code, output = control(prefix, denv, 'quit')
            deadline = time.monotonic() + WAIT
            while code == 0 and answers(prefix, denv, paths):
                if time.monotonic() > deadline:
                    code, output = 'still answering %ds after quit' % WAIT, ''
                    break
                time.sleep(0.1)
            if code != 0:
                sys.stdout.write('quit to the MPS daemon in %s failed (%s): %s\n' % (paths['pipe'], code, output))
                return 1
        shutil.rmtree(paths['root'], ignore_errors=True)
        return 0
    finally:
        os.close(handle)


def main(argv):
    action = argv[1] if len(argv) > 1 else ''
    if action not in ('start', 'stop'):
        sys.stdout.write('usage: mps_hook.py start|stop\n')
        return 2
    try:
        return start(os.environ) if action == 'start' else stop(os.environ)
    except (ValueError, OSError) as exc:
        sys.stdout.write('MPS %s: %s\n' % (action, exc))
        return 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
