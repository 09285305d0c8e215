# -*- coding: utf-8 -*-
"""The ``dcgmi diag -j`` parser (plugins/module_utils/validation/_dcgm.py) and the dcgmi STAND-IN.

The parser is read against hand-written samples of the DCGM 3.x, NVVS and DCGM 4.x shapes
(tests/unit/fixtures/deep/dcgm/). The stand-in (tests/standins/dcgmi-standin) runs as a
subprocess on NVML simulator states made with the real ``nvmlsim`` CLI; its output is read back
with the parser.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpucluster.bringup.plugins.module_utils.validation._dcgm import DiagNotRun, failures, mig_refusal, parse_diag, summary

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
STANDIN = os.path.join(ROOT, "tests", "standins", "dcgmi-standin")
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures", "deep", "dcgm")
SIM_SRC = os.path.join(ROOT, "nvml_sim", "src")
DEPLOYMENT = ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
              "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom"]


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def failed(parsed):
    """(name, gpus, error ids) of each failed entry."""
    return [(t["name"], t["gpus"], t["error_ids"]) for t in failures(parsed)]


# --- the parser on the samples -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,version,driver,count,failing", [
    ("dcgm3_r1_pass.json", "3.3.5", "550.54.15", 9, []),
    ("dcgm3_r2_fail.json", "3.3.5", "535.129.03", 17,
     [("Page Retirement/Row Remap", [2], [84]), ("PCIe", [0], [46]), ("GPU Memory", [2], [85])]),
    ("nvvs3_custom_gpu_ids.json", "3.1.8", "525.85.12", 13, [("memory", [2], [52])]),
    ("dcgm4_r2_fail.json", "4.2.3", "570.133.20", 6, [("memory", [1], [57])]),
])
def test_samples(name, version, driver, count, failing):
    parsed = parse_diag(fixture(name))
    assert (parsed["version"], parsed["driver"], len(parsed["tests"])) == (version, driver, count)
    assert failed(parsed) == failing


@pytest.mark.parametrize("name,index,expected", [
    ("dcgm3_r1_pass.json", 0, {"category": "Deployment", "name": "Denylist", "gpus": [], "status": "pass", "detail": "", "error_ids": []}),
    # the Deployment quirk of dcgmi 3.3: "gpu_id" a number, the warning keyed "warnings"
    ("dcgm3_r2_fail.json", 6, {"category": "Deployment", "name": "Page Retirement/Row Remap", "gpus": [2], "status": "fail",
                               "detail": "GPU 2 had uncorrectable memory errors and 1 rows were remapped", "error_ids": [84]}),
    ("dcgm3_r2_fail.json", 9, {"category": "Integration", "name": "PCIe", "gpus": [0], "status": "fail",
                               "detail": "GPU 0 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 "
                                         "(parameter 'min_pci_width') Check DCGM and system configuration. This error may be eliminated "
                                         "with an updated configuration.", "error_ids": [46]}),
    ("dcgm3_r2_fail.json", 13, {"category": "Hardware", "name": "GPU Memory", "gpus": [0], "status": "pass", "detail": "", "error_ids": []}),
    # NVVS: "0,1,2,3", upper-case statuses, null holes skipped, warnings as strings
    ("nvvs3_custom_gpu_ids.json", 0, {"category": "Deployment", "name": "Denylist", "gpus": [0, 1, 2, 3], "status": "pass", "detail": "",
                                      "error_ids": []}),
    ("nvvs3_custom_gpu_ids.json", 4, {"category": "Deployment", "name": "Persistence Mode", "gpus": [0, 1, 2, 3], "status": "skip",
                                      "detail": "", "error_ids": []}),
    ("nvvs3_custom_gpu_ids.json", 5, {"category": "Deployment", "name": "Environmental Variables", "gpus": [0, 1, 2, 3], "status": "warn",
                                      "detail": "Found CUDA performance-limiting environment variable 'CUDA_PROFILE'. Please unset this "
                                                "environment variable to address test failures.", "error_ids": []}),
    ("nvvs3_custom_gpu_ids.json", 11, {"category": "Custom", "name": "memory", "gpus": [2], "status": "fail",
                                       "detail": "Found 16 faulty memory elements on GPU 2 Run a field diagnostic on the GPU.", "error_ids": [52]}),
    # DCGM 4.x: entities, test_summary only where the results do not say it
    ("dcgm4_r2_fail.json", 1, {"category": "Deployment", "name": "software", "gpus": [1], "status": "pass", "detail": "", "error_ids": []}),
    ("dcgm4_r2_fail.json", 5, {"category": "Integration", "name": "pcie", "gpus": [1], "status": "skip", "detail": "", "error_ids": []}),
])
def test_sample_entries(name, index, expected):
    assert parse_diag(fixture(name))["tests"][index] == expected


@pytest.mark.parametrize("prefix,suffix", [
    ("", ""),
    ("WARNING: THIS SHOULD NOT HAPPEN\n", ""),
    ("Warning: {not json} before the report\n\n", "\nsomething after it\n"),
    ("  \t", "}"),
])
def test_text_around_the_document_is_ignored(prefix, suffix):
    parsed = parse_diag(prefix + fixture("dcgm3_r2_fail.json") + suffix)
    assert parsed["version"] == "3.3.5" and len(failures(parsed)) == 3


@pytest.mark.parametrize("doc,gpus", [
    ({"gpu_ids": "0, 2,3"}, [0, 2, 3]),
    ({"gpu_ids": [1, "5"]}, [1, 5]),
    ({"gpu_ids": 7}, [7]),
    ({"gpu_id": "4"}, [4]),
    ({"entity_group": "GPU", "entity_id": 6}, [6]),
    ({"entity_group_id": 1, "entity_id": 3}, [3]),
    ({"entity_group": "CPU", "entity_id": 0}, []),
    # a Deployment result names the last error's GPU; the GPUs its warnings name count too
    ({"gpu_id": 4, "warnings": [{"warnings": "Could not query field row_remap_failure for GPU 1: 'GPU is lost' (-18)."},
                                {"warnings": "GPU 4 had uncorrectable memory errors and row remapping failed."}]}, [1, 4]),
    ({}, []),
])
def test_gpus_of_a_result(doc, gpus):
    result = dict({"status": "Fail"}, **doc)
    text = json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name": "SM Stress", "results": [result]}]}]}})
    assert parse_diag(text)["tests"][0]["gpus"] == gpus


@pytest.mark.parametrize("warnings,detail,ids", [
    ([{"warning": "a", "error_id": 3}, {"warning": "b  c\n d", "error_id": "46"}], "a; b c d", [3, 46]),
    (["plain text"], "plain text", []),
    ([None, {"warnings": "deployment key", "error_id": 29}], "deployment key", [29]),
    ({"warning": "one object", "error_id": 6}, "one object", [6]),
    ([{"error_id": 50}], "", [50]),
    ([], "", []),
])
def test_warnings_make_detail_and_error_ids(warnings, detail, ids):
    text = json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
        {"name": "GPU Memory", "results": [{"gpu_id": "0", "status": "Warn", "warnings": warnings}]}]}]}})
    entry = parse_diag(text)["tests"][0]
    assert (entry["detail"], entry["error_ids"], entry["status"]) == (detail, ids, "warn")


def test_top_level_tests_list_and_summary_only_tests():
    text = json.dumps({"metadata": {"version": "4.1.0", "driver_version": "550.1"}, "tests": [
        {"name": "memory", "category": "Hardware", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass"}]},
        {"name": "pcie", "test_summary": {"status": "Fail", "warnings": [{"warning": "global", "error_id": 44}]}},
        {"name": "diagnostic", "status": "Skip"},
    ]})
    parsed = parse_diag(text)
    assert (parsed["version"], parsed["driver"]) == ("4.1.0", "550.1")
    assert [(t["category"], t["name"], t["gpus"], t["status"]) for t in parsed["tests"]] == [
        ("Hardware", "memory", [0], "pass"), ("", "pcie", [], "fail"), ("", "diagnostic", [], "skip")]


@pytest.mark.parametrize("text,message", [
    ("", "no JSON document in the dcgmi output (0 characters)"),
    ("Error: unable to establish a connection to the specified host: localhost\n",
     "no JSON document in the dcgmi output (73 characters, first line: 'Error: unable to establish a connection"),
    ("[1, 2]", "no JSON document"),
    ('{"DCGM GPU Diagnostic": ', "no JSON document"),
    ("{}", 'neither "DCGM GPU Diagnostic" -> "test_categories" (DCGM 3.x), "DCGM Diagnostic" -> "test_categories" (DCGM 4.x) '
           'nor "tests"; its keys: none'),
    ('{"iterations": [], "Overall Result": "Pass"}', "its keys: Overall Result, iterations"),
    (fixture("dcgm3_runtime_error.json"), "dcgmi diag did not run: GPU 2's MIG configuration is incompatible with the diagnostic"),
    ('{"DCGM GPU Diagnostic": {"test_categories": {}}}', "DCGM GPU Diagnostic: test_categories is dict, expected a list"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": {}}]}}', "category 'X': tests is dict, expected a list"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [7]}}', "a test category is int, expected an object"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"results": []}]}]}}', "a test has no name"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": 3}]}]}}',
     "test 'T': results is int, expected a list"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": [{"status": "Maybe"}]}]}]}}',
     "test 'T': status 'Maybe' is not one of Pass, Fail, Warn, Skip"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": [{}]}]}]}}', "status None"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": [{"status": "Pass", '
     '"gpu_id": "a"}]}]}]}}', "GPU id 'a' is not a GPU index"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": [{"status": "Fail", '
     '"warnings": [{"warning": "w", "error_id": "x"}]}]}]}]}}', "error_id 'x' is not a number"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": ["Pass"]}]}]}}',
     "a result is str, expected an object"),
])
def test_malformed_input_is_a_value_error(text, message):
    with pytest.raises(ValueError) as err:
        parse_diag(text)
    assert message in str(err.value)


@pytest.mark.parametrize("text, message", [
    ('{"DCGM GPU Diagnostic": {"test_categories": {}}}', "DCGM GPU Diagnostic: test_categories is dict, expected a list"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": {}}]}}',
     "DCGM GPU Diagnostic, category 'X': tests is dict, expected a list"),
    ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": [{"name": "T", "results": 3}]}]}}',
     "DCGM GPU Diagnostic, category 'X', test 'T': results is int, expected a list"),
])
def test_a_misshapen_report_is_named_from_its_top_to_the_bad_part(text, message):
    """The whole message: where in dcgmi's JSON the wrong shape is, what it is and what was expected."""
    with pytest.raises(ValueError) as err:
        parse_diag(text)
    assert str(err.value) == message


