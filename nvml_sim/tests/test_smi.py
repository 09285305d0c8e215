"""The nvidia-smi STAND-IN (nvmlsim.smi) against recorded output of the real nvidia-smi.

Each ``REAL_*`` line below was copied from public transcripts of NVIDIA's
nvidia-smi (documentation pages, issue threads, blog posts found with the
search tool; UUIDs and numbers vary per machine).  The tests compare the
stand-in's output with them after replacing what differs per machine (hex
digits of UUIDs, numbers, names) by placeholders, so a change of spacing,
separators, units or wording fails.
"""
import os
import re
import subprocess

import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import cli, node as simnode, smi, store

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(HERE, "..", "bin", "nvidia-smi")

# nvidia-smi -L, A100-SXM4-80GB with 1g.10gb instances (public MIG tutorial).
REAL_GPU_LINE = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-9434a402-0d94-4ef8-93d0-0528ee662e9c)"
REAL_MIG_LINE = "  MIG 1g.10gb     Device  0: (UUID: MIG-e138a708-679d-5075-ab88-ba8e298ec5d3)"
# nvidia-smi -L, A100-PCIE-40GB with a 1g.5gb instance (a Go test fixture of real output).
REAL_MIG_LINE_5GB = "  MIG 1g.5gb      Device  0: (UUID: MIG-a9aaa9b9-3415-5b83-baab-d52b391db3ac)"
# --query-gpu=index,uuid,...,memory.used --format=csv (a benchmark log).
REAL_QUERY_HEADER_UNITS = "index, uuid, memory.used [MiB]"
REAL_QUERY_ROW_UNITS = "0, GPU-e82ab913-2d6b-1a55-89a8-9ad23a5a09cf, 529 MiB"
# --query-gpu=index,name,pci.bus_id --format=csv,noheader,nounits (an issue thread).
REAL_QUERY_ROW_NOUNITS = "0, Tesla PG500-216, 00000000:17:00.0"
# --query-compute-apps=pid,used_memory --format=csv and the same with noheader,nounits.
REAL_APPS_HEADER = "pid, used_gpu_memory [MiB]"
REAL_APPS_ROW = "4135549, 7242 MiB"
REAL_APPS_ROW_NOUNITS = "80613, 92908"
# Errors, each with the exit status the transcript or nvidia-smi(1) "RETURN VALUE" gives.
REAL_BAD_FIELD = 'Field "clocks.applications.sm" is not a valid field to query.'
REAL_BAD_OPTION = "ERROR: Option -lms100 is not recognized. Please run 'nvidia-smi -h' for help."
REAL_NO_FORMAT = '"--format=" switch is missing. Please run \'nvidia-smi -h\' for help'
REAL_NO_DEVICES = "No devices were found"
REAL_RESET_BUSY = ("The following GPUs could not be reset:\n  GPU 00000000:0B:00.0: In use by another client\n\n"
                   "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
                   "application, graphics application such as an X server, or a monitoring application such as another "
                   "instance of nvidia-smi). Please first kill all processes using this device and all compute "
                   "applications running in the system.\n")


def shape(text):
    """What must agree with the real output: UUID hex, numbers and model names are placeholders."""
    text = re.sub(r"(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", r"\1-<uuid>", text)
    text = re.sub(r"\b[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.0\b", "<bus>", text)
    text = re.sub(r"(NVIDIA|Tesla) [^,()]+?(?=,| \(UUID|$)", "<name>", text)
    return re.sub(r"\b\d+\b", "<n>", text)


def smi_run(*argv):
    return smi.run(list(argv))


def make_mig(index, profile_id, count):
    """Enable MIG on GPU ``index`` and create ``count`` GIs of ``profile_id`` with one full CI each."""
    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        pynvml.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
        with store.transaction() as state:
            simnode.reset_gpu(simnode.gpu_by_index(state, index))
        info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, {19: pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE}[profile_id])
        for _ in range(count):
            gi = pynvml.nvmlDeviceCreateGpuInstance(handle, info.id)
            ci_info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
            pynvml.nvmlGpuInstanceCreateComputeInstance(gi, ci_info.id)
    finally:
        pynvml.nvmlShutdown()


def test_list_gpus_matches_the_real_format(node):
    node.create("seed-003")
    rc, out = smi_run("-L")
    lines = out.splitlines()
    assert rc == 0
    assert shape(lines[0]) == shape(REAL_GPU_LINE)
    assert lines[0] == "GPU 0: NVIDIA A100 80GB PCIe (UUID: %s)" % node.state["gpus"][0]["uuid"]
    mig = [line for line in lines if line.startswith("  MIG")]
    assert len(mig) == 14 and len(lines) == 18
    assert shape(mig[0]) == shape(REAL_MIG_LINE)
    assert mig[0] == REAL_MIG_LINE[:REAL_MIG_LINE.index("MIG-")] + node.state["gpus"][2]["gpu_instances"][0]["compute_instances"][0]["uuid"] + ")"
    assert lines[3:10] == mig[:7] and lines[2].startswith("GPU 2: ") and lines[10].startswith("GPU 3: ")


