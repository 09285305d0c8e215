# -*- coding: utf-8 -*-
# Copyright (c) gpucluster.bringup contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""README's table "What is verified on what": every claim names the tests that back it and the stages they run in.

Each row's ``tests`` cell names test files (`path`, or `path::test_name` for some tests of a file), each of which
must exist. Its ``stage`` cell must equal the set of stages of the test command those tests run in, written
``ci (unit, molecule); acceptance``: inside ``ci (...)`` the stages `.ci/run` runs, after it the stages run only
when named. Nothing here is a hand-kept list of stages: the stages, the paths each stage collects and the molecule
scenarios and test selection each stage runs are read from scripts/test.sh, the stages CI runs from .ci/run, the
marker that puts a molecule test in the `acceptance` stage from molecule/default/tests/conftest.py, and each
test's markers from its file (``pytestmark``, decorators). Moving a test to another stage without the README, or
a README row that claims CI for a test only the acceptance stage runs, fails here.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import fnmatch
import functools
import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TEST_SH = ROOT / "scripts" / "test.sh"
CI_RUN = ROOT / ".ci" / "run"
SECTION = "## What is verified on what"


# --- what scripts/test.sh and .ci/run say -----------------------------------------------------------------------

def _bash_array(text, name):
    found = re.search(r"^%s=\(([^)]*)\)" % re.escape(name), text, re.M)
    assert found, "scripts/test.sh defines no %s=(...)" % name
    return found.group(1).split()


def _function_body(text, stage):
    """The body of stage_<stage>() in scripts/test.sh, continuation lines joined."""
    found = re.search(r"^stage_%s\(\) \{\n(.*?)^\}" % re.escape(stage), text, re.M | re.S)
    assert found, "scripts/test.sh has no function stage_%s" % stage
    return found.group(1).replace("\\\n", " ")


def _words(line):
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


@functools.lru_cache(maxsize=None)
def _pytest_files():
    """pytest.ini's python_files (pytest's default when it sets none)."""
    ini = (ROOT / "pytest.ini").read_text()
    found = re.search(r"^python_files\s*=\s*(.+)$", ini, re.M)
    return found.group(1).split() if found else ["test_*.py", "*_test.py"]


@functools.lru_cache(maxsize=None)
def _molecule_selection():
    """(environment variable, default, marker, also-in-core marker) of the default scenario's split into core and
    acceptance tests: a test carrying the marker is an acceptance test; one that also carries the second runs in
    the core set too."""
    text = (ROOT / "molecule" / "default" / "tests" / "conftest.py").read_text()
    env = re.search(r'os\.environ\.get\("(\w+)", "(\w+)"\)', text)
    # (cluster_order sets the order of the tests, not which run: test_molecule_order.py)
    markers = [m for m in re.findall(r'get_closest_marker\("(\w+)"\)', text) if m != "cluster_order"]
    assert env and len(markers) == 2, "molecule/default/tests/conftest.py: no test selection found"
    return env.group(1), env.group(2), markers[0], markers[1]


def _scenario_test_dir(scenario):
    """The directory molecule's testinfra verifier runs for a scenario (verifier.directory, default tests)."""
    text = (ROOT / "molecule" / scenario / "molecule.yml").read_text()
    found = re.search(r"^verifier:\n(?:[ \t]+.*\n)*?[ \t]+directory:\s*(\S+)", text, re.M)
    return "molecule/%s/%s" % (scenario, found.group(1).strip("'\"") if found else "tests")


def stage_plan():
    """{stage: [(path collected, selection or None)]}, and the set of stages CI runs."""
    text = TEST_SH.read_text()
    main, extra = _bash_array(text, "ALL_STAGES"), _bash_array(text, "EXTRA_STAGES")
    env_name, env_default, _marker, _also = _molecule_selection()
    scenarios = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
    plan = {}
    for stage in main + extra:
        collected = []
        for line in _function_body(text, stage).splitlines():
            words = _words(line)
            runner = [i for i, w in enumerate(words) if w.endswith("/pytest") or w == "pytest"]
            if runner:
                for word in words[runner[0] + 1:]:
                    if not word.startswith("-") and (ROOT / word).exists():
                        collected.append((word.rstrip("/"), None))
            molecule = [i for i, w in enumerate(words) if w.endswith("scripts/molecule.sh")]
            if molecule:
                named = [w for w in words[molecule[0] + 1:] if not w.startswith("-")]
                chosen = re.search(r"\b%s=(\w+)" % env_name, line)
                for scenario in named or scenarios:
                    assert scenario in scenarios, "stage %s runs the unknown molecule scenario %r" % (stage, scenario)
                    test_dir = _scenario_test_dir(scenario)
                    conftest = ROOT / test_dir / "conftest.py"
                    filtered = conftest.exists() and env_name in conftest.read_text()
                    collected.append((test_dir, (chosen.group(1) if chosen else env_default) if filtered else None))
        plan[stage] = collected
    ci_words = [w for line in CI_RUN.read_text().splitlines() for w in _words(line)]
    at = [i for i, w in enumerate(ci_words) if w.endswith("scripts/test.sh")]
    assert at, ".ci/run does not run scripts/test.sh"
    named = [w for w in ci_words[at[0] + 1:] if w in plan]
    return plan, set(named or main)


