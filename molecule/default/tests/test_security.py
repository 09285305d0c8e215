"""Seed 001's first wish, proven as a user sees it: a job never touches another job's GPU.

The GPU nodes of the simulated cluster run as privileged containers with
their own cgroup namespace, so Slurm's cgroup/v1 plugin really confines jobs
(ConstrainDevices=yes): the devices cgroup of a job allows the GPU device
files of its GRES and denies every other one in gres.conf. Opening a denied
device fails with EPERM; opening an allowed one reaches the kernel, which
answers ENXIO (no NVIDIA driver behind the simulated device numbers).

Also: the files that hold secrets are private (munge key, slurmdbd.conf),
slurm.conf is readable by every user and holds no password, and a user's
enroot directories are not readable by other users. Each check fails when
its setting is removed.
"""
import re

import pytest

from simcluster import CONTROLLER, GPU_NODES, NODES, ctl, gres_files, node, sh, wait_idle
from simcluster import fixture_mig_node  # noqa: F401  pylint: disable=unused-import  (the mig_node fixture)

PROBE = "/tmp/gpucluster-devprobe.py"
PROBE_SOURCE = r"""
import errno, os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDONLY))
        result = 'open'
    except OSError as exc:
        result = errno.errorcode.get(exc.errno, str(exc.errno))
    print(path, result)
print('SLURM_JOB_GPUS=%s' % os.environ.get('SLURM_JOB_GPUS', ''))
"""


def _probe(name, gres, user="alice"):
    """{device: 'open'|'EPERM'|'ENXIO'|...} as a job of ``user`` with ``gres`` on node ``name`` sees them."""
    sh(name, "cat > %s <<'EOF'\n%s\nEOF\nchmod 0755 %s" % (PROBE, PROBE_SOURCE, PROBE))
    paths = sorted(set(p for line in gres_files(name) for p in line))
    gres_opt = "--gres=%s" % gres if gres else ""
    out = ctl("su %s -c 'timeout 60 srun -w %s %s python3 %s %s'" % (user, name, gres_opt, PROBE, " ".join(paths))).stdout
    seen = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith("/dev/"))
    assert sorted(seen) == paths, out
    return seen


@pytest.fixture(name="whole_gpu_node")
def fixture_whole_gpu_node():
    for name in GPU_NODES:
        if all(len(line) == 1 for line in gres_files(name)):
            return name
    pytest.fail("no GPU node with whole GPUs only: %s" % GPU_NODES)


@pytest.mark.parametrize("name", GPU_NODES)
def test_jobs_run_in_slurm_cgroups_with_devices_constrained(name):
    conf = sh(name, "cat /etc/slurm/cgroup.conf").stdout
    assert re.search(r"^ConstrainDevices=yes$", conf, re.M | re.I), conf
    assert "ProctrackType=proctrack/cgroup" in ctl("cat /etc/slurm/slurm.conf").stdout
    wait_idle([name])
    cgroup = ctl("timeout 60 srun -w %s cat /proc/self/cgroup" % name).stdout
    # (under the container's own cgroup; Debian's Slurm names its top cgroup slurm_<node>)
    for controller in ("devices", "memory"):
        assert re.search(r"^\d+:%s:(/\S*)?/slurm(_%s)?/uid_0/job_\d+/step_\d+" % (controller, re.escape(name)), cgroup, re.M), cgroup


def test_a_job_without_gpus_opens_no_gpu(whole_gpu_node):
    seen = _probe(whole_gpu_node, None)
    assert set(seen.values()) == {"EPERM"}, seen


def test_a_job_with_one_gpu_opens_exactly_that_gpu(whole_gpu_node):
    seen = _probe(whole_gpu_node, "gpu:1")
    allowed = [path for path, result in seen.items() if result != "EPERM"]
    assert len(allowed) == 1 and seen[allowed[0]] == "ENXIO", seen


def test_a_mig_job_opens_its_parent_gpu_and_its_own_instance_only(mig_node):
    mig_type = next(t for t in re.findall(r"gpu:([^:,]+):", ctl("scontrol show node %s" % mig_node).stdout) if "g." in t)
    seen = _probe(mig_node, "gpu:%s:1" % mig_type)
    allowed = sorted(path for path, result in seen.items() if result != "EPERM")
    mig_lines = [sorted(line) for line in gres_files(mig_node) if len(line) > 1]
    # exactly one MIG GRES line's files: the parent GPU plus its GPU- and compute-instance capabilities
    assert allowed in mig_lines, (allowed, mig_lines)
    assert all(seen[path] == "ENXIO" for path in allowed), seen
    others = [p for line in mig_lines if sorted(line) != allowed for p in line if p not in allowed]
    assert others and all(seen[p] == "EPERM" for p in others), seen


# --- files that hold secrets, and what every user may read ------------------------------

