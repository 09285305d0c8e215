"""The munge and slurm roles stop with one clear message before changing anything.

Each case runs the real role with ansible-playbook in check mode on the
local machine (connection local, the play targets localhost only; other
inventory hosts are never contacted) and asserts the role's message. The
messages built in Python (node names, controller count, GRES consistency,
munge key checks) are asserted in tests/unit as well.
"""
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from simcluster import hosts

ROOT = pathlib.Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"


def run_role(tmp_path, role, children, extra_vars=None, limit=None):
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
                         "children": children}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    play = [{"name": "role under test", "hosts": "localhost", "gather_facts": True,
             "roles": [{"role": "gpucluster.bringup.%s" % role}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"))
    argv = [str(ANSIBLE_PLAYBOOK), "--check", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
            "-e", yaml.safe_dump(extra_vars or {}, default_flow_style=True).strip()]
    if limit:
        argv += ["--limit", limit]
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(tmp_path), check=False)
    return result.returncode, result.stdout


CASES = [
    pytest.param(
        "munge", {"slurm_controller": {"hosts": {}}, "slurm_compute": hosts("localhost")}, {}, None,
        "inventory group slurm_controller has no hosts; its first host holds the munge key",
        id="munge-no-source-host"),
    pytest.param(
        "munge", {"slurm_controller": hosts("localhost")}, {"munge_key_b64": "not base64!"}, None,
        'munge_key_b64 is not valid base64 (10 characters); create one with "base64 -w0 /etc/munge/munge.key"',
        id="munge-bad-key"),
    pytest.param(
        "munge", {"slurm_controller": hosts("localhost")}, {"munge_key_b64": "c2hvcnQ="}, None,
        "munge_key_b64 decodes to 5 bytes; munged needs at least 32 (mungekey --create makes 1024)",
        id="munge-short-key"),
    pytest.param(
        "slurm", {"slurm_controller": hosts("localhost", "c2"), "slurm_compute": hosts("localhost")}, {}, "localhost",
        "inventory group slurm_controller has 2 hosts (localhost, c2): exactly one is supported until slurmctld HA is",
        id="slurm-two-controllers"),
    pytest.param(
        "slurm", {"slurm_controller": {"hosts": {}}, "slurm_compute": hosts("localhost")}, {}, None,
        "inventory group slurm_controller is empty: put exactly one host in it (slurmctld runs there)",
        id="slurm-no-controller"),
    pytest.param(
        "slurm", {"slurm_controller": hosts("localhost"), "slurm_compute": hosts("localhost", "gpu_01")}, {}, "localhost",
        "node name 'gpu_01' is not one Slurm accepts",
        id="slurm-bad-node-name"),
    pytest.param(
        "slurm", {"slurm_controller": hosts("localhost"), "slurm_compute": hosts("localhost", "gpu-99")}, {}, "localhost",
        "slurm.conf lists every compute node, and these are not in this run (--limit) and could not be read "
        "with slurmd -C: gpu-99 (unreachable). Bring them up first (run without --limit), take them out of "
        "inventory group slurm_compute, or add them to --limit",
        id="slurm-limit-leaves-out-a-node-it-cannot-read"),
    pytest.param(
        "slurm", {"slurm_controller": hosts("localhost"), "slurm_compute": hosts("localhost")}, {"slurm_install_source": "local"}, None,
        'slurm_install_source is "local" but slurm_local_package_dir is empty: '
        "name the directory (on the Ansible controller) that holds the Slurm package files",
        id="slurm-local-without-dir"),
    pytest.param(
        "slurm", {"slurm_controller": hosts("localhost"), "slurm_compute": hosts("localhost")}, {"slurm_gres_sharing": "both"}, None,
        "value of slurm_gres_sharing must be one of: none, mps, shard, got: both",
        id="slurm-bad-sharing"),
]


@pytest.mark.parametrize("role, children, extra_vars, limit, message", CASES)
def test_role_preflight_rejects(tmp_path, role, children, extra_vars, limit, message):
    rc, output = run_role(tmp_path, role, children, extra_vars, limit)
    assert rc != 0, output[-3000:]
    assert message in " ".join(output.split()), output[-3000:]
    # Stopped before installing anything.
    assert "Install the munge packages" not in output and "Install Slurm from the distribution" not in output
