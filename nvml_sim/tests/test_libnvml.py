"""The simulated libnvidia-ml.so.1 (nvml_sim/libnvml) under the REAL nvidia-ml-py.

The library is compiled here against NVIDIA's nvml.h (Debian's
libnvidia-ml-dev; ``NVMLSIM_NVML_INCLUDE`` names its directory, the test
command fetches it) and loaded by the pinned nvidia-ml-py's own ``pynvml.py``
(``NVMLSIM_REAL_PYNVML``), each client in a process of its own with
``LD_LIBRARY_PATH`` pointing at the build.  What is checked:

- every answer of the read-only survey (nvmlsim.parity) through the real
  binding and the C library equals the simulator's Python answer, on nodes
  with MIG instances, with MIG off and without MIG;
- the probe that recorded a real H200 (nvml_sim/real_probe.py), run with the
  real binding over the library, answers as the real driver did (the same
  comparison as test_real_h200.py, now through ctypes and C structures);
- the library itself: UNINITIALIZED before nvmlInit, nvmlInit/nvmlShutdown
  counted, NULL pointers, short buffers, error strings, as recorded;
- an ``nvmlsim`` command is seen by a client at its next call (one source
  of truth), MIG changes made through the library are in the state;
- an entry point NVIDIA exports but the simulator does not implement answers
  NOT_SUPPORTED (named with NVMLSIM_DEBUG=1), a name NVIDIA does not export is
  not found.
Outside the test command these tests are skipped when the header or the
reference binding is missing; with ``NVMLSIM_REQUIRE_LIBNVML=1`` (the test
command) they fail instead.
"""
import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.dirname(HERE)
SRC = os.path.join(SIM, "src")
INCLUDE = os.environ.get("NVMLSIM_NVML_INCLUDE", "")
REAL = os.environ.get("NVMLSIM_REAL_PYNVML", "")
REQUIRED = os.environ.get("NVMLSIM_REQUIRE_LIBNVML") == "1"
READY = bool(INCLUDE and os.path.isfile(os.path.join(INCLUDE, "nvml.h")) and REAL and os.path.isfile(REAL))
pytestmark = pytest.mark.skipif(not READY and not REQUIRED,
                                reason="set NVMLSIM_NVML_INCLUDE (nvml.h) and NVMLSIM_REAL_PYNVML (scripts/test.sh deps)")
DATA = os.path.join(HERE, "data", "real-h200-580.159.04")


