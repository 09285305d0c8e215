"""install_files through ansible-playbook (local connection, a temporary directory as the node).

What a user sees: the files, directories and links appear with their modes; a
second run reports changed=0 after one module call; --check writes nothing;
--diff shows the content change; bad input and an unknown owner fail with one
message and change nothing; a secret file's content never appears.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"


def run(tmp_path, files, args=(), task_extra=None):
    task = {"name": "Keep the set", "gpucluster.bringup.install_files": {"owner": "root", "group": "root", "files": files}}
    task.update(task_extra or {})
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]
    (tmp_path / "files").mkdir(exist_ok=True)
    (tmp_path / "files" / "runner").write_text("#!/bin/sh\necho runner\n")
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    argv = [str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
            str(playbook)] + list(args)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=str(tmp_path), check=False)
    return result.returncode, result.stdout


def recap(output):
    match = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", output)
    assert match, output
    return {"ok": int(match.group(1)), "changed": int(match.group(2)), "failed": int(match.group(3))}


def module_calls(output):
    """Module executions in a -vvv log (the local connection copies one AnsiballZ payload for each)."""
    return len(re.findall(r"PUT \S+ TO \S+/AnsiballZ_install_files\.py", output))


def node_set(node):
    return [
        {"dest": str(node / "hooks"), "state": "directory", "mode": "0755"},
        {"dest": str(node / "hooks" / "hook-runner"), "src": "runner", "mode": "0755"},
        {"dest": str(node / "hooks" / "settings.json"), "content": '{"timeout": 30}\n', "mode": "0644"},
        {"dest": str(node / "hooks" / "prolog"), "state": "link", "target": "hook-runner"},
        {"dest": str(node / "old-hook"), "state": "absent"},
    ]


def test_first_run_creates_second_is_one_call_and_changes_nothing(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    (node / "old-hook").write_text("old\n")
    rc, out = run(tmp_path, node_set(node), ["-vvv"])
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert module_calls(out) == 2, out   # the checksums, then the contents the node asked for
    assert (node / "hooks" / "hook-runner").read_text() == "#!/bin/sh\necho runner\n"
    assert oct((node / "hooks" / "hook-runner").stat().st_mode & 0o7777) == "0o755"
    assert oct((node / "hooks").stat().st_mode & 0o7777) == "0o755"
    assert (node / "hooks" / "settings.json").read_text() == '{"timeout": 30}\n'
    assert oct((node / "hooks" / "settings.json").stat().st_mode & 0o7777) == "0o644"
    assert os.readlink(node / "hooks" / "prolog") == "hook-runner"
    assert not (node / "old-hook").exists()
    assert not [p for p in (node / "hooks").iterdir() if p.name.startswith(".")], "a temporary file was left behind"

    rc, out = run(tmp_path, node_set(node), ["-vvv"])
    assert rc == 0 and recap(out)["changed"] == 0, out
    assert module_calls(out) == 1, out


def test_a_changed_file_and_mode_are_repaired_and_shown_in_diff(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    assert run(tmp_path, node_set(node))[0] == 0
    (node / "hooks" / "settings.json").write_text('{"timeout": 99}\n')
    os.chmod(node / "hooks" / "hook-runner", 0o700)
    os.unlink(node / "hooks" / "prolog")
    os.symlink("elsewhere", node / "hooks" / "prolog")

    rc, out = run(tmp_path, node_set(node), ["--check", "--diff"])
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert '-{"timeout": 99}' in out and '+{"timeout": 30}' in out, out
    assert '"mode": "0700"' in out and '"mode": "0755"' in out, out
    assert '"target": "elsewhere"' in out, out
    assert (node / "hooks" / "settings.json").read_text() == '{"timeout": 99}\n', "--check wrote the file"
    assert os.readlink(node / "hooks" / "prolog") == "elsewhere", "--check changed the link"

    rc, out = run(tmp_path, node_set(node), ["--diff"])
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert (node / "hooks" / "settings.json").read_text() == '{"timeout": 30}\n'
    assert oct((node / "hooks" / "hook-runner").stat().st_mode & 0o7777) == "0o755"
    assert os.readlink(node / "hooks" / "prolog") == "hook-runner"
    rc, out = run(tmp_path, node_set(node))
    assert rc == 0 and recap(out)["changed"] == 0, out


def test_check_mode_on_a_fresh_node_writes_nothing(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    rc, out = run(tmp_path, node_set(node), ["--check"])
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert list(node.iterdir()) == []


def test_bad_input_is_one_message_and_nothing_changes(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    files = node_set(node)
    files.append({"dest": str(node / "x"), "src": "no-such-file", "mode": "0644"})
    rc, out = run(tmp_path, files)
    assert rc != 0 and "files[5] (%s/x): src is 'no-such-file', but it cannot be read on the controller" % node in out, out
    assert "expected a readable file on the controller" in out and "nothing was changed" in out, out
    assert list(node.iterdir()) == []

    files = node_set(node)
    files[2]["mode"] = 644
    rc, out = run(tmp_path, files)
    assert rc != 0 and "files[2] (%s/hooks/settings.json): mode is 644, expected a quoted octal string" % node in out, out
    assert list(node.iterdir()) == []


@pytest.mark.parametrize("entry, fragment", [
    ({"src": "runner", "content": "x\n"}, "src and content are both set, expected exactly one of them"),
    ({}, "neither src nor content is set, expected exactly one of them for a file"),
    ({"src": ""}, "src is '', expected the path of a file on the controller"),
    ({"src": "."}, "src is '.', but it cannot be read on the controller"),
    ({"content": 42}, "content is 42, expected text"),
    ({"content": "x\n", "mode": "u+x"}, "mode is 'u+x', expected a quoted octal string"),
], ids=["both", "neither", "src-empty", "src-a-directory", "content-a-number", "mode-symbolic"])
def test_the_action_refuses_a_bad_source_before_the_node_is_touched(tmp_path, entry, fragment):
    node = tmp_path / "node"
    node.mkdir()
    files = node_set(node)
    files.append(dict({"dest": str(node / "x"), "mode": "0644"}, **entry))
    rc, out = run(tmp_path, files)
    assert rc != 0 and ("files[5] (%s/x): " % node + fragment) in out and "nothing was changed" in out, out
    assert list(node.iterdir()) == []


def test_a_valid_set_then_a_path_under_proc_changes_nothing(tmp_path):
    """The issue's case: the valid entries were written before the bad one failed, with changed false."""
    node = tmp_path / "node"
    node.mkdir()
    files = node_set(node) + [{"dest": "/proc/gpucluster-test-x", "content": "x\n", "mode": "0644"}]
    rc, out = run(tmp_path, files)
    assert rc != 0 and "files[5] (/proc/gpucluster-test-x): dest is '/proc/gpucluster-test-x', expected a path on a real file system" in out, out
    assert list(node.iterdir()) == []
    files = node_set(node) + [{"dest": str(node / "old-hook" / "x"), "state": "directory", "mode": "0755"}]
    (node / "old-hook").write_text("old\n")
    rc, out = run(tmp_path, files)
    assert rc != 0 and "files[5] (%s/old-hook/x): dest is '%s/old-hook/x', expected a path whose parents are directories, but files[4] " \
        "makes %s/old-hook absent" % (node, node, node) in out, out
    assert [p.name for p in node.iterdir()] == ["old-hook"]
    files = node_set(node) + [{"dest": str(node / "afile" / "x"), "state": "directory", "mode": "0755"}]
    (node / "afile").write_text("a file\n")
    rc, out = run(tmp_path, files)
    assert rc != 0 and "files[5] (%s/afile/x): dest is '%s/afile/x', but %s/afile is a file, not a directory" % (node, node, node) in out, out
    assert sorted(p.name for p in node.iterdir()) == ["afile", "old-hook"]


