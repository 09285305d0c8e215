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

# Debian release and mirrors the node images are built from: trixie (Debian 13,
# Slurm 24.11, the default), bookworm (Debian 12, Slurm 22.05), or forky
# (Debian's testing, Slurm 26.05: only on a cgroup v2 host and not tested with the roles, see
# suite_host_problem).
GPUCLUSTER_SIM_SUITES=(trixie bookworm forky)
GPUCLUSTER_SIM_SUITE=${GPUCLUSTER_SIM_SUITE:-trixie}
GPUCLUSTER_SIM_MIRROR=${GPUCLUSTER_SIM_MIRROR:-http://deb.debian.org/debian}
GPUCLUSTER_SIM_SECURITY_MIRROR=${GPUCLUSTER_SIM_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# Image names: <repo>-base:<hash> and <repo>-node:<hash>, plus <repo>-node:<suite>.
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
# (login: the login node of group slurm_login, no GPU, like ctl; .13 is left
# for the node tests add, gpu-03)
# shellcheck disable=SC2034
GPUCLUSTER_SIM_NODES=(ctl:10 gpu-01:11 gpu-02:12 login:14)

log() {
    printf '[cluster] %s\n' "$*" >&2
}

die() {
    printf '[cluster] error: %s\n' "$*" >&2
    exit 1
}

case " ${GPUCLUSTER_SIM_SUITES[*]} " in
    *" $GPUCLUSTER_SIM_SUITE "*) ;;
    *) die "GPUCLUSTER_SIM_SUITE=$GPUCLUSTER_SIM_SUITE is not a release the simulated cluster is built from; valid: ${GPUCLUSTER_SIM_SUITES[*]} (trixie: Debian 13 with Slurm 24.11, the default; bookworm: Debian 12 with Slurm 22.05; forky: Debian testing with Slurm 26.05, on cgroup v2 hosts only and not tested with the roles)" ;;
esac

# The cgroup version this host mounts: 2 (cgroup2fs at /sys/fs/cgroup) or 1.
host_cgroup_version() {
    if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then echo 2; else echo 1; fi
}

# Why this host cannot boot the node image of a release (empty: it can).
# systemd runs as PID 1 in every node; systemd 258 and later have no cgroup v1
# support at all (Debian forky carries 262), so a cgroup v1 host (this
# project's CI machines: /sys/fs/cgroup is a tmpfs of v1 hierarchies) cannot
# boot them. systemd 257 (trixie) still boots on v1 inside a container
# ("System is tainted: ...:cgroupsv1"), 252 (bookworm) on both.
suite_host_problem() {
    local suite=$1
    case "$suite" in
        forky)
            if [ "$(host_cgroup_version)" = 1 ]; then
                printf 'Debian %s boots systemd 258 or later, which has no cgroup v1 support, and this host mounts cgroup v1 (/sys/fs/cgroup is %s): its nodes cannot boot here; use a host with the unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1), or GPUCLUSTER_SIM_SUITE=trixie\n' \
                    "$suite" "$(stat -fc %T /sys/fs/cgroup 2>/dev/null || echo unknown)"
            fi
            ;;
    esac
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

# The all_reduce_perf STAND-IN (prints recorded real outputs, measures
# nothing) and its recordings, where the validation playbook of the simulated
# inventory looks for nccl-tests: /opt/nccl-tests-STANDIN/build. Used by
# node-prepare.sh (a simulated node) and scale.sh (a rack of emulated nodes).
install_nccl_standin() {  # container
    pm exec "$1" mkdir -p /opt/nccl-tests-STANDIN/build /opt/nccl-tests-STANDIN/fixtures
    # (Debian has no `python`: the node's python3 runs it)
    sed '1s|^#!.*|#!/usr/bin/python3|' "$GPUCLUSTER_SIM_ROOT/tests/standins/all_reduce_perf-standin" \
        | pm exec -i "$1" sh -c 'cat > /opt/nccl-tests-STANDIN/build/all_reduce_perf'
    tar -C "$GPUCLUSTER_SIM_ROOT/tests/unit/fixtures/nccl" --owner=0 --group=0 -cf - . \
        | pm exec -i "$1" tar -C /opt/nccl-tests-STANDIN/fixtures --no-same-owner -xf -
    pm exec "$1" chmod 0755 /opt/nccl-tests-STANDIN/build/all_reduce_perf
}