def test_list_gpus_pads_shorter_profile_names_like_the_real_one(node):
    node.create("a100-40gb-x8")
    make_mig(0, 19, 2)
    lines = smi_run("-L", "-i", "0")[1].splitlines()
    assert [shape(line) for line in lines] == [shape(REAL_GPU_LINE), shape(REAL_MIG_LINE_5GB), shape(REAL_MIG_LINE_5GB)]
    assert lines[2].startswith("  MIG 1g.5gb      Device  1: (UUID: MIG-")


@pytest.mark.parametrize("argv, expected", [
    (["--query-gpu=index,uuid,memory.used", "--format=csv"], [REAL_QUERY_HEADER_UNITS] + [REAL_QUERY_ROW_UNITS] * 8),
    (["--query-gpu=index,name,pci.bus_id", "--format=csv,noheader,nounits"], [REAL_QUERY_ROW_NOUNITS] * 8),
    (["--query-gpu", "index,uuid,memory.used", "--format", "csv"], [REAL_QUERY_HEADER_UNITS] + [REAL_QUERY_ROW_UNITS] * 8),
])
def test_query_gpu_matches_the_real_format(node, argv, expected):
    node.create("h100-80gb-x8")
    rc, out = smi_run(*argv)
    assert rc == 0
    assert [shape(line) for line in out.splitlines()] == [shape(line) for line in expected]


def test_query_gpu_values_come_from_the_simulator(node):
    node.create("seed-003")
    fields = ("index,name,uuid,pci.bus_id,memory.total,mig.mode.current,mig.mode.pending,"
              "ecc.errors.uncorrected.volatile.total,retired_pages.pending,driver_version,count,compute_cap")
    rc, out = smi_run("--query-gpu=" + fields, "--format=csv")
    lines = out.splitlines()
    assert rc == 0
    assert lines[0] == ("index, name, uuid, pci.bus_id, memory.total [MiB], mig.mode.current, mig.mode.pending, "
                        "ecc.errors.uncorrected.volatile.total, retired_pages.pending, driver_version, count, compute_cap")
    gpu3 = node.state["gpus"][3]
    # an A100 remaps rows: retired_pages.pending is [N/A] (as on a real H200, driver 580.159.04)
    assert lines[4] == "3, NVIDIA A100 80GB PCIe, %s, 00000000:E3:00.0, 81920 MiB, Enabled, Enabled, 0, [N/A], 535.129.03, 4, 8.0" % (
        gpu3["uuid"])
    assert lines[1].split(", ")[5:7] == ["Disabled", "Disabled"]
    node.cli("ecc", "--gpu", "1", "--uncorrected", "3", "--remap-pending", "yes")
    out = smi_run("--query-gpu=index,ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure,"
                  "remapped_rows.uncorrectable", "--format=csv,noheader")[1]
    # GPUs 2 and 3 hold MIG instances: NVML reports no remapped rows there
    assert out.splitlines() == ["0, 0, No, No, 0", "1, 3, Yes, No, 1", "2, 0, [N/A], [N/A], [N/A]",
                                "3, 0, [N/A], [N/A], [N/A]"]


def test_no_mig_gpu_reports_na(node):
    node.create("l40s-x4")
    out = smi_run("--query-gpu=index,mig.mode.current,mig.mode.pending", "--format=csv,noheader", "-i", "0")[1]
    assert out == "0, [N/A], [N/A]\n"
    assert smi_run("-L")[1].count("\n") == 4


@pytest.mark.parametrize("ident", ["2", "GPU-from-state", "00000000:CA:00.0", "0000:CA:00.0", "7,2"])
def test_id_selects_by_index_uuid_or_bus_id(node, ident):
    node.create("a100-80gb-pcie-x4")
    if ident == "GPU-from-state":
        ident = node.state["gpus"][2]["uuid"]
    assert smi_run("--query-gpu=index", "--format=csv,noheader", "--id=" + ident) == (0, "2\n")


