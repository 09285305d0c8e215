"""The simulated driver's rules (nvmlsim.node), on state dicts."""
import re

import pytest

from nvmlsim import errors as E
from nvmlsim import node, presets
from nvmlsim.errors import SimError
from nvmlsim.models import MODELS


def fresh(preset="h100-80gb-x8", mig=True, auto_reset=False):
    """A state with MIG enabled (current and pending) on every GPU when ``mig``."""
    state = presets.build(preset, "/nonexistent/mig-minors", auto_reset=auto_reset)
    if mig:
        for gpu in state["gpus"]:
            if gpu["mig_current"] is not None:
                gpu["mig_current"] = gpu["mig_pending"] = 1
    return state


def raises(code, pattern, func, *args, **kwargs):
    with pytest.raises(SimError) as info:
        func(*args, **kwargs)
    assert info.value.code == code, info.value.message
    assert re.search(pattern, info.value.message), info.value.message
    return info.value


# -------------------------------------------------------------- default placement

@pytest.mark.parametrize("preset, profile_ids, expected", [
    # H100 transcript: nvidia-smi mig -cgi 19,19,19,19,19,19,19 -> GI 13, 11, 12, 7, 8, 9, 10
    ("h100-80gb-x8", [19] * 7, [13, 11, 12, 7, 8, 9, 10]),
    # MIG User Guide (A100-SXM4-40GB): -cgi 9,3g.20gb -> GI 2, 1
    ("a100-40gb-x8", [9, 9], [2, 1]),
    # guide, example 2: -cgi 9,19,14,19 -> GI 2, 7, 4, 8
    ("a100-40gb-x8", [9, 19, 14, 19], [2, 7, 4, 8]),
    # guide, example 3: -cgi 14,19,19,19,19,19 -> GI 5, 13, 7, 8, 9, 10
    ("a100-40gb-x8", [14, 19, 19, 19, 19, 19], [5, 13, 7, 8, 9, 10]),
    # guide's known issue: -cgi 19,19,14,9 -> GI 13, 11, 3, then the 3g fails
    ("a100-40gb-x8", [19, 19, 14, 9], [13, 11, 3, "INSUFFICIENT_RESOURCES"]),
    ("h200-x8", [0, 19], [0, "INSUFFICIENT_RESOURCES"]),
    ("a100-80gb-pcie-x4", [5, 9], [1, 2]),
])
def test_default_placement_reproduces_the_documented_sequences(preset, profile_ids, expected):
    gpu = node.gpu_by_index(fresh(preset), 0)
    got = []
    for profile_id in profile_ids:
        try:
            got.append(node.create_gpu_instance(gpu, profile_id)["id"])
        except SimError as exc:
            got.append(E.NAMES[exc.code])
    assert got == expected


@pytest.mark.parametrize("preset", ["a100-80gb-pcie-x4", "a100-40gb-x8", "h100-80gb-x8", "h200-x8"])
def test_eighth_1g_instance_does_not_fit(preset):
    gpu = node.gpu_by_index(fresh(preset), 0)
    for _ in range(7):
        node.create_gpu_instance(gpu, 19)
    raises(E.INSUFFICIENT_RESOURCES, r"already has 7 of at most 7 1g\.\d+gb instances", node.create_gpu_instance, gpu, 19)


# -------------------------------------------------------------- placement rules per model

def _cases():
    for model_key, preset in [("a100-sxm4-40gb", "a100-40gb-x8"), ("a100-pcie-80gb", "a100-80gb-pcie-x4"),
                              ("h100-sxm5-80gb", "h100-80gb-x8"), ("h200-sxm5-141gb", "h200-x8")]:
        for prof in MODELS[model_key].profiles:
            yield preset, prof


@pytest.mark.parametrize("preset, prof", list(_cases()), ids=lambda v: getattr(v, "name", v))
def test_every_documented_placement_is_accepted_and_others_refused(preset, prof):
    for start in range(8):
        gpu = node.gpu_by_index(fresh(preset), 0)
        if start in prof.starts:
            gi = node.create_gpu_instance(gpu, prof.profile_id, start=start, size=prof.mem_slices)
            assert (gi["start"], gi["size"]) == (start, prof.mem_slices)
            assert gi["id"] == {8: 0, 4: 1, 2: 3, 1: 7}[prof.mem_slices] + start // prof.mem_slices
        else:
            raises(E.INVALID_ARGUMENT, r"placement %d:%d is not valid for profile %s \(%d\); valid: " % (
                start, prof.mem_slices, re.escape(prof.name), prof.profile_id),
                node.create_gpu_instance, gpu, prof.profile_id, start=start)


