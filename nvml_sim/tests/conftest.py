"""Fixtures: every test gets its own node (state file and device root in tmp_path)."""
import json
import os
import sys

import pytest

# The repository's conftest.py puts nvml_sim/src on sys.path; do it here too so
# the suite also runs from inside nvml_sim/.
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from nvmlsim import api as pynvml  # noqa: E402  pylint: disable=wrong-import-position
from nvmlsim import cli, store  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(autouse=True)
def sim_env(tmp_path, monkeypatch):
    """Point the simulator at a private state file and device root."""
    monkeypatch.setenv("NVMLSIM_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVMLSIM_ROOT", str(tmp_path / "root"))
    monkeypatch.delenv("NVMLSIM_DEBUG", raising=False)
    yield tmp_path
    pynvml._init_refcount = 0  # pylint: disable=protected-access


class Node:
    """Drive the node through the CLI, as a test operator would."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = tmp_path / "root"

    def cli(self, *argv):
        return cli.run(list(argv))

    def create(self, preset, *extra):
        return self.cli("create", "--preset", preset, *extra)

    @property
    def state(self):
        return store.load()

    def edit(self, change):
        """Apply ``change(state)`` under the lock (for setting up odd states)."""
        with store.transaction() as state:
            change(state)

    def show_json(self):
        return json.loads(self.cli("show", "--json"))


@pytest.fixture
def node(sim_env):
    return Node(sim_env)