def test_compute_apps_match_the_real_format_and_the_simulator(node):
    node.create("seed-003")
    node.cli("process", "add", "--gpu", "1", "--pid", "4135549", "--name", "python3", "--used-mib", "7242")
    node.cli("process", "add", "--gpu", "2", "--pid", "80613", "--name", "python3", "--used-mib", "9000", "--gi", "7", "--ci", "0")
    rc, out = smi_run("--query-compute-apps=pid,used_memory", "--format=csv")
    assert rc == 0
    assert [shape(line) for line in out.splitlines()] == [shape(REAL_APPS_HEADER), shape(REAL_APPS_ROW), shape(REAL_APPS_ROW)]
    out = smi_run("--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits")[1]
    gpus = node.state["gpus"]
    assert out.splitlines() == ["4135549, 7242, %s" % gpus[1]["uuid"], "80613, 9000, %s" % gpus[2]["uuid"]]
    assert shape(out.splitlines()[1].rsplit(", ", 1)[0]) == shape(REAL_APPS_ROW_NOUNITS)
    out = smi_run("--query-compute-apps=pid,process_name,gpu_bus_id", "--format=csv", "-i", "1")[1]
    assert out == "pid, process_name, gpu_bus_id\n4135549, python3, 00000000:65:00.0\n"


def test_no_compute_apps_prints_only_the_header(node):
    node.create("h100-80gb-x8")
    assert smi_run("--query-compute-apps=pid,used_memory", "--format=csv") == (0, REAL_APPS_HEADER + "\n")
    assert smi_run("--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits") == (0, "")


def test_failing_nvml_call_shows_unknown_error_in_the_field(node):
    node.create("h100-80gb-x8")
    node.cli("inject", "--call", "nvmlDeviceGetTotalEccErrors", "--error", "NVML_ERROR_GPU_IS_LOST")
    node.cli("inject", "--call", "nvmlDeviceGetRetiredPagesPendingStatus", "--error", "NVML_ERROR_NOT_SUPPORTED")
    node.cli("inject", "--call", "nvmlDeviceGetName", "--error", "NVML_ERROR_NO_PERMISSION")
    node.cli("inject", "--call", "nvmlDeviceGetUUID", "--error", "NVML_ERROR_UNKNOWN")
    out = smi_run("--query-gpu=index,ecc.errors.uncorrected.volatile.total,retired_pages.pending,name,uuid",
                  "--format=csv,noheader")[1]
    assert out.splitlines()[0] == "0, [GPU is lost], [N/A], [Insufficient Permissions], [Unknown Error]"
    assert out.splitlines()[1].startswith("1, 0, [N/A], NVIDIA H100 80GB HBM3, GPU-")   # Hopper: no page retirement