# --- which tests a README reference names, and their markers ----------------------------------------------------

def _has_marker(node, marker):
    """Whether an AST expression (a decorator, a pytestmark value) applies pytest.mark.<marker>."""
    return any(isinstance(n, ast.Attribute) and n.attr == marker for n in ast.walk(node))


# (the files do not change while the tests run; the negative test below checks every row three times over)
@functools.lru_cache(maxsize=None)
def named_tests(path, name, marker, also=None):
    """[(test name, carries marker, carries also)] of a test file, or of the one test or class ``name`` in it."""
    tree = ast.parse((ROOT / path).read_text())

    def module_marked(wanted):
        return wanted is not None and any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
                                          and _has_marker(n.value, wanted) for n in tree.body)

    def marked(node, wanted):
        return module_marked(wanted) or (wanted is not None and any(_has_marker(d, wanted) for d in node.decorator_list))

    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (node.name.startswith("test_") or node.name.startswith("Test")):
            found.append((node.name, marked(node, marker), marked(node, also)))
        elif isinstance(node, ast.ImportFrom):  # tests run from another module (molecule/bookworm imports default's)
            found.extend((a.asname or a.name, module_marked(marker), module_marked(also))
                         for a in node.names if (a.asname or a.name).startswith("test_"))
        elif isinstance(node, ast.Assign):  # test_x = check_x
            found.extend((t.id, module_marked(marker), module_marked(also))
                         for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("test_"))
    if name is not None:
        found = [item for item in found if item[0] == name]
    return found


def _selected(selection, marker, marked, also):
    """Whether a test with these markers is in a molecule selection (``core``, ``acceptance``)."""
    return marked if selection == marker else (not marked or also)


def stages_of(reference, plan):
    """The stages a README test reference runs in; raises AssertionError naming what is wrong with it."""
    path, _sep, name = reference.partition("::")
    name = name or None
    assert (ROOT / path).is_file(), "%s: no such file" % path
    _env, _default, marker, also = _molecule_selection()
    tests = named_tests(path, name, marker, also)
    assert tests, "%s: %s" % (reference, "no test of that name" if name else "no test in the file")
    patterns = _pytest_files()
    stages = set()
    for stage, collected in plan.items():
        for where, selection in collected:
            inside = path == where or (path.startswith(where + "/") and any(fnmatch.fnmatch(pathlib.PurePath(path).name, p) for p in patterns))
            if not inside:
                continue
            if selection is None or selection == "all" or any(_selected(selection, marker, m, a) for _n, m, a in tests):
                stages.add(stage)
    return stages


# --- the README table -------------------------------------------------------------------------------------------

def _cells(line):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def readme_rows(text=None):
    """[(part, stage cell, tests cell)] of the table under "What is verified on what"."""
    text = README.read_text() if text is None else text
    assert SECTION in text, "README.md has no section %r" % SECTION
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert len(lines) > 2, "README.md: no table under %r" % SECTION
    header = [cell.lower() for cell in _cells(lines[0])]
    assert "stage" in header and "tests" in header, "README.md's table has no stage and tests columns: %s" % header
    rows = []
    for line in lines[2:]:
        cells = _cells(line)
        assert len(cells) == len(header), "README.md: a row of %d cells under %d headers: %s" % (len(cells), len(header), line[:80])
        rows.append((cells[0], cells[header.index("stage")], cells[header.index("tests")]))
    return rows


def parse_stage_cell(cell):
    """'ci (unit, molecule); acceptance' -> ({'unit', 'molecule'}, {'acceptance'})."""
    ci, others = set(), set()
    for part in [p.strip() for p in cell.replace("`", "").split(";") if p.strip()]:
        inner = re.match(r"^ci \((.*)\)$", part)
        if inner:
            ci.update(s.strip() for s in inner.group(1).split(",") if s.strip())
        else:
            others.update(s.strip() for s in part.split(",") if s.strip())
    return ci, others


def format_stages(stages, ci_stages, order):
    ci = [s for s in order if s in stages and s in ci_stages]
    others = [s for s in order if s in stages and s not in ci_stages]
    return "; ".join((["ci (%s)" % ", ".join(ci)] if ci else []) + others)


