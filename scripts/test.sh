#!/usr/bin/env bash
# The one test command of gpucluster.bringup (README: `make test`).
#
# Runs on a fresh Debian 12 machine as root and installs what it needs:
# Debian packages through apt, Python tools pinned in requirements-dev.txt
# into .venv. Stages run in order, each timed (the unit stage and the gate stages
# sanity, lint, yamllint, shellcheck and package beside the molecule stage when both
# are asked for: see BESIDE_STAGES); the last line is the plain summary `N passed, N failed`.
# Exit status is non-zero if anything failed.
#
#   scripts/test.sh                 # every stage
#   scripts/test.sh unit lint       # only these stages
#   scripts/test.sh deps upgrade    # the Slurm upgrade tests (not in CI: about 36 minutes)
#   scripts/test.sh deps bookworm   # the Debian 12 / Slurm 22.05 scenario (not in CI: about 5 minutes)
#   scripts/test.sh deps acceptance # the default scenario's long acceptance tests (not in CI: about 70 minutes)
#   scripts/test.sh deps nccl-build # nccl-tests compiled for real through the validate role (not in CI: README)
#   scripts/test.sh deps smd        # SchedMD's slurm-smd 26.05.3 packages built, the cluster and the NVML oracle on them (not in CI)
#   bash benchmarks/scale.sh        # the scale benchmark, 2 to 1,024 emulated nodes (not in CI: docs/scale.md)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=scripts/lib/tooling.sh
. "$ROOT/scripts/lib/tooling.sh"
export PATH="$VENV/bin:$PATH" NO_COLOR=1 ANSIBLE_NOCOLOR=1 PY_COLORS=0

