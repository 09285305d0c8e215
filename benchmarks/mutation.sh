#!/usr/bin/env bash
# Mutation testing of plugins/module_utils/ with mutmut (pinned below), not run by CI (slow).
#
#   bash benchmarks/mutation.sh                     # every _*.py of plugins/module_utils/ and its subfolders
#   bash benchmarks/mutation.sh --file _hostlist.py --file mig/_mig_minors.py   # a name or a path under it
#   bash benchmarks/mutation.sh --sample 400 --seed 43   # 400 mutants drawn at random from all of them (or of --file's)
#   bash benchmarks/mutation.sh --jobs 2            # mutants run 2 at a time (default 1)
#   bash benchmarks/mutation.sh --report            # print the last run's results again (also of a run stopped early)
#
# On a shared machine run it as `nice -n 19 bash benchmarks/mutation.sh ...`.
#
# mutmut and the test tool-chain go into their own virtualenv, .build/mutation-venv
# (pytest and ansible-core at the pins of requirements-dev.txt); .venv is not touched.
# The tests import the collection as ansible_collections.gpucluster.bringup, and mutmut
# names a mutant after the path of its file, so the checkout (its git files, untracked
# ones included) is staged as .build/mutation/work/ansible_collections/gpucluster/bringup
# and mutmut runs in .build/mutation/work: the mutated module has the name the tests
# import, and the copied conftest.py links the mutated copy, not the checkout.
# mutmut runs the tests once to record which tests call each function, then each
# mutant against only those tests (stopping at the first failure).
#
# Whole files: each file's result goes to .build/mutation/results/<file>.json (kept until
# that file is run again, so partial runs add up).  A sample (--sample N [--seed S], seed 0
# by default): mutmut makes every mutant of the files, N of them are drawn uniformly at
# random (the same tree and seed draw the same mutants; the names drawn are in
# .build/mutation/work/sample.json), only those run, and the report gives the raw score with
# its 95 % confidence interval (Wilson) and each file's counts; results in
# .build/mutation/sample-results/.  Either way the table is printed and written to
# .build/mutation/report.txt, the diff of every mutant not killed to
# .build/mutation/survivors.txt, mutmut's own output to .build/mutation/mutmut.log.
set -euo pipefail

MUTMUT_VERSION=3.8.1

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=$ROOT/.build/mutation-venv
OUT=$ROOT/.build/mutation
WORK=$OUT/work
RESULTS=$OUT/results
COLL_REL=ansible_collections/gpucluster/bringup
COLL=$WORK/$COLL_REL
UTILS=plugins/module_utils
SAMPLE_RESULTS=$OUT/sample-results
HELPER=$ROOT/benchmarks/mutation_report.py

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "mutation.sh: $*" >&2; exit 2; }

