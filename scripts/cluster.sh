#!/usr/bin/env bash
# The simulated GPU cluster: podman containers with systemd as PID 1 on a
# network with fixed addresses, one Slurm controller and two GPU nodes with
# different simulated GPUs (NVML simulator from nvml_sim/).
#
#   bash scripts/cluster.sh deps images up   # what `make cluster-up` runs
#   bash scripts/cluster.sh status
#   bash scripts/cluster.sh playbook playbooks/site.yml [ansible-playbook args]
#   bash scripts/cluster.sh verify            # molecule/default's tests on it
#   bash scripts/cluster.sh down              # `make cluster-down`
#   bash scripts/cluster.sh prune-images      # remove the cached node images
#
# Commands run in the order given. Runs as root on Debian 12; podman is always
# called with scripts/lib/containers.conf (CONTAINERS_CONF), nothing under /etc
# is edited. Everything created carries the label io.gpucluster.sim=cluster;
# `down` removes exactly that. docs/simulated-cluster.md has the details.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib/common.sh"
# shellcheck source=scripts/lib/images.sh
. "$GPUCLUSTER_SIM_LIB/images.sh"

COMMANDS="deps images up down status playbook verify prune-images"
OWNER="$GPUCLUSTER_SIM_LABEL=cluster"

usage() {
    sed -n '2,16s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

cmd_deps() {
    local pkgs=(podman runc netavark aardvark-dns iptables debootstrap openssh-client) missing=() p
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        log "podman, runc, netavark, aardvark-dns, iptables, debootstrap and openssh-client are installed"
    else
        [ "$(id -u)" -eq 0 ] || die "installing ${missing[*]} needs root"
        log "installing ${missing[*]} (with recommends)"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    pm info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}} {{.Host.NetworkBackend}}' >/dev/null \
        || die "podman does not work with $CONTAINERS_CONF"
}

cmd_images() {
    command -v podman >/dev/null || die "podman is not installed: run 'bash scripts/cluster.sh deps' first"
    ensure_images
}

container_of() { printf '%s%s\n' "$GPUCLUSTER_SIM_PREFIX" "$1"; }

ensure_network() {
    if pm network exists "$GPUCLUSTER_SIM_NETWORK"; then
        [ "$(pm network inspect --format '{{index .Labels "'"$GPUCLUSTER_SIM_LABEL"'"}}' "$GPUCLUSTER_SIM_NETWORK")" = cluster ] \
            || die "network $GPUCLUSTER_SIM_NETWORK exists but was not made by this script (no label $OWNER); remove it or set GPUCLUSTER_SIM_NETWORK"
        return 0
    fi
    log "creating network $GPUCLUSTER_SIM_NETWORK ($GPUCLUSTER_SIM_SUBNET)"
    pm network create --label "$OWNER" --subnet "$GPUCLUSTER_SIM_SUBNET" "$GPUCLUSTER_SIM_NETWORK" >/dev/null
}

# Start one node container (or keep it when it already runs the current image).
start_node() {
    local node=$1 octet=$2 image=$3 name state out
    name=$(container_of "$node")
    if pm container exists "$name"; then
        [ "$(pm container inspect --format '{{index .Config.Labels "'"$GPUCLUSTER_SIM_LABEL"'"}}' "$name")" = cluster ] \
            || die "container $name exists but was not made by this script (no label $OWNER)"
        state=$(pm container inspect --format '{{.State.Status}} {{.ImageName}} privileged={{.HostConfig.Privileged}}' "$name")
        if [ "$state" = "running $image privileged=$([ -n "$(node_gpu_preset "$node")" ] && echo true || echo false)" ]; then
            log "$name is already running $image"
            return 0
        fi
        log "recreating $name (was: $state)"
        pm rm -f -t 5 "$name" >/dev/null
    fi
    # Every node's /etc/hosts names all nodes, as on a classic HPC cluster:
    # Slurm and munge then never wait on DNS (aardvark-dns 1.4 drops queries
    # while it reloads when a container on the network starts or stops).
    local hosts=() entry
    for entry in "${GPUCLUSTER_SIM_NODES[@]}"; do
        hosts+=(--add-host "${entry%%:*}:$GPUCLUSTER_SIM_NET_BASE.${entry##*:}")
    done
    # GPU (compute) nodes confine jobs with Slurm's cgroup/v1 plugin: they run
    # privileged (as molecule's scenario does). Not --cgroupns=private: there
    # the container's systemd would see and manage the host's whole name=systemd
    # tree, and stopping one such node broke the others' cgroups.
    local confine=()
    [ -z "$(node_gpu_preset "$node")" ] || confine=(--privileged)
    log "starting $name ($node, $GPUCLUSTER_SIM_NET_BASE.$octet)"
    if ! out=$(pm run -d --name "$name" --hostname "$node" --label "$OWNER" \
            --network "$GPUCLUSTER_SIM_NETWORK" --ip "$GPUCLUSTER_SIM_NET_BASE.$octet" --network-alias "$node" \
            "${hosts[@]}" "${confine[@]}" --systemd=always "$image" /sbin/init 2>&1); then
        die "starting $name failed: $out"
    fi
}

cmd_up() {
    local image entry node pids=() pid rc=0
    cmd_images
    image=$(node_image)
    ensure_network
    for entry in "${GPUCLUSTER_SIM_NODES[@]}"; do
        start_node "${entry%%:*}" "${entry##*:}" "$image"
    done
    # Wait for systemd, refresh apt lists, install the NVML simulator on GPU
    # nodes: the same script molecule's prepare.yml runs.
    for entry in "${GPUCLUSTER_SIM_NODES[@]}"; do
        node=${entry%%:*}
        bash "$GPUCLUSTER_SIM_LIB/node-prepare.sh" "$(container_of "$node")" "$(node_gpu_preset "$node")" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    [ "$rc" -eq 0 ] || die "preparing the nodes failed (see above)"
    cmd_status
}