def test_parser_refuses_bytes():
    with pytest.raises(ValueError, match="dcgmi output must be text, got bytes"):
        parse_diag(fixture("dcgm3_r1_pass.json").encode())


def _report(*entries):
    return {"version": None, "driver": None, "tests": [
        {"category": "c", "name": name, "gpus": gpus, "status": status, "detail": detail, "error_ids": []} for name, gpus, status, detail in entries]}


@pytest.mark.parametrize("entries,line", [
    ([], ""),
    ([("PCIe", [0], "pass", "")], ""),
    ([("GPU Memory", [3], "fail", "bad rows"), ("PCIe", [0], "fail", "x8")], "GPU Memory on GPU 3: bad rows; PCIe on GPU 0: x8"),
    ([("Inforom", [], "fail", ""), ("Page Retirement/Row Remap", [1, 4], "fail", "lost")], "Inforom: failed; Page Retirement/Row Remap on GPUs 1,4: lost"),
    # four parts would be 298 characters, 307 with '; +4 more': three and '+5 more'
    ([("T%d" % i, [i], "fail", "d" * 60) for i in range(8)],
     "T0 on GPU 0: %s; T1 on GPU 1: %s; T2 on GPU 2: %s; +5 more" % (("d" * 60,) * 3)),
    ([("T%d" % i, [i], "fail", "d" * 60) for i in range(4)],
     "T0 on GPU 0: %s; T1 on GPU 1: %s; T2 on GPU 2: %s; T3 on GPU 3: %s" % (("d" * 60,) * 4)),
    ([("Memtest", [0], "fail", "e" * 400)], "Memtest on GPU 0: %s..." % ("e" * 117)),
    ([("Memtest", [0], "fail", "e" * 400), ("PCIe", [1], "warn", "w"), ("PCIe", [2], "fail", "x")],
     "Memtest on GPU 0: %s...; PCIe on GPU 2: x" % ("e" * 117)),

    # a detail cut where a space falls loses the space; a first part too long for the line is cut to leave room for '+N more'
    ([("M", [0], "fail", "a" * 116 + " " + "b" * 50)], "M on GPU 0: %s..." % ("a" * 116)),
    ([("N" * 250, [0], "fail", "d" * 60), ("P", [1], "fail", "x")], "%s on GPU 0: %s...; +1 more" % ("N" * 250, "d" * 27)),
])
def test_summary(entries, line):
    parsed = _report(*entries)
    assert summary(parsed) == line
    assert len(summary(parsed)) <= 300