@pytest.mark.parametrize("preset, prof", list(_cases()), ids=lambda v: getattr(v, "name", v))
def test_instance_count_limit(preset, prof):
    gpu = node.gpu_by_index(fresh(preset), 0)
    for _ in range(prof.instances):
        node.create_gpu_instance(gpu, prof.profile_id)
    raises(E.INSUFFICIENT_RESOURCES, "at most %d" % prof.instances, node.create_gpu_instance, gpu, prof.profile_id)


def test_wrong_placement_size_is_invalid():
    gpu = node.gpu_by_index(fresh(), 0)
    raises(E.INVALID_ARGUMENT, r"placement 0:2 is not valid for profile 1g\.10gb \(19\); valid: 0:1, 1:1",
           node.create_gpu_instance, gpu, 19, start=0, size=2)


@pytest.mark.parametrize("first, second, start", [((9, 4), 14, 4), ((19, 6), 15, 6), ((5, 0), 19, 3)])
def test_overlapping_placement_is_insufficient_resources(first, second, start):
    gpu = node.gpu_by_index(fresh(), 0)
    node.create_gpu_instance(gpu, first[0], start=first[1])
    raises(E.INSUFFICIENT_RESOURCES, "placement %d:\\d of .* overlaps an existing GPU instance on GPU 0" % start,
           node.create_gpu_instance, gpu, second, start=start)


def test_compute_slices_are_limited_to_seven():
    gpu = node.gpu_by_index(fresh(), 0)
    for _ in range(7):
        node.create_gpu_instance(gpu, 19)
    raises(E.INSUFFICIENT_RESOURCES, r"GPU 0 has 0 free compute slices; 1g\.20gb needs 1", node.create_gpu_instance, gpu, 15)


def test_4g_and_3g_fill_the_gpu():
    gpu = node.gpu_by_index(fresh(), 0)
    assert node.create_gpu_instance(gpu, 5)["id"] == 1
    assert node.create_gpu_instance(gpu, 9)["id"] == 2
    raises(E.INSUFFICIENT_RESOURCES, r"GPU 0 has 0 free compute slices; 1g\.10gb needs 1", node.create_gpu_instance, gpu, 19)
    assert node.remaining_gi_capacity(gpu, MODELS["h100-sxm5-80gb"].profile_by_id(19)) == 0


def test_no_free_placement_message():
    gpu = node.gpu_by_index(fresh("a100-40gb-x8"), 0)
    for profile_id in (19, 19, 14):
        node.create_gpu_instance(gpu, profile_id)
    raises(E.INSUFFICIENT_RESOURCES, r"no free placement for 3g\.20gb on GPU 0 \(memory slices in use: \[0, 1, 4, 6\]\)",
           node.create_gpu_instance, gpu, 9)


@pytest.mark.parametrize("existing, profile_id, remaining", [
    ([], 19, 7), ([], 9, 2), ([9], 19, 4), ([9], 9, 1), ([19], 0, 0), ([14, 14], 15, 2), ([20], 20, 0),
    ([14, 14, 14], 19, 1), ([5], 9, 1),
])
def test_remaining_capacity(existing, profile_id, remaining):
    gpu = node.gpu_by_index(fresh(), 0)
    for pid in existing:
        node.create_gpu_instance(gpu, pid)
    assert node.remaining_gi_capacity(gpu, MODELS["h100-sxm5-80gb"].profile_by_id(profile_id)) == remaining


def test_pinned_ids():
    gpu = node.gpu_by_index(fresh(), 0)
    node.create_gpu_instance(gpu, 19, start=3, gi_id=11)
    raises(E.INVALID_ARGUMENT, "GPU instance id 11 is taken or outside 0-14 on GPU 0",
           node.create_gpu_instance, gpu, 19, start=4, gi_id=11)
    assert node.create_gpu_instance(gpu, 19, start=4)["id"] == 1  # 11 is taken: lowest free id


@pytest.mark.parametrize("profile_id", [1, 3, 99])
def test_unknown_profile_id(profile_id):
    gpu = node.gpu_by_index(fresh(), 0)
    raises(E.INVALID_ARGUMENT, "GPU instance profile id %d is not valid on NVIDIA H100 80GB HBM3; valid ids: 19, 20, 15, 14, 9, 5, 0"
           % profile_id, node.create_gpu_instance, gpu, profile_id)


# -------------------------------------------------------------- MIG mode

def test_non_mig_gpu_is_not_supported():
    gpu = node.gpu_by_index(fresh("l40s-x4"), 1)
    raises(E.NOT_SUPPORTED, r"GPU 1 \(NVIDIA L40S\) does not support MIG", node.create_gpu_instance, gpu, 19)


