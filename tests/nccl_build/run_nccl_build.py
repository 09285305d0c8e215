"""A real build of the pinned nccl-tests through the validate role's own build path (issue #47 item 2).

1. CUDA 13.0 and NCCL 2.27.7 from NVIDIA's PyPI wheels (``TOOLCHAIN``, each pinned by its sha256), unpacked into
   ``.build/nccl-build/toolchain-<hash>/{cuda,nccl}`` with the links a CUDA install has (``lib64``, ``libcudart.so``,
   ``libnccl.so``), kept by the hash of the pins. Why wheels: about 300 MB to download and 470 MB unpacked, against
   Debian 13's ``nvidia-cuda-toolkit`` (CUDA 12.4, about 2.7 GB installed) plus ``libnccl-dev``; the cu12 ``nvcc`` wheels
   carry no ``nvcc`` driver (only ``ptxas`` and libnvvm), CUDA 13's ``nvidia-cuda-nvcc`` does.
2. Three node containers from the simulated node image (``<repo>-node:trixie``, Debian 13; ``scripts/cluster.sh images``),
   the toolchain mounted read-only where a site installs CUDA and NCCL (``/usr/local/cuda``, ``/usr/local/nccl``, in
   ld.so.conf as NVIDIA's packages put them): two of one node type (H100, MPI build for sm_90) and one of another
   (A100, non-MPI build for sm_80). No GPU, no driver: no ``libcuda.so.1``.
3. ``ansible-playbook tests/nccl_build/build.yml``: the role's ``tasks/nccl_build.yml`` (``include_role tasks_from``)
   with the archive from the local mirror (``validate_nccl_build.source_local``; the upstream URL where there is none),
   twice: the second run must change nothing. Each node's build directory is a host directory kept by a hash of
   everything the build is made of (``.build/nccl-build/build-<hash>/``): a rerun with nothing changed finds the build
   there and the role's tasks skip it (cached), as on a node that built before.
4. What is on each node after the runs (binaries, their sha256 and libraries, object files, compilers), and
   ``all_reduce_perf`` run on a node of each type as the validation runs it (``sh -c`` + ``-J``, ``-b 8 -e 8G -f 2
   -g 8``): it fails there as on a node whose driver is missing. The outputs go to ``.build/nccl-build/outputs/``.

Writes one JSON report (``--json``) that tests/nccl_build/test_nccl_build.py reads; prints each step. Needs podman, the
node image, the repository's .venv (Ansible, pip) and the linked collection (``scripts/test.sh deps``); reaches PyPI
(or pip's cache), Debian's mirror (apt in the containers) and, without the local mirror, GitHub.

    .venv/bin/python tests/nccl_build/run_nccl_build.py --json /tmp/nccl-build.json
"""
import argparse
import glob
import hashlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "nccl_build")
BUILD = os.path.join(ROOT, ".build", "nccl-build")
PODMAN = os.path.join(ROOT, "scripts", "lib", "podman")   # podman with the project's containers.conf
VENV = os.path.join(ROOT, ".venv")
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
IMAGE = os.environ.get("GPUCLUSTER_SIM_IMAGE_REPO", "localhost/gpucluster-sim") + "-node:trixie"
LABEL = "io.gpucluster.sim=nccl-build"
NETWORK = "gpucluster-nccl-build"


