"""Slurm's own NVML plugin as an oracle for ``gpucluster.bringup.slurm_gres_facts``.

Issue #18 item 3.  In ONE throwaway container from the simulated cluster's
node image this installs Debian 12's real ``slurmd`` (22.05.8) and Slurm's
NVML plugin (``gpu_nvml.so`` from the contrib package
``slurm-wlm-nvml-plugin``, extracted), the simulated ``libnvidia-ml.so.1``
(nvml_sim/libnvml) and the REAL nvidia-ml-py binding; then, for every
simulator preset, it

1. makes the node: ``nvmlsim create --preset P --fit-cpus`` (the preset's
   NUMA nodes spread over the CPUs of this machine, so that slurmd can map
   the GPUs' CPU affinity; with the presets' DGX-sized lists it prints no
   GPU at all: ``xcpuinfo_mac_to_abs failed``);
2. runs the module, with real Ansible over ``podman exec``
   (``ansible -m gpucluster.bringup.slurm_gres_facts -a autodetect=off``):
   module -> real nvidia-ml-py -> simulated C library -> simulator;
3. runs ``slurmd -G`` four times, all through the plugin -> the same library:

   detect     gres.conf ``AutoDetect=nvml`` and a decoy ``Gres=gpu:<type>:1``
              that matches nothing, so slurmd prints every device it
              detected, unchanged ("autodetected GPUs are being ignored":
              type, Cores, Links, File, UniqueId as the plugin made them);
   merged     ``AutoDetect=nvml`` with the module's ``Gres=`` (node_gres):
              slurmd must keep every detected device, typed as the module
              types it;
   validated  the module's gres.conf lines plus ``AutoDetect=nvml``: slurmd
              checks each configured Cores/Links against the detected device
              and drops a mismatch;
   conf       the module's gres.conf alone (what the collection deploys):
              slurmd's device order must be the module's GRES index order.

4. compares device by device (type, count, File/MultipleFiles, Cores, Links,
   UniqueId) and prints a table per preset.  A difference is "explained" only
   when it is one of EXPLAINED below, each tied to the Slurm 22.05.8 source
   line that causes it; anything else is unexplained and the exit status is 1.

    python3 tests/oracle/run_oracle.py [--preset P ...] [--json FILE] [--verbose] [--keep]

Exit status: 0 no unexplained difference, 1 unexplained differences,
2 the oracle could not run (prerequisite missing, container or setup failed).
Needs podman, the node image (scripts/cluster.sh images), the repository's
.venv (Ansible, containers.podman), nvml.h (.build/nvml-header, fetched
here when missing) and the pinned nvidia-ml-py's pynvml.py
(scripts/test.sh deps).  See docs/slurm-nvml-oracle.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "oracle")
BUILD = os.path.join(ROOT, ".build", "oracle")
PODMAN = os.path.join(ROOT, "scripts", "lib", "podman")   # podman with the project's containers.conf
VENV = os.path.join(ROOT, ".venv")
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
NVML_REF_VERSION = "13.615.71"
REAL_PYNVML = os.environ.get("NVMLSIM_REAL_PYNVML") or os.path.join(
    ROOT, ".build", "nvml-ref", "nvidia-ml-py-%s" % NVML_REF_VERSION, "pynvml.py")
NVML_INCLUDE = os.environ.get("NVMLSIM_NVML_INCLUDE") or os.path.join(ROOT, ".build", "nvml-header", "include")
IMAGE_REPO = os.environ.get("GPUCLUSTER_SIM_IMAGE_REPO", "localhost/gpucluster-sim") + "-node"
# The Debian release of that image: Slurm 22.05's plugin, the one the recorded differences were read against
# (scripts/cluster.sh tags each node image with its suite).
ORACLE_SUITE = "bookworm"
# SchedMD's slurm-smd packages (scripts/lib/smd_build.sh, built on Debian 13): slurmd and the NVML plugin installed
# from them, on the Debian 13 node image (scripts/test.sh smd)
SMD_DEBS = os.environ.get("GPUCLUSTER_ORACLE_SMD_DEBS", "")
if SMD_DEBS:
    ORACLE_SUITE = "trixie"
LABEL = "io.gpucluster.sim=oracle"
HOSTNAME = "oracle-node"
MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
DECOY_TYPE = "oracle_decoy"
SLURM_SRC = "Slurm 22.05.8"

# Differences between Slurm's detection and the module that are understood,
# each with the Slurm 22.05.8 source line (slurm-wlm 22.05.8 upstream tarball,
# the version of Debian 12's slurmd and slurm-wlm-nvml-plugin) that makes it.
EXPLAINED: Dict[str, Dict[str, object]] = {
    "type-name": {
        "difference": "whole GPU: Slurm types it by the whole NVML name, lower case, spaces as '_' "
                      "(nvidia_a100_80gb_pcie); the module by a short type (a100) that is a substring of it",
        "source": [
            "src/plugins/gpu/nvml/gpu_nvml.c:750  gpu_common_underscorify_tolower(device_name);",
            "src/plugins/gres/gpu/gres_gpu.c:179  if (xstrcasestr(sys_gres_type, gres_slurmd_conf->type_name))",
        ],
        "why": "with AutoDetect, _normalize_sys_gres_types() cuts a detected type down to the configured type that is "
               "a substring of it, so the module's Gres=gpu:a100:N matches (the 'merged' run checks that it does)",
    },
    "type-mig": {
        "difference": "MIG device: Slurm types it '<GPU name up to its first '-'>_<slices>g.<GB>gb' "
                      "(nvidia_a100_80gb_pcie_1g.10gb); the module by the profile part alone (1g.10gb)",
        "source": [
            "src/plugins/gpu/nvml/gpu_nvml.c:1407  char *tok = xstrchr(tmp_device_name, '-');",
            "src/plugins/gpu/nvml/gpu_nvml.c:1242  xstrfmtcat(nvml_mig->profile_name, \"_%ug.%lugb\", "
            "attributes.gpuInstanceSliceCount, roundl(attributes.memorySizeMB / 1024));",
            "src/plugins/gres/gpu/gres_gpu.c:179  if (xstrcasestr(sys_gres_type, gres_slurmd_conf->type_name))",
        ],
        "why": "the profile part is what the module types (same slice count, same GB rounding); Slurm maps "
               "Gres=gpu:1g.10gb:N onto it by substring (checked by the 'merged' run)",
    },
    "links-self": {
        "difference": "Slurm writes Links with only the device's own position (-1) and zeros; the module writes no Links",
        "source": [
            "src/plugins/gpu/nvml/gpu_nvml.c:891  } else if (nvml_rc == NVML_ERROR_NOT_SUPPORTED) { ... break;",
            "src/plugins/gpu/nvml/gpu_nvml.c:1450  nvml_mig.links = gres_links_create_empty(j, mig_count);",
        ],
        "why": "the simulated library answers nvmlDeviceGetNvLinkState with NOT_SUPPORTED (a stub), so no GPU has a "
               "link to another; MIG devices never have links. Only the -1 position is left, which Slurm uses for "
               "ordering alone. A link count above 0 from Slurm would be an UNEXPLAINED difference",
    },
    "uniqueid-whole-gpu": {
        "difference": "whole GPU: Slurm keeps no UniqueId; the module's entry carries the GPU UUID (for its uuid_map)",
        "source": ["src/plugins/gpu/nvml/gpu_nvml.c:1476  device_name, nvlinks, NULL,  (unique_id of add_gres_to_list)"],
        "why": "Slurm 22.05 sets UniqueId only for MIG devices; the module's gres.conf lines carry no UniqueId "
               "(gres.conf has no such key in 22.05), the UUID is only in the facts' uuid_map",
    },
    "order-autodetect": {
        "difference": "device order (GRES index) with AutoDetect differs from the module's index order",
        "source": [
            "src/plugins/gres/gpu/gres_gpu.c:618  list_sort(gres_list_gpu, _sort_gpu_by_links_order);",
            "src/plugins/gpu/nvml/gpu_nvml.c:1450  nvml_mig.links = gres_links_create_empty(j, mig_count);",
        ],
        "why": "with AutoDetect Slurm sorts devices by the position of -1 in Links; a MIG device's position is its MIG "
               "index on its own GPU, so MIG devices of different GPUs interleave with the whole GPUs. The module "
               "documents that its indices hold without AutoDetect (autodetect=nvml returns no index); the 'conf' run "
               "checks them there",
    },
}

# Lines slurmd logs as "error:" that are not about GRES.
NOISE = [
    (re.compile(r"_nvml_get_mem_freqs: Failed to get supported memory frequencies"),
     "src/plugins/gpu/nvml/gpu_nvml.c:1481  _nvml_print_freqs(&device, LOG_LEVEL_DEBUG2); -> :243 error(...): the "
     "simulated library does not implement nvmlDeviceGetSupportedMemoryClocks (NOT_SUPPORTED); a debug listing only"),
    (re.compile(r"error: Cannot find slurmd (cpu|memory) cgroup$"),
     "slurm 26.05 src/plugins/cgroup/v1/cgroup_v1.c:444,459 _remove_process_cg_limits: slurmd resets its own cpuset and "
     "memory limits at start; run by podman exec in the oracle container it has no cgroup of its own to find (22.05 did "
     "not look); not about GRES"),
    (re.compile(r"error: Failed to get PCI info of endpoint device for lane \d+: Not Supported$"),
     "src/plugins/gpu/nvml/gpu_nvml.c:849 _nvml_get_nvlink_remote_pcie (26.05): the simulator models no NVLink 5 switch "
     "(B200, B300, GB200, GB300 presets: nvmlsim node.nvlink_remote_pci answers NOT_SUPPORTED); Slurm then records an "
     "empty remote bus id, which it never counts as a GPU-to-GPU link, as for the NVSwitch ports of a real HGX board: "
     "the Links= Slurm derives are the same"),
]
DECOY_NOISE = re.compile(r"Discarding the following config-only GPU|GRES\[gpu\] Type:%s " % DECOY_TYPE)


class OracleError(Exception):
    """The oracle could not run (exit status 2)."""


# ----------------------------------------------------------------- helpers

def log(text: str) -> None:
    sys.stderr.write("[oracle %5.1fs] %s\n" % (time.monotonic() - START, text))
    sys.stderr.flush()


START = time.monotonic()


def int_ranges(text: Optional[str]) -> Tuple[int, ...]:
    """``0-3,8`` -> (0, 1, 2, 3, 8); None/''/(null) -> ()."""
    values = set()
    for part in filter(None, (text or "").split(",")):
        if part == "(null)":
            continue
        low, high = (part.split("-", 1) + [part])[:2]
        values.update(range(int(low), int(high) + 1))
    return tuple(sorted(values))


def null(value: Optional[str]) -> Optional[str]:
    return None if value in (None, "", "(null)") else value


def run(cmd: List[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.STDOUT)
    result = subprocess.run(cmd, universal_newlines=True, check=False, **kwargs)
    if check and result.returncode != 0:
        command = " ".join(shlex.quote(c) for c in cmd)
        raise OracleError("%s failed (exit %d):\n%s" % (command, result.returncode, (result.stdout or "")[-3000:]))
    return result


# ----------------------------------------------------------- prerequisites

def podman_bin() -> Optional[str]:
    return os.environ.get("GPUCLUSTER_SIM_PODMAN_BIN") or shutil.which("podman")


def node_image() -> Optional[str]:
    """The node image to use: $GPUCLUSTER_ORACLE_IMAGE, else <repo>-node:bookworm (Slurm 22.05) when present."""
    wanted = os.environ.get("GPUCLUSTER_ORACLE_IMAGE") or IMAGE_REPO + ":" + ORACLE_SUITE
    if not podman_bin():
        return None
    if run([PODMAN, "image", "exists", wanted], check=False).returncode == 0:
        return wanted
    return None


def missing_prerequisites() -> List[str]:
    """What the oracle needs and does not find (empty: it can run)."""
    missing = []
    if not podman_bin():
        missing.append("podman (not on PATH)")
    elif not node_image():
        missing.append("the node image %s (scripts/cluster.sh images, or set GPUCLUSTER_ORACLE_IMAGE)"
                       % (os.environ.get("GPUCLUSTER_ORACLE_IMAGE") or IMAGE_REPO + ":" + ORACLE_SUITE))
    if not os.access(os.path.join(VENV, "bin", "ansible"), os.X_OK):
        missing.append("the repository's virtualenv with Ansible (%s; scripts/test.sh deps)" % VENV)
    if not os.path.isfile(REAL_PYNVML):
        missing.append("the real nvidia-ml-py %s pynvml.py (%s; scripts/test.sh deps)" % (NVML_REF_VERSION, REAL_PYNVML))
    if not os.path.isfile(os.path.join(NVML_INCLUDE, "nvml.h")) and not shutil.which("apt-get"):
        missing.append("nvml.h (%s) and apt-get to fetch it" % NVML_INCLUDE)
    for tool in ("make", "cc"):
        if not shutil.which(tool):
            missing.append("%s (to build nvml_sim/libnvml)" % tool)
    return missing


def nvml_include() -> str:
    if os.path.isfile(os.path.join(NVML_INCLUDE, "nvml.h")):
        return NVML_INCLUDE
    log("fetching nvml.h (scripts/lib/tooling.sh ensure_nvml_header)")
    out = run(["bash", "-c", '. "$1/scripts/lib/tooling.sh" && ensure_nvml_header', "-", ROOT],
              stderr=subprocess.PIPE).stdout.strip().splitlines()
    if not out or not os.path.isfile(os.path.join(out[-1], "nvml.h")):
        raise OracleError("could not fetch nvml.h: %s" % out)
    return out[-1]


def stage() -> str:
    """Build the library and fill .build/oracle/stage (mounted read-only at /oracle)."""
    lib_dir = os.path.join(BUILD, "libnvml")
    run(["make", "-s", "-C", os.path.join(ROOT, "nvml_sim", "libnvml"), "NVML_INCLUDE=" + nvml_include(), "OUT=" + lib_dir])
    stage_dir = os.path.join(BUILD, "stage")
    shutil.rmtree(stage_dir, ignore_errors=True)
    os.makedirs(os.path.join(stage_dir, "nvmlsim-src"))
    shutil.copy2(os.path.join(lib_dir, "libnvidia-ml.so.1"), stage_dir)
    shutil.copy2(REAL_PYNVML, os.path.join(stage_dir, "pynvml.py"))
    shutil.copy2(os.path.join(HERE, "setup_node.sh"), stage_dir)
    if SMD_DEBS:
        # slurm-smd (libslurm, the plugins, gpu_nvml.so) and slurm-smd-slurmd (slurmd), as a compute node has them
        debs = [name for name in sorted(os.listdir(SMD_DEBS)) if name.split("_", 1)[0] in ("slurm-smd", "slurm-smd-slurmd")]
        if len(debs) != 2:
            raise OracleError("GPUCLUSTER_ORACLE_SMD_DEBS=%s holds %s, expected one slurm-smd and one slurm-smd-slurmd .deb"
                              % (SMD_DEBS, debs))
        os.makedirs(os.path.join(stage_dir, "debs"))
        for name in debs:
            shutil.copy2(os.path.join(SMD_DEBS, name), os.path.join(stage_dir, "debs", name))
    shutil.copytree(os.path.join(ROOT, "nvml_sim", "src", "nvmlsim"), os.path.join(stage_dir, "nvmlsim-src", "nvmlsim"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    link = os.path.join(COLLECTIONS, "ansible_collections", "gpucluster", "bringup")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(ROOT, link)
    return stage_dir


# --------------------------------------------------------------- container

class Node:
    """The oracle container."""

    def __init__(self, image: str, stage_dir: str):
        self.name = "gpucluster-oracle-%d" % os.getpid()
        self.image = image
        self.stage_dir = stage_dir
        self.conf_template = ""

    def start(self) -> None:
        # --network host: the image reaches the Debian mirror through the
        # host's resolver; SYS_ADMIN: setup_node.sh mounts a tmpfs on
        # /proc/driver (runc refuses bind mounts under /proc).
        run([PODMAN, "run", "-d", "--name", self.name, "--label", LABEL, "--hostname", HOSTNAME,
             "--network", os.environ.get("GPUCLUSTER_ORACLE_NETWORK", "host"), "--cap-add", "SYS_ADMIN",
             "-e", "NVMLSIM_PYTHONPATH=/opt/nvmlsim", "-e", "SLURM_CONF=/etc/oracle/slurm.conf",
             "-v", "%s:/oracle:ro" % self.stage_dir, "--entrypoint", "sleep", self.image, "infinity"])

    def remove(self) -> None:
        run([PODMAN, "rm", "-f", "-t", "0", self.name], check=False)

    def sh(self, script: str, stdin: Optional[str] = None, check: bool = True) -> subprocess.CompletedProcess:
        return run([PODMAN, "exec", "-i", self.name, "bash", "-c", script], check=check, input=stdin or "")

    def setup(self) -> None:
        out = self.sh("bash /oracle/setup_node.sh").stdout
        for line in out.splitlines():
            log(line)
        self.conf_template = self.sh("cat /etc/oracle/slurm.conf.in").stdout

    def presets(self) -> List[Tuple[str, str]]:
        out = self.sh("PYTHONPATH=/opt/nvmlsim python3 -m nvmlsim presets").stdout
        return [(line.split(None, 1) + [""])[:2] for line in out.splitlines() if line.strip()]

    def create(self, preset: str) -> str:
        return self.sh("PYTHONPATH=/opt/nvmlsim python3 -m nvmlsim create --preset %s --force --fit-cpus --mig-minors %s"
                       % (shlex.quote(preset), MIG_MINORS)).stdout.strip()

    def slurmd_g(self, gres: str, gres_conf: str) -> Tuple[int, str]:
        """``slurmd -G`` with this node's Gres= value and gres.conf text; (exit status, output)."""
        conf = self.conf_template.replace("@GRES@", gres)
        script = ("printf %%s %s > /etc/oracle/slurm.conf && cat > /etc/oracle/gres.conf && "
                  "exec slurmd -G -f /etc/oracle/slurm.conf 2>&1" % shlex.quote(conf))
        result = self.sh(script, stdin=gres_conf, check=False)
        return result.returncode, result.stdout

    def module(self, extra_args: str = "") -> dict:
        """The facts of the real module, run by real Ansible over podman exec."""
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_DEPRECATION_WARNINGS="0",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_LOCALHOST_WARNING="0")
        env.pop("ANSIBLE_CONFIG", None)
        result = run([os.path.join(VENV, "bin", "ansible"), "all", "-i", self.name + ",", "-c", "containers.podman.podman",
                      "-e", "ansible_podman_executable=" + PODMAN, "-e", "ansible_python_interpreter=/usr/bin/python3",
                      "-o", "-m", "gpucluster.bringup.slurm_gres_facts", "-a", ("autodetect=off " + extra_args).strip()],
                     check=False, env=env, stderr=subprocess.PIPE, cwd=ROOT)
        for line in result.stdout.splitlines():
            head, sep, body = line.partition(" => ")
            if sep and head.startswith(self.name + " | "):
                data = json.loads(body)
                if "SUCCESS" not in head:
                    raise OracleError("the module failed: %s" % data.get("msg", body))
                return data["ansible_facts"]["slurm_gres"]
        raise OracleError("no result from ansible (exit %d):\n%s\n%s" % (result.returncode, result.stdout, result.stderr))


