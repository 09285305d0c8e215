# -*- coding: utf-8 -*-
"""nvbandwidth: the output parser (plugins/module_utils/validation/_nvbandwidth.py) and the STAND-IN
(tests/standins/nvbandwidth-standin), run as a subprocess on a simulated node.

The parser reads nvbandwidth's text and -j JSON forms (samples in tests/unit/fixtures/deep/nvbandwidth,
README there); the stand-in parses nvbandwidth's command line as boost::program_options does, prints
both forms, and takes its numbers from the NVML simulator's state, so that an injected fault (a PCIe
link trained down, NVLinks down, a GPU lost, the fabric manager stopped) shows in what it prints.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.health import _deep_tier as deep
from ansible_collections.gpucluster.bringup.plugins.module_utils.validation import _nvbandwidth as nvbw
from ansible_collections.gpucluster.bringup.tests.unit.simnode import sim, use_node
from nvmlsim import models, store

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..")
STANDIN = os.path.join(ROOT, "tests", "standins", "nvbandwidth-standin")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "deep", "nvbandwidth")
DEEP = ["-t", "host_to_device_memcpy_ce", "-t", "device_to_host_memcpy_ce", "-t", "device_to_device_memcpy_read_ce"]
H2D, D2H, D2D = "host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce"
CUINIT = "in expression cuInit(0) in int main(int, char**)() : /opt/nvbandwidth-STANDIN/src/nvbandwidth.cpp:270"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def standin_module():
    """The stand-in as a module (its file name has no .py)."""
    loader = SourceFileLoader("nvbandwidth_standin", STANDIN)
    module = module_from_spec(spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A simulated node in tmp_path: ``create(preset, *faults)`` makes it and applies ``nvmlsim`` commands."""
    state_path, dummy = use_node(tmp_path, monkeypatch)

    def create(preset, *faults):
        sim("create", "--preset", preset)
        for fault in faults:
            sim(*fault)
        return state_path
    return create


