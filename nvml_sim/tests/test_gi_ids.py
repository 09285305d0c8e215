"""GPU-instance and compute-instance ids as the driver gives them (issue #18, item 7).

The model (nvmlsim.models.gi_id_for_placement; evidence in nvml_sim/README.md,
"GPU-instance and compute-instance ids"): a GI id is the driver's swizzId, a
fixed node of the tree over the 8 physical memory slices; the placement NVML
reports is logical, and on some boards (``mem_slice_xor`` 4) the memory
halves are swapped against the physical ones.  Ids never depend on creation
order or on earlier destroys.  CI ids are the lowest free slot 0-7 of their GI.
"""
import pytest

from nvmlsim import api as pynvml  # the simulator's own NVML API
from nvmlsim import node, presets
from nvmlsim.models import MAX_GI_ID, gi_id_for_placement, placement_for_gi_id
from ctypes import byref, c_uint

A100 = "a100-80gb-pcie-x4"


def fresh_gpu(mem_slice_xor=0, preset=A100):
    """GPU 0 of ``preset`` with MIG on and the given board XOR."""
    state = presets.build(preset, "/nonexistent/mig-minors")
    gpu = node.gpu_by_index(state, 0)
    gpu["mig_current"] = gpu["mig_pending"] = node.MIG_ENABLE
    gpu["mem_slice_xor"] = mem_slice_xor
    return gpu


def ids(gpu):
    return [gi["id"] for gi in gpu["gpu_instances"]]


def placements(gpu):
    """GI id -> (start, size), as nvmlGpuInstanceGetInfo reports them."""
    return dict((gi["id"], (gi["start"], gi["size"])) for gi in gpu["gpu_instances"])


def run(gpu, calls):
    """Replay ``calls``: ("c", profile[, start]) creates a GI, ("d", gi_id) destroys one; returns the created ids."""
    created = []
    for call in calls:
        if call[0] == "c":
            spec = presets.GiSpec(call[1], call[2] if len(call) > 2 else None, ci_profiles=())
            created.append(presets.replay(gpu, spec)["id"])
        else:
            presets.replay(gpu, presets.DestroyGi(call[1]))
    return created


# ------------------------------------------------------------------ placement -> id

@pytest.mark.parametrize("mem_slice_xor, start, size, gi_id", [
    # The tree (kmigmgrMemSizeFlagToSwizzIdRange_GA100 / kmigmgrSwizzIdToSpan_GA100).
    (0, 0, 8, 0), (0, 0, 4, 1), (0, 4, 4, 2), (0, 0, 2, 3), (0, 2, 2, 4), (0, 4, 2, 5), (0, 6, 2, 6),
    (0, 0, 1, 7), (0, 2, 1, 9), (0, 3, 1, 10), (0, 6, 1, 13),
    # Swapped halves: DCGM issue #138, GPU 1 (2g 0:2 -> 5, 1g 2:1 -> 13, 1g 3:1 -> 14, 3g 4:4 -> 1).
    (4, 0, 8, 0), (4, 0, 2, 5), (4, 2, 1, 13), (4, 3, 1, 14), (4, 4, 4, 1), (4, 0, 4, 2),
    (4, 4, 1, 7), (4, 6, 1, 9), (4, 0, 1, 11), (4, 4, 2, 3), (4, 6, 2, 4),
])
def test_gi_id_for_placement(mem_slice_xor, start, size, gi_id):
    assert gi_id_for_placement(start, size, mem_slice_xor) == gi_id
    assert placement_for_gi_id(gi_id, mem_slice_xor) == (start, size)


@pytest.mark.parametrize("mem_slice_xor", range(8))
def test_placement_and_id_are_one_to_one(mem_slice_xor):
    spans = [placement_for_gi_id(gi_id, mem_slice_xor) for gi_id in range(MAX_GI_ID + 1)]
    assert len(set(spans)) == MAX_GI_ID + 1
    assert all(start % size == 0 for start, size in spans)
    assert [gi_id_for_placement(start, size, mem_slice_xor) for start, size in spans] == list(range(MAX_GI_ID + 1))