def test_mig_disabled_is_not_supported():
    gpu = node.gpu_by_index(fresh(mig=False), 2)
    raises(E.NOT_SUPPORTED, "MIG mode is not enabled on GPU 2", node.create_gpu_instance, gpu, 19)


def test_mig_mode_is_pending_until_reset():
    state = fresh(mig=False)
    gpu = node.gpu_by_index(state, 0)
    assert node.set_mig_mode(state, gpu, 1) == E.RESET_REQUIRED
    assert (gpu["mig_current"], gpu["mig_pending"]) == (0, 1)
    node.reset_gpu(gpu)
    assert (gpu["mig_current"], gpu["mig_pending"]) == (1, 1)
    assert node.set_mig_mode(state, gpu, 1) == E.SUCCESS


def test_mig_mode_change_while_in_use_stays_pending_and_reset_fails():
    state = fresh(mig=False)
    gpu = node.gpu_by_index(state, 0)
    node.add_process(state, 0, 4242, "python3", 100)
    assert node.set_mig_mode(state, gpu, 1) == E.IN_USE
    raises(E.IN_USE, r"GPU 00000000:1B:00\.0: in use by another client \(pid 4242\)", node.reset_gpu, gpu)
    assert (gpu["mig_current"], gpu["mig_pending"]) == (0, 1)


def test_auto_reset_applies_at_once_on_an_idle_gpu():
    state = fresh(mig=False, auto_reset=True)
    gpu = node.gpu_by_index(state, 0)
    assert node.set_mig_mode(state, gpu, 1) == E.SUCCESS
    assert (gpu["mig_current"], gpu["mig_pending"]) == (1, 1)


@pytest.mark.parametrize("mode", [2, -1, "1"])
def test_invalid_mig_mode(mode):
    state = fresh(mig=False)
    raises(E.INVALID_ARGUMENT, r"MIG mode .* is not valid; use 0 \(disable\) or 1 \(enable\)",
           node.set_mig_mode, state, node.gpu_by_index(state, 0), mode)


def test_reset_and_reboot_remove_instances():
    state = fresh("seed-003", mig=False)
    gpu2, gpu3 = node.gpu_by_index(state, 2), node.gpu_by_index(state, 3)
    assert len(gpu2["gpu_instances"]) == 7
    node.reset_gpu(gpu2)
    assert gpu2["gpu_instances"] == [] and gpu2["mig_current"] == 1
    gpu3["mig_pending"] = 0
    node.add_process(state, 3, 77, "job", 10, 7, 0)
    node.reboot(state)
    assert gpu3["gpu_instances"] == [] and gpu3["processes"] == [] and gpu3["mig_current"] == 0


# -------------------------------------------------------------- destroy / compute instances

def test_destroy_gi_with_compute_instances_or_processes_is_in_use():
    state = fresh("seed-003", mig=False)
    gpu = node.gpu_by_index(state, 3)
    raises(E.IN_USE, "GPU instance 14 on GPU 3 still has compute instances 0", node.destroy_gpu_instance, gpu, 14)
    node.add_process(state, 3, 99, "job", 10, 14, 0)
    raises(E.IN_USE, "GPU instance 14 on GPU 3 is in use by pid 99", node.destroy_gpu_instance, gpu, 14)
    raises(E.IN_USE, "compute instance 14/0 on GPU 3 is in use by pid 99", node.destroy_compute_instance, gpu, 14, 0)
    node.remove_process(state, 99)
    node.destroy_compute_instance(gpu, 14, 0)
    node.destroy_gpu_instance(gpu, 14)
    raises(E.INVALID_ARGUMENT, "GPU 3 has no GPU instance 14", node.destroy_gpu_instance, gpu, 14)
    raises(E.INVALID_ARGUMENT, "GPU 3 has no compute instance 14/0", node.destroy_compute_instance, gpu, 14, 0)
    raises(E.INVALID_ARGUMENT, "GPU 3 has no GPU instance 14", node.create_compute_instance, gpu, 14, 0)


def test_compute_instances_in_a_7g_instance():
    gpu = node.gpu_by_index(fresh(), 0)
    node.create_gpu_instance(gpu, 0)
    assert [node.create_compute_instance(gpu, 0, 2)["start"] for _ in range(2)] == [0, 4]
    raises(E.INSUFFICIENT_RESOURCES, r"no room for compute instance MIG 3c\.7g\.80gb in GPU instance 0 on GPU 0",
           node.create_compute_instance, gpu, 0, 2)
    ci = node.create_compute_instance(gpu, 0, 0)
    assert (ci["id"], ci["start"], ci["uuid"]) == (2, 3, node.mig_uuid_for(gpu["uuid"], 0, 2))
    raises(E.INSUFFICIENT_RESOURCES, "no room", node.create_compute_instance, gpu, 0, 0)


