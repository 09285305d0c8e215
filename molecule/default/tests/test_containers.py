"""Issue 45: containers in Slurm jobs end to end, as a user runs them, with the REAL pyxis 0.24.0 and enroot 4.1.2.

The image is real: Debian's static BusyBox in two layers with a whiteout (testimage.py), built offline, pushed as
Docker v2 schema 2 into a real docker-registry (Debian's, Distribution 2.8) on the node network's gateway. alice
submits from the controller with srun and sbatch; slurmstepd on the compute nodes runs pyxis, which runs enroot to
import the image, unpack it and start the container. What she sees is what is asserted: the output of her jobs,
their exit codes and sacct's states.

The registry is plain HTTP: pyxis clears ENROOT_* from the job's environment, so ENROOT_ALLOW_HTTP must be in
enroot.conf (what enroot_conf.ENROOT_ALLOW_HTTP writes); the module's fixture sets it on the compute nodes and puts the file
back byte for byte afterwards.

slurmstepd runs the TaskProlog after pyxis' task_init, inside the container: the host's TaskProlog path is not
there, and from Slurm 24.11 on slurmstepd starts every script through its own binary (execv of the host's
slurmstepd), which no image has (pyxis issues #83 and #163). The simulated cluster needs the TaskProlog (MIG in
files mode on gpu-01: the MIG UUIDs), so the module first runs the slurm stage with what README tells a site whose
jobs run in containers: slurm_conf_overrides with TaskProlog: null. The cluster's own slurm.conf is put back after.
A test shows the failure with the TaskProlog first, as a user of such a site would meet it.
"""
import json
import shlex

import pytest

from simcluster import COMPUTE, GPU_NODES, PREFIX, ROOT, SIMULATED_VARS, SITE, ctl, podman, run_playbook, sh
import testimage
from test_validate import load, records  # the validation report's reader

pytestmark = pytest.mark.acceptance

ENROOT_CONF = "/etc/enroot/enroot.conf"
USER, UID = "alice", 2001
NODE = GPU_NODES[0]
# What a shell in the image prints about the image: the second layer's release file, the whiteout applied, the
# second layer's new file, the image's own environment.
PROBE = ("cat /etc/test-release; test -e /etc/removed-by-layer-2 && echo whiteout-ignored || echo whiteout-applied; "
         "cat /opt/test/hello; echo image=$GPUCLUSTER_TEST_IMAGE; test -e /etc/debian_version && echo host-root || echo own-root")
INSIDE = ["layer=2", "whiteout-applied", "hello from layer 2", "image=busybox-2-layers", "own-root"]


def _gateway():
    info = json.loads(podman("container", "inspect", PREFIX + NODE))[0]
    return sorted(info["NetworkSettings"]["Networks"].values(), key=lambda n: n["IPAddress"])[0]["Gateway"]


@pytest.fixture(name="registry_image", scope="module")
def fixture_registry_image(tmp_path_factory):
    """The image in a registry the compute nodes reach over HTTP: pyxis' reference to it (HOST:PORT#test/busybox:1.0)."""
    work = tmp_path_factory.mktemp("registry")
    layout = work / "layout"
    testimage.build_layout(layout, "1.0")
    registry = testimage.Registry(work, _gateway())
    saved = {}
    try:
        reference = registry.push(layout, "1.0", "test/busybox")
        for name in COMPUTE:
            saved[name] = sh(name, "base64 -w0 %s" % ENROOT_CONF).stdout.strip()
            sh(name, "sed -i 's/^ENROOT_ALLOW_HTTP .*/ENROOT_ALLOW_HTTP yes/' %s && grep -qx 'ENROOT_ALLOW_HTTP yes' %s"
               % (ENROOT_CONF, ENROOT_CONF))
        host, path = reference.split("/", 1)
        yield "%s#%s" % (host, path)
    finally:
        for name, content in saved.items():
            sh(name, "printf %%s %s | base64 -d > %s" % (content, ENROOT_CONF))
            sh(name, "runuser -u %s -- enroot remove -f pyxis_kept >/dev/null 2>&1; rm -f /var/tmp/alice-busybox.sqsh" % USER,
               check=False)
        registry.stop()


def _slurm_stage(overrides, log):
    rc, out = run_playbook(SITE, ["--tags", "slurm", "-e", json.dumps({"slurm_conf_overrides": overrides})], log=log)
    assert rc == 0, out[-6000:]


