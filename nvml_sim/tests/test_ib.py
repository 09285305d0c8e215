"""The simulated InfiniBand sysfs tree (nvmlsim.ib): the kernel's file formats per preset, the `nvmlsim ib`
command, its errors (exit 2, nothing changed), --restore, boot idempotence, faults surviving reset and reboot."""
import json
import os

import pytest

from nvmlsim import cli, ib

IB_ROOT = os.path.join("var", "lib", "nvmlsim", "sys", "class", "infiniband")
COUNTERS = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
            "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors",
            "port_rcv_constraint_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
            "VL15_dropped", "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"]


def _tree(root):
    """{relative path: bytes} of every file under the tree."""
    out = {}
    for base, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = handle.read()
    return out


def _port(node, hca, port=1, root=None):
    base = os.path.join(str(root or node.root / IB_ROOT), hca, "ports", str(port))
    return {name: open(os.path.join(base, name), "rb").read() for name in ("state", "phys_state", "rate", "link_layer")}


@pytest.mark.parametrize("preset, hcas, rate", [
    ("h100-80gb-x8", 8, b"400 Gb/sec (4X NDR)\n"),
    ("h200-x8", 8, b"400 Gb/sec (4X NDR)\n"),
    ("a100-40gb-x8", 8, b"200 Gb/sec (4X HDR)\n"),
    ("a100-80gb-pcie-x4", 0, None),
    ("l40s-x4", 0, None),
    ("seed-003", 0, None),
    ("a100-gi-gaps", 0, None),
])
def test_each_preset_has_its_tree_in_the_kernels_format(node, preset, hcas, rate):
    node.create(preset)
    root = node.root / IB_ROOT
    assert root.is_dir()
    assert sorted(os.listdir(root)) == ["mlx5_%d" % i for i in range(hcas)]   # PCIe presets: an empty directory
    if not hcas:
        return
    tree = _tree(root)
    expected_files = {"node_type", "hca_type", "ports/1/state", "ports/1/phys_state", "ports/1/rate",
                      "ports/1/link_layer"} | {"ports/1/counters/" + c for c in COUNTERS}
    for i in range(hcas):
        assert {p[len("mlx5_%d/" % i):] for p in tree if p.startswith("mlx5_%d/" % i)} == expected_files
        assert _port(node, "mlx5_%d" % i) == {"state": b"4: ACTIVE\n", "phys_state": b"5: LinkUp\n", "rate": rate,
                                              "link_layer": b"InfiniBand\n"}
        assert all(tree["mlx5_%d/ports/1/counters/%s" % (i, c)] == b"0\n" for c in COUNTERS)
    assert tree["mlx5_0/node_type"] == b"1: CA\n"
    assert tree["mlx5_0/hca_type"] == (b"MT4123\n" if "a100" in preset else b"MT4129\n")


@pytest.mark.parametrize("argv, state, phys, rate", [
    (["--state", "down"], b"1: DOWN\n", b"2: Polling\n", b"400 Gb/sec (4X NDR)\n"),      # a pulled cable
    (["--state", "down", "--phys-state", "disabled"], b"1: DOWN\n", b"3: Disabled\n", b"400 Gb/sec (4X NDR)\n"),
    (["--phys-state", "polling"], b"1: DOWN\n", b"2: Polling\n", b"400 Gb/sec (4X NDR)\n"),
    (["--state", "init"], b"2: INIT\n", b"5: LinkUp\n", b"400 Gb/sec (4X NDR)\n"),          # no subnet manager
    (["--state", "armed"], b"3: ARMED\n", b"5: LinkUp\n", b"400 Gb/sec (4X NDR)\n"),
    (["--rate", "200"], b"4: ACTIVE\n", b"5: LinkUp\n", b"200 Gb/sec (2X NDR)\n"),           # a lane pair lost
    (["--rate", "100"], b"4: ACTIVE\n", b"5: LinkUp\n", b"100 Gb/sec (1X NDR)\n"),
    (["--width", "2X"], b"4: ACTIVE\n", b"5: LinkUp\n", b"200 Gb/sec (2X NDR)\n"),
    (["--width", "1x", "--rate", "100"], b"4: ACTIVE\n", b"5: LinkUp\n", b"100 Gb/sec (1X NDR)\n"),
])
def test_ib_command_changes_one_port(node, argv, state, phys, rate):
    node.create("h100-80gb-x8")
    healthy = _tree(node.root / IB_ROOT)
    node.cli("ib", "--hca", "mlx5_3", *argv)
    assert _port(node, "mlx5_3") == {"state": state, "phys_state": phys, "rate": rate, "link_layer": b"InfiniBand\n"}
    changed = {path for path, data in _tree(node.root / IB_ROOT).items() if healthy[path] != data}
    assert changed <= {"mlx5_3/ports/1/state", "mlx5_3/ports/1/phys_state", "mlx5_3/ports/1/rate"} and changed


