"""The MIG tables against the NVIDIA MIG User Guide and nvidia-smi transcripts."""
import pytest

from nvmlsim import models
from nvmlsim.models import MODELS, ci_profiles, gi_id_for_placement

MIG_MODELS = ["a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h200-sxm5-141gb"]
# The Blackwell models and the H200 NVL share the 7/8-slice geometry (ids, counts, placements).
BLACKWELL_MODELS = ["b200", "b300", "gb200", "gb300", "h200-nvl"]

# nvidia-smi mig -lgipp, identical on every 8-memory-slice GPU (MIG User Guide).
LGIPP = {19: [0, 1, 2, 3, 4, 5, 6], 20: [0, 1, 2, 3, 4, 5, 6], 15: [0, 2, 4, 6], 14: [0, 2, 4], 9: [0, 4], 5: [0], 0: [0]}
LGIPP_SIZE = {19: 1, 20: 1, 15: 2, 14: 2, 9: 4, 5: 4, 0: 8}

# (model, profile id) -> (name, instances, compute slices, SMs, memory MiB, CE, NVDEC, JPEG, OFA)
GUIDE_ROWS = {
    ("a100-sxm4-40gb", 19): ("1g.5gb", 7, 1, 14, 4864, 1, 0, 0, 0),
    ("a100-sxm4-40gb", 20): ("1g.5gb+me", 1, 1, 14, 4864, 1, 1, 1, 1),
    ("a100-sxm4-40gb", 15): ("1g.10gb", 4, 1, 14, 9856, 1, 1, 0, 0),
    ("a100-sxm4-40gb", 14): ("2g.10gb", 3, 2, 28, 9856, 2, 1, 0, 0),
    ("a100-sxm4-40gb", 9): ("3g.20gb", 2, 3, 42, 20096, 3, 2, 0, 0),
    ("a100-sxm4-40gb", 5): ("4g.20gb", 1, 4, 56, 20096, 4, 2, 0, 0),
    ("a100-sxm4-40gb", 0): ("7g.40gb", 1, 7, 98, 40448, 7, 5, 1, 1),
    ("a100-pcie-80gb", 19): ("1g.10gb", 7, 1, 14, 9728, 1, 0, 0, 0),
    ("a100-pcie-80gb", 20): ("1g.10gb+me", 1, 1, 14, 9728, 1, 1, 1, 1),
    ("a100-pcie-80gb", 15): ("1g.20gb", 4, 1, 14, 19968, 1, 1, 0, 0),
    ("a100-pcie-80gb", 14): ("2g.20gb", 3, 2, 28, 19968, 2, 1, 0, 0),
    ("a100-pcie-80gb", 9): ("3g.40gb", 2, 3, 42, 40192, 3, 2, 0, 0),
    ("a100-pcie-80gb", 5): ("4g.40gb", 1, 4, 56, 40192, 4, 2, 0, 0),
    ("a100-pcie-80gb", 0): ("7g.80gb", 1, 7, 98, 80896, 7, 5, 1, 1),
    ("h100-sxm5-80gb", 19): ("1g.10gb", 7, 1, 16, 9984, 1, 1, 1, 0),
    ("h100-sxm5-80gb", 20): ("1g.10gb+me", 1, 1, 16, 9984, 1, 1, 1, 1),
    ("h100-sxm5-80gb", 15): ("1g.20gb", 4, 1, 26, 20096, 1, 1, 1, 0),
    ("h100-sxm5-80gb", 14): ("2g.20gb", 3, 2, 32, 20096, 2, 2, 2, 0),
    ("h100-sxm5-80gb", 9): ("3g.40gb", 2, 3, 60, 40448, 3, 3, 3, 0),
    ("h100-sxm5-80gb", 5): ("4g.40gb", 1, 4, 64, 40448, 4, 4, 4, 0),
    ("h100-sxm5-80gb", 0): ("7g.80gb", 1, 7, 132, 81152, 8, 7, 7, 1),
    ("h200-sxm5-141gb", 19): ("1g.18gb", 7, 1, 16, 16384, 1, 1, 1, 0),
    ("h200-sxm5-141gb", 20): ("1g.18gb+me", 1, 1, 16, 16384, 1, 1, 1, 1),
    ("h200-sxm5-141gb", 15): ("1g.35gb", 4, 1, 26, 33280, 1, 1, 1, 0),
    ("h200-sxm5-141gb", 14): ("2g.35gb", 3, 2, 32, 33280, 2, 2, 2, 0),
    ("h200-sxm5-141gb", 9): ("3g.71gb", 2, 3, 60, 71424, 3, 3, 3, 0),
    ("h200-sxm5-141gb", 5): ("4g.71gb", 1, 4, 64, 71424, 4, 4, 4, 0),
    ("h200-sxm5-141gb", 0): ("7g.141gb", 1, 7, 132, 143360, 8, 7, 7, 1),
}


@pytest.mark.parametrize("key, row", sorted(GUIDE_ROWS.items()), ids=str)
def test_profile_rows_match_the_guide(key, row):
    model_key, profile_id = key
    prof = MODELS[model_key].profile_by_id(profile_id)
    got = (prof.name, prof.instances, prof.slices, prof.sms, prof.memory_mib,
           prof.copy_engines, prof.decoders, prof.jpegs, prof.ofas)
    assert got == row


