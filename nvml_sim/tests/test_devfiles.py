"""Device files and the mig-minors table."""
import os
import stat

import pytest

from nvmlsim import devfiles

# Seed 003: the CI capability minors its gres.conf lists, and the GI ones its ls shows.
SEED_CI_CAPS = [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]
SEED_GI_CAPS = [336, 345, 354, 363, 372, 381, 390, 471, 480, 489, 507, 516, 525, 534]


def char_nodes(directory):
    nodes = {}
    for name in os.listdir(directory):
        st = os.lstat(os.path.join(directory, name))
        if stat.S_ISCHR(st.st_mode):
            nodes[name] = (os.major(st.st_rdev), os.minor(st.st_rdev), stat.S_IMODE(st.st_mode))
    return nodes


def test_seed_003_capability_nodes_are_the_seeds(node):
    node.create("seed-003")
    caps = char_nodes(node.root / "dev" / "nvidia-caps")
    assert sorted(minor for _, minor, _ in caps.values()) == sorted([1, 2] + SEED_GI_CAPS + SEED_CI_CAPS)
    assert caps["nvidia-cap1"] == (238, 1, 0o400)
    assert caps["nvidia-cap2"] == (238, 2, 0o444)
    assert caps["nvidia-cap337"] == (238, 337, 0o444)
    data = node.show_json()
    ci_caps = [ci["cap_minor"] for g in data["gpus"] for gi in g["gpu_instances"] for ci in gi["compute_instances"]]
    assert ci_caps == SEED_CI_CAPS


def test_seed_003_minors_in_the_mig_minors_table(node):
    node.create("seed-003")
    table = {}
    for line in (node.root / "var/lib/nvmlsim/mig-minors").read_text().splitlines():
        name, minor = line.split()
        table[name] = int(minor)
    pairs = [(2, gi) for gi in range(7, 14)] + [(3, gi) for gi in (7, 8, 9, 11, 12, 13, 14)]
    assert [table["gpu%d/gi%d/ci0/access" % p] for p in pairs] == SEED_CI_CAPS
    assert [table["gpu%d/gi%d/access" % p] for p in pairs] == SEED_GI_CAPS


def test_mig_minors_table_is_the_drivers_static_table():
    lines = devfiles.mig_minors_text().splitlines()
    assert lines[:5] == ["config 1", "monitor 2", "gpu0/gi0/access 3", "gpu0/gi0/ci0/access 4", "gpu0/gi0/ci1/access 5"]
    assert lines[-2:] == ["gpu31/gi14/ci6/access 4321", "gpu31/gi14/ci7/access 4322"]
    assert len(lines) == 2 + 32 * 15 * 9
    # values quoted by NVIDIA's k8s-device-plugin comments
    assert {"gpu3/gi3/ci3/access 439", "gpu6/gi11/ci7/access 920"} <= set(lines)


def test_gpu_and_control_nodes(node):
    node.create("h100-80gb-x8")
    nodes = char_nodes(node.root / "dev")
    assert nodes["nvidiactl"] == (195, 255, 0o666)
    assert [nodes["nvidia%d" % i][:2] for i in range(8)] == [(195, i) for i in range(8)]
    assert nodes["nvidia-uvm"][:2] == (510, 0)
    assert (node.root / "var/lib/nvmlsim/devices").read_text() == (
        "Character devices:\n195 nvidia-frontend\n510 nvidia-uvm\n238 nvidia-caps\n")


def test_minor_numbers_other_than_the_index(node):
    node.create("seed-003")

    def swap(state):
        state["gpus"][2]["minor"], state["gpus"][3]["minor"] = 5, 2
    node.edit(swap)
    nodes = char_nodes(node.root / "dev")
    assert "nvidia3" not in nodes and nodes["nvidia5"][:2] == (195, 5)
    caps = char_nodes(node.root / "dev" / "nvidia-caps")
    # GPU index 3 now has minor 2: its GI 14 CI 0 is gpu2/gi14/ci0 = 3 + 270 + 126 + 1
    assert "nvidia-cap400" in caps and "nvidia-cap535" not in caps
    assert devfiles.ci_minor(5, 7, 0) == 3 + 5 * 135 + 63 + 1


def test_fallback_to_regular_files_without_mknod(node, monkeypatch):
    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "mknod", refuse)
    node.create("l40s-x4")
    path = node.root / "dev" / "nvidia2"
    assert path.is_file() and path.read_text() == "c 195:2\n"
    files = node.state["device_files"]
    assert files["kind"] == "regular"
    assert files["note"] == "mknod not permitted here: 7 device paths are regular files holding 'c MAJOR:MINOR'"
    node.cli("boot")  # stays consistent, still a regular file
    assert path.read_text() == "c 195:2\n"
    assert "device files under %s: regular -- mknod not permitted here" % node.root in node.cli("show")


def test_stale_and_wrong_nodes_are_fixed(node):
    node.create("l40s-x4")
    dev = node.root / "dev"
    (dev / "nvidia9").write_text("stale")
    os.unlink(dev / "nvidia1")
    os.mknod(dev / "nvidia1", stat.S_IFCHR | 0o600, os.makedev(195, 7))
    (dev / "nvidia-caps" / "nvidia-cap99").write_text("stale")
    (dev / "unrelated").write_text("keep")
    node.cli("boot")
    nodes = char_nodes(dev)
    assert nodes["nvidia1"] == (195, 1, 0o666)
    assert not (dev / "nvidia9").exists() and not (dev / "nvidia-caps" / "nvidia-cap99").exists()
    assert (dev / "unrelated").read_text() == "keep"


@pytest.mark.parametrize("gpu_minor, gi, ci, minor", [(0, 0, None, 3), (0, 0, 0, 4), (2, 7, None, 336), (2, 7, 0, 337),
                                                      (3, 7, 0, 472), (3, 14, 0, 535), (31, 14, 7, 4322)])
def test_minor_formula(gpu_minor, gi, ci, minor):
    got = devfiles.gi_minor(gpu_minor, gi) if ci is None else devfiles.ci_minor(gpu_minor, gi, ci)
    assert got == minor
