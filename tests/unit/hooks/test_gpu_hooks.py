# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""10-all-gpu-healthcheck and 40-all-gpu-cleanup run for real on the NVML simulator's nvidia-smi STAND-IN."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

from hookenv import HOOKS, SIM_BIN

IGNORE_TERM = [sys.executable, '-c', 'import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint("ready", flush=True)\n'
               'time.sleep(120)']
NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('setpriv'), reason='needs root and setpriv to run as nobody')


def as_nobody(argv):
    return ['setpriv', '--reuid=%d' % NOBODY, '--regid=%d' % NOBODY, '--clear-groups'] + argv


def gone(proc, sig):
    """The process ended by ``sig`` (the hook killed it), within 5 s."""
    return proc.wait(timeout=5) == -sig


# ------------------------------------------------------------------ 10-all-gpu-healthcheck

def test_healthcheck_passes_on_clean_gpus(node):
    node.create()
    assert node.run_hook('10-all-gpu-healthcheck') == (0, '')


@pytest.mark.parametrize('preset, argv, message', [
    (None, ['ecc', '--gpu', '3', '--uncorrected', '2'], 'GPU 3: 2 uncorrected ECC errors since the last reset\n'),
    # an H100 remaps rows (its retired_pages.pending is [N/A], as on real Hopper GPUs)
    (None, ['ecc', '--gpu', '5', '--remap-pending', 'yes'], 'GPU 5: a row remapping is pending, the GPU needs a reset\n'),
    # the L40S preset keeps page retirement
    ('l40s-x4', ['ecc', '--gpu', '2', '--retired-pages-pending', 'yes'],
     'GPU 2: retired pages pending, the GPU needs a reset\n'),
])
def test_healthcheck_fails_naming_the_gpu(node, preset, argv, message):
    node.create(*([preset] if preset else []))
    node.nvmlsim(*argv)
    assert node.run_hook('10-all-gpu-healthcheck') == (1, message)
    node.nvmlsim('reset', '--gpu', argv[2])
    assert node.run_hook('10-all-gpu-healthcheck') == (0, '')


def test_healthcheck_ignores_corrected_errors_and_reports_every_bad_gpu(node):
    node.create('a100-80gb-pcie-x4')
    node.nvmlsim('ecc', '--gpu', '0', '--corrected', '40')
    node.nvmlsim('ecc', '--gpu', '1', '--uncorrected', '1', '--remap-pending', 'yes')
    node.nvmlsim('ecc', '--gpu', '2', '--remap-failure', 'yes')
    node.nvmlsim('ecc', '--gpu', '3', '--uncorrected', '7')
    assert node.run_hook('10-all-gpu-healthcheck') == (1, 'GPU 1: 1 uncorrected ECC errors since the last reset\n'
                                                          'GPU 1: a row remapping is pending, the GPU needs a reset\n'
                                                          'GPU 2: a row remapping failed, the GPU needs service (RMA)\n'
                                                          'GPU 3: 7 uncorrected ECC errors since the last reset\n')


def test_healthcheck_fails_when_nvidia_smi_fails(node):
    rc, out = node.run_hook('10-all-gpu-healthcheck')  # no simulated node: the driver is not loaded
    assert rc == 1
    assert out == ("nvidia-smi failed: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.\n")


# ------------------------------------------------------------------ 40-all-gpu-cleanup: the job's GPUs

def test_cleanup_kills_the_users_process_on_the_jobs_gpu(node):
    node.create()
    proc = node.spawn(['sleep', '120'])
    node.on_gpu(proc, 2)
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '2'})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 2: %d\n' % (os.getuid(), proc.pid))
    assert gone(proc, signal.SIGTERM)


def test_cleanup_leaves_processes_on_other_gpus(node):
    node.create()
    mine, other_gpu = node.spawn(['sleep', '120']), node.spawn(['sleep', '120'])
    node.on_gpu(mine, 1)
    node.on_gpu(other_gpu, 6)
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': None, 'CUDA_VISIBLE_DEVICES': '0,1'})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 0,1: %d\n' % (os.getuid(), mine.pid))
    assert gone(mine, signal.SIGTERM)
    assert other_gpu.poll() is None