def run(argv, state, **env):
    """(rc, stdout, stderr) of the stand-in with a clean environment (no CUDA_VISIBLE_DEVICES unless given)."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVMLSIM_STATE": state,
            "NVBANDWIDTH_STANDIN_FAIL_FILE": os.path.join(os.path.dirname(state), "no-FAIL")}
    full.update((key, str(value)) for key, value in env.items())
    proc = subprocess.run([sys.executable, STANDIN] + list(argv), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


# ---------------------------------------------------------------- the parser, on the samples

@pytest.mark.parametrize("name,version,devices,statuses,error", [
    ("rendered_v0.8_h100x8_deep.txt", "v0.8", 8, {H2D: "passed", D2H: "passed", D2D: "passed"}, ""),
    ("rendered_v0.8_h100x8_deep.json", "v0.8", 8, {H2D: "passed", D2H: "passed", D2D: "passed"}, ""),
    ("rendered_v0.8_h100x8_degraded.json", "v0.8", 8, {H2D: "passed", D2H: "passed", D2D: "passed"}, ""),
    ("rendered_v0.8_h100x8_lost_gpu.json", "v0.8", 0, {}, "[CUDA_ERROR_UNKNOWN] unknown error " + CUINIT),
    ("rendered_v0.8_h100x8_lost_gpu_2to1.txt", "v0.8", 0, {}, "[CUDA_ERROR_UNKNOWN] unknown error " + CUINIT),
    ("rendered_v0.8_a100_one_gpu_waived.json", "v0.8", 1,
     {H2D: "passed", D2D: "waived", "device_to_device_memcpy_write_ce": "waived"}, ""),
    ("rendered_v0.8_a100_bidir_unknown.json", "v0.8", 2, {"device_to_device_bidirectional_memcpy_read_ce": "passed", "nope": "error"}, ""),
    ("rendered_v0.8_a100_bidir_unknown.txt", "v0.8", 2, {"device_to_device_bidirectional_memcpy_read_ce": "passed", "nope": "error"}, ""),
    ("rendered_v0.8_a100_verbose_perf.txt", "v0.8", 2, {H2D: "passed", "device_to_device_memcpy_write_ce": "passed"}, ""),
    ("rendered_v0.8_a100_cuda_error_2to1.txt", "v0.8", 4, {H2D: "error"}, "[CUDA_ERROR_LAUNCH_FAILED] unspecified launch failure"),
    ("rendered_v0.8_a100_cuda_error.json", "v0.8", 4, {H2D: "error"}, "[CUDA_ERROR_LAUNCH_FAILED] unspecified launch failure"),
    ("rendered_v0.8_invalid_arguments.txt", "v0.8", 0, {}, "ERROR: Invalid Arguments /opt/nvbandwidth-STANDIN/nvbandwidth -t 0 --bogus"),
    ("written_v0.2-format_rtx4090_x2.txt", "v0.2", 2, {H2D: "passed", D2H: "passed", D2D: "waived"}, ""),
    ("written_v0.7-format_a100x2_verify_error_2to1.txt", "v0.7", 2, {H2D: "passed", D2D: "error"}, "ASSERT in expression h_errorFlag == 0"),
    ("written_v0.8-format_pcie_p2p_x4.txt", "v0.8", 4, {D2D: "passed"}, ""),
])
def test_parse_samples(name, version, devices, statuses, error):
    result = nvbw.parse(fixture(name))
    assert result["version"] == version
    assert len(result["devices"]) == devices
    assert dict((case, entry["status"]) for case, entry in result["testcases"].items()) == statuses
    assert result["error"].startswith(error) and bool(result["error"]) == bool(error)
    for entry in result["testcases"].values():
        assert entry["status"] in nvbw.STATUSES
        assert (entry["status"] == "error") == bool(entry["error"])


@pytest.mark.parametrize("name,case,expected", [
    # the JSON form keeps 6 significant digits, the text 2 decimals: the same run
    ("rendered_v0.8_h100x8_deep.txt", H2D, {0: 54.93, 1: 55.31, 2: 55.24, 7: 55.33}),
    ("rendered_v0.8_h100x8_deep.json", H2D, {0: 54.9271, 1: 55.3096, 2: 55.2439, 7: 55.3271}),
    ("rendered_v0.8_h100x8_degraded.json", H2D, {1: 55.3096, 2: 12.6272, 3: 55.2141}),
    ("rendered_v0.8_a100_one_gpu_waived.json", H2D, {0: 25.2904}),
    ("written_v0.2-format_rtx4090_x2.txt", D2H, {0: 26.52, 1: 26.61}),
    ("written_v0.7-format_a100x2_verify_error_2to1.txt", H2D, {0: 24.97, 1: 25.03}),
])
def test_per_gpu(name, case, expected):
    got = nvbw.per_gpu(nvbw.parse(fixture(name))["testcases"][case])
    assert dict((gpu, got[gpu]) for gpu in expected) == expected


@pytest.mark.parametrize("name,case,expected,count", [
    ("rendered_v0.8_h100x8_deep.txt", D2D, {(0, 1): 383.54, (1, 0): 382.89, (7, 6): 381.9}, 56),
    ("rendered_v0.8_h100x8_degraded.json", D2D, {(0, 5): 340.871, (5, 0): 340.418, (0, 1): 383.535}, 56),
    # the bidirectional testcase: its fields are the Total matrix (the JSON keeps the last of three)
    ("rendered_v0.8_a100_bidir_unknown.json", "device_to_device_bidirectional_memcpy_read_ce", {(0, 1): 443.282, (1, 0): 442.903}, 2),
    ("rendered_v0.8_a100_bidir_unknown.txt", "device_to_device_bidirectional_memcpy_read_ce", {(0, 1): 443.28, (1, 0): 442.9}, 2),
    # GPU 3 has no peer: N/A everywhere, left out
    ("written_v0.8-format_pcie_p2p_x4.txt", D2D, {(0, 1): 26.31, (2, 1): 22.38}, 6),
])
def test_pairs(name, case, expected, count):
    got = nvbw.pairs(nvbw.parse(fixture(name))["testcases"][case])
    assert dict((pair, got[pair]) for pair in expected) == expected
    assert len(got) == count


@pytest.mark.parametrize("name,case,keys,sums", [
    ("rendered_v0.8_a100_bidir_unknown.txt", "device_to_device_bidirectional_memcpy_read_ce",
     ["device_to_device_bidirectional_memcpy_read_ce_read1", "device_to_device_bidirectional_memcpy_read_ce_read2",
      "device_to_device_bidirectional_memcpy_read_ce_total"], [442.2, 443.99, 886.19]),
    ("rendered_v0.8_a100_bidir_unknown.json", "device_to_device_bidirectional_memcpy_read_ce",
     ["device_to_device_bidirectional_memcpy_read_ce#1", "device_to_device_bidirectional_memcpy_read_ce#2",
      "device_to_device_bidirectional_memcpy_read_ce"], [None, None, 886.1852590594781]),
    ("rendered_v0.8_a100_verbose_perf.txt", H2D, [H2D], [50.42]),
])
def test_every_matrix_of_a_testcase_is_kept(name, case, keys, sums):
    entry = nvbw.parse(fixture(name))["testcases"][case]
    assert [m["key"] for m in entry["matrices"]] == keys
    assert [m["sum"] for m in entry["matrices"]] == sums
    assert entry["sum"] == sums[-1] and entry["unit"] == "GB/s"


@pytest.mark.parametrize("name,field,expected", [
    ("rendered_v0.8_h100x8_deep.txt", "devices", [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci": "00000000:1b:00"}]),
    ("rendered_v0.8_h100x8_deep.json", "devices", [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci": "00000000:1b:00"}]),
    ("written_v0.2-format_rtx4090_x2.txt", "devices", [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "pci": None}]),
    ("rendered_v0.8_h100x8_deep.txt", "host", "gpu-node01"),
    ("rendered_v0.8_h100x8_deep.json", "host", "gpu-node01"),
    ("written_v0.7-format_a100x2_verify_error_2to1.txt", "host", None),
    ("rendered_v0.8_h100x8_deep.json", "cuda_version", 12080),
    ("rendered_v0.8_h100x8_deep.txt", "driver_version", "570.133.20"),
    ("rendered_v0.8_h100x8_deep.txt", "git_version", "v0.8-STANDIN"),
    ("rendered_v0.8_a100_cuda_error_2to1.txt", "warnings", [
        "NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested to use the default "
        "buffer size (64MB) to achieve maximal peak bandwidth."]),
    ("rendered_v0.8_a100_cuda_error.json", "warnings", [
        "NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested to use the default "
        "buffer size (64MB) to achieve maximal peak bandwidth."]),
])
def test_header_fields(name, field, expected):
    got = nvbw.parse(fixture(name))[field]
    assert (got[:len(expected)] if field == "devices" else got) == expected


def test_text_and_json_of_one_run_agree():
    text, data = nvbw.parse(fixture("rendered_v0.8_h100x8_deep.txt")), nvbw.parse(fixture("rendered_v0.8_h100x8_deep.json"))
    for case in (H2D, D2H, D2D):
        a, b = text["testcases"][case], data["testcases"][case]
        assert (a["title"], a["unit"], a["rows"], a["columns"]) == (b["title"], b["unit"], b["rows"], b["columns"])
        assert a["sum"] == pytest.approx(b["sum"], abs=0.01)
        for row_a, row_b in zip(a["matrix"], b["matrix"]):
            assert row_a == [None if v is None else pytest.approx(v, abs=0.01) for v in row_b]


def test_waived_lines_are_named_by_nvbandwidths_order_when_every_testcase_ran():
    result = nvbw.parse(fixture("rendered_v0.8_a100pcie_x4_all.txt"))
    assert list(result["testcases"]) == list(nvbw.TESTCASES)
    waived = sorted(case for case, entry in result["testcases"].items() if entry["status"] == "waived")
    assert waived == sorted(case for case in nvbw.TESTCASES if case.startswith(("device_to_device", "all_to_one", "one_to_all")))
    assert result["testcases"]["host_device_latency_sm"]["unit"] == "ns"
    assert result["error"] == ""


WAIVED = "Waived: \n"      # nvbandwidth's waived line ends in a blank: status, colon, empty message
WAIVED_TEXT = ("nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\n"
               "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
               "           0\n 0     55.10\n\nSUM host_to_device_memcpy_ce 55.10\n\n"
               + WAIVED + "ERROR: Testcase nope not found!\n" + WAIVED
               + "NOTE: The reported results may not reflect the full capabilities of the platform.\n"
               "Performance can vary with software drivers, hardware clocks, and system topology.\n")


@pytest.mark.parametrize("requested,names", [
    (["0", "4", "nope", "device_to_device_memcpy_write_ce"], [H2D, D2D, "nope", "device_to_device_memcpy_write_ce"]),
    ([H2D, "20", "nope", "21"], [H2D, "device_to_device_memcpy_read_sm", "nope", "device_to_device_memcpy_write_sm"]),
    # not what the run asked for (a count that does not fit): the waived lines stay unnamed
    (["0", "4"], [H2D, "waived#1", "nope", "waived#2"]),
    (None, [H2D, "waived#1", "nope", "waived#2"]),
])
def test_waived_lines_are_named_by_the_testcases_asked_for(requested, names):
    result = nvbw.parse(WAIVED_TEXT, requested)
    assert list(result["testcases"]) == names
    assert [entry["status"] for entry in result["testcases"].values()] == ["passed", "waived", "error", "waived"]
    assert result["testcases"]["nope"]["error"] == "Testcase nope not found!"


HEAD = "nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\n"
H2D_BLOCK = ("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
             "           0\n 0     55.10\n\nSUM host_to_device_memcpy_ce 55.10\n\n")
NOTE = "NOTE: The reported results may not reflect the full capabilities of the platform.\n"


@pytest.mark.parametrize("text,error,statuses", [
    (HEAD + H2D_BLOCK + NOTE, "", {H2D: "passed"}),
    # killed or failed with its error on stderr: no closing NOTE
    (HEAD + H2D_BLOCK, "the output ends before nvbandwidth's closing NOTE lines", {H2D: "passed"}),
    (HEAD + "Running host_to_device_memcpy_ce.\n", "the output ends before", {H2D: "error"}),
    (HEAD + "nvbandwidth CLI:\n  -h [ --help ]   Produce help message\n", "the output is nvbandwidth's help (-h)", {}),
    (HEAD + "Index, Name:\n\tDescription\n=======================\n0, host_to_device_memcpy_ce:\n\tHost to device\n\n",
     "the output is nvbandwidth's testcase list (-l)", {}),
    (HEAD + "Running host_to_device_memcpy_ce.\nError: something threw\n" + NOTE, "", {H2D: "error"}),
    (HEAD + "You cannot specify both testcase and testcasePrefix options at the same time\n",
     "You cannot specify both testcase and testcasePrefix options at the same time", {}),
    (HEAD + "NVML_ERROR: [Driver Not Loaded] in expression nvmlInit() in int main(int, char**)() : nvbandwidth.cpp:271\n",
     "NVML_ERROR: [Driver Not Loaded]", {}),
    # a paste of one matrix (no version line): named by its SUM line, no judgement on completeness
    (H2D_BLOCK.split("\n", 1)[1], "", {H2D: "passed"}),
    # perfFormatter's line instead of SUM
    (HEAD + H2D_BLOCK.replace("SUM host_to_device_memcpy_ce 55.10", "&&&& PERF host_to_device_memcpy_ce 55.10 +GB/s") + NOTE, "", {H2D: "passed"}),
    # a JSON document followed by stderr text (2>&1)
    ('{"nvbandwidth": {"version": "v0.8", "testcases": [{"name": "x", "status": "Running"}], "error": "[CUDA_ERROR_UNKNOWN] unknown error\\n"}}\n\n'
     "[CUDA_ERROR_UNKNOWN] unknown error\n", "[CUDA_ERROR_UNKNOWN] unknown error", {"x": "error"}),
    ('{"nvbandwidth": {"testcases": [{"name": "host_to_device_memcpy_ce", "status": "Error"}]}}', "", {H2D: "error"}),
    ('{"nvbandwidth": {"testcases": [{"name": "7", "status": "Not Found"}]}}', "", {"7": "error"}),
])
def test_parse_states(text, error, statuses):
    result = nvbw.parse(text)
    assert result["error"].startswith(error) and bool(result["error"]) == bool(error)
    assert dict((case, entry["status"]) for case, entry in result["testcases"].items()) == statuses


@pytest.mark.parametrize("text,message", [
    ("", "neither nvbandwidth text output nor its -j JSON"),
    ("hello\nworld\n", "neither nvbandwidth text output nor its -j JSON"),
    ("{not json", "nvbandwidth -j output is not valid JSON"),
    ('{"dcgm": {}}', 'JSON without the "nvbandwidth" object'),
    ('{"nvbandwidth": [1, 2]}', 'JSON without the "nvbandwidth" object'),
    ('[1, 2]', "neither nvbandwidth text output nor its -j JSON"),
    ('{"nvbandwidth": {"testcases": {"a": 1}}}', '"testcases" is'),
    ('{"nvbandwidth": {"testcases": [{"status": "Passed"}]}}', "has no name"),
    ('{"nvbandwidth": {"testcases": [{"name": "a", "status": "Fine"}]}}', "status 'Fine' is not one of"),
    ('{"nvbandwidth": {"testcases": [{"name": "a", "status": "Passed", "bandwidth_matrix": [["1.0", "fast"]]}]}}',
     "'fast' is not a number or N/A"),
    ('{"nvbandwidth": {"testcases": [{"name": "a", "status": "Passed", "bandwidth_matrix": "1.0"}]}}', "not a list of rows"),
    ('{"nvbandwidth": {"testcases": [{"name": "a", "status": "Passed", "bandwidth_matrix": [[true]]}]}}', "is not a number"),
    ('{"nvbandwidth": {"testcases": [{"name": "a", "status": "Passed", "bandwidth_matrix": [["1"]], "sum": "x"}]}}', "sum 'x' is not a number"),
    ('{"nvbandwidth": {"GPU Device list": ["GPU zero"]}}', '"GPU Device list" entry'),
    ('{"nvbandwidth": {"GPU Device list": "0: x"}}', '"GPU Device list" is'),
    (HEAD + "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n           0         1\n 0     55.10\n", "1 values for 2 columns"),
    (HEAD + "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n           0\n 0     fast\n", "'fast' is not a number or N/A"),
    (HEAD + "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n           0\n\n", "has a column header and no rows"),
    (HEAD + H2D_BLOCK.replace("SUM host_to_device_memcpy_ce 55.10", "SUM host_to_device_memcpy_ce lots"), "SUM host_to_device_memcpy_ce: 'lots'"),
    (b"nvbandwidth Version: v0.8\n", "must be text, not bytes"),
])
def test_malformed_input_is_a_value_error(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        nvbw.parse(text)


@pytest.mark.parametrize("call,entry,message", [
    (nvbw.per_gpu, {"rows": ["0", "1"], "columns": ["0", "1"], "matrix": [[None, 1.0], [1.0, None]]}, "has 2 rows"),
    (nvbw.per_gpu, {"rows": ["CPU"], "columns": ["GPU0"], "matrix": [[1.0]]}, "column label 'GPU0' is not a GPU index"),
    (nvbw.per_gpu, {"status": "waived"}, "takes one testcase"),
    (nvbw.pairs, {"rows": ["0"], "columns": ["0", "1"], "matrix": [[1.0, 2.0]]}, "use per_gpu()"),
    (nvbw.pairs, "device_to_device_memcpy_read_ce", "takes one testcase"),
])
def test_helpers_refuse_what_is_not_their_shape(call, entry, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call(entry)


# ---------------------------------------------------------------- the stand-in: nvbandwidth's command line

@pytest.mark.parametrize("argv,rc,stdout,stderr", [
    (["-h"], 0, "nvbandwidth CLI:\n  -h [ --help ]                  Produce help message\n", ""),
    (["--he"], 0, "nvbandwidth CLI:\n", ""),
    (["-l"], 0, "34, device_local_copy:\n\tMeasures bandwidth of cuMemcpyAsync between device buffers local to the GPU.\n", ""),
    # -j with -h or -l prints nothing: the text goes through OUTPUT, which JSON mode silences
    (["-j", "-h"], 0, None, ""),
    (["-jl"], 0, None, ""),
    (["--bogus"], 1, "ERROR: Invalid Arguments \n", ""),
    (["--t", "0"], 1, "ERROR: Invalid Arguments \n", ""),             # ambiguous: testcase, testcasePrefixes, testSamples
    (["--l"], 1, "ERROR: Invalid Arguments \n", ""),                  # list or loopCount
    (["-b"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-b", "x"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-b", "1.5"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-b", "64", "-b", "64"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-v", "-v"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-b", "-v"], 1, "ERROR: Invalid Arguments \n", ""),              # the next token is a known option
    (["-i", "4294967296"], 1, "ERROR: Invalid Arguments \n", ""),
    (["foo"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-t", "0", "--", "1"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-t", "35", "-1"], 1, "ERROR: Invalid Arguments \n", ""),         # -1 after the first value is an option: unknown
    (["--json=1"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-vx"], 1, "ERROR: Invalid Arguments \n", ""),
    (["-t", "0", "-p", "host"], 1, "", "You cannot specify both testcase and testcasePrefix options at the same time\n"),
    (["-p", "zzz"], 1, "Device 7:", "Specified list of testcase prefixes did not match any testcases\n"),
])
def test_command_line(node, argv, rc, stdout, stderr):
    got_rc, out, err = run(argv, node("h100-80gb-x8"))
    assert got_rc == rc, err
    assert out.startswith("nvbandwidth Version: v0.8\nBuilt from Git version: v0.8-STANDIN\n\n") if stdout is not None else out == ""
    assert stdout is None or stdout in out
    assert err.startswith("nvbandwidth STAND-IN (not NVIDIA nvbandwidth, measures nothing)")
    assert err.split("\n", 1)[1] == stderr
    if "Invalid Arguments" in (stdout or ""):
        assert " ".join(argv) + " :\n\nnvbandwidth CLI:\n" in out and out.endswith("plain \n                                 text.\n\n")


@pytest.mark.parametrize("argv,testcases,warning", [
    (["-t", "0", "1"], [H2D, D2H], False),                             # several values after one -t
    (["-t", "0", "-t", D2H], [H2D, D2H], False),                       # -t repeated
    (["--testcase=0", "4"], [H2D, D2D], False),
    (["-t0", "-b64"], [H2D], True),
    (["--buf", "64", "-t", "0"], [H2D], True),                         # an unambiguous prefix of --bufferSize
    (["--bufferSize=1024", "-t", "0"], [H2D], False),
    (["-b", "-5", "-t", "0"], [H2D], False),                           # lexical_cast wraps -5 around: a huge buffer
    (["-t", ""], [H2D], False),                                         # strtol of "" is index 0
    (["-t", " 1"], [D2H], False),
    (["-t", "1x"], ["1x"], False),
    (["-t", "35", "-t", "-1"], ["35", "-1"], False),               # a value that looks like no known option is taken
    (["-p", "device_local", "host_device"], ["host_device_latency_sm", "device_local_copy"], False),
    (["-p", "all_to_one"], ["all_to_one_write_ce", "all_to_one_read_ce", "all_to_one_write_sm", "all_to_one_read_sm"], False),
    (["-svdm", "-i", "5", "--loopCount", "4", "-t", "0"], [H2D], False),
])
def test_testcases_run_in_the_order_asked(node, argv, testcases, warning):
    rc, out, err = run(argv, node("h100-80gb-x8"))
    assert rc == 0, err
    result = nvbw.parse(out)
    assert list(result["testcases"]) == testcases
    assert bool(result["warnings"]) == warning
    for case in testcases:
        if case not in nvbw.TESTCASES:
            entry = result["testcases"][case]
            assert entry["status"] == "error"
            assert entry["error"] in ("Testcase %s not found!" % case, "Testcase index %s out of bound!" % case)


def test_every_testcase_without_arguments(node):
    state = node("h100-80gb-x8")
    rc, out, err = run([], state)
    assert rc == 0, err
    result = nvbw.parse(out)
    assert list(result["testcases"]) == list(nvbw.TESTCASES)
    assert all(entry["status"] == "passed" for entry in result["testcases"].values())
    rc, listed, dummy = run(["-l"], state)
    assert re.findall(r"^(\d+), (\w+):$", listed, re.M) == [(str(i), case) for i, case in enumerate(nvbw.TESTCASES)]


def test_help_is_boosts_layout_of_nvbandwidths_options():
    # nvbandwidth's README shows this list (without the trailing blank of the wrapped -j line)
    assert standin_module().usage() == (
        "nvbandwidth CLI:\n"
        "  -h [ --help ]                  Produce help message\n"
        "  -b [ --bufferSize ] arg (=512) Memcpy buffer size in MiB\n"
        "  -l [ --list ]                  List available testcases\n"
        "  -t [ --testcase ] arg          Testcase(s) to run (by name or index)\n"
        "  -p [ --testcasePrefixes ] arg  Testcase(s) to run (by prefix))\n"
        "  -v [ --verbose ]               Verbose output\n"
        "  -s [ --skipVerification ]      Skips data verification after copy\n"
        "  -d [ --disableAffinity ]       Disable automatic CPU affinity control\n"
        "  -i [ --testSamples ] arg (=3)  Iterations of the benchmark\n"
        "  -m [ --useMean ]               Use mean instead of median for results\n"
        "  -j [ --json ]                  Print output in json format instead of plain \n"
        "                                 text.\n")


def test_standin_and_parser_know_the_same_testcases():
    assert standin_module().KEYS == list(nvbw.TESTCASES)


@pytest.mark.parametrize("key", sorted(standin_module().MODELS))
def test_standin_models_follow_the_simulator(key):
    name, gen, width, links, version, dummy = standin_module().MODELS[key]
    model = models.MODELS[key]
    assert (name, gen, width, links, version) == (model.name, model.health.pcie_gen, model.health.pcie_width,
                                                  model.health.nvlinks, model.health.nvlink_version)


def test_every_simulated_model_is_known_to_the_standin():
    assert sorted(models.MODELS) == sorted(standin_module().MODELS)


# ---------------------------------------------------------------- the stand-in: the JSON form

def test_standin_json_follows_the_jsoncpp_styled_form_transcribed_from_its_sources(node):
    rc, out, err = run(["-j", "-t", "0", "-t", "nope"], node("h100-80gb-x8"), CUDA_VISIBLE_DEVICES="0,1")
    assert rc == 0, err
    assert out.endswith("}\n\n")
    data = json.loads(out)
    root = data["nvbandwidth"]
    assert list(root) == sorted(root) == ["CUDA Runtime Version", "Driver Version", "GPU Device list", "git_version", "testcases", "version"]
    assert out.startswith('{\n\t"nvbandwidth" : \n\t{\n\t\t"CUDA Runtime Version" : 12080,\n\t\t"Driver Version" : "570.133.20",\n')
    assert '\t\t\t{\n\t\t\t\t"name" : "nope",\n\t\t\t\t"status" : "ERROR"\n\t\t\t}\n' in out
    case = root["testcases"][0]
    assert sorted(case) == ["bandwidth_description", "bandwidth_matrix", "name", "status", "sum"]
    assert all(re.match(r"^\d+\.\d{1,4}$", cell) for cell in case["bandwidth_matrix"][0])     # %g: 6 significant digits
    assert re.search(r'"sum" : \d+\.\d{12,}\n', out)                                            # %.17g


@pytest.mark.parametrize("argv,keys", [
    (["-j", "-v", "-t", "0"], ["average", "bandwidth_description", "bandwidth_matrix", "max", "min", "name", "status", "sum"]),
    (["-j", "-t", "device_to_device_bidirectional_memcpy_write_ce"], ["bandwidth_description", "bandwidth_matrix", "name", "status", "sum"]),
])
def test_json_testcase_fields(node, argv, keys):
    rc, out, dummy = run(argv, node("a100-40gb-x8"), CUDA_VISIBLE_DEVICES="0,1,2")
    case = json.loads(out)["nvbandwidth"]["testcases"][0]
    assert sorted(case) == keys
    if "bidirectional" in argv[-1]:
        # three 3x3 matrices appended to one list, the last title (Total) kept
        assert len(case["bandwidth_matrix"]) == 9 and case["bandwidth_description"].endswith("Total bandwidth (GB/s)")
        assert nvbw.parse(out)["testcases"][argv[-1]]["matrix"][0][1] == pytest.approx(2 * 0.97 * 231, rel=0.01)


# ---------------------------------------------------------------- the stand-in: the simulated hardware

def _values(out, case):
    entry = nvbw.parse(out)["testcases"][case]
    return nvbw.pairs(entry) if entry["rows"] != ["0"] else nvbw.per_gpu(entry)


@pytest.mark.parametrize("preset,faults,case,expected", [
    # healthy: Gen5 x16 3.938 x 16 x 0.875 = 55.1 (H2D), x 1.01 (D2H); Gen4 x16 1.969 x 16 x 0.80 = 25.2
    ("h100-80gb-x8", [], H2D, dict((gpu, 55.1) for gpu in range(8))),
    ("h100-80gb-x8", [], D2H, dict((gpu, 55.7) for gpu in range(8))),
    ("h200-x8", [], H2D, dict((gpu, 55.1) for gpu in range(8))),
    ("a100-40gb-x8", [], H2D, dict((gpu, 25.2) for gpu in range(8))),
    ("l40s-x4", [], "host_to_device_memcpy_sm", dict((gpu, 0.97 * 25.2) for gpu in range(4))),
    # a link that trained down: gen 4 x16 on a Gen5 GPU, x8, gen 3 x4
    ("h100-80gb-x8", [("pcie", "--gpu", "2", "--gen", "4")], H2D, {1: 55.1, 2: 25.2, 3: 55.1}),
    ("h100-80gb-x8", [("pcie", "--gpu", "6", "--width", "8")], H2D, {5: 55.1, 6: 27.6}),
    ("a100-40gb-x8", [("pcie", "--gpu", "0", "--gen", "3", "--width", "4")], D2H, {0: 1.01 * 0.985 * 4 * 0.83, 1: 1.01 * 25.2}),
    ("h100-80gb-x8", [("pcie", "--gpu", "2", "--gen", "4"), ("pcie", "--gpu", "2", "--restore")], H2D, {2: 55.1}),
    # NVLink: 18 x 25 x 0.85 = 382.5 (H100), 12 x 25 x 0.77 = 231 (A100); a pair runs at the fewer links of the two
    ("h100-80gb-x8", [], D2D, {(0, 1): 382.5, (7, 6): 382.5}),
    ("a100-40gb-x8", [], D2D, {(0, 1): 231.0, (5, 3): 231.0}),
    ("a100-40gb-x8", [], "device_to_device_memcpy_write_ce", {(0, 1): 1.01 * 231.0}),
    ("h100-80gb-x8", [("nvlink", "--gpu", "3", "--link", str(link), "--state", "down") for link in range(9)],
     D2D, {(3, 0): 191.25, (0, 3): 191.25, (3, 7): 191.25, (0, 1): 382.5}),
    ("h100-80gb-x8", [("nvlink", "--gpu", "3", "--link", "0", "--state", "down")], "all_to_one_write_ce", {3: 17 / 18.0 * 382.5, 2: 382.5}),
    # every link of GPU 3 down: no peer access, its pairs are not measured (N/A)
    ("a100-40gb-x8", [("nvlink", "--gpu", "3", "--link", str(link), "--state", "down") for link in range(12)],
     D2D, {(0, 1): 231.0}),
    ("a100-40gb-x8", [], "device_local_copy", dict((gpu, 0.45 * 1555) for gpu in range(8))),
])
def test_numbers_follow_the_simulated_links(node, preset, faults, case, expected):
    rc, out, err = run(["-t", case], node(preset, *faults))
    assert rc == 0, err
    got = _values(out, case)
    assert dict((key, got.get(key)) for key in expected) == dict((key, pytest.approx(value, rel=0.01)) for key, value in expected.items())
    if faults and faults[0][0] == "nvlink" and len(faults) == 12:
        assert not any(3 in pair for pair in got) and len(got) == 7 * 6


@pytest.mark.parametrize("preset,visible,case,status", [
    ("a100-80gb-pcie-x4", None, D2D, "waived"),                        # PCIe boards: no NVLink, no peer access
    ("l40s-x4", None, "device_to_device_latency_sm", "waived"),
    ("h100-80gb-x8", "4", D2D, "waived"),                              # one device
    ("h100-80gb-x8", "4", "all_to_one_read_ce", "waived"),
    ("h100-80gb-x8", "4", "device_local_copy", "passed"),
    ("h100-80gb-x8", "4,5", D2D, "passed"),
])
def test_device_to_device_testcases_are_waived_without_peers(node, preset, visible, case, status):
    env = {"CUDA_VISIBLE_DEVICES": visible} if visible is not None else {}
    state = node(preset)
    rc, out, err = run(["-j", "-t", case], state, **env)
    assert rc == 0, err
    assert nvbw.parse(out)["testcases"][case]["status"] == status
    rc, text, dummy = run(["-t", case], state, **env)
    assert ("Waived: \n" in text) == (status == "waived") and ("Running %s." % case in text) == (status == "passed")


@pytest.mark.parametrize("nvswitch,status", [(True, "passed"), (False, "waived")])
def test_nvlink_peers_need_the_nvswitch_board(node, nvswitch, status):
    """NVLink GPUs whose state says no NVSwitch (peer links not simulated there): no peer access."""
    state = node("a100-40gb-x8")
    with open(state) as handle:
        data = json.load(handle)
    data["nvswitch"] = nvswitch
    with open(state, "w") as handle:
        json.dump(data, handle)
    rc, out, err = run(["-j", "-t", D2D, "-t", "all_to_one_write_ce"], state)
    assert rc == 0, err
    assert [entry["status"] for entry in nvbw.parse(out)["testcases"].values()] == [status, status]


@pytest.mark.parametrize("visible,buses", [
    ("2,5", ["00000000:52:00", "00000000:c3:00"]),
    ("5,2", ["00000000:c3:00", "00000000:52:00"]),
    ("1,x,2", ["00000000:43:00"]),                                   # CUDA stops at the first invalid entry
    ("1,1,2", ["00000000:43:00"]),                                   # ... and at a repeated one
    ("7,8", ["00000000:df:00"]),
    ("uuid:3", ["00000000:61:00"]),
    ("uuid-prefix:6,0", ["00000000:d1:00", "00000000:1b:00"]),
    ("MIG-0e1d9f5c-7e5b-5b5e-8c5d-000000000000", []),
    ("", []),
    ("9", []),
])
def test_cuda_visible_devices_keeps_and_renumbers_like_cuda(node, visible, buses):
    state = node("h100-80gb-x8")
    uuids = [gpu["uuid"] for gpu in sorted(store.load()["gpus"], key=lambda g: g["pci_bus_id"])]
    if visible.startswith("uuid:"):
        visible = uuids[int(visible[5:])]
    elif visible.startswith("uuid-prefix:"):
        first, rest = visible[12:].split(",")
        visible = uuids[int(first)][:12] + "," + rest
    rc, out, err = run(["-j", "-t", "0"], state, CUDA_VISIBLE_DEVICES=visible)
    result = nvbw.parse(out)
    assert [device["pci"] for device in result["devices"]] == buses
    assert [device["index"] for device in result["devices"]] == list(range(len(buses)))
    if not buses:
        assert rc == 1 and result["error"] == "[CUDA_ERROR_NO_DEVICE] no CUDA-capable device is detected " + CUINIT
        assert "testcases" not in json.loads(out)["nvbandwidth"]
    else:
        assert rc == 0 and sorted(nvbw.per_gpu(result["testcases"][H2D])) == list(range(len(buses)))


@pytest.mark.parametrize("preset,faults,visible,rc,error", [
    # a lost GPU (Xid 79) among the devices: cuInit fails
    ("h100-80gb-x8", [("xid", "--gpu", "5", "--code", "79")], None, 1, "[CUDA_ERROR_UNKNOWN] unknown error " + CUINIT),
    # ... not among them (Slurm gave the job other GPUs)
    ("h100-80gb-x8", [("xid", "--gpu", "5", "--code", "79")], "0,1", 0, ""),
    # ... back after a reboot; another Xid changes nothing
    ("h100-80gb-x8", [("xid", "--gpu", "5", "--code", "79"), ("reboot",)], None, 0, ""),
    ("h100-80gb-x8", [("xid", "--gpu", "5", "--code", "48")], None, 0, ""),
    # the fabric manager of an NVSwitch board not running: CUDA is not initialised
    ("h100-80gb-x8", [("fabric-manager", "--state", "stopped")], None, 1,
     "[CUDA_ERROR_SYSTEM_NOT_READY] system not yet initialized " + CUINIT),
    ("a100-40gb-x8", [("fabric-manager", "--state", "starting")], "3", 1, "[CUDA_ERROR_SYSTEM_NOT_READY] system not yet initialized "),
])
def test_cuda_initialisation_failures(node, preset, faults, visible, rc, error):
    env = {"CUDA_VISIBLE_DEVICES": visible} if visible else {}
    state = node(preset, *faults)
    got_rc, out, err = run(DEEP + ["-j"], state, **env)
    assert got_rc == rc, err
    result = nvbw.parse(out)
    assert result["error"].startswith(error) and bool(result["error"]) == bool(error)
    got_rc, text, err = run(DEEP, state, **env)
    assert got_rc == rc
    if error:
        # text form: the error goes to stderr, after the version lines on stdout
        assert text == "nvbandwidth Version: v0.8\nBuilt from Git version: v0.8-STANDIN\n\n"
        assert err.split("\n", 1)[1].startswith(error) and err.endswith("\n\n")
        assert nvbw.parse(text + err)["error"].startswith(error)


def test_no_simulated_driver_is_a_missing_libcuda(tmp_path):
    rc, out, err = run(["-t", "0"], str(tmp_path / "absent.json"))
    assert (rc, out) == (127, "")
    assert "error while loading shared libraries: libcuda.so.1: cannot open shared object file" in err
    assert "nvbandwidth STAND-IN: no simulated driver: " in err


# ---------------------------------------------------------------- the stand-in: failures on demand

@pytest.mark.parametrize("mode,how,rc", [
    ("slow", "env", 0),
    ("slow", "file", 0),
    ("", "file", 0),          # an empty marker file means slow
    ("cuda", "env", 1),
    ("cuda", "file", 1),
])
@pytest.mark.parametrize("form", ["text", "json"])
def test_failure_on_demand(node, tmp_path, mode, how, rc, form):
    state = node("h100-80gb-x8")
    argv = ["-t", "host_device_latency_sm"] + DEEP + (["-j"] if form == "json" else [])
    env = {}
    if how == "env":
        env["NVBANDWIDTH_STANDIN_FAIL"] = mode
    else:
        marker = tmp_path / "FAIL"
        marker.write_text(mode + "\n")
        env["NVBANDWIDTH_STANDIN_FAIL_FILE"] = str(marker)
    got_rc, out, err = run(argv, state, **env)
    healthy = nvbw.parse(run(argv, state)[1])
    assert got_rc == rc, err
    result = nvbw.parse(out + (err.split("\n", 1)[1] if form == "text" else ""))
    if rc == 0:
        assert "failing on purpose: slow" in err and result["error"] == ""
        for case in (H2D, D2D):
            assert result["testcases"][case]["sum"] == pytest.approx(healthy["testcases"][case]["sum"] / 10, rel=0.001)
        # latencies get ten times longer, not shorter
        assert result["testcases"]["host_device_latency_sm"]["sum"] == pytest.approx(
            healthy["testcases"]["host_device_latency_sm"]["sum"] * 10, rel=0.001)
    else:
        # the latency testcase (no memcpy) ran; the first copy stopped the run
        assert list(result["testcases"]) == ["host_device_latency_sm", H2D]
        assert result["testcases"][H2D]["status"] == "error"
        assert result["error"].startswith("[CUDA_ERROR_LAUNCH_FAILED] unspecified launch failure in expression "
                                          "nodeHelper->streamSynchronizeWrapper(CU_STREAM_PER_THREAD) in void memsetPatternHelper(")
        assert result["error"].endswith("/opt/nvbandwidth-STANDIN/src/memcpy.cpp:73")


def test_an_unknown_failure_mode_is_refused(node):
    rc, out, err = run(["-t", "0"], node("h100-80gb-x8"), NVBANDWIDTH_STANDIN_FAIL="wrong")
    assert (rc, out) == (2, "")
    assert "failure mode 'wrong' is not one of slow, cuda" in err


@pytest.mark.parametrize("argv", [["-v", "-t", "0", "-t", "4"], ["-i", "0", "-t", "0"], ["--perfFormatter", "-t", "32"]])
def test_verbose_samples_and_perf_lines(node, argv):
    rc, out, dummy = run(argv, node("h100-80gb-x8"), CUDA_VISIBLE_DEVICES="0,1")
    result = nvbw.parse(out)
    assert rc == 0 and result["error"] == ""
    if "-v" in argv:
        assert re.findall(r"^\tSample (\d): Host -> Device 0: [\d.]+ GB/s$", out, re.M) == ["0", "1", "2"]
        assert re.search(r"^\tSample 2: Device 0 -> Device 1: [\d.]+ GB/s$", out, re.M)
        assert re.search(r"^MIN device_to_device_memcpy_read_ce 0\.00\nMAX device_to_device_memcpy_read_ce 38\d\.\d\d\n", out, re.M)
    if "-i" in argv:
        # no sample taken: PerformanceStatistic's median of nothing is 0
        assert nvbw.per_gpu(result["testcases"][H2D]) == {0: 0.0, 1: 0.0}
    if "--perfFormatter" in argv:
        assert re.search(r"^&&&& PERF host_device_latency_sm \d+\.\d\d -ns$", out, re.M)


# ---------------------------------------------------------------- the deep tier's judgement of the stand-in

def _gpus(state_path):
    with open(state_path) as handle:
        state = json.load(handle)
    return [{"index": gpu["index"], "pci_bus_id": gpu["pci_bus_id"], "fleet": {"pcie": {"max_gen": 5, "max_width": 16}}}
            for gpu in state["gpus"]]


@pytest.mark.parametrize("faults,status,reason", [
    ([], "pass", "nvbandwidth: host_to_device_memcpy_ce, device_to_host_memcpy_ce, device_to_device_memcpy_read_ce within bounds"),
    ([("pcie", "--gpu", "2", "--gen", "4")], "fail", "GPU 2 host_to_device_memcpy_ce 25."),
    ([("nvlink", "--gpu", "6", "--link", str(link), "--state", "down") for link in range(10)], "fail",
     "nvbandwidth: GPU 6 device_to_device_memcpy_read_ce 169.9 GB/s, below 281.7 (80% of the node median)"),
    ([("xid", "--gpu", "1", "--code", "79")], "fail", "nvbandwidth failed (rc 1): [CUDA_ERROR_UNKNOWN] unknown error"),
])
def test_deep_tier_judges_the_standins_output(node, faults, status, reason):
    # the deep tier's judgement (plugins/module_utils/health/_deep_tier.py, imported at the top: an import
    # error fails this file, it is never a skip)
    state = node("h100-80gb-x8", *faults)
    config = dict(deep.DEFAULTS)
    rc, out, err = run(deep.nvbandwidth_argv(dict(config, nvbandwidth="nvbandwidth"))[1:], state)
    item = deep.judge_nvbandwidth(rc, out, err, config, _gpus(state))
    assert item["status"] == status, item
    assert reason in item["detail"]
