"""Make the checkout importable as ``ansible_collections.gpucluster.bringup``.

Unit tests import the collection the way Ansible does. The checkout is linked
into ``.build/collections/ansible_collections/gpucluster/bringup`` and that
path is put first on ``sys.path``.  The NVML simulator's sources are put on
the path too, so ``import pynvml`` in a unit test gets the simulator (the real
nvidia-ml-py is never installed in the development virtualenv).
"""
import os
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpucluster", "bringup")

if not os.path.islink(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(ROOT, LINK)
for path in (os.path.join(ROOT, "nvml_sim", "src"), COLLECTIONS):
    if path not in sys.path:
        sys.path.insert(0, path)


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
