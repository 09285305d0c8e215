"""The node's multi-node NVLink domain (``nvmlsim fabric-domain``): the cluster UUID and clique id that
nvmlDeviceGetGpuFabricInfo(V) report -- zeros by default (a single-node HGX board), the domain while the fabric
is COMPLETED, zeros while the fabric manager is stopped or starting; refused on nodes without GPU fabric info or
without NVSwitch and for bad values (nothing changed) -- through the Python API and through the real
nvidia-ml-py over the simulated C library.
"""
import contextlib
import ctypes
import json
import re
import uuid

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import cli

from test_health import nvml  # noqa: F401  pylint: disable=unused-import  (the h100-80gb-x8 node, NVML open)
from test_libnvml import READY, REQUIRED, library, run_client  # noqa: F401  pylint: disable=unused-import

UUID = "8e1f2a3b-0000-4c1d-9a7e-000000000a01"
UUID_BYTES = list(uuid.UUID(UUID).bytes)
ZEROS = [0] * 16
STRUCTURES = (pynvml.c_nvmlGpuFabricInfo_t, pynvml.c_nvmlGpuFabricInfo_v2_t, pynvml.c_nvmlGpuFabricInfo_v3_t)


def _fabric(index, cls):
    info = cls()
    func = pynvml.nvmlDeviceGetGpuFabricInfo if cls is pynvml.c_nvmlGpuFabricInfo_t else pynvml.nvmlDeviceGetGpuFabricInfoV
    assert func(pynvml.nvmlDeviceGetHandleByIndex(index), ctypes.byref(info)) == pynvml.NVML_SUCCESS
    return [info.state, info.status, list(info.clusterUuid), info.cliqueId]


def _every_gpu(state, uuid_bytes, clique):
    status = pynvml.NVML_SUCCESS if state == pynvml.NVML_GPU_FABRIC_STATE_COMPLETED else pynvml.NVML_ERROR_NOT_READY
    for index in range(8):
        for cls in STRUCTURES:
            assert _fabric(index, cls) == [state, status, uuid_bytes, clique], (index, cls.__name__)


def test_default_is_zeros_as_a_single_node_hgx_h100(nvml):  # noqa: F811
    """nvidia-smi -q on a real 8 x H100 SXM5 (driver 565.57.01): State Completed, Status Success, CliqueId 0,
    ClusterUUID 00000000-0000-0000-0000-000000000000."""
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, ZEROS, 0)


def test_set_show_and_clear(node, nvml):  # noqa: F811
    out = node.cli("fabric-domain", "--cluster-uuid", UUID.upper(), "--clique", "32766")
    assert out == "NVLink domain: cluster UUID %s, clique 32766 (reported)" % UUID
    assert node.state["fabric_domain"] == {"cluster_uuid": UUID, "clique_id": 32766}
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, UUID_BYTES, 32766)
    assert node.show_json()["fabric_domain"] == {"cluster_uuid": UUID, "clique_id": 32766, "reported": True}
    assert "NVLink domain: cluster UUID %s, clique 32766 (reported)" % UUID in node.cli("show").splitlines()
    node.cli("fabric-domain", "--cluster-uuid", UUID, "--clique", "0")          # clique 0 is a clique
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, UUID_BYTES, 0)
    assert node.cli("fabric-domain", "--clear") == "NVLink domain: none (cluster UUID zeros, clique 0)"
    assert "fabric_domain" not in node.state and node.show_json()["fabric_domain"] is None
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, ZEROS, 0)
    node.cli("fabric-domain", "--clear")                                          # clearing twice is fine


def test_zeros_until_the_fabric_manager_registers_the_gpus(node, nvml):  # noqa: F811
    node.cli("fabric-domain", "--cluster-uuid", UUID, "--clique", "5")
    node.cli("fabric-manager", "--state", "stopped")
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_NOT_STARTED, ZEROS, 0)
    assert node.show_json()["fabric_domain"]["reported"] is False
    assert "(zeros until the fabric manager runs)" in node.cli("show")
    node.cli("fabric-manager", "--state", "starting")
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS, ZEROS, 0)
    node.cli("fabric-manager", "--state", "running")
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, UUID_BYTES, 5)
    node.cli("reboot")                                   # the cabling stays; the fabric manager starts at boot
    _every_gpu(nvml.NVML_GPU_FABRIC_STATE_COMPLETED, UUID_BYTES, 5)


@pytest.mark.parametrize("preset, edit, message", [
    ("a100-40gb-x8", None, r"this node's GPUs \(NVIDIA A100-SXM4-40GB\) report no GPU fabric info "
                           r"\(nvmlDeviceGetGpuFabricInfo is Hopper or newer\)"),
    ("l40s-x4", None, r"this node \(l40s-x4\) has no NVSwitch: no NVLink fabric domain"),
    ("h100-80gb-x8", lambda state: state.pop("nvswitch"), r"this node \(h100-80gb-x8\) has no NVSwitch"),
])
def test_refused_without_gpu_fabric_info_or_nvswitch(node, capsys, preset, edit, message):
    node.create(preset)
    if edit:
        node.edit(edit)
    before = node.state
    for argv in (["--cluster-uuid", UUID, "--clique", "1"], ["--clear"]):
        assert cli.main(["fabric-domain"] + argv) == 2
        assert re.search(message, capsys.readouterr().err)
    assert node.state == before


