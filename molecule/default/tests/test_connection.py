"""Issue 20: the playbooks run as a real site runs them, over ssh as a login that is not root and becomes
root (or another user) with sudo, pipelining on.

The simulated inventory connects as `admin` (scripts/lib/node-prepare.sh made it: the cluster's key,
passwordless sudo). Checked here:

* what each connection lands as: `admin` without become, root with it, `alice` with become_user (ad hoc
  `ansible` over the same inventory, no podman involved);
* the one task of the collection that becomes an unprivileged user, the per-user image staging of
  stage_images.yml (enroot_import as alice and bob through sudo, with no ACL tools on the nodes), on every
  GPU node without a shared directory (each node imports as root, then each user unpacks): every user gets
  their own pyxis_<name> container, owned by them; a second run changes nothing.

The image comes from a real docker-registry (Debian's, Distribution 2.8) started on this machine at the
node network's gateway; enroot on the nodes is NVIDIA's real enroot 4.1.2 (the image itself is the stand-in
image of tests/standins/standin_image.py: text files only).
The registry is plain HTTP: for the test, the nodes' enroot.conf gets ENROOT_ALLOW_HTTP (what enroot_conf.ENROOT_ALLOW_HTTP
writes), and is put back byte for byte afterwards.
"""
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from simcluster import CONTROLLER, GPU_NODES, NODES, PREFIX, ROOT, assert_no_change, inventories, node, playbook_env, podman, recap_of, run_playbook, sh

ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")
STAGE_DIR = "/var/tmp/gpucluster-stage-test"
USERS = ["alice", "bob"]
ENROOT_CONF = "/etc/enroot/enroot.conf"

_spec = importlib.util.spec_from_file_location("standin_image", str(ROOT / "tests" / "standins" / "standin_image.py"))
standin_image = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin_image)