def _role_file(relative):
    with open(os.path.join(ROOT, "roles", "validate", relative), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# the version the validate role pins, and its upstream URL (validate_nccl_build's defaults,
# plugins/module_utils/validation/_settings.py): the stage builds what the role would build, not a version of its own
_SETTINGS = runpy.run_path(os.path.join(ROOT, "plugins", "module_utils", "validation", "_settings.py"))
VERSION = _SETTINGS["STAGE_DEFAULTS"]["validate_nccl_build"]["version"]
TARBALL = "nccl-tests-%s.tar.gz" % VERSION
SOURCE_URL = _SETTINGS["NCCL_TESTS_URL"] % VERSION

# NVIDIA's wheels of CUDA 13.0 (the driver branch 580 runs it) and NCCL 2.27.7 for CUDA 13: (name, version, sha256).
TOOLCHAIN = (
    ("nvidia-cuda-nvcc", "13.0.88", "56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03"),
    ("nvidia-cuda-crt", "13.0.88", "2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"),
    ("nvidia-nvvm", "13.0.88", "c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0"),
    ("nvidia-cuda-runtime", "13.0.96", "7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548"),
    ("nvidia-cuda-cccl", "13.0.85", "e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649"),
    ("nvidia-nccl-cu13", "2.27.7", "b28a524abd8389b76a4a3f133c76a7aaa7005e47fcaa9d9603b90103927a3f93"),
)
# how the wheels are laid out into cuda/ and nccl/ (part of the toolchain's hash)
TOOLCHAIN_LAYOUT = "cu13->cuda, nccl->nccl, lib64->lib, libcudart.so->libcudart.so.13, libnccl.so->libnccl.so.2"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64")

CUDA = "/usr/local/cuda"
NCCL = "/usr/local/nccl"
BUILD_DIR = "/opt/nccl-tests-src"
BINARY = "%s/nccl-tests-%s/build/all_reduce_perf" % (BUILD_DIR, VERSION)
# The node types: two H100 nodes (one builds, the other gets its binaries), one A100 node (its own build, without MPI).
# One arch each keeps the build short; -j1 on each builder: the two builds run at once on this machine's 2 cores.
NODE_TYPES = {
    "h100": {"model": "NVIDIA H100 80GB HBM3", "hosts": ["gcnccl-h100-1", "gcnccl-h100-2"], "mpi": True,
             "make_args": ["CUDA_HOME=%s" % CUDA, "NCCL_HOME=%s" % NCCL, "MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi",
                           "NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90"]},
    "a100": {"model": "NVIDIA A100-SXM4-80GB", "hosts": ["gcnccl-a100-1"], "mpi": False,
             "make_args": ["CUDA_HOME=%s" % CUDA, "NCCL_HOME=%s" % NCCL, "NVCC_GENCODE=-gencode=arch=compute_80,code=sm_80"]},
}
MAKE_JOBS = 1
# The validation's own run of a node (validate_nccl_settings.args, -g <its GPUs>) and environment (validate_nccl_settings.env)
RUN_ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"]
RUN_ENV = {"NCCL_DEBUG": "INFO"}
RUN_ON = ["gcnccl-h100-2", "gcnccl-a100-1"]
# What the build is made of besides the toolchain, the archive and the image: a change to any rebuilds
BUILD_INPUTS = ("roles/validate/tasks/nccl_build.yml", "roles/validate/defaults/main.yml", "roles/validate/vars/main.yml",
                "plugins/filter/nccl_build.py", "plugins/module_utils/validation/_nccl_build.py",
                "plugins/module_utils/validation/_validation_nccl.py", "tests/nccl_build/build.yml")


def log(text):
    sys.stderr.write("[nccl-build] %s\n" % text)
    sys.stderr.flush()


def run(cmd, check=True, **kwargs):
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.STDOUT)
    result = subprocess.run(cmd, universal_newlines=True, check=False, **kwargs)
    if check and result.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s" % (" ".join(cmd[:6]), result.returncode, (result.stdout or "")[-4000:]))
    return result


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_hash(parts):
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]


