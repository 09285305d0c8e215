"""What a user checks on the simulated cluster, node by node.

Run by molecule's verify (containers named after the nodes) and by
``bash scripts/cluster.sh verify`` (containers named gcsim-<node>): the
container name is GPUCLUSTER_SIM_CONTAINER_PREFIX + the inventory host name.
Nodes and groups come from inventory/hosts.yml, each GPU node's simulated
hardware from inventory/simulated/host_vars/<node>.yml.
"""
import json
import os
import pathlib
import subprocess
import time

import pytest
import testinfra
import yaml

from simcluster import wait_ssh

ROOT = pathlib.Path(__file__).resolve().parents[3]
PREFIX = os.environ.get("GPUCLUSTER_SIM_CONTAINER_PREFIX", "")
PODMAN = [str(ROOT / "scripts" / "lib" / "podman")]

# preset -> (GPU name NVML reports, GPU count): what each simulated node must show.
EXPECTED_GPUS = {
    "h100-80gb-x8": ("NVIDIA H100 80GB HBM3", 8),
    "a100-40gb-x8": ("NVIDIA A100-SXM4-40GB", 8),
}


def _groups():
    inventory = yaml.safe_load((ROOT / "inventory" / "hosts.yml").read_text())
    children = inventory["all"]["children"]
    return {name: sorted((group or {}).get("hosts") or {}) for name, group in children.items()}


def _host_vars(node):
    path = ROOT / "inventory" / "simulated" / "host_vars" / ("%s.yml" % node)
    return yaml.safe_load(path.read_text()) if path.exists() else {}


GROUPS = _groups()
NODES = sorted(set(sum(GROUPS.values(), [])))
GPU_NODES = GROUPS["gpu_nodes"]
OTHER_NODES = [n for n in NODES if n not in GPU_NODES]


def node(name):
    return testinfra.get_host("podman://%s%s" % (PREFIX, name))


def test_inventory_describes_heterogeneous_gpu_nodes():
    presets = {n: _host_vars(n).get("gpucluster_sim_gpu_preset") for n in GPU_NODES}
    assert len(GPU_NODES) >= 2, GROUPS
    assert all(p in EXPECTED_GPUS for p in presets.values()), presets
    names = {EXPECTED_GPUS[p][0] for p in presets.values()}
    assert len(names) >= 2, "GPU nodes must simulate different GPU models: %s" % presets


@pytest.mark.parametrize("name", NODES)
def test_systemd_is_pid_1_and_booted(name):
    host = node(name)
    assert host.run("cat /proc/1/comm").stdout.strip() == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    failed = host.run("systemctl --failed --no-legend --plain").stdout
    assert failed.strip() == "", "failed units on %s:\n%s" % (name, failed)
    assert state == "running", state


@pytest.mark.parametrize("name", NODES)
def test_hostname_is_the_node_name(name):
    assert node(name).run("hostname").stdout.strip() == name


@pytest.mark.parametrize("name", NODES)
def test_nodes_resolve_each_other_by_name(name):
    # getaddrinfo, as slurmctld, slurmd and munge resolve node names
    host = node(name)
    addresses = {}
    for other in NODES:
        result = host.run("getent ahostsv4 %s" % other)
        assert result.rc == 0, "%s cannot resolve %s" % (name, other)
        addresses[other] = result.stdout.split()[0]
    assert len(set(addresses.values())) == len(NODES), addresses
    assert addresses[name] == host.run("hostname -I").stdout.split()[0]


@pytest.mark.parametrize("name", NODES)
def test_apt_can_install_from_the_mirror(name):
    # The roles install their packages: every node must reach the mirror (hello: a package no role installs).
    result = node(name).run("apt-get install --simulate --no-install-recommends -qq hello")
    assert result.rc == 0, result.stderr
    assert "Inst hello" in result.stdout


@pytest.mark.parametrize("name", OTHER_NODES)
def test_nodes_without_gpus_have_no_simulator(name):
    host = node(name)
    assert not host.file("/dev/nvidia0").exists
    assert host.run("python3 -c 'import pynvml'").rc != 0


