# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU sharing switched per node group from the inventory: the A100 node shares its GPUs through CUDA MPS.

An inventory layer sets ``slurm_gres_sharing: mps`` for that node alone, and the slurm stage of site.yml runs
for every host. What a user sees: the node's ``mps`` GRES in slurmctld, a job with ``--gres=mps:50`` whose
environment points at a control daemon of its own user (NVIDIA's real ``nvidia-cuda-mps-control``, Debian's
non-free ``nvidia-cuda-mps``) that answers it, another user's job beside it on the same GPU with a daemon of
its own, and no daemon left after the last job; then the layer is dropped and the node's GPUs are whole
again. (The shard mode is in test_slurm's add-node test.) Runs before test_mig_changes, which puts that
node's GPUs in MIG mode (sharing needs GPUs outside MIG mode).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest
import yaml

from simcluster import COMPUTE, GPU_NODES, NODES, SITE, assert_no_change, ctl, overlap, run_jobs_together, run_playbook, sh, shown_gres, start_times, wait_idle

# the `acceptance` stage (conftest.py), not CI's molecule stage; after every other test, before test_mig_changes (conftest.py)
pytestmark = [pytest.mark.acceptance, pytest.mark.cluster_order(1)]

MPS_NODE = GPU_NODES[-1]  # the A100 node: 8 GPUs, none in MIG mode
MPS_DIR = "/run/gpucluster-mps"
# what a job prints: its MPS variables, then what its own daemon answers
PROBE = ("printenv CUDA_VISIBLE_DEVICES CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PIPE_DIRECTORY "
         "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; echo get_server_list | nvidia-cuda-mps-control; echo answer=$?")


@pytest.fixture(scope="module")
def mps_layer(tmp_path_factory):
    layer = tmp_path_factory.mktemp("sharing") / "mps.yml"
    layer.write_text(yaml.safe_dump({"all": {"hosts": {MPS_NODE: {"slurm_gres_sharing": "mps"}}}}))
    wait_idle(COMPUTE)
    rc, output = run_playbook(SITE, ["-i", str(layer), "--tags", "slurm"])
    assert rc == 0, output[-6000:]
    wait_idle(COMPUTE)
    yield layer
    # without the layer: the node's GPUs are scheduled whole again, and no MPS hook has anything left to stop
    rc, output = run_playbook(SITE, ["--tags", "slurm"])
    assert rc == 0, output[-6000:]
    wait_idle(COMPUTE)
    assert shown_gres(MPS_NODE) == "gpu:a100:8"
    assert "Name=mps" not in sh(MPS_NODE, "cat /etc/slurm/gres.conf").stdout


def uid(user):
    return sh(MPS_NODE, "id -u %s" % user).stdout.strip()


def daemons():
    """The control daemons running on the node: [(user, pipe directory)]."""
    found = []
    for pid in sh(MPS_NODE, "pgrep -x nvidia-cuda-mps", check=False).stdout.split():
        user = sh(MPS_NODE, "stat -c %%U /proc/%s" % pid).stdout.strip()
        pipe = re.search(r"(?:^|\0)CUDA_MPS_PIPE_DIRECTORY=([^\0]*)", sh(MPS_NODE, "cat /proc/%s/environ" % pid).stdout)
        found.append((user, pipe.group(1) if pipe else None))
    return sorted(found)


def parse(output):
    lines = output.split("\n")
    return {"devices": lines[0], "percentage": lines[1], "pipe": lines[2], "pinned": lines[3],
            "answer": re.search(r"answer=(\d+)", output).group(1)}


def test_the_node_group_switched_to_mps_declares_mps_and_a_second_run_changes_nothing(mps_layer):
    shown = shown_gres(MPS_NODE)
    assert re.match(r"^gpu:a100:8,mps(:a100)?:800$", shown), shown
    gres = sh(MPS_NODE, "cat /etc/slurm/gres.conf").stdout
    assert "Name=mps Count=100 File=/dev/nvidia0" in gres, gres
    assert sh(MPS_NODE, "dpkg-query -W -f '${Status}' nvidia-cuda-mps").stdout == "install ok installed"
    other = [name for name in GPU_NODES if name != MPS_NODE]
    for name in other:
        assert "mps" not in ctl("scontrol show node %s" % name).stdout.split("Gres=")[1].split()[0]
        assert sh(name, "dpkg-query -W -f '${Status}' nvidia-cuda-mps", check=False).rc != 0
    before = start_times({"slurmd": COMPUTE})
    rc, output = run_playbook(SITE, ["-i", str(mps_layer), "--tags", "slurm"])
    assert rc == 0, output[-6000:]
    assert_no_change(output, NODES)
    assert start_times({"slurmd": COMPUTE}) == before


def test_an_mps_job_reaches_a_daemon_of_its_user_and_none_is_left_after_it(mps_layer):
    out = ctl("runuser -u alice -- srun -w %s --gres=mps:50 bash -c '%s'" % (MPS_NODE, PROBE)).stdout
    job = parse(out)
    assert job["percentage"] == "50", out  # Slurm: 50 of the GPU's 100
    assert re.match(r"^%s/%s-\d+/pipe$" % (MPS_DIR, uid("alice")), job["pipe"]), out
    assert job["pinned"] == "0=20480M", out  # half of the simulated A100's 40960 MiB
    assert job["answer"] == "0", out  # its daemon answered
    wait_idle([MPS_NODE])  # the epilog that stops the daemon runs after srun returns (the node is COMPLETING until then)
    assert daemons() == []
    assert sh(MPS_NODE, "ls -A %s/jobs" % MPS_DIR).stdout.strip() == ""


def test_two_users_jobs_share_the_gpu_each_with_its_own_daemon(mps_layer):
    alice_uid = uid("alice")
    # bob's job, once alice's runs, also asks alice's daemon: her directory is hers (0700), so it cannot
    cross = ("sleep 3; ls -d %s/%s-*; echo crossed_at=$(date +%%s.%%N); for d in %s/%s-*; do echo get_server_list | "
             "CUDA_MPS_PIPE_DIRECTORY=$d/pipe nvidia-cuda-mps-control; echo cross=$?; done" % (MPS_DIR, alice_uid, MPS_DIR, alice_uid))
    # alice's job shows its daemon alive before and after bob's try (the same processes, answering her again), so
    # his refusal is her directory's doing, not a daemon that had already gone
    alive = "echo alive=$(pgrep -u alice -x nvidia-cuda-mps | sort | tr '\\n' ' ')@$(date +%s.%N)"
    again = "%s; sleep 8; echo get_server_list | nvidia-cuda-mps-control >/dev/null; echo again=$?; %s" % (alive, alive)
    jobs = run_jobs_together(MPS_NODE, [("alice", "mps:50", PROBE + "; " + again), ("bob", "mps:50", PROBE + "; " + cross)], seconds=2)
    assert [job["state"] for job in jobs] == ["COMPLETED", "COMPLETED"], jobs
    assert overlap(*jobs), jobs
    alice, bob = parse(jobs[0]["output"]), parse(jobs[1]["output"])
    assert alice["answer"] == bob["answer"] == "0", jobs
    assert alice["pipe"].startswith("%s/%s-" % (MPS_DIR, alice_uid)), jobs
    assert bob["pipe"].startswith("%s/%s-" % (MPS_DIR, uid("bob"))), jobs
    # on the same GPU (the directory's suffix is the node's GPU index, as the prolog saw it)
    assert alice["pipe"].split("-")[-1] == bob["pipe"].split("-")[-1], jobs
    assert alice["pipe"].rsplit("/", 1)[0] in jobs[1]["output"], jobs  # bob saw alice's daemon directory ...
    crossed = re.findall(r"cross=(\d+)", jobs[1]["output"])
    assert crossed and all(code != "0" for code in crossed), jobs  # ... and her daemon did not answer him ...
    # ... while it ran: alice's daemon processes were the same before and after his try, and answered her after it
    seen = re.findall(r"^alive=([\d ]*)@([\d.]+)$", jobs[0]["output"], re.M)
    crossed_at = float(re.search(r"^crossed_at=([\d.]+)$", jobs[1]["output"], re.M).group(1))
    assert len(seen) == 2 and seen[0][0].strip() and seen[0][0] == seen[1][0], jobs
    assert float(seen[0][1]) < crossed_at < float(seen[1][1]), (seen, crossed_at)
    assert re.search(r"^again=0$", jobs[0]["output"], re.M), jobs
    wait_idle([MPS_NODE])  # both epilogs ran (each stops its user's daemon)
    assert daemons() == []
