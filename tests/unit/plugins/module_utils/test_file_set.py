"""_file_set: the entries of install_files are checked, and plan_entry says exactly what a path needs."""
import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils import _file_set as fs

SHA = "a" * 40
OTHER = "b" * 40


def file_entry(**extra):
    return dict({"dest": "/etc/x", "checksum": SHA, "mode": "0644"}, **extra)


@pytest.mark.parametrize("entries, fragment", [
    ([], "files is [], expected a non-empty list of entries"),
    ("x", "files is 'x', expected a non-empty list of entries"),
    (["/etc/x"], "files[0] is '/etc/x', expected a dict with dest and state"),
    ([{"dest": "etc/x"}], "files[0] (etc/x): dest is 'etc/x', expected an absolute path (starting with \"/\")"),
    ([{"dest": "/"}], "files[0] (/): dest is '/', expected an absolute path below /"),
    ([{"state": "absent"}], "files[0]: dest is None, expected an absolute path"),
    ([{"dest": "", "state": "absent"}], "files[0]: dest is '', expected an absolute path"),
    ([{"dest": "/etc/a\x00b", "state": "absent"}], "files[0]: dest is '/etc/a\\x00b', expected an absolute path without NUL"),
    ([{"dest": "/etc/a\nb", "state": "absent"}], "control characters"),
    ([{"dest": "/proc/sys/x", "state": "absent"}], "dest is '/proc/sys/x', expected a path on a real file system, not under /proc"),
    ([{"dest": "/sys", "state": "absent"}], "not under /sys"),
    ([{"dest": "/etc/" + "n" * 256, "state": "absent"}], "names have at most 255 bytes"),
    ([{"dest": "/etc/../x", "state": "absent"}], "expected a normalised absolute path"),
    ([{"dest": "/etc//x", "state": "absent"}], "expected a normalised absolute path"),
    ([{"dest": "/etc/./x", "state": "absent"}], "expected a normalised absolute path"),
    ([{"dest": "/etc/x", "state": "touch"}], "files[0] (/etc/x): state is 'touch', expected one of file, directory, link, absent"),
    ([{"dest": "/etc/x", "state": ["file"]}], "state is ['file'], expected one of file"),
    ([file_entry(target="y")], "files[0] (/etc/x): target is set, expected only dest, state, checksum, mode, owner, group, secret, restarts with state file"),
    ([{"dest": "/etc/x", "state": "absent", "mode": "0644", "owner": "root"}], "mode, owner are set, expected only dest, state, restarts with state absent"),
    ([{"dest": "/etc/x", "state": "absent", 1: 2}], "1 is set, expected only dest, state"),
    ([file_entry(), {"dest": "/etc/x/", "state": "absent"}], "files[1] (/etc/x/): dest is '/etc/x', expected each path once, but files[0] names it"),
    ([file_entry(), {"dest": "/etc/x/y", "state": "absent"}], "files[1] (/etc/x/y): dest is '/etc/x/y', expected a path whose parents are directories, "
                                                              "but files[0] makes /etc/x a file"),
    ([{"dest": "/etc/x", "checksum": SHA}], "files[0] (/etc/x): mode is not set, expected a quoted octal string"),
    ([{"dest": "/etc/d", "state": "directory"}],
     "mode is not set, expected a quoted octal string of 3 or 4 digits 0-7 such as \"0644\" or \"0755\" for a directory"),
    ([file_entry(mode=644)], "mode is 644, expected a quoted octal string"),
    ([file_entry(mode="0999")], "mode is '0999', expected a quoted octal string"),
    ([file_entry(mode="17777")], "mode is '17777', expected"),
    ([file_entry(mode="rw-r--r--")], "mode is 'rw-r--r--', expected"),
    ([file_entry(mode=True)], "mode is True, expected"),
    ([file_entry(owner="")], "owner is '', expected a user name"),
    ([file_entry(owner="root:root")], "owner is 'root:root', expected a user name"),
    ([file_entry(owner="-u")], "owner is '-u', expected a user name"),
    ([file_entry(group=7)], "group is 7, expected a group name"),
    ([file_entry(secret="maybe")], "files[0] (/etc/x): secret is 'maybe', expected true or false"),
    ([file_entry(secret=[True])], "secret is [True], expected true or false"),
    ([file_entry(checksum="xyz")], "checksum is 'xyz', expected the SHA-1 of the content in hex"),
    ([file_entry(checksum=None)], "checksum is None, expected the SHA-1"),
    ([{"dest": "/etc/l", "state": "link"}], "files[0] (/etc/l): target is None, expected the path the link points to"),
    ([{"dest": "/etc/l", "state": "link", "target": ""}], "target is '', expected the path the link points to"),
    ([{"dest": "/etc/l", "state": "link", "target": "a\x00b"}], "target is 'a\\x00b', expected"),
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


def test_a_secret_is_a_bool():
    assert fs.validate_entries([file_entry(secret="yes")])[0]["secret"] is True


@pytest.mark.parametrize("entry, fragment", [
    ({"dest": "/etc/x", "mode": "0600"}, "files[0] (/etc/x): neither src nor content is set, expected exactly one of them"),
    ({"dest": "/etc/x", "mode": "0600", "src": "a", "content": "b"}, "files[0] (/etc/x): src and content are both set, expected exactly one"),
    ({"dest": "/etc/x", "mode": "0600", "src": ""}, "src is '', expected the path of a file on the controller"),
    ({"dest": "/etc/x", "mode": "0600", "src": None}, "src is None, expected the path of a file on the controller"),
    ({"dest": "/etc/x", "mode": "0600", "content": 5}, "content is 5, expected text"),
    ({"dest": "/etc/x", "mode": "0600", "content": "x", "checksum": SHA}, "checksum is set, expected only dest, state, src, content"),
    ({"dest": "/etc/d", "state": "directory", "mode": "0755", "content": "x"}, "content is set, expected only dest, state, mode, owner, group"),
])
def test_the_action_form_has_src_or_content(entry, fragment):
    with pytest.raises(ValueError) as err:
        fs.validate_entries([entry], checksums=False, sources=True)
    assert fragment in str(err.value)


def test_a_directory_entry_may_hold_later_entries_a_file_may_not():
    fs.validate_entries([{"dest": "/d", "state": "directory", "mode": "0755"}, file_entry(dest="/d/x")])
    with pytest.raises(ValueError, match=r"files\[1\] \(/gone/x\): dest is '/gone/x'.*but files\[0\] makes /gone absent"):
        fs.validate_entries([{"dest": "/gone", "state": "absent"}, file_entry(dest="/gone/x")])


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
    (wanted("absent"), DIR_NOW, "state is 'absent', but /p is a directory; expected a file, a link or nothing there"),
    (wanted(), DIR_NOW, "state is 'file', but /p is a directory; expected a file or nothing there (move the directory away first"),
    (wanted("link"), DIR_NOW, "state is 'link', but /p is a directory"),
    (wanted("directory"), FILE_NOW, "state is 'directory', but /p is a file; expected a directory or nothing there (remove the file first"),
    (wanted("directory"), LINK_NOW, "state is 'directory', but /p is a link"),
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