def _adhoc(pattern, *args):
    """ansible PATTERN -m command ARGS over the cluster's inventory; {host: stdout} of the hosts that answered."""
    result = subprocess.run([ANSIBLE] + inventories() + [pattern, "-o"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(ROOT), check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    found = {}
    for line in result.stdout.splitlines():
        # "gpu-01 | CHANGED | rc=0 | (stdout) admin"
        parts = line.split(" | ")
        if len(parts) >= 4 and parts[3].startswith("(stdout) "):
            found[parts[0]] = parts[3][len("(stdout) "):].strip()
    return found


@pytest.mark.parametrize("become, who", [
    ([], "admin"),
    (["--become"], "root"),
    (["--become", "--become-user", "alice"], "alice"),
])
def test_the_inventory_connects_over_ssh_as_admin_and_becomes_with_sudo(become, who):
    answers = _adhoc("all:!localhost", "-m", "ansible.builtin.command", "-a", "id -un", *become)
    assert answers == {name: who for name in NODES}, answers


def test_the_connection_is_ssh_with_pipelining():
    result = subprocess.run([ANSIBLE] + inventories() + [NODES[0], "-m", "ansible.builtin.ping", "-vvv"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=playbook_env(), cwd=str(ROOT), check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "ESTABLISH SSH CONNECTION FOR USER: admin" in result.stdout, result.stdout[-3000:]
    # pipelining: the module goes through ssh's stdin, no file is put on the node
    assert "PUT " not in result.stdout, result.stdout[-3000:]
    assert "StrictHostKeyChecking=yes" in result.stdout


def _gateway():
    info = json.loads(podman("container", "inspect", PREFIX + GPU_NODES[0]))[0]
    return sorted(info["NetworkSettings"]["Networks"].values(), key=lambda n: n["IPAddress"])[0]["Gateway"]


def _free_port(address):
    sock = socket.socket()
    sock.bind((address, 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture(name="registry")
def fixture_registry(tmp_path):
    """A docker-registry on the node network's gateway holding test/tiny:1.0 (the stand-in test image)."""
    missing = [cmd for cmd in ("docker-registry", "skopeo") if shutil.which(cmd) is None]
    if missing:
        pytest.fail("this test needs %s on this machine (bash scripts/test.sh deps installs them)" % ", ".join(missing))
    gateway = _gateway()
    host = "%s:%d" % (gateway, _free_port(gateway))
    config = tmp_path / "registry.yml"
    config.write_text("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n" % (tmp_path / "storage", host))
    with open(tmp_path / "registry.log", "w") as log:
        proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 15
        while True:
            try:
                urllib.request.urlopen("http://%s/v2/" % host, timeout=1)
                break
            except OSError:
                assert time.time() < deadline, "docker-registry did not start on %s" % host
                time.sleep(0.2)
        layout = str(tmp_path / "layout")
        standin_image.build_layout(layout, "1.0", {"etc/os-release": b'PRETTY_NAME="gpucluster stand-in test image 1.0"\n'})
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--format", "v2s2", "oci:%s:1.0" % layout,
                        "docker://%s/test/tiny:1.0" % host], check=True)
        yield host
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(name="http_allowed")
def fixture_http_allowed():
    """ENROOT_ALLOW_HTTP in every GPU node's enroot.conf for the test; the file is put back as it was."""
    saved = {name: sh(name, "base64 -w0 %s" % ENROOT_CONF).stdout.strip() for name in GPU_NODES}
    for name in GPU_NODES:
        sh(name, "sed -i 's/^ENROOT_ALLOW_HTTP .*/ENROOT_ALLOW_HTTP yes/' %s && grep -qx 'ENROOT_ALLOW_HTTP yes' %s" % (ENROOT_CONF, ENROOT_CONF))
    try:
        yield
    finally:
        for name in GPU_NODES:
            sh(name, "printf %%s %s | base64 -d > %s" % (saved[name], ENROOT_CONF))
            for user in USERS:
                sh(name, "su - %s -c 'enroot remove -f pyxis_tiny' >/dev/null 2>&1 || true" % user, check=False)
            sh(name, "rm -rf %s" % STAGE_DIR)
            assert sh(name, "base64 -w0 %s" % ENROOT_CONF).stdout.strip() == saved[name]


def test_per_user_staging_becomes_each_user_through_sudo(tmp_path, registry, http_allowed):
    for name in GPU_NODES:
        # no ACL tools: becoming an unprivileged user must not rely on setfacl (pipelining needs none)
        assert node(name).run("command -v setfacl").rc != 0, name
    extra = {"stage_images": [{"name": "tiny", "uri": "docker://%s/test/tiny:1.0" % registry}],
             "stage_images_users": USERS, "stage_images_shared": False, "stage_images_dir": STAGE_DIR,
             "stage_images_nodes": "gpu_nodes", "stage_images_timeout": 300}
    args = ["-e", json.dumps(extra)]
    rc, out = run_playbook(ROOT / "playbooks" / "stage_images.yml", args, log=tmp_path / "stage-1.log")
    assert rc == 0, out[-4000:]
    counts = recap_of(out, [CONTROLLER] + GPU_NODES)
    for name in GPU_NODES:
        assert counts[name]["changed"] > 0 and counts[name]["failed"] == 0, counts
        image = node(name).file("%s/tiny.sqsh" % STAGE_DIR)
        assert image.exists and image.user == "root" and image.mode == 0o644, name
        for uid, user in enumerate(USERS, start=2001):
            # the user's own container, in the user's own ENROOT_DATA_PATH (enroot.conf: /tmp/enroot-data/user-$(id -u))
            listed = sh(name, "su - %s -c 'enroot list'" % user).stdout.split()
            assert "pyxis_tiny" in listed, (name, user, listed)
            rootfs = node(name).file("/tmp/enroot-data/user-%d/pyxis_tiny" % uid)
            assert rootfs.is_directory and rootfs.user == user, (name, user)
            assert "stand-in test image 1.0" in node(name).file("/tmp/enroot-data/user-%d/pyxis_tiny/etc/os-release" % uid).content_string
    rc, out = run_playbook(ROOT / "playbooks" / "stage_images.yml", args, log=tmp_path / "stage-2.log")
    assert rc == 0, out[-4000:]
    assert_no_change(out, [CONTROLLER] + GPU_NODES)