def test_an_unknown_owner_or_a_missing_parent_stops_before_any_change(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    files = node_set(node)
    files[2]["owner"] = "no-such-user-x"
    rc, out = run(tmp_path, files)
    assert rc != 0 and "owner is 'no-such-user-x', expected a user that exists on this node; nothing was changed" in out, out
    assert list(node.iterdir()) == []

    files = node_set(node)[1:]
    rc, out = run(tmp_path, files)
    assert rc != 0 and "but its directory %s/hooks does not exist; expected its directory to exist or an earlier entry to make it " \
        "(add it as a directory entry before this one)" % node in out, out
    assert list(node.iterdir()) == []


def test_a_new_directory_gets_its_parents(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    files = [{"dest": str(node / "lib" / "pkg" / "module_utils"), "state": "directory", "mode": "0750"},
             {"dest": str(node / "lib" / "pkg" / "module_utils" / "x.py"), "content": "x = 1\n", "mode": "0644"},
             {"dest": str(node / "lib" / "pkg" / "y.py"), "content": "y = 1\n", "mode": "0644"}]
    rc, out = run(tmp_path, files)
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert (node / "lib" / "pkg" / "module_utils" / "x.py").read_text() == "x = 1\n"
    assert oct((node / "lib" / "pkg" / "module_utils").stat().st_mode & 0o7777) == "0o750"
    assert oct((node / "lib").stat().st_mode & 0o7777) == "0o755"


def test_a_directory_listed_after_a_child_that_made_it(tmp_path):
    """A directory entry after an entry whose parents made it (a node library before its program's directory) gets its mode."""
    node = tmp_path / "node"
    node.mkdir()
    files = [{"dest": str(node / "hooks" / "lib" / "pkg"), "state": "directory", "mode": "0755"},
             {"dest": str(node / "hooks"), "state": "directory", "mode": "0750"}]
    rc, out = run(tmp_path, files)
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert oct((node / "hooks").stat().st_mode & 0o7777) == "0o750"
    rc, out = run(tmp_path, files)
    assert rc == 0 and recap(out)["changed"] == 0, out


def test_a_directory_is_not_replaced(tmp_path):
    node = tmp_path / "node"
    (node / "hooks" / "hook-runner").mkdir(parents=True)
    rc, out = run(tmp_path, node_set(node))
    assert rc != 0 and "hook-runner is a directory; expected a file or nothing there (move the directory away first" in out, out
    assert not (node / "hooks" / "settings.json").exists()


def test_a_secret_file_never_shows_its_content(tmp_path):
    node = tmp_path / "node"
    node.mkdir()
    files = [{"dest": str(node / "slurmdbd.conf"), "content": "StoragePass=hunter2-secret\n", "mode": "0600",
              "secret": True}]
    rc, out = run(tmp_path, files, ["--diff", "-vvv"])
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert "hunter2" not in out
    assert "the content is secret" in out
    (node / "slurmdbd.conf").write_text("StoragePass=old-secret\n")
    rc, out = run(tmp_path, files, ["--diff", "--check", "-vvv"])
    assert rc == 0 and "hunter2" not in out and "old-secret" not in out, out


def test_binary_content_from_b64decode_arrives_byte_for_byte(tmp_path):
    """The munge key: 1024 random bytes given base64-encoded, decoded in the task, written unchanged."""
    import base64
    key = bytes(range(256)) * 4
    node = tmp_path / "node"
    node.mkdir()
    files = [{"dest": str(node / "munge.key"), "content": "{{ '%s' | b64decode }}" % base64.b64encode(key).decode(),
              "mode": "0400", "secret": True}]
    rc, out = run(tmp_path, files, task_extra={"no_log": True})
    assert rc == 0 and recap(out)["changed"] == 1, out
    assert (node / "munge.key").read_bytes() == key
    rc, out = run(tmp_path, files, task_extra={"no_log": True})
    assert rc == 0 and recap(out)["changed"] == 0, out