jobs=1
report_only=0
sample=0
seed=
files=()
while [ $# -gt 0 ]; do
    case "$1" in
        --file)
            [ $# -ge 2 ] || die "--file needs a file of $UTILS, e.g. --file _hostlist.py"
            # a file name (looked up in $UTILS and its subfolders) or a path under $UTILS
            want=${2#"$UTILS"/}
            want=${want%.py}.py
            case "$want" in
                */*) found=(); [ ! -f "$UTILS/$want" ] || found=("$want") ;;
                *) mapfile -t found < <(cd "$UTILS" && find . -name "$want" -printf '%P\n') ;;
            esac
            [ ${#found[@]} -eq 1 ] || die "--file $2: no such file in $UTILS (files: $(cd "$UTILS" && find . -name '_*.py' ! -name '__init__.py' -printf '%P\n' | sort | tr '\n' ' '))"
            files+=("${found[0]}")
            shift 2 ;;
        --jobs)
            [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive whole number, got '${2:-}'"
            jobs=$2
            shift 2 ;;
        --sample)
            [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--sample needs a positive whole number of mutants, got '${2:-}'"
            sample=$2
            shift 2 ;;
        --seed)
            [[ ${2:-} =~ ^[0-9]+$ ]] || die "--seed needs a whole number, got '${2:-}'"
            seed=$2
            shift 2 ;;
        --report) report_only=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (valid: --file NAME, --sample N, --seed S, --jobs N, --report, --help)" ;;
    esac
done
[ -z "$seed" ] || [ "$sample" -gt 0 ] || die "--seed draws a sample: give --sample N too"
if [ ${#files[@]} -eq 0 ]; then
    mapfile -t files < <(cd "$UTILS" && find . -name '_*.py' ! -name '__init__.py' -printf '%P\n' | sort)
fi

mkdir -p "$OUT" "$RESULTS"

# --- virtualenv: mutmut plus the pins the tests need ---------------------------------
pin() {
    grep -E "^$1==" requirements-dev.txt || die "requirements-dev.txt pins no $1"
}
requirements=("mutmut==$MUTMUT_VERSION" "$(pin pytest)" "$(pin ansible-core)")
stamp=$VENV/.requirements
if [ "$(cat "$stamp" 2>/dev/null)" != "${requirements[*]}" ]; then
    echo "installing ${requirements[*]} into ${VENV#"$ROOT"/}"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "${requirements[@]}"
    echo "${requirements[*]}" > "$stamp"
fi
PY=$VENV/bin/python

# The results of the run in the work tree: a sample's (the work tree has sample.json) or whole files'.
# With the run's seconds as argument, first a line of how long it took.
collect_and_report() {
    local results=$RESULTS drawn_file=() mutants=0
    if [ -f "$WORK/sample.json" ]; then
        results=$SAMPLE_RESULTS drawn_file=("$WORK/sample.json")
        rm -rf "$results"
        mkdir -p "$results"
    fi
    [ ! -d "$WORK/mutants" ] || mutants=$("$PY" "$HELPER" collect "$WORK" "$results")
    if [ $# -gt 0 ]; then
        [ "$sample" -eq 0 ] || mutants=$sample
        echo "ran ${files[*]}: $mutants mutants in ${1}s ($(awk -v t="$1" -v n="$mutants" 'BEGIN { printf "%.2f", n ? t / n : 0 }')s per mutant, making them and recording the tests included)"
        echo
    fi
    "$PY" "$HELPER" report "$results" "$OUT" "${drawn_file[@]}"
}

if [ "$report_only" -eq 1 ]; then
    # an interrupted run leaves its results in the work tree: take them (mutants not run show as not run)
    collect_and_report
    exit
fi

# --- stage the checkout under its collection path --------------------------------------
rm -rf "$WORK"
mkdir -p "$COLL"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -co --exclude-standard \
        | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf - | tar -xf - -C "$COLL"
else
    tar --exclude=./.git --exclude=./.build --exclude=./.venv --exclude=./.cache -cf - . | tar -xf - -C "$COLL"
fi
find "$COLL" -name __pycache__ -prune -exec rm -rf {} +

# The NVML tests load the real nvidia-ml-py over the simulated library (conftest.py); the staged copy has no .build/,
# so they take the checkout's files (bash scripts/test.sh deps fetches them) and build the library in the copy.
# (|| true: without .build/nvml-ref find fails, and set -e would end the script here without the message below)
pynvml=$(find "$ROOT/.build/nvml-ref" -path '*/nvidia-ml-py-*/pynvml.py' 2>/dev/null | sort | head -n 1) || true
if [ -z "$pynvml" ] || [ ! -f "$ROOT/.build/nvml-header/include/nvml.h" ]; then
    die "the NVML tests need .build/nvml-ref and .build/nvml-header: run 'bash scripts/test.sh deps' first"
fi
export NVMLSIM_REAL_PYNVML=$pynvml NVMLSIM_NVML_INCLUDE=$ROOT/.build/nvml-header/include

mapfile -t tests < <(cd "$COLL" && "$PY" "$HELPER" select . "${files[@]/#/$UTILS/}")
[ ${#tests[@]} -gt 0 ] || die "no test file names ${files[*]}"

# Everything but plugins/module_utils is copied unchanged into mutmut's tree.
also_copy=()
for entry in "$COLL"/* "$COLL"/.[!.]*; do
    [ -e "$entry" ] || continue
    name=${entry#"$COLL"/}
    if [ "$name" = plugins ]; then
        for sub in "$COLL"/plugins/*; do
            [ "$sub" = "$COLL/$UTILS" ] || also_copy+=("$COLL_REL/${sub#"$COLL"/}")
        done
    else
        also_copy+=("$COLL_REL/$name")
    fi
done

# A test that fails on the unmutated tree (work in progress elsewhere) would stop mutmut:
# such tests are run once here, listed and deselected (they could not kill a mutant anyway).
echo "running the ${#tests[@]} selected test files once on the unmutated copy"
(cd "$WORK" && "$PY" -m pytest --rootdir=. -q -p no:randomly -o cache_dir="$OUT/pytest-cache" --cache-clear \
    "${tests[@]/#/$COLL_REL/}") > "$OUT/clean-run.log" 2>&1 || true
# Tests that run a copied module_utils file with an environment of their own (no mutmut there):
# the mutated copy cannot even be imported, so they are left out like failing ones.
# test_node_check's nvidia_mig check-mode test passes alone but fails in mutmut's second in-process
# pytest run ("Failed to decode JSON module parameters": state of ansible's module loader).
# Tests that load a module_utils file in an isolated python (-I -S: no PYTHONPATH, so no mutmut) fail there too.
failing=(tests/unit/plugins/modules/test_mig_boot.py::test_installed_like_the_role_does_it_runs_without_ansible
         tests/unit/plugins/modules/test_node_check.py::test_mig_layout_against_nvidia_mig_check_mode
         tests/unit/plugins/module_utils/test_node_library.py::test_every_node_program_imports_from_what_its_role_installs
         tests/unit/roles/nvml/test_nvml_role.py::test_pip_installs_the_wheel_where_the_client_finds_it)
known=${#failing[@]}
failing=("${failing[@]/#/$COLL_REL/}")
mapfile -t -O ${#failing[@]} failing < <("$PY" -c 'import json, sys
try:
    print(*sorted(json.load(open(sys.argv[1]))), sep="\n")
except FileNotFoundError:
    pass' "$OUT/pytest-cache/v/cache/lastfailed")
if [ ${#failing[@]} -gt "$known" ]; then
    echo "WARNING: $((${#failing[@]} - known)) test(s) fail on the unmutated tree and are left out (see ${OUT#"$ROOT"/}/clean-run.log):" >&2
    printf '  %s\n' "${failing[@]:$known}" >&2
fi

indent() { local x; for x in "$@"; do x=${x//%/%%}; printf '    %s\n' "$x"; done; }
{
    echo "[mutmut]"
    echo "source_paths = $COLL_REL/$UTILS"
    echo "only_mutate ="
    indent "${files[@]/#/$COLL_REL/$UTILS/}"
    echo "also_copy ="
    indent "${also_copy[@]}"
    echo "pytest_add_cli_args_test_selection ="
    indent "${tests[@]/#/$COLL_REL/}"
    echo "pytest_add_cli_args ="
    indent -p no:cacheprovider "${failing[@]/#/--deselect=}"
    echo "use_git_change_detection = false"
} > "$WORK/setup.cfg"

# --- run -------------------------------------------------------------------------------
# Some tests copy a module_utils file and run it with another python3 in a subprocess; the
# mutated copy imports mutmut's trampoline, so that python gets mutmut (alone) on its path.
# The mutant stays inactive there (mutmut picks it by module name), the original code runs.
shim=$OUT/pythonpath
rm -rf "$shim"
mkdir -p "$shim"
site=$("$PY" -c 'import os, mutmut; print(os.path.dirname(os.path.dirname(mutmut.__file__)))')
ln -s "$site/mutmut" "$site/mutmut-$MUTMUT_VERSION.dist-info" "$shim/"
# mutmut reads its setup.cfg from the working directory: a test's own ansible-playbook (cwd: the test's temporary
# directory) that imports the mutated collection would fail in mutmut's first, recording pass ("Could not figure out
# where the code to mutate is") and stop the run. In such a process mutmut reads the work tree's setup.cfg instead.
cp "$ROOT/benchmarks/mutation_sitecustomize.py" "$shim/sitecustomize.py"
export GPUCLUSTER_MUTMUT_DIR=$WORK

start=$(date +%s)
drawn=()
if [ "$sample" -gt 0 ]; then
    # mutmut's generation step alone (no test runs); `mutmut run` keeps the mutated files it finds newer than their sources
    seed=${seed:-0}
    echo "making every mutant of ${#files[@]} file(s) to draw $sample of them (seed $seed)"
    mapfile -t drawn < <(cd "$WORK" && PYTHONHASHSEED=0 "$PY" "$HELPER" sample . "$sample" "$seed" "$jobs" 2> "$OUT/sample.log")
    [ ${#drawn[@]} -eq "$sample" ] || { tail -n 20 "$OUT/sample.log" >&2; die "drew ${#drawn[@]} mutants, not $sample (${OUT#"$ROOT"/}/sample.log)"; }
fi

echo "mutmut $MUTMUT_VERSION: ${#files[@]} file(s), ${#tests[@]} test file(s), $jobs job(s)$([ "$sample" -eq 0 ] || echo ", $sample mutants drawn"); log: ${OUT#"$ROOT"/}/mutmut.log"
rc=0
(cd "$WORK" && PYTHONHASHSEED=0 PATH="$VENV/bin:$PATH" PYTHONPATH="$shim${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/mutmut" run --max-children "$jobs" "${drawn[@]}") > "$OUT/mutmut.log" 2>&1 || rc=$?
elapsed=$(($(date +%s) - start))
if [ "$rc" -ne 0 ]; then
    tail -c 3000 "$OUT/mutmut.log" | tr '\r' '\n' | tail -n 30 >&2
    die "mutmut failed (exit $rc) after ${elapsed}s; whole output in ${OUT#"$ROOT"/}/mutmut.log"
fi
collect_and_report "$elapsed"
