"""The oracle's own parsing and classification (run_oracle.py), on lines slurmd -G printed.

The lines below are real Slurm 22.05.8 output (Debian 12 slurmd with
Debian 12's gpu_nvml.so over the simulated library, preset seed-003).  These
tests need no container: they make sure the oracle reads slurmd right and
calls a difference unexplained unless it is one of run_oracle.EXPLAINED.
"""
import run_oracle

DETECT = """\
slurmd-oracle-node: error: _nvml_get_mem_freqs: Failed to get supported memory frequencies for the GPU : Not Supported
slurmd-oracle-node: gpu/nvml: _get_system_gpu_list_nvml: 4 GPU system device(s) detected
slurmd-oracle-node: error: Discarding the following config-only GPU due to lack of File specification:
slurmd-oracle-node: error:     GRES[gpu] Type:oracle_decoy Count:1 Cores(2):(null)  Links:(null) \
Flags:HAS_TYPE,ENV_NVML,ENV_RSMI,ENV_ONEAPI,ENV_OPENCL,ENV_DEFAULT File:(null) UniqueId:(null)
slurmd-oracle-node: gres/gpu: _merge_system_gres_conf: WARNING: The following autodetected GPUs are being ignored:
slurmd-oracle-node:     GRES[gpu] Type:nvidia_a100_80gb_pcie Count:1 Cores(2):0  Links:-1,0,0,0 \
Flags:HAS_FILE,HAS_TYPE,ENV_NVML File:/dev/nvidia0 UniqueId:(null)
slurmd-oracle-node:     GRES[gpu] Type:nvidia_a100_80gb_pcie_1g.10gb Count:1 Cores(2):1  Links:-1,0,0,0,0,0,0 \
Flags:HAS_FILE,HAS_TYPE,ENV_NVML File:/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 \
UniqueId:MIG-bed8132d-f626-52a9-a37e-6de1bcc51243
"""
MERGED = """\
slurmd-oracle-node: gpu/nvml: _get_system_gpu_list_nvml: 4 GPU system device(s) detected
slurmd-oracle-node: Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0 CoreCnt=2 Links=-1,0,0,0
slurmd-oracle-node: Gres Name=gpu Type=1g.10gb Count=1 Index=337 ID=7696487 \
File=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337 Cores=1 CoreCnt=2 Links=-1,0,0,0,0,0,0
"""
MIG_FILES = "/dev/nvidia2,/dev/nvidia-caps/nvidia-cap336,/dev/nvidia-caps/nvidia-cap337"
MIG_UUID = "MIG-bed8132d-f626-52a9-a37e-6de1bcc51243"


def _module(gres_type="a100", files="/dev/nvidia0", cores="0", unique_id="GPU-5939e3dc", mig=False):
    return {"type": gres_type, "count": 1, "files": files, "cores": cores, "unique_id": unique_id, "index": 0, "mig": mig}


def _detected():
    return run_oracle.parse_slurmd(DETECT, decoy=True)


def test_detect_run_lists_what_the_plugin_found_and_ignores_the_decoy_and_the_noise():
    parsed = _detected()
    assert parsed["errors"] == []
    assert len(parsed["noise"]) == 3
    whole, mig = parsed["detected"]
    assert whole == {"name": "gpu", "type": "nvidia_a100_80gb_pcie", "count": 1, "files": "/dev/nvidia0", "cores": "0",
                     "links": "-1,0,0,0", "unique_id": None}
    assert mig["files"] == MIG_FILES and mig["unique_id"] == MIG_UUID and mig["type"] == "nvidia_a100_80gb_pcie_1g.10gb"


def test_final_list_lines():
    parsed = run_oracle.parse_slurmd(MERGED)
    assert [(f["type"], f["files"], f["cores"], f["links"]) for f in parsed["final"]] == [
        ("a100", "/dev/nvidia0", "0", "-1,0,0,0"), ("1g.10gb", MIG_FILES, "1", "-1,0,0,0,0,0,0")]
    assert parsed["errors"] == [] and parsed["detected"] == []


def test_ignored_devices_outside_detect_are_errors():
    assert len(run_oracle.parse_slurmd(DETECT)["errors"]) == 5   # decoy lines, the warning, two ignored devices


def test_the_known_differences_are_explained():
    whole, mig = _detected()["detected"]
    assert {(d["field"], d["explained"]) for d in run_oracle.compare_device(whole, _module())} == {
        ("type", "type-name"), ("links", "links-self"), ("unique_id", "uniqueid-whole-gpu")}
    module = _module("1g.10gb", MIG_FILES, "1", MIG_UUID, mig=True)
    assert {(d["field"], d["explained"]) for d in run_oracle.compare_device(mig, module)} == {
        ("type", "type-mig"), ("links", "links-self")}


def test_anything_else_is_unexplained():
    whole, mig = _detected()["detected"]

    def unexplained(slurm, module):
        return sorted(d["field"] for d in run_oracle.compare_device(slurm, module) if not d["explained"])

    assert unexplained(whole, _module(cores="1")) == ["cores"]
    assert unexplained(whole, _module(cores=None)) == ["cores"]
    assert unexplained(whole, _module(gres_type="ampere")) == ["type"]
    assert unexplained(mig, _module("1g.10gb", MIG_FILES, "1", "MIG-other", mig=True)) == ["unique_id"]
    assert unexplained(mig, _module("1g.5gb", MIG_FILES, "1", MIG_UUID, mig=True)) == ["type"]
    # a type that is a substring but not the profile part of a MIG type
    assert unexplained(mig, _module("a100", MIG_FILES, "1", MIG_UUID, mig=True)) == ["type"]
    assert unexplained(dict(whole, links="-1,2,0,0"), _module()) == ["links"]   # an NVLink the module does not write
    assert unexplained(dict(whole, count=2), _module()) == ["count"]
    assert unexplained(None, _module()) == ["device"]
    assert unexplained(whole, None) == ["device"]


def test_int_ranges():
    assert run_oracle.int_ranges("0-2,8") == (0, 1, 2, 8)
    assert run_oracle.int_ranges("(null)") == () == run_oracle.int_ranges(None)