def char_devices(host, *paths):
    """path -> (major, minor, octal mode) of each path that is a character device."""
    result = host.run("stat -c '%%n|%%F|%%t|%%T|%%a' %s 2>/dev/null" % " ".join(paths))
    found = {}
    for line in result.stdout.splitlines():
        path, kind, major, minor, mode = line.split("|")
        if kind == "character special file":
            found[path] = (int(major, 16), int(minor, 16), mode)
    return found


@pytest.mark.parametrize("name", GPU_NODES)
def test_gpu_device_files(name):
    count = EXPECTED_GPUS[_host_vars(name)["gpucluster_sim_gpu_preset"]][1]
    paths = ["/dev/nvidia%d" % minor for minor in range(count + 1)] + ["/dev/nvidiactl"]
    expected = {"/dev/nvidia%d" % minor: (195, minor, "666") for minor in range(count)}
    expected["/dev/nvidiactl"] = (195, 255, "666")
    # one device file per GPU, no more
    assert char_devices(node(name), *paths) == expected


@pytest.mark.parametrize("name", GPU_NODES)
def test_mig_minors_table_where_the_inventory_says(name):
    path = _host_vars(name)["slurm_gres_mig_minors_path"]
    table = node(name).file(path)
    assert table.is_file
    lines = table.content_string.splitlines()
    assert lines[:2] == ["config 1", "monitor 2"]
    assert "gpu0/gi0/access 3" in lines


@pytest.mark.parametrize("name", GPU_NODES)
def test_nvmlsim_show_lists_the_simulated_gpus(name):
    gpu_name, count = EXPECTED_GPUS[_host_vars(name)["gpucluster_sim_gpu_preset"]]
    result = node(name).run("nvmlsim show --json")
    assert result.rc == 0, result.stderr
    shown = json.loads(result.stdout)
    gpus = shown["gpus"]
    assert len(gpus) == count
    assert {g["name"] for g in gpus} == {gpu_name}


@pytest.mark.parametrize("name", GPU_NODES)
def test_python_on_the_node_sees_the_gpus_through_pynvml(name):
    gpu_name, count = EXPECTED_GPUS[_host_vars(name)["gpucluster_sim_gpu_preset"]]
    script = (
        "import json, pynvml\n"
        "pynvml.nvmlInit()\n"
        "n = pynvml.nvmlDeviceGetCount()\n"
        "names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(n)]\n"
        "print(json.dumps([n, [x.decode() if isinstance(x, bytes) else x for x in names], pynvml.__file__,\n"
        "                  hasattr(pynvml, 'SIMULATED_CALLS'), open('/proc/self/maps').read().count('libnvidia-ml.so.1') > 0]))\n"
    )
    result = node(name).run("python3 -c %s" % _quote(script))
    assert result.rc == 0, result.stderr
    got_count, names, binding, simulator, library = json.loads(result.stdout)
    assert got_count == count
    assert set(names) == {gpu_name}
    # the REAL binding (Debian's python3-pynvml, installed by the nvml role) over libnvidia-ml.so.1
    assert (binding, simulator, library) == ("/usr/lib/python3/dist-packages/pynvml.py", False, True)
    owner = node(name).run("dpkg -S /usr/lib/python3/dist-packages/pynvml.py")
    assert owner.stdout.startswith("python3-pynvml:"), owner.stdout + owner.stderr


@pytest.mark.parametrize("name", GPU_NODES)
def test_device_files_come_back_after_a_restart(name):
    # /dev of a container is fresh at every start: nvmlsim-boot.service must
    # recreate the device files, as the driver does on a real node.
    container = PREFIX + name
    subprocess.run(PODMAN + ["restart", "-t", "5", container], check=True, capture_output=True)
    host = node(name)
    deadline = time.time() + 60
    state = ""
    while time.time() < deadline:
        state = host.run("systemctl is-system-running").stdout.strip()
        if state in ("running", "degraded"):
            break
        time.sleep(0.5)
    assert state in ("running", "degraded"), state
    assert host.service("nvmlsim-boot").is_enabled
    assert host.run("systemctl is-active nvmlsim-boot.service").stdout.strip() == "active"
    assert char_devices(host, "/dev/nvidia0") == {"/dev/nvidia0": (195, 0, "666")}
    # the playbooks of the later tests reach it over ssh again
    wait_ssh(name)


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"