# ------------------------------------------------------------ slurmd output

_BRACKET = re.compile(r"GRES\[(?P<name>[^\]]+)\] Type:(?P<type>\S+) Count:(?P<count>\d+) Cores\((?P<cpu_cnt>-?\d+)\):"
                      r"(?P<cores>\S+)\s+Links:(?P<links>\S+) Flags:(?P<flags>\S*) File:(?P<file>\S+) UniqueId:(?P<uid>\S+)")
_NAME_LINE = re.compile(r"Gres Name=(?P<name>\S+) Type=(?P<type>\S+) Count=(?P<count>\d+)(?: Index=-?\d+)? ID=\d+"
                        r"(?: File=(?P<file>\S+))?(?: Cores=(?P<cores>\S+) CoreCnt=\d+)?(?: Links=(?P<links>\S+))?")


def parse_slurmd(text: str, decoy: bool = False) -> dict:
    """Records (the detected list in ``detect``, the final list otherwise), errors, ignored devices."""
    detected, final, errors, noise = [], [], [], []
    ignoring = False
    for line in text.splitlines():
        if "autodetected GPUs are being ignored" in line:
            ignoring = True
            if not decoy:   # outside 'detect', a detected device slurmd does not use is a difference
                errors.append(line)
            continue
        match = _BRACKET.search(line)
        if match and ignoring and "error:" not in line:
            if not decoy:
                errors.append(line)
            detected.append({"name": match["name"], "type": null(match["type"]), "count": int(match["count"]),
                             "files": null(match["file"]), "cores": null(match["cores"]), "links": null(match["links"]),
                             "unique_id": null(match["uid"])})
            continue
        ignoring = False
        match = _NAME_LINE.search(line)
        if match:
            final.append({"name": match["name"], "type": null(match["type"]), "count": int(match["count"]),
                          "files": null(match["file"]), "cores": null(match["cores"]), "links": null(match["links"])})
            continue
        if re.search(r"\b(error|fatal):", line) or "WARNING" in line:
            if any(pattern.search(line) for pattern, _why in NOISE) or (decoy and DECOY_NOISE.search(line)):
                noise.append(line)
            else:
                errors.append(line)
    return {"detected": detected, "final": final, "errors": errors, "noise": noise}


