# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""hook_runner.py with the shipped hooks: a failing hook drains the node with the hook's name.

``scontrol`` and ``squeue`` are STAND-INs that record their argv; the
runner's drain call is ``scontrol update NodeName=<node> State=DRAIN Reason=<reason>``.
``enroot`` is the REAL enroot 4.1.2 (tests/unit/realenroot.py) behind a recorder that logs each call
as the stand-ins do: the enroot hooks only require it (``# requires: enroot``) and must never call it.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import uuid

import sys

import yaml

from hookenv import FILES as SLURM_FILES, install, run_runner
from ansible_collections.gpucluster.bringup.tests.unit import realenroot

from ansible_collections.gpucluster.bringup.tests.unit.nodelib import install_library

DRAIN = 'scontrol update NodeName=gpu-01 State=DRAIN Reason=%s'
# the runner reads the node first: a node drained already keeps its reason
SHOW = 'scontrol -o show node gpu-01'


def real_enroot(runner):
    """The real enroot first in the runner's PATH, its calls logged to calls.log (runner.calls())."""
    found = realenroot.recorder(runner.bin, 'CALLS_LOG')
    runner.env['ENROOT_LIBRARY_PATH'] = found['ENROOT_LIBRARY_PATH']


def enroot_lists(node, created, cleanup):
    (node.lib / 'enroot-dirs').write_text(''.join(p + '\n' for p in created))
    (node.lib / 'enroot-cleanup-dirs').write_text(''.join(p + '\n' for p in cleanup))


def test_prolog_with_every_shipped_prolog_hook_passes_on_a_healthy_node(runner):
    runner.create()
    real_enroot(runner)
    runtime = '%s/run/enroot/user-{uid}' % runner.tmp
    enroot_lists(runner, [runtime], [runtime])
    for name in ('10-all-gpu-healthcheck', '30-all-mps-start', '50-all-enroot-dirs'):
        install(runner, 'prolog', name)
    rc, err = run_runner(runner, 'prolog')
    assert rc == 0, err
    for name in ('10-all-gpu-healthcheck', '30-all-mps-start', '50-all-enroot-dirs'):
        assert 'prolog job=7 hook=%s rc=0 duration=' % name in err
    assert os.path.isdir(runtime.replace('{uid}', str(os.getuid())))
    assert runner.calls() == []


def test_failed_healthcheck_drains_the_node_naming_the_hook(runner):
    runner.create()
    runner.nvmlsim('ecc', '--gpu', '6', '--uncorrected', '1')
    real_enroot(runner)
    install(runner, 'prolog', '10-all-gpu-healthcheck')
    install(runner, 'prolog', '50-all-enroot-dirs')
    rc, err = run_runner(runner, 'prolog')
    assert rc == 1
    assert 'prolog job=7 hook=10-all-gpu-healthcheck rc=1 duration=' in err
    assert 'prolog hook 10-all-gpu-healthcheck output: GPU 6: 1 uncorrected ECC errors since the last reset' in err
    assert runner.calls() == [SHOW, DRAIN % 'prolog hook 10-all-gpu-healthcheck failed (exit 1)']
    assert 'drained gpu-01: prolog hook 10-all-gpu-healthcheck failed (exit 1)' in err
    assert '50-all-enroot-dirs' not in err  # a failed prolog hook stops the prolog


def test_healthcheck_is_skipped_without_nvidia_smi(runner):
    runner.env['PATH'] = '%s:/usr/bin:/bin' % runner.bin
    install(runner, 'prolog', '10-all-gpu-healthcheck')
    rc, err = run_runner(runner, 'prolog')
    assert rc == 0
    assert 'hook=10-all-gpu-healthcheck rc=- duration=0.000s status=skipped: requires nvidia-smi, not found' in err


def test_epilog_cleans_the_jobs_gpus_and_the_runtime_dir_after_the_last_job(runner):
    runner.create()
    real_enroot(runner)
    runner.stand_in('squeue', 'echo 7')
    runtime, data = '%s/run/enroot/user-{uid}' % runner.tmp, '%s/data/user-{uid}' % runner.tmp
    enroot_lists(runner, [runtime, data], [runtime])
    for path in (runtime, data):
        os.makedirs(path.replace('{uid}', str(os.getuid())))
    proc = runner.spawn(['sleep', '120'])
    runner.on_gpu(proc, 3)
    for name in ('30-all-mps-stop', '40-all-gpu-cleanup', '95-lastuserjob-enroot-cleanup'):
        install(runner, 'epilog', name)
    rc, err = run_runner(runner, 'epilog', {'SLURM_JOB_GPUS': '3', 'CUDA_VISIBLE_DEVICES': 'GPU-%s' % uuid.uuid4()})
    assert rc == 0, err
    assert proc.wait(timeout=5) == -signal.SIGTERM
    for name in ('30-all-mps-stop', '40-all-gpu-cleanup', '95-lastuserjob-enroot-cleanup'):
        assert 'epilog job=7 hook=%s rc=0 duration=' % name in err
    assert not os.path.exists(runtime.replace('{uid}', str(os.getuid())))
    assert os.path.isdir(data.replace('{uid}', str(os.getuid())))
    assert runner.calls() == ['squeue -h -o %%A -w gpu-01 -u %d' % os.getuid()]


def test_epilog_keeps_the_runtime_dir_while_the_user_has_other_jobs(runner):
    runner.create()
    real_enroot(runner)
    runner.stand_in('squeue', 'echo 7; echo 9')
    runtime = '%s/run/enroot/user-{uid}' % runner.tmp
    enroot_lists(runner, [runtime], [runtime])
    os.makedirs(runtime.replace('{uid}', str(os.getuid())))
    install(runner, 'epilog', '95-lastuserjob-enroot-cleanup')
    rc, err = run_runner(runner, 'epilog')
    assert rc == 0, err
    assert 'hook=95-lastuserjob-enroot-cleanup rc=- duration=0.000s status=skipped: the user has other jobs on this node' in err
    assert os.path.isdir(runtime.replace('{uid}', str(os.getuid())))


def test_refused_enroot_cleanup_drains_the_node_naming_the_hook(runner):
    real_enroot(runner)
    runner.stand_in('squeue', 'echo 7')
    runtime = '%s/run/enroot/user-{uid}' % runner.tmp
    enroot_lists(runner, [runtime], ['%s/home/user-{uid}' % runner.tmp])
    install(runner, 'epilog', '95-lastuserjob-enroot-cleanup')
    rc, err = run_runner(runner, 'epilog')
    assert rc == 1
    assert 'epilog hook 95-lastuserjob-enroot-cleanup output: refusing to remove %s/home/user-{uid}: not in' % runner.tmp in err
    assert runner.calls()[-1] == DRAIN % 'epilog hook 95-lastuserjob-enroot-cleanup failed (exit 1)'


def test_failed_gpu_cleanup_on_a_node_the_loop_reboots_keeps_the_loops_reason(runner):
    """Seen on the simulated cluster: the closed loop asked a reboot of a node whose GPU was lost; the job's epilog then
    failed on that GPU and the runner replaced the loop's gpuloop:reboot tag (the loop's state) with its own, so the
    node came back from its reboot as the hook's drain. A node drained already keeps its reason."""
    runner.create()
    runner.nvmlsim('inject', '--call', 'nvmlDeviceGetComputeRunningProcesses', '--error', 'NVML_ERROR_GPU_IS_LOST')
    runner.stand_in('scontrol', 'case "$1" in -o) echo "NodeName=gpu-01 Arch=x86_64 State=MIXED+DRAIN+REBOOT_REQUESTED '
                                'Partitions=batch Reason=gpuloop:reboot:gpu-lost: GPU 0 is lost [root@2026-12-05T18:14:10]";; esac')
    install(runner, 'epilog', '40-all-gpu-cleanup')
    rc, err = run_runner(runner, 'epilog', {'SLURM_JOB_GPUS': '1'})
    assert rc == 1  # the epilog still fails (Slurm's own epilog error handling)
    assert runner.calls() == [SHOW]  # read, not drained over
    assert 'gpu-01 is drained already ("gpuloop:reboot:gpu-lost: GPU 0 is lost"): that reason stays' in err


def test_failed_gpu_cleanup_drains_the_node_naming_the_hook(runner):
    runner.create()
    runner.nvmlsim('inject', '--call', 'nvmlDeviceGetComputeRunningProcesses', '--error', 'NVML_ERROR_GPU_IS_LOST')
    install(runner, 'epilog', '40-all-gpu-cleanup')
    rc, err = run_runner(runner, 'epilog', {'SLURM_JOB_GPUS': '1'})
    assert rc == 1
    assert 'epilog hook 40-all-gpu-cleanup output: nvidia-smi failed: Unable to determine the device handle for GPU: GPU is lost' in err
    assert runner.calls() == [SHOW, DRAIN % 'epilog hook 40-all-gpu-cleanup failed (exit 1)']


def install_healthcheck(node, **settings):
    """gpucluster-healthcheck laid out as the slurm_healthcheck role installs it (its library, its configuration),
    with the real nvidia-ml-py over the simulated libnvidia-ml.so.1; the hook finds it through
    GPUCLUSTER_HEALTHCHECK_PROGRAM."""
    lib = node.tmp / 'hc-lib'
    # the role's own list (its vars), so that a module_utils file the program starts to import cannot be forgotten here
    role_vars = yaml.safe_load((SLURM_FILES.parent.parent / 'slurm_healthcheck' / 'vars' / 'main.yml').read_text())
    install_library(lib, role_vars['_slurm_healthcheck_module_utils'])
    source = (SLURM_FILES.parent.parent / 'slurm_healthcheck' / 'files' / 'gpucluster_healthcheck.py').read_text()
    program = node.tmp / 'gpucluster-healthcheck'
    program.write_text('#!%s\n%s' % (sys.executable, source))
    program.chmod(0o755)
    root = node.env['NVMLSIM_ROOT']
    config = {'node_name': 'gpu-01', 'dev_root': root, 'munge_key_path': '', 'status_file': str(node.tmp / 'hc-status.json'),
              'state_file': str(node.tmp / 'hc-state.json'), 'events_file': str(node.tmp / 'hc-events.jsonl'),
              'xid_source': os.path.join(root, 'var', 'log', 'kern.log'), 'gpu_count': 8, 'gpu_models': ['H100']}
    config.update(settings)
    (node.tmp / 'healthcheck.json').write_text(json.dumps(config))
    wrapper = node.bin / 'gpucluster-healthcheck'
    wrapper.write_text('#!/bin/sh\nexec %s --config %s "$@"\n' % (program, node.tmp / 'healthcheck.json'))
    wrapper.chmod(0o755)
    node.env.update({'GPUCLUSTER_HEALTHCHECK_PROGRAM': str(wrapper), 'GPUCLUSTER_HEALTHCHECK_LIB': str(lib),
                     'PYTHONPATH': os.environ['GPUCLUSTER_TEST_PYNVML_DIR'], 'LD_LIBRARY_PATH': os.environ['LD_LIBRARY_PATH'],
                     'NVMLSIM_PYTHONPATH': os.environ['NVMLSIM_PYTHONPATH'], 'NVMLSIM_PYTHON': os.environ['NVMLSIM_PYTHON']})


def test_the_prolog_tier_drains_with_its_tag(runner):
    """With the health check installed the hook is its prolog tier: the runner drains with the tier's tag."""
    runner.create()
    install_healthcheck(runner)
    install(runner, 'prolog', '10-all-gpu-healthcheck')
    rc, err = run_runner(runner, 'prolog')
    assert rc == 0, err
    assert runner.calls() == []  # the prolog tier asks slurmctld nothing on a healthy node
    runner.nvmlsim('ecc', '--gpu', '2', '--remap-failure', 'yes')
    rc, err = run_runner(runner, 'prolog')
    assert rc == 1
    reason = 'gpuhc:prolog:gpu-error: GPU 2 (00000000:52:00.0) has a failed memory row remapping'
    assert runner.calls() == [SHOW, DRAIN % reason], err
    assert 'drained gpu-01: %s' % reason in err
    with open(str(runner.tmp / 'hc-events.jsonl')) as handle:
        event = json.loads(handle.readline())
    assert (event['action'], event['tier'], event['reason']) == ('drain requested', 'prolog', reason)


def test_a_hook_timeout_is_named_even_when_the_hook_asked_for_a_reason(runner):
    install(runner, 'prolog', '10-all-gpu-healthcheck')
    hook = runner.tmp / 'prolog.d' / '05-all-slow'
    hook.write_text('#!/bin/sh\n# timeout: 1\necho "drain-reason: gpuhc:prolog:xid: not this"\nsleep 5\n')
    hook.chmod(0o755)
    runner.create()
    rc, err = run_runner(runner, 'prolog')
    assert rc == 1
    assert runner.calls() == [SHOW, DRAIN % 'prolog hook 05-all-slow timed out after 1s']
