#!/usr/bin/env bash
# Times of the simulated cluster, printed as `<what>: <seconds>s`:
#   - node image build, cold (both images rebuilt under a throwaway name,
#     then removed) and cached (the real images, already built: no build);
#   - cluster start (`cluster.sh up` from nothing, images cached) and removal;
#   - the default molecule scenario (`molecule test`) and each of its phases.
# A running simulated cluster is removed first (and left down).
#
#   bash benchmarks/cluster_times.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CLUSTER=(bash scripts/cluster.sh)

PODMAN="$ROOT/scripts/lib/podman"   # podman with the project's containers.conf

now() { date +%s%3N; }   # milliseconds
since() {
    local ms=$(($(now) - $1))
    printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

"${CLUSTER[@]}" deps >/dev/null 2>&1
results=()

# Cold: a throwaway image name, so nothing is cached; removed afterwards.
bench_repo=localhost/gpucluster-sim-bench$$
t=$(now)
GPUCLUSTER_SIM_IMAGE_REPO=$bench_repo "${CLUSTER[@]}" images 2>&1 | sed 's/^/  /'
results+=("image build, cold (debootstrap + node layer): $(since "$t")s")
mapfile -t bench_images < <("$PODMAN" images --format '{{.Repository}}:{{.Tag}}' | grep "^$bench_repo-" || true)
[ ${#bench_images[@]} -eq 0 ] || "$PODMAN" rmi "${bench_images[@]}" >/dev/null

"${CLUSTER[@]}" images >/dev/null 2>&1   # the real images, built once if missing
t=$(now)
"${CLUSTER[@]}" images 2>&1 | sed 's/^/  /'
results+=("image build, cached (second run): $(since "$t")s")

"${CLUSTER[@]}" down >/dev/null 2>&1
t=$(now)
"${CLUSTER[@]}" up >/dev/null 2>&1
results+=("cluster start (cluster.sh up: 3 containers, boot, apt lists, simulator): $(since "$t")s")
t=$(now)
"${CLUSTER[@]}" down >/dev/null 2>&1
results+=("cluster removal (cluster.sh down): $(since "$t")s")

t=$(now)
molecule_lines=$(bash scripts/molecule.sh default 2>&1 | grep -E '^(molecule default: |  (phase|verify) )' || true)
results+=("scripts/molecule.sh default (images cached): $(since "$t")s")

echo
printf '%s\n' "${results[@]}" "$molecule_lines"