def test_gi_id_outside_the_tree():
    with pytest.raises(ValueError, match="GPU instance id 15 is outside 0-14"):
        placement_for_gi_id(15)


# ------------------------------------------------------------------ ids after create

@pytest.mark.parametrize("mem_slice_xor, calls, expected", [
    # MIG User Guide / H100 transcript: -cgi 19 x7 on a tree-numbered board.
    (0, [("c", 19)] * 7, [13, 11, 12, 7, 8, 9, 10]),
    # dask-cuda issue #583 (A100 40GB, AWS): the same command, "GPU instance ID 9, 7, 8, 11, 12, 13, 14".
    (4, [("c", 19)] * 7, [9, 7, 8, 11, 12, 13, 14]),
    # guide: -cgi 9,3g.20gb -> 2, 1; -cgi 9,19,14,19 -> 2, 7, 4, 8; -cgi 14,19,19,19,19,19 -> 5, 13, 7, 8, 9, 10.
    (0, [("c", 9)] * 2, [2, 1]),
    (0, [("c", 9), ("c", 19), ("c", 14), ("c", 19)], [2, 7, 4, 8]),
    (0, [("c", 14)] + [("c", 19)] * 5, [5, 13, 7, 8, 9, 10]),
    # the same commands on a board with swapped halves (model prediction)
    (4, [("c", 9)] * 2, [1, 2]),
    (4, [("c", 14)] + [("c", 19)] * 5, [3, 9, 11, 12, 13, 14]),
    # nvitop PR #8: three 2g.20gb on one GPU are GI 3, 5, 6 (processes on another GPU of that host: GI 3, 4, 5)
    (0, [("c", 14)] * 3, [5, 3, 4]),
    (4, [("c", 14)] * 3, [3, 5, 6]),
    # DCGM issue #138: 2g 0:2, 1g 2:1, 1g 3:1, 3g 4:4 on two GPUs of one node
    (0, [("c", 14, 0), ("c", 19, 2), ("c", 19, 3), ("c", 9, 4)], [3, 9, 10, 2]),
    (4, [("c", 14, 0), ("c", 19, 2), ("c", 19, 3), ("c", 9, 4)], [5, 13, 14, 1]),
    # whole GPU and 4g
    (0, [("c", 0)], [0]), (4, [("c", 0)], [0]),
    (0, [("c", 5)], [1]), (4, [("c", 5)], [2]),
])
def test_ids_after_create(mem_slice_xor, calls, expected):
    assert run(fresh_gpu(mem_slice_xor), calls) == expected


@pytest.mark.parametrize("preset", ["a100-40gb-x8", "a100-80gb-pcie-x4", "h100-80gb-x8", "h200-x8"])
@pytest.mark.parametrize("mem_slice_xor, expected", [(0, [13, 11, 12, 7, 8, 9, 10]), (4, [9, 7, 8, 11, 12, 13, 14])])
def test_every_mig_model_numbers_alike(preset, mem_slice_xor, expected):
    assert run(fresh_gpu(mem_slice_xor, preset), [("c", 19)] * 7) == expected


# ------------------------------------------------------------------ destroy and re-create