def test_summary_of_many_long_failures_stays_short():
    parsed = _report(*[("Page Retirement/Row Remap", [i], "fail", "x" * 500) for i in range(20)])
    line = summary(parsed)
    assert len(line) <= 300 and line.endswith("...; +19 more")
    assert line.startswith("Page Retirement/Row Remap on GPU 0: xxx")


def _doc(*tests, **top):
    """A DCGM 3.x document of one category "X" holding ``tests``, with ``top`` at its top level."""
    return json.dumps(dict({"DCGM GPU Diagnostic": {"test_categories": [{"category": "X", "tests": list(tests)}]}}, **top))


def _result_doc(result):
    return _doc({"name": "T", "results": [result]})


WHERE = "DCGM GPU Diagnostic, category 'X', test 'T': "


@pytest.mark.parametrize("text,message", [
    ("", "no JSON document in the dcgmi output (0 characters)"),
    ("\n  \nError: x\n[1]", "no JSON document in the dcgmi output (16 characters, first line: 'Error: x')"),
    ("e" * 130, "no JSON document in the dcgmi output (130 characters, first line: '%s')" % ("e" * 120)),
    ("{}", 'the dcgmi JSON document has neither "DCGM GPU Diagnostic" -> "test_categories" (DCGM 3.x), "DCGM Diagnostic" -> '
           '"test_categories" (DCGM 4.x) nor "tests"; its keys: none'),
    ('{"iterations": [], "Overall Result": "Pass"}', 'the dcgmi JSON document has neither "DCGM GPU Diagnostic" -> "test_categories" '
                                                     '(DCGM 3.x), "DCGM Diagnostic" -> "test_categories" (DCGM 4.x) nor "tests"; its keys: '
                                                     'Overall Result, iterations'),
    ('{"DCGM Diagnostic": {"test_categories": [7]}}', "DCGM Diagnostic: a test category is int, expected an object"),
    (_doc(5), "DCGM GPU Diagnostic, category 'X': a test is int, expected an object"),
    (_doc({"name": " ", "results": []}), "DCGM GPU Diagnostic, category 'X': a test has no name"),
    (_doc({"name": 3, "results": []}), "DCGM GPU Diagnostic, category 'X': a test has no name"),
    (_result_doc({"status": "Maybe"}), WHERE + "status 'Maybe' is not one of Pass, Fail, Warn, Skip"),
    (_result_doc({"status": 1}), WHERE + "status 1 is not one of Pass, Fail, Warn, Skip"),
    (_result_doc({}), WHERE + "status None is not one of Pass, Fail, Warn, Skip"),
    (_result_doc({"status": "Pass", "gpu_id": "a"}), WHERE + "GPU id 'a' is not a GPU index"),
    (_result_doc({"status": "Pass", "gpu_ids": [True]}), WHERE + "GPU id True is not a GPU index"),
    (_result_doc({"status": "Pass", "gpu_ids": [1.5]}), WHERE + "GPU id 1.5 is not a GPU index"),
    (_result_doc({"status": "Pass", "gpu_ids": "0,,1"}), WHERE + "GPU id '' is not a GPU index"),
    (_result_doc({"status": "Pass", "entity_id": "-1"}), WHERE + "GPU id '-1' is not a GPU index"),
    (_result_doc({"status": "Fail", "warnings": [{"warning": "w", "error_id": "x"}]}), WHERE + "error_id 'x' is not a number"),
    (_result_doc({"status": "Fail", "warnings": [{"warning": "w", "error_id": True}]}), WHERE + "error_id True is not a number"),
    (_result_doc({"status": "Fail", "warnings": [{"warning": "w", "error_code": "4a"}]}), WHERE + "error_id '4a' is not a number"),
    (_result_doc({"status": "Fail", "warnings": [3]}), WHERE + "a warning is int, expected an object or a string"),
    (_doc({"name": "T", "results": ["Pass"]}), WHERE + "a result is str, expected an object"),
    (json.dumps({"tests": [{"name": "T", "test_summary": {"status": "Bad"}}]}),
     "tests, test 'T' test_summary: status 'Bad' is not one of Pass, Fail, Warn, Skip"),
    (json.dumps({"tests": [{"name": " T ", "status": "Bad"}]}), "tests, test 'T': status 'Bad' is not one of Pass, Fail, Warn, Skip"),
])
def test_each_refusal_reads_exactly(text, message):
    with pytest.raises(ValueError) as err:
        parse_diag(text)
    assert str(err.value) == message


@pytest.mark.parametrize("text,error", [
    ('{"DCGM GPU Diagnostic": {"runtime_error": " boom "}}', "boom"),
    ('{"DCGM Diagnostic": {"runtime_error": ""}, "runtime_error": "bang"}', "bang"),
    ('{"runtime_error": 7}', "7"),
])
def test_a_runtime_error_is_diag_not_run(text, error):
    with pytest.raises(DiagNotRun) as err:
        parse_diag(text)
    assert (str(err.value), err.value.error, isinstance(err.value, ValueError)) == ("dcgmi diag did not run: %s" % error, error, True)


@pytest.mark.parametrize("top,version,driver", [
    ({"version": "3.3.5", "Driver Version Detected": "550.1"}, "3.3.5", "550.1"),
    ({"metadata": {"version": " 4.1.0 ", "Driver Version": "560.2"}}, "4.1.0", "560.2"),
    ({"metadata": {"driver_version": 570}}, None, "570"),
    ({"driverVersion": "580.3", "version": True}, None, "580.3"),
    ({"version": "", "metadata": {"version": "4.2"}, "driver_version": {"x": 1}}, "4.2", None),
    ({"metadata": ["4.0"]}, None, None),
    # a blank value is no value: the next key of the same object is read
    ({"Driver Version Detected": " ", "driver_version": "550.1"}, None, "550.1"),
])
def test_version_and_driver_from_the_top_then_the_metadata(top, version, driver):
    parsed = parse_diag(_doc({"name": "T", "results": []}, **top))
    assert (parsed["version"], parsed["driver"], parsed["tests"]) == (version, driver, [])


