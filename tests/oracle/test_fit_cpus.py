"""``nvmlsim create --fit-cpus``: a preset's NUMA nodes spread over this machine's CPUs.

The oracle (run_oracle.py) needs it: slurmd maps each GPU's CPU affinity to
its own cores and lists no GPU whose CPUs the machine lacks.
"""
import json
import os

import pytest

from nvmlsim import cli, node, presets


def _state(preset):
    return presets.build(preset, "/tmp/mig-minors")


def _by_numa(state):
    out = {}
    for gpu in state["gpus"]:
        out.setdefault(gpu["numa_node"], set()).add(gpu["cpus"])
    return out


def test_numa_nodes_get_contiguous_shares_of_the_cores():
    state = _state("h100-80gb-x8")
    shares = cli.fit_cpus(state, allowed=range(8), core_of=lambda cpu: (0, cpu))
    assert shares == {0: "0-3", 1: "4-7"}
    assert [gpu["cpus"] for gpu in state["gpus"]] == ["0-3"] * 4 + ["4-7"] * 4


def test_hyperthreads_stay_with_their_core():
    state = _state("seed-003")
    # CPUs 0-3 are cores 0-3, CPUs 4-7 their siblings (the numbering of the presets' own lists)
    shares = cli.fit_cpus(state, allowed=range(8), core_of=lambda cpu: (0, cpu % 4))
    assert shares == {0: "0-1,4-5", 1: "2-3,6-7"}


def test_sockets_stay_together_when_cpu_numbers_alternate_between_them():
    state = _state("l40s-x4")
    # even CPUs on package 0, odd CPUs on package 1 (a common BIOS numbering)
    shares = cli.fit_cpus(state, allowed=range(8), core_of=lambda cpu: (cpu % 2, cpu // 2))
    assert shares == {0: "0,2,4,6", 1: "1,3,5,7"}


def test_uneven_split_and_fewer_cores_than_numa_nodes():
    state = _state("l40s-x4")
    assert cli.fit_cpus(state, allowed=[5, 9, 11], core_of=lambda cpu: (0, cpu)) == {0: "5", 1: "9,11"}
    assert cli.fit_cpus(state, allowed=[3], core_of=lambda cpu: (0, cpu)) == {0: "3", 1: "3"}


def test_gpus_of_one_numa_node_share_one_cpu_set_and_nodes_do_not_overlap():
    state = _state("a100-40gb-x8")
    cli.fit_cpus(state, allowed=range(16), core_of=lambda cpu: (cpu // 8, cpu % 8))
    sets = _by_numa(state)
    assert all(len(cpus) == 1 for cpus in sets.values())
    lists = [set(node.parse_cpulist(next(iter(cpus)))) for cpus in sets.values()]
    assert not lists[0] & lists[1] and lists[0] | lists[1] == set(range(16))


def test_no_cpus_is_a_usage_error():
    with pytest.raises(cli.UsageError):
        cli.fit_cpus(_state("l40s-x4"), allowed=[])


def test_create_fit_cpus_uses_the_cpus_this_process_may_run_on(tmp_path, monkeypatch):
    monkeypatch.setenv("NVMLSIM_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVMLSIM_ROOT", str(tmp_path / "root"))
    message = cli.run(["create", "--preset", "seed-003", "--fit-cpus"])
    assert "CPUs fitted to this machine" in message
    state = json.loads(cli.run(["show", "--json"]))
    allowed = os.sched_getaffinity(0)
    for gpu in state["gpus"]:
        assert set(node.parse_cpulist(gpu["cpus"])) <= allowed, gpu
    assert all(len(cpus) == 1 for cpus in _by_numa(state).values())


def test_create_without_fit_cpus_keeps_the_preset_lists(tmp_path, monkeypatch):
    monkeypatch.setenv("NVMLSIM_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVMLSIM_ROOT", str(tmp_path / "root"))
    cli.run(["create", "--preset", "h100-80gb-x8"])
    state = json.loads(cli.run(["show", "--json"]))
    assert state["gpus"][0]["cpus"] == presets.PRESETS["h100-80gb-x8"].cpus[0]


def test_all_cpus_makes_every_gpu_local_to_every_cpu_and_keeps_the_numa_nodes():
    state = _state("h100-80gb-x8")
    numa = [gpu["numa_node"] for gpu in state["gpus"]]
    assert cli.all_cpus(state, allowed=[1, 0]) == "0-1"
    assert [gpu["cpus"] for gpu in state["gpus"]] == ["0-1"] * 8
    assert [gpu["numa_node"] for gpu in state["gpus"]] == numa
    with pytest.raises(cli.UsageError, match="--all-cpus: no CPUs"):
        cli.all_cpus(_state("l40s-x4"), allowed=[])


def test_create_all_cpus_uses_the_cpus_this_process_may_run_on(tmp_path, monkeypatch):
    monkeypatch.setenv("NVMLSIM_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVMLSIM_ROOT", str(tmp_path / "root"))
    message = cli.run(["create", "--preset", "h100-80gb-x8", "--all-cpus"])
    allowed = os.sched_getaffinity(0)
    assert "every GPU local to this machine's CPUs" in message
    state = json.loads(cli.run(["show", "--json"]))
    assert all(set(node.parse_cpulist(gpu["cpus"])) == allowed for gpu in state["gpus"]), state["gpus"]


def test_fit_cpus_and_all_cpus_are_one_choice(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NVMLSIM_STATE", str(tmp_path / "state.json"))
    monkeypatch.setenv("NVMLSIM_ROOT", str(tmp_path / "root"))
    with pytest.raises(SystemExit):
        cli.run(["create", "--preset", "h100-80gb-x8", "--all-cpus", "--fit-cpus"])
    assert "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "state.json").exists()