# ---------------------------------------------------------------- compare

def module_devices(facts: dict) -> List[dict]:
    return [{"type": e["type"], "count": e["count"], "files": ",".join(e["files"]), "cores": e["cores"],
             "unique_id": e["unique_id"], "index": e["index"], "mig": e["mig"] is not None}
            for e in facts["entries"] if e["name"] == "gpu"]


def compare_device(slurm: Optional[dict], module: Optional[dict]) -> List[dict]:
    """Differences for one device (keyed by its files); each {'field', 'slurm', 'module', 'explained'}."""
    diffs = []

    def add(field, s_value, m_value, explained=None):
        diffs.append({"field": field, "slurm": s_value, "module": m_value, "explained": explained})

    if slurm is None or module is None:
        add("device", slurm and slurm["files"], module and module["files"])
        return diffs
    s_type, m_type = slurm["type"] or "", module["type"] or ""
    if s_type != m_type:
        key = None
        if m_type and m_type.lower() in s_type.lower():
            if not module["mig"]:
                key = "type-name"
            elif s_type.lower().endswith("_" + m_type.lower()):
                key = "type-mig"
        add("type", s_type, m_type, key)
    if slurm["count"] != module["count"]:
        add("count", slurm["count"], module["count"])
    if int_ranges(slurm["cores"]) != int_ranges(module["cores"]):
        add("cores", slurm["cores"], module["cores"])
    if slurm["links"]:
        counts = [int(v) for v in slurm["links"].split(",")]
        add("links", slurm["links"], None, "links-self" if all(v in (-1, 0) for v in counts) else None)
    if slurm["unique_id"] != module["unique_id"]:
        key = "uniqueid-whole-gpu" if (not module["mig"] and slurm["unique_id"] is None) else None
        add("unique_id", slurm["unique_id"], module["unique_id"], key)
    return diffs


