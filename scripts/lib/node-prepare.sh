#!/usr/bin/env bash
# Prepare one node container of the simulated cluster, from the host:
#
#   bash scripts/lib/node-prepare.sh CONTAINER [GPU_PRESET]
#
# 1. wait until systemd in the container has booted;
# 2. refresh the apt lists (a real machine has them; the image has none);
#    the image has the OpenSSH server, as every node of a real site has one;
# 3. make the node reachable as real sites reach theirs (Ansible's default
#    connection): the login `admin` (not root) with passwordless sudo and the
#    cluster's SSH key in its authorized_keys. The key pair is made once per
#    checkout under .build/simcluster/ssh/ (never committed), with the
#    known_hosts file the simulated inventory checks host keys against: this
#    node's own host key is written there under its address. Then one
#    `ssh admin@ADDRESS sudo -n true` from this machine proves the path;
# 4. with a GPU_PRESET (an `nvmlsim create --preset` name): make the node a
#    GPU node as a site's is once its driver is installed: the simulator's
#    libnvidia-ml.so.1 (the package nvmlsim-libnvidia-ml that the node image
#    carries, built from nvml_sim/libnvml: it Provides libnvidia-ml.so.1, as
#    the driver's libnvidia-ml1 does) and Debian's contrib component in the
#    apt sources (where python3-pynvml is; the collection's nvml role
#    installs that REAL binding); the simulator itself from nvml_sim/src as
#    the `nvmlsim` package (the library's server, never a `pynvml`), the
#    /usr/local/bin/nvmlsim command and nvmlsim-boot.service, the nvidia-smi
#    STAND-IN (nvml_sim/bin/nvidia-smi) as /usr/local/bin/nvidia-smi; create
#    the simulated GPUs once and (re)create their device files, the mig-minors
#    table, the driver's version file and the loaded-module tree
#    (nvmlsim-boot.service: `nvmlsim boot`, then nvmlsim-driver-proc links
#    /proc/driver/nvidia-caps/mig-minors and /proc/driver/nvidia/version to
#    the simulator's files);
# 5. on a GPU node whose preset has NVSwitches (`nvmlsim show --json` says
#    "nvswitch": true: h100-80gb-x8, h200-x8, a100-40gb-x8): the NVIDIA Fabric
#    Manager STAND-IN (nvml_sim/bin/nv-fabricmanager as
#    /usr/local/bin/nv-fabricmanager) and its nvidia-fabricmanager.service,
#    enabled and (re)started: the simulated GPU fabric state is COMPLETED while
#    it runs, NOT_STARTED once `systemctl stop nvidia-fabricmanager`. Elsewhere
#    both are absent (removed if an earlier preset had them).
#
# scripts/cluster.sh up and molecule's prepare.yml both run this script, so
# the demo cluster and the molecule scenarios are prepared the same way. It
# can be run again: the simulator's code is replaced, its state is kept while
# the preset is unchanged.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    die "usage: node-prepare.sh CONTAINER [GPU_PRESET]"
fi
container=$1
preset=${2:-}
SIM_SRC="$GPUCLUSTER_SIM_ROOT/nvml_sim/src"
STATE=/var/lib/nvmlsim/state.json

in_node() { pm exec "$container" "$@"; }

wait_for_systemd() {
    local state i release
    for i in $(seq 1 120); do
        state=$(in_node systemctl is-system-running 2>/dev/null || true)
        case "$state" in
            running | degraded) return 0 ;;
        esac
        [ "$i" -lt 120 ] || break
        sleep 0.5
    done
    release=$(in_node sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
    die "$container: systemd did not finish booting within 60s (state: '${state:-unknown}'; node image of Debian ${release:-unknown}, host cgroup v$(host_cgroup_version)); its journal: podman exec $container journalctl -b --no-pager"
}

# A GPU node's apt sources name contrib and non-free, as a site's GPU nodes
# with Debian's NVIDIA driver do (python3-pynvml and Slurm's NVML plugin live
# in contrib, the driver and nvidia-cuda-mps in non-free); the image's name
# main only.
enable_contrib() {
    in_node sed -i -E -e '/^deb /{/ contrib( |$)/!s/ main( |$)/ main contrib\1/}' \
        -e '/^deb /{/ non-free( |$)/!s/ contrib( |$)/ contrib non-free\1/}' /etc/apt/sources.list \
        || die "$container: adding contrib and non-free to /etc/apt/sources.list failed"
}

apt_update() {
    local i
    for i in 1 2 3; do
        in_node apt-get update -qq && return 0
        log "$container: apt-get update failed (try $i of 3)"
        sleep 2
    done
    die "$container: apt-get update failed 3 times"
}