def test_the_header_and_the_binding_are_there():
    assert READY, ("NVMLSIM_NVML_INCLUDE=%r (needs nvml.h) and NVMLSIM_REAL_PYNVML=%r: run scripts/test.sh deps"
                   % (INCLUDE, REAL))


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("libnvml")
    build = subprocess.run(["make", "-s", "-C", os.path.join(SIM, "libnvml"), "NVML_INCLUDE=" + INCLUDE, "OUT=" + str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert build.returncode == 0, build.stdout
    return str(out)


def client_env(library, extra=None):
    """The environment of a process whose `pynvml` is the real nvidia-ml-py over the simulated library."""
    env = dict(os.environ)
    env.update(LD_LIBRARY_PATH=library, PYTHONPATH=os.path.dirname(REAL), NVMLSIM_PYTHONPATH=SRC,
               NVMLSIM_PYTHON=sys.executable)
    env.pop("NVMLSIM_DEBUG", None)
    env.update(extra or {})
    return env


def run_client(library, code, extra=None):
    result = subprocess.run([sys.executable, "-c", code], env=client_env(library, extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    return result


def survey(env):
    result = subprocess.run([sys.executable, os.path.join(SIM, "parity.py")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("preset, setup", [
    ("seed-003", []),                                                   # MIG on two GPUs, 7 instances each
    ("h100-80gb-x8", [["process", "add", "--gpu", "3", "--pid", "4242", "--name", "python3", "--used-mib", "1634"]]),
    ("l40s-x4", [["ecc", "--gpu", "1", "--uncorrected", "2"]]),         # no MIG
])
def test_the_survey_through_the_real_binding_equals_the_simulator(node, library, preset, setup):
    node.create(preset)
    for argv in setup:
        node.cli(*argv)
    through_c = survey(client_env(library))
    direct = survey(dict(os.environ, NVMLSIM_PARITY_USE_SIM="1"))
    assert through_c == direct


def test_the_collection_client_answers_as_on_the_real_h200(node, library):
    """nvml_sim/client_probe.py -- the collection's one NVML client (plugins/module_utils/_nvml.py), read-only -- with the
    real binding over the library on the h200-x8 preset answers as it did on the lent H200 (driver 580.159.04, MIG off):
    names, MIG mode, processes, health counters, GI profiles and placements, and INVALID_ARGUMENT for an instance list
    asked with a NULL array (the real driver's answer, which the client's first version relied on the other way)."""
    node.create("h200-x8")
    result = subprocess.run([sys.executable, os.path.join(SIM, "client_probe.py")], env=client_env(library), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    simulated = json.loads(result.stdout)["gpus"]
    with open(os.path.join(DATA, "client.json")) as handle:
        real = json.load(handle)["gpus"]
    assert real[0]["gpu_instances_null_array"] == {"error": "NVML_ERROR_INVALID_ARGUMENT"}
    # the preset's CPU affinity is a DGX H200's (two 56-core sockets); the lent machine had 16 CPUs
    different_by_design = ("cpus_words_nonzero",)
    for gpu in simulated[:len(real)]:
        for key in different_by_design:
            gpu.pop(key)
    for gpu in real:
        for key in different_by_design:
            gpu.pop(key)
    assert simulated[:len(real)] == real


def test_the_real_h200_probe_through_the_library(node, library, tmp_path):
    """real_probe.py with the real binding over the library: as the real H200 answered (bar listed differences)."""
    import test_real_h200 as recorded  # noqa: E402  pylint: disable=import-outside-toplevel
    node.create("h200-x8")
    out = tmp_path / "probe"
    result = subprocess.run([sys.executable, os.path.join(SIM, "real_probe.py"), str(out)], env=client_env(library),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    with open(out / "calls.json") as handle:
        simulated = json.load(handle)
    with open(os.path.join(DATA, "calls.json")) as handle:
        real = json.load(handle)
    real_answers, sim_answers = recorded._answers(real), recorded._answers(simulated)  # pylint: disable=protected-access
    implemented = implemented_here()
    assert {"nvmlDeviceGetPciInfo", "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetName"} <= implemented
    compared, wrong = 0, []
    for key, answer in real_answers.items():
        sim = sim_answers.get(key)
        if key[0] in recorded.DIFFERENT_BY_DESIGN or sim is None or answer == ("error", "not in this nvidia-ml-py"):
            continue
        if sim == ("error", "NVML_ERROR_NOT_SUPPORTED") and answer[0] == "value" and key[0] not in implemented:
            continue   # an entry point the simulator does not implement (a stub): listed by the next test
        compared += 1
        if isinstance(answer[1], dict) and isinstance(sim[1], dict):
            answer = (answer[0], {k: v for k, v in answer[1].items() if k != "version"})
            sim = (sim[0], {k: v for k, v in sim[1].items() if k != "version"})
        if sim != answer:
            wrong.append("%s%s: real %r, through the library %r" % (key[0], key[1], answer, sim))
    assert not wrong, "\n".join(wrong)
    assert compared >= 100, compared
    # the library's own behaviour, below the binding (before nvmlInit, counting, NULL, short buffers)
    raw = dict(simulated["raw"])
    expected = dict(real["raw"])
    for name in ("nvmlDeviceGetName(buffer of 4) wrote",):
        raw.pop(name, None)
        expected.pop(name, None)
    assert raw == expected
    assert simulated["errorStrings"] == real["errorStrings"]


def implemented_here():
    """The probe's call names that the C library implements (its other calls reach stubs): from the C source."""
    sys.path.insert(0, os.path.join(SIM, "libnvml"))
    try:
        import gen_stubs  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    with open(os.path.join(SIM, "libnvml", "nvml_sim.c")) as handle:
        defined = gen_stubs.defined_entry_points(handle.read())
    # nvidia-ml-py's names drop the version suffix the C symbols carry (nvmlDeviceGetPciInfo -> ..._v3)
    return defined | {re.sub(r"(_v[0-9]+|V)$", "", name) for name in defined}


def test_unimplemented_and_unknown_entry_points(node, library):
    node.create("h100-80gb-x8")
    code = """
import ctypes, pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
try:
    pynvml.nvmlDeviceGetFanSpeed(h)
except pynvml.NVMLError_NotSupported:
    print("fan: not supported")
lib = ctypes.CDLL("libnvidia-ml.so.1")
print("bogus exported:", hasattr(lib, "nvmlDeviceGetBogusThing"))
try:
    pynvml._nvmlGetFunctionPointer("nvmlDeviceGetBogusThing")
except pynvml.NVMLError_FunctionNotFound:
    print("bogus: function not found")
pynvml.nvmlShutdown()
"""
    result = run_client(library, code, {"NVMLSIM_DEBUG": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["fan: not supported", "bogus exported: False", "bogus: function not found"]
    assert "nvmlsim: nvmlDeviceGetFanSpeed is not simulated: NVML_ERROR_NOT_SUPPORTED" in result.stderr


def test_an_nvmlsim_command_is_seen_at_the_next_call(node, library):
    """One source of truth: a client holding NVML open sees a process, an ECC error and an injected fault at once."""
    node.create("h100-80gb-x8")
    code = """
import pynvml, subprocess, sys, os
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(2)
cli = [sys.executable, "-m", "nvmlsim"]
env = dict(os.environ, PYTHONPATH=os.environ["NVMLSIM_PYTHONPATH"])
print(len(pynvml.nvmlDeviceGetComputeRunningProcesses(h)))
subprocess.run(cli + ["process", "add", "--gpu", "2", "--pid", "777", "--name", "python3"], env=env, check=True,
               stdout=subprocess.DEVNULL)
print([p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)])
subprocess.run(cli + ["ecc", "--gpu", "2", "--remap-pending", "yes"], env=env, check=True, stdout=subprocess.DEVNULL)
print(pynvml.nvmlDeviceGetRemappedRows(h))
subprocess.run(cli + ["inject", "--call", "nvmlDeviceGetUUID", "--error", "NVML_ERROR_GPU_IS_LOST"], env=env, check=True,
               stdout=subprocess.DEVNULL)
try:
    pynvml.nvmlDeviceGetUUID(h)
except pynvml.NVMLError_GpuIsLost:
    print("lost")
print(pynvml.nvmlDeviceGetUUID(h).startswith("GPU-"))
pynvml.nvmlShutdown()
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0", "[777]", "(0, 1, 1, 0)", "lost", "True"]


def test_mig_changes_through_the_library_are_in_the_state(node, library):
    node.create("a100-40gb-x8")
    code = """
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(1)
print(pynvml.nvmlDeviceSetMigMode(h, pynvml.NVML_DEVICE_MIG_ENABLE))
print(pynvml.nvmlDeviceGetMigMode(h))
pynvml.nvmlShutdown()
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    status, mode = result.stdout.splitlines()
    assert mode == "[0, 1]"                        # pending until the GPU is reset, as the driver does
    assert int(status) in (0, 16)                  # NVML_SUCCESS or the pending-reset status the simulator reports
    node.cli("reset", "--gpu", "1")
    code = """
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(1)
gi = pynvml.nvmlDeviceCreateGpuInstance(h, 9)
ci = pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE)
info = pynvml.nvmlComputeInstanceGetInfo(ci)
print(info.id, info.profileId, pynvml.nvmlGpuInstanceGetInfo(gi).id)
mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
a = pynvml.nvmlDeviceGetAttributes(mig)
print(a.gpuInstanceSliceCount, a.computeInstanceSliceCount, a.memorySizeMB, pynvml.nvmlDeviceGetName(mig))
pynvml.nvmlShutdown()
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    gi_id = int(first.split()[2])
    assert first.split()[:2] == ["0", "2"]
    assert second == "3 3 20096 NVIDIA A100-SXM4-40GB MIG 3g.20gb"
    state = node.state["gpus"][1]
    assert [gi["id"] for gi in state["gpu_instances"]] == [gi_id]


def test_before_nvmlinit_and_after_the_last_shutdown(node, library):
    node.create("h100-80gb-x8")
    code = """
import ctypes
lib = ctypes.CDLL("libnvidia-ml.so.1")
n = ctypes.c_uint()
print(lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), lib.nvmlInit_v2(), lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), n.value,
      lib.nvmlShutdown(), lib.nvmlShutdown(), lib.nvmlDeviceGetCount_v2(ctypes.byref(n)))
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "0", "0", "8", "0", "1", "1"]


def test_no_node_is_driver_not_loaded(library, tmp_path):
    code = """
import pynvml
try:
    pynvml.nvmlInit()
except pynvml.NVMLError as exc:
    print(type(exc).__name__)
"""
    result = run_client(library, code, {"NVMLSIM_STATE": str(tmp_path / "none.json")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "NVMLError_DriverNotLoaded"


def test_graphics_processes_are_none_as_on_a_data_center_gpu(node, library):
    """The real library answers SUCCESS and no graphics process on an H100 (Slurm 24.11's slurmstepd asks for
    every GPU of a job when it gathers GPU usage); a bad handle is still refused."""
    node.create("h100-80gb-x8")
    code = """
import ctypes, pynvml
pynvml.nvmlInit()
print(pynvml.nvmlDeviceGetGraphicsRunningProcesses(pynvml.nvmlDeviceGetHandleByIndex(3)))
try:
    pynvml.nvmlDeviceGetGraphicsRunningProcesses(ctypes.cast(ctypes.c_void_p(12345), pynvml.c_nvmlDevice_t))
except pynvml.NVMLError as exc:
    print(type(exc).__name__)
pynvml.nvmlShutdown()
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "NVMLError_InvalidArgument"]


def test_the_server_holds_none_of_its_callers_descriptors(node, library):
    """The real library starts no process; the simulator's server must not keep a descriptor of its caller
    open (slurmstepd waited 60 s for a job's output pipe the server had inherited) nor write to its stderr."""
    node.create("a100-40gb-x8")
    code = """
import os, pynvml
read_end, write_end = os.pipe()
os.set_inheritable(write_end, True)   # as a caller's pipe to a job's output is
pynvml.nvmlInit()
pynvml.nvmlDeviceGetCount()
os.close(write_end)
os.set_blocking(read_end, False)
try:
    print("eof" if os.read(read_end, 1) == b"" else "data")
except BlockingIOError:
    print("still open")
pynvml.nvmlShutdown()
"""
    result = run_client(library, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["eof"]
    assert result.stderr == ""
