"""Make the checkout importable as ``ansible_collections.gpucluster.bringup``, and give the tests real NVML clients.

Unit tests import the collection the way Ansible does. The checkout is linked
into ``.build/collections/ansible_collections/gpucluster/bringup`` and that
path is put first on ``sys.path``.

NVML: ``import pynvml`` in a test (and in the modules it runs) gets the REAL
nvidia-ml-py -- the pinned ``pynvml.py`` the test command downloads into
``.build/nvml-ref`` (``NVMLSIM_REAL_PYNVML``) -- over the simulated
``libnvidia-ml.so.1`` (``nvml_sim/libnvml``), built here against NVIDIA's
``nvml.h`` (``.build/nvml-header``, ``NVMLSIM_NVML_INCLUDE``) into
``.build/libnvml`` and loaded before any test, so the binding's
``CDLL("libnvidia-ml.so.1")`` finds it.  Subprocesses find it through
``LD_LIBRARY_PATH`` and the binding through ``GPUCLUSTER_TEST_PYNVML_DIR``.
The library's server answers from the simulator (``nvml_sim/src``).  The
simulator's own Python API is ``nvmlsim.api``; nothing is named ``pynvml``
but the real binding.  ``bash scripts/test.sh deps`` fetches both files.
"""
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpucluster", "bringup")

if not os.path.islink(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    try:
        os.symlink(ROOT, LINK)
    except FileExistsError:  # another pytest process (an xdist worker) made it first
        pass
for path in (os.path.join(ROOT, "nvml_sim", "src"), COLLECTIONS):
    if path not in sys.path:
        sys.path.insert(0, path)


def _nvml_for_tests():
    """Build and load the simulated library, put the real binding first; the problem as text, or None."""
    import ctypes  # pylint: disable=import-outside-toplevel
    import glob  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel
    real = os.environ.get("NVMLSIM_REAL_PYNVML") or next(iter(sorted(glob.glob(
        os.path.join(ROOT, ".build", "nvml-ref", "nvidia-ml-py-*", "pynvml.py")))), "")
    include = os.environ.get("NVMLSIM_NVML_INCLUDE") or os.path.join(ROOT, ".build", "nvml-header", "include")
    if not os.path.isfile(real) or not os.path.isfile(os.path.join(include, "nvml.h")):
        return ("the real nvidia-ml-py (%s) or NVIDIA's nvml.h (%s) is missing: run 'bash scripts/test.sh deps'"
                % (real or ".build/nvml-ref/nvidia-ml-py-*/pynvml.py", include))
    import fcntl  # pylint: disable=import-outside-toplevel
    out = os.path.join(ROOT, ".build", "libnvml")
    os.makedirs(os.path.join(ROOT, ".build"), exist_ok=True)
    # one build at a time: the pytest workers (xdist) start together and load what the first one built
    with open(os.path.join(ROOT, ".build", "libnvml.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "nvml_sim", "libnvml"), "NVML_INCLUDE=" + include, "OUT=" + out],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if build.returncode != 0:
        return "building the simulated libnvidia-ml.so.1 failed:\n" + build.stdout
    ctypes.CDLL(os.path.join(out, "libnvidia-ml.so.1"), mode=ctypes.RTLD_GLOBAL)
    bindings = os.path.dirname(os.path.abspath(real))
    sys.path.insert(0, bindings)
    os.environ["GPUCLUSTER_TEST_PYNVML_DIR"] = bindings
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (out, os.environ.get("LD_LIBRARY_PATH")) if p)
    os.environ["NVMLSIM_PYTHONPATH"] = os.path.join(ROOT, "nvml_sim", "src")
    os.environ["NVMLSIM_PYTHON"] = sys.executable
    return None


NVML_PROBLEM = _nvml_for_tests()


def pytest_report_header(config):  # pylint: disable=unused-argument
    return "NVML: %s" % (NVML_PROBLEM or "the real nvidia-ml-py over the simulated libnvidia-ml.so.1")


import pytest  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(autouse=True)
def _nvml_closed_after_each_test():
    """A test that leaves NVML initialized (as a crashed module would) must not leak it into the next test."""
    yield
    bindings = sys.modules.get("pynvml")
    if bindings is None:
        return
    for _ in range(1000):
        try:
            bindings.nvmlShutdown()
        except Exception:  # pylint: disable=broad-except  # NVMLError_Uninitialized: closed
            break
