"""Issue 45: a private registry behind TLS with a site CA and htpasswd users, as a user's container job meets it, with
the REAL pyxis 0.24.0 and enroot 4.1.2 (run on the simulated cluster; the slurm stage without the TaskProlog first, as test_containers.py explains).

The registry is Debian's docker-registry on the node network's gateway, serving over TLS with a certificate signed by a
CA made for the test (testimage.make_ca) and htpasswd users; HTTP/2 is off on it (enroot 4.1.2 cannot send Basic
credentials over HTTP/2: roles/enroot/README.md, "Registries with a site CA"). The nodes trust the CA through the
enroot role's enroot_registry_ca_certificates (the containers stage with that variable: /etc/enroot/registry-ca.pem and
SSL_CERT_FILE in enroot.conf); the stage runs again without it afterwards.

* alice has her credentials in her own $ENROOT_CONFIG_PATH/.credentials (netrc format) on the compute node: her
  ``srun --container-image`` from the private registry runs the image;
* bob has none: his job fails, and he is told the registry refused him (pyxis prints enroot's error);
* a job of alice's without the CA on the nodes fails on the certificate.

Run it (on the simulated cluster, after converge):

    .venv/bin/pytest -q -p no:cacheprovider molecule/default/tests/test_private_registry.py
    # or with the scenario: scripts/test.sh acceptance (its pytest run collects molecule/default/tests)
"""
import json
import shlex

import pytest

from simcluster import COMPUTE, GPU_NODES, PREFIX, SIMULATED_VARS, SITE, ctl, podman, run_playbook, sh
from test_containers import fixture_no_task_prolog  # noqa: F401  (container jobs need the TaskProlog out of the way)
import testimage

pytestmark = pytest.mark.acceptance

USERS = {"alice": ("alice", "alice-registry-pass")}
NODE = GPU_NODES[0]


def _gateway():
    info = json.loads(podman("container", "inspect", PREFIX + NODE))[0]
    return sorted(info["NetworkSettings"]["Networks"].values(), key=lambda n: n["IPAddress"])[0]["Gateway"]


def _containers_stage(extra, log):
    rc, out = run_playbook(SITE, ["--tags", "containers", "-e", json.dumps(extra)], log=log)
    assert rc == 0, out[-6000:]


def _credentials(user, text):
    """``text`` as ``user``'s own $ENROOT_CONFIG_PATH/.credentials on every compute node (mode 0600, hers)."""
    for name in COMPUTE:
        sh(name, "runuser -u %s -- sh -c %s" % (user, shlex.quote(
            'umask 077; mkdir -p "$HOME/.config/enroot" && printf %%s %s > "$HOME/.config/enroot/.credentials"' % shlex.quote(text))))


@pytest.fixture(name="private_image", scope="module")
def fixture_private_image(tmp_path_factory, no_task_prolog):  # pylint: disable=unused-argument
    """The image in the TLS+htpasswd registry; the nodes trusting its CA through the role; alice's credentials."""
    work = tmp_path_factory.mktemp("private-registry")
    gateway = _gateway()
    ca, cert, key = testimage.make_ca(work / "pki", gateway)
    (work / "htpasswd").write_text(testimage.htpasswd_line(*USERS["alice"]))
    layout = work / "layout"
    testimage.build_layout(layout, "1.0")
    registry = testimage.Registry(work / "registry", gateway, tls=(cert, key), htpasswd=str(work / "htpasswd"), http2=False)
    logs = tmp_path_factory.mktemp("containers-stage")
    own = SIMULATED_VARS.get("enroot_registry_ca_certificates", "")
    try:
        reference = registry.push(layout, "1.0", "private/busybox", credentials=USERS["alice"])
        with open(ca) as handle:
            _containers_stage({"enroot_registry_ca_certificates": handle.read()}, logs / "with-ca.log")
        for name in COMPUTE:
            assert sh(name, "grep -x 'SSL_CERT_FILE /etc/enroot/registry-ca.pem' /etc/enroot/enroot.conf").rc == 0
        _credentials("alice", "machine %s login %s password %s\n" % ((gateway,) + USERS["alice"]))
        yield reference, logs, ca
    finally:
        for name in COMPUTE:
            for user in ("alice", "bob"):
                sh(name, "runuser -u %s -- sh -c 'rm -f \"$HOME/.config/enroot/.credentials\"'" % user, check=False)
        _containers_stage({"enroot_registry_ca_certificates": own}, logs / "restored.log")
        registry.stop()


def _srun(user, image, command, check=True):
    return ctl("cd /tmp && runuser -u %s -- srun -N1 -w %s --container-image=%s sh -c %s"
               % (user, NODE, image, shlex.quote(command)), check=check)


def test_alice_runs_the_private_image_with_her_credentials(private_image):
    reference = private_image[0]
    out = _srun("alice", reference, "cat /etc/test-release; id -un 2>/dev/null || id -u")
    assert out.stdout.splitlines()[0] == "layer=2", out.stdout + out.stderr
    assert "pyxis: imported docker image: %s" % reference in out.stderr, out.stderr


def test_alice_docker_uri_with_her_user_name(private_image):
    reference = private_image[0]
    host, path = reference.split("/", 1)
    out = _srun("alice", "docker://alice@%s#%s" % (host, path), "cat /etc/test-release")
    assert out.stdout.strip() == "layer=2", out.stdout + out.stderr


def test_bob_without_credentials_gets_a_clear_error(private_image):
    reference = private_image[0]
    out = _srun("bob", reference, "true", check=False)
    assert out.rc != 0, out.stdout
    # pyxis prints enroot's log: enroot asked the registry anonymously and was refused
    assert "Authenticating with user: <anonymous>" in out.stderr, out.stderr
    assert "pyxis: failed to import docker image" in out.stderr, out.stderr
    # nothing of alice's leaks to bob: her credentials file is hers alone
    assert sh(NODE, "runuser -u bob -- cat ~alice/.config/enroot/.credentials", check=False).rc != 0


def test_without_the_site_ca_the_job_fails_on_the_certificate(private_image):
    reference, logs, ca = private_image
    _containers_stage({"enroot_registry_ca_certificates": ""}, logs / "without-ca.log")
    try:
        for name in COMPUTE:
            assert sh(name, "grep -q '^SSL_CERT_FILE' /etc/enroot/enroot.conf", check=False).rc != 0
        out = _srun("alice", reference, "true", check=False)
        assert out.rc != 0, out.stdout
        assert "SSL certificate problem" in out.stderr, out.stderr
    finally:
        with open(ca) as handle:
            _containers_stage({"enroot_registry_ca_certificates": handle.read()}, logs / "with-ca-again.log")