our_containers() { pm ps -a -q --filter "label=$OWNER"; }
our_networks() { pm network ls -q --filter "label=$OWNER"; }
our_volumes() { pm volume ls -q --filter "label=$OWNER"; }

cmd_down() {
    local ids=()
    mapfile -t ids < <(our_containers)
    if [ ${#ids[@]} -gt 0 ]; then
        log "removing ${#ids[@]} container(s)"
        pm rm -f -v -t 5 "${ids[@]}" >/dev/null
    fi
    mapfile -t ids < <(our_volumes)
    if [ ${#ids[@]} -gt 0 ]; then
        log "removing volume(s) ${ids[*]}"
        pm volume rm -f "${ids[@]}" >/dev/null
    fi
    mapfile -t ids < <(our_networks)
    if [ ${#ids[@]} -gt 0 ]; then
        log "removing network(s) ${ids[*]}"
        pm network rm -f "${ids[@]}" >/dev/null
    fi
    if [ -n "$(our_containers)$(our_networks)$(our_volumes)" ]; then
        die "something labelled $OWNER is left: $(our_containers) $(our_networks) $(our_volumes)"
    fi
    log "no container, network or volume labelled $OWNER is left"
}

cmd_status() {
    local entry node name
    command -v podman >/dev/null || die "podman is not installed: run 'bash scripts/cluster.sh deps' first"
    printf '%-14s %-8s %-14s %-10s %s\n' CONTAINER NODE ADDRESS STATE SIMULATED-GPUS
    for entry in "${GPUCLUSTER_SIM_NODES[@]}"; do
        node=${entry%%:*}
        name=$(container_of "$node")
        if pm container exists "$name"; then
            printf '%-14s %-8s %-14s %-10s %s\n' "$name" "$node" "$GPUCLUSTER_SIM_NET_BASE.${entry##*:}" \
                "$(pm container inspect --format '{{.State.Status}}' "$name")" "$(node_gpu_preset "$node")"
        else
            printf '%-14s %-8s %-14s %-10s %s\n' "$name" "$node" - absent "$(node_gpu_preset "$node")"
        fi
    done
}

venv_tool() {
    [ -x "$GPUCLUSTER_SIM_ROOT/.venv/bin/$1" ] || die "$GPUCLUSTER_SIM_ROOT/.venv/bin/$1 is missing: run 'make venv' first"
    printf '%s\n' "$GPUCLUSTER_SIM_ROOT/.venv/bin/$1"
}

link_collection() {
    local parent="$GPUCLUSTER_SIM_ROOT/.build/collections/ansible_collections/gpucluster"
    mkdir -p "$parent"
    [ -L "$parent/bringup" ] || ln -sfn ../../../.. "$parent/bringup"
    export ANSIBLE_COLLECTIONS_PATH="$GPUCLUSTER_SIM_ROOT/.build/collections"
    # the simulated inventory's connection (podman exec with pipelining)
    export ANSIBLE_CONNECTION_PLUGINS="$GPUCLUSTER_SIM_ROOT/scripts/lib/connection_plugins"
}

# The real enroot packages and pyxis source archive the simulated inventory
# installs (inventory/simulated/group_vars/all/simulated.yml): built or
# checked once from the local mirror of release files, cached under .build.
ensure_enroot_pyxis() {
    bash "$GPUCLUSTER_SIM_LIB/enroot-build.sh" >/dev/null || die "the enroot packages could not be built (scripts/lib/enroot-build.sh)"
    bash "$GPUCLUSTER_SIM_LIB/pyxis-source.sh" >/dev/null || die "the pyxis source archive could not be had (scripts/lib/pyxis-source.sh)"
}

# ansible-playbook against the running simulated cluster: the example
# inventory plus the simulated layer (connection through podman).
cmd_playbook() {
    local playbook
    playbook=$(venv_tool ansible-playbook)
    link_collection
    ensure_enroot_pyxis
    export GPUCLUSTER_SIM_ROOT
    (cd "$GPUCLUSTER_SIM_ROOT" && "$playbook" -i inventory/hosts.yml -i inventory/simulated/hosts.yml "$@")
}

cmd_verify() {
    local pytest
    pytest=$(venv_tool pytest)
    (cd "$GPUCLUSTER_SIM_ROOT" && GPUCLUSTER_SIM_CONTAINER_PREFIX="$GPUCLUSTER_SIM_PREFIX" "$pytest" -p no:cacheprovider -q molecule/default/tests)
}

cmd_prune_images() {
    local ids=()
    mapfile -t ids < <(pm images -q --filter "label=$GPUCLUSTER_SIM_LABEL=image" | sort -u)
    if [ ${#ids[@]} -gt 0 ]; then
        log "removing ${#ids[@]} image(s) labelled $GPUCLUSTER_SIM_LABEL=image"
        pm rmi -f "${ids[@]}" >/dev/null
    fi
}

[ $# -gt 0 ] || { usage; exit 2; }
while [ $# -gt 0 ]; do
    cmd=$1
    shift
    case "$cmd" in
        deps | images | up | down | status | verify) "cmd_$cmd" ;;
        prune-images) cmd_prune_images ;;
        playbook) cmd_playbook "$@"; exit ;;
        -h | --help | help) usage; exit 0 ;;
        *) printf "[cluster] error: unknown command '%s'; valid commands: %s\n" "$cmd" "$COMMANDS" >&2; exit 2 ;;
    esac
done