def _unit(files: str, gres_type: Optional[str], cores: Optional[str], with_cores: bool) -> tuple:
    return (files, gres_type, int_ranges(cores) if with_cores else None)


def check_preset(node: Node, preset: str, description: str, module_args: str = "") -> dict:
    started = time.monotonic()
    created = node.create(preset)
    facts = node.module(module_args)
    module = module_devices(facts)
    gres_conf = "".join(line + "\n" for line in facts["gres_conf_lines"])
    runs = {}
    for name, gres, conf in (
            ("detect", "gpu:%s:1" % DECOY_TYPE, "AutoDetect=nvml\n"),
            ("merged", facts["node_gres"], "AutoDetect=nvml\n"),
            ("validated", facts["node_gres"], "AutoDetect=nvml\n" + gres_conf),
            ("conf", facts["node_gres"], gres_conf)):
        status, output = node.slurmd_g(gres, conf)
        runs[name] = dict(parse_slurmd(output, decoy=name == "detect"), status=status, output=output,
                          gres=gres, gres_conf=conf)

    detected = runs["detect"]["detected"]
    by_files_slurm = {d["files"]: d for d in detected}
    by_files_module = {m["files"]: m for m in module}
    rows = []
    for key in [m["files"] for m in module] + [d["files"] for d in detected if d["files"] not in by_files_module]:
        rows.append({"files": key, "slurm": by_files_slurm.get(key), "module": by_files_module.get(key),
                     "diffs": compare_device(by_files_slurm.get(key), by_files_module.get(key))})

    checks = []   # node-level checks: {'check', 'ok', 'detail', 'explained'}

    def check(name, ok, detail, explained=None):
        checks.append({"check": name, "ok": ok, "detail": detail, "explained": explained if not ok else None})

    check("detect", bool(detected) and not runs["detect"]["errors"],
          "slurmd detected %d device(s)%s" % (len(detected), "; errors: " + " | ".join(runs["detect"]["errors"])
                                              if runs["detect"]["errors"] else ""))
    module_order = [m["files"] for m in sorted(module, key=lambda m: m["index"])]
    for name, what in (("merged", "AutoDetect=nvml with the module's Gres=%s" % facts["node_gres"]),
                       ("validated", "AutoDetect=nvml plus the module's %d gres.conf line(s)" % len(facts["gres_conf_lines"])),
                       ("conf", "the module's gres.conf alone")):
        result = runs[name]
        final = result["final"]
        # With AutoDetect the Cores slurmd keeps are its own (compared in
        # 'detect'; in 'validated' a configured Cores that differs is logged
        # and the device dropped); without it they are the module's.
        with_cores = name == "conf"
        got = sorted(_unit(f["files"], f["type"], f["cores"], with_cores) for f in final)
        want = sorted(_unit(m["files"], m["type"], m["cores"], with_cores) for m in module)
        problems = []
        if result["status"] != 0:
            problems.append("slurmd -G exit %d" % result["status"])
        if result["errors"]:
            problems.append("slurmd logged: " + " | ".join(result["errors"][:3]) +
                            (" (+%d more)" % (len(result["errors"]) - 3) if len(result["errors"]) > 3 else ""))
        if got != want:
            missing = [w for w in want if w not in got]
            extra = [g for g in got if g not in want]
            problems.append("%d module device(s) not kept as the module has them (e.g. %s), %d slurmd device(s) the module "
                            "does not have (e.g. %s)" % (len(missing), unit_text(missing[:1]), len(extra), unit_text(extra[:1])))
        kept = "slurmd keeps all %d device(s) with the module's types%s" % (len(final), " and Cores" if with_cores else "")
        check(name, not problems, "%s: %s" % (what, "; ".join(problems) if problems else kept))
        order = [f["files"] for f in final]
        if not problems:
            # Without AutoDetect the order must be the module's index order;
            # with it Slurm orders by Links (EXPLAINED order-autodetect).
            check(name + "-order", order == module_order,
                  "slurmd's device (GRES index) order %s the module's index order" % (
                      "is" if order == module_order else "is NOT"),
                  explained=None if name == "conf" else "order-autodetect")

    unexplained = [(r["files"], d) for r in rows for d in r["diffs"] if not d["explained"]]
    unexplained += [("node", c) for c in checks if not c["ok"] and not c["explained"]]
    return {"preset": preset, "description": description, "created": created, "facts": facts,
            "rows": rows, "checks": checks, "runs": runs, "unexplained": len(unexplained),
            "seconds": round(time.monotonic() - started, 2)}


