"""The error messages of scripts/cluster.sh and scripts/lib/node-prepare.sh.

Each runs the real script; none touches the simulated cluster (the bad-mirror
build uses a throwaway image name and fails before importing anything).
"""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run(*argv, **env):
    result = subprocess.run(["bash", *argv], cwd=str(ROOT), env=dict(os.environ, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False, timeout=300)
    return result.returncode, result.stdout


@pytest.mark.parametrize("argv, rc, message", [
    (["scripts/cluster.sh", "start"], 2,
     "[cluster] error: unknown command 'start'; valid commands: deps images up down status playbook verify prune-images"),
    (["scripts/lib/node-prepare.sh"], 1, "[cluster] error: usage: node-prepare.sh CONTAINER [GPU_PRESET]"),
    (["scripts/lib/node-prepare.sh", "a", "b", "c"], 1, "[cluster] error: usage: node-prepare.sh CONTAINER [GPU_PRESET]"),
])
def test_bad_arguments(argv, rc, message):
    got_rc, output = run(*argv)
    assert got_rc == rc
    assert message in output.splitlines()


def test_unknown_molecule_scenario():
    rc, output = run("scripts/molecule.sh", "no-such-scenario")
    assert rc == 1
    assert "[cluster] error: unknown scenario 'no-such-scenario': no molecule/no-such-scenario/molecule.yml" in output.splitlines()


@pytest.fixture(name="foreign_network")
def fixture_foreign_network():
    # A network this script did not make (no io.gpucluster.sim label).
    name = "gcsim-test-foreign-%d" % os.getpid()
    subprocess.run([str(ROOT / "scripts" / "lib" / "podman"), "network", "create", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run([str(ROOT / "scripts" / "lib" / "podman"), "network", "rm", "-f", name], check=False, capture_output=True)


def test_up_refuses_a_network_it_did_not_make(foreign_network):
    rc, output = run("scripts/cluster.sh", "up", GPUCLUSTER_SIM_NETWORK=foreign_network)
    assert rc == 1
    assert ("[cluster] error: network %s exists but was not made by this script (no label io.gpucluster.sim=cluster);"
            " remove it or set GPUCLUSTER_SIM_NETWORK" % foreign_network) in output.splitlines()
    assert "starting" not in output


def test_image_build_from_an_unreachable_mirror_fails_clearly():
    rc, output = run("scripts/cluster.sh", "images",
                     GPUCLUSTER_SIM_MIRROR="http://127.0.0.1:9/debian",
                     GPUCLUSTER_SIM_IMAGE_REPO="localhost/gpucluster-sim-test-badmirror")
    assert rc == 1
    prefix = "[cluster] error: debootstrap of trixie from http://127.0.0.1:9/debian failed (full log: "
    lines = [line for line in output.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, output
    log = pathlib.Path(lines[0][len(prefix):].rstrip(")"))
    assert log.is_file() and log.name.endswith(".log")
    assert not pathlib.Path(str(log)[:-len(".log")]).exists(), "the partial root file system was not removed"
    log.unlink()