@pytest.mark.parametrize("model_key", MIG_MODELS + BLACKWELL_MODELS)
def test_placements_are_those_of_lgipp(model_key):
    model = MODELS[model_key]
    assert {p.profile_id: list(p.starts) for p in model.profiles} == LGIPP
    assert {p.profile_id: p.mem_slices for p in model.profiles} == LGIPP_SIZE
    for prof in model.profiles:
        assert all(start + prof.mem_slices <= models.MEMORY_SLICES for start in prof.starts)
        assert prof.encoders == 0 or model.architecture == models.ARCH_BLACKWELL


@pytest.mark.parametrize("model_key", MIG_MODELS + BLACKWELL_MODELS)
def test_nvml_profile_enums_map_to_profile_ids(model_key):
    # NVML_GPU_INSTANCE_PROFILE_1_SLICE -> 19, _1_SLICE_REV1 (+me) -> 20, _1_SLICE_REV2 -> 15,
    # _2_SLICE -> 14, _3_SLICE -> 9, _4_SLICE -> 5, _7_SLICE -> 0; 8- and 6-slice do not exist.
    model = MODELS[model_key]
    assert {p.enum: p.profile_id for p in model.profiles} == {0: 19, 7: 20, 9: 15, 1: 14, 2: 9, 3: 5, 4: 0}
    assert model.profile_by_enum(models.GI_PROFILE_8_SLICE) is None
    assert model.profile_by_name("MIG " + model.profile_by_id(19).name).profile_id == 19
    assert model.profile_by_id(3) is None


@pytest.mark.parametrize("model_key, estimated", [
    ("h200-sxm5-141gb", set()),  # every figure read from a real H200
    ("h100-sxm5-80gb", set()),
    ("a100-sxm4-40gb", set()),
    # B200: NVIDIA's go-nvml mock, not a transcript; B300, GB200, GB300: memory and SMs from the names
    ("b200", {p.name for p in MODELS["b200"].profiles}),
    ("b300", {p.name for p in MODELS["b300"].profiles}),
    ("gb300", {p.name for p in MODELS["gb300"].profiles}),
])
def test_estimated_figures_are_marked(model_key, estimated):
    assert {p.name for p in MODELS[model_key].profiles if p.estimated} == estimated


def test_l40s_has_no_mig():
    assert not MODELS["l40s"].mig_capable
    assert MODELS["l40s"].profile_by_id(19) is None


@pytest.mark.parametrize("start, size, gi_id", [
    (0, 8, 0), (0, 4, 1), (4, 4, 2), (0, 2, 3), (2, 2, 4), (4, 2, 5), (6, 2, 6),
    (0, 1, 7), (3, 1, 10), (6, 1, 13),
])
def test_gi_ids_follow_placement(start, size, gi_id):
    assert gi_id_for_placement(start, size) == gi_id


@pytest.mark.parametrize("gi_profile_id, expected", [
    (19, [(0, 1, 1, [0], 1, "MIG 1g.10gb")]),
    (15, [(0, 1, 1, [0], 1, "MIG 1g.20gb")]),
    (14, [(0, 1, 2, [0, 1], 1, "MIG 1c.2g.20gb"), (1, 2, 1, [0], 2, "MIG 2g.20gb")]),
    (9, [(0, 1, 3, [0, 1, 2], 1, "MIG 1c.3g.40gb"), (1, 2, 1, [0], 2, "MIG 2c.3g.40gb"),
         (2, 3, 1, [0], 3, "MIG 3g.40gb")]),
    (5, [(0, 1, 4, [0, 1, 2, 3], 1, "MIG 1c.4g.40gb"), (1, 2, 2, [0, 2], 2, "MIG 2c.4g.40gb"),
         (3, 4, 1, [0], 4, "MIG 4g.40gb")]),
    (0, [(0, 1, 7, [0, 1, 2, 3, 4, 5, 6], 1, "MIG 1c.7g.80gb"), (1, 2, 3, [0, 2, 4], 2, "MIG 2c.7g.80gb"),
         (2, 3, 2, [0, 4], 3, "MIG 3c.7g.80gb"), (3, 4, 1, [0], 4, "MIG 4c.7g.80gb"),
         (4, 7, 1, [0], 8, "MIG 7g.80gb")]),
])
def test_compute_instance_profiles_per_gi(gi_profile_id, expected):
    model = MODELS["h100-sxm5-80gb"]
    got = [(p.enum, p.slices, p.instances, list(p.starts), p.size, p.name)
           for p in ci_profiles(model, model.profile_by_id(gi_profile_id))]
    assert got == expected


@pytest.mark.parametrize("gi_profile_id, ci_enum, sms", [(0, 0, 16), (0, 2, 60), (0, 4, 132), (15, 0, 26), (9, 1, 32)])
def test_compute_instance_sms(gi_profile_id, ci_enum, sms):
    model = MODELS["h100-sxm5-80gb"]
    assert models.ci_profile(model, model.profile_by_id(gi_profile_id), ci_enum).sms == sms