def test_version_and_driver_inside_the_diagnostic_object():
    text = json.dumps({"DCGM Diagnostic": {"version": "3.0.4", "driverVersion": "470.9", "test_categories": []}})
    assert parse_diag(text) == {"version": "3.0.4", "driver": "470.9", "tests": []}


@pytest.mark.parametrize("status,want", [
    ("Pass", "pass"), (" PASS ", "pass"), ("fail", "fail"), ("Warn", "warn"), ("WARNING", "warn"), ("Skip", "skip"), ("skipped", "skip"),
])
def test_statuses(status, want):
    assert parse_diag(_result_doc({"status": status}))["tests"] == [
        {"category": "X", "name": "T", "gpus": [], "status": want, "detail": "", "error_ids": []}]


def _summary_test(results, summary_status, **extra):
    test = dict({"name": "t", "category": "C", "results": results, "test_summary": {"status": summary_status, "warnings": ["overall"]}}, **extra)
    return [(e["gpus"], e["status"], e["detail"]) for e in parse_diag(json.dumps({"tests": [test]}))["tests"]]


@pytest.mark.parametrize("results,summary_status,want", [
    # the summary only where the results do not say it: no results, or a failure none of them shows
    ([], "Fail", [([], "fail", "overall")]),
    ([{"entity_id": 0, "status": "Pass"}], "Fail", [([0], "pass", ""), ([], "fail", "overall")]),
    ([{"entity_id": 0, "status": "Fail"}], "Fail", [([0], "fail", "")]),
    ([{"entity_id": 0, "status": "Pass"}], "Pass", [([0], "pass", "")]),
    ([{"entity_id": 0, "status": "Warn"}, {"entity_id": 1, "status": "Fail"}], "Fail", [([0], "warn", ""), ([1], "fail", "")]),
    ([None, {"entity_id": 2, "status": "Skip"}], "Warn", [([2], "skip", "")]),
    ([], None, []),
])
def test_a_test_summary_counts_where_the_results_do_not_say_it(results, summary_status, want):
    assert _summary_test(results, summary_status) == want


@pytest.mark.parametrize("test,want", [
    ({"name": "t", "status": "Fail"}, [("C", "t", "fail")]),
    ({"name": "t", "status": "Fail", "results": [{"status": "Pass"}]}, [("C", "t", "pass")]),
    ({"name": "t", "category": "Own", "results": [{"status": "Pass"}]}, [("Own", "t", "pass")]),
    ({"name": "t"}, []),
    (None, []),
])
def test_a_test_without_results_is_judged_by_its_own_status(test, want):
    text = json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": " C ", "tests": [test]}]}})
    assert [(e["category"], e["name"], e["status"]) for e in parse_diag(text)["tests"]] == want


@pytest.mark.parametrize("result,gpus,detail,ids", [
    ({"entity_id": 4}, [4], "", []),                                   # no entity group: a GPU
    ({"entity_group": " gpu ", "entity_id": "5"}, [5], "", []),
    ({"entity_group_id": "1", "entity_id": 3}, [3], "", []),
    ({"entity_group_id": 2, "entity_id": 3}, [], "", []),
    ({"gpu_id": None, "gpu_ids": "1,1,0"}, [1, 0], "", []),
    ({"gpu_id": 3, "warnings": "GPU 5 and GPU 1 lost"}, [1, 3, 5], "GPU 5 and GPU 1 lost", []),
    ({"gpu_id": "3", "warnings": "GPU 5 lost"}, [3], "GPU 5 lost", []),
    ({"gpu_id": 3, "warnings": ["lost on GPU 1", "GPU 5 too"]}, [1, 3, 5], "lost on GPU 1; GPU 5 too", []),
    ({"gpu_id": 3}, [3], "", []),
    ({"warnings": [{"message": "m", "error_code": -2}, {"msg": "n"}, {"warning": 5, "error_id": 7}, " "]}, [], "m; n", [-2, 7]),
])
def test_gpus_detail_and_error_ids_of_a_result(result, gpus, detail, ids):
    entry = parse_diag(_result_doc(dict(result, status="Fail")))["tests"][0]
    assert (entry["gpus"], entry["detail"], entry["error_ids"]) == (gpus, detail, ids)


@pytest.mark.parametrize("error,want", [
    ("GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU.",
     "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU."),
    ("Error: Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled, yet GPU 0 is MIG enabled\n  and the "
     "diagnostic is attempting to run on 8 GPUs. Return: (-1)",
     "Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled, yet GPU 0 is MIG enabled and the diagnostic is "
     "attempting to run on 8 GPUs."),
    ("Cannot run diagnostic: MIG is enabled, but no compute instances are configured. CUDA needs to execute on a compute instance if MIG "
     "is enabled.", "Cannot run diagnostic: MIG is enabled, but no compute instances are configured. CUDA needs to execute on a compute "
                    "instance if MIG is enabled."),
    ("Cannot run diagnostic: CUDA does not support enumerating GPUs when one more GPUs has MIG mode enabled and one or more GPUs has MIG "
     "mode disabled.", "Cannot run diagnostic: CUDA does not support enumerating GPUs when one more GPUs has MIG mode enabled and one or "
                       "more GPUs has MIG mode disabled."),
    ("MIG is enabled on GPU 0", None),
    (None, None),
    ("", None),
])
def test_only_dcgms_own_mig_refusals_are_named(error, want):
    assert mig_refusal(error) == want


# --- the stand-in ----------------------------------------------------------------------------------------------------------