install_simulator() {
    local site current
    if [ ! -f "$SIM_SRC/nvmlsim/__main__.py" ] || [ ! -f "$SIM_SRC/nvmlsim/api.py" ]; then
        die "the NVML simulator is missing: expected $SIM_SRC/nvmlsim/__main__.py and $SIM_SRC/nvmlsim/api.py"
    fi
    # the simulated driver library: the package the node image carries (images/node/build-nvml-sim.sh)
    in_node sh -c 'dpkg -i /usr/local/share/nvmlsim/nvmlsim-libnvidia-ml_*.deb >/dev/null' \
        || die "$container: installing the simulated libnvidia-ml.so.1 (nvmlsim-libnvidia-ml) failed"
    site=$(in_node python3 -c 'import sys; print("/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])')
    # (releases before 2026-11 installed the simulator's Python API as `pynvml`)
    in_node rm -rf "$site/pynvml" "$site/nvmlsim"
    in_node mkdir -p "$site"
    tar -C "$SIM_SRC" --exclude=__pycache__ --owner=0 --group=0 -cf - nvmlsim \
        | pm exec -i "$container" tar -C "$site" --no-same-owner -xf -
    # (nvidia-fabricmanager.service only on NVSwitch presets: install_fabric_manager)
    tar -C "$GPUCLUSTER_SIM_LIB/nvmlsim-node" --exclude=nvidia-fabricmanager.service --owner=0 --group=0 -cf - . \
        | pm exec -i "$container" tar -C / --no-same-owner --no-overwrite-dir -xf -
    # nvidia-smi STAND-IN answering from the simulator (python3 -m nvmlsim.smi), so
    # the hooks that require nvidia-smi run on simulated nodes; never over a real one.
    if in_node sh -c 'command -v nvidia-smi' 2>/dev/null | grep -qv '^/usr/local/bin/nvidia-smi$'; then
        die "$container: has a real nvidia-smi; refusing to install the nvidia-smi stand-in over it"
    fi
    pm cp "$GPUCLUSTER_SIM_ROOT/nvml_sim/bin/nvidia-smi" "$container:/usr/local/bin/nvidia-smi"
    in_node chmod 0755 /usr/local/bin/nvidia-smi
    in_node systemctl daemon-reload
    current=$(in_node sh -c "test -f $STATE && nvmlsim show --json" 2>/dev/null \
        | python3 -c 'import json, sys; print(json.load(sys.stdin).get("preset", ""))' 2>/dev/null || true)
    if [ "$current" = "$preset" ]; then
        log "$container: keeping the simulated $preset GPUs"
    else
        log "$container: creating simulated GPUs: $preset"
        # --all-cpus: every GPU local to the container's own CPUs. slurm.conf declares more cores than the
        # container has (SlurmdParameters=config_overrides); Slurm's NVML plugin (slurm_gres_autodetect: nvml) maps
        # each GPU's CPU affinity onto the container, and a GPU local only to CPUs it lacks (the preset's second
        # NUMA node) would get no core: Slurm could then never give it to a job, and slurmctld keeps that binding
        # after AutoDetect is switched off again (gres.conf without Cores= replaces no binding).
        in_node nvmlsim create --preset "$preset" --force --all-cpus >/dev/null \
            || die "$container: 'nvmlsim create --preset $preset --all-cpus' failed"
    fi
    in_node systemctl enable --quiet nvmlsim-boot.service
    in_node systemctl restart nvmlsim-boot.service \
        || die "$container: nvmlsim-boot.service failed: $(in_node journalctl -u nvmlsim-boot.service -n 20 --no-pager)"
}

# The Fabric Manager STAND-IN where the simulated board has NVSwitches (the
# real Fabric Manager needs NVSwitch hardware), absent elsewhere.
install_fabric_manager() {
    local nvswitch unit=/etc/systemd/system/nvidia-fabricmanager.service
    nvswitch=$(in_node nvmlsim show --json \
        | python3 -c 'import json, sys; print("yes" if json.load(sys.stdin).get("nvswitch") else "no")') \
        || die "$container: 'nvmlsim show --json' failed: cannot tell whether the $preset GPUs have NVSwitches"
    if [ "$nvswitch" != yes ]; then
        in_node sh -c "if [ -f $unit ]; then systemctl disable --now --quiet nvidia-fabricmanager.service || true; \
            rm -f $unit /usr/local/bin/nv-fabricmanager; systemctl daemon-reload; fi"
        return 0
    fi
    if in_node sh -c 'command -v nv-fabricmanager' 2>/dev/null | grep -qv '^/usr/local/bin/nv-fabricmanager$'; then
        die "$container: has a real nv-fabricmanager; refusing to install the Fabric Manager stand-in over it"
    fi
    pm cp "$GPUCLUSTER_SIM_ROOT/nvml_sim/bin/nv-fabricmanager" "$container:/usr/local/bin/nv-fabricmanager"
    in_node chmod 0755 /usr/local/bin/nv-fabricmanager
    pm cp "$GPUCLUSTER_SIM_LIB/nvmlsim-node/etc/systemd/system/nvidia-fabricmanager.service" "$container:$unit"
    in_node chmod 0644 "$unit"
    in_node systemctl daemon-reload
    in_node systemctl enable --quiet nvidia-fabricmanager.service
    in_node systemctl restart nvidia-fabricmanager.service \
        || die "$container: nvidia-fabricmanager.service (STAND-IN) failed: $(in_node journalctl -u nvidia-fabricmanager.service -n 20 --no-pager)"
}