@pytest.mark.parametrize("mem_slice_xor, calls, created, final", [
    # the only free place is where GI 10 was: GI 10 again, as often as it is done
    (0, [("c", 19)] * 7 + [("d", 10), ("c", 19)], [13, 11, 12, 7, 8, 9, 10, 10], [7, 8, 9, 10, 11, 12, 13]),
    (0, [("c", 19)] * 7 + [("d", 10), ("c", 19)] * 3, [13, 11, 12, 7, 8, 9, 10, 10, 10, 10], [7, 8, 9, 10, 11, 12, 13]),
    # two holes: the driver fills them by placement (0:1 first), ids follow the places
    (0, [("c", 19)] * 7 + [("d", 13), ("d", 7), ("c", 19), ("c", 19)], [13, 11, 12, 7, 8, 9, 10, 7, 13],
     [7, 8, 9, 10, 11, 12, 13]),
    (4, [("c", 19)] * 7 + [("d", 9), ("d", 11), ("c", 19), ("c", 19)], [9, 7, 8, 11, 12, 13, 14, 11, 9],
     [7, 8, 9, 11, 12, 13, 14]),
    # another profile in the hole: the id of that place and size -> gaps
    (0, [("c", 19)] * 7 + [("d", 9), ("d", 10), ("c", 14)], [13, 11, 12, 7, 8, 9, 10, 4], [4, 7, 8, 11, 12, 13]),
    (0, [("c", 19)] * 7 + [("d", 7), ("d", 8), ("c", 15)], [13, 11, 12, 7, 8, 9, 10, 3], [3, 9, 10, 11, 12, 13]),
    (4, [("c", 19)] * 7 + [("d", 7), ("d", 8), ("c", 15)], [9, 7, 8, 11, 12, 13, 14, 3], [3, 9, 11, 12, 13, 14]),
    # a destroyed 2g's place split into two 1g: the 1g ids of those slices
    (0, [("c", 14, 0), ("d", 3), ("c", 19, 0), ("c", 19, 1)], [3, 7, 8], [7, 8]),
    (4, [("c", 14, 0), ("d", 5), ("c", 19, 0), ("c", 19, 1)], [5, 11, 12], [11, 12]),
    # explicit placement after destroy: the same id, not the lowest free one
    (0, [("c", 19, 6), ("c", 19, 0), ("d", 7), ("c", 19, 0)], [13, 7, 7], [7, 13]),
    (0, [("c", 9, 0), ("c", 9, 4), ("d", 1), ("d", 2), ("c", 9, 4), ("c", 9, 0)], [1, 2, 2, 1], [1, 2]),
])
def test_ids_after_destroy_and_recreate(mem_slice_xor, calls, created, final):
    gpu = fresh_gpu(mem_slice_xor)
    assert run(gpu, calls) == created
    assert ids(gpu) == final
    for gi_id, (start, size) in placements(gpu).items():
        assert gi_id_for_placement(start, size, mem_slice_xor) == gi_id


@pytest.mark.parametrize("mem_slice_xor, expected", [(0, [13, 11, 12, 7, 8, 9, 10]), (4, [9, 7, 8, 11, 12, 13, 14])])
def test_reset_keeps_the_board_numbering(mem_slice_xor, expected):
    gpu = fresh_gpu(mem_slice_xor)
    run(gpu, [("c", 19)] * 7)
    node.reset_gpu(gpu)
    gpu["mig_current"] = node.MIG_ENABLE
    assert ids(gpu) == [] and run(gpu, [("c", 19)] * 7) == expected


def test_state_without_the_key_numbers_as_the_tree():
    gpu = fresh_gpu()
    del gpu["mem_slice_xor"]
    assert run(gpu, [("c", 19)] * 7) == [13, 11, 12, 7, 8, 9, 10]


def test_gaps_through_pynvml(node):
    """7 x 1g, destroy two, create a 2g in their place -- all through the NVML calls."""
    node.create(A100)
    node.edit(lambda state: state["gpus"][0].update(mig_current=1, mig_pending=1))
    pynvml.nvmlInit()
    dev = pynvml.nvmlDeviceGetHandleByIndex(0)
    handles = [pynvml.nvmlDeviceCreateGpuInstance(dev, 19) for _ in range(7)]
    by_id = dict((pynvml.nvmlGpuInstanceGetInfo(h).id, h) for h in handles)
    assert sorted(by_id) == [7, 8, 9, 10, 11, 12, 13]
    for gi_id in (9, 10):
        assert pynvml.nvmlGpuInstanceDestroy(by_id[gi_id]) == pynvml.NVML_SUCCESS
    gi = pynvml.nvmlDeviceCreateGpuInstance(dev, 14)
    info = pynvml.nvmlGpuInstanceGetInfo(gi)
    assert (info.id, info.placement.start, info.placement.size) == (4, 2, 2)
    assert pynvml.nvmlDeviceGetGpuInstanceById(dev, 4) is not None
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetGpuInstanceById(dev, 9)
    assert sorted(gi["id"] for gi in node.state["gpus"][0]["gpu_instances"]) == [4, 7, 8, 11, 12, 13]