def test_rate_is_lanes_times_the_lane_speed_on_hdr(node):
    node.create("a100-40gb-x8")
    node.cli("ib", "--hca", "mlx5_7", "--rate", "100")
    assert _port(node, "mlx5_7")["rate"] == b"100 Gb/sec (2X HDR)\n"
    node.cli("ib", "--hca", "mlx5_7", "--rate", "50")
    assert _port(node, "mlx5_7")["rate"] == b"50 Gb/sec (1X HDR)\n"
    assert cli.main(["ib", "--hca", "mlx5_7", "--rate", "400"]) == 2   # HDR 4X is 200 at most


@pytest.mark.parametrize("speed, width, text", [
    ("NDR", 4, "400 Gb/sec (4X NDR)"), ("NDR", 2, "200 Gb/sec (2X NDR)"), ("HDR", 4, "200 Gb/sec (4X HDR)"),
    ("HDR", 1, "50 Gb/sec (1X HDR)"), ("EDR", 4, "100 Gb/sec (4X EDR)"), ("EDR", 1, "25 Gb/sec (1X EDR)"),
])
def test_rate_text_is_the_kernels_rate_show(speed, width, text):
    assert ib.rate_text(speed, width) == text


def test_counters_are_set_and_written_as_decimal_lines(node):
    node.create("h100-80gb-x8")
    out = node.cli("ib", "--hca", "mlx5_1", "--counter", "symbol_error=12", "--counter", "link_downed=3",
                   "--counter", "port_xmit_data=18446744073709551615")
    base = node.root / IB_ROOT / "mlx5_1" / "ports" / "1" / "counters"
    assert (base / "symbol_error").read_bytes() == b"12\n"
    assert (base / "link_downed").read_bytes() == b"3\n"
    assert (base / "port_xmit_data").read_bytes() == b"18446744073709551615\n"
    assert (base / "port_rcv_errors").read_bytes() == b"0\n"
    assert "symbol_error=12" in out and "link_downed=3" in out
    node.cli("ib", "--hca", "mlx5_1", "--counter", "symbol_error=2")        # set, not added
    assert (base / "symbol_error").read_bytes() == b"2\n" and (base / "link_downed").read_bytes() == b"3\n"
    assert _port(node, "mlx5_1")["state"] == b"4: ACTIVE\n"                   # counters alone leave the link up