@pytest.mark.parametrize("argv, rc, text", [
    (["--query-gpu=index,clocks.applications.sm", "--format=csv"], 2, REAL_BAD_FIELD + "\n"),
    (["--query-compute-apps=pid,temperature.gpu", "--format=csv"], 2, 'Field "temperature.gpu" is not a valid field to query.\n'),
    (["-lms100"], 2, REAL_BAD_OPTION + "\n"),
    (["--query-gpu=index"], 2, REAL_NO_FORMAT + ".\n"),
    (["--query-gpu=index", "--format=xml"], 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (["-L", "--query-gpu=index", "--format=csv"], 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (["--query-gpu"], 2, "ERROR: Option --query-gpu is missing its value. Please run 'nvidia-smi -h' for help.\n"),
    ([], 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help. (this STAND-IN has no default "
     "summary table; use -L, --query-gpu or --query-compute-apps)\n"),
    (["-L", "-i", "5"], 6, REAL_NO_DEVICES + "\n"),
    (["--query-gpu=index", "--format=csv,noheader", "-i", "GPU-00000000-0000-0000-0000-000000000000"], 6, REAL_NO_DEVICES + "\n"),
    (["--gpu-reset"], 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help. "
     "(this STAND-IN resets only with -i ID)\n"),
])
def test_bad_input_gets_the_real_error_and_exit_status(node, argv, rc, text):
    node.create("a100-80gb-pcie-x4")
    assert smi_run(*argv) == (rc, text)


def test_help_names_it_a_stand_in():
    rc, out = smi_run("-h")
    assert rc == 0
    assert "STAND-IN on the NVML simulator" in out and "ecc.errors.uncorrected.volatile.total" in out


def test_no_state_is_a_missing_driver(sim_env):
    assert smi_run("-L") == (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                "Make sure that the latest NVIDIA driver is installed and running.\n")


def test_unreadable_state_and_failing_calls(node):
    node.create("h100-80gb-x8")
    node.cli("inject", "--call", "nvmlDeviceGetCount", "--error", "NVML_ERROR_UNKNOWN")
    assert smi_run("-L") == (255, "Unable to determine the device handle for GPU: Unknown Error\n")
    with open(os.environ["NVMLSIM_STATE"], "w") as handle:
        handle.write("{broken")
    assert smi_run("-L") == (255, "Failed to initialize NVML: Unknown Error\n")


def test_gpu_reset_uses_the_simulated_reset(node):
    node.create("a100-80gb-pcie-x4")
    pynvml.nvmlInit()
    pynvml.nvmlDeviceSetMigMode(pynvml.nvmlDeviceGetHandleByIndex(1), pynvml.NVML_DEVICE_MIG_ENABLE)
    pynvml.nvmlShutdown()
    node.cli("ecc", "--gpu", "1", "--uncorrected", "2", "--remap-pending", "yes")
    node.cli("process", "add", "--gpu", "1", "--pid", "4242", "--name", "python3")
    rc, out = smi_run("--gpu-reset", "-i", "1")
    assert (rc, shape(out)) == (255, shape(REAL_RESET_BUSY))
    assert node.state["gpus"][1]["mig_current"] == 0
    node.cli("process", "remove", "--pid", "4242")
    assert smi_run("-r", "-i", "1") == (0, "GPU 00000000:65:00.0 was successfully reset.\nAll done.\n")
    gpu = node.state["gpus"][1]
    assert gpu["mig_current"] == 1
    # the reset applied the pending row remapping: the count stays, nothing is pending
    assert gpu["ecc"] == {"corrected_volatile": 0, "uncorrected_volatile": 0, "corrected_aggregate": 0,
                          "uncorrected_aggregate": 2, "retired_pages_pending": False, "remapped_correctable": 0,
                          "remapped_uncorrectable": 1, "remap_pending": False, "remap_failure": False}


def test_wrapper_runs_from_the_checkout(node):
    node.create("h100-80gb-x8")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    result = subprocess.run([WRAPPER, "--query-gpu=index,memory.total", "--format=csv,noheader,nounits", "-i", "7"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "7, 81559\n", "")
    result = subprocess.run([WRAPPER, "--nope"], stdout=subprocess.PIPE, universal_newlines=True, env=env, check=False)
    assert result.returncode == 2 and result.stdout.startswith("ERROR: Option --nope is not recognized.")


# ------------------------------------------------------------- the simulator's memory-error state

def test_ecc_command_and_reset_semantics(node, capsys):
    node.create("h100-80gb-x8")
    assert cli.main(["ecc", "--gpu", "2", "--uncorrected", "1", "--corrected", "4"]) == 0
    assert capsys.readouterr().out == ("GPU 2: ECC errors since reset: 4 corrected, 1 uncorrected (aggregate 4, 1); "
                                       "retired pages pending: no\n")
    assert cli.main(["ecc", "--gpu", "3", "--remap-pending", "yes", "--remap-failure", "yes"]) == 0
    assert capsys.readouterr().out == ("GPU 3: ECC errors since reset: 0 corrected, 0 uncorrected (aggregate 0, 0); "
                                       "rows remapped 0 correctable, 1 uncorrectable; remap pending: yes; remap failure: yes\n")
    assert "    ECC errors since reset: 4 corrected, 1 uncorrected" in cli.run(["show"])
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(2)
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC) == 1
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_AGGREGATE_ECC) == 4
    with pytest.raises(pynvml.NVMLError_NotSupported):   # Hopper remaps rows (seen on a real H200)
        pynvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)
    assert pynvml.nvmlDeviceGetRemappedRows(handle) == (0, 0, 0, 0)
    assert pynvml.nvmlDeviceGetRemappedRows(pynvml.nvmlDeviceGetHandleByIndex(3)) == (0, 1, 1, 1)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetTotalEccErrors(handle, 5, pynvml.NVML_VOLATILE_ECC)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetTotalEccErrors(handle, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, 7)
    pynvml.nvmlShutdown()
    node.cli("reboot")
    assert node.state["gpus"][2]["ecc"]["uncorrected_volatile"] == 0
    assert node.state["gpus"][2]["ecc"]["uncorrected_aggregate"] == 1
    assert (node.state["gpus"][3]["ecc"]["remap_pending"], node.state["gpus"][3]["ecc"]["remap_failure"]) == (False, True)


@pytest.mark.parametrize("argv, message", [
    (["ecc", "--gpu", "1"], "nvmlsim: error: ecc needs --uncorrected K, --corrected K, --retired-pages-pending yes|no, "
                            "--remap-pending yes|no or --remap-failure yes|no\n"),
    (["ecc", "--gpu", "1", "--remap-pending", "yes"],
     "nvmlsim: error: GPU 1 (NVIDIA L40S) retires pages and has no row remapping; use --retired-pages-pending\n"),
    (["ecc", "--gpu", "9", "--uncorrected", "1"], "nvmlsim: error: no GPU with index 9; this node has indices 0, 1, 2, 3\n"),
])
def test_ecc_bad_input(node, capsys, argv, message):
    node.create("l40s-x4")
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == message


def test_negative_ecc_counts_are_refused(node):
    node.create("l40s-x4")
    with pytest.raises(simnode.SimError) as info:
        simnode.add_memory_errors(node.state["gpus"][0], corrected=-1)
    assert info.value.message == "ECC error counts must be 0 or more, got corrected -1, uncorrected 0"