def missing_prerequisites():
    """What the build needs and does not find (empty: it can run)."""
    missing = []
    if not shutil.which(os.environ.get("GPUCLUSTER_SIM_PODMAN_BIN") or "podman"):
        missing.append("podman (scripts/cluster.sh deps)")
    elif run([PODMAN, "image", "exists", IMAGE], check=False).returncode != 0:
        missing.append("the node image %s (scripts/cluster.sh images)" % IMAGE)
    for path, what in ((os.path.join(VENV, "bin", "ansible-playbook"), "the .venv (scripts/test.sh deps)"),
                       (os.path.join(COLLECTIONS, "ansible_collections", "gpucluster", "bringup"), "the linked collection (scripts/test.sh deps)")):
        if not os.path.exists(path):
            missing.append(what)
    return missing


# --- 1. the toolchain ---------------------------------------------------------------------------------------------

def toolchain():
    """(directory with cuda/ and nccl/, seconds it took, whether it was there already)."""
    key = content_hash(["%s==%s sha256:%s" % pin for pin in TOOLCHAIN] + [TOOLCHAIN_LAYOUT])
    final = os.path.join(BUILD, "toolchain-" + key)
    if os.path.isdir(os.path.join(final, "cuda", "bin")):
        return final, 0.0, True
    start = time.time()
    work = final + ".partial"
    shutil.rmtree(work, ignore_errors=True)
    wheels = os.path.join(work, "wheels")
    os.makedirs(wheels)
    requirements = os.path.join(work, "requirements.txt")
    with open(requirements, "w", encoding="utf-8") as handle:
        for name, version, sha in TOOLCHAIN:
            handle.write("%s==%s --hash=sha256:%s\n" % (name, version, sha))
    cmd = [os.path.join(VENV, "bin", "pip"), "download", "-q", "--no-deps", "--only-binary=:all:", "--require-hashes",
           "--python-version", "3.11", "--implementation", "py", "--abi", "none", "-d", wheels, "-r", requirements]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    log("downloading the CUDA 13.0 and NCCL wheels (pinned by sha256)")
    run(cmd)
    tree = os.path.join(work, "tree")
    for wheel in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                path = archive.extract(info, tree)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))
    os.rename(os.path.join(tree, "nvidia", "cu13"), os.path.join(work, "cuda"))
    os.rename(os.path.join(tree, "nvidia", "nccl"), os.path.join(work, "nccl"))
    # what a CUDA / NCCL install has and the wheels do not: nvcc.profile links from lib64, nccl-tests links -lcudart -lnccl
    os.symlink("lib", os.path.join(work, "cuda", "lib64"))
    os.symlink("libcudart.so.13", os.path.join(work, "cuda", "lib", "libcudart.so"))
    os.symlink("libnccl.so.2", os.path.join(work, "nccl", "lib", "libnccl.so"))
    with open(os.path.join(work, "wheels.txt"), "w", encoding="utf-8") as handle:
        for wheel in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
            handle.write("%s %d %s\n" % (sha256_file(wheel), os.path.getsize(wheel), os.path.basename(wheel)))
    shutil.rmtree(wheels)
    shutil.rmtree(tree)
    os.remove(requirements)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(work, final)
    return final, time.time() - start, False


# --- 2. the sources -----------------------------------------------------------------------------------------------

def role_checksum():
    """The sha256 the role checks the pinned archive against (roles/validate/vars/main.yml)."""
    found = (_role_file(os.path.join("vars", "main.yml")).get("_validate_nccl_tests_checksums") or {}).get(VERSION)
    if not found:
        raise RuntimeError("roles/validate/vars/main.yml has no checksum for nccl-tests %s" % VERSION)
    return found.split("sha256:", 1)[-1]


def sources():
    """(path of the release archive, where it came from): the local mirror (scripts/lib/vendor.sh), else the upstream URL."""
    found = run(["bash", "-c", '. scripts/lib/common.sh && . scripts/lib/vendor.sh && vendor_file "$1"', "vendor", TARBALL], cwd=ROOT)
    path = found.stdout.strip().splitlines()[-1] if found.stdout.strip() else ""
    origin = "local mirror"
    if not path:
        path = os.path.join(BUILD, TARBALL)
        origin = SOURCE_URL
        if not os.path.isfile(path) or sha256_file(path) != role_checksum():
            log("no local mirror: downloading %s" % SOURCE_URL)
            run(["curl", "-fsSL", "--retry", "3", "-o", path + ".part", SOURCE_URL])
            os.rename(path + ".part", path)
    if sha256_file(path) != role_checksum():
        raise RuntimeError("%s has sha256 %s, the role expects %s" % (path, sha256_file(path), role_checksum()))
    return path, origin