# The deep health tier's tools as STAND-INs (no CUDA, no DCGM host engine, no
# RDMA device here): dcgmi, nvbandwidth and ib_write_bw, where the simulated
# inventory points the deep tier (validate_deep_settings). Their numbers and failures
# come from the simulated GPUs and InfiniBand tree; each says it is a stand-in.
install_deep_standins() {
    local tool dest
    for tool in dcgmi:/opt/dcgm-STANDIN/bin/dcgmi nvbandwidth:/opt/nvbandwidth-STANDIN/nvbandwidth \
                ib_write_bw:/opt/perftest-STANDIN/bin/ib_write_bw; do
        dest=${tool#*:}
        in_node mkdir -p "${dest%/*}"
        sed '1s|^#!.*|#!/usr/bin/python3|' "$GPUCLUSTER_SIM_ROOT/tests/standins/${tool%%:*}-standin" \
            | pm exec -i "$container" sh -c "cat > $dest && chmod 0755 $dest"
    done
}

SSH_DIR="$GPUCLUSTER_SIM_ROOT/.build/simcluster/ssh"
ADMIN="admin"

# The cluster's key pair, made once (nodes are prepared in parallel: under a lock).
ensure_admin_key() {
    command -v ssh-keygen >/dev/null || die "ssh-keygen is missing on this machine: run 'bash scripts/cluster.sh deps' (openssh-client)"
    mkdir -p "$SSH_DIR"
    chmod 0700 "$SSH_DIR"
    (
        flock 9
        [ -f "$SSH_DIR/id_ed25519" ] \
            || ssh-keygen -q -t ed25519 -N '' -C "gpucluster-sim-$ADMIN" -f "$SSH_DIR/id_ed25519"
        touch "$SSH_DIR/known_hosts"
    ) 9>"$SSH_DIR/.lock"
}

node_address() {
    pm container inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$container" | awk '{print $1}'
}

setup_admin() {
    local address hostkey i
    ensure_admin_key
    in_node sh -c "id -u $ADMIN >/dev/null 2>&1 || useradd --create-home --shell /bin/bash $ADMIN" \
        || die "$container: creating the login $ADMIN failed"
    in_node install -d -m 0700 -o "$ADMIN" -g "$ADMIN" "/home/$ADMIN/.ssh"
    pm exec -i "$container" sh -c "cat > /home/$ADMIN/.ssh/authorized_keys && chown $ADMIN:$ADMIN /home/$ADMIN/.ssh/authorized_keys \
        && chmod 0600 /home/$ADMIN/.ssh/authorized_keys" <"$SSH_DIR/id_ed25519.pub"
    printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "$ADMIN" \
        | pm exec -i "$container" sh -c "cat > /etc/sudoers.d/90-$ADMIN && chmod 0440 /etc/sudoers.d/90-$ADMIN && visudo -cq"
    # sshd made its host keys on boot (ssh.service.d/10-host-keys.conf of the image)
    for i in $(seq 1 40); do
        hostkey=$(in_node cat /etc/ssh/ssh_host_ed25519_key.pub 2>/dev/null) && [ -n "$hostkey" ] && break
        sleep 0.5
    done
    [ -n "${hostkey:-}" ] || die "$container: sshd has no host key (ssh.service: $(in_node systemctl is-active ssh.service 2>&1))"
    address=$(node_address)
    [ -n "$address" ] || die "$container: it has no network address"
    (
        flock 9
        ssh-keygen -q -R "$address" -f "$SSH_DIR/known_hosts" >/dev/null 2>&1 || true
        rm -f "$SSH_DIR/known_hosts.old"
        printf '%s %s\n' "$address" "$(printf '%s' "$hostkey" | awk '{print $1, $2}')" >>"$SSH_DIR/known_hosts"
    ) 9>"$SSH_DIR/.lock"
    for i in $(seq 1 20); do
        ssh -q -i "$SSH_DIR/id_ed25519" -o UserKnownHostsFile="$SSH_DIR/known_hosts" -o StrictHostKeyChecking=yes \
            -o BatchMode=yes -o ConnectTimeout=5 -o ControlMaster=no "$ADMIN@$address" sudo -n true </dev/null && return 0
        sleep 0.5
    done
    die "$container: 'ssh $ADMIN@$address sudo -n true' with the key in $SSH_DIR failed"
}

wait_for_systemd
[ -z "$preset" ] || enable_contrib
apt_update
setup_admin
if [ -n "$preset" ]; then
    install_simulator
    install_fabric_manager
    install_nccl_standin "$container"
    install_deep_standins
fi
log "$container: ready${preset:+ ($preset)}"