def test_cleanup_with_nothing_left_does_nothing(node):
    node.create()
    assert node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '0,1'}) == (0, '')


def test_cleanup_follows_the_gres_uuid_map(node):
    node.create()
    on_gpu0, on_gpu5 = node.spawn(['sleep', '120']), node.spawn(['sleep', '120'])
    node.on_gpu(on_gpu0, 0)
    node.on_gpu(on_gpu5, 5)
    uuid5 = node.nvmlsim('show').split('GPU 5  ')[1].split()[5]
    assert uuid5.startswith('GPU-')
    (node.tmp / 'gres-uuid.map').write_text('# GRES index -> UUID\n0 h100 %s\n' % uuid5)
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '0', 'GPUCLUSTER_UUID_MAP': str(node.tmp / 'gres-uuid.map')})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 0: %d\n' % (os.getuid(), on_gpu5.pid))
    assert gone(on_gpu5, signal.SIGTERM)
    assert on_gpu0.poll() is None


def test_cleanup_sends_sigkill_to_a_process_ignoring_sigterm(node):
    node.create()
    proc = node.spawn(IGNORE_TERM, ready=True)
    node.on_gpu(proc, 4)
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '4', 'GPUCLUSTER_GPU_CLEANUP_GRACE': '1'})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 4: %d\nsending SIGKILL to %d\n' % (
        os.getuid(), proc.pid, proc.pid))
    assert gone(proc, signal.SIGKILL)


@needs_root
def test_cleanup_leaves_other_users_processes_alone(node):
    node.create()
    theirs, mine = node.spawn(as_nobody(['sleep', '120'])), node.spawn(['sleep', '120'])
    node.on_gpu(theirs, 2)
    node.on_gpu(mine, 2)
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '2'})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 2: %d\n' % (os.getuid(), mine.pid))
    assert gone(mine, signal.SIGTERM)
    assert theirs.poll() is None
    rc, out = node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '2', 'SLURM_JOB_UID': str(NOBODY)})
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on GPUs 2: %d\n' % (NOBODY, theirs.pid))
    assert gone(theirs, signal.SIGTERM)


def test_cleanup_for_a_uid_without_processes_kills_nothing(node):
    node.create()
    proc = node.spawn(['sleep', '120'])
    node.on_gpu(proc, 2)
    assert node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '2', 'SLURM_JOB_UID': '4242424'}) == (0, '')
    assert proc.poll() is None