# --- 3. the nodes and the role ------------------------------------------------------------------------------------

def podman(*args, **kwargs):
    return run([PODMAN] + list(args), **kwargs)


def remove_containers():
    ours = podman("ps", "-a", "-q", "--filter", "label=" + LABEL, check=False).stdout.split()
    if ours:
        podman("rm", "-f", "-t", "0", *ours, check=False)
    podman("network", "rm", "-f", NETWORK, check=False)


def start_nodes(tools, cache):
    remove_containers()
    # a network of its own, as scripts/cluster.sh makes: its DNS (aardvark-dns) answers through the host's resolver,
    # where podman's default network hands the containers a resolv.conf they cannot always reach (apt then fails)
    podman("network", "create", "--label", LABEL, NETWORK)
    for spec in NODE_TYPES.values():
        for host in spec["hosts"]:
            node_dir = os.path.join(cache, "nodes", host)
            os.makedirs(node_dir, exist_ok=True)
            podman("run", "-d", "--name", host, "--hostname", host, "--label", LABEL, "--network", NETWORK,
                   "-v", "%s:%s:ro" % (os.path.join(tools, "cuda"), CUDA), "-v", "%s:%s:ro" % (os.path.join(tools, "nccl"), NCCL),
                   "-v", "%s:%s" % (node_dir, BUILD_DIR), "--entrypoint", "sleep", IMAGE, "infinity")
            # as NVIDIA's CUDA and NCCL packages do: their libraries in the loader's path; apt lists as a node has them.
            # A node of an MPI type that does not build has the Open MPI runtime the validation's MPI stage installs
            # (validate_mpi_settings.packages) before the NCCL stage; the building node gets it from the build's own packages.
            runtime = " && apt-get install -y -qq openmpi-bin >/dev/null" if spec["mpi"] and host != spec["hosts"][0] else ""
            podman("exec", "-e", "DEBIAN_FRONTEND=noninteractive", host, "sh", "-c",
                   "printf '%s/lib64\\n%s/lib\\n' >/etc/ld.so.conf.d/cuda-nccl.conf && ldconfig && apt-get update -qq%s"
                   % (CUDA, NCCL, runtime))


def inventory(path, tarball, fetch_dir):
    groups = {}
    # (each node type's whole validate_nccl_build: a group's dict replaces, not merges, a parent group's)
    build = {"enabled": True, "version": VERSION, "source_local": tarball, "build_dir": BUILD_DIR, "make_jobs": MAKE_JOBS, "fetch_dir": fetch_dir}
    for name, spec in NODE_TYPES.items():
        groups[name] = {"hosts": dict((host, None) for host in spec["hosts"]),
                        "vars": {"nccl_build_model": spec["model"],
                                 "validate_nccl_build": dict(build, mpi=spec["mpi"], make_args=spec["make_args"])}}
    hosts = dict((host, None) for spec in NODE_TYPES.values() for host in spec["hosts"])
    doc = {"all": {
        "vars": {"ansible_connection": "podman_pipelined", "ansible_podman_executable": PODMAN, "ansible_user": "root",
                 "ansible_python_interpreter": "/usr/bin/python3"},
        "children": dict([("slurm_compute", {"hosts": hosts}), ("gpu_nodes", {"hosts": hosts})] + sorted(groups.items()))}}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1, sort_keys=True)