def test_compute_placement_rules():
    gpu = node.gpu_by_index(fresh(), 0)
    node.create_gpu_instance(gpu, 9)
    raises(E.INVALID_ARGUMENT, r"compute placement 1 is not valid for MIG 2c\.3g\.40gb; valid starts: 0",
           node.create_compute_instance, gpu, 2, 1, start=1)
    node.create_compute_instance(gpu, 2, 0, start=1)
    raises(E.INSUFFICIENT_RESOURCES, "compute placement 1:1 overlaps a compute instance in GPU instance 2",
           node.create_compute_instance, gpu, 2, 0, start=1)
    raises(E.INVALID_ARGUMENT, "compute instance id 0 is taken or outside 0-7",
           node.create_compute_instance, gpu, 2, 0, start=2, ci_id=0)
    raises(E.NOT_SUPPORTED, r"GPU instance 2 \(3g\.40gb\) offers no compute instance profile 4; offered: 0, 1, 2",
           node.create_compute_instance, gpu, 2, 4)
    raises(E.INVALID_ARGUMENT, r"compute instance profile 9 is not valid \(0-8\)", node.create_compute_instance, gpu, 2, 9)


# -------------------------------------------------------------- processes and lookups

@pytest.mark.parametrize("args, code, message", [
    ((9, 1, "x"), E.INVALID_ARGUMENT, "no GPU with index 9; this node has indices 0, 1, 2, 3"),
    ((0, 0, "x"), E.INVALID_ARGUMENT, "pid 0 is not valid; give a positive process id"),
    ((0, 5, "x", -1), E.INVALID_ARGUMENT, r"used memory -1 MiB is not valid; give 0 or more"),
    ((2, 5, "x", 0, 7), E.INVALID_ARGUMENT, r"give both --gi and --ci \(MIG device\) or neither \(whole GPU\)"),
    ((0, 5, "x", 0, 7, 0), E.INVALID_ARGUMENT, "GPU 0 is not in MIG mode; --gi/--ci are only valid on a MIG GPU"),
    ((3, 5, "x", 0, 10, 0), E.INVALID_ARGUMENT, "GPU 3 has no MIG device gi 10 ci 0; it has: 7/0, 8/0, 9/0, 11/0"),
    ((1, 1000, "dup"), E.INVALID_ARGUMENT, "pid 1000 is already recorded on GPU 1"),
])
def test_add_process_errors(args, code, message):
    state = fresh("seed-003", mig=False)
    node.add_process(state, 1, 1000, "first")
    raises(code, message, node.add_process, state, *args)


def test_remove_process():
    state = fresh("seed-003", mig=False)
    node.add_process(state, 0, 5, "a")
    node.add_process(state, 1, 5, "a")
    assert node.remove_process(state, 5, 1) == 1
    assert node.remove_process(state, 5) == 1
    raises(E.NOT_FOUND, "pid 5 is not recorded on any GPU", node.remove_process, state, 5)
    raises(E.NOT_FOUND, "pid 5 is not recorded on GPU 2", node.remove_process, state, 5, 2)


def test_memory_accounting():
    state = fresh("seed-003", mig=False)
    node.add_process(state, 3, 8, "job", 1000, 7, 0)
    assert node.memory_mib(node.gpu_by_index(state, 0)) == {"total": 81920, "used": 4, "free": 81916, "reserved": 4}
    assert node.memory_mib(node.gpu_by_index(state, 3)) == {"total": 81920, "used": 1087, "free": 80833, "reserved": 87}
    assert node.memory_mib(node.gpu_by_index(state, 3), 7) == {"total": 9728, "used": 1012, "free": 8716, "reserved": 12}


@pytest.mark.parametrize("text, cpus", [("0-3,8", [0, 1, 2, 3, 8]), ("5", [5]), ("", []), ("2-2, 0", [0, 2])])
def test_parse_cpulist(text, cpus):
    assert node.parse_cpulist(text) == cpus


def test_uuids_are_deterministic_and_distinct():
    assert node.gpu_uuid_for("seed-003", 0) == node.gpu_uuid_for("seed-003", 0)
    assert node.gpu_uuid_for("seed-003", 0) != node.gpu_uuid_for("seed-003", 1)
    mig = node.mig_uuid_for("GPU-x", 7, 0)
    assert re.fullmatch(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", mig)
    assert mig != node.mig_uuid_for("GPU-x", 8, 0)
