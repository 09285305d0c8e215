"""A small real container image for the container jobs on the simulated cluster, built offline, and the registry
that serves it.

The image is Debian's statically linked BusyBox (package busybox-static, downloaded once with ``apt-get download``
into .build/test-image, nothing installed on this machine) in two layers, as a registry would hold an image built
by a Dockerfile:

* layer 1: /bin/busybox with its applets as symbolic links (sh, cat, id, ...), the directories a root filesystem
  has, /etc/test-release (``layer=1``) and /etc/removed-by-layer-2;
* layer 2: /etc/test-release replaced (``layer=2``), /etc/removed-by-layer-2 deleted by an OCI whiteout
  (``etc/.wh.removed-by-layer-2``), /opt/test/hello.

Its config sets PATH and GPUCLUSTER_TEST_IMAGE. An importer that applies the layers in the wrong order or ignores
whiteouts gives a container that shows it. It is pushed with skopeo as Docker v2 schema 2 (enroot 4.1 cannot pull
OCI manifests from Debian's docker-registry, Distribution 2.8) into a real docker-registry started on the node
network's gateway.
"""
import glob
import gzip
import hashlib
import io
import json
import os
import pathlib
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[3]
CACHE = ROOT / ".build" / "test-image"
APPLETS = ("sh", "cat", "id", "echo", "ls", "hostname", "sleep", "env", "true", "false", "test", "touch", "mkdir",
           "grep", "printf", "pwd", "uname", "wc", "rm", "stat")
DIRECTORIES = ("bin", "dev", "etc", "home", "opt", "proc", "root", "run", "sys", "tmp", "usr", "usr/bin", "var", "var/tmp")
ENV = ["PATH=/usr/bin:/bin", "GPUCLUSTER_TEST_IMAGE=busybox-2-layers"]


def busybox():
    """The bytes of Debian's static /bin/busybox (the busybox-static package, fetched once into .build/test-image)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    debs = sorted(glob.glob(str(CACHE / "busybox-static_*.deb")))
    if not debs:
        subprocess.run(["apt-get", "download", "busybox-static"], cwd=str(CACHE), check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        debs = sorted(glob.glob(str(CACHE / "busybox-static_*.deb")))
    unpacked = CACHE / "unpacked"
    if not (unpacked / "bin" / "busybox").exists():
        shutil.rmtree(str(unpacked), ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", debs[-1], str(unpacked)], check=True)
    return (unpacked / "bin" / "busybox").read_bytes()


def _tar(entries):
    """A tar (bytes) of ``entries``: (path, kind, data, mode), kind file, dir or symlink (data is the target)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, kind, data, mode in entries:
            info = tarfile.TarInfo(path)
            info.mtime = 0
            info.mode = mode
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def layers():
    """The two layers (uncompressed tars) of the image."""
    first = [(d, "dir", None, 0o1777 if d in ("tmp", "var/tmp") else 0o755) for d in DIRECTORIES]
    first += [("bin/busybox", "file", busybox(), 0o755)]
    first += [("bin/%s" % applet, "symlink", "busybox", 0o777) for applet in APPLETS]
    first += [("etc/test-release", "file", b"layer=1\n", 0o644), ("etc/removed-by-layer-2", "file", b"layer=1\n", 0o644)]
    second = [("etc/test-release", "file", b"layer=2\n", 0o644), ("etc/.wh.removed-by-layer-2", "file", b"", 0o644),
              ("opt/test", "dir", None, 0o755), ("opt/test/hello", "file", b"hello from layer 2\n", 0o644)]
    return [_tar(first), _tar(second)]


def _blob(root, data):
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def build_layout(root, tag):
    """An OCI image layout at ``root`` holding the two-layer image as ``tag``."""
    root = pathlib.Path(root)
    (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    tars = layers()
    blobs = [dict(_blob(root, gzip.compress(layer, mtime=0)), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")
             for layer in tars]
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Env": ENV, "Cmd": ["/bin/sh"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest() for layer in tars]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "gpucluster.bringup test image, layer %d" % n}
                    for n in (1, 2)],
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(_blob(root, config), mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": blobs,
    }, sort_keys=True).encode()
    described = dict(_blob(root, manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
                     annotations={"org.opencontainers.image.ref.name": tag})
    (root / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [described]}))
    (root / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))


def free_port(address):
    sock = socket.socket()
    sock.bind((address, 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Registry:
    """Debian's docker-registry serving ``workdir/storage`` on ``address`` (a free port), plain HTTP, or TLS with
    ``tls=(cert, key)``, with htpasswd authentication when ``htpasswd`` (a file) is given."""

    def __init__(self, workdir, address, tls=None, htpasswd=None):
        self.workdir = pathlib.Path(workdir)
        self.host = "%s:%d" % (address, free_port(address))
        self.tls = tls
        config = ["version: 0.1", "storage:", "  filesystem:", "    rootdirectory: %s" % (self.workdir / "storage"),
                  "http:", "  addr: %s" % self.host]
        if tls:
            config += ["  tls:", "    certificate: %s" % tls[0], "    key: %s" % tls[1]]
        if htpasswd:
            config += ["auth:", "  htpasswd:", "    realm: gpucluster-test", "    path: %s" % htpasswd]
        (self.workdir / "registry.yml").write_text("\n".join(config) + "\n")
        self.log = self.workdir / "registry.log"
        with open(str(self.log), "w") as log:
            self.proc = subprocess.Popen(["docker-registry", "serve", str(self.workdir / "registry.yml")],
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while True:
            try:
                urllib.request.urlopen("http://%s/v2/" % self.host, timeout=1)
                break
            except urllib.error.HTTPError:
                break  # 401 (authentication) or 400 (TLS spoken plainly): it answers
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    raise AssertionError("docker-registry did not start on %s:\n%s" % (self.host, self.log.read_text()))
                time.sleep(0.2)

    def push(self, layout, tag, name, credentials=None):
        """skopeo copy of ``layout:tag`` to ``name:tag`` here as Docker v2 schema 2; the image's reference."""
        argv = ["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--format", "v2s2"]
        if credentials:
            argv += ["--dest-creds", "%s:%s" % credentials]
        reference = "%s/%s:%s" % (self.host, name, tag)
        subprocess.run(argv + ["oci:%s:%s" % (layout, tag), "docker://" + reference], check=True)
        return reference

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