# ----------------------------------------------------------------- report

def unit_text(units: List[tuple]) -> str:
    if not units:
        return "none"
    files, gres_type, cores = units[0]
    return "%s Type=%s%s" % (short_files(files), gres_type, "" if cores is None else " Cores=%s" % ",".join(map(str, cores)))


def short_files(files: str) -> str:
    """/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 -> /dev/nvidia2,cap336,cap337"""
    return ",".join(part.replace("/dev/nvidia-caps/nvidia-", "") for part in files.split(","))


def slurm_text(device: Optional[dict]) -> str:
    if device is None:
        return "-"
    return "Type=%s Count=%d Cores=%s Links=%s UniqueId=%s" % (
        device["type"], device["count"], device["cores"], device["links"], device["unique_id"] or "(null)")


def module_text(device: Optional[dict]) -> str:
    if device is None:
        return "-"
    return "Type=%s Count=%d Cores=%s UniqueId=%s" % (device["type"], device["count"], device["cores"], device["unique_id"])


def render(result: dict, verbose: bool) -> str:
    out = ["", "=" * 100,
           "%s: %s" % (result["preset"], result["description"]),
           "  %s" % result["created"],
           "  module: node_gres %s (%d gres.conf line(s)); %.1fs" % (
               result["facts"]["node_gres"], len(result["facts"]["gres_conf_lines"]), result["seconds"])]
    header = ("  %-3s %-38s %-34s %-9s %-7s %-16s %s" %
              ("idx", "File / MultipleFiles", "Slurm Type (AutoDetect=nvml)", "module", "Cores", "Slurm Links", "result"))
    out += [header, "  " + "-" * (len(header) - 2)]
    for row in result["rows"]:
        slurm, module = row["slurm"], row["module"]
        cores = "-" if not slurm or not module else (
            (slurm["cores"] or "-") if int_ranges(slurm["cores"]) == int_ranges(module["cores"])
            else "%s|%s" % (slurm["cores"], module["cores"]))
        verdict = "same" if not row["diffs"] else ", ".join(
            "%s%s" % (d["field"], "~" + str(d["explained"]) if d["explained"] else " UNEXPLAINED") for d in row["diffs"])
        out.append("  %-3s %-38s %-34s %-9s %-7s %-16s %s" % (
            module["index"] if module else "-", short_files(row["files"]), slurm["type"] if slurm else "-",
            module["type"] if module else "-", cores, (slurm or {}).get("links") or "-", verdict))
        uid_diff = [d for d in row["diffs"] if d["field"] == "unique_id" and not d["explained"]]
        if module and module["mig"] and slurm and not uid_diff:
            out.append("      UniqueId equal: %s" % module["unique_id"])
        for diff in row["diffs"]:
            if not diff["explained"]:
                out.append("      UNEXPLAINED %s: slurm %r, module %r" % (diff["field"], diff["slurm"], diff["module"]))
    for item in result["checks"]:
        state = "ok" if item["ok"] else ("explained (%s)" % item["explained"] if item["explained"] else "UNEXPLAINED")
        out.append("  [%s] %s: %s" % (state, item["check"], item["detail"]))
    if verbose:
        out.append("  slurmd -G (detect) printed:")
        out += ["    " + line for line in result["runs"]["detect"]["output"].splitlines()]
        out.append("  module gres.conf lines:")
        out += ["    " + line for line in result["facts"]["gres_conf_lines"]]
    out.append("  => %s" % ("no unexplained difference" if not result["unexplained"]
                            else "%d UNEXPLAINED difference(s)" % result["unexplained"]))
    return "\n".join(out)