ALL_STAGES=(deps unit sanity lint yamllint shellcheck package molecule oracle scale)
# Stages run only when named: past the 45 minutes a cold CI run may take on 2
# cores (docs/slurm-upgrade.md; README, "Supported versions").
# nccl-build: downloads about 300 MB of CUDA and NCCL wheels and compiles for
# minutes on 2 cores, cold; its outputs cached under .build/nccl-build.
# smd: builds SchedMD's slurm-smd packages from the release tarball (20-40 minutes
# on 2 cores, cold; cached by content hash under .build/smd), then the cluster on them.
EXTRA_STAGES=(upgrade bookworm acceptance nccl-build smd)
STAGES=("$@")
[ ${#STAGES[@]} -gt 0 ] || STAGES=("${ALL_STAGES[@]}")

PASSED=0
FAILED=0
# pip's progress lines inside ansible-test's own virtualenvs (kept in the log).
PIP_NOISE='^( *(Looking in|Collecting|Downloading|Installing collected|Successfully|Attempting|Found existing|Uninstalling|Using cached|Requirement already)|.*━|WARNING: Location)'
shopt -s nullglob
FAILED_STAGES=()
REPORT=()
OUTDIR="$ROOT/.build/test"
mkdir -p "$OUTDIR"

# A gate stage counts as one test; pytest stages add their own test counts.
count_gate() {  # stage rc
    if [ "$2" -eq 0 ]; then PASSED=$((PASSED + 1)); else FAILED=$((FAILED + 1)); fi
}

count_junit() {  # junit.xml -> adds its passed/failed test counts
    local counts
    counts=$("$VENV/bin/python" - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print("0 1")
    raise SystemExit
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
total = sum(int(s.get("tests", 0)) for s in suites)
bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
skipped = sum(int(s.get("skipped", 0)) for s in suites)
print(total - bad - skipped, bad)
PY
)
    PASSED=$((PASSED + ${counts% *}))
    FAILED=$((FAILED + ${counts#* }))
}

# The real nvidia-ml-py, pinned: the `pynvml` every unit test and the modules
# they run import (the root conftest.py puts its directory first and loads the
# simulated libnvidia-ml.so.1 under it), and the reference the simulator's own
# API (nvmlsim.api) is compared with (names, signatures, constants, structs).
# Only its pynvml.py is extracted (no pip install into the venv).
NVML_REF_VERSION=13.615.71
NVML_REF="$ROOT/.build/nvml-ref/nvidia-ml-py-$NVML_REF_VERSION/pynvml.py"

ensure_nvml_reference() {
    [ -f "$NVML_REF" ] && return 0
    local dir
    dir=$(dirname "$NVML_REF")
    mkdir -p "$dir"
    "$VENV/bin/pip" download -q --no-deps --only-binary=:all: -d "$dir" "nvidia-ml-py==$NVML_REF_VERSION" 2>&1 \
        | grep -v '^WARNING: Location'
    "$VENV/bin/python" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); open(sys.argv[2], "wb").write(z.read("pynvml.py"))' \
        "$dir"/nvidia_ml_py-*.whl "$NVML_REF"
}

stage_deps() {
    # docker-registry, skopeo: the real registry; squashfs-tools, jq, curl,
    # parallel, zstd: what the real enroot runs (its package's dependencies;
    # scripts/lib/enroot-build.sh builds it, cached, and installs its own build
    # dependencies); slurm-client, libslurm-dev, gcc, make: the real pyxis is
    # built and loaded by a real srun. ibsim-utils,
    # infiniband-diags: the real ibnetdiscover over simulated InfiniBand fabrics
    # (topology.conf tests). chromium: the validation report opened in a real
    # headless browser (tests/browser).
    ensure_apt_packages git shellcheck rsync docker-registry skopeo squashfs-tools jq curl parallel zstd \
        slurm-client libslurm-dev gcc make ibsim-utils infiniband-diags chromium || return 1
    ensure_venv || return 1
    ensure_nvml_reference || return 1
    # nvml.h for the simulated libnvidia-ml.so.1 that the root conftest.py and nvml_sim/tests/test_libnvml.py build
    ensure_nvml_header >/dev/null
    # NVIDIA's real nvidia-cuda-mps-control for the MPS hook tests
    ensure_mps_control >/dev/null
}

stage_unit() {
    local junit="$OUTDIR/unit.xml" rc
    rm -f "$junit"
    # the comparison with the real nvidia-ml-py runs here, or fails: never skipped
    export NVMLSIM_REAL_PYNVML="$NVML_REF" NVMLSIM_REQUIRE_REAL_PYNVML=1
    # the simulated libnvidia-ml.so.1 is built and driven by the real nvidia-ml-py here, or the tests fail
    NVMLSIM_NVML_INCLUDE=$(ensure_nvml_header) || return 1
    export NVMLSIM_NVML_INCLUDE NVMLSIM_REQUIRE_LIBNVML=1
    # the MPS hooks run NVIDIA's real control daemon here, or the tests fail
    GPUCLUSTER_MPS_CONTROL_BIN=$(ensure_mps_control) || return 1
    export GPUCLUSTER_MPS_CONTROL_BIN
    # topology.conf is tested on the real ibnetdiscover over ibsim here, or the tests fail
    export GPUCLUSTER_REQUIRE_IBSIM=1
    # the HTML report is opened in Debian's chromium here, or the browser test fails
    export GPUCLUSTER_REQUIRE_BROWSER=1
    # on GPUCLUSTER_TEST_WORKERS processes (pytest-xdist), one more than the 2 cores of this project's CI machines: a
    # third of the tests' wall time is waiting (sleeps, time-outs, subprocesses), which a third worker fills (2026-12-06,
    # 2 cores, back to back on one clone: 692 s with 3 workers, 743 s with 2)
    "$VENV/bin/pytest" -q -p no:cacheprovider -n "${GPUCLUSTER_TEST_WORKERS:-3}" --junitxml="$junit" tests/unit nvml_sim/tests \
        tests/oracle/test_compare.py tests/oracle/test_fit_cpus.py tests/browser
    rc=$?
    # pytest exits 5 when it collected nothing: that is a failure here.
    count_junit "$junit"
    return "$rc"
}

# The collection content as shipped: tracked and new files, minus build_ignore.
collection_files() {
    git ls-files -co --exclude-standard | "$VENV/bin/python" -c '
import fnmatch, sys, yaml
ignore = yaml.safe_load(open("galaxy.yml"))["build_ignore"]
for line in sys.stdin:
    path = line.rstrip("\n")
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if not any(fnmatch.fnmatch(p, pat) for p in prefixes for pat in ignore):
        print(path)'
}

stage_sanity() {
    local tree="$ROOT/.build/sanity/ansible_collections/gpucluster/bringup" rc
    rm -rf "$ROOT/.build/sanity"
    mkdir -p "$tree"
    collection_files | rsync -a --files-from=- "$ROOT/" "$tree/"
    # ansible-test bootstraps pip in its per-test virtualenvs with a script it
    # downloads from a host this machine cannot reach: give it the stand-in.
    local pip_version cache
    pip_version=$("$VENV/bin/python" -c 'import re, ansible_test._internal.python_requirements as m, inspect
print(re.search(r"pip=.([0-9.]+).", inspect.getsource(m)).group(1))') || return 1
    cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
    mkdir -p "$(dirname "$cache")"
    cmp -s "$ROOT/scripts/lib/get-pip-standin.py" "$cache" 2>/dev/null || cp "$ROOT/scripts/lib/get-pip-standin.py" "$cache"
    # ansible-test lists a collection's files through git.
    (cd "$tree" && git init -q && git add -A) || return 1
    (cd "$tree" && "$VENV/bin/ansible-test" sanity --color no --python 3.11 --requirements \
        2>&1 | tee "$OUTDIR/sanity.log" | grep -vE "$PIP_NOISE") ; rc=${PIPESTATUS[0]}
    return "$rc"
}

stage_lint() {
    # A private HOME: ansible-lint also reads ~/.ansible/collections, where an
    # installed (older) copy of this collection would shadow the checkout.
    mkdir -p "$ROOT/.build/lint-home"
    HOME="$ROOT/.build/lint-home" ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections" \
        "$VENV/bin/ansible-lint" --strict --offline --nocolor
}

stage_yamllint() {
    "$VENV/bin/yamllint" --strict .
}

stage_shellcheck() {
    local files=()
    mapfile -t files < <(git ls-files -co --exclude-standard | while read -r f; do
        [ -f "$f" ] || continue
        case "$f" in
            *.sh) echo "$f" ;;
            *) head -n1 "$f" 2>/dev/null | grep -Eq '^#!.*\b(ba)?sh\b' && echo "$f" ;;
        esac
    done)
    echo "shellcheck: ${#files[@]} scripts"
    shellcheck -x "${files[@]}"
}

stage_package() {
    # Build the tarball, install it offline into an empty collections path that
    # is the only one Ansible looks at, then every module must have docs and
    # every playbook must parse.
    local dist="$ROOT/.build/dist" colls="$ROOT/.build/pkgtest" tarball m p rc=0
    rm -rf "$dist" "$colls"
    mkdir -p "$dist" "$colls"
    "$VENV/bin/ansible-galaxy" collection build --force --output-path "$dist" . || return 1
    tarball=$(ls "$dist"/gpucluster-bringup-*.tar.gz)
    (
        export ANSIBLE_COLLECTIONS_PATH="$colls" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False
        cd "$colls" || exit 1
        "$VENV/bin/ansible-galaxy" collection install --offline --no-deps --force -p "$colls" "$tarball" >/dev/null || exit 1
        [ -f "$colls/ansible_collections/gpucluster/bringup/MANIFEST.json" ] || { echo "tarball did not install"; exit 1; }
        for m in "$ROOT"/plugins/modules/*.py; do
            m=$(basename "$m" .py)
            # (the JSON on stdout only: a library's warning on stderr is not part of it)
            if "$VENV/bin/ansible-doc" --json "gpucluster.bringup.$m" 2>"$colls/ansible-doc.err" \
                    | "$VENV/bin/python" -c 'import json, sys; d = json.load(sys.stdin); sys.exit(0 if any(v.get("doc") for v in d.values()) else 1)'; then
                echo "ansible-doc gpucluster.bringup.$m: ok"
            else
                echo "ansible-doc gpucluster.bringup.$m: FAILED"; cat "$colls/ansible-doc.err"; rc=1
            fi
        done
        # awx_setup.yml needs the awx.awx collection (its module_defaults group)
        ln -sfn "$VENV/lib/python3.11/site-packages/ansible_collections/awx" "$colls/ansible_collections/awx"
        for p in "$ROOT"/playbooks/*.yml; do
            p=$(basename "$p" .yml)
            if "$VENV/bin/ansible-playbook" -i localhost, "gpucluster.bringup.$p" --syntax-check >/dev/null; then
                echo "syntax-check gpucluster.bringup.$p: ok"
            else
                echo "syntax-check gpucluster.bringup.$p: FAILED"; rc=1
            fi
        done
        exit "$rc"
    )
}

# CI runs the Debian 13 scenario (Slurm 24.11); the Debian 12 one (Slurm 22.05)
# is the extra stage bookworm: both together ran past CI's 45 cold minutes.
# The default scenario's tests are split (molecule/default/tests/conftest.py): CI's
# molecule stage runs the bring-up, its second run and the quick checks of the
# converged cluster (core); the acceptance stage brings the same cluster up and
# runs the long acceptance tests (tests marked acceptance: adding a node,
# air-gapped install, configless, NVML autodetect, sharing, health tiers, deep
# tier, MIG layout changes), which together with the rest passed 45 cold minutes.
stage_molecule() {
    GPUCLUSTER_MOLECULE_TESTS=core bash "$ROOT/scripts/molecule.sh" default
}

stage_acceptance() {
    GPUCLUSTER_MOLECULE_TESTS=acceptance bash "$ROOT/scripts/molecule.sh" default
}

# The emulated large cluster at 64 nodes (docs/scale.md): real slurmctld and
# slurmds, the collection's controller-side modules on it. The full benchmark
# (up to 1,024 nodes) is benchmarks/scale.sh, not in CI.
stage_scale() {
    local junit="$OUTDIR/scale.xml" rc
    rm -f "$junit"
    bash "$ROOT/scripts/cluster.sh" deps || return 1
    GPUCLUSTER_REQUIRE_SCALE=1 NVMLSIM_NVML_INCLUDE=$(ensure_nvml_header) "$VENV/bin/pytest" -q -p no:cacheprovider \
        --junitxml="$junit" tests/scale
    rc=$?
    bash "$ROOT/scripts/scale.sh" down
    count_junit "$junit"
    return "$rc"
}

stage_bookworm() {
    bash "$ROOT/scripts/molecule.sh" bookworm
}

# nccl-tests 2.19.6 compiled for real through the validate role's own build path
# (tasks/nccl_build.yml, by ansible-playbook on node containers of the Debian 13
# node image), an MPI and a non-MPI build for two node types, with CUDA 13.0 and
# NCCL 2.27.7 from NVIDIA's PyPI wheels; the toolchain and the build are cached
# by content hash under .build/nccl-build. The built all_reduce_perf then runs on
# those GPU-less nodes, fails as on a node whose driver is missing, and the
# validation's reading of that output is checked (tests/nccl_build/run_nccl_build.py).
stage_nccl-build() {
    local junit="$OUTDIR/nccl-build.xml" rc
    rm -f "$junit"
    bash "$ROOT/scripts/cluster.sh" deps || return 1
    bash "$ROOT/scripts/cluster.sh" images || return 1
    GPUCLUSTER_NCCL_BUILD=1 nice -n 10 "$VENV/bin/pytest" -q -p no:cacheprovider --junitxml="$junit" tests/nccl_build
    rc=$?
    count_junit "$junit"
    return "$rc"
}

# SchedMD's own packages of the current release (issue 46): the slurm_packages_build
# role's playbook builds slurm-smd 26.05.3 from the vendored tarball on a Debian 13
# container (scripts/lib/smd_build.sh: cold, or cached by content hash under
# .build/smd/<hash>, a second run changing nothing, check mode, gpu_nvml.so in
# slurm-smd); then the NVML oracle on every simulator preset with slurmd and Slurm's
# plugin installed from those packages, and the simulated cluster brought up on them
# (slurm_install_source local; tests/smd).
stage_smd() {
    local junit="$OUTDIR/smd.xml" rc debs
    rm -f "$junit"
    bash "$ROOT/scripts/cluster.sh" deps images || return 1
    debs=$(bash "$ROOT/scripts/lib/smd_build.sh" | tail -n 1)
    if [ -z "$debs" ] || [ ! -d "$debs" ]; then
        echo "the slurm-smd build failed (scripts/lib/smd_build.sh)" >&2
        return 1
    fi
    GPUCLUSTER_SMD_DEBS=$debs GPUCLUSTER_ORACLE=1 GPUCLUSTER_ORACLE_SMD_DEBS=$debs NVMLSIM_NVML_INCLUDE=$(ensure_nvml_header) \
        "$VENV/bin/pytest" -q -p no:cacheprovider --junitxml="$junit" tests/oracle/test_oracle.py tests/smd
    rc=$?
    count_junit "$junit"
    return "$rc"
}

# Slurm's own NVML plugin (slurmd -G, AutoDetect=nvml) against slurm_gres_facts on
# every simulated preset, in one container from the node image (built by the
# molecule stage, or scripts/cluster.sh images): must run here, never skipped.
stage_oracle() {
    local junit="$OUTDIR/oracle.xml" rc
    rm -f "$junit"
    # builds the Debian 12 node image only when its content hash changed (cached by the hash, shared with
    # the bookworm stage); tags it :bookworm, which the oracle uses: its comparisons are recorded against
    # Slurm 22.05's plugin (docs/slurm-nvml-oracle.md)
    GPUCLUSTER_SIM_SUITE=bookworm bash "$ROOT/scripts/cluster.sh" images || return 1
    GPUCLUSTER_ORACLE=1 NVMLSIM_NVML_INCLUDE=$(ensure_nvml_header) "$VENV/bin/pytest" -q -p no:cacheprovider \
        --junitxml="$junit" tests/oracle/test_oracle.py
    rc=$?
    count_junit "$junit"
    return "$rc"
}

# The Slurm major upgrades on the simulated cluster (scripts/cluster.sh, gcsim-
# containers): Debian 12's 22.05 refused and, forced, stopped safely; Debian 13's
# 24.11 to forky's 26.05 with a failed conversion restored, then done; Debian 13's
# 24.11 to SchedMD's slurm-smd 26.05.3 packages (built as the smd stage does).
stage_upgrade() {
    local junit="$OUTDIR/upgrade.xml" rc debs
    rm -f "$junit"
    bash "$ROOT/scripts/cluster.sh" deps images || return 1
    # SchedMD's slurm-smd packages the third upgrade goes to (the smd stage's build, cached by content hash)
    debs=$(bash "$ROOT/scripts/lib/smd_build.sh" | tail -n 1)
    if [ -z "$debs" ] || [ ! -d "$debs" ]; then
        echo "the slurm-smd build failed (scripts/lib/smd_build.sh)" >&2
        return 1
    fi
    GPUCLUSTER_SMD_DEBS=$debs "$VENV/bin/pytest" -q -p no:cacheprovider --junitxml="$junit" tests/upgrade
    rc=$?
    bash "$ROOT/scripts/cluster.sh" down
    count_junit "$junit"
    return "$rc"
}

for stage in "${STAGES[@]}"; do
    if ! declare -F "stage_$stage" >/dev/null; then
        echo "unknown stage '$stage'; valid stages: ${ALL_STAGES[*]} ${EXTRA_STAGES[*]}" >&2
        exit 2
    fi
done

# Book one stage's result: its counts and its report line (with NOTE after the time).
record_stage() {  # stage rc secs failed_before [note]
    local stage=$1 rc=$2 secs=$3 failed_before=$4 note=${5:-} status
    case "$stage" in
        unit)  # counted per test; a run that broke without a failing test counts once
            [ "$rc" -eq 0 ] || [ "$FAILED" -gt "$failed_before" ] || FAILED=$((FAILED + 1)) ;;
        deps) [ "$rc" -eq 0 ] || count_gate "$stage" "$rc" ;;
        *) count_gate "$stage" "$rc" ;;
    esac
    if [ "$rc" -eq 0 ]; then status=ok; else status=FAILED; FAILED_STAGES+=("$stage"); fi
    REPORT+=("$(printf '%-11s %-7s %5ss%s' "$stage" "$status" "$secs" "${note:+  $note}")")
    echo "=== stage $stage: $status in ${secs}s${note:+ ($note)}"
}

# The unit stage and the gate stages (no cluster, no timing of their own to keep) run
# beside the molecule stage when both are asked for: one after another in the
# background at nice 19 (idle I/O class), on the CPU the scenario leaves idle while its
# jobs, daemons and sleeps run. Measured on 2 cores (2026-12-06, a clean clone, images
# cached): the molecule stage ran 1,465 s at a load of about 1 in its verify phase,
# while the unit stage alone took 626 s and the gate stages about 260 s of both cores.
# Each one's output goes to .build/test/beside/<stage>.log and is printed after the
# molecule stage, with its own time and (unit) its test counts. GPUCLUSTER_TEST_BESIDE=0:
# all in order, one at a time.
BESIDE_STAGES=(unit sanity lint yamllint shellcheck package)
BESIDE=()
if [ "${GPUCLUSTER_TEST_BESIDE:-1}" != 0 ] && [[ " ${STAGES[*]} " == *" molecule "* ]]; then
    for stage in "${BESIDE_STAGES[@]}"; do
        [[ " ${STAGES[*]} " != *" $stage "* ]] || BESIDE+=("$stage")
    done
fi
BESIDE_PID=

# Nice alone does not keep the background chain off the scenario's CPU: the containers
# run in podman's own CPU group (cgroup v1 libpod_parent, weight 1024), and with the
# kernel's autogroups every session's processes form one more group of the same weight,
# so the chain, nice 19 or not, took half the CPU from the containers: the converge ran
# 288 s longer (689 s against 401 s, 2026-12-06). The chain gets a CPU group of its own
# of weight 64 (about 3 % of a busy machine, all of an idle one) where root can make one:
# cgroup v1's cpu hierarchy, or cgroup v2 with the cpu controller; elsewhere nice only.
BESIDE_CGROUP=
beside_cgroup() {  # pid
    local dir
    if [ -f /sys/fs/cgroup/cpu/cpu.shares ]; then
        dir=/sys/fs/cgroup/cpu/gpucluster-beside-$$
        mkdir -p "$dir" 2>/dev/null && echo 64 >"$dir/cpu.shares" && echo "$1" >"$dir/cgroup.procs" || return 1
    elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
        dir=/sys/fs/cgroup/gpucluster-beside-$$
        mkdir -p "$dir" 2>/dev/null && echo 6 >"$dir/cpu.weight" && echo "$1" >"$dir/cgroup.procs" || return 1
    else
        return 1
    fi
    echo "$dir"
}

start_beside() {
    local dir="$OUTDIR/beside"
    [ ${#BESIDE[@]} -gt 0 ] || return 0
    rm -rf "$dir" && mkdir -p "$dir" && mkfifo "$dir/.go"
    (
        renice -n 19 -p "$BASHPID" >/dev/null
        ionice -c 3 -p "$BASHPID" 2>/dev/null || true
        # (started stopped: in its CPU group before its first stage)
        read -r _ <"$dir/.go"
        for stage in "${BESIDE[@]}"; do
            start=$(date +%s)
            "stage_$stage" >"$dir/$stage.log" 2>&1 </dev/null
            echo "$? $(( $(date +%s) - start ))" >"$dir/$stage.rc"
        done
    ) &
    BESIDE_PID=$!
    if BESIDE_CGROUP=$(beside_cgroup "$BESIDE_PID"); then
        echo "=== stages ${BESIDE[*]}: beside the molecule stage (nice 19, in the CPU group $BESIDE_CGROUP of weight 64 of 1024; output after it, in $dir)"
    else
        BESIDE_CGROUP=
        echo "=== stages ${BESIDE[*]}: beside the molecule stage (nice 19; output after it, in $dir)"
    fi
    echo go >"$dir/.go"
}

finish_beside() {
    local dir="$OUTDIR/beside" stage result
    [ -n "$BESIDE_PID" ] || return 0
    wait "$BESIDE_PID"
    BESIDE_PID=
    # (a process a stage left running keeps its group: then it stays)
    [ -z "$BESIDE_CGROUP" ] || rmdir "$BESIDE_CGROUP" 2>/dev/null || true
    for stage in "${BESIDE[@]}"; do
        echo "=== stage $stage"
        cat "$dir/$stage.log" 2>/dev/null
        result=$(cat "$dir/$stage.rc" 2>/dev/null) || result="1 0"
        failed_before=$FAILED
        # (the unit stage's test counts, which its background shell could not add here)
        [ "$stage" != unit ] || count_junit "$OUTDIR/unit.xml"
        record_stage "$stage" "${result% *}" "${result#* }" "$failed_before" "beside molecule"
    done
}

link_collection
for stage in "${STAGES[@]}"; do
    # (a stage beside molecule runs from start_beside)
    [[ " ${BESIDE[*]} " != *" $stage "* ]] || continue
    [ "$stage" != molecule ] || start_beside
    echo "=== stage $stage"
    start=$(date +%s)
    failed_before=$FAILED
    "stage_$stage"
    rc=$?
    record_stage "$stage" "$rc" $(( $(date +%s) - start )) "$failed_before"
    [ "$stage" != molecule ] || finish_beside
    if [ "$stage" = deps ] && [ "$rc" -ne 0 ]; then
        echo "dependencies could not be installed; stopping" >&2
        break
    fi
done
finish_beside

echo
echo "stage       result   time"
printf '%s\n' "${REPORT[@]}"
[ ${#FAILED_STAGES[@]} -eq 0 ] || echo "failed stages: ${FAILED_STAGES[*]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ ${#FAILED_STAGES[@]} -eq 0 ]
