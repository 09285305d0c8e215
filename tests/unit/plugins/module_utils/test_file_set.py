"""_file_set: the entries of install_files are checked, and plan_entry says exactly what a path needs."""
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as fs

SHA = "a" * 40
OTHER = "b" * 40


def file_entry(**extra):
    return dict({"dest": "/etc/x", "checksum": SHA, "mode": "0644"}, **extra)


@pytest.mark.parametrize("entries, fragment", [
    ([], "non-empty list"),
    ("x", "non-empty list"),
    (["/etc/x"], "entry 1: '/etc/x' is not a dict"),
    ([{"dest": "etc/x"}], "dest 'etc/x' is not an absolute path"),
    ([{"dest": "/"}], "dest '/' is not an absolute path"),
    ([{"dest": "/etc/../x", "state": "absent"}], "not a normalised path"),
    ([{"dest": "/etc//x", "state": "absent"}], "not a normalised path"),
    ([{"dest": "/etc/./x", "state": "absent"}], "not a normalised path"),
    ([{"dest": "/etc/x", "state": "touch"}], "state 'touch' is not valid; valid: file, directory, link, absent"),
    ([file_entry(target="y")], "target is not valid with state file"),
    ([{"dest": "/etc/x", "state": "absent", "mode": "0644", "owner": "root"}], "mode, owner are not valid with state absent"),
    ([file_entry(), {"dest": "/etc/x/", "state": "absent"}], "entry 2 (/etc/x/): /etc/x is already entry 1"),
    ([{"dest": "/etc/x", "checksum": SHA}], "a file needs a mode"),
    ([{"dest": "/etc/d", "state": "directory"}], "a directory needs a mode"),
    ([file_entry(mode=644)], "mode 644 is a number"),
    ([file_entry(mode="0999")], "mode '0999' is not an octal mode"),
    ([file_entry(mode="rw-r--r--")], "is not an octal mode"),
    ([file_entry(mode=True)], "is not an octal mode"),
    ([file_entry(owner="")], "owner '' is not a user or group name"),
    ([file_entry(group=7)], "group 7 is not a user or group name"),
    ([file_entry(checksum="xyz")], "checksum 'xyz' is not a SHA-1"),
    ([file_entry(checksum=None)], "checksum None is not a SHA-1"),
    ([{"dest": "/etc/l", "state": "link"}], "a link needs a target"),
    ([{"dest": "/etc/l", "state": "link", "target": ""}], "a link needs a target"),
])
def test_bad_entries_name_the_entry_and_the_value(entries, fragment):
    with pytest.raises(ValueError) as err:
        fs.validate_entries(entries)
    assert fragment in str(err.value)


def test_good_entries_are_completed():
    done = fs.validate_entries([file_entry(owner="root"), {"dest": "/d/", "state": "directory", "mode": "755"},
                                {"dest": "/l", "state": "link", "target": "x"}, {"dest": "/gone", "state": "absent"}])
    assert done == [
        {"dest": "/etc/x", "state": "file", "checksum": SHA, "mode": 0o644, "owner": "root"},
        {"dest": "/d", "state": "directory", "mode": 0o755},
        {"dest": "/l", "state": "link", "target": "x"},
        {"dest": "/gone", "state": "absent"},
    ]


def test_the_action_checks_entries_before_it_has_checksums():
    assert fs.validate_entries([{"dest": "/etc/x", "mode": "0600"}], checksums=False)[0]["mode"] == 0o600


FILE_NOW = {"type": "file", "checksum": SHA, "mode": 0o644, "owner": "root", "group": "root"}
DIR_NOW = {"type": "directory", "checksum": None, "mode": 0o755, "owner": "root", "group": "root"}
LINK_NOW = {"type": "link", "target": "hook-runner"}


def wanted(state="file", **extra):
    base = {"dest": "/p", "state": state}
    if state == "file":
        base.update(checksum=SHA, mode=0o644)
    if state == "directory":
        base.update(mode=0o755)
    if state == "link":
        base.update(target="hook-runner")
    base.update(extra)
    return base


@pytest.mark.parametrize("want, now, steps", [
    (wanted(), FILE_NOW, []),
    (wanted(owner="root", group="root"), FILE_NOW, []),
    (wanted(), None, [("create", "file"), ("mode", 0o644)]),
    (wanted(owner="slurm"), None, [("create", "file"), ("mode", 0o644), ("owner", "slurm")]),
    (wanted(checksum=OTHER), FILE_NOW, [("content", None)]),
    (wanted(mode=0o755), FILE_NOW, [("mode", 0o755)]),
    (wanted(checksum=OTHER, mode=0o600, owner="munge", group="munge"), FILE_NOW,
     [("content", None), ("mode", 0o600), ("owner", "munge"), ("group", "munge")]),
    (wanted(group="slurm"), FILE_NOW, [("group", "slurm")]),
    (wanted(), LINK_NOW, [("remove", "link"), ("create", "file"), ("mode", 0o644)]),
    (wanted(), {"type": "other"}, [("remove", "other"), ("create", "file"), ("mode", 0o644)]),
    (wanted("directory"), DIR_NOW, []),
    (wanted("directory"), None, [("create", "directory"), ("mode", 0o755)]),
    (wanted("directory", mode=0o700, owner="munge"), DIR_NOW, [("mode", 0o700), ("owner", "munge")]),
    (wanted("link"), LINK_NOW, []),
    (wanted("link"), None, [("create", "link")]),
    (wanted("link", target="other"), LINK_NOW, [("remove", "link"), ("create", "link")]),
    (wanted("link"), FILE_NOW, [("remove", "file"), ("create", "link")]),
    (wanted("absent"), None, []),
    (wanted("absent"), FILE_NOW, [("remove", "file")]),
    (wanted("absent"), LINK_NOW, [("remove", "link")]),
])
def test_plan_entry(want, now, steps):
    assert fs.plan_entry(want, now) == steps


@pytest.mark.parametrize("want, now, fragment", [
    (wanted("absent"), DIR_NOW, "/p is a directory; it is not removed"),
    (wanted(), DIR_NOW, "/p is a directory, wanted a file; move it away first"),
    (wanted("link"), DIR_NOW, "/p is a directory, wanted a link"),
    (wanted("directory"), FILE_NOW, "/p is a file, wanted a directory; remove it first"),
    (wanted("directory"), LINK_NOW, "/p is a link, wanted a directory"),
])
def test_a_directory_is_never_removed_or_replaced(want, now, fragment):
    with pytest.raises(ValueError) as err:
        fs.plan_entry(want, now)
    assert fragment in str(err.value)


@pytest.mark.parametrize("steps, needed", [
    ([], False), ([("create", "file")], True), ([("content", None)], True), ([("create", "link")], False),
    ([("create", "directory"), ("mode", 0o755)], False), ([("mode", 0o600)], False),
])
def test_needs_content(steps, needed):
    assert fs.needs_content(steps) is needed


@pytest.mark.parametrize("steps, text", [
    ([], ""),
    ([("create", "file"), ("mode", 0o644)], "create file, mode 0644"),
    ([("remove", "link"), ("create", "file")], "remove the link there, create file"),
    ([("content", None), ("owner", "munge"), ("group", "slurm")], "content, owner munge, group slurm"),
])
def test_describe(steps, text):
    assert fs.describe(steps) == text


@pytest.mark.parametrize("value, mode", [("0644", 0o644), ("644", 0o644), ("0755", 0o755), ("2775", 0o2775), ("0600", 0o600)])
def test_parse_mode(value, mode):
    assert fs.parse_mode(value, "x") == mode