@pytest.fixture(name="no_task_prolog", scope="module")
def fixture_no_task_prolog(tmp_path_factory):
    """The slurm stage with TaskProlog removed (slurm_conf_overrides TaskProlog: null, over the inventory's own
    overrides) for a module's container jobs; the slurm stage as the inventory says after. (test_private_registry.py
    uses it too.)"""
    logs = tmp_path_factory.mktemp("slurm-stage")
    own = dict(SIMULATED_VARS.get("slurm_conf_overrides") or {})
    _slurm_stage(dict(own, TaskProlog=None), logs / "without.log")
    try:
        assert "/task-prolog" not in ctl("scontrol show config").stdout
        yield
    finally:
        _slurm_stage(own, logs / "restored.log")
        assert "/task-prolog" in ctl("scontrol show config | grep ^TaskProlog ").stdout


@pytest.fixture(name="image", scope="module")
def fixture_image(registry_image, no_task_prolog):  # pylint: disable=unused-argument
    """The registry's image, with the TaskProlog out of the way."""
    yield registry_image


def _as_user(command, check=True):
    """``command`` run by alice on the controller (the submit host), in /tmp."""
    return ctl("cd /tmp && runuser -u %s -- %s" % (USER, command), check=check)


def _srun(args, command, check=True):
    return _as_user("srun -N1 -w %s %s sh -c %s" % (NODE, args, shlex.quote(command)), check=check)


def test_with_a_task_prolog_a_container_job_fails_naming_it(registry_image):
    """What a site meets with a TaskProlog (the simulated cluster's own slurm.conf): slurmstepd cannot run it in the
    container. README ("Containers and the TaskProlog") says why and what to set."""
    assert "/task-prolog" in ctl("scontrol show config | grep ^TaskProlog ").stdout
    out = _srun("--container-image=%s" % registry_image, "true", check=False)
    assert out.rc != 0, out.stdout
    assert "TaskProlog failed" in out.stderr or "task_prolog can not be executed" in out.stderr, out.stderr


def test_srun_runs_the_image_as_the_user_with_its_layers_in_order(image):
    out = _srun("--container-image=%s" % image, PROBE + "; id -u; echo $SLURM_JOB_ID")
    lines = out.stdout.splitlines()
    assert lines[:5] == INSIDE, out.stdout + out.stderr
    # the user's own uid inside, and the job's environment passed in
    assert lines[5] == str(UID), out.stdout
    assert lines[6].isdigit(), out.stdout
    assert "pyxis: imported docker image: %s" % image in out.stderr, out.stderr
    state = ctl("sacct -X -n -P -j %s --format=State,ExitCode" % lines[6]).stdout.strip()
    assert state == "COMPLETED|0:0", state


def test_a_failure_inside_the_container_reaches_the_user(image):
    out = _srun("--container-image=%s" % image, "echo about to fail; exit 3", check=False)
    assert out.rc == 3, (out.rc, out.stdout, out.stderr)
    assert "about to fail" in out.stdout


def test_remap_root_and_mounts(image):
    out = _srun("--container-image=%s --container-remap-root --container-mounts=/etc/hostname:/host/hostname:ro" % image,
                "id -u; echo $(cat /host/hostname); touch /host/hostname 2>/dev/null && echo writable || echo read-only")
    assert out.stdout.split() == ["0", NODE, "read-only"], out.stdout + out.stderr


def test_one_job_on_every_compute_node(image):
    out = _as_user("srun -N%d --ntasks-per-node=1 --container-image=%s sh -c %s"
                   % (len(COMPUTE), image, shlex.quote("echo $(hostname) $(cat /etc/test-release)")))
    assert sorted(out.stdout.splitlines()) == ["%s layer=2" % name for name in sorted(COMPUTE)], out.stdout + out.stderr


def test_sbatch_runs_the_batch_script_inside_the_image(image):
    script = "#!/bin/sh\n#SBATCH --container-image %s\n%s\n" % (image.replace("#", "\\#"), PROBE)
    submit = "printf %%s %s | sbatch --parsable --wait -w %s -o /var/tmp/gc-batch-%%j.out" % (shlex.quote(script), NODE)
    job = _as_user("sh -c %s" % shlex.quote(submit)).stdout.strip().split(";")[0]
    output = sh(NODE, "cat /var/tmp/gc-batch-%s.out && rm -f /var/tmp/gc-batch-%s.out" % (job, job)).stdout
    assert [line for line in output.splitlines() if not line.startswith("pyxis:")] == INSIDE, output


def test_a_named_container_keeps_its_state_across_jobs(image):
    # container_scope=global (the pyxis role's default): a named container stays on the node after the job
    # the role sets ENROOT_ROOTFS_WRITABLE no (enroot_conf.ENROOT_ROOTFS_WRITABLE): writing asks for it
    _srun("--container-image=%s --container-name=kept --container-writable" % image, "echo kept-state > /var/tmp/state")
    out = _srun("--container-name=kept", "cat /var/tmp/state")
    assert out.stdout.strip() == "kept-state", out.stdout + out.stderr
    listed = sh(NODE, "runuser -u %s -- enroot list" % USER).stdout.split()
    assert "pyxis_kept" in listed, listed