def playbook(inv, log_path):
    """(rc, {task name: {host: changed|ok|skipped|failed}}, recap {host: stats}, seconds) of one run of build.yml."""
    env = dict(os.environ, ANSIBLE_CONNECTION_PLUGINS=os.path.join(ROOT, "scripts", "lib", "connection_plugins"),
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORKS="5", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_HOST_KEY_CHECKING="0",
               PATH=os.path.join(VENV, "bin") + os.pathsep + os.environ.get("PATH", ""))
    start = time.time()
    result = run([os.path.join(VENV, "bin", "ansible-playbook"), "-i", inv, os.path.join(HERE, "build.yml")], env=env, check=False,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    seconds = time.time() - start
    with open(log_path, "w", encoding="utf-8") as handle:
        handle.write(result.stdout + "\n--- stderr\n" + result.stderr)
    try:
        doc = json.loads(result.stdout[result.stdout.index("{"):])
    except ValueError:
        return result.returncode, {}, {}, seconds
    tasks = {}
    for play in doc.get("plays", []):
        for task in play.get("tasks", []):
            # (a task of a role is named "<role> : <task>")
            states = tasks.setdefault(task["task"]["name"].split(" : ", 1)[-1], {})
            for host, res in task.get("hosts", {}).items():
                states[host] = ("failed" if res.get("failed") or res.get("unreachable") else "skipped" if res.get("skipped")
                                else "changed" if res.get("changed") else "ok")
    return result.returncode, tasks, doc.get("stats", {}), seconds


# --- 4. what is on the nodes, and all_reduce_perf on them -----------------------------------------------------------

INSPECT = r"""
import glob, hashlib, json, os, subprocess
tree = '%(tree)s'
out = {'binaries': {}, 'objects': len(glob.glob(tree + '/build/*.o')), 'sources': os.path.exists(tree + '/src/common.cu'),
       'archive': os.path.exists('%(build_dir)s/%(tarball)s'), 'packages': {}}
for path in sorted(glob.glob(tree + '/build/*_perf')):
    out['binaries'][os.path.basename(path)] = hashlib.sha256(open(path, 'rb').read()).hexdigest()
binary = tree + '/build/all_reduce_perf'
if os.path.exists(binary):
    out['ldd'] = subprocess.run(['ldd', binary], stdout=subprocess.PIPE, universal_newlines=True).stdout
for name in ('make', 'g++', 'libopenmpi-dev'):
    status = subprocess.run(['dpkg-query', '-W', '-f=${Status}', name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            universal_newlines=True).stdout
    out['packages'][name] = status.endswith('installed')
out['libcuda'] = subprocess.run(['sh', '-c', 'ldconfig -p | grep -c libcuda.so.1'], stdout=subprocess.PIPE,
                                universal_newlines=True).stdout.strip() != '0'
print(json.dumps(out))
"""


def inspect(host):
    script = INSPECT % {"tree": "%s/nccl-tests-%s" % (BUILD_DIR, VERSION), "build_dir": BUILD_DIR, "tarball": TARBALL}
    result = podman("exec", "-i", host, "python3", "-", input=script, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return json.loads(result.stdout)


def json_script():
    sys.path.insert(0, COLLECTIONS)
    from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._validation_nccl import JSON_SCRIPT
    return JSON_SCRIPT


def run_binary(host, outputs):
    """all_reduce_perf on ``host`` as the validation's per-node run starts it (``sh -c JSON_SCRIPT``, its arguments and
    environment), without srun: these nodes run no Slurm."""
    argv = ["sh", "-c", json_script(), BINARY] + RUN_ARGS
    env = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"] + [
        "%s=%s" % item for item in sorted(RUN_ENV.items())]
    start = time.time()
    result = podman("exec", host, *(env + argv), check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for suffix, text in ((".stdout", result.stdout), (".stderr", result.stderr)):
        with open(os.path.join(outputs, host + suffix), "w", encoding="utf-8") as handle:
            handle.write(text)
    return {"host": host, "argv": argv, "env": RUN_ENV, "rc": result.returncode, "stdout": result.stdout, "stderr": result.stderr,
            "seconds": round(time.time() - start, 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--keep", action="store_true", help="leave the containers running")
    args = parser.parse_args(argv)
    missing = missing_prerequisites()
    if missing:
        log("cannot run: needs %s" % "; ".join(missing))
        return 2

    def _terminate(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, _terminate)

    os.makedirs(BUILD, exist_ok=True)
    started = time.time()
    report = {"version": VERSION, "image": IMAGE, "node_types": NODE_TYPES, "make_jobs": MAKE_JOBS}
    try:
        tools, seconds, cached = toolchain()
        report["toolchain"] = {"dir": tools, "seconds": round(seconds, 1), "cached": cached,
                               "wheels": open(os.path.join(tools, "wheels.txt"), encoding="utf-8").read().splitlines()}
        log("toolchain %s (%s, %.0f s)" % (tools, "cached" if cached else "downloaded and unpacked", seconds))
        tarball, origin = sources()
        report["source"] = {"path": tarball, "origin": origin, "sha256": sha256_file(tarball)}
        image_id = podman("image", "inspect", "--format", "{{.Id}}", IMAGE).stdout.strip()
        inputs = [os.path.basename(tools), report["source"]["sha256"], image_id, json.dumps(NODE_TYPES, sort_keys=True),
                  str(MAKE_JOBS), BUILD_DIR]
        for name in BUILD_INPUTS:
            inputs.append(sha256_file(os.path.join(ROOT, name)))
        cache = os.path.join(BUILD, "build-" + content_hash(inputs))
        cached_build = os.path.isfile(os.path.join(cache, "complete"))
        if not cached_build:
            shutil.rmtree(cache, ignore_errors=True)
        for old in glob.glob(os.path.join(BUILD, "build-*")):
            if old != cache:
                shutil.rmtree(old, ignore_errors=True)
        fetch_dir = os.path.join(cache, "fetch")
        os.makedirs(fetch_dir, exist_ok=True)
        report["build_cache"] = {"dir": cache, "cached": cached_build}
        log("build directory %s (%s)" % (cache, "cached: the role finds the build" if cached_build else "cold: the role builds"))
        start = time.time()
        start_nodes(tools, cache)
        report["nodes_seconds"] = round(time.time() - start, 1)
        inv = os.path.join(BUILD, "inventory.json")
        inventory(inv, tarball, fetch_dir)
        report["runs"] = []
        for number in (1, 2):
            log("ansible-playbook tests/nccl_build/build.yml, run %d" % number)
            rc, tasks, stats, seconds = playbook(inv, os.path.join(BUILD, "playbook-%d.json" % number))
            report["runs"].append({"rc": rc, "tasks": tasks, "stats": stats, "seconds": round(seconds, 1),
                                   "log": os.path.join(BUILD, "playbook-%d.json" % number)})
            log("run %d: rc %d in %.0f s" % (number, rc, seconds))
            if rc != 0:
                break
        if all(r["rc"] == 0 for r in report["runs"]):
            with open(os.path.join(cache, "complete"), "w", encoding="utf-8") as handle:
                handle.write("built %s\n" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        report["nodes"] = dict((host, inspect(host)) for spec in NODE_TYPES.values() for host in spec["hosts"])
        outputs = os.path.join(BUILD, "outputs")
        shutil.rmtree(outputs, ignore_errors=True)
        os.makedirs(outputs)
        report["binary_runs"] = [run_binary(host, outputs) for host in RUN_ON if report["nodes"][host]["binaries"]]
    finally:
        if not args.keep:
            remove_containers()
    report["seconds"] = round(time.time() - started, 1)
    log("done in %.0f s" % report["seconds"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
    return 0 if all(r["rc"] == 0 for r in report["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