def check_rows(rows, plan, ci_stages):
    """One message per row whose tests are missing or whose stage cell differs from the stages its tests run in."""
    order = list(plan)
    problems = []
    for part, stage_cell, tests_cell in rows:
        label = part[:60]
        references = re.findall(r"`([^`]+)`", tests_cell)
        if not references:
            problems.append("%s: names no test" % label)
            continue
        stages = set()
        for reference in references:
            try:
                stages |= stages_of(reference, plan)
            except AssertionError as err:
                problems.append("%s: %s" % (label, err))
        ci, others = parse_stage_cell(stage_cell)
        unknown = (ci | others) - set(plan)
        if unknown:
            problems.append("%s: stage cell %r names %s, not stages of scripts/test.sh (%s)"
                            % (label, stage_cell, ", ".join(sorted(unknown)), ", ".join(order)))
        want = format_stages(stages, ci_stages, order)
        if ci != stages & ci_stages or others != stages - ci_stages:
            problems.append("%s: stage cell is %r, its tests run in %r" % (label, stage_cell, want))
    return problems


# --- the tests --------------------------------------------------------------------------------------------------

def test_the_stages_are_read_from_the_test_command():
    """The plan read from scripts/test.sh and .ci/run: what the checks below rest on."""
    plan, ci_stages = stage_plan()
    assert {"unit", "molecule", "acceptance", "bookworm", "upgrade", "scale", "oracle"} <= set(plan)
    assert ("tests/unit", None) in plan["unit"] and ("tests/upgrade", None) in plan["upgrade"]
    assert plan["molecule"] == [("molecule/default/tests", "core")]
    assert plan["acceptance"] == [("molecule/default/tests", "acceptance")]
    assert plan["bookworm"] == [("molecule/bookworm/tests", None)]
    assert {"unit", "molecule", "scale", "oracle"} <= ci_stages
    assert not {"acceptance", "bookworm", "upgrade"} & ci_stages


def test_a_files_stages_come_from_its_markers():
    plan, _ci = stage_plan()
    assert stages_of("molecule/default/tests/test_sharing.py", plan) == {"acceptance"}
    assert stages_of("molecule/default/tests/test_accounting.py", plan) == {"molecule"}
    # an acceptance test that also carries the ci marker runs in both; its file's other tests only in acceptance
    assert stages_of("molecule/default/tests/test_configless.py", plan) == {"molecule", "acceptance"}
    mig = "molecule/default/tests/test_mig_changes.py::"
    assert stages_of(mig + "test_changing_one_gpu_drains_waits_for_the_job_and_shrinks_the_gres", plan) == {"molecule", "acceptance"}
    assert stages_of(mig + "test_a_gpu_with_a_running_process_is_refused_and_nothing_changes", plan) == {"acceptance"}
    # a file with tests of both kinds runs in both; one test of it in its own
    assert stages_of("molecule/default/tests/test_slurm.py", plan) == {"molecule", "acceptance"}
    assert stages_of("molecule/default/tests/test_slurm.py::test_sinfo_every_node_idle_with_its_gres", plan) == {"molecule"}
    assert stages_of("tests/oracle/test_compare.py", plan) == {"unit"}
    # the oracle runs in its own stage and again on SchedMD's 26.05 packages (smd)
    assert stages_of("tests/oracle/test_oracle.py", plan) == {"oracle", "smd"}
    assert stages_of("molecule/bookworm/tests/test_bookworm.py", plan) == {"bookworm"}
    with pytest.raises(AssertionError, match="no test of that name"):
        stages_of("molecule/default/tests/test_slurm.py::test_no_such_test", plan)


def test_every_claim_names_existing_tests_and_the_stages_they_run_in():
    plan, ci_stages = stage_plan()
    rows = readme_rows()
    problems = check_rows(rows, plan, ci_stages)
    assert not problems, "README.md, %s:\n  " % SECTION + "\n  ".join(problems)


def test_a_row_whose_stage_differs_from_its_tests_is_caught():
    """The check above can fail: each row with another stage, or without its tests, is reported."""
    plan, ci_stages = stage_plan()
    rows = readme_rows()
    for index, (part, stage_cell, tests_cell) in enumerate(rows):
        ci, others = parse_stage_cell(stage_cell)
        wrong = "upgrade" if "upgrade" not in others else "bookworm"
        changed = rows[:index] + [(part, stage_cell + "; " + wrong, tests_cell)] + rows[index + 1:]
        assert any("stage cell is" in p for p in check_rows(changed, plan, ci_stages)), part
        if ci:  # a claim backed in CI written as if it were only outside
            moved = format_stages(ci | others, set(), list(plan))
            changed = rows[:index] + [(part, moved, tests_cell)] + rows[index + 1:]
            assert check_rows(changed, plan, ci_stages), part
        changed = rows[:index] + [(part, stage_cell, "")] + rows[index + 1:]
        assert "%s: names no test" % part[:60] in check_rows(changed, plan, ci_stages)
