"""Every play that touches a node becomes root itself (issue 20): a site's usual login is an admin with sudo,
and `ansible-playbook -i hosts gpucluster.bringup.site` as that user must not fail on its first package task
for want of `--become`. Plays that run on the Ansible controller only (localhost) must not become: sudo on
the controller (an AWX execution environment has none) is not theirs to ask for.

The simulated cluster proves the rest end to end (molecule connects over ssh as `admin`); this table catches
a new play or playbook that forgets."""
import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOKS = sorted((ROOT / "playbooks").glob("*.yml"))


def _plays():
    """(playbook name, play) of every play (import_playbook entries left out: they are the plays of another file)."""
    found = []
    for path in PLAYBOOKS:
        for play in yaml.safe_load(path.read_text()) or []:
            if "hosts" in play:
                found.append((path.name, play))
    return found


PLAYS = _plays()


def _on_controller_only(play):
    """localhost plays: awx_setup.yml's, and site.yml's preflight (localhost:all; its action contacts no node)."""
    return "localhost" in play["hosts"].split(":") or play.get("connection") == "local"


def test_there_are_plays_of_both_kinds():
    names = {(name, play["name"]) for name, play in PLAYS}
    assert ("site.yml", "Facts - every node is reachable and runs systemd") in names
    assert ("awx_setup.yml", "AWX - project, inventory and job templates of gpucluster.bringup") in names
    assert len([play for name, play in PLAYS if not _on_controller_only(play)]) >= 12


@pytest.mark.parametrize("name, play", [(n, p) for n, p in PLAYS if not _on_controller_only(p)],
                         ids=lambda v: v if isinstance(v, str) else v["name"][:40])
def test_a_play_on_the_nodes_becomes_root(name, play):
    assert play.get("become") is True, "%s: play %r runs on %r without become: true" % (name, play["name"], play["hosts"])
    # root, not some other user the play would silently run as
    assert play.get("become_user", "root") == "root", (name, play["name"])


@pytest.mark.parametrize("name, play", [(n, p) for n, p in PLAYS if _on_controller_only(p)], ids=lambda v: v if isinstance(v, str) else v["name"][:40])
def test_a_play_on_the_controller_does_not_become(name, play):
    assert not play.get("become"), (name, play["name"])


def _tasks(node):
    """Every task dict under a list of tasks/blocks (block, rescue, always), recursively."""
    for task in node or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _role_task_files():
    return sorted((ROOT / "roles").glob("*/tasks/*.yml"))


@pytest.mark.parametrize("path", _role_task_files(), ids=lambda p: "%s/%s" % (p.parts[-3], p.name))
def test_a_task_run_on_the_controller_does_not_become(path):
    """A task delegated to localhost inherits the play's become: it says become: false (no sudo on the controller)."""
    for task in _tasks(yaml.safe_load(path.read_text())):
        if task.get("delegate_to") == "localhost" or task.get("connection") == "local":
            assert task.get("become") is False, "%s: task %r runs on the controller and must say become: false" % (path, task.get("name"))
