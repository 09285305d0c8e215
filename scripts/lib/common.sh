# shellcheck shell=bash
# Shared settings and helpers for the simulated cluster (sourced, not run).
#
# Everything this project creates in podman carries the label
# io.gpucluster.sim (value "cluster" for scripts/cluster.sh, "molecule" for
# the molecule scenarios) and a gcsim- / gpucluster-sim name, so that `down`
# removes exactly what was made here and nothing else.

GPUCLUSTER_SIM_LIB=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
GPUCLUSTER_SIM_ROOT=$(readlink -f "$GPUCLUSTER_SIM_LIB/../..")
export CONTAINERS_CONF="$GPUCLUSTER_SIM_LIB/containers.conf"

# Debian release and mirrors the node images are built from.
GPUCLUSTER_SIM_SUITE=${GPUCLUSTER_SIM_SUITE:-bookworm}
GPUCLUSTER_SIM_MIRROR=${GPUCLUSTER_SIM_MIRROR:-http://deb.debian.org/debian}
GPUCLUSTER_SIM_SECURITY_MIRROR=${GPUCLUSTER_SIM_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# Image names: <repo>-base:<hash> and <repo>-node:<hash>, plus :latest.
GPUCLUSTER_SIM_IMAGE_REPO=${GPUCLUSTER_SIM_IMAGE_REPO:-localhost/gpucluster-sim}

# The cluster made by scripts/cluster.sh.
# shellcheck disable=SC2034  # used by the scripts that source this file
GPUCLUSTER_SIM_LABEL=io.gpucluster.sim
# container names: gcsim-<node> (inventory/simulated/hosts.yml names them too)
# shellcheck disable=SC2034
GPUCLUSTER_SIM_PREFIX=gcsim-
GPUCLUSTER_SIM_NETWORK=${GPUCLUSTER_SIM_NETWORK:-gpucluster-sim}
GPUCLUSTER_SIM_SUBNET=${GPUCLUSTER_SIM_SUBNET:-10.89.42.0/24}
# shellcheck disable=SC2034
GPUCLUSTER_SIM_NET_BASE=${GPUCLUSTER_SIM_SUBNET%.*}
# node name, last octet of its address; the GPU model of each GPU node is the
# gpucluster_sim_gpu_preset variable in inventory/simulated/host_vars/<node>.yml
# shellcheck disable=SC2034
GPUCLUSTER_SIM_NODES=(ctl:10 gpu-01:11 gpu-02:12)

log() {
    printf '[cluster] %s\n' "$*" >&2
}

die() {
    printf '[cluster] error: %s\n' "$*" >&2
    exit 1
}

# podman with the project's containers.conf (exported above).
pm() {
    podman "$@"
}

# The simulated GPU preset of a node, read from the simulated inventory layer
# (empty for a node without GPUs).
node_gpu_preset() {
    local file="$GPUCLUSTER_SIM_ROOT/inventory/simulated/host_vars/$1.yml"
    [ -f "$file" ] || return 0
    sed -n 's/^gpucluster_sim_gpu_preset: *"\{0,1\}\([A-Za-z0-9_.-]*\)"\{0,1\} *$/\1/p' "$file"
}

# sha256 of the given files (paths relative to the repository, in order) and of
# extra strings: the content hash the images are tagged with.
content_hash() {
    local f
    {
        for f in "$@"; do
            if [ -f "$GPUCLUSTER_SIM_ROOT/$f" ]; then
                printf 'file %s\n' "$f"
                cat "$GPUCLUSTER_SIM_ROOT/$f"
            else
                printf 'value %s\n' "$f"
            fi
        done
    } | sha256sum | cut -c1-16
}