def render_explained(results: List[dict]) -> str:
    used: Dict[str, List[str]] = {}
    for result in results:
        keys = {d["explained"] for r in result["rows"] for d in r["diffs"] if d["explained"]}
        keys |= {c["explained"] for c in result["checks"] if c["explained"]}
        for key in keys:
            used.setdefault(key, []).append(result["preset"])
    out = ["", "Explained differences (%s source):" % SLURM_SRC]
    for key, item in EXPLAINED.items():
        out.append("  %s [%s]: %s" % (key, ", ".join(used.get(key, [])) or "not seen", item["difference"]))
        out += ["      %s" % line for line in item["source"]]
        out.append("      why: %s" % item["why"])
    out.append("  log noise ignored:")
    out += ["      %s" % why for _pattern, why in NOISE]
    return "\n".join(out)


# ------------------------------------------------------------------- main

def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--preset", action="append", help="only this preset (repeatable; default: every preset)")
    parser.add_argument("--json", help="write the results as JSON to this file")
    parser.add_argument("--verbose", "-v", action="store_true", help="also print slurmd's detection and the gres.conf lines")
    parser.add_argument("--keep", action="store_true", help="leave the container running (prints its name)")
    parser.add_argument("--module-args", default="", help="more module arguments after autodetect=off (key=value ...), "
                        "e.g. to see the oracle catch a difference: --module-args cores=false")
    args = parser.parse_args(argv)

    missing = missing_prerequisites()
    if missing:
        sys.stderr.write("oracle: cannot run, missing: %s\n" % "; ".join(missing))
        return 2
    node = None
    results: List[dict] = []
    timings = {}

    def _terminate(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        stage_dir = stage()
        timings["build+stage"] = time.monotonic() - START
        node = Node(node_image(), stage_dir)
        log("container %s from %s" % (node.name, node.image))
        node.start()
        node.setup()
        timings["container+setup"] = time.monotonic() - START - timings["build+stage"]
        presets = node.presets()
        if args.preset:
            names = [preset[0] for preset in presets]
            unknown = set(args.preset) - set(names)
            if unknown:
                raise OracleError("unknown preset(s) %s; presets: %s" % (
                    ", ".join(sorted(unknown)), ", ".join(names)))
            presets = [p for p in presets if p[0] in args.preset]
        for name, description in presets:
            log("preset %s" % name)
            results.append(check_preset(node, name, description, args.module_args))
            print(render(results[-1], args.verbose), flush=True)
        timings["presets"] = sum(r["seconds"] for r in results)
    except OracleError as exc:
        sys.stderr.write("oracle: %s\n" % exc)
        return 2
    finally:
        if node is not None:
            if args.keep:
                log("container %s left running (podman rm -f %s)" % (node.name, node.name))
            else:
                node.remove()
    total = time.monotonic() - START
    print(render_explained(results))
    print("")
    print("%-20s %-9s %s" % ("preset", "devices", "result"))
    for result in results:
        print("%-20s %-9d %s" % (result["preset"], len(result["rows"]),
                                 "UNEXPLAINED: %d" % result["unexplained"] if result["unexplained"] else "matches (explained differences only)"))
    print("time: %.1fs in all (build+stage %.1fs, container+setup %.1fs, presets %.1fs), %d CPU(s)" % (
        total, timings.get("build+stage", 0), timings.get("container+setup", 0), timings.get("presets", 0),
        len(os.sched_getaffinity(0))))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"results": results, "explained": EXPLAINED, "seconds": round(total, 1),
                       "container": node.name if node else None, "cpus": len(os.sched_getaffinity(0)),
                       "timings": {k: round(v, 1) for k, v in timings.items()}}, handle, indent=1, default=str)
    return 1 if any(r["unexplained"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
