"""benchmarks/mutation_report.py: the Wilson interval, the seeded draw, the report of a sample and the test selection."""
import collections
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("mutation_report", ROOT / "benchmarks" / "mutation_report.py")
report = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(report)

PREFIX = "ansible_collections.gpucluster.bringup.plugins.module_utils."


# R. G. Newcombe, "Two-sided confidence intervals for the single proportion: comparison of seven methods",
# Statistics in Medicine 17 (1998) 857-872, table II, method 3 (score interval without continuity correction),
# rounded to 4 places as printed there.
@pytest.mark.parametrize("caught, total, low, high", [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (29, 29, 0.8830, 1.0),
    # symmetric around one half
    (5, 10, 0.2366, 0.7634),
])
def test_wilson_interval_known_values(caught, total, low, high):
    got = report.wilson_interval(caught, total)
    assert got == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_interval_of_a_large_sample_is_narrow_and_holds_the_estimate():
    low, high = report.wilson_interval(386, 400)
    assert low < 386 / 400.0 < high
    assert 0.015 < 386 / 400.0 - low < 0.025 and high - 386 / 400.0 < 0.015


@pytest.mark.parametrize("caught, total", [(0, 0), (3, 2), (-1, 5)])
def test_wilson_interval_refuses_impossible_counts(caught, total):
    with pytest.raises(ValueError, match="caught <= total"):
        report.wilson_interval(caught, total)


NAMES = [PREFIX + "_x.x_f__mutmut_%d" % i for i in range(1, 41)] + [PREFIX + "slurm._y.x_g__mutmut_%d" % i for i in range(1, 11)]


def test_draw_is_reproducible_whatever_the_order_of_the_names():
    first = report.draw(NAMES, 12, 43)
    assert report.draw(list(reversed(NAMES)), 12, 43) == first
    assert len(first) == len(set(first)) == 12 and set(first) <= set(NAMES)
    assert report.draw(NAMES, 12, 44) != first


def test_draw_returns_the_names_in_natural_order():
    drawn = report.draw(NAMES, 50, 1)
    assert drawn[:3] == [PREFIX + "_x.x_f__mutmut_1", PREFIX + "_x.x_f__mutmut_2", PREFIX + "_x.x_f__mutmut_3"]


def test_draw_is_uniform():
    counts = collections.Counter(name for seed in range(2000) for name in report.draw(NAMES[:5], 1, seed))
    # 400 expected each; 4 standard deviations (about 72) either side
    assert sorted(counts) == sorted(NAMES[:5]) and all(320 < n < 480 for n in counts.values())


@pytest.mark.parametrize("count", [0, 51])
def test_draw_refuses_a_sample_of_none_or_more_than_all(count):
    with pytest.raises(ValueError, match="cannot draw %d of 50 mutants" % count):
        report.draw(NAMES, count, 0)


def _result(codes):
    return {"exit_code_by_key": dict((PREFIX + "_x.x_f__mutmut_%d" % i, code) for i, code in enumerate(codes, 1)),
            "diffs": {PREFIX + "_x.x_f__mutmut_3": "--- the diff of 3"}}


def test_report_of_a_sample_counts_the_drawn_mutants_only():
    # 1 killed, 2 killed, 3 survived, 4 timeout, 5 no tests, 6 not run: 4 of them drawn, and one other file
    results = {"_x.py": _result([1, 3, 0, 36, 33, None])}
    drawn = {"seed": 43, "mutants": 9, "mutants_by_file": {"_x.py": 6, "_z.py": 3},
             "drawn": [PREFIX + "_x.x_f__mutmut_%d" % i for i in (1, 3, 4, 6)]}
    lines, survivors = report.report_lines(results, drawn)
    assert lines[2].split() == ["_x.py", "6", "4", "1", "1", "1", "0", "66.7", "(not", "run:", "1)"]
    assert lines[3].split()[:8] == ["TOTAL", "9", "4", "1", "1", "1", "0", "66.7"]
    assert "sample: 4 of the 9 mutants of 2 files, drawn with seed 43; 3 run" in lines
    assert [line for line in lines if line.startswith("NOT a uniform sample: the run stopped with 1 of the mutants")]
    assert "raw score 66.7 % (2 of 3), 95 % confidence interval 20.8-93.9 % (Wilson score interval)" in lines
    assert survivors == [("_x.x_f__mutmut_3", "survived", "--- the diff of 3")]


def test_report_of_whole_files_has_the_raw_score_and_no_interval():
    lines, survivors = report.report_lines({"_x.py": _result([1, 0, 0, 36, 33, 2])})
    assert lines[0].split() == ["file", "mutants", "killed", "survived", "timeout", "no-tests", "score%"]
    assert lines[2].split() == ["_x.py", "6", "1", "2", "1", "1", "33.3"]
    assert "1 mutants with another outcome (interrupted, segfault, ...) count as not killed" in lines
    assert not [line for line in lines if "interval" in line or "equiv" in line or "uniform" in line]
    assert [(short, status) for short, status, _diff in survivors] == [
        ("_x.x_f__mutmut_2", "survived"), ("_x.x_f__mutmut_3", "survived"), ("_x.x_f__mutmut_5", "no tests"),
        ("_x.x_f__mutmut_6", "exit code 2")]


def test_select_finds_the_tests_of_a_module_named_like_an_action_plugin(tmp_path):
    files = {
        "plugins/module_utils/_io.py": "def write(): pass\n",
        # the module imports the target; the action plugin of the same name does not
        "plugins/modules/copy_files.py": "from ..module_utils import _io\n",
        "plugins/action/copy_files.py": "from ansible.plugins.action import ActionBase\n",
        "tests/unit/plugins/modules/test_copy_files.py": "MODULE = 'copy_files'\n",
        "tests/unit/plugins/modules/test_other.py": "MODULE = 'other'\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert report.select_tests(str(tmp_path), ["plugins/module_utils/_io.py"]) == ["tests/unit/plugins/modules/test_copy_files.py"]
