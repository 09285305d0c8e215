"""site.yml refuses nodes that do not boot with systemd.

Runs the real playbook with ansible-playbook against a container that does
not boot with systemd (the facts play). The preflight's refusals of bad
inventories and bad role variables need no container: they are asserted in
tests/unit/plugins/action/test_preflight_playbook.py.
"""
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from simcluster import hosts

ROOT = pathlib.Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "playbooks" / "site.yml"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
PODMAN = [str(ROOT / "scripts" / "lib" / "podman")]
IMAGE = os.environ.get("GPUCLUSTER_SIM_IMAGE") or "localhost/gpucluster-sim-node:trixie"


def run_site(tmp_path, children, hostvars=None):
    inventory = {"all": {"children": children}}
    if hostvars:
        inventory["all"]["hosts"] = hostvars
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    # A plain ansible-playbook run: none of molecule's ANSIBLE_* settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               CONTAINERS_CONF=str(ROOT / "scripts" / "lib" / "containers.conf"))
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(path), str(PLAYBOOK)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    return result.returncode, result.stdout


@pytest.fixture(name="container_without_systemd")
def fixture_container_without_systemd():
    name = "gcsim-preflight-%d" % os.getpid()
    subprocess.run(PODMAN + ["run", "-d", "--name", name, "--label", "io.gpucluster.sim=molecule", "--network", "none",
                             IMAGE, "sleep", "infinity"], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(PODMAN + ["rm", "-f", "-t", "0", name], check=False, capture_output=True)


def test_nodes_must_boot_with_systemd(tmp_path, container_without_systemd):
    rc, output = run_site(tmp_path, {"slurm_controller": hosts("ctl"), "slurm_compute": hosts("ctl")},
                      {"ctl": {"ansible_connection": "containers.podman.podman", "ansible_host": container_without_systemd,
                               "ansible_python_interpreter": "/usr/bin/python3"}})
    assert rc != 0
    assert "ctl runs the service manager '" in output, output[-3000:]
    assert "'; the bring-up manages munge and Slurm as systemd services, so nodes must boot with systemd" in output, output[-3000:]
    assert "runs the service manager 'systemd'" not in output
