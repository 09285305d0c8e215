#!/usr/bin/env bash
# Run every molecule scenario (each molecule/<name>/ with a molecule.yml) on
# the simulated cluster's node image, one after the other:
#
#   bash scripts/molecule.sh            # all scenarios
#   bash scripts/molecule.sh default    # only these
#
# Installs podman and builds the node images first when needed (cached: a
# second run builds nothing). Prints `molecule <name>: passed|failed (<N>s)`
# per scenario, then the time of each molecule phase, and exits non-zero if
# any failed. Full logs go to .build/molecule/<name>.log.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
# shellcheck source=scripts/lib/common.sh
. "$ROOT/scripts/lib/common.sh"

[ -f .venv/bin/activate ] || die ".venv is missing: run 'make venv' first"
# shellcheck source=/dev/null
. .venv/bin/activate
export NO_COLOR=1 ANSIBLE_NOCOLOR=1 PY_COLORS=0 ANSIBLE_FORCE_COLOR=0

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    for f in molecule/*/molecule.yml; do
        [ -f "$f" ] && scenarios+=("$(basename "$(dirname "$f")")")
    done
fi
[ ${#scenarios[@]} -gt 0 ] || die "no molecule scenario found (molecule/*/molecule.yml)"
for s in "${scenarios[@]}"; do
    [ -f "molecule/$s/molecule.yml" ] || die "unknown scenario '$s': no molecule/$s/molecule.yml"
done

# Scenarios share the node names, so they run one at a time, also across
# concurrent runs of this script on the machine. Commands run with fd 9
# closed: a daemon podman starts (conmon, aardvark-dns) would keep the lock.
mkdir -p /run/lock
exec 9>/run/lock/gpucluster-molecule.lock
if ! flock -n 9; then
    log "another scripts/molecule.sh is running; waiting for it"
    flock 9
fi
# Each scenario names the Debian release of its nodes in molecule.yml, in the
# image its platforms fall back to (localhost/gpucluster-sim-node:<suite>): the
# images of that release are built (cached) and GPUCLUSTER_SIM_IMAGE set to
# the exact one for the scenario's run.
scenario_suite() {
    local suite
    suite=$(grep -o 'gpucluster-sim-node:[a-z]*' "molecule/$1/molecule.yml" | sort -u)
    [ "$(printf '%s\n' "$suite" | grep -c .)" -eq 1 ] \
        || die "molecule/$1/molecule.yml must name one node image localhost/gpucluster-sim-node:<suite> (found: ${suite:-none})"
    printf '%s\n' "${suite#*:}"
}
bash scripts/cluster.sh deps 9>&- || die "podman could not be installed"
declare -A scenario_image=()
for s in "${scenarios[@]}"; do
    suite=$(scenario_suite "$s") || exit 1
    GPUCLUSTER_SIM_SUITE=$suite bash scripts/cluster.sh images 9>&- || die "the node images of $suite could not be built"
    scenario_image[$s]=$(GPUCLUSTER_SIM_SUITE=$suite bash -c '. scripts/lib/common.sh && . scripts/lib/images.sh && node_image')
done
# The real enroot packages and pyxis source archive the scenarios install
# (inventory/simulated: built from the local mirror of release files, cached
# under .build; molecule's prepare.yml asks for them again and finds them).
start=$(date +%s)
bash scripts/lib/enroot-build.sh 9>&- >/dev/null || die "the enroot packages could not be built (scripts/lib/enroot-build.sh)"
bash scripts/lib/pyxis-source.sh 9>&- >/dev/null || die "the pyxis source archive could not be had (scripts/lib/pyxis-source.sh)"
log "enroot packages and pyxis source archive ready ($(($(date +%s) - start))s)"
export MOLECULE_PODMAN_EXECUTABLE="$ROOT/scripts/lib/podman"

parent=.build/collections/ansible_collections/gpucluster
mkdir -p "$parent"
[ -L "$parent/bringup" ] || ln -sfn ../../../.. "$parent/bringup"

mkdir -p .build/molecule
failed=()
results=()
for s in "${scenarios[@]}"; do
    log="$ROOT/.build/molecule/$s.log"
    rm -f "$log.timed"
    start=$(date +%s)
    export GPUCLUSTER_SIM_IMAGE=${scenario_image[$s]}
    echo "=== molecule $s (image $GPUCLUSTER_SIM_IMAGE, tests ${GPUCLUSTER_MOLECULE_TESTS:-core})"
    # Every output line is also logged with its time, for the phase times.
    molecule test -s "$s" 2>&1 9>&- | while IFS= read -r line; do
        printf '%s\n' "$line"
        printf '%s %s\n' "$EPOCHREALTIME" "$line" >>"$log.timed"
    done
    rc=${PIPESTATUS[0]}
    sed 's/^[0-9.]* //' "$log.timed" >"$log"
    secs=$(($(date +%s) - start))
    # pytest's summary, without molecule's "│ " border
    summary=$(sed -n 's/^[^0-9=]*=* *\([0-9][0-9]* \(passed\|failed\).*\) in [0-9.]*s.*$/\1/p' "$log" | tail -n1)
    if [ "$rc" -eq 0 ]; then
        results+=("molecule $s: passed (${secs}s)")
    else
        failed+=("$s")
        results+=("molecule $s: failed (${secs}s)")
    fi
    [ -z "$summary" ] || results+=("  verify tests of $s: $summary")
    # "INFO [default > converge] Executing" ... "Executed: Successful"
    mapfile -t -O "${#results[@]}" results < <(awk -v s="$s" '
        match($0, "\\[" s " > [a-z_]+\\] Execut") {
            phase = substr($0, RSTART + length(s) + 4, RLENGTH - length(s) - 12)
            if ($0 ~ /Executing$/) { begin[phase] = $1 }
            else if ($0 ~ /Executed/ && phase in begin) { printf "  phase %-11s %6.1fs\n", phase, $1 - begin[phase]; delete begin[phase] }
        }' "$log.timed")
    rm -f "$log.timed"
done
echo
printf '%s\n' "${results[@]}"
[ ${#failed[@]} -eq 0 ]
