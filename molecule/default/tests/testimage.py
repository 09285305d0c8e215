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
import base64
import ctypes
import ctypes.util
import glob
import gzip
import hashlib
import io
import json
import os
import pathlib
import shutil
import socket
import ssl
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


def layers(release=b"layer=2\n", whiteout=True):
    """The two layers (uncompressed tars) of the image; ``release``: the content layer 2 gives /etc/test-release;
    ``whiteout``: layer 2 deletes /etc/removed-by-layer-2 (an unprivileged enroot converts whiteouts only with the
    capabilities of the enroot+caps package)."""
    first = [(d, "dir", None, 0o1777 if d in ("tmp", "var/tmp") else 0o755) for d in DIRECTORIES]
    first += [("bin/busybox", "file", busybox(), 0o755)]
    first += [("bin/%s" % applet, "symlink", "busybox", 0o777) for applet in APPLETS]
    first += [("etc/test-release", "file", b"layer=1\n", 0o644), ("etc/removed-by-layer-2", "file", b"layer=1\n", 0o644)]
    second = [("etc/test-release", "file", release, 0o644)]
    second += [("etc/.wh.removed-by-layer-2", "file", b"", 0o644)] if whiteout else []
    second += [("opt/test", "dir", None, 0o755), ("opt/test/hello", "file", b"hello from layer 2\n", 0o644)]
    return [_tar(first), _tar(second)]


def _blob(root, data):
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def build_layout(root, tag, release=b"layer=2\n", extra=None, whiteout=True):
    """An OCI image layout at ``root`` holding the two-layer image as ``tag`` (several tags may share one layout).

    ``release``: /etc/test-release of layer 2 (another value gives another image); ``extra``: a third layer, a list
    of (path, kind, data, mode) entries as :func:`_tar` takes them."""
    root = pathlib.Path(root)
    (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    tars = layers(release, whiteout) + ([_tar(extra)] if extra else [])
    blobs = [dict(_blob(root, gzip.compress(layer, mtime=0)), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")
             for layer in tars]
    config = json.dumps({
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Env": ENV, "Cmd": ["/bin/sh"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest() for layer in tars]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "gpucluster.bringup test image, layer %d" % n}
                    for n in range(1, len(tars) + 1)],
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(_blob(root, config), mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": blobs,
    }, sort_keys=True).encode()
    described = dict(_blob(root, manifest), mediaType="application/vnd.oci.image.manifest.v1+json",
                     annotations={"org.opencontainers.image.ref.name": tag})
    index = root / "index.json"
    others = json.loads(index.read_text())["manifests"] if index.exists() else []
    others = [m for m in others if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != tag]
    index.write_text(json.dumps({"schemaVersion": 2, "manifests": others + [described]}))
    (root / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))


def htpasswd_line(user, password):
    """One line of an htpasswd file with a bcrypt hash (what docker-registry's htpasswd auth reads), from the
    system's libcrypt (no htpasswd program or Python bcrypt needed)."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt"))
    lib.crypt.restype = ctypes.c_char_p
    alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    salt = "".join(alphabet[b % 64] for b in os.urandom(22))
    hashed = lib.crypt(password.encode(), ("$2b$05$" + salt).encode())
    if not hashed or not hashed.startswith(b"$2b$"):
        raise AssertionError("libcrypt made no bcrypt hash (%r)" % hashed)
    return "%s:%s\n" % (user, hashed.decode())


def make_ca(workdir, address, name="gpucluster test registry CA"):
    """A CA and a server certificate for ``address`` (an IP address or a host name) signed by it, with openssl;
    returns (ca.pem, server.pem, server.key) under ``workdir``."""
    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    ca, ca_key = work / "ca.pem", work / "ca.key"
    cert, key, csr, ext = work / "server.pem", work / "server.key", work / "server.csr", work / "server.ext"
    san = ("IP:%s" if address.replace(".", "").isdigit() or ":" in address else "DNS:%s") % address
    ext.write_text("subjectAltName=%s\nbasicConstraints=CA:FALSE\n" % san)
    quiet = dict(check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca),
                    "-days", "30", "-subj", "/CN=%s" % name], **quiet)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                    "-subj", "/CN=%s" % address], **quiet)
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
                    "-out", str(cert), "-days", "30", "-extfile", str(ext)], **quiet)
    return str(ca), str(cert), str(key)


def free_port(address):
    sock = socket.socket()
    sock.bind((address, 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class Registry:
    """Debian's docker-registry serving ``workdir/storage`` on ``address`` (a free port), plain HTTP, or TLS with
    ``tls=(cert, key)`` (HTTP/2 offered unless ``http2=False``), with htpasswd authentication when ``htpasswd`` (a file) is given, or with token authentication
    sending clients to the token server ``token_realm`` (a URL; docker-registry's "silly" auth) when that is given."""

    def __init__(self, workdir, address, tls=None, htpasswd=None, token_realm=None, http2=True):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = "%s:%d" % (address, free_port(address))
        self.tls = tls
        config = ["version: 0.1", "storage:", "  filesystem:", "    rootdirectory: %s" % (self.workdir / "storage"),
                  "http:", "  addr: %s" % self.host]
        if tls:
            config += ["  tls:", "    certificate: %s" % tls[0], "    key: %s" % tls[1]]
            if not http2:
                # enroot 4.1.2 takes Basic credentials from curl's "Authorization: Basic" trace line, which curl writes in
                # lower case over HTTP/2: with htpasswd over TLS it needs HTTP/1.1 (README of the enroot role)
                config += ["  http2:", "    disabled: true"]
        if htpasswd:
            config += ["auth:", "  htpasswd:", "    realm: gpucluster-test", "    path: %s" % htpasswd]
        elif token_realm:
            config += ["auth:", "  silly:", "    realm: %s" % token_realm, "    service: gpucluster-test"]
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

    def push(self, layout, tag, name, credentials=None, fmt="v2s2", as_tag=None):
        """skopeo copy of ``layout:tag`` to ``name:as_tag`` (default ``tag``) here as Docker v2 schema 2 (``fmt``
        oci: an OCI manifest, which enroot 4.1 cannot pull from this registry); the image's reference."""
        argv = ["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--format", fmt]
        if credentials:
            argv += ["--dest-creds", "%s:%s" % credentials]
        reference = "%s/%s:%s" % (self.host, name, as_tag or tag)
        subprocess.run(argv + ["oci:%s:%s" % (layout, tag), "docker://" + reference], check=True)
        return reference

    def digest(self, name, tag, ca=None, credentials=None):
        """The Docker-Content-Digest of ``name:tag``'s v2 schema 2 manifest, asked for independently of enroot (``ca``:
        the CA file of a TLS registry, ``credentials``: (user, password) of one with htpasswd)."""
        headers = {"Accept": "application/vnd.docker.distribution.manifest.v2+json"}
        if credentials:
            headers["Authorization"] = "Basic " + base64.b64encode(("%s:%s" % credentials).encode()).decode()
        url = "%s://%s/v2/%s/manifests/%s" % ("https" if self.tls else "http", self.host, name, tag)
        context = ssl.create_default_context(cafile=ca) if self.tls else None
        request = urllib.request.Request(url, method="HEAD", headers=headers)
        return urllib.request.urlopen(request, timeout=10, context=context).headers["Docker-Content-Digest"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