# ------------------------------------------------------------------ compute instances

@pytest.mark.parametrize("gi_profile, calls, created, final", [
    # lowest free slot from 0, whatever the CI profile
    (0, [("c", 0), ("c", 0), ("c", 0)], [0, 1, 2], [0, 1, 2]),
    (0, [("c", 1), ("c", 0), ("c", 2)], [0, 1, 2], [0, 1, 2]),
    (0, [("c", 0)] * 7, [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6]),
    # a destroyed CI's id is the next one given, before higher ones
    (0, [("c", 0)] * 4 + [("d", 1), ("c", 0)], [0, 1, 2, 3, 1], [0, 1, 2, 3]),
    (0, [("c", 0)] * 4 + [("d", 2), ("d", 0), ("c", 0), ("c", 0), ("c", 0)], [0, 1, 2, 3, 0, 2, 4], [0, 1, 2, 3, 4]),
    (0, [("c", 0)] * 3 + [("d", 0), ("c", 1)], [0, 1, 2, 0], [0, 1, 2]),
    (9, [("c", 0)] * 3 + [("d", 0), ("d", 1), ("c", 1)], [0, 1, 2, 0], [0, 2]),
    (9, [("c", 2)], [0], [0]),
    (19, [("c", 0), ("d", 0), ("c", 0)], [0, 0], [0]),
])
def test_ci_ids(gi_profile, calls, created, final):
    gpu = fresh_gpu()
    gi_id = node.create_gpu_instance(gpu, gi_profile)["id"]
    got = []
    for op, arg in calls:
        if op == "c":
            got.append(node.create_compute_instance(gpu, gi_id, arg)["id"])
        else:
            node.destroy_compute_instance(gpu, gi_id, arg)
    assert got == created
    assert [ci["id"] for ci in node.gpu_instance(gpu, gi_id)["compute_instances"]] == final


def test_ci_ids_are_per_gpu_instance():
    gpu = fresh_gpu()
    first, second = node.create_gpu_instance(gpu, 9)["id"], node.create_gpu_instance(gpu, 9)["id"]
    assert [node.create_compute_instance(gpu, first, 0)["id"] for _ in range(2)] == [0, 1]
    assert node.create_compute_instance(gpu, second, 0)["id"] == 0


def test_ci_ids_through_pynvml(node):
    node.create("h100-80gb-x8")
    node.edit(lambda state: state["gpus"][0].update(mig_current=1, mig_pending=1))
    pynvml.nvmlInit()
    gi = pynvml.nvmlDeviceCreateGpuInstance(pynvml.nvmlDeviceGetHandleByIndex(0), 0)
    cis = [pynvml.nvmlGpuInstanceCreateComputeInstance(gi, 0) for _ in range(3)]
    assert [pynvml.nvmlComputeInstanceGetInfo(ci).id for ci in cis] == [0, 1, 2]
    pynvml.nvmlComputeInstanceDestroy(cis[1])
    again = pynvml.nvmlGpuInstanceCreateComputeInstance(gi, 1)
    assert pynvml.nvmlComputeInstanceGetInfo(again).id == 1


# ------------------------------------------------------------------ presets

GAPS = {
    0: {4: (2, 2), 7: (0, 1), 8: (1, 1), 11: (4, 1), 12: (5, 1), 13: (6, 1)},
    1: {5: (4, 2), 7: (0, 1), 10: (3, 1), 13: (6, 1)},
    2: {3: (4, 2), 9: (6, 1), 11: (0, 1), 12: (1, 1), 13: (2, 1), 14: (3, 1)},
    3: {},
}


@pytest.mark.parametrize("index, expected", sorted(GAPS.items()))
def test_gap_preset(index, expected):
    gpu = node.gpu_by_index(presets.build("a100-gi-gaps", "/nonexistent/mig-minors"), index)
    assert placements(gpu) == expected
    assert all([ci["id"] for ci in gi["compute_instances"]] == [0] for gi in gpu["gpu_instances"])
    assert gpu["mig_current"] == (1 if expected else 0)