@pytest.mark.parametrize("argv, message", [
    (["--cluster-uuid", "8e1f2a3b00004c1d9a7e000000000a01", "--clique", "1"],
     r"cluster UUID '8e1f2a3b00004c1d9a7e000000000a01': give the 16 bytes as 32 hex digits in the form 8-4-4-4-12"),
    (["--cluster-uuid", "{%s}" % UUID, "--clique", "1"], r"cluster UUID '\{8e1f2a3b-.*\}': give the 16 bytes"),
    (["--cluster-uuid", UUID.replace("a01", "g01"), "--clique", "1"], r"cluster UUID '8e1f2a3b-0000-4c1d-9a7e-000000000g01'"),
    (["--cluster-uuid", UUID + "0", "--clique", "1"], r"cluster UUID '8e1f2a3b-0000-4c1d-9a7e-000000000a010'"),
    (["--cluster-uuid", "", "--clique", "1"], r"cluster UUID '': give the 16 bytes"),
    (["--cluster-uuid", "00000000-0000-0000-0000-000000000000", "--clique", "1"],
     r"cluster UUID 00000000-0000-0000-0000-000000000000 is all zeros, which NVML reports for no NVLink domain; "
     r"clear the domain instead"),
    (["--cluster-uuid", UUID, "--clique", "4294967296"],
     r"clique id 4294967296: give a whole number from 0 to 4294967295 \(nvmlGpuFabricInfo_t cliqueId"),
    (["--cluster-uuid", UUID, "--clique", "-1"], r"argument --clique: -1 is negative; give 0 or more"),
    (["--cluster-uuid", UUID, "--clique", "x"], r"argument --clique: 'x' is not a whole number"),
    (["--cluster-uuid", UUID], r"fabric-domain needs --cluster-uuid UUID and --clique N together, or --clear alone"),
    (["--clique", "1"], r"needs --cluster-uuid UUID and --clique N together"),
    ([], r"needs --cluster-uuid UUID and --clique N together"),
    (["--clear", "--clique", "1"], r"or --clear alone"),
    (["--clear", "--cluster-uuid", UUID, "--clique", "1"], r"or --clear alone"),
])
def test_bad_input_names_the_value_and_changes_nothing(node, capsys, argv, message):
    node.create("h100-80gb-x8")
    node.cli("fabric-domain", "--cluster-uuid", UUID, "--clique", "3")
    before = node.state
    with pytest.raises(SystemExit) if argv[-1:] in (["-1"], ["x"]) else contextlib.nullcontext():   # argparse's own
        assert cli.main(["fabric-domain"] + argv) == 2
    assert re.search(message, capsys.readouterr().err)
    assert node.state == before


CLIENT = """
import ctypes, json, pynvml
pynvml.nvmlInit()
out = {}
for index in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    for cls, func in ((pynvml.c_nvmlGpuFabricInfo_t, pynvml.nvmlDeviceGetGpuFabricInfo),
                      (pynvml.c_nvmlGpuFabricInfo_v2_t, pynvml.nvmlDeviceGetGpuFabricInfoV),
                      (pynvml.c_nvmlGpuFabricInfo_v3_t, pynvml.nvmlDeviceGetGpuFabricInfoV)):
        info = cls()
        try:
            func(h, ctypes.byref(info))
            out["%d %s" % (index, cls.__name__)] = [info.state, info.status, list(info.clusterUuid), info.cliqueId]
        except pynvml.NVMLError as exc:
            out["%d %s" % (index, cls.__name__)] = "error %d" % exc.value
pynvml.nvmlShutdown()
print(json.dumps(out, sort_keys=True))
"""


def _through_library(library):  # noqa: F811
    result = run_client(library, CLIENT)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.skipif(not READY and not REQUIRED, reason="set NVMLSIM_NVML_INCLUDE and NVMLSIM_REAL_PYNVML")
def test_the_real_binding_over_the_library_reads_the_domain(node, library):  # noqa: F811
    node.create("h100-80gb-x8")
    completed, not_started = pynvml.NVML_GPU_FABRIC_STATE_COMPLETED, pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED

    def expect(state, status, uuid_bytes, clique):
        return dict(("%d %s" % (index, cls.__name__), [state, status, uuid_bytes, clique])
                    for index in range(8) for cls in STRUCTURES)
    assert _through_library(library) == expect(completed, 0, ZEROS, 0)
    node.cli("fabric-domain", "--cluster-uuid", "ffeeddcc-bbaa-9988-7766-554433221100", "--clique", "4294967295")
    assert _through_library(library) == expect(completed, 0, list(range(0xFF, -1, -0x11)), 4294967295)
    node.cli("fabric-manager", "--state", "stopped")
    assert _through_library(library) == expect(not_started, pynvml.NVML_ERROR_NOT_READY, ZEROS, 0)
    node.cli("fabric-manager", "--state", "running")
    node.cli("fabric-domain", "--clear")
    assert _through_library(library) == expect(completed, 0, ZEROS, 0)


@pytest.mark.skipif(not READY and not REQUIRED, reason="set NVMLSIM_NVML_INCLUDE and NVMLSIM_REAL_PYNVML")
def test_the_real_binding_on_an_a100_is_not_supported(node, library):  # noqa: F811
    node.create("a100-40gb-x8")
    answers = _through_library(library)
    assert set(answers.values()) == {"error %d" % pynvml.NVML_ERROR_NOT_SUPPORTED}