def test_a_squashfs_file_imported_by_the_user(image):
    sh(NODE, "cd /var/tmp && runuser -u %s -- env ENROOT_ALLOW_HTTP=yes enroot import -o /var/tmp/alice-busybox.sqsh docker://%s"
       % (USER, image))
    out = _srun("--container-image=/var/tmp/alice-busybox.sqsh", "cat /etc/test-release")
    assert out.stdout.strip() == "layer=2", out.stdout + out.stderr


def test_bob_cannot_see_or_use_alices_named_container(image):
    """Named containers are per user: enroot keeps them under the user's own data path (enroot_conf.ENROOT_DATA_PATH,
    /tmp/enroot-data/user-<uid>, 0700), so bob's job with alice's container name finds nothing of hers, and bob can
    neither list nor read her directory. Alice's container is untouched by his try."""
    _srun("--container-image=%s --container-name=kept --container-writable" % image, "echo alice-state > /var/tmp/state")
    bob = ctl("cd /tmp && runuser -u bob -- srun -N1 -w %s --container-name=kept sh -c 'cat /var/tmp/state'" % NODE, check=False)
    assert bob.rc != 0 and "alice-state" not in bob.stdout, (bob.rc, bob.stdout, bob.stderr)
    assert "pyxis_kept" not in sh(NODE, "runuser -u bob -- enroot list").stdout.split()
    data = sh(NODE, "stat -c '%%U %%a' /tmp/enroot-data/user-%d" % UID).stdout.split()
    assert data == [USER, "700"], data
    peek = sh(NODE, "runuser -u bob -- ls /tmp/enroot-data/user-%d" % UID, check=False)
    assert peek.rc != 0 and "Permission denied" in peek.stderr, (peek.rc, peek.stdout, peek.stderr)
    out = _srun("--container-name=kept", "cat /var/tmp/state")
    assert out.stdout.strip() == "alice-state", out.stdout + out.stderr


def test_a_gpu_container_without_libnvidia_container_fails_naming_it(image):
    """enroot's NVIDIA hook (98-nvidia.sh) runs when the job asks for GPUs in the container (NVIDIA_VISIBLE_DEVICES);
    without libnvidia-container on the node (as on the simulated nodes) the job fails with enroot's message naming
    the missing nvidia-container-cli, before the container starts. README says what a GPU site installs."""
    out = _srun("--container-image=%s --export=ALL,NVIDIA_VISIBLE_DEVICES=all" % image, "echo started-inside", check=False)
    assert out.rc != 0 and "started-inside" not in out.stdout, (out.rc, out.stdout, out.stderr)
    assert "Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container" in out.stderr, out.stderr


def test_the_validations_container_stage_runs_the_image_with_the_real_pyxis(image, tmp_path):
    """validate.yml with validate_jobs.container_image: its container job runs the image on every GPU node through the
    real pyxis and enroot and passes; a tag the registry does not have fails each node's record with pyxis' own
    words, never a pass."""
    def container_records(reference, name):
        report = tmp_path / name
        run_playbook(ROOT / "playbooks" / "validate.yml",
                     ["-e", json.dumps({"validate_report_dir": str(report), "validate_mpi": False, "validate_nccl": False,
                                        "validate_jobs": {"container_image": reference}, "validate_require": ["node", "slurm", "container"]})],
                     log=tmp_path / ("%s.log" % name))
        return dict((rec["node"], rec) for rec in records(load(report)) if rec["check"] == "container_job")

    good = container_records(image, "good")
    assert sorted(good) == sorted(GPU_NODES), good
    assert all(rec["status"] == "pass" and image in rec["reason"] for rec in good.values()), good
    missing = image.rsplit(":", 1)[0] + ":no-such-tag"
    bad = container_records(missing, "missing-tag")
    assert sorted(bad) == sorted(GPU_NODES), bad
    for name, rec in bad.items():
        assert rec["status"] == "fail", rec
        assert rec["reason"].startswith("srun --container-image=%s -w %s failed (rc " % (missing, name)), rec


def test_the_docker_uri_form_and_the_working_directory(image):
    """pyxis takes enroot's docker:// URI as well as the bare reference; --container-workdir sets where the command
    starts inside the image."""
    out = _srun("--container-image=docker://%s --container-workdir=/opt/test" % image, "pwd; cat hello")
    assert out.stdout.splitlines() == ["/opt/test", "hello from layer 2"], out.stdout + out.stderr