def nvmlsim(tmp_path, *argv):
    env = dict(os.environ, NVMLSIM_STATE=str(tmp_path / "state.json"), NVMLSIM_ROOT=str(tmp_path / "root"), PYTHONPATH=SIM_SRC)
    proc = subprocess.run([sys.executable, "-m", "nvmlsim"] + list(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


def node(tmp_path, preset="h100-80gb-x8", *faults):
    """An NVML simulator state of ``preset`` with each fault (an nvmlsim command line) applied."""
    (tmp_path / "root").mkdir(exist_ok=True)
    nvmlsim(tmp_path, "create", "--preset", preset, "--force")
    for fault in faults:
        nvmlsim(tmp_path, *fault.split())
    return tmp_path


def edit_state(tmp_path, change):
    path = tmp_path / "state.json"
    state = json.loads(path.read_text())
    change(state)
    path.write_text(json.dumps(state))


def dcgmi(tmp_path, *argv, **env):
    """(rc, stdout, stderr) of the stand-in, with no FAIL or NO_HOSTENGINE file unless given."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NVMLSIM_STATE": str(tmp_path / "state.json"),
            "DCGMI_STANDIN_FAIL_FILE": str(tmp_path / "no-FAIL"), "DCGMI_STANDIN_NO_HOSTENGINE_FILE": str(tmp_path / "no-NO_HOSTENGINE")}
    full.update((key, str(value)) for key, value in env.items())
    proc = subprocess.run([sys.executable, STANDIN] + list(argv), env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


LEVEL_TESTS = {
    1: [],
    2: [("Integration", "PCIe"), ("Hardware", "GPU Memory")],
    3: [("Integration", "PCIe"), ("Hardware", "GPU Memory"), ("Hardware", "Diagnostic"), ("Stress", "SM Stress"),
        ("Stress", "Targeted Stress"), ("Stress", "Targeted Power"), ("Stress", "Memory Bandwidth")],
    4: [("Integration", "PCIe"), ("Hardware", "GPU Memory"), ("Hardware", "Diagnostic"), ("Hardware", "Pulse Test"), ("Stress", "SM Stress"),
        ("Stress", "Targeted Stress"), ("Stress", "Targeted Power"), ("Stress", "Memory Bandwidth"), ("Stress", "Memtest")],
}


@pytest.mark.parametrize("run,level", [("1", 1), ("2", 2), ("3", 3), ("4", 4), ("quick", 1), ("short", 1), ("medium", 2), ("Long", 3),
                                       ("xlong", 4)])
def test_healthy_node_passes_every_level(tmp_path, run, level):
    node(tmp_path, "a100-40gb-x8")
    rc, out, err = dcgmi(tmp_path, "diag", "-r", run, "-j")
    assert rc == 0, err
    assert "dcgmi STAND-IN" in err and "not NVIDIA DCGM" in err
    parsed = parse_diag(out)
    assert (parsed["version"], parsed["driver"]) == ("3.3.5", "535.129.03")
    assert [t["name"] for t in parsed["tests"][:9]] == DEPLOYMENT
    per_gpu = []
    for test in parsed["tests"][9:]:
        if (test["category"], test["name"]) not in per_gpu:
            per_gpu.append((test["category"], test["name"]))
    assert per_gpu == LEVEL_TESTS[level]
    assert all(t["status"] == "pass" for t in parsed["tests"]) and len(parsed["tests"]) == 9 + 8 * len(per_gpu)
    document = json.loads(out)
    assert document["GPU Device IDs"] == ["20b0"] * 8 and document["GPU Device Serials"]["7"]


@pytest.mark.parametrize("preset,faults,argv,rc,failing", [
    # a lost GPU: the software checks cannot read it; from level 2 CUDA cannot see it
    ("h100-80gb-x8", ["xid --gpu 1 --code 79"], ["-r", "1"], 226,
     [("Page Retirement/Row Remap", [1], [27, 27]), ("Inforom", [1], [27])]),
    ("h100-80gb-x8", ["xid --gpu 1 --code 79"], ["-r", "2"], 226,
     [("Page Retirement/Row Remap", [1], [27, 27]), ("Inforom", [1], [27]), ("PCIe", [1], [59]), ("GPU Memory", [1], [59])]),
    ("h100-80gb-x8", ["xid --gpu 1 --code 13"], ["-r", "2"], 0, []),
    # row remapping (A100 and later)
    ("h100-80gb-x8", ["ecc --gpu 3 --remap-pending yes"], ["-r", "1"], 205, [("Page Retirement/Row Remap", [3], [84])]),
    ("h100-80gb-x8", ["ecc --gpu 3 --remap-pending yes"], ["-r", "2"], 205,
     [("Page Retirement/Row Remap", [3], [84]), ("GPU Memory", [3], [85])]),
    ("a100-40gb-x8", ["ecc --gpu 4 --remap-failure yes"], ["-r", "medium"], 205,
     [("Page Retirement/Row Remap", [4], [80]), ("GPU Memory", [4], [80])]),
    # page retirement (L40S)
    ("l40s-x4", ["ecc --gpu 2 --retired-pages-pending yes"], ["-r", "1"], 226, [("Page Retirement/Row Remap", [2], [6])]),
    ("l40s-x4", ["ecc --gpu 2 --retired-pages-pending yes --uncorrected 1"], ["-r", "2"], 205,
     [("Page Retirement/Row Remap", [2], [83]), ("GPU Memory", [2], [57, 33])]),
    # volatile uncorrectable ECC: the memory test, not the level-1 row remap check
    ("h100-80gb-x8", ["ecc --gpu 2 --uncorrected 3"], ["-r", "1"], 0, []),
    ("h100-80gb-x8", ["ecc --gpu 2 --uncorrected 3"], ["-r", "2"], 205, [("GPU Memory", [2], [57])]),
    ("h100-80gb-x8", ["ecc --gpu 2 --corrected 30"], ["-r", "2"], 0, []),
    # PCIe
    ("h100-80gb-x8", ["pcie --gpu 5 --width 8"], ["-r", "1"], 0, []),
    ("h100-80gb-x8", ["pcie --gpu 5 --width 8"], ["-r", "2"], 226, [("PCIe", [5], [46])]),
    ("a100-80gb-pcie-x4", ["pcie --gpu 0 --gen 2"], ["-r", "pcie"], 226, [("PCIe", [0], [45])]),
    ("h100-80gb-x8", ["pcie --gpu 5 --gen 3"], ["-r", "2"], 0, []),
    # NVLink: only with pcie.gpu_nvlinks_expected_up, as in DCGM
    ("h100-80gb-x8", ["nvlink --gpu 6 --link 2 --state down"], ["-r", "2"], 0, []),
    ("h100-80gb-x8", ["nvlink --gpu 6 --link 2 --state down"], ["-r", "2", "-p", "pcie.gpu_nvlinks_expected_up=18"], 205,
     [("PCIe", [6], [99])]),
    ("h100-80gb-x8", [], ["-r", "2", "-p", "pcie.gpu_nvlinks_expected_up=18"], 0, []),
    # persistence mode
    ("h100-80gb-x8", ["persistence --gpu 0 --mode off"], ["-r", "1"], 205, [("Persistence Mode", [0], [29])]),
    # only the GPUs -i names
    ("h100-80gb-x8", ["ecc --gpu 3 --remap-pending yes", "pcie --gpu 5 --width 4"], ["-r", "2", "-i", "0,1"], 0, []),
    ("h100-80gb-x8", ["ecc --gpu 3 --remap-pending yes", "pcie --gpu 5 --width 4"], ["-r", "2", "--entity-id", "5,3"], 205,
     [("Page Retirement/Row Remap", [3], [84]), ("PCIe", [5], [46]), ("GPU Memory", [3], [85])]),
    ("h100-80gb-x8", ["pcie --gpu 5 --width 4"], ["-r", "2", "-i", "gpu:5,cpu:*"], 226, [("PCIe", [5], [46])]),
])
def test_faults_fail_the_tests_dcgm_would_fail(tmp_path, preset, faults, argv, rc, failing):
    node(tmp_path, preset, *faults)
    got_rc, out, err = dcgmi(tmp_path, "diag", "-j", *argv)
    assert got_rc == rc, err
    assert failed(parse_diag(out)) == failing


@pytest.mark.parametrize("fault,argv,message", [
    ("xid --gpu 1 --code 79", ["-r", "1"], "Could not query field retired_pages_pending for GPU 1: 'GPU is lost' (-18)."),
    ("xid --gpu 1 --code 79", ["-r", "2"], "Unable to find a corresponding CUDA device for GPU 1: 'cuDeviceGetByPCIBusId failed: "
                                           "'invalid device ordinal'. CUDA_VISIBLE_DEVICES is not set.' Make sure CUDA_VISIBLE_DEVICES"),
    ("ecc --gpu 3 --remap-pending yes", ["-r", "1"], "GPU 3 had uncorrectable memory errors and 1 rows were remapped"),
    ("ecc --gpu 3 --remap-pending yes", ["-r", "memory"], "GPU 3 had memory errors and row remappings are pending Check DCGM and system "
                                                          "logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."),
    ("ecc --gpu 4 --remap-failure yes", ["-r", "1"], "GPU 4 had uncorrectable memory errors and row remapping failed. Run a field "
                                                     "diagnostic on the GPU."),
    ("ecc --gpu 2 --uncorrected 1", ["-r", "2"], "CUDA APIs have indicated that a double-bit ECC error has occured on GPU 2. Run a "
                                                 "field diagnostic on the GPU."),
    ("pcie --gpu 5 --width 8", ["-r", "2"], "GPU 5 is running at PCI link width 8X, which is below the minimum allowed link generation "
                                            "of 16 (parameter 'min_pci_width') Check DCGM and system configuration."),
    ("nvlink --gpu 6 --link 2 --state down", ["-r", "2", "-p", "pcie.gpu_nvlinks_expected_up=18"],
     "Only 17 NvLinks are up out of the expected 18 Ensure Fabric Manager is running."),
    ("persistence --gpu 0 --mode off", ["-r", "1"], 'Persistence mode for GPU 0 is disabled. Enable persistence mode by running '
                                                    '"nvidia-smi -i <gpuId> -pm 1 " as root.'),
])
def test_standin_failure_wording_as_transcribed_from_dcgms_sources(tmp_path, fault, argv, message):
    # the STAND-IN's texts, transcribed from DCGM's source (not recorded from a real dcgmi): this checks the stand-in and
    # the parser agree, not that a real DCGM prints them
    node(tmp_path, "h100-80gb-x8", fault)
    rc, out, dummy = dcgmi(tmp_path, "diag", "-j", *argv)
    assert rc in (205, 226)
    assert message in summary(parse_diag(out)) or any(message in t["detail"] for t in failures(parse_diag(out)))


def test_standin_json_as_transcribed_from_jsoncpps_styled_writer(tmp_path):
    node(tmp_path, "a100-80gb-pcie-x4", "pcie --gpu 2 --width 8")
    rc, out, dummy = dcgmi(tmp_path, "diag", "-r", "2", "-j")
    assert rc == 226
    lines = out.splitlines()
    assert lines[:5] == ['{', '   "DCGM GPU Diagnostic" : {', '      "test_categories" : [', '         {',
                         '            "category" : "Deployment",']
    assert lines[-11:] == ['   },', '   "Driver Version Detected" : "535.129.03",', '   "GPU Device IDs" : [ "20b5", "20b5", "20b5", "20b5" ],',
                           '   "GPU Device Serials" : {', '      "0" : "1652000000001",', '      "1" : "1652000000002",',
                           '      "2" : "1652000000003",', '      "3" : "1652000000004"', '   },', '   "version" : "3.3.5"', '}']
    assert out.endswith('}\n')
    document = json.loads(out)
    assert list(document) == sorted(document)
    deployment = document["DCGM GPU Diagnostic"]["test_categories"][0]["tests"]
    assert [t["name"] for t in deployment] == DEPLOYMENT
    pcie = document["DCGM GPU Diagnostic"]["test_categories"][1]
    assert pcie["category"] == "Integration"
    assert pcie["tests"][0]["results"][2] == {
        "gpu_id": "2", "status": "Fail", "warnings": [{
            "error_category": 13, "error_id": 46, "error_severity": 1,
            "warning": "GPU 2 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 (parameter "
                       "'min_pci_width') Check DCGM and system configuration. This error may be eliminated with an updated configuration."}]}


def test_text_table(tmp_path):
    node(tmp_path, "h100-80gb-x8", "pcie --gpu 5 --width 8", "ecc --gpu 3 --remap-pending yes")
    rc, out, err = dcgmi(tmp_path, "diag", "-r", "2")
    assert rc == 205, err
    lines = out.splitlines()
    assert lines[:9] == [
        "Successfully ran diagnostic for group.",
        "+---------------------------+------------------------------------------------+",
        "| Diagnostic                | Result                                         |",
        "+===========================+================================================+",
        "|-----  Metadata  ----------+------------------------------------------------|",
        "| DCGM Version              | 3.3.5                                          |",
        "| Driver Version Detected   | 570.133.20                                     |",
        "| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |",
        "|-----  Deployment  --------+------------------------------------------------|",
    ]
    assert "| Page Retirement/Row Remap | Fail                                           |" in lines
    assert "| Error                     | GPU 3 had uncorrectable memory errors and 1 r  |" in lines
    assert "|                           | ows were remapped                              |" in lines
    assert "+-----  Integration  -------+------------------------------------------------+" in lines
    assert "| PCIe                      | Pass - GPUs: 0, 1, 2, 3, 4, 6, 7               |" in lines
    assert "|                           | Fail - GPU: 5                                  |" in lines
    assert "| Warning                   | GPU 5 is running at PCI link width 8X, which   |" in lines
    assert "| GPU Memory                | Pass - GPUs: 0, 1, 2, 4, 5, 6, 7               |" in lines
    assert lines[-2:] == ["+-----  Stress  ------------+------------------------------------------------+",
                          "+---------------------------+------------------------------------------------+"]
    assert all(len(line) == 78 for line in lines[1:])


@pytest.mark.parametrize("argv,sections", [
    (["-r", "1"], []),
    (["-r", "1", "-i", "0"], ["Integration", "Hardware", "Stress"]),
    (["-r", "3", "-v"], ["Integration", "Hardware", "Stress"]),
])
def test_text_sections_follow_dcgmis_gpu_list(tmp_path, argv, sections):
    node(tmp_path, "a100-80gb-pcie-x4")
    rc, out, dummy = dcgmi(tmp_path, "diag", *argv)
    assert rc == 0
    assert [s for s in ("Integration", "Hardware", "Stress") if "-----  %s  " % s in out] == sections
    assert ("Pass - All" in out) == (argv[1] == "3")


@pytest.mark.parametrize("mode,how,argv,rc,failing", [
    ("memory", "env", ["-r", "1"], 205, [("Page Retirement/Row Remap", [0], [84])]),
    ("memory", "file", ["-r", "2"], 205, [("Page Retirement/Row Remap", [0], [84]), ("GPU Memory", [0], [85, 52])]),
    ("memory:2", "env", ["-r", "2", "-i", "1,2"], 205, [("Page Retirement/Row Remap", [2], [84]), ("GPU Memory", [2], [85, 52])]),
    ("", "file", ["-r", "memory"], 205, [("Page Retirement/Row Remap", [0], [84]), ("GPU Memory", [0], [85, 52])]),
    ("pcie", "env", ["-r", "1"], 0, []),
    ("pcie", "file", ["-r", "2"], 226, [("PCIe", [0], [46])]),
    ("pcie:3", "env", ["-r", "2"], 226, [("PCIe", [3], [46])]),
    ("stress", "env", ["-r", "2"], 0, []),
    ("stress", "env", ["-r", "3"], 226, [("Targeted Stress", [0], [50])]),
    ("stress", "file", ["-r", "targeted_stress"], 226, [("Targeted Stress", [0], [50])]),
])
def test_failure_on_demand(tmp_path, mode, how, argv, rc, failing):
    node(tmp_path, "h100-80gb-x8")
    env = {}
    if how == "env":
        env["DCGMI_STANDIN_FAIL"] = mode
    else:
        (tmp_path / "FAIL").write_text(mode + "\n")
        env["DCGMI_STANDIN_FAIL_FILE"] = str(tmp_path / "FAIL")
    got_rc, out, err = dcgmi(tmp_path, "diag", "-j", *argv, **env)
    assert got_rc == rc, err
    assert failed(parse_diag(out)) == failing
    assert "failing on purpose: %s" % (mode or "memory") in err


@pytest.mark.parametrize("mode", ["slow", "pcie:x", "memory:"])
def test_a_bad_failure_mode_is_refused(tmp_path, mode):
    node(tmp_path)
    rc, out, err = dcgmi(tmp_path, "diag", "-r", "1", "-j", DCGMI_STANDIN_FAIL=mode)
    assert (rc, out) == (2, "")
    assert "failure mode %r is not one of memory, pcie, stress" % mode in err


@pytest.mark.parametrize("argv,host", [([], "localhost"), (["--host", "10.1.2.3"], "10.1.2.3")])
def test_no_host_engine(tmp_path, argv, host):
    node(tmp_path)
    marker = tmp_path / "NO_HOSTENGINE"
    marker.write_text("")
    rc, out, err = dcgmi(tmp_path, "diag", "-r", "1", "-j", *argv, DCGMI_STANDIN_NO_HOSTENGINE_FILE=str(marker))
    assert rc == 235
    assert out == ("Error: unable to establish a connection to the specified host: %s\n"
                   "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n" % host)
    assert "no host engine" in err
    with pytest.raises(ValueError, match="no JSON document in the dcgmi output"):
        parse_diag(out)


def _mig(state, gpus, profile, ci_size):
    for gpu in state["gpus"]:
        if gpu["index"] in gpus:
            gpu["mig_current"] = gpu["mig_pending"] = 1
            gpu["gpu_instances"] = [] if profile is None else [
                {"id": 0, "profile_id": profile, "size": 8, "start": 0,
                 "compute_instances": [] if ci_size is None else [{"id": 0, "profile_id": 0, "size": ci_size, "start": 0}]}]


@pytest.mark.parametrize("change,argv,message", [
    (lambda s: None, ["-r", "1"], "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU."),
    # every visible GPU is looked at, not only the selected ones
    (lambda s: None, ["-r", "1", "-i", "0"], "GPU 2's MIG configuration is incompatible"),
    (lambda s: _mig(s, (2, 3), 0, 7), ["-r", "2"], "Cannot run diagnostic: CUDA does not support enumerating GPUs with MIG mode enabled, "
                                                   "yet GPU 2 is MIG enabled and the diagnostic is attempting to run on 4 GPUs."),
    (lambda s: _mig(s, (2, 3), 0, 7), ["-r", "2", "-i", "2"], "Cannot run diagnostic: CUDA does not support enumerating GPUs when one more "
                                                              "GPUs has MIG mode enabled and one or more GPUs has MIG mode disabled."),
    (lambda s: _mig(s, (2, 3), 0, 3), ["-r", "1", "-i", "2"], "GPU 2's MIG configuration is incompatible"),
    (lambda s: _mig(s, (2, 3), None, None), ["-r", "1", "-i", "3"], "Cannot run diagnostic: MIG is enabled, but no compute instances are "
                                                                    "configured. CUDA needs to execute on a compute instance if MIG is enabled."),
])
def test_mig_is_refused_as_dcgm_refuses_it(tmp_path, change, argv, message):
    node(tmp_path, "seed-003")
    edit_state(tmp_path, change)
    rc, out, err = dcgmi(tmp_path, "diag", "-j", *argv)
    assert rc == 226, err
    assert json.loads(out) == {"DCGM GPU Diagnostic": {"runtime_error": json.loads(out)["DCGM GPU Diagnostic"]["runtime_error"],
                                                       "version": "3.3.5"}}
    with pytest.raises(ValueError) as exc:
        parse_diag(out)
    assert "dcgmi diag did not run: " + message in str(exc.value)
    rc, text, dummy = dcgmi(tmp_path, "diag", *argv)
    assert rc == 226 and text.startswith(message[:40])


def test_mig_whole_gpu_on_a_one_gpu_run_is_diagnosed(tmp_path):
    node(tmp_path, "a100-80gb-pcie-x4")

    def one_mig_gpu(state):
        state["gpus"] = state["gpus"][:1]
        _mig(state, (0,), 0, 7)
    edit_state(tmp_path, one_mig_gpu)
    rc, out, err = dcgmi(tmp_path, "diag", "-r", "2", "-j")
    assert rc == 0, err
    assert [t["gpus"] for t in parse_diag(out)["tests"][9:]] == [[0], [0]]


@pytest.mark.parametrize("argv,rc,stdout,stderr", [
    (["diag", "-r", "5"], 254, "", "Error: Invalid value '5' specified for -r..\nAn error occurred trying to parse the command line.\n"),
    (["diag", "-r", "-1"], 254, "", "Error: Positive value expected, negative value found for arg run."),
    (["diag", "-r"], 1, "", "PARSE ERROR: Argument: -r (--run)\n             Missing a value for this argument!\n"),
    (["diag", "-r", "1", "--bogus"], 1, "", "PARSE ERROR: Argument: --bogus\n             Couldn't find match for argument\n"),
    (["diag", "-r", "1", "-t", "abc"], 1, "", "Couldn't read argument value from string 'abc'"),
    (["diag", "-r", "1", "-r", "2"], 1, "", "Argument already set!"),
    (["diag", "-r", "1", "-j", "-j"], 1, "", "PARSE ERROR: Argument: -j (--json)"),
    (["diag", "-r", "1", "stray"], 1, "", "For complete USAGE and HELP type: \n   "),
    (["diag", "-r", "1", "-p", "pcie.min_pci_width"], 254, "",
     "Error: Improperly formatted parameters argument: 'pcie.min_pci_width'. Argument must follow the format: "
     "test_name.attr_name=attr_value[;...]."),
    (["diag", "-r", "1", "--gpuList", "0,a"], 254, "", "Error: Invalid gpu list '0,a'. The list must be a comma-separated list of numbers only.."),
    (["diag", "-r", "1", "--gpuList", "0", "-i", "1"], 254, "", "Specifying a entity id and a gpu list are mutually exclusive."),
    (["diag", "-r", "1", "--iterations", "0"], 254, "", "Error: The value for iterations cannot be 0.."),
    (["diag", "-r", "1", "-i", "x"], 254, "", "Invalid entity id: [x]"),
    (["diag", "-r", "1", "-i", ""], 254, "", "Error: Error: Invalid entity id: []."),
    (["diag", "-r", "1", "-i", "12"], 254, "Error: Unable to complete diagnostic for group 0. Return: (-2) Bad parameter passed to function.\n", ""),
    (["diag", "-r", "foo", "-j"], 226, '      "runtime_error" : "Error: requested test \\"foo\\" was not found among possible test choices.",', ""),
    (["diag", "-r", "foo"], 226, 'Error: requested test "foo" was not found among possible test choices.\n', ""),
    (["bogus"], 254, "ERROR: Invalid subsystem.\n\n", ""),
    (["discovery", "-l"], 254, "ERROR: Invalid subsystem.\n\n", "the dcgmi subsystem 'discovery' is not simulated; only diag is"),
    ([], 1, "", "PARSE ERROR:  \n             Required argument missing: subsystem"),
    (["--bogus"], 1, "", "PARSE ERROR: Argument: --bogus"),
])
def test_arguments_are_refused_as_dcgmi_refuses_them(tmp_path, argv, rc, stdout, stderr):
    node(tmp_path)
    got_rc, out, err = dcgmi(tmp_path, *argv)
    assert got_rc == rc
    assert stdout in out and (stdout or out == "")
    assert stderr in err


@pytest.mark.parametrize("argv,accepted", [
    (["diag", "-r", "1", "-t", "600", "-v", "--host", "localhost"], True),
    (["diag", "--run", "2", "--json", "--timeout", "30", "--iterations", "1", "--fail-early", "--statsonfail"], True),
    (["diag", "-jv", "-r", "1"], True),
    (["diag", "-r", "pcie,memory", "-p", "pcie.h2d_d2h_single_pinned.min_pci_width=8", "-p", "memory.is_allowed=true"], True),
    (["diag"], True),
])
def test_the_real_options_are_accepted(tmp_path, argv, accepted):
    node(tmp_path)
    rc, out, err = dcgmi(tmp_path, *argv)
    assert (rc == 0) == accepted, err
    assert "Successfully ran diagnostic for group." in out or parse_diag(out)["tests"]


@pytest.mark.parametrize("argv,expected", [
    (["--version"], "version: 3.3.5 (STAND-IN: gpucluster.bringup test double, not NVIDIA DCGM)"),
    (["-v"], "Version : 3.3.5\nBuild ID : STAND-IN\n"),
    (["diag", "-h"], "diag -- Used to run diagnostics on the system."),
    (["--help"], "Subsystems Available:"),
])
def test_version_and_help(tmp_path, argv, expected):
    rc, out, err = dcgmi(tmp_path, *argv)
    assert (rc, err) == (0, "")
    assert expected in out
    assert "STAND-IN" in out


def test_no_state_is_a_clear_error(tmp_path):
    rc, out, err = dcgmi(tmp_path, "diag", "-r", "1")
    assert (rc, out) == (2, "")
    assert "dcgmi STAND-IN" in err and "cannot read the NVML simulator state" in err


def test_the_model_table_agrees_with_the_simulator():
    import importlib.machinery
    import importlib.util
    from nvmlsim import models  # pylint: disable=import-outside-toplevel
    loader = importlib.machinery.SourceFileLoader("dcgmi_standin", STANDIN)
    spec = importlib.util.spec_from_loader("dcgmi_standin", loader)
    standin = importlib.util.module_from_spec(spec)
    loader.exec_module(standin)
    assert sorted(standin.MODELS) == sorted(models.MODELS)
    for key, (device, gen, width, nvlinks, remap) in standin.MODELS.items():
        model = models.MODELS[key]
        assert (device, gen, width, nvlinks, remap) == (
            "%04x" % (model.pci_device_id >> 16), model.health.pcie_gen, model.health.pcie_width, model.health.nvlinks, model.row_remapping)
