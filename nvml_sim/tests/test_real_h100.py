"""The simulator against real NVML: what an H100 80GB HBM3 (driver 580.159.04) answered.

``data/real-h100-580.159.04/`` was recorded on 2026-11-26 on a lent machine with
one NVIDIA H100 80GB HBM3, MIG off, compute mode Default, by
``nvml_sim/real_probe.py`` (read-only) with the machine's own nvidia-ml-py, plus
``nvidia-smi --query-gpu=name,compute_mode,memory.total,mig.mode.current,driver_version``
(``compute-mode.csv``).  The simulated cluster's H100 node uses the
``h100-80gb-x8`` preset: the same probe runs on it and every call the
simulator implements must answer as the real one did, except the differences
by design listed in test_real_h200.py (the same kind of lent VM) and the ones
below.
"""
import json
import os

import pytest

from test_real_h200 import DIFFERENT_BY_DESIGN as H200_DIFFERENCES
from test_real_h200 import assert_same_answers, load_record, probe_preset

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "real-h100-580.159.04")
DIFFERENT_BY_DESIGN = dict(H200_DIFFERENCES, **{
    "nvmlDeviceGetPciInfo": "DGX H100 bus ids; the lent VM had its GPU at 00:06.0",
})


@pytest.fixture(scope="module")
def real():
    return load_record(DATA)


def test_every_simulated_call_answers_as_the_real_h100(real, node, tmp_path):
    assert_same_answers(real, probe_preset(node, tmp_path, "h100-80gb-x8"), DIFFERENT_BY_DESIGN)


def test_the_h100_presets_identity_and_compute_mode_are_the_real_gpus():
    """Name, memory, PCI ids, architecture, compute capability from parity.json; compute mode from nvidia-smi."""
    with open(os.path.join(DATA, "parity.json")) as handle:
        device = json.load(handle)["devices"][0]
    from nvmlsim.models import MODELS  # pylint: disable=import-outside-toplevel
    model = MODELS["h100-sxm5-80gb"]
    assert (model.name, model.memory_mib, model.pci_device_id, model.architecture, list(model.cuda_cc)) == (
        device["name"], device["memory"]["total"] >> 20, device["pci"]["pciDeviceId"], device["architecture"],
        device["cudaComputeCapability"])
    with open(os.path.join(DATA, "compute-mode.csv")) as handle:
        assert handle.read().splitlines()[1] == "%s, Default, %d MiB, Disabled, 580.159.04" % (model.name, model.memory_mib)
