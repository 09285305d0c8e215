"""scripts/test.sh's stages beside the molecule stage, run for real with stand-in stage functions.

The script itself runs (bash, its own functions for the order, the background chain, its CPU group, the counts and
the summary); only the ``stage_*`` functions are replaced by STAND-INS that report where they ran, so that no
cluster, pytest or linter runs here. The stand-ins are put in just before the script's stage loop, in a copy of it
in a temporary checkout whose scripts/lib and .venv are this checkout's.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOOP = 'for stage in "${STAGES[@]}"; do\n    if ! declare -F'
CGROUP_V1 = "/sys/fs/cgroup/cpu/cpu.shares"

STANDINS = r'''
stage_deps() { :; }
stage_unit() {
    grep -E '^[0-9]+:cpu:|^0::' /proc/$BASHPID/cgroup | head -n 1 >"$ROOT/unit.cgroup"
    cp "$ROOT/unit-junit.xml" "$OUTDIR/unit.xml"
    count_junit "$OUTDIR/unit.xml"  # as the real stage does (lost in the background shell: the script counts it again)
    return "${STANDIN_UNIT_RC:-0}"
}
stage_sanity() { echo "sanity said this"; }
stage_lint() { return "${STANDIN_LINT_RC:-0}"; }
stage_yamllint() { :; }
stage_shellcheck() { :; }
stage_package() { :; }
stage_molecule() { sleep 1; grep -E '^[0-9]+:cpu:|^0::' /proc/$BASHPID/cgroup | head -n 1 >"$ROOT/molecule.cgroup"; }
'''

JUNIT = '<testsuites><testsuite tests="7" failures="%d" errors="0" skipped="1"/></testsuites>'


def stages(out):
    """The script's stage lines, each time shown as N (a stand-in may take a second under load)."""
    return [re.sub(r" in \d+s", " in Ns", line) for line in out.splitlines() if line.startswith("=== stage ")]


def run(tmp_path, unit_failures=0, **env):
    script = open(os.path.join(ROOT, "scripts", "test.sh")).read()
    assert script.count(LOOP) == 1, "the stage loop of scripts/test.sh moved: this test puts its stand-ins before it"
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "test.sh").write_text(script.replace(LOOP, STANDINS + LOOP))
    os.symlink(os.path.join(ROOT, "scripts", "lib"), str(tmp_path / "scripts" / "lib"))
    os.symlink(sys.prefix, str(tmp_path / ".venv"))
    (tmp_path / "unit-junit.xml").write_text(JUNIT % unit_failures)
    result = subprocess.run(["bash", str(tmp_path / "scripts" / "test.sh"), "deps", "unit", "sanity", "lint", "molecule"],
                            env=dict(os.environ, **env), cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, timeout=120, check=False)
    return result.returncode, result.stdout


def test_unit_and_gate_stages_run_beside_the_molecule_stage_in_a_cpu_group_of_their_own(tmp_path):
    rc, out = run(tmp_path)
    assert rc == 0, out
    assert stages(out) == [
        "=== stage deps", "=== stage deps: ok in Ns", "=== stage molecule", "=== stage molecule: ok in Ns",
        "=== stage unit", "=== stage unit: ok in Ns (beside molecule)", "=== stage sanity", "=== stage sanity: ok in Ns (beside molecule)",
        "=== stage lint", "=== stage lint: ok in Ns (beside molecule)"], out
    assert "sanity said this" in out
    # the unit stage's tests (7, one skipped), and sanity, lint and molecule one each (deps counts only when it fails)
    assert out.rstrip().splitlines()[-1] == "9 passed, 0 failed", out
    unit_group = (tmp_path / "unit.cgroup").read_text().strip()
    if os.path.exists(CGROUP_V1):
        group = re.search(r"in the CPU group (/sys/fs/cgroup/cpu/gpucluster-beside-\d+) of weight 64 of 1024", out)
        assert group, out
        assert unit_group.endswith(":cpu:" + group.group(1)[len("/sys/fs/cgroup/cpu"):]), unit_group
        assert (tmp_path / "molecule.cgroup").read_text().strip() != unit_group
        assert not os.path.exists(group.group(1)), "the CPU group is left behind"
    else:
        pytest.skip("no cgroup v1 cpu hierarchy here: the group's checks need one (the order and counts passed)")


def test_a_failing_stage_beside_is_counted_named_and_fails_the_command(tmp_path):
    rc, out = run(tmp_path, unit_failures=2, STANDIN_LINT_RC="3", STANDIN_UNIT_RC="1")
    assert rc == 1, out
    assert "=== stage lint: FAILED in Ns (beside molecule)" in stages(out) and "=== stage unit: FAILED in Ns (beside molecule)" in stages(out)
    assert "failed stages: unit lint" in out
    # unit: 4 passed and 2 failed of its 7 (one skipped); lint fails as one; molecule and sanity pass as one each
    assert out.rstrip().splitlines()[-1] == "6 passed, 3 failed", out


def test_beside_off_runs_every_stage_in_order_without_a_group(tmp_path):
    rc, out = run(tmp_path, GPUCLUSTER_TEST_BESIDE="0")
    assert rc == 0, out
    assert [line for line in stages(out) if " in N" in line] == [
        "=== stage deps: ok in Ns", "=== stage unit: ok in Ns", "=== stage sanity: ok in Ns", "=== stage lint: ok in Ns",
        "=== stage molecule: ok in Ns"], out
    assert "beside" not in out and "CPU group" not in out
    assert out.rstrip().splitlines()[-1] == "9 passed, 0 failed", out