@pytest.mark.parametrize("preset, argv, message", [
    ("h100-80gb-x8", ["--hca", "mlx5_9", "--state", "down"],
     "unknown HCA 'mlx5_9'; valid: mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--port", "2", "--state", "down"], "mlx5_0 has no port 2; valid: 1"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--state", "up"], "unknown port state 'up'; valid: down, init, armed, active"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--phys-state", "sleeping"],
     "unknown physical state 'sleeping'; valid: polling, disabled, linkup"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--counter", "crc=4"], "unknown counter 'crc'; valid: symbol_error, "),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--counter", "symbol_error"], "--counter 'symbol_error': give NAME=K"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--counter", "symbol_error=-1"], "--counter 'symbol_error=-1': give NAME=K"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--rate", "300"],
     "rate 300 Gb/s: a NDR port runs at 100, 200, 400 Gb/s (1X, 2X, 4X)"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--width", "8X"], "width 8X: valid 1X, 2X, 4X"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--width", "wide"], "--width 'wide': give 1X, 2X or 4X"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--rate", "200", "--width", "4X"], "--rate 200 and --width 4X disagree"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--state", "active", "--phys-state", "polling"],
     "port state active needs the physical link up (linkup), not polling"),
    ("h100-80gb-x8", ["--hca", "mlx5_0"], "ib needs --state, --phys-state, --rate, --width, --counter NAME=K or --restore"),
    ("h100-80gb-x8", ["--hca", "mlx5_0", "--restore", "--state", "down"], "ib --restore takes no other change"),
    ("l40s-x4", ["--hca", "mlx5_0", "--state", "down"], "HCA 'mlx5_0': this node (l40s-x4) has no InfiniBand HCA"),
    ("a100-80gb-pcie-x4", ["--hca", "mlx5_0", "--rate", "200"], "this node (a100-80gb-pcie-x4) has no InfiniBand HCA"),
])
def test_bad_ib_commands_exit_2_naming_the_value_and_change_nothing(node, capsys, preset, argv, message):
    node.create(preset)
    if preset == "h100-80gb-x8":
        node.cli("ib", "--hca", "mlx5_0", "--counter", "link_downed=1")
    before_state = open(os.environ["NVMLSIM_STATE"], "rb").read()
    before_tree = _tree(node.root / IB_ROOT)
    capsys.readouterr()
    assert cli.main(["ib"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nvmlsim: error: ") and err.count("\n") == 1 and message in err, err
    assert open(os.environ["NVMLSIM_STATE"], "rb").read() == before_state
    assert _tree(node.root / IB_ROOT) == before_tree


def test_restore_puts_the_presets_healthy_port_back(node):
    node.create("h200-x8")
    healthy = _tree(node.root / IB_ROOT)
    node.cli("ib", "--hca", "mlx5_5", "--state", "down", "--rate", "100", "--counter", "symbol_error=9")
    node.cli("ib", "--hca", "mlx5_6", "--state", "init")
    node.cli("ib", "--hca", "mlx5_5", "--restore")
    tree = _tree(node.root / IB_ROOT)
    assert {p for p in tree if tree[p] != healthy[p]} == {"mlx5_6/ports/1/state"}
    assert node.state["ib"] == {"mlx5_6": {"1": {"state": "init", "phys_state": "linkup"}}}
    node.cli("ib", "--hca", "mlx5_6", "--restore")
    assert _tree(node.root / IB_ROOT) == healthy and node.state["ib"] == {}


def test_boot_rewrites_the_tree_from_the_state_and_is_idempotent(node):
    node.create("h100-80gb-x8")
    node.cli("ib", "--hca", "mlx5_2", "--state", "down", "--counter", "link_downed=1")
    faulty = _tree(node.root / IB_ROOT)
    os.unlink(str(node.root / IB_ROOT / "mlx5_2" / "ports" / "1" / "state"))
    (node.root / IB_ROOT / "mlx5_4" / "ports" / "1" / "rate").write_text("garbage\n")
    node.cli("boot")
    assert _tree(node.root / IB_ROOT) == faulty
    node.cli("boot")
    assert _tree(node.root / IB_ROOT) == faulty


def test_ib_faults_survive_reset_and_reboot(node):
    node.create("h100-80gb-x8")
    node.cli("ib", "--hca", "mlx5_0", "--state", "down", "--counter", "symbol_error=7")
    faulty = _tree(node.root / IB_ROOT)
    node.cli("reset", "--gpu", "0")
    node.cli("reboot")
    assert _tree(node.root / IB_ROOT) == faulty
    assert _port(node, "mlx5_0")["state"] == b"1: DOWN\n"


def test_ib_root_is_stored_at_create_and_a_new_preset_replaces_the_hcas(node, tmp_path):
    where = tmp_path / "elsewhere" / "infiniband"
    node.create("a100-40gb-x8", "--ib-root", str(where))
    assert node.state["ib_root"] == str(where)
    assert sorted(os.listdir(where)) == ["mlx5_%d" % i for i in range(8)]
    assert not (node.root / IB_ROOT).exists()
    node.cli("ib", "--hca", "mlx5_1", "--phys-state", "disabled")
    assert _port(node, "mlx5_1", root=where)["phys_state"] == b"3: Disabled\n"
    node.create("l40s-x4", "--force", "--ib-root", str(where))
    assert os.listdir(where) == []


def test_show_json_shows_the_ib_state(node):
    node.create("h100-80gb-x8")
    node.cli("ib", "--hca", "mlx5_3", "--state", "down", "--counter", "port_rcv_errors=4")
    shown = node.show_json()
    assert shown["infiniband"]["root"] == str(node.root / IB_ROOT)
    port = shown["infiniband"]["hcas"]["mlx5_3"]["1"]
    assert (port["state"], port["phys_state"], port["rate"], port["counters"]["port_rcv_errors"]) == (
        "1: DOWN", "2: Polling", "400 Gb/sec (4X NDR)", 4)
    assert shown["infiniband"]["hcas"]["mlx5_0"]["1"]["state"] == "4: ACTIVE"
    assert shown["ib"] == {"mlx5_3": {"1": {"state": "down", "phys_state": "polling", "counters": {"port_rcv_errors": 4}}}}
    assert "IB mlx5_3 port 1  1: DOWN  2: Polling  400 Gb/sec (4X NDR)  counters: port_rcv_errors 4" in node.cli("show")
    node.create("l40s-x4", "--force")
    assert json.loads(node.cli("show", "--json"))["infiniband"]["hcas"] == {}