def test_gap_preset_is_made_by_calls_not_pins():
    preset = presets.PRESETS["a100-gi-gaps"]
    calls = [call for gpu_calls in preset.mig.values() for call in gpu_calls]
    assert any(isinstance(call, presets.DestroyGi) for call in calls)
    assert all(call.gi_id is None for call in calls if isinstance(call, presets.GiSpec))


def test_gap_preset_through_pynvml(node):
    node.create("a100-gi-gaps")
    pynvml.nvmlInit()
    for index, expected in GAPS.items():
        dev = pynvml.nvmlDeviceGetHandleByIndex(index)
        got = {}
        for profile_id in (19, 15, 14):
            count = c_uint()
            array = (pynvml.c_nvmlGpuInstance_t * 7)()
            if expected:
                pynvml.nvmlDeviceGetGpuInstances(dev, profile_id, array, byref(count))
            for i in range(count.value):
                info = pynvml.nvmlGpuInstanceGetInfo(array[i])
                got[info.id] = (info.placement.start, info.placement.size)
        assert got == expected


SEED_003 = {
    2: {7: (0, 1), 8: (1, 1), 9: (2, 1), 10: (3, 1), 11: (4, 1), 12: (5, 1), 13: (6, 1)},
    3: {7: (4, 1), 8: (5, 1), 9: (6, 1), 11: (0, 1), 12: (1, 1), 13: (2, 1), 14: (3, 1)},
}


@pytest.mark.parametrize("index, xor, expected", [(2, 0, SEED_003[2]), (3, 4, SEED_003[3])])
def test_seed_003_preset(index, xor, expected):
    gpu = node.gpu_by_index(presets.build("seed-003", "/nonexistent/mig-minors"), index)
    assert gpu["mem_slice_xor"] == xor
    assert ids(gpu) == sorted(expected)
    assert placements(gpu) == expected
    assert [[ci["id"] for ci in gi["compute_instances"]] for gi in gpu["gpu_instances"]] == [[0]] * 7


def test_seed_003_is_the_seeds_own_command_on_two_boards():
    """nvidia-smi mig -i 2,3 -cgi 19,19,19,19,19,19,19 -C on a tree-numbered GPU and one with swapped halves."""
    for index, xor in ((2, 0), (3, 4)):
        gpu = fresh_gpu(xor)
        run(gpu, [("c", 19)] * 7)
        assert placements(gpu) == SEED_003[index]
    assert all(call == presets.GiSpec(19) for calls in presets.PRESETS["seed-003"].mig.values() for call in calls)


def test_seed_003_mig_devices_and_capabilities(node):
    node.create("seed-003")
    data = node.show_json()
    caps = [ci["cap_minor"] for gpu in data["gpus"] for gi in gpu["gpu_instances"] for ci in gi["compute_instances"]]
    assert caps == [337, 346, 355, 364, 373, 382, 391, 472, 481, 490, 508, 517, 526, 535]
    pynvml.nvmlInit()
    dev = pynvml.nvmlDeviceGetHandleByIndex(3)
    migs = [pynvml.nvmlDeviceGetMigDeviceHandleByIndex(dev, i) for i in range(7)]
    assert [pynvml.nvmlDeviceGetGpuInstanceId(m) for m in migs] == [7, 8, 9, 11, 12, 13, 14]


def test_pinned_ids_still_work():
    """A preset may still pin an id (a layout whose board is unknown); the driver's rules hold otherwise."""
    gpu = fresh_gpu()
    gi = presets.replay(gpu, presets.GiSpec(19, 6, gi_id=14))
    assert (gi["id"], gi["start"], [ci["id"] for ci in gi["compute_instances"]]) == (14, 6, [0])
    assert presets.replay(gpu, presets.GiSpec(19, 0))["id"] == 7
    presets.replay(gpu, presets.DestroyGi(14))
    assert presets.replay(gpu, presets.GiSpec(19, 6))["id"] == 13