@needs_root
def test_cleanup_fails_when_a_process_survives(tmp_path):
    """Run as nobody against a root process: kill(2) is refused, so the process survives SIGKILL and the hook fails."""
    shared = tempfile.mkdtemp(prefix='gpu-cleanup-')
    try:
        os.chmod(shared, 0o755)
        env = {'PATH': '%s:/usr/bin:/bin' % SIM_BIN, 'NVMLSIM_STATE': os.path.join(shared, 'state.json'),
               'NVMLSIM_ROOT': os.path.join(shared, 'root'), 'SLURM_JOB_UID': str(os.getuid()), 'SLURM_JOB_GPUS': '1',
               'GPUCLUSTER_GPU_CLEANUP_GRACE': '1'}
        subprocess.run([str(SIM_BIN / 'nvmlsim'), 'create', '--preset', 'l40s-x4'], env=env, check=True, stdout=subprocess.DEVNULL)
        os.chmod(env['NVMLSIM_STATE'], stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
        proc = subprocess.Popen(['sleep', '120'])
        try:
            subprocess.run([str(SIM_BIN / 'nvmlsim'), 'process', 'add', '--gpu', '1', '--pid', str(proc.pid), '--name', 'sleep'],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            result = subprocess.run(as_nobody([str(HOOKS / '40-all-gpu-cleanup')]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    universal_newlines=True, env=env, cwd='/', check=False, timeout=60)
            assert result.returncode == 1
            me, pid = os.getuid(), proc.pid
            assert result.stdout == ('killing leftover GPU processes of uid %d on GPUs 1: %d\nsending SIGKILL to %d\n'
                                     'GPU processes of uid %d survived SIGKILL: %d\n' % (me, pid, pid, me, pid))
            assert proc.poll() is None
        finally:
            proc.kill()
            proc.wait()
    finally:
        shutil.rmtree(shared)


# ------------------------------------------------------------------ 40-all-gpu-cleanup: fallback after the user's last job

def test_fallback_cleans_every_gpu_after_the_users_last_job(node):
    node.create()
    first, second = node.spawn(['sleep', '120']), node.spawn(['sleep', '120'])
    node.on_gpu(first, 0)
    node.on_gpu(second, 7)
    node.stand_in('squeue', 'echo 7')
    rc, out = node.run_hook('40-all-gpu-cleanup')
    assert rc == 0
    assert out == 'killing leftover GPU processes of uid %d on all GPUs (the user\'s last job on gpu-01): %d %d\n' % (
        os.getuid(), first.pid, second.pid)
    assert gone(first, signal.SIGTERM) and gone(second, signal.SIGTERM)
    assert node.calls() == ['squeue -h -o %%A -w gpu-01 -u %d' % os.getuid()]


def test_fallback_does_nothing_while_the_user_has_other_jobs(node):
    node.create()
    proc = node.spawn(['sleep', '120'])
    node.on_gpu(proc, 0)
    node.stand_in('squeue', 'echo 7; echo 12')
    assert node.run_hook('40-all-gpu-cleanup') == (
        0, "job GPUs unknown (SLURM_JOB_GPUS='') and uid %d has other jobs on gpu-01; nothing killed\n" % os.getuid())
    assert proc.poll() is None


def test_fallback_does_nothing_when_squeue_cannot_tell(node):
    node.create()
    proc = node.spawn(['sleep', '120'])
    node.on_gpu(proc, 0)
    node.stand_in('squeue', 'echo "slurm_load_jobs error: Unable to contact slurm controller" >&2; exit 1')
    assert node.run_hook('40-all-gpu-cleanup') == (
        0, "job GPUs unknown (SLURM_JOB_GPUS='') and squeue cannot tell whether uid %d has other jobs on gpu-01; nothing killed\n"
        % os.getuid())
    assert proc.poll() is None


def test_a_mig_device_of_the_job_falls_back_to_the_last_job_rule(node):
    node.create('seed-003')
    proc = node.spawn(['sleep', '120'])
    node.on_gpu(proc, 3, '--gi', '7', '--ci', '0')
    (node.tmp / 'gres-uuid.map').write_text('0 1g.10gb MIG-0d0f2c64-0000-5000-8000-000000000000\n')
    node.stand_in('squeue', 'echo 7; echo 8')
    env = {'SLURM_JOB_GPUS': '0', 'GPUCLUSTER_UUID_MAP': str(node.tmp / 'gres-uuid.map')}
    assert node.run_hook('40-all-gpu-cleanup', env) == (
        0, "job GPUs unknown (SLURM_JOB_GPUS='0') and uid %d has other jobs on gpu-01; nothing killed\n" % os.getuid())
    assert proc.poll() is None
    node.stand_in('squeue', 'echo 7')
    rc, out = node.run_hook('40-all-gpu-cleanup', env)
    assert (rc, out) == (0, 'killing leftover GPU processes of uid %d on all GPUs (the user\'s last job on gpu-01): %d\n' % (
        os.getuid(), proc.pid))
    assert gone(proc, signal.SIGTERM)


@pytest.mark.parametrize('env, message', [
    ({'SLURM_JOB_UID': None}, 'SLURM_JOB_UID is not set'),
    ({'GPUCLUSTER_GPU_CLEANUP_GRACE': 'soon'}, 'GPUCLUSTER_GPU_CLEANUP_GRACE=soon is not a whole number of seconds\n'),
])
def test_cleanup_bad_environment(node, env, message):
    node.create()
    rc, out = node.run_hook('40-all-gpu-cleanup', env)
    assert rc == 1
    assert message in out


def test_cleanup_fails_when_nvidia_smi_fails(node):
    node.create()
    node.nvmlsim('inject', '--call', 'nvmlDeviceGetComputeRunningProcesses', '--error', 'NVML_ERROR_GPU_IS_LOST')
    assert node.run_hook('40-all-gpu-cleanup', {'SLURM_JOB_GPUS': '0'}) == (
        1, 'nvidia-smi failed: Unable to determine the device handle for GPU: GPU is lost\n')