@pytest.mark.parametrize("name", NODES)
def test_the_munge_key_is_private_to_munge(name):
    out = sh(name, "stat -c '%a %U' /etc/munge /etc/munge/munge.key").stdout.split("\n")
    assert out[0] == "700 munge", out
    assert out[1] in ("400 munge", "600 munge"), out


def test_slurmdbd_conf_is_private_to_the_slurm_user_and_slurm_conf_holds_no_password():
    user = re.search(r"^SlurmUser=(\S+)$", ctl("cat /etc/slurm/slurm.conf").stdout, re.M).group(1)
    assert sh(CONTROLLER, "stat -c '%a %U' /etc/slurm/slurmdbd.conf").stdout.strip() == "600 %s" % user
    assert "StoragePass=" in sh(CONTROLLER, "cat /etc/slurm/slurmdbd.conf").stdout
    for name in NODES:
        assert sh(name, "stat -c '%a %U' /etc/slurm/slurm.conf").stdout.strip() == "644 root", name
        # every user can read it (the Slurm commands need it) ...
        sh(name, "su bob -c 'head -c1 /etc/slurm/slurm.conf >/dev/null'")
        # ... so it holds no password
        conf = sh(name, "cat /etc/slurm/slurm.conf").stdout
        assert not re.search(r"^\w*Pass\w*=", conf, re.M | re.I), [l for l in conf.splitlines() if "pass" in l.lower()]


def test_a_users_enroot_directories_are_not_readable_by_other_users():
    name = GPU_NODES[0]
    wait_idle([name])
    uid = sh(name, "id -u alice").stdout.strip()
    # a job of alice makes her directories (prolog hook 50-all-enroot-dirs); they stay while the job runs
    job = ctl("su alice -c \"sbatch --parsable -w %s -o /dev/null --wrap 'sleep 30'\"" % name).stdout.strip()
    try:
        runtime = "/run/enroot/user-%s" % uid
        for _attempt in range(30):
            if sh(name, "test -d %s" % runtime, check=False).rc == 0:
                break
            sh(name, "sleep 1")
        for path in (runtime, "/tmp/enroot-data/user-%s" % uid):
            assert sh(name, "stat -c '%%a %%U' %s" % path).stdout.strip() == "700 alice", path
            assert sh(name, "su bob -c 'ls %s'" % path, check=False).rc != 0, path
    finally:
        ctl("scancel %s" % job, check=False)


# --- ssh: only into a node where the user has a job, and into that job ----------------------

def test_ssh_reaches_a_node_only_with_a_job_there_and_lands_in_that_job(whole_gpu_node):
    name = whole_gpu_node
    assert "PrologFlags=Alloc,Contain" in ctl("cat /etc/slurm/slurm.conf").stdout
    # alice's key on the controller, authorized on the node (as a site's shared home directories would give it)
    ctl("su alice -c 'test -f ~/.ssh/id_ed25519 || ssh-keygen -q -t ed25519 -N \"\" -f ~/.ssh/id_ed25519'")
    public = ctl("cat ~alice/.ssh/id_ed25519.pub").stdout.strip()
    sh(name, "install -d -m 0700 -o alice -g alice ~alice/.ssh && echo '%s' > ~alice/.ssh/authorized_keys"
             " && chown alice:alice ~alice/.ssh/authorized_keys && chmod 0600 ~alice/.ssh/authorized_keys" % public)
    ssh = ("su alice -c 'ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
           " %s cat /proc/self/cgroup'" % name)
    wait_idle([name])
    refused = ctl(ssh, check=False)
    assert refused.rc != 0, refused.stdout
    assert "Access denied by pam_slurm_adopt: you have no active jobs on this node" in refused.stdout + refused.stderr, refused
    job = ctl("su alice -c \"sbatch --parsable -w %s -o /dev/null --wrap 'sleep 60'\"" % name).stdout.strip()
    try:
        for _attempt in range(30):
            if "RUNNING" in ctl("squeue -h -j %s -o %%T" % job, check=False).stdout:
                break
            sh(name, "sleep 1")
        # RUNNING at slurmctld comes a moment before the node's slurmd has the job's extern step that
        # pam_slurm_adopt looks for (CI run 21: refused once right after RUNNING): try again for a few seconds
        for _attempt in range(10):
            landed = ctl(ssh, check=False)
            if landed.rc == 0 or "you have no active jobs on this node" not in landed.stdout + landed.stderr:
                break
            sh(name, "sleep 1")
        assert landed.rc == 0, "%s\n%s" % (landed.stdout, landed.stderr)
        uid = sh(name, "id -u alice").stdout.strip()
        # the session was adopted into the job's extern step: its cgroups, its devices
        for controller in ("devices", "memory"):
            assert re.search(r"^\d+:%s:(/\S*)?/slurm(_%s)?/uid_%s/job_%s/step_extern(/|$)" % (controller, re.escape(name), uid, job),
                             landed.stdout, re.M), landed.stdout
    finally:
        ctl("scancel %s" % job, check=False)
